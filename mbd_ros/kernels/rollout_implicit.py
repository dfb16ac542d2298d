"""The implicit integrators of the compiled rollouts (kernels/rollout.py): one step of
robot.step's ``implicit_euler`` and ``symplectic_euler`` on a tree (no loops, no mimic), the
operations of robot/integrators.py Simulator._implicit_euler and _symplectic_euler (read them
with this), without allocation and without Python, on a per-thread workspace:

- implicit_euler (linearly implicit / Rosenbrock Euler, the Simulator's module docstring): with
  A_q = df/dq, A_v = df/dv by forward differences of step 1e-7 along the unit vectors e_j (the
  tangent basis N = 1 of a tree), s = v,
      (1 - h A_v - h^2 A_q) z = h a1 + h^2 A_q s,
      v+ = v + h (a1 + h A_q (s + z) + A_v z),   q+ = q (+) v+ h;
  1 + 2 nv forward dynamics per step (a1 is the caller's).
- symplectic_euler (the symplectic Euler method in p = M(q) v): fixed-point iteration of
      u = v + h f(t, q, u) with the extra force (dM/dq u) u,
  (dM/dq u) = (M(q (+) eps u) - M(q (+) -eps u)) / (2 eps), eps = 1e-6 / max(1, |u|_inf), until
  |u_next - u|_inf < SYMPLECTIC_TOLERANCE max(1, |u|_inf) or 50 iterations; then
  q+ = q (+) h u, v+ = M(q+)^-1 M(q) u. Per iteration one forward dynamics and two mass matrices.

The elementwise arithmetic is the Simulator's numpy expressions in their evaluation order (so
the finite-difference Jacobians are the same bits from the same state). The matrix-vector
products and the dense solves are not: numpy's go to BLAS dgemv (blocked, with FMA) and LAPACK
dgesv (a blocked partial-pivot LU); here they are plain sums and an unblocked partial-pivot LU
(lu_solve, dgetf2's algorithm), which differ from those by round-off only (backward stable:
relative error <= c n eps cond). test/test_rollout_implicit.py bounds the difference.

The forward dynamics come from the tree's C entry by address (entry_call.call_entry), or, with
force elements (rigid trees), from the loaded path (the elements' loads at (q, v), the link
wrenches into the loaded workspace, tau + joint forces, the ABA), as robot.forward_dynamics
runs them and kernels/rollout.py does at its stages; with prescribed joints, mimic couplings or
force elements on a flexible tree, from kernels/rollout_special.py's dispatcher (special).
symplectic_euler also runs on rigid closed loops (the loop solver's C entry, or with force
elements the solver on the loaded workspace: loop_forward_dynamics, which
kernels/rollout_tangent.py's implicit Euler on loops uses too), and on closed loops on a
flexible tree (their dense solve, kernels/flexible_loop_part.py; dM/dq u from the flexible
tree's mass matrix entry).
"""
from numba import njit

from .closed_loop import forward_dynamics_checked
from .configuration import integrate as _integrate_joints
from .entry_call import call_entry
from .flexible_loop_part import flexible_loops_forward_dynamics
from .force_elements import force_element_loads
from .rollout_loads import loaded_tree_forward_dynamics
from .rollout_loop_prescribed import loop_prescribed_forward_dynamics
from .rollout_prescribed import FIRST_STAGE
from .rollout_special import special_forward_dynamics
from .wrenches import load_link_wrenches

# the Simulator's constants (robot/integrators.py): forward-difference step of implicit_euler,
# the fixed-point tolerance (rad/s, m/s; SYMPLECTIC_TOLERANCE) and cap of symplectic_euler, the
# central-difference scale of dM/dq u
FD_STEP = 1e-7
SYMPLECTIC_TOLERANCE = 1e-13
SYMPLECTIC_ITERATIONS = 50
MASS_RATE_STEP = 1e-6
# rows of the (IMPLICIT_ROWS, max(nq, nv)) vector workspace and slabs of the
# (IMPLICIT_MATS, nv, nv) matrix workspace
R_V2, R_QS, R_P, R_S, R_Z, R_T, R_LOADED, R_TAU, R_U, R_UN, R_PIV = range(11)
IMPLICIT_ROWS = 11
X_AQ, X_AV, X_LHS, X_MASS, X_UPPER, X_LOWER = range(6)
IMPLICIT_MATS = 6
# step status besides the forward dynamics' own (non-zero) statuses
SINGULAR = -101           # the implicit system or M(q+) is singular (an exactly zero pivot)
MASS_FAILED = -102        # the mass matrix entry failed


