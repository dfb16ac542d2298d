"""Closed loops on robots with flexible links: a four-bar whose rocker is a flexible beam, closed
by a spherical cut joint at the beam's DEFORMED tip. References: finite differences of the
residuals (the closure Jacobian's elastic columns and the acceleration bias), the loops staying
closed and energy conserved in an undamped simulation, FD(ID) of the actuated joint. One
tolerance per test, stated."""
import warnings

import numpy as np
import pytest

import mbd_ros
from flexible_models import beam_entry

FOURBAR = """<?xml version="1.0"?>
<robot name="flexible_fourbar">
  <link name="ground"/>
  <link name="crank"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="2e-3"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2.4e-2" iyz="0" izz="2.4e-2"/></inertial></link>
  <link name="beam"><inertial><origin xyz="0.25 0 0"/><mass value="0.27"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="5.6e-3" iyz="0" izz="5.6e-3"/></inertial></link>
  <joint name="crank_joint" type="continuous"><parent link="ground"/><child link="crank"/>
    <origin xyz="0 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="coupler_joint" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="rocker_joint" type="continuous"><parent link="ground"/><child link="beam"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 1 0"/></joint>
</robot>"""

CLOSURES = {"closures": [{"name": "tip", "type": "spherical", "parent": "coupler",
                          "child": "beam", "parent_origin": {"xyz": [0.6, 0.0, 0.0]},
                          "child_origin": {"xyz": [0.5, 0.0, 0.0]}}],
            "actuated": ["crank_joint"]}


