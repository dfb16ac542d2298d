"""The implicit integrators of the compiled rollouts (kernels/rollout_implicit.py): implicit_euler
and symplectic_euler on trees, against robot.step (robot/integrators.py Simulator).

Reference: robot.step from the same state, row by row (Q[k+1], V[k+1] of the compiled rollout
against robot.step(Q[k], V[k], tau[k]), with the position stops of the reference engine after it
when limits=True), and the reference engine's status and step index on divergence.

Why not bit for bit (as rk4 and semi_implicit_euler are): the elementwise operations are the
Simulator's in its order (so the finite-difference Jacobians are the same bits from the same
state), but the Simulator's matrix-vector products are numpy's BLAS dgemv (blocked, fused
multiply-adds) and its solves LAPACK dgesv (blocked LU); the kernel sums in column order and
solves by an unblocked partial-pivot LU. Both are backward stable, so one step differs by a
round-off bound computed below from the step's own matrices (conftest.roundoff_tol for the
products, conftest.solve_tol for the solves, their amplification by the step's linear maps).

implicit_euler (s = v, L = 1 - h A_v - h^2 A_q, A_q, A_v the Simulator's forward differences):
  d_rhs = h^2 tol(A_q s);  d_z = solve_tol(L, z) + |L^-1| d_rhs;
  d_v+ = h (h (tol(A_q (s + z)) + |A_q| d_z) + tol(A_v z) + |A_v| d_z) + 4 eps |v+|;
  d_q+ = h d_v+ + 4 eps |q+| (q (+) v h: the exponential map is 1-Lipschitz in v h).
symplectic_euler (fixed point u of G(u) = v + h f(q, u, tau + R u), R = dM/dq u, its
  Jacobian dG/du by forward differences, a = |(1 - dG/du)^-1|):
  d_u = a (h |M^-1| tol(R u) + 2 SYMPLECTIC_TOLERANCE max(1, |u|)) (a perturbation d of G moves
  its fixed point by a d; and the two may stop one iteration apart: an iterate whose change is
  below the tolerance is within a times it of the fixed point);
  d_v+ = solve_tol(M+, v+) + |M+^-1| (tol(M u) + |M| d_u);  d_q+ = h d_u + 4 eps |q+|.

Over a whole trajectory the difference is not round-off: from states one ulp apart the
finite-difference Jacobians (step 1e-7) differ by ~eps |a| / 1e-7, so robot.step itself moves by
~1e-9 between two starts one ulp apart (test_reference_itself_is_sensitive_to_one_ulp measures
it); hence the row-by-row comparison.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbd_ros

from conftest import EPS, roundoff_tol, solve_tol
from mbd_ros.kernels.rollout_implicit import lu_solve
from mbd_ros.robot.integrators import SYMPLECTIC_TOLERANCE
from mbd_ros.robot.rollout import RolloutDiverged
from mbd_ros.robot.rollout_plant import PlantLimits, StopWork, enforce_stops
from mbd_ros.simulation.plant import Plant
from test_rollout import (DT, URDF, arm, codegen_arm, flexible_arm, floating_leg, sprung_arm,
                          sprung_floating_arm, start_state, stepped, torques)

IMPLICIT = ("implicit_euler", "symplectic_euler")
KINDS = {"arm7": arm, "floating_base": floating_leg, "flexible": flexible_arm,
         "codegen": codegen_arm, "sprung_arm": sprung_arm,
         "sprung_floating_arm": sprung_floating_arm}
FD_STEP = 1e-7   # the Simulator's forward-difference step


def _norm(a):
    return float(np.linalg.norm(a, 2))


def jacobians(robot, q, v, tau):
    """(a1, A_q, A_v) as the Simulator's implicit_euler computes them (forward differences of
    robot.forward_dynamics along the unit vectors)."""
    nv = robot.nv
    a1 = robot.forward_dynamics(q, v, tau)
    a_q, a_v = np.empty((nv, nv)), np.empty((nv, nv))
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = 1.0
        a_v[:, j] = (robot.forward_dynamics(q, v + FD_STEP * e, tau) - a1) / FD_STEP
        a_q[:, j] = (robot.forward_dynamics(robot.integrate(q, e, FD_STEP), v, tau) - a1) \
            / FD_STEP
    return a1, a_q, a_v


def implicit_bound(robot, q, v, tau, h, q_next, v_next):
    """(d_q, d_v): the round-off bound of one implicit_euler step (module docstring)."""
    n = robot.nv
    a1, a_q, a_v = jacobians(robot, q, v, tau)
    lhs = np.eye(n) - h * a_v - h * h * a_q
    z = np.linalg.solve(lhs, h * a1 + h * h * (a_q @ v))
    d_rhs = h * h * roundoff_tol(n, (a_q, v))
    d_z = solve_tol(lhs, z) + _norm(np.linalg.inv(lhs)) * d_rhs
    d_v = h * (h * (roundoff_tol(n, (a_q, v + z)) + _norm(a_q) * d_z)
               + roundoff_tol(n, (a_v, z)) + _norm(a_v) * d_z) + 4 * EPS * _norm(v_next)
    return h * d_v + 4 * EPS * _norm(q_next), d_v


def symplectic_bound(robot, q, v, tau, h, q_next, v_next):
    """(d_q, d_v): the round-off bound of one symplectic_euler step (module docstring)."""
    n = robot.nv
    mass, mass_next = robot.mass_matrix(q).copy(), robot.mass_matrix(q_next).copy()
    u = np.linalg.solve(mass, mass_next @ v_next)   # the step's converged momentum velocity
    def mass_rate(w):   # dM/dq w by the Simulator's central differences
        eps = 1e-6 / max(1.0, np.abs(w).max())
        return (robot.mass_matrix(robot.integrate(q, w, eps)) -
                robot.mass_matrix(robot.integrate(q, w, -eps))) / (2 * eps)

    def iteration(w):   # the fixed-point map u -> v + h f(q, u, tau + (dM/dq u) u)
        return v + h * robot.forward_dynamics(q, w, tau + mass_rate(w) @ w)

    g = iteration(u)
    step = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = FD_STEP
        step[:, j] = (iteration(u + e) - g) / FD_STEP
    # a perturbation of the map by d moves its fixed point by (1 - dG/du)^-1 d, and an iterate
    # whose change is below the tolerance is that far (times the same factor) from it
    amplification = _norm(np.linalg.inv(np.eye(n) - step))
    rate = mass_rate(u)
    d_u = amplification * (h * _norm(np.linalg.inv(mass)) * roundoff_tol(n, (rate, u))
                           + 2 * SYMPLECTIC_TOLERANCE * max(1.0, np.abs(u).max()))
    d_v = solve_tol(mass_next, v_next) + _norm(np.linalg.inv(mass_next)) * (
        roundoff_tol(n, (mass, u)) + _norm(mass) * d_u)
    return h * d_u + 4 * EPS * _norm(q_next), d_v


BOUNDS = {"implicit_euler": implicit_bound, "symplectic_euler": symplectic_bound}


def assert_rows_are_steps(robot, Q, V, tau, h, integrator, limits=None):
    """Each row (Q[k+1], V[k+1]) is robot.step from (Q[k], V[k]) (then the stops when limits)
    within the step's round-off bound. Returns the largest difference / bound."""
    worst = 0.0
    stop_work = None if limits is None else StopWork(robot.nv, limits)
    for k in range(len(Q) - 1):
        q1, v1 = robot.step(Q[k], V[k], tau[k], h, integrator)
        stopped = False
        if limits is not None:
            before = v1.copy()
            enforce_stops(robot, limits, stop_work, q1, v1)
            stopped = not np.array_equal(before, v1)
        d_q, d_v = BOUNDS[integrator](robot, Q[k], V[k], tau[k], h, q1, v1)
        if stopped:   # the stop's velocity update goes through M^-1: amplified by cond(M)
            d_v *= np.linalg.cond(robot.mass_matrix(q1))
        dq, dv = np.abs(Q[k + 1] - q1).max(), np.abs(V[k + 1] - v1).max()
        assert dq <= d_q and dv <= d_v, (f"row {k + 1}: |dq| {dq:.3g} (bound {d_q:.3g}), "
                                         f"|dv| {dv:.3g} (bound {d_v:.3g})")
        worst = max(worst, dq / d_q, dv / d_v)
    return worst


