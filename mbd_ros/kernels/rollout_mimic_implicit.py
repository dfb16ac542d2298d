"""robot.step's ``implicit_euler`` on a tree with mimic couplings in the compiled rollouts
(kernels/rollout.py): Simulator._implicit_euler (robot/integrators.py) with N =
robot.constraint_basis, the forward dynamics the couplings' minimal-coordinate form
(kernels/rollout_mimic.py, through kernels/rollout_special.py's dispatcher).

A coupling q_m = r q_l + o is linear, so its Jacobian G (rows e_m - r e_l) does not depend on q
and neither does N (kernels/rollout_tangent.py tangent_basis of G: the last columns of the
pivoted Householder QR of G^T, a fixed algorithm). robot/rollout_mimic.py computes N once, by
robot.constraint_basis itself, and the kernel steps along exactly the Simulator's directions:
A_q N, A_v N by forward differences (step 1e-7) column by column, s = N^T v, the k x k system

    (1 - h N^T A_v - h^2 N^T A_q) z = h N^T a1 + h^2 N^T (A_q s),
    v+ = v + h (a1 + h A_q (s + z) + A_v z),   q+ = q (+) v+ h,

with the elementwise operations in the Simulator's order; its products and solve are plain sums
and kernels/rollout_implicit.py's unblocked LU where numpy uses BLAS and LAPACK: round-off apart,
as on trees and closed loops (kernels/rollout_tangent.py, the same step with N from G(q)).
symplectic_euler needs no basis: kernels/rollout_implicit.py's step with the mimic dynamics.
"""
from numba import njit

from .rollout_implicit import (FD_STEP, R_LOADED, R_P, R_PIV, R_QS, R_S, R_T, R_U, R_V2, R_Z,
                               SINGULAR, X_AQ, X_AV, X_LHS, integrate_state)
from .rollout_mimic import M_BASIS
from .rollout_prescribed import FIRST_STAGE
from .rollout_special import special_forward_dynamics
from .rollout_tangent import tangent_implicit_update


@njit(cache=True, nogil=True)
def mimic_implicit_euler_step(entries, bound, dims, forces, loaded, parts, n, body_int, manifold,
                              nq_joints, nv_joints, q, v, tau, a1, h, rows, mats, q_next,
                              v_next):
    """One linearly implicit Euler step of a tree with mimic couplings (module docstring):
    (q (nq,), v (nv,)) -> (q_next, v_next) for the held tau (nv,), a1 = f(q, v, tau) (nv,)
    given, step h (s). parts: kernels/rollout_special.py's tuple (its mimic tuple holds N
    (nv, k) at M_BASIS; n the prescribed table row, unused by the mimic dynamics); rows
    (IMPLICIT_ROWS, >= max(nq, nv)), mats (IMPLICIT_MATS, nv, nv): kernels/rollout_implicit.py's
    workspace. Returns 0, the forward dynamics' status, or SINGULAR."""
    basis = parts[1][M_BASIS]
    nq, nv, k = q.shape[0], v.shape[0], basis.shape[1]
    v2, qs, p = rows[R_V2, :nv], rows[R_QS, :nq], rows[R_P, :nv]
    s, z, t, direction = rows[R_S, :nv], rows[R_Z, :nv], rows[R_T, :nv], rows[R_U, :nv]
    sz = rows[R_LOADED, :nv]
    a_q, a_v, lhs = mats[X_AQ], mats[X_AV], mats[X_LHS]
    for j in range(k):
        for i in range(nv):
            direction[i] = basis[i, j]
        # d f / d v along n_j: v2 = n_j 1e-7 + v
        for i in range(nv):
            v2[i] = direction[i] * FD_STEP + v[i]
        status = special_forward_dynamics(entries, bound, dims, forces, loaded, parts, n,
                                          FIRST_STAGE, q, v2, tau, p)
        if status:
            return status
        for i in range(nv):
            a_v[i, j] = (p[i] - a1[i]) / FD_STEP
        # d f / d q along n_j: q (+) n_j 1e-7
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, direction, FD_STEP, qs)
        status = special_forward_dynamics(entries, bound, dims, forces, loaded, parts, n,
                                          FIRST_STAGE, qs, v, tau, p)
        if status:
            return status
        for i in range(nv):
            a_q[i, j] = (p[i] - a1[i]) / FD_STEP
    if tangent_implicit_update(basis, k, a1, a_v, a_q, v, h, lhs, s, z, t, sz,
                               rows[R_PIV], v_next):
        return SINGULAR
    integrate_state(body_int, manifold, nq_joints, nv_joints, q, v_next, h, q_next)
    return 0
