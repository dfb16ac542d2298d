"""Mimic joints in the nodes (parameter `mimic: true`), as processes (rclpy).

- simulate plant, closed loop + mimic (the four-bar with a flap mimicking the crank,
  test_mimic_loops.py): joint_states report the flap on its leader (q_flap = 0.7 q_crank + 0.2)
  at every state, and the published motion equals the library's robot.step (rk4, the node's
  Baumgarte gains, the loops re-closed as the Plant re-closes them) step by step;
- observe mode on the same robot: ~/accelerations = the coupled forward dynamics (independently
  checked against a hand-built Pinocchio constraint model in test_mimic_loops.py), and they
  keep the coupling;
- inverse dynamics (feedforward) on a gripper whose finger_b mimics finger_a: the reference names
  only wrist and finger_a (the default `joints` leave the mimic joint out); the efforts equal
  T^T RNEA(q, v, qdd) of Pinocchio's tree for the coupled reference (T the coupling matrix).
Bounded in time: every wait has a timeout.
"""
from __future__ import annotations

import tempfile

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")
from conftest import import_oracle  # noqa: E402
pin = import_oracle("pinocchio")

from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import assert_close  # noqa: E402
from ros_harness import (READY_TIMEOUT, Ros, joint_state, now_stamp, stamp_key,  # noqa: E402
                         trajectory_point, warm_numba_cache)
from test_mimic import GRIPPER  # noqa: E402
from test_mimic_loops import CLOSURES, OFFSET, RATIO, XML  # noqa: E402

RATE = 500.0
SIM = "/msim"
GRIP = "/grip"
FOURBAR_NAMES = ["crank_joint", "coupler_joint", "rocker_joint", "flap_joint"]


def _file(text, suffix):
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, prefix="mbd_ros_mimic_", delete=False)
    f.write(text)
    f.close()
    return f.name


@pytest.fixture(scope="module")
def paths():
    fourbar, gripper = _file(XML, ".urdf"), _file(GRIPPER, ".urdf")
    warm_numba_cache(mbd_ros.load(fourbar, closures=CLOSURES, mimic=True))
    warm_numba_cache(mbd_ros.load(gripper, mimic=True))
    return fourbar, gripper


@pytest.fixture(scope="module")
def ros(paths):
    fourbar, gripper = paths
    ros = Ros(salt=97)
    common = {"wrench_joints": ["none"], "max_message_age": 0.0, "limit_efforts": False,
              "diagnostics_period": 0.2, "mimic": True, "passive_forces": False}
    loop = {**common, "urdf_path": fourbar, "closures_path": CLOSURES}
    ros.start("forward_dynamics", {**loop, "mode": "simulate", "rate_hz": RATE,
                                   "publish_clock": True, "enforce_limits": False},
              remaps={"__ns": SIM})
    ros.start("forward_dynamics", {**loop, "mode": "observe"}, name="mimic_observe")
    ros.start("inverse_dynamics", {**common, "urdf_path": gripper, "mode": "feedforward",
                                   "reference_timeout": 0.0}, remaps={"__ns": GRIP})
    ros.subscribe(JointState, f"{SIM}/joint_states")
    ros.subscribe(JointTrajectory, "/mimic_observe/accelerations")
    ros.subscribe(JointState, f"{GRIP}/inverse_dynamics/efforts")
    ros.spin_until(lambda: ros.messages(f"{SIM}/joint_states"), READY_TIMEOUT,
                   what="the plant's first joint_states")
    yield ros
    ros.close()