@pytest.mark.parametrize("integrator", IMPLICIT)
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_row_is_robot_step_from_the_row_before(kind, integrator):
    robot = KINDS[kind]()
    q0, v0 = start_state(robot, 5)
    h = DT
    if kind == "flexible" and integrator == "symplectic_euler":
        # its fixed-point iteration diverges on the elastic modes' damping at 1 ms (as the
        # Simulator's: test_divergence_matches_the_reference), converges at 0.1 ms
        h = 1e-4
    tau = torques(robot, 12, 6, scale=0.5)
    result = robot.rollout(q0, v0, tau, h, integrator=integrator, engine="compiled")
    assert result.status == "ok" and result.steps == 12
    Q, V = result
    assert_rows_are_steps(robot, Q, V, tau, h, integrator)
    if kind in ("floating_base", "sprung_floating_arm"):   # q (+) v h keeps the quaternion unit
        assert abs(np.linalg.norm(Q[-1, 3:7]) - 1.0) < 1e-14


def test_reference_itself_is_sensitive_to_one_ulp():
    """Why the trajectories are compared row by row: robot.step's implicit_euler from two states
    one ulp apart moves apart far more than round-off (forward differences of step 1e-7)."""
    robot = arm()
    q0, v0 = start_state(robot, 5)
    tau = torques(robot, 12, 6, scale=0.5)
    _, v_a = stepped(robot, q0, v0, tau, DT, "implicit_euler")
    _, v_b = stepped(robot, q0, np.nextafter(v0, np.inf), tau, DT, "implicit_euler")
    spread = np.abs(v_a - v_b).max()
    assert spread > 1e3 * EPS * np.abs(v_a).max()


