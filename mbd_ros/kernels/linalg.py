"""Small dense symmetric solves, allocation-free, for the loop-closure multipliers (docs/theory.md §5).

The operational-space matrix K = G_s A (= G M^-1 G^T) of the cuts is symmetric positive
semi-definite. It is singular when constraints are redundant (a planar four-bar closed by a
revolute cut in 3-D: rank 2 of 5); the multipliers are then not unique and we return the
minimum-norm solution (docs/theory.md §5, docs/design.md). A Cholesky factorisation serves the regular
case; when it meets a pivot below the rank tolerance, a cyclic Jacobi eigen-decomposition gives
the pseudo-inverse. Jacobi is slow only for large systems (O(n^3) per sweep, ~6-10 sweeps) and
exact to round-off, which matters more here than speed.
"""
import math

from numba import njit

# Relative tolerance of the numerical rank: eigenvalues of K below RANK_TOLERANCE * max eigenvalue
# count as zero (redundant constraint directions). Round-off in K is ~1e-16 relative; genuine
# near-singularities of well-posed mechanisms are far above 1e-9.
RANK_TOLERANCE = 1e-9


@njit(cache=True)
def _cholesky_solve(matrix, n, rhs, factor, out):
    """Solve matrix x = rhs by Cholesky; False if a pivot is below the rank tolerance."""
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(matrix[i, i]))
    if not scale > 0.0:
        return False
    for j in range(n):
        d = matrix[j, j]
        for m in range(j):
            d -= factor[j, m] * factor[j, m]
        if not d > RANK_TOLERANCE * scale:
            return False
        d = math.sqrt(d)
        factor[j, j] = d
        for i in range(j + 1, n):
            s = matrix[i, j]
            for m in range(j):
                s -= factor[i, m] * factor[j, m]
            factor[i, j] = s / d
    for i in range(n):                      # L y = rhs
        s = rhs[i]
        for m in range(i):
            s -= factor[i, m] * out[m]
        out[i] = s / factor[i, i]
    for i in range(n - 1, -1, -1):          # L^T x = y
        s = out[i]
        for m in range(i + 1, n):
            s -= factor[m, i] * out[m]
        out[i] = s / factor[i, i]
    return True


@njit(cache=True)
def symmetric_eigen(matrix, n, values, vectors, scratch):
    """Eigen-decomposition of a symmetric n x n matrix by cyclic Jacobi rotations.

    values (n,) and vectors (n, n) (columns) receive the result; scratch (n, n) is overwritten
    with the rotated matrix. Converges quadratically; stops when the off-diagonal part is below
    1e-15 of the Frobenius norm (at most 50 sweeps).
    """
    norm2 = 0.0
    for i in range(n):
        for j in range(n):
            scratch[i, j] = matrix[i, j]
            vectors[i, j] = 1.0 if i == j else 0.0
            norm2 += matrix[i, j] * matrix[i, j]
    for _ in range(50):
        off = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                off += scratch[i, j] * scratch[i, j]
        if off <= 1e-30 * norm2 or off == 0.0:
            break
        for p in range(n):
            for r in range(p + 1, n):
                apr = scratch[p, r]
                if apr == 0.0:
                    continue
                theta = (scratch[r, r] - scratch[p, p]) / (2.0 * apr)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):  # columns p, r
                    akp = scratch[k, p]
                    akr = scratch[k, r]
                    scratch[k, p] = c * akp - s * akr
                    scratch[k, r] = s * akp + c * akr
                for k in range(n):  # rows p, r
                    apk = scratch[p, k]
                    ark = scratch[r, k]
                    scratch[p, k] = c * apk - s * ark
                    scratch[r, k] = s * apk + c * ark
                for k in range(n):
                    vkp = vectors[k, p]
                    vkr = vectors[k, r]
                    vectors[k, p] = c * vkp - s * vkr
                    vectors[k, r] = s * vkp + c * vkr
    for i in range(n):
        values[i] = scratch[i, i]


@njit(cache=True)
def solve_psd_min_norm(matrix, n, rhs, out, factor, values, vectors):
    """Minimum-norm least-squares solution of matrix x = rhs for a symmetric positive
    semi-definite n x n matrix; returns its numerical rank (n when the Cholesky path succeeds).

    Workspace: factor (n, n), values (n,), vectors (n, n).
    """
    if n == 0:
        return 0
    if _cholesky_solve(matrix, n, rhs, factor, out):
        return n
    symmetric_eigen(matrix, n, values, vectors, factor)
    largest = 0.0
    for i in range(n):
        largest = max(largest, abs(values[i]))
    rank = 0
    for i in range(n):
        out[i] = 0.0
    for k in range(n):
        if values[k] > RANK_TOLERANCE * largest:
            rank += 1
            projection = 0.0
            for i in range(n):
                projection += vectors[i, k] * rhs[i]
            projection /= values[k]
            for i in range(n):
                out[i] += projection * vectors[i, k]
    return rank
