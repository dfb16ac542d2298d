"""Benchmarks of the mbd_ros ROS 2 nodes as processes (run by hand, not in CI).

    python bench/bench_nodes.py [--seconds 10] [--out bench/results/nodes.md] [--only NAME ...]

Scenarios, each with rclpy's SingleThreadedExecutor and its EventsExecutor (node parameter
`executor`; this script's own process uses the same kind):

- plant_arm7, plant_fourbar: forward_dynamics in simulate mode at 1 kHz, alone (7-DoF arm;
  the closed-loop four-bar if this mbd_ros loads closures). Achieved rate, missed cycles,
  per-cycle compute p50/p99/max (library time: dynamics + wrenches + integration) and whole
  cycle p50/p99, CPU % of the node process.
- plant_suspension: the double-wishbone suspension (loop closure + strut spring-damper, seed
  004) in simulate mode at 1 kHz, RK4 with the strut evaluated at every stage.
- hil_arm7: the HIL loop (plant 1 kHz + computed-torque controller + reference publisher) as in
  `mbd-ros hil-demo`: plant rate, missed cycles, compute, CPU % of plant and controller.
- latency_arm7: forward_dynamics in observe mode; this process publishes joint_states at 1 kHz
  stamped with the send time and receives ~/accelerations (same stamp): end-to-end latency
  p50/p99 across processes (includes this process's own executor), compute p50/p99, CPU %.
- startup: process start -> first joint_states of a simulate node, with a warm numba cache and
  with a cold one (NUMBA_CACHE_DIR = an empty directory), and activation -> first output.

Statistics come from the nodes' /diagnostics (ring buffer of the last 10 000 cycles) and from
/proc/<pid>/stat for CPU time. Localhost-only discovery, a private ROS_DOMAIN_ID.

`--cycle-priority N` sets the simulate nodes' `cycle_priority` (SCHED_FIFO of the cycle's
thread, docs/nodes.md "Cycle timing"; 0, the default: normal scheduling). The report names the
CPU (lscpu), the load average before and after each measurement, and the other processes that
loaded the machine during it (the busiest by CPU time from /proc, this script's own nodes
excluded): the machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mbd_ros.nodes import processes  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from common import lscpu_model_name, cpu_model  # noqa: E402

URDF = REPO / "urdf"
CONFIG = REPO / "config"
EXECUTORS = ("single_threaded", "events")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def process_times():
    """{pid: (CPU seconds, command line)} of every process readable in /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            seconds = cpu_seconds(entry)
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry)] = (seconds, command)
    return out


def other_load(before, after, seconds, exclude, top=3):
    """'42 % python -m pytest ...; ...': the `top` processes (not in `exclude`, not this
    one) that used the most CPU between the two process_times() snapshots."""
    used = []
    for pid, (cpu, command) in after.items():
        if pid in exclude or pid == os.getpid() or pid not in before:
            continue
        share = 100 * (cpu - before[pid][0]) / seconds
        if share >= 1.0:
            used.append((share, command or f"pid {pid}"))
    used.sort(reverse=True)
    return "; ".join(f"{share:.0f} % {command[:70]}" for share, command in used[:top]) or "none"


class Bench:
    cycle_priority = 0   # the simulate nodes' cycle_priority (--cycle-priority)

    def __init__(self, executor, node_executor=None):
        """executor: this process's; node_executor: the nodes' `executor` parameter (default
        the same kind)."""
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        self.rclpy = rclpy
        self.domain = processes.unique_domain_id(hash(executor) % 50)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain)
        self.node = rclpy.create_node("bench_nodes", context=self.context)
        if executor == "events":
            from rclpy.experimental import EventsExecutor
            self.executor = EventsExecutor(context=self.context)
        else:
            from rclpy.executors import SingleThreadedExecutor
            self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.kind = executor
        self.node_kind = node_executor or executor
        self.diag = {}
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 50)
        self.children = []

    def _on_diag(self, msg):
        for s in msg.status:
            d = {kv.key: kv.value for kv in s.values}
            d["_t"] = time.monotonic()
            self.diag[s.name] = d

    def start(self, node, params, remaps=None, params_files=(), env_extra=None):
        params = dict(params, executor=self.node_kind, diagnostics_period=1.0)
        if node == "forward_dynamics" and self.cycle_priority:
            params["cycle_priority"] = self.cycle_priority
        if node == "reference_publisher":
            params.pop("executor")
            params.pop("diagnostics_period")
        child = processes.NodeProcess(node, processes.ros_arguments(params, remaps, params_files),
                                      processes.ros_environment(self.domain, env_extra))
        child.t_start = time.monotonic()
        self.children.append(child)
        return child

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def spin_until(self, cond, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return True
            self.executor.spin_once(timeout_sec=0.01)
            for c in self.children:
                if c.poll() is not None:
                    raise RuntimeError(f"{c.label} exited:\n{c.output()[-3000:]}")
        raise RuntimeError("timeout\n" + "\n".join(c.output()[-2000:] for c in self.children))

    def close(self):
        for c in self.children:
            c.stop()
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)


