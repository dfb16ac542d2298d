"""Command subscriptions of the simulate plant, as processes (rclpy): reliable (a one-shot
command is never lost) and, for the held commands, transient local where the publisher offers
it (a plant started after its controller receives the held command).

- the plant's command subscriptions are reliable (the graph reports their QoS);
- 100 one-shot position commands, each published once: every one takes effect (the arm
  settles at each target in turn); likewise 100 one-shot velocity commands (the joint
  velocities in joint_states reach each commanded set in turn);
- a transient-local publisher publishes one position command, then the plant starts: the plant
  applies it (the arm settles at the target; without it, it would fall under gravity).

References: the targets sent. Every wait is bounded and waits on the effect it needs.
"""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, warm_numba_cache  # noqa: E402

ARM = str(URDF / "arm7.urdf")
Q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
# stiff drives: each target is reached within ~0.1 s
PLANT = {"urdf_path": ARM, "mode": "simulate", "rate_hz": 1000.0, "initial_positions": Q0.tolist(),
         "hold_initial_positions": True, "drive_kp": 10000.0, "drive_kd": 200.0,
         "wrench_joints": ["none"]}
TOL = 2e-3   # rad: a target is reached (the targets are 10 mrad apart)
# rad/s: a velocity command is reached (critically damped drives, kd 40 /s: the error of a
# 0.1 rad/s step is below this after ~0.15 s; the commands are 0.1 rad/s apart)
VELOCITY_TOL = 2e-3


@pytest.fixture(scope="module")
def ros():
    warm_numba_cache(mbd_ros.load(ARM))
    ros = Ros(salt=139)
    yield ros
    ros.close()


def reached(ros, topic, target):
    m = ros.last(topic)
    return m is not None and np.abs(np.array(m.position) - target).max() < TOL


def test_command_subscriptions_are_reliable(ros):
    ns = "/qos"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    ros.start("forward_dynamics", PLANT, remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, what="the plant")
    for topic, depth in ((f"{ns}/forward_dynamics/position_commands", 1),
                         (f"{ns}/forward_dynamics/velocity_commands", 1),
                         (f"{ns}/forward_dynamics/effort_commands", 1),
                         (f"{ns}/joint_commands", 10)):
        def plant_subscriptions(topic=topic):
            return [i for i in ros.node.get_subscriptions_info_by_topic(topic)
                    if i.node_name == "forward_dynamics"]
        # this process's graph learns of the subscriptions by discovery: wait for it
        ros.spin_until(lambda: plant_subscriptions(), 60.0, what=f"the subscription of {topic}")
        infos = plant_subscriptions()
        assert len(infos) == 1, (topic, infos)
        assert infos[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE, topic
        assert infos[0].qos_profile.durability == DurabilityPolicy.VOLATILE, topic


def test_every_one_shot_position_command_takes_effect(ros):
    ns = "/qos"
    topic = f"{ns}/joint_states"
    pub = ros.matched_publisher(Float64MultiArray, f"{ns}/forward_dynamics/position_commands")
    applied = 0
    missed = []
    for k in range(100):
        target = Q0.copy()
        target[k % 7] += 0.01 * (1 + k // 7) * (-1) ** k
        pub.publish(Float64MultiArray(data=target.tolist()))   # once
        try:
            ros.spin_until(lambda: reached(ros, topic, target), 15.0, what=f"command {k}")
            applied += 1
        except AssertionError:
            missed.append(k)
    assert applied == 100, f"{applied} of 100 one-shot commands took effect; missed {missed}"


def velocity_reached(ros, topic, target):
    m = ros.last(topic)
    return m is not None and np.abs(np.array(m.velocity) - target).max() < VELOCITY_TOL


def test_every_one_shot_velocity_command_takes_effect(ros):
    """100 velocity commands on ~/velocity_commands, each published once: every one is seen in
    joint_states (all joint velocities at the commanded ones). One joint moves per command, in
    turn, its sign alternating between its turns (7 joints: consecutive turns of a joint are an
    odd number of commands apart), so the arm drifts by at most one command's motion. The
    default drive gains (kp 400 /s^2, kd 40 /s): with the stiff gains of PLANT a velocity
    command of joint_1 from rest drives the coupled arm unstable at 1 kHz (the library's Plant
    does the same: it diverges without limits and saturates on the effort limits with them)."""
    ns = "/qos_velocity"
    topic = f"{ns}/joint_states"
    states = ros.subscribe(JointState, topic)
    ros.start("forward_dynamics", dict(PLANT, drive_kp=400.0, drive_kd=40.0),
              remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, what="the plant")
    pub = ros.matched_publisher(Float64MultiArray, f"{ns}/forward_dynamics/velocity_commands")
    applied = 0
    missed = []
    for k in range(100):
        target = np.zeros(7)
        target[k % 7] = 0.1 * (-1) ** k
        pub.publish(Float64MultiArray(data=target.tolist()))   # once
        try:
            ros.spin_until(lambda: velocity_reached(ros, topic, target), 15.0,
                           what=f"velocity command {k}")
            applied += 1
        except AssertionError:
            missed.append((k, np.round(ros.last(topic).velocity, 4).tolist()))
    assert applied == 100, f"{applied} of 100 one-shot commands took effect; missed {missed}"


def test_a_late_plant_gets_the_held_command_of_a_transient_local_publisher(ros):
    ns = "/late"
    latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = ros.publisher(Float64MultiArray, f"{ns}/forward_dynamics/position_commands", latched)
    target = Q0 + np.array([0.1, -0.1, 0.1, 0.1, -0.1, 0.1, -0.1])
    pub.publish(Float64MultiArray(data=target.tolist()))   # before the plant exists, once
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    # effort mode at start (no hold): without the held command the arm falls under gravity
    ros.start("forward_dynamics", dict(PLANT, hold_initial_positions=False), remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, what="the late plant")
    ros.spin_until(lambda: reached(ros, f"{ns}/joint_states", target), 30.0,
                   what="the late plant to hold the transient-local command")
    assert pub.get_subscription_count() >= 1
