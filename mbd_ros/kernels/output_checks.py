"""Checks of an entry kernel's output that the Python wrappers would otherwise pay for on the hot
path (aba.forward_dynamics, rnea.inverse_dynamics run them inside the one kernel call):
- an output that overlaps an input (the recursions read q, v, tau after writing the output) is
  refused with STATUS_ALIASED before anything is written: the wrapper then computes into a
  private array;
- a result that is not finite (an overflow inside, e.g. v = 1e154) is reported as
  STATUS_NOT_FINITE: the wrapper raises ValueError instead of returning NaN.
"""
from numba import njit

STATUS_ALIASED = 900       # the output array overlaps an input
STATUS_NOT_FINITE = 901    # the result is not finite (overflow inside the recursion)


@njit(inline="always")
def overlaps(a, b):
    """True when the memory of the 1-D float64 arrays a and b overlaps."""
    a0 = a.ctypes.data
    b0 = b.ctypes.data
    return a0 < b0 + 8 * b.size and b0 < a0 + 8 * a.size


@njit(inline="always")
def overlaps_any(out, a, b, c):
    """True when out overlaps a, b or c (1-D float64 arrays)."""
    return overlaps(out, a) or overlaps(out, b) or overlaps(out, c)


@njit(inline="always")
def all_finite(x):
    """True when every entry of x is finite (x * 0 is 0 for finite x, NaN otherwise)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * 0.0
    return total == 0.0
