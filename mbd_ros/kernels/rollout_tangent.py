"""The tangent basis of closed loops and the implicit Euler step on it (robot.step's
``implicit_euler`` on a robot with loops of the recursive solver; kernels/rollout.py calls
`implicit_euler_loop_step`, robot.constraint_basis calls `tangent_basis` so that robot.step and
the compiled rollout step along the same directions).

Why one basis algorithm for both: the Simulator's implicit Euler (robot/integrators.py) takes its
Jacobians by forward differences (step 1e-7) along the columns of an orthonormal basis N of the
admissible velocities (null(G)). Mathematically the step does not depend on which basis, but the
differences' truncation error does (~1e-7 relative in the Jacobians): an SVD's basis (the sign or
rotation within the null space LAPACK returns) could not be reproduced to round-off by a
compiled step. `tangent_basis` defines N by a fixed algorithm, the Householder QR with column
pivoting of G^T (kernels/rollout_projection.py pivoted_qr_transposed, the rank rule |R_kk| >
RANK_TOLERANCE |R_00|): N = the last nv - r columns of Q = H_0 ... H_{r-1}, orthonormal and
orthogonal to the rows of G.

`implicit_euler_loop_step` is Simulator._implicit_euler with that N (A_q N, A_v N column by
column, s = N^T v, the m x m system, v+ and q+), with the elementwise operations in the
Simulator's order; its products and the solve are plain sums and kernels/rollout_implicit.py's
unblocked LU where numpy uses BLAS and LAPACK: round-off apart, as on trees.

With prescribed joints (robot.step(..., prescribed=) with implicit_euler) the Simulator does the
same on the same N = null(G(q)) of every dof (robot.constraint_basis does not know the prescribed
joints: their columns' components are differenced too), but each evaluation f is the hybrid
dynamics of robot/prescribed.py `solve` with the prescribed accelerations at the step's start
time t (Simulator._acceleration at t for every column): kernels/rollout_loop_prescribed.py
loop_prescribed_forward_dynamics at the table's FIRST_STAGE sample. The Simulator then places
the prescribed joints on their trajectories (the caller, place_prescribed) and robot.step
projects holding them (the caller, close_loops_holding).
"""
import numpy as np
from numba import njit

from .closed_loop import cut_rows, loop_jacobian
from .kinematics import forward_kinematics
from .rollout_implicit import loop_forward_dynamics as _loop_dynamics
from .rollout_loop_prescribed import loop_prescribed_forward_dynamics
from .rollout_prescribed import FIRST_STAGE
from .rollout_implicit import (FD_STEP, R_LOADED, R_P, R_PIV, R_QS, R_S, R_T, R_TAU, R_U, R_V2,
                               R_Z, SINGULAR, X_AQ, X_AV, X_LHS, X_MASS, integrate_state,
                               lu_solve)
from .rollout_projection import pivoted_qr_transposed


@njit(cache=True, nogil=True)
def tangent_basis(jacobian, m, nv, t, rdiag, hv0, beta, perm, out):
    """out[:, :k] = N (nv, k), k = nv - rank(G), for G = jacobian[:m, :nv] (module docstring).
    Scratch: t (>= nv x m), rdiag, hv0, beta (>= min(m, nv)), perm (>= m) int64. Returns k."""
    rank = pivoted_qr_transposed(jacobian, m, nv, t, rdiag, hv0, beta, perm) if m else 0
    k = nv - rank
    for col in range(k):
        for i in range(nv):
            out[i, col] = 1.0 if i == rank + col else 0.0
        for h in range(rank - 1, -1, -1):          # Q e = H_0 ... H_{r-1} e
            s = hv0[h] * out[h, col]
            for i in range(h + 1, nv):
                s += t[i, h] * out[i, col]
            s *= beta[h]
            out[h, col] -= s * hv0[h]
            for i in range(h + 1, nv):
                out[i, col] -= s * t[i, h]
    return k


def null_space_basis(jacobian):
    """N (nv, k): `tangent_basis` of G (m, nv) (allocates: for robot.constraint_basis)."""
    jacobian = np.ascontiguousarray(jacobian, dtype=float)
    m, nv = jacobian.shape
    p = max(m, nv, 1)
    t = np.zeros((p, p))
    scratch = np.zeros((3, p))
    perm = np.zeros(p, dtype=np.int64)
    out = np.zeros((nv, nv))
    k = tangent_basis(jacobian, m, nv, t, scratch[0], scratch[1], scratch[2], perm, out)
    return out[:, :k].copy()


