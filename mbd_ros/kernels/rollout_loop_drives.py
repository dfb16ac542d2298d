"""The drives' compensation on closed loops, compiled (robot.rollout(drives=...) on a robot with
loops of the recursive solver; kernels/rollout.py calls `loop_drive_bias` at the start of each
row, robot/rollout_compiled.py builds the workspace, one per thread).

The Plant's drives in POSITION mode add b(q, v) + K (q_ref - q) + D (v_ref - v) (kernels/plant.py
drive_torques). On a closed-loop robot b is the loop-consistent compensation the Plant computes
(mbd_ros/simulation/plant.py Plant._compensation, robot/rollout.py _compensation):

1. qdd0 = project_acceleration(q, v, 0) (robot/constraints.py): the independent coordinates'
   accelerations 0, the dependent ones from G qdd + gamma = 0, qdd0[dep] = -G_dep^+ gamma
   (least squares), with (ind, dep) the robot's coordinate partition (docs/theory.md §4) and
   gamma = G_s a(qdd = 0) + gamma''_s (Loops.bias: the RNEA's body accelerations at qdd = 0 and
   the cut rows' velocity terms);
2. b = robot.inverse_dynamics(q, v, qdd0) (Constraints.actuation): tau_tree = ID_tree(q, v, qdd0)
   (with the force elements' loads), then the actuated dofs' forces a = (N^T S)^+ N^T tau_tree,
   N an orthonormal basis of null(G), S the selection of the actuated dofs, b = S a;
3. where robot.inverse_dynamics refuses (qdd0 breaks G qdd + gamma + 2 alpha G v + beta^2 g = 0
   by more than 1e-6 max(1, |qdd0|): a singular G_dep; or the actuated joints cannot produce the
   motion, |N^T S a - N^T tau_tree| > 1e-8 max(1, |N^T tau_tree|); or a non-finite result),
   b = 0. A robot without actuated joints (a passive suspension) always lands here: b = 0, as
   the Plant's `_no_actuation` says, so the kernel returns 0 at once.

The same steps; the dense algebra differs from numpy's (lstsq: SVD; the null space by SVD) as
in kernels/rollout_projection.py: minimum-norm solves by pivoted Householder QR
(`min_norm_solve`), and N from the pivoted QR of G^T (its last nv - r columns of Q). a does not
depend on which orthonormal basis N is (N R for an orthogonal R gives the same least-squares
solution), so b equals the Plant's to round-off times the conditioning of G_dep and N^T S, while
the rank decisions agree (away from singular configurations, see rollout_projection.py).

The partition is the robot's, kept while cond(G_dep) < PARTITION_CONDITION_LIMIT (as
Constraints.partition keeps it: sigma_min LIMIT > sigma_max, here from the eigenvalues of the
small Gram matrix G_dep^T G_dep by cyclic Jacobi); when it would be re-chosen the kernel returns
NEEDS_PARTITION and the caller computes the row's compensation in Python (which re-chooses it,
a stateful choice by QR with column pivoting) and resumes the row.

Workspace (`drive_workspace`, per thread): (dependent (nv,) int64 flags, 1 = dependent, written
by the caller from robot.partition; actuated (n_act,) int64 dofs; mats (3, p, p); vec (N_ROWS,
p); perm (p,) int64) with p = max(nv, b, 1).
"""
import math

import numpy as np
from numba import njit

from ..model.layout import LOOP_RESIDUAL
from .rnea import inverse_dynamics as _tree_inverse_dynamics
from .rollout_loads import loaded_tree_inverse_dynamics
from .rollout_projection import loop_acceleration_rows, min_norm_solve
from .linalg import RANK_TOLERANCE
from .rollout_tangent import tangent_basis

