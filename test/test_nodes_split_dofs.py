"""Cylindrical and universal joints in the nodes' JointState messages, as processes (rclpy).

Each dof of such a joint is a JointState entry named `<joint>/<component>` (cylindrical:
`/angle`, `/displacement`; universal: `/angle1`, `/angle2`; mbd_ros.joint_map). On a chain
cylindrical - universal - revolute:

- the simulate plant publishes joint_states with those names, accepts effort and position
  commands by those names on joint_commands (a position command is tracked to 1e-3), and every
  published state's ~/accelerations equal Pinocchio's ABA of the state and effort it published
  (cylindrical = revolute + prismatic, universal = two revolutes, massless bodies between);
- the observe node reads joint_states by those names: ~/accelerations = Pinocchio's ABA;
- the inverse dynamics node (gravity mode) reads them and publishes ~/efforts by those names,
  equal to Pinocchio's generalized gravity.
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
                         warm_numba_cache)
from test_joint_types import CYLINDRICAL_CHAIN, UNIVERSAL_CHAIN, _pin_model, _urdf  # noqa: E402

CHAIN = [CYLINDRICAL_CHAIN[0], UNIVERSAL_CHAIN[2], UNIVERSAL_CHAIN[1]]   # cyl0, uni2, elbow
NAMES = ["cyl0/angle", "cyl0/displacement", "uni2/angle1", "uni2/angle2", "elbow"]
SIM = "/split_sim"


@pytest.fixture(scope="module")
def urdf_path():
    f = tempfile.NamedTemporaryFile("w", suffix=".urdf", prefix="mbd_ros_split_", delete=False)
    f.write(_urdf(CHAIN))
    f.close()
    warm_numba_cache(mbd_ros.load(f.name))
    return f.name


@pytest.fixture(scope="module")
def pin_model():
    return _pin_model(CHAIN)   # q and v in the same order as ours (test_joint_types)


@pytest.fixture(scope="module")
def ros(urdf_path):
    ros = Ros(salt=83)
    common = {"urdf_path": urdf_path, "wrench_joints": ["none"], "max_message_age": 0.0,
              "limit_efforts": False, "diagnostics_period": 0.2}
    ros.start("forward_dynamics", {**common, "mode": "simulate", "rate_hz": 500.0,
                                   "command_timeout": 0.0, "enforce_limits": False},
              remaps={"__ns": SIM})
    ros.start("forward_dynamics", {**common, "mode": "observe"}, name="split_observe")
    ros.start("inverse_dynamics", {**common, "mode": "gravity"}, name="split_id")
    ros.subscribe(JointState, f"{SIM}/joint_states")
    ros.subscribe(JointTrajectory, f"{SIM}/forward_dynamics/accelerations")
    ros.subscribe(JointTrajectory, "/split_observe/accelerations")
    ros.subscribe(JointState, "/split_id/efforts")
    q0 = np.zeros(5)
    ros.spin_until(lambda: (ros.messages(f"{SIM}/joint_states")
                            and ros.messages("/split_observe/accelerations")
                            and ros.messages("/split_id/efforts")), READY_TIMEOUT, every=0.2,
                   what="the first outputs of the three nodes",
                   action=lambda: ros.publish(JointState, "joint_states",
                                              joint_state(now_stamp(ros), NAMES, q0, q0, q0)))
    yield ros
    ros.close()


def _accelerations_by_stamp(ros, topic):
    return {stamp_key(m.header.stamp): m for m in ros.messages(topic)}


def _check_states_against_aba(ros, pin_model, states, what):
    """Every joint state of `states` with its ~/accelerations: qdd = Pinocchio ABA."""
    data = pin_model.createData()
    accelerations = _accelerations_by_stamp(ros, f"{SIM}/forward_dynamics/accelerations")
    checked = 0
    for msg in states:
        out = accelerations.get(stamp_key(msg.header.stamp))
        if out is None:
            continue
        assert list(out.joint_names) == NAMES
        q, v, tau = (np.array(x) for x in (msg.position, msg.velocity, msg.effort))
        expected = pin.aba(pin_model, data, q, v, tau)
        assert_close(out.points[0].accelerations, expected, f"{what}: plant accelerations")
        checked += 1
    assert checked >= 0.5 * len(states), f"{what}: only {checked} of {len(states)} matched"


def test_plant_publishes_and_tracks_cylindrical_and_universal_dofs(ros, pin_model):
    states = ros.messages(f"{SIM}/joint_states")
    assert list(states[-1].name) == NAMES
    topic = f"{SIM}/joint_commands"
    pub = ros.matched_publisher(JointState, topic)
    # effort by name (any order): the plant applies it to the named dofs
    effort = {"uni2/angle2": 0.3, "cyl0/displacement": 4.0, "elbow": -0.2, "cyl0/angle": 0.5,
              "uni2/angle1": -0.1}
    msg = joint_state(now_stamp(ros), list(effort), [], [], list(effort.values()))
    msg.position, msg.velocity = [], []
    first = len(ros.received[f"{SIM}/joint_states"])
    scanned = [first]   # each state looked at once: the condition runs after every message

    def applied():
        states = ros.received[f"{SIM}/joint_states"]
        for _, m in states[scanned[0]:]:
            if np.allclose(m.effort, [effort[n] for n in NAMES]):
                return True
        scanned[0] = len(states)
        return False
    ros.spin_until(applied, 20.0, every=0.1, action=lambda: pub.publish(msg),
                   what="the effort command applied")
    ros.spin(0.3)
    _check_states_against_aba(ros, pin_model, ros.messages(f"{SIM}/joint_states")[first:],
                              "effort command")
    # position command by name: tracked by the emulated drives
    target = {"cyl0/angle": 0.3, "cyl0/displacement": 0.05, "uni2/angle1": 0.2,
              "uni2/angle2": -0.1, "elbow": 0.4}
    command = joint_state(now_stamp(ros), list(target), list(target.values()))
    pub.publish(command)

    def settled():
        m = ros.last(f"{SIM}/joint_states")
        return np.allclose(m.position, [target[n] for n in NAMES], atol=1e-3) and \
            np.abs(m.velocity).max() < 1e-2
    ros.spin_until(settled, 30.0, every=1.0, action=lambda: pub.publish(command),
                   what="the position command tracked")
    last = ros.messages(f"{SIM}/joint_states")[-200:]
    _check_states_against_aba(ros, pin_model, last, "position command")


def test_observe_and_inverse_nodes_read_cylindrical_and_universal_dofs(ros, pin_model):
    data = pin_model.createData()
    rng = np.random.default_rng(5)
    for k in range(3):
        q, v, tau = rng.uniform(-1, 1, 5), rng.uniform(-2, 2, 5), rng.uniform(-3, 3, 5)
        order = rng.permutation(5)     # names in any order
        stamp = now_stamp(ros, offset_ns=1000 * (k + 1))
        key = stamp_key(stamp)
        msg = joint_state(stamp, [NAMES[i] for i in order], q[order], v[order], tau[order])

        def answered():
            acc = [m for m in ros.messages("/split_observe/accelerations")
                   if stamp_key(m.header.stamp) == key]
            eff = [m for m in ros.messages("/split_id/efforts") if stamp_key(m.header.stamp) == key]
            return (acc[0], eff[0]) if acc and eff else None
        ros.spin_until(lambda: answered() is not None, 10.0, every=0.5,
                       action=lambda: ros.publish(JointState, "joint_states", msg),
                       what="observe and inverse dynamics outputs for a state")
        acc, eff = answered()
        assert list(acc.joint_names) == NAMES and list(eff.name) == NAMES
        assert_close(acc.points[0].accelerations, pin.aba(pin_model, data, q, v, tau),
                     "observe accelerations")
        assert_close(eff.effort, pin.computeGeneralizedGravity(pin_model, data, q),
                     "inverse dynamics gravity efforts")