@pytest.mark.parametrize("integrator", IMPLICIT)
def test_batch_members_equal_single_rollouts_at_any_thread_count(integrator):
    robot = arm()
    q0, v0 = start_state(robot, 3)
    tau = torques(robot, 8, 4, scale=0.5)
    single = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    for threads in (1, 2):
        batch = robot.rollout(np.array([q0, q0]), np.array([v0, v0]), np.array([tau, -tau]), DT,
                              integrator=integrator, batch_threads=threads, engine="compiled")
        np.testing.assert_array_equal(batch.Q[0], single.Q)   # the same kernel: the same bits
        np.testing.assert_array_equal(batch.V[0], single.V)
        assert_rows_are_steps(robot, batch.Q[1], batch.V[1], -tau, DT, integrator)


@pytest.mark.parametrize("integrator", IMPLICIT)
def test_divergence_matches_the_reference(integrator):
    """A torque growing without bound passes max_speed: the compiled rollout stops at the
    reference engine's step, with its message's step and time, rows kept before it."""
    robot = mbd_ros.load(str(URDF / "arm7.urdf"), passive_forces=False)
    steps = 400
    tau = np.zeros((steps, robot.nv))
    tau[:, 0] = 20.0 * np.arange(1, steps + 1)
    results = {}
    for engine in ("compiled", "reference"):
        with pytest.warns(RolloutDiverged, match="diverged at step"):
            results[engine] = robot.rollout(robot.neutral(), np.zeros(robot.nv), tau, DT,
                                            integrator=integrator, max_speed=50.0, engine=engine)
    compiled, reference = results["compiled"], results["reference"]
    k = compiled.steps
    assert compiled.status == reference.status == "diverged" and 0 < k < steps
    assert k == reference.steps
    assert f"step {k} " in compiled.message and f"t = {k * DT:.6f}" in compiled.message
    assert np.abs(compiled.V).max() <= 50.0
    assert_rows_are_steps(robot, compiled.Q, compiled.V, tau, DT, integrator)


