"""Forward dynamics node with force elements (forces_path), as a process: the simulated double
wishbone publishes ~/force_elements (JointState: strut length, rate, tension) whose values equal
the library's force_element_values at the published joint state, and its joint_states follow
the library's simulation (the strut acts in the plant)."""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, stamp_key  # noqa: E402

CONFIG = str(URDF.parent / "config" / "double_wishbone.yaml")   # closures and the strut
SUSPENSION = str(URDF / "double_wishbone.urdf")


@pytest.fixture(scope="module")
def robot():
    r = mbd_ros.load(SUSPENSION, closures=CONFIG, forces=CONFIG)
    q, z = r.neutral(), np.zeros(r.nv)     # warm numba's cache before the node starts
    qdd = r.forward_dynamics(q, z, z)       # (a passive mechanism: only its own motion has
    r.joint_wrenches(q, z, qdd)             #  drive torques, zero)
    r.integrate(q, z, 1e-3)
    return r


def test_simulated_suspension_publishes_its_strut(robot):
    ros = Ros(salt=73)
    try:
        ns = "/suspension"
        ros.start("forward_dynamics", {"urdf_path": SUSPENSION, "closures_path": CONFIG,
                                       "forces_path": CONFIG, "mode": "simulate", "rate_hz": 200.0,
                                       "integrator": "rk4", "initial_positions": [0.1, 0.0, 0.0],
                                       "wrench_joints": ["none"]}, remaps={"__ns": ns})
        states = ros.subscribe(JointState, f"{ns}/joint_states")
        forces = ros.subscribe(JointState, f"{ns}/forward_dynamics/force_elements")
        ros.spin_until(lambda: len(forces) > 20 and len(states) > 20, READY_TIMEOUT,
                       what=f"{ns}/forward_dynamics/force_elements")
        by_stamp = {stamp_key(m.header.stamp): m for m in ros.messages(f"{ns}/joint_states")}
        checked = 0
        for msg in ros.messages(f"{ns}/forward_dynamics/force_elements"):
            state = by_stamp.get(stamp_key(msg.header.stamp))
            if state is None:
                continue
            assert list(msg.name) == ["strut"]
            values = robot.force_element_values(np.array(state.position), np.array(state.velocity))
            np.testing.assert_allclose(msg.position, values.length, rtol=0, atol=1e-12)
            np.testing.assert_allclose(msg.velocity, values.rate, rtol=0, atol=1e-9)
            np.testing.assert_allclose(msg.effort, values.force, rtol=1e-12, atol=1e-9)
            checked += 1
        assert checked > 10
        # the plant moved away from its start under gravity and the strut
        last = np.array(ros.messages(f"{ns}/joint_states")[-1].position)
        assert abs(last[0] - 0.1) > 1e-3
    finally:
        ros.close()
