"""The serialized-message readers of the nodes against rclpy's own serialization (no node
process): nodes/trajectory_reader.py (JointTrajectory header, names, points) and
nodes/message_caps.py (JointState sequence counts, Float64MultiArray data), on random messages,
plus their caps and truncated bytes; and joint_map.duplicates at 30 000 names (O(n))."""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                    "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from mbd_ros.robot.joint_map import duplicates  # noqa: E402
from mbd_ros.nodes import message_caps as caps  # noqa: E402
from mbd_ros.nodes import trajectory_reader as reader  # noqa: E402


def random_trajectory(rng):
    n, k = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    msg = JointTrajectory()
    msg.header.frame_id = "f" * int(rng.integers(0, 7))   # every alignment of what follows
    msg.header.stamp.sec = int(rng.integers(-5, 100))
    msg.header.stamp.nanosec = int(rng.integers(0, 10 ** 9))
    msg.joint_names = ["j" * int(rng.integers(1, 6)) + str(i) for i in range(n)]
    given = {f: rng.random() < 0.6 for f in ("velocities", "accelerations", "effort")}
    for _ in range(k):
        p = JointTrajectoryPoint(positions=rng.normal(size=n).tolist())
        for field, on in given.items():
            if on:
                setattr(p, field, rng.normal(size=n).tolist())
        p.time_from_start = Duration(sec=int(rng.integers(0, 10)),
                                     nanosec=int(rng.integers(0, 10 ** 9)))
        msg.points.append(p)
    return msg, given


def test_trajectory_reader_matches_rclpy():
    rng = np.random.default_rng(7)
    for _ in range(300):
        msg, given = random_trajectory(rng)
        data = serialize_message(msg)
        head = reader.read_header(data, 100, 100)
        assert head.joint_names == list(msg.joint_names)
        assert (head.stamp_sec, head.stamp_nanosec) == (msg.header.stamp.sec,
                                                        msg.header.stamp.nanosec)
        assert head.n_points == len(msg.points)
        points = reader.read_points(data, head)
        for i, p in enumerate(msg.points):
            assert np.array_equal(points.positions[i], p.positions)
            assert points.times[i] == p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
        assert (points.velocities is None) == (not given["velocities"])
        assert (points.accelerations is None) == \
            (not (given["accelerations"] and given["velocities"]))
        if points.velocities is not None:
            assert np.array_equal(points.velocities, [p.velocities for p in msg.points])
        if points.accelerations is not None:
            assert np.array_equal(points.accelerations, [p.accelerations for p in msg.points])
        first = reader.read_points(data, head, max_points=1)
        assert np.array_equal(first.positions[0], msg.points[0].positions)
        # truncated bytes: an error, never a read past the end
        cut = data[:int(rng.integers(4, len(data)))]
        try:
            reader.read_points(cut, reader.read_header(cut, 100, 100))
        except reader.TrajectoryFormatError:
            pass


def test_trajectory_reader_caps_and_bad_points():
    msg = JointTrajectory(joint_names=["a", "b"])
    msg.points = [JointTrajectoryPoint(positions=[0.0, 1.0]) for _ in range(20)]
    data = serialize_message(msg)
    with pytest.raises(reader.TrajectoryFormatError, match="20 points: more than 10"):
        reader.read_header(data, 100, 10)
    with pytest.raises(reader.TrajectoryFormatError, match="2 joint names: more than 1"):
        reader.read_header(data, 1, 100)
    msg.points[3].positions = [1.0]
    data = serialize_message(msg)
    with pytest.raises(reader.TrajectoryFormatError, match="point 3: positions has 1 values"):
        reader.read_points(data, reader.read_header(data, 100, 100))
    msg.points[3].positions = []
    data = serialize_message(msg)
    with pytest.raises(reader.TrajectoryFormatError, match="point 3: positions has 0"):
        reader.read_points(data, reader.read_header(data, 100, 100))


def test_message_caps_match_rclpy():
    rng = np.random.default_rng(11)
    for _ in range(300):
        m = JointState()
        m.header.frame_id = "f" * int(rng.integers(0, 9))
        n = int(rng.integers(0, 6))
        m.name = ["n" * int(rng.integers(1, 7)) for _ in range(n)]
        counts = [int(rng.integers(0, 7)) for _ in range(3)]
        m.position, m.velocity, m.effort = (rng.normal(size=c).tolist() for c in counts)
        assert caps.joint_state_counts(serialize_message(m), 100) == (n, *counts)
        a = Float64MultiArray()
        a.layout.dim = [MultiArrayDimension(label="l" * int(rng.integers(0, 6)), size=3,
                                            stride=4) for _ in range(int(rng.integers(0, 4)))]
        a.layout.data_offset = 7
        x = rng.normal(size=int(rng.integers(0, 9)))
        a.data = x.tolist()
        assert np.array_equal(caps.float64_array(serialize_message(a), 100), x)
    with pytest.raises(caps.MessageSizeError, match="name has 5000 entries: more than 4096"):
        caps.joint_state_counts(serialize_message(JointState(name=["a"] * 5000)), 4096)
    with pytest.raises(caps.MessageSizeError, match="effort has 9 entries: more than 8"):
        caps.joint_state_counts(serialize_message(JointState(effort=[0.0] * 9)), 8)
    with pytest.raises(caps.MessageSizeError, match="data has 9 values: more than 8"):
        caps.float64_array(serialize_message(Float64MultiArray(data=[0.0] * 9)), 8)
    with pytest.raises(caps.MessageSizeError, match="truncated"):
        caps.float64_array(serialize_message(Float64MultiArray(data=[0.0] * 9))[:-8], 100)


def test_duplicates_is_linear():
    names = [f"j{i}" for i in range(30_000)] + ["j5", "j7", "j7"]
    t = time.perf_counter()
    assert duplicates(names) == ["j5", "j7"]
    # O(n^2) took ~10 s here; one pass ~5 ms: 1 s is a bound no loaded machine reaches
    assert time.perf_counter() - t < 1.0
    assert duplicates(["a", "b"]) == []


def test_clock_guard():
    """/clock messages: negative, malformed and backwards times refused with a reason; the
    latest accepted time is forgotten by reset (use_sim_time switched)."""
    from builtin_interfaces.msg import Time
    from rosgraph_msgs.msg import Clock

    from mbd_ros.nodes.clock_guard import ClockGuard
    guard = ClockGuard()

    def check(sec, nanosec):
        return guard.check(Clock(clock=Time(sec=sec, nanosec=nanosec)))
    assert check(5, 10) == (5_000_000_010, None)
    assert check(5, 10) == (5_000_000_010, None)          # the same time again: accepted
    assert "negative" in check(-1, 0)[1]
    assert "nanosec" in check(6, 1_000_000_000)[1]
    assert "went back" in check(4, 999_999_999)[1]
    assert check(6, 0) == (6_000_000_000, None)
    guard.reset()
    assert check(1, 0) == (1_000_000_000, None)


def test_robot_description_cap():
    """A robot description over MAX_DESCRIPTION_BYTES is refused (parameter and topic) with
    its size, before it is decoded or parsed."""
    from mbd_ros.nodes.description import (MAX_DESCRIPTION_BYTES, check_description_parameter,
                                           urdf_xml)
    huge = "<robot>" + " " * MAX_DESCRIPTION_BYTES + "</robot>"
    assert "more than" in check_description_parameter(huge)
    with pytest.raises(ValueError, match="the robot_description topic has"):
        urdf_xml(huge.encode(), "the robot_description topic")
    assert urdf_xml(" <robot/> ", "x") == "<robot/>"