def fourbar():
    flex = beam_entry(0.5, 2e-4, 2e-9, 1e-9, modes=4, torsion=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(FOURBAR, flexible=flex, closures=CLOSURES)
    return robot


def assembled(robot, crank=0.7):
    """A closed configuration near crank angle `crank` (planar guess, then Gauss-Newton)."""
    a, b, c, d = 0.2, 0.6, 0.5, 0.5
    crank_tip = np.array([a * np.cos(crank), -a * np.sin(crank)])    # angle about +y: x, -z
    pivot = np.array([d, 0.0])
    dist = np.linalg.norm(pivot - crank_tip)
    base = np.arctan2(*(pivot - crank_tip)[::-1])
    phi = np.arccos((b * b + dist * dist - c * c) / (2 * b * dist))
    direction = base + phi
    tip = crank_tip + b * np.array([np.cos(direction), np.sin(direction)])
    q = robot.neutral()
    q[0] = crank
    q[1] = -direction - crank
    q[2] = -np.arctan2(tip[1], tip[0] - d)
    return robot.assemble(q)


def test_closure_jacobian_and_bias_match_finite_differences():
    """G_l (elastic columns included) equals central differences of the residuals g(q (+) h e_k)
    (h = 1e-6: relative 1e-7 of max |G|), and the acceleration bias gamma equals
    d/dt (G_l(q) v) along q (+) h v (h = 1e-5: relative 1e-6); the elastic columns are not zero
    (the cut rides on the deformed tip)."""
    robot = fourbar()
    q = assembled(robot)
    rng = np.random.default_rng(1)
    q[robot.elastic_q_indices] = rng.normal(size=4) * 2e-3
    g, G, _ = robot.loop_state(q)
    h = 1e-6
    fd = np.column_stack([(robot.loop_state(robot.integrate(q, e, h))[0]
                           - robot.loop_state(robot.integrate(q, e, -h))[0]) / (2 * h)
                          for e in np.eye(robot.nv)])
    np.testing.assert_allclose(G, fd, rtol=0, atol=1e-7 * np.abs(G).max())
    assert np.abs(G[:, robot.elastic_v_indices]).max() > 0.1
    v = rng.normal(size=robot.nv)
    h = 1e-5
    gdot_v = (robot.loop_state(robot.integrate(q, v, h))[1] @ v
              - robot.loop_state(robot.integrate(q, v, -h))[1] @ v) / (2 * h)
    gamma = robot._acceleration_bias(q, v)
    np.testing.assert_allclose(gamma, gdot_v, rtol=0, atol=1e-6 * np.abs(gamma).max())


def test_fd_id_round_trip_and_constraint_acceleration():
    """FD with a drive on the crank satisfies G_l qdd + gamma = 0 (1e-8 of |gamma|), and the
    actuated inverse dynamics returns the crank torque that produced it (1e-8)."""
    robot = fourbar()
    q = assembled(robot, crank=1.3)
    rng = np.random.default_rng(2)
    _, G, _ = robot.loop_state(q)
    null = np.linalg.svd(G)[2][G.shape[0]:].T            # admissible velocities
    v = null @ rng.normal(size=null.shape[1])
    tau = np.zeros(robot.nv)
    tau[0] = 1.7
    qdd = robot.forward_dynamics(q, v, tau)
    gamma = robot._acceleration_bias(q, v)
    np.testing.assert_allclose(G @ qdd, -gamma, rtol=0, atol=1e-8 * max(1.0, np.abs(gamma).max()))
    back = robot.inverse_dynamics(q, v, qdd)
    np.testing.assert_allclose(back, tau, rtol=0, atol=1e-8)
    assert robot.closure_wrenches(q, v, tau).shape == (1, 6)


def test_simulation_keeps_the_loop_closed_and_conserves_energy():
    """Undamped flexible four-bar falling under gravity from a closed configuration, 0.3 s of
    robot.step (RK4, dt = 1e-4 s, loops re-closed when the residual passes 1e-10): the residual
    stays below 1e-10 m and kinetic + gravity + elastic energy within 1e-8 of m g (1 m) (measured:
    3e-12 m, 4e-9 J of 15 J); the beam does bend (elastic energy seen, ~1e-4 J)."""
    robot = fourbar()
    q = assembled(robot, crank=0.4)
    v = np.zeros(robot.nv)
    tau = np.zeros(robot.nv)
    dt = 1e-4
    assert dt * 2 * np.pi * robot.highest_frequency(q) < 1.0
    e0 = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    scale = robot.total_mass * 9.81
    worst_e, worst_g, elastic_seen = 0.0, 0.0, 0.0
    for k in range(3000):
        q, v = robot.step(q, v, tau, dt)
        if k % 100 == 99:
            worst_g = max(worst_g, robot.closure_residual(q)[0])
            worst_e = max(worst_e, abs(robot.kinetic_energy(q, v) + robot.potential_energy(q) - e0))
            elastic_seen = max(elastic_seen, robot.elastic_energy(q))
    assert abs(q[0] - 0.4) > 0.05               # the mechanism moved
    assert elastic_seen > 1e-5
    assert worst_g < 1e-10
    assert worst_e < 1e-8 * scale


def _fourbar_oracle(robot):
    """Independent dense equations of the flexible four-bar: Lagrange's equations of the
    point-mass/rigid-link kinetic energy (crank and coupler: mass at their centres and I_yy about
    the parallel y axes; the beam: the builder's points u0 + N q_f with rotary inertias turning at
    e_y qd_3 + Psi qd_f) with Jacobians by central differences, plus the loop constraint written
    from scratch: the coupler's end point equals the beam's deformed tip 0.5 e_x + Phi_t q_f.
    Returns dynamics(x, xd, tau) -> qdd from [M G^T; G 0], minimum-norm multipliers."""
    fb = robot.flexible.bodies[0]
    pts, iq, n = fb.points, fb.iq, robot.nv
    Phi_t, _ = fb.shapes(np.array([0.5, 0.0, 0.0]))
    g = np.array([0.0, 0.0, -9.81])
    pivot = np.array([0.5, 0.0, 0.0])

    def rot_y(angle):
        c, s = np.cos(angle), np.sin(angle)
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])

    def points(x):
        R1, R12, R3 = rot_y(x[0]), rot_y(x[0] + x[1]), rot_y(x[2])
        qf = x[iq:]
        elbow = R1 @ np.array([0.2, 0.0, 0.0])
        crank_com = R1 @ np.array([0.1, 0.0, 0.0])
        coupler_com = elbow + R12 @ np.array([0.3, 0.0, 0.0])
        beam = pivot + (pts.position + pts.N @ qf) @ R3.T
        return np.vstack([crank_com[None], coupler_com[None], beam])

    def constraint(x):
        R12, R3 = rot_y(x[0] + x[1]), rot_y(x[2])
        end = rot_y(x[0]) @ np.array([0.2, 0.0, 0.0]) + R12 @ np.array([0.6, 0.0, 0.0])
        tip = pivot + R3 @ (np.array([0.5, 0.0, 0.0]) + Phi_t @ x[iq:])
        return tip - end

    masses = np.concatenate([[0.5, 0.8], pts.mass])
    # rotary: crank w_y = qd_1, coupler w_y = qd_1 + qd_2 (I_yy), beam points e_y qd_3 + Psi qd_f
    M_rot = np.zeros((n, n))
    M_rot[0, 0] += 2e-3
    M_rot[np.ix_([0, 1], [0, 1])] += 2.4e-2
    B = np.zeros((len(pts.mass), 3, n))
    B[:, 1, 2] = 1.0
    B[:, :, iq:] = pts.Psi
    M_rot += np.einsum("pka,pkl,plb->ab", B, pts.inertia, B)

    def jac(f, x, h=1e-6):
        return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(n)], axis=-1)

    def dynamics(x, xd, tau, with_multipliers=False):
        J = jac(points, x)
        h = 1e-5
        Jd = (jac(points, x + h * xd) - jac(points, x - h * xd)) / (2 * h)
        M = np.einsum("p,pka,pkb->ab", masses, J, J) + M_rot
        b = np.einsum("p,pka,pkb,b->a", masses, J, Jd, xd) - np.einsum("p,pka,k->a", masses, J, g)
        b[iq:] += fb.K @ x[iq:] + fb.D @ xd[iq:]
        G = jac(constraint, x)
        gamma = (jac(constraint, x + h * xd) - jac(constraint, x - h * xd)) / (2 * h) @ xd
        kkt = np.block([[M, G.T], [G, np.zeros((3, 3))]])
        sol = np.linalg.lstsq(kkt, np.concatenate([tau - b, -gamma]), rcond=1e-12)[0]
        # with_multipliers: also mu (3,), M qdd + b = tau - G^T mu: the world force -mu acts on
        # the beam's tip, +mu on the coupler's end
        return (sol[:n], sol[n:]) if with_multipliers else sol[:n]

    return dynamics


