"""Mimic joints in closed-loop robots, and mimic / joint_spring on every one-dof joint type.

Mechanism: the four-bar (urdf/fourbar.urdf + config/fourbar_closures.yaml) with a flap on the
rocker tip, turning about x (out of the loop's plane), whose joint mimics the crank
(q_flap = 0.7 q_crank + 0.2). References:

- a hand-built constraint model: Pinocchio's tree mass matrix and bias forces (CRBA, RNEA of the
  URDF without the loop), the loop rows G_l, gamma_l of the same robot loaded without mimic,
  and the coupling row written out here, solved by the null-space method
  (qdd = q_p + N y, (N^T M N) y = N^T (tau - h - M q_p)); the loop multipliers by least squares;
- the minimal-coordinate formalism on the same rows (method="minimal") and the dense KKT solve
  (method="kkt"), against the default (recursive loop solver + coupling forces by superposition);
- physical invariants along robot.step (default integrator, 2 s, no damping): the coupling and
  the loops stay closed, the energy is conserved; the drive torque of the coupled motion
  (inverse dynamics) reproduces it.
Helical joints: a mimic coupling between two helical joints against Pinocchio
(JointModelHelicalUnaligned) projected by the coupling matrix; a joint_spring on a helical joint
against its closed-form force and potential.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from conftest import RK4_RTOL, assert_close, import_oracle

import mbd_ros

pin = import_oracle("pinocchio")

ROOT = Path(__file__).resolve().parent.parent
CLOSURES = str(ROOT / "config" / "fourbar_closures.yaml")
FLAP = """
  <joint name="flap_joint" type="revolute"><parent link="rocker"/><child link="flap"/>
    <origin xyz="-0.18 0 0.24"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="5" velocity="20"/>
    <mimic joint="crank_joint" multiplier="0.7" offset="0.2"/></joint>
  <link name="flap"><inertial><origin xyz="0 0.05 0.02"/><mass value="0.1"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00015"/></inertial></link>
</robot>"""
XML = (ROOT / "urdf" / "fourbar.urdf").read_text().replace("</robot>", FLAP)
RATIO, OFFSET = 0.7, 0.2


@pytest.fixture(scope="module")
def robots():
    coupled = mbd_ros.load(XML, closures=CLOSURES, mimic=True, passive_forces=False)
    plain = mbd_ros.load(XML, closures=CLOSURES, passive_forces=False)
    return coupled, plain


def _state(robot, crank, rate):
    q = robot.assemble(robot.apply_mimic(np.array([crank, 0.0, 0.0, 0.0])))
    v = robot.project_velocity(q, np.array([rate, 0.0, 0.0, 0.0]))
    return q, v


def _coupling_row():
    row = np.zeros((1, 4))
    row[0, 3], row[0, 0] = 1.0, -RATIO
    return row


def _pin_q(model, q):
    """Pinocchio's configuration of our q (continuous joints are (cos, sin) there)."""
    parts = []
    for joint, angle in zip(list(model.joints)[1:], q):
        parts.extend([np.cos(angle), np.sin(angle)] if joint.nq == 2 else [angle])
    return np.array(parts)


def _reference(plain, model, q, v, tau):
    """(qdd, loop multipliers) of the hand-built constraint model (module docstring)."""
    data = model.createData()
    q_pin = _pin_q(model, q)
    mass = pin.crba(model, data, q_pin)
    mass = np.triu(mass) + np.triu(mass, 1).T
    h = pin.rnea(model, data, q_pin, v, np.zeros(4))
    _, g_loop, _ = plain.loop_state(q, v)
    jac = np.vstack((g_loop, _coupling_row()))
    gamma = np.concatenate((plain._acceleration_bias(q, v), [0.0]))
    particular = -np.linalg.pinv(jac, rcond=1e-10) @ gamma
    null = scipy.linalg.null_space(jac, rcond=1e-10)
    y = np.linalg.solve(null.T @ mass @ null, null.T @ (tau - h - mass @ particular))
    qdd = particular + null @ y
    lam = np.linalg.lstsq(jac.T, mass @ qdd + h - tau, rcond=1e-10)[0]
    return qdd, lam[:g_loop.shape[0]]


