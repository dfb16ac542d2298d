"""cos and sin of every coordinate of q at once, in a loop the compiler vectorizes (the whole-tree
pose passes of centroidal.py: their revolute joints' Rodrigues rotations).

Why: libm's sin and cos are one call each per joint (~9 ns per joint here, half of talos's
center_of_mass), and a call is never vectorized. `cos_sin` is Cephes' double-precision sin/cos
(S. L. Moshier, Cephes Math Library, sin.c: the same minimax polynomials on [-pi/4, pi/4]) with
Cody & Waite's three-part argument reduction (W. J. Cody, W. Waite, Software Manual for the
Elementary Functions, 1980) by the nearest multiple k of pi/2, branch-free (the quadrant by
selects), so a loop of it over a vector runs in SIMD lanes: ~2 ns per coordinate. Accurate to
about one ulp (absolute error <= 2.3e-16 measured over |x| <= 1e8); k P1 is exact for
|x| < REDUCTION_LIMIT, beyond which `cos_sin_rows` recomputes the coordinate with libm.

Layout: `cos_sin_rows(q, nq, work, row)` writes cos q[k] at work[row + 2 b, k - b W] and sin q[k] at
work[row + 2 b + 1, k - b W] for the block b = k // W of W = work.shape[1] coordinates
(`rows_needed(nq, W)` rows in all); the caller reads them with `cos_sin_of`.
"""
import math

from numba import njit

# pi/2 = P1 + P2 + P3, P1 and P2 with trailing zero bits (Cephes' DP1-DP3 for pi/4, doubled):
# k P1 and k P2 are exact for |k| < 2^29
P1 = 2.0 * 7.85398125648498535156E-1
P2 = 2.0 * 3.77489470793079817668E-8
P3 = 2.0 * 2.69515142907905952645E-15
TWO_OVER_PI = 0.63661977236758134308
REDUCTION_LIMIT = 1.0e8


@njit(inline="always")
def cos_sin(x):
    """(cos x, sin x) for finite |x| < REDUCTION_LIMIT (module docstring); branch-free."""
    k = math.floor(x * TWO_OVER_PI + 0.5)
    z = ((x - k * P1) - k * P2) - k * P3           # x - k pi/2, |z| <= pi/4
    zz = z * z
    s = z + z * zz * (((((1.58962301576546568060E-10 * zz - 2.50507477628578072866E-8) * zz
                         + 2.75573136213857245213E-6) * zz - 1.98412698295895385996E-4) * zz
                       + 8.33333333332211858878E-3) * zz - 1.66666666666666307295E-1)
    c = 1.0 - 0.5 * zz + zz * zz * (((((-1.13585365213876817300E-11 * zz
                                         + 2.08757008419747316778E-9) * zz
                                        - 2.75573141792967388112E-7) * zz
                                       + 2.48015872888517045348E-5) * zz
                                      - 1.38888888888730564116E-3) * zz
                                     + 4.16666666666665929218E-2)
    quadrant = int(k) & 3
    swap = (quadrant & 1) != 0
    cos_x = s if swap else c
    sin_x = c if swap else s
    if quadrant == 1 or quadrant == 2:
        cos_x = -cos_x
    if quadrant >= 2:
        sin_x = -sin_x
    return cos_x, sin_x


@njit(inline="always")
def rows_needed(nq, width):
    """Rows of a `width`-column workspace that cos_sin_rows fills for nq coordinates."""
    return 2 * ((nq + width - 1) // width)


@njit(inline="always")
def cos_sin_rows(q, nq, work, row):
    """cos and sin of q[k], k < nq, into work's rows from `row` (module docstring's layout). q
    finite (the kernels check it first)."""
    width = work.shape[1]
    far = 0
    for start in range(0, nq, width):
        r = row + 2 * (start // width)
        n = min(width, nq - start)
        for k in range(n):                 # the vectorized loop
            x = q[start + k]
            c, s = cos_sin(x)
            work[r, k] = c
            work[r + 1, k] = s
            far += abs(x) >= REDUCTION_LIMIT
    if far:
        for k in range(nq):
            x = q[k]
            if abs(x) >= REDUCTION_LIMIT:
                r = row + 2 * (k // width)
                work[r, k % width] = math.cos(x)
                work[r + 1, k % width] = math.sin(x)


@njit(inline="always")
def cos_sin_of(work, row, k):
    """(cos q[k], sin q[k]) as cos_sin_rows stored them (no division in the usual case of a
    first-block coordinate)."""
    width = work.shape[1]
    if k < width:
        return work[row, k], work[row + 1, k]
    r = row + 2 * (k // width)
    c = k % width
    return work[r, c], work[r + 1, c]
