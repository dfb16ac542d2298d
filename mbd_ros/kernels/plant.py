"""Small dense kernels of the simulated plant (mbd_ros.plant, drives, limits): the inverse of
the joint-space mass matrix by Cholesky, without allocation. M is symmetric positive definite
(CRBA); n is small (the robot's nv), so the O(n^3) dense inverse costs microseconds in numba
where numpy.linalg.inv costs tens of microseconds of call overhead."""
import math

from numba import njit


@njit(cache=True)
def spd_inverse(m, lower, out):
    """out (n, n) = M^-1 for M (n, n) symmetric positive definite; lower (n, n) scratch holds
    the Cholesky factor L (M = L L^T). Returns 0, or 1 if M is not positive definite (out is
    then undefined)."""
    n = m.shape[0]
    # ---- M = L L^T
    for j in range(n):
        s = m[j, j]
        for k in range(j):
            s -= lower[j, k] * lower[j, k]
        if not s > 0.0:
            return 1
        d = math.sqrt(s)
        lower[j, j] = d
        for i in range(j + 1, n):
            s = m[i, j]
            for k in range(j):
                s -= lower[i, k] * lower[j, k]
            lower[i, j] = s / d
    # ---- out = L^-1 (lower triangular), written into out's lower triangle
    for j in range(n):
        out[j, j] = 1.0 / lower[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= lower[i, k] * out[k, j]
            out[i, j] = s / lower[i, i]
    # ---- M^-1 = L^-T L^-1: (i, j) = sum_k L^-1[k, i] L^-1[k, j], k >= max(i, j)
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, n):
                s += out[k, i] * out[k, j]
            lower[i, j] = s
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = lower[i, j]
            out[j, i] = lower[i, j]
    return 0


@njit(cache=True)
def inverse_diagonal(m, lower, scratch, out):
    """out (n,) = diag(M^-1) (scratch, lower: (n, n)); returns spd_inverse's status."""
    status = spd_inverse(m, lower, scratch)
    for i in range(m.shape[0]):
        out[i] = scratch[i, i]
    return status
