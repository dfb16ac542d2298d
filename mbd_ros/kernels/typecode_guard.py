"""Keep numba's dispatchers from reading a byte-swapped float64 array as a native one.

The methods' fast paths hand the caller's arrays to a kernel and rely on numba refusing
(TypeError) anything but a native, aligned, C-contiguous float64 array: the general path then
converts it (robot/arguments.py). numba's dispatcher types an array argument through a
process-wide table of typecodes, filled by the first array of each (ndim, layout class, dtype
number); byte order and alignment are not in the key. Measured on numba 0.68.1: once a misaligned
C-contiguous float64 array has been passed to any numba function (typed as an ordinary C array),
a big-endian ('>f8') array of that ndim takes the same typecode, matches the kernels' C
signatures and its bytes are read as native doubles: silent garbage (forward_dynamics off by 72
rad/s^2 on the arm7, link_jacobian into a '>f8' out by 1e232; an outside audit). A strided view
does not share that entry.

`seed()`, run when the kernels package is imported (before any kernel is called), passes a
byte-swapped float64 array of 1, 2 and 3 dimensions first, to a dispatcher with no compiled
version and compilation off: numba types it as a Python object (it has no byte-swapped arrays),
which no kernel signature takes, so from then on byte-swapped and misaligned arrays alike are
refused with TypeError and converted by the general path (a native, aligned copy). That
dispatcher has nothing to compile, load or convert to: 20 ms, without the typing context a
compiled one would load (an explicit signature here cost 0.2 s at every import and pulled in
scipy.linalg: test/test_startup.py). test/test_argument_layouts.py checks it in a fresh
process.
"""
import numpy as np
from numba import njit

SWAPPED = np.dtype(np.float64).newbyteorder()   # '>f8' on this (little-endian) machine


def _never_compiled(a, b, c):
    """The seed's dispatcher: never compiled (compilation off, no signature)."""


def seed():
    """Fill numba's typecode entries of byte-swapped float64 arrays (1-3 dimensions) with
    "Python object" (see the module docstring). Returns True when numba refused them, as it
    must; False when this numba has no such switch (nothing done)."""
    dispatcher = njit(_never_compiled)
    try:
        dispatcher._can_compile = False    # the C dispatcher's own flag (disable_compile()
    except AttributeError:                 # refuses a dispatcher without signatures)
        return False
    try:
        dispatcher(np.zeros(2, SWAPPED), np.zeros((2, 2), SWAPPED), np.zeros((2, 2, 2), SWAPPED))
    except TypeError:
        return True
    return False
