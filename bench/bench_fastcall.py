"""What each way of calling a kernel costs from Python (mbd_ros/fastcall): per call of forward
dynamics (FD), inverse dynamics (ID) and the mass matrix (M), `out=` given, one state per call,
interleaved in one process with Pinocchio (pin.aba / pin.rnea / pin.crba).

    PYTHONPATH=. python bench/bench_fastcall.py [--quick] [--robots ur5,panda,...] [--out FILE]

For the generic kernels and the generated ones (codegen=True), three call paths:
- `C`: robot.forward_dynamics(q, v, tau, out=o), the KernelCall installed on the robot (C
  extension -> the kernel's numba @cfunc);
- `held`: the Python method held from before the KernelCall was installed (it calls the same C
  entry, after the Python method's own checks);
- `numba`: the Python method with the KernelCalls dropped (robot.drop_c_calls()): numba's
  dispatcher, the path before mbd_ros/fastcall.
Ratios are ours / Pinocchio (< 1: we are faster), from the medians of the interleaved rounds.
Every robot is first checked against Pinocchio (FD, ID, M to 1e-9 relative).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

DEFAULT = "ur5,panda,solo12,talos_reduced"
CALLS = {"FD": ("forward_dynamics", "pin.aba(model, data, qp, vp, xp)", "(q, v, x, out=o)"),
         "ID": ("inverse_dynamics", "pin.rnea(model, data, qp, vp, xp)", "(q, v, x, out=o)"),
         "M": ("mass_matrix", "pin.crba(model, data, qp)", "(q, out=om)")}


def robots(name):
    """{path label: robot} for the generic and generated kernels, with their KernelCalls
    installed ('C', 'held') or dropped ('numba'), plus the Pinocchio model and the state."""
    import mbd_ros
    xml, floating, _ = C.robot_xml(name)
    generic, model, data, perm = C.load_pair(xml, floating)
    made = {"generic": generic}
    for label in ("generic numba", "generated", "generated numba"):
        made[label] = mbd_ros.load(xml, floating_base=floating, passive_forces=False,
                                   codegen=label.startswith("generated"))
    rng = np.random.default_rng(0)
    ours, pins = C.random_state(generic, perm, rng)
    errs = C.check_against_pin(generic, model, data, perm, ours, pins)
    errs_gen = C.check_against_pin(made["generated"], model, data, perm, ours, pins)
    for label, robot in made.items():
        if label.endswith("numba"):
            robot.drop_c_calls()
        else:
            robot.compile_c_calls()
    return made, model, data, ours, pins, max(list(errs.values()) + list(errs_gen.values()))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", default=DEFAULT)
    ap.add_argument("--quick", action="store_true", help="fewer timing rounds")
    ap.add_argument("--out")
    args = ap.parse_args()
    import mbd_ros.fastcall as fastcall
    import pinocchio as pin
    rounds = 30 if args.quick else 150
    md = ["## Call paths: C entry (mbd_ros/fastcall) vs numba dispatch vs Pinocchio", "",
          C.machine_markdown(C.this_command()), "",
          f"- C extension built: {fastcall.AVAILABLE}", ""]
    notes, failures, rows = [], [], []
    for name in args.robots.split(","):
        made, model, data, ours, pins, err = robots(name)
        if err > C.RTOL:
            failures.append(f"{name}: differs from Pinocchio by {err:.2e}")
        q, v, x = ours
        qp, vp, xp = pins
        nv = made["generic"].nv
        ns = {"model": model, "data": data, "pin": pin, "q": q, "v": v, "x": x, "qp": qp,
              "vp": vp, "xp": xp, "o": np.empty(nv), "om": np.empty((nv, nv))}
        for algo, (method, pin_stmt, call) in CALLS.items():
            stmts = {"pin": pin_stmt}
            for kernels in ("generic", "generated"):
                robot, numba_robot = made[kernels], made[kernels + " numba"]
                ns[f"{kernels}_robot"] = robot
                ns[f"{kernels}_held"] = getattr(type(robot), method).__get__(robot)
                ns[f"{kernels}_numba"] = numba_robot
                stmts[f"{kernels} C"] = f"{kernels}_robot.{method}{call}"
                stmts[f"{kernels} held"] = f"{kernels}_held{call}"
                stmts[f"{kernels} numba"] = f"{kernels}_numba.{method}{call}"
            t = C.time_interleaved(stmts, ns, rounds=rounds)
            base = t["pin"]["median"]
            row = [name, nv, algo, C.fmt_us(base)]
            for kernels in ("generic", "generated"):
                for path in ("C", "held", "numba"):
                    us = t[f"{kernels} {path}"]["median"]
                    row.append(f"{C.fmt_us(us)} ({C.fmt_ratio(us / base)})")
            rows.append(row)
    md += ["### Median µs per call (ratio to Pinocchio)", "",
           C.md_table(["robot", "nv", "", "pin", "generic C", "generic held", "generic numba",
                       "generated C", "generated held", "generated numba"], rows), ""]
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
