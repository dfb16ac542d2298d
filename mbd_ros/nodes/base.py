"""What the mbd_ros nodes share: robot parameters and loading, the lifecycle, bad-message
accounting, /diagnostics, and `run()` (executor choice, autostart, clean shutdown).

Lifecycle (rclpy.lifecycle.LifecycleNode):
- configure: read and check the parameters, load the robot (`robot_description` parameter,
  XML only, else `urdf_path`, else the latest message on the `robot_description` topic, XML
  only; with autostart the robot is loaded in a worker thread first), build the index
  maps and buffers, run one full cycle so numba's kernels are compiled or loaded from its cache
  before the first message, create publishers and subscriptions. A robot that fails to load
  fails the transition with the loader's message (logged at ERROR).
- activate: enable the publishers, start the timers. deactivate / cleanup undo them.
- `autostart` (default true): `run()` configures and activates the node by itself (or as soon
  as a robot description arrives on the topic); if configuring fails the process exits with 1.
- `run()` handles SIGINT/SIGTERM itself (nodes/stopping.py) and, as a process main, ends the
  process right after the orderly ROS shutdown (finish_process).
See docs/nodes.md.
"""
from __future__ import annotations

import gc
import math
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import (InvalidParameterTypeException, InvalidParameterValueException,
                              ParameterException)
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.clock import Clock as RclpyClock, ClockType
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..constants import FRICTION_VELOCITY
from ..robot.build import load as build_robot

from . import diagnostics as diag
from . import library_warnings
from . import stopping
from .cdr import JointStateReader
from .clock_guard import ClockGuard
from . import message_caps
from .message_caps import MessageSizeError, joint_state_counts
from .description import (MAX_DESCRIPTION_BYTES, check_description_parameter, excerpt,
                          shorten, urdf_xml)
from .qos import DESCRIPTION_QOS, DIAGNOSTICS_QOS, SUBSCRIBE_QOS
from .state_intake import StateIntake
from .stopping import finish_process  # noqa: F401  (reference_publisher, hil_demo import it here)

EXECUTORS = ("single_threaded", "events", "rclpy_single_threaded")
WARNING_PERIOD = 2.0   # s between two warnings of the same kind
_NO_OLDEST = -2 ** 63     # StateIntake.read's oldest stamp when max_message_age is 0 (off)
# a JointState message may have at most this many bytes per entry of its longest sequence (plus
# 4 KiB): names of up to ~1000 characters (message_caps.py caps the number of entries)
MAX_BYTES_PER_ENTRY = 1024
MAX_PARAMETER_ENTRIES = 65536   # values of an array parameter (joints, gains, initial state...)
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE

_TYPES = {
    bool: ParameterType.PARAMETER_BOOL,
    int: ParameterType.PARAMETER_INTEGER,
    float: ParameterType.PARAMETER_DOUBLE,
    str: ParameterType.PARAMETER_STRING,
}


def one_of(*choices):
    def check(value):
        return None if value in choices else f"must be one of {', '.join(choices)}"
    return check


def finite_vector(length=None):
    def check(value):
        if length is not None and len(value) != length:
            return f"must have {length} values"
        if not all(math.isfinite(x) for x in value):
            return "must be finite"
        return None
    return check


