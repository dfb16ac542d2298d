"""Mimic couplings in the compiled rollouts (kernels/rollout_mimic.py, robot/rollout_mimic.py):
the minimal-coordinate forward dynamics (T^T M T) s' = T^T (tau - h), qdd = T s' in numba.

References: robot.step from the row before (the rollout's definition). The compiled solve sums
in index order and factors by Cholesky where robot.step uses numpy's BLAS products and LAPACK's
LU, so every row equals robot.step from the previous row to that step's round-off, bounded from
its own matrices (conftest.solve_tol for the reduced solve, roundoff_tol for the products), not
bit for bit; the couplings themselves (q_m = r q_l + o, v_m = r v_l hold on every row to
round-off; robot.step's projection when they do not); a batch against its single rollouts (bit
for bit: the same kernel on each thread). Drives and stops: the compensation against
robot.inverse_dynamics(q, v, 0) (the Plant's and the reference engine's) and its defining
invariant (tau = b: no acceleration); rows against the reference engine's one-row rollout.
The implicit integrators: every row against robot.step from the row before, within the step's
round-off bound with each coupled forward dynamics evaluation's own round-off amplified by the
forward differences (implicit Euler) or the fixed-point iteration (symplectic Euler).
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EPS, roundoff_tol, solve_tol
from test_rollout import DT, GRIPPER, start_state, torques

import mbd_ros
from mbd_ros.kernels import plant as P
from mbd_ros.kernels import rollout_mimic as RM
from mbd_ros.robot.constraints import PROJECTION_TOLERANCE
from mbd_ros.robot.rollout import RolloutProblem
from mbd_ros.robot.rollout_compiled import engine_of
from mbd_ros.robot.rollout_mimic import mimic_arrays, thread_mimic
from mbd_ros.robot.rollout_plant import VELOCITY_TIME_CONSTANT


def gripper(**options):
    return mbd_ros.load(GRIPPER, mimic=True, **options)


def sprung_gripper():
    """The gripper with a joint spring-damper on the leading finger (a force element)."""
    forces = {"forces": [{"type": "joint_spring", "name": "finger_spring", "joint": "finger_a",
                          "stiffness": 2.0, "damping": 0.05}]}
    return gripper(forces=forces)


def floating_gripper():
    """The gripper on a floating base (its base link given mass: a free joint must move some)."""
    base = ('<link name="base"><inertial><mass value="2.0"/><inertia ixx="0.02" ixy="0" ixz="0" '
            'iyy="0.02" iyz="0" izz="0.02"/></inertial></link>')
    return mbd_ros.load(GRIPPER.replace('<link name="base"/>', base), mimic=True,
                        floating_base=True)


ROBOTS = {"gripper": gripper, "floating_gripper": floating_gripper,
          "sprung_gripper": sprung_gripper}


def coupled_start(robot, seed):
    q, v = start_state(robot, seed)
    return robot.apply_mimic(q, v)


def step_bound(robot, q, v, tau, h, q_next, v_next, d_tau=0.0):
    """The round-off bound of one step's difference from robot.step (module docstring): the
    reduced solve's (solve_tol of T^T M T at the step's start, its products by roundoff_tol),
    propagated through the step's stages (weights summing to h, each stage's perturbation
    amplified by at most 2 at these step sizes), and one rounding of each state entry.
    d_tau: a bound on a difference of tau itself (the drives' compensation), which reaches qdd
    through T (T^T M T)^-1 T^T."""
    T = robot.mimic_coupling
    mass = robot.mass_matrix(q)
    reduced = T.T @ mass @ T
    qdd = robot.forward_dynamics(q, v, tau)
    s = qdd[robot.mimic_independent]
    d_a = solve_tol(reduced, s) + roundoff_tol(robot.nv, (mass, qdd), tau, (T.T, tau)) + \
        np.linalg.norm(T @ np.linalg.solve(reduced, T.T), 2) * d_tau
    d_v = 2.0 * h * d_a + 4 * EPS * np.linalg.norm(v_next)
    d_q = h * d_v + 4 * EPS * np.linalg.norm(q_next)
    return d_q, d_v


def assert_rows_equal_step(robot, result, tau, integrator, dt):
    """Every row of `result` against robot.step from the row before, within step_bound."""
    start = robot.time
    try:
        for k in range(len(tau)):
            robot.time = start + k * dt
            q_ref, v_ref = robot.step(result.Q[k], result.V[k], tau[k], dt, integrator)
            d_q, d_v = step_bound(robot, result.Q[k], result.V[k], tau[k], dt, q_ref, v_ref)
            assert np.abs(result.Q[k + 1] - q_ref).max() <= d_q, (k, result.Q[k + 1] - q_ref, d_q)
            assert np.abs(result.V[k + 1] - v_ref).max() <= d_v, (k, result.V[k + 1] - v_ref, d_v)
    finally:
        robot.time = start


def assert_coupled(robot, Q, V, tolerance):
    for iq_m, iq_l, iv_m, iv_l, ratio, offset in robot._mimic.pairs:
        assert np.abs(Q[:, iq_m] - ratio * Q[:, iq_l] - offset).max() <= tolerance
        assert np.abs(V[:, iv_m] - ratio * V[:, iv_l]).max() <= tolerance


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
def test_mimic_rollout_rows_equal_step(kind, integrator):
    robot = ROBOTS[kind]()
    q0, v0 = coupled_start(robot, 41)
    tau = torques(robot, 100, 42, scale=0.2)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    assert_rows_equal_step(robot, result, tau, integrator, DT)
    # the couplings hold: a step adds round-off of the state's size, far below the projection
    # tolerance over 100 rows
    assert_coupled(robot, result.Q, result.V, 100 * 8 * EPS * max(1.0, np.abs(result.V).max()))
    # the mimicking finger moves (the coupling forces act): it is not at rest on its offset
    iq_m = robot._mimic.pairs[0][0]
    assert np.ptp(result.Q[:, iq_m]) > 1e-3


def test_mimic_state_off_the_coupling_is_projected_as_robot_step():
    """A start 1e-6 rad off the coupling: robot.step projects after the first step; the
    compiled kernel returns to Python for that projection and resumes."""
    robot = gripper()
    q0, v0 = coupled_start(robot, 43)
    iq_m = robot._mimic.pairs[0][0]
    q0[iq_m] += 1e-6
    tau = torques(robot, 20, 44, scale=0.2)
    for integrator in ("rk4", "semi_implicit_euler"):
        result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
        assert result.status == "ok"
        assert_rows_equal_step(robot, result, tau, integrator, DT)
        assert_coupled(robot, result.Q[1:], result.V[1:], PROJECTION_TOLERANCE)


@pytest.mark.parametrize("threads", [1, 2])
def test_mimic_batch_equals_single_rollouts(threads):
    robot = floating_gripper()
    starts = [coupled_start(robot, seed) for seed in (51, 52, 53)]
    q0 = np.array([q for q, _ in starts])
    v0 = np.array([v for _, v in starts])
    tau = np.array([torques(robot, 30, seed, scale=0.2) for seed in (54, 55, 56)])
    batch = robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=threads,
                          engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        single = robot.rollout(q0[i], v0[i], tau[i], DT, integrator="rk4", engine="compiled")
        np.testing.assert_array_equal(batch.Q[i], single.Q)
        np.testing.assert_array_equal(batch.V[i], single.V)


def test_mimic_parts_left_to_the_reference_loop():
    """Mimic couplings on closed loops (their superposed solve) run in Python: refused by
    engine="compiled", and the auto engine equals the reference engine."""
    from test_mimic_loops import CLOSURES, XML
    robot = mbd_ros.load(XML, closures=CLOSURES, mimic=True, passive_forces=False)
    q0 = robot.assemble(robot.apply_mimic(np.array([0.3, 0.0, 0.0, 0.0])))
    v0 = robot.project_velocity(q0, np.array([2.0, 0.0, 0.0, 0.0]))
    tau = torques(robot, 3, 62, scale=0.2)
    with pytest.raises(ValueError, match="engine='compiled'.*mimic couplings on closed loops"):
        robot.rollout(q0, v0, tau, DT, engine="compiled")
    auto = robot.rollout(q0, v0, tau, DT)
    reference = robot.rollout(q0, v0, tau, DT, engine="reference")
    np.testing.assert_array_equal(auto.Q, reference.Q)


# ---------------------------------------------------------------- implicit integrators
def dynamics_roundoff(robot, q, v, tau):
    """delta: the round-off bound of one coupled forward dynamics evaluation (the kernel's
    Cholesky and index-order sums against numpy's LU and BLAS): step_bound's d_a."""
    T = robot.mimic_coupling
    mass = robot.mass_matrix(q)
    reduced = T.T @ mass @ T
    qdd = robot.forward_dynamics(q, v, tau)
    return solve_tol(reduced, qdd[robot.mimic_independent]) + \
        roundoff_tol(robot.nv, (mass, qdd), tau, (T.T, tau))


def mimic_implicit_bound(robot, q, v, tau, h, q_next, v_next, roundoff=dynamics_roundoff):
    """(d_q, d_v): one implicit_euler step on the couplings' tangent basis N against robot.step
    (without its projection): test_rollout_loop_integrators.py's implicit_loop_bound (the step's
    products and solve on N) plus what differs here and not on loops: each forward dynamics
    evaluation differs by its own round-off delta (dynamics_roundoff), so a1 by delta and each
    forward-difference column of B_q = A_q N, B_v = A_v N by 2 delta / 1e-7 (|dB| <= 2 sqrt(k)
    delta / 1e-7): L moves by (h + h^2) |dB|, the right side by h delta + h^2 |dB| |s|, and
    v+ by h (delta + h |dB| |s + z| + |dB| |z|) besides |B| d_z."""
    from test_rollout_loop_integrators import implicit_loop_bound
    d_q, d_v = implicit_loop_bound(robot, q, v, tau, h, q_next, v_next)
    n = robot.nv
    basis = robot.constraint_basis(q)
    k = basis.shape[1]
    a1 = robot.forward_dynamics(q, v, tau)
    b_q, b_v = np.empty((n, k)), np.empty((n, k))
    for j in range(k):
        d = np.ascontiguousarray(basis[:, j])
        b_v[:, j] = (robot.forward_dynamics(q, d * 1e-7 + v, tau) - a1) / 1e-7
        b_q[:, j] = (robot.forward_dynamics(robot.integrate(q, d, 1e-7), v, tau) - a1) / 1e-7
    s = basis.T @ v
    lhs = np.eye(k) - h * (basis.T @ b_v) - h * h * (basis.T @ b_q)
    z = np.linalg.solve(lhs, h * (basis.T @ a1) + h * h * (basis.T @ (b_q @ s)))
    delta = roundoff(robot, q, v, tau)
    d_b = 2.0 * np.sqrt(k) * delta / 1e-7
    inverse = np.linalg.norm(np.linalg.inv(lhs), 2)
    d_z = inverse * ((h + h * h) * d_b * np.linalg.norm(z) + h * delta +
                     h * h * d_b * np.linalg.norm(s))
    extra = h * (delta + h * (d_b * np.linalg.norm(s + z) + np.linalg.norm(b_q, 2) * d_z) +
                 d_b * np.linalg.norm(z) + np.linalg.norm(b_v, 2) * d_z)
    return d_q + h * extra, d_v + extra


def mimic_symplectic_bound(robot, q, v, tau, h, q_next, v_next, roundoff=dynamics_roundoff):
    """(d_q, d_v): one symplectic_euler step against robot.step (without its projection):
    test_rollout_implicit.py's symplectic_bound (the mass matrices' products and solve, the
    fixed-point tolerance) plus the coupled forward dynamics' own round-off delta in every
    iteration, which moves the fixed point by a h delta (a = |(1 - dG/du)^-1|, as there; bounded
    here by 2: h |d f / d u| < 0.5 at these steps, checked), reaching q+ by h and v+ through
    |M+^-1| |M|."""
    from test_rollout_implicit import symplectic_bound
    d_q, d_v = symplectic_bound(robot, q, v, tau, h, q_next, v_next)
    mass, mass_next = robot.mass_matrix(q), robot.mass_matrix(q_next)
    u = np.linalg.solve(mass, mass_next @ v_next)
    delta = roundoff(robot, q, u, tau)
    a1 = robot.forward_dynamics(q, u, tau)
    rate = np.empty((robot.nv, robot.nv))
    for j in range(robot.nv):
        e = np.zeros(robot.nv)
        e[j] = 1e-7
        rate[:, j] = (robot.forward_dynamics(q, u + e, tau) - a1) / 1e-7
    assert h * np.linalg.norm(rate, 2) < 0.5
    d_u = 2.0 * h * delta
    return d_q + h * d_u, d_v + np.linalg.norm(np.linalg.inv(mass_next), 2) * \
        np.linalg.norm(mass, 2) * d_u


MIMIC_IMPLICIT_BOUNDS = {"implicit_euler": mimic_implicit_bound,
                         "symplectic_euler": mimic_symplectic_bound}


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_mimic_implicit_integrators_rows_equal_step(kind, integrator):
    """implicit_euler (on the couplings' tangent basis, kernels/rollout_mimic_implicit.py) and
    symplectic_euler (kernels/rollout_implicit.py with the coupled dynamics) run compiled: every
    row against robot.step from the row before, within the open step's round-off bound
    (mimic_implicit_bound, mimic_symplectic_bound) carried through robot.step's projection onto
    the couplings where it projects (the same Python projection on both sides: positions by the
    linear couplings' G^+, 1-Lipschitz; velocities M-orthogonally, Lipschitz with at most
    1 + cond(M)), plus the projection's round-off (64 eps); the couplings hold on every row.
    The basis is robot.constraint_basis, the same at every q (the couplings are linear)."""
    robot = ROBOTS[kind]()
    rng = np.random.default_rng(5)
    basis = robot.constraint_basis(robot.neutral())
    for _ in range(3):
        q = robot.random_configuration(rng)
        np.testing.assert_array_equal(robot.constraint_basis(q), basis)
    q0, v0 = coupled_start(robot, 45)
    steps = 40
    tau = torques(robot, steps, 46, scale=0.2)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    start = robot.time
    used = 0.0
    try:
        for k in range(steps):
            robot.time = start + k * DT
            q_ref, v_ref = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator)
            robot.time = start + k * DT
            q_open, v_open = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                        project=False)
            d_q, d_v = MIMIC_IMPLICIT_BOUNDS[integrator](robot, result.Q[k], result.V[k],
                                                         tau[k], DT, q_open, v_open)
            if not np.array_equal(q_open, q_ref) or not np.array_equal(v_open, v_ref):
                d_v *= 1.0 + np.linalg.cond(robot.mass_matrix(q_ref))
            d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
            d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
            err_q = np.abs(result.Q[k + 1] - q_ref).max()
            err_v = np.abs(result.V[k + 1] - v_ref).max()
            assert err_q <= d_q and err_v <= d_v, (k, err_q, d_q, err_v, d_v)
            used = max(used, err_q / d_q, err_v / d_v)
    finally:
        robot.time = start
    assert_coupled(robot, result.Q, result.V, PROJECTION_TOLERANCE)
    iq_m = robot._mimic.pairs[0][0]
    assert np.ptp(result.Q[:, iq_m]) > 1e-4   # the coupled finger moves
    print(f"{kind} {integrator}: at most {used:.2g} of the bound used")


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_mimic_implicit_integrators_with_drives_and_stops(integrator):
    """drives= and limits=True with the implicit integrators: the compiled rollout finishes like
    the reference engine and stays within the reference engine's trajectory by far less than
    the drives move it (not row by row: the forward-difference Jacobians amplify round-off by
    ~1e7 from step to step, test_rollout_implicit.py test_reference_itself_is_sensitive...),
    within the limits (up to the projection's step), and the couplings hold."""
    robot = gripper()
    steps = 150
    q0, v0, tau, drives = drives_case(robot, steps, True, 71)
    compiled = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives, limits=True,
                             engine="compiled")
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                              limits=True, engine="reference")
    assert compiled.status == reference.status == "ok", (compiled.message, reference.message)
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    moved = np.abs(free.Q - compiled.Q).max()
    assert moved > 0.1
    assert np.abs(compiled.Q - reference.Q).max() < 1e-6 * moved
    lower, upper = robot.position_limits
    for kind, iq, iv in zip(robot.joint_types, robot.idx_q, robot.idx_v):
        if kind in ("revolute", "prismatic"):
            assert np.all(compiled.Q[:, iq] >= lower[iv] - 1e-6)
            assert np.all(compiled.Q[:, iq] <= upper[iv] + 1e-6)


