"""Sweeps on Dask: the wall time of a sweep of 1 s arm rollouts at 1 kHz (the sample sweep,
config/arm7_payload_sweep.yaml, with `--runs` payload values) on a LocalCluster of `--workers`
single-threaded worker processes, and the per-run overhead of Dask and of the sweep's own
bookkeeping (tasks, the spec's transfer, results back to the client, Parquet parts, the
progress bar) relative to the compute of a run.

    PYTHONPATH=. python bench/bench_sweep.py [--runs 10000] [--workers 2] [--batch-size 50]
                                             [--metrics all|no-torque]

Measured:
- compute per run: runner.run_one in this process (what a worker does per run: the variation,
  robot.rollout, the metrics), median of `--samples` runs, taken before and after the sweep;
  also its parts (robot.rollout alone, the metrics);
- the sweep: run_sweep on an already started and warmed-up LocalCluster (each worker has built
  the robot: cluster start-up and the first robot load are reported apart), wall time W;
  the workers' own time inside the runs, S = sum of the `seconds` column;
- Dask overhead per run = (workers W - S) / runs: the time the workers were not computing a
  run, per run; as a fraction of the mean compute per run S / runs (target < 10 %).
Everything in one process (the workers are its children), the CPU model printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

SAMPLE = C.REPO / "config" / "arm7_payload_sweep.yaml"


def sweep_spec(runs, batch_size, metrics):
    from mbd_ros.inputs.yaml_input import read_yaml
    from mbd_ros.sweep import load_sweep
    data, _ = read_yaml(SAMPLE, "sweep")
    data["robot"]["urdf"] = str(C.REPO / "urdf" / "arm7.urdf")
    data["variations"][0]["distribution"]["count"] = runs
    data["batch_size"] = batch_size
    if metrics == "no-torque":
        data["metrics"] = [m for m in data["metrics"] if m != "peak_torque"]
    return load_sweep(data)


def compute_per_run(spec, values, samples):
    """(median s of runner.run_one, median s of robot.rollout alone) over `samples` runs."""
    from mbd_ros.sweep import runner
    context = runner.robot_context(spec)
    arrays = context.arrays
    total, rollout = [], []
    for i in np.linspace(0, len(values) - 1, samples).astype(int):
        row = runner.run_one(spec, values[i])
        assert row["status"] == "ok", row["error"]
        total.append(row["seconds"])
        t0 = time.perf_counter()
        context.robot.rollout(arrays.q0, arrays.v0, arrays.tau, spec.scenario.dt,
                              integrator=spec.scenario.integrator, limits=spec.scenario.limits,
                              drives={"joints": arrays.drive_joints, "kp": arrays.kp,
                                      "kd": arrays.kd, "position": arrays.ref_position[:-1],
                                      "velocity": arrays.ref_velocity[:-1]})
        rollout.append(time.perf_counter() - t0)
    return statistics.median(total), statistics.median(rollout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--metrics", choices=("all", "no-torque"), default="all")
    args = parser.parse_args()

    from dask.distributed import Client, LocalCluster
    from mbd_ros.sweep import run_sweep, run_table
    from mbd_ros.sweep import results as R
    from mbd_ros.sweep import runner

    print(f"CPU: {C.lscpu_model_name()} ({C.cpu_model()}); {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")
    spec = sweep_spec(args.runs, args.batch_size, args.metrics)
    _, values = run_table(spec)
    print(f"sweep: {args.runs} runs of {spec.scenario.steps} steps of {spec.scenario.dt:g} s "
          f"({spec.scenario.integrator}, drives, limits), metrics {', '.join(spec.metrics)}; "
          f"batch_size {args.batch_size}; {args.workers} workers")
    t0 = time.perf_counter()
    runner.robot_context(spec)
    print(f"robot load and scenario arrays in this process: {time.perf_counter() - t0:.2f} s")
    compute_per_run(spec, values, 3)                     # warm-up
    before, rollout_before = compute_per_run(spec, values, args.samples)

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    client = Client(cluster)
    t_start = time.perf_counter() - t0
    t0 = time.perf_counter()
    client.run(lambda s: runner.robot_context(s) and None, spec)    # each worker: the robot
    t_warm = time.perf_counter() - t0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            result = run_sweep(spec, Path(tmp) / "out", client=client, plot=False,
                               stream=False)
            wall = time.perf_counter() - t0
            rows = R.read_results(result.out)
    finally:
        client.close()
        cluster.close()
    after, rollout_after = compute_per_run(spec, values, args.samples)

    status = rows["status"].astype(str)
    inside = float(np.sum(rows["seconds"]))
    per_run = inside / args.runs
    overhead = (args.workers * wall - inside) / args.runs
    print(f"cluster start {t_start:.1f} s; robot load on the workers {t_warm:.1f} s "
          "(not in the sweep's time)")
    print(f"compute per run in this process (median of {args.samples}): before "
          f"{before * 1e3:.2f} ms, after {after * 1e3:.2f} ms; of which robot.rollout "
          f"{rollout_before * 1e3:.2f} / {rollout_after * 1e3:.2f} ms")
    print(f"sweep: {args.runs} runs ({int((status == 'ok').sum())} ok) in {wall:.1f} s "
          f"= {args.runs / wall:.0f} runs/s on {args.workers} workers")
    print(f"workers inside runs: {inside:.1f} s = {per_run * 1e3:.2f} ms per run "
          f"({per_run / ((before + after) / 2):.2f}x the in-process compute: load)")
    print(f"Dask overhead per run: {overhead * 1e3:.3f} ms = {100 * overhead / per_run:.1f} % of "
          f"the compute per run (target < 10 %)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
