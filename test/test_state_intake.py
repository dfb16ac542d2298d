"""nodes/state_intake.py: the usual joint_states message read straight into q, v, tau in one
numba call. Checked against the general path it short-cuts (JointStateReader.read, the stale
check of BaseNode.stale, JointMap.read_state): on every message, random good and bad, the
intake either writes exactly what the general path writes, or declines having written nothing
(and the general path then reads or rejects it); and it does take the usual message. The
general path here is rclpy's deserialization and JointMap's numpy path, so neither of the
kernels the intake reuses (the reader's and the scatter's) is its own oracle."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")   # ROS is an optional dependency of the library (the nodes' tests)

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import mbd_ros  # noqa: E402
from mbd_ros.robot.joint_map import JointMap, JointMapError  # noqa: E402
from mbd_ros.nodes.cdr import JointStateReader  # noqa: E402
from mbd_ros.nodes.state_intake import StateIntake  # noqa: E402

ARM = Path(mbd_ros.__file__).resolve().parent.parent / "urdf" / "arm7.urdf"
NAMES = [f"joint_{i}" for i in range(1, 8)]
NOW = 1_800_000_000 * 10**9
MAX_AGE = 500_000_000


@pytest.fixture(scope="module")
def robot():
    return mbd_ros.load(str(ARM))


def message(rng, names, case):
    msg = JointState()
    stamp = NOW - int(rng.integers(0, MAX_AGE))
    if case == "stale":
        stamp = NOW - MAX_AGE - 1 - int(rng.integers(0, 10**9))
    if case == "zero stamp":
        stamp = 0
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
    msg.header.frame_id = "f" * int(rng.integers(0, 9))   # every alignment after it
    msg.name = list(names)
    n = len(names)
    lengths = [n, n if rng.random() < 0.7 else 0, n if rng.random() < 0.7 else 0]
    if case == "wrong count":
        lengths[int(rng.integers(0, 3))] = n + 1 if rng.random() < 0.5 else max(n - 1, 1)
    if case == "no position":
        lengths[0] = 0
    msg.position, msg.velocity, msg.effort = (rng.normal(size=k).tolist() for k in lengths)
    if case == "nan":
        field = [f for f, k in zip(("position", "velocity", "effort"), lengths) if k][
            int(rng.integers(0, sum(1 for k in lengths if k)))]
        values = getattr(msg, field)
        values[int(rng.integers(0, len(values)))] = float(rng.choice([np.nan, np.inf]))
        setattr(msg, field, values)
    return msg


def general(jmap, data, q, v, tau, need_velocity, need_effort, with_tau):
    """What the general path makes of data, read independently of the one-call kernels: rclpy's
    deserialization, the stale rule of BaseNode.stale and JointMap.read_state on the message's
    own (non-numpy) arrays, i.e. its numpy path. (q, v, tau) or the rejection."""
    msg = deserialize_message(data, JointState)
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    if stamp != 0 and NOW - stamp > MAX_AGE:
        return "stale"
    q, v, tau = q.copy(), v.copy(), tau.copy()
    try:
        jmap.read_state(msg.name, msg.position, msg.velocity, msg.effort, q, v,
                        tau if with_tau else None, need_velocity=need_velocity,
                        need_effort=need_effort, required=())
    except JointMapError as exc:
        return str(exc)
    return q, v, tau


@pytest.mark.parametrize("need_velocity,need_effort,with_tau",
                         [(False, False, True), (True, False, False), (True, True, True)])
def test_intake_writes_what_the_general_path_writes_or_declines(robot, need_velocity,
                                                                 need_effort, with_tau):
    rng = np.random.default_rng(int(need_velocity) + 2 * int(need_effort))
    jmap = JointMap(robot)
    reader = JointStateReader()
    q, v, tau = robot.neutral(), np.zeros(robot.nv), np.zeros(robot.nv)
    arrival = np.zeros(robot.nv, dtype=np.int64)
    intake = StateIntake(reader, jmap, q, v, tau if with_tau else None, arrival,
                         need_velocity=need_velocity, need_effort=need_effort, required=())
    name_lists = [NAMES, NAMES[::-1], NAMES[2:5], [NAMES[0], "unknown"], NAMES + [NAMES[1]]]
    cases = ["good"] * 6 + ["stale", "zero stamp", "wrong count", "nan", "no position"]
    taken = usual = 0
    for k in range(400):
        names = name_lists[int(rng.integers(0, len(name_lists)))] if k % 10 == 0 else \
            (reader.known_names[0] if reader.known_names else NAMES)
        case = cases[int(rng.integers(0, len(cases)))]
        data = serialize_message(message(rng, names, case))
        before = (q.copy(), v.copy(), tau.copy(), arrival.copy())
        expected = general(jmap, data, q, v, tau, need_velocity, need_effort, with_tau)
        now_ns = 1000 + k
        known = reader.known_names is not None and list(names) == list(reader.known_names[0])
        usual += known and case in ("good", "zero stamp") and not isinstance(expected, str)
        if intake.read(data, NOW - MAX_AGE, now_ns):
            taken += 1
            assert not isinstance(expected, str), (case, expected)
            for got, want in zip((q, v, tau), expected):
                np.testing.assert_array_equal(got, want)
            read = deserialize_message(data, JointState).header.stamp
            assert (intake.stamp_sec, intake.stamp_nanosec) == (read.sec, read.nanosec)
            touched = intake.lookup.iv
            assert (arrival[touched] == now_ns).all()
            np.testing.assert_array_equal(np.delete(arrival, touched),
                                          np.delete(before[3], touched))
        else:
            for got, was in zip((q, v, tau, arrival), before):
                np.testing.assert_array_equal(got, was)
            reader.read(data)   # the general path: remembers new names (as the node's does)
            if not isinstance(expected, str):   # the node would have taken it: do the same
                q[:], v[:], tau[:] = expected
    # every good message with the names the reader knows takes the one-call path (bad ones the
    # general path would accept, e.g. an effort of the wrong length when effort is not read,
    # may take either)
    assert taken >= usual > 50


def test_intake_follows_new_names_and_the_joint_maps_ignore_unknown(robot):
    jmap = JointMap(robot)
    reader = JointStateReader()
    q, v, tau = robot.neutral(), np.zeros(7), np.zeros(7)
    intake = StateIntake(reader, jmap, q, v, tau, np.zeros(7, dtype=np.int64), required=())
    rng = np.random.default_rng(5)
    names = NAMES[:3] + ["gripper"]
    msg = message(rng, names, "good")
    msg.velocity = [0.5] * 4
    data = serialize_message(msg)
    assert not intake.read(data, 0, 1)          # names not yet known to the reader
    with pytest.raises(JointMapError, match="unknown"):
        jmap.read_state(msg.name, msg.position, msg.velocity, msg.effort, q, v, tau)
    reader.read(data)
    assert not intake.read(data, 0, 1)          # known, but the map refuses 'gripper'
    jmap.set_ignore_unknown(True)
    assert intake.read(data, 0, 1)              # the map now ignores it
    np.testing.assert_array_equal(q[:3], msg.position[:3])
    np.testing.assert_array_equal(v[:3], msg.velocity[:3])
    reader.read(serialize_message(message(rng, NAMES, "good")))
    other = message(rng, NAMES[::-1], "good")
    assert not intake.read(serialize_message(other), 0, 1)   # other names: general path


def test_intake_follows_required_joints_and_need_velocity(robot):
    """The inverse dynamics node's intake: every joint required (JointMap's default), velocity
    required or not as its mode changes."""
    jmap = JointMap(robot)
    reader = JointStateReader()
    q, v = robot.neutral(), np.zeros(7)
    intake = StateIntake(reader, jmap, q, v, None, need_velocity=False)
    rng = np.random.default_rng(6)
    partial = message(rng, NAMES[:5], "good")
    reader.read(serialize_message(partial))
    assert not intake.read(serialize_message(partial), 0, 1)   # missing joints: rejected
    msg = message(rng, NAMES, "good")
    msg.velocity = []
    data = serialize_message(msg)
    reader.read(data)
    assert intake.read(data, 0, 1)
    np.testing.assert_array_equal(q, msg.position)
    np.testing.assert_array_equal(v, np.zeros(7))
    intake.set_need_velocity(True)
    assert not intake.read(data, 0, 1)   # now the general path rejects it
    with pytest.raises(JointMapError, match="velocity is empty"):
        jmap.read_state(msg.name, msg.position, msg.velocity, [], q, v, need_velocity=True)
    msg.velocity = [1.0] * 7
    assert intake.read(serialize_message(msg), 0, 1)
    np.testing.assert_array_equal(v, msg.velocity)
