"""robot.step's projection onto closed loops, compiled (robot/constraints.py
Constraints.project_state, docs/theory.md §6), for the compiled rollout engine
(kernels/rollout.py calls `close_loops`: the residual test, then `project_state`'s steps when a
residual passes the projection tolerance; robot/rollout_compiled.py builds the workspaces, one
set per thread).

The projection, as constraints.py runs it on rigid loops of the recursive solver (no prescribed
joints: every dof is free):

1. positions: Gauss-Newton with minimum-norm steps, q <- q (+) (-G^+ g), until max |g| <
   ASSEMBLY_TOLERANCE (after a semi-implicit Euler step: robot.step's EULER_CLOSING_TOLERANCE,
   close_loops' `closing`), at most `max_iterations` steps (constraints.py _close_min_norm);
2. velocities: the mass-orthogonal projection of least kinetic energy,
   v <- v - M^-1 G^T (G M^-1 G^T)^+ G v, with G and M at the projected q.

The same steps in the same order; what differs is the dense linear algebra, which numpy does
with LAPACK (lstsq: SVD, gelsd; pinv: SVD; solve: LU) and which is written here without
allocation:

- G^+ g and K^+ r (`min_norm_solve`): Householder QR with column pivoting of A^T (the rows of A
  as columns, greedy by remaining norm), the numerical rank r = the number of pivots |R_kk| >
  RANK_TOLERANCE |R_00| (numpy: singular values > RANK_TOLERANCE s_max, the same rcond), then the
  minimum-norm least-squares solution x = Q_r z with (R_r R_r^T) z = R_r P^T b by Cholesky. The
  pivots bracket the singular values (s_max / sqrt(m n) <= |R_00| <= s_max, and the dropped
  |R_kk| are round-off, ~1e-16 |R_00|, on the redundant rows of a planar loop closed by a 3-D
  cut), so both rank rules agree wherever the gap between the kept and the dropped directions
  is wider than sqrt(m n) -- for mechanisms that are not at a singular configuration. The
  result equals lstsq's to round-off times cond(G)^2 (the normal equations of the r x r part);
  cond is bounded by the partition limit (1e3) on well-posed loops;
- M^-1 G^T: Cholesky of M (numpy: LU), column by column.

So the rollout equals repeated robot.step to round-off, not bit for bit (test/test_rollout.py
measures it: the projected states agree to ~1e-15, well inside ASSEMBLY_TOLERANCE).

A projection that does not converge within `max_iterations` (constraints.py then re-assembles
the loops by its partitioned Newton in Python) or meets a singular M returns False with q and v
untouched: the caller falls back to the Python projection.

Cost (four-bar, bench/bench_loop_projection.py: bench/bench_rollout.py's 400 states one
semi-implicit Euler step at 1 ms from the loops closed, |v| up to 27 rad/s, loops open by up to
2.6e-5; numba loops, thread CPU time, minima of 9 on a loaded 2-core AMD EPYC; bench/RESULTS.md
"h19-euler"): the constrained forward dynamics through its C entry 1.27 µs; close_loops 2.44
µs: the residual test 0.51 (positions-only kinematics 0.09, cut rows 0.12, loop Jacobian 0.10,
unpacking the tuples), each of the 1.33 Gauss-Newton steps per projection ~0.7 (pivoted QR solve
0.28, q (+) dq 0.05, kinematics, cut rows and G again), the velocity projection ~0.6 (mass
matrix 0.13, Cholesky, M^-1 G^T, the pivoted QR solve with K 0.31); one forward dynamics call
from Python 1.51 µs. The residual test alone nearly fills the 1.3 FD budget of a semi-implicit
Euler step, which opens the loops past the tolerance every step: an exact projection after
every step cannot meet it (docs/rollouts.md, "Cost"). Here the test and the projection run in
one call (`close_loops`, which unpacks the tuples once: ~10 ns per array taken from a tuple, as
per view created), the test and the Gauss-Newton re-evaluations without body velocities, and
after a semi-implicit Euler step the Gauss-Newton stops at robot.step's EULER_CLOSING_TOLERANCE
(2.89 -> 2.44 µs).

Workspace (`projection_workspace`, per thread, built once): a tuple (mass (nv, nv), mats
(4, p, p) float, vec (N_ROWS, p) float, perm (p,) int64) with p = max(nq, nv, b) for b loop rows.
"""
import math

import numpy as np
from numba import njit