def test_flexible_symplectic_iteration_diverges_as_the_simulator():
    """At 1 ms the fixed-point iteration of symplectic_euler does not converge on the flexible
    arm (stiff, damped elastic modes): robot.step goes non-finite or past its bound, and the
    compiled rollout reports "diverged" at the reference engine's step."""
    robot = flexible_arm()
    q0, v0 = start_state(robot, 5)
    tau = torques(robot, 20, 6, scale=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = robot.rollout(q0, v0, tau, DT, integrator="symplectic_euler",
                                 engine="compiled")
        reference = robot.rollout(q0, v0, tau, DT, integrator="symplectic_euler",
                                  engine="reference")
    assert compiled.status == reference.status == "diverged"
    assert compiled.steps == reference.steps


@pytest.mark.parametrize("integrator", IMPLICIT)
def test_joint_pushed_into_its_stop_matches_step_and_stops(integrator):
    """limits=True: after each step the Plant's stops (the reference engine's enforce_stops);
    a joint driven into its URDF limit ends on it, at rest, never beyond (up to round-off)."""
    robot = arm()
    limits = PlantLimits(robot)
    lower, upper = robot.position_limits
    joint, steps = 1, 300
    tau = np.zeros((steps, robot.nv))
    tau[:, joint] = 200.0   # N m, far beyond gravity's torque: pushes to the upper limit
    result = robot.rollout(robot.neutral(), np.zeros(robot.nv), tau, DT, integrator=integrator,
                           limits=True, engine="compiled")
    assert result.status == "ok"
    Q, V = result
    assert np.all(Q[:, joint] <= upper[joint] + 1e-12)
    assert Q[-1, joint] == pytest.approx(upper[joint], abs=1e-12)
    assert abs(V[-1, joint]) < 1e-9
    assert_rows_are_steps(robot, Q, V, tau, DT, integrator, limits=limits)


# ---------------------------------------------------------------- drives with force elements
@pytest.mark.parametrize("kind", ["sprung_arm", "sprung_floating_arm"])
def test_drives_with_force_elements_equal_the_reference_and_a_plant(kind):
    """drives= on a rigid tree with force elements: the compensation b = ID(q, v, 0) includes the
    elements' loads (robot.inverse_dynamics). Compiled (kernels/rollout_loads.py) against the
    reference engine (robot.inverse_dynamics from Python, repeated robot.step) bit for bit with
    the explicit integrators, and, on the fixed base, against a Plant stepping with
    command_position (its own compensation); with the implicit integrators row by row against
    that Plant's step."""
    robot = KINDS[kind]()
    steps = 25
    rng = np.random.default_rng(41)
    q0 = robot.neutral()
    joints = list(robot.joint_names[-7:]) if kind == "sprung_floating_arm" else \
        list(robot.joint_names)
    targets = 0.3 * np.sin(np.linspace(0, 3, steps))[:, None] * rng.uniform(-1, 1, len(joints))
    velocity = np.gradient(targets, DT, axis=0)
    drives = {"joints": joints, "kp": 300.0, "kd": 30.0, "position": targets,
              "velocity": velocity}
    tau = np.zeros((steps, robot.nv))
    for limits in (False, True) if kind == "sprung_arm" else (False,):
        for integrator in ("rk4", "semi_implicit_euler"):
            rows = {engine: robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator=integrator,
                                          limits=limits, drives=drives, engine=engine)
                    for engine in ("compiled", "reference")}
            # (a drive cap summed over a free base's dofs made the floating arm diverge at
            # step 12 under semi-implicit Euler, in both engines alike)
            assert rows["compiled"].status == "ok", (integrator, rows["compiled"].message)
            np.testing.assert_array_equal(rows["compiled"].Q, rows["reference"].Q)
            np.testing.assert_array_equal(rows["compiled"].V, rows["reference"].V)
            if kind != "sprung_arm":
                continue
            plant = Plant(robot, DT, integrator=integrator, q=q0, kp=300.0, kd=30.0,
                          limits=limits, joints=joints)
            plant_q = [plant.q.copy()]
            for k in range(steps):
                plant.drives.command_position(targets[k], velocities=velocity[k])
                plant.step()
                plant_q.append(plant.q.copy())
            np.testing.assert_array_equal(rows["compiled"].Q, np.array(plant_q))
    # the implicit integrators with the same drive torques: each compiled row against a Plant
    # (Simulator with the integrator) reset to the row before, commanded, stepped once, within
    # that step's round-off bound for the Plant's drive torques plant.tau
    if kind != "sprung_arm":
        return
    for integrator in IMPLICIT:
        result = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator=integrator,
                               drives=drives, engine="compiled")
        assert result.status == "ok"
        Q, V = result
        plant = Plant(robot, DT, integrator=integrator, q=q0, kp=300.0, kd=30.0, limits=False,
                      joints=joints)
        for k in range(steps):
            plant.reset(Q[k], V[k], time=k * DT)
            plant.drives.command_position(targets[k], velocities=velocity[k])
            plant.step()
            d_q, d_v = BOUNDS[integrator](robot, Q[k], V[k], plant.tau.copy(), DT, plant.q,
                                          plant.v)
            assert np.abs(Q[k + 1] - plant.q).max() <= d_q
            assert np.abs(V[k + 1] - plant.v).max() <= d_v


# ---------------------------------------------------------------- the dense solve
def test_lu_solve_matches_lapack_to_the_conditioning_bound():
    """kernels/rollout_implicit.py lu_solve (unblocked partial-pivot LU) against numpy's solve
    (LAPACK dgesv) on matrices of condition 1 to 1e10: within solve_tol (both backward stable);
    an exactly singular matrix is reported (1), not divided by zero."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 13):
        for log_cond in (0, 3, 6, 10):
            u, _ = np.linalg.qr(rng.standard_normal((n, n)))
            w, _ = np.linalg.qr(rng.standard_normal((n, n)))
            a = u @ np.diag(np.logspace(0, -log_cond, n)) @ w.T
            b = rng.standard_normal(n)
            x = b.copy()
            assert lu_solve(a.copy(), x, np.zeros(n)) == 0
            reference = np.linalg.solve(a, b)
            assert np.abs(x - reference).max() <= solve_tol(a, reference)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert lu_solve(singular, np.ones(2), np.zeros(2)) == 1


def test_the_kernels_tolerance_is_the_simulators():
    """The kernel layer cannot import the Simulator's constant (layers import downward): the
    same number, checked here."""
    from mbd_ros.kernels import rollout_implicit
    assert rollout_implicit.SYMPLECTIC_TOLERANCE == SYMPLECTIC_TOLERANCE
