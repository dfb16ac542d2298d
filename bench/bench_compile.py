"""Start-up: the first forward-dynamics result in a fresh process, cold (empty numba cache) and
warm (filled cache), and the generated kernels' start-up (issue 7 items 3 and 2).

    PYTHONPATH=. python bench/bench_compile.py [--robots ur5,panda] [--runs 3]
        [--codegen-robots ur5,panda,talos_full] [--before DIR] [--stages] [--quick] [--out FILE]

Part 1, first FD (target: <= 10 s cold, <= 0.5 s warm). Every run is a fresh Python process
running exactly

    import mbd_ros
    robot = mbd_ros.load(URDF, passive_forces=False)
    robot.forward_dynamics(q, v, tau, out=out)

with NUMBA_CACHE_DIR pointing at a temporary directory: a new empty one for each cold run
(everything is compiled), then the directory of the last cold run for the warm runs (everything is
loaded from the cache). The time reported is from just before the parent spawns the process to the
moment the first result exists (wall clock of both processes: interpreter start-up and the site
imports included, the exit excluded); medians of --runs processes each. The process's CPU time at
that moment is printed too: on a shared machine the wall time includes waiting for a core.

Part 2, where the warm time goes: the same steps taken apart in --runs more warm processes
(import numpy, numba, mbd_ros; read_urdf + build_model; Robot(model); the first kernel call,
which initialises numba's code generator and loads the kernel from the cache; the timed FD call),
whether SciPy's linalg got imported, and the largest self times of `python -X importtime`.

Part 3, generated kernels (bench_codegen.start_up, each in a fresh process with an empty codegen
cache, then warm): load(codegen=True) + first FD and ID after a generic load (target cold
<= 10 s for a 7-dof arm, <= 30 s for a 37-dof humanoid, warm <= 0.6 s).

--stages adds the older per-method table: first call of every method (ID, M, joint_wrenches,
integrate, batches), one cold and --runs warm processes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

COLD_TARGET = 10.0
WARM_TARGET = 0.5
CODEGEN_TARGETS = {"arm": (10.0, 0.6), "humanoid": (30.0, 0.6)}

# exactly the target's steps; T0 is time.time() taken by the parent just before spawning
FIRST_FD = r"""
import time
import mbd_ros
robot = mbd_ros.load(URDF, passive_forces=False)
import numpy as np
q = robot.neutral(); v = np.zeros(robot.nv); tau = np.zeros(robot.nv); out = np.empty(robot.nv)
robot.forward_dynamics(q, v, tau, out=out)
wall = time.time() - T0
cpu = time.process_time()
import json
print("@@RESULT@@" + json.dumps({"first FD": wall, "cpu": cpu, "finite": bool(np.isfinite(out).all())}))
"""

# the same steps taken apart (warm cache only)
BREAKDOWN = r"""
import time, sys, json
t = {}
clock = lambda: (time.perf_counter(), time.process_time())
def step(name, start):
    now = clock()
    t[name] = [now[0] - start[0], now[1] - start[1]]   # [wall, CPU]
    return clock()
t["interpreter start-up and site imports (until the first statement)"] = [time.time() - T0, time.process_time()]
t0 = clock()
import numpy as np
t0 = step("import numpy", t0)
import numba
t0 = step("import numba", t0)
import mbd_ros
t0 = step("import mbd_ros (after numba)", t0)
model = mbd_ros.build_model(mbd_ros.read_urdf(URDF), passive_forces=False)
t0 = step("read_urdf + build_model", t0)
robot = mbd_ros.Robot(model)
t0 = step("Robot(model)", t0)
robot._check_regular()
t0 = step("first kernel call (numba target + cache load)", t0)
q = robot.neutral(); v = np.zeros(robot.nv); tau = np.zeros(robot.nv); out = np.empty(robot.nv)
t0 = clock()
robot.forward_dynamics(q, v, tau, out=out)
step("forward_dynamics(q, v, tau, out=out)", t0)
t["scipy.linalg imported"] = "scipy.linalg" in sys.modules
t["rclpy imported"] = "rclpy" in sys.modules
print("@@RESULT@@" + json.dumps(t))
"""

# first call of every method (the --stages table)
STAGES = r"""
import json, sys, time
t = {}
t0 = time.perf_counter()
import numpy as np
t["import numpy"] = time.perf_counter() - t0
t0 = time.perf_counter()
import numba
t["import numba"] = time.perf_counter() - t0
t0 = time.perf_counter()
import mbd_ros
t["import mbd_ros"] = time.perf_counter() - t0
def stage(name, f):
    t0 = time.perf_counter()
    r = f()
    t[name] = time.perf_counter() - t0
    return r
