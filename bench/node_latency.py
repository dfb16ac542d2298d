"""Node compute time and cross-process latency of the forward dynamics node (issue 7 item 4),
for this mbd_ros and optionally an earlier revision, interleaved round by round.

    PYTHONPATH=. python bench/node_latency.py [--rounds 3] [--seconds 6] [--before DIR]

`--before DIR`: a directory holding an earlier `mbd_ros` package (e.g.
`mkdir -p /tmp/before && git archive <rev> mbd_ros urdf config | tar -x -C /tmp/before`); its
nodes run from there (PYTHONPATH), alternating with this tree's in every round, so both see the
same machine load.

Scenarios (7-DoF sample arm urdf/arm7.urdf, each node a child process; this process uses the
same executor kind as the node, `--executor`):

- observe: forward_dynamics in observe mode (config/arm7_observe.yaml: accelerations and all 9
  joint wrenches per message). This process publishes joint_states at 1 kHz, each stamped with
  its send time (system clock), and receives ~/accelerations carrying the same stamp: latency =
  receive time - stamp, one way, both ends on the same clock. Also the node's own compute
  p50/p99 (library time: forward dynamics + wrenches) and cycle p50/p99 (the whole callback)
  from /diagnostics (ring buffer of the last 10 000 messages).
- observe serialized: the same with a client that publishes and takes its messages serialized
  (no rclpy message conversion on the client's side: what a C++ controller would see).
- simulate: forward_dynamics in simulate mode at 1 kHz (config/arm7_simulate.yaml: RK4, drives,
  URDF limits, flange wrench). `free` = no command: zero effort, the arm falls onto its position
  stops and rests there (the stop projection runs every step); `hold` = hold_initial_positions
  (position drives, the mass matrix and bias every step). Compute p50/p99 (drives + dynamics +
  wrench + RK4 step + limits), cycle p50/p99, achieved rate.

For comparison the same library calls are timed in this process: one forward dynamics call
(generated kernels, as the node runs them) and one plant cycle (Plant.evaluate + advance, the
simulate node's compute) in both plant states. Prints the CPU model (`lscpu`), the load average
before and after each measurement, and min / median over the rounds. Not a test: nothing here
decides pass or fail.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import common  # noqa: E402
from bench_nodes import Bench, f  # noqa: E402

ARM = REPO / "urdf" / "arm7.urdf"
CONFIG = REPO / "config"
NAME = "forward_dynamics: dynamics"


def warm_cache(tree):
    """Load the arm with generated kernels once in a subprocess from `tree` (fills its numba and
    codegen caches, so no measurement includes a compile)."""
    code = ("import numpy as np, mbd_ros; r = mbd_ros.load(%r, codegen=True); "
            "q = r.neutral(); z = np.zeros(r.nv); r.forward_dynamics(q, z, z); "
            "r.joint_wrenches(q, z, z); r.inverse_dynamics(q, z, z); r.mass_matrix(q)" % str(ARM))
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), check=True)


def observe(b, env, seconds, serialized=False):
    """serialized: this process (the client) publishes joint_states as prebuilt CDR bytes and
    takes ~/accelerations serialized, reading only the stamp (as a C++ client, or an rclpy one
    using raw topics, pays no message conversion): the latency is then mostly the node's and
    the middleware's; else it publishes and receives message objects, as a plain rclpy
    controller does."""
    import struct

    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory
    b.start("forward_dynamics", {"urdf_path": str(ARM), "max_message_age": 0.0},
            params_files=[CONFIG / "arm7_observe.yaml"], env_extra=env)
    latency = []

    def on_accelerations(msg):
        now = time.time_ns()
        latency.append(now - (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec))

    def on_serialized_accelerations(data):
        now = time.time_ns()
        sec, nanosec = struct.unpack_from("<iI", data, 4)   # header.stamp (CDR, nodes/cdr.py)
        latency.append(now - (sec * 1_000_000_000 + nanosec))
    sub = b.node.create_subscription(
        JointTrajectory, "/forward_dynamics/accelerations",
        on_serialized_accelerations if serialized else on_accelerations, 100, raw=serialized)
    pub = b.node.create_publisher(JointState, "joint_states", 10)
    msg = JointState()
    msg.name = [f"joint_{i}" for i in range(1, 8)]
    rng = np.random.default_rng(0)
    msg.position = rng.uniform(-1, 1, 7).tolist()
    msg.velocity = rng.normal(size=7).tolist()
    msg.effort = rng.normal(size=7).tolist()
    stamp = msg.header.stamp
    buffer = bytearray(serialize_message(msg))

    def send():
        if serialized:
            struct.pack_into("<iI", buffer, 4, *divmod(time.time_ns(), 1_000_000_000))
            pub.publish(bytes(buffer))
            return
        stamp.sec, stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
        pub.publish(msg)
    timer = b.node.create_timer(0.001, send)
    b.spin_until(lambda: len(latency) > 100, 180)
    b.spin(2.0)
    latency.clear()
    cycles0 = f(b.diag.get(NAME, {}), "cycles")
    load0 = os.getloadavg()[0]
    b.spin(seconds)
    b.node.destroy_timer(timer)
    b.node.destroy_subscription(sub)
    b.node.destroy_publisher(pub)
    x = np.array(latency) / 1e3
    d = b.diag[NAME]
    return {"latency p50": float(np.percentile(x, 50)), "latency p99": float(np.percentile(x, 99)),
            "received Hz": len(x) / seconds,
            "compute p50": f(d, "compute p50 [us]"), "compute p99": f(d, "compute p99 [us]"),
            "cycle p50": f(d, "cycle p50 [us]"), "cycle p99": f(d, "cycle p99 [us]"),
            "load": 0.5 * (load0 + os.getloadavg()[0]), "_cycles": f(d, "cycles") - cycles0}


def simulate(b, env, seconds, hold):
    params = {"urdf_path": str(ARM), "rate_hz": 1000.0}
    if hold:
        params["hold_initial_positions"] = True
    b.start("forward_dynamics", params, params_files=[CONFIG / "arm7_simulate.yaml"],
            env_extra=env)
    b.spin_until(lambda: NAME in b.diag and f(b.diag[NAME], "cycles") > 0, 180)
    b.spin(3.0)   # free: the arm reaches its stops within ~2 s
    d0 = dict(b.diag[NAME])
    load0 = os.getloadavg()[0]
    b.spin(seconds)
    d1 = dict(b.diag[NAME])
    cycles = f(d1, "cycles") - f(d0, "cycles")
    return {"compute p50": f(d1, "compute p50 [us]"), "compute p99": f(d1, "compute p99 [us]"),
            "cycle p50": f(d1, "cycle p50 [us]"), "cycle p99": f(d1, "cycle p99 [us]"),
            "rate Hz": cycles / max(d1["_t"] - d0["_t"], 1e-9),
            "load": 0.5 * (load0 + os.getloadavg()[0])}


def in_process(tree_label, tree):
    """µs of one FD call and of one plant cycle (evaluate + advance) in a fresh process of
    `tree` (min over 5 x 2000 calls, and p99 of single cycles)."""
    code = r"""
