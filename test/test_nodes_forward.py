"""Forward dynamics node, observe mode, as a process: its outputs equal the library's results
for the published states; bad messages are dropped and counted; the robot can come from the
robot_description topic; lifecycle transitions; a URDF that fails to load fails configure.

The nodes run as child processes on this test's own ROS_DOMAIN_ID with localhost discovery
(test/ros_harness.py); every process is stopped at the end of the module.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import assert_close  # noqa: E402
from ros_harness import (READY_TIMEOUT, URDF, Ros, joint_state, now_stamp, stamp_key,  # noqa: E402
                         warm_numba_cache, wrench_array)

ARM = str(URDF / "arm7.urdf")
NAMES = [f"joint_{i}" for i in range(1, 8)]
OBSERVE = {"urdf_path": ARM, "mode": "observe", "diagnostics_period": 0.2,
           "max_message_age": 2.0}


@pytest.fixture(scope="module")
def robot():
    r = mbd_ros.load(ARM)
    warm_numba_cache(r)
    return r


@pytest.fixture(scope="module")
def ros(robot):
    ros = Ros(salt=11)
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def observer(ros, robot):
    """The observe-mode node, started once and waited for (first output)."""
    ros.start("forward_dynamics", OBSERVE)
    ros.subscribe(DiagnosticArray, "/diagnostics")
    acc = ros.subscribe(JointTrajectory, "/forward_dynamics/accelerations")
    for name in robot.wrench_joint_names:
        ros.subscribe(WrenchStamped, f"/forward_dynamics/wrenches/{name}")
    q = robot.neutral()
    ros.spin_until(lambda: len(acc) > 0, READY_TIMEOUT, every=0.2, what="the first accelerations",
                   action=lambda: ros.publish(JointState, "joint_states",
                                              joint_state(now_stamp(ros), NAMES, q)))
    return "forward_dynamics"


def random_states(robot, n, seed):
    rng = np.random.default_rng(seed)
    lim = np.asarray(robot.effort_limits)
    return [(robot.random_configuration(rng), rng.normal(size=robot.nv),
             rng.uniform(-0.3, 0.3, robot.nv) * lim) for _ in range(n)]


def test_outputs_equal_the_library(ros, robot, observer):
    """20 random states in shuffled joint order: ~/accelerations and every ~/wrenches/<joint>
    equal robot.forward_dynamics and robot.joint_wrenches, stamped with the input's stamp."""
    acc_topic = "/forward_dynamics/accelerations"
    states = random_states(robot, 20, seed=1)
    sent = {}
    perm = np.random.default_rng(2).permutation(7)
    for k, (q, v, tau) in enumerate(states):
        stamp = now_stamp(ros, offset_ns=k)
        sent[stamp_key(stamp)] = (q, v, tau)
        ros.publish(JointState, "joint_states",
                    joint_state(stamp, [NAMES[i] for i in perm], q[perm], v[perm], tau[perm]))
        ros.spin(0.01)

    def outputs():
        got = {stamp_key(m.header.stamp): m for m in ros.messages(acc_topic)}
        return {k: got[k] for k in sent if k in got}
    ros.spin_until(lambda: len(outputs()) >= 18, 20.0, what="the accelerations of 18 of 20 "
                   "states (best-effort input)")
    ros.spin(0.3)
    acc = outputs()
    wrenches = {name: {stamp_key(m.header.stamp): m for m in
                       ros.messages(f"/forward_dynamics/wrenches/{name}")}
                for name in robot.wrench_joint_names}
    for key, msg in acc.items():
        q, v, tau = sent[key]
        point = msg.points[0]
        assert list(msg.joint_names) == NAMES
        np.testing.assert_array_equal(point.positions, q)
        np.testing.assert_array_equal(point.velocities, v)
        np.testing.assert_array_equal(point.effort, tau)
        qdd = robot.forward_dynamics(q, v, tau)
        assert_close(np.array(point.accelerations), qdd, "accelerations")
        W = robot.joint_wrenches(q, v, qdd)
        for row, (name, frame) in enumerate(zip(robot.wrench_joint_names, robot.wrench_frames)):
            w = wrenches[name].get(key)
            assert w is not None, f"no wrench of {name} for a state whose accelerations arrived"
            assert w.header.frame_id == frame
            assert_close(wrench_array(w), W[row], f"wrench of {name}")


