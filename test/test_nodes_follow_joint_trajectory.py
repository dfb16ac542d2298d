"""The simulate plant's ~/follow_joint_trajectory action server (control_msgs/action/
FollowJointTrajectory) driven by an rclpy ActionClient, as MoveIt drives joint_trajectory_
controller, on the UR5 of example-robot-data, as processes:

- a 3-point trajectory (positions + velocities: cubic segments) ends SUCCEEDED / SUCCESSFUL,
  and the plant's own joint_states end within the goal tolerances of the last point; the
  feedback's desired points between two waypoints equal the cubic Hermite interpolation of
  those waypoints (scipy's CubicHermiteSpline, an independent implementation) at the feedback's
  time_from_start;
- a cancelled goal ends CANCELED and the arm stops: over 1 s of the plant's time after the
  cancel, the joint moves less than 1 % of what the trajectory would have moved it;
- a trajectory faster than the UR5's URDF velocity limit allows, with a tight path tolerance,
  ends ABORTED with PATH_TOLERANCE_VIOLATED naming the joint;
- a last point beyond a URDF position limit (unreachable) aborts goal_time_tolerance after the
  end with GOAL_TOLERANCE_VIOLATED;
- a new goal preempts the running one as JTC does (CANCELED, INVALID_GOAL, its error string);
- a goal naming a joint the plant does not drive, or ending before the plant's time, is rejected;
- a start stamp in the future is waited for (the joints hold until then);
- a plant that halts (divergence) ends the running goal.

Every wait is on a condition (a result, a feedback, a state's stamp) with a generous deadline;
nothing asserts on wall-clock timing: the trajectory runs on the plant's simulated time.
"""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from scipy.interpolate import CubicHermiteSpline  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import _missing_oracle  # noqa: E402
from ros_harness import READY_TIMEOUT, Ros, stamp_key, warm_numba_cache  # noqa: E402

UR5 = "ur_description/urdf/ur5_robot.urdf"
NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
         "wrist_2_joint", "wrist_3_joint"]
Q0 = np.array([0.0, -1.0, 1.0, 0.0, 0.5, 0.0])
NS = "/fjt"
ACTION = f"{NS}/forward_dynamics/follow_joint_trajectory"
# stiff drives (inertia-normalised gains, critically damped): a smooth trajectory is tracked to
# about a milliradian
PLANT = {"mode": "simulate", "rate_hz": 500.0, "joints": NAMES,
         "initial_positions": Q0.tolist(), "hold_initial_positions": True,
         "drive_kp": 10000.0, "drive_kd": 200.0, "wrench_joints": ["none"],
         "publish_clock": False, "use_sim_time": False, "action_monitor_rate": 50.0}
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6     # action_msgs/GoalStatus
DONE = 120.0   # s: deadline of a goal's result (a trajectory of a few simulated seconds)


def control_msgs_action():
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError:
        _missing_oracle("control_msgs is not installed: `make test` builds it "
                        "(mbd-ros build-interfaces)")
    return FollowJointTrajectory


@pytest.fixture(scope="module")
def plant(erd_dir):
    action = control_msgs_action()
    path = str(erd_dir / UR5)
    warm_numba_cache(mbd_ros.load(path))
    ros = Ros(salt=211)
    states = ros.subscribe(JointState, f"{NS}/joint_states")
    ros.start("forward_dynamics", dict(PLANT, urdf_path=path), remaps={"__ns": NS})
    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, what="the UR5 plant")
    client = ActionClient(ros.node, action, ACTION)
    ros.spin_until(lambda: client.server_is_ready(), 60.0, what=f"the action server {ACTION}")
    yield ros, client, action
    client.destroy()
    ros.close()