def test_plant_with_mimic_in_a_closed_loop_equals_the_library(ros, paths):
    robot = mbd_ros.load(paths[0], closures=CLOSURES, mimic=True, passive_forces=False)
    robot.baumgarte = (0.5 * 20.0, 100.0 ** 0.5)     # the node's baumgarte_kd / kp defaults
    # compared step by step (each state against one robot.step from the state before it):
    # the test's subscription may match after the plant started, and a chaotic motion would
    # amplify round-off over a long run
    ros.spin_until(lambda: len(ros.received[f"{SIM}/joint_states"]) > 400, 60.0,
                   what="400 states of the simulation")
    states = {int(round(stamp_key(m.header.stamp) * 1e-9 * RATE)): m
              for m in ros.messages(f"{SIM}/joint_states")}
    compared = 0
    for k in sorted(states):
        msg = states[k]
        assert list(msg.name) == FOURBAR_NAMES
        q, v = np.array(msg.position), np.array(msg.velocity)
        assert abs(q[3] - RATIO * q[0] - OFFSET) < 1e-9 and abs(v[3] - RATIO * v[0]) < 1e-9
        before = states.get(k - 1)
        if before is None:
            continue
        # one robot.step: the Simulator's RK4 step, then the loop and the coupling re-closed
        # once a residual passes 1e-10, as the Plant does (robot.close_loops_after_step)
        q_step, v_step = robot.step(np.array(before.position), np.array(before.velocity),
                                    np.zeros(4), 1.0 / RATE, "rk4")
        assert_close(q, q_step, f"plant state {k} vs one robot.step")
        assert_close(v, v_step, f"plant velocity {k} vs one robot.step")
        compared += 1
    assert compared > 300
    assert np.ptp([states[k].position[0] for k in states]) > 0.1   # it moved (gravity)


def test_observe_mode_with_mimic_in_a_closed_loop(ros, paths):
    robot = mbd_ros.load(paths[0], closures=CLOSURES, mimic=True, passive_forces=False)
    q = robot.assemble(robot.apply_mimic(np.array([1.0, 0.0, 0.0, 0.0])))
    v = robot.project_velocity(q, np.array([1.5, 0.0, 0.0, 0.0]))
    tau = np.array([0.1, 0.0, 0.0, 0.0])
    stamp = now_stamp(ros)
    key = stamp_key(stamp)
    msg = joint_state(stamp, FOURBAR_NAMES, q, v, tau)

    def found():
        return [m for m in ros.messages("/mimic_observe/accelerations")
                if stamp_key(m.header.stamp) == key]
    ros.spin_until(lambda: found(), 20.0, every=0.5,
                   action=lambda: ros.publish(JointState, "joint_states", msg),
                   what="observe accelerations")
    qdd = np.array(found()[0].points[0].accelerations)
    assert_close(qdd, robot.forward_dynamics(q, v, tau), "observe accelerations")
    assert qdd[3] == pytest.approx(RATIO * qdd[0], abs=1e-9)


def test_inverse_dynamics_feedforward_drives_the_mimic_joint_through_its_leader(ros):
    model = pin.buildModelFromXML(GRIPPER)      # the tree, fingers independent
    data = model.createData()
    coupling = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.5]])
    q_ref, v_ref, a_ref = np.array([0.4, 0.3]), np.array([1.0, -2.0]), np.array([0.5, 3.0])
    measured = np.array([0.1, 0.2, -0.2])
    topic = f"{GRIP}/inverse_dynamics/efforts"

    def publish():
        ros.publish(JointTrajectory, f"{GRIP}/inverse_dynamics/reference",
                    trajectory_point(["wrist", "finger_a"], q_ref, v_ref, a_ref))
        ros.publish(JointState, f"{GRIP}/joint_states",
                    joint_state(now_stamp(ros), ["wrist", "finger_a", "finger_b"], measured,
                                np.zeros(3)))
    q = coupling @ q_ref + np.array([0.0, 0.0, 0.1])
    expected = coupling.T @ pin.rnea(model, data, q, coupling @ v_ref, coupling @ a_ref)

    def matches():
        m = ros.messages(topic)
        return bool(m) and np.allclose(m[-1].effort, expected, rtol=1e-9, atol=1e-9)
    ros.spin_until(matches, 30.0, every=0.2, action=publish, what="feedforward efforts")
    assert list(ros.messages(topic)[-1].name) == ["wrist", "finger_a"]