robot = stage("load(urdf)", lambda: mbd_ros.load(URDF, passive_forces=False))
rng = np.random.default_rng(0)
q = robot.random_configuration(rng); v = rng.standard_normal(robot.nv); tau = rng.standard_normal(robot.nv)
qdd = stage("1st forward_dynamics", lambda: robot.forward_dynamics(q, v, tau))
stage("1st inverse_dynamics", lambda: robot.inverse_dynamics(q, v, qdd))
stage("1st mass_matrix", lambda: robot.mass_matrix(q))
stage("1st joint_wrenches", lambda: robot.joint_wrenches(q, v, qdd))
stage("1st integrate", lambda: robot.integrate(q, v, 1e-3))
N = 256
Q = np.stack([robot.random_configuration(rng) for _ in range(N)])
V = rng.standard_normal((N, robot.nv)); T = rng.standard_normal((N, robot.nv))
stage("1st forward_dynamics_batch", lambda: robot.forward_dynamics_batch(Q, V, T))
stage("1st inverse_dynamics_batch", lambda: robot.inverse_dynamics_batch(Q, V, T))
stage("2nd forward_dynamics", lambda: robot.forward_dynamics(q, v, tau))
print("@@RESULT@@" + json.dumps(t))
"""


def robot_urdf(name):
    """Path of an example-robot-data robot (fixed base: the targets are about arms)."""
    rel, _ = C.ROBOTS[name]
    return str(C.example_robot_data_dir() / rel)


def run_child(code, urdf, cache_dir, extra_args=(), repo=C.REPO, **extra_env):
    """Run `code` in a fresh interpreter (NUMBA_CACHE_DIR=cache_dir, `repo` first on the path,
    cwd a temporary directory); returns its @@RESULT@@ dict and the parent's wall time."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(repo), **extra_env)
    # as an installed package: Python's bytecode cache (.pyc) written and used
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.time()
    prefix = f"T0 = {t0!r}; URDF = {urdf!r}\n"
    proc = subprocess.run([sys.executable, *extra_args, "-c", prefix + code], env=env,
                          capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900)
    wall = time.time() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    line = [s for s in proc.stdout.splitlines() if s.startswith("@@RESULT@@")][-1]
    result = json.loads(line[len("@@RESULT@@"):])
    result["process wall time"] = wall
    return result, proc.stderr


def first_fd(name, runs, tmp_root, before=None):
    """{tree: (cold results, warm results)}, breakdowns, importtime lines of one robot; with
    `before` (an earlier tree) its runs alternate with this tree's, each tree with its caches."""
    urdf = robot_urdf(name)
    trees = {"this tree": C.REPO, **({"before": Path(before)} if before else {})}
    results = {tree: ([], []) for tree in trees}
    caches = {}
    for i in range(runs):
        for tree, repo in trees.items():
            caches[tree] = tmp_root / f"{name}_{tree.replace(' ', '_')}_cold{i}"
            caches[tree].mkdir()
            results[tree][0].append(run_child(FIRST_FD, urdf, caches[tree], repo=repo)[0])
            print(f"# {name} {tree} cold {i + 1}: {results[tree][0][-1]['first FD']:.2f} s",
                  file=sys.stderr)
    for i in range(runs):
        for tree, repo in trees.items():
            results[tree][1].append(run_child(FIRST_FD, urdf, caches[tree], repo=repo)[0])
            print(f"# {name} {tree} warm {i + 1}: {results[tree][1][-1]['first FD']:.3f} s",
                  file=sys.stderr)
    cache = caches["this tree"]
    parts = [run_child(BREAKDOWN, urdf, cache)[0] for _ in range(runs)]
    _, importtime = run_child(FIRST_FD, urdf, cache, ("-X", "importtime"))
    return results, parts, importtime


