"""Derivatives of the dynamics of closed-loop, mimic-coupled and flexible robots:
Robot.forward_dynamics_derivatives / inverse_dynamics_derivatives through
robot/constrained_derivatives.py (docs/derivatives.md).

References, none of them the derivative code under test:
- central differences of robot.forward_dynamics / robot.inverse_dynamics themselves on the
  tangent space (q (+) h e_k = robot.integrate(q, h e_k, 1)). Error of a central difference with
  step h, per entry: h^2 / 6 |f'''| + eps |f| / h; with the dynamics' derivatives of every order of
  the size of the largest value or derivative S (unit-scale mechanisms, away from singular
  configurations), the tolerance is FD_SAFETY (h^2 + eps / h) S.
  Forward dynamics: h = 1e-5, tolerance 1.2e-8 S.
  Inverse dynamics: h = 1e-7, tolerance 2.2e-7 S: inverse_dynamics accepts only a qdd that
  satisfies the loop rows to 1e-6 |qdd| (mimic rows to 1e-9), and a perturbation of q (or v) at
  fixed qdd breaks them by ~h |d(G qdd + gamma)/dq|, so h must stay well below 1e-6; columns of
  d/dqdd (and, for a floating base, of d/dq: below) are taken along null(G) where a perturbation
  along e_k would break a row.
  Elastic coordinates: the dynamics vary on a much shorter scale along them (flexible_arm: the
  central difference of dqdd/dq converges as h^2 with |f^(3)| ~ 3e4 |f^(1)| along a mode, measured
  from h = 1e-3 to 1e-7), so robots with flexible links use h = 2e-7 for both: the truncation
  error 3e4 h^2 / 6 = 2e-10 S then stays below the round-off term eps / h = 1.1e-9 of the
  same tolerance formula (1.1e-7 S).
  Measured (AMD EPYC Zen 5): forward 1e-12-5e-10 S, inverse 1e-9-7e-9 S: at most 0.04 of the
  tolerances; the library's own central differences of the constraint rows (step eps^(1/3))
  contribute ~1e-10.
- physical identities: G dqdd/dtau = 0 (a torque change cannot break the acceleration
  constraint); the KKT derivative with zero constraint rows equals the analytic tree derivative
  (which test_derivatives.py checks against Pinocchio); the multipliers after the call are those
  of forward_dynamics at the same state.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import EPS
from test_flexible_loops import assembled as fourbar_assembled

import mbd_ros
from mbd_ros.robot.constrained_derivatives import GeneralDerivatives
from mbd_ros.robot.constraints import null_space

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf"
CONFIG = ROOT / "config"

FD_STEP = 1e-5
ID_STEP = 1e-7
ELASTIC_STEP = 2e-7
FD_SAFETY = 100.0

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
    <origin xyz="0 -0.03 0.1"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="5"/>
    <mimic joint="finger_a" multiplier="-1.5" offset="0.1"/></joint>
  <link name="finger_b_link"><inertial><origin xyz="0 -0.01 0.04"/><mass value="0.08"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00002"/></inertial></link>
</robot>"""

# the four-bar with a flap on the rocker whose joint mimics the crank (test_mimic_loops.py)
FLAP = """
  <joint name="flap_joint" type="revolute"><parent link="rocker"/><child link="flap"/>
    <origin xyz="-0.18 0 0.24"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="5" velocity="20"/>
    <mimic joint="crank_joint" multiplier="0.7" offset="0.2"/></joint>
  <link name="flap"><inertial><origin xyz="0 0.05 0.02"/><mass value="0.1"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00015"/></inertial></link>
</robot>"""


