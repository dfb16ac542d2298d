"""Prescribed joints together with mimic couplings in the compiled rollouts (kernels/rollout.py):
robot.step's hybrid dynamics of a tree with couplings, in the couplings' minimal coordinates.

robot/prescribed.py `solve` takes the dense KKT system of M qdd + h = tau + u + G^T lambda,
G qdd + gamma = 0, with qdd_p given and u zero on the free joints, by least squares. When every
prescribed joint is an independent dof (a leader or an uncoupled joint; robot/rollout_prescribed.py
refuses a prescribed follower) the solution is unique wherever T^T M T restricted to the free
reduced coordinates is positive definite, and it is this one: with qdd = T s + eta'' (range(T) =
null(G), T the coupling matrix, eta'' the Baumgarte terms on the followers,
kernels/rollout_mimic.py) and T^T G^T = 0, the equations times T^T are

    (T^T M T) s = T^T (tau - h - M eta'') + T^T u,

T^T u nonzero only in the prescribed (independent) coordinates, whose s_p = qdd_p (eta'' is zero
on independent dofs): the free rows are a hybrid tree system in z,

    (T^T M T)_ff s_f = [T^T (tau - h - M eta'')]_f - (T^T M T)_fp qdd_p     (kernels/hybrid.py),

then qdd = T s + eta''. numpy's lstsq (an SVD) and this Cholesky solve give the same solution to
round-off (conftest.solve_tol of the KKT matrix), not bit for bit.

both: robot/rollout_prescribed.py's tuple (order (nz,) int64: the prescribed joints' reduced
indices in the table's order, then the free ones ascending; per thread: vectors (5, nz) rows
rhs, s, u, zero, qdd_z; matrices (2, nz, nz) full, lower). Three arrays, not nine: every array
of the parts tuple costs reference counts at each stage call of every special path (the
flexible force elements' RK4 step was 5 % slower with nine). Without the combination order is
empty.
"""
import math

from numba import njit

from .hybrid import hybrid_tree_solve
from .rollout_mimic import NOT_FINITE, NOT_POSITIVE_DEFINITE, mimic_reduced_terms
from .rollout_prescribed import P_FIXED_V, P_TABLE

B_ORDER, B_VECTORS, B_MATRICES = range(3)


@njit(cache=True, nogil=True)
def prescribed_mimic_forward_dynamics(entries, bound, dims, forces, loaded, prescribed, mimic,
                                      both, n, c, q, v, tau, out):
    """out (nv,) = the hybrid dynamics of a tree with mimic couplings at (q, v) for tau (nv,),
    the prescribed joints' accelerations from table[n, c] of `prescribed` (module docstring;
    robot.forward_dynamics(q, v, tau, prescribed=...)). loaded: the force elements' path.
    Returns 0, or the failing kernel's status."""
    (coupling, pair_int, pair_float, gains, mass, mass_t, reduced, rhs_m, bias, rhs_z, eta, zero_m,
     _) = mimic
    status = mimic_reduced_terms(entries, bound, dims, forces, loaded, coupling, pair_int,
                                 pair_float, gains, mass, mass_t, reduced, rhs_m, bias, rhs_z, eta,
                                 zero_m, q, v, tau)
    if status:
        return status
    nv, nz = coupling.shape[0], coupling.shape[1]
    n_fixed = prescribed[P_FIXED_V].shape[0]
    order, vectors, matrices = both
    fixed_z, free_z, full, lower = order[:n_fixed], order[n_fixed:], matrices[0], matrices[1]
    rhs, s, u, zero, qdd_z = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4, :n_fixed]
    for a in range(nz):          # T^T M T from its lower triangle
        for b in range(a + 1):
            full[a, b] = reduced[a, b]
            full[b, a] = reduced[a, b]
    table = prescribed[P_TABLE]
    for j in range(fixed_z.shape[0]):   # s_p = qdd_p (an independent dof: eta''_p = 0)
        qdd_z[j] = table[n, c, j, 2]
    if hybrid_tree_solve(full, zero, rhs_z, free_z, fixed_z, qdd_z, lower, rhs, s, u):
        return NOT_POSITIVE_DEFINITE
    for i in range(nv):          # qdd = T s + eta''
        acc = 0.0
        for a in range(nz):
            acc += coupling[i, a] * s[a]
        out[i] = acc + eta[i]
        if not math.isfinite(out[i]):
            return NOT_FINITE
    return 0
