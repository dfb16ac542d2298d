"""Forward dynamics node: accelerations and wrenches from joint states, or a simulated plant.

    ros2 run mbd_ros forward_dynamics --ros-args -p urdf_path:=arm7.urdf [-p mode:=simulate]
    python -m mbd_ros.nodes.forward_dynamics --ros-args --params-file config/arm7_observe.yaml

mode ``observe``: for every ``joint_states`` message (sensor_msgs/JointState: position required,
velocity and effort optional, zeros when empty; effort = drive torques) it computes
qdd = forward_dynamics(q, v, tau) and publishes, stamped with the input's stamp:

- ``~/accelerations`` (trajectory_msgs/JointTrajectory, one point: positions [when every joint
  is 1-dof], velocities, accelerations, effort; one entry per degree of freedom)
- ``~/wrenches/<joint>`` (geometry_msgs/WrenchStamped, frame_id = the joint's child link) for
  the joints of ``wrench_joints``
- ``~/closure_wrenches/<closure>`` (geometry_msgs/WrenchStamped) for every loop closure: the
  wrench the cut joint exerts on its child-side link, expressed in that link's frame about its
  origin (frame_id = the link: a frame TF can resolve).

mode ``simulate`` (a hardware-in-the-loop plant): at ``rate_hz`` it applies the latest effort
command, from ``~/effort_commands`` (std_msgs/Float64MultiArray in the order of ``joints``, as
ros2_control's forward command controller sends) or ``joint_commands`` (sensor_msgs/JointState,
effort field, the topic_based_ros2_control convention), publishes ``joint_states`` (position,
velocity, effort) and the outputs of observe for the current state, then integrates one step.
No command yet (said once, after 1 s), or an effort command older than ``command_timeout``
(with a warning): zero effort; ``hold_initial_positions`` holds the start until a command.
Position and velocity commands (``joint_commands`` position / velocity fields,
``~/position_commands``, ``~/velocity_commands``) are held and tracked by emulated drives; the
URDF limits are enforced; a floating base publishes ``~/odom`` and /tf, with an optional ground
contact; a diverged simulation halts until ``~/reset``; ``~/pause``, ``~/unpause``, ``~/step``,
``~/set_state`` make it a simulator (plant_interface.py, docs/plant.md).
``prescribed_joints`` follow the trajectories of ``~/prescribed_trajectory``
(trajectory_msgs/JointTrajectory) while the others are free; their joint_states effort is the
force they need (prescribed_interface.py).

- ``publish_clock`` false (default): wall-clock (steady clock) pacing. Stamps are the system
  time; a late cycle is caught up with extra steps (at most ``max_catch_up``) so simulated time
  tracks wall time, and each cycle that had to be caught up counts as missed.
- ``use_sim_time`` true and ``publish_clock`` false: an external /clock drives the plant in
  lockstep; for each /clock message it steps until its state is the state at that time and
  publishes it stamped with that time (no /clock: no steps). use_sim_time may be switched at
  runtime in either direction; it is applied at once.
- ``publish_clock`` true: the node is the ROS time source. It publishes rosgraph_msgs/Clock on
  /clock after every step and stamps everything with simulated time (from 0), so nodes with
  ``use_sim_time`` run in lockstep with the simulation; after a stall simulated time stretches
  instead of jumping (the late cycles are counted as missed, not caught up).

Cylindrical and universal joints are in JointState messages, one entry per dof named
``<joint>/angle``, ``<joint>/displacement`` / ``<joint>/angle1``, ``<joint>/angle2``
(mbd_ros.joint_map). Multi-dof joints (floating base, spherical, planar) have no JointState
representation: in
observe mode they stay at the neutral configuration, at rest; in simulate mode they move, and
only their velocities and accelerations appear (in ``~/accelerations``, as ``<joint>/<component>``).

Parameters: see ``declare_node_parameters`` and base.DynamicsNode (robot, joints, message
checks, diagnostics, autostart, executor). /diagnostics: achieved rate, compute time
p50/p99/max, missed cycles, rejected messages, stale commands, constraint residual, singular
configurations.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterType
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..kernels.finite import all_finite
from ..robot.joint_map import JointMap, JointMapError, duplicates
from ..robot.integrators import INTEGRATORS
from ..simulation.limits import onto_position_limits, outside_position_limits
from . import cycle_schedule as schedule
from . import diagnostics as diag
from . import message_caps, thread_priority
from .base import DynamicsNode, finite_vector, one_of, run
from .clock_guard import ClockGuard
from .follow_joint_trajectory import DEACTIVATED_TEXT
from .messages import (AccelerationsOut, JointStateOut, Listeners, WrenchOut, time_msg,
                       topic_token, unique_topic_tokens)
from .plant_interface import PlantInterface
from .prescribed_interface import PrescribedInterface
from .qos import CLOCK_QOS, CLOCK_SUBSCRIBE_QOS, COMMAND_QOS, JOINT_COMMAND_QOS, PUBLISH_QOS

MODES = ("observe", "simulate")


class ForwardDynamicsNode(PrescribedInterface, PlantInterface, DynamicsNode):

    def __init__(self, node_name="forward_dynamics", **kwargs):
        super().__init__(node_name, **kwargs)
        self.counts = {"joint_states": 0}

    def declare_node_parameters(self):
        S = ParameterType.PARAMETER_STRING_ARRAY
        D = ParameterType.PARAMETER_DOUBLE_ARRAY
        self.declare("mode", "observe", "observe: outputs for each joint_states message; "
                     "simulate: integrate the motion from effort commands and publish "
                     "joint_states (hardware-in-the-loop plant)", one_of(*MODES))
        self.declare("rate_hz", 1000.0, "simulate: step rate, Hz (observe: the expected input "
                     "rate; a message whose processing exceeds 1/rate_hz counts as missed)",
                     float_range=(1.0, 20000.0))
        self.declare("wrench_joints", ["all"], "joints whose wrench is published on "
                     "~/wrenches/<joint>: ['all'] (default), ['none'], or URDF joint names "
                     "(fixed joints included)", type_=S)
        self.declare("integrator", "rk4", "simulate: rk4 (default: four forward dynamics per "
                     "step, 4th order), semi_implicit_euler (one; first order, gains energy), "
                     "implicit_euler (stiff springs and damping) or symplectic_euler (bounded "
                     "energy error)",
                     one_of(*INTEGRATORS))
        self.declare("initial_positions", None, "simulate: initial positions of `joints`, in "
                     "their order (default: zeros, joints whose zero is outside their URDF "
                     "position limits at the nearest limit)", finite_vector(), type_=D)
        self.declare("initial_velocities", None, "simulate: initial velocities of `joints` "
                     "(default: zeros)", finite_vector(), type_=D)
        self.declare("baumgarte_kp", 100.0, "closed loops: Baumgarte position gain of the "
                     "constraint stabilization, 1/s^2", float_range=(0.0, 1e8))
        self.declare("baumgarte_kd", 20.0, "closed loops: Baumgarte velocity gain, 1/s "
                     "(2 sqrt(kp) is critically damped)", float_range=(0.0, 1e5))
        self.declare("publish_clock", False, "simulate: publish simulated time on /clock and "
                     "stamp with it (lockstep with use_sim_time nodes) instead of pacing by the "
                     "wall clock")
        self.declare("command_timeout", 0.1, "simulate: a command older than this (s) is "
                     "dropped with a warning and zero torque applied (0: never)",
                     float_range=(0.0, 3600.0))
        self.declare("max_catch_up", 10, "simulate, wall-clock pacing: most extra steps taken "
                     "in one cycle to catch up after a stall", int_range=(0, 1000))
        self.declare("cycle_priority", 0, "simulate: > 0 runs the thread of the cycle (the "
                     "executor's) SCHED_FIFO at this priority while active, so the timer's "
                     "wake-ups are not delayed by other processes (needs root or "
                     "CAP_SYS_NICE; refused: a warning, the scheduling it had); 0: the "
                     "scheduling the process was started with (normal unless e.g. chrt)", int_range=(0, thread_priority.MAX_PRIORITY))
        self.declare_plant_parameters()   # drives, limits, divergence (plant_interface.py)
        self.declare_prescribed_parameters()   # prescribed joints (prescribed_interface.py)
        self.declare("joint_state_staleness", 0.1, "observe: joint_states messages that name "
                     "only some joints (several drivers) are merged, latest value per joint; "
                     "outputs need every joint's value to be at most this old, s",
                     float_range=(0.0, 3600.0))

    # ------------------------------------------------------------------ configure
    def configure_node(self):
        self.read_common_parameters()
        robot = self.robot
        self.mode = self.param("mode")
        self.rate_hz = self.param("rate_hz")
        self.period_ns = int(round(1e9 / self.rate_hz))
        self.jmap = jm = JointMap(robot, self.param("joints") or None,
                                  self.param("ignore_unknown_joints"))
        jm.warm_up()   # read_state's kernel compiled before the first message
        if robot.closure_names and self.mode == "simulate":
            self._set_baumgarte_gains()   # observe: measured states, the exact constraint
        # buffers (Data of this node); multi-dof joints stay at neutral / rest in observe mode
        nv = robot.nv
        self.q = robot.neutral()
        self.v = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self._qdd_out = np.zeros(nv)     # simulate: the accelerations published after the step
        self.command = np.zeros(nv)
        self.W = np.zeros((len(robot.wrench_joint_names), 6))
        self.Wc = np.zeros((len(robot.closure_names), 6))
        self.wrench_rows = self._wrench_rows()
        prefix = self.param("frame_prefix")   # frame ids, as robot_state_publisher's
        self.missed = 0
        self.singular = 0
        self.saturated = 0
        self.wrench_failures = 0
        # outputs (the listeners: only outputs with a subscriber are computed and published)
        self.listeners = track = Listeners()
        self.acc_out = AccelerationsOut(jm.dof_names, robot.nq == robot.nv)
        self.pub_acc = track.track(self.create_lifecycle_publisher(
            JointTrajectory, "~/accelerations", PUBLISH_QOS))
        # one topic per joint: names that sanitise to the same token are told apart (_2, ...)
        wrench_tokens = unique_topic_tokens(robot.wrench_joint_names)
        for name, token in zip(robot.wrench_joint_names, wrench_tokens):
            if token != topic_token(name):
                self.get_logger().warning(f"joint '{name[:80]}' publishes its wrench on "
                                          f"~/wrenches/{token}: '{topic_token(name)}' is taken by "
                                          "another joint's name")
        self.wrench_outs = [
            (row, WrenchOut(prefix + robot.wrench_frames[row]),
             track.track(self.create_lifecycle_publisher(
                 WrenchStamped, f"~/wrenches/{wrench_tokens[row]}", PUBLISH_QOS)))
            for row in self.wrench_rows]
        # closure wrenches are published in the child-side link frame (a frame TF knows), moved
        # from the cut frame B (child_origin in that link): f_L = R f_B, t_L = R t_B + p x f_L
        closure_set = getattr(robot, "closure_set", None)
        specs = list(closure_set.closures) if robot.closure_names and closure_set else []
        if len(specs) != len(robot.closure_names):
            raise ValueError("this closed-loop robot does not describe its cut joints "
                             "(closure_set): cannot express the closure wrenches in a link frame")
        frames = [spec.child for spec in specs]
        self._cut_rot = np.array([spec.child_origin[:3, :3] for spec in specs]).reshape(-1, 3, 3)
        self._cut_pos = np.array([spec.child_origin[:3, 3] for spec in specs]).reshape(-1, 3)
        self._wc_link = np.zeros((len(specs), 6))
        self.closure_outs = [
            (k, WrenchOut(prefix + frames[k]), track.track(self.create_lifecycle_publisher(
                WrenchStamped, f"~/closure_wrenches/{token}", PUBLISH_QOS)))
            for k, token in enumerate(unique_topic_tokens(robot.closure_names))]
        self._wrench_pubs = [pub for _, _, pub in self.wrench_outs]
        self._closure_pubs = [pub for _, _, pub in self.closure_outs]
        # force elements: ~/force_elements (JointState: name = element, position = length or
        # deflection, velocity = its rate, effort = tension or joint force)
        self.force_msg = self.pub_forces = None
        if robot.force_element_names:
            self.force_msg = JointState()
            self.force_msg.name = list(robot.force_element_names)
            self.pub_forces = track.track(self.create_lifecycle_publisher(
                JointState, "~/force_elements", PUBLISH_QOS))
        self.subs = []
        if self.mode == "simulate":
            self._configure_simulation()
        else:
            self._seen_ns = np.zeros(nv, dtype=np.int64)   # arrival of each joint's value
            self._staleness_ns = int(self.param("joint_state_staleness") * 1e9)
            self.subs.append(self.subscribe_joint_states(self._on_joint_states, direct=(
                {"jmap": jm, "q": self.q, "v": self.v, "tau": self.tau,
                 "arrival_ns": self._seen_ns, "need_velocity": False, "need_effort": False,
                 "required": ()},
                self._on_joint_states_read)))
        self._warm_up()

    def _wrench_rows(self):
        names = list(self.robot.wrench_joint_names)
        wanted = self.param("wrench_joints")
        if wanted == ["all"]:
            return list(range(len(names)))
        if wanted in (["none"], []):
            return []
        row = {n: k for k, n in enumerate(names)}   # (dicts and sets: O(n) for big robots)
        unknown = [n for n in wanted if n not in row]
        if unknown:
            raise ValueError(f"wrench_joints: unknown joints {unknown[:10]}; the robot's joints "
                             f"are {names[:20]}{' ...' if len(names) > 20 else ''} (or use "
                             "['all'] / ['none'])")
        dup = duplicates(wanted)
        if dup:
            raise ValueError(f"wrench_joints: duplicate names {dup}")
        return [row[n] for n in wanted]

    def _set_baumgarte_gains(self):
        """Closed loops, simulate mode: the constraint drift is stabilized by adding
        kd G v + kp g to the acceleration constraint G qdd + gamma = 0 (Baumgarte). The library
        takes (alpha, beta) with 2 alpha G v + beta^2 g: alpha = kd / 2, beta = sqrt(kp)."""
        kp, kd = self.param("baumgarte_kp"), self.param("baumgarte_kd")
        if hasattr(self.robot, "baumgarte"):
            self.robot.baumgarte = (0.5 * kd, kp ** 0.5)
        else:
            self.get_logger().warning("this robot takes no Baumgarte gains: baumgarte_kp/kd "
                                      "are ignored")

    def _configure_simulation(self):
        robot, jm = self.robot, self.jmap
        self.q0, self.v0 = robot.neutral(), np.zeros(robot.nv)
        for name, target, index in (("initial_positions", self.q0, jm.joint_iq),
                                    ("initial_velocities", self.v0, jm.joint_iv)):
            values = self.param(name)
            if values:
                if len(values) != len(jm.joints):
                    raise ValueError(f"{name} has {len(values)} values; it needs "
                                     f"{len(jm.joints)}, one per joint of `joints`, in that "
                                     f"order: {jm.joints}")
                target[index] = values
        self._start_within_limits(self.q0, explicit=bool(self.param("initial_positions")))
        if getattr(robot, "mimic_joints", None):   # [mimic joints] on their leaders
            self.q0, self.v0 = robot.apply_mimic(self.q0, self.v0)
        if robot.closure_names and hasattr(robot, "assemble"):
            # close the loops at the initial configuration (the `joints` keep their values as
            # far as the loops allow) and remove the loop-violating part of the velocity
            self.q0 = np.asarray(robot.assemble(self.q0), dtype=float)
            self.v0 = np.asarray(robot.project_velocity(self.q0, self.v0), dtype=float)
        self.plant = self.make_plant(self.q0, self.v0)   # drives, limits (plant_interface.py)
        self.sim = self.plant.sim
        self.tau = self.plant.tau        # the drive torques applied are the plant's
        self.qdd = self.sim.qdd          # the accelerations published are the simulator's
        self.publish_clock = self.param("publish_clock")
        timeout = self.param("command_timeout")
        self.timeout_cycles = int(round(timeout * self.rate_hz)) if timeout > 0 else 0
        self.max_catch_up = self.param("max_catch_up")
        self.cycle_priority = 0   # SCHED_FIFO priority of the cycle's thread while active
        self._scheduling_before = None   # the executor thread's (policy, priority) at activation
        self.js_out = JointStateOut(jm.state_names)
        self.pub_js = self.create_lifecycle_publisher(JointState, "joint_states", PUBLISH_QOS)
        # ---- flexible links: elastic coordinates on ~/elastic_states (names 'link/mode_k') ----
        self.elastic_out = self.pub_elastic = None
        if getattr(robot, "elastic_names", None):
            self.elastic_out = JointStateOut(robot.elastic_names)
            self.pub_elastic = self.create_lifecycle_publisher(JointState, "~/elastic_states",
                                                               PUBLISH_QOS)
        # ---- end flexible links ----
        self.pub_clock = self.create_lifecycle_publisher(Clock, "/clock", CLOCK_QOS) \
            if self.publish_clock else None
        self.counts.update({"effort_commands": 0, "joint_commands": 0, "stale commands": 0})
        # commands are taken serialized: their sizes are checked on the bytes before any object
        # is built (message_caps.py), so an oversized message costs no more than a good one
        message_caps.warm_up()
        self._held = {}   # held-command topics (plant_interface.held_command_subscription)
        self.subs.append(self.create_subscription(   # reliable: qos.py
            Float64MultiArray, "~/effort_commands", self._on_effort_command, COMMAND_QOS,
            raw=True))
        self.subs.append(self.held_command_subscription(
            JointState, "joint_commands", self._on_joint_command_data, JOINT_COMMAND_QOS))
        self.configure_plant_interface()   # position/velocity commands, ~/reset
        self.configure_prescribed()   # prescribed joints, ~/prescribed_trajectory
        self.timer = None
        self._clock_sub = None
        self._follow_clock = False

    def _start_within_limits(self, q0, explicit):
        """With enforce_limits: an explicit initial_positions outside the URDF position limits
        is refused (ValueError naming the parameter, the joints, their limits, and what the
        parameter needs); without one, the joints whose zero lies outside their limits start at
        the nearest limit (mbd_ros.simulation.limits.onto_position_limits), logged at INFO."""
        if not self.param("enforce_limits"):
            return
        jm = self.jmap
        if explicit:
            bad = outside_position_limits(self.robot, q0)
            if bad:
                joints = ", ".join(f"'{n}' = {x:g} outside [{lo:g}, {hi:g}]"
                                   for n, x, lo, hi in bad[:10])
                raise ValueError(f"initial_positions: {joints} (URDF position limits; "
                                 "enforce_limits is true). initial_positions needs "
                                 f"{len(jm.joints)} values, one per joint of `joints`, in that "
                                 f"order: {jm.joints}; leave it unset to start at zero, joints "
                                 "whose zero is outside their limits at the nearest limit")
            return
        moved = onto_position_limits(self.robot, q0)
        if moved:
            self.get_logger().info(
                "initial_positions unset: joints whose zero lies outside their URDF position "
                "limits start at the nearest limit: " + ", ".join(
                    f"{n} = {new:g}" for n, _, new in moved))

    def _warm_up(self):
        """One full cycle of library calls, so numba compiles (or loads from its cache) every
        kernel now rather than in the first cycle."""
        self.robot.compile_c_calls()   # C-level FD/ID entries (mbd_ros/fastcall), if it has them
        self.tau[:] = 0.0
        failures = self.wrench_failures
        try:
            if self.mode == "simulate":
                self.plant.evaluate()
                self._wrenches(self.sim.q, self.sim.v, every=True)
                self.plant.advance()
                self.plant.reset(self.q0, self.v0)
            else:
                q = self.q
                if self.robot.closure_names and hasattr(self.robot, "assemble"):
                    q = np.asarray(self.robot.assemble(q), dtype=float)
                self._accelerations(q, self.v)
                self._wrenches(q, self.v, every=True)
        except (ValueError, FloatingPointError) as exc:   # the kernels are compiled anyway
            self.get_logger().warning(f"warm-up at the initial state: {exc}")
        self.wrench_failures = failures

    def cleanup_node(self):
        # first: on_error (an exception in a transition while active) cleans up without
        # deactivate_node; the plant's timer must stop and its thread lose SCHED_FIFO then too
        self._stop_cycle()
        self.cleanup_plant_interface()
        for sub in getattr(self, "subs", []):
            self.destroy_subscription(sub)
        self.subs = []
        for attr in ("pub_acc", "pub_js", "pub_clock", "pub_elastic", "pub_forces"):
            pub = getattr(self, attr, None)
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
            setattr(self, attr, None)
        for _, _, pub in getattr(self, "wrench_outs", []) + getattr(self, "closure_outs", []):
            self.destroy_lifecycle_publisher(pub)
        self.wrench_outs, self.closure_outs = [], []

    # ------------------------------------------------------------------ activate
    def activate_node(self):
        self.missed = self.singular = self.saturated = self.wrench_failures = 0
        self.diverged = 0
        self.halted_cycles = 0
        self._window_missed = self._window_expected = 0
        if self.mode == "simulate":
            self.cycles = 0   # (before reset_plant: it counts the wait for a command from here)
            self.reset_plant(self.q0, self.v0, time=0.0)
            self._have_command = False
            self._command_cycle = 0
            self._command_expired = False
            self._start_ns = None
            self._base_stamp_ns = 0 if self.publish_clock else self.get_clock().now().nanoseconds
            # [time source] paced by the steady clock whatever use_sim_time says: a timer on the
            # node's ROS clock never fires under use_sim_time until /clock moves, and with
            # publish_clock this node is what moves it (the old deadlock)
            self.timer = self.create_timer(1.0 / self.rate_hz, self._on_cycle,
                                           clock=self.steady_clock)
            self.start_latched_watch()   # transient-local command publishers (plant_interface)
            self._clock_base_ns = None
            self._apply_time_source()
            self._claim_cycle_priority()

    def deactivate_node(self):
        self._stop_cycle()
        self._drop_clock_subscription()
        if self.mode == "simulate":
            self.stop_latched_watch()
            if getattr(self, "trajectory_follower", None) is not None:   # as JTC's deactivate
                self.trajectory_follower.stop(DEACTIVATED_TEXT)

    def _claim_cycle_priority(self):
        """At activation, in the executor's thread (which runs the cycle): remember its
        scheduling (given back at deactivate) and apply cycle_priority when > 0; 0 leaves it as
        the process was started (normal scheduling, or what e.g. `chrt` gave it)."""
        self._scheduling_before = thread_priority.current_scheduling()
        self.cycle_priority = thread_priority.current_thread_priority()
        if self.param("cycle_priority"):
            self._set_cycle_priority(self.param("cycle_priority"))

    def _stop_cycle(self):
        """Destroy the plant's timer and give the executor's thread the scheduling it had before
        activation back (idempotent: deactivate, and cleanup after an error while active)."""
        if getattr(self, "timer", None) is not None:
            self.destroy_timer(self.timer)
            self.timer = None
        saved = getattr(self, "_scheduling_before", None)
        if saved is not None:
            error = thread_priority.restore_scheduling(saved)
            if error is not None:
                self.get_logger().warning(error)
            self._scheduling_before = None
            self.cycle_priority = thread_priority.current_thread_priority()
        elif getattr(self, "cycle_priority", 0):   # the executor's thread: normal again
            self._set_cycle_priority(0)

    def _set_cycle_priority(self, priority):
        """Run this thread (the executor's, which runs the cycle) SCHED_FIFO at `priority`
        (0: the scheduling it had before activation, normal scheduling if unknown); refused by
        the OS: a warning, the priority it keeps. Returns None or the reason
        (thread_priority.py)."""
        saved = getattr(self, "_scheduling_before", None)
        if priority == 0 and saved is not None:
            error = thread_priority.restore_scheduling(saved)
        else:
            error = thread_priority.set_current_thread_priority(priority)
        self.cycle_priority = thread_priority.current_thread_priority()
        if error is not None:   # (a refused change at runtime keeps the priority it had)
            kept = (f"SCHED_FIFO priority {self.cycle_priority}" if self.cycle_priority
                    else "normal scheduling")
            self.get_logger().warning(f"{error}; the cycle keeps {kept}")
        return error

    # ------------------------------------------------------------------ time source [time source]
    # Three ways the simulate plant keeps time (docs/nodes.md, "Time"):
    # - publish_clock true: the plant is the ROS time source; steady-clock pacing, /clock and
    #   every stamp carry the simulated time from 0 (use_sim_time nodes follow it);
    # - use_sim_time true, publish_clock false: an external /clock drives the plant in lockstep:
    #   for every /clock message it steps until its state is the state at that time and
    #   publishes it, stamped with that time; no /clock, no steps;
    # - neither: steady-clock pacing, stamps are the system time.
    # use_sim_time may change at runtime (base.DynamicsNode calls on_time_source_changed).
    def on_time_source_changed(self):
        if self.mode == "simulate" and self.active:
            self._apply_time_source()

    def _apply_time_source(self):
        follow = self.use_sim_time and not self.publish_clock
        if follow and self._clock_sub is None:
            self._clock_base_ns = None   # re-anchored on the next /clock message
            self._plant_clock = ClockGuard()
            self._clock_sub = self.create_subscription(Clock, "/clock", self._on_clock,
                                                       CLOCK_SUBSCRIBE_QOS)
            self.get_logger().info("use_sim_time: stepping in lockstep with /clock (waiting "
                                   "for it)")
        elif not follow and self._clock_sub is not None:
            self._drop_clock_subscription()
            # back to steady pacing from the current state, stamped with the system time
            # (re-anchored by the next _on_cycle)
            self._start_ns = None
            self.get_logger().info("use_sim_time off: paced by the steady clock again")
        self._follow_clock = follow

    def _drop_clock_subscription(self):
        if getattr(self, "_clock_sub", None) is not None:
            self.destroy_subscription(self._clock_sub)
        self._clock_sub = None

    def _on_clock(self, msg):
        """External /clock (use_sim_time): run the cycles up to the state at that time."""
        if not self.active or not self._follow_clock or self.paused:
            return
        t0 = time.perf_counter_ns()
        # negative, malformed or backwards /clock: ignored (the node's ROS clock guard,
        # base._guard_time_source, counts it as "rejected /clock")
        now, _ = self._plant_clock.check(msg)
        if now is None:
            return
        period = self.period_ns
        if self._clock_base_ns is None:
            self._clock_base_ns = now - self.cycles * period   # the state now is at `now`
            self._base_stamp_ns = self._clock_base_ns
        due = (now - self._clock_base_ns) // period + 1 - self.cycles
        if due <= 0:
            return   # the same time again, or less than a step later
        late = due - 1
        limit = int(10 * self.rate_hz)   # more than 10 s of simulated time at once: jump
        if late > limit:
            self.warn_throttled("clock", f"/clock jumped {late * period * 1e-9:.3f} s ahead: "
                                f"simulating the last {limit} steps only")
            self._clock_base_ns += (late - limit) * period
            self._base_stamp_ns += (late - limit) * period
            late = limit
        self._run_cycle(late, t0)

    # ------------------------------------------------------------------ the computation
    def _accelerations(self, q, v):
        """self.qdd = forward_dynamics(q, v, self.tau). Raises ValueError (singular
        configuration) or FloatingPointError (non-finite result)."""
        self.robot.forward_dynamics(q, v, self.tau, out=self.qdd)
        if not all_finite(self.qdd):
            raise FloatingPointError("non-finite accelerations")

    def _wrenches(self, q, v, every=False):
        """Joint wrenches (self.W) and closure wrenches (self.Wc) for (q, v, self.qdd), each
        only when one of its topics has a subscriber (self.listeners, refreshed by the caller
        once per cycle, outside the compute time; every: all of them, the warm-up).
        Returns (joint wrenches computed, closure wrenches computed). A library error is
        counted and warned about, and the cycle goes on without those outputs (the
        accelerations and the simulation do not depend on them)."""
        robot = self.robot
        joint = bool(self.wrench_rows) and (every or self.listeners.any(self._wrench_pubs))
        closure = bool(self.closure_outs) and (every or self.listeners.any(self._closure_pubs))
        if not (joint or closure):
            return False, False
        # a closed-loop robot reuses the loop multipliers of the forward dynamics just computed
        # at this state instead of solving for them again
        reuse = {"multipliers": robot.multipliers()} if robot.closure_names else {}
        if joint:
            try:
                robot.joint_wrenches(q, v, self.qdd, out=self.W, **reuse)
            except (ValueError, FloatingPointError) as exc:
                joint = self._wrench_failed("joint", exc)
        if closure:
            try:
                self.Wc[:] = robot.closure_wrenches(q, v, self.tau, **reuse)
            except (ValueError, FloatingPointError) as exc:
                closure = self._wrench_failed("closure", exc)
        return joint, closure

    def _wrench_failed(self, what, exc):
        self.wrench_failures += 1
        self.warn_throttled(what, f"{what} wrenches failed ({exc}); none published for this "
                            f"state ({self.wrench_failures} so far)")
        return False

    def _publish_accelerations(self, sec, nanosec, q, v, qdd=None):
        """~/accelerations of this state stamped (sec, nanosec), when it has a subscriber (qdd:
        default self.qdd)."""
        if self.listeners.heard[self.pub_acc]:
            self.acc_out.fill(sec, nanosec, q, v, self.qdd if qdd is None else qdd, self.tau)
            self.pub_acc.publish(self.acc_out.payload())   # serialized (nodes/cdr.py)

    def _publish_outputs(self, stamp, q, v, wrenches=(True, True)):
        """The outputs of this state but the accelerations (_publish_accelerations) that have a
        subscriber (self.listeners, as _wrenches saw them; wrenches: which wrenches _wrenches
        computed)."""
        heard = self.listeners.heard
        if self.wrench_outs and wrenches[0]:
            rows = self.W.tolist()
            for row, msg_out, pub in self.wrench_outs:
                if heard[pub]:
                    msg_out.fill(stamp, rows[row])
                    pub.publish(msg_out.msg)
        if self.closure_outs and wrenches[1]:
            w = self._wc_link   # in the child-side link frame (see configure_node)
            np.einsum("kij,kj->ki", self._cut_rot, self.Wc[:, :3], out=w[:, :3])
            np.einsum("kij,kj->ki", self._cut_rot, self.Wc[:, 3:], out=w[:, 3:])
            w[:, 3:] += np.cross(self._cut_pos, w[:, :3])
            rows = w.tolist()
            for k, msg_out, pub in self.closure_outs:
                if heard[pub]:
                    msg_out.fill(stamp, rows[k])
                    pub.publish(msg_out.msg)
        if self.force_msg is not None and heard[self.pub_forces]:   # force elements
            values = self.robot.force_element_values(q, v)
            self.force_msg.header.stamp = stamp
            self.force_msg.position = values.length.tolist()
            self.force_msg.velocity = values.rate.tolist()
            self.force_msg.effort = values.force.tolist()
            self.pub_forces.publish(self.force_msg)

    def _compute_failed(self, exc):
        self.singular += 1
        self.warn_throttled("compute", f"forward dynamics failed ({exc}); no output for this "
                            f"state ({self.singular} so far)")

    # ------------------------------------------------------------------ observe mode
    def _on_joint_states(self, msg):
        """A joint_states message the StateIntake did not read (new names, bad or stale
        values, not active: everything but the usual message): read, checked, merged."""
        if not self.active:
            return
        t0 = time.perf_counter_ns()
        stamp = msg.header.stamp
        if self.reject_if_stale("joint_states", stamp):
            return
        try:   # partial messages (several drivers) are merged: latest value per joint
            lookup = self.jmap.read_state(msg.name, msg.position, msg.velocity, msg.effort,
                                          self.q, self.v, self.tau, need_velocity=False,
                                          need_effort=False, required=())
        except JointMapError as exc:
            self.reject("joint_states", str(exc))
            return
        self._seen_ns[lookup.iv] = time.monotonic_ns()
        if self._merged(lookup):
            self._observe(t0, stamp.sec, stamp.nanosec)

    def _on_joint_states_read(self, t0, intake):
        """The usual joint_states message, already in q, v, tau and _seen_ns (StateIntake)."""
        if self._merged(intake.lookup):
            self._observe(t0, intake.stamp_sec, intake.stamp_nanosec)

    def _observe(self, t0, sec, nanosec):
        """Accelerations and wrenches of the state in q, v, tau (read from a message stamped
        (sec, nanosec) at perf_counter_ns t0), published."""
        t1 = time.perf_counter_ns()
        try:
            self._accelerations(self.q, self.v)
        except (ValueError, FloatingPointError) as exc:
            self._compute_failed(exc)
            return
        t2 = time.perf_counter_ns()
        # the accelerations go out first (what a controller waits for), then the wrenches
        self._publish_accelerations(sec, nanosec, self.q, self.v)
        stamp = time_msg(sec, nanosec)   # the wrench messages' (after the accelerations went out)
        t3 = time.perf_counter_ns()
        wrenches = self._wrenches(self.q, self.v)
        t4 = time.perf_counter_ns()
        self._publish_outputs(stamp, self.q, self.v, wrenches)
        # which outputs have subscribers, for the next message: after this one's outputs, so
        # the middleware calls do not evict the next computation's data from the caches
        self.listeners.refresh()
        t5 = time.perf_counter_ns()
        self._window_expected += 1
        if t5 - t0 > self.period_ns:
            self.missed += 1
            self._window_missed += 1
        self.stats.record((t2 - t1) + (t4 - t3), t5 - t0)

    def _merged(self, lookup):
        """A joint_states message was read (its joints' arrival noted in _seen_ns): True when
        it was complete, or when every joint now has a value received within
        joint_state_staleness (the merged state is computed)."""
        if len(lookup.iv) == len(self.jmap.state_names):
            return True   # a complete message
        age = time.monotonic_ns() - self._seen_ns[self.jmap.state_iv].min()
        if age <= self._staleness_ns:
            return True
        never = [n for n, iv in zip(self.jmap.state_names, self.jmap.state_iv)
                 if self._seen_ns[iv] == 0]
        self.counts["incomplete joint_states"] = self.counts.get("incomplete joint_states", 0) + 1
        self.warn_throttled("incomplete", "partial joint_states: waiting for "
                            + (f"joints {never[:5]}" if never else
                               f"fresher values (joint_state_staleness "
                               f"{self._staleness_ns * 1e-9:g} s)") + "; no output")
        return False

    # ------------------------------------------------------------------ simulate mode
    def _on_effort_command(self, data):
        """A serialized Float64MultiArray effort command (`joints` order)."""
        if not self.active:
            return
        try:
            self.jmap.read_command(message_caps.float64_array(data, self.jmap.max_names),
                                   self.command)
        except ValueError as exc:   # JointMapError, MessageSizeError
            self.reject("effort_commands", str(exc))
            return
        self._effort_command()

    def _new_command(self):
        self._have_command = True
        self._command_cycle = self.cycles
        self._command_expired = False

    def _on_cycle(self):
        if not self.active or self._follow_clock or self.paused:
            return
        t0 = time.perf_counter_ns()
        now = time.monotonic_ns()
        if self._start_ns is None:   # first cycle (or pacing resumed): anchor the schedule
            self._start_ns = schedule.anchor(now, self.cycles, self.period_ns)
            if not self.publish_clock:   # and the stamps: this state is at the system time now
                self._base_stamp_ns = time.time_ns() - self.cycles * self.period_ns
        # a wake-up of the timer is a tick: one before the anchor's phase moves the anchor
        # (it was counted as early, skipped, and its tick as missed: cycle_schedule.py)
        self._start_ns, due = schedule.ticks_due(now, self._start_ns, self.cycles,
                                                 self.period_ns)
        if self.halted:   # diverged: a halted plant steps nothing, so it misses no cycle
            self.cycles += due
            self.halted_cycles += due
            self._diverged_log()
            return
        late = due - 1
        catch_up = 0
        if late:
            self.missed += late
            self._window_missed += late
            catch_up = 0 if self.publish_clock else min(late, self.max_catch_up)
            if late > catch_up:   # give up the rest: re-anchor the schedule
                self._start_ns += (late - catch_up) * self.period_ns
                if not self.publish_clock:   # stamps stay the system time of the state
                    self._base_stamp_ns += (late - catch_up) * self.period_ns
        self._window_expected += late - catch_up
        self._run_cycle(catch_up, t0)
        # a step done after its deadline (the next tick) is missed too (cycle_schedule.py)
        if not self.halted and schedule.finished_late(time.monotonic_ns(), self._start_ns,
                                                      self.cycles, self.period_ns):
            self.missed += 1
            self._window_missed += 1

    def _run_cycle(self, catch_up, t0):
        """`catch_up` silent steps, then one cycle: outputs of the current state, one step."""
        if self.halted:   # diverged: nothing published until ~/reset (plant_interface.py)
            self.cycles += catch_up + 1
            self.halted_cycles += catch_up + 1
            self._diverged_log()
            return
        sim = self.sim
        if catch_up:
            try:
                for _ in range(catch_up):
                    self._apply_command()
                    if self.sensors is not None:   # the delay line counts every cycle
                        self.measure_silent_cycle()
                    self.plant.step()
                    self.cycles += 1
            except (ValueError, FloatingPointError) as exc:
                self._diverged(exc)
                if self.halted:
                    self.cycles += 1
                    return
        self._window_expected += catch_up + 1
        self._apply_command()
        # stamps: simulated time with publish_clock; else the schedule's time of this cycle
        # (a cycle whose step failed still takes its period: stamps never fall behind)
        if self.publish_clock:
            stamp = self._stamp(self._base_stamp_ns + round(sim.time * 1e9))
        else:
            stamp = self._stamp(self._base_stamp_ns + self.cycles * self.period_ns)
        t1 = time.perf_counter_ns()
        try:   # outputs of the current state; sim.qdd is self.qdd
            self.plant.evaluate()   # drive torques (limited) -> self.tau, qdd
            if not all_finite(self.qdd):
                raise FloatingPointError("non-finite accelerations")
        except (ValueError, FloatingPointError) as exc:
            self._compute_failed(exc)
            self.cycles += 1
            return
        wrenches = self._wrenches(sim.q, sim.v)
        t2 = time.perf_counter_ns()
        # The outputs of this state are filled now and published after the step: the step runs
        # right after the evaluation, while its data are still in the caches (publishing in
        # between made the compute ~20 % slower). What the step changes is kept: the state
        # (plant.q_before_step / v_before_step), qdd (overwritten by substeps), the prescribed
        # joints' forces (robot.last_prescribed_torques, overwritten by the step's stages).
        js = self.js_out
        js.set_stamp(stamp)
        self.jmap.state_positions(sim.q, js.position)
        self.jmap.state_values(sim.v, js.velocity)
        self.jmap.state_values(self.tau, js.effort)
        if self.sensors is not None:   # noise, delay, encoder: what a controller sees
            self.measure_joint_states(js.position, js.velocity)
        if self.prescribed_joints:   # their force along the prescribed motion
            self.prescribed_efforts(js.effort)
        if self.pub_elastic is not None:      # flexible links
            el = self.elastic_out
            el.set_stamp(stamp)
            el.position[:] = sim.q[self.robot.elastic_q_indices]
            el.velocity[:] = sim.v[self.robot.elastic_v_indices]
            el.effort[:] = self.tau[self.robot.elastic_v_indices]
        self._qdd_out[:] = self.qdd
        t3 = time.perf_counter_ns()
        failure = None
        try:
            self.plant.advance()   # from the accelerations just computed; stops, divergence
        except (ValueError, FloatingPointError) as exc:
            failure = exc   # the state is back at the one evaluated; its outputs still go out
        t4 = time.perf_counter_ns()
        q, v = self.plant.q_before_step, self.plant.v_before_step
        self.pub_js.publish(js.payload())   # serialized (nodes/cdr.py)
        if self.pub_elastic is not None:
            self.pub_elastic.publish(self.elastic_out.payload())
        self._publish_accelerations(stamp.sec, stamp.nanosec, q, v, self._qdd_out)
        self._publish_outputs(stamp, q, v, wrenches)
        if self.pub_odom is not None:   # floating base: ~/odom and /tf (plant_interface.py)
            self.publish_odometry(stamp, q, v)
        if failure is not None:
            self._diverged(failure)
        self.cycles += 1
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=self._stamp(self._base_stamp_ns +
                                                           round(sim.time * 1e9))))
        self.listeners.refresh()   # for the next cycle (see _on_joint_states)
        t5 = time.perf_counter_ns()
        self.stats.record((t2 - t1) + (t4 - t3), t5 - t0)

    @staticmethod
    def _stamp(ns):
        return time_msg(*divmod(ns, 1_000_000_000))

    # ------------------------------------------------------------------ diagnostics
    def _loop_residuals(self):
        """(position, velocity) loop-closure residuals of the latest state ((0, 0) for a tree,
        NaN when the library cannot tell)."""
        robot = self.robot
        if not robot.closure_names:
            return 0.0, 0.0
        residual = getattr(robot, "closure_residual", None)
        if residual is None:
            return float("nan"), float("nan")
        q, v = (self.sim.q, self.sim.v) if self.mode == "simulate" else (self.q, self.v)
        try:
            r = residual(q, v)
        except ValueError:
            return float("nan"), float("nan")
        return (float(r[0]), float(r[1])) if isinstance(r, tuple) else (float(r), float("nan"))

    def diagnostic_values(self):
        expected, missed = self._window_expected, self._window_missed
        self._window_expected = self._window_missed = 0
        fraction = missed / expected if expected else 0.0
        values = [("mode", self.mode), ("rate_hz", self.rate_hz),
                  ("missed cycles", self.missed),
                  ("missed cycles in period [%]", 100.0 * fraction),
                  ("singular configurations", self.singular),
                  ("failed wrench computations", self.wrench_failures)]
        position, velocity = self._loop_residuals()
        values += [("constraint residual", position),
                   ("constraint velocity residual", velocity)]
        if self.mode == "simulate":
            values += [("integrator", self.sim.integrator),
                       ("simulated time [s]", self.sim.time),
                       ("commands", "yes" if self._have_command else "none yet"),
                       ("saturated cycles", self.plant.limits.saturated if self.plant.limits
                        else 0),
                       ("diverged steps", self.diverged),
                       ("halted cycles", self.halted_cycles),
                       ("cycle priority", self.cycle_priority),
                       ("paused", "yes" if self.paused else "no")]
        level, message = diag.OK, ""
        if self.mode == "simulate":
            values += self.plant_diagnostics() + self.prescribed_diagnostics()
        if self.mode == "simulate" and self.halted:
            level, message = diag.ERROR, f"halted: the simulation {self.halt_reason}; call " \
                "~/reset"
        elif self.mode == "simulate" and self.diverged:
            level, message = diag.WARN, f"the simulation diverged {self.diverged} times " \
                "(reset since)"
        elif self.singular:
            level, message = diag.WARN, f"{self.singular} states without a solution"
        if fraction > 0.005 and level < diag.WARN:   # never hide an ERROR behind a WARN
            level, message = diag.WARN, f"missed {100 * fraction:.2f} % of the cycles"
        return level, message, values

    def apply_node_parameter(self, name, value):
        """Runtime parameter changes (base.DynamicsNode.apply_parameter): the plant's are
        applied at once in simulate mode; the others need a reconfigure."""
        if self.mode == "simulate" and name == "cycle_priority":
            return self._set_cycle_priority(value) if self.active else None
        if self.mode == "simulate":
            return self.plant_parameter(name, value)
        if name == "joint_state_staleness":
            self._staleness_ns = int(value * 1e9)
            return None
        if name == "rate_hz":   # observe: the deadline of a message
            self.rate_hz = value
            self.period_ns = int(round(1e9 / value))
            return None
        return NotImplemented


def main(args=None):
    return run(ForwardDynamicsNode, args, exit_process=True)


if __name__ == "__main__":
    sys.exit(main())