def gains(value):
    """kp / kd: a number, or one number per commanded joint (checked at configure)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    try:
        values = [float(x) for x in values]
    except (TypeError, ValueError):
        return "must be a number or an array of numbers"
    if not values:
        return "must not be empty (a number, or one per joint)"
    if not all(math.isfinite(x) and x >= 0.0 for x in values):
        return "must be finite and >= 0"
    return None


class DynamicsNode(LifecycleNode):
    """Base of the mbd_ros nodes. Subclasses implement `declare_node_parameters`,
    `configure_node` (robot loaded), `activate_node`, `deactivate_node`, `cleanup_node` and
    `diagnostic_values`."""

    def __init__(self, node_name, **kwargs):
        super().__init__(node_name, **kwargs)
        self._validators = {}
        self.add_on_set_parameters_callback(self._validate_parameters)
        self._declare_common_parameters()
        self.declare_node_parameters()
        self.robot = None
        self.active = False
        self.done = Future()                      # set when the node is finalized
        self.counts = {}                          # rejected / dropped messages by kind
        self.warning_counts = {}                  # Python warnings by category (run())
        self._warnings_published = 0
        self._rejected_published = 0
        self._last_warning = {}
        self.stats = diag.CycleStats()
        self._description_xml = None
        self._description_sub = None
        self._diag_timer = None
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_QOS)
        self._configure_seconds = float("nan")
        self._activated_at = None
        # [time source] timers that must run whatever use_sim_time says (the plant's pacing,
        # diagnostics) use the steady clock; use_sim_time changes are applied at once
        self.steady_clock = RclpyClock(clock_type=ClockType.STEADY_TIME)
        self._sim_time = bool(self.get_parameter("use_sim_time").value)
        self.clock_guard = ClockGuard()
        self._guard_time_source()
        self.add_post_set_parameters_callback(self._on_parameters_set)
        self.add_pre_set_parameters_callback(self._whole_numbers_as_doubles)
        self.exit_code = 0
        self._load_generation = 0
        self._loaded = self._preloaded = None
        self._loaded_poll = None
        if not self.param("robot_description") and not self.param("urdf_path"):
            self._description_sub = self.create_subscription(   # serialized: size first
                String, "robot_description", self._on_description_data, DESCRIPTION_QOS,
                raw=True)

    # ------------------------------------------------------------------ parameters
    def declare(self, name, default, description, check=None, *, type_=None, dynamic=False,
                float_range=None, int_range=None):
        """Declare a parameter with a descriptor (description, type, range) and an optional
        check(value) -> error text or None, run on every set (initial overrides included)."""
        descriptor = ParameterDescriptor(description=description)
        if dynamic:
            descriptor.dynamic_typing = True
        elif type_ is not None:
            descriptor.type = type_
        elif type(default) in _TYPES:
            descriptor.type = _TYPES[type(default)]
        if float_range is not None:
            descriptor.floating_point_range = [FloatingPointRange(
                from_value=float(float_range[0]), to_value=float(float_range[1]), step=0.0)]
        if int_range is not None:
            descriptor.integer_range = [IntegerRange(
                from_value=int(int_range[0]), to_value=int(int_range[1]), step=0)]
        if check is not None:
            self._validators[name] = check
        override = self._parameter_overrides.get(name)
        if override is not None and override.type_ == Parameter.Type.INTEGER and \
                descriptor.type == ParameterType.PARAMETER_DOUBLE:
            # `-p rate_hz:=100` or `rate_hz: 100` in a file: a whole number for a double is
            # that double (rclpy would refuse its type and the node exit 2)
            self._parameter_overrides[name] = override = Parameter(
                name, Parameter.Type.DOUBLE, float(override.value))
        if default is not None and override is not None and \
                override.type_ == Parameter.Type.NOT_SET:
            # rcl parses `-p name:=[]` (an empty list has no element type) as "not set": that
            # would silently keep the default; refused like any other invalid value (exit 2)
            raise InvalidParameterValueException(
                name, "[]", "an empty list has no type in ROS 2 and would leave the default "
                f"{default!r}: give the values, or leave the parameter out")
        if default is None:   # an array without default: declared unset, read as []
            self.declare_parameter(name, Parameter.Type.STRING_ARRAY if type_ ==
                                   ParameterType.PARAMETER_STRING_ARRAY else
                                   Parameter.Type.DOUBLE_ARRAY, descriptor)
        else:
            self.declare_parameter(name, default, descriptor)

    def _whole_numbers_as_doubles(self, params):
        """Runtime sets: an integer for a parameter declared as a double becomes that double
        (`nullspace_stiffness: 2`), as at start (declare); the others pass unchanged."""
        out = []
        for p in params:
            if p.type_ == Parameter.Type.INTEGER and self.has_parameter(p.name) and \
                    self.describe_parameter(p.name).type == ParameterType.PARAMETER_DOUBLE:
                p = Parameter(p.name, Parameter.Type.DOUBLE, float(p.value))
            out.append(p)
        return out

    def param(self, name):
        """The parameter's value ([] for an unset array)."""
        p = self.get_parameter_or(name, Parameter(name, Parameter.Type.NOT_SET, None))
        if p.type_ == Parameter.Type.NOT_SET:
            return []
        value = p.value
        return list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") \
            else value

    def _validate_parameters(self, params):
        for p in params:
            if p.type_ != Parameter.Type.NOT_SET and hasattr(p.value, "__len__") and \
                    not isinstance(p.value, str) and len(p.value) > MAX_PARAMETER_ENTRIES:
                return SetParametersResult(   # refused before any per-value check
                    successful=False, reason=f"{p.name}: {len(p.value)} values: more than "
                    f"{MAX_PARAMETER_ENTRIES} (MAX_PARAMETER_ENTRIES)")
            check = self._validators.get(p.name)
            if check is None or p.type_ == Parameter.Type.NOT_SET:
                continue
            value = list(p.value) if isinstance(p.value, (list, tuple)) or \
                hasattr(p.value, "tolist") else p.value
            error = check(value)
            if error:
                return SetParametersResult(successful=False, reason=f"{p.name}: {error}")
        # --- runtime parameter changes (plant helper): once configured, every change is
        # applied at once or rejected with a reason (never silently ignored)
        if getattr(self, "robot", None) is not None:
            for p in params:
                value = list(p.value) if isinstance(p.value, (list, tuple)) or \
                    hasattr(p.value, "tolist") else p.value
                error = self.apply_parameter(p.name, value)
                if error:
                    return SetParametersResult(successful=False, reason=f"{p.name}: {error}")
        # --- end runtime parameter changes
        return SetParametersResult(successful=True)

    # --- runtime parameter changes (plant helper)
    RUNTIME_PASS_THROUGH = ("use_sim_time",)   # handled by rclpy / the time source

    def apply_parameter(self, name, value):
        """Apply the change of parameter `name` to a configured node at once; returns None
        when applied, else the reason it is refused. Subclasses handle their own parameters
        in apply_node_parameter (returning NotImplemented for the ones they do not know)."""
        if name in self.RUNTIME_PASS_THROUGH:
            return None
        if name == "max_message_age":
            self._max_age_ns = int(value * 1e9)
            return None
        if name == "ignore_unknown_joints":
            self.jmap.set_ignore_unknown(value)
            return None
        if name == "diagnostics_period":
            if self._diag_timer is not None:
                self.destroy_timer(self._diag_timer)
                self._diag_timer = self.create_timer(value, self._publish_diagnostics,
                                                     clock=self.steady_clock)
            return None
        result = self.apply_node_parameter(name, value)
        if result is NotImplemented:
            return ("read at configure only: deactivate and clean up the node (lifecycle), set "
                    "it, then configure again")
        return result

    def apply_node_parameter(self, name, value):
        return NotImplemented
    # --- end runtime parameter changes (plant helper)
    def _guard_time_source(self):
        """Put ClockGuard in front of rclpy's TimeSource: a /clock message with a negative time
        raised ValueError out of its callback and ended the node; a negative, malformed or
        backwards /clock message is now ignored and counted (clock_guard.py)."""
        source = getattr(self, "_time_source", None)
        if source is None or not callable(getattr(source, "clock_callback", None)):
            return
        original = source.clock_callback

        def guarded(msg):
            _, reason = self.clock_guard.check(msg)
            if reason is not None:
                self.reject("/clock", reason)
                return
            original(msg)
        source.clock_callback = guarded   # used when it subscribes (use_sim_time set later)
        subscription = getattr(source, "_clock_sub", None)
        if subscription is not None:      # already subscribed (use_sim_time at start)
            subscription.callback = guarded

    def _on_parameters_set(self, params):
        for p in params:
            if p.name == "use_sim_time" and bool(p.value) != self._sim_time:
                self.clock_guard.reset()
                self._sim_time = bool(p.value)
                self.get_logger().info(f"use_sim_time is now {self._sim_time}")
                self.on_time_source_changed()

    @property
    def use_sim_time(self):
        return self._sim_time

    def on_time_source_changed(self):
        """Called after use_sim_time changed (the node's ROS clock already follows it)."""

    def _declare_common_parameters(self):
        S = ParameterType.PARAMETER_STRING_ARRAY
        self.declare("robot_description", "", "URDF XML of the robot (takes precedence over "
                     "urdf_path; if both are empty the robot_description topic is used); XML "
                     "only, never a file path", check_description_parameter)
        self.declare("urdf_path", "", "path of the robot's URDF file")
        self.declare("closures_path", "", "YAML file declaring the loop closures (cut joints) "
                     "of a closed-loop robot; empty for a tree")
        # ---- flexible links (docs/flexible.md) ----
        self.declare("flexible_path", "", "YAML file with a flexible_links: section (flexible "
                     "links, elastic coordinates); empty for rigid links")
        # ---- end flexible links ----
        self.declare("forces_path", "", "YAML file with a forces: section (spring_damper, "
                     "joint_spring, bushing; may be the closures file); empty: none")
        self.declare("floating_base", False, "add a free joint 'root_joint' above the URDF root")
        self.declare("mimic", False, "couple the URDF <mimic> joints to their leaders "
                     "(q_m = r q_l + o: not independent dofs; also in closed loops); false: "
                     "independent joints, as Pinocchio's parser")   # [mimic joints]
        self.declare("gravity", [0.0, 0.0, -9.81], "gravity in the root frame, m/s^2",
                     finite_vector(3))
        self.declare("passive_forces", True, "apply the URDF <dynamics damping friction> as "
                     "passive joint forces")
        self.declare("friction_velocity", float(FRICTION_VELOCITY), "Coulomb friction "
                     "F is smoothed as F tanh(v / friction_velocity), m/s or rad/s (raise it if "
                     "an explicit integrator is unstable with large friction)",
                     float_range=(1e-9, 1e3))
        self.declare("joints", None, "commanded joints, the order of effort command arrays "
                     "(default: the actuated joints of a closed-loop robot, else every 1-dof "
                     "joint in the order of the robot's velocity vector; cylindrical / "
                     "universal dofs as '<joint>/<component>')", type_=S)
        self.declare("ignore_unknown_joints", False, "accept joint_states that also name joints "
                     "the robot does not have (their values are ignored) instead of dropping them")
        self.declare("max_message_age", 0.5, "drop input messages whose header stamp is older "
                     "than this, s (0: no check; a zero stamp is never stale)",
                     float_range=(0.0, 3600.0))
        self.declare("limit_efforts", True, "clip efforts to the URDF <limit effort>")
        self.declare("diagnostics_period", 1.0, "period of /diagnostics, s",
                     float_range=(0.01, 60.0))
        self.declare("codegen", True, "run robot-specific generated kernels (compiled once per "
                     "robot, cached on disk; mbd-ros codegen pre-builds them)")
        self.declare("autostart", True, "configure and activate the node by itself")
        # [executor] single_threaded by default: rclpy's EventsExecutor queues one event per
        # received message without bound, so a flood of publishers makes it grow and then spin
        # without running callbacks (measured: frozen for minutes); a wait-set executor takes
        # messages from the keep-last queues of depth 10 and recovers at once.
        self.declare("executor", "single_threaded", "executor: single_threaded (default; "
                     "nodes/executor.LeanExecutor, rclpy's SingleThreadedExecutor with its wait "
                     "set gathered once: survives topic floods), rclpy_single_threaded (rclpy's "
                     "own) or events (rclpy.experimental.EventsExecutor: the least CPU and "
                     "latency, but a flood of messages freezes it; falls back to "
                     "single_threaded where rclpy has none)",
                     one_of(*EXECUTORS))

    def declare_node_parameters(self):
        raise NotImplementedError

    # ------------------------------------------------------------------ robot
    def _robot_source(self):
        xml = urdf_xml(self.param("robot_description"), "the robot_description parameter")
        if xml:
            return xml, "the robot_description parameter"
        path = self.param("urdf_path")
        if path:
            return path, path
        if self._description_xml:
            return self._description_xml, "the robot_description topic"
        return None, None

    def load_robot(self, source=None, what=None):
        """The robot of `source` (default: the current robot source, see _robot_source)."""
        if source is None:
            source, what = self._robot_source()
        if source is None:
            raise RuntimeError("no robot: set the robot_description or urdf_path parameter, or "
                               "publish the URDF on the robot_description topic")
        source = self._expand_xacro(source, what)
        closures = self.param("closures_path") or None
        options = {}
        codegen = self.param("codegen")
        if codegen and self.param("flexible_path"):
            # codegen (default True) means "where there are generated kernels": flexible links
            # have none, and the library's UserWarning for codegen=True printed a raw Python
            # warning at every start of the sample flexible arm's launch
            codegen = False
            self.get_logger().info("codegen: flexible links have no generated kernels; the "
                                   "flexible kernels run")
        if self.param("friction_velocity") != FRICTION_VELOCITY:
            options["friction_velocity"] = self.param("friction_velocity")
        if self.param("flexible_path"):        # flexible links (docs/flexible.md)
            options["flexible"] = self.param("flexible_path")
        if self.param("mimic"):                # [mimic joints] coupled (robot/mimic.py)
            options["mimic"] = True
        try:
            return build_robot(source, closures=closures, forces=self.param("forces_path") or None,
                                floating_base=self.param("floating_base"),
                                gravity=tuple(self.param("gravity")),
                                passive_forces=self.param("passive_forces"),
                                codegen=codegen, **options)
        except NotImplementedError as exc:
            raise RuntimeError(f"cannot load the robot from {what}: {exc}") from None

    def _expand_xacro(self, source, what):
        """[xacro] The URDF XML of `source` when it is the urdf_path parameter naming a .xacro
        file, else `source` unchanged. xacro is code (its files run Python expressions and
        read files): it is expanded here only, for the urdf_path parameter only, when the robot
        is loaded for a configure (robot_source.expand_xacro); robot descriptions from the
        robot_description parameter or topic are XML and never expanded (description.py), and
        urdf_path cannot change once configured. Keeps (path, xml) for the contact points."""
        from ..inputs.xacro import expand_xacro, is_xacro_path
        if not isinstance(source, str) or source != self.param("urdf_path") or \
                not is_xacro_path(source):
            return source
        self.get_logger().info(f"expanding the xacro file {excerpt(source, 200)} of urdf_path "
                               "(xacro is code: it runs with this node's rights)")
        xml = expand_xacro(source.strip())
        self.expanded_xacro = (source, xml)
        return xml

    def robot_xml(self):
        """The URDF XML or file path the current robot was loaded from (a xacro file's
        expansion, not the file)."""
        source, _ = self._robot_source()
        expanded = getattr(self, "expanded_xacro", None)
        if expanded is not None and expanded[0] == source:
            return expanded[1]
        return source

    def _on_description_data(self, data):
        """A serialized std_msgs/String on robot_description: refused unread beyond
        MAX_DESCRIPTION_BYTES, else read and handled by _on_description."""
        if len(data) > MAX_DESCRIPTION_BYTES + 8:
            self.reject("robot_description", f"{len(data)} bytes: more than "
                        f"{MAX_DESCRIPTION_BYTES} (MAX_DESCRIPTION_BYTES)")
            return
        try:
            msg = deserialize_message(data, String)
        except Exception as exc:   # not a String rclpy can read
            self.reject("robot_description", f"unreadable message ({type(exc).__name__})")
            return
        self._on_description(msg)

    def _on_description(self, msg):
        try:
            xml = urdf_xml(msg.data, "the robot_description topic")
        except ValueError as exc:
            self.reject("robot_description", str(exc))
            return
        if not xml:
            self.reject("robot_description", "an empty robot description")
            return
        first = self._description_xml is None
        self._description_xml = xml
        state = self.lifecycle_state()
        if state == "unconfigured" and self.param("autostart"):
            self.get_logger().info(f"robot description received on the topic ({len(xml)} "
                                   "characters)")
            self._load_in_background(xml, "the robot_description topic")
        elif not first:
            self.get_logger().info("a new robot description arrived; it is used at the next "
                                   "configure")

    # ------------------------------------------------------------------ loading [loading]
    # A robot is loaded (and its kernels warmed) in a worker thread, so that a huge model
    # cannot block the executor (services, diagnostics and other callbacks keep running);
    # configure and activate then run in the executor once the load is done (a steady-clock
    # timer polls for it while a load runs: rclpy's EventsExecutor has no guard conditions,
    # and a node must not be touched from the worker thread). A configure
    # requested through the lifecycle service without a preloaded robot loads synchronously.
    def _load_in_background(self, source, what):
        """Load `source` in the worker thread; while a load runs, the latest description waits
        for it (one loader thread at a time: a flood of descriptions on the topic started one
        thread each, all loading at once) and is loaded next, the earlier result dropped."""
        loader = getattr(self, "_loader", None)
        if loader is not None and loader.is_alive():
            self._pending_load = (source, what)
            return
        self._start_loader(source, what)

    def _start_loader(self, source, what):
        self._pending_load = None
        if not getattr(self, "_load_holds_exit", False):   # a stop ends the process at once
            self._load_holds_exit = True                   # while a robot loads (stopping.py)
            stopping.immediate_exit(True)
        self._load_generation += 1
        generation = self._load_generation
        # a daemon: a shutdown does not wait for a load in progress (numba writes its cache
        # files atomically, so stopping it mid-compile loses nothing)
        self._loader = threading.Thread(target=self._load_worker,
                                        args=(generation, source, what),
                                        name="mbd_ros robot loader", daemon=True)
        self._loader.start()
        if self._loaded_poll is None:
            self._loaded_poll = self.create_timer(0.02, self._on_loaded,
                                                  clock=self.steady_clock)

    def join_loader(self, timeout):
        """Wait for a robot load in progress (shutdown); True if none is left running."""
        loader = getattr(self, "_loader", None)
        if loader is not None and loader.is_alive():
            loader.join(timeout)
            return not loader.is_alive()
        return True

    def _load_worker(self, generation, source, what):
        try:
            robot = self.load_robot(source, what)
            _warm_kernels(robot)
            result = robot
        except Exception as exc:   # reported by _on_loaded, in the executor
            result = exc
        self._loaded = (generation, source, what, result)

    def _on_loaded(self):
        loaded = self._loaded
        if loaded is None:
            return   # still loading
        self._loaded = None
        if getattr(self, "_pending_load", None) is not None:   # a newer description waited
            self._start_loader(*self._pending_load)
            return
        if loaded[0] != self._load_generation:
            return   # superseded by a newer description (its own load is running)
        if getattr(self, "_load_holds_exit", False):   # the latest load is done: none runs
            self._load_holds_exit = False
            stopping.immediate_exit(False)
        if self._loaded_poll is not None:
            self.destroy_timer(self._loaded_poll)
            self._loaded_poll = None
        _, source, what, result = loaded
        if self.lifecycle_state() != "unconfigured":
            return
        ok = False
        if isinstance(result, Exception):
            self.get_logger().error(f"configure failed: {shorten(result)}")
        else:
            self._preloaded = (source, result)
            ok = self.trigger_configure() == SUCCESS and self.trigger_activate() == SUCCESS
            self._preloaded = None
        if ok:
            return
        if what == "the robot_description topic":
            self.get_logger().error("waiting for another robot description")
        else:   # autostart from parameters failed: the process exits with 1
            self.get_logger().fatal("autostart failed (see the error above); exiting")
            self.exit_code = 1
            if not self.done.done():
                self.done.set_result(True)

    # ------------------------------------------------------------------ lifecycle
    def lifecycle_state(self):
        return self._state_machine.current_state[1]

    def start(self):
        """Autostart: load the robot in a worker thread, then configure and activate (see
        _on_load). Always True (a failure sets exit_code and ends run()); waits for the robot
        description topic when no parameter names a robot."""
        source, what = self._robot_source()
        if source is None:
            self.get_logger().info("waiting for the robot description on the "
                                   f"'{self.resolve_topic_name('robot_description')}' topic")
            return True
        self._load_in_background(source, what)
        return True

    def on_configure(self, state):
        with stopping.busy():
            return self._configure(state)

    def _configure(self, state):
        t0 = time.perf_counter()
        try:
            preloaded = self._preloaded
            if preloaded is not None and preloaded[0] == self._robot_source()[0]:
                self.robot = preloaded[1]
            else:
                self.robot = self.load_robot()
            self.configure_node()
        except Exception as exc:   # a failed configure must say why (rclpy would hide it)
            self.get_logger().error(f"configure failed: {shorten(exc)}")
            self._cleanup()
            return FAILURE
        self._configure_seconds = time.perf_counter() - t0
        # [gc] the robot, its kernels, numba and rclpy (~130 000 objects) live as long as the
        # node: moved out of the cyclic collector, a full collection triggered by the messages'
        # garbage takes ~0 instead of ~100 ms in the middle of a cycle (measured, arm7).
        # Cleanup unfreezes and collects (_cleanup): frozen objects are never collected, and
        # each configure / cleanup cycle kept ~2.5 MB.
        gc.freeze()
        r = self.robot
        self.get_logger().info(
            f"configured: robot '{r.model.name}' (nq {r.nq}, nv {r.nv}, "
            f"{len(r.closure_names)} closures), kernels warm, {self._configure_seconds:.2f} s")
        return super().on_configure(state)

    def on_activate(self, state):
        ret = super().on_activate(state)   # enables the lifecycle publishers first
        if ret != SUCCESS:
            return ret
        self.counts = {k: 0 for k in self.counts}
        self._rejected_published = 0
        self.stats.reset()
        self.clock_guard.reset()
        try:
            self.activate_node()
        except Exception as exc:
            self.get_logger().error(f"activate failed: {exc}")
            try:   # undo what the activation had started (the plant's timer, its priority)
                self.deactivate_node()
            except Exception as undo:
                self.get_logger().error(f"undoing the failed activation failed too: {undo}")
            return FAILURE
        self.active = True
        self._activated_at = time.monotonic()
        self._diag_timer = self.create_timer(self.param("diagnostics_period"),
                                             self._publish_diagnostics,
                                             clock=self.steady_clock)
        return SUCCESS

    def on_deactivate(self, state):
        self.active = False
        self.deactivate_node()
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        # a last report that says so: /diagnostics stops while inactive, and a monitor saw
        # "state: active" go stale (an outside audit)
        self._publish_diagnostics(state="inactive")
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self._cleanup()
        return super().on_cleanup(state)

    def on_shutdown(self, state):
        self.release()
        if not self.done.done():
            self.done.set_result(True)   # finalized: run() returns
        return super().on_shutdown(state)

    def release(self):
        """Stop timers and drop publishers, subscriptions and the robot (idempotent)."""
        if self.active:
            self.active = False
            self.deactivate_node()
            if self._diag_timer is not None:
                self.destroy_timer(self._diag_timer)
                self._diag_timer = None
        if self.robot is not None:
            self._cleanup(collect=False)

    def on_error(self, state):
        self.active = False
        self._cleanup()
        return SUCCESS

    def _cleanup(self, collect=True):
        try:
            self.cleanup_node()
        finally:
            self.robot = None
            # [gc] what configure froze goes back to the collector, and the robot just dropped
            # (with its reference cycles) is collected now, before the next configure freezes
            # everything again (not when shutting down: the process ends anyway)
            gc.unfreeze()
            if collect:
                gc.collect()

    # ------------------------------------------------------------------ bad messages
    def reject_if_stale(self, topic, stamp):
        """True, with the message counted as rejected, when `stamp` is older than
        max_message_age (0 disables the check)."""
        age = self.stale(stamp, self.now_ns()) if self._max_age_ns else None
        if age is None:
            return False
        self.reject(topic, f"stamp is {age:.3f} s old (max_message_age "
                           f"{self._max_age_ns * 1e-9:g} s)")
        return True

    def subscribe_joint_states(self, handler, direct=None):
        """Subscribe `handler(msg)` to joint_states, taken serialized: nodes/cdr.py reads the
        usual message without building objects (handler gets a JointStateView or, for any other
        message, rclpy's JointState); bytes rclpy cannot read are dropped as rejected.

        direct: optional (StateIntake's arguments after the reader (dict), read_handler): while
        the node is active, the usual message (see nodes/state_intake.py: known names, fresh
        stamp, valid values) is read straight into the intake's q, v, tau and
        read_handler(t0_ns, intake) is called instead (t0_ns: perf_counter_ns before the
        read); every other message goes to `handler` as without it. The intake is then
        self.joint_state_intake."""
        reader = JointStateReader()
        message_caps.warm_up()
        intake = None
        if direct is not None:
            intake_arguments, read_handler = direct
            intake = self.joint_state_intake = StateIntake(reader, **intake_arguments)

        def on_serialized(data):
            if intake is not None and self.active:
                t0 = time.perf_counter_ns()
                oldest = self.now_ns() - self._max_age_ns if self._max_age_ns > 0 else _NO_OLDEST
                if intake.read(data, oldest, time.monotonic_ns()):
                    read_handler(t0, intake)
                    return
            try:   # sizes capped on the bytes first: an oversized message builds no object
                counts = joint_state_counts(data, self.jmap.max_names)
                if len(data) > MAX_BYTES_PER_ENTRY * max(1, max(counts)) + 4096:
                    raise MessageSizeError(f"{len(data)} bytes for {max(counts)} entries "
                                           f"(names longer than {MAX_BYTES_PER_ENTRY} bytes)")
            except MessageSizeError as exc:
                self.reject("joint_states", str(exc))
                return
            try:
                msg = reader.read(data)
            except Exception as exc:   # not a JointState rclpy can read: dropped like a bad one
                self.reject("joint_states", f"unreadable message ({type(exc).__name__}: {exc})")
                return
            handler(msg)
        return self.create_subscription(JointState, "joint_states", on_serialized,
                                        SUBSCRIBE_QOS, raw=True)

    def reject(self, kind, reason):
        """Drop a message: count it under `kind` and warn (throttled per kind)."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.warn_throttled(kind, f"dropped {kind}: {reason} ({self.counts[kind]} so far)")

    def warn_throttled(self, key, text, period=WARNING_PERIOD):
        """A warning at most once per `period` s for each key. (rclpy's throttle_duration_sec
        inspects the caller's frame and source file on every call, ~0.3 ms even when it does
        not log: too slow for a 1 kHz path under a flood of bad messages.)"""
        now = time.monotonic()
        if now - self._last_warning.get(key, -1e9) >= period:
            self._last_warning[key] = now
            self.get_logger().warning(text)

    def stale(self, stamp, now_ns):
        """Age in s of a header stamp if older than max_message_age, else None (zero stamps
        and max_message_age 0 are never stale)."""
        if self._max_age_ns <= 0 or (stamp.sec == 0 and stamp.nanosec == 0):
            return None
        age = now_ns - (stamp.sec * 1_000_000_000 + stamp.nanosec)
        return age * 1e-9 if age > self._max_age_ns else None

    def read_common_parameters(self):
        self._max_age_ns = int(self.param("max_message_age") * 1e9)

    def now_ns(self):
        """ROS time in ns: the system clock unless use_sim_time (time.time_ns() is ~10x
        cheaper than get_clock().now())."""
        return self.get_clock().now().nanoseconds if self._sim_time else time.time_ns()

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_values(self):
        """(level, message, [(key, value), ...]) of the node-specific part."""
        return diag.OK, "", []

    @property
    def diagnostic_name(self):
        """The node's fully qualified name without the leading slash ('ns/name')."""
        return self.get_fully_qualified_name().lstrip("/")

    def _publish_diagnostics(self, state=None):
        """One /diagnostics report; state: the lifecycle state to report (default: the
        current one; on_deactivate reports the one it leaves the node in)."""
        if self.robot is None:
            return
        rate = self.stats.take_rate()
        c50, c99, w50, w99 = self.stats.percentiles_us()
        level, message, values = self.diagnostic_values()
        rejected = sum(self.counts.values())
        common = [
            ("state", state or self.lifecycle_state()),
            ("achieved rate [Hz]", rate),
            ("compute p50 [us]", c50),
            ("compute p99 [us]", c99),
            ("compute max [us]", self.stats.max_compute_ns / 1e3),
            ("cycle p50 [us]", w50),
            ("cycle p99 [us]", w99),
            ("cycle max [us]", self.stats.max_cycle_ns / 1e3),
            ("cycles", self.stats.cycles),
            ("rejected messages", rejected),
        ] + [(f"rejected {k}", n) for k, n in sorted(self.counts.items())] + \
            [(f"warnings {k}", n) for k, n in sorted(self.warning_counts.items())]
        common.append(("configure time [s]", self._configure_seconds))
        if self.stats.first_output is not None and self._activated_at is not None:
            common.append(("first output after activation [s]",
                           self.stats.first_output - self._activated_at))
        # WARN for a report period that dropped messages (the totals stay in the values): the
        # level stayed WARN for ever after one bad message (an outside audit)
        dropped = rejected - self._rejected_published
        self._rejected_published = rejected
        if dropped > 0 and level == diag.OK:
            level, message = diag.WARN, message or \
                f"{dropped} messages dropped since the last report"
        warned = sum(self.warning_counts.values())
        if warned > self._warnings_published and level == diag.OK:
            level, message = diag.WARN, f"{warned - self._warnings_published} Python warnings " \
                "since the last report (see the node's log)"
        self._warnings_published = warned
        msg = diag.diagnostic_array(self.get_clock().now().to_msg(),
                                    f"{self.diagnostic_name}: dynamics", self.robot.model.name,
                                    level, message or "ok", common + values)
        self._diag_pub.publish(msg)