def duration(t):
    return Duration(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def goal_of(action, times, positions, velocities=None, path_tolerance=None,
            goal_tolerance=None, goal_time=0.0):
    from control_msgs.msg import JointTolerance
    goal = action.Goal()
    goal.trajectory.joint_names = NAMES
    for k, t in enumerate(times):
        p = JointTrajectoryPoint(positions=[float(x) for x in positions[k]],
                                 time_from_start=duration(t))
        if velocities is not None:
            p.velocities = [float(x) for x in velocities[k]]
        goal.trajectory.points.append(p)
    if path_tolerance is not None:
        goal.path_tolerance = [JointTolerance(name=n, position=path_tolerance) for n in NAMES]
    if goal_tolerance is not None:
        goal.goal_tolerance = [JointTolerance(name=n, position=goal_tolerance[0],
                                              velocity=goal_tolerance[1]) for n in NAMES]
    goal.goal_time_tolerance = duration(goal_time)
    return goal


class Goal:
    """A sent goal: its feedback, handle and result, spun by the test's executor."""

    def __init__(self, ros, client, goal):
        self.ros = ros
        self.feedback = []
        future = client.send_goal_async(goal, feedback_callback=self.feedback.append)
        ros.spin_until(future.done, 60.0, what="the goal response")
        self.handle = future.result()
        self.result_future = self.handle.get_result_async() if self.handle.accepted else None

    def result(self):
        self.ros.spin_until(self.result_future.done, DONE, what="the goal's result")
        response = self.result_future.result()
        return response.status, response.result


def stamp_of(seconds):
    from builtin_interfaces.msg import Time
    ns = int(round(seconds * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def position(ros):
    return np.array(ros.last(f"{NS}/joint_states").position)


def state_time(ros):
    return stamp_key(ros.last(f"{NS}/joint_states").header.stamp) * 1e-9


def test_three_point_trajectory_succeeds_within_the_goal_tolerances(plant):
    ros, client, action = plant
    q_now = position(ros)
    delta = np.array([0.3, -0.2, 0.25, 0.2, -0.3, 0.4])
    times = [1.0, 2.0, 3.0]
    positions = [q_now + 0.5 * delta, q_now + delta, q_now + 0.6 * delta]
    velocities = [0.5 * delta, 0.0 * delta, 0.0 * delta]
    goal_tol = (0.01, 0.05)     # rad, rad/s
    goal = Goal(ros, client, goal_of(action, times, positions, velocities,
                                     path_tolerance=0.2, goal_tolerance=goal_tol, goal_time=2.0))
    assert goal.handle.accepted
    status, result = goal.result()
    assert (status, result.error_code) == (SUCCEEDED, action.Result.SUCCESSFUL), result
    assert result.error_string == "Goal successfully reached!"
    # the plant's own state (not the server's view): within the goal tolerance of point 3 once
    # the success is past. Messages received after the result can still be backlog published
    # before it (a loaded test process: a state 7 % of the last segment short of its end was
    # read that way once), so wait for a state stamped after the success: past the
    # trajectory's end and past the last feedback (the server succeeds at most one feedback
    # period, 0.02 s of plant time, after it), plus a margin of 0.1 s of plant time.
    last = goal.feedback[-1].feedback
    last_stamp = stamp_key(last.header.stamp) * 1e-9
    t0 = last_stamp - (last.desired.time_from_start.sec +
                       last.desired.time_from_start.nanosec * 1e-9)
    after = max(t0 + times[-1], last_stamp) + 0.1
    ros.spin_until(lambda: state_time(ros) >= after, 60.0,
                   what="a joint_states stamped after the success")
    assert np.abs(position(ros) - positions[-1]).max() < goal_tol[0]
    # feedback between points 1 and 2 (a cubic Hermite segment of the two waypoints alone)
    spline = CubicHermiteSpline(times[:2], np.array(positions[:2]), np.array(velocities[:2]))
    checked = 0
    for fb in goal.feedback:
        f = fb.feedback
        t = f.desired.time_from_start.sec + f.desired.time_from_start.nanosec * 1e-9
        assert list(f.joint_names) == NAMES
        if times[0] < t < times[1]:
            # round-off of a degree-3 polynomial on O(1) values, and the ns rounding of t
            # (|dp/dt| <= ~1 rad/s -> 1e-9 rad)
            np.testing.assert_allclose(f.desired.positions, spline(t), atol=1e-8)
            np.testing.assert_allclose(f.desired.velocities, spline(t, 1), atol=1e-7)
            np.testing.assert_allclose(np.array(f.error.positions),
                                       np.array(f.desired.positions) -
                                       np.array(f.actual.positions), atol=1e-12)
            checked += 1
    # 50 Hz of simulated time: ~50 in that second; a loaded test process may miss some
    assert checked >= 5, f"{checked} feedback messages in (1 s, 2 s) (50 Hz expected)"


def test_a_cancelled_goal_stops_the_arm(plant):
    ros, client, action = plant
    q_now = position(ros)
    speed = 0.2                       # rad/s of shoulder_pan_joint (linear: positions only)
    target = q_now.copy()
    target[0] += speed * 10.0
    goal = Goal(ros, client, goal_of(action, [10.0], [target]))
    assert goal.handle.accepted
    # cancel once the arm has moved (feedback at 1 s of the trajectory)
    ros.spin_until(lambda: any(f.feedback.desired.time_from_start.sec >= 1
                               for f in goal.feedback), DONE, what="1 s of the trajectory")
    cancel = goal.handle.cancel_goal_async()
    ros.spin_until(cancel.done, 60.0, what="the cancel response")
    status, result = goal.result()
    assert status == CANCELED, (status, result)
    # the arm holds where it was: 0.2 s of the plant's time to stop (the drives are critically
    # damped at 100 rad/s), then 1 s in which it must not move
    t_cancel = state_time(ros)
    ros.spin_until(lambda: state_time(ros) > t_cancel + 0.2, 60.0, what="0.2 s after the cancel")
    q_stop, t_stop = position(ros), state_time(ros)
    ros.spin_until(lambda: state_time(ros) > t_stop + 1.0, 60.0, what="1 s after the cancel")
    moved = abs(position(ros)[0] - q_stop[0])
    assert moved < 0.01 * speed, f"moved {moved:.2e} rad in 1 s after the cancel"
    assert abs(q_stop[0] - q_now[0]) > 0.1 * speed   # it had moved before the cancel


def test_a_violated_path_tolerance_aborts(plant, erd_dir):
    ros, client, action = plant
    robot = mbd_ros.load(str(erd_dir / UR5))
    vmax = np.asarray(robot.velocity_limits)[0]
    q_now = position(ros)
    target = q_now.copy()
    target[0] += 1.0
    duration_s = 0.5 / vmax          # twice the speed the URDF <limit velocity> allows
    goal = Goal(ros, client, goal_of(action, [duration_s], [target], path_tolerance=0.05))
    assert goal.handle.accepted
    status, result = goal.result()
    assert (status, result.error_code) == (ABORTED, action.Result.PATH_TOLERANCE_VIOLATED), \
        result
    assert "path tolerance" in result.error_string and NAMES[0] in result.error_string \
        and "position error" in result.error_string, \
        result.error_string


def test_a_goal_beyond_a_position_limit_aborts_after_goal_time(plant, erd_dir):
    """The last point puts elbow_joint 0.1 rad beyond its URDF upper limit: the drives stop it
    on the limit (their commands are clipped to the limits), 0.1 rad outside the 0.01 rad goal
    tolerance, so goal_time_tolerance (0.3 s) after the end the goal aborts with
    GOAL_TOLERANCE_VIOLATED naming the joint."""
    ros, client, action = plant
    robot = mbd_ros.load(str(erd_dir / UR5))
    upper = np.asarray(robot.position_limits[1])[robot.joint_names.index("elbow_joint")]
    q_now = position(ros)
    target = q_now.copy()
    target[2] = upper + 0.1
    goal = Goal(ros, client, goal_of(action, [2.0], [target], goal_tolerance=(0.01, 0.05),
                                     goal_time=0.3))
    assert goal.handle.accepted
    status, result = goal.result()
    assert (status, result.error_code) == (ABORTED, action.Result.GOAL_TOLERANCE_VIOLATED), \
        result
    assert result.error_string.startswith("Aborted due to goal_time_tolerance exceeding by")
    assert "elbow_joint" in result.error_string, result.error_string
    # the plant's state: on the limit (a hard stop), not beyond it
    assert position(ros)[2] <= upper + 1e-9


def test_a_new_goal_preempts_the_running_one(plant):
    ros, client, action = plant
    q_now = position(ros)
    far = q_now.copy()
    far[1] += 0.5
    first = Goal(ros, client, goal_of(action, [20.0], [far]))
    assert first.handle.accepted
    ros.spin_until(lambda: len(first.feedback) > 0, DONE, what="the first goal's feedback")
    back = Goal(ros, client, goal_of(action, [0.5], [q_now], goal_tolerance=(0.01, 0.05),
                                     goal_time=2.0))
    assert back.handle.accepted
    status, result = first.result()
    assert (status, result.error_code) == (CANCELED, action.Result.INVALID_GOAL), result
    assert result.error_string == "Current goal cancelled due to new incoming action."
    status, result = back.result()
    assert (status, result.error_code) == (SUCCEEDED, action.Result.SUCCESSFUL), result


def test_a_goal_with_an_unknown_joint_is_rejected(plant):
    ros, client, action = plant
    goal = goal_of(action, [1.0], [position(ros)])
    goal.trajectory.joint_names = NAMES[:-1] + ["no_such_joint"]
    assert not Goal(ros, client, goal).handle.accepted
    goal = goal_of(action, [1.0, 1.0], [position(ros), position(ros)])   # time not increasing
    assert not Goal(ros, client, goal).handle.accepted
    # a start stamp 10 s before the plant's latest state: the trajectory ended in the past
    goal = goal_of(action, [1.0], [position(ros)])
    goal.trajectory.header.stamp = stamp_of(state_time(ros) - 10.0)
    assert not Goal(ros, client, goal).handle.accepted
    # counted in /diagnostics (this module's goals rejected so far: these three)
    ros.wait_diagnostics("fjt/forward_dynamics",
                         lambda d: int(d.get("rejected trajectory goals", 0)) >= 3, 60.0)


def test_a_start_stamp_in_the_future_is_waited_for(plant):
    """header.stamp 3 s after the plant's latest state: the joints hold until then (every state
    stamped before it is at the start position), then move and reach the goal."""
    ros, client, action = plant
    q_now = position(ros)
    start = state_time(ros) + 3.0   # generous: the goal must arrive before it ends
    target = q_now.copy()
    target[1] += 0.2 if q_now[1] < 0.0 else -0.2     # shoulder_lift, limits +-2 pi
    goal = goal_of(action, [0.5], [target], goal_tolerance=(0.01, 0.05), goal_time=2.0)
    goal.trajectory.header.stamp = stamp_of(start)
    first = len(ros.received[f"{NS}/joint_states"])
    sent = Goal(ros, client, goal)
    assert sent.handle.accepted
    status, result = sent.result()
    assert (status, result.error_code) == (SUCCEEDED, action.Result.SUCCESSFUL), result
    before = [np.array(m.position) for _, m in ros.received[f"{NS}/joint_states"][first:]
              if stamp_key(m.header.stamp) * 1e-9 < start - 0.01]
    assert before, "no state before the start stamp"
    # holding: the drives' static error only (the arm rests at q_now under position drives)
    assert max(np.abs(q - q_now).max() for q in before) < 1e-3


def test_the_trajectory_runs_on_the_plant_clock(plant):
    """Paused plant: an accepted goal does not advance; each ~/step of 100 cycles (0.2 s at
    500 Hz) advances it by exactly that simulated time (feedback time_from_start), and a 1 s
    trajectory succeeds within the steps that reach its end, not before."""
    from std_srvs.srv import Trigger
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    ros, client, action = plant
    node = f"{NS}/forward_dynamics"
    request = SetParameters.Request(parameters=[Parameter(
        name="step_cycles", value=ParameterValue(type=ParameterType.PARAMETER_INTEGER,
                                                 integer_value=100))])
    assert ros.call(SetParameters, f"{node}/set_parameters", request).results[0].successful
    assert ros.call(Trigger, f"{node}/pause", Trigger.Request()).success
    try:
        q_now = position(ros)
        target = q_now.copy()
        target[0] -= 0.1 if q_now[0] > 0.0 else -0.1   # towards 0: away from the +-2 pi limits
        goal = Goal(ros, client, goal_of(action, [1.0], [target], goal_tolerance=(0.01, 0.05)))
        assert goal.handle.accepted

        def latest_feedback_time():
            if not goal.feedback:
                return None
            d = goal.feedback[-1].feedback.desired.time_from_start
            return d.sec + d.nanosec * 1e-9
        for k in range(1, 5):   # 0.8 s of the 1 s trajectory
            assert ros.call(Trigger, f"{node}/step", Trigger.Request()).success
            # feedback at 50 Hz of simulated time: the last one of these steps is at most one
            # feedback period (0.02 s) before the steps' end, never after it
            ros.spin_until(lambda: latest_feedback_time() is not None and
                           latest_feedback_time() > 0.2 * k - 0.02 - 1e-9, 60.0,
                           what=f"feedback of step {k}")
            assert latest_feedback_time() <= 0.2 * k + 1e-9
            assert not goal.result_future.done()
        for _ in range(3):      # to 1.4 s: past the end, and settled
            assert ros.call(Trigger, f"{node}/step", Trigger.Request()).success
        status, result = goal.result()
        assert (status, result.error_code) == (SUCCEEDED, action.Result.SUCCESSFUL), result
    finally:
        assert ros.call(Trigger, f"{node}/unpause", Trigger.Request()).success


def test_a_plant_that_halts_ends_the_running_goal(plant):
    """max_speed lowered under the speed of a running trajectory: the plant halts (a divergence,
    docs/plant.md) and the goal ends CANCELED with INVALID_GOAL and the reason, instead of
    waiting for a plant that no longer steps; a new goal is rejected until ~/reset."""
    from std_srvs.srv import Trigger
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    ros, client, action = plant
    node = f"{NS}/forward_dynamics"

    def set_max_speed(value):
        request = SetParameters.Request(parameters=[Parameter(
            name="max_speed", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                                   double_value=value))])
        assert ros.call(SetParameters, f"{node}/set_parameters", request).results[0].successful
    q_now = position(ros)
    target = q_now.copy()
    target[0] += 0.5 if q_now[0] < 0.0 else -0.5     # 0.5 rad in 2 s: ~0.4 rad/s mid-way
    goal = Goal(ros, client, goal_of(action, [2.0], [target]))
    assert goal.handle.accepted
    ros.spin_until(lambda: any(f.feedback.desired.time_from_start.sec >= 1
                               for f in goal.feedback), DONE, what="1 s of the trajectory")
    try:
        set_max_speed(0.05)       # rad/s: the moving joint exceeds it at the next step
        status, result = goal.result()
        assert (status, result.error_code) == (CANCELED, action.Result.INVALID_GOAL), result
        assert result.error_string.startswith("Current goal cancelled: the plant halted"), \
            result.error_string
        assert not Goal(ros, client, goal_of(action, [1.0], [q_now])).handle.accepted
    finally:
        set_max_speed(1000.0)
        assert ros.call(Trigger, f"{node}/reset", Trigger.Request()).success


def test_without_control_msgs_the_plant_runs_and_warns_once(plant, erd_dir, tmp_path,
                                                            monkeypatch):
    """control_msgs hidden from the plant process (a package of that name that fails to
    import, first on its PYTHONPATH): the plant starts and publishes, logs one warning naming
    the build command, and offers no action server (its ~/reset service is discovered, the
    action's send_goal service is not)."""
    ros, _, _ = plant
    shadow = tmp_path / "control_msgs"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{__import__('os').environ.get('PYTHONPATH', '')}")
    ns = "/nocm"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    child = ros.start("forward_dynamics", dict(PLANT, urdf_path=str(erd_dir / UR5)),
                      remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, what="the plant without control_msgs")

    def services():
        return {name for name, _ in ros.node.get_service_names_and_types()}
    ros.spin_until(lambda: f"{ns}/forward_dynamics/reset" in services(), 60.0,
                   what="discovery of the plant's services")
    assert f"{ns}/forward_dynamics/follow_joint_trajectory/_action/send_goal" not in services()
    assert f"{ACTION}/_action/send_goal" in services()    # the module's plant has one
    output = child.output()
    assert output.count("mbd-ros build-interfaces") == 1, output[-3000:]
    assert "no ~/follow_joint_trajectory action server" in output
    ros.stop(child)