# ---------------------------------------------------------------- drives and limits
def compensation_bound(robot, q, v, h):
    """Round-off bound of the drives' compensation b = S T^T h against robot.inverse_dynamics
    (Constraints.actuation: a = lstsq(N^T S, N^T h), N orthonormal with range T, so
    cond(N^T S) = cond(T)): the least-squares solve's solve_tol, the products' roundoff_tol
    (N^T h, and the kernel's T^T h), the RNEA's own (|M| |qdd| + |h| at qdd = 0: |h|)."""
    T = robot.mimic_coupling
    a = T.T @ h
    return solve_tol(T.T @ T, a) + roundoff_tol(robot.nv, (T.T, h), h, h)


def tree_bias(robot, q, v):
    """h = the tree's ID(q, v, 0) with the force elements' loads (before the couplings'
    actuation: robot.inverse_dynamics's first part)."""
    with robot._lock:
        return robot._tree_inverse_dynamics(np.array(q, float), np.array(v, float),
                                            np.zeros(robot.nv), None, np.zeros(robot.nv))


def kernel_compensation(robot, q, v):
    """kernels/rollout_mimic.py mimic_drive_bias on one thread's workspaces of the engine."""
    engine = engine_of(robot)
    work = engine.take(1)[0]
    loaded = robot._forces is not None and robot._forces.elements is not None
    mimic = thread_mimic(mimic_arrays(robot), robot.nv)
    out = np.zeros(robot.nv)
    status = RM.mimic_drive_bias(engine.entries, work.pointers, engine.dims, work.forces,
                                 loaded, mimic, np.array(q, float), np.array(v, float),
                                 np.zeros(robot.nv), out)
    engine.give_back([work])
    return status, out