def _warm_kernels(robot):
    """Run the kernels the nodes use once at the neutral configuration, so numba compiles (or
    loads from its cache) them in the loader thread; a singular model is reported later, by
    the node's own warm-up."""
    import numpy as np
    q, zero = robot.neutral(), np.zeros(robot.nv)
    if robot.closure_names:
        try:   # on the loops: at an open neutral q the dynamics warn (LoopResidualWarning)
            q = np.asarray(robot.assemble(q), dtype=float)
        except Exception:   # noqa: BLE001 -- no assembly: neutral it is (a warning, no harm)
            pass
    for call in (lambda: robot.forward_dynamics(q, zero, zero),
                 lambda: robot.inverse_dynamics(q, zero, zero),
                 lambda: robot.joint_wrenches(q, zero, zero),
                 lambda: robot.integrate(q, zero, 1e-3)):
        try:
            call()
        except (ValueError, FloatingPointError):
            pass


def make_executor(kind, logger=None):
    """single_threaded: nodes/executor.LeanExecutor (rclpy's SingleThreadedExecutor with its
    wait set gathered once per change of the entities); rclpy_single_threaded: rclpy's own
    SingleThreadedExecutor; events: rclpy.experimental.EventsExecutor (rclpy >= 9, ROS 2
    Kilted; falls back to single_threaded where it does not exist)."""
    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            if logger is not None:
                logger.warning("this rclpy has no EventsExecutor: using single_threaded")
    if kind == "rclpy_single_threaded":
        return SingleThreadedExecutor()
    from .executor import LeanExecutor
    return LeanExecutor()