def test_forward_dynamics_matches_hand_built_constraint_model(robots):
    coupled, plain = robots
    model = pin.buildModelFromXML(XML)        # the tree (Pinocchio ignores the loop)
    assert [model.names[i] for i in range(1, 5)] == coupled.joint_names
    rng = np.random.default_rng(3)
    for crank in (0.3, 1.7, -2.4):
        q, v = _state(coupled, crank, rng.uniform(-3, 3))
        assert q[3] == pytest.approx(RATIO * q[0] + OFFSET, abs=1e-12)
        assert v[3] == pytest.approx(RATIO * v[0], abs=1e-12)
        tau = rng.uniform(-0.3, 0.3, 4)
        qdd = coupled.forward_dynamics(q, v, tau)
        expected, lam = _reference(plain, model, q, v, tau)
        assert_close(qdd, expected, "qdd vs the hand-built constraint model")
        assert_close(coupled.multipliers(), lam, "loop multipliers")
        assert_close(coupled.forward_dynamics(q, v, tau, method="minimal"), expected,
                     "minimal coordinates")
        assert_close(coupled.forward_dynamics(q, v, tau, method="kkt"), expected, "dense KKT")
        assert_close(coupled.multipliers(), lam, "loop multipliers (KKT)")
        assert_close(coupled.closure_wrenches(q, v, tau), plain._cut_wrenches(lam),
                     "closure wrench")
        # the drive torque of the crank (actuated) reproduces the coupled motion
        drive = coupled.inverse_dynamics(q, v, qdd)
        assert np.count_nonzero(drive[1:]) == 0
        assert_close(coupled.forward_dynamics(q, v, drive), qdd, "FD(ID(qdd))")
        # the flap is not free: without the coupling it moves differently
        assert np.abs(plain.forward_dynamics(q, v, tau) - qdd).max() > 1e-3


def test_baumgarte_terms_on_the_coupling_rows():
    """Off the constraints (coupling and loop drifted), with Baumgarte gains: the default solver
    and the dense KKT solve both enforce G qdd + gamma + 2 alpha G v + beta^2 g = 0 on every row
    (loops and coupling), and agree."""
    robot = mbd_ros.load(XML, closures=CLOSURES, mimic=True, passive_forces=False)
    robot.baumgarte = (10.0, 10.0)
    q, v = _state(robot, 0.8, 1.0)
    q = q + np.array([1e-3, -2e-3, 1e-3, 5e-3])
    v = v + np.array([0.01, 0.0, -0.02, 0.03])
    tau = np.array([0.05, 0.0, 0.0, 0.0])
    qdd = robot.forward_dynamics(q, v, tau)
    assert_close(qdd, robot.forward_dynamics(q, v, tau, method="kkt"), "recursive vs KKT")
    g, jac, gv = robot.loop_state(q, v)
    residual = jac @ qdd + robot._acceleration_bias(q, v) + 20.0 * gv + 100.0 * g
    assert np.abs(residual).max() < 1e-9 * max(1.0, np.abs(qdd).max())
    assert abs(g[-1]) > 1e-3   # the coupling row really was violated


def test_analysis_counts_the_coupling(robots):
    """One dof: 4 joints, the planar loop's 2 independent rows and the coupling; the revolute
    cut's 3 out-of-plane rows are redundant. Planar Grübler-Kutzbach: 4 - 2 - 1 = 1."""
    coupled, plain = robots
    q, _ = _state(coupled, 0.3, 0.0)
    analysis = coupled.analyze(q)
    assert analysis.dof == 1 and analysis.n_constraints == 6
    assert analysis.redundant_constraints == 3 and not analysis.statically_determinate
    assert analysis.gruebler_kutzbach_planar == plain.analyze(q).gruebler_kutzbach_planar - 1 == 1


