"""Small dense symmetric solves, allocation-free, for the loop-closure multipliers (docs/theory.md §5).

The operational-space matrix K = G_s A (= G M^-1 G^T) of the cuts is symmetric positive
semi-definite. It is singular when constraints are redundant (a planar four-bar closed by a
revolute cut in 3-D: rank 2 of 5); the multipliers are then not unique and we return the
minimum-norm solution (docs/theory.md §5, docs/design.md). A Cholesky factorisation serves the regular
case; when it meets a pivot below the rank tolerance, a cyclic Jacobi eigen-decomposition gives
the pseudo-inverse. Jacobi is slow only for large systems (O(n^3) per sweep, ~6-10 sweeps) and
exact to round-off, which matters more here than speed.

Storage (kernel style of the package): every matrix and vector lives in columns of one 2-D
array `m` (the closed-loop kernels' loop workspace, one row per constraint row), addressed by
column offsets: matrix entry (i, j) at m[i, mat + j], vector entry i at m[i, col]. No views are
made (each would cost numba an atomic reference-count pair).
"""
import math

from numba import njit

# Relative tolerance of the numerical rank: eigenvalues of K below RANK_TOLERANCE * max eigenvalue
# count as zero (redundant constraint directions). Round-off in K is ~1e-16 relative; genuine
# near-singularities of well-posed mechanisms are far above 1e-9.
RANK_TOLERANCE = 1e-9


@njit(cache=True, inline="always")
def cholesky_solve(m, mat, n, rhs, factor, out):
    """Solve K x = r for the symmetric n x n K = m[:n, mat:mat+n] (lower triangle read) and
    r = m[:n, rhs] by Cholesky, K = F F^T with F in m[:, factor:factor+n] (lower triangle), into
    m[:n, out]; False (and x unset) when a pivot is below RANK_TOLERANCE of the largest diagonal
    entry: K is singular or nearly so (redundant constraints)."""
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(m[i, mat + i]))
    if not scale > 0.0:
        return False
    for j in range(n):
        d = m[j, mat + j]
        for k in range(j):
            d -= m[j, factor + k] * m[j, factor + k]
        if not d > RANK_TOLERANCE * scale:
            return False
        d = math.sqrt(d)
        m[j, factor + j] = d
        for i in range(j + 1, n):
            s = m[i, mat + j]
            for k in range(j):
                s -= m[i, factor + k] * m[j, factor + k]
            m[i, factor + j] = s / d
    for i in range(n):                      # F y = r
        s = m[i, rhs]
        for k in range(i):
            s -= m[i, factor + k] * m[k, out]
        m[i, out] = s / m[i, factor + i]
    for i in range(n - 1, -1, -1):          # F^T x = y
        s = m[i, out]
        for k in range(i + 1, n):
            s -= m[k, factor + i] * m[k, out]
        m[i, out] = s / m[i, factor + i]
    return True


@njit(cache=True)
def symmetric_eigen(m, mat, n, values, vectors, scratch):
    """Eigen-decomposition of the symmetric n x n K = m[:n, mat:mat+n] by cyclic Jacobi rotations.

    Eigenvalues into m[:n, values], eigenvectors into the columns of m[:n, vectors:vectors+n];
    m[:n, scratch:scratch+n] is overwritten with the rotated matrix. Converges quadratically;
    stops when the off-diagonal part is below 1e-15 of the Frobenius norm (at most 50 sweeps).
    """
    norm2 = 0.0
    for i in range(n):
        for j in range(n):
            m[i, scratch + j] = m[i, mat + j]
            m[i, vectors + j] = 1.0 if i == j else 0.0
            norm2 += m[i, mat + j] * m[i, mat + j]
    for _ in range(50):
        off = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                off += m[i, scratch + j] * m[i, scratch + j]
        if off <= 1e-30 * norm2 or off == 0.0:
            break
        for p in range(n):
            for r in range(p + 1, n):
                apr = m[p, scratch + r]
                if apr == 0.0:
                    continue
                theta = (m[r, scratch + r] - m[p, scratch + p]) / (2.0 * apr)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):  # columns p, r
                    akp = m[k, scratch + p]
                    akr = m[k, scratch + r]
                    m[k, scratch + p] = c * akp - s * akr
                    m[k, scratch + r] = s * akp + c * akr
                for k in range(n):  # rows p, r
                    apk = m[p, scratch + k]
                    ark = m[r, scratch + k]
                    m[p, scratch + k] = c * apk - s * ark
                    m[r, scratch + k] = s * apk + c * ark
                for k in range(n):
                    vkp = m[k, vectors + p]
                    vkr = m[k, vectors + r]
                    m[k, vectors + p] = c * vkp - s * vkr
                    m[k, vectors + r] = s * vkp + c * vkr
    for i in range(n):
        m[i, values] = m[i, scratch + i]


@njit(cache=True)
def pseudo_inverse_solve(m, mat, n, rhs, out, values, vectors, scratch):
    """Minimum-norm least-squares x = K^+ r of a symmetric positive semi-definite K (the
    storage of cholesky_solve) from its eigen-decomposition (symmetric_eigen): eigenvalues
    below RANK_TOLERANCE of the largest count as zero. Returns the numerical rank of K."""
    symmetric_eigen(m, mat, n, values, vectors, scratch)
    largest = 0.0
    for i in range(n):
        largest = max(largest, abs(m[i, values]))
    rank = 0
    for i in range(n):
        m[i, out] = 0.0
    for k in range(n):
        if m[k, values] > RANK_TOLERANCE * largest:
            rank += 1
            projection = 0.0
            for i in range(n):
                projection += m[i, vectors + k] * m[i, rhs]
            projection /= m[k, values]
            for i in range(n):
                m[i, out] += projection * m[i, vectors + k]
    return rank


@njit(cache=True, inline="always")
def solve_psd_min_norm(m, mat, n, rhs, out, factor, values, vectors):
    """Minimum-norm least-squares solution x (into m[:n, out]) of K x = r for a symmetric
    positive semi-definite n x n K (storage of cholesky_solve); returns its numerical rank (n
    when the Cholesky path succeeds). Cholesky first; the eigen-decomposition (out of line)
    only when it meets a pivot below the rank tolerance. Scratch: columns factor:factor+n,
    values, vectors:vectors+n."""
    if n == 0:
        return 0
    if cholesky_solve(m, mat, n, rhs, factor, out):
        return n
    return pseudo_inverse_solve(m, mat, n, rhs, out, values, vectors, factor)