@njit(cache=True, nogil=True, inline="always")
def tangent_implicit_update(basis, k, a1, a_v, a_q, v, h, lhs, s, z, t, sz, pivots, v_next):
    """The reduced system of Simulator._implicit_euler once A_q N and A_v N (columns [:k] of
    a_q, a_v (nv, >= k)) are known, N = basis[:, :k], a1 = f(q, v, tau) (nv,): v_next (nv,) =
    v+ (the step's q+ = q (+) v+ h is the caller's). lhs (>= k, >= k), s, z, t, sz (>= nv,) and
    pivots (>= k,) are scratch. Shared by the closed loops' step (N from G(q)) and the mimic
    couplings' (N constant: kernels/rollout_mimic_implicit.py). Returns 0 or SINGULAR."""
    nv = v.shape[0]
    # s = N^T v; lhs = eye - h (N^T A_v) - h h (N^T A_q); rhs = h (N^T a1) + h h (N^T (A_q s))
    for j in range(k):
        acc = 0.0
        for i in range(nv):
            acc += basis[i, j] * v[i]
        s[j] = acc
    hh = h * h
    for r in range(k):
        for c in range(k):
            x = 0.0
            y = 0.0
            for i in range(nv):
                x += basis[i, r] * a_v[i, c]
                y += basis[i, r] * a_q[i, c]
            lhs[r, c] = ((1.0 if r == c else 0.0) - h * x) - hh * y
    for i in range(nv):                 # t = A_q s
        acc = 0.0
        for j in range(k):
            acc += a_q[i, j] * s[j]
        t[i] = acc
    for r in range(k):
        x = 0.0
        y = 0.0
        for i in range(nv):
            x += basis[i, r] * a1[i]
            y += basis[i, r] * t[i]
        z[r] = h * x + hh * y
    if lu_solve(lhs[:k, :k], z[:k], pivots[:k]):
        return SINGULAR
    # v+ = v + h (a1 + h (A_q (s + z)) + A_v z);  q+ = q (+) v+ h
    for j in range(k):
        sz[j] = s[j] + z[j]
    for i in range(nv):
        x = 0.0
        y = 0.0
        for j in range(k):
            x += a_q[i, j] * sz[j]
            y += a_v[i, j] * z[j]
        v_next[i] = v[i] + h * ((a1[i] + h * x) + y)
    return 0


@njit(cache=True, nogil=True, inline="always")
def _column_dynamics(fd_address, bound, dims, forces, loops, loaded, holding, q, v, tau, out,
                     tau_loaded):
    """out (nv,) = f(q, v, tau) for one column of the forward differences: with prescribed joints
    held (holding: (prescribed tuple, KKT workspace, table row)) the hybrid KKT dynamics of
    kernels/rollout_loop_prescribed.py at the step's first sample, else the loop solver's
    (holding None: numba compiles that case alone). Returns the dynamics' status."""
    if holding is not None:
        return loop_prescribed_forward_dynamics(loops, forces, loaded, holding[1], holding[0],
                                                holding[2], FIRST_STAGE, q, v, tau, out)
    return _loop_dynamics(fd_address, bound, dims, forces, loops, loaded, q, v, tau, out,
                          tau_loaded)


@njit(cache=True, nogil=True)
def implicit_euler_loop_step(fd_address, bound, dims, forces, loaded, loops, basis_work,
                             body_int, manifold, nq_joints, nv_joints, q, v, tau, a1, h, rows,
                             mats, q_next, v_next, holding):
    """One linearly implicit Euler step of a closed-loop robot (Simulator._implicit_euler with
    N = tangent_basis of G(q)): (q, v) -> (q_next, v_next) for the held tau (nv,), a1 = f(q, v,
    tau) given (the closed-loop entry at fd_address), step h (s). loops: kernels/rollout.py's
    loops tuple (its kinematics workspace, cut rows and G are written); basis_work: a loop
    workspace with mats (>= 1, p, p), vec (>= 3, p), perm (p,) as scratch (p = max(nv, b));
    rows, mats: kernels/rollout_implicit.py's workspace. holding: None, or with prescribed
    joints (prescribed tuple, loop_prescribed_workspace, table row n): every evaluation the
    hybrid KKT dynamics at sample (n, FIRST_STAGE) (module docstring; a1 must be that too).
    (None prunes its branches at compile time: the loops' plain step compiles as without it.)
    Returns 0, the forward dynamics' status, or SINGULAR."""
    body_float, work, cut_int, cut_float, loop_float, jacobian = loops[1:7]
    nq, nv, m = q.shape[0], v.shape[0], jacobian.shape[0]
    qmats, qvec, perm = basis_work[2], basis_work[3], basis_work[4]
    v2, qs, p = rows[R_V2, :nv], rows[R_QS, :nq], rows[R_P, :nv]
    s, z, t, direction = rows[R_S, :nv], rows[R_Z, :nv], rows[R_T, :nv], rows[R_U, :nv]
    sz, tau_loaded = rows[R_LOADED, :nv], rows[R_TAU, :nv]
    a_q, a_v, lhs, basis = mats[X_AQ], mats[X_AV], mats[X_LHS], mats[X_MASS]
    # N at q: G from the kinematics (positions only), the cut rows and the loop Jacobian
    forward_kinematics(body_int, body_float, work, q, v[:0])
    cut_rows(cut_int, cut_float, work, loop_float)
    loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
    k = tangent_basis(jacobian, m, nv, qmats[0], qvec[0], qvec[1], qvec[2], perm, basis)
    for j in range(k):
        for i in range(nv):
            direction[i] = basis[i, j]
        # d f / d v along n_j: v2 = n_j 1e-7 + v
        for i in range(nv):
            v2[i] = direction[i] * FD_STEP + v[i]
        status = _column_dynamics(fd_address, bound, dims, forces, loops, loaded, holding, q,
                                  v2, tau, p, tau_loaded)
        if status:
            return status
        for i in range(nv):
            a_v[i, j] = (p[i] - a1[i]) / FD_STEP
        # d f / d q along n_j: q (+) n_j 1e-7
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, direction, FD_STEP, qs)
        status = _column_dynamics(fd_address, bound, dims, forces, loops, loaded, holding, qs,
                                  v, tau, p, tau_loaded)
        if status:
            return status
        for i in range(nv):
            a_q[i, j] = (p[i] - a1[i]) / FD_STEP
    if tangent_implicit_update(basis, k, a1, a_v, a_q, v, h, lhs, s, z, t, sz,
                               rows[R_PIV], v_next):
        return SINGULAR
    integrate_state(body_int, manifold, nq_joints, nv_joints, q, v_next, h, q_next)
    return 0
