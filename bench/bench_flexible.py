"""Flexible links: cost of the floating-frame-of-reference dynamics.

    PYTHONPATH=. python bench/bench_flexible.py [--quick] [--out FILE]

Part 1, per call (interleaved, same process): forward dynamics (FD), inverse dynamics (ID) and
the mass matrix (M) of the sample flexible arm (urdf/flexible_arm.urdf + config/flexible_arm.yaml,
forearm with 4 modes, and with 8 modes) vs the same arm loaded rigid (no `flexible=`).
Goal of issue 8: FD of the flexible arm with 4 modes <= 2x the rigid arm's. Both sides are timed
through their C-level entries (robot.compile_c_calls() first: mbd_ros/fastcall), so the ratio
compares the kernels plus the same ~0.1 us call path.

Part 2, per simulated second: the flexible pendulum of test/test_flexible_exudyn.py (a 0.5 m
aluminium strip, 11 lumped nodes, 3 modes, gravity) for 1 s at dt = 1e-4 s: mbd_ros (RK4 through
mbd_ros.simulation.Simulator, 4 FD per step) vs Exudyn (ObjectFFRFreducedOrder, implicit
generalized-alpha, its C++ solver). Both integrate the same model and agree on the tip path to
2e-5 m (the test); wall time per simulated second, interleaved, several rounds.

Before timing, the flexible arm's FD is checked against M^-1 (tau - b) (relative 1e-9).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()
sys.path.insert(0, str(C.REPO / "test"))


def arm(modes=None):
    import mbd_ros
    import yaml
    urdf = str(C.REPO / "urdf" / "flexible_arm.urdf")
    if modes == 0:
        return mbd_ros.load(urdf)
    data = yaml.safe_load((C.REPO / "config" / "flexible_arm.yaml").read_text())
    if modes is not None:
        data["flexible_links"][0]["modes"] = modes
    return mbd_ros.load(urdf, flexible=data)


def per_call(rounds, failures):
    robots = {"rigid arm": arm(0), "flexible, 4 modes": arm(4), "flexible, 8 modes": arm(8)}
    rng = np.random.default_rng(0)
    ns, stmts = {}, {}
    installed = {}
    for label, robot in robots.items():
        # time the C-level entries on both sides (mbd_ros/fastcall), not the numba dispatcher
        installed[label] = robot.compile_c_calls()
    for k, (label, robot) in enumerate(robots.items()):
        q = robot.random_configuration(rng)
        if robot.nq > 2:
            q[2:] = rng.normal(size=robot.nq - 2) * 1e-3
        v = rng.normal(size=robot.nv)
        x = rng.normal(size=robot.nv)
        if robot.nq > 2:
            M = robot.mass_matrix(q)
            qdd = robot.forward_dynamics(q, v, x)
            ref = np.linalg.solve(M, x - robot.bias_forces(q, v))
            err = np.abs(qdd - ref).max() / max(1.0, np.abs(ref).max())
            if err > 1e-9:
                failures.append(f"{label}: FD differs from M^-1 (tau - b) by {err:.2e}")
        ns.update({f"r{k}": robot, f"q{k}": q, f"v{k}": v, f"x{k}": x, f"o{k}": np.empty(robot.nv),
                   f"m{k}": np.empty((robot.nv, robot.nv))})
        stmts[f"FD {label}"] = f"r{k}.forward_dynamics(q{k}, v{k}, x{k}, out=o{k})"
        stmts[f"ID {label}"] = f"r{k}.inverse_dynamics(q{k}, v{k}, x{k}, out=o{k})"
        stmts[f"M {label}"] = f"r{k}.mass_matrix(q{k}, out=m{k})"
    times = C.time_interleaved(stmts, ns, rounds=rounds)
    rows = []
    for algo in ("FD", "ID", "M"):
        base = times[f"{algo} rigid arm"]["median"]
        for label in robots:
            t = times[f"{algo} {label}"]
            rows.append([algo, label, C.fmt_us(t["min"]), C.fmt_us(t["median"]),
                         C.fmt_ratio(t["median"] / base)])
    ratio4 = times["FD flexible, 4 modes"]["median"] / times["FD rigid arm"]["median"]
    for label, names in installed.items():
        if "forward_dynamics" not in names:
            failures.append(f"{label}: no C entry installed for forward_dynamics ({names})")
    return rows, ratio4


def per_simulated_second(rounds):
    import exudyn as exu
    import test_flexible_exudyn as T
    from flexible_models import lumped_modal_data
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "strip.npz"
        data = lumped_modal_data(path, T.LENGTH, T.AREA, T.IY, T.NODES, T.MODES)
        funcs = {
            # the RK4 step runs at C level (KernelCall.rk4); the loop of steps is Python's
            "mbd_ros (RK4 steps, Python loop)": lambda: T.mbd_tip_path(path, T.G, 0.0),
            "Exudyn (generalized-alpha)": lambda: T.exudyn_tip_path(exu, *data, T.G, 0.0),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples = {k: [] for k in funcs}
            for f in funcs.values():
                f()                                    # warm up (compilation)
            for r in range(rounds):
                for k in (list(funcs) if r % 2 == 0 else list(funcs)[::-1]):
                    t0 = time.perf_counter()
                    funcs[k]()
                    samples[k].append(time.perf_counter() - t0)
    base = np.median(samples["Exudyn (generalized-alpha)"])
    rows = [[k, f"{min(s) / T.T_END:.3f}", f"{np.median(s) / T.T_END:.3f}",
             C.fmt_ratio(np.median(s) / base)] for k, s in samples.items()]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--no-exudyn", action="store_true", help="skip part 2")
    args = parser.parse_args()
    failures, notes = [], []
    md = ["## Flexible links (bench/bench_flexible.py)", "", C.machine_markdown(C.this_command()), ""]
    rows, ratio4 = per_call(40 if args.quick else 200, failures)
    md += ["### Per call, the sample arm rigid vs with a flexible forearm", "",
           C.md_table(["algo", "robot", "min [us]", "median [us]", "/ rigid"], rows), ""]
    notes.append(f"FD flexible (4 modes) / rigid = {ratio4:.2f} (goal <= 2)")
    try:
        if args.no_exudyn:
            raise ImportError("--no-exudyn")
        rows = per_simulated_second(2 if args.quick else 5)
        md += ["### Per simulated second, flexible pendulum, dt = 1e-4 s (wall s per simulated s)", "",
               C.md_table(["integrator", "min [s/s]", "median [s/s]", "/ Exudyn"], rows), ""]
    except ImportError as exc:
        notes.append(f"Exudyn part skipped: {exc}")
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
