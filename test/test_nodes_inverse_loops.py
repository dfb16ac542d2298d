"""The inverse dynamics node's feedforward mode on a closed-loop robot (the four-bar, crank
actuated): the reference of the commanded joint is completed to a loop-consistent state (the
other joints solved from the loop) before the inverse dynamics. Before, the measured dependent
joints and qdd 0 there were passed on, which inverse_dynamics refuses for any moving state: the
node published nothing (an outside audit). Checked against a physical invariant, not the same
library calls: for this one-dof mechanism the crank torque is the power balance
tau omega = dE/dt + the URDF dampers' power along the reference motion."""
from __future__ import annotations

import re

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import (CONFIG, READY_TIMEOUT, URDF, Ros, joint_state, now_stamp,  # noqa: E402
                         trajectory_point, warm_numba_cache)

FOURBAR = str(URDF / "fourbar.urdf")
CLOSURES = str(CONFIG / "fourbar_closures.yaml")
CRANK = "crank_joint"


def loop_state(robot, crank, omega):
    """(q, v) on the loop with the crank at (crank, omega)."""
    i = robot.joint_names.index(CRANK)
    q = robot.neutral() if not hasattr(loop_state, "q") else loop_state.q.copy()
    q[i] = crank
    q = np.asarray(robot.assemble(q, independent=[CRANK]), dtype=float)
    loop_state.q = q
    v = np.zeros(robot.nv)
    v[i] = omega
    return q, np.asarray(robot.project_velocity(q, v), dtype=float)


def power_balance_torque(robot, crank, omega, alpha, h=1e-4):
    """tau of the crank from tau omega = dE/dt + P_damping at t = 0 of the motion
    crank(t) = crank + omega t + alpha t^2 / 2 (central difference of E = KE + PE: O(h^2))."""
    def energy(t):
        q, v = loop_state(robot, crank + omega * t + 0.5 * alpha * t * t, omega + alpha * t)
        return robot.kinetic_energy(q, v) + robot.potential_energy(q)
    q, v = loop_state(robot, crank, omega)
    damping_power = float(robot.damping_forces(v) @ v)
    return ((energy(h) - energy(-h)) / (2 * h) + damping_power) / omega


def test_feedforward_on_a_closed_loop_completes_the_reference_to_the_loop():
    robot = mbd_ros.load(FOURBAR, closures=CLOSURES)
    warm_numba_cache(robot)
    names = list(robot.joint_names)
    crank_ref, omega_ref, alpha_ref = 0.5, 0.9, 2.0
    expected = power_balance_torque(robot, crank_ref, omega_ref, alpha_ref)
    measured_q, measured_v = loop_state(robot, 0.4, 0.7)      # moving, 0.1 rad behind
    ros = Ros(salt=149)
    try:
        ns = "/ffloop"
        efforts = ros.subscribe(JointState, f"{ns}/inverse_dynamics/efforts")
        ros.start("inverse_dynamics", {"urdf_path": FOURBAR, "closures_path": CLOSURES,
                                       "mode": "feedforward", "joints": [CRANK],
                                       "max_message_age": 5.0, "limit_efforts": False},
                  remaps={"__ns": ns})

        def publish():
            ros.publish(JointTrajectory, f"{ns}/inverse_dynamics/reference",
                        trajectory_point([CRANK], [crank_ref], [omega_ref], [alpha_ref]))
            ros.publish(JointState, f"{ns}/joint_states",
                        joint_state(now_stamp(ros), names, measured_q, measured_v))

        def answered():
            return bool(efforts) and abs(efforts[-1][1].effort[0] - expected) <= \
                1e-6 * max(1.0, abs(expected))
        ros.spin_until(answered, READY_TIMEOUT, every=0.2, action=publish,
                       what="feedforward efforts of the four-bar")
    finally:
        ros.close()
    # (the tolerance: the central difference's O(h^2) error, |E'''| h^2 / 6, far below it)
    assert abs(expected) > 1e-3     # the motion needs a torque: the check is not vacuous


def test_a_state_with_open_loops_is_warned_on_the_ros_log_and_counted():
    """A measured state whose loops are open (by 0.05 rad here: beyond LOOP_RESIDUAL_WARNING)
    is used as given with a LoopResidualWarning: on the node's ROS logger (so on /rosout, with
    the node's name), throttled, every occurrence counted on /diagnostics. Before, Python
    printed it on the node's stderr, once per source location, and never counted it."""
    from rcl_interfaces.msg import Log
    from mbd_ros.robot.constraints import LOOP_RESIDUAL_WARNING
    robot = mbd_ros.load(FOURBAR, closures=CLOSURES)
    warm_numba_cache(robot)
    names = list(robot.joint_names)
    q, v = loop_state(robot, 0.4, 0.0)
    q[names.index(CRANK)] += 0.05                 # the loop no longer closes
    assert robot.closure_residual(q, v)[0] > LOOP_RESIDUAL_WARNING
    ros = Ros(salt=151)
    try:
        ns = "/openloop"
        efforts = ros.subscribe(JointState, f"{ns}/inverse_dynamics/efforts")
        log = ros.subscribe(Log, "/rosout")
        ros.start("inverse_dynamics", {"urdf_path": FOURBAR, "closures_path": CLOSURES,
                                       "mode": "gravity", "joints": [CRANK],
                                       "max_message_age": 5.0, "diagnostics_period": 0.2},
                  remaps={"__ns": ns})

        def publish():
            ros.publish(JointState, f"{ns}/joint_states", joint_state(now_stamp(ros), names, q, v))

        def warned():
            return len(efforts) >= 3 and any(
                "LoopResidualWarning" in m.msg and "loops are open" in m.msg
                and m.name.endswith("inverse_dynamics") and m.level == Log.WARN
                for _, m in log)
        ros.spin_until(warned, READY_TIMEOUT, every=0.1, action=publish,
                       what="the node's LoopResidualWarning on /rosout")
        answered = len(efforts)
        counts = ros.wait_diagnostics(
            f"{ns.strip('/')}/inverse_dynamics",
            lambda d: int(d.get("warnings LoopResidualWarning", 0)) >= answered,
            what="the warnings counted on /diagnostics")
        assert int(counts["warnings LoopResidualWarning"]) >= answered
        # throttled: the log has fewer of them than the node computed
        lines = [m for _, m in log if "LoopResidualWarning" in m.msg]
        assert len(lines) < int(counts["warnings LoopResidualWarning"]) or len(lines) == 1
        # and not Python's stderr line ("<file>.py:<line>: LoopResidualWarning: ...")
        assert not re.search(r"\.py:\d+: \w*Warning", ros.children[0].output()), \
            ros.children_output(stacks=False)
    finally:
        ros.close()
