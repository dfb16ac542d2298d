"""Closed loops on a flexible tree in the compiled rollouts (kernels/rollout_flexible_loops.py):
the stages run the compiled dense solve (kernels/flexible_loop_dynamics.py, robot.forward_dynamics'
own), robot.step's projection runs in numba, and the rollout equals the reference engine
(robot.step repeated).

Bounds: RK4 rows that need no projection run the very kernel robot.step runs, in the same order:
equal bit for bit. A projection (every semi-implicit Euler step) solves G^+ g, M^-1 G^T and
(G M^-1 G^T)^+ G v by Cholesky and a pivoted QR where numpy uses LU, lstsq and pinv: round-off
amplified by cond(M) and cond(G M^-1 G^T) per projection, 64 eps (cond(M) + cond(K)) |v| each,
summed over the rows (the differences are not damped: the mechanism is undamped)."""
import warnings

import numpy as np
import pytest

from mbd_ros.kernels import rollout_flexible_loops as RFL
from mbd_ros.robot import constraints as C
from mbd_ros.robot.rollout import RolloutProblem
from mbd_ros.robot.rollout_compiled import unsupported
from mbd_ros.robot.rollout_flexible_loops import flexible_loop_arrays
from test_flexible_loop_dynamics import conditions, sample_fourbar
from test_flexible_loops import fourbar
from test_rollout_loop_prescribed import counted

EPS = np.finfo(float).eps
DT = 1e-4
ROWS = 200


def problem_of(robot, integrator, steps=ROWS, seed=0):
    """From the assembled sample at rest, a smooth crank torque (N m) and a kick of the modes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", C.LoopResidualWarning)
        q0 = robot.assemble(robot.neutral())
    v0 = np.zeros(robot.nv)
    v0[robot.elastic_v_indices] = 1e-3 * np.random.default_rng(seed).standard_normal(
        len(robot.elastic_v_indices))
    v0 = robot.project_velocity(q0, v0)
    tau = np.zeros((steps, robot.nv))
    tau[:, 0] = 0.8 * np.sin(np.arange(steps) * 0.05)
    return q0, v0, tau


@pytest.mark.parametrize("make", [fourbar, sample_fourbar], ids=["test_fourbar", "sample"])
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
def test_compiled_rollout_equals_robot_steps(make, integrator, monkeypatch):
    """The engine runs it (unsupported() is None; neither numpy's solve nor the Python projection
    is called) and equals the reference engine (RK4 bit for bit where no row projects, else
    within the module's bound); every row's loops closed to PROJECTION_TOLERANCE."""
    robot = make()
    q0, v0, tau = problem_of(robot, integrator)
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, None, False, 100.0, None,
                             None)
    assert unsupported(problem) is None
    projections = counted(monkeypatch, C.Constraints, "project_state")
    numpy_solves = counted(monkeypatch, C.Constraints, "_kkt")
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="reference")
    assert reference.status == "ok"
    python_projections = len(projections)
    if integrator == "semi_implicit_euler":
        assert python_projections >= ROWS // 2      # (it opens the loops every step)
    projections.clear()
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    assert projections == [] and numpy_solves == []
    for q, v in zip(result.Q, result.V):
        position, velocity = robot.closure_residual(q, v)
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    if python_projections == 0:
        np.testing.assert_array_equal(result.Q, reference.Q)
        np.testing.assert_array_equal(result.V, reference.V)
        return
    worst = max(sum(conditions(robot, q)) for q in reference.Q[::20])
    scale = max(1.0, np.abs(reference.V).max())
    bound = 64 * EPS * worst * scale * (len(tau) + 1)
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=bound)
    np.testing.assert_allclose(result.V, reference.V, rtol=0, atol=bound)
    print(f"{make.__name__} {integrator}: |dQ| {np.abs(result.Q - reference.Q).max():.2g}, "
          f"|dV| {np.abs(result.V - reference.V).max():.2g}, bound {bound:.2g}, "
          f"{python_projections} projections")


def test_projection_kernel_equals_project_state():
    """close_flexible_loops after a semi-implicit Euler step (loops open by ~1e-8) equals
    Constraints.project_state with robot.step's Euler stop, within 64 eps (cond(M) + cond(K))
    |v| (one projection); a closed state is left alone (0)."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, "semi_implicit_euler", steps=40)
    reference = robot.rollout(q0, v0, tau, DT, integrator="rk4", engine="reference")
    part = flexible_loop_arrays(robot)
    for q, v in zip(reference.Q[5::5], reference.V[5::5]):
        state = (q.copy(), v.copy())
        assert RFL.close_flexible_loops(part, state[0], state[1], C.PROJECTION_TOLERANCE,
                                        C.ASSEMBLY_TOLERANCE) == 0
        np.testing.assert_array_equal(state[0], q)
        qdd = robot.forward_dynamics(q, v, tau[0])
        v_open = v + 1e-3 * qdd
        q_open = robot.integrate(q, v_open, 1e-3)
        q_ref, v_ref = robot._constraints.project_state(q_open, v_open,
                                                        tolerance=C.EULER_CLOSING_TOLERANCE)
        q_new, v_new = q_open.copy(), v_open.copy()
        assert RFL.close_flexible_loops(part, q_new, v_new, C.PROJECTION_TOLERANCE,
                                        C.EULER_CLOSING_TOLERANCE) == 1
        cond_m, cond_k = conditions(robot, q_ref)
        bound = 64 * EPS * (cond_m + cond_k) * max(1.0, np.abs(v_open).max())
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=bound)
        np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=bound)


def test_batch_equals_single_rollouts():
    """Two members on two threads (each its own part: private workspaces) equal the single
    rollouts bit for bit."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, "semi_implicit_euler", steps=60)
    tau2 = tau.copy()
    tau2[:, 0] *= -1.5
    single = [robot.rollout(q0, v0, t, DT, integrator="semi_implicit_euler") for t in (tau, tau2)]
    batch = robot.rollout(np.stack([q0, q0]), np.stack([v0, v0]), np.stack([tau, tau2]), DT,
                          integrator="semi_implicit_euler", batch_threads=2)
    for i, one in enumerate(single):
        np.testing.assert_array_equal(batch.Q[i], one.Q)
        np.testing.assert_array_equal(batch.V[i], one.V)


@pytest.mark.parametrize("integrator, options, reason", [
    ("implicit_euler", {}, "implicit_euler integrator"),
    ("symplectic_euler", {}, "symplectic_euler integrator"),
    ("rk4", {"limits": True}, "position limits")])
def test_what_stays_in_python_says_why(integrator, options, reason):
    """The combinations the engine does not compile fall back to the reference engine, which
    still runs them (and says why when engine="compiled" is asked for)."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, integrator, steps=5)
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, None,
                             options.get("limits", False), 100.0, None, None)
    assert reason in unsupported(problem)
    assert robot.rollout(q0, v0, tau, DT, integrator=integrator, **options).status == "ok"
    with pytest.raises(ValueError, match=reason):
        robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled", **options)
