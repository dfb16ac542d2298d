"""The simulate plant's ``~/follow_joint_trajectory`` action server
(control_msgs/action/FollowJointTrajectory), as ros2_control's joint_trajectory_controller (JTC)
serves it, so that MoveIt and other JTC clients drive the simulated robot directly.

- Goals are validated when they arrive and rejected (GoalResponse.REJECT, the reason logged as a
  throttled warning, counted in /diagnostics as `rejected trajectory goals`) when: the plant is
  not active or halted; ``joint_names`` is empty, has duplicates, more names than a message may
  carry, or a joint without a drive (not in `joints`); there are no points or more than
  ``trajectory_max_points``; a point's positions do not have one value per joint, its velocities
  / accelerations are neither empty nor one per joint, or differ in presence between points
  (accelerations need velocities); effort is given; a value is NaN or inf; time_from_start is
  negative or not strictly increasing; the last point's velocity is not 0; a non-zero header
  stamp makes the trajectory end in the past; a tolerance is negative other than -1 or names a
  joint not in the goal; a multi-DOF trajectory is given.
  Partial goals (a subset of `joints`) are accepted: the other joints keep their commands.
- Interpolation as JTC's (trajectory_spline.py): quintic with accelerations, cubic with
  velocities, linear otherwise, from the state at acceptance. Each plant cycle, before its step,
  the trajectory is sampled at the plant's simulated time and commanded to the drives as
  position + velocity feed-forward (``plant.drives.command_position(pos, idx, vel)``): the plant
  clock, so a paused plant, ``~/step`` and lockstep /clock runs follow it exactly.
- Feedback (header, joint_names, desired, actual, error, index) every 1 / ``action_monitor_rate``
  s of simulated time.
- Tolerances, with JTC's meaning: per joint position / velocity / acceleration, 0 = the default
  (parameters ``constraints.trajectory``, ``constraints.goal``: position, all joints;
  ``constraints.stopped_velocity_tolerance``: the goal's velocity), -1 = not checked. Path
  tolerances are checked every cycle until the last point's time: a violation aborts with
  PATH_TOLERANCE_VIOLATED and the joints hold their current position. From the last point's
  time on, the goal tolerances: within them -> SUCCEEDED with SUCCESSFUL ("Goal successfully
  reached!"), the joints holding the last point; still outside them goal_time_tolerance
  (the goal's, else ``constraints.goal_time``; 0 = wait indefinitely) later -> aborted with
  GOAL_TOLERANCE_VIOLATED, holding the current position. error_string names the joint, the
  tolerance and by how much.
- Cancel: the joints hold their current position; CANCELED with an empty result (as JTC).
  Preemption: a new accepted goal ends the running one as JTC does (CANCELED, error_code
  INVALID_GOAL, "Current goal cancelled due to new incoming action."); so do ~/reset,
  deactivation ("Current goal cancelled during deactivate transition.") and a divergence that
  halts the plant.

Without control_msgs (no PyPI wheel: ``mbd-ros build-interfaces`` builds it; a ROS 2
installation has it) the plant runs without the action server and logs one warning saying so.

A goal message is deserialized by rclpy before the goal callback sees it: the DDS message size
bounds that cost; the caps above bound everything after it (the polynomials: 6 x points x
joints floats).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..kernels.trajectory_sampling import first_violation
from .trajectory_spline import TrajectorySpline

ACTION_NAME = "~/follow_joint_trajectory"
BUILD_HINT = "mbd-ros build-interfaces"

# JTC's result strings (joint_trajectory_controller.cpp), kept so that clients matching on them
# work the same
SUCCESS_TEXT = "Goal successfully reached!"
PREEMPTED_TEXT = "Current goal cancelled due to new incoming action."
DEACTIVATED_TEXT = "Current goal cancelled during deactivate transition."
PATH_TEXT = "Aborted due to path tolerance violation"
GOAL_TIME_TEXT = "Aborted due to goal_time_tolerance exceeding by {:f} seconds"

_warned_missing = False   # one warning per process


class GoalError(ValueError):
    """A goal that is refused, with the reason."""


def declare_parameters(node):
    """The action server's parameters (on the forward dynamics node, simulate mode)."""
    node.declare("follow_joint_trajectory", True, "simulate: serve ~/follow_joint_trajectory "
                 "(control_msgs/action/FollowJointTrajectory; needs control_msgs)")
    node.declare("trajectory_max_points", 10000, "simulate: most points a "
                 "~/follow_joint_trajectory goal may have", int_range=(1, 1_000_000))
    node.declare("action_monitor_rate", 20.0, "simulate: ~/follow_joint_trajectory feedback "
                 "rate, Hz of simulated time (as JTC's action_monitor_rate)",
                 float_range=(0.01, 1e6))
    node.declare("constraints.goal_time", 0.0, "simulate: default goal_time_tolerance, s, of "
                 "~/follow_joint_trajectory (0: wait for the goal tolerances indefinitely)",
                 float_range=(0.0, 1e6))
    node.declare("constraints.stopped_velocity_tolerance", 0.01, "simulate: default goal "
                 "velocity tolerance, rad/s or m/s (0: not checked)", float_range=(0.0, 1e6))
    node.declare("constraints.goal", 0.0, "simulate: default goal position tolerance of every "
                 "joint, rad or m (0: not checked)", float_range=(0.0, 1e6))
    node.declare("constraints.trajectory", 0.0, "simulate: default path position tolerance of "
                 "every joint, rad or m (0: not checked)", float_range=(0.0, 1e6))


