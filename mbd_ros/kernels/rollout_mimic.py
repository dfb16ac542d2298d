"""Mimic couplings in the compiled rollouts (kernels/rollout.py), as robot.step runs them on a
tree without closed loops (robot/constraints.py `_minimal`, robot/mimic.py).

A mimicking joint m follows its leader l: q_m = r q_l + o, v_m = r v_l. With T (nv, nz) the
coupling matrix (v = T z, z the independent velocities: identity rows for the independent dofs,
r in the leader's column for a mimicking one), M and h = ID(q, v, 0) the tree's terms (with the
force elements' loads in the workspace and their joint forces added to tau, as robot.py runs
them), the forward dynamics are the minimal-coordinate form (docs/theory.md §5 end, J_l = T):

    (T^T M T) s' = T^T (tau - h - M eta''),    qdd = T s' + eta'',

eta''_m = -gamma_m = -(2 alpha G_m v + beta^2 g_m) on the mimicking dofs (the Baumgarte terms;
zero with the default gains (0, 0)), g_m = q_m - r q_l - o, G_m v = v_m - r v_l. robot.step
solves it with numpy (BLAS products, LAPACK's LU); here the products are summed in index order
and T^T M T is factored by Cholesky (it is symmetric positive definite): the same solution to
round-off (conftest.solve_tol), not bit for bit.

After each robot.step, robot.step projects the state onto the couplings when a residual max |g|
or max |G v| exceeds PROJECTION_TOLERANCE (an RK4 step adds ~1e-16: in practice never);
`coupling_residual_exceeds` tests it here, and the caller then returns to Python for that
projection (kernels/rollout.py NEEDS_PROJECTION).

Drives (robot.rollout(drives=...) on a mimic robot): the Plant's compensation b(q, v) is
robot.inverse_dynamics(q, v, 0) (Plant._compensation), on a mimic robot the actuated forces of
Constraints.actuation: b = S a, a = (N^T S)^+ N^T h with N an orthonormal basis of null(G),
S the actuated dofs (the independent ones: T's identity rows, a free base's dofs among them).
With N = T R (R invertible: range(T) = null(G)) and T^T S = I (T restricted to the independent
rows is the identity), N^T S = R^T and a = R^-T R^T T^T h = T^T h: the leaders take their own
h plus r times their followers', b_m = 0 on the mimicking dofs (`mimic_drive_bias`; equal to
the SVD and lstsq of Constraints.actuation to round-off, test/test_rollout_mimic.py). As there,
qdd = 0 must satisfy the coupling rows with the Baumgarte terms, |2 alpha G_m v + beta^2 g_m| <=
1e-9 (else robot.inverse_dynamics raises and the row's drive terms fail).

mimic: robot/rollout_compiled.py's tuple (coupling T (nv, nz), pair_int (m, 4) int64 rows
(iq_m, iq_l, iv_m, iv_l), pair_float (m, 2) rows (r, o), gains (2,) (alpha, beta); per-thread
scratch: mass (nv, nv), mass_t (nv, nz), reduced (nz, nz), rhs (nv,), bias (nv,), rhs_z (nz,),
eta (nv,), zero (nv,); then the tangent basis N (nv, k) of robot.constraint_basis, shared, for
implicit Euler: kernels/rollout_mimic_implicit.py). Without couplings pair_int has no rows.
"""
import math

from numba import njit

from .checked import inverse_dynamics as _tree_inverse_dynamics
from .entry_call import call_entry
from .force_elements import force_element_loads
from .rollout_loads import loaded_tree_inverse_dynamics
from .wrenches import load_link_wrenches

M_COUPLING, M_PAIR_INT, M_PAIR_FLOAT, M_GAINS, M_MASS, M_MASS_T, M_REDUCED, M_RHS, M_BIAS, \
    M_RHS_Z, M_ETA, M_ZERO, M_BASIS = range(13)
PAIR_IQ_M, PAIR_IQ_L, PAIR_IV_M, PAIR_IV_L = range(4)
PAIR_RATIO, PAIR_OFFSET = range(2)
MASS_MATRIX, INVERSE_DYNAMICS = 1, 2   # entries[]: as kernels/rollout.py MM, ID
NOT_POSITIVE_DEFINITE, NOT_FINITE = 1, 2   # statuses: T^T M T not positive definite, qdd not finite
COUPLING_BROKEN = 3   # mimic_drive_bias: qdd = 0 breaks a coupling row (Baumgarte terms)
# Constraints.actuation's test of a mimic row: |G_m qdd + gamma_m| <= 1e-9 max(1, |qdd_l|)
COUPLING_ROW_TOLERANCE = 1e-9