def load(source, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(source, **kwargs)


def fourbar(**kwargs):
    return load(str(URDF / "fourbar.urdf"), closures=str(CONFIG / "fourbar_closures.yaml"),
                **kwargs)


ROBOTS = {
    "fourbar": fourbar,
    "spatial_rssr": lambda: load(str(URDF / "spatial_rssr.urdf"),
                                 closures=str(CONFIG / "spatial_rssr_closures.yaml")),
    "delta3": lambda: load(str(URDF / "delta3.urdf"),
                           closures=str(CONFIG / "delta3_closures.yaml")),
    "leg_fourbar_floating": lambda: load(str(URDF / "leg_fourbar_floating.urdf"),
                                         closures=str(CONFIG / "leg_fourbar_closures.yaml"),
                                         floating_base=True),
    "double_wishbone_with_strut": lambda: load(str(URDF / "double_wishbone.urdf"),
                                               closures=str(CONFIG / "double_wishbone.yaml"),
                                               forces=str(CONFIG / "double_wishbone.yaml")),
    "fourbar_with_springs": lambda: fourbar(forces={"forces": [
        dict(name="crank_spring", type="joint_spring", joint="crank_joint", stiffness=2.0,
             damping=0.3, rest_position=0.2),
        dict(name="diag", type="spring_damper", parent="ground", parent_point=[0.0, 0.0, 0.0],
             child="rocker", child_point=[0.0, 0.0, 0.3], stiffness=40.0, damping=0.3,
             rest_length=0.2)]}),
    "gripper_mimic": lambda: load(GRIPPER, passive_forces=False, mimic=True),
    "fourbar_with_mimic_flap": lambda: load(
        (URDF / "fourbar.urdf").read_text().replace("</robot>", FLAP),
        closures=str(CONFIG / "fourbar_closures.yaml"), mimic=True),
    "flexible_arm": lambda: load(str(URDF / "flexible_arm.urdf"),
                                 flexible=str(CONFIG / "flexible_arm.yaml")),
    "flexible_arm_with_forces": lambda: load(str(URDF / "flexible_arm.urdf"),
                                             flexible=str(CONFIG / "flexible_arm.yaml"),
                                             forces=str(CONFIG / "flexible_arm_forces.yaml")),
    "flexible_fourbar": lambda: load(str(URDF / "flexible_fourbar.urdf"),
                                     closures=str(CONFIG / "flexible_fourbar.yaml"),
                                     flexible=str(CONFIG / "flexible_fourbar.yaml")),
}
# inverse_dynamics of a passive mechanism (no actuated joint) is zero where the motion needs no
# drive force and raises elsewhere: its derivatives must do the same
PASSIVE = {"double_wishbone_with_strut"}


# links for f_ext (a link welded to a flexible link takes no wrench)
F_EXT_LINK = {"flexible_arm": "upper_arm", "flexible_arm_with_forces": "upper_arm",
              "flexible_fourbar": "coupler"}


def some_wrench(name, robot):
    return {F_EXT_LINK.get(name, robot.link_names[-1]): np.array([1.0, -2.0, 0.5, 0.1, 0.3, -0.2])}


def state(robot, seed):
    """An assembled q near a random one, a loop-consistent v, a random tau (zero for a passive
    mechanism), elastic coordinates and velocities of a few millimetres (per second)."""
    rng = np.random.default_rng(seed)
    q = robot.integrate(robot.neutral(), 0.1 * rng.standard_normal(robot.nv), 1.0)
    if robot.elastic_names and robot.closure_names:   # the flexible four-bar: near its crank
        q = fourbar_assembled(robot, crank=0.7 + 0.1 * seed)
    v = rng.standard_normal(robot.nv)
    if robot.elastic_names:
        q[robot.elastic_q_indices] = 2e-3 * rng.standard_normal(len(robot.elastic_q_indices))
        v[robot.elastic_v_indices] *= 1e-2
    if robot.closure_names or robot.mimic_joints:
        # (a deformed flexible link moves the cut: the loops close with the deformation kept)
        q = robot.assemble(q, elastic=bool(robot.elastic_names))
        v = robot.project_velocity(q, v)
    tau = np.zeros(robot.nv) if not robot.actuated_joints and robot.closure_names else \
        rng.standard_normal(robot.nv)
    return q, v, tau


def differences(robot, fn, q, v, x, h, q_directions=None, x_directions=None):
    """(d fn/dq, d fn/dv, d fn/dx) by central differences on the tangent space; the columns of
    d/dq and d/dx along the columns of q_directions / x_directions (nv, k) when given (default
    e_k), those of d/dv along e_k."""
    nv = robot.nv
    q_basis = np.eye(nv) if q_directions is None else q_directions
    x_basis = np.eye(nv) if x_directions is None else x_directions
    d_q = [fn(robot.integrate(q, h * e, 1.0), v, x) - fn(robot.integrate(q, -h * e, 1.0), v, x)
           for e in q_basis.T]
    d_v = [fn(q, v + h * e, x) - fn(q, v - h * e, x) for e in np.eye(nv)]
    d_x = [fn(q, v, x + h * e) - fn(q, v, x - h * e) for e in x_basis.T]
    return tuple(np.array(c).T / (2.0 * h) for c in (d_q, d_v, d_x))


def assert_matches(analytic, reference, value, h, what):
    scale = max(1.0, float(np.max(np.abs(value))),
                max(float(np.max(np.abs(a))) for a in analytic))
    tol = FD_SAFETY * (h * h + EPS / h) * scale
    for name, a, d in zip(("d/dq", "d/dv", "d/dx"), analytic, reference):
        err = np.abs(a - d)
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        assert err[worst] <= tol, (f"{what} {name}: |derivative - central difference| "
                                   f"{err[worst]:.3e} > {tol:.2e} (h {h:g}, scale {scale:.3g}) at "
                                   f"{worst}: got {a[worst]!r}, difference {d[worst]!r}")


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request):
    return request.param, ROBOTS[request.param]()


