"""Validation of ~/follow_joint_trajectory goals (mbd_ros/nodes/follow_joint_trajectory.py,
ParsedGoal), in process on control_msgs messages: every refused goal names what is wrong (the
joint, the point, the field), and the tolerances follow joint_trajectory_controller's rule
(0: the default, -1: not checked, > 0: the value; other negatives refused).

References: the goals built here (the expected arrays are the messages' values) and JTC's
documented tolerance rule (control_msgs JointTolerance.msg).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install 'mbd_ros[ros]')")

from builtin_interfaces.msg import Duration  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402

from conftest import _missing_oracle  # noqa: E402
from mbd_ros.nodes.follow_joint_trajectory import GoalError, ParsedGoal  # noqa: E402

DRIVES = {"a": 0, "b": 1, "c": 2}
DEFAULTS = {"trajectory": 0.1, "goal": 0.02, "stopped_velocity_tolerance": 0.01,
            "goal_time": 0.5}


def messages():
    try:
        from control_msgs.action import FollowJointTrajectory
        from control_msgs.msg import JointTolerance
    except ImportError:
        _missing_oracle("control_msgs is not installed: `make test` builds it "
                        "(mbd-ros build-interfaces)")
    return FollowJointTrajectory, JointTolerance


def goal(names=("a", "c"), times=(0.5, 1.0), positions=None, velocities=None):
    action, _ = messages()
    g = action.Goal()
    g.trajectory.joint_names = list(names)
    for k, t in enumerate(times):
        p = JointTrajectoryPoint(time_from_start=Duration(sec=int(t),
                                                          nanosec=int(round(t % 1 * 1e9))))
        p.positions = [0.1 * k + j for j in range(len(names))] if positions is None \
            else positions[k]
        if velocities is not None:
            p.velocities = velocities[k]
        g.trajectory.points.append(p)
    return g


def parse(g, max_points=100):
    return ParsedGoal(g, DRIVES, 64, max_points, DEFAULTS)


def test_a_good_goal_is_read_into_arrays():
    parsed = parse(goal(velocities=[[0.3, -0.2], [0.0, 0.0]]))
    assert parsed.names == ["a", "c"] and parsed.idx.tolist() == [0, 2]
    np.testing.assert_array_equal(parsed.times, [0.5, 1.0])
    np.testing.assert_array_equal(parsed.positions, [[0.0, 1.0], [0.1, 1.1]])
    np.testing.assert_array_equal(parsed.velocities, [[0.3, -0.2], [0.0, 0.0]])
    assert parsed.accelerations is None
    # defaults: path position 0.1; goal position 0.02, velocity 0.01 (stopped velocity)
    np.testing.assert_array_equal(parsed.path_tolerance, [[0.1, 0, 0]] * 2)
    np.testing.assert_array_equal(parsed.goal_tolerance, [[0.02, 0.01, 0]] * 2)
    assert parsed.goal_time == 0.5


@pytest.mark.parametrize("change, words", [
    (lambda g: setattr(g.trajectory, "joint_names", []), ["Empty joint names"]),
    (lambda g: setattr(g.trajectory, "joint_names", ["a", "x"]), ["x", "doesn't match"]),
    (lambda g: setattr(g.trajectory, "joint_names", ["a", "a"]), ["duplicate", "a"]),
    (lambda g: setattr(g.trajectory, "points", []), ["Empty trajectory"]),
    (lambda g: setattr(g.trajectory.points[1], "positions", [1.0]), ["point 1", "1 positions"]),
    (lambda g: setattr(g.trajectory.points[0], "positions", [float("nan"), 1.0]),
     ["point 0", "NaN"]),
    (lambda g: setattr(g.trajectory.points[1], "time_from_start", Duration(sec=0)),
     ["not strictly increasing"]),
    (lambda g: setattr(g.trajectory.points[0], "effort", [1.0, 1.0]), ["effort"]),
    (lambda g: setattr(g.trajectory.points[0], "velocities", [1.0, 1.0]),
     ["point 1", "velocities"]),
])
def test_bad_goals_are_refused_with_the_reason(change, words):
    g = goal()
    change(g)
    with pytest.raises(GoalError) as info:
        parse(g)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_a_moving_last_point_and_too_many_points_are_refused():
    with pytest.raises(GoalError, match="Velocity of last trajectory point of joint c"):
        parse(goal(velocities=[[0.0, 0.0], [0.0, 0.2]]))
    with pytest.raises(GoalError, match="more than trajectory_max_points"):
        parse(goal(times=(0.1, 0.2, 0.3)), max_points=2)


def test_tolerances_follow_the_jtc_rule():
    _, JointTolerance = messages()
    g = goal()
    g.path_tolerance = [JointTolerance(name="a", position=-1.0, velocity=0.5),
                        JointTolerance(name="c", position=0.0, acceleration=2.0)]
    g.goal_tolerance = [JointTolerance(name="c", position=0.001, velocity=-1.0)]
    g.goal_time_tolerance = Duration(sec=2)
    parsed = parse(g)
    np.testing.assert_array_equal(parsed.path_tolerance, [[0.0, 0.5, 0.0], [0.1, 0.0, 2.0]])
    np.testing.assert_array_equal(parsed.goal_tolerance, [[0.02, 0.01, 0.0], [0.001, 0.0, 0.0]])
    assert parsed.goal_time == 2.0
    g.goal_tolerance = [JointTolerance(name="c", position=-0.5)]
    with pytest.raises(GoalError, match="goal_tolerance position of joint 'c'"):
        parse(g)
    g.goal_tolerance = [JointTolerance(name="b", position=0.1)]
    with pytest.raises(GoalError, match="joint 'b'"):
        parse(g)