@njit(cache=True, nogil=True)
def lu_solve(a, b, piv):
    """b <- a^-1 b by LU with partial pivoting (LAPACK dgetf2's algorithm: the pivot is the
    first entry of largest magnitude in the column, rows swapped whole, multipliers scaled by the
    pivot's reciprocal), then the unit-lower and upper triangular solves (dgetrs). a (n, n) is
    overwritten by its factors, b (n,) by the solution; piv (n,) float64 scratch (row indices).
    Returns 0, or 1 if a pivot is exactly zero (a singular)."""
    n = a.shape[0]
    for k in range(n):
        p = k
        best = abs(a[k, k])
        for i in range(k + 1, n):
            if abs(a[i, k]) > best:
                best = abs(a[i, k])
                p = i
        piv[k] = p
        if best == 0.0:
            return 1
        if p != k:
            for j in range(n):
                t = a[k, j]
                a[k, j] = a[p, j]
                a[p, j] = t
        inverse = 1.0 / a[k, k]
        for i in range(k + 1, n):
            a[i, k] *= inverse
        for i in range(k + 1, n):   # rank-one update of the trailing block
            f = a[i, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    a[i, j] -= f * a[k, j]
    for k in range(n):              # P b
        p = int(piv[k])
        if p != k:
            t = b[k]
            b[k] = b[p]
            b[p] = t
    for i in range(n):              # L y = P b (unit diagonal)
        s = b[i]
        for j in range(i):
            s -= a[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):  # U x = y
        s = b[i]
        for j in range(i + 1, n):
            s -= a[i, j] * b[j]
        b[i] = s / a[i, i]
    return 0


@njit(cache=True, nogil=True, inline="always")
def _matvec(a, x, out):
    """out = a x (a (n, m), x (m,)), sums in column order."""
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * x[j]
        out[i] = s


@njit(cache=True, nogil=True, inline="always")
def integrate_state(body_int, manifold, nq_joints, nv_joints, q, v, dt, out):
    """out = q (+) v dt as robot.integrate (and kernels/rollout.py's update): q + v dt on a
    vector space, else each joint's manifold on the first nq_joints / nv_joints entries and the
    elastic coordinates q_f + v_f dt."""
    if not manifold:
        for i in range(q.shape[0]):
            out[i] = q[i] + v[i] * dt
        return
    _integrate_joints(body_int, q[:nq_joints], v[:nv_joints], dt, out[:nq_joints])
    for i in range(q.shape[0] - nq_joints):
        out[nq_joints + i] = v[nv_joints + i] * dt + q[nq_joints + i]


@njit(cache=True, nogil=True, inline="always")
def _dynamics(fd_address, bound, dims, forces, loaded, q, v, tau, out, tau_loaded, special):
    """out = f(q, v, tau): the C entry, or the loaded path with force elements, or (special not
    None) the prescribed joints' hybrid dynamics at the step's first sample (the Simulator
    evaluates every stage of the implicit schemes at the step's start time t), or a flexible
    tree's loaded forward dynamics (its force elements)."""
    if special is not None:
        entries, parts, n = special
        return special_forward_dynamics(entries, bound, dims, forces, loaded, parts, n,
                                        FIRST_STAGE, q, v, tau, out)
    if loaded:
        return loaded_tree_forward_dynamics(forces, q, v, tau, out, tau_loaded)
    return call_entry(fd_address, bound, dims, q, v, tau, out)


@njit(cache=True, nogil=True)
def loop_forward_dynamics(fd_address, bound, dims, forces, loops, loaded, q, v, tau, out,
                          tau_loaded):
    """out = f(q, v, tau) of the closed-loop robot: the loop solver's C entry, or with force
    elements the loaded path as robot.forward_dynamics runs it (the elements' loads at (q, v),
    the link wrenches into the loaded workspace, tau + their joint forces, the recursive solver
    on that workspace: kernels/rollout.py's loaded forward dynamics with loops). loops:
    kernels/rollout.py's loop tuple (items 3, 4, 5 the cuts' arrays, 7 the gains, 8 info, 9 the
    multipliers)."""
    if not loaded:
        return call_entry(fd_address, bound, dims, q, v, tau, out)
    (body_int, body_float, work, link_int, link_float, link_fext, element_int, element_float,
     link_wrench, joint_force, values, scratch) = forces
    force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench, joint_force, values, scratch)
    load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return forward_dynamics_checked(body_int, body_float, work, loops[3], loops[4], loops[5], q,
                                    v, tau_loaded, loops[7], out, loops[8], loops[9])