def test_forward_dynamics_derivatives_vs_differences(case):
    name, robot = case
    for seed in (1, 2):
        q, v, tau = state(robot, seed)
        f_ext = None if seed == 1 else some_wrench(name, robot)

        def forward(q, v, tau):
            return robot.forward_dynamics(q, v, tau, f_ext=f_ext)

        h = ELASTIC_STEP if robot.elastic_names else FD_STEP
        analytic = robot.forward_dynamics_derivatives(q, v, tau, f_ext=f_ext)
        reference = differences(robot, forward, q, v, tau, h)
        assert_matches(analytic, reference, forward(q, v, tau), h,
                       f"{name} seed {seed} f_ext {f_ext is not None}: forward dynamics")


def test_inverse_dynamics_derivatives_vs_differences(case):
    name, robot = case
    if name in PASSIVE:   # no actuated dof: zeros where inverse_dynamics answers, else its error
        q, v, tau = state(robot, 1)
        qdd = robot.forward_dynamics(q, v, tau)
        try:
            robot.inverse_dynamics(q, v, qdd)
        except ValueError as exc:
            with pytest.raises(ValueError, match=re.escape(str(exc))):
                robot.inverse_dynamics_derivatives(q, v, qdd)
        else:
            for d in robot.inverse_dynamics_derivatives(q, v, qdd):
                assert not np.any(d)
        return
    for seed in (1, 2):
        q, v, tau = state(robot, seed)
        f_ext = None if seed == 1 else some_wrench(name, robot)
        qdd = robot.forward_dynamics(q, v, tau, f_ext=f_ext)
        jacobian = robot.constraint_jacobian(q)
        floating = "floating" in robot.joint_types
        # along null(G) where a perturbation along e_k breaks a row (see the module docstring)
        along = null_space(jacobian)[0] if jacobian.shape[0] else None

        def inverse(q, v, qdd):
            return robot.inverse_dynamics(q, v, qdd, f_ext=f_ext)

        d_q, d_v, d_qdd = robot.inverse_dynamics_derivatives(q, v, qdd, f_ext=f_ext)
        q_along = along if floating else None
        analytic = (d_q if q_along is None else d_q @ q_along, d_v,
                    d_qdd if along is None else d_qdd @ along)
        h = ELASTIC_STEP if robot.elastic_names else ID_STEP
        reference = differences(robot, inverse, q, v, qdd, h, q_along, along)
        assert_matches(analytic, reference, inverse(q, v, qdd), h,
                       f"{name} seed {seed} f_ext {f_ext is not None}: inverse dynamics")