@pytest.mark.parametrize("kind", list(ROBOTS))
def test_mimic_drive_compensation_equals_inverse_dynamics(kind):
    """The kernel's compensation S T^T h against robot.inverse_dynamics(q, v, 0) (the Plant's
    and the reference engine's compensation, by SVD and least squares), within the round-off
    bound; and the invariant that defines it: with tau = b the coupled forward dynamics give
    zero acceleration (T^T (b - h) = 0), to that bound through (T^T M T)^-1."""
    robot = ROBOTS[kind]()
    T = robot.mimic_coupling
    independent = robot.mimic_independent
    mimicking = np.setdiff1d(np.arange(robot.nv), independent)
    for seed in range(6):
        q, v = coupled_start(robot, 300 + seed)
        v = 3.0 * v
        status, b = kernel_compensation(robot, q, v)
        assert status == 0
        reference = robot.inverse_dynamics(q, v, np.zeros(robot.nv))
        bound = compensation_bound(robot, q, v, tree_bias(robot, q, v))
        np.testing.assert_allclose(b, reference, rtol=0, atol=bound)
        np.testing.assert_array_equal(b[mimicking], 0.0)   # no drive force on a follower
        assert np.abs(b).max() > 1e-2                      # gravity on the slide and fingers
        mass = robot.mass_matrix(q)
        reduced = T.T @ mass @ T
        qdd = robot.forward_dynamics(q, v, b)
        limit = np.linalg.norm(T @ np.linalg.inv(reduced), 2) * \
            (roundoff_tol(robot.nv, (T.T, b), b) + bound * np.linalg.norm(T, 2))
        assert np.abs(qdd).max() <= limit, (np.abs(qdd).max(), limit)


