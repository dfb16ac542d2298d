"""Flexible links with multi-dof joints and a floating base: a free-floating space robot with a
flexible appendage on a spherical joint, and a flexible link on a planar joint. References:
Pinocchio's RNEA in the rigid limit, conservation of linear and angular momentum and of energy
(physical invariants of a free-floating, undamped system without gravity), FD(ID) round trip and
M symmetric positive definite. One tolerance per test, stated."""
import warnings

import numpy as np
import pytest

import mbd_ros
from conftest import roundoff_tol
from flexible_models import beam_entry

SPACE_ROBOT = """<?xml version="1.0"?>
<robot name="space_robot">
  <link name="hub"><inertial><origin xyz="0.01 -0.02 0.03"/><mass value="5.0"/>
    <inertia ixx="0.2" ixy="0.01" ixz="0" iyy="0.25" iyz="0" izz="0.3"/></inertial></link>
  <link name="beam"><inertial><origin xyz="0.35 0 0"/><mass value="0.378"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="0.015" iyz="0" izz="0.015"/></inertial></link>
  <link name="tip"><inertial><origin xyz="0.05 0.02 0"/><mass value="0.3"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="2e-4"/></inertial></link>
  <joint name="shoulder" type="{shoulder}"><parent link="hub"/><child link="beam"/>
    <origin xyz="0.3 0.1 0" rpy="0 0 0.2"/><axis xyz="0 0 1"/></joint>
  <joint name="wrist" type="continuous"><parent link="beam"/><child link="tip"/>
    <origin xyz="0.7 0 0"/><axis xyz="0 0 1"/></joint>
</robot>"""

PLANAR_ARM = """<?xml version="1.0"?>
<robot name="planar_flexible">
  <link name="base"/>
  <link name="beam"><inertial><origin xyz="0.35 0 0"/><mass value="0.378"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="0.015" iyz="0" izz="0.015"/></inertial></link>
  <link name="tip"><inertial><origin xyz="0.05 0 0.01"/><mass value="0.3"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="2e-4"/></inertial></link>
  <joint name="slide" type="planar"><parent link="base"/><child link="beam"/>
    <origin xyz="0 0 0.5" rpy="0.3 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="wrist" type="continuous"><parent link="beam"/><child link="tip"/>
    <origin xyz="0.7 0 0"/><axis xyz="0 1 0"/></joint>
</robot>"""

FLEX = beam_entry(0.7, 2e-4, 2e-9, 1e-9, modes=5, torsion=True)


def load_quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(*args, **kwargs)


def space_robot(shoulder="spherical", gravity=(0.0, 0.0, 0.0)):
    return load_quiet(SPACE_ROBOT.replace("{shoulder}", shoulder), flexible=FLEX,
                      floating_base=True, gravity=list(gravity))


def planar_arm():
    return load_quiet(PLANAR_ARM, flexible=FLEX)


def deformed_state(robot, rng, scale=3e-3):
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * scale
    return q


def world_momentum(robot, q, v):
    """Linear and angular (about the world origin) momentum of a free-floating robot from its
    root rows: (M v)[:6] is the whole system's momentum wrench in the root body frame (the root
    joint's motion subspace is the identity there), moved to the world."""
    p = robot.mass_matrix(q) @ v
    x, (qx, qy, qz, qw) = q[:3], q[3:7]
    R = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                  [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                  [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])
    linear = R @ p[:3]
    return np.concatenate([linear, R @ p[3:6] + np.cross(x, linear)])


@pytest.mark.parametrize("make", [space_robot, planar_arm], ids=["floating_spherical", "planar"])
def test_mass_matrix_spd_and_fd_id_round_trip(make):
    """M symmetric positive definite; ID(FD(tau)) = tau to the round-off of M qdd + b
    (conftest.roundoff_tol); FD = M^-1 (tau - b) (relative 1e-8 of max |qdd|: the elastic rows'
    accelerations are ~1e4 times the joints'; measured 3e-4 of it)."""
    robot = make()
    rng = np.random.default_rng(2)
    for _ in range(4):
        q = deformed_state(robot, rng)
        v = rng.normal(size=robot.nv)
        tau = rng.normal(size=robot.nv)
        M = robot.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(M)[0] > 0
        qdd = robot.forward_dynamics(q, v, tau)
        b = robot.bias_forces(q, v)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), tau, rtol=0,
                                   atol=roundoff_tol(robot.nv, (M, qdd), b, tau))
        np.testing.assert_allclose(qdd, np.linalg.solve(M, tau - b), rtol=0,
                                   atol=1e-8 * np.abs(qdd).max())