@pytest.mark.parametrize("name", [n for n in ROBOTS if n not in ("flexible_arm",
                                                                  "flexible_arm_with_forces")])
def test_torque_changes_keep_the_acceleration_constraint(name):
    """G dqdd/dtau = 0: a change of the drive forces moves qdd within G dqdd = 0 (the robots
    with constraint rows). And the forward derivatives leave the multipliers of the state's own
    forward dynamics."""
    robot = ROBOTS[name]()
    assert robot.closure_names or robot.mimic_joints
    q, v, tau = state(robot, 3)
    jacobian = robot.constraint_jacobian(q)
    d_tau = robot.forward_dynamics_derivatives(q, v, tau)[2]
    scale = np.linalg.norm(jacobian, 2) * np.linalg.norm(d_tau, 2)
    assert np.abs(jacobian @ d_tau).max() <= 1e-12 * scale, (
        f"{name}: max |G dqdd/dtau| {np.abs(jacobian @ d_tau).max():.3e}")
    # and only that: rank nv - rank(G) (the motions the constraints allow all respond)
    sigma = np.linalg.svd(d_tau, compute_uv=False)
    free = robot.nv - np.linalg.matrix_rank(jacobian, tol=1e-9 * np.linalg.norm(jacobian, 2))
    assert sigma[free - 1] > 1e-6 * sigma[0] and (free == robot.nv or
                                                  sigma[free] < 1e-11 * sigma[0]), (name, sigma)
    if robot.closure_names:
        robot.forward_dynamics(q, v, tau)
        expected = robot.multipliers()
        robot.forward_dynamics(q, v, tau + 1.0)
        robot.forward_dynamics_derivatives(q, v, tau)
        assert np.array_equal(robot.multipliers(), expected)


@pytest.mark.parametrize("urdf, floating", [("fourbar.urdf", False),
                                            ("leg_fourbar_floating.urdf", True)])
def test_kkt_with_zero_rows_is_the_tree_derivative(urdf, floating):
    """The loops' URDF as a tree (no closures file: zero constraint rows) through the KKT
    derivative equals the analytic tree derivative (Pinocchio-checked in test_derivatives.py)."""
    robot = load(str(URDF / urdf), floating_base=floating)
    rng = np.random.default_rng(5)
    q, v, tau = robot.random_configuration(rng), rng.standard_normal(robot.nv), \
        rng.standard_normal(robot.nv)
    f_ext = {robot.link_names[-1]: rng.standard_normal(6)}
    general = GeneralDerivatives(robot)
    with robot._lock:
        kkt = general.forward(q, v, tau, f_ext, tuple(np.empty((3, robot.nv, robot.nv))))
    tree = robot.forward_dynamics_derivatives(q, v, tau, f_ext=f_ext)
    cond = np.linalg.cond(robot.mass_matrix(q))
    for name, a, b in zip(("dq", "dv", "dtau"), kkt, tree):
        assert np.abs(a - b).max() <= 1e-14 * cond * np.linalg.norm(b, 2), name


def test_baumgarte_terms_are_differentiated():
    """With Baumgarte gains forward_dynamics enforces G qdd + gamma + 2 alpha G v + beta^2 g = 0;
    at a slightly open loop the beta^2 g term changes the result and its derivative."""
    robot = fourbar()
    q, v, tau = state(robot, 4)
    q = robot.integrate(q, np.array([1e-3, -2e-3, 1e-3]), 1.0)    # open the loop a little
    plain = robot.forward_dynamics_derivatives(q, v, tau)[0].copy()
    robot.baumgarte = (4.0, 6.0)

    def forward(q, v, tau):
        return robot.forward_dynamics(q, v, tau)

    analytic = robot.forward_dynamics_derivatives(q, v, tau)
    assert np.abs(analytic[0] - plain).max() > 1.0
    assert_matches(analytic, differences(robot, forward, q, v, tau, FD_STEP), forward(q, v, tau),
                   FD_STEP, "fourbar with Baumgarte gains (4, 6), loop open by 1e-3")


