"""Forward dynamics of closed loops on a flexible tree, compiled: the dense dependent-coordinate
formalism with multipliers (docs/theory.md §5, seed [003] eqs. 7-11) that robot/constraints.py
`_kkt` runs in numpy, in one call without allocation (robot/flexible_loops.py
FlexibleLoopKinematics.forward_dynamics calls it).

With M the flexible recursion's mass matrix, h = ID(q, v, 0) on the loaded workspace (the call's
loads, the elastic and passive forces), and the loop rows G qdd + gamma = 0 of the cut frames at
deformed points (FlexibleLoopKinematics.state and .bias):

    g, G = G_A J_A + G_B J_B     the cut frames' residuals and twist Jacobians (their own axes),
    gamma = G_A a_A + G_B a_B + gamma2,
    a_e = d/dt (J_e(q) v)|qdd=0  by a central difference along q (+) eps v, eps = 1e-6 / max(1,
                                 |v|_inf) (error ~eps^2 |v|^3, ~1e-12 relative: the module
                                 docstring of robot/flexible_loops.py),

the accelerations are

    qdd = M^-1 (tau - h) + W lambda,    W = M^-1 G^T,
    (G W) lambda = -gamma - 2 alpha G v - beta^2 g - G M^-1 (tau - h),

lambda the minimum-norm solution (numpy's lstsq with rcond RANK_TOLERANCE in `_kkt`; here the
pivoted Householder QR of kernels/rollout_loop_prescribed.py consistent_min_norm_solve, round-off
times cond(G W) like lstsq, and min_norm_solve's least squares when the system is not
consistent). M by Cholesky. The two agree to round-off times cond (test/test_flexible_loops.py).

The cut frames' twists at (q, v) are J_e v (linear in v) rather than a kinematics pass with v:
the same numbers to round-off, one pass fewer.

Workspace (`flexible_loop_workspace`, built once per robot and thread): mass (nv, nv) (M, then
its Cholesky factor), w (nv, b) (W), kmat (b, b) (G W), mats (2, p, p) (the QR's t, the normal
matrix of the least-squares fallback), vec (N_ROWS, p), perm (p,) int64, poses (2 n_cuts, 18),
rows (b, 14), twists (2, 2 n_cuts, 6, 1), stage (nq,); p = max(nq, nv, b, 1).
"""
import math

import numpy as np
from numba import njit

from .closure_kinematics import cut_kinematics
from .configuration import integrate
from .flexible_dynamics import inverse_dynamics, mass_matrix
from .flexible_forces import ES_R, ES_X
from .flexible_frames import frame_jacobians, frame_states
from .rollout_loop_prescribed import consistent_min_norm_solve
from .rollout_projection import min_norm_solve

# rows of the per-cut scratch `rows` (b, ROW_WIDTH): cut_kinematics' columns
ROW_RES, ROW_BIAS, ROW_JAC_A, ROW_JAC_B = 0, 1, 2, 8
ROW_WIDTH = 14
# poses (2 n_cuts, 18): the world rotation (9), origin (3), own-axes twist (6) of each cut frame
POSE_ROT, POSE_POS, POSE_VEL = 0, 9, 12
# matrices of mats (2, p, p)
F_T, F_NORMAL = range(2)
# rows of vec (N_ROWS, p)
(F_BIAS, F_QDD0, F_GV, F_GAMMA, F_RHS, F_LAM, F_RDIAG, F_HV0, F_BETA, F_C, F_Z, F_ZERO,
 F_COLUMN, F_STEP, F_QN, F_G) = range(16)
N_ROWS = 16
# statuses beyond the tree kernels' (robot._raise names them)
STATUS_NOT_POSITIVE_DEFINITE = 93   # M is not positive definite (a joint moves no mass)
STATUS_SOLVE_FAILED = 94            # the multipliers' solve failed (non-finite rows)
# the central difference of the cut frames' twists (robot/flexible_loops.py bias)
DIFFERENCE_STEP = 1e-6


