"""Inverse dynamics node: joint torques for controllers.

    ros2 run mbd_ros inverse_dynamics --ros-args --params-file config/arm7_computed_torque.yaml
    python -m mbd_ros.nodes.inverse_dynamics --ros-args -p urdf_path:=arm7.urdf -p mode:=gravity

Subscribes ``joint_states`` (sensor_msgs/JointState: position required; velocity required
except in gravity mode) and ``~/reference`` (trajectory_msgs/JointTrajectory: its first point's
positions, and optionally velocities and accelerations, by joint name; every joint of
``joints`` must be in it). ``mode``:

- ``gravity``:          tau = g(q)                                 (holds the robot still)
- ``feedforward``:      tau = ID(q_ref, qd_ref, qdd_ref)           (the reference's torque)
- ``computed_torque``:  qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q),
                        tau = ID(q, qd, qdd_cmd)                   (kp, kd per joint)
- ``task_space``:       Cartesian impedance of ``task_link`` (nodes/task_space.py):
                        tau = J^T (K e + D (twist_target - J v) + w_I) + b(q, v) + N^T tau_0,
                        e = [p_target - p; log(R_target R^T)] (root axes), tau_0 = the posture
                        term k_n (q_posture - q) - d_n v, N^T = 1 - J^T Lambda J M^-1

task_space reads the target pose on ``~/target_pose`` (geometry_msgs/PoseStamped in the root
frame: frame_id empty or the root frame, else the message is dropped and counted as "rejected
target_pose"), an optional feed-forward twist on ``~/target_twist`` (geometry_msgs/TwistStamped,
root axes about the link origin; dropped after ``reference_timeout``) and the null-space posture
on ``~/reference`` (first point's positions; default: the first measured configuration). Until
a target arrives it holds the link's first measured pose. It publishes the 6-number error on
``~/task_error`` (geometry_msgs/TwistStamped: linear = position error (m), angular = orientation
error (rad, rotation vector), root axes, stamped with the joint state's stamp). Closed-loop,
mimic and flexible robots are refused at configure. See docs/nodes.md, "task_space".

ID = robot.inverse_dynamics: the drive torques, including the passive joint forces of the URDF
<dynamics>, and for a closed-loop robot the torques of its actuated joints. Until a reference
arrives, feedforward and computed_torque hold the first measured configuration.

Publishes ``~/effort_commands`` (std_msgs/Float64MultiArray in the order of ``joints``, the
ros2_control forward command controller format) and ``~/efforts`` (sensor_msgs/JointState with
names and efforts, stamped with the joint state's stamp), clipped to the URDF effort limits if
``limit_efforts``. ``rate_hz`` 0 (default): one output per joint_states message; > 0: a timer
at that rate computes from the latest joint state. /diagnostics adds the tracking error.

A reference older than ``reference_timeout`` (s, by arrival; default 0.5, 0: never) is dropped
with a warning (counted as "stale references"): the controller then holds the configuration
measured at that moment, as it does before the first reference, instead of tracking a stale
target after its publisher died. Runtime parameter changes: ``kp``, ``kd`` (lengths checked
against ``joints``), ``mode`` (not to or from task_space), ``rate_hz``, ``reference_timeout``
and the task_space gains (``task_stiffness``, ``task_damping``, ``task_damping_ratio``,
``nullspace_stiffness``, ``nullspace_damping``, ``task_integral_gain``, ``task_integral_limit``)
apply at once; the others
are refused with a reason (they are read at configure).
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..robot.joint_map import JointMap, JointMapError
from . import diagnostics as diag
from . import task_space as ts
from . import trajectory_reader
from .base import DynamicsNode, gains, one_of, run
from .messages import EffortCommandOut, JointStateOut
from .qos import PUBLISH_QOS, SUBSCRIBE_QOS

MODES = ("gravity", "feedforward", "computed_torque", "task_space")
TASK_GAINS = ("task_stiffness", "task_damping", "nullspace_stiffness", "nullspace_damping",
              "task_integral_gain", "task_integral_limit", "task_damping_ratio")
_EMPTY = np.zeros(0)


class InverseDynamicsNode(DynamicsNode):

    def __init__(self, node_name="inverse_dynamics", **kwargs):
        super().__init__(node_name, **kwargs)
        self.counts = {"joint_states": 0}

    def declare_node_parameters(self):
        self.declare("mode", "gravity", "gravity: tau = g(q); feedforward: tau = ID(reference);"
                     " computed_torque: tau = ID(q, qd, qdd_ref + kd (qd_ref - qd) + kp (q_ref - "
                     "q)); task_space: Cartesian impedance of task_link (docs/nodes.md)",
                     one_of(*MODES))
        self.declare("kp", 100.0, "computed_torque: position gain(s), 1/s^2: one number, or one "
                     "per joint of `joints`", gains, dynamic=True)
        self.declare("kd", 20.0, "computed_torque: velocity gain(s), 1/s (2 sqrt(kp): critically "
                     "damped)", gains, dynamic=True)
        self.declare("rate_hz", 0.0, "0: compute on every joint_states message; > 0: compute at "
                     "this rate from the latest joint state, Hz", float_range=(0.0, 20000.0))
        self.declare("reference_timeout", 0.5, "feedforward / computed_torque: a reference "
                     "older than this (s, by arrival) is dropped with a warning and the "
                     "controller holds the measured configuration (0: never)",
                     float_range=(0.0, 3600.0))
        # ---- task_space (nodes/task_space.py) ----
        self.declare("task_link", "", "task_space: the link whose pose is controlled (any of the "
                     "robot's links, welded ones included)")
        self.declare("task_stiffness", [1500.0, 1500.0, 1500.0, 30.0, 30.0, 30.0],
                     "task_space: K, 6 numbers [linear x y z (N/m); angular x y z (N m/rad)], "
                     "root axes", ts.six_gains, dynamic=True)
        self.declare("task_damping", [120.0, 120.0, 120.0, 0.2, 0.2, 0.2], "task_space: D, 6 "
                     "numbers [linear (N s/m); angular (N m s/rad)]", ts.six_gains, dynamic=True)
        self.declare("task_damping_ratio", 0.0, "task_space: 0: D = task_damping; > 0: D "
                     "designed at every cycle so that each mode of the task-space dynamics has "
                     "this damping ratio (from task_stiffness and the operational-space "
                     "inertia; task_damping unused)", float_range=(0.0, ts.MAX_DAMPING_RATIO))
        self.declare("nullspace_stiffness", 1.0, "task_space: k_n of the posture term, N m/rad",
                     float_range=(0.0, 1e6))
        self.declare("nullspace_damping", -1.0, "task_space: d_n of the posture term, N m s/rad "
                     "(negative: 2 sqrt(nullspace_stiffness))", float_range=(-1.0, 1e6))
        self.declare("task_integral_gain", [0.0] * 6, "task_space: K_I, 6 numbers [linear "
                     "(N/(m s)); angular (N m/(rad s))]; 0: no integral term", ts.six_gains,
                     dynamic=True)
        self.declare("task_integral_limit", [50.0, 50.0, 50.0, 5.0, 5.0, 5.0], "task_space: "
                     "bound of the integral wrench per component [N; N m]", ts.six_gains,
                     dynamic=True)

    # ------------------------------------------------------------------ configure
    def configure_node(self):
        self.read_common_parameters()
        robot = self.robot
        self.mode = self.param("mode")
        self.rate_hz = self.param("rate_hz")
        self.jmap = jm = JointMap(robot, self.param("joints") or None,
                                  self.param("ignore_unknown_joints"))
        jm.warm_up()   # read_state's kernel compiled before the first message
        n, nv = len(jm.joints), robot.nv
        self.kp = self._gain_vector("kp", n)
        self.kd = self._gain_vector("kd", n)
        # Data
        self.q = robot.neutral()
        self.v = np.zeros(nv)
        self.zero = np.zeros(nv)
        self.qdd_cmd = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.q_ref = robot.neutral()
        self.v_ref = np.zeros(nv)
        self.a_ref = np.zeros(nv)
        self.q_ff = robot.neutral()
        self.v_ff = np.zeros(nv)
        self.e = np.zeros(n)         # q_ref - q on the commanded joints
        self.ed = np.zeros(n)        # qd_ref - qd
        self.tmp = np.zeros(n)
        self.out_tau = np.zeros(n)
        self.limit = np.take(np.asarray(robot.effort_limits, dtype=float), jm.joint_iv) \
            if self.param("limit_efforts") else None
        # Closed loops: the commanded accelerations of the actuated joints are completed to a
        # loop-consistent qdd by the library (robot.project_acceleration(q, v, qdd): dependent
        # components solved from G qdd + gamma = 0, like project_velocity); without it the
        # inverse dynamics of a closed-loop robot refuses inconsistent accelerations.
        self._couple = getattr(robot, "couple_in_place", None)   # [mimic joints]
        self._project = getattr(robot, "project_acceleration", None) \
            if robot.closure_names else None
        # outputs
        self.cmd_out = EffortCommandOut(jm.joints)
        self.eff_out = JointStateOut(jm.joints, position=False, velocity=False, effort=True)
        self.pub_cmd = self.create_lifecycle_publisher(Float64MultiArray, "~/effort_commands",
                                                       PUBLISH_QOS)
        self.pub_eff = self.create_lifecycle_publisher(JointState, "~/efforts", PUBLISH_QOS)
        self.subs = [self.subscribe_joint_states(self._on_joint_states, direct=(
            {"jmap": jm, "q": self.q, "v": self.v, "tau": None,
             "need_velocity": self.mode != "gravity"}, self._on_joint_states_read))]
        if self.mode != "gravity":
            self.counts["reference"] = 0
            self.subs.append(self._subscribe_reference())
        self.law = None
        if self.mode == "task_space":
            self._configure_task_space()
        self.timer = None
        self._reference_timeout_ns = int(self.param("reference_timeout") * 1e9)
        self.counts["stale references"] = 0
        self._warm_up()

    def _configure_task_space(self):
        """The Cartesian impedance law, its inputs (~/target_pose, ~/target_twist) and its
        error output (~/task_error); the robot kinds it refuses are refused here."""
        robot, jm = self.robot, self.jmap
        ts.check_robot(robot)
        if not self.param("task_link"):
            raise ValueError("mode task_space needs task_link (the link whose pose is "
                             f"controlled; links: {', '.join(robot.link_names[-4:])}, ...)")
        link = ts.check_link(robot, self.param("task_link"), "task_link")
        self.law = ts.CartesianImpedance(
            robot, link, self.param("task_stiffness"), self.param("task_damping"),
            self.param("nullspace_stiffness"), self._nullspace_damping(),
            self.param("task_integral_gain"), self.param("task_integral_limit"),
            joint_iq=jm.joint_iq, joint_iv=jm.joint_iv,
            damping_ratio=self.param("task_damping_ratio"))
        # the frame of target poses: the URDF root link (fixed base), or the world the free
        # joint moves in (floating base)
        self.root_frame = "world" if "floating" in robot.joint_types[:1] else \
            robot.link_names[0]
        self.counts["target_pose"] = 0
        self.counts["target_twist"] = 0
        self.counts["stale target twists"] = 0
        self.subs.append(self.create_subscription(PoseStamped, "~/target_pose",
                                                  self._on_target_pose, SUBSCRIBE_QOS))
        self.subs.append(self.create_subscription(TwistStamped, "~/target_twist",
                                                  self._on_target_twist, SUBSCRIBE_QOS))
        self.error_msg = TwistStamped()
        self.error_msg.header.frame_id = self.root_frame
        self.pub_error = self.create_lifecycle_publisher(TwistStamped, "~/task_error",
                                                         PUBLISH_QOS)
        self.target_rotation = np.eye(3)
        self.have_target = self.task_started = False   # (activate_node resets them)
        self._twist_ns = self._task_last_ns = 0
        self._task_err = [0.0, 0.0]

    def _nullspace_damping(self):
        d = self.param("nullspace_damping")
        return None if d < 0 else d

    def _gain_vector(self, name, n):
        value = self.param(name)
        values = [float(x) for x in (value if isinstance(value, list) else [value])]
        if len(values) == 1:
            values = values * n
        if len(values) != n:
            raise ValueError(f"{name} has {len(values)} values; give one, or one per joint of "
                             f"`joints` ({n}: {self.jmap.joints})")
        return np.array(values)

    def _warm_up(self):
        """One computation, so numba's kernels are compiled or loaded before the first message."""
        self.robot.compile_c_calls()   # C-level FD/ID entries (mbd_ros/fastcall), if it has them
        self._reset_reference()
        self.have_reference = False
        self.holding = True
        # task_space: link_jacobian's and mass_matrix_inverse's C-level entries are installed
        # at their second call (~0.1 s each): done here, not in the first cycles (a measured
        # 112 ms stall let the plant run on a stale command)
        for _ in range(3 if self.mode == "task_space" else 1):
            self._compute()

    def cleanup_node(self):
        for sub in getattr(self, "subs", []):
            self.destroy_subscription(sub)
        self.subs = []
        for attr in ("pub_cmd", "pub_eff", "pub_error"):
            pub = getattr(self, attr, None)
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
            setattr(self, attr, None)

    # ------------------------------------------------------------------ activate
    def activate_node(self):
        self.have_state = False
        self.have_reference = False
        self.holding = False
        self.state_stamp = None
        self._err_max = 0.0
        self._err_sq = 0.0
        self._err_n = 0
        self.saturated = 0
        self.failed = 0
        self._reference_ns = 0
        self._reference_expired = False
        # task_space: no target yet (the first cycle holds the measured pose)
        self.have_target = False
        self.task_started = False
        self._twist_ns = 0
        self._task_last_ns = 0
        self._task_err = [0.0, 0.0]     # max position / orientation error since diagnostics
        if self.law is not None:
            self.law.singular_count = 0
        if self.rate_hz > 0:
            self.timer = self.create_timer(1.0 / self.rate_hz, self._on_timer)

    def deactivate_node(self):
        if getattr(self, "timer", None) is not None:
            self.destroy_timer(self.timer)
            self.timer = None

    # ------------------------------------------------------------------ inputs
    def _on_joint_states(self, msg):
        """A joint_states message the StateIntake did not read (new names, bad or stale
        values, not active: everything but the usual message): read and checked."""
        if not self.active:
            return
        t0 = time.perf_counter_ns()
        stamp = msg.header.stamp
        if self.reject_if_stale("joint_states", stamp):
            return
        try:
            self.jmap.read_state(msg.name, msg.position, msg.velocity, [], self.q, self.v,
                                 need_velocity=self.mode != "gravity")
        except JointMapError as exc:
            self.reject("joint_states", str(exc))
            return
        self._state_read(stamp, t0)

    def _on_joint_states_read(self, t0, intake):
        """The usual joint_states message, already in q and v (StateIntake)."""
        self._state_read(intake.stamp(), t0)

    def _state_read(self, stamp, t0):
        """A state stamped `stamp` is in q, v (read at perf_counter_ns t0)."""
        self.state_stamp = stamp
        if not self.have_state:
            self.have_state = True
        if self.rate_hz == 0:
            self._cycle(stamp, t0)

    def _on_reference(self, data):
        """A serialized JointTrajectory: its names and first point only are read (from the
        bytes, trajectory_reader.py), so its cost does not grow with its other points."""
        if not self.active:
            return
        try:
            head = trajectory_reader.read_header(data, self.jmap.max_names, 2 ** 32)
            if not head.n_points:
                raise JointMapError("the trajectory has no points")
            p = trajectory_reader.read_points(data, head, max_points=1)
            self.jmap.read_point(head.joint_names, p.positions[0],
                                 _EMPTY if p.velocities is None else p.velocities[0],
                                 _EMPTY if p.accelerations is None else p.accelerations[0],
                                 self.q_ref, self.v_ref, self.a_ref, self.jmap.joints)
        except ValueError as exc:   # JointMapError, TrajectoryFormatError
            self.reject("reference", str(exc))
            return
        self.have_reference = True
        self.holding = False
        self._reference_ns = time.monotonic_ns()
        self._reference_expired = False
        if self.law is not None and self.task_started:   # task_space: the null-space posture
            self.law.set_posture(self.q_ref)

    def _on_target_pose(self, msg):
        """task_space: a target pose of task_link in the root frame."""
        if not self.active:
            return
        frame = msg.header.frame_id
        if frame not in ("", self.root_frame):
            self.reject("target_pose", f"frame_id '{frame[:80]}' is not the root frame "
                        f"'{self.root_frame}' (target poses are in the root frame)")
            return
        p, o = msg.pose.position, msg.pose.orientation
        position = (p.x, p.y, p.z)
        try:
            if not all(math.isfinite(x) for x in position):
                raise ValueError("position is not finite")
            if math.sqrt(sum(x * x for x in position)) > ts.MAX_TARGET_DISTANCE:
                raise ValueError(f"position is more than {ts.MAX_TARGET_DISTANCE:g} m from the "
                                 "root")
            ts.quaternion_matrix(o.x, o.y, o.z, o.w, out=self.target_rotation)
        except ValueError as exc:
            self.reject("target_pose", str(exc))
            return
        self.law.set_target(position, self.target_rotation)
        if not self.have_target:
            self.get_logger().info(f"first target pose of {self.law.link} received")
        self.have_target = True

    def _on_target_twist(self, msg):
        """task_space: the feed-forward twist of task_link (root axes, about its origin)."""
        if not self.active:
            return
        t = msg.twist
        twist = (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z)
        if not all(math.isfinite(x) for x in twist):
            self.reject("target_twist", "not finite")
            return
        if max(abs(x) for x in twist) > ts.MAX_TARGET_SPEED:
            self.reject("target_twist", f"a component beyond {ts.MAX_TARGET_SPEED:g} m/s or "
                        "rad/s")
            return
        self.law.set_twist(twist)
        self._twist_ns = time.monotonic_ns()

    def _subscribe_reference(self):
        trajectory_reader.warm_up()
        return self.create_subscription(JointTrajectory, "~/reference", self._on_reference,
                                        SUBSCRIBE_QOS, raw=True)   # serialized: see _on_reference

    def _check_reference_age(self):
        """Reference timeout: a reference older than reference_timeout is dropped (its
        publisher died or stalled); the controller then holds the measured configuration."""
        if not self.have_reference or not self._reference_timeout_ns:
            return
        if time.monotonic_ns() - self._reference_ns > self._reference_timeout_ns:
            self.have_reference = False
            self.holding = False          # _compute holds the configuration measured now
            self.counts["stale references"] += 1
            self.warn_throttled("stale reference", "no reference for "
                                f"{self._reference_timeout_ns * 1e-9:g} s (reference_timeout):"
                                " dropped it, holding the measured configuration")

    def _on_timer(self):
        if not self.active or not self.have_state:
            return
        t0 = time.perf_counter_ns()
        age = self.stale(self.state_stamp, self.now_ns()) \
            if self._max_age_ns else None
        if age is not None:
            self.warn_throttled("no state", f"the latest joint state is {age:.3f} s old: "
                                "no output")
            return
        self._cycle(self.state_stamp, t0)

    # ------------------------------------------------------------------ the computation
    def _reset_reference(self):
        """Hold the measured configuration: q_ref = q, zero velocity and acceleration."""
        self.q_ref[:] = self.q
        self.v_ref[:] = 0.0
        self.a_ref[:] = 0.0

    def _compute_task_space(self):
        """tau = the Cartesian impedance law at (q, v) (nodes/task_space.py)."""
        law = self.law
        if not self.task_started:      # the first state: hold its pose (unless targeted)
            self.task_started = True
            if self.have_target:
                law.set_posture(self.q)
                law.integral[:] = 0.0
            else:
                law.hold(self.q)
                self.get_logger().info("no target pose yet: holding the measured pose of "
                                       f"{law.link}")
            if self.have_reference:
                law.set_posture(self.q_ref)
        if self._twist_ns and self._reference_timeout_ns and \
                time.monotonic_ns() - self._twist_ns > self._reference_timeout_ns:
            self._twist_ns = 0
            law.set_twist(None)
            self.counts["stale target twists"] += 1
            self.warn_throttled("stale twist", "no target twist for "
                                f"{self._reference_timeout_ns * 1e-9:g} s (reference_timeout): "
                                "feed-forward twist set to zero")
        stamp = getattr(self, "state_stamp", None)    # None at the configure warm-up
        ns = 0 if stamp is None else stamp.sec * 1_000_000_000 + stamp.nanosec
        dt = (ns - self._task_last_ns) * 1e-9 if self._task_last_ns and ns else 0.0
        self._task_last_ns = ns
        law.compute(self.q, self.v, dt, out=self.tau)

    def _compute(self):
        robot, jm = self.robot, self.jmap
        if self.mode == "task_space":
            self._compute_task_space()
            return
        if self.mode == "gravity":
            robot.inverse_dynamics(self.q, self.zero, self.zero, out=self.tau)
            return
        if not self.have_reference and not self.holding:
            self._reset_reference()
            self.holding = True
            self.get_logger().info("no reference yet: holding the measured configuration")
        iq, iv = jm.joint_iq, jm.joint_iv
        # e = q_ref - q, ed = qd_ref - qd on the commanded joints
        np.take(self.q_ref, iq, out=self.e)
        np.take(self.q, iq, out=self.tmp)
        self.e -= self.tmp
        if self.mode == "feedforward":
            # tau = ID(q_ref, qd_ref, qdd_ref); the other joints at their measured state
            self.q_ff[:] = self.q
            self.v_ff[:] = self.v
            self.q_ff[iq] = self.q_ref[iq]
            self.v_ff[iv] = self.v_ref[iv]
            self.qdd_cmd[:] = 0.0
            self.qdd_cmd[iv] = self.a_ref[iv]
            if self._project is not None:
                # closed loops: the reference state of the commanded joints completed to a
                # loop-consistent one (the other joints solved from the loops, the commanded
                # ones held), as computed_torque completes its qdd; with the measured dependent
                # joints and qdd 0 there, inverse_dynamics refused every moving state
                self.q_ff[:] = robot.assemble(self.q_ff, independent=jm.joints)
                self.v_ff[:] = robot.project_velocity(self.q_ff, self.v_ff)
                self.qdd_cmd[:] = self._project(self.q_ff, self.v_ff, self.qdd_cmd)
            elif self._couple is not None:   # [mimic joints] the reference on their leaders
                self._couple(self.q_ff, self.v_ff, self.qdd_cmd)
            robot.inverse_dynamics(self.q_ff, self.v_ff, self.qdd_cmd, out=self.tau)
        else:
            np.take(self.v_ref, iv, out=self.ed)
            np.take(self.v, iv, out=self.tmp)
            self.ed -= self.tmp
            # qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q)
            np.take(self.a_ref, iv, out=self.tmp)
            self.ed *= self.kd
            self.tmp += self.ed
            np.multiply(self.kp, self.e, out=self.ed)
            self.tmp += self.ed
            self.qdd_cmd[:] = 0.0
            self.qdd_cmd[iv] = self.tmp
            if self._project is not None:   # closed loops: make qdd_cmd loop-consistent
                self.qdd_cmd[:] = self._project(self.q, self.v, self.qdd_cmd)
            elif self._couple is not None:  # [mimic joints] qdd_cmd on their leaders
                self._couple(None, None, self.qdd_cmd)
            robot.inverse_dynamics(self.q, self.v, self.qdd_cmd, out=self.tau)

    def _cycle(self, stamp, t0):
        if self.mode not in ("gravity", "task_space"):   # task_space: the posture stays
            self._check_reference_age()
        t1 = time.perf_counter_ns()
        try:
            self._compute()
            if not np.isfinite(self.tau).all():
                raise FloatingPointError("non-finite torques")
        except (ValueError, FloatingPointError) as exc:
            self.failed += 1
            self.warn_throttled("compute", f"inverse dynamics failed ({exc}); no output "
                                f"({self.failed} so far)")
            return
        t2 = time.perf_counter_ns()
        out = self.out_tau
        np.take(self.tau, self.jmap.joint_iv, out=out)
        if self.limit is not None and (np.abs(out) > self.limit).any():
            self.saturated += 1
            np.clip(out, -self.limit, self.limit, out=out)
        self.cmd_out.data[:] = out
        self.pub_cmd.publish(self.cmd_out.msg)
        self.eff_out.set_stamp(stamp)
        self.eff_out.effort[:] = out
        self.pub_eff.publish(self.eff_out.payload())
        if self.mode == "task_space":
            self._publish_task_error(stamp)
        elif self.mode != "gravity" and self.have_reference:
            err = float(np.abs(self.e).max())
            if err > self._err_max:
                self._err_max = err
            self._err_sq += float(self.e @ self.e) / len(self.e)
            self._err_n += 1
        self.stats.record(t2 - t1, time.perf_counter_ns() - t0)

    def _publish_task_error(self, stamp):
        e = self.law.error
        msg = self.error_msg
        if stamp is not None:
            msg.header.stamp = stamp
        lin, ang = msg.twist.linear, msg.twist.angular
        lin.x, lin.y, lin.z = float(e[0]), float(e[1]), float(e[2])
        ang.x, ang.y, ang.z = float(e[3]), float(e[4]), float(e[5])
        self.pub_error.publish(msg)
        err = self._task_err
        err[0] = max(err[0], math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]))
        err[1] = max(err[1], math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]))

    # ------------------------------------------------------------------ runtime parameters
    def apply_node_parameter(self, name, value):
        """Runtime changes (base.DynamicsNode.apply_parameter): gains, mode, rate and the
        reference timeout apply at once; array lengths are checked against `joints`."""
        n = len(self.jmap.joints)
        if name in ("kp", "kd"):
            values = value if isinstance(value, list) else [value]
            if len(values) not in (1, n):
                return f"has {len(values)} values; give one, or one per joint of `joints` " \
                       f"({n}: {self.jmap.joints})"
            setattr(self, name, np.array([float(x) for x in values] * (n if len(values) == 1
                                                                      else 1)))
            return None
        if name == "reference_timeout":
            self._reference_timeout_ns = int(value * 1e9)
            return None
        if name in TASK_GAINS:
            return self._apply_task_gain(name, value)
        if name == "mode" and "task_space" in (value, self.mode) and value != self.mode:
            return ("task_space is chosen at configure (its subscriptions and task_link): "
                    "deactivate and clean up the node (lifecycle), set it, then configure again")
        if name == "mode":
            if value != "gravity" and not any(getattr(sub, "topic_name", "").endswith(
                    "reference") for sub in self.subs):
                self.counts.setdefault("reference", 0)
                self.subs.append(self._subscribe_reference())
            self.mode = value
            self.joint_state_intake.set_need_velocity(value != "gravity")
            self.holding = False       # feedforward / computed_torque: hold until a reference
            return None
        if name == "rate_hz":
            self.rate_hz = value
            if self.timer is not None:
                self.destroy_timer(self.timer)
                self.timer = None
            if self.active and value > 0:
                self.timer = self.create_timer(1.0 / value, self._on_timer)
            return None
        return NotImplemented

    def _apply_task_gain(self, name, value):
        """task_space gains apply at once (checked: 6 finite numbers >= 0)."""
        law = self.law
        if law is None:
            return None               # not in task_space: read at the next configure
        try:
            if name == "nullspace_stiffness":
                law.set_nullspace(value, self._nullspace_damping())
            elif name == "nullspace_damping":
                law.set_nullspace(law.nullspace_stiffness, None if value < 0 else value)
            elif name == "task_damping_ratio":
                law.set_damping_ratio(value)
            else:
                attr = {"task_stiffness": "stiffness", "task_damping": "damping",
                        "task_integral_gain": "integral_gain",
                        "task_integral_limit": "integral_limit"}[name]
                getattr(law, attr)[:] = ts.six_vector(value, name)
        except ValueError as exc:
            return str(exc)
        return None

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_values(self):
        values = [("mode", self.mode), ("rate_hz", self.rate_hz or "per message"),
                  ("saturated outputs", self.saturated), ("failed computations", self.failed)]
        if self.mode == "task_space":
            values += [("task_link", self.law.link),
                       ("target", "received" if self.have_target else
                        ("holding the first measured pose" if self.task_started else
                         "none yet")),
                       ("task position error max [m]", self._task_err[0]),
                       ("task orientation error max [rad]", self._task_err[1]),
                       ("singular configurations", self.law.singular_count)]
            self._task_err = [0.0, 0.0]
        elif self.mode != "gravity":
            rms = math.sqrt(self._err_sq / self._err_n) if self._err_n else float("nan")
            values += [("reference", "received" if self.have_reference else
                        ("holding" if self.holding else "none yet")),
                       ("tracking error max", self._err_max if self._err_n else
                        float("nan")),
                       ("tracking error rms", rms),
                       ("tracking samples", self._err_n)]
            self._err_max, self._err_sq, self._err_n = 0.0, 0.0, 0
        level, message = diag.OK, ""
        if self.failed:
            level, message = diag.WARN, f"{self.failed} computations failed"
        return level, message, values


def main(args=None):
    return run(InverseDynamicsNode, args, exit_process=True)


if __name__ == "__main__":
    sys.exit(main())