BAD = {
    "unknown joint": lambda s, q: joint_state(s, NAMES[:6] + ["gripper"], q),
    "duplicate joint": lambda s, q: joint_state(s, NAMES[:6] + ["joint_1"], q),
    "short position": lambda s, q: joint_state(s, NAMES, q[:5]),
    "long velocity": lambda s, q: joint_state(s, NAMES, q, np.zeros(8)),
    "wrong effort length": lambda s, q: joint_state(s, NAMES, q, np.zeros(7), np.zeros(3)),
    "NaN position": lambda s, q: joint_state(s, NAMES, np.r_[q[:6], np.nan]),
    "inf velocity": lambda s, q: joint_state(s, NAMES, q, np.r_[np.inf, np.zeros(6)]),
    "NaN effort": lambda s, q: joint_state(s, NAMES, q, np.zeros(7), np.r_[np.zeros(6), np.nan]),
}


def test_bad_messages_are_dropped_and_counted(ros, robot, observer):
    """Each bad message is dropped (no output with its stamp), counted in /diagnostics, and the
    node keeps working; a stale stamp (older than max_message_age) is dropped too."""
    before = int(ros.wait_diagnostics(observer, lambda d: True)["rejected joint_states"])
    ros.matched_publisher(JointState, "joint_states")
    q = robot.neutral() + 0.1
    bad_keys = []
    for k, make in enumerate(BAD.values()):
        stamp = now_stamp(ros, offset_ns=100 + k)
        bad_keys.append(stamp_key(stamp))
        ros.publish(JointState, "joint_states", make(stamp, q))
        ros.spin(0.03)
    stale = now_stamp(ros, offset_ns=-5_000_000_000)       # 5 s old, max_message_age 2 s
    bad_keys.append(stamp_key(stale))
    ros.publish(JointState, "joint_states", joint_state(stale, NAMES, q))
    n_bad = len(BAD) + 1
    good = now_stamp(ros, offset_ns=999)
    acc_topic = "/forward_dynamics/accelerations"
    ros.spin_until(lambda: any(stamp_key(m.header.stamp) == stamp_key(good)
                               for m in ros.messages(acc_topic)), 10.0, every=0.1,
                   action=lambda: ros.publish(JointState, "joint_states",
                                              joint_state(good, NAMES, q)),
                   what="the output of a good message after the bad ones")
    d = ros.wait_diagnostics(observer, lambda d: int(d["rejected joint_states"]) >= before + n_bad,
                             what=f"{n_bad} more rejected joint_states in /diagnostics")
    assert int(d["rejected joint_states"]) == before + n_bad
    assert d["state"] == "active"
    outputs = {stamp_key(m.header.stamp) for m in ros.messages(acc_topic)}
    assert not outputs & set(bad_keys)
    for m in ros.messages(acc_topic):
        p = m.points[0]
        assert all(math.isfinite(x) for x in list(p.accelerations) + list(p.positions))
    assert ros.children[0].poll() is None