def run(node_class, args=None, exit_process=False):
    """Create the node, autostart it, spin until shutdown (SIGINT/SIGTERM or the lifecycle
    shutdown transition). Returns the process exit code; with exit_process (the nodes'
    main()), ends the process with it instead (finish_process)."""
    code = _run(node_class, args, watchdog=exit_process)
    if exit_process:
        finish_process(code)
    return code


def _run(node_class, args, watchdog=False):
    stop = stopping.StopRequest.start(watchdog)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    restore_warnings = None
    code = 0
    try:
        try:
            node = node_class()
        except (InvalidParameterValueException, InvalidParameterTypeException,
                ParameterException) as exc:   # (rclpy's message quotes the value: shortened)
            print(f"{node_class.__name__}: invalid parameter: {shorten(exc)}", file=sys.stderr)
            return 2
        restore_warnings = library_warnings.route(node)
        executor = make_executor(node.param("executor"), node.get_logger())
        executor.add_node(node)
        if node.param("autostart") and not node.start():
            node.get_logger().fatal("autostart failed (see the error above); exiting")
            return 1
        # Always spin with a timeout: rclpy 9.1.2's EventsExecutor without one ignores
        # SIGINT and burns a core. spin_once, not spin_until_future_complete(node.done, 0.2):
        # each of those calls added a wake-up callback to node.done, kept until shutdown (5 a
        # second: the nodes grew ~3 MB/h in the HIL soak). node.done is set inside a callback,
        # so the loop sees it as soon as that callback returns.
        while rclpy.ok() and not node.done.done() and not stop.requested:
            executor.spin_once(timeout_sec=0.2)
        code = node.exit_code
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            try:
                node.release()
            except Exception:   # shutting down anyway
                pass
            node.join_loader(timeout=0.5)   # a short grace only (see _load_in_background)
            node.destroy_node()
        rclpy.try_shutdown()
        if restore_warnings is not None:
            restore_warnings()
        stop.restore()
    return code