def test_inconsistent_redundant_rows_are_differentiated():
    """The floating leg's planar loop closed in 3-D has redundant rows (G 5 x 10 of rank 2);
    with G v != 0 and the base turning, gamma~ leaves range(G) and forward_dynamics returns the
    least-squares solution, whose derivative includes that of the projector onto range(G)
    (constrained_derivatives.py). The base's columns (rigid motions of the whole robot: the rank
    of G stays 2 along them, where the loop joints' columns open the loop and raise it to 3) and
    d/dv, d/dtau against central differences; without the projector's term the base's tilt
    columns were off by 0.79 at a scale of 187."""
    robot = ROBOTS["leg_fourbar_floating"]()
    rng = np.random.default_rng(0)
    q = robot.assemble(robot.neutral())
    basis = robot.constraint_basis(q)
    v = basis @ rng.standard_normal(basis.shape[1]) + rng.standard_normal(robot.nv)
    tau = rng.standard_normal(robot.nv)
    jacobian, gamma = robot._constraints.acceleration_rows(q, v)
    qdd = robot.forward_dynamics(q, v, tau)
    assert np.linalg.matrix_rank(jacobian) < jacobian.shape[0]
    assert np.abs(jacobian @ qdd + gamma).max() > 1e-2     # the rows are inconsistent here
    base = np.eye(robot.nv)[:, :6]
    analytic = robot.forward_dynamics_derivatives(q, v, tau)
    reference = differences(robot, robot.forward_dynamics, q, v, tau, FD_STEP,
                            q_directions=base)
    assert_matches((analytic[0] @ base, analytic[1], analytic[2]), reference,
                   robot.forward_dynamics(q, v, tau), FD_STEP,
                   "floating leg, G v != 0: forward dynamics")


@pytest.mark.parametrize("name", ["flexible_arm", "flexible_fourbar", "fourbar", "delta3"])
def test_velocity_derivatives_are_exact_where_the_dynamics_is_quadratic_in_v(name):
    """Without smoothed friction, force elements or callbacks forward_dynamics is a rational
    function of v whose rows and tree dynamics are polynomials of degree 2 in v, so d qdd / dv is
    exact up to round-off. Reference: central differences with steps 1 (exact for the
    polynomial parts; only the round-off eps |terms| / h, the largest term the elastic or loop
    stiffness seen in d qdd / dq). Each matrix on its own scale: with the old velocity step
    (eps^(1/3)) the flexible four-bar's d qdd / dv was off by 7.7e-5 at a scale of 45."""
    robot = ROBOTS[name]()
    q, v, tau = state(robot, 3)
    v = v + np.random.default_rng(5).standard_normal(robot.nv)   # off the loops' rows too
    d_q, d_v, _ = robot.forward_dynamics_derivatives(q, v, tau)
    h = 1.0
    reference = np.array([robot.forward_dynamics(q, v + h * e, tau)
                          - robot.forward_dynamics(q, v - h * e, tau)
                          for e in np.eye(robot.nv)]).T / (2.0 * h)
    tol = FD_SAFETY * EPS * max(1.0, np.abs(d_q).max(), np.abs(d_v).max()) / h
    err = np.abs(d_v - reference).max()
    assert err <= tol, f"{name}: |d qdd/dv - central difference| {err:.3e} > {tol:.2e}"