# constraints.py's PARTITION_CONDITION_LIMIT (the kernels do not import the robot layer;
# test/test_rollout_loops.py checks they are equal)
PARTITION_CONDITION_LIMIT = 1e3
# Constraints.actuation's acceptance of qdd (loop rows, relative to max(1, |qdd|)) and of the
# actuation least squares (relative to max(1, |N^T tau_tree|))
LOOP_ACCEPTANCE = 1e-6
ACTUATION_ACCEPTANCE = 1e-8
DONE, NEEDS_PARTITION, TREE_FAILED = 0, 1, -1
SOLVE_FAILED = 2   # dependent_accelerations' minimum-norm solve failed: b = 0 (as a refusal)
# matrices of mats (3, p, p): G_dep (then N^T S), the QR's t, the solves' normal matrix / N
P_A, P_T, P_N = range(3)
# rows of vec
V_GAMMA, V_QDD, V_TAU, V_X, V_RDIAG, V_HV0, V_BETA, V_C, V_Z, V_GV, V_RESIDUAL = range(11)
N_ROWS = 11
JACOBI_SWEEPS = 30


def drive_workspace(nv, n_rows, actuated):
    """A thread's workspace (module docstring); actuated: the robot's actuated dofs."""
    p = max(nv, n_rows, 1)
    return (np.zeros(nv, dtype=np.int64), np.array(actuated, dtype=np.int64),
            np.zeros((3, p, p)), np.zeros((N_ROWS, p)), np.zeros(p, dtype=np.int64))


@njit(cache=True, nogil=True)
def gram_condition_keeps(a, m, n, gram, limit):
    """True when the m x n matrix a[:m, :n] (n <= its rank) has sigma_min limit > sigma_max (the
    test of Constraints.partition), from the eigenvalues of the Gram matrix a^T a (n x n, into
    gram) by cyclic Jacobi rotations: lambda = sigma^2, so the test is lambda_min limit^2 >
    lambda_max (the squared condition is far from overflow or round-off for the limits used)."""
    if n == 0:
        return True
    for i in range(n):
        for j in range(n):
            s = 0.0
            for r in range(m):
                s += a[r, i] * a[r, j]
            gram[i, j] = s
    for _ in range(JACOBI_SWEEPS):
        off = 0.0
        diag = 0.0
        for i in range(n):
            diag += gram[i, i] * gram[i, i]
            for j in range(i + 1, n):
                off += gram[i, j] * gram[i, j]
        if not off > 1e-30 * diag:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = gram[p, q]
                if apq == 0.0:
                    continue
                # the rotation that zeroes gram[p, q] (Golub and Van Loan, Algorithm 8.4.1)
                tau = (gram[q, q] - gram[p, p]) / (2.0 * apq)
                t = (1.0 if tau >= 0.0 else -1.0) / (abs(tau) + math.sqrt(1.0 + tau * tau))
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = t * c
                for k in range(n):
                    gkp, gkq = gram[k, p], gram[k, q]
                    gram[k, p] = c * gkp - s * gkq
                    gram[k, q] = s * gkp + c * gkq
                for k in range(n):
                    gpk, gqk = gram[p, k], gram[q, k]
                    gram[p, k] = c * gpk - s * gqk
                    gram[q, k] = s * gpk + c * gqk
    smallest = gram[0, 0]
    largest = gram[0, 0]
    for i in range(1, n):
        smallest = min(smallest, gram[i, i])
        largest = max(largest, gram[i, i])
    return smallest * limit * limit > largest