def drives_case(robot, steps, limits, seed):
    """A start on the couplings (within the limits), torques, and position references that
    swing the slide and the leading finger (its follower, r = -1.5, into finger_b's stops with
    limits)."""
    rng = np.random.default_rng(seed)
    q0, v0 = coupled_start(robot, seed)
    q0[int(robot.idx_q[robot.joint_names.index("slide")])] = rng.uniform(-0.3, 0.3)
    # finger_a at 0.68: its follower at -0.92, 0.08 from its lower stop (finger_a's velocity
    # limit, 1 rad/s, lets the drive move it ~0.1 rad in 0.15 s)
    q0[int(robot.idx_q[robot.joint_names.index("finger_a")])] = 0.68
    q0 = robot.apply_mimic(q0)
    tau = torques(robot, steps, seed + 1, scale=0.2)
    tau[:, robot.nv - 2:] *= 0.01   # on the fingers (1e-4 kg m^2) small beside the drives
    joints = ["slide", "finger_a"]
    iq = [int(robot.idx_q[robot.joint_names.index(j)]) for j in joints]
    position = q0[iq] + 0.9 * np.sin(np.linspace(0.0, 1.5, steps))[:, None]
    velocity = np.gradient(position, DT, axis=0)
    return q0, v0, tau, {"joints": joints, "position": position, "velocity": velocity}