def test_out_arrays_are_filled_and_checked():
    robot = fourbar()
    q, v, tau = state(robot, 6)
    n = robot.nv
    qdd = robot.forward_dynamics(q, v, tau)
    for method, x in (("forward_dynamics_derivatives", tau), ("inverse_dynamics_derivatives", qdd)):
        expected = getattr(robot, method)(q, v, x)
        out = tuple(np.full((n, n), np.nan) for _ in range(3))
        result = getattr(robot, method)(q, v, x, out=out)
        assert all(r is o for r, o in zip(result, out)), method
        for r, e in zip(result, expected):
            assert np.array_equal(r, e), method
        with pytest.raises(ValueError, match=r"out\[2\] must not share memory"):
            getattr(robot, method)(q, v, x, out=(out[0], out[1], out[0]))


def test_bad_inputs_name_the_argument():
    for robot in (fourbar(), ROBOTS["flexible_arm"]()):
        q, z = robot.neutral(), np.zeros(robot.nv)
        with pytest.raises(ValueError, match="q must have shape"):
            robot.forward_dynamics_derivatives(q[:-1], z, z)
        with pytest.raises(ValueError, match="tau contains NaN"):
            robot.forward_dynamics_derivatives(q, z, np.full(robot.nv, np.nan))
        with pytest.raises(ValueError, match="qdd must have shape"):
            robot.inverse_dynamics_derivatives(q, z, np.zeros(robot.nv + 1))
        with pytest.raises(ValueError, match="unknown link"):
            robot.forward_dynamics_derivatives(q, z, z, f_ext={"no_such_link": np.zeros(6)})


def test_inverse_derivatives_refuse_what_inverse_dynamics_refuses():
    """A qdd that breaks the loop rows has no actuator torques: the same ValueError."""
    robot = fourbar()
    q, v, _ = state(robot, 7)
    with pytest.raises(ValueError, match="violates the loop acceleration constraint"):
        robot.inverse_dynamics_derivatives(q, v, np.ones(robot.nv))


def test_codegen_closed_loop_robot_gives_the_generic_results():
    """A codegen=True robot runs the generic derivative kernels on the same model arrays (its
    generated mass matrix and inverse dynamics differ from the generic ones by round-off, which
    the library's central differences of the rows (step h = eps^(1/3)) amplify by 1 / h: the
    tolerance is FD_SAFETY eps^(2/3) of the matrix's norm)."""
    generic = fourbar()
    generated = fourbar(codegen=True)
    assert generated.tree.kind == "generated"
    q, v, tau = state(generic, 8)
    qdd = generic.forward_dynamics(q, v, tau)
    for method, x in (("forward_dynamics_derivatives", tau), ("inverse_dynamics_derivatives", qdd)):
        for a, b in zip(getattr(generated, method)(q, v, x), getattr(generic, method)(q, v, x)):
            assert np.abs(a - b).max() <= FD_SAFETY * EPS ** (2 / 3) * np.linalg.norm(b, 2), \
                method


# ---- against Pinocchio's constraint dynamics ----------------------------------------------------

def state_manifold_directions(robot, q, v):
    """(dQ (nv, k), dV (nv, k)): tangent directions of the constrained state manifold at an
    assembled, loop-consistent (q, v): dq along null(G), dv keeping G v = 0 to first order
    (dv = -G^+ d(G v)/dq dq, by central differences of the rows). Along them every formulation
    of the same loop gives the same accelerations, so the derivatives agree; off them they
    differ with the rows' parametrisation (ours: world components, Pinocchio's: frame A)."""
    jacobian = robot.constraint_jacobian(q)
    d_q = null_space(jacobian)[0]
    h = 1e-6
    d_gv = np.array([(robot.loop_state(robot.integrate(q, h * n, 1.0), v)[2]
                      - robot.loop_state(robot.integrate(q, -h * n, 1.0), v)[2]) / (2.0 * h)
                     for n in d_q.T]).T
    return d_q, -np.linalg.pinv(jacobian, rcond=1e-9) @ d_gv


@pytest.mark.parametrize("name", ["fourbar_spherical", "spatial_rssr", "cut:spherical",
                                  "cut:fixed"])