def test_step_keeps_coupling_loops_and_energy(robots):
    coupled, _ = robots
    q, v = _state(coupled, 0.3, 4.0)
    energy0 = coupled.kinetic_energy(q, v) + coupled.potential_energy(q)
    zero = np.zeros(4)
    coupled.time = 0.0
    crank = []
    for _ in range(2000):   # 2 s at 1 ms, the default integrator
        q, v = coupled.step(q, v, zero, 1e-3)
        crank.append(q[0])
        assert abs(q[3] - RATIO * q[0] - OFFSET) < 1e-9 and abs(v[3] - RATIO * v[0]) < 1e-9
    position, velocity = coupled.closure_residual(q, v)
    assert position < 1e-6 and velocity < 1e-6
    assert max(crank) - min(crank) > 1.0   # a large motion, not a rest state
    energy = coupled.kinetic_energy(q, v) + coupled.potential_energy(q)
    assert abs(energy - energy0) < RK4_RTOL * energy0, (energy, energy0)


def test_prescribed_crank_with_mimic_in_a_loop(robots):
    """The crank follows q(t) (rheonomic): its needed torque is the closed-loop inverse dynamics
    of the coupled motion."""
    coupled, _ = robots
    q, v = _state(coupled, 0.3, 2.0)
    for t in (0.0, 0.1, 0.2):
        qdd, u = coupled.forward_dynamics(q, v, np.zeros(4), prescribed={"crank_joint": -3.0 * t},
                                          return_torques=True)
        assert qdd[0] == -3.0 * t and qdd[3] == pytest.approx(RATIO * qdd[0], abs=1e-9)
        assert_close(u, coupled.inverse_dynamics(q, v, qdd), "prescribed torque = ID")
        q, v = coupled.step(q, v, u, 1e-3)


# ---------------------------------------------------------------------- helical joints
SCREWS = """<robot name="screws"><link name="base"/>
  <joint name="lead" type="helical"><parent link="base"/><child link="nut"/>
    <origin xyz="0 0.1 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="0 0.6 0.8" pitch="0.05"/></joint>
  <link name="nut"><inertial><origin xyz="0.05 -0.02 0.21"/><mass value="1.3"/>
    <inertia ixx="0.031" iyy="0.027" izz="0.012" ixy="0.002" ixz="-0.001" iyz="0.0015"/></inertial></link>
  <joint name="follower" type="helical"><parent link="nut"/><child link="tip"/>
    <origin xyz="0.1 0 0.2" rpy="0.2 0 -0.3"/><axis xyz="1 0 0" pitch="-0.12"/>
    <mimic joint="lead" multiplier="-2.0" offset="0.3"/></joint>
  <link name="tip"><inertial><origin xyz="0.12 0.03 -0.04"/><mass value="0.9"/>
    <inertia ixx="0.011" iyy="0.019" izz="0.016" ixy="-0.001" ixz="0.0008" iyz="0"/></inertial></link>
</robot>"""


def _screw_model():
    model = pin.Model()
    first = model.addJoint(0, pin.JointModelHelicalUnaligned(np.array([0.0, 0.6, 0.8]), 0.05),
                           pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.1), np.array([0.0, 0.1, 0.2])),
                           "lead")
    model.appendBodyToJoint(first, pin.Inertia(1.3, np.array([0.05, -0.02, 0.21]), np.array(
        [[0.031, 0.002, -0.001], [0.002, 0.027, 0.0015], [-0.001, 0.0015, 0.012]])),
        pin.SE3.Identity())
    second = model.addJoint(first, pin.JointModelHelicalUnaligned(np.array([1.0, 0.0, 0.0]), -0.12),
                            pin.SE3(pin.rpy.rpyToMatrix(0.2, 0.0, -0.3), np.array([0.1, 0.0, 0.2])),
                            "follower")
    model.appendBodyToJoint(second, pin.Inertia(0.9, np.array([0.12, 0.03, -0.04]), np.array(
        [[0.011, -0.001, 0.0008], [-0.001, 0.019, 0.0], [0.0008, 0.0, 0.016]])), pin.SE3.Identity())
    return model


