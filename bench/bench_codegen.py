"""Generated robot-specific kernels (mbd_ros.load(..., codegen=True)) vs Pinocchio and vs the
generic kernels, per call from Python; cold generation + compile and warm start.

    PYTHONPATH=. python bench/bench_codegen.py [--quick] [--robots ur5,panda,...]
        [--startup-robots panda,talos_reduced] [--out FILE]

Part 1, per call: forward dynamics (pin.aba) and inverse dynamics (pin.rnea), one state per call,
`out=` given, interleaved in one process (bench/common.time_interleaved); ratios are
ours / Pinocchio (< 1: we are faster). Every model is first checked against Pinocchio (FD, ID, M to
1e-9 relative) and generated vs generic (1e-12 relative).

Part 2, start-up, each in a fresh process with an empty cache directory (MBD_ROS_CACHE_DIR) for
"cold", then again with that cache filled for "warm": the time of
`mbd_ros.load(path, passive_forces=False, codegen=True)` plus the first forward and inverse
dynamics calls (generation + numba compilation of those two kernels when cold), measured after
`import mbd_ros` and after a generic `load` of the same robot (so the generic kernels' own start-up,
bench_compile.py's subject, is not counted). "all six" also compiles the mass matrix, bias,
gravity and joint-wrench kernels (what `mbd-ros codegen` pre-builds).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

EXTRA_ROBOTS = {"talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
                "icub": ("icub_description/robots/icub.urdf", True)}   # nv 38: a 37-dof humanoid
DEFAULT = "ur5,panda,solo12,talos_reduced,talos_full"
TARGETS = {"arm": 0.35, "humanoid": 0.5}


def robot_source(name):
    """(URDF text, floating base) of a benchmark robot."""
    if name in EXTRA_ROBOTS:
        rel, floating = EXTRA_ROBOTS[name]
        xml = (C.example_robot_data_dir() / rel).read_text().replace('type="continuous"', 'type="revolute"')
        return xml, floating
    xml, floating, _ = C.robot_xml(name)
    return xml, floating


def per_call(name, rounds):
    import mbd_ros
    import pinocchio as pin
    xml, floating = robot_source(name)
    generic, model, data, perm = C.load_pair(xml, floating)
    robot = mbd_ros.load(xml, floating_base=floating, passive_forces=False, codegen=True)
    rng = np.random.default_rng(0)
    ours, pins = C.random_state(robot, perm, rng)
    errs = C.check_against_pin(robot, model, data, perm, ours, pins)
    q, v, x = ours
    agree = max(C.rel_err(robot.forward_dynamics(q, v, x), generic.forward_dynamics(q, v, x)),
                C.rel_err(robot.inverse_dynamics(q, v, x), generic.inverse_dynamics(q, v, x)),
                C.rel_err(robot.mass_matrix(q), generic.mass_matrix(q)))
    qp, vp, xp = pins
    ns = {"gen": robot, "generic": generic, "model": model, "data": data, "pin": pin,
          "q": q, "v": v, "x": x, "qp": qp, "vp": vp, "xp": xp, "o": np.empty(robot.nv)}
    fd = C.time_interleaved({"generated": "gen.forward_dynamics(q, v, x, out=o)",
                             "generic": "generic.forward_dynamics(q, v, x, out=o)",
                             "pin": "pin.aba(model, data, qp, vp, xp)"}, ns, rounds=rounds)
    id_ = C.time_interleaved({"generated": "gen.inverse_dynamics(q, v, x, out=o)",
                              "generic": "generic.inverse_dynamics(q, v, x, out=o)",
                              "pin": "pin.rnea(model, data, qp, vp, xp)"}, ns, rounds=rounds)
    return robot.nv, floating, errs, agree, fd, id_


_CHILD = r"""
import json, sys, time
clock = lambda: (time.perf_counter(), time.process_time())
t0 = clock()
import numpy as np
import mbd_ros
t1 = clock()
xml, floating, full = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
xml = open(xml).read()
generic = mbd_ros.load(xml, floating_base=floating, passive_forces=False)
q = generic.neutral(); v = np.zeros(generic.nv); x = np.zeros(generic.nv)
generic.forward_dynamics(q, v, x); generic.inverse_dynamics(q, v, x)
t2 = clock()
robot = mbd_ros.load(xml, floating_base=floating, passive_forces=False, codegen=True)
robot.forward_dynamics(q, v, x); robot.inverse_dynamics(q, v, x)
t3 = clock()
if full:
    robot.compile_all()