@njit(cache=True, nogil=True, inline="always")
def dependent_accelerations(jacobian, gamma, drive_work, qdd):
    """Steps 1 of the module docstring on G = jacobian (m, nv) and gamma (m,): qdd (nv,)
    = project_acceleration(q, v, 0) on the partition of drive_work's `dependent` flags. Returns
    DONE, NEEDS_PARTITION (the partition would be re-chosen: qdd not set) or SOLVE_FAILED (the
    callers' b is then 0). (Shared by loop_drive_bias and, on flexible trees,
    kernels/rollout_flexible_loops.py.)"""
    dependent, _, mats, vec, perm = drive_work
    nv, m = qdd.shape[0], jacobian.shape[0]
    x = vec[V_X]
    rdiag, hv0, beta, c, z = vec[V_RDIAG], vec[V_HV0], vec[V_BETA], vec[V_C], vec[V_Z]
    a, t, normal = mats[P_A], mats[P_T], mats[P_N]
    for i in range(nv):
        qdd[i] = 0.0
    nd = 0
    for j in range(nv):
        if dependent[j]:
            for r in range(m):
                a[r, nd] = jacobian[r, j]
            nd += 1
    if not gram_condition_keeps(a, m, nd, t, PARTITION_CONDITION_LIMIT):
        return NEEDS_PARTITION
    if nd:
        if min_norm_solve(a, m, nd, gamma, x, t, normal, rdiag, hv0, beta, c, z, perm) < 0:
            return SOLVE_FAILED     # (lstsq cannot fail; a solve that does: b = 0)
        k = 0
        for j in range(nv):
            if dependent[j]:
                qdd[j] = -x[k]
                k += 1
    return DONE


@njit(cache=True, nogil=True, inline="always")
def loop_rows_accept(jacobian, gamma, residual, gv, alpha, beta, qdd):
    """Constraints.actuation's check of the loop rows, Baumgarte terms included: max |G qdd +
    gamma + 2 alpha G v + beta^2 g| <= LOOP_ACCEPTANCE max(1, |qdd|) (residual: g (m,), gv:
    G v (m,))."""
    nv, m = qdd.shape[0], jacobian.shape[0]
    scale = 1.0
    for j in range(nv):
        scale = max(scale, abs(qdd[j]))
    for r in range(m):
        s = 0.0
        for j in range(nv):
            s += jacobian[r, j] * qdd[j]
        s += gamma[r] + 2.0 * alpha * gv[r] + beta * beta * residual[r]
        if abs(s) > LOOP_ACCEPTANCE * scale:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def actuated_forces(jacobian, tau, drive_work, exact, out):
    """Step 2's actuation (Constraints.actuation_forces): out (nv,) = S a, a = (N^T S)^+ N^T tau
    (tau (nv,) the tree's inverse dynamics at the loop-consistent qdd), N the tangent basis of
    G = jacobian. exact: refuse (out 0) unless N^T S a = N^T tau to ACTUATION_ACCEPTANCE, as
    Constraints.actuation does on a rigid tree (with elastic coordinates, which no drive moves,
    it returns the least-squares forces). out is 0 as well where a solve fails or a is not
    finite. (Inlined, as the other two steps: as calls, binding the workspace tuple cost the
    rigid loops' compensation ~0.45 us per row, bench_rollout.py --robots four.)"""
    dependent, actuated, mats, vec, perm = drive_work
    nv, m = tau.shape[0], jacobian.shape[0]
    n_act = actuated.shape[0]
    x = vec[V_X]
    rdiag, hv0, beta, c, z = vec[V_RDIAG], vec[V_HV0], vec[V_BETA], vec[V_C], vec[V_Z]
    a, t, null = mats[P_A], mats[P_T], mats[P_N]
    for i in range(nv):
        out[i] = 0.0
    # N: the tangent basis (the last nv - r columns of Q in the pivoted QR of G^T)
    k = tangent_basis(jacobian, m, nv, t, rdiag, hv0, beta, perm, null)
    # a = (N^T S)^+ N^T tau_tree, accepted when N^T S a = N^T tau_tree (to 1e-8)
    target = vec[V_GAMMA, :k]       # (gamma no longer needed)
    tmax = 0.0
    for col in range(k):
        s = 0.0
        for i in range(nv):
            s += null[i, col] * tau[i]
        target[col] = s
        tmax = max(tmax, abs(s))
        for j in range(n_act):
            a[col, j] = null[actuated[j], col]
    # N orthonormal: N^T S on the scale of 1; every row of it below RANK_TOLERANCE is a dead
    # point of the actuation (the QR's cut-off is relative to its largest row): a = 0, as
    # Constraints.actuation_forces decides
    largest = 0.0
    for col in range(k):
        s = 0.0
        for j in range(n_act):
            s += a[col, j] * a[col, j]
        largest = max(largest, s)
    if k and math.sqrt(largest) > RANK_TOLERANCE:
        # (N is read no more: its matrix is the solve's normal matrix)
        if min_norm_solve(a, k, n_act, target, x, t, null, rdiag, hv0, beta, c, z, perm) < 0:
            return
    else:
        for j in range(n_act):
            x[j] = 0.0
    if exact:
        for col in range(k):
            s = 0.0
            for j in range(n_act):
                s += a[col, j] * x[j]
            if abs(s - target[col]) > ACTUATION_ACCEPTANCE * max(1.0, tmax):
                return      # the actuated joints cannot produce the motion: b = 0
    for j in range(n_act):
        if not math.isfinite(x[j]):
            return
    for j in range(n_act):
        out[actuated[j]] = x[j]