@njit(cache=True, nogil=True)
def implicit_euler_step(fd_address, bound, dims, forces, loaded, body_int, manifold, nq_joints,
                        nv_joints, q, v, tau, a1, h, rows, mats, q_next, v_next, special):
    """One linearly implicit Euler step of a tree (Simulator._implicit_euler with N = 1):
    (q (nq,), v (nv,)) -> (q_next, v_next) for the held forces tau (nv,), a1 = f(q, v, tau)
    (nv,) given, step h (s). rows (IMPLICIT_ROWS, >= max(nq, nv)), mats (IMPLICIT_MATS, nv, nv):
    the workspace. manifold: q (+) v dt on the joints' manifolds (else q + v dt). special: None,
    or (entries, parts, n) for prescribed joints (kernels/rollout_special.py, table row n) or
    force elements on a flexible tree.
    Returns 0, the forward dynamics' non-zero status, or SINGULAR."""
    nq, nv = q.shape[0], v.shape[0]
    v2, qs, p = rows[R_V2, :nv], rows[R_QS, :nq], rows[R_P, :nv]
    s, z, t, tau_loaded = rows[R_S, :nv], rows[R_Z, :nv], rows[R_T, :nv], rows[R_LOADED, :nv]
    unit = rows[R_U, :nv]
    a_q, a_v, lhs = mats[X_AQ], mats[X_AV], mats[X_LHS]
    for i in range(nv):
        unit[i] = 0.0
    for j in range(nv):
        unit[j] = 1.0
        # d f / d v along e_j: v2 = e_j 1e-7 + v (np.multiply, then +=)
        for i in range(nv):
            v2[i] = unit[i] * FD_STEP + v[i]
        status = _dynamics(fd_address, bound, dims, forces, loaded, q, v2, tau, p, tau_loaded,
                           special)
        if status:
            return status
        for i in range(nv):
            a_v[i, j] = (p[i] - a1[i]) / FD_STEP
        # d f / d q along e_j: q (+) e_j 1e-7
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, unit, FD_STEP, qs)
        status = _dynamics(fd_address, bound, dims, forces, loaded, qs, v, tau, p, tau_loaded,
                           special)
        if status:
            return status
        for i in range(nv):
            a_q[i, j] = (p[i] - a1[i]) / FD_STEP
        unit[j] = 0.0
    # lhs = eye - h A_v - h h A_q;  rhs = h a1 + h h (A_q s), s = v
    hh = h * h
    for i in range(nv):
        for j in range(nv):
            lhs[i, j] = ((1.0 if i == j else 0.0) - h * a_v[i, j]) - hh * a_q[i, j]
    _matvec(a_q, v, t)
    for i in range(nv):
        z[i] = h * a1[i] + hh * t[i]
    if lu_solve(lhs, z, rows[R_PIV, :nv]):
        return SINGULAR
    # v+ = v + h (a1 + h (A_q (s + z)) + A_v z);  q+ = q (+) v+ h
    for i in range(nv):
        s[i] = v[i] + z[i]
    _matvec(a_q, s, t)
    _matvec(a_v, z, p)
    for i in range(nv):
        v_next[i] = v[i] + h * ((a1[i] + h * t[i]) + p[i])
    integrate_state(body_int, manifold, nq_joints, nv_joints, q, v_next, h, q_next)
    return 0


@njit(cache=True, nogil=True, inline="always")
def _max_abs(x):
    """max(0, max |x_i|) (np.abs(x).max(initial=0.0))."""
    m = 0.0
    for i in range(x.shape[0]):
        m = max(m, abs(x[i]))
    return m