def test_rigid_limit_floating_base_matches_pinocchio_rnea(pin):
    """A floating hub with the flexible beam on a revolute joint, elastic coordinates at rest
    (q_f = v_f = qdd_f = 0), gravity on: the rigid rows of inverse dynamics (root wrench and the
    joints) equal Pinocchio's RNEA with a free-flyer root and the beam as the rigid bar with the
    flexible model's mass properties (relative 1e-9)."""
    robot = space_robot(shoulder="continuous", gravity=(0.0, 0.0, -9.81))
    fb = robot.flexible.bodies[0]
    c, I = fb.com.tolist(), fb.inertia.tolist()
    text = SPACE_ROBOT.replace("{shoulder}", "continuous")
    beam = (f'<link name="beam"><inertial><origin xyz="{c[0]!r} {c[1]!r} {c[2]!r}"/>'
            f'<mass value="{float(fb.mass)!r}"/><inertia ixx="{I[0][0]!r}" ixy="{I[0][1]!r}" '
            f'ixz="{I[0][2]!r}" iyy="{I[1][1]!r}" iyz="{I[1][2]!r}" izz="{I[2][2]!r}"/>'
            '</inertial></link>')
    start = text.index('<link name="beam">')
    end = text.index("</link>", start) + len("</link>")
    model = pin.buildModelFromXML(text[:start] + beam + text[end:], pin.JointModelFreeFlyer())
    data = model.createData()
    rng = np.random.default_rng(4)
    nv = model.nv
    assert model.nq == 11        # Pinocchio's continuous joints are (cos, sin) pairs
    for _ in range(5):
        q = robot.random_configuration(rng)
        v = np.zeros(robot.nv)
        a = np.zeros(robot.nv)
        v[:nv], a[:nv] = rng.normal(size=nv), rng.normal(size=nv)
        tau = robot.inverse_dynamics(q, v, a)
        q_pin = np.concatenate([q[:7], [np.cos(q[7]), np.sin(q[7]), np.cos(q[8]), np.sin(q[8])]])
        expected = pin.rnea(model, data, q_pin, v[:nv], a[:nv])
        np.testing.assert_allclose(tau[:nv], expected, rtol=1e-9, atol=1e-9)


def test_free_floating_space_robot_conserves_momentum_and_energy():
    """Free-floating hub with a flexible appendage on a spherical joint and a wrist, no gravity,
    undamped, no drives: linear and angular momentum (world frame) and kinetic + elastic energy
    are invariants. From a spinning state with the two lowest modes deflected, 0.2 s of RK4:
    their errors must be the integrator's, shrinking with dt at RK4's order (halving dt divides
    them by more than 8; a dynamics error would leave a dt-independent drift), and at
    dt = 5e-5 s momentum within 1e-7 of |h| and energy within 1e-6 of its value."""
    from mbd_ros.robot.integrators import Simulator
    robot = space_robot()
    rng = np.random.default_rng(8)
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices[:2]] = [2e-3, -2e-3]
    v = np.zeros(robot.nv)
    v[:robot.model.nv] = rng.normal(size=robot.model.nv)
    h0 = world_momentum(robot, q, v)
    e0 = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    assert np.linalg.norm(h0[:3]) > 0.1 and np.linalg.norm(h0[3:]) > 0.1

    def errors(dt, duration=0.2):
        assert dt * 2 * np.pi * robot.highest_frequency(q) < 1.0
        sim = Simulator(robot, dt, "rk4", q=q, v=v)
        tau = np.zeros(robot.nv)
        worst_h, worst_e, elastic_seen = 0.0, 0.0, 0.0
        for k in range(int(round(duration / dt))):
            sim.step(tau)
            if k % 100 == 99:
                worst_h = max(worst_h, np.abs(world_momentum(robot, sim.q, sim.v) - h0).max())
                worst_e = max(worst_e, abs(robot.kinetic_energy(sim.q, sim.v)
                                           + robot.potential_energy(sim.q) - e0))
                elastic_seen = max(elastic_seen, robot.elastic_energy(sim.q))
        assert elastic_seen > 1e-3                     # J: the appendage vibrates
        assert np.linalg.norm(sim.q[:3] - q[:3]) > 1e-3   # the hub moves
        return worst_h, worst_e

    (coarse_h, coarse_e), (fine_h, fine_e) = errors(1e-4), errors(5e-5)
    assert fine_h < coarse_h / 8 and fine_e < coarse_e / 8
    assert fine_h < 1e-7 * np.linalg.norm(h0)
    assert fine_e < 1e-6 * e0


def test_energy_conservation_planar_flexible_link_with_gravity():
    """Flexible link on a planar joint (tilted plane) carrying a wrist, gravity on, undamped:
    kinetic + gravity + elastic energy over 0.5 s of RK4 at dt = 1e-4 s within 1e-6 of m g (1 m)."""
    from mbd_ros.robot.integrators import Simulator
    robot = planar_arm()
    q = robot.neutral()
    v = np.zeros(robot.nv)
    v[:4] = [0.3, -0.2, 1.0, -2.0]
    dt = 1e-4
    assert dt * 2 * np.pi * robot.highest_frequency(q) < 1.0
    sim = Simulator(robot, dt, "rk4", q=q, v=v)
    tau = np.zeros(robot.nv)
    e0 = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    worst, elastic_seen = 0.0, 0.0
    for k in range(5000):
        sim.step(tau)
        if k % 250 == 0:
            worst = max(worst, abs(robot.kinetic_energy(sim.q, sim.v)
                                   + robot.potential_energy(sim.q) - e0))
            elastic_seen = max(elastic_seen, robot.elastic_energy(sim.q))
    assert elastic_seen > 1e-5
    assert worst < 1e-6 * robot.total_mass * 9.81


def test_quaternion_of_the_root_is_checked():
    """A non-unit root quaternion is a clear ValueError, not a silent result."""
    robot = space_robot()
    q = robot.neutral()
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="quaternion"):
        robot.forward_dynamics(q, np.zeros(robot.nv), np.zeros(robot.nv))
