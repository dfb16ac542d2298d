"""A compiled finiteness check for results, cheaper on the hot path than numpy's reductions
(one numba dispatch, ~0.1 µs, instead of ~1 µs for np.isfinite(x).all()).

Compiled (or loaded from numba's cache) on its first call, not at import: loading any compiled
function initialises numba's code generator (~0.2-0.3 s), which `import mbd_ros` should not pay.
"""
from numba import types

from .entry import entry_point


@entry_point(types.boolean(types.Array(types.float64, 1, "C")))
def all_finite(x):
    """True when every entry of x (n,) is finite: x * 0 is 0 for finite x, NaN otherwise."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * 0.0
    return total == 0.0
