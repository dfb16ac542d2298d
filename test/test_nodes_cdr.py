"""nodes/cdr.py: the forward and inverse dynamics nodes take joint_states serialized and keep
their joint_states / accelerations / efforts outputs serialized. Checked against rclpy's own
serialization: what the reader returns equals rclpy's deserialized message, and what the outputs
publish deserializes (by rclpy) to the values written into their views."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy")   # ROS is an optional dependency of the library (the nodes' tests)

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from mbd_ros.nodes.cdr import JointStateReader, JointStateView  # noqa: E402
from mbd_ros.nodes.messages import AccelerationsOut, JointStateOut  # noqa: E402


def random_names(rng, n):
    alphabet = list("abcdefghij_0123456789") + ["é", "ß"]
    return [f"j{k}_" + "".join(rng.choice(alphabet, size=rng.integers(0, 9)))
            for k in range(n)]


def joint_state(rng, names, frame_len, lengths=None, nan=False):
    msg = JointState()
    msg.header.stamp.sec = int(rng.integers(0, 2**31 - 1))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = "f" * frame_len
    msg.name = list(names)
    n = len(names)
    lengths = lengths or (n, n, n)
    msg.position = rng.normal(size=lengths[0]).tolist()
    msg.velocity = rng.normal(size=lengths[1]).tolist()
    msg.effort = rng.normal(size=lengths[2]).tolist()
    if nan and lengths[0]:
        msg.position[0] = float("nan")
    return msg


def same(read, msg):
    assert read.header.stamp.sec == msg.header.stamp.sec
    assert read.header.stamp.nanosec == msg.header.stamp.nanosec
    assert list(read.name) == list(msg.name)
    for field in ("position", "velocity", "effort"):
        np.testing.assert_array_equal(np.asarray(getattr(read, field), dtype=float),
                                      np.asarray(getattr(msg, field), dtype=float))


@pytest.mark.parametrize("n", [1, 2, 7, 30])
def test_reader_equals_rclpy_deserialization_on_every_alignment(n):
    rng = np.random.default_rng(n)
    reader = JointStateReader()
    names = random_names(rng, n)
    for frame_len in range(0, 12):           # every alignment of the fields after frame_id
        for lengths in [(n, n, n), (n, 0, 0), (n, n, 0), (0, 0, 0), (n, n - 1, n + 1)]:
            msg = joint_state(rng, names, frame_len, lengths, nan=bool(frame_len % 2))
            read = reader.read(serialize_message(msg))
            same(read, msg)
            if isinstance(read, JointStateView):   # the argument types JointMap.warm_up
                for values in (read.position, read.velocity, read.effort):   # compiled for
                    assert values.dtype == np.float64 and values.flags.c_contiguous
                    assert values.flags.writeable
    assert reader.full_reads == 1            # the names never changed: every later read fast
    # the one-call kernel read every message whose arrays are empty or of len(names) values
    # (47 of 60); the 12 with n - 1 / n + 1 values took the Python fast path, with the same
    # results
    assert reader.fast_reads == 59 and reader.kernel_reads == 47
    assert reader.fast_reads == 12 * 5 - 1


def test_reader_rereads_new_names_and_keeps_stamps_apart():
    rng = np.random.default_rng(3)
    reader = JointStateReader()
    a, b = random_names(rng, 7), random_names(rng, 7)
    b[3] = a[3] + "x"                        # one name differs by a byte at its end
    m1, m2, m3 = (joint_state(rng, names, 3) for names in (a, b, a))
    r1 = reader.read(serialize_message(m1))
    stamp1 = r1.header.stamp
    same(reader.read(serialize_message(m2)), m2)
    same(reader.read(serialize_message(m3)), m3)
    assert stamp1.sec == m1.header.stamp.sec  # a stamp kept from an earlier read stays its own
    assert reader.full_reads == 3


def test_reader_refuses_truncated_bytes():
    rng = np.random.default_rng(4)
    reader = JointStateReader()
    msg = joint_state(rng, random_names(rng, 5), 2)
    data = serialize_message(msg)
    reader.read(data)
    for cut in (len(data) - 1, len(data) - 9, 40, 13):
        with pytest.raises(Exception):
            reader.read(data[:cut])


@pytest.mark.parametrize("flags", [(True, True, True), (False, False, True), (True, True, False)])
def test_joint_state_out_publishes_what_its_views_hold(flags):
    rng = np.random.default_rng(5)
    names = random_names(rng, 9)
    out = JointStateOut(names, *flags)
    from builtin_interfaces.msg import Time
    for _ in range(3):
        values = {f: rng.normal(size=9) for f, on in zip(("position", "velocity", "effort"),
                                                         flags) if on}
        for f, x in values.items():
            getattr(out, f)[:] = x
        stamp = Time(sec=int(rng.integers(0, 2**31 - 1)), nanosec=int(rng.integers(0, 10**9)))
        out.set_stamp(stamp)
        msg = deserialize_message(out.payload(), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (stamp.sec, stamp.nanosec)
        assert list(msg.name) == names
        for f in ("position", "velocity", "effort"):
            np.testing.assert_array_equal(np.asarray(getattr(msg, f)), values.get(f, []))


@pytest.mark.parametrize("with_positions", [True, False])
def test_accelerations_out_publishes_what_its_views_hold(with_positions):
    rng = np.random.default_rng(6)
    names = random_names(rng, 7)
    out = AccelerationsOut(names, with_positions)
    from builtin_interfaces.msg import Time
    fields = (["positions"] if with_positions else []) + ["velocities", "accelerations", "effort"]
    values = {f: rng.normal(size=7) for f in fields}
    for f, x in values.items():
        getattr(out, f)[:] = x
    out.set_stamp(Time(sec=12, nanosec=345))
    msg = deserialize_message(out.payload(), JointTrajectory)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345)
    assert list(msg.joint_names) == names and len(msg.points) == 1
    for f in ("positions", "velocities", "accelerations", "effort"):
        np.testing.assert_array_equal(np.asarray(getattr(msg.points[0], f)), values.get(f, []))


def test_fast_reads_feed_the_joint_map_like_messages():
    """The reader's arrays go through JointMap.read_state (numba checks included) exactly as
    the message's fields do, NaN rejected the same way."""
    from pathlib import Path

    import mbd_ros
    from mbd_ros.robot.joint_map import JointMap, JointMapError
    robot = mbd_ros.load(str(Path(mbd_ros.__file__).resolve().parent.parent / "urdf" / "arm7.urdf"))
    jmap = JointMap(robot)
    names = [f"joint_{i}" for i in range(1, 8)]
    rng = np.random.default_rng(8)
    reader = JointStateReader()
    for k in range(4):
        msg = joint_state(rng, names, k, nan=(k == 3))
        read = reader.read(serialize_message(msg))
        results = []
        for source in (read, msg):
            q, v, tau = np.zeros(robot.nq), np.zeros(robot.nv), np.zeros(robot.nv)
            try:
                jmap.read_state(source.name, source.position, source.velocity, source.effort,
                                q, v, tau, need_effort=True)
                results.append((q, v, tau))
            except JointMapError as exc:
                results.append(str(exc))
        if k == 3:
            assert results[0] == results[1] and "NaN" in results[0]
        else:
            for a, b in zip(*results):
                np.testing.assert_array_equal(a, b)
    assert reader.fast_reads == 3