def importtime_top(stderr, n=10):
    """The n largest self times (ms) of `python -X importtime` output, as (module, self ms)."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, module = line[len("import time:"):].split("|")
        rows.append((module.strip(), int(self_us) / 1e3))
    rows.sort(key=lambda r: -r[1])
    return rows[:n]


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def fmt_s(x):
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", default="ur5,panda", help="example-robot-data robots of part 1")
    ap.add_argument("--runs", type=int, default=3, help="processes per measurement (median)")
    ap.add_argument("--codegen-robots", default="ur5,panda,talos_full",
                    help="robots of the codegen start-up part ('' to skip it)")
    ap.add_argument("--stages", action="store_true", help="also the first call of every method")
    ap.add_argument("--before", metavar="DIR",
                    help="an earlier tree (e.g. a `git archive` of it, with its fastcall .so) whose "
                         "first-FD runs alternate with this tree's")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: one process each, ur5 only, no codegen part")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.robots, args.codegen_robots = 1, "ur5", ""
    md = ["## Start-up: first forward dynamics in a fresh process", "",
          C.machine_markdown(C.this_command()),
          f"- each number: median of {args.runs} fresh processes; NUMBA_CACHE_DIR a temporary "
          "directory, empty for each cold run, the last cold run's for the warm runs"
          + (f"; `before`: the tree in {args.before}, its runs alternating with this tree's"
             if args.before else ""), ""]
    failures, notes = [], []
    tmp_root = Path(tempfile.mkdtemp(prefix="mbd_ros_bench_numba_cache_"))
    try:
        rows, part_rows, tops = [], {}, {}
        for name in args.robots.split(","):
            results, parts, importtime = first_fd(name, args.runs, tmp_root, args.before)
            for tree, (colds, warms) in results.items():
                if not all(r["finite"] for r in colds + warms):
                    failures.append(f"{name} ({tree}): the first FD result is not finite")
                cold, warm = median(colds, "first FD"), median(warms, "first FD")
                rows.append([name if tree == "this tree" else f"{name}, before",
                             f"{fmt_s(cold)} ({fmt_s(median(colds, 'cpu'))} CPU)",
                             f"<= {COLD_TARGET:g}", "met" if cold <= COLD_TARGET else "**missed**",
                             f"{fmt_s(warm)} ({fmt_s(median(warms, 'cpu'))} CPU)",
                             f"<= {WARM_TARGET:g}", "met" if warm <= WARM_TARGET else "**missed**",
                             " / ".join(fmt_s(r["first FD"]) for r in colds),
                             " / ".join(fmt_s(r["first FD"]) for r in warms)])
            part_rows[name] = parts
            tops[name] = importtime_top(importtime)
        md += ["### First `forward_dynamics` result (s from spawning the process; median, its CPU "
               "time in parentheses)", "",
               "`import mbd_ros; robot = mbd_ros.load(URDF, passive_forces=False); "
               "robot.forward_dynamics(q, v, tau, out=out)`", "",
               C.md_table(["robot", "cold", "target", "verdict", "warm", "target", "verdict",
                           "cold runs", "warm runs"], rows), ""]
        keys = [k for k in part_rows[next(iter(part_rows))][0]
                if not k.endswith("imported") and k != "process wall time"]

        def wall_cpu(runs, k):
            return statistics.median(r[k][0] for r in runs), statistics.median(r[k][1] for r in runs)

        brows = []
        for k in keys:
            brows.append([k] + ["{:.0f} / {:.0f}".format(*(1e3 * x for x in wall_cpu(part_rows[n], k)))
                                for n in part_rows])
        brows.append(["**sum**"] + ["**{:.0f} / {:.0f}**".format(
            *(1e3 * sum(wall_cpu(part_rows[n], k)[j] for k in keys) for j in (0, 1)))
            for n in part_rows])
        for flag in ("scipy.linalg imported", "rclpy imported"):
            brows.append([flag] + [str(any(r[flag] for r in part_rows[n])) for n in part_rows])
        md += ["### Where the warm time goes (ms, wall / CPU, medians; the same steps taken apart)", "",
               C.md_table(["step"] + list(part_rows), brows), ""]
        for name, top in tops.items():
            md += [f"Largest self times of `python -X importtime` (warm, {name}): "
                   + ", ".join(f"{m} {ms:.0f} ms" for m, ms in top), ""]
        if args.codegen_robots:
            md += codegen_part(args.codegen_robots.split(","), args.runs, tmp_root)
        if args.stages:
            md += stages_part(args.runs, tmp_root)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return C.finish_report(md, notes, failures, args.out)


def codegen_part(names, runs, tmp_root):
    """Rows of the generated kernels' start-up (bench_codegen.start_up: cold, then warm)."""
    import bench_codegen
    rows = []
    for name in names:
        print(f"# codegen start-up {name} ...", file=sys.stderr)
        xml, floating = bench_codegen.robot_source(name)
        import mbd_ros
        nv = mbd_ros.build_model(mbd_ros.read_urdf(xml), floating_base=floating).nv
        kind = "humanoid" if floating and nv > 30 else "arm"
        cold_target, warm_target = CODEGEN_TARGETS[kind]
        cold, warm = bench_codegen.start_up(name, full=False)
        c, w = cold["fd_id"], warm["fd_id"]
        whole = codegen_whole_process(xml, floating, runs, tmp_root / f"codegen_{name}")
        rows.append([name, nv, f"{c[0]:.2f} ({c[1]:.2f} CPU)", f"<= {cold_target:g}",
                     "met" if c[0] <= cold_target else "**missed**",
                     f"{w[0]:.3f} ({w[1]:.3f} CPU)", f"<= {warm_target:g}",
                     "met" if w[0] <= warm_target else "**missed**",
                     f"{fmt_s(median(whole, 'first FD'))} ({fmt_s(median(whole, 'cpu'))} CPU)"])
    return ["### Generated kernels: `load(..., codegen=True)` + first FD and ID (s, one cold and one "
            "warm process; after `import mbd_ros` and a generic load, bench_codegen.start_up); last "
            f"column: a whole warm process, `import mbd_ros; load(URDF, passive_forces=False, "
            f"codegen=True)` + first FD from spawning it (median of {runs})", "",
            C.md_table(["robot", "nv", "cold", "target", "verdict", "warm", "target", "verdict",
                        "warm, whole process"], rows), ""]