@njit(cache=True, nogil=True)
def symplectic_euler_step(fd_address, mm_address, bound, dims, forces, loaded, loops, closed,
                          body_int, manifold, nq_joints, nv_joints, q, v, tau, a1, h, rows, mats,
                          q_next, v_next, special, loop_parts, flexible_loops):
    """One symplectic Euler step (Simulator._symplectic_euler) of a tree or, closed (with
    loops: kernels/rollout.py's loop tuple), of rigid closed loops (the entries then the loop
    solver's and the tree's mass matrix on its arguments; with force elements the loop solver on
    the loaded workspace, loop_forward_dynamics; robot.step's projection follows in the caller):
    (q (nq,), v (nv,)) -> (q_next, v_next) for the held forces tau (nv,), a1 = f(q, v, tau)
    given, step h (s); workspace, manifold and special as implicit_euler_step (trees); loop_parts:
    None, or with prescribed joints on the closed loops (special then holds them) their KKT
    workspace: the hybrid dynamics of kernels/rollout_loop_prescribed.py at every iteration, at
    the step's first sample as the Simulator evaluates them. flexible_loops: None, or closed
    loops on a flexible tree (kernels/flexible_loop_part.py's part; closed False, the entries
    the flexible tree's): their dense solve at every iteration. Returns 0, the forward
    dynamics' non-zero status, MASS_FAILED or SINGULAR."""
    nq, nv = q.shape[0], v.shape[0]
    qs, acc, t = rows[R_QS, :nq], rows[R_P, :nv], rows[R_T, :nv]
    u, u_next, total = rows[R_U, :nv], rows[R_UN, :nv], rows[R_TAU, :nv]
    tau_loaded = rows[R_LOADED, :nv]
    mass, upper, lower = mats[X_MASS], mats[X_UPPER], mats[X_LOWER]
    if call_entry(mm_address, bound, dims, q, q, q, mass):
        return MASS_FAILED
    for i in range(nv):          # u = v + h qdd
        u[i] = v[i] + h * a1[i]
    for _ in range(SYMPLECTIC_ITERATIONS):
        # (dM/dq u) = (M(q (+) eps u) - M(q (+) -eps u)) / (2 eps)   (Simulator._mass_rate)
        eps = MASS_RATE_STEP / max(1.0, _max_abs(u))
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, u, eps, qs)
        if call_entry(mm_address, bound, dims, qs, qs, qs, upper):
            return MASS_FAILED
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, u, -eps, qs)
        if call_entry(mm_address, bound, dims, qs, qs, qs, lower):
            return MASS_FAILED
        two_eps = 2.0 * eps
        for i in range(nv):
            for j in range(nv):
                lower[i, j] = (upper[i, j] - lower[i, j]) / two_eps
        _matvec(lower, u, t)     # the extra force (dM/dq u) u, added to tau
        for i in range(nv):
            total[i] = tau[i] + t[i]
        if flexible_loops is not None:   # closed loops on a flexible tree
            status = flexible_loops_forward_dynamics(flexible_loops, q, u, total, acc)
        elif loop_parts is not None:   # prescribed joints on closed loops
            status = loop_prescribed_forward_dynamics(loops, forces, loaded, loop_parts,
                                                      special[1][0], special[2], FIRST_STAGE, q,
                                                      u, total, acc)
        elif closed and loaded:   # (without loads the loop solver's C entry, as on a tree)
            status = loop_forward_dynamics(fd_address, bound, dims, forces, loops, loaded, q, u,
                                           total, acc, tau_loaded)
        else:
            status = _dynamics(fd_address, bound, dims, forces, loaded, q, u, total, acc,
                               tau_loaded, special)
        if status:
            return status
        change = 0.0
        for i in range(nv):      # u_next = v + h acc
            u_next[i] = v[i] + h * acc[i]
            change = max(change, abs(u_next[i] - u[i]))
        for i in range(nv):
            u[i] = u_next[i]
        if change < SYMPLECTIC_TOLERANCE * max(1.0, _max_abs(u)):
            break
    # q+ = q (+) u h;  v+ = M(q+)^-1 (M(q) u)
    integrate_state(body_int, manifold, nq_joints, nv_joints, q, u, h, q_next)
    if call_entry(mm_address, bound, dims, q_next, q_next, q_next, upper):
        return MASS_FAILED
    _matvec(mass, u, v_next)
    if lu_solve(upper, v_next, rows[R_PIV, :nv]):
        return SINGULAR
    return 0