def test_outputs_fall_back_to_message_objects_when_the_bytes_cannot_be_located(monkeypatch):
    """Another middleware encoding (SerializedOut raises RuntimeError): the outputs publish the
    message object, whose arrays the views then are."""
    from builtin_interfaces.msg import Time

    from mbd_ros.nodes import messages

    class Unlocatable:
        def __init__(self, msg, fields):
            raise RuntimeError("not CDR")
    monkeypatch.setattr(messages, "SerializedOut", Unlocatable)
    out = messages.JointStateOut(["a", "b"], effort=False)
    out.position[:] = [1.0, 2.0]
    out.velocity[:] = [3.0, 4.0]
    out.set_stamp(Time(sec=7, nanosec=8))
    msg = out.payload()
    assert isinstance(msg, JointState) and msg.header.stamp.sec == 7
    assert list(msg.position) == [1.0, 2.0] and list(msg.velocity) == [3.0, 4.0]
    assert list(msg.effort) == []
    acc = messages.AccelerationsOut(["a"], False)
    acc.accelerations[:] = [5.0]
    assert list(acc.payload().points[0].accelerations) == [5.0]
    acc.fill(9, 10, np.array([0.5]), np.array([1.0]), np.array([2.0]), np.array([3.0]))
    msg = acc.payload()
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (9, 10)
    point = msg.points[0]
    assert list(point.positions) == [] and list(point.velocities) == [1.0]
    assert list(point.accelerations) == [2.0] and list(point.effort) == [3.0]


@pytest.mark.parametrize("with_positions", [True, False])
def test_accelerations_fill_writes_the_stamp_and_vectors_in_one_call(with_positions):
    """AccelerationsOut.fill (SerializedOut.write's numba call) publishes what rclpy
    deserializes to the same stamp and vectors as set_stamp + the views; a vector of the wrong
    length or item size is refused with nothing written."""
    rng = np.random.default_rng(9)
    names = random_names(rng, 7)
    out = AccelerationsOut(names, with_positions)
    for sec in (0, 1, 2**31 - 1, -5):
        q, v, qdd, tau = (rng.normal(size=7) for _ in range(4))
        nanosec = int(rng.integers(0, 10**9))
        out.fill(sec, nanosec, q, v, qdd, tau)
        msg = deserialize_message(out.payload(), JointTrajectory)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
        point = msg.points[0]
        np.testing.assert_array_equal(np.asarray(point.positions), q if with_positions else [])
        for field, x in (("velocities", v), ("accelerations", qdd), ("effort", tau)):
            np.testing.assert_array_equal(np.asarray(getattr(point, field)), x)
    before = out.payload()
    for bad in (np.zeros(6), np.zeros(8), np.zeros(8, dtype=np.float32)):
        with pytest.raises(ValueError, match="values"):
            out.fill(3, 4, q, bad, qdd, tau)
        assert out.payload() == before
    single = rng.normal(size=7).astype(np.float32)   # not float64: converted, as the views do
    out.fill(3, 4, q, single, qdd, tau)
    msg = deserialize_message(out.payload(), JointTrajectory)
    np.testing.assert_array_equal(np.asarray(msg.points[0].velocities), single)