def make_follower(node):
    """The TrajectoryFollower of a configured simulate plant, or None (disabled, or
    control_msgs missing: one warning per process naming the build command)."""
    global _warned_missing
    if not node.param("follow_joint_trajectory"):
        return None
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError as exc:
        if not _warned_missing:
            _warned_missing = True
            node.get_logger().warning(
                f"control_msgs is not installed ({exc}): no {ACTION_NAME} action server. It "
                f"has no PyPI wheel: build it with `{BUILD_HINT}` (a ROS 2 installation has it)")
        return None
    return TrajectoryFollower(node, FollowJointTrajectory)


def _duration(d):
    return d.sec + d.nanosec * 1e-9


def _tolerance(value, default, what):
    """JTC's rule: 0 -> the default, -1 -> not checked (0 here), > 0 -> the value."""
    if not math.isfinite(value) or (value < 0.0 and value != -1.0):
        raise GoalError(f"{what} is {value}: give a value > 0, 0 (the default) or -1 (not "
                        "checked)")
    if value == 0.0:
        return default
    return 0.0 if value == -1.0 else value


class ParsedGoal:
    """A validated goal: names (k,), idx (k,) drive indices, times (P,), positions (P, k),
    velocities / accelerations (P, k) or None, stamp_ns (0: start now), path and goal
    tolerances (k, 3) [position, velocity, acceleration] (0: not checked), goal_time (s)."""

    def __init__(self, goal, drive_index, max_names, max_points, defaults):
        traj = goal.trajectory
        if len(goal.multi_dof_trajectory.joint_names) or len(goal.multi_dof_trajectory.points):
            raise GoalError("multi_dof_trajectory is not supported (only 1-dof joints)")
        if len(goal.component_path_tolerance) or len(goal.component_goal_tolerance):
            raise GoalError("component tolerances are for multi-DOF joints: not supported")
        names = list(traj.joint_names)
        if not names:
            raise GoalError("Empty joint names on incoming trajectory.")
        if len(names) > max_names:
            raise GoalError(f"{len(names)} joint names: more than {max_names}")
        if len(set(names)) != len(names):
            raise GoalError(f"duplicate joint names in trajectory.joint_names: {names[:20]}")
        unknown = [n for n in names if n not in drive_index]
        if unknown:
            raise GoalError(f"Incoming joint {unknown[0][:80]} doesn't match the controller's "
                            f"joints (the plant's drives, parameter `joints`: "
                            f"{list(drive_index)[:20]})")
        points = traj.points
        P, k = len(points), len(names)
        if P == 0:
            raise GoalError("Empty trajectory received.")
        if P > max_points:
            raise GoalError(f"{P} points: more than trajectory_max_points ({max_points})")
        has_vel = len(points[0].velocities) > 0
        has_acc = len(points[0].accelerations) > 0
        if has_acc and not has_vel:
            raise GoalError("point 0 has accelerations but no velocities")
        times = np.empty(P)
        pos = np.empty((P, k))
        vel = np.empty((P, k)) if has_vel else None
        acc = np.empty((P, k)) if has_acc else None
        for i, p in enumerate(points):
            if len(p.positions) != k:
                raise GoalError(f"point {i} has {len(p.positions)} positions for {k} joints")
            if len(p.velocities) != (k if has_vel else 0):
                raise GoalError(f"point {i} has {len(p.velocities)} velocities: give one per "
                                f"joint ({k}) in every point, or none in every point")
            if len(p.accelerations) != (k if has_acc else 0):
                raise GoalError(f"point {i} has {len(p.accelerations)} accelerations: give one "
                                f"per joint ({k}) in every point, or none in every point")
            if len(p.effort):
                raise GoalError(f"point {i} has effort values: the plant's trajectory "
                                "interface is position + velocity (effort not supported)")
            times[i] = _duration(p.time_from_start)
            pos[i] = p.positions
            if has_vel:
                vel[i] = p.velocities
            if has_acc:
                acc[i] = p.accelerations
        for field, values in (("positions", pos), ("velocities", vel),
                              ("accelerations", acc)):
            if values is not None and not np.isfinite(values).all():
                i = int(np.argwhere(~np.isfinite(values))[0][0])
                raise GoalError(f"point {i} {field} contain NaN or inf")
        if times[0] < 0.0:
            raise GoalError(f"point 0 has a negative time_from_start {times[0]:g} s")
        step = np.diff(times)
        if (step <= 0.0).any():
            i = int(np.argmax(step <= 0.0))
            raise GoalError(f"Time between points {i} and {i + 1} is not strictly increasing, "
                            f"it is {times[i]:f} and {times[i + 1]:f} respectively")
        if has_vel and (vel[-1] != 0.0).any():
            j = int(np.argmax(vel[-1] != 0.0))
            raise GoalError(f"Velocity of last trajectory point of joint {names[j]} is not zero")
        self.names = names
        self.idx = np.array([drive_index[n] for n in names], dtype=np.int64)
        self.times, self.positions, self.velocities, self.accelerations = times, pos, vel, acc
        self.stamp_ns = traj.header.stamp.sec * 1_000_000_000 + traj.header.stamp.nanosec
        # tolerances: defaults, then the goal's (JTC's get_segment_tolerances)
        path = np.zeros((k, 3))
        path[:, 0] = defaults["trajectory"]
        goal_tol = np.zeros((k, 3))
        goal_tol[:, 0] = defaults["goal"]
        goal_tol[:, 1] = defaults["stopped_velocity_tolerance"]
        column = {n: j for j, n in enumerate(names)}
        for field, table in (("path_tolerance", path), ("goal_tolerance", goal_tol)):
            for tol in getattr(goal, field):
                if tol.name not in column:
                    raise GoalError(f"{field} names joint '{tol.name[:80]}', which is not in "
                                    "the trajectory's joint_names")
                j = column[tol.name]
                for c, (what, value) in enumerate((("position", tol.position),
                                                   ("velocity", tol.velocity),
                                                   ("acceleration", tol.acceleration))):
                    table[j, c] = _tolerance(value, table[j, c],
                                             f"{field} {what} of joint '{tol.name}'")
        self.path_tolerance, self.goal_tolerance = path, goal_tol
        goal_time = _duration(goal.goal_time_tolerance)
        if not math.isfinite(goal_time) or goal_time < 0.0:
            raise GoalError(f"goal_time_tolerance is {goal_time:g} s: give a value >= 0")
        self.goal_time = goal_time if goal_time > 0.0 else defaults["goal_time"]


