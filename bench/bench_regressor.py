"""Per-call cost of the joint-torque regressor: robot.regressor(q, v, qdd) vs
pin.computeJointTorqueRegressor, called from Python, one state per call, interleaved in one
process (common.time_interleaved).

    PYTHONPATH=. python bench/bench_regressor.py [--quick] [--out FILE]

Before timing, each robot's regressor is checked against Pinocchio's on the benchmarked state
(columns matched by body name, rows by joint name) to 1e-10 relative. Reported: min and median
microseconds per call; ratio = ours / Pinocchio (target <= 0.70). `ours out=` is
regressor(q, v, qdd, out=out), which from its second call is a C-level entry (mbd_ros.fastcall);
`ours` allocates its result, as Pinocchio's Python binding does (numba's dispatcher).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

TARGET = 0.70
ROBOTS = ["ur5", "panda", "solo12", "talos_reduced"]


def column_map(robot, model):
    """Our regressor columns in Pinocchio's order: Y_pin[:, cols] matches ours."""
    import pinocchio as pin
    joints = [model.frames[model.getFrameId(b, pin.FrameType.BODY)].parentJoint
              for b in robot.body_names]
    return np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in joints])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args(argv)
    import pinocchio as pin
    rounds = 40 if args.quick else 200
    md = ["## Joint-torque regressor per call", "", C.machine_markdown(C.this_command()), ""]
    rows, targets, notes, failures = [], [], [], []
    for name in ROBOTS:
        xml, floating, fixes = C.robot_xml(name)
        notes += fixes
        robot, model, data, perm = C.load_pair(xml, floating)
        rng = np.random.default_rng(0)
        ours, pins = C.random_state(robot, perm, rng)
        q, v, x = ours
        qp, vp, xp = pins
        cols = column_map(robot, model)
        Y = robot.regressor(q, v, x)
        Y_pin = np.asarray(pin.computeJointTorqueRegressor(model, data, qp, vp, xp))
        err = C.rel_err(Y, Y_pin[perm.v_inv][:, cols])
        if not err <= 1e-10:
            failures.append(f"{name}: regressor differs from Pinocchio's by {err:.2e} relative")
        out = np.empty_like(Y)
        for _ in range(2):   # the C-level entry of regressor(..., out=out) is installed now
            robot.regressor(q, v, x, out=out)
        ns = {"reg": robot.regressor, "pin_reg": pin.computeJointTorqueRegressor,
              "model": model, "data": data, "q": q, "v": v, "x": x, "qp": qp, "vp": vp,
              "xp": xp, "out": out}
        res = C.time_interleaved({"ours": "reg(q, v, x)", "ours out=": "reg(q, v, x, out=out)",
                                  "pin": "pin_reg(model, data, qp, vp, xp)"}, ns, rounds=rounds)
        ratio = res["ours out="]["min"] / res["pin"]["min"]
        rows.append([name, f"{robot.nv} x {Y.shape[1]}", f"{err:.1e}"]
                    + [f"{C.fmt_us(res[k]['min'])} / {C.fmt_us(res[k]['median'])}"
                       for k in ("ours", "ours out=", "pin")]
                    + [C.fmt_ratio(res["ours"]["min"] / res["pin"]["min"]), C.fmt_ratio(ratio)])
        targets.append([name, C.target_verdict(ratio, TARGET)])
    md += [C.md_table(["robot", "Y shape", "rel. err vs pin", "ours us (min / median)",
                       "ours out= us", "pin us", "ratio", "ratio out="], rows), "",
           C.md_table(["robot", "ours out= / pin (min)"], targets), ""]
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
