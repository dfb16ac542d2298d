"""The simulate-mode plant of the forward dynamics node as a robot driver: command interfaces,
joint limits, divergence handling and the ~/reset service (a mixin of ForwardDynamicsNode; the
physics is in mbd_ros.plant, mbd_ros.drives and mbd_ros.limits).

Command interfaces (every commanded joint is in the mode of its latest command):

- effort:   ``~/effort_commands`` (std_msgs/Float64MultiArray in `joints` order) or
            ``joint_commands`` (sensor_msgs/JointState, effort field, every joint of `joints`).
            Times out after ``command_timeout`` (zero effort).
- position: ``~/position_commands`` (Float64MultiArray, `joints` order) or ``joint_commands``
            with the position field (names: any subset of `joints`; a velocity field of the
            same length is used as velocity feed-forward), as topic_based_ros2_control sends
            it (only when it changes): held until the next command.
- velocity: ``~/velocity_commands`` or ``joint_commands`` with the velocity field only: held.

Drives: PD + the model's compensation, inertia-normalised gains ``drive_kp`` (1/s^2) and
``drive_kd`` (1/s), one number or one per joint of `joints`, effort-limited
(mbd_ros.drives); or a servo's PD (``drive_model: pd``), an actuator lag, measurement noise /
delay / encoder on joint_states and a model mismatch (plant_drives.py, docs/plant.md "Drive
models"). Limits: the URDF position limits are hard stops, velocity and effort limits
bound the drive torques (``enforce_limits``, ``limit_efforts``; mbd_ros.limits).

Floating base (a free root joint: ``floating_base`` or a URDF floating root): the pose is
published as nav_msgs/Odometry on ``~/odom`` (frame ``odom_frame`` -> the root link, twist in
the root link frame) and as the transform odom -> root link on /tf (tf2_msgs/TFMessage, where
tf2_msgs is installed: a ROS 2 installation, or `mbd-ros build-interfaces` for the PyPI wheels).
``ground_contact``: compliant contact with the ground (contact points
from ``contact_links`` + ``contact_radius`` or every link's URDF <collision> geometry;
stiffness, damping, friction, slip velocity, ground height; mbd_ros.contact), integrator
substeps raised automatically for the contact springs, ``initial_base_pose`` (default: lifted
onto the ground); a physically impossible state (``check_physical_state``: deeper than
``max_penetration``, a quaternion flip, energy from nowhere) halts like a divergence.

Trajectories: ``~/follow_joint_trajectory`` (control_msgs/action/FollowJointTrajectory, as
joint_trajectory_controller serves it; follow_joint_trajectory.py), sampled each cycle into
position + velocity commands.

Command subscriptions: reliable (keep last 1; joint_commands 10); a transient-local publisher's
held command is taken by a watched transient-local subscription (held_command_subscription).

Simulator services: ``~/pause``, ``~/unpause``, ``~/step`` (std_srvs/Trigger; ``step_cycles``
cycles while paused) and ``~/set_state`` (rcl_interfaces/srv/SetParameters: positions and
velocities by joint name, validated, all or nothing); lockstep-safe with /clock (paused: no
/clock; a step of N cycles advances it by N periods). Start: with ``initial_positions`` unset,
joints whose zero is outside their URDF position limits start at the nearest limit
(forward_dynamics.py). Floating base: /tf at ``tf_rate_hz`` with the stamp of its cycle's
~/odom; ``frame_prefix`` on every frame id (docs/plant.md).

Divergence: a non-finite state or a joint speed above ``max_speed`` halts the plant at the last
sane state: it stops publishing joint_states and the other outputs, /diagnostics reports ERROR
until ``~/reset`` (std_srvs/Trigger: back to the initial state, commands dropped) is called or
a new ``initial_positions`` / ``initial_velocities`` is set; the error is logged at most once
per WARNING_PERIOD.
"""
from __future__ import annotations

import time

import numpy as np
from rcl_interfaces.msg import ParameterType
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..simulation.drives import EFFORT, MODE_NAMES, gain_vector
from ..robot.joint_map import JointMapError, duplicates
from ..robot.integrators import EXPLICIT_STABILITY
from ..simulation.limits import JointLimits
from ..simulation.physical_state import ENERGY_TOLERANCE
from ..simulation.plant import MAX_SPEED, Plant
from .base import MAX_BYTES_PER_ENTRY, WARNING_PERIOD, finite_vector, gains
from . import follow_joint_trajectory
from .message_caps import MessageSizeError, float64_array, joint_state_counts
from .plant_drives import PlantDrives
from .qos import COMMAND_QOS, LATCHED_COMMAND_QOS, PUBLISH_QOS

# |position| of a command, rad or m: beyond any joint's travel (a continuous joint has no limit
# to clip it to; kp times a huge error overflowed the drive torque)
MAX_COMMAND_POSITION = 1e6
# ~/set_state: a joint whose state differs from the request by more than this (relative to
# max(1, |value|)) after the loops and couplings are solved is reported as moved
SET_STATE_TOLERANCE = 1e-9
# s of simulated time without any command after which the plant says its effort-mode joints
# get zero effort (once per activation or ~/reset)
NO_COMMAND_NOTICE = 1.0


def static_boxes_error(value):
    """contact_boxes check: None, or what is wrong (naming the box and field)."""
    from ..simulation.contact import parse_static_boxes
    try:
        parse_static_boxes(list(value))
    except ValueError as exc:
        return str(exc)
    return None


