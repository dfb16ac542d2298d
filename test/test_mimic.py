"""Mimic joints (URDF <mimic>) as coupling constraints: load(..., mimic=True).

Reference: Pinocchio's own mimic support (pin.buildModelFromXML(xml, mimic=True), which removes
the mimicking joint from v): the coupled accelerations of the panda (finger_joint2 mimics
finger_joint1) from a dense solve with Pinocchio's CRBA and nonlinear effects of that reduced
model. Physical checks: the coupling holds along a simulation, energy is conserved, the drive
torques of the coupled motion reproduce it, and mimic=False keeps the old independent joints.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close

import mbd_ros

GRIPPER = """<?xml version="1.0"?>
<robot name="gripper">
  <link name="base"/>
  <joint name="wrist" type="revolute"><parent link="base"/><child link="palm"/>
    <origin xyz="0 0 0.1"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <link name="palm"><inertial><origin xyz="0 0 0.05"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <joint name="finger_a" type="revolute"><parent link="palm"/><child link="finger_a_link"/>
    <origin xyz="0 0.03 0.1"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="5"/></joint>
  <link name="finger_a_link"><inertial><origin xyz="0 0.01 0.04"/><mass value="0.08"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00002"/></inertial></link>
  <joint name="finger_b" type="revolute"><parent link="palm"/><child link="finger_b_link"/>
    <origin xyz="0 -0.03 0.1"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="5"/>
    <mimic joint="finger_a" multiplier="-1.5" offset="0.1"/></joint>
  <link name="finger_b_link"><inertial><origin xyz="0 -0.01 0.04"/><mass value="0.08"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00002"/></inertial></link>
</robot>"""


def panda_xml(erd_dir):
    return (erd_dir / "panda_description" / "urdf" / "panda.urdf").read_text()


def test_panda_fingers_match_pinocchio_mimic(pin, erd_dir):
    xml = panda_xml(erd_dir)
    robot = mbd_ros.load(xml, passive_forces=False, mimic=True)
    assert robot.mimic_joints == ["panda_finger_joint2"]
    model = pin.buildModelFromXML(xml, True)
    data = model.createData()
    rng = np.random.default_rng(4)
    names = [n for n in model.names[1:]]
    independent = [robot.joint_names[i] for i in range(robot.nv) if i in robot.mimic_independent]
    assert names[:len(independent)] == independent    # same order here (a chain + one finger)
    for _ in range(3):
        q = robot.apply_mimic(robot.random_configuration(rng))
        z = rng.normal(size=8)
        v = robot.mimic_coupling @ z
        tau = rng.normal(size=9)
        qdd = robot.forward_dynamics(q, v, tau)
        qp = q[robot.mimic_independent]
        M = pin.crba(model, data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        nle = pin.nonLinearEffects(model, data, qp, z)
        # generalized forces of the reduced model: the drives projected, T^T tau
        expected = np.linalg.solve(M, robot.mimic_coupling.T @ tau - nle)
        assert_close(qdd[robot.mimic_independent], expected, "independent qdd vs Pinocchio mimic")
        assert qdd[8] == pytest.approx(qdd[7], abs=1e-12)        # multiplier 1


def test_gripper_coupling_energy_and_inverse_dynamics():
    robot = mbd_ros.load(GRIPPER, passive_forces=False, mimic=True)
    q0 = robot.neutral()
    assert q0[2] == pytest.approx(0.1)                          # offset
    q, v = robot.apply_mimic(np.array([0.4, 0.3, 0.0]), np.array([1.0, -2.0, 0.0]))
    assert q[2] == pytest.approx(-1.5 * 0.3 + 0.1) and v[2] == pytest.approx(3.0)
    e0 = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    for _ in range(2000):
        q, v = robot.step(q, v, np.zeros(3), 1e-3)
    # the coupling holds to round-off accumulated over the 2000 steps, a random walk of
    # ~sqrt(2000) eps |v| ~ 5e-14 (measured 4e-14 for v, 2e-14 for q): 1e-12 is 20x that
    assert q[2] == pytest.approx(-1.5 * q[1] + 0.1, abs=1e-12)
    assert v[2] == pytest.approx(-1.5 * v[1], abs=1e-12)
    assert abs(robot.kinetic_energy(q, v) + robot.potential_energy(q) - e0) < 1e-8
    # inverse dynamics: drives on wrist and finger_a reproduce the coupled motion
    tau = np.array([0.2, -0.05, 0.0])
    qdd = robot.forward_dynamics(q, v, tau)
    assert_close(robot.inverse_dynamics(q, v, qdd), tau, "ID of the coupled motion")
    with pytest.raises(ValueError, match="mimic coupling"):
        robot.inverse_dynamics(q, v, np.array([0.0, 1.0, 0.0]))
    # the coupled dynamics = the tree's with an explicit coupling force at finger_b only
    independent = mbd_ros.load(GRIPPER, passive_forces=False)
    tau_tree = independent.inverse_dynamics(q, v, qdd)
    residual = tau_tree - tau
    assert abs(residual[0]) < 1e-9                               # wrist: no coupling force
    assert abs(residual[1] + (-1.5) * residual[2]) < 1e-9        # T^T (coupling force) = 0


def test_default_keeps_mimic_joints_independent():
    robot = mbd_ros.load(GRIPPER)
    assert robot.nv == 3 and robot.mimic_joints == []   # no coupling part
    q, v = robot.neutral(), np.zeros(3)
    qdd = robot.forward_dynamics(q, v, np.array([0.0, 0.0, 0.01]))
    assert abs(qdd[2]) > 1e-3 and abs(qdd[1]) < abs(qdd[2])     # finger_b moves on its own


def test_mimic_errors():
    bad = GRIPPER.replace('<mimic joint="finger_a"', '<mimic joint="finger_x"')
    with pytest.raises(mbd_ros.ModelError, match="finger_x"):
        mbd_ros.load(bad, mimic=True)
    # finite but absurd: the coupled dynamics multiply by r^2 (1e300 overflowed them)
    huge = GRIPPER.replace('multiplier="-1.5"', 'multiplier="1e300"')
    assert huge != GRIPPER
    with pytest.raises(mbd_ros.ModelError, match="finger_b.*MAX_MIMIC_VALUE"):
        mbd_ros.load(huge, mimic=True)