t4 = clock()
d = lambda a, b: [b[0] - a[0], b[1] - a[1]]   # [wall, CPU of this process]
print(json.dumps({"import": d(t0, t1), "generic": d(t1, t2), "fd_id": d(t2, t3), "all": d(t2, t4)}))
"""


def start_up(name, full):
    """(cold, warm) child-process timings with a fresh cache directory."""
    xml, floating = robot_source(name)
    results = []
    with tempfile.TemporaryDirectory() as cache, tempfile.NamedTemporaryFile("w", suffix=".urdf") as f:
        f.write(xml)
        f.flush()
        env = dict(os.environ, MBD_ROS_CACHE_DIR=cache, PYTHONPATH=str(C.REPO))
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _CHILD, f.name, "1" if floating else "0",
                                  "1" if full else "0"], env=env, capture_output=True, text=True,
                                 timeout=900)
            if out.returncode:
                raise RuntimeError(out.stderr[-2000:])
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", default=DEFAULT)
    ap.add_argument("--quick", action="store_true", help="fewer timing rounds")
    ap.add_argument("--startup-robots", default="panda,talos_reduced",
                    help="robots of the start-up part ('' to skip it)")
    ap.add_argument("--out")
    args = ap.parse_args()
    rounds = 30 if args.quick else 150
    names = args.robots.split(",")
    md = ["## Generated kernels (codegen) vs Pinocchio", "", C.machine_markdown(C.this_command()), ""]
    notes, failures, rows = [], [], []
    for name in names:
        nv, floating, errs, agree, fd, id_ = per_call(name, rounds)
        if max(errs.values()) > C.RTOL:
            failures.append(f"{name}: differs from Pinocchio: {errs}")
        if agree > 1e-12:
            failures.append(f"{name}: generated vs generic differ by {agree:.2e} relative")
        kind = "humanoid" if floating and nv > 30 else ("arm" if not floating else "legged")
        for label, t in (("FD", fd), ("ID", id_)):
            ratio = t["generated"]["median"] / t["pin"]["median"]
            generic_ratio = t["generic"]["median"] / t["pin"]["median"]
            target = TARGETS.get(kind)
            rows.append([name, nv, label, C.fmt_us(t["generated"]["median"]),
                         C.fmt_us(t["generic"]["median"]), C.fmt_us(t["pin"]["median"]),
                         C.fmt_ratio(ratio), C.fmt_ratio(generic_ratio),
                         f"<= {target}" if target else "-",
                         ("yes" if ratio <= target else "NO") if target else "-"])
    md += ["### Per call from Python (median µs, out= given)", "",
           C.md_table(["robot", "nv", "", "generated", "generic", "pin", "generated/pin",
                       "generic/pin", "target", "met"], rows), ""]
    if args.startup_robots:
        srows = []
        for name in args.startup_robots.split(","):
            cold, warm = start_up(name, full=True)
            pair = lambda t, f="{:.2f}": f"{f.format(t[0])} / {f.format(t[1])}"  # noqa: E731
            srows.append([name, pair(cold["fd_id"]), pair(cold["all"]), pair(warm["fd_id"], "{:.3f}"),
                          pair(warm["all"], "{:.3f}"), pair(warm["import"]), pair(warm["generic"])])
        md += ["### Start-up in a fresh process (s, wall / CPU of that process)", "",
               "On a shared machine the wall time includes waiting for a core; the CPU time is what "
               "the start-up costs on an idle one.", "",
               C.md_table(["robot", "cold: load + first FD, ID", "cold: all six kernels",
                           "warm: load + first FD, ID", "warm: all six", "import mbd_ros (warm)",
                           "generic load + first calls (warm)"], srows), "",
               "Targets: cold <= 10 s for a 7-dof arm and <= 30 s for a 37-dof humanoid; warm <= 0.6 s.", ""]
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