def test_forward_dynamics_matches_point_mass_lagrange_oracle_with_the_loop():
    """On the loop (assembled, admissible velocities), with a crank torque and the beam bent:
    forward dynamics equal the independent dense oracle's (Lagrange + constraint written from
    scratch, finite differences) within 1e-5 of max |qdd|."""
    robot = fourbar()
    oracle = _fourbar_oracle(robot)
    rng = np.random.default_rng(9)
    for crank in (0.5, 2.0):
        q = assembled(robot, crank=crank)
        q[robot.elastic_q_indices] = rng.normal(size=4) * 2e-3
        q = robot.assemble(q, elastic=True)   # the random bend has out-of-plane modes
        _, G, _ = robot.loop_state(q)
        null = np.linalg.svd(G)[2][G.shape[0]:].T
        v = null @ rng.normal(size=null.shape[1])
        tau = np.zeros(robot.nv)
        tau[0] = 0.8
        qdd = robot.forward_dynamics(q, v, tau)
        expected = oracle(q, v, tau)
        np.testing.assert_allclose(qdd, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_closure_wrench_matches_the_oracle_multipliers_and_newtons_third_law():
    """The wrench the cut joint exerts on the beam (closure_wrenches, deformed child-side cut
    frame), rotated to the world by the beam's pose and the Cayley rotation of its deformed tip,
    equals the force -mu of the independent dense oracle's constraint (tip - coupler end = 0,
    written from scratch) within 1e-5 of |mu| (the oracle's finite differences); the spherical
    cut transmits no torque (1e-9 |mu| m); and the same wrench follows from multipliers()."""
    from mbd_ros.model.flexible.attachment import cayley
    robot = fourbar()
    oracle = _fourbar_oracle(robot)
    fb = robot.flexible.bodies[0]
    _, Phi_r = fb.shapes(np.array([0.5, 0.0, 0.0]))
    rng = np.random.default_rng(21)
    for crank in (0.5, 2.0, 4.0):
        q = assembled(robot, crank=crank)
        q[robot.elastic_q_indices] = rng.normal(size=4) * 2e-3
        q = robot.assemble(q, elastic=True)
        _, G, _ = robot.loop_state(q)
        null = np.linalg.svd(G)[2][G.shape[0]:].T
        v = null @ rng.normal(size=null.shape[1])
        tau = np.zeros(robot.nv)
        tau[0] = 0.8
        wrench = robot.closure_wrenches(q, v, tau)
        assert wrench.shape == (1, 6)
        _, mu = oracle(q, v, tau, with_multipliers=True)
        qf = q[robot.elastic_q_indices]
        frame = robot.link_pose(q, "beam")[:3, :3] @ cayley(Phi_r @ qf)
        force_world = frame @ wrench[0, :3]
        scale = np.linalg.norm(mu)
        assert scale > 0.1                       # the loop carries a real load here
        np.testing.assert_allclose(force_world, -mu, rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(wrench[0, 3:], 0.0, rtol=0, atol=1e-9 * scale)
        again = robot.closure_wrenches(q, v, tau, multipliers=robot.multipliers())
        np.testing.assert_allclose(again, wrench, rtol=0, atol=1e-12 * scale)


def test_joint_wrenches_carry_the_loop_forces():
    """joint_wrenches of the flexible four-bar include the cut's wrenches: about each joint's
    axis (y, child link frame) the transmitted torque is the joint's own generalized force, the
    crank's drive torque and zero at the passive coupler and rocker joints (1e-9 of the wrench
    scale; without the loop forces they are off by O(100) N m here); with multipliers= from the
    forward dynamics and solved from the inverse dynamics they agree (1e-9 of the scale)."""
    robot = fourbar()
    rng = np.random.default_rng(4)
    for crank in (0.9, 2.5):
        q = assembled(robot, crank=crank)
        q[robot.elastic_q_indices] = rng.normal(size=4) * 2e-3
        q = robot.assemble(q, elastic=True)
        v = robot.project_velocity(q, rng.normal(size=robot.nv))
        tau = np.zeros(robot.nv)
        tau[0] = 0.8
        qdd = robot.forward_dynamics(q, v, tau)
        wrenches = robot.joint_wrenches(q, v, qdd, multipliers=robot.multipliers())
        scale = np.abs(wrenches).max()
        assert robot.wrench_joint_names == ["crank_joint", "coupler_joint", "rocker_joint"]
        np.testing.assert_allclose(wrenches[:, 4], [0.8, 0.0, 0.0], rtol=0, atol=1e-9 * scale)
        solved = robot.joint_wrenches(q, v, qdd)
        np.testing.assert_allclose(solved, wrenches, rtol=0, atol=1e-9 * scale)
