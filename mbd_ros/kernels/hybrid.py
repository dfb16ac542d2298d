"""Dense hybrid dynamics of a tree (prescribed joints, docs/theory.md §3): with the mass matrix M
and the bias h = ID(q, v, 0) given, the free joints' accelerations and the prescribed joints'
drive forces, without allocation (the numpy version's call overhead was ~10x the arithmetic).

    M_ff qdd_f = tau_f - h_f - M_fp qdd_p            (Cholesky of M_ff)
    u_p = (M qdd + h - tau)_p,   u_f = 0
"""
import math

from numba import njit


@njit(cache=True)
def hybrid_tree_solve(mass, bias, tau, free, fixed, qdd_fixed, lower, rhs, qdd_out, u_out):
    """mass (n, n), bias (n,), tau (n,): M, h, drive forces; free (nf,), fixed (np,): v indices;
    qdd_fixed (np,): the prescribed accelerations; lower (n, n), rhs (n,): scratch.
    Writes qdd_out (n,) and u_out (n,). Returns 0, or 1 if M_ff is not positive definite."""
    n_free = free.shape[0]
    n_fixed = fixed.shape[0]
    for i in range(qdd_out.shape[0]):
        qdd_out[i] = 0.0
        u_out[i] = 0.0
    for k in range(n_fixed):
        qdd_out[fixed[k]] = qdd_fixed[k]
    # rhs_f = tau_f - h_f - M_fp qdd_p
    for a in range(n_free):
        i = free[a]
        s = tau[i] - bias[i]
        for k in range(n_fixed):
            s -= mass[i, fixed[k]] * qdd_fixed[k]
        rhs[a] = s
    # M_ff = L L^T (lower triangle of `lower`, free-block numbering)
    for b in range(n_free):
        jb = free[b]
        s = mass[jb, jb]
        for k in range(b):
            s -= lower[b, k] * lower[b, k]
        if not s > 0.0:
            return 1
        d = math.sqrt(s)
        lower[b, b] = d
        for a in range(b + 1, n_free):
            s = mass[free[a], jb]
            for k in range(b):
                s -= lower[a, k] * lower[b, k]
            lower[a, b] = s / d
    # forward then back substitution: L y = rhs, L^T x = y (in rhs)
    for a in range(n_free):
        s = rhs[a]
        for k in range(a):
            s -= lower[a, k] * rhs[k]
        rhs[a] = s / lower[a, a]
    for a in range(n_free - 1, -1, -1):
        s = rhs[a]
        for k in range(a + 1, n_free):
            s -= lower[k, a] * rhs[k]
        rhs[a] = s / lower[a, a]
    for a in range(n_free):
        qdd_out[free[a]] = rhs[a]
    # u_p = M_p. qdd + h_p - tau_p
    n = mass.shape[0]
    for k in range(n_fixed):
        i = fixed[k]
        s = bias[i] - tau[i]
        for j in range(n):
            s += mass[i, j] * qdd_out[j]
        u_out[i] = s
    return 0
