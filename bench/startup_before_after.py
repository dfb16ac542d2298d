"""Warm start-up of two checkouts of mbd_ros, alternated process by process: `import mbd_ros`,
`mbd_ros.load("urdf/arm7.urdf", passive_forces=False)` and the first forward dynamics, each in a
fresh process (the first pair only fills the caches and is not counted).

    python bench/startup_before_after.py BEFORE_DIR [AFTER_DIR] [--runs 10]

Prints the CPU model, then the medians (and minima) of import time, wall time to the first
result and the process's CPU time for each checkout. Not a test: nothing here passes or fails.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

CODE = ("import time; t0 = time.perf_counter(); c0 = time.process_time();"
        "import numpy as np; import mbd_ros; t1 = time.perf_counter();"
        "r = mbd_ros.load('urdf/arm7.urdf', passive_forces=False);"
        "r.forward_dynamics(np.zeros(r.nq), np.zeros(r.nv), np.zeros(r.nv));"
        "print(t1 - t0, time.perf_counter() - t0, time.process_time() - c0)")


def run(directory):
    env = dict(os.environ, PYTHONPATH=directory)
    out = subprocess.run([sys.executable, "-c", CODE], cwd=directory, env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    trees = {"before": str(Path(args.before).resolve()), "after": str(Path(args.after).resolve())}
    print(C.machine_markdown(C.this_command()))
    results = {label: [] for label in trees}
    for i in range(args.runs + 1):
        order = ("before", "after") if i % 2 else ("after", "before")
        for label in order:
            row = run(trees[label])
            if i:                       # the first pair fills bytecode and numba caches
                results[label].append(row)
    for label, rows in results.items():
        imports, wall, cpu = zip(*rows)
        print(f"{label} ({trees[label]}): import mbd_ros {statistics.median(imports):.3f} s, "
              f"import + load + first FD wall {statistics.median(wall):.3f} s "
              f"(min {min(wall):.3f}), CPU {statistics.median(cpu):.3f} s (medians of {len(rows)})")


if __name__ == "__main__":
    main()