@njit(cache=True, nogil=True, inline="always")
def mimic_reduced_terms(entries, bound, dims, forces, loaded, coupling, pair_int, pair_float,
                        gains, mass, mass_t, reduced, rhs, bias, rhs_z, eta, zero, q, v, tau):
    """The reduced system of the coupled dynamics at (q, v) for tau (nv,) (module docstring;
    the mimic tuple's arrays, unpacked once by the caller: each tuple access costs reference
    counts per call): reduced (nz, nz) = T^T M T (its lower triangle), rhs_z (nz,) =
    T^T (tau - h - M eta''), eta (nv,) = eta''. Returns 0 or the failing kernel's status."""
    nv, nz = coupling.shape[0], coupling.shape[1]
    if loaded:   # robot._apply_loads: tau + the elements' joint forces, the loaded workspace
        (body_int, body_float, work, link_int, link_float, link_fext, element_int,
         element_float, link_wrench, joint_force, values, scratch) = forces
        force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                            element_float, q, v, link_wrench, joint_force, values, scratch)
        load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
        for i in range(nv):
            rhs[i] = tau[i] + joint_force[i]
        status = _tree_inverse_dynamics(body_int, body_float, work, q, v, zero, bias)
    else:
        for i in range(nv):
            rhs[i] = tau[i]
        status = call_entry(entries[INVERSE_DYNAMICS], bound, dims, q, v, zero, bias)
    if status:
        return status
    status = call_entry(entries[MASS_MATRIX], bound, dims, q, q, q, mass)
    if status:
        return status
    for i in range(nv):          # tau - h (Constraints._tree_terms)
        rhs[i] = rhs[i] - bias[i]
        eta[i] = 0.0
    alpha, beta = gains[0], gains[1]
    if alpha != 0.0 or beta != 0.0:   # eta''_m = -(2 alpha G_m v + beta^2 g_m)
        for k in range(pair_int.shape[0]):
            ratio = pair_float[k, PAIR_RATIO]
            g = q[pair_int[k, PAIR_IQ_M]] - ratio * q[pair_int[k, PAIR_IQ_L]] - \
                pair_float[k, PAIR_OFFSET]
            gv = v[pair_int[k, PAIR_IV_M]] - ratio * v[pair_int[k, PAIR_IV_L]]
            eta[pair_int[k, PAIR_IV_M]] = -(2.0 * alpha * gv + beta * beta * g)
        for i in range(nv):      # rhs - M eta''
            s = 0.0
            for j in range(nv):
                s += mass[i, j] * eta[j]
            rhs[i] -= s
    # M T, then T^T M T (symmetric: its lower triangle) and T^T rhs
    for i in range(nv):
        for c in range(nz):
            s = 0.0
            for j in range(nv):
                s += mass[i, j] * coupling[j, c]
            mass_t[i, c] = s
    for a in range(nz):
        s = 0.0
        for i in range(nv):
            s += coupling[i, a] * rhs[i]
        rhs_z[a] = s
        for c in range(a + 1):
            s = 0.0
            for i in range(nv):
                s += coupling[i, a] * mass_t[i, c]
            reduced[a, c] = s
    return 0