def test_partial_joint_states_from_two_publishers_are_merged(ros, robot, observer):
    """An arm driver (joints 1-4) and a wrist driver (5-7), each with its own publisher:
    every message after both have spoken gives outputs for the merged state (latest value per
    joint); a part alone, once the other's values are older than joint_state_staleness
    (0.1 s), gives none and is counted as incomplete."""
    arm = ros.node.create_publisher(JointState, "joint_states", ros.qos)
    wrist = ros.node.create_publisher(JointState, "joint_states", ros.qos)
    ros.spin_until(lambda: arm.get_subscription_count() > 0 and
                   wrist.get_subscription_count() > 0, 20.0, what="the observer's subscription")
    acc_topic = "/forward_dynamics/accelerations"
    rng = np.random.default_rng(11)
    sent = {}
    for k in range(5):
        q = robot.neutral() + rng.uniform(-1, 1, 7)
        v = rng.uniform(-1, 1, 7)
        s_arm, s_wrist = now_stamp(ros, offset_ns=2 * k + 500), now_stamp(ros, 2 * k + 501)
        arm.publish(joint_state(s_arm, NAMES[:4], q[:4], v[:4]))
        ros.spin(0.01)
        wrist.publish(joint_state(s_wrist, NAMES[4:], q[4:], v[4:]))
        sent[stamp_key(s_wrist)] = (q, v)
        ros.spin(0.02)
    ros.spin_until(lambda: sum(stamp_key(m.header.stamp) in sent
                               for m in ros.messages(acc_topic)) >= 4, 10.0,
                   what="outputs of the merged states")
    # messages of two publishers need not arrive in the order sent: each output holds the wrist
    # values of its message and the latest arm values received (those of one of the arm
    # messages, normally the one sent just before), and its accelerations are those of that
    # merged state
    paired = 0
    for m in ros.messages(acc_topic):
        key = stamp_key(m.header.stamp)
        if key in sent:
            q, v = sent[key]
            p = m.points[0]
            np.testing.assert_array_equal(p.positions[4:], q[4:])
            np.testing.assert_array_equal(p.velocities[4:], v[4:])
            paired += tuple(p.positions[:4]) == tuple(q[:4])
            assert_close(np.array(p.accelerations),
                         robot.forward_dynamics(np.array(p.positions), np.array(p.velocities),
                                                np.zeros(7)), "merged-state accelerations")
    assert paired >= 3, paired
    # the wrist driver goes quiet: after 0.1 s the arm's messages alone give no output
    ros.spin(0.3)
    lonely = now_stamp(ros, offset_ns=777)
    arm.publish(joint_state(lonely, NAMES[:4], np.zeros(4)))
    d = ros.wait_diagnostics(observer, lambda d: int(d.get("rejected incomplete joint_states",
                                                             0)) >= 1,
                             what="an incomplete joint_states counted")
    assert all(stamp_key(m.header.stamp) != stamp_key(lonely) for m in ros.messages(acc_topic))
    ros.node.destroy_publisher(arm)
    ros.node.destroy_publisher(wrist)


def test_diagnostics(ros, observer):
    d = ros.wait_diagnostics(observer, lambda d: int(d["cycles"]) > 0)
    for key in ("achieved rate [Hz]", "compute p50 [us]", "compute p99 [us]", "missed cycles",
                "rejected messages", "constraint residual", "singular configurations"):
        assert key in d, key
    assert 0 < float(d["compute p50 [us]"]) <= float(d["compute p99 [us]"])
    assert d["mode"] == "observe"


def test_robot_description_from_the_topic(ros, robot):
    """No robot_description / urdf_path parameter: the node waits for the robot_description
    topic (transient local, as robot_state_publisher publishes it) and then starts by itself."""
    from mbd_ros.nodes.qos import DESCRIPTION_QOS
    ns = "/from_topic"
    ros.start("forward_dynamics", {"diagnostics_period": 0.5},
              remaps={"__ns": ns})
    acc = ros.subscribe(JointTrajectory, f"{ns}/forward_dynamics/accelerations")
    ros.publisher(String, f"{ns}/robot_description", DESCRIPTION_QOS).publish(
        String(data=open(ARM).read()))
    q = robot.neutral() + 0.2
    ros.spin_until(lambda: len(acc) > 0, READY_TIMEOUT, every=0.2,
                   action=lambda: ros.publish(JointState, f"{ns}/joint_states",
                                              joint_state(now_stamp(ros), NAMES, q)),
                   what="outputs of the node configured from the robot_description topic")
    assert_close(np.array(acc[-1][1].points[0].accelerations),
                 robot.forward_dynamics(q, np.zeros(7), np.zeros(7)), "accelerations")


