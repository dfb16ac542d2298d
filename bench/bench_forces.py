"""Cost of force elements per call, and of a simulation step of the double-wishbone suspension.

arm7 (urdf/arm7.urdf, 7 revolute joints) forward dynamics with force elements (mbd_ros.forces):
- ours: `robot.forward_dynamics(q, v, tau, out=out)` of a robot loaded with `forces=`;
- peer: Pinocchio with the same element written in Python on Pinocchio's kinematics
  (`forwardKinematics` + `updateFramePlacements`, the element's force from the frame poses and
  velocities, then `aba(q, v, tau, fext)`) - what a user of Pinocchio would write;
- the per-element overhead: ours with elements minus ours without.
Results are checked against each other (relative 1e-9) before timing; timing is interleaved
(common.time_interleaved), min / median of the rounds.

Double wishbone (urdf/double_wishbone.urdf + config/double_wishbone.yaml, closed loop + strut):
µs per `robot.step(q, v, tau, 1e-3)` (rk4, four closed-loop forward dynamics with the strut,
then the loop projection), against the 1000 µs budget of a 1 kHz simulate node.

    PYTHONPATH=. python bench/bench_forces.py [--rounds N] [--out bench/results/forces.md]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.add_repo_to_path()

SPRING = dict(name="spring", type="spring_damper", parent="base_link", parent_point=[0.1, 0.2, 0.3],
              child="link_5", child_point=[0.05, -0.02, 0.1], stiffness=300.0, damping=2.0,
              rest_length=0.3, preload=5.0)
JOINT_SPRING = dict(name="js", type="joint_spring", joint="joint_2", stiffness=35.0, damping=0.8,
                    rest_position=0.4)
BUSHING = dict(name="bushing", type="bushing", parent="link_2",
               parent_origin={"xyz": [0.1, 0.0, 0.2], "rpy": [0.1, 0.2, 0.3]}, child="link_6",
               child_origin={"xyz": [0.0, 0.1, 0.0], "rpy": [0.3, -0.2, 0.1]},
               stiffness=[100.0, 200.0, 300.0, 10.0, 20.0, 30.0], damping=[1.0, 2.0, 3.0, 0.1, 0.2, 0.3])


def pin_spring(pin, model, data, perm, element):
    """A Python function (qp, vp, taup) -> pin.aba(...) with the element applied, Pinocchio-only."""
    frame_ids = {}
    for role in ("parent", "child"):
        if role in element:
            frame_ids[role] = model.getFrameId(element[role])
    zero = [pin.Force.Zero() for _ in range(model.njoints)]

    def point_state(role, point):
        frame = model.frames[frame_ids[role]]
        placement = data.oMi[frame.parentJoint] * frame.placement
        world = placement.act(np.asarray(point, dtype=float))
        local = frame.placement.act(np.asarray(point, dtype=float))        # in the joint frame
        twist = data.v[frame.parentJoint]
        velocity = data.oMi[frame.parentJoint].rotation @ (twist.linear + np.cross(twist.angular, local))
        return world, velocity, frame.parentJoint, local

    if element["type"] == "joint_spring":
        iv = int(perm.v_inv[int(element["joint"][-1]) - 1])   # our v index -> Pinocchio's

        def run(qp, vp, taup):
            tau = taup.copy()
            tau[iv] += -element["stiffness"] * (qp[iv] - element["rest_position"]) - element["damping"] * vp[iv]
            return pin.aba(model, data, qp, vp, tau)
        return run

    def run(qp, vp, taup):
        pin.forwardKinematics(model, data, qp, vp)
        xa, va, ja, la = point_state("parent", element["parent_point"])
        xb, vb, jb, lb = point_state("child", element["child_point"])
        d = xb - xa
        length = np.linalg.norm(d)
        u = d / length
        f = element["stiffness"] * (length - element["rest_length"]) + element["damping"] * (u @ (vb - va)) + element["preload"]
        fext = list(zero)
        for joint, local, force in ((ja, la, f * u), (jb, lb, -f * u)):
            n = data.oMi[joint].rotation.T @ force
            fext[joint] = fext[joint] + pin.Force(n, np.cross(local, n))
        return pin.aba(model, data, qp, vp, taup, fext)
    return run


def arm_rows(rounds):
    import mbd_ros
    import pinocchio as pin
    xml = (common.REPO / "urdf" / "arm7.urdf").read_text()
    model = common.pin_model(xml, False)
    data = model.createData()
    rng = np.random.default_rng(0)
    plain = mbd_ros.load(xml, passive_forces=False)
    perm = common.Permutation(plain, model)
    q = plain.random_configuration(rng)
    v, tau = rng.normal(size=7), rng.normal(size=7)
    qp, vp, tp = (np.ascontiguousarray(x[p]) for x, p in ((q, perm.q), (v, perm.v), (tau, perm.v)))
    out = np.empty(7)
    rows, failures = [], []
    cases = [("none", []), ("spring_damper", [SPRING]), ("joint_spring", [JOINT_SPRING]),
             ("bushing", [BUSHING]), ("10 x spring_damper", [dict(SPRING, name=f"s{i}") for i in range(10)])]
    ns = dict(plain=plain, q=q, v=v, tau=tau, out=out, pin=pin, model=model, data=data, qp=qp, vp=vp, tp=tp)
    base = common.time_interleaved({"ours": "plain.forward_dynamics(q, v, tau, out=out)",
                                    "pin": "pin.aba(model, data, qp, vp, tp)"}, ns, rounds=rounds)
    for label, elements in cases:
        robot = mbd_ros.load(xml, passive_forces=False, forces={"forces": elements}) if elements else plain
        ns["robot"] = robot
        stmts = {"ours": "robot.forward_dynamics(q, v, tau, out=out)"}
        if label in ("spring_damper", "joint_spring"):
            ns["peer"] = pin_spring(pin, model, data, perm, elements[0])
            theirs = ns["peer"](qp, vp, tp)[perm.v_inv]
            error = common.rel_err(robot.forward_dynamics(q, v, tau), theirs)
            if error > common.RTOL:
                failures.append(f"{label}: ours vs Pinocchio + Python element differ by {error:.2e}")
            stmts["pin"] = "peer(qp, vp, tp)"
        else:
            error = float("nan")
        t = common.time_interleaved(stmts, ns, rounds=rounds)
        peer = t.get("pin")
        rows.append([label, f"{error:.1e}" if peer else "-",
                     common.fmt_us(t["ours"]["min"]) + " / " + common.fmt_us(t["ours"]["median"]),
                     common.fmt_us(t["ours"]["median"] - base["ours"]["median"]),
                     (common.fmt_us(peer["min"]) + " / " + common.fmt_us(peer["median"])) if peer else "-",
                     common.fmt_ratio(t["ours"]["median"] / peer["median"]) if peer else "-"])
        print(" | ".join(rows[-1]), flush=True)
    rows.insert(0, ["(pin.aba alone, no element)", "-",
                    common.fmt_us(base["ours"]["min"]) + " / " + common.fmt_us(base["ours"]["median"]), "0",
                    common.fmt_us(base["pin"]["min"]) + " / " + common.fmt_us(base["pin"]["median"]),
                    common.fmt_ratio(base["ours"]["median"] / base["pin"]["median"])])
    return rows, failures


def suspension_row(rounds):
    import mbd_ros
    config = str(common.REPO / "config" / "double_wishbone.yaml")
    robot = mbd_ros.load(str(common.REPO / "urdf" / "double_wishbone.urdf"), closures=config, forces=config)
    q = robot.assemble(np.array([0.1, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([0.5, 0.0, 0.0]))
    ns = dict(robot=robot, q=q, v=v, tau=np.zeros(3), np=np)
    t = common.time_interleaved({
        "step": "robot.step(q, v, tau, 1e-3)",
        "fd": "robot.forward_dynamics(q, v, tau)",
    }, ns, rounds=max(10, rounds // 5), target_s=2e-2)
    return [["robot.step (rk4 + projection)", common.fmt_us(t["step"]["min"]) + " / " + common.fmt_us(t["step"]["median"]),
             f"{t['step']['median'] / 1000:.1%}"],
            ["closed-loop forward_dynamics with the strut", common.fmt_us(t["fd"]["min"]) + " / " + common.fmt_us(t["fd"]["median"]),
             f"{t['fd']['median'] / 1000:.1%}"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the markdown to this file")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    rows, failures = arm_rows(args.rounds)
    suspension = suspension_row(args.rounds)
    md = ["## Force elements per call (arm7) and the suspension's simulation step", "",
          common.machine_markdown(common.this_command()),
          "- cells `min / median` µs per call; overhead = median(ours with the elements) - "
          "median(ours without); ratio = ours / peer (medians); err = max|qdd ours - qdd peer| / max(1, |qdd peer|)",
          "- peer: Pinocchio (`forwardKinematics` + the element in Python + `aba` with `fext`); "
          "no peer row for the bushing and the 10 springs (not written for Pinocchio here)", "",
          common.md_table(["elements", "err", "ours µs", "overhead µs", "peer µs", "ratio"], rows), "",
          "### Double wishbone (closed loop + strut), one 1 kHz simulation step", "",
          common.md_table(["call", "µs (min / median)", "share of a 1 ms cycle"], suspension), ""]
    return common.finish_report(md, [], failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