from ..model.layout import (ACC, CUT_BODY_A, CUT_BODY_B, CUT_ROW0, CUT_ROWS, LOOP_BIAS, LOOP_JAC_A,
                            LOOP_JAC_B, LOOP_RESIDUAL)
from .closed_loop import cut_rows, loop_jacobian, world_poses
from .configuration import integrate
from .crba import mass_matrix
from .kinematics import forward_kinematics
from .linalg import RANK_TOLERANCE

# constraints.py's ASSEMBLY_TOLERANCE (m, rad): the Gauss-Newton loop stops below it (the
# kernels layer does not import the robot layer; test/test_rollout.py checks they are equal)
ASSEMBLY_TOLERANCE = 1e-12
MAX_ITERATIONS = 20            # constraints.project_state's default max_iterations
# matrices of mats (4, p, p): M's Cholesky factor (then K = G M^-1 G^T), W = M^-1 G^T, and
# min_norm_solve's two
P_CHOL, P_W, P_T, P_NORMAL = range(4)
# rows of vec (N_ROWS, p)
V_Q, V_QN, V_STEP, V_ZERO, V_G, V_GV, V_Y, V_RDIAG, V_HV0, V_BETA, V_C, V_Z = range(12)
N_ROWS = 12


def projection_workspace(nq, nv, n_rows, enabled=True):
    """A thread's projection workspace for a robot with nq, nv coordinates and n_rows loop rows
    (see the module docstring); enabled=False: an empty one, with which project_state declines
    (the Python projection runs: bench/bench_rollout.py's "before")."""
    p = max(nq, nv, n_rows, 1)
    return (np.zeros((nv, nv)), np.zeros((4, p, p)), np.zeros((N_ROWS, p)),
            np.zeros(p if enabled else 0, dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def pivoted_qr_transposed(a, m, n, t, rdiag, hv0, beta, perm):
    """Householder QR with column pivoting of A^T for A = a[:m, :n] into t (>= n x m): the
    columns of A^T (rows of A) greedy by remaining norm, stopped at the first pivot |R_kk| <=
    RANK_TOLERANCE |R_00|. Returns the rank r; R_kk in rdiag, R_kj (j > k) in t[k, j], the
    reflectors H_k = 1 - beta_k u u^T with u = (hv0[k], t[k+1:, k]), the pivots in perm
    (the columns of A^T P). Q = H_0 ... H_{r-1}."""
    for j in range(m):                      # t = A^T: column j is row j of A
        perm[j] = j
        for i in range(n):
            t[i, j] = a[j, i]
    rank = 0
    largest = 0.0
    for k in range(min(m, n)):
        best, pick = -1.0, k                # the column of largest remaining norm
        for j in range(k, m):
            s = 0.0
            for i in range(k, n):
                s += t[i, j] * t[i, j]
            if s > best:
                best, pick = s, j
        norm = math.sqrt(best)
        if k == 0:
            largest = norm
        if not norm > RANK_TOLERANCE * largest:
            break
        if pick != k:
            for i in range(n):
                t[i, k], t[i, pick] = t[i, pick], t[i, k]
            perm[k], perm[pick] = perm[pick], perm[k]
        # Householder reflector H = 1 - beta u u^T with u = (t[k, k] - alpha, t[k+1:, k]),
        # H t[k:, k] = (alpha, 0, ...), alpha = -sign(t[k, k]) norm (no cancellation)
        alpha = -norm if t[k, k] >= 0.0 else norm
        u0 = t[k, k] - alpha
        uu = u0 * u0
        for i in range(k + 1, n):
            uu += t[i, k] * t[i, k]
        beta[k] = 2.0 / uu if uu > 0.0 else 0.0
        hv0[k] = u0
        rdiag[k] = alpha
        for j in range(k + 1, m):
            s = u0 * t[k, j]
            for i in range(k + 1, n):
                s += t[i, k] * t[i, j]
            s *= beta[k]
            t[k, j] -= s * u0
            for i in range(k + 1, n):
                t[i, j] -= s * t[i, k]
        rank = k + 1
    return rank


@njit(cache=True, nogil=True)
def min_norm_solve(a, m, n, b, x, t, normal, rdiag, hv0, beta, c, z, perm):
    """x (n,) = A^+ b, the minimum-norm least-squares solution of A x = b for A = a[:m, :n]
    (any rank), b (m,): pivoted Householder QR of A^T into t (>= n x m), rank rule |R_kk| >
    RANK_TOLERANCE |R_00| (see the module docstring), Cholesky of R_r R_r^T (r x r, in
    `normal`). rdiag, hv0, beta, c, z (>= m,), perm (>= m,) int64: scratch. Returns the rank r,
    or -1 if the r x r normal matrix was not positive definite (then x is not set)."""
    rank = pivoted_qr_transposed(a, m, n, t, rdiag, hv0, beta, perm)
    r = rank
    # R_r (r x m): R[i, i] = rdiag[i], R[i, j] = t[i, j] for j > i. Normal equations of
    # min |R_r^T z - P^T b|: (R_r R_r^T) z = R_r P^T b.
    for j in range(m):
        c[j] = b[perm[j]]
    for i in range(r):
        s = rdiag[i] * c[i]
        for j in range(i + 1, m):
            s += t[i, j] * c[j]
        z[i] = s
        for l in range(i, r):               # (R R^T)[i, l], l >= i: sum over j >= l
            s = (t[i, l] if l > i else rdiag[i]) * rdiag[l]   # j = l: R[i, l] R[l, l]
            for j in range(l + 1, m):
                s += t[i, j] * t[l, j]
            normal[i, l] = s
            normal[l, i] = s
    for j in range(r):                      # Cholesky R R^T = F F^T (F lower, in place)
        d = normal[j, j]
        for k in range(j):
            d -= normal[j, k] * normal[j, k]
        if not d > 0.0:
            return -1
        d = math.sqrt(d)
        normal[j, j] = d
        for i in range(j + 1, r):
            s = normal[j, i]                # the upper triangle still holds R R^T
            for k in range(j):
                s -= normal[i, k] * normal[j, k]
            normal[i, j] = s / d
    for i in range(r):                      # F y = R_r P^T b
        s = z[i]
        for k in range(i):
            s -= normal[i, k] * z[k]
        z[i] = s / normal[i, i]
    for i in range(r - 1, -1, -1):          # F^T z = y
        s = z[i]
        for k in range(i + 1, r):
            s -= normal[k, i] * z[k]
        z[i] = s / normal[i, i]
    # x = Q (z, 0) = H_0 H_1 ... H_{r-1} (z, 0)
    for i in range(n):
        x[i] = z[i] if i < r else 0.0
    apply_reflectors(t, hv0, beta, r, n, x)
    return r


@njit(cache=True, nogil=True, inline="always")
def apply_reflectors(t, hv0, beta, rank, n, x):
    """x (n,) <- Q x = H_0 H_1 ... H_{rank-1} x in place, with pivoted_qr_transposed's
    reflectors H_k = 1 - beta_k u u^T, u = (hv0[k], t[k+1:n, k])."""
    for k in range(rank - 1, -1, -1):
        s = hv0[k] * x[k]
        for i in range(k + 1, n):
            s += t[i, k] * x[i]
        s *= beta[k]
        x[k] -= s * hv0[k]
        for i in range(k + 1, n):
            x[i] -= s * t[i, k]


@njit(cache=True, nogil=True, inline="always")
def loop_acceleration_rows(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian,
                           gamma):
    """The loop rows after the tree's inverse dynamics at qdd = 0 (whose pass left the poses,
    velocities and accelerations in `work`): g (loop_float's LOOP_RESIDUAL), G (jacobian (b, nv))
    and gamma (b,) = G_s a(qdd = 0) + gamma''_s, as Loops.state and Loops.bias (without the
    Baumgarte terms)."""
    world_poses(body_int, work)
    cut_rows(cut_int, cut_float, work, loop_float)
    loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
    for s in range(cut_int.shape[0]):
        body_a, body_b = cut_int[s, CUT_BODY_A], cut_int[s, CUT_BODY_B]
        r0 = cut_int[s, CUT_ROW0]
        for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
            acc = 0.0
            for k in range(6):
                acc += loop_float[r, LOOP_JAC_A + k] * work[body_a, ACC + k]
            for k in range(6):
                acc += loop_float[r, LOOP_JAC_B + k] * work[body_b, ACC + k]
            gamma[r] = acc + loop_float[r, LOOP_BIAS]


@njit(cache=True, nogil=True, inline="always")
def _loop_state(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian, q, none):
    """max |g| at q; g into loop_float[:, LOOP_RESIDUAL], G into `jacobian` (as Loops.state:
    kinematics, the cut rows, the loop Jacobian, on the thread's workspace). none: an empty
    (0,) array: the kinematics skip the body velocities (G and g do not depend on v; the cut
    rows' velocity terms, which do, are not read here)."""
    forward_kinematics(body_int, body_float, work, q, none)
    cut_rows(cut_int, cut_float, work, loop_float)
    loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
    residual = 0.0
    for r in range(jacobian.shape[0]):
        residual = max(residual, abs(loop_float[r, LOOP_RESIDUAL]))
    return residual


@njit(cache=True, nogil=True)
def project_state(loops, workspace, q, v, state_ready):
    """constraints.project_state(q, v) in place on q (nq,), v (nv,) (see the module docstring):
    loops = kernels/rollout.py's loops tuple (tree and cut arrays, the thread's kinematics and
    loop workspaces), workspace = projection_workspace(...); state_ready: the loop workspace
    already holds the cut rows and G at this q (e.g. from close_loops' residual test: they do
    not depend on v), so the first evaluation is skipped. Returns True, or False with q, v
    unchanged when the positions did not converge in MAX_ITERATIONS steps (the caller then runs
    the Python projection, which re-assembles) or a solve failed."""
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    mass, mats, vec, perm = workspace
    return _project(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian, mass,
                    mats, vec, perm, q, v, state_ready, ASSEMBLY_TOLERANCE)


@njit(cache=True, nogil=True)
def close_loops(loops, workspace, q, v, tolerance, closing):
    """robot.step's closing of the loops after a step, in place on q (nq,), v (nv,): the
    residual test (robot.closure_residual: max |g| and max |G v| against `tolerance`,
    PROJECTION_TOLERANCE) and, when it fails, project_state with its Gauss-Newton stopped below
    `closing` (m, rad: ASSEMBLY_TOLERANCE, or after a semi-implicit Euler step robot.step's
    EULER_CLOSING_TOLERANCE, robot/constraints.py). Returns 0 (closed: nothing done),
    1 (projected) or -1 (the projection declined, q and v unchanged: the caller projects in
    Python). One call that unpacks the two tuples once: passing them on to each part cost more
    than the small dense algebra of a four-bar's projection (measured, bench/RESULTS.md)."""
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    mass, mats, vec, perm = workspace
    # positions-only kinematics: g and G do not depend on v, and G v is formed from G below
    # (the body velocities, computed here before and not read, cost 0.1 us on the four-bar)
    forward_kinematics(body_int, body_float, work, q, v[:0])
    cut_rows(cut_int, cut_float, work, loop_float)
    loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
    position = 0.0
    velocity = 0.0
    for r in range(jacobian.shape[0]):
        position = max(position, abs(loop_float[r, LOOP_RESIDUAL]))
        s = 0.0
        for j in range(v.shape[0]):
            s += jacobian[r, j] * v[j]
        velocity = max(velocity, abs(s))
    if not (position > tolerance or velocity > tolerance):
        return 0
    if _project(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian, mass,
                mats, vec, perm, q, v, True, closing):
        return 1
    return -1


@njit(cache=True, nogil=True, inline="always")
def _project(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian, mass, mats,
             vec, perm, q, v, state_ready, closing):
    """project_state on the unpacked arrays, the Gauss-Newton stopped below `closing`."""
    if perm.shape[0] == 0:      # disabled (projection_workspace(enabled=False))
        return False
    nq, nv, m = q.shape[0], v.shape[0], jacobian.shape[0]
    qp, qn, step, zero = vec[V_Q, :nq], vec[V_QN, :nq], vec[V_STEP, :nv], vec[V_ZERO, :nv]
    g = vec[V_G, :m]
    rdiag, hv0, beta, c, z = vec[V_RDIAG], vec[V_HV0], vec[V_BETA], vec[V_C], vec[V_Z]
    t, normal = mats[P_T], mats[P_NORMAL]
    none = zero[:0]
    for i in range(nq):
        qp[i] = q[i]
    # 1. Gauss-Newton with minimum-norm steps (constraints.py _close_min_norm)
    if state_ready:
        residual = 0.0
        for r in range(m):
            residual = max(residual, abs(loop_float[r, LOOP_RESIDUAL]))
    else:
        residual = _loop_state(body_int, body_float, work, cut_int, cut_float, loop_float,
                               jacobian, qp, none)
    iterations = 0
    while not residual < closing:
        if iterations == MAX_ITERATIONS:
            return False            # not closed: constraints.py assembles (Python)
        for r in range(m):
            g[r] = loop_float[r, LOOP_RESIDUAL]
        if min_norm_solve(jacobian, m, nv, g, step, t, normal, rdiag, hv0, beta, c, z,
                          perm) < 0:
            return False
        for i in range(nv):
            step[i] = -step[i]
        integrate(body_int, qp, step, 1.0, qn)      # q <- q (+) step (robot.integrate)
        for i in range(nq):
            qp[i] = qn[i]
        iterations += 1
        residual = _loop_state(body_int, body_float, work, cut_int, cut_float, loop_float,
                               jacobian, qp, none)
    # 2. v <- v - M^-1 G^T (G M^-1 G^T)^+ G v, G (in `jacobian`) and M at the projected q
    if not project_velocity(body_int, body_float, work, qp, mass, mats, vec, perm, None,
                            jacobian, v):
        return False
    for i in range(nq):
        q[i] = qp[i]
    return True


@njit(cache=True, nogil=True, inline="always")
def project_velocity(body_int, body_float, work, q, mass, mats, vec, perm, dofs, jacobian, v):
    """v (nv,) <- the mass-orthogonal projection of least kinetic energy onto G v = 0 moving
    only the dofs `dofs` (nf,) int64 (None: every dof, robot.step's projection; the free ones:
    with prescribed joints held, constraints.project_state(fixed=)):
    v_f <- v_f - M_ff^-1 G_f^T (G_f M_ff^-1 G_f^T)^+ G v, with M (CRBA) at q and G in
    `jacobian` (b, nv); the workspace's matrices and rows as scratch. Returns False when M_ff
    is not positive definite or the solve failed (v unchanged)."""
    nv, m = v.shape[0], jacobian.shape[0]
    nf = _dof_count(dofs, nv)
    chol, w = mats[P_CHOL], mats[P_W]
    gv, y = vec[V_GV, :m], vec[V_Y, :m]
    t, normal = mats[P_T], mats[P_NORMAL]
    rdiag, hv0, beta, c, z = vec[V_RDIAG], vec[V_HV0], vec[V_BETA], vec[V_C], vec[V_Z]
    if mass_matrix(body_int, body_float, work, q, mass):
        return False
    for b in range(nf):                             # M_ff = L L^T
        d = mass[_dof(dofs, b), _dof(dofs, b)]
        for k in range(b):
            d -= chol[b, k] * chol[b, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        chol[b, b] = d
        for a in range(b + 1, nf):
            s = mass[_dof(dofs, a), _dof(dofs, b)]
            for k in range(b):
                s -= chol[a, k] * chol[b, k]
            chol[a, b] = s / d
    for r in range(m):                              # W = M_ff^-1 G_f^T (nf x m)
        for a in range(nf):                         # L y = G_f[r]
            s = jacobian[r, _dof(dofs, a)]
            for k in range(a):
                s -= chol[a, k] * w[k, r]
            w[a, r] = s / chol[a, a]
        for a in range(nf - 1, -1, -1):             # L^T w = y
            s = w[a, r]
            for k in range(a + 1, nf):
                s -= chol[k, a] * w[k, r]
            w[a, r] = s / chol[a, a]
    for r in range(m):                              # G v (every dof) and K = G_f W (into chol:
        s = 0.0                                     # M_ff's factor is done)
        for i in range(nv):
            s += jacobian[r, i] * v[i]
        gv[r] = s
    kmat = chol
    for r in range(m):
        for l in range(m):
            s = 0.0
            for a in range(nf):
                s += jacobian[r, _dof(dofs, a)] * w[a, l]
            kmat[r, l] = s
    if min_norm_solve(kmat, m, m, gv, y, t, normal, rdiag, hv0, beta, c, z, perm) < 0:
        return False
    for a in range(nf):
        s = 0.0
        for r in range(m):
            s += w[a, r] * y[r]
        v[_dof(dofs, a)] -= s
    return True


@njit(cache=True, nogil=True, inline="always")
def _dof(dofs, a):
    """Dof a of the set `dofs`: a itself when dofs is None (every dof: numba compiles the None
    case without the index array, so robot.step's projection reads M and G directly)."""
    if dofs is None:
        return a
    return dofs[a]


@njit(cache=True, nogil=True, inline="always")
def _dof_count(dofs, nv):
    """The number of dofs of the set `dofs` (None: every one of nv)."""
    if dofs is None:
        return nv
    return dofs.shape[0]
