"""Hardware-in-the-loop demo: a simulated arm controlled by computed torque over ROS 2 topics.

    mbd-ros hil-demo [--duration 5] [--rate 1000] [--executor single_threaded|events]
    python -m mbd_ros.nodes.hil_demo

Starts three processes on a private ROS_DOMAIN_ID with localhost-only discovery:

- forward_dynamics (simulate mode): the sample 7-DoF arm at --rate Hz, publishes joint_states;
  with realistic drives by default (config/arm7_drives.yaml: pd servos, torque-loop lag,
  encoder, noise, one cycle of delay, 5 % more mass than the controller's URDF; --drives ideal:
  the exact plant)
- inverse_dynamics (computed_torque): joint_states + reference -> effort commands, which are
  remapped onto the plant's ~/effort_commands
- reference_publisher: a smooth swing of every joint around the start configuration,
  remapped onto the controller's ~/reference

waits until both nodes are active and the loop runs, measures for --duration seconds, then
prints the plant's achieved rate, missed cycles and compute time, the controller's compute
time, and the tracking error, all from /diagnostics, and stops the processes.
Needs rclpy (the ``ros`` extra: ROS 2 from PyPI wheels) but no ROS installation.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import time
from pathlib import Path

from . import processes
from ..inputs.cli_arguments import existing_file, number_in, png_path, ros_domain_id

PACKAGE = "mbd_ros"
CONFIGS = {"plant": "arm7_simulate.yaml", "controller": "arm7_computed_torque.yaml",
           "reference": "arm7_reference.yaml", "drives": "arm7_drives.yaml"}
READY_TIMEOUT = 180.0   # s; a cold numba cache compiles the kernels first (~20 s per process)
# s from start to a closed loop when numba compiles the nodes' kernels (the two nodes compile at
# once): a fresh clone's first `make demo` took 21-25 s on a 2-core AMD EPYC Zen 5 at load
# average 4-5, and ~37 s on a Zen 4 (README)
FIRST_RUN_SECONDS = (20, 40)
PROGRESS_EVERY = 15.0   # s between "still starting" lines while waiting for the loop


def share_file(subdir, name):
    """A data file of the package: ament index, source tree, <prefix>/share/mbd_ros."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory(PACKAGE)) / subdir / name)
    except Exception:   # not importable, or the package is not in AMENT_PREFIX_PATH
        pass
    candidates.append(processes.PACKAGE_ROOT / subdir / name)
    candidates.append(Path(sys.prefix) / "share" / PACKAGE / subdir / name)
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f"{subdir}/{name} of {PACKAGE} not found; looked in: "
                            + ", ".join(str(p) for p in candidates))


def numba_cache_entries():
    """{path: mtime_ns} of the compiled kernels in numba's on-disk cache that the nodes of this
    installation can load (*.nbc: one per compiled kernel; a cache load reads them, a
    compilation writes one): the package's __pycache__ folders (generic kernels, C entries and,
    in a writable package, the generated kernels of mbd_ros/codegen/_generated),
    $MBD_ROS_CACHE_DIR and $NUMBA_CACHE_DIR when set, and for a read-only install the user
    caches those go to instead (~/.cache/mbd_ros, and numba's ~/.cache/numba/<folder>_<sha1 of
    its path> for this package's folders). Other checkouts' entries in the user caches are not
    this one's. Stale
    entries were already dropped when this module's package was imported
    (mbd_ros/kernels/__init__.py)."""
    package = processes.PACKAGE_ROOT / PACKAGE
    roots = [package]
    for variable in ("MBD_ROS_CACHE_DIR", "NUMBA_CACHE_DIR"):
        if os.environ.get(variable):
            roots.append(Path(os.environ[variable]).expanduser())
    if not os.access(package / "codegen", os.W_OK):
        user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        if not os.environ.get("MBD_ROS_CACHE_DIR"):
            roots.append(user_cache / PACKAGE)
        for folder in {source.parent.resolve() for source in package.rglob("*.py")}:
            digest = hashlib.sha1(str(folder).encode()).hexdigest()   # numba's user-wide locator
            roots.append(user_cache / "numba" / f"{folder.name}_{digest}")
    entries = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*.nbc"):
            try:
                entries[path] = path.stat().st_mtime_ns
            except OSError:   # removed meanwhile (a concurrent stale-cache drop)
                pass
    return entries