def violation_text(error, tolerance, names, flat):
    """The tolerance violation at flat index j * 3 + c of error (k, 3) (first_violation) as a
    text naming the joint, the tolerance and by how much."""
    j, c = divmod(int(flat), 3)
    kind = ("position", "velocity", "acceleration")[c]
    return (f"joint '{names[j]}' {kind} error {error[j, c]:.6g} exceeds the tolerance "
            f"{tolerance[j, c]:g} by {abs(error[j, c]) - tolerance[j, c]:.6g}")


def warm_kernels():
    """Compile or load the per-cycle kernels (a first call on small arrays)."""
    one = np.zeros(1)
    out = np.zeros((3, 1))
    spline = TrajectorySpline([1.0], [[0.0]], None, None, one, one)
    spline.sample_into(0.5, out)
    first_violation(out, one, one, one, np.zeros(1, dtype=np.int64),
                    np.zeros(1, dtype=np.int64), np.zeros((1, 3)), np.zeros((1, 3)), 3)


class _Run:
    """The executing goal: its handle, trajectory, start time and buffers."""

    def __init__(self, handle, parsed, spline, t0, drives, feedback_period):
        self.handle, self.parsed, self.spline, self.t0 = handle, parsed, spline, t0
        k = len(parsed.names)
        self.desired = np.zeros((3, k))     # rows: position, velocity, acceleration
        self.error = np.zeros((k, 3))
        self.iq = np.ascontiguousarray(drives.iq[parsed.idx], dtype=np.int64)   # into q
        self.iv = np.ascontiguousarray(drives.iv[parsed.idx], dtype=np.int64)   # into v, qdd
        self.feedback_period = feedback_period
        self.next_feedback = t0
        self.index = -1