def row_drive_torques(robot, problem, k, q, v):
    """The drive torques of row k at (q, v), as the reference engine computes them
    (robot/rollout.py _reference_loop: M, m_eff, robot.inverse_dynamics(q, v, 0), the Plant's
    drive kernel, limited with limits)."""
    nv = robot.nv
    mass = robot.mass_matrix(q)
    chol, minv, m_eff = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv)
    m_stable = np.zeros(nv)
    assert P.effective_inertias(mass, chol, minv, problem.drive_int, m_eff, m_stable) == 0
    bias = robot.inverse_dynamics(q, v, np.zeros(nv))
    drive_float = problem.drive_float.copy()
    drive_float[P.DRIVE_Q_REF] = problem.position[0, k]
    drive_float[P.DRIVE_VELOCITY_CMD] = problem.velocity[0, k]
    out = np.zeros(nv)
    if problem.limits is None:
        P.drive_torques(problem.drive_int, drive_float, q, v, mass, m_stable, bias, DT, out)
    else:
        limits = problem.limits
        P.limited_drive_torques(problem.drive_int, drive_float, q, v, mass, m_eff, m_stable,
                                bias, DT,
                                limits.vel_idx, limits.velocity, limits.effort,
                                1.0 / VELOCITY_TIME_CONSTANT, out)
    return out


def on_a_stop(robot, q):
    """True when a limited joint of q sits on its position limit (JointLimits.enforce put it
    there: exactly, up to the round-off of q (+) dq)."""
    lower, upper = robot.position_limits
    for kind, iq, iv in zip(robot.joint_types, robot.idx_q, robot.idx_v):
        if kind in ("revolute", "prismatic") and min(abs(q[iq] - lower[iv]),
                                                     abs(q[iq] - upper[iv])) <= 1e-12:
            return True
    return False