@njit(cache=True, nogil=True)
def loop_drive_bias(loops, drive_work, forces, loaded, q, v, out):
    """out (nv,) = b(q, v), the drives' compensation on closed loops (module docstring).
    loops: kernels/rollout.py's loops tuple (its kinematics workspace, cut rows and G are
    written), drive_work: drive_workspace(...), forces / loaded: the force elements' tuple and
    whether the robot has them (their loads act on ID_tree). Returns DONE, NEEDS_PARTITION (the
    partition would be re-chosen: out not set) or TREE_FAILED (the RNEA failed)."""
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    gains = loops[7]
    vec = drive_work[3]
    nv, m = v.shape[0], jacobian.shape[0]
    for i in range(nv):
        out[i] = 0.0
    if drive_work[1].shape[0] == 0:   # no actuated joint: N^T S a = N^T tau_tree fails unless
        return DONE                   # it is 0: b = 0
    gamma, qdd, tau = vec[V_GAMMA, :m], vec[V_QDD, :nv], vec[V_TAU, :nv]
    # gamma = G_s a(qdd = 0) + gamma''_s (Loops.bias), G_l (Loops.state) at (q, v)
    for i in range(nv):
        qdd[i] = 0.0
    if _tree_inverse_dynamics(body_int, body_float, work, q, v, qdd, tau):
        return TREE_FAILED
    loop_acceleration_rows(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian,
                           gamma)
    # qdd0: independent 0, dependent -G_dep^+ gamma (project_acceleration), partition kept?
    status = dependent_accelerations(jacobian, gamma, drive_work, qdd)
    if status != DONE:   # NEEDS_PARTITION, or a failed solve: b = 0
        return NEEDS_PARTITION if status == NEEDS_PARTITION else DONE
    gv, residual = vec[V_GV, :m], vec[V_RESIDUAL, :m]
    for r in range(m):
        s = 0.0
        for j in range(nv):
            s += jacobian[r, j] * v[j]
        gv[r] = s
        residual[r] = loop_float[r, LOOP_RESIDUAL]
    if not loop_rows_accept(jacobian, gamma, residual, gv, gains[0], gains[1], qdd):
        return DONE     # robot.inverse_dynamics raises: b = 0
    # tau_tree = ID_tree(q, v, qdd0) with the elements' loads (robot.inverse_dynamics)
    if loaded:
        status = loaded_tree_inverse_dynamics(forces, q, v, qdd, tau)
    else:
        status = _tree_inverse_dynamics(body_int, body_float, work, q, v, qdd, tau)
    if status:
        return TREE_FAILED
    actuated_forces(jacobian, tau, drive_work, True, out)
    return DONE
