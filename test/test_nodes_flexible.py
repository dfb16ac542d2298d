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
        child = ros.start("forward_dynamics", {"urdf_path": ARM, "flexible_path": FLEX,
                                               "mode": "simulate",
                                       "rate_hz": RATE, "integrator": "rk4", "publish_clock": True,
                                       "enforce_limits": False,   # compared with free RK4 steps
                                       "initial_positions": [0.2, -0.3],
                                       "wrench_joints": ["elbow"]}, remaps={"__ns": ns})
        ros.spin_until(lambda: len(elastic) > 200, READY_TIMEOUT, what=f"{ns} elastic_states")
        # the node's default codegen: True means "where there are generated kernels" (a raw
        # UserWarning for the flexible links was printed at every start of flexible_arm.launch)
        out = child.output()
        assert "UserWarning" not in out and "flexible kernels run" in out, out[-2000:]
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


def test_inverse_dynamics_node_commands_the_rigid_joints(robot):
    """Computed-torque and gravity modes with a flexible forearm: the node commands the two joints;
    the elastic coordinates are taken at rest (q_f = v_f = qdd_f = 0), so its efforts equal the
    library's inverse dynamics at that state (relative 1e-9)."""
    from ros_harness import joint_state, now_stamp, trajectory_point
    names = ["shoulder", "elbow"]
    ros = Ros(salt=89)
    try:
        common = {"urdf_path": ARM, "flexible_path": FLEX, "max_message_age": 5.0,
                  "limit_efforts": False}
        ros.start("inverse_dynamics", {**common, "mode": "gravity"}, name="flex_grav")
        ros.start("inverse_dynamics", {**common, "mode": "computed_torque", "kp": [50.0, 40.0],
                                       "kd": [5.0, 4.0]}, name="flex_ct")
        grav = ros.subscribe(JointState, "/flex_grav/efforts")
        ct = ros.subscribe(JointState, "/flex_ct/efforts")
        q, v = np.array([0.4, -0.6]), np.array([0.3, -0.2])
        ref_q, ref_v, ref_a = np.array([0.5, -0.5]), np.array([0.0, 0.1]), np.array([1.0, -2.0])
        point = trajectory_point(names, ref_q, ref_v, ref_a)
        full_q = np.zeros(robot.nq)
        full_q[:2] = q
        full_v = np.zeros(robot.nv)
        full_v[:2] = v
        expected_grav = robot.gravity_forces(full_q)[:2]
        qdd = np.zeros(robot.nv)
        qdd[:2] = ref_a + np.array([50.0, 40.0]) * (ref_q - q) + np.array([5.0, 4.0]) * (ref_v - v)
        expected_ct = robot.inverse_dynamics(full_q, full_v, qdd)[:2]

        def close(messages, expected):
            return bool(messages) and np.allclose(messages[-1].effort, expected, rtol=1e-9,
                                                  atol=1e-12)
        ros.spin_until(lambda: close(ros.messages("/flex_grav/efforts"), expected_grav)
                       and close(ros.messages("/flex_ct/efforts"), expected_ct),
                       READY_TIMEOUT, every=0.2, what="the expected efforts of both nodes",
                       action=lambda: (ros.publish(JointTrajectory, "/flex_ct/reference", point),
                                       ros.publish(JointState, "joint_states",
                                                   joint_state(now_stamp(ros), names, q, v))))
        assert list(ros.messages("/flex_grav/efforts")[-1].name) == names
    finally:
        ros.close()