def test_forward_derivatives_vs_pinocchio_constraint_dynamics(pin, name):
    """Pinocchio 4.1, the cuts as RigidConstraintModels (test_closed_loops.py's cases):
    - dqdd/dtau against computeConstraintDynamicsDerivatives' ddq_dtau (every case);
    - the derivative along the state manifold's directions against
      computeConstraintDynamicsDerivatives (ddq_dq, ddq_dv) for the 6D cut, and against central
      differences of pin.constraintDynamics itself for the 3D cuts: for CONTACT_3D between two
      moving joints Pinocchio 4.1's ddq_dq differs from central differences of its own
      constraintDynamics by 3e-2 to 1.6 relative (measured), so it is not a reference there;
      on the 6D welded chain its proximal iterations leave ~1e-13 in qdd, which a central
      difference would divide by 2h (measured 1.4e-8 relative), so its derivatives are used.
    Tolerances: 1e-9 of the largest entry against Pinocchio's derivatives (its proximal solve
    converges to 1e-14; our rows' central differences carry ~eps^(2/3) = 4e-11 of the scale);
    FD_SAFETY (h^2 + eps/h) of the scale against its central differences (h = 1e-5)."""
    from loop_oracle import LoopReference, pin_constraint_dynamics
    from test_closed_loops import case as loop_case
    from test_closed_loops import loop_consistent_state
    robot, xml, closures, q0, floating = loop_case(name, pin)
    reference = LoopReference(pin, xml, closures, floating)
    kind = {"spherical": pin.ContactType.CONTACT_3D,
            "fixed": pin.ContactType.CONTACT_6D}[reference.cuts[0]["type"]]
    perm = np.ix_(reference.oracle.vperm, reference.oracle.vperm)
    for seed in (31, 32):
        q, v, rng = loop_consistent_state(robot, q0, seed)
        tau = rng.uniform(-1.0, 1.0, robot.nv)
        _, _, models, datas, data = pin_constraint_dynamics(reference, q, v, tau, kind)
        pin.computeConstraintDynamicsDerivatives(reference.model, data, models, datas,
                                                 pin.ProximalSettings(1e-14, 1e-12, 100))
        d_q, d_v, d_tau = robot.forward_dynamics_derivatives(q, v, tau)
        what = f"{name} seed {seed}"
        pin_tau = np.asarray(data.ddq_dtau)[perm]
        assert np.abs(d_tau - pin_tau).max() <= 1e-9 * np.abs(pin_tau).max(), \
            f"{what}: dqdd_dtau vs Pinocchio's ddq_dtau"
        dq_dirs, dv_dirs = state_manifold_directions(robot, q, v)
        ours = d_q @ dq_dirs + d_v @ dv_dirs
        if kind == pin.ContactType.CONTACT_6D:
            theirs = (np.asarray(data.ddq_dq)[perm] @ dq_dirs
                      + np.asarray(data.ddq_dv)[perm] @ dv_dirs)
            assert np.abs(ours - theirs).max() <= 1e-9 * np.abs(theirs).max(), \
                f"{what}: along the state manifold vs Pinocchio's ddq_dq, ddq_dv"
            continue
        h = FD_STEP
        columns = []
        for j in range(dq_dirs.shape[1]):
            plus = pin_constraint_dynamics(reference, robot.integrate(q, h * dq_dirs[:, j], 1.0),
                                           v + h * dv_dirs[:, j], tau, kind)[0]
            minus = pin_constraint_dynamics(reference, robot.integrate(q, -h * dq_dirs[:, j], 1.0),
                                            v - h * dv_dirs[:, j], tau, kind)[0]
            columns.append((plus - minus) / (2.0 * h))
        differences_pin = np.array(columns).T
        scale = max(1.0, np.abs(differences_pin).max())
        assert np.abs(ours - differences_pin).max() <= FD_SAFETY * (h * h + EPS / h) * scale, \
            f"{what}: along the state manifold vs central differences of pin.constraintDynamics"
