"""Flexible links welded by a fixed joint (a beam clamped to the ground, a flexible link on a flange
welded to a moving link) and links welded to a flexible link (rigid bodies at their attachment).
References: Euler-Bernoulli closed forms, an independent dense Lagrange oracle (point masses, the
welded tool as point masses of its own, Jacobians by finite differences), Newton-Euler balance,
energy conservation, the elements' potential. One tolerance per test, stated."""
import warnings

import numpy as np
import pytest

import mbd_ros
from flexible_models import ALUMINIUM, beam_entry

G = 9.81


def load_quiet(*args, **kwargs):
    """load() without the URDF-vs-beam mass warning (the test URDFs carry placeholder inertials)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(*args, **kwargs)


def clamped_urdf(tip_mass=0.0, tip_x=0.0):
    """The root 'base' and, welded by the fixed joint 'clamp' at 0.5 m height, the flexible
    'beam' (along +x); optionally a point mass 'tip' welded to it at x = tip_x."""
    tip = ""
    if tip_mass > 0:
        tip = (f'<link name="tip"><inertial><mass value="{tip_mass}"/><inertia ixx="0" ixy="0" '
               'ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
               f'<joint name="tip_mount" type="fixed"><parent link="beam"/><child link="tip"/>'
               f'<origin xyz="{tip_x} 0 0"/></joint>')
    return f"""<?xml version="1.0"?>
<robot name="cantilever"><link name="base"/>
  <link name="beam"><inertial><mass value="1"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3"
    iyz="0" izz="1e-3"/></inertial></link>
  <joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/>
    <origin xyz="0 0 0.5" rpy="0 0 0"/></joint>{tip}
