"""implicit_euler and symplectic_euler on closed loops in the compiled rollout engine
(kernels/rollout_tangent.py: implicit Euler on the tangent basis; kernels/rollout_implicit.py's
symplectic step through the recursive solver's C entry, or with force elements the solver on the
loaded workspace; then robot.step's projection in numba).

Reference: robot.step from the same state, row by row (as test/test_rollout_implicit.py does on
trees, and for the same reason: the dense algebra differs from numpy's BLAS / LAPACK by
round-off, which the forward-difference Jacobians and the fixed-point iteration amplify along a
trajectory). The bound of one row is that of the step without the projection
(robot.step(..., project=False)): test_rollout_implicit.py's symplectic_bound, and for implicit
Euler `implicit_loop_bound` below (its products and solve on the basis N), plus the
projection's round-off (test_rollout_loops.py: 64 eps, times |v| for the velocities); the loops
stay closed (the projection's own invariant). The basis itself: orthonormal, G N = 0.

implicit Euler on N (nv x k), s = N^T v, L = 1 - h N^T A_v N - h^2 N^T A_q N, B_q = A_q N,
B_v = A_v N (forward differences along N's columns, the same bits in both: same directions):
  d_s = tol(N^T v); d_L = h tol(N^T B_v) + h^2 tol(N^T B_q);
  d_rhs = h tol(N^T a1) + h^2 (tol(B_q s) + |B_q| d_s + tol(N^T (B_q s)));
  d_z = solve_tol(L, z) + |L^-1| (d_rhs + d_L |z|);
  d_v+ = h (h (tol(B_q (s + z)) + |B_q| (d_s + d_z)) + tol(B_v z) + |B_v| d_z) + 4 eps |v+|;
  d_q+ = h d_v+ + 4 eps |q+|.
"""
from __future__ import annotations

import numpy as np
import pytest

from mbd_ros.robot import constraints as C

from conftest import EPS, roundoff_tol, solve_tol
from loop_robots import double_wishbone, fourbar
from test_rollout_implicit import FD_STEP, symplectic_bound

DT = 1e-3


def _norm(a):
    return float(np.linalg.norm(np.atleast_2d(a), 2))


def implicit_loop_bound(robot, q, v, tau, h, q_next, v_next):
    """(d_q, d_v): the round-off bound of one implicit_euler step on the tangent basis (module
    docstring)."""
    n = robot.nv
    basis = robot.constraint_basis(q)
    k = basis.shape[1]
    a1 = robot.forward_dynamics(q, v, tau)
    b_q, b_v = np.empty((n, k)), np.empty((n, k))
    for j in range(k):
        d = np.ascontiguousarray(basis[:, j])
        b_v[:, j] = (robot.forward_dynamics(q, d * FD_STEP + v, tau) - a1) / FD_STEP
        b_q[:, j] = (robot.forward_dynamics(robot.integrate(q, d, FD_STEP), v, tau) - a1) \
            / FD_STEP
    s = basis.T @ v
    lhs = np.eye(k) - h * (basis.T @ b_v) - h * h * (basis.T @ b_q)
    z = np.linalg.solve(lhs, h * (basis.T @ a1) + h * h * (basis.T @ (b_q @ s)))
    d_s = roundoff_tol(n, (basis.T, v))
    d_lhs = h * roundoff_tol(n, (basis.T, b_v)) + h * h * roundoff_tol(n, (basis.T, b_q))
    d_rhs = h * roundoff_tol(n, (basis.T, a1)) + h * h * (
        roundoff_tol(n, (b_q, s)) + _norm(b_q) * d_s + roundoff_tol(n, (basis.T, b_q @ s)))
    d_z = solve_tol(lhs, z) + _norm(np.linalg.inv(lhs)) * (d_rhs + d_lhs * np.linalg.norm(z))
    d_v = h * (h * (roundoff_tol(n, (b_q, s + z)) + _norm(b_q) * (d_s + d_z))
               + roundoff_tol(n, (b_v, z)) + _norm(b_v) * d_z) + 4 * EPS * _norm(v_next)
    return h * d_v + 4 * EPS * _norm(q_next), d_v


BOUNDS = {"implicit_euler": implicit_loop_bound, "symplectic_euler": symplectic_bound}


def test_the_tangent_basis_is_orthonormal_and_admissible():
    robot = fourbar()
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = robot.assemble(robot.integrate(robot.neutral(), rng.uniform(-0.5, 0.5, robot.nv),
                                           1.0))
        basis = robot.constraint_basis(q)
        jacobian = robot.loop_jacobian(q)
        assert basis.shape == (robot.nv, robot.nv - np.linalg.matrix_rank(jacobian))
        assert np.abs(jacobian @ basis).max() < 64 * EPS * np.abs(jacobian).max()
        np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), rtol=0,
                                   atol=64 * EPS)


@pytest.mark.parametrize("name, integrator", [("fourbar", "implicit_euler"),
                                              ("fourbar", "symplectic_euler"),
                                              ("double_wishbone", "implicit_euler"),
                                              ("double_wishbone", "symplectic_euler")])
def test_implicit_integrators_on_loops_run_compiled_row_by_row_equal_to_step(name, integrator,
                                                                            monkeypatch):
    """(The double wishbone with its strut, a force element: the loaded paths, the loop solver
    on the loaded workspace.)"""
    robot = fourbar() if name == "fourbar" else double_wishbone()
    rng = np.random.default_rng(9)
    q0 = robot.assemble(robot.neutral())
    # the wishbone's strut damps it hard: kicked harder so that it moves and opens the loop
    speed, torque = (0.3, 0.5) if name == "fourbar" else (30.0, 50.0)
    v0 = robot.project_velocity(q0, speed * rng.standard_normal(robot.nv))
    steps = 200
    tau = torque * rng.standard_normal((steps, robot.nv))
    calls = []
    python_projection = C.Constraints.project_state

    def counted(self, *args, **kwargs):
        calls.append(1)
        return python_projection(self, *args, **kwargs)

    monkeypatch.setattr(C.Constraints, "project_state", counted)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok"
    assert calls == []          # projected in numba
    Q, V = result
    start = robot.time
    for k in range(steps):
        q_ref, v_ref = robot.step(Q[k], V[k], tau[k], DT, integrator)
        q_open, v_open = robot.step(Q[k], V[k], tau[k], DT, integrator, project=False)
        d_q, d_v = BOUNDS[integrator](robot, Q[k], V[k], tau[k], DT, q_open, v_open)
        d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
        d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
        assert np.abs(Q[k + 1] - q_ref).max() <= d_q, k
        assert np.abs(V[k + 1] - v_ref).max() <= d_v, k
        position, velocity = robot.closure_residual(Q[k + 1], V[k + 1])
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    robot.time = start
    assert np.abs(V).max() > 1.0   # it moved
    assert len(calls) > 0          # (robot.step's projections: the loop was opened and closed)