def flexible_loop_workspace(nq, nv, n_rows, n_cuts):
    """The workspace tuple of `flexible_loop_forward_dynamics` (module docstring)."""
    p = max(nq, nv, n_rows, 1)
    return (np.zeros((nv, nv)), np.zeros((nv, n_rows)), np.zeros((n_rows, n_rows)),
            np.zeros((2, p, p)), np.zeros((N_ROWS, p)), np.zeros(p, dtype=np.int64),
            np.zeros((2 * n_cuts, 18)), np.zeros((max(n_rows, 1), ROW_WIDTH)),
            np.zeros((2, 2 * n_cuts, 6, 1)), np.zeros(nq))


@njit(cache=True, inline="always")
def integrate_flexible(body_int, n_joint_q, n_joint_v, q, v, dt, out):
    """q (+) v dt on a flexible tree (robot/flexible_tree.py integrate): the joints as the rigid
    tree integrates them, the elastic coordinates (after them) as a vector space."""
    integrate(body_int, q[:n_joint_q], v[:n_joint_v], dt, out[:n_joint_q])
    k = n_joint_v
    for i in range(n_joint_q, q.shape[0]):
        out[i] = q[i] + v[k] * dt
        k += 1


@njit(cache=True, inline="always")
def _copy_pose(end_state, e, poses):
    """Cut frame e's world rotation and origin from end_state into its row of poses."""
    for k in range(9):
        poses[e, POSE_ROT + k] = end_state[e, ES_R + k]
    for k in range(3):
        poses[e, POSE_POS + k] = end_state[e, ES_X + k]


@njit(cache=True)
def flexible_loop_state(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv):
    """g (b,) into residual, G (b, nv) into jacobian and G v (b,) into gv at (q, v)
    (FlexibleLoopKinematics.state); cut_kinematics' rows (gamma2 included) stay in the
    workspace's `rows`. Returns max |g|.

    # Model:    tree = (fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork): the
    #           flexible model's arrays, the rigid joints' sizes, the flexible workspace
    #           (kinematics written); ends = (end_int, end_float, end_data, end_state,
    #           frame_jac (2 n_cuts, 6, nv), unit (nv,)): cut frame 2 s (parent side) and
    #           2 s + 1 (child side) of cut s, their poses and Jacobians (written);
    #           cut_int (n_cuts, 2) int64: code, first row; cut_data (n_cuts, CUT_ROW_WIDTH)
    # Data:     workspace: flexible_loop_workspace(...)
    """
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    end_int, end_float, end_data, end_state, frame_jac, unit = ends
    poses, rows = workspace[6], workspace[7]
    nv = v.shape[0]
    n_rows = jacobian.shape[0]
    # frame Jacobians at q (the poses stay in end_state), the twists J_e v
    frame_jacobians(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, unit,
                    end_state, frame_jac)
    for e in range(end_int.shape[0]):
        _copy_pose(end_state, e, poses)
        for r in range(6):
            s = 0.0
            for j in range(nv):
                s += frame_jac[e, r, j] * v[j]
            poses[e, POSE_VEL + r] = s
    largest = 0.0
    for s in range(cut_int.shape[0]):
        cut_kinematics(cut_int[s, 0], cut_data, s, poses, 2 * s, 2 * s + 1, POSE_ROT, POSE_POS,
                       POSE_VEL, rows, cut_int[s, 1], ROW_RES, ROW_BIAS, ROW_JAC_A, ROW_JAC_B)
        end_a, end_b = 2 * s, 2 * s + 1
        r1 = cut_int[s + 1, 1] if s + 1 < cut_int.shape[0] else n_rows
        for r in range(cut_int[s, 1], r1):
            residual[r] = rows[r, ROW_RES]
            largest = max(largest, abs(residual[r]))
            for j in range(nv):
                x = 0.0
                for c in range(6):
                    x += (rows[r, ROW_JAC_A + c] * frame_jac[end_a, c, j]
                          + rows[r, ROW_JAC_B + c] * frame_jac[end_b, c, j])
                jacobian[r, j] = x
            x = 0.0
            for j in range(nv):
                x += jacobian[r, j] * v[j]
            gv[r] = x
    return largest