</robot>"""


def clamped(L=0.8, A=2e-4, Iy=2e-9, Iz=2e-7, modes=4, tip_mass=0.0):
    return load_quiet(clamped_urdf(tip_mass, L), flexible=beam_entry(L, A, Iy, Iz, modes=modes))


def static_deflection(robot):
    """q at the static equilibrium: the elastic rows of gravity_forces (affine in q_f) vanish."""
    e, ev = robot.elastic_q_indices, robot.elastic_v_indices
    q0 = robot.neutral()
    r0 = robot.gravity_forces(q0)[ev]
    J = np.column_stack([robot.gravity_forces(q0 + np.eye(robot.nq)[k])[ev] - r0 for k in e])
    q = q0.copy()
    q[e] = np.linalg.solve(J, -r0)
    return q


# --------------------------------------------------------------------- beam clamped to the ground
def test_clamped_beam_frequencies_match_euler_bernoulli():
    """A beam welded to the ground has no joint coordinate, only its modes; the eigenvalues of the
    linearised forward dynamics give omega_k = (beta_k L)^2 sqrt(E I / (rho A L^4)) with
    beta_1 L = 1.8751, beta_2 L = 4.6941, in both bending planes (Iy, Iz), within 1 % (10
    cubic elements: the FE frequencies are above the continuum's by < 0.1 %)."""
    L, A, Iy, Iz = 0.8, 2e-4, 2e-9, 8e-9
    robot = load_quiet(clamped_urdf(), gravity=(0, 0, 0),
                       flexible=beam_entry(L, A, Iy, Iz, modes=4))
    assert robot.joint_names == [] and robot.nq == robot.nv == 4
    q0, v0, tau = robot.neutral(), np.zeros(robot.nv), np.zeros(robot.nv)
    h = 1e-7
    J = np.column_stack([(robot.forward_dynamics(q0 + h * e, v0, tau)
                          - robot.forward_dynamics(q0 - h * e, v0, tau)) / (2 * h)
                         for e in np.eye(robot.nq)])
    omega = np.sort(np.sqrt(-np.linalg.eigvals(J).real))

    def scale(inertia):
        return np.sqrt(ALUMINIUM["E"] * inertia / (ALUMINIUM["density"] * A * L ** 4))

    expected = np.sort([1.8751 ** 2 * scale(Iy), 1.8751 ** 2 * scale(Iz), 4.6941 ** 2 * scale(Iy),
                        4.6941 ** 2 * scale(Iz)])
    np.testing.assert_allclose(omega, expected, rtol=0.01)
    np.testing.assert_allclose(np.sort(robot.flexible.bodies[0].frequencies) * 2 * np.pi,
                               expected, rtol=0.01)


def test_clamped_beam_static_deflection_and_clamp_wrench():
    """Cantilever under its own weight plus a tip mass m_t: tip deflection
    rho A g L^4 / (8 E I) + m_t g L^3 / (3 E I) within 1 % (4 modes of 10 cubic elements), and the
    clamp's fixed-joint wrench (a force sensor there) at that equilibrium holds the total weight:
    force (0, 0, (m + m_t) g) and torque about y -(m L/2 + m_t L) g (x of the centre of mass
    does not move: bending moves no point along the axis), relative 1e-9."""
    L, A, Iy, m_t = 0.8, 2e-4, 2e-9, 0.05
    robot = clamped(L, A, Iy, 100 * Iy, modes=4, tip_mass=m_t)
    q = static_deflection(robot)
    tip = robot.link_pose(q, "tip")[:3, 3]
    E, rho = ALUMINIUM["E"], ALUMINIUM["density"]
    expected = -(rho * A * G * L ** 4 / (8 * E * Iy) + m_t * G * L ** 3 / (3 * E * Iy))
    assert tip[2] - 0.5 == pytest.approx(expected, rel=0.01)
    zero = np.zeros(robot.nv)
    wrench = robot.joint_wrenches(q, zero, zero)[robot.wrench_joint_names.index("clamp")]
    m = rho * A * L
    np.testing.assert_allclose(wrench, [0, 0, (m + m_t) * G, 0, -(m * L / 2 + m_t * L) * G, 0],
                               rtol=0, atol=1e-9 * (m + m_t) * G)


# --------------------------------------------------------------------- a flexible link on a flange
TOOL_POINTS = (np.array([0.05, 0.08, 0.04, 0.03]),                    # kg
               np.array([[-0.06, 0.01, 0.03], [0.02, -0.02, 0.01],    # tool frame, m
                         [-0.03, 0.03, -0.02], [0.04, 0.0, 0.05]]))


def tool_inertial():
    """URDF <inertial> of the tool: the mass, centre of mass and inertia of TOOL_POINTS (the
    oracle moves these points themselves)."""
    m, x = TOOL_POINTS
    mass = m.sum()
    com = m @ x / mass
    d = x - com
    J = np.einsum("p,pk,pk->", m, d, d) * np.eye(3) - np.einsum("p,pk,pl->kl", m, d, d)
    mass, com, J = float(mass), com.tolist(), J.tolist()
    return (f'<inertial><origin xyz="{com[0]!r} {com[1]!r} {com[2]!r}"/><mass value="{mass!r}"/>'
            f'<inertia ixx="{J[0][0]!r}" ixy="{J[0][1]!r}" ixz="{J[0][2]!r}" iyy="{J[1][1]!r}" '
            f'iyz="{J[1][2]!r}" izz="{J[2][2]!r}"/></inertial>')


FLANGE_XYZ, FLANGE_RPY = np.array([0.3, 0.02, 0.0]), (0.2, 0.0, 0.4)
BEAM_L, J2_AT, TOOL_AT = 0.5, np.array([0.25, 0.0, 0.0]), np.array([0.5, 0.0, 0.01])
C2, M2 = np.array([0.1, 0.02, 0.0]), 0.3


def flange_urdf(flange="fixed", second=True):
    """base -> revolute 'j1' (y) -> rigid 'arm' (point mass 1 kg at 0.15 m) -> `flange` joint
    (fixed, or revolute about x) -> flexible 'beam' (0.5 m, both planes and torsion) -> fixed
    'tool_mount' at its tip -> 'tool' (four point masses, centre of mass back over the beam);
    with `second`, a revolute 'j2' (z) in the middle of the beam -> 'link2' (a point mass)."""
    axis = '<axis xyz="1 0 0"/>' if flange != "fixed" else ""
    kind = "continuous" if flange != "fixed" else "fixed"
    xyz = " ".join(repr(float(c)) for c in FLANGE_XYZ)
    rpy = " ".join(repr(float(c)) for c in FLANGE_RPY)
    tool = " ".join(repr(float(c)) for c in TOOL_AT)
    link2 = ""
    if second:
        link2 = (f'<link name="link2"><inertial><origin xyz="{C2[0]} {C2[1]} {C2[2]}"/>'
                 f'<mass value="{M2}"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
                 '</inertial></link><joint name="j2" type="continuous"><parent link="beam"/>'
                 f'<child link="link2"/><origin xyz="{J2_AT[0]} 0 0"/><axis xyz="0 0 1"/></joint>')
    return f"""<?xml version="1.0"?>
<robot name="flange"><link name="base"/>
  <link name="arm"><inertial><origin xyz="0.15 0 0"/><mass value="1.0"/><inertia ixx="0" ixy="0"
    ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="beam"><inertial><mass value="1"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3"
    iyz="0" izz="1e-3"/></inertial></link>
  <link name="tool">{tool_inertial()}</link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/></joint>
  <joint name="flange" type="{kind}"><parent link="arm"/><child link="beam"/>
    <origin xyz="{xyz}" rpy="{rpy}"/>{axis}</joint>
  <joint name="tool_mount" type="fixed"><parent link="beam"/><child link="tool"/>
    <origin xyz="{tool}"/></joint>{link2}
</robot>"""


def on_flange(flange="fixed", second=True, damping_ratio=0.0):
    flex = beam_entry(BEAM_L, 2e-4, 2e-9, 1e-9, modes=6, torsion=True,
                      damping_ratio=damping_ratio)
    return load_quiet(flange_urdf(flange, second), flexible=flex)


def _rot(axis, angle):
    axis = np.asarray(axis, float)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _rpy(r, p, y):
    return _rot([0, 0, 1], y) @ _rot([0, 1, 0], p) @ _rot([1, 0, 0], r)


def flange_oracle(robot, flange, second):
    """Dense equations of motion M(x), b(x, xd) of `on_flange` from the kinetic energy of point
    masses, T = 1/2 sum m |rdot|^2 + 1/2 sum (w + Psi qd_f)^T J (w + Psi qd_f), Lagrange's
    equations with Jacobians by central differences. Beam points: the FE quadrature points of the
    builder (fb.points, the first 4 per element). The tool: its own four point masses, each moving
    with the attachment frame at the tip joint's origin a, linearised (the floating frame's
    order): x + Phi_t(a) q_f + (Phi_r(a) q_f) x (x - a). link2: the joint hangs from the deformed
    point of its origin (translation Phi_t q_f, Cayley rotation of Phi_r q_f)."""
    from mbd_ros.model.flexible.attachment import cayley
    fb = robot.flexible.bodies[0]
    n_beam = 4 * 10
    pts = fb.points
    bm, bx, bN = pts.mass[:n_beam], pts.position[:n_beam], pts.N[:n_beam]
    bJ, bPsi = pts.inertia[:n_beam], pts.Psi[:n_beam]
    Ta, Ra = fb.shapes(TOOL_AT)
    tm, tx = TOOL_POINTS
    tx = tx + TOOL_AT                          # beam frame (tool_mount has no rotation)
    T2, R2 = fb.shapes(J2_AT)
    R_fl, p_fl = _rpy(*FLANGE_RPY), FLANGE_XYZ
    base = np.array([0.0, 0.0, 0.2])
    iq = fb.iq
    k = 1 + (flange != "fixed")                # joint coordinates before j2

    def beam_frame(x):
        R = _rot([0, 1, 0], x[0]) @ R_fl
        if flange != "fixed":
            R = R @ _rot([1, 0, 0], x[1])
        return R, base + _rot([0, 1, 0], x[0]) @ p_fl

    def positions(x):
        R, o = beam_frame(x)
        qf = x[iq:]
        beam = o + (bx + bN @ qf) @ R.T
        g = Ra @ qf
        tool = o + (tx + Ta @ qf + np.cross(g, tx - TOOL_AT)) @ R.T
        arm = base + _rot([0, 1, 0], x[0]) @ np.array([0.15, 0, 0])
        out = [beam, tool, arm[None]]
        if second:
            node = J2_AT + T2 @ qf
            p2 = o + R @ (node + cayley(R2 @ qf) @ _rot([0, 0, 1], x[k]) @ C2)
            out.append(p2[None])
        return np.vstack(out)

    masses = np.concatenate([bm, tm, [1.0]] + ([[M2]] if second else []))
    n = robot.nv

    def rotary(x):
        # beam points' body angular velocity w (beam frame) = B_w xd, plus Psi_j qd_f
        R_arm_to_beam = R_fl.T if flange == "fixed" else (R_fl @ _rot([1, 0, 0], x[1])).T
        B = np.zeros((len(bm), 3, n))
        B[:, :, 0] = R_arm_to_beam @ np.array([0.0, 1.0, 0.0])
        if flange != "fixed":
            B[:, 0, 1] = 1.0
        B[:, :, iq:] = bPsi
        return np.einsum("pka,pkl,plb->ab", B, bJ, B)

    def jacobian(x, h=1e-6):
        return np.stack([(positions(x + h * e) - positions(x - h * e)) / (2 * h)
                         for e in np.eye(n)], axis=-1)

    def dynamics(x, xd):
        J = jacobian(x)
        h = 1e-5
        Jd = (jacobian(x + h * xd) - jacobian(x - h * xd)) / (2 * h)
        M = np.einsum("p,pka,pkb->ab", masses, J, J) + rotary(x)
        Md = (rotary(x + h * xd) - rotary(x - h * xd)) / (2 * h)
        dT = np.array([(xd @ rotary(x + h * e) @ xd - xd @ rotary(x - h * e) @ xd) / (4 * h)
                       for e in np.eye(n)])
        b = (np.einsum("p,pka,pkb,b->a", masses, J, Jd, xd) + Md @ xd - dT
             - np.einsum("p,pka,k->a", masses, J, np.array([0, 0, -G])))
        b[iq:] += fb.K @ x[iq:] + fb.D @ xd[iq:]
        return M, b

    return dynamics


@pytest.mark.parametrize("flange, second", [("fixed", True), ("fixed", False),
                                            ("revolute", False)],
                         ids=["welded-with-child", "welded", "revolute-flange"])
def test_dynamics_match_point_mass_lagrange_oracle(flange, second):
    """A flexible beam on a flange (welded: a 0-dof body of its own; or revolute) on a swinging
    arm, carrying a welded tool whose centre of mass lies back over the beam and, with a child, a
    link on a joint in its middle: mass matrix (relative 1e-6) and forward dynamics (relative
    1e-5 of |qdd|) equal the dense Lagrange oracle's (finite differences: errors ~1e-9)."""
    robot = on_flange(flange, second, damping_ratio=0.02)
    oracle = flange_oracle(robot, flange, second)
    rng = np.random.default_rng(5)
    nj = robot.nv - 6
    for _ in range(3):
        q = np.zeros(robot.nq)
        q[:nj] = rng.uniform(-2, 2, nj)
        q[robot.elastic_q_indices] = rng.normal(size=6) * 2e-3
        v = rng.normal(size=robot.nv)
        v[robot.elastic_v_indices] *= 0.05
        tau = rng.normal(size=robot.nv) * 0.3
        M, b = oracle(q, v)
        np.testing.assert_allclose(robot.mass_matrix(q), M, rtol=0, atol=1e-6 * np.abs(M).max())
        qdd = robot.forward_dynamics(q, v, tau)
        expected = np.linalg.solve(M, tau - b)
        np.testing.assert_allclose(qdd, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("second", [True, False], ids=["with-child", "no-child"])
def test_welded_beam_fd_id_round_trip_and_mass_matrix(second):
    """M symmetric positive definite; ID(FD(tau)) = tau and FD = M^-1 (tau - b) (relative 1e-9);
    the C-level entries (compile_c_calls) give the kernels' results bit for bit."""
    robot = on_flange("fixed", second, damping_ratio=0.01)
    rng = np.random.default_rng(12)
    states = []
    for _ in range(4):
        q = robot.random_configuration(rng)
        q[robot.elastic_q_indices] = rng.normal(size=6) * 3e-3
        v, tau = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
        M = robot.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(M)[0] > 0
        qdd = robot.forward_dynamics(q, v, tau)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), tau, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(qdd, np.linalg.solve(M, tau - robot.bias_forces(q, v)),
                                   rtol=1e-9, atol=1e-9 * np.abs(qdd).max())
        states.append((q, v, tau, qdd, M))
    robot.compile_c_calls()
    for q, v, tau, qdd, M in states:
        np.testing.assert_array_equal(robot.forward_dynamics(q, v, tau), qdd)
        np.testing.assert_array_equal(robot.mass_matrix(q), M)


def test_welded_beam_energy_conservation_rk4():
    """Undamped: the arm swings the welded beam (with its tool and the link on j2) for 2 s of RK4
    at dt = 1e-4 s (2 pi f_max dt < 1): kinetic + gravitational + elastic energy stays within
    1e-6 of m g (1 m) (RK4's error ~ (omega dt)^4 per period on the barely excited top modes)."""
    from mbd_ros.robot.integrators import Simulator
    robot = on_flange("fixed", True)
    q = robot.neutral()
    q[:2] = [0.5, -0.6]
    v = np.zeros(robot.nv)
    v[:2] = [1.5, 2.0]
    dt = 1e-4
    assert dt * 2 * np.pi * robot.highest_frequency(q) < 1.0
    sim = Simulator(robot, dt, "rk4", q=q, v=v)
    tau = np.zeros(robot.nv)

    def energy():
        return robot.kinetic_energy(sim.q, sim.v) + robot.potential_energy(sim.q)

    e0, worst, elastic_seen = energy(), 0.0, 0.0
    for k in range(int(2.0 / dt)):
        sim.step(tau)
        if k % 500 == 0:
            worst = max(worst, abs(energy() - e0))
            elastic_seen = max(elastic_seen, robot.elastic_energy(sim.q))
    assert elastic_seen > 1e-4                  # J: the beam does vibrate
    assert worst < 1e-6 * robot.total_mass * G * 1.0


def test_flange_wrench_balances_the_welded_body():
    """Newton-Euler of what the flange carries (the beam and the welded tool, the builder's points
    of the model, and the link on j2 through j2's joint wrench): d/dt of the points' linear and
    angular momentum (second differences along q + t v + t^2/2 qdd, Richardson-extrapolated)
    equals gravity plus the flange's joint wrench minus j2's (relative 1e-5)."""
    robot = on_flange("fixed", True)
    fb = robot.flexible.bodies[0]
    pts = fb.points
    rng = np.random.default_rng(8)
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices] = rng.normal(size=6) * 2e-3
    v = rng.normal(size=robot.nv)
    v[robot.elastic_v_indices] *= 0.1
    tau = np.zeros(robot.nv)
    tau[:2] = rng.normal(size=2)
    qdd = robot.forward_dynamics(q, v, tau)
    W = robot.joint_wrenches(q, v, qdd)
    flange = W[robot.wrench_joint_names.index("flange")]
    j2 = W[robot.wrench_joint_names.index("j2")]

    def world_points(x):
        pose = robot.link_pose(x, "beam")
        qf = x[fb.iq:fb.iq + fb.n_modes]
        return pose[:3, 3] + (pts.position + pts.N @ qf) @ pose[:3, :3].T

    def point_accelerations(h):
        qp, qm = q + h * v + 0.5 * h * h * qdd, q - h * v + 0.5 * h * h * qdd
        return (world_points(qp) - 2 * world_points(q) + world_points(qm)) / h ** 2

    acc = (4 * point_accelerations(2e-6) - point_accelerations(4e-6)) / 3
    r0 = world_points(q)
    gravity = np.array([0, 0, -G])

    def world_wrench(link, wrench):
        pose = robot.link_pose(q, link)
        force = pose[:3, :3] @ wrench[:3]
        return force, pose[:3, :3] @ wrench[3:] + np.cross(pose[:3, 3], force)

    f_fl, t_fl = world_wrench("beam", flange)
    f_j2, t_j2 = world_wrench("link2", j2)
    lin = pts.mass @ acc
    np.testing.assert_allclose(lin, f_fl - f_j2 + pts.mass.sum() * gravity, rtol=0,
                               atol=1e-5 * np.abs(lin).max())
    # plus the rate of the beam points' rotary angular momentum R J_j (w + Psi_j qd_f) (torsion:
    # small inertias, large modal accelerations), w from differences of the beam's pose; the
    # tool has none (point masses in the model)

    def rotary_momentum(x, xd, h=1e-7):
        R = robot.link_pose(x, "beam")[:3, :3]
        Rd = (robot.link_pose(x + h * xd, "beam")[:3, :3]
              - robot.link_pose(x - h * xd, "beam")[:3, :3]) / (2 * h)
        Om = R.T @ Rd
        w = np.array([Om[2, 1], Om[0, 2], Om[1, 0]])
        qd_f = xd[fb.iq:fb.iq + fb.n_modes]
        return sum(R @ (Jj @ (w + Pj @ qd_f)) for Jj, Pj in zip(pts.inertia, pts.Psi))

    h = 1e-5
    rotary = (rotary_momentum(q + h * v + 0.5 * h * h * qdd, v + h * qdd)
              - rotary_momentum(q - h * v + 0.5 * h * h * qdd, v - h * qdd)) / (2 * h)
    assert np.abs(rotary).max() > 1e-3 * np.abs(t_fl).max()     # it matters here
    ang = np.einsum("p,pk->k", pts.mass, np.cross(r0, acc)) + rotary
    expected = t_fl - t_j2 + np.cross(r0, pts.mass[:, None] * gravity).sum(axis=0)
    np.testing.assert_allclose(ang, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_spring_on_the_welded_beam_is_minus_gradient_of_its_potential():
    """A spring-damper from the ground to a point of the welded beam (at its deformed point) and a
    bushing on the tool: their generalized forces (ID without minus ID with, at rest) equal
    -dV/dq of their potential (central differences, h = 1e-6: within 1e-6 of max |Q|)."""
    forces = {"forces": [
        {"name": "stay", "type": "spring_damper", "parent": "base", "parent_point": [0.4, 0.3, 0.9],
         "child": "beam", "child_point": [0.35, 0.01, 0.005], "stiffness": 200.0,
         "rest_length": 0.2},
        {"name": "mount", "type": "bushing", "parent": "base",
         "parent_origin": {"xyz": [0.8, 0.3, 0.1], "rpy": [0.1, 0.2, -0.3]}, "child": "tool",
         "child_origin": {"xyz": [0.01, 0.0, 0.0], "rpy": [0.0, 0.1, 0.0]},
         "stiffness": [40.0, 50.0, 60.0, 2.0, 3.0, 4.0]}]}
    flex = beam_entry(BEAM_L, 2e-4, 2e-9, 1e-9, modes=6, torsion=True)
    with_forces = load_quiet(flange_urdf("fixed", True), flexible=flex, forces=forces)
    without = on_flange("fixed", True)
    rng = np.random.default_rng(4)
    zero = np.zeros(without.nv)
    h = 1e-6
    for _ in range(3):
        q = without.random_configuration(rng)
        q[without.elastic_q_indices] = rng.normal(size=6) * 3e-3
        Q = without.inverse_dynamics(q, zero, zero) - with_forces.inverse_dynamics(q, zero, zero)
        V = lambda x: with_forces.potential_energy(x) - without.potential_energy(x)  # noqa: E731
        grad = np.array([(V(q + h * e) - V(q - h * e)) / (2 * h) for e in np.eye(without.nq)])
        assert np.abs(Q[without.elastic_v_indices]).max() > 1e-3     # the elastic rows are loaded
        np.testing.assert_allclose(Q, -grad, rtol=0, atol=1e-6 * np.abs(Q).max())


def test_massless_link_beyond_a_welded_beam_is_named():
    """A joint that moves no mass (link2 massless) beyond the welded beam's 0-dof body: the load
    error names that joint (bodies and joints are numbered apart once a welded flexible link is
    a body of its own)."""
    text = flange_urdf("fixed", True).replace(f'<mass value="{M2}"/>', '<mass value="0"/>')
    with pytest.raises(mbd_ros.ModelError, match="joint 'j2' moves no mass"):
        load_quiet(text, flexible=beam_entry(BEAM_L, 2e-4, 2e-9, 1e-9, modes=6, torsion=True))


CHAIN_OF_WELDS = """<?xml version="1.0"?>
<robot name="welds"><link name="base"/>
  <link name="b1"><inertial><mass value="1"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3"
    iyz="0" izz="1e-3"/></inertial></link>
  <link name="b2"><inertial><mass value="1"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3"
    iyz="0" izz="1e-3"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0.02 0 0.01"/><mass value="0.1"/><inertia ixx="1e-5"
    ixy="0" ixz="0" iyy="2e-5" iyz="0" izz="2e-5"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.1 0 0"/><mass value="0.2"/><inertia ixx="1e-5"
    ixy="0" ixz="0" iyy="2e-5" iyz="0" izz="2e-5"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="b1"/>
    <axis xyz="0 1 0"/></joint>
  <joint name="weld" type="fixed"><parent link="b1"/><child link="b2"/>
    <origin xyz="0.5 0 0" rpy="0.3 0.2 0"/></joint>
  <joint name="tool_mount" type="fixed"><parent link="b2"/><child link="tool"/>
    <origin xyz="0.4 0 0"/></joint>
  <joint name="j3" type="spherical"><parent link="tool"/><child link="l3"/>
    <origin xyz="0.05 0 0"/></joint>
</robot>"""


def test_wrench_of_a_tool_welded_to_a_welded_beam_with_a_spherical_child():
    """A flexible beam welded to another flexible beam, a tool welded to its tip carrying a link
    on a spherical joint (q and v of different sizes): the tool_mount force equals
    m_tool (a_com - g) plus the force j3 passes on to l3, with a_com from second differences of
    the tool's pose along the motion (relative 1e-5: undeformed at this instant, small elastic
    rates, so the pose's Cayley rotation and the model's linearised attachment differ by
    O(|g'|^2 d) accelerations); FD(ID) holds (1e-9)."""
    e1 = beam_entry(0.5, 2e-4, 2e-9, 1e-9, modes=4, torsion=True)["flexible_links"][0]
    e2 = beam_entry(0.4, 1e-4, 1e-9, 1e-9, modes=3, torsion=True)["flexible_links"][0]
    e1["link"], e2["link"] = "b1", "b2"
    robot = load_quiet(CHAIN_OF_WELDS, flexible={"flexible_links": [e1, e2]})
    assert robot.nq == robot.nv + 1
    rng = np.random.default_rng(6)
    q = robot.random_configuration(rng)
    v = rng.normal(size=robot.nv)
    v[robot.elastic_v_indices] *= 1e-3
    tau = rng.normal(size=robot.nv) * 0.1
    tau[robot.elastic_v_indices] = 0.0
    qdd = robot.forward_dynamics(q, v, tau)
    np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), tau, rtol=1e-9, atol=1e-9)
    W = robot.joint_wrenches(q, v, qdd)
    mount = W[robot.wrench_joint_names.index("tool_mount")]
    j3 = W[robot.wrench_joint_names.index("j3")]
    com = np.array([0.02, 0.0, 0.01])

    def com_world(x):
        pose = robot.link_pose(x, "tool")
        return pose[:3, 3] + pose[:3, :3] @ com

    def moved(x, dx, h):
        # q along the motion; the spherical joint's quaternion (q[1:5]) is integrated exactly
        return robot.integrate(x, dx, h)

    def acc(h):
        qp = moved(q, v + 0.5 * h * qdd, h)
        qm = moved(q, -v + 0.5 * h * qdd, h)
        return (com_world(qp) - 2 * com_world(q) + com_world(qm)) / h ** 2

    a = (4 * acc(2e-5) - acc(4e-5)) / 3
    expected = 0.1 * (a - np.array([0, 0, -G])) + robot.link_pose(q, "l3")[:3, :3] @ j3[:3]
    got = robot.link_pose(q, "tool")[:3, :3] @ mount[:3]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_closed_loop_onto_a_clamped_beam():
    """Crank and coupler closed by a spherical cut onto the deformed tip of a beam clamped to the
    ground (the four-bar of test_flexible_loops.py with its rocker welded): the closure Jacobian
    (elastic columns included) equals central differences of the residuals (h = 1e-6: relative
    1e-7), and forward dynamics with a crank drive satisfies G_l qdd = -gamma (1e-8 of |gamma|)."""
    from test_flexible_loops import CLOSURES, FOURBAR
    a, b, c, d, crank = 0.2, 0.6, 0.5, 0.5, 0.7      # the four-bar's links and a crank angle
    crank_tip = np.array([a * np.cos(crank), -a * np.sin(crank)])
    dist = np.linalg.norm(np.array([d, 0.0]) - crank_tip)
    direction = (np.arctan2(*(np.array([d, 0.0]) - crank_tip)[::-1])
                 + np.arccos((b * b + dist * dist - c * c) / (2 * b * dist)))
    tip = crank_tip + b * np.array([np.cos(direction), np.sin(direction)])
    rocker = float(-np.arctan2(tip[1], tip[0] - d))
    text = FOURBAR.replace('<joint name="rocker_joint" type="continuous">',
                           '<joint name="rocker_joint" type="fixed">').replace(
        '<origin xyz="0.5 0 0"/><axis xyz="0 1 0"/></joint>',
        f'<origin xyz="0.5 0 0" rpy="0 {rocker!r} 0"/></joint>')
    robot = load_quiet(text, flexible=beam_entry(0.5, 2e-4, 2e-9, 1e-9, modes=4, torsion=True),
                       closures=CLOSURES)
    assert robot.joint_names == ["crank_joint", "coupler_joint"]
    q = robot.neutral()
    q[0], q[1] = crank, -direction - crank
    q = robot.assemble(q)
    rng = np.random.default_rng(3)
    q[robot.elastic_q_indices] = rng.normal(size=4) * 1e-4
    g, G, _ = robot.loop_state(q)
    h = 1e-6
    fd = np.column_stack([(robot.loop_state(robot.integrate(q, e, h))[0]
                           - robot.loop_state(robot.integrate(q, e, -h))[0]) / (2 * h)
                          for e in np.eye(robot.nv)])
    np.testing.assert_allclose(G, fd, rtol=0, atol=1e-7 * np.abs(G).max())
    assert np.abs(G[:, robot.elastic_v_indices]).max() > 0.1
    null = np.linalg.svd(G)[2][np.linalg.matrix_rank(G):].T
    v = null @ rng.normal(size=null.shape[1]) * 0.1
    tau = np.zeros(robot.nv)
    tau[0] = 1.7
    qdd = robot.forward_dynamics(q, v, tau)
    gamma = robot._acceleration_bias(q, v)
    np.testing.assert_allclose(G @ qdd, -gamma, rtol=0,
                               atol=1e-8 * max(1.0, np.abs(gamma).max()))


def test_a_welded_link_of_zero_mass_but_inertia_is_named_in_a_warning():
    """A link welded to a flexible link with zero mass and a non-zero inertia has no point-mass
    equivalent (the representation of welded links): the warning names it, and the robot's
    dynamics equal those of the same robot without that inertia (it is left out, not
    half-used)."""
    xml = clamped_urdf(tip_mass=1.0, tip_x=0.8).replace(
        '<mass value="1.0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>',
        '<mass value="0"/><inertia ixx="2e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/>')
    assert 'mass value="0"' in xml
    flexible = beam_entry(0.8, 2e-4, 2e-9, 2e-7, modes=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = mbd_ros.load(xml, flexible=flexible)
    named = [w for w in caught if "'tip'" in str(w.message) and "left out" in str(w.message)]
    assert len(named) == 1, [str(w.message) for w in caught]
    bare = load_quiet(clamped_urdf(), flexible=flexible)
    q = bare.neutral() + 1e-3 * np.arange(1, bare.nq + 1)
    v = 0.1 * np.ones(bare.nv)
    np.testing.assert_array_equal(robot.forward_dynamics(q, v, np.zeros(bare.nv)),
                                  bare.forward_dynamics(q, v, np.zeros(bare.nv)))