class TrajectoryFollower:
    """The action server and the per-cycle trajectory sampling of a simulate plant `node`
    (ForwardDynamicsNode: plant, sim, jmap, _drive_index, period, stamps)."""

    def __init__(self, node, action_type):
        from rclpy.action import ActionServer
        self.node = node
        self.action_type = action_type
        self.run = None
        self._validated = None   # (goal request, ParsedGoal) between goal and accepted callbacks
        warm_kernels()   # compiled (or loaded) now, not in the first goal's cycle
        node.counts["trajectory goals"] = 0   # /diagnostics: "rejected trajectory goals"
        self.server = ActionServer(node, action_type, ACTION_NAME,
                                   execute_callback=self._execute_unknown,
                                   goal_callback=self._on_goal,
                                   handle_accepted_callback=self._on_accepted,
                                   cancel_callback=self._on_cancel)

    def destroy(self):
        self.stop(DEACTIVATED_TEXT)
        self.server.destroy()

    # ------------------------------------------------------------------ action callbacks
    def _defaults(self):
        p = self.node.param
        return {"trajectory": p("constraints.trajectory"), "goal": p("constraints.goal"),
                "stopped_velocity_tolerance": p("constraints.stopped_velocity_tolerance"),
                "goal_time": p("constraints.goal_time")}

    def _on_goal(self, goal):
        from rclpy.action import GoalResponse
        node = self.node
        self._validated = None
        try:
            if not node.active:
                raise GoalError("Can't accept new action goals. Controller is not running.")
            if node.halted:
                raise GoalError(f"the plant is halted ({node.halt_reason}): call ~/reset")
            parsed = ParsedGoal(goal, node._drive_index, node.jmap.max_names,
                                node.param("trajectory_max_points"), self._defaults())
            if parsed.stamp_ns:
                start = self.plant_time(parsed.stamp_ns)
                if start + parsed.times[-1] < node.sim.time:
                    raise GoalError(f"Received trajectory with non-zero start time ({start:f}"
                                    f" s of simulated time) that ends in the past "
                                    f"({start + parsed.times[-1]:f} < {node.sim.time:f})")
        except GoalError as exc:
            node.counts["trajectory goals"] = node.counts.get("trajectory goals", 0) + 1
            # throttled per kind of rejection (its text up to the first digit or colon): a
            # client resending a bad goal must not flood the log, and a different reason still
            # shows (one key for all hid every reason after the first for 2 s)
            kind = re.split(r"[:\d(]", str(exc), maxsplit=1)[0][:80]
            node.warn_throttled(f"rejected trajectory goal: {kind}",
                                f"{ACTION_NAME}: goal rejected: {exc}")
            return GoalResponse.REJECT
        self._validated = (goal, parsed)
        return GoalResponse.ACCEPT

    def _on_accepted(self, handle):
        from rclpy.action.server import GoalEvent
        node = self.node
        validated, self._validated = self._validated, None
        if validated is None or validated[0] is not handle.request:   # not ours: cannot be
            handle.execute()
            return
        self.stop(PREEMPTED_TEXT)
        parsed = validated[1]
        drives, sim = node.plant.drives, node.sim
        q_start = sim.q[drives.iq[parsed.idx]]
        v_start = sim.v[drives.iv[parsed.idx]]
        spline = TrajectorySpline(parsed.times, parsed.positions, parsed.velocities,
                                  parsed.accelerations, q_start, v_start)
        t0 = self.plant_time(parsed.stamp_ns) if parsed.stamp_ns else sim.time
        self.run = _Run(handle, parsed, spline, t0, drives,
                        1.0 / node.param("action_monitor_rate"))
        node.get_logger().info(f"{ACTION_NAME}: accepted a goal of {len(parsed.times)} points "
                               f"for {parsed.names}, {parsed.times[-1]:g} s from t = {t0:.6f} s")
        # EXECUTING (the status is published) without rclpy's execute task: that task would
        # await the end of the trajectory, and while a task is pending the node's LeanExecutor
        # runs rclpy's own, heavier, wait loop (executor.py). The plant's cycles carry the goal;
        # _finish hands rclpy the result through a task that completes at once.
        handle._update_state(GoalEvent.EXECUTE)

    def _on_cancel(self, cancel_request):
        from rclpy.action import CancelResponse
        return CancelResponse.ACCEPT   # carried out by the next cycle (hold position)

    def _execute_unknown(self, handle):
        """rclpy's execute callback for a goal this server did not set up (cannot happen:
        every accepted goal passes _on_goal): rclpy aborts it."""
        return self.action_type.Result()

    # ------------------------------------------------------------------ time
    def _stamp_ns(self):
        """The stamp of the plant's current state (the schedule the node stamps with)."""
        node = self.node
        if node.publish_clock:
            return node._base_stamp_ns + round(node.sim.time * 1e9)
        return node._base_stamp_ns + node.cycles * node.period_ns

    def plant_time(self, stamp_ns):
        """Simulated time of a stamp on the node's time base."""
        return self.node.sim.time + (stamp_ns - self._stamp_ns()) * 1e-9

    # ------------------------------------------------------------------ per cycle
    def _hold(self, idx):
        """The joints idx hold their current position (velocity 0)."""
        drives, sim = self.node.plant.drives, self.node.sim
        drives.command_position(sim.q[drives.iq[idx]], idx)

    def _finish(self, status, error_code=0, error_string="", hold=False):
        """End the running goal: status 'succeed' / 'abort' / 'canceled' / 'preempted'."""
        run, self.run = self.run, None
        handle = run.handle
        if hold:
            self._hold(run.parsed.idx)
        result = self.action_type.Result(error_code=error_code, error_string=error_string)
        if handle.is_active:
            if status == "succeed":
                handle.succeed()
            elif status == "abort":
                handle.abort()
            else:
                if not handle.is_cancel_requested:   # preempted: JTC cancels it
                    from rclpy.action.server import GoalEvent
                    handle._update_state(GoalEvent.CANCEL_GOAL)
                handle.canceled()
        if status != "succeed":
            self.node.get_logger().info(f"{ACTION_NAME}: goal ended ({status}): "
                                        f"{error_string or 'canceled by the client'}")
        # the result to rclpy: its execute task, created now, returns it at once (the goal's
        # terminal state is already set)
        self.server.notify_execute(handle, lambda _handle: result)

    def stop(self, text, hold=True):
        """End a running goal as JTC's preemption / deactivation does (CANCELED, INVALID_GOAL,
        `text`), the joints holding their current position (unless hold is false: a halted
        plant, whose drives ~/reset resets)."""
        if self.run is not None:
            self._finish("preempted", self.action_type.Result.INVALID_GOAL, text, hold=hold)

    def cycle(self):
        """Before a plant step: sample the running trajectory at the plant's time, command the
        drives, check the tolerances, publish feedback; end the goal when due."""
        run = self.run
        if run is None:
            return
        handle = run.handle
        if not handle.is_active:   # ended elsewhere (e.g. the result expired)
            self.run = None
            return
        if handle.is_cancel_requested:
            self._finish("canceled", hold=True)
            return
        sim = self.node.sim
        parsed, t_sim = run.parsed, sim.time
        t = t_sim - run.t0
        desired, err = run.desired, run.error
        run.index = run.spline.sample_into(t, desired)
        # error = desired - actual (JTC's sign), the drives' coordinates; the first tolerance
        # exceeded: path tolerances until the last point's time, then the goal's (position
        # and velocity)
        duration = run.spline.duration
        after = t >= duration
        tolerance = parsed.goal_tolerance if after else parsed.path_tolerance
        columns = 2 if after else (3 if t >= 0.0 else 0)
        violated = first_violation(desired, sim.q, sim.v, sim.qdd, run.iq, run.iv, err,
                                   tolerance, columns)
        if t_sim >= run.next_feedback:
            run.next_feedback = t_sim + run.feedback_period
            self._feedback(run)
        if not after:
            if violated >= 0:
                text = violation_text(err, tolerance, parsed.names, violated)
                self._finish("abort", self.action_type.Result.PATH_TOLERANCE_VIOLATED,
                             f"{PATH_TEXT}: {text}", hold=True)
                return
        elif violated < 0:
            self._command(run)
            self._finish("succeed", 0, SUCCESS_TEXT)
            return
        elif parsed.goal_time > 0.0 and t - duration > parsed.goal_time:
            self._finish("abort", self.action_type.Result.GOAL_TOLERANCE_VIOLATED,
                         GOAL_TIME_TEXT.format(t - duration - parsed.goal_time) + ": " +
                         violation_text(err, tolerance, parsed.names, violated), hold=True)
            return
        self._command(run)

    def _command(self, run):
        """The sample to the drives: position with velocity feed-forward."""
        self.node.plant.drives.command_position(run.desired[0], run.parsed.idx, run.desired[1])

    def _feedback(self, run):
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectoryPoint
        node = self.node
        fb = self.action_type.Feedback()
        fb.header.stamp = node._stamp(self._stamp_ns())
        fb.joint_names = run.parsed.names
        t = max(0.0, node.sim.time - run.t0)
        tfs = Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)) % 1_000_000_000)
        drives, sim, idx = node.plant.drives, node.sim, run.parsed.idx
        fb.desired = JointTrajectoryPoint(positions=run.desired[0].tolist(),
                                          velocities=run.desired[1].tolist(),
                                          accelerations=run.desired[2].tolist(),
                                          time_from_start=tfs)
        fb.actual = JointTrajectoryPoint(positions=sim.q[drives.iq[idx]].tolist(),
                                         velocities=sim.v[drives.iv[idx]].tolist(),
                                         time_from_start=tfs)
        fb.error = JointTrajectoryPoint(positions=run.error[:, 0].tolist(),
                                        velocities=run.error[:, 1].tolist(),
                                        time_from_start=tfs)
        fb.index = max(run.index, 0)
        run.handle.publish_feedback(fb)
