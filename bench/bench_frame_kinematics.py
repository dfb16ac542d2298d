"""Per-call cost of the frame kinematics and centroidal quantities, mbd_ros vs Pinocchio, called
from Python, one state per call, interleaved in one process (common.time_interleaved).

    PYTHONPATH=. python bench/bench_frame_kinematics.py [--quick] [--rounds N] [--robots ur5,panda]

| ours | Pinocchio |
|---|---|
| robot.link_jacobian(q, link, out=J) | pin.computeFrameJacobian(model, data, q, fid, LOCAL_WORLD_ALIGNED) (its own kinematics pass on the link's chain) |
| robot.link_velocity(q, v, link, out=) | pin.forwardKinematics(model, data, q, v) + pin.getFrameVelocity(...) |
| robot.link_acceleration(q, v, a, link, out=) | pin.forwardKinematics(model, data, q, v, a) + pin.getFrameClassicalAcceleration(...) |
| robot.center_of_mass(q, out=) | pin.centerOfMass(model, data, q) |
| robot.com_jacobian(q, out=) | pin.jacobianCenterOfMass(model, data, q) |
| robot.centroidal_momentum_matrix(q, out=) | pin.computeCentroidalMap(model, data, q) |
| robot.mass_matrix_inverse(q, out=) | pin.computeMinverse(model, data, q) (upper triangle only) |

Every pair is first checked to agree to 1e-9 relative on the benchmarked state. Ratios are
ours / Pinocchio from the minima (< 1: mbd_ros faster); target (issue): <= 0.5.

Flexible links (no Pinocchio peer): the sample flexible arm (urdf/flexible_arm.urdf with
config/flexible_arm.yaml: 2 joints + 4 modes, link `tool` welded at the flexible forearm's tip)
against the same URDF loaded rigid (2 joints), same calls with out=, ratio flexible / rigid
(`--flexible-only` runs just that table; `--robots ""` skips the Pinocchio rows).

`--chains 20,30,50`: also mass_matrix_inverse on serial chains of that many revolute links
(bench_per_call.py's random chains: random axes and inertias, seed 12345) against
computeMinverse: the deep trees where kernels/minverse.py runs Carpentier & Mansard's recursion
(mean dof depth above RECURSION_FROM_MEAN_DEPTH) instead of the tree factor's solves.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

LINKS = {"ur5": "tool0", "panda": "panda_hand", "solo12": "FL_FOOT",
         "talos_reduced": "left_sole_link"}
TARGET = 0.5

CASES = [  # label, ours, pinocchio, check (ours expression, pinocchio expression)
    ("link_jacobian", "jac(q, link, out=o_j)",
     "pin.computeFrameJacobian(model, data, qp, fid, LWA)",
     ("jac(q, link)", "pin.computeFrameJacobian(model, data, qp, fid, LWA)[:, vinv]")),
    ("link_velocity", "vel(q, v, link, out=o_6)",
     "pin.forwardKinematics(model, data, qp, vp); pin.getFrameVelocity(model, data, fid, LWA)",
     ("vel(q, v, link)", "(pin.forwardKinematics(model, data, qp, vp), "
                         "pin.getFrameVelocity(model, data, fid, LWA).vector)[1]")),
    ("link_acceleration", "acc(q, v, a, link, out=o_6)",
     "pin.forwardKinematics(model, data, qp, vp, ap); "
     "pin.getFrameClassicalAcceleration(model, data, fid, LWA)",
     ("acc(q, v, a, link)", "(pin.forwardKinematics(model, data, qp, vp, ap), "
                            "pin.getFrameClassicalAcceleration(model, data, fid, LWA).vector)[1]")),
    ("center_of_mass", "com(q, out=o_3)", "pin.centerOfMass(model, data, qp)",
     ("com(q)", "pin.centerOfMass(model, data, qp)")),
    ("com_jacobian", "jcom(q, out=o_3n)", "pin.jacobianCenterOfMass(model, data, qp)",
     ("jcom(q)", "pin.jacobianCenterOfMass(model, data, qp)[:, vinv]")),
    ("centroidal_momentum_matrix", "ag(q, out=o_6n)", "pin.computeCentroidalMap(model, data, qp)",
     ("ag(q)", "pin.computeCentroidalMap(model, data, qp)[:, vinv]")),
    ("mass_matrix_inverse", "minv(q, out=o_nn)", "pin.computeMinverse(model, data, qp)",
     ("minv(q)", "sym(pin.computeMinverse(model, data, qp))[np.ix_(vinv, vinv)]")),
]


def namespace(robot, model, data, perm, ours, pins, link):
    import pinocchio as pin
    q, v, a = ours
    qp, vp, ap = pins
    nv = robot.nv
    for _ in range(2):   # the methods install their C-level entries at the second call with out=
        for method, shape in (("center_of_mass", (3,)), ("com_jacobian", (3, nv)),
                              ("centroidal_momentum_matrix", (6, nv)),
                              ("mass_matrix_inverse", (nv, nv))):
            getattr(robot, method)(q, out=np.empty(shape))
        # (robot.link_* become LinkCalls: read them below, after this, as a program calling
        # robot.link_jacobian(...) in its loop does)
        robot.link_jacobian(q, link, out=np.empty((6, nv)))
        robot.link_velocity(q, v, link, out=np.empty(6))
        robot.link_acceleration(q, v, a, link, out=np.empty(6))
    return {
        "pin": pin, "np": np, "model": model, "data": data, "robot": robot,
        "jac": robot.link_jacobian, "vel": robot.link_velocity, "acc": robot.link_acceleration,
        "com": robot.center_of_mass, "jcom": robot.com_jacobian,
        "ag": robot.centroidal_momentum_matrix, "minv": robot.mass_matrix_inverse,
        "q": q, "v": v, "a": a, "qp": qp, "vp": vp, "ap": ap, "link": link,
        "fid": model.getFrameId(link), "LWA": pin.LOCAL_WORLD_ALIGNED, "vinv": perm.v_inv,
        "sym": lambda m: np.triu(m) + np.triu(m, 1).T,
        "o_j": np.empty((6, nv)), "o_6": np.empty(6), "o_3": np.empty(3),
        "o_3n": np.empty((3, nv)), "o_6n": np.empty((6, nv)), "o_nn": np.empty((nv, nv)),
    }


FLEXIBLE_CALLS = [  # label, call ({p}: the robot's name prefix; link "tool", out= arrays)
    ("link_jacobian", "{p}r.link_jacobian({p}q, 'tool', out={p}o_j)"),
    ("link_velocity", "{p}r.link_velocity({p}q, {p}v, 'tool', out={p}o_6)"),
    ("link_acceleration", "{p}r.link_acceleration({p}q, {p}v, {p}a, 'tool', out={p}o_6)"),
    ("center_of_mass", "{p}r.center_of_mass({p}q, out={p}o_3)"),
    ("com_jacobian", "{p}r.com_jacobian({p}q, out={p}o_3n)"),
    ("centroidal_momentum_matrix", "{p}r.centroidal_momentum_matrix({p}q, out={p}o_6n)"),
    ("mass_matrix_inverse", "{p}r.mass_matrix_inverse({p}q, out={p}o_nn)"),
    ("operational_space_inertia", "{p}r.operational_space_inertia({p}q, 'tool', damping=1e-6)"),
]


def flexible_namespace(robot, rng, prefix):
    """Names (prefixed) for FLEXIBLE_CALLS on `robot` at a random deformed state, C-level
    entries installed where the robot has them."""
    nv = robot.nv
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * 1e-3
    ns = {"r": robot, "q": q, "v": rng.normal(size=nv), "a": rng.normal(size=nv),
          "o_j": np.empty((6, nv)), "o_6": np.empty(6), "o_3": np.empty(3),
          "o_3n": np.empty((3, nv)), "o_6n": np.empty((6, nv)), "o_nn": np.empty((nv, nv))}
    ns = {prefix + k: value for k, value in ns.items()}
    for _ in range(3):   # compile, then the second calls with out= install the C-level entries
        for _, call in FLEXIBLE_CALLS:
            eval(call.format(p=prefix), ns)
    return ns


def flexible_rows(rounds):
    """[label, rigid µs, flexible µs, ratio] of FLEXIBLE_CALLS, interleaved; and the two nv."""
    import warnings
    import mbd_ros
    root = Path(__file__).resolve().parent.parent
    urdf = str(root / "urdf" / "flexible_arm.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        flexible = mbd_ros.load(urdf, flexible=str(root / "config" / "flexible_arm.yaml"))
        rigid = mbd_ros.load(urdf)
    rng = np.random.default_rng(0)
    ns = {**flexible_namespace(flexible, rng, "f_"), **flexible_namespace(rigid, rng, "r_")}
    rows = []
    for label, call in FLEXIBLE_CALLS:
        timing = C.time_interleaved({"flexible": call.format(p="f_"),
                                     "rigid": call.format(p="r_")}, ns, rounds=rounds)
        ratio = timing["flexible"]["min"] / timing["rigid"]["min"]
        rows.append([label, C.fmt_us(timing["rigid"]["min"]),
                     C.fmt_us(timing["flexible"]["min"]), f"{ratio:.1f}"])
        print(f"flexible_arm   {label:28s} rigid {timing['rigid']['min']:7.3f} µs  "
              f"flexible {timing['flexible']['min']:7.3f} µs  ratio {ratio:.1f}", flush=True)
    return rows, flexible.nv, rigid.nv


def chain_rows(chains, rounds, failures):
    """[chain, nv, call, ours µs, pin µs, ratio] of mass_matrix_inverse on serial chains."""
    import pinocchio as pin
    from bench_per_call import serial_chain_urdf
    rows = []
    for n in chains:
        robot, model, data, perm = C.load_pair(serial_chain_urdf(n), False)
        rng = np.random.default_rng(0)
        ours, pins = C.random_state(robot, perm, rng)
        out = np.empty((robot.nv, robot.nv))
        for _ in range(2):   # the second call with out= installs the C-level entry
            robot.mass_matrix_inverse(ours[0], out=out)
        ns = {"pin": pin, "model": model, "data": data, "q": ours[0], "qp": pins[0],
              "minv": robot.mass_matrix_inverse, "o_nn": out}
        theirs = eval("pin.computeMinverse(model, data, qp)", ns)
        theirs = np.triu(theirs) + np.triu(theirs, 1).T          # the upper triangle only
        err = C.rel_err(eval("minv(q)", ns), theirs[np.ix_(perm.v_inv, perm.v_inv)])
        if not err <= C.RTOL:
            failures.append(f"chain {n} mass_matrix_inverse: relative error {err:.2e}")
        timing = C.time_interleaved({"ours": "minv(q, out=o_nn)",
                                     "pin": "pin.computeMinverse(model, data, qp)"}, ns,
                                    rounds=rounds)
        ratio = timing["ours"]["min"] / timing["pin"]["min"]
        rows.append([f"chain {n}", robot.nv, "mass_matrix_inverse",
                     C.fmt_us(timing["ours"]["min"]), C.fmt_us(timing["pin"]["min"]),
                     f"{ratio:.2f}"])
        print(f"chain {n:<8d} mass_matrix_inverse          ours {timing['ours']['min']:7.3f} µs  "
              f"pin {timing['pin']['min']:7.3f} µs  ratio {ratio:.2f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--robots", default=",".join(LINKS))
    parser.add_argument("--out")
    parser.add_argument("--flexible-only", action="store_true")
    parser.add_argument("--chains", default="",
                        help="serial chain lengths for mass_matrix_inverse, e.g. 20,30,50")
    args = parser.parse_args()
    rounds = 20 if args.quick else args.rounds
    md = ["## Frame kinematics per call vs Pinocchio (`bench_frame_kinematics.py`)", "",
          C.machine_markdown(C.this_command()), ""]
    notes, failures = [], []
    header = ["robot", "nv", "call", "ours µs (min)", "pin µs (min)", "ratio"]
    rows = []
    for name in ([] if args.flexible_only else [r for r in args.robots.split(",") if r]):
        xml, floating, robot_notes = C.robot_xml(name)
        notes += robot_notes
        robot, model, data, perm = C.load_pair(xml, floating)
        rng = np.random.default_rng(0)
        ours, pins = C.random_state(robot, perm, rng)
        ns = namespace(robot, model, data, perm, ours, pins, LINKS[name])
        for label, mine, theirs, (check_ours, check_pin) in CASES:
            err = C.rel_err(eval(check_ours, ns), eval(check_pin, ns))
            if not err <= C.RTOL:
                failures.append(f"{name} {label}: ours vs Pinocchio relative error {err:.2e}")
            timing = C.time_interleaved({"ours": mine, "pin": theirs}, ns, rounds=rounds)
            ratio = timing["ours"]["min"] / timing["pin"]["min"]
            rows.append([name, robot.nv, label, C.fmt_us(timing["ours"]["min"]),
                         C.fmt_us(timing["pin"]["min"]), C.target_verdict(ratio, TARGET)])
            print(f"{name:14s} {label:28s} ours {timing['ours']['min']:7.3f} µs  "
                  f"pin {timing['pin']['min']:7.3f} µs  ratio {ratio:.2f}", flush=True)
    chains = [int(n) for n in args.chains.split(",") if n.strip()]
    if chains and not args.flexible_only:
        rows += chain_rows(chains, rounds, failures)
    if rows:
        md += [C.md_table(header, rows), ""]
    flex_rows, nv_flex, nv_rigid = flexible_rows(rounds)
    md += [f"### Flexible arm (nv {nv_flex}) vs the same arm rigid (nv {nv_rigid}), link `tool`",
           "", C.md_table(["call", "rigid µs (min)", "flexible µs (min)", "flexible / rigid"],
                          flex_rows), ""]
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