def compiled_since(before):
    """How many kernels were compiled (cache entries written) since the snapshot `before`."""
    return sum(1 for path, mtime in numba_cache_entries().items() if before.get(path) != mtime)


def startup_message(cache_entries):
    """What the demo says before starting the nodes, from numba_cache_entries(): with no
    compiled kernel in the cache (a fresh clone, `make clean`, or after a kernel source changed)
    the nodes compile them first, for about FIRST_RUN_SECONDS."""
    if cache_entries:
        return ("starting the nodes (numba kernels from the on-disk cache; any missing one is "
                "compiled first) ...")
    low, high = FIRST_RUN_SECONDS
    return (f"first run: the nodes compile the numba kernels before the loop starts ({low}-{high}"
            f" s on a 2-core machine, longer on a busy one; cached on disk, later runs start in "
            f"a few seconds) ...")


def kernels_note(compiled):
    """How the nodes got their kernels, from compiled_since() once the loop runs."""
    return (f"{compiled} numba kernels compiled and cached" if compiled
            else "numba kernels from the cache")


def _load():
    """The machine's load, which stretches the first run's compilation."""
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unknown"


def add_arguments(parser):
    parser.add_argument("--urdf", type=existing_file, default=None,
                        help="URDF of the arm (default: the sample arm7.urdf; its config files "
                        "assume arm7's joint names)")
    parser.add_argument("--duration", type=number_in(0.1, 1e6, " s"), default=5.0,
                        help="measured run time, s (default 5)")
    # (the forward dynamics node's rate_hz range)
    parser.add_argument("--rate", type=number_in(1.0, 20000.0, " Hz"), default=1000.0,
                        help="plant step rate, Hz (default 1000)")
    parser.add_argument("--integrator", default=None,
                        choices=("rk4", "semi_implicit_euler", "implicit_euler", "symplectic_euler"),
                        help="plant integrator (default: the config file's)")
    parser.add_argument("--executor", default="single_threaded",
                        choices=("single_threaded", "events", "rclpy_single_threaded"),
                        help="rclpy executor of the two nodes (default single_threaded; events "
                        "uses less CPU but freezes under a topic flood)")
    parser.add_argument("--drives", default="realistic", choices=("realistic", "ideal"),
                        help="realistic (default): config/arm7_drives.yaml on top of the "
                        "plant's parameters (pd servos, 500 Hz torque loop, 18-bit encoder, "
                        "noise, one cycle of delay, a 5 %% heavier arm than its URDF); ideal: "
                        "the exact plant (the controller's model is the plant's)")
    parser.add_argument("--domain-id", type=ros_domain_id, default=None,
                        help="ROS_DOMAIN_ID (default: derived from the process id)")
    parser.add_argument("--verbose", action="store_true", help="print the nodes' logs")
    parser.add_argument("--plot", type=png_path, default=None, metavar="FILE.png",
                        help="write the tracking plot (joint positions "
                        "and references, tracking error over the measured run) to this PNG "
                        "(needs matplotlib: the 'plot' extra)")
    return parser


class _Monitor:
    """This process's view of the run: the latest /diagnostics of each node."""

    def __init__(self, domain_id):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("hil_demo_monitor", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.latest = {}
        self.history = []
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 50)
        self.recording = False
        self.states, self.references = [], []   # (t, names, positions) while recording

    def record_tracking(self):
        """Also keep /joint_states and the controller's reference (for --plot)."""
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory
        self.node.create_subscription(JointState, "/joint_states", self._on_state, 100)
        self.node.create_subscription(JointTrajectory, "/inverse_dynamics/reference",
                                      self._on_reference, 100)

    def _on_state(self, msg):
        if self.recording:
            self.states.append((time.monotonic(), list(msg.name), list(msg.position)))

    def _on_reference(self, msg):
        if self.recording and msg.points:
            self.references.append((time.monotonic(), list(msg.joint_names),
                                    list(msg.points[0].positions)))

    def _on_diag(self, msg):
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            values["_stamp"] = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            values["_level"] = status.level
            values["_message"] = status.message
            self.latest[status.name] = values
            self.history.append((time.monotonic(), status.name, values))

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)


def _f(values, key):
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return math.nan