def f(d, key):
    try:
        return float(d[key])
    except (KeyError, ValueError):
        return float("nan")


def plant_stats(b, name, child, seconds):
    """Measure a running simulate node for `seconds` (after a 2 s settling period)."""
    b.spin_until(lambda: name in b.diag and f(b.diag[name], "cycles") > 0, 180)
    b.spin(2.0)
    d0, c0, t0 = dict(b.diag[name]), cpu_seconds(child.pid), time.monotonic()
    others0, load0 = process_times(), os.getloadavg()[0]
    b.spin(seconds)
    d1, c1, t1 = dict(b.diag[name]), cpu_seconds(child.pid), time.monotonic()
    others = other_load(others0, process_times(), t1 - t0, {c.pid for c in b.children})
    load1 = os.getloadavg()[0]
    cycles = f(d1, "cycles") - f(d0, "cycles")
    missed = f(d1, "missed cycles") - f(d0, "missed cycles")
    span = d1["_t"] - d0["_t"]
    return {"rate [Hz]": cycles / span, "missed [%]": 100 * missed / (cycles + missed),
            "compute p50 [us]": f(d1, "compute p50 [us]"),
            "compute p99 [us]": f(d1, "compute p99 [us]"),
            "compute max [us]": f(d1, "compute max [us]"),
            "cycle p50 [us]": f(d1, "cycle p50 [us]"), "cycle p99 [us]": f(d1, "cycle p99 [us]"),
            "CPU [%]": 100 * (c1 - c0) / (t1 - t0),
            "cycle priority": d1.get("cycle priority", "?"),
            "load before / after": f"{load0:.2f} / {load1:.2f}",
            "other processes": others}


def scenario_plant(b, seconds, robot):
    if robot == "arm7":
        params = {"urdf_path": str(URDF / "arm7.urdf")}
        files = [CONFIG / "arm7_simulate.yaml"]
    else:
        import mbd_ros
        try:
            mbd_ros.load(str(URDF / "fourbar.urdf"), closures=str(CONFIG / "fourbar_closures.yaml"))
        except (NotImplementedError, OSError) as exc:
            return {"skipped": f"closed loops not available: {exc}"}
        params = {"urdf_path": str(URDF / "fourbar.urdf"),
                  "closures_path": str(CONFIG / "fourbar_closures.yaml")}
        files = [CONFIG / "fourbar_simulate.yaml"]
    child = b.start("forward_dynamics", {**params, "rate_hz": 1000.0}, params_files=files)
    return plant_stats(b, "forward_dynamics: dynamics", child, seconds)


def scenario_suspension(b, seconds):
    """The seed-004 double wishbone (closed loop + strut spring-damper) simulated at 1 kHz with
    the default integrator (RK4, the strut evaluated at every stage), no command."""
    wishbone = str(CONFIG / "double_wishbone.yaml")
    child = b.start("forward_dynamics", {"urdf_path": str(URDF / "double_wishbone.urdf"),
                                         "closures_path": wishbone, "forces_path": wishbone,
                                         "mode": "simulate", "rate_hz": 1000.0})
    return plant_stats(b, "forward_dynamics: dynamics", child, seconds)


def scenario_hil(b, seconds):
    urdf = str(URDF / "arm7.urdf")
    plant = b.start("forward_dynamics", {"urdf_path": urdf, "rate_hz": 1000.0},
                    params_files=[CONFIG / "arm7_simulate.yaml"])
    ctrl = b.start("inverse_dynamics", {"urdf_path": urdf},
                   params_files=[CONFIG / "arm7_computed_torque.yaml"],
                   remaps={"~/effort_commands": "/forward_dynamics/effort_commands"})
    b.start("reference_publisher", {}, params_files=[CONFIG / "arm7_reference.yaml"],
            remaps={"reference": "/inverse_dynamics/reference"})
    name_c = "inverse_dynamics: dynamics"
    b.spin_until(lambda: b.diag.get(name_c, {}).get("reference") == "received", 180)
    c0 = cpu_seconds(ctrl.pid)
    t0 = time.monotonic()
    res = plant_stats(b, "forward_dynamics: dynamics", plant, seconds)
    res["controller CPU [%]"] = 100 * (cpu_seconds(ctrl.pid) - c0) / (time.monotonic() - t0)
    dc = b.diag[name_c]
    res["controller compute p99 [us]"] = f(dc, "compute p99 [us]")
    res["controller rate [Hz]"] = f(dc, "achieved rate [Hz]")
    res["tracking error rms [mrad]"] = 1e3 * f(dc, "tracking error rms")
    return res