import sys, time, timeit, numpy as np, mbd_ros
from mbd_ros.plant import Plant
r = mbd_ros.load(%r, codegen=True)
q = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]); v = np.linspace(-1, 1, 7); tau = np.ones(7)
out = np.zeros(7)
fd = min(timeit.repeat(lambda: r.forward_dynamics(q, v, tau, out=out), number=2000, repeat=5)) / 2000
res = [fd]
for hold in (False, True):
    p = Plant(r, 1e-3, "rk4", q, np.zeros(7), joints=[f"joint_{i}" for i in range(1, 8)])
    if hold:
        p.drives.command_position(q)
    for _ in range(3000):
        p.evaluate(); p.advance()
    ts = []
    for _ in range(5000):
        t0 = time.perf_counter_ns(); p.evaluate(); p.advance(); ts.append(time.perf_counter_ns() - t0)
    res += [np.percentile(ts, 50) * 1e-9, np.percentile(ts, 99) * 1e-9]
print(*res)
""" % str(ARM)
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(),
                         check=True, capture_output=True, text=True).stdout.split()
    fd, f50, f99, h50, h99 = (1e6 * float(x) for x in out)
    return {"FD": fd, "plant free p50": f50, "plant free p99": f99, "plant hold p50": h50,
            "plant hold p99": h99}


def run_one(kind, tree, executor, seconds, node_executor=None):
    env = {"PYTHONPATH": str(tree)}
    b = Bench(executor, node_executor)
    try:
        if kind in ("observe", "observe serialized"):
            return observe(b, env, seconds, serialized=(kind == "observe serialized"))
        return simulate(b, env, seconds, hold=(kind == "simulate hold"))
    finally:
        b.close()


def summary(rows):
    """{key: (min, median)} over the rounds."""
    keys = [k for k in rows[0] if not k.startswith("_")]
    return {k: (float(np.min([r[k] for r in rows])), float(np.median([r[k] for r in rows])))
            for k in keys}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--before", default=None, help="directory holding an earlier mbd_ros")
    parser.add_argument("--executor", default="single_threaded",
                        choices=("single_threaded", "events"))
    parser.add_argument("--node-executor", default=None,
                        choices=("single_threaded", "events", "rclpy_single_threaded"),
                        help="the nodes' executor parameter (default: the same as --executor)")
    parser.add_argument("--only", nargs="*", default=["observe", "simulate free", "simulate hold"])
    args = parser.parse_args()
    command = common.this_command()
    os.chdir(tempfile.gettempdir())   # `python -m` puts the cwd first on the children's path
    trees = {"now": REPO}
    if args.before:
        trees["before"] = Path(args.before).resolve()
    print(f"CPU: {common.lscpu_model_name()}, {os.cpu_count()} CPUs; load average at start "
          f"{os.getloadavg()}; executor {args.executor} (nodes: "
          f"{args.node_executor or args.executor}); {args.seconds:g} s per measurement, "
          f"{args.rounds} rounds; command: {command}", flush=True)
    for tree in trees.values():
        warm_cache(tree)
    results = {(kind, label): [] for kind in args.only + ["in-process"] for label in trees}
    for r in range(args.rounds):
        for kind in args.only:
            labels = list(trees) if r % 2 == 0 else list(trees)[::-1]   # alternate the order
            for label in labels:
                res = run_one(kind, trees[label], args.executor, args.seconds,
                              args.node_executor)
                results[(kind, label)].append(res)
                print(f"round {r + 1} {kind:14s} {label:6s} " + ", ".join(
                    f"{k} {v:.1f}" for k, v in res.items() if not k.startswith("_")),
                    flush=True)
        for label, tree in trees.items():
            res = in_process(label, tree)
            results[("in-process", label)].append(res)
            print(f"round {r + 1} in-process     {label:6s} " + ", ".join(
                f"{k} {v:.2f}" for k, v in res.items()), flush=True)
    print(f"\nload average at the end {os.getloadavg()}\n")
    print("| scenario | tree | " + " | ".join(["quantity", "min", "median"]) + " |")
    print("|---|---|---|---|---|")
    for (kind, label), rows in results.items():
        if not rows:
            continue
        for k, (lo, med) in summary(rows).items():
            unit = "" if k in ("load",) or k.endswith("Hz") else " µs"
            print(f"| {kind} | {label} | {k}{unit} | {lo:.4g} | {med:.4g} |")


if __name__ == "__main__":
    main()