@njit(cache=True, nogil=True)
def mimic_forward_dynamics(entries, bound, dims, forces, loaded, mimic, q, v, tau, out):
    """out (nv,) = the coupled forward dynamics at (q, v) for tau (nv,) (module docstring), as
    robot.forward_dynamics on a tree with mimic couplings. loaded: the force elements' path
    (forces: kernels/rollout.py's tuple). Returns 0, or the failing kernel's status."""
    (coupling, pair_int, pair_float, gains, mass, mass_t, reduced, rhs, bias, rhs_z, eta, zero,
     _) = mimic
    status = mimic_reduced_terms(entries, bound, dims, forces, loaded, coupling, pair_int,
                                 pair_float, gains, mass, mass_t, reduced, rhs, bias, rhs_z, eta,
                                 zero, q, v, tau)
    if status:
        return status
    nv, nz = coupling.shape[0], coupling.shape[1]
    # Cholesky T^T M T = L L^T in the lower triangle, then L y = rhs_z, L^T s' = y (in rhs_z)
    for b in range(nz):
        s = reduced[b, b]
        for k in range(b):
            s -= reduced[b, k] * reduced[b, k]
        if not s > 0.0:
            return NOT_POSITIVE_DEFINITE
        d = math.sqrt(s)
        reduced[b, b] = d
        for a in range(b + 1, nz):
            s = reduced[a, b]
            for k in range(b):
                s -= reduced[a, k] * reduced[b, k]
            reduced[a, b] = s / d
    for a in range(nz):
        s = rhs_z[a]
        for k in range(a):
            s -= reduced[a, k] * rhs_z[k]
        rhs_z[a] = s / reduced[a, a]
    for a in range(nz - 1, -1, -1):
        s = rhs_z[a]
        for k in range(a + 1, nz):
            s -= reduced[k, a] * rhs_z[k]
        rhs_z[a] = s / reduced[a, a]
    for i in range(nv):          # qdd = T s' + eta''
        s = 0.0
        for c in range(nz):
            s += coupling[i, c] * rhs_z[c]
        out[i] = s + eta[i]
    for i in range(nv):          # (robot.py raises for a non-finite result)
        if not math.isfinite(out[i]):
            return NOT_FINITE
    return 0


@njit(cache=True, nogil=True)
def coupling_residual_exceeds(mimic, q, v, tolerance):
    """True when max |g_m| or max |G_m v| of the couplings at (q, v) exceeds `tolerance` (robot.step
    then projects: robot.closure_residual against PROJECTION_TOLERANCE)."""
    pair_int, pair_float = mimic[M_PAIR_INT], mimic[M_PAIR_FLOAT]
    for k in range(pair_int.shape[0]):
        ratio = pair_float[k, PAIR_RATIO]
        g = q[pair_int[k, PAIR_IQ_M]] - ratio * q[pair_int[k, PAIR_IQ_L]] - \
            pair_float[k, PAIR_OFFSET]
        gv = v[pair_int[k, PAIR_IV_M]] - ratio * v[pair_int[k, PAIR_IV_L]]
        if abs(g) > tolerance or abs(gv) > tolerance:
            return True
    return False


@njit(cache=True, nogil=True)
def mimic_drive_bias(entries, bound, dims, forces, loaded, mimic, q, v, zero, out):
    """out (nv,) = the Plant's drive compensation on a mimic robot, robot.inverse_dynamics(q,
    v, 0) = S T^T h (module docstring): h = ID(q, v, 0) (the C entry, or with the force
    elements' loads), then each leader's entry plus r times its follower's, the followers' 0.
    zero (nv,): zeros. Returns 0, the ID kernel's status, or COUPLING_BROKEN."""
    pair_int, pair_float, gains = mimic[M_PAIR_INT], mimic[M_PAIR_FLOAT], mimic[M_GAINS]
    alpha, beta = gains[0], gains[1]
    if alpha != 0.0 or beta != 0.0:   # qdd = 0 must pass the coupling rows (actuation's test)
        for k in range(pair_int.shape[0]):
            ratio = pair_float[k, PAIR_RATIO]
            g = q[pair_int[k, PAIR_IQ_M]] - ratio * q[pair_int[k, PAIR_IQ_L]] - \
                pair_float[k, PAIR_OFFSET]
            gv = v[pair_int[k, PAIR_IV_M]] - ratio * v[pair_int[k, PAIR_IV_L]]
            if not abs(2.0 * alpha * gv + beta * beta * g) <= COUPLING_ROW_TOLERANCE:
                return COUPLING_BROKEN
    if loaded:
        status = loaded_tree_inverse_dynamics(forces, q, v, zero, out)
    else:
        status = call_entry(entries[INVERSE_DYNAMICS], bound, dims, q, v, zero, out)
    if status:
        return status
    for k in range(pair_int.shape[0]):   # a = T^T h on the leaders
        out[pair_int[k, PAIR_IV_L]] += pair_float[k, PAIR_RATIO] * out[pair_int[k, PAIR_IV_M]]
    for k in range(pair_int.shape[0]):   # no drive force on the mimicking dofs (S a)
        out[pair_int[k, PAIR_IV_M]] = 0.0
    return 0