def scenario_latency(b, seconds):
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory
    child = b.start("forward_dynamics", {"urdf_path": str(URDF / "arm7.urdf"),
                                         "max_message_age": 0.0},
                    params_files=[CONFIG / "arm7_observe.yaml"])
    lat = []
    clock = b.node.get_clock()

    def on_acc(msg):
        now = clock.now().nanoseconds
        lat.append(now - (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec))
    b.node.create_subscription(JointTrajectory, "/forward_dynamics/accelerations", on_acc, 100)
    pub = b.node.create_publisher(JointState, "joint_states", 10)
    msg = JointState()
    msg.name = [f"joint_{i}" for i in range(1, 8)]
    rng = np.random.default_rng(0)
    msg.position = rng.uniform(-1, 1, 7).tolist()
    msg.velocity = rng.normal(size=7).tolist()
    msg.effort = rng.normal(size=7).tolist()

    def send():
        msg.header.stamp = clock.now().to_msg()
        pub.publish(msg)
    timer = b.node.create_timer(0.001, send)
    b.spin_until(lambda: len(lat) > 100, 180)
    b.spin(2.0)
    lat.clear()
    c0, t0 = cpu_seconds(child.pid), time.monotonic()
    b.spin(seconds)
    cpu = 100 * (cpu_seconds(child.pid) - c0) / (time.monotonic() - t0)
    b.node.destroy_timer(timer)
    x = np.array(lat) / 1e3
    d = b.diag["forward_dynamics: dynamics"]
    return {"received [Hz]": len(x) / seconds, "latency p50 [us]": float(np.percentile(x, 50)),
            "latency p99 [us]": float(np.percentile(x, 99)),
            "compute p50 [us]": f(d, "compute p50 [us]"),
            "compute p99 [us]": f(d, "compute p99 [us]"),
            "cycle p99 [us]": f(d, "cycle p99 [us]"), "CPU [%]": cpu}


def scenario_startup(b, cold):
    from sensor_msgs.msg import JointState
    got = []
    sub = b.node.create_subscription(JointState, "joint_states", lambda m: got.append(
        time.monotonic()), 10)
    extra = {"NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="numba_cold_")} if cold else None
    child = b.start("forward_dynamics", {"urdf_path": str(URDF / "arm7.urdf")},
                    params_files=[CONFIG / "arm7_simulate.yaml"], env_extra=extra)
    b.spin_until(lambda: got, 300)
    first = got[0] - child.t_start
    b.spin_until(lambda: "forward_dynamics: dynamics" in b.diag, 10)
    d = b.diag["forward_dynamics: dynamics"]
    b.node.destroy_subscription(sub)
    return {"process start -> first joint_states [s]": first,
            "configure (load + warm-up) [s]": f(d, "configure time [s]"),
            "activation -> first output [ms]": 1e3 * f(d, "first output after activation [s]")}


def run(name, executor, seconds):
    b = Bench(executor)
    try:
        if name == "plant_arm7":
            return scenario_plant(b, seconds, "arm7")
        if name == "plant_fourbar":
            return scenario_plant(b, seconds, "fourbar")
        if name == "plant_suspension":
            return scenario_suspension(b, seconds)
        if name == "hil_arm7":
            return scenario_hil(b, seconds)
        if name == "latency_arm7":
            return scenario_latency(b, seconds)
        if name == "startup_warm":
            return scenario_startup(b, cold=False)
        if name == "startup_cold":
            return scenario_startup(b, cold=True)
        raise ValueError(name)
    finally:
        b.close()


SCENARIOS = ("plant_arm7", "plant_fourbar", "plant_suspension", "hil_arm7", "latency_arm7", "startup_warm",
             "startup_cold")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--only", nargs="*", default=None, choices=SCENARIOS)
    parser.add_argument("--executors", nargs="*", default=list(EXECUTORS), choices=EXECUTORS)
    parser.add_argument("--out", default=None, help="append a markdown report to this file")
    parser.add_argument("--cycle-priority", type=int, default=0,
                        help="the simulate nodes' cycle_priority (SCHED_FIFO; 0: normal)")
    args = parser.parse_args()
    Bench.cycle_priority = args.cycle_priority
    lines = [f"## bench_nodes.py, {time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}",
             "", f"CPU (lscpu): {lscpu_model_name()}; {cpu_model()}; {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, load average before: "
             f"{os.getloadavg()[0]:.2f}; {args.seconds:g} s per measurement; cycle_priority "
             f"{args.cycle_priority}", ""]
    print("\n".join(lines), flush=True)
    for name in args.only or SCENARIOS:
        executors = args.executors if not name.startswith("startup") else ["single_threaded"]
        for executor in executors:
            t0 = time.monotonic()
            try:
                res = run(name, executor, args.seconds)
            except Exception as exc:   # report and go on
                res = {"error": str(exc).splitlines()[0][:200]}
            load = os.getloadavg()[0]
            line = (f"- **{name}** ({executor}): " + ", ".join(
                f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in res.items())
                + f" (load {load:.2f}, {time.monotonic() - t0:.0f} s)")
            print(line, flush=True)
            lines.append(line)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
