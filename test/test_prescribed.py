"""Prescribed (rheonomic) joint motion: forward_dynamics(..., prescribed={joint: qdd}) and
step(..., prescribed={joint: trajectory}).

Reference: inverse dynamics of the full trajectory. Along a simulated motion with some joints
prescribed, the torques the prescribed joints needed must equal Pinocchio's RNEA of the full
(q, v, qdd) at those joints (minus the drive torques given), and be zero-consistent on the free
joints; for a closed loop, the library's closed-loop inverse dynamics of the full motion.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import EPS, assert_close
from oracle import PinOracle, parse_urdf, pin_model_from_xml

import mbd_ros

ROOT = Path(__file__).resolve().parent.parent
ARM = ROOT / "urdf" / "arm7.urdf"


def trajectory(amplitude, frequency, offset):
    def at(t):
        w = 2 * np.pi * frequency
        return (offset + amplitude * np.sin(w * t), amplitude * w * np.cos(w * t),
                -amplitude * w * w * np.sin(w * t))
    return at


def test_tree_prescribed_torques_equal_inverse_dynamics_of_the_trajectory(pin):
    xml = ARM.read_text()
    model, link_frame = pin_model_from_xml(pin, xml, False)
    oracle = PinOracle(pin, model, link_frame, parse_urdf(xml), False)
    robot = mbd_ros.load(str(ARM))                      # with the URDF damping and friction
    plan = {"joint_2": trajectory(0.4, 0.7, 0.9), "joint_4": trajectory(0.3, 1.1, -1.2)}
    q = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    v = np.zeros(7)
    v[1], v[3] = plan["joint_2"](0.0)[1], plan["joint_4"](0.0)[1]
    tau = np.array([0.5, 0.0, -0.3, 0.0, 0.1, 0.0, 0.05])   # drives on the free joints (and 0 at p)
    passive = robot.damping_forces
    for k in range(300):
        t = k * 1e-3
        accelerations = {name: traj(t)[2] for name, traj in plan.items()}
        qdd, u = robot.forward_dynamics(q, v, tau, prescribed=accelerations, return_torques=True)
        assert qdd[1] == accelerations["joint_2"] and qdd[3] == accelerations["joint_4"]
        if k % 50 == 0:
            # Newton-Euler of the full motion: the torques every joint transmits
            full = oracle.rnea(q, v, qdd) + passive(v)
            assert_close(u[[1, 3]], full[[1, 3]] - tau[[1, 3]], "prescribed torques", rtol=1e-8)
            assert_close(full[[0, 2, 4, 5, 6]], tau[[0, 2, 4, 5, 6]], "free joints", rtol=1e-8)
            np.testing.assert_array_equal(u[[0, 2, 4, 5, 6]], 0.0)
            np.testing.assert_array_equal(robot.last_prescribed_torques, u)
        robot.time = t
        q, v = robot.step(q, v, tau, 1e-3, prescribed=plan)
        for name, index in (("joint_2", 1), ("joint_4", 3)):
            # the step's position and this evaluation of the plan round differently: a few
            # ulps of the value (measured up to 1), not a fixed 1e-15
            expected = plan[name]((k + 1) * 1e-3)[0]
            assert q[index] == pytest.approx(expected, abs=8 * EPS * max(1.0, abs(expected)))


def test_closed_loop_crank_driven_by_a_trajectory():
    """The four-bar's crank follows q(t) = 0.3 + 2 t + 0.2 sin(5 t) (rheonomic drive): the free
    joints follow the loop kinematics, the loops stay closed, and the crank torque equals the
    closed-loop inverse dynamics of the motion (the crank is the actuated joint)."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"),
                         closures=str(ROOT / "config" / "fourbar_closures.yaml"))

    def crank(t):
        return 0.3 + 2 * t + 0.2 * np.sin(5 * t), 2 + np.cos(5 * t), -5 * np.sin(5 * t)

    q = robot.assemble(np.array([0.3, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([3.0, 0.0, 0.0]))
    robot.time = 0.0
    for k in range(500):
        t = robot.time
        qdd, u = robot.forward_dynamics(q, v, np.zeros(3), prescribed={"crank_joint": crank(t)[2]},
                                        return_torques=True)
        if k % 100 == 0:
            # the free accelerations satisfy the loop's acceleration constraint
            assert_close(qdd, robot.project_acceleration(q, v, qdd), "loop-consistent qdd")
            assert_close(u, robot.inverse_dynamics(q, v, qdd), "crank torque = closed-loop ID",
                         rtol=1e-8)
            assert abs(u[0]) > 1e-3
        q, v = robot.step(q, v, np.zeros(3), 1e-3, prescribed={"crank_joint": crank})
        assert q[0] == pytest.approx(crank(robot.time)[0], abs=1e-14)
        assert max(robot.closure_residual(q, v)) < 1e-10


def test_prescribed_errors():
    robot = mbd_ros.load(str(ARM))
    q, v = robot.neutral(), np.zeros(7)
    with pytest.raises(ValueError, match="unknown movable joint 'elbow'"):
        robot.forward_dynamics(q, v, np.zeros(7), prescribed={"elbow": 1.0})
    with pytest.raises(ValueError, match=r"prescribed\['joint_1'\]"):
        robot.forward_dynamics(q, v, np.zeros(7), prescribed={"joint_1": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"must return \(q, qd, qdd\)"):
        robot.step(q, v, np.zeros(7), 1e-3, prescribed={"joint_1": lambda t: 1.0})
