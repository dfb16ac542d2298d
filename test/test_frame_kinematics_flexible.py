"""Frame kinematics of robots with flexible links (robot/flexible_frame_kinematics.py,
kernels/flexible_frame_kinematics.py) against independent references:
- central finite differences of link_pose along q(t) = integrate(q, v t) (the twist J v in the
  three frames) and along q(t) = integrate(q, v t + qdd t^2 / 2) (the classical acceleration: the
  second derivative of the link origin and the derivative of the angular velocity);
- the centre of mass against the mass-weighted mean of the deformed body's points (the point
  masses of test_flexible_welded's Lagrange oracle), and its motion against central differences;
- momentum identities: on a free-floating robot the root rows of M v are the whole system's
  momentum (test_flexible_floating.world_momentum), so A_G v = [P; L_0 - c x P];
- M^-1 M = I and Lambda against the dense (J M^-1 J^T)^-1 computed with numpy from mass_matrix.
Robots: the sample flexible arm (config/flexible_arm.yaml: links before, on and welded at the tip
of the flexible forearm), a flexible beam welded to a swinging arm carrying an off-centre welded
tool and a link on a joint in its middle (test_flexible_welded.on_flange), and a free-floating
space robot with a flexible appendage on a spherical joint (test_flexible_floating.space_robot).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import EPS, ROUNDOFF_SAFETY, assert_close, solve_tol
from test_flexible_floating import deformed_state, space_robot, world_momentum
from test_flexible_welded import (BEAM_L, FLANGE_RPY, FLANGE_XYZ, TOOL_AT, TOOL_POINTS, _rot,
                                  _rpy, load_quiet, on_flange)
from test_flexible_exudyn import exu  # noqa: F401 -- the Exudyn fixture
from test_frame_kinematics import FD_TOL, FRAMES, H, fd_twist, vee_log

ROOT = Path(__file__).resolve().parent.parent
N_STATES = 3
# second differences: truncation h^2 |x''''| / 12 plus round-off ~4 eps |x| / h^2; the constant
# bounds the fourth time derivative of these ~1 rad/s motions of ~1 m links (as FD_TOL's)
H2 = 3e-4
FD2_TOL = 1e3 * (H2 ** 2 + EPS / H2 ** 2)


def flexible_arm():
    return load_quiet(str(ROOT / "urdf" / "flexible_arm.urdf"),
                      flexible=str(ROOT / "config" / "flexible_arm.yaml"))


# robot -> (factory, {link: where it is relative to the flexible link})
ROBOTS = {
    "flexible_arm": (flexible_arm, {"base": "root", "upper_arm": "before", "forearm": "on",
                                    "tool": "welded"}),
    "flange": (lambda: on_flange("fixed", second=True),
               {"arm": "before", "beam": "on", "tool": "welded", "link2": "beyond"}),
    "space_robot": (space_robot, {"hub": "before", "beam": "on", "tip": "beyond"}),
}


class Case:
    """A flexible robot, its links by kind and deformed random states (q, v, qdd)."""

    def __init__(self, key):
        factory, self.links = ROBOTS[key]
        self.key = key
        self.robot = robot = factory()
        rng = np.random.default_rng(sum(map(ord, key)))
        self.states = []
        for _ in range(N_STATES):
            q = deformed_state(robot, rng, scale=3e-3)
            v = rng.normal(size=robot.nv)
            qdd = rng.normal(size=robot.nv)
            v[robot.elastic_v_indices] *= 0.05
            qdd[robot.elastic_v_indices] *= 0.05
            self.states.append((q, v, qdd))


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request):
    return Case(request.param)


def in_frame(robot, q, link, motion_lwa, frame, world_extra=None):
    """A local_world_aligned motion [l; a] of `link` expressed in `frame` from its pose:
    local R^T [l; a], world [l - a x p (+ world_extra); a]."""
    pose = robot.link_pose(q, link)
    R, p = pose[:3, :3], pose[:3, 3]
    lin, ang = motion_lwa[:3], motion_lwa[3:]
    if frame == "local":
        return np.concatenate([R.T @ lin, R.T @ ang])
    if frame == "world":
        lin = lin - np.cross(ang, p) + (0.0 if world_extra is None else world_extra)
        return np.concatenate([lin, ang])
    return motion_lwa


# ==== Jacobians and twists =======================================================================
def test_twist_is_derivative_of_link_pose_in_the_three_frames(case):
    """link_velocity (= link_jacobian v) of links before, on, welded to and beyond the flexible
    link is the central difference of link_pose along integrate(q, v t) (FD_TOL), in root axes
    at the link origin, and that motion expressed in link axes / about the root origin for
    "local" / "world"; the elastic columns of links on or beyond the flexible link are not zero,
    those of links before it are."""
    robot = case.robot
    elastic = robot.elastic_v_indices
    for k, (q, v, _) in enumerate(case.states):
        for link, where in case.links.items():
            expected = fd_twist(robot, q, v, link)
            for frame in FRAMES:
                what = f"{case.key} state {k} {link} ({where}) {frame}"
                J = robot.link_jacobian(q, link, frame)
                twist = robot.link_velocity(q, v, link, frame)
                assert_close(twist, in_frame(robot, q, link, expected, frame),
                             f"{what}: link_velocity vs d/dt link_pose", FD_TOL)
                assert_close(J @ v, twist, f"{what}: J v vs link_velocity",
                             ROUNDOFF_SAFETY * robot.nv * EPS * np.abs(J).sum(axis=1).max())
                if where in ("root", "before"):
                    assert not J[:, elastic].any(), f"{what}: elastic columns before the link"
                elif where != "on":
                    assert np.abs(J[:, elastic]).max() > 1e-3, f"{what}: no elastic columns"


def test_link_on_the_flexible_link_is_its_reference_frame(case):
    """The flexible link's own frame is its reference frame (the clamp): the elastic velocities
    do not move it (link_pose does not deform it either)."""
    robot = case.robot
    link = next(name for name, where in case.links.items() if where == "on")
    q, _, _ = case.states[0]
    assert not robot.link_jacobian(q, link)[:, robot.elastic_v_indices].any()
    rigid = q.copy()
    rigid[robot.elastic_q_indices] = 0.0
    np.testing.assert_array_equal(robot.link_pose(q, link), robot.link_pose(rigid, link))


# ==== classical acceleration =====================================================================
def pose_along(robot, q, v, qdd, link, t):
    return robot.link_pose(robot.integrate(q, v * t + 0.5 * qdd * t * t, 1.0), link)


def fd_classical_acceleration(robot, q, v, qdd, link):
    """(x'', w') of the link origin and frame along q(t) = integrate(q, v t + qdd t^2 / 2), root
    axes, by central differences of link_pose: x'' = (x(h) - 2 x(0) + x(-h)) / h^2, and w' the
    difference of w(+-h) = vee_log(R(t + h) R(t - h)^T) / 2h. The curve's velocity at 0 is v and
    its acceleration qdd (the exponential map's d/dt at 0: ad_v v = 0)."""
    h = H2
    poses = {s: pose_along(robot, q, v, qdd, link, s * h) for s in (-2, -1, 0, 1, 2)}
    xdd = (poses[1][:3, 3] - 2 * poses[0][:3, 3] + poses[-1][:3, 3]) / h ** 2
    w_plus = vee_log(poses[2][:3, :3] @ poses[0][:3, :3].T) / (2 * h)
    w_minus = vee_log(poses[0][:3, :3] @ poses[-2][:3, :3].T) / (2 * h)
    return xdd, (w_plus - w_minus) / (2 * h)


def test_classical_acceleration_is_second_derivative_of_link_pose(case):
    """link_acceleration(q, v, qdd, link, frame) against the second central difference of
    link_pose along integrate(q, v t + qdd t^2 / 2) (FD2_TOL): [x''; w'] in root axes, R^T of it
    in "local", and for "world" the classical acceleration of the frame-fixed point at the root
    origin, x'' - w' x x - w x (w x x) (w from the twist, checked above)."""
    robot = case.robot
    for k, (q, v, qdd) in enumerate(case.states):
        for link, where in case.links.items():
            xdd, wd = fd_classical_acceleration(robot, q, v, qdd, link)
            expected = np.concatenate([xdd, wd])
            w = robot.link_velocity(q, v, link)[3:]
            x = robot.link_pose(q, link)[:3, 3]
            for frame in FRAMES:
                reference = in_frame(robot, q, link, expected, frame,
                                     world_extra=-np.cross(w, np.cross(w, x)))
                assert_close(robot.link_acceleration(q, v, qdd, link, frame), reference,
                             f"{case.key} state {k} {link} ({where}) {frame}: classical "
                             "acceleration vs d2/dt2 link_pose", FD2_TOL)


@pytest.mark.parametrize("key", ["flexible_arm", "flange"])
def test_drift_is_derivative_of_the_twist_on_a_vector_space(key):
    """With qdd = 0: link_acceleration = d/dt link_velocity(q(t), v) along q(t) = q + v t, on
    robots whose coordinates are a vector space (revolute joints and elastic coordinates)."""
    case = Case(key)
    robot = case.robot
    assert robot.nq == robot.nv
    zero = np.zeros(robot.nv)
    for q, v, _ in case.states:
        for link in case.links:
            fd = (robot.link_velocity(q + H * v, v, link)
                  - robot.link_velocity(q - H * v, v, link)) / (2 * H)
            assert_close(robot.link_acceleration(q, v, zero, link), fd,
                         f"{case.key} {link}: drift vs d/dt J v", FD_TOL)


# ==== centre of mass and centroidal momentum =====================================================
def test_com_jacobian_is_derivative_of_center_of_mass(case):
    """com_jacobian v is the central difference of center_of_mass along integrate(q, v t)
    (FD_TOL); A_G's linear rows are m J_c (m: the moving mass, from A_G of a unit root
    translation on a floating robot, or by the identity below)."""
    robot = case.robot
    for k, (q, v, _) in enumerate(case.states):
        fd = (robot.center_of_mass(robot.integrate(q, v, H))
              - robot.center_of_mass(robot.integrate(q, v, -H))) / (2 * H)
        Jc = robot.com_jacobian(q)
        assert_close(Jc @ v, fd, f"{case.key} state {k}: J_c v vs d/dt com", FD_TOL)
        A = robot.centroidal_momentum_matrix(q)
        # P = m c', so A_G[:3] and J_c are parallel column by column with the same factor
        mass = np.linalg.norm(A[:3]) / np.linalg.norm(Jc)
        assert_close(A[:3], mass * Jc, f"{case.key} state {k}: A_G[:3] = m J_c",
                     ROUNDOFF_SAFETY * robot.nv * EPS * 10)


def flange_points(robot, q):
    """(masses, world positions) of test_flexible_welded's point-mass oracle of on_flange("fixed",
    second=False) at q: the beam's FE quadrature points moving by N q_f, the tool's four points
    moving with its attachment (linearised), the arm's point mass."""
    fb = robot.flexible.bodies[0]
    n_beam = 4 * 10
    pts = fb.points
    bm, bx, bN = pts.mass[:n_beam], pts.position[:n_beam], pts.N[:n_beam]
    Ta, Ra = fb.shapes(TOOL_AT)
    tm, tx = TOOL_POINTS
    tx = tx + TOOL_AT
    base = np.array([0.0, 0.0, 0.2])
    R = _rot([0, 1, 0], q[0]) @ _rpy(*FLANGE_RPY)
    o = base + _rot([0, 1, 0], q[0]) @ FLANGE_XYZ
    qf = q[fb.iq:]
    beam = o + (bx + bN @ qf) @ R.T
    tool = o + (tx + Ta @ qf + np.cross(Ra @ qf, tx - TOOL_AT)) @ R.T
    arm = base + _rot([0, 1, 0], q[0]) @ np.array([0.15, 0, 0])
    return np.concatenate([bm, tm, [1.0]]), np.vstack([beam, tool, arm[None]])


def test_center_of_mass_is_the_mean_of_the_deformed_points():
    """A beam welded to a swinging arm with an off-centre welded tool, deformed: center_of_mass
    equals the mass-weighted mean of the oracle's points (the beam's FE points displaced by
    N q_f, the tool's own points, the arm's point mass), to round-off (1e-12 relative)."""
    robot = on_flange("fixed", second=False)
    assert robot.nv == 7 and BEAM_L == 0.5
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = np.concatenate([rng.uniform(-2, 2, 1), rng.normal(size=6) * 3e-2])
        masses, points = flange_points(robot, q)
        expected = masses @ points / masses.sum()
        undeformed = np.concatenate([q[:1], np.zeros(6)])
        assert np.linalg.norm(robot.center_of_mass(q) - robot.center_of_mass(undeformed)) > 1e-5
        assert_close(robot.center_of_mass(q), expected, "com vs mean of the deformed points",
                     1e-12)


def test_centroidal_momentum_of_a_fixed_base_flexible_robot_is_the_points_momentum():
    """The same welded beam, deformed and moving: A_G v = [P; L_0 - c x P] with the momentum of
    the oracle's points, P = sum m x', L_0 = sum m x x x' + R_beam sum J_j (w_beam + Psi_j qd_f)
    (the beam nodes' rotary inertia), x' by central differences of the points (h = 1e-6). The
    oracle's M equals the model's to 1e-6 relative (test_flexible_welded); same tolerance here."""
    robot = on_flange("fixed", second=False)
    fb = robot.flexible.bodies[0]
    n_beam = 4 * 10
    J, Psi = fb.points.inertia[:n_beam], fb.points.Psi[:n_beam]
    rng = np.random.default_rng(9)
    h = 1e-6
    for k in range(3):
        q = np.concatenate([rng.uniform(-2, 2, 1), rng.normal(size=6) * 2e-3])
        v = np.concatenate([rng.normal(size=1), rng.normal(size=6) * 0.05])
        masses, points = flange_points(robot, q)
        xdot = (flange_points(robot, q + h * v)[1] - flange_points(robot, q - h * v)[1]) / (2 * h)
        R_beam = _rot([0, 1, 0], q[0]) @ _rpy(*FLANGE_RPY)
        w_beam = R_beam.T @ np.array([0.0, v[0], 0.0])          # j1 turns about the root's y
        spin = np.einsum("pkl,pl->k", J, w_beam + Psi @ v[fb.iv:])
        P = masses @ xdot
        L0 = np.einsum("p,pk->k", masses, np.cross(points, xdot)) + R_beam @ spin
        c = masses @ points / masses.sum()
        expected = np.concatenate([P, L0 - np.cross(c, P)])
        assert_close(robot.centroidal_momentum_matrix(q) @ v, expected,
                     f"state {k}: A_G v vs the oracle points' momentum", 1e-6)


def test_centroidal_momentum_of_a_floating_flexible_robot_is_its_momentum():
    """Free-floating space robot (hub, flexible beam on a spherical shoulder, tip on a joint at
    the beam's end), deformed: A_G v = [P; L_0 - c x P] with (P, L_0) the whole system's
    momentum from the root rows of M v (test_flexible_floating.world_momentum, independent of
    the centroidal kernels), and m J_c v = P with m = M[0, 0] (the root's linear block is m 1);
    round-off bound from |M| |v|."""
    robot = space_robot()
    rng = np.random.default_rng(11)
    for k in range(N_STATES):
        q = deformed_state(robot, rng)
        v = rng.normal(size=robot.nv)
        M = robot.mass_matrix(q)
        P_L = world_momentum(robot, q, v)
        c = robot.center_of_mass(q)
        expected = np.concatenate([P_L[:3], P_L[3:] - np.cross(c, P_L[:3])])
        tol = ROUNDOFF_SAFETY * robot.nv * EPS * np.linalg.norm(M, 2) * np.linalg.norm(v) * 10
        assert_close(robot.centroidal_momentum_matrix(q) @ v, expected,
                     f"state {k}: A_G v vs momentum from M", tol)
        assert_close(M[0, 0] * robot.com_jacobian(q) @ v, P_L[:3],
                     f"state {k}: m J_c v vs linear momentum", tol)


# ==== M^-1 and Lambda ============================================================================
def test_mass_matrix_inverse_and_operational_space_inertia(case):
    """M^-1 M = I (solve_tol: 2 n eps cond(M)); Lambda of the link farthest out against numpy's
    (J M^-1 J^T)^-1 from mass_matrix and link_jacobian (bound: cond(M) cond(J M^-1 J^T))."""
    robot = case.robot
    link = list(case.links)[-1]
    for k, (q, _, _) in enumerate(case.states):
        M = robot.mass_matrix(q)
        Minv = robot.mass_matrix_inverse(q)
        np.testing.assert_array_equal(Minv, Minv.T)
        err = np.abs(Minv @ M - np.eye(robot.nv)).max()
        assert err <= solve_tol(M, np.ones(robot.nv)), f"{case.key} state {k}: |M^-1 M - 1| {err}"
        for frame in FRAMES:
            J = robot.link_jacobian(q, link, frame)
            inner = J @ np.linalg.solve(M, J.T)
            expected = np.linalg.inv(inner)
            tol = (ROUNDOFF_SAFETY * 2 * robot.nv * EPS * np.linalg.cond(M)
                   * np.linalg.cond(inner) * np.abs(expected).max())
            lam = robot.operational_space_inertia(q, link, frame)
            assert np.abs(lam - expected).max() <= tol, f"{case.key} {link} {frame}: Lambda"


# ==== interface ==================================================================================
def test_out_arguments_and_errors_on_a_flexible_robot():
    """out= is filled and returned; an unknown link suggests the close names; a wrong out shape
    and a short q name the argument."""
    robot = flexible_arm()
    q = robot.neutral()
    q[robot.elastic_q_indices] = 1e-3
    v = np.linspace(-1, 1, robot.nv)
    out = np.empty((6, robot.nv))
    assert robot.link_jacobian(q, "tool", out=out) is out
    np.testing.assert_array_equal(out, robot.link_jacobian(q, "tool"))
    twist = np.empty(6)
    assert robot.link_velocity(q, v, "tool", "local", out=twist) is twist
    for method, shape in (("center_of_mass", (3,)), ("com_jacobian", (3, robot.nv)),
                          ("centroidal_momentum_matrix", (6, robot.nv)),
                          ("mass_matrix_inverse", (robot.nv, robot.nv))):
        target = np.empty(shape)
        assert getattr(robot, method)(q, out=target) is target
        np.testing.assert_array_equal(target, getattr(robot, method)(q))
    with pytest.raises(ValueError, match="unknown link 'toool'.*'tool'"):
        robot.link_jacobian(q, "toool")
    with pytest.raises(ValueError, match="out"):
        robot.link_jacobian(q, "tool", out=np.empty((6, robot.nv + 1)))
    with pytest.raises(ValueError, match="q must have shape"):
        robot.center_of_mass(q[:-1])
    with pytest.raises(ValueError, match="frame must be one of"):
        robot.link_velocity(q, v, "tool", "body")


# ==== against Exudyn =============================================================================
def exudyn_tip_velocity(exu, positions, masses, shapes, K, omega0, t_end, dt):
    """Tip node position and velocity (world) of test_flexible_exudyn's flexible pendulum in
    Exudyn's ObjectFFRFreducedOrder (same lumped modal data), gravity as nodal forces, every
    1e-3 s: two arrays of rows t, x, y, z."""
    import scipy.sparse
    from exudyn.FEM import FEMinterface, ObjectFFRFreducedOrderInterface
    from exudyn.itemInterface import (GenericJoint, LoadForceVector, MarkerBodyRigid,
                                      MarkerNodeRigid, MarkerSuperElementPosition, ObjectGround,
                                      SensorMarker)
    n = len(masses)
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    fem = FEMinterface()
    fem.nodes = {"Position": positions}
    fem.massMatrix = scipy.sparse.csr_matrix(np.diag(np.repeat(masses, 3)))
    fem.stiffnessMatrix = scipy.sparse.csr_matrix(np.eye(3 * n))   # replaced by K_ff below
    fem.modeBasis = {"matrix": shapes[:, :, :3].reshape(len(shapes), 3 * n).T.copy(),
                     "type": "NormalModes"}
    cms = ObjectFFRFreducedOrderInterface(fem)
    cms.stiffnessMatrixReduced = K
    body = cms.AddObjectFFRFreducedOrder(mbs, positionRef=[0, 0, 0], gravity=[0, 0, 0],
                                         initialAngularVelocity=[0, omega0, 0])
    for j in range(n):
        marker = mbs.AddMarker(MarkerSuperElementPosition(bodyNumber=body["oFFRFreducedOrder"],
                                                          meshNodeNumbers=[j],
                                                          weightingFactors=[1.0]))
        mbs.AddLoad(LoadForceVector(markerNumber=marker, loadVector=[0, 0, -EXU_G * masses[j]]))
    ground = mbs.AddObject(ObjectGround())
    m_ground = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_frame = mbs.AddMarker(MarkerNodeRigid(nodeNumber=body["nRigidBody"]))
    mbs.AddObject(GenericJoint(markerNumbers=[m_ground, m_frame],
                               constrainedAxes=[1, 1, 1, 1, 0, 1]))
    m_tip = mbs.AddMarker(MarkerSuperElementPosition(bodyNumber=body["oFFRFreducedOrder"],
                                                     meshNodeNumbers=[n - 1],
                                                     weightingFactors=[1.0]))
    sensors = [mbs.AddSensor(SensorMarker(markerNumber=m_tip, storeInternal=True,
                                          outputVariableType=kind))
               for kind in (exu.OutputVariableType.Position, exu.OutputVariableType.Velocity)]
    mbs.Assemble()
    settings = exu.SimulationSettings()
    settings.timeIntegration.numberOfSteps = int(round(t_end / dt))
    settings.timeIntegration.endTime = t_end
    settings.timeIntegration.generalizedAlpha.spectralRadius = 1.0
    settings.timeIntegration.newton.relativeTolerance = 1e-10
    settings.timeIntegration.verboseMode = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        settings.solutionSettings.writeSolutionToFile = False
        settings.solutionSettings.sensorsWritePeriod = 1e-3
        settings.displayStatistics = False
        settings.displayComputationTime = False
    exu.SolveDynamic(mbs, settings)
    return [mbs.GetSensorStoredData(sensor) for sensor in sensors]


EXU_G = 9.81


def test_tip_velocity_matches_exudyn_ffrf(exu, tmp_path):
    """test_flexible_exudyn's flexible pendulum (0.5 m strip, 3 modes, 11 lumped nodes), thrown
    upwards at 3 rad/s under gravity for 0.3 s: link_velocity of the welded 'tip' link (elastic
    columns included) along our RK4 trajectory against the velocity of Exudyn's tip node along
    its own (generalized-alpha, spectral radius 1). The two trajectories differ by the
    integrators' phase errors on the stiff modes, |dx| (measured: the tip positions'
    difference, ~1e-6 m); a difference dx oscillating at most at the highest natural frequency
    w_max differs in velocity by at most w_max |dx|, so the bound is 2 w_max max|dx|; the elastic
    part of the tip velocity (J's elastic columns times v_f) is more than 10 times that."""
    from mbd_ros.robot.integrators import Simulator
    from flexible_models import lumped_modal_data, pendulum_urdf
    from test_flexible_exudyn import AREA, IY, LENGTH, MODES, NODES
    t_end, dt, omega0 = 0.3, 1e-4, 3.0
    path = tmp_path / "strip.npz"
    positions, masses, shapes, K = lumped_modal_data(path, LENGTH, AREA, IY, NODES, MODES)
    their_x, their_v = exudyn_tip_velocity(exu, positions, masses, shapes, K, omega0, t_end, dt)
    robot = load_quiet(pendulum_urdf(LENGTH), gravity=(0, 0, -EXU_G),
                       flexible={"flexible_links": [{"link": "beam", "modal_data": str(path)}]})
    v = np.zeros(robot.nv)
    v[0] = omega0
    sim = Simulator(robot, dt, "rk4", q=robot.neutral(), v=v)
    tau = np.zeros(robot.nv)
    every = int(round(1e-3 / dt))
    e = robot.elastic_v_indices
    xs, vs, elastic = [], [], 0.0
    for k in range(int(round(t_end / dt)) + 1):
        if k % every == 0:
            xs.append([sim.time, *robot.link_pose(sim.q, "tip")[:3, 3]])
            vs.append([sim.time, *robot.link_velocity(sim.q, sim.v, "tip")[:3]])
            J = robot.link_jacobian(sim.q, "tip")
            elastic = max(elastic, np.abs(J[:3, e] @ sim.v[e]).max())
        if k < int(round(t_end / dt)):
            sim.step(tau)
    our_x, our_v = np.array(xs), np.array(vs)
    assert len(our_v) == len(their_v) == 301
    np.testing.assert_allclose(our_v[:, 0], their_v[:, 0], atol=1e-9)
    dx = np.abs(our_x[:, 1:] - their_x[:, 1:]).max()
    assert dx < 2e-5                     # test_flexible_exudyn's position tolerance
    w_max = 2 * np.pi * robot.flexible.bodies[0].frequencies.max()
    bound = 2 * w_max * dx
    difference = np.abs(our_v[:, 1:] - their_v[:, 1:]).max()
    assert difference <= bound, f"tip velocity differs by {difference:.2e} m/s > {bound:.2e}"
    assert elastic > 10 * bound, f"elastic part {elastic:.2e} m/s vs bound {bound:.2e}"


def test_threads_sharing_one_flexible_robot_get_their_own_results():
    """Calls from several threads on one flexible Robot (each one kernel call on its private
    frame workspaces, atomic under the GIL; operational_space_inertia under the Robot's lock)
    return what the same calls return serially, bit for bit."""
    from concurrent.futures import ThreadPoolExecutor
    case = Case("flange")
    robot = case.robot
    links = list(case.links)

    def work(k):
        q, v, qdd = case.states[k % len(case.states)]
        link = links[k % len(links)]
        return (robot.link_jacobian(q, link), robot.link_velocity(q, v, link, "local"),
                robot.link_acceleration(q, v, qdd, link, "world", out=np.empty(6)),
                robot.center_of_mass(q), robot.centroidal_momentum_matrix(q),
                robot.mass_matrix_inverse(q),
                robot.operational_space_inertia(q, link, damping=1e-6))

    serial = [work(k) for k in range(48)]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(work, range(48)))
    for k, (a, b) in enumerate(zip(serial, parallel)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"call {k}")
