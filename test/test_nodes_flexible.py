"""Forward dynamics node with a flexible link, simulate mode, as a process: ~/elastic_states
carries the elastic coordinates (names 'forearm/mode_k'), and consecutive published states
follow the library's RK4 step of the whole state (joints and modes)."""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, REPO, URDF, Ros, stamp_key, warm_numba_cache  # noqa: E402

ARM = str(URDF / "flexible_arm.urdf")
FLEX = str(REPO / "config" / "flexible_arm.yaml")
RATE = 4000.0   # RK4 stability: the free-joint arm's highest mode is 835 Hz (highest_frequency)
DT = 1.0 / RATE


@pytest.fixture(scope="module")
def robot():
    r = mbd_ros.load(ARM, flexible=FLEX)
    warm_numba_cache(r)
    return r


def test_elastic_states_follow_rk4(robot):
    ros = Ros(salt=83)
    try:
        ns = "/flex"
        ros.subscribe(JointTrajectory, f"{ns}/forward_dynamics/accelerations")
        states = ros.subscribe(JointState, f"{ns}/joint_states")
        elastic = ros.subscribe(JointState, f"{ns}/forward_dynamics/elastic_states")
        ros.start("forward_dynamics", {"urdf_path": ARM, "flexible_path": FLEX, "mode": "simulate",
                                       "rate_hz": RATE, "integrator": "rk4", "publish_clock": True,
                                       "initial_positions": [0.2, -0.3],
                                       "wrench_joints": ["elbow"]}, remaps={"__ns": ns})
        ros.spin_until(lambda: len(elastic) > 200, READY_TIMEOUT, what=f"{ns} elastic_states")
        js = {stamp_key(m.header.stamp): m for m in ros.messages(f"{ns}/joint_states")}
        el = {stamp_key(m.header.stamp): m for m in ros.messages(f"{ns}/forward_dynamics/elastic_states")}
        keys = sorted(k for k in js if k in el)
        assert list(el[keys[0]].name) == robot.elastic_names
        pairs = 0
        moved = 0.0
        for a, b in zip(keys, keys[1:]):
            if b - a != round(DT * 1e9):
                continue
            q = np.concatenate([js[a].position, el[a].position])
            v = np.concatenate([js[a].velocity, el[a].velocity])
            tau = np.concatenate([js[a].effort, el[a].effort])
            q1, v1 = robot.step(q, v, tau, DT, integrator="rk4")
            np.testing.assert_allclose(np.concatenate([js[b].position, el[b].position]), q1,
                                       rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(np.concatenate([js[b].velocity, el[b].velocity]), v1,
                                       rtol=1e-9, atol=1e-9)
            moved = max(moved, np.abs(el[b].position).max())
            pairs += 1
        assert pairs > 50
        assert moved > 0.0          # the falling arm deforms its forearm
    finally:
        ros.close()