def test_lifecycle_transitions_without_autostart(ros, robot):
    name = "fd_managed"
    ros.start("forward_dynamics", {"urdf_path": ARM, "autostart": False}, name=name)
    ros.spin_until(lambda: ros.node.count_publishers(f"/{name}/transition_event") > 0,
                   READY_TIMEOUT, what=f"{name} to come up")
    assert ros.lifecycle_state(name) == "unconfigured"
    assert ros.change_state(name, "configure")
    assert ros.lifecycle_state(name) == "inactive"
    acc = ros.subscribe(JointTrajectory, f"/{name}/accelerations")
    ros.spin(0.5)
    q = robot.neutral()
    for _ in range(5):   # inactive: no output
        ros.publish(JointState, "joint_states", joint_state(now_stamp(ros), NAMES, q))
        ros.spin(0.05)
    assert not acc
    assert ros.change_state(name, "activate")
    ros.spin_until(lambda: len(acc) > 0, 20.0, every=0.1,
                   action=lambda: ros.publish(JointState, "joint_states",
                                              joint_state(now_stamp(ros), NAMES, q)),
                   what="outputs after activate")
    ros.wait_diagnostics(name, lambda d: d.get("state") == "active", what="an active report")
    assert ros.change_state(name, "deactivate")
    # /diagnostics stops while inactive, with a last report that says so
    ros.wait_diagnostics(name, lambda d: d.get("state") == "inactive",
                         what="the report of the deactivation")
    assert ros.change_state(name, "cleanup")
    assert ros.lifecycle_state(name) == "unconfigured"
    child = ros.children[-1]
    child.must_live = False
    assert ros.change_state(name, "shutdown")      # finalized: the process exits by itself
    assert child.wait(20.0) == 0, child.output()


def test_a_urdf_that_fails_to_load_fails_configure(ros, tmp_path):
    bad = tmp_path / "broken.urdf"
    bad.write_text('<?xml version="1.0"?><robot name="broken"><link name="a"/>'
                   '<joint name="j_orphan" type="revolute"><parent link="a"/>'
                   '<child link="nowhere"/><axis xyz="0 0 1"/></joint></robot>')
    expected = None
    try:
        mbd_ros.load(str(bad))
    except ValueError as exc:
        expected = str(exc)
    assert expected, "the test URDF should not load"
    for path, message in ((bad, expected), (tmp_path / "missing.urdf", "missing.urdf")):
        child = ros.start("forward_dynamics", {"urdf_path": str(path)}, name="fd_bad")
        child.must_live = False
        code = child.wait(READY_TIMEOUT)
        out = child.output()
        assert code == 1, out
        assert "configure failed" in out and message in out, out


def test_invalid_parameters_are_refused(ros):
    child = ros.start("forward_dynamics", {"urdf_path": ARM, "mode": "fly"}, name="fd_param")
    child.must_live = False
    assert child.wait(READY_TIMEOUT) == 2
    assert "mode: must be one of observe, simulate" in child.output()
    child = ros.start("forward_dynamics", {"urdf_path": ARM, "rate_hz": -5.0}, name="fd_rate")
    child.must_live = False
    assert child.wait(READY_TIMEOUT) == 2
    assert "rate_hz" in child.output()


FOURBAR = (str(URDF / "fourbar.urdf"), str(URDF.parent / "config" / "fourbar_closures.yaml"))


@pytest.fixture(scope="module")
def fourbar():
    """The closed-loop sample (four-bar); loading it must work (no skip: a failure here is a bug)."""
    robot = mbd_ros.load(FOURBAR[0], closures=FOURBAR[1])
    warm_numba_cache(robot)
    return robot


