"""Cost of prescribed (hybrid) forward dynamics, of mimic coupling in a closed loop, and of a
simulate-node step with prescribed joints.

arm7 (urdf/arm7.urdf, 7 revolute joints, no passive forces), joint_2 and joint_4 prescribed:
- ours: `robot.forward_dynamics(q, v, tau, prescribed={...}, return_torques=True)` (a dense
  hybrid solve, mbd_ros/prescribed.py);
- peer: the same hybrid system written with Pinocchio (`crba` + `rnea(q, v, 0)` + numpy
  solve of the free block, u_p from the prescribed rows) - what a Pinocchio user would write;
- both checked against each other (relative 1e-9) before timing; timing interleaved
  (common.time_interleaved), min / median of the rounds.
Four-bar + a flap mimicking the crank (test/test_mimic_loops.py's mechanism): the coupled
closed-loop forward dynamics (mbd_ros/mimic.py: default, method="kkt", method="minimal") against the same robot without the
coupling (the O(n) recursive closed-loop solver), i.e. the price of the coupling.
One rk4 step of the arm with and without the two prescribed joints (PointTrajectory, the
simulate node's path), against the 1000 µs budget of a 1 kHz node.

    PYTHONPATH=. python bench/bench_prescribed_mimic.py [--rounds N] [--out FILE]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.add_repo_to_path()


def pin_hybrid(pin, model, data, free, fixed):
    """(qp, vp, tp, qdd_p) -> (qdd, u) of the hybrid system with Pinocchio's CRBA and RNEA."""
    def solve(qp, vp, tp, qdd_p):
        mass = pin.crba(model, data, qp)
        mass = np.triu(mass) + np.triu(mass, 1).T
        h = pin.rnea(model, data, qp, vp, np.zeros(model.nv))
        qdd = np.zeros(model.nv)
        qdd[fixed] = qdd_p
        qdd[free] = np.linalg.solve(mass[np.ix_(free, free)],
                                    tp[free] - h[free] - mass[np.ix_(free, fixed)] @ qdd_p)
        u = np.zeros(model.nv)
        u[fixed] = mass[fixed] @ qdd + h[fixed] - tp[fixed]
        return qdd, u
    return solve