@njit(cache=True)
def flexible_loop_residuals(tree, ends, cut_int, cut_data, workspace, q, v):
    """(max |g|, max |G v|) at (q, v) (robot.closure_residual) from one kinematics pass with v:
    G v = G_A T_A + G_B T_B with the cut frames' twists T (frame_states), without the frame
    Jacobians (nv passes) that flexible_loop_state forms. The arguments as its."""
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    end_int, end_float, end_data, end_state = ends[:4]
    poses, rows, twists = workspace[6], workspace[7], workspace[8]
    frame_states(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, v,
                 end_state, twists[0])
    for e in range(end_int.shape[0]):
        _copy_pose(end_state, e, poses)
        for r in range(6):
            poses[e, POSE_VEL + r] = twists[0, e, r, 0]
    position = 0.0
    velocity = 0.0
    n_cuts = cut_int.shape[0]
    for s in range(n_cuts):
        n = cut_kinematics(cut_int[s, 0], cut_data, s, poses, 2 * s, 2 * s + 1, POSE_ROT,
                           POSE_POS, POSE_VEL, rows, cut_int[s, 1], ROW_RES, ROW_BIAS,
                           ROW_JAC_A, ROW_JAC_B)
        for r in range(cut_int[s, 1], cut_int[s, 1] + n):
            position = max(position, abs(rows[r, ROW_RES]))
            x = 0.0
            for c in range(6):
                x += (rows[r, ROW_JAC_A + c] * poses[2 * s, POSE_VEL + c]
                      + rows[r, ROW_JAC_B + c] * poses[2 * s + 1, POSE_VEL + c])
            velocity = max(velocity, abs(x))
    return position, velocity


@njit(cache=True)
def flexible_loop_rows(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv,
                       gamma):
    """flexible_loop_state's g, G, G v and gamma (b,) (without the Baumgarte terms) at (q, v)
    (FlexibleLoopKinematics.bias): a_e by a central difference of the twists J_e(q) v along
    q (+) eps v. The arguments as flexible_loop_state's."""
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    end_int, end_float, end_data, end_state = ends[:4]
    rows, twists, stage = workspace[7], workspace[8], workspace[9]
    nv = v.shape[0]
    n_rows = jacobian.shape[0]
    largest = 1.0
    for i in range(nv):
        largest = max(largest, abs(v[i]))
    eps = DIFFERENCE_STEP / largest
    for side in range(2):
        integrate_flexible(body_int, joint_nq, joint_nv, q, v, eps if side == 0 else -eps,
                            stage)
        frame_states(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, stage, v,
                     end_state, twists[side])
    flexible_loop_state(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv)
    inv_step = 1.0 / (2.0 * eps)
    for s in range(cut_int.shape[0]):
        end_a, end_b = 2 * s, 2 * s + 1
        r1 = cut_int[s + 1, 1] if s + 1 < cut_int.shape[0] else n_rows
        for r in range(cut_int[s, 1], r1):
            acc = 0.0
            for c in range(6):
                acc += rows[r, ROW_JAC_A + c] * (twists[0, end_a, c, 0] - twists[1, end_a, c, 0])
                acc += rows[r, ROW_JAC_B + c] * (twists[0, end_b, c, 0] - twists[1, end_b, c, 0])
            gamma[r] = acc * inv_step + rows[r, ROW_BIAS]