def off_the_couplings(robot, q, v):
    """True when (q, v) is off a coupling by more than a step's round-off (the stops moved a
    joint without its partner: robot.step will project)."""
    return max(robot.closure_residual(q, v)) > 1e3 * EPS * max(1.0, np.abs(v).max())


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
@pytest.mark.parametrize("limits", [False, True])
def test_mimic_drives_and_stops_rows_equal_the_reference(kind, integrator, limits):
    """drives= (and limits=True) on a mimic robot run compiled: every row against the reference
    engine (robot.step with the drives' terms in Python, then the stops) from the row before,
    within step_bound with the compensation's round-off (compensation_bound); with limits the
    stops and robot.step's projection onto the couplings (in Python) map the states, Lipschitz
    with at most cond(M) (the impulse M^-1 on the stopped joints, the M-orthogonal velocity
    projection), so on those rows the bound is scaled by 1 + cond(M). The drives act, and with limits the
    follower finger_b reaches its stop (the Plant's stops ignore the couplings; the projection
    of the next step re-couples), never passing it by more than the projection moves it."""
    robot = ROBOTS[kind]()
    steps = 150
    q0, v0, tau, drives = drives_case(robot, steps, limits, 71)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives, limits=limits,
                           engine="compiled")
    assert result.status == "ok", result.message
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, drives, limits, 1e3, None,
                             0.0)
    start = robot.time
    used = 0.0
    for k in range(steps):
        q, v = result.Q[k], result.V[k]
        row = {"joints": drives["joints"], "position": drives["position"][k:k + 1],
               "velocity": drives["velocity"][k:k + 1]}
        reference = robot.rollout(q, v, tau[k:k + 1], DT, integrator=integrator, drives=row,
                                  limits=limits, engine="reference", t0=k * DT)
        assert reference.status == "ok"
        drive = row_drive_torques(robot, problem, k, q, v)
        d_q, d_v = step_bound(robot, q, v, tau[k] + drive, DT, reference.Q[1], reference.V[1],
                              d_tau=compensation_bound(robot, q, v, tree_bias(robot, q, v)))
        if limits and (on_a_stop(robot, reference.Q[1]) or off_the_couplings(robot, q, v)):
            # (a row that stops a joint, or projects: the step after a stop re-couples)
            amplification = 1.0 + np.linalg.cond(robot.mass_matrix(q))
            d_q, d_v = amplification * d_q, amplification * d_v
        err_q = np.abs(result.Q[k + 1] - reference.Q[1]).max()
        err_v = np.abs(result.V[k + 1] - reference.V[1]).max()
        assert err_q <= d_q and err_v <= d_v, (k, err_q, d_q, err_v, d_v)
        used = max(used, err_q / d_q, err_v / d_v)
    assert robot.time == start
    # the drives acted: far from the undriven trajectory
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert np.abs(free.Q - result.Q).max() > 0.1
    iq_b = int(robot.idx_q[robot.joint_names.index("finger_b")])
    lower, upper = robot.position_limits
    iv_b = int(robot.idx_v[robot.joint_names.index("finger_b")])
    if limits:   # finger_b driven into its stops (r = -1.5 times finger_a's swing)
        on_stop = np.isclose(result.Q[:, iq_b], upper[iv_b], rtol=0, atol=1e-9) | \
            np.isclose(result.Q[:, iq_b], lower[iv_b], rtol=0, atol=1e-9)
        assert on_stop.sum() >= 5
        assert result.Q[:, iq_b].max() <= upper[iv_b] + PROJECTION_TOLERANCE * 10
        assert result.Q[:, iq_b].min() >= lower[iv_b] - PROJECTION_TOLERANCE * 10
    else:
        assert np.ptp(result.Q[:, iq_b]) > 0.5   # the follower swings with its leader
        assert_coupled(robot, result.Q, result.V, 100 * 8 * EPS * np.abs(result.V).max())
    print(f"{kind} {integrator} limits={limits}: largest share of the bound {used:.3g}")


# ---------------------------------------------------------------- prescribed joints
def gripper_trajectories(kind):
    """The leading finger prescribed (finger_b follows), and the slide too (an uncoupled
    independent dof) on the floating gripper (on a fixed base that would leave no free dof)."""
    from test_rollout_prescribed import sine
    finger = {"finger_a": sine(0.3, 6.0, 0.1)}
    return finger if kind != "floating_gripper" else dict(slide=sine(0.2, 4.0, 0.05), **finger)