def arm_rows(rounds):
    import pinocchio as pin

    import mbd_ros
    xml = (common.REPO / "urdf" / "arm7.urdf").read_text()
    robot = mbd_ros.load(xml, passive_forces=False)
    model = common.pin_model(xml, False)
    data = model.createData()
    perm = common.Permutation(robot, model)
    rng = np.random.default_rng(0)
    q = robot.random_configuration(rng)
    v, tau = rng.normal(size=7), rng.normal(size=7)
    prescribed = {"joint_2": 0.7, "joint_4": -1.3}
    fixed_ours = np.array([1, 3])
    qp, vp, tp = (np.ascontiguousarray(x[p]) for x, p in ((q, perm.q), (v, perm.v), (tau, perm.v)))
    fixed = np.array([int(np.flatnonzero(perm.v == i)[0]) for i in fixed_ours])
    free = np.setdiff1d(np.arange(7), fixed)
    qdd_p = np.array([0.7, -1.3])
    peer = pin_hybrid(pin, model, data, free, fixed)
    ours_qdd, ours_u = robot.forward_dynamics(q, v, tau, prescribed=prescribed, return_torques=True)
    their_qdd, their_u = peer(qp, vp, tp, qdd_p)
    error = max(common.rel_err(ours_qdd, their_qdd[perm.v_inv]),
                common.rel_err(ours_u, their_u[perm.v_inv]))
    failures = [f"hybrid FD: ours vs Pinocchio differ by {error:.2e}"] if error > common.RTOL else []
    out = np.empty(7)
    ns = dict(robot=robot, q=q, v=v, tau=tau, out=out, prescribed=prescribed, peer=peer, qp=qp,
              vp=vp, tp=tp, qdd_p=qdd_p, pin=pin, model=model, data=data)
    t = common.time_interleaved({
        "ours": "robot.forward_dynamics(q, v, tau, prescribed=prescribed, return_torques=True)",
        "peer": "peer(qp, vp, tp, qdd_p)",
        "ours_fd": "robot.forward_dynamics(q, v, tau, out=out)",
        "pin_aba": "pin.aba(model, data, qp, vp, tp)"}, ns, rounds=rounds)

    def cell(x):
        return common.fmt_us(x["min"]) + " / " + common.fmt_us(x["median"])
    rows = [["hybrid FD, 2 of 7 prescribed", f"{error:.1e}", cell(t["ours"]), cell(t["peer"]),
             common.fmt_ratio(t["ours"]["median"] / t["peer"]["median"])],
            ["(plain FD: ours vs pin.aba)", "-", cell(t["ours_fd"]), cell(t["pin_aba"]),
             common.fmt_ratio(t["ours_fd"]["median"] / t["pin_aba"]["median"])]]
    # one rk4 step (the simulate node's Simulator), with and without the prescribed joints
    from mbd_ros.simulation.point_trajectory import PointTrajectory
    from mbd_ros.robot.integrators import Simulator
    times = np.linspace(0.0, 10.0, 201)
    plan = {name: PointTrajectory(times, 0.3 * np.sin(times), 0.3 * np.cos(times),
                                  -0.3 * np.sin(times)) for name in prescribed}
    hybrid = Simulator(robot, 1e-3, "rk4", q, np.zeros(7), prescribed=plan)
    plain = Simulator(robot, 1e-3, "rk4", q, np.zeros(7))
    zero = np.zeros(7)
    ns.update(hybrid=hybrid, plain=plain, zero=zero, q0=q.copy())
    t = common.time_interleaved({"hybrid": "hybrid.step(zero)\nif hybrid.time > 9.0: hybrid.reset(q0)",
                                 "plain": "plain.step(zero)\nif plain.time > 9.0: plain.reset(q0)"},
                                ns, rounds=max(10, rounds // 4), target_s=2e-2)
    steps = [["rk4 step, 2 prescribed joints", cell(t["hybrid"]), f"{t['hybrid']['median'] / 1000:.1%}"],
             ["rk4 step, no prescribed joint", cell(t["plain"]), f"{t['plain']['median'] / 1000:.1%}"]]
    return rows, steps, failures


def mimic_rows(rounds):
    sys.path.insert(0, str(common.REPO / "test"))
    import mbd_ros
    from test_mimic_loops import CLOSURES, XML
    coupled = mbd_ros.load(XML, closures=CLOSURES, mimic=True, passive_forces=False)
    plain = mbd_ros.load(XML, closures=CLOSURES, passive_forces=False)
    q = coupled.assemble(coupled.apply_mimic(np.array([0.3, 0.0, 0.0, 0.0])))
    v = coupled.project_velocity(q, np.array([2.0, 0.0, 0.0, 0.0]))
    tau = np.zeros(4)
    ns = dict(coupled=coupled, plain=plain, q=q, v=v, tau=tau)
    t = common.time_interleaved({"coupled": "coupled.forward_dynamics(q, v, tau)",
                                 "kkt": "coupled.forward_dynamics(q, v, tau, method='kkt')",
                                 "minimal": "coupled.forward_dynamics(q, v, tau, method='minimal')",
                                 "plain": "plain.forward_dynamics(q, v, tau)"}, ns, rounds=rounds)

    def cell(x):
        return common.fmt_us(x["min"]) + " / " + common.fmt_us(x["median"])
    return [["mimic + loop, recursive + coupling by superposition (default)", cell(t["coupled"]),
             common.fmt_ratio(t["coupled"]["median"] / t["plain"]["median"])],
            ["mimic + loop, method='kkt'", cell(t["kkt"]),
             common.fmt_ratio(t["kkt"]["median"] / t["plain"]["median"])],
            ["mimic + loop, method='minimal'", cell(t["minimal"]),
             common.fmt_ratio(t["minimal"]["median"] / t["plain"]["median"])],
            ["no coupling, recursive closed-loop FD", cell(t["plain"]), "1.00"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the markdown to this file")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    rows, steps, failures = arm_rows(args.rounds)
    mimic = mimic_rows(args.rounds)
    md = ["## Prescribed joints and mimic coupling", "",
          common.machine_markdown(common.this_command()),
          "- cells `min / median` µs per call; ratio = ours / peer (medians); err = max relative "
          "difference of qdd and the prescribed torques, ours vs peer", "",
          common.md_table(["call (arm7)", "err", "ours µs", "peer µs", "ratio"], rows), "",
          "### One rk4 step of arm7 (the simulate node's Simulator)", "",
          common.md_table(["step", "µs (min / median)", "share of a 1 ms cycle"], steps), "",
          "### Four-bar + flap mimicking the crank: closed-loop forward dynamics", "",
          common.md_table(["call", "µs (min / median)", "ratio to the uncoupled robot"], mimic), ""]
    return common.finish_report(md, [], failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