@njit(cache=True)
def flexible_loop_forward_dynamics(tree, ends, cut_int, cut_data, workspace, q, v, tau, alpha,
                                   beta, residual, jacobian, qdd_out, lam_out, info):
    """qdd_out (nv,): the constrained accelerations of a flexible tree with closed loops at
    (q, v) for tau (nv,) (module docstring), the multipliers in lam_out (b,), g in residual (b,),
    G in jacobian (b, nv); alpha, beta: Baumgarte gains. info (2,) int64: [status, rank of G W].
    Returns the status: 0, the tree kernels' (a non-finite input, a bad quaternion),
    STATUS_NOT_POSITIVE_DEFINITE or STATUS_SOLVE_FAILED (qdd_out then not set). The arguments as
    flexible_loop_rows'."""
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    unit = ends[5]
    chol, w, kmat, mats, vec, perm = workspace[:6]
    nv = v.shape[0]
    b = jacobian.shape[0]
    bias, qdd0, zero = vec[F_BIAS, :nv], vec[F_QDD0, :nv], vec[F_ZERO, :nv]
    gv, gamma, rhs, lam = vec[F_GV, :b], vec[F_GAMMA, :b], vec[F_RHS, :b], vec[F_LAM, :b]
    info[1] = 0
    # M and h = ID(q, v, 0) on the loaded workspace (Constraints._tree_terms)
    for i in range(nv):
        zero[i] = 0.0
    status = inverse_dynamics(fint, ffloat, fdata, work, fwork, q, v, zero, bias)
    if status == 0:
        status = mass_matrix(fint, ffloat, fdata, work, fwork, q, unit, vec[F_COLUMN, :nv],
                             chol)
    info[0] = status
    if status != 0:
        return status
    flexible_loop_rows(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv,
                       gamma)
    # M = L L^T in place (lower triangle; M is symmetric)
    if not loop_inertia(chol, nv, jacobian, b, w, kmat):
        info[0] = STATUS_NOT_POSITIVE_DEFINITE
        return STATUS_NOT_POSITIVE_DEFINITE
    # qdd0 = M^-1 (tau - h), the right side of (G W) lambda = rhs
    for i in range(nv):
        qdd0[i] = tau[i] - bias[i]
    _cholesky_solve(chol, nv, qdd0)
    for r in range(b):
        s = 0.0
        for j in range(nv):
            s += jacobian[r, j] * qdd0[j]
        rhs[r] = -gamma[r] - 2.0 * alpha * gv[r] - beta * beta * residual[r] - s
    t = mats[F_T]
    rdiag, hv0, beta_h, cvec, z = vec[F_RDIAG], vec[F_HV0], vec[F_BETA], vec[F_C], vec[F_Z]
    rank = consistent_min_norm_solve(kmat, b, b, rhs, lam, t, rdiag, hv0, beta_h, cvec, perm)
    if rank < 0:   # inconsistent rows: lstsq's least squares (kmat intact: the QR ran on t)
        rank = min_norm_solve(kmat, b, b, rhs, lam, t, mats[F_NORMAL], rdiag, hv0, beta_h, cvec,
                              z, perm)
        if rank < 0:
            info[0] = STATUS_SOLVE_FAILED
            return STATUS_SOLVE_FAILED
    info[1] = rank
    for i in range(nv):
        s = qdd0[i]
        for r in range(b):
            s += w[i, r] * lam[r]
        qdd_out[i] = s
    for r in range(b):
        lam_out[r] = lam[r]
    for i in range(nv):
        if not math.isfinite(qdd_out[i]):
            info[0] = STATUS_SOLVE_FAILED
            return STATUS_SOLVE_FAILED
    return 0


@njit(cache=True, inline="always")
def loop_inertia(chol, nv, jacobian, b, w, kmat):
    """M = L L^T in place (M in chol on entry, L in its lower triangle after), W = M^-1 G^T
    (nv, b) and K = G W (b, b) for G = jacobian (b, nv). Returns False (W, K not set) when M
    is not positive definite. (The forward dynamics and robot.step's velocity projection,
    kernels/rollout_flexible_loops.py.)"""
    for j in range(nv):
        d = chol[j, j]
        for k in range(j):
            d -= chol[j, k] * chol[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        chol[j, j] = d
        for i in range(j + 1, nv):
            s = chol[i, j]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / d
    for r in range(b):                      # column r of W: row r of G
        for i in range(nv):
            w[i, r] = jacobian[r, i]
        _cholesky_solve_column(chol, nv, w, r)
    for r in range(b):
        for c in range(b):
            s = 0.0
            for j in range(nv):
                s += jacobian[r, j] * w[j, c]
            kmat[r, c] = s
    return True


@njit(cache=True, inline="always")
def _cholesky_solve(chol, n, x):
    """x (n,) <- M^-1 x with M = L L^T, L the lower triangle of chol."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= chol[i, k] * x[k]
        x[i] = s / chol[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= chol[k, i] * x[k]
        x[i] = s / chol[i, i]


@njit(cache=True, inline="always")
def _cholesky_solve_column(chol, n, x, c):
    """Column c of x (n, >c) <- M^-1 x[:, c], M = L L^T as _cholesky_solve."""
    for i in range(n):
        s = x[i, c]
        for k in range(i):
            s -= chol[i, k] * x[k, c]
        x[i, c] = s / chol[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i, c]
        for k in range(i + 1, n):
            s -= chol[k, i] * x[k, c]
        x[i, c] = s / chol[i, i]