def test_a_closed_loop_sample_publishes_closure_wrenches(ros, fourbar):
    """Observe mode on the four-bar: for loop-consistent states (assembled q, projected v),
    ~/closure_wrenches/<closure> equals robot.closure_wrenches, ~/accelerations equals
    robot.forward_dynamics (respecting the loop), and /diagnostics reports the residual."""
    ns = "/fourbar"
    ros.start("forward_dynamics", {"urdf_path": FOURBAR[0], "closures_path": FOURBAR[1],
                                   "mode": "observe", "diagnostics_period": 0.2,
                                   "max_message_age": 2.0}, remaps={"__ns": ns})
    names = list(fourbar.joint_names)
    acc = ros.subscribe(JointTrajectory, f"{ns}/forward_dynamics/accelerations")
    closure_topics = {c: f"{ns}/forward_dynamics/closure_wrenches/{c}"
                      for c in fourbar.closure_names}
    for topic in closure_topics.values():
        ros.subscribe(WrenchStamped, topic)
    rng = np.random.default_rng(4)
    states = []
    for _ in range(6):
        q = np.asarray(fourbar.assemble(np.r_[rng.uniform(-np.pi, np.pi), 0.0, 0.0]))
        v = np.asarray(fourbar.project_velocity(q, rng.normal(size=fourbar.nv)))
        tau = np.zeros(fourbar.nv)
        tau[names.index("crank_joint")] = rng.uniform(-2, 2)
        states.append((q, v, tau))
    q0, v0, t0 = states[0]
    ros.spin_until(lambda: len(acc) > 0, READY_TIMEOUT, every=0.2, what="four-bar outputs",
                   action=lambda: ros.publish(JointState, f"{ns}/joint_states",
                                              joint_state(now_stamp(ros), names, q0, v0, t0)))
    sent, state_of = {}, {}       # stamp -> (q, v, tau), stamp -> index of the state

    def received(topic):
        return {stamp_key(m.header.stamp): m for m in ros.messages(topic)
                if stamp_key(m.header.stamp) in sent}

    def answered_states():
        return {state_of[key] for key in set.intersection(
            *(set(received(t)) for t in closure_topics.values()))}

    def send_unanswered():
        # each state not answered yet on every closure topic, with a fresh stamp: on a loaded
        # machine a best-effort message can be lost, or be older than max_message_age when the
        # node gets to it (then it is dropped and counted, as it should be)
        done = answered_states()
        for k, (q, v, tau) in enumerate(states):
            if k not in done:
                stamp = now_stamp(ros, offset_ns=k)
                sent[stamp_key(stamp)], state_of[stamp_key(stamp)] = (q, v, tau), k
                ros.publish(JointState, f"{ns}/joint_states", joint_state(stamp, names, q, v,
                                                                           tau))
                ros.spin(0.02)
    ros.spin_until(lambda: len(answered_states()) == len(states), 60.0, every=1.0,
                   action=send_unanswered, what="closure wrenches of all 6 states")
    accelerations = received(f"{ns}/forward_dynamics/accelerations")
    for c, topic in closure_topics.items():
        row = fourbar.closure_names.index(c)
        for key, msg in received(topic).items():
            q, v, tau = sent[key]
            # published in the child-side link frame: moved from the cut frame B, whose pose in
            # that link is child_origin (R, p): f_L = R f_B, t_L = R t_B + p x f_L
            spec = fourbar.closure_set.closures[row]
            assert msg.header.frame_id == spec.child
            R, p = spec.child_origin[:3, :3], spec.child_origin[:3, 3]
            w_cut = fourbar.closure_wrenches(q, v, tau)[row]
            f = R @ w_cut[:3]
            assert_close(wrench_array(msg), np.r_[f, R @ w_cut[3:] + np.cross(p, f)],
                         f"closure wrench {c}")
            assert_close(np.array(accelerations[key].points[0].accelerations),
                         fourbar.forward_dynamics(q, v, tau), "closed-loop accelerations")
    d = ros.wait_diagnostics("fourbar/forward_dynamics", lambda d: int(d["cycles"]) > 0)
    assert float(d["constraint residual"]) < 1e-9