def run(args):
    try:
        import rclpy  # noqa: F401
    except ImportError:
        print("mbd-ros hil-demo needs rclpy: pip install 'mbd_ros[ros]' (ROS 2 from PyPI "
              "wheels), or run it in a sourced ROS 2 environment", file=sys.stderr)
        return 2
    urdf = Path(args.urdf) if args.urdf else share_file("urdf", "arm7.urdf")
    configs = {k: share_file("config", v) for k, v in CONFIGS.items()}
    domain = args.domain_id if args.domain_id is not None else processes.unique_domain_id(7)
    env = processes.ros_environment(domain)
    common = {"urdf_path": str(urdf), "executor": args.executor}
    plant_params = {**common, "rate_hz": float(args.rate)}
    if args.integrator:
        plant_params["integrator"] = args.integrator
    cache_before = numba_cache_entries()      # before the nodes start (and compile)
    children = {
        "plant": processes.NodeProcess("forward_dynamics", processes.ros_arguments(
            plant_params, params_files=[configs["plant"]] + (
                [configs["drives"]] if args.drives == "realistic" else [])), env,
            label="forward_dynamics"),
        "controller": processes.NodeProcess("inverse_dynamics", processes.ros_arguments(
            common, params_files=[configs["controller"]],
            remaps={"~/effort_commands": "/forward_dynamics/effort_commands"}), env,
            label="inverse_dynamics"),
        "reference": processes.NodeProcess("reference_publisher", processes.ros_arguments(
            {}, params_files=[configs["reference"]],
            remaps={"reference": "/inverse_dynamics/reference"}), env,
            label="reference_publisher"),
    }
    print(f"mbd_ros HIL demo: {urdf.name} simulated at {args.rate:g} Hz "
          f"(forward_dynamics, simulate), computed-torque control (inverse_dynamics), "
          f"reference_publisher; ROS_DOMAIN_ID {domain}, localhost only, "
          f"{args.executor} executor")
    monitor = None
    code = 0
    print(startup_message(cache_before))
    try:
        monitor = _Monitor(domain)
        if args.plot:
            monitor.record_tracking()
        t_start = time.monotonic()
        plant, ctrl = "forward_dynamics: dynamics", "inverse_dynamics: dynamics"

        def ready():
            p, c = monitor.latest.get(plant), monitor.latest.get(ctrl)
            return (p is not None and c is not None and p.get("commands") == "yes"
                    and c.get("reference") == "received")
        next_progress = PROGRESS_EVERY
        while not ready():
            monitor.spin(0.2)
            waited = time.monotonic() - t_start
            if waited >= next_progress:
                print(f"  ... {waited:.0f} s, still starting "
                      f"({compiled_since(cache_before)} kernels compiled so far; {_load()})")
                next_progress += PROGRESS_EVERY
            dead = [k for k, c in children.items() if c.poll() is not None]
            if dead or time.monotonic() - t_start > READY_TIMEOUT:
                compiled = compiled_since(cache_before)
                why = (f"{', '.join(dead)} exited" if dead else
                       f"timed out after {READY_TIMEOUT:.0f} s; {compiled} kernels compiled and "
                       f"cached meanwhile, a next run starts from them; {_load()}")
                print(f"the loop did not start ({why}); logs:", file=sys.stderr)
                for c in children.values():
                    print(f"--- {c.label}:\n{c.output()[-3000:]}", file=sys.stderr)
                return 1
        t_ready = time.monotonic() - t_start
        print(f"loop closed {t_ready:.1f} s after start (imports, robot load, "
              f"{kernels_note(compiled_since(cache_before))}, discovery); "
              f"measuring {args.duration:g} s ...")
        monitor.spin(1.5)   # let one full diagnostics period pass inside the loop
        begin = dict(monitor.latest[plant])
        n_hist = len(monitor.history)
        monitor.recording = True
        monitor.spin(args.duration)
        monitor.recording = False
        end = dict(monitor.latest[plant])
        window = [v for _, name, v in monitor.history[n_hist:] if name == ctrl]
        ctrl_last = monitor.latest[ctrl]
        dead = [k for k, c in children.items() if c.poll() is not None]
        if dead:
            print(f"{', '.join(dead)} exited during the run", file=sys.stderr)
            code = 1
        _report(args, begin, end, ctrl_last, window)
        if args.plot:
            _plot(args, urdf, monitor)
        if args.verbose:
            for c in children.values():
                print(f"--- {c.label} log:\n{c.output()}")
    except KeyboardInterrupt:
        code = 130
    finally:
        if monitor is not None:
            monitor.close()
        for c in children.values():
            c.stop(timeout=10.0)
    return code