CODEGEN_FIRST_FD = FIRST_FD.replace("passive_forces=False)", "passive_forces=False, codegen=True)")
CODEGEN_FIRST_FD = CODEGEN_FIRST_FD.replace("load(URDF,", "load(open(URDF).read(), floating_base=FLOATING,")


def codegen_whole_process(xml, floating, runs, folder):
    """Warm fresh processes of import + load(codegen=True) + first FD (one process fills the
    numba and codegen caches first)."""
    folder.mkdir()
    urdf = folder / "robot.urdf"
    urdf.write_text(xml)
    code = f"FLOATING = {floating!r}\n" + CODEGEN_FIRST_FD
    env = {"MBD_ROS_CACHE_DIR": str(folder / "codegen")}
    run_child(code, str(urdf), folder / "numba", **env)
    return [run_child(code, str(urdf), folder / "numba", **env)[0] for _ in range(runs)]


def stages_part(runs, tmp_root):
    """The first call of every method, one cold and `runs` warm processes (min)."""
    urdf = robot_urdf("ur5")
    cache = tmp_root / "stages"
    cache.mkdir()
    cold = run_child(STAGES, urdf, cache)[0]
    warms = [run_child(STAGES, urdf, cache)[0] for _ in range(runs)]
    keys = [k for k in cold if k != "process wall time"]
    rows = [[k, f"{cold[k] * 1e3:.0f}", f"{min(w[k] for w in warms) * 1e3:.1f}"] for k in keys]
    return ["### First call of every method (ur5; ms; cold: one process, warm: min of "
            f"{runs})", "", C.md_table(["stage", "cold", "warm"], rows), ""]


if __name__ == "__main__":
    sys.exit(main())
