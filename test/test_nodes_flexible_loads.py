"""Forward dynamics node in simulate mode, as a process, with (a) the flexible arm plus force
elements (config/flexible_arm_forces.yaml: a spring-damper ending on the flexible forearm, an elbow
spring) and (b) the flexible four-bar (urdf/flexible_fourbar.urdf + config/flexible_fourbar.yaml:
a loop closed at the flexible rocker's deformed tip). Reference: the library's own robot.step
(RK4) of the whole state (joints and modes) from each published state, as the node runs it; for
the loop also the closure residual of every published state. Only the messages received are
compared (no rate assertion); waits are bounded (READY_TIMEOUT)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, REPO, URDF, Ros, stamp_key, warm_numba_cache  # noqa: E402

ARM = str(URDF / "flexible_arm.urdf")
ARM_FLEX = str(REPO / "config" / "flexible_arm.yaml")
ARM_FORCES = str(REPO / "config" / "flexible_arm_forces.yaml")
FOURBAR = str(URDF / "flexible_fourbar.urdf")
FOURBAR_YAML = str(REPO / "config" / "flexible_fourbar.yaml")
RATE = 4000.0   # RK4 stability: highest frequencies (free joints) 835 Hz (arm), 759 Hz (four-bar)
DT = 1.0 / RATE


def published_pairs(ros, ns, robot):
    """[(q, v, tau, q_next, v_next)] of consecutive published states one step apart."""
    js = {stamp_key(m.header.stamp): m for m in ros.messages(f"{ns}/joint_states")}
    el = {stamp_key(m.header.stamp): m
          for m in ros.messages(f"{ns}/forward_dynamics/elastic_states")}
    keys = sorted(k for k in js if k in el)
    assert keys, "no joint_states / elastic_states pair with the same stamp"
    assert list(el[keys[0]].name) == robot.elastic_names
    assert list(js[keys[0]].name) == robot.joint_names

    def state(k):
        return (np.concatenate([js[k].position, el[k].position]),
                np.concatenate([js[k].velocity, el[k].velocity]),
                np.concatenate([js[k].effort, el[k].effort]))
    pairs = []
    for a, b in zip(keys, keys[1:]):
        if b - a == round(DT * 1e9):
            pairs.append(state(a) + state(b)[:2])
    return pairs


def run_node(ros, ns, params, count=400):
    ros.subscribe(JointState, f"{ns}/joint_states")
    elastic = ros.subscribe(JointState, f"{ns}/forward_dynamics/elastic_states")
    ros.start("forward_dynamics", {"mode": "simulate", "rate_hz": RATE, "integrator": "rk4",
                                   "publish_clock": True, "enforce_limits": False, **params},
              remaps={"__ns": ns})
    ros.spin_until(lambda: len(elastic) > count, READY_TIMEOUT, what=f"{ns} elastic_states")


def test_flexible_arm_with_force_elements_follows_rk4():
    """Each published state is the library's RK4 step (with the force elements) of the previous
    one (relative 1e-9); the spring loads the forearm, which deforms."""
    robot = mbd_ros.load(ARM, flexible=ARM_FLEX, forces=ARM_FORCES)
    warm_numba_cache(robot)
    ros = Ros(salt=97)
    try:
        ns = "/flexforce"
        run_node(ros, ns, {"urdf_path": ARM, "flexible_path": ARM_FLEX,
                           "forces_path": ARM_FORCES, "initial_positions": [0.2, -0.3]})
        pairs = published_pairs(ros, ns, robot)
        assert len(pairs) > 50
        moved = 0.0
        for q, v, tau, q_next, v_next in pairs:
            q1, v1 = robot.step(q, v, tau, DT, integrator="rk4")
            np.testing.assert_allclose(q_next, q1, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(v_next, v1, rtol=1e-9, atol=1e-9)
            moved = max(moved, np.abs(q_next[robot.elastic_q_indices]).max())
        assert moved > 1e-6          # the forearm deforms
        # the elements act: the same step without them differs
        plain = mbd_ros.load(ARM, flexible=ARM_FLEX)
        q, v, tau, q_next, v_next = pairs[-1]
        assert np.abs(plain.step(q, v, tau, DT, integrator="rk4")[1] - v_next).max() > 1e-6
    finally:
        ros.close()


def test_flexible_fourbar_follows_rk4_with_the_loop_closed():
    """The flexible four-bar falls under gravity from a closed configuration: each published
    state is the library's robot.step (RK4, the node's Baumgarte gains, the loop re-closed once a
    residual passes 1e-10, as the Plant re-closes it) of the previous one (relative 1e-9), and
    every published state keeps the loop closed (position residual < 1e-8 m, velocity residual
    < 1e-6 m/s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(FOURBAR, flexible=FOURBAR_YAML, closures=FOURBAR_YAML)
    warm_numba_cache(robot)
    from test_flexible_loops import assembled
    q0 = assembled(robot, crank=0.7)
    ros = Ros(salt=101)
    try:
        ns = "/flexloop"
        run_node(ros, ns, {"urdf_path": FOURBAR, "flexible_path": FOURBAR_YAML,
                           "closures_path": FOURBAR_YAML,
                           # all three joints named, so that the node starts from this
                           # assembly branch (the crank alone would let it assemble another)
                           "joints": list(robot.joint_names),
                           "baumgarte_kp": 100.0, "baumgarte_kd": 20.0,
                           "initial_positions": [float(x) for x in q0[:3]]})
        pairs = published_pairs(ros, ns, robot)
        assert len(pairs) > 50
        robot.baumgarte = (0.5 * 20.0, 100.0 ** 0.5)     # the node's gains (kd / 2, sqrt(kp))
        moved = 0.0
        for q, v, tau, q_next, v_next in pairs:
            # the node's plant integrates with the Baumgarte-stabilised constraint and re-closes
            # the loop as robot.step does (robot.close_loops_after_step), once a residual passes
            # its tolerance (a step here and there: before session 30 it did not)
            q1, v1 = robot.step(q, v, tau, DT, integrator="rk4")
            np.testing.assert_allclose(q_next, q1, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(v_next, v1, rtol=1e-9, atol=1e-9)
            position, velocity = robot.closure_residual(q_next, v_next)
            assert position < 1e-8 and velocity < 1e-6
            moved = max(moved, np.abs(q_next[robot.elastic_q_indices]).max())
        assert moved > 1e-7          # the rocker bends
        assert abs(pairs[-1][3][0] - q0[0]) > 1e-4     # the mechanism moved
    finally:
        ros.close()