def kkt_solution(robot, q, mass, bias, tau, prescribed_dofs, qdd_p):
    """(KKT matrix, its least-squares solution) of robot/prescribed.py solve at q (the coupling
    rows G, gamma = 0 with the default gains)."""
    nv = robot.nv
    jac = robot.constraint_jacobian(q)
    p = np.array(prescribed_dofs)
    f = np.setdiff1d(np.arange(nv), p)
    b, nf, npr = jac.shape[0], len(f), len(p)
    kkt = np.zeros((nv + b, nf + b + npr))
    rhs = np.zeros(nv + b)
    kkt[:nf, :nf] = mass[np.ix_(f, f)]
    kkt[:nf, nf:nf + b] = -jac[:, f].T
    kkt[nf:nv, :nf] = mass[np.ix_(p, f)]
    kkt[nf:nv, nf:nf + b] = -jac[:, p].T
    kkt[nf:nv, nf + b:] = -np.eye(npr)
    kkt[nv:, :nf] = jac[:, f]
    rhs[:nf] = tau[f] - bias[f] - mass[np.ix_(f, p)] @ qdd_p
    rhs[nf:nv] = tau[p] - bias[p] - mass[np.ix_(p, p)] @ qdd_p
    rhs[nv:] = -jac[:, p] @ qdd_p
    return kkt, np.linalg.lstsq(kkt, rhs, rcond=None)[0]


def prescribed_roundoff(robot, q, v, tau, prescribed, t):
    """The round-off bound of one evaluation of the hybrid coupled dynamics against
    robot.forward_dynamics(prescribed=...): the reduced Cholesky solve's solve_tol
    ((T^T M T)_ff) plus the KKT least squares' (solve_tol of the KKT matrix, robot/prescribed.py)
    plus the products' roundoff_tol."""
    T = robot.mimic_coupling
    names = list(prescribed)
    dofs = [int(robot.idx_v[robot.joint_names.index(name)]) for name in names]
    qdd_p = np.array([prescribed[name](t)[2] for name in names])
    accelerations = dict(zip(names, qdd_p))
    mass = robot.mass_matrix(q)
    bias = tree_bias(robot, q, v)
    qdd = robot.forward_dynamics(q, v, tau, prescribed=accelerations)
    independent = list(robot.mimic_independent)
    free_z = [a for a, i in enumerate(independent) if i not in dofs]
    reduced = (T.T @ mass @ T)[np.ix_(free_z, free_z)]
    kkt, x = kkt_solution(robot, q, mass, bias, tau, dofs, qdd_p)
    return solve_tol(reduced, qdd[np.array(independent)[free_z]]) + solve_tol(kkt, x) + \
        roundoff_tol(robot.nv, (mass, qdd), tau, bias, (T.T, tau), (T.T, bias))


def start_on_trajectories(robot, prescribed, t0, seed):
    """(q0, v0): coupled_start(robot, seed) with the prescribed joints moved onto their
    trajectories at t0, the couplings applied again."""
    q0, v0 = coupled_start(robot, seed)
    for name, trajectory in prescribed.items():
        j = robot.joint_names.index(name)
        q0[int(robot.idx_q[j])], v0[int(robot.idx_v[j])], _ = trajectory(t0)
    return robot.apply_mimic(q0, v0)


def prescribed_step_bound(robot, q, v, tau, h, q_next, v_next, prescribed, t):
    """The round-off bound of one explicit step of the hybrid coupled dynamics against
    robot.step: prescribed_roundoff at each stage, through the stages as step_bound (weights
    summing to h, amplified by at most 2)."""
    d_a = prescribed_roundoff(robot, q, v, tau, prescribed, t)
    d_v = 2.0 * h * d_a + 4 * EPS * np.linalg.norm(v_next)
    return h * d_v + 4 * EPS * np.linalg.norm(q_next), d_v