def drives_note(plant):
    """The plant's drive realism from its /diagnostics values (docs/plant.md)."""
    parts = [f"drive model {plant.get('drive model', '?')}"]
    for key in ("actuator bandwidth [Hz]", "measurement", "mass scale", "plant model"):
        if key in plant:
            parts.append(f"{key} {plant[key]}")
    if len(parts) == 1:
        parts.append("exact measurements, the controller's model is the plant's")
    return "; ".join(parts)


def _report(args, begin, end, ctrl, window):
    span = end["_stamp"] - begin["_stamp"]
    cycles = _f(end, "cycles") - _f(begin, "cycles")
    missed = _f(end, "missed cycles") - _f(begin, "missed cycles")
    rate = cycles / span if span > 0 else math.nan
    expected = cycles + missed   # cycles that ran on time plus late ones (caught up)
    errs_max = [_f(v, "tracking error max") for v in window]
    errs_rms = [_f(v, "tracking error rms") for v in window]
    samples = [_f(v, "tracking samples") for v in window]
    ok = [(m, r, n) for m, r, n in zip(errs_max, errs_rms, samples) if n > 0]
    err_max = max((m for m, _, _ in ok), default=math.nan)
    total = sum(n for _, _, n in ok)
    err_rms = math.sqrt(sum(r * r * n for _, r, n in ok) / total) if total else math.nan
    print()
    print(f"plant (forward_dynamics, simulate, {end.get('integrator', '?')}):")
    print(f"  achieved rate        {rate:8.1f} Hz   (target {args.rate:g} Hz, over {span:.1f} s)")
    print(f"  missed cycles        {missed:8.0f}      ({100 * missed / expected if expected else 0:.2f} %"
          " caught up with extra steps)")
    print(f"  compute p50 / p99    {_f(end, 'compute p50 [us]'):8.1f} / "
          f"{_f(end, 'compute p99 [us]'):.1f} us   (dynamics + integration per cycle; "
          f"max {_f(end, 'compute max [us]'):.0f} us)")
    print(f"  cycle p50 / p99      {_f(end, 'cycle p50 [us]'):8.1f} / "
          f"{_f(end, 'cycle p99 [us]'):.1f} us   (whole callback incl. messages)")
    print("controller (inverse_dynamics, computed_torque):")
    print(f"  compute p50 / p99    {_f(ctrl, 'compute p50 [us]'):8.1f} / "
          f"{_f(ctrl, 'compute p99 [us]'):.1f} us")
    print(f"  output rate          {_f(ctrl, 'achieved rate [Hz]'):8.1f} Hz")
    print(f"  tracking error       {err_rms * 1e3:8.3f} mrad rms, {err_max * 1e3:.3f} mrad max "
          f"(|q_ref - q| over {total:.0f} control cycles, q as joint_states report it)")
    print(f"  plant drives         {args.drives}: {drives_note(end)}")
    rejected = _f(end, "rejected messages") + _f(ctrl, "rejected messages")
    print(f"rejected messages      {rejected:8.0f}")


def _plot(args, urdf, monitor):
    """The tracking plot of the measured run (joints of the reference, in its order)."""
    from ..simulation.report import plot_tracking
    if not monitor.states or not monitor.references:
        print("no joint_states / reference recorded: no plot", file=sys.stderr)
        return
    names = monitor.references[-1][1]
    t0 = monitor.states[0][0]

    def columns(rows):
        t, values = [], []
        for stamp, row_names, positions in rows:
            index = {n: i for i, n in enumerate(row_names)}
            if all(n in index for n in names):
                t.append(stamp - t0)
                values.append([positions[index[n]] for n in names])
        return t, values
    t_state, q_state = columns(monitor.states)
    t_ref, q_ref = columns(monitor.references)
    plot_tracking(args.plot, names, t_state, q_state, t_ref, q_ref,
                  f"HIL demo: {urdf.name} at {args.rate:g} Hz, computed torque (receive times)")
    print(f"wrote {args.plot}")


def main(argv=None):
    parser = add_arguments(argparse.ArgumentParser(
        prog="mbd-ros hil-demo", description="Hardware-in-the-loop demo over ROS 2 topics."))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