def test_mimic_between_helical_joints_matches_pinocchio():
    robot = mbd_ros.load(SCREWS, mimic=True)
    assert robot.mimic_joints == ["follower"]
    model = _screw_model()
    data = model.createData()
    coupling = np.array([[1.0], [-2.0]])
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, v = robot.apply_mimic(rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2))
        tau = rng.uniform(-1, 1, 2)
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        h = pin.rnea(model, data, q, v, np.zeros(2))
        z = np.linalg.solve(coupling.T @ mass @ coupling, coupling.T @ (tau - h))
        assert_close(robot.forward_dynamics(q, v, tau), coupling @ z, "helical mimic qdd")


def test_joint_spring_on_a_helical_joint():
    forces = {"forces": [{"name": "screw_spring", "type": "joint_spring", "joint": "lead",
                          "stiffness": 35.0, "damping": 0.8, "rest_position": 0.4}]}
    sprung = mbd_ros.load(SCREWS, forces=forces)
    bare = mbd_ros.load(SCREWS)
    q, v, qdd = np.array([0.9, -0.3]), np.array([1.5, 0.2]), np.array([0.3, -0.7])
    # inverse dynamics returns the drive forces: the spring's force is subtracted
    spring = -35.0 * (0.9 - 0.4) - 0.8 * 1.5
    assert_close(sprung.inverse_dynamics(q, v, qdd) - bare.inverse_dynamics(q, v, qdd),
                 [-spring, 0.0], "joint_spring force on a helical joint")
    assert sprung.potential_energy(q) - bare.potential_energy(q) == \
        pytest.approx(0.5 * 35.0 * 0.5 ** 2, rel=1e-12)


def test_prescribed_leader_of_a_mimic_joint_in_a_tree():
    """The gripper (test_mimic.py): finger_a prescribed, finger_b mimics it, the wrist free. Against
    Pinocchio's own mimic model (the mimicking joint removed from v): the wrist's acceleration
    solves the reduced equations with finger_a's acceleration given, and finger_a's needed force
    is the reduced model's joint force minus its drive; the step keeps the coupling."""
    from test_mimic import GRIPPER
    robot = mbd_ros.load(GRIPPER, passive_forces=False, mimic=True)
    model = pin.buildModelFromXML(GRIPPER, True)      # v = (wrist, finger_a)
    data = model.createData()
    q, v = robot.apply_mimic(np.array([0.4, 0.3, 0.0]), np.array([1.0, -2.0, 0.0]))
    tau = np.array([0.2, 0.05, 0.0])
    qdd, u = robot.forward_dynamics(q, v, tau, prescribed={"finger_a": 1.7}, return_torques=True)
    assert qdd[1] == 1.7 and qdd[2] == pytest.approx(-1.5 * 1.7, abs=1e-12)
    mass = pin.crba(model, data, q[:2])
    mass = np.triu(mass) + np.triu(mass, 1).T
    nle = pin.nonLinearEffects(model, data, q[:2], v[:2])
    reduced = robot.mimic_coupling.T @ tau      # the drives projected on (wrist, finger_a)
    wrist = (reduced[0] - nle[0] - mass[0, 1] * 1.7) / mass[0, 0]
    assert qdd[0] == pytest.approx(wrist, rel=1e-9)
    needed = mass[1] @ qdd[:2] + nle[1] - reduced[1]
    assert u[1] == pytest.approx(needed, rel=1e-9, abs=1e-12) and u[0] == 0.0 and u[2] == 0.0

    def finger(t):
        return 0.3 + 0.2 * np.sin(3 * t), 0.6 * np.cos(3 * t), -1.8 * np.sin(3 * t)
    robot.time = 0.0
    q, v = robot.apply_mimic(np.array([0.4, 0.3, 0.0]), np.array([0.0, 0.6, 0.0]))
    for _ in range(500):
        q, v = robot.step(q, v, np.zeros(3), 1e-3, prescribed={"finger_a": finger})
    assert q[1] == pytest.approx(finger(0.5)[0], abs=1e-12)
    assert abs(q[2] - (-1.5 * q[1] + 0.1)) < 1e-9 and abs(v[2] + 1.5 * v[1]) < 1e-9