@pytest.mark.parametrize("kind", ["gripper", "floating_gripper", "sprung_gripper"])
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
def test_prescribed_leaders_with_mimic_rows_equal_step(kind, integrator):
    """Prescribed joints on a mimic robot (the slide and the leader finger_a; finger_b follows)
    run compiled (kernels/rollout_prescribed_mimic.py): every row against robot.step with the same
    trajectories from the row before (robot.time = t0 + k dt), within prescribed_step_bound,
    carried through robot.step's projection onto the couplings (holding the prescribed joints)
    where it projects (1 + cond(M), as the stops above); the prescribed joints exactly on their
    trajectories and the couplings within the projection tolerance on every row."""
    from test_rollout_prescribed import on_trajectories
    robot = ROBOTS[kind]()
    prescribed = gripper_trajectories(kind)
    t0 = 0.3
    q0, v0 = start_on_trajectories(robot, prescribed, t0, 47)
    steps = 60
    tau = torques(robot, steps, 48, scale=0.2)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed, t0=t0,
                           engine="compiled")
    assert result.status == "ok", result.message
    on_trajectories(robot, result.Q, result.V, prescribed, t0, DT)
    assert_coupled(robot, result.Q, result.V, PROJECTION_TOLERANCE)
    start = robot.time
    used = 0.0
    try:
        for k in range(steps):
            t = t0 + k * DT
            robot.time = t
            q_ref, v_ref = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                      prescribed=prescribed)
            robot.time = t
            q_open, v_open = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                        prescribed=prescribed, project=False)
            d_q, d_v = prescribed_step_bound(robot, result.Q[k], result.V[k], tau[k], DT,
                                             q_open, v_open, prescribed, t)
            if not np.array_equal(q_open, q_ref) or not np.array_equal(v_open, v_ref):
                d_v *= 1.0 + np.linalg.cond(robot.mass_matrix(q_ref))
            err_q = np.abs(result.Q[k + 1] - q_ref).max()
            err_v = np.abs(result.V[k + 1] - v_ref).max()
            assert err_q <= d_q and err_v <= d_v, (k, err_q, d_q, err_v, d_v)
            used = max(used, err_q / d_q, err_v / d_v)
    finally:
        robot.time = start
    iq_b = int(robot.idx_q[robot.joint_names.index("finger_b")])
    assert np.ptp(result.Q[:, iq_b]) > 1e-2   # the follower follows the prescribed leader
    print(f"{kind} {integrator}: at most {used:.2g} of the bound used")


def test_prescribed_follower_is_left_to_the_reference_loop():
    """A prescribed mimicking joint (its leader then follows from the coupling: a KKT solve the
    minimal coordinates do not cover) runs in Python: refused by engine="compiled", naming it."""
    from test_rollout_prescribed import sine
    robot = gripper()
    q0, v0 = coupled_start(robot, 49)
    prescribed = {"finger_b": sine(0.1, 3.0, 0.0)}
    with pytest.raises(ValueError, match="engine='compiled'.*finger_b"):
        robot.rollout(q0, v0, torques(robot, 3, 50), DT, prescribed=prescribed,
                      engine="compiled")


class PrescribedAt:
    """The robot as the Simulator's implicit steps see it with prescribed joints: every
    evaluation at the step's start time t (forward_dynamics with the trajectories' accelerations
    at t); the rest delegated."""

    def __init__(self, robot, prescribed, t):
        self.robot, self.prescribed, self.t = robot, prescribed, t
        self.accelerations = {name: trajectory(t)[2] for name, trajectory in prescribed.items()}

    def forward_dynamics(self, q, v, tau):
        return self.robot.forward_dynamics(q, v, tau, prescribed=self.accelerations)

    def __getattr__(self, name):
        return getattr(self.robot, name)


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_prescribed_leaders_with_mimic_implicit_rows_equal_step(integrator):
    """The implicit integrators with prescribed leaders on the floating gripper: every row
    against robot.step from the row before within the implicit bounds above
    (mimic_implicit_bound, mimic_symplectic_bound) with the hybrid coupled dynamics' round-off
    (prescribed_roundoff) as each evaluation's, carried through the projection as above; the
    prescribed joints on their trajectories."""
    from test_rollout_prescribed import on_trajectories
    robot = floating_gripper()
    prescribed = gripper_trajectories("floating_gripper")
    t0 = 0.3
    q0, v0 = start_on_trajectories(robot, prescribed, t0, 57)
    steps = 30
    tau = torques(robot, steps, 58, scale=0.2)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed, t0=t0,
                           engine="compiled")
    assert result.status == "ok", result.message
    on_trajectories(robot, result.Q, result.V, prescribed, t0, DT)
    start = robot.time
    try:
        for k in range(steps):
            t = t0 + k * DT
            robot.time = t
            q_ref, v_ref = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                      prescribed=prescribed)
            robot.time = t
            q_open, v_open = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                        prescribed=prescribed, project=False)
            at = PrescribedAt(robot, prescribed, t)
            d_q, d_v = MIMIC_IMPLICIT_BOUNDS[integrator](
                at, result.Q[k], result.V[k], tau[k], DT, q_open, v_open,
                roundoff=lambda r, q, v, f: prescribed_roundoff(robot, q, v, f, prescribed, t))
            if not np.array_equal(q_open, q_ref) or not np.array_equal(v_open, v_ref):
                d_v *= 1.0 + np.linalg.cond(robot.mass_matrix(q_ref))
            d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
            d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
            assert np.abs(result.Q[k + 1] - q_ref).max() <= d_q, k
            assert np.abs(result.V[k + 1] - v_ref).max() <= d_v, k
    finally:
        robot.time = start