class PlantInterface(PlantDrives):
    """Mixin: needs self.robot, self.jmap, self.rate_hz, self.param, self.declare, self.reject,
    self.get_logger of ForwardDynamicsNode."""

    # ------------------------------------------------------------------ parameters
    def declare_plant_parameters(self):
        self.declare("drive_kp", 400.0, "simulate: position gain of the emulated drives, "
                     "inertia-normalised (tau = b(q, v) + M_ii (kp e + kd de)), 1/s^2: one "
                     "number or one per joint of `joints`", gains, dynamic=True)
        self.declare("drive_kd", 40.0, "simulate: velocity gain of the emulated drives, 1/s "
                     "(2 sqrt(kp): critically damped)", gains, dynamic=True)
        self.declare("enforce_limits", True, "simulate: URDF position limits as hard stops and "
                     "velocity limits on the drive torques")
        self.declare("max_speed", MAX_SPEED, "simulate: a joint speed above this (rad/s or m/s)"
                     " is a divergence: the plant halts until ~/reset",
                     float_range=(1e-3, 1e9))
        self.declare("hold_initial_positions", False, "simulate: the drives start (and restart "
                     "after ~/reset) in position mode holding initial_positions, as a driver "
                     "that holds its position at power-up (false: effort mode, zero effort)")
        self.declare("step_cycles", 1, "simulate: cycles run by one ~/step call while paused "
                     "(std_srvs/Trigger carries no number)", int_range=(1, 1_000_000))
        self.declare_floating_parameters()
        self.declare_drive_parameters()   # drive models, sensors, mismatch (plant_drives.py)
        follow_joint_trajectory.declare_parameters(self)   # ~/follow_joint_trajectory

    def make_plant(self, q0, v0):
        """The Plant for the node's parameters (raises ValueError naming what is wrong)."""
        # model mismatch: the plant integrates its own robot (plant_drives.py); the node's
        # outputs are that robot's
        self.robot = self.plant_robot(self.robot)
        robot, jm = self.robot, self.jmap
        self._check_initial_velocities(v0)
        # flexible links: the highest free frequency bounds an explicit integrator's step
        self.highest_frequency = float(robot.highest_frequency()) \
            if hasattr(robot, "highest_frequency") and getattr(robot, "elastic_names", None) \
            else 0.0
        enforce = self.param("enforce_limits")
        limits = JointLimits(robot, position=enforce, velocity=enforce,
                             effort=self.param("limit_efforts"))
        n = len(jm.joints)
        kp = gain_vector(self.param("drive_kp"), n, "drive_kp")
        kd = gain_vector(self.param("drive_kd"), n, "drive_kd")
        contact = self.contact_force()
        self.contact = contact
        self.initial_base(q0, contact)   # in place: the caller's q0 becomes the initial state
        self._contact_q = q0.copy()      # the configuration of the contact's effective masses
        substeps = self.stable_substeps(self.rate_hz, self.param("integrator"))
        if contact is not None:   # impossible states halt like a divergence (docs/plant.md)
            plant = self.monitored_plant(contact, q0, v0, jm.joints, kp, kd, limits, substeps)
        else:
            plant = Plant(robot, 1.0 / self.rate_hz, self.param("integrator"), q0, v0,
                          joints=jm.joints, kp=kp, kd=kd, limits=limits,
                          max_speed=self.param("max_speed"), substeps=substeps)
        self.configure_drives(plant, q0)   # drive model, actuator lag, sensors
        return plant

    def monitored_plant(self, contact, q0, v0, joints, kp, kd, limits, substeps):
        """A Plant with ground contact whose steps are checked by a PhysicalStateMonitor
        (check_physical_state; the energy check is off with prescribed joints or loop
        closures, whose constraint forces do work)."""
        from ..simulation.physical_state import MonitoredPlant, PhysicalStateMonitor
        monitor = None
        if self.param("check_physical_state"):
            energy = None if (self.param("prescribed_joints") or self.robot.closure_names) \
                else ENERGY_TOLERANCE
            monitor = PhysicalStateMonitor(self.robot, contact,
                                           max_depth=self.param("max_penetration"),
                                           energy_tolerance=energy)
        return MonitoredPlant(self.robot, 1.0 / self.rate_hz, self.param("integrator"), q0, v0,
                              joints=joints, kp=kp, kd=kd, limits=limits,
                              max_speed=self.param("max_speed"), forces=[contact],
                              substeps=substeps, monitor=monitor)

    def _check_initial_velocities(self, v0):
        """With enforce_limits, an initial velocity beyond a joint's URDF <limit velocity> is
        refused (as an initial position beyond its position limits): ValueError naming the
        parameter, the joint and the limit."""
        if not self.param("enforce_limits"):
            return
        limit = np.asarray(self.robot.velocity_limits, dtype=float)
        jm = self.jmap
        for name, iv in zip(jm.state_names, jm.state_iv):
            vmax = limit[iv]
            if 0.0 < vmax < np.inf and abs(v0[iv]) > vmax:
                raise ValueError(f"initial_velocities: joint '{name}' starts at {v0[iv]:g}, "
                                 f"beyond its URDF <limit velocity> {vmax:g} (rad/s or m/s; "
                                 "enforce_limits is true)")

    # explicit integrators: largest stable omega * dt on an undamped oscillator
    # (robot/integrators.py); a margin, since the frequency is the one of the linearised robot
    # at its neutral configuration
    STABILITY_LIMITS = EXPLICIT_STABILITY
    STABILITY_MARGIN = 0.8
    MAX_SUBSTEPS = 100

    def stable_substeps(self, rate_hz, integrator):
        """Integrator steps per cycle: those of the flexible links (flexible_substeps), raised
        for the ground contact's springs (GroundContact.substeps_for, which also makes its
        dampers implicit for that step); logged when raised (docs/plant.md)."""
        substeps = self.flexible_substeps(rate_hz, integrator)
        contact = getattr(self, "contact", None)
        if contact is None:
            return substeps
        needed = contact.substeps_for(1.0 / rate_hz, integrator, self._contact_q, substeps)
        if needed > substeps:
            self.get_logger().info(
                f"ground contact: {needed} integrator substeps per cycle for the contact "
                f"springs on the lightest link ({integrator} at rate_hz {rate_hz:g}; substeps "
                f"parameter {int(self.param('substeps'))})")
        return needed

    def flexible_substeps(self, rate_hz, integrator):
        """Integrator steps per cycle: the `substeps` parameter, raised for a flexible robot
        until 2 pi f dt / substeps <= 0.8 x the integrator's stability limit (f its highest
        free frequency, robot.highest_frequency()). Logs the raise; raises ValueError naming
        the rate needed when more than MAX_SUBSTEPS would be needed (docs/plant.md)."""
        requested = int(self.param("substeps"))
        f = getattr(self, "highest_frequency", 0.0)
        limit = self.STABILITY_LIMITS.get(integrator)
        if not f or limit is None:   # rigid, or implicit Euler (unconditionally stable)
            return requested
        largest_dt = self.STABILITY_MARGIN * limit / (2.0 * np.pi * f)
        needed = int(np.ceil(1.0 / (rate_hz * largest_dt) - 1e-9))
        if needed > self.MAX_SUBSTEPS:
            raise ValueError(
                f"rate_hz {rate_hz:g} is too low for the flexible links: their highest free "
                f"frequency is {f:.4g} Hz and {integrator} needs rate_hz x substeps >= "
                f"{1.0 / largest_dt:.0f} Hz (rate_hz >= {1.0 / (largest_dt * self.MAX_SUBSTEPS):.0f}"
                " with the most substeps, 100; or integrator implicit_euler)")
        if needed > requested:
            self.get_logger().info(
                f"flexible links: highest free frequency {f:.4g} Hz; {integrator} at rate_hz "
                f"{rate_hz:g} would be unstable: {needed} integrator substeps per cycle "
                f"({rate_hz * needed:g} Hz; substeps parameter {requested})")
            return needed
        return requested

    def configure_plant_interface(self):
        """Subscriptions and the reset service of the plant (after make_plant)."""
        from std_srvs.srv import Trigger
        self.halted = False
        self.halt_reason = ""
        self._drive_index = {name: k for k, name in enumerate(self.jmap.joints)}
        self._drive_lookup = {}
        self.counts.update({"position_commands": 0, "velocity_commands": 0})
        self.subs.append(self.held_command_subscription(   # serialized: see _array_command
            Float64MultiArray, "~/position_commands", self._on_position_command, COMMAND_QOS))
        self.subs.append(self.held_command_subscription(
            Float64MultiArray, "~/velocity_commands", self._on_velocity_command, COMMAND_QOS))
        self.reset_service = self.create_service(Trigger, "~/reset", self._on_reset)
        # simulator services (docs/plant.md, "Simulator services")
        from rcl_interfaces.srv import SetParameters
        self.paused = False
        self._said_effort_ignored = False   # _effort_field_ignored says it once per configure
        self._state_index = None   # ~/set_state's names -> joint_states entries (this jmap)
        self.sim_services = [
            self.create_service(Trigger, "~/pause", self._on_pause),
            self.create_service(Trigger, "~/unpause", self._on_unpause),
            self.create_service(Trigger, "~/step", self._on_step),
            self.create_service(SetParameters, "~/set_state", self._on_set_state)]
        self.configure_floating()
        # control_msgs/action/FollowJointTrajectory server, or None (follow_joint_trajectory.py)
        self.trajectory_follower = follow_joint_trajectory.make_follower(self)

    def cleanup_plant_interface(self):
        follower = getattr(self, "trajectory_follower", None)
        if follower is not None:
            follower.destroy()
        self.trajectory_follower = None
        self.cleanup_floating()
        service = getattr(self, "reset_service", None)
        if service is not None:
            self.destroy_service(service)
        self.reset_service = None
        for service in getattr(self, "sim_services", []):
            self.destroy_service(service)
        self.sim_services = []

    # ------------------------------------------------------------------ held commands
    # A volatile subscription never receives what was published before it matched: a plant
    # started after a controller that published its held command once (transient local, as a
    # latched topic) would never get it. The held-command topics (position, velocity,
    # joint_commands) are watched every LATCHED_WATCH_PERIOD s; for each new transient-local
    # publisher a transient-local subscription takes its last sample, applied unless the
    # volatile subscription received a command on that topic meanwhile (a newer one), then is
    # destroyed. Watching instead of always subscribing transient local: a transient-local
    # subscription does not match volatile publishers, the usual ones, and would make them warn
    # about incompatible QoS.
    LATCHED_WATCH_PERIOD = 0.25   # s
    LATCHED_KEEP = 5.0            # s a transient-local subscription waits for its sample

    def held_command_subscription(self, msg_type, topic, callback, qos):
        """A reliable, volatile, serialized subscription of a held-command topic, whose
        transient-local publishers are watched (see above)."""
        if not hasattr(self, "_held"):
            self._held = {}
        state = {"type": msg_type, "callback": callback, "count": 0, "gids": set(),
                 "latched": None}

        def on_message(data):
            state["count"] += 1
            callback(data)
        sub = self.create_subscription(msg_type, topic, on_message, qos, raw=True)
        self._held[sub.topic_name] = state
        return sub

    def start_latched_watch(self):
        self.stop_latched_watch()
        self._latched_timer = self.create_timer(self.LATCHED_WATCH_PERIOD, self._watch_latched,
                                                clock=self.steady_clock)
        self._watch_latched()

    def stop_latched_watch(self):
        timer = getattr(self, "_latched_timer", None)
        if timer is not None:
            self.destroy_timer(timer)
        self._latched_timer = None
        for state in getattr(self, "_held", {}).values():
            self._drop_latched(state)
            state["gids"].clear()

    def _drop_latched(self, state):
        if state["latched"] is not None:
            self.destroy_subscription(state["latched"][0])
        state["latched"] = None

    def _watch_latched(self):
        from rclpy.qos import DurabilityPolicy
        now = time.monotonic()
        for topic, state in self._held.items():
            latched = state["latched"]
            if latched is not None and (latched[2] or now - latched[1] > self.LATCHED_KEEP):
                self._drop_latched(state)
            try:
                infos = self.get_publishers_info_by_topic(topic)
            except Exception:   # a graph query failing must not stop the plant
                continue
            new = {bytes(i.endpoint_gid) for i in infos
                   if i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL} - \
                state["gids"]
            if not new:
                continue
            state["gids"] |= new
            self._drop_latched(state)
            count = state["count"]
            box = [None, now, False]

            def on_latched(data, state=state, count=count, box=box):
                if box[2]:
                    return
                box[2] = True   # one sample per subscription; dropped by the next watch
                if state["count"] == count:   # nothing newer on the volatile subscription
                    state["callback"](data)
            box[0] = self.create_subscription(state["type"], topic, on_latched,
                                              LATCHED_COMMAND_QOS, raw=True)
            state["latched"] = box

    # ------------------------------------------------------------------ simulator services
    def _not_running(self, response):
        """A reason the simulator services cannot act now (in response), or None."""
        if not self.active:
            response.success, response.message = False, "the node is not active"
            return True
        return False

    def _on_pause(self, request, response):
        """~/pause (std_srvs/Trigger): no steps, no outputs, no /clock until ~/unpause (or
        ~/step N); simulated time stands still."""
        if self._not_running(response):
            return response
        was = self.paused
        self.paused = True
        response.success = True
        response.message = ("already paused" if was else "paused") + \
            f" at t = {self.sim.time:.9f} s (simulated)"
        if not was:
            self.get_logger().info(response.message)
        return response

    def _on_unpause(self, request, response):
        """~/unpause (std_srvs/Trigger): steps resume from the paused state; the schedule is
        re-anchored (simulated time goes on from where it stood; with wall-clock stamps the
        next state is stamped with the system time now, in lockstep with the next /clock)."""
        if self._not_running(response):
            return response
        was = self.paused
        self.paused = False
        self._start_ns = None          # _on_cycle re-anchors its schedule (and stamps)
        self._clock_base_ns = None     # _on_clock re-anchors on the next /clock
        response.success = True
        response.message = ("resumed" if was else "not paused") + \
            f" at t = {self.sim.time:.9f} s (simulated)"
        if was:
            self.get_logger().info(response.message)
        return response

    def _on_step(self, request, response):
        """~/step (std_srvs/Trigger): while paused, run `step_cycles` cycles now (each publishes
        its outputs, and /clock with publish_clock, as a running cycle does), then stay
        paused. std_srvs has no request carrying a number: the count is the `step_cycles`
        parameter (default 1; settable at runtime)."""
        if self._not_running(response):
            return response
        if not self.paused:
            response.success = False
            response.message = "not paused: call ~/pause first (a running plant steps by itself)"
            return response
        n = int(self.param("step_cycles"))
        done = 0
        for _ in range(n):
            if self.halted:
                break
            self._run_cycle(0, time.perf_counter_ns())
            done += 1
        response.success = done == n
        response.message = f"stepped {done} of {n} cycles (step_cycles) to t = " \
            f"{self.sim.time:.9f} s" + (f"; halted: the simulation {self.halt_reason}"
                                          if self.halted else "")
        return response

    def _on_set_state(self, request, response):
        """~/set_state (rcl_interfaces/srv/SetParameters, used as a typed list of values by
        joint name): each parameter's name is a joint_states name, its value the position (a
        double or integer) or [position] / [position, velocity] (a double array; velocity 0
        when absent). Joints not named keep their state. Every entry is checked (known joint,
        no duplicate, one or two values, finite, within the URDF position and velocity limits
        with enforce_limits); one bad entry refuses the whole request (nothing applied), with a
        reason per entry. Applied between two cycles: the next joint_states carries it. The
        drives keep their modes and commands; a halted plant resumes."""
        from rcl_interfaces.msg import SetParametersResult
        names = [p.name for p in request.parameters]
        reasons = self._set_state_reasons(request.parameters) if self.active else \
            ["the node is not active"] * len(names)
        ok = not any(reasons) and (self.active)
        notes = [""] * len(names)
        if ok:
            try:
                notes = self._apply_set_state(request.parameters)
            except (ValueError, FloatingPointError) as exc:
                ok = False
                reasons = [f"not applied: {exc}"] * len(names)
        for name, reason, note in zip(names, reasons, notes):
            response.results.append(SetParametersResult(
                successful=ok, reason=reason or (note or "set" if ok else "not applied: "
                                                 "another entry was refused")))
        if ok:
            self.get_logger().info(f"~/set_state: {len(names)} joints set at t = "
                                   f"{self.sim.time:.9f} s")
        return response

    def _set_state_values(self, value):
        """(position, velocity) of a ParameterValue, or an error text."""
        from rcl_interfaces.msg import ParameterType as T
        if value.type == T.PARAMETER_DOUBLE:
            values = [value.double_value]
        elif value.type == T.PARAMETER_INTEGER:
            values = [float(value.integer_value)]
        elif value.type == T.PARAMETER_DOUBLE_ARRAY:
            values = list(value.double_array_value)
        elif value.type == T.PARAMETER_INTEGER_ARRAY:
            values = [float(x) for x in value.integer_array_value]
        else:
            return "the value must be a double (position) or a double array [position] or " \
                   "[position, velocity]"
        if len(values) not in (1, 2):
            return f"{len(values)} values: give [position] or [position, velocity]"
        if not np.isfinite(values).all():
            return "NaN or inf refused"
        return (float(values[0]), float(values[1]) if len(values) == 2 else 0.0)

    def _set_state_reasons(self, parameters):
        """One error text (or '') per entry of a ~/set_state request."""
        jm = self.jmap
        index = getattr(self, "_state_index", None)
        if index is None:
            index = self._state_index = {n: k for k, n in enumerate(jm.state_names)}
        if not parameters:
            return []
        lower, upper = (np.asarray(x, dtype=float) for x in self.robot.position_limits)
        vmax = np.asarray(self.robot.velocity_limits, dtype=float)
        enforce = self.param("enforce_limits")
        seen = set()
        reasons = []
        for p in parameters[:jm.max_names + 1]:
            name = p.name
            if len(parameters) > jm.max_names:
                reasons.append(f"{len(parameters)} entries: more than {jm.max_names}")
                continue
            if name not in index:
                more = " ..." if len(jm.state_names) > 20 else ""
                reasons.append(f"unknown joint '{name[:80]}' (the joint_states names are "
                               f"{jm.state_names[:20]}{more})")
                continue
            if name in seen:
                reasons.append(f"joint '{name}' named twice")
                continue
            seen.add(name)
            values = self._set_state_values(p.value)
            if isinstance(values, str):
                reasons.append(f"joint '{name}': {values}")
                continue
            position, velocity = values
            iv = int(jm.state_iv[index[name]])
            if enforce and not lower[iv] <= position <= upper[iv]:
                reasons.append(f"joint '{name}': position {position:g} outside its URDF limits "
                               f"[{lower[iv]:g}, {upper[iv]:g}] (enforce_limits is true)")
            elif enforce and 0.0 < vmax[iv] < np.inf and abs(velocity) > vmax[iv]:
                reasons.append(f"joint '{name}': velocity {velocity:g} beyond its URDF <limit "
                               f"velocity> {vmax[iv]:g} (enforce_limits is true)")
            else:
                reasons.append("")
        return reasons + [""] * (len(parameters) - len(reasons))

    def _apply_set_state(self, parameters):
        """The checked ~/set_state entries into the simulator's state (time goes on). Returns
        one note per entry: '' when the joint has the requested state, else what it got (a
        closed loop's or a mimic coupling's other joints follow the named ones; where the
        named set over-determines the loops, the loops move some of them)."""
        jm, robot, sim = self.jmap, self.robot, self.sim
        index = self._state_index
        q, v = sim.q.copy(), sim.v.copy()
        requested = []
        for p in parameters:
            k = index[p.name]
            q[jm.state_iq[k]], v[jm.state_iv[k]] = self._set_state_values(p.value)
            requested.append((int(jm.state_iq[k]), int(jm.state_iv[k]), q[jm.state_iq[k]],
                              v[jm.state_iv[k]]))
        if getattr(robot, "mimic_joints", None):
            q, v = robot.apply_mimic(q, v)
        if robot.closure_names and hasattr(robot, "assemble"):
            # the named joints held, the others solved from the loops (the partition's
            # independent joints were held before: a named dependent joint was moved back and
            # the reply still said "set"; an outside audit)
            named = [p.name for p in parameters if p.name in robot.joint_names]
            try:
                q = np.asarray(robot.assemble(q, independent=named or None), dtype=float)
            except ValueError:   # more named joints than the loops leave free, or out of reach
                q = np.asarray(robot.assemble(q), dtype=float)
            v = np.asarray(robot.project_velocity(q, v), dtype=float)
        sim.reset(q, v, time=sim.time)
        self.reset_sensors(sim.q, sim.v)
        self.halted = False
        self.halt_reason = ""
        notes = []
        for iq, iv, position, velocity in requested:
            got_q, got_v = float(sim.q[iq]), float(sim.v[iv])
            moved = abs(got_q - position) > SET_STATE_TOLERANCE * max(1.0, abs(position)) or \
                abs(got_v - velocity) > SET_STATE_TOLERANCE * max(1.0, abs(velocity))
            notes.append(f"set to [{got_q:.9g}, {got_v:.9g}] (the loops or couplings do not "
                         f"admit [{position:.9g}, {velocity:.9g}] with the other joints "
                         "named)" if moved else "")
        return notes

    # ------------------------------------------------------------------ commands
    def _array_command(self, serialized, kind):
        """The values of a serialized Float64MultiArray command (sizes capped on the bytes,
        message_caps.py), checked: one finite value per joint of `joints`."""
        data = float64_array(serialized, self.jmap.max_names)
        n = len(self.jmap.joints)
        if len(data) != n:
            raise JointMapError(f"{kind} command has {len(data)} values, expected {n} (joints "
                                f"{self.jmap.joints})")
        values = np.asarray(data, dtype=float)
        if not np.isfinite(values).all():
            raise JointMapError(f"{kind} command contains NaN or inf")
        return values

    def _in_range(self, values, kind):
        """values, refused (JointMapError) when a position is beyond MAX_COMMAND_POSITION or a
        velocity beyond max_speed: a finite but huge velocity command overflowed the drive's
        integrated target and stalled the plant (every cycle NaN; an outside audit), and a
        velocity the plant halts at cannot be commanded."""
        bound = MAX_COMMAND_POSITION if kind == "position" else self.param("max_speed")
        if len(values) and not np.abs(values).max() <= bound:
            k = int(np.argmax(np.abs(values)))
            raise JointMapError(f"{kind} command {values[k]:.6g} beyond "
                                + ("MAX_COMMAND_POSITION" if kind == "position" else "max_speed")
                                + f" ({bound:g})")
        return values

    def _on_position_command(self, msg):
        if not self.active:
            return
        try:
            self.plant.drives.command_position(self._in_range(self._array_command(msg, "position"),
                                                              "position"))
        except (JointMapError, ValueError) as exc:
            self.reject("position_commands", str(exc))

    def _on_velocity_command(self, msg):
        if not self.active:
            return
        try:
            self.plant.drives.command_velocity(self._in_range(
                self._array_command(msg, "velocity"), "velocity"), q=self.sim.q)
        except (JointMapError, ValueError) as exc:
            self.reject("velocity_commands", str(exc))

    def _drive_indices(self, names):
        """(indices in `joints` of the known names, positions of those names in the message or
        None when all are known). Raises JointMapError (duplicates, joints without a drive)."""
        if len(names) > self.jmap.max_names:
            raise JointMapError(f"{len(names)} joint names: more than {self.jmap.max_names} "
                                "(the most a message may carry)")
        key = tuple(names)
        hit = self._drive_lookup.get(key)
        if hit is not None:
            return hit
        if len(set(key)) != len(key):
            raise JointMapError(f"duplicate joint names {duplicates(key)}")
        known = [k for k, n in enumerate(key) if n in self._drive_index]
        if len(known) != len(key) and not self.param("ignore_unknown_joints"):
            unknown = [n for n in key if n not in self._drive_index]
            raise JointMapError(f"joints without a drive (not in `joints`): {unknown[:5]}")
        idx = np.array([self._drive_index[key[k]] for k in known], dtype=np.int64)
        hit = (idx, None if len(known) == len(key) else np.array(known, dtype=np.int64))
        if len(self._drive_lookup) > 16:
            self._drive_lookup.clear()
        self._drive_lookup[key] = hit
        return hit

    @staticmethod
    def _field(values, n, field, src):
        if len(values) != n:
            raise JointMapError(f"{field} has {len(values)} values for {n} joint names")
        x = np.asarray(values, dtype=float)
        if not np.isfinite(x).all():
            raise JointMapError(f"{field} contains NaN or inf")
        return x if src is None else x[src]

    def _on_joint_command_data(self, data):
        """A serialized sensor_msgs/JointState command: its sizes checked on the bytes
        (message_caps.py: a message over a cap builds no object), then read as before."""
        if not self.active:
            return
        try:
            counts = joint_state_counts(data, self.jmap.max_names)
            if len(data) > MAX_BYTES_PER_ENTRY * max(1, max(counts)) + 4096:
                raise MessageSizeError(f"{len(data)} bytes for {max(counts)} entries (names "
                                       f"longer than {MAX_BYTES_PER_ENTRY} bytes)")
        except MessageSizeError as exc:
            self.reject("joint_commands", str(exc))
            return
        self._on_joint_command(deserialize_message(data, JointState))

    def _on_joint_command(self, msg):
        """sensor_msgs/JointState command: position (+ optional velocity feed-forward), else
        velocity, else effort (see the module docstring)."""
        if not self.active:
            return
        names = msg.name
        try:
            if len(msg.position):
                idx, src = self._drive_indices(names)
                pos = self._in_range(self._field(msg.position, len(names), "position", src),
                                     "position")
                vel = self._in_range(self._field(msg.velocity, len(names), "velocity", src),
                                     "velocity") if len(msg.velocity) else None
                self.plant.drives.command_position(pos, idx, vel)
                self._effort_field_ignored(msg, "position")
            elif len(msg.velocity):
                idx, src = self._drive_indices(names)
                vel = self._in_range(self._field(msg.velocity, len(names), "velocity", src),
                                     "velocity")
                self.plant.drives.command_velocity(vel, idx, q=self.sim.q)
                self._effort_field_ignored(msg, "velocity")
            elif len(msg.effort):
                self.jmap.read_named_command(names, msg.effort, self.command)
                self._effort_command()
            else:
                raise JointMapError("no position, velocity or effort values")
        except (JointMapError, ValueError) as exc:
            self.reject("joint_commands", str(exc))

    def _effort_field_ignored(self, msg, mode):
        """Say once that a joint_commands message with an effort field besides positions or
        velocities commanded `mode` and left the efforts unused: topic_based_ros2_control sends
        every command interface a joint declares, claimed or not, so the plant cannot tell a
        torque feed-forward from a stale value (docs/plant.md, "Command interfaces")."""
        if len(msg.effort) and not self._said_effort_ignored:
            self._said_effort_ignored = True
            self.get_logger().warning(
                f"joint_commands with {mode}s and efforts: a {mode} command, the effort field "
                "is not used (a JointState command is position, else velocity, else effort; "
                "said once)")

    def _effort_command(self):
        """self.command (nv,) holds a new effort command of every joint of `joints`."""
        self.plant.drives.command_effort(self.command[self.jmap.joint_iv])
        self._new_command()

    def _apply_command(self):
        """Effort commands older than command_timeout become zero (position and velocity
        commands are held, as a real driver holds them). A running ~/follow_joint_trajectory
        goal commands its sample at the plant's time first."""
        if self.trajectory_follower is not None:
            self.trajectory_follower.cycle()
        if not self._have_command:
            self._no_command_yet()
            return
        if not self.timeout_cycles:
            return
        if self.cycles - self._command_cycle > self.timeout_cycles and not self._command_expired:
            self._command_expired = True
            if (self.plant.drives.mode == EFFORT).any():
                self.plant.drives.zero_efforts()
                self.counts["stale commands"] += 1
                self.warn_throttled(
                    "stale command", f"no effort command for {self.param('command_timeout'):g}"
                    " s (command_timeout): dropped the last one, applying zero effort")

    def _no_command_yet(self):
        """Say once per start (activate, ~/reset) when joints in effort mode have had no command
        for NO_COMMAND_NOTICE s of simulated time: they get zero effort, and an arm falls."""
        if self._said_no_command or \
                self.cycles - self._waiting_since_cycle < NO_COMMAND_NOTICE * self.rate_hz:
            return
        self._said_no_command = True
        idle = int((self.plant.drives.mode == EFFORT).sum())
        if idle:
            self.get_logger().warning(
                f"no command yet after {NO_COMMAND_NOTICE:g} s: {idle} joints in effort mode get "
                "zero effort (hold_initial_positions: true holds initial_positions until the "
                "first command)")

    # ------------------------------------------------------------------ divergence and reset
    def _diverged(self, exc):
        """The step failed or left the plausible range: halt at the last sane state. (A
        singular configuration, ValueError, is not a divergence: the robot is stopped at its
        last good configuration, v = 0, and the plant goes on.)"""
        if isinstance(exc, ValueError) and not isinstance(exc, FloatingPointError):
            self.singular += 1
            self.sim.v[:] = 0.0
            self.warn_throttled("singular step", f"simulation step failed ({exc}): stopped at "
                                f"the last good configuration ({self.singular} so far)")
            return
        self.diverged += 1
        self.halted = True
        # "diverged at t = ... (...)", read after "simulation": the simulator's own text says it
        # already (it was repeated: "diverged at t = 1.184 s (the simulation diverged at ...")
        text = str(exc)
        own = "the simulation diverged at t ="
        self.halt_reason = text[len("the simulation "):] if text.startswith(own) else \
            f"diverged at t = {self.sim.time:.4f} s ({text})"
        if self.trajectory_follower is not None:   # a running goal ends (it cannot go on)
            self.trajectory_follower.stop("Current goal cancelled: the plant halted "
                                          f"({self.halt_reason})", hold=False)
        self.error_throttled("diverged", f"simulation {self.halt_reason}: halted at the last sane "
                             "state, no joint_states published; call ~/reset or set "
                             f"initial_positions ({self.diverged} times so far)")

    def _diverged_log(self):
        self.error_throttled("diverged", f"simulation {self.halt_reason}: halted, waiting for "
                             "~/reset or new initial_positions")

    def error_throttled(self, key, text, period=WARNING_PERIOD):
        now = time.monotonic()
        if now - self._last_warning.get(key, -1e9) >= period:
            self._last_warning[key] = now
            self.get_logger().error(text)

    def _on_reset(self, request, response):
        try:
            self.reset_plant()
        except Exception as exc:   # an unusable initial state: say so
            response.success = False
            response.message = f"reset failed: {exc}"
            return response
        response.success = True
        response.message = "reset to the initial state"
        self.get_logger().info("plant reset to the initial state")
        return response

    def reset_plant(self, q0=None, v0=None, time=None):
        """Back to the initial state (or q0, v0), drives in effort mode at zero (simulated
        time goes on from where it was, unless `time` is given)."""
        q0 = self.q0 if q0 is None else q0
        v0 = self.v0 if v0 is None else v0
        if getattr(self, "trajectory_follower", None) is not None:   # a running goal ends
            self.trajectory_follower.stop("Current goal cancelled: the plant was reset")
        self.plant.reset(q0, v0, time=self.sim.time if time is None else time)
        self.q0, self.v0 = np.array(q0, dtype=float), np.array(v0, dtype=float)
        if self.param("hold_initial_positions"):
            self.plant.drives.command_position(self.q0[self.plant.drives.iq])
        self.reset_sensors(self.sim.q, self.sim.v)
        self._have_command = False
        self._said_no_command = False
        self._waiting_since_cycle = getattr(self, "cycles", 0)
        self._command_expired = False
        self.halted = False
        self.halt_reason = ""

    def plant_diagnostics(self):
        drives = self.plant.drives
        modes = {name: int((drives.mode == k).sum()) for k, name in enumerate(MODE_NAMES)}
        values = [("drive modes", ", ".join(f"{n} {c}" for n, c in modes.items() if c)),
                  ("substeps", self.plant.substeps),
                  ("limit stops", self.plant.limits.stops if self.plant.limits else 0),
                  ("halted", self.halt_reason or "no"),
                  # steps through the one compiled call (docs/plant.md), or why not
                  ("compiled steps", self.plant.compiled_steps if not
                   self.plant.compiled_reason else f"0 ({self.plant.compiled_reason})")]
        contact = getattr(self, "contact", None)
        if contact is not None:   # at the last contact evaluation (an integrator stage)
            values += [("contact features touching", int(contact.in_contact.sum())),
                       ("deepest penetration [mm]",
                        f"{1e3 * max(0.0, contact.max_penetration()):.2f}")]
        return values + self.drive_diagnostics()

    # ------------------------------------------------------------------ runtime parameters
    def plant_parameter(self, name, value):
        """Apply a runtime change of a plant parameter at once; returns an error text, None
        when applied, or NotImplemented when it is not a plant parameter."""
        plant = self.plant
        n = len(self.jmap.joints)
        result = self.drive_parameter(name, value)   # drive models (plant_drives.py)
        if result is not NotImplemented:
            return result
        if name in ("drive_kp", "drive_kd"):
            values = value if isinstance(value, list) else [value]
            if len(values) not in (1, n):
                return f"{name} has {len(values)} values; give one, or one per joint of " \
                       f"`joints` ({n}: {self.jmap.joints})"
            try:
                plant.drives.set_gains(**{name[-2:]: values})
            except ValueError as exc:
                return str(exc)
            return None
        if name in ("initial_positions", "initial_velocities"):
            if value and len(value) != n:
                return f"{name} has {len(value)} values; it needs {n}, one per joint of " \
                       f"`joints`, in that order: {self.jmap.joints}"
            error = finite_vector()(value)
            if error:
                return error
            q0, v0 = self.q0.copy(), self.v0.copy()
            target, index = (q0, self.jmap.joint_iq) if name == "initial_positions" else \
                (v0, self.jmap.joint_iv)
            target[index] = value if value else 0.0
            try:
                if name == "initial_positions":   # forward_dynamics.py
                    self._start_within_limits(q0, explicit=bool(value))
                self._check_initial_velocities(v0)
                self.reset_plant(q0, v0)
            except ValueError as exc:
                return str(exc) if str(exc).startswith(name) else f"{name}: {exc}"
            self.get_logger().info(f"new {name}: plant reset")
            return None
        if name == "enforce_limits" or name == "limit_efforts":
            enforce = value if name == "enforce_limits" else self.param("enforce_limits")
            efforts = value if name == "limit_efforts" else self.param("limit_efforts")
            plant.limits = JointLimits(self.robot, position=enforce, velocity=enforce,
                                       effort=efforts)
            return None
        if name == "max_speed":
            plant.max_speed = float(value)
            return None
        if name == "hold_initial_positions":
            return None   # used at the next reset / activation
        if name == "command_timeout":
            self.timeout_cycles = int(round(value * self.rate_hz)) if value > 0 else 0
            return None
        if name == "integrator":
            try:
                substeps = self.stable_substeps(self.rate_hz, value)
            except ValueError as exc:
                return str(exc)
            plant.sim.integrator = value
            self._set_substeps(substeps)
            return None
        if name == "tf_rate_hz":
            if getattr(self, "pub_odom", None) is not None:
                self.set_tf_rate(float(value))
            return None
        if name == "step_cycles":
            return None   # read by each ~/step call
        if name == "max_catch_up":
            self.max_catch_up = int(value)
            return None
        if name == "rate_hz":
            try:
                substeps = self.stable_substeps(float(value), plant.sim.integrator)
            except ValueError as exc:
                return str(exc)
            self.plant.substeps = substeps
            self.set_plant_rate(float(value))
            return None
        return NotImplemented

    def _set_substeps(self, substeps):
        """A new number of integrator steps per cycle (same state, time and cycle step)."""
        plant = self.plant
        if substeps != plant.substeps:
            plant.substeps = substeps
            plant.sim.dt = plant.step_dt / substeps

    def set_plant_rate(self, rate_hz):
        """A new step rate at once: same state and simulated time, new step, new timer."""
        sim = self.sim
        old_period_ns = self.period_ns
        self.rate_hz = rate_hz
        self.period_ns = int(round(1e9 / rate_hz))
        self.plant.step_dt = 1.0 / rate_hz
        sim.dt = self.plant.step_dt / self.plant.substeps
        sim.reset(sim.q.copy(), sim.v.copy(), time=sim.time)
        if self.sensors is not None:   # the encoder's velocity divides by the cycle
            self.sensors.set_dt(self.plant.step_dt)
        timeout = self.param("command_timeout")
        self.timeout_cycles = int(round(timeout * rate_hz)) if timeout > 0 else 0
        if getattr(self, "pub_odom", None) is not None:
            self.set_tf_rate(self.param("tf_rate_hz"))
        if getattr(self, "timer", None) is not None:
            self.destroy_timer(self.timer)
            self._start_ns = None            # re-anchor the schedule
            # the cycle count restarts at 0: the time bases move to the current state's time
            # (following /clock the old base with the count at 0 re-simulated the time since
            # activation in one callback; an outside audit), and the effort command's age
            # carries over in the new period (command_timeout restarted at a rate change)
            elapsed_ns = self.cycles * old_period_ns
            if getattr(self, "_clock_base_ns", None) is not None:
                self._clock_base_ns += elapsed_ns
            if getattr(self, "_base_stamp_ns", None) is not None:
                self._base_stamp_ns += elapsed_ns
            since_command_ns = (self.cycles - self._command_cycle) * old_period_ns
            self.cycles = 0
            self._command_cycle = -int(round(since_command_ns / self.period_ns))
            # paced by the steady clock, as at activation (a ROS-clock timer would stop
            # under use_sim_time until /clock moves)
            self.timer = self.create_timer(1.0 / rate_hz, self._on_cycle,
                                           clock=self.steady_clock)

    # ------------------------------------------------------------------ floating base
    def declare_floating_parameters(self):
        S = ParameterType.PARAMETER_STRING_ARRAY
        D = ParameterType.PARAMETER_DOUBLE_ARRAY
        self.declare("ground_contact", False, "simulate: compliant contact with the ground "
                     "plane z = ground_height (mbd_ros.contact)")
        self.declare("contact_links", None, "simulate: links whose frame origin is a contact "
                     "sphere of contact_radius (e.g. the feet); empty: every link's URDF "
                     "<collision> geometry (spheres, boxes, cylinders, capsules, meshes' "
                     "bounding boxes)", type_=S)
        self.declare("contact_radius", 0.0, "simulate: radius of the contact_links spheres, m",
                     float_range=(0.0, 10.0))
        self.declare("contact_stiffness", -1.0, "simulate: normal stiffness, N/m (negative: "
                     "1 mm of penetration with the robot's weight on 3 points)")
        self.declare("contact_damping", -1.0, "simulate: normal damping, N s/m (negative: "
                     "critical for a third of the robot's mass)")
        self.declare("contact_friction", 0.8, "simulate: Coulomb friction coefficient",
                     float_range=(0.0, 10.0))
        self.declare("contact_slip_velocity", 0.1, "simulate: regularisation speed of the "
                     "Coulomb friction, m/s", float_range=(1e-6, 10.0))
        self.declare("ground_height", 0.0, "simulate: height of the ground plane, m",
                     float_range=(-1e3, 1e3))
        self.declare("contact_boxes", None, "simulate with ground_contact: static boxes (steps, "
                     "tables) in the odom frame, 7 numbers per box [x y z sx sy sz yaw] (centre, "
                     "size, m; yaw about z, rad); at most 100 boxes", static_boxes_error,
                     type_=D)
        self.declare("check_physical_state", True, "simulate with ground_contact: halt like a "
                     "divergence on a physically impossible state (a contact point deeper than "
                     "max_penetration, a quaternion flip, energy rising beyond the drive work)")
        self.declare("max_penetration", 0.05, "simulate with ground_contact: a contact point or "
                     "the base deeper than this below the ground is impossible, m",
                     float_range=(1e-4, 10.0))
        self.declare("substeps", 1, "simulate: integrator steps per cycle (the drive torques "
                     "held over them; 2-4 for stiff contacts)", int_range=(1, 100))
        self.declare("initial_base_pose", None, "simulate, floating base: [x y z qx qy qz qw] "
                     "of the root link in the odom frame (default: identity; with "
                     "ground_contact, lifted so that the lowest contact point touches the "
                     "ground)", finite_vector(7), type_=D)
        self.declare("odom_frame", "odom", "frame_id of ~/odom and of the /tf transform to the "
                     "root link (floating base)")
        self.declare("publish_tf", True, "floating base: publish odom -> root link on /tf "
                     "(tf2_msgs/TFMessage, where tf2_msgs is installed)")
        self.declare("tf_rate_hz", 100.0, "floating base: rate of the /tf transform, Hz, in "
                     "simulated time (at most one per cycle: rate_hz or more publishes every "
                     "cycle); ~/odom keeps the full rate_hz, and a /tf message carries the stamp "
                     "and pose of the ~/odom of its cycle", float_range=(0.001, 1e6))
        self.declare("frame_prefix", "", "prepended to the frame ids the plant publishes "
                     "(~/odom and /tf: odom_frame and the root link; the wrench frames), as "
                     "robot_state_publisher's frame_prefix, so several robots share one TF tree "
                     "(e.g. 'robot1/')")

    def floating_joint(self):
        """(q index, v index) of the root free joint, or None for a fixed-base robot."""
        robot = self.robot
        if robot.joint_types and robot.joint_types[0] == "floating":
            return int(robot.idx_q[0]), int(robot.idx_v[0])
        return None

    def contact_force(self):
        """The GroundContact force hook of the parameters, or None."""
        if not self.param("ground_contact"):
            return None
        from ..simulation.collision import collision_points
        from ..simulation.contact import ContactPoint, GroundContact
        links = self.param("contact_links")
        if links:
            points = [ContactPoint(link, (0.0, 0.0, 0.0), self.param("contact_radius"))
                      for link in links]
        else:   # every link's <collision> geometry (meshes: their bounding boxes)
            points, notes = collision_points(self.robot, self.robot_xml())
            for note in notes[:5]:
                self.get_logger().warning(f"ground_contact: {note}")
            if len(notes) > 5:
                self.get_logger().warning(f"ground_contact: {len(notes) - 5} more <collision> "
                                          "elements skipped")
            if not points:
                raise ValueError("ground_contact: the URDF has no <collision> geometry the "
                                 "plant can use (primitives, or STL/OBJ meshes of a URDF file); "
                                 "declare contact_links (and contact_radius)")
        options = {}
        for name, key in (("contact_stiffness", "stiffness"), ("contact_damping", "damping")):
            if self.param(name) >= 0.0:
                options[key] = self.param(name)
        options["boxes"] = self.param("contact_boxes") or ()
        return GroundContact(self.robot, points, friction=self.param("contact_friction"),
                             slip_velocity=self.param("contact_slip_velocity"),
                             ground_height=self.param("ground_height"), **options)

    def initial_base(self, q0, contact):
        """Set the free joint of q0 from initial_base_pose, or lift it onto the ground."""
        root = self.floating_joint()
        if root is None:
            return
        iq = root[0]
        pose = self.param("initial_base_pose")
        if pose:
            quat = np.asarray(pose[3:7], dtype=float)
            if not 0.5 < np.linalg.norm(quat) < 2.0:
                raise ValueError("initial_base_pose: the quaternion [qx qy qz qw] must be "
                                 "(close to) unit")
            q0[iq:iq + 3] = pose[:3]
            q0[iq + 3:iq + 7] = quat / np.linalg.norm(quat)
        elif contact is not None:
            # lowest contact point on the ground
            contact(0.0, q0, np.zeros(self.robot.nv))
            lowest = float(np.max(contact.penetration))
            q0[iq + 2] += lowest

    def configure_floating(self):
        """~/odom and /tf publishers for a floating-base robot."""
        self.pub_odom = self.pub_tf = None
        root = self.floating_joint()
        if root is None:
            return
        from nav_msgs.msg import Odometry
        prefix = self.param("frame_prefix")
        self._odom = Odometry()
        self._odom.header.frame_id = prefix + self.param("odom_frame")
        self._odom.child_frame_id = prefix + self.robot.link_names[0]
        self.set_tf_rate(self.param("tf_rate_hz"))
        self.pub_odom = self.create_lifecycle_publisher(Odometry, "~/odom", PUBLISH_QOS)
        if self.param("publish_tf"):
            try:
                from geometry_msgs.msg import TransformStamped
                from tf2_msgs.msg import TFMessage
            except ImportError:
                self.get_logger().warning("tf2_msgs is not installed: no odom -> "
                                          f"{self.robot.link_names[0]} transform on /tf "
                                          "(~/odom has the pose; build tf2_msgs with "
                                          "`mbd-ros build-interfaces`)")
            else:
                self._tf = TransformStamped()
                self._tf.header.frame_id = self._odom.header.frame_id
                self._tf.child_frame_id = self._odom.child_frame_id
                self._tf_msg = TFMessage(transforms=[self._tf])
                self.pub_tf = self.create_lifecycle_publisher(TFMessage, "/tf", PUBLISH_QOS)

    def cleanup_floating(self):
        for attr in ("pub_odom", "pub_tf"):
            pub = getattr(self, attr, None)
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
            setattr(self, attr, None)

    def publish_odometry(self, stamp, q=None, v=None):
        """nav_msgs/Odometry of the free joint (pose in the odom frame; twist in the root link
        frame, as the free joint's v) and the odom -> root link transform, of the state (q, v)
        (default the simulator's)."""
        iq, iv = self.floating_joint()
        if q is None:
            q, v = self.sim.q, self.sim.v
        odom = self._odom
        odom.header.stamp = stamp
        p, o = odom.pose.pose.position, odom.pose.pose.orientation
        p.x, p.y, p.z = float(q[iq]), float(q[iq + 1]), float(q[iq + 2])
        o.x, o.y, o.z, o.w = (float(x) for x in q[iq + 3:iq + 7])
        lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
        lin.x, lin.y, lin.z = float(v[iv]), float(v[iv + 1]), float(v[iv + 2])
        ang.x, ang.y, ang.z = float(v[iv + 3]), float(v[iv + 4]), float(v[iv + 5])
        self.pub_odom.publish(odom)
        if self.pub_tf is None:
            return
        # /tf at tf_rate_hz of the stamps' time base: the first cycle of each tf period
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        if self._tf_period_ns > 0:
            slot = ns // self._tf_period_ns
            if slot == self._tf_slot:
                return
            self._tf_slot = slot
        tf = self._tf
        tf.header.stamp = stamp
        t, r = tf.transform.translation, tf.transform.rotation
        t.x, t.y, t.z = p.x, p.y, p.z
        r.x, r.y, r.z, r.w = o.x, o.y, o.z, o.w
        self.pub_tf.publish(self._tf_msg)

    def set_tf_rate(self, rate_hz):
        """/tf every 1 / rate_hz s of the stamps (0 period: every cycle)."""
        self._tf_period_ns = int(round(1e9 / rate_hz)) if rate_hz < self.rate_hz else 0
        self._tf_slot = None
