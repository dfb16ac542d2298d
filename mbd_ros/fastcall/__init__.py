"""C-level entries for the hottest calls: robot.forward_dynamics(q, v, tau, out=out),
robot.inverse_dynamics(q, v, qdd, out=out) and robot.mass_matrix(q, out=out).

Why: from Python, numba's dispatcher costs ~0.4 µs per call with 4-7 array arguments (it types
every argument and allocates and frees a runtime record for each array) and the Python method
~0.2 µs more: as much as the whole recursion of a 6-dof arm, and the reason generated kernels
could not get below ~0.5x Pinocchio's time on arms. Here each kernel also gets a C entry (a numba
``@cfunc`` taking raw pointers, cached on disk like the kernels), and the robot's method is
replaced, on the instance, by a ``KernelCall`` (the small C extension ``_fastcall.c``) that checks
the four vectors with the NumPy C API and calls that entry directly.

A forward-dynamics KernelCall also takes a whole classic Runge-Kutta step at C level
(``KernelCall.rk4``, used by ``mbd_ros.simulation.Simulator`` for robots whose configuration is
a vector space and whose step has no Python force callbacks): the three inner stages call the
entry directly, with the vector updates of kernels/rk4.py in the same operation order (the same
bits); it removes ~10 Python-level calls per step, ~4.5 µs of the 7-DoF arm's ~9 µs step.

Safety: a KernelCall takes only the exact form ``f(a, b, c, out=out)`` with float64, 1-D,
C-contiguous vectors of the right lengths and a writable ``out``; anything else, and any non-zero
status of the kernel (bad input, aliasing, singular inertia, overflow), calls the Python method
with the same arguments, which converts, takes the general path or raises the documented
ValueError. Results and errors are the same as without it; only the common call is cheaper.

When: a robot installs a method's KernelCall at the second call that took the fast path in
Python (the first result is not delayed by compiling the C entry, and a program calling once never
compiles it; warm, from numba's cache, installing costs ~10-40 ms), or at once with
``robot.compile_c_calls()`` (the nodes do, before going active). Robots whose force elements or add_force callbacks are attached later drop them
(``drop_c_calls``). Without a C compiler at install the extension is missing (``AVAILABLE`` is
False) and everything runs through numba's dispatcher as before.

Link methods (robot.link_jacobian / link_velocity / link_acceleration): one KernelCall per
(method, link, frame) (robot/frames.py, FrameKinematics.link_call), reached from a ``LinkCall``
installed on the instance (``add_link_call``) that looks the pair up in C; every other form goes
to the Python method.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from numba import cfunc, types

from ..kernels import drop_stale_cache, kernel_sources
from ..kernels.entry import load_overload_without_refresh

# the C entries (rigid_entries.py, flexible_entries.py, regressor_entry.py, frame_entries.py,
# derivative_entries.py) link the kernels' machine code into their own cache entries: drop them
# whenever a kernel source (or an entry module) changed, as kernels/ does
if not os.environ.get("NUMBA_CACHE_DIR"):
    _here = Path(__file__).resolve().parent
    drop_stale_cache(_here, kernel_sources() + [_here / "rigid_entries.py",
                                                _here / "flexible_entries.py",
                                                _here / "regressor_entry.py",
                                                _here / "frame_entries.py",
                                                _here / "derivative_entries.py"])

try:
    from ._fastcall import KernelCall
except ImportError:          # built without a C compiler: numba's dispatcher only
    KernelCall = None
try:
    from ._fastcall import LinkCall
except ImportError:          # no extension, or one built before LinkCall existed
    LinkCall = None

AVAILABLE = KernelCall is not None

_F8P = types.CPointer(types.float64)
# int64 entry(void **bound, int64 *dims, double *a, double *b, double *c, double *out)
# (b and c are NULL for kernels with fewer inputs, e.g. mass_matrix(q, out))
C_SIGNATURE = types.int64(types.CPointer(types.voidptr), types.CPointer(types.int64),
                          _F8P, _F8P, _F8P, _F8P)

_compiled = {}


def c_entry(function):
    """The numba @cfunc (C_SIGNATURE, cached on disk) of a module-level Python function, compiled
    once per process (a function defined at module level, so numba's cache finds it by file and
    name: closures are not reliably cached). Loaded from numba's cache without initialising
    numba's compiler when possible (_load_cfunc)."""
    entry = _compiled.get(function)
    if entry is None:
        entry = _load_cfunc(function)
        if entry is None:
            entry = cfunc(C_SIGNATURE, cache=True)(function)
        _compiled[function] = entry
    return entry


def _load_cfunc(function):
    """The CFunc of `function` from numba's disk cache, loaded as kernels/entry.load_cached loads
    kernels (without numba's target refresh, ~0.25 s of CPU in a warm process), or None on a
    cache miss or if numba's CFunc internals are not the expected ones (the caller then uses
    numba's `cfunc`, which refreshes, loads or compiles). Mirrors numba's CFunc.compile."""
    try:
        from numba.core import sigutils
        from numba.core.ccallback import CFunc
    except ImportError:
        return None
    try:
        entry = CFunc(function, sigutils.normalize_signature(C_SIGNATURE), locals={}, options={})
        entry.enable_caching()
        result = load_overload_without_refresh(entry._cache, entry._sig,
                                               entry._targetdescr.target_context)
        if result is None:
            return None
        entry._cache_hits += 1
        entry._library = result.library
        entry._wrapper_name = result.fndesc.llvm_cfunc_wrapper_name
        entry._wrapper_address = result.library.get_pointer_to_function(entry._wrapper_name)
        return entry
    except Exception:   # noqa: BLE001 -- numba's own path decides
        return None


def dims_of(*arrays):
    """The shapes of 2-D arrays, flattened: (rows0, cols0, rows1, cols1, ...)."""
    return tuple(int(n) for array in arrays for n in array.shape)


def install(robot, name, function, bound, dims, lengths, out_cols=0, affine=False):
    """Replace robot.<name> by a KernelCall of c_entry(function) whose fallback is the class's
    method bound to robot. bound: arrays the entry receives as pointers (C-contiguous, owned by
    robot, never reallocated); dims: ints the entry receives; lengths: the lengths of the 1-3
    input vectors, then out's rows; out_cols: 0 for a vector out, else its columns; affine: only
    the first thread to make a fast call takes the fast path afterwards (KernelCall.owner; for
    entries with per-thread results). Returns the KernelCall, or None when the extension is
    missing."""
    if not AVAILABLE:
        return None
    for array in bound:
        if not (isinstance(array, np.ndarray) and array.flags.c_contiguous):
            raise ValueError(f"{name}: bound arrays must be C-contiguous numpy arrays")
    fallback = getattr(type(robot), name).__get__(robot)
    # `affine` only when asked: an extension built before it existed still serves the others
    call = KernelCall(c_entry(function).address, tuple(bound), tuple(int(d) for d in dims),
                      tuple(int(n) for n in lengths), fallback, int(out_cols),
                      *((True,) if affine else ()))
    setattr(robot, name, call)
    return call


NAMES = ("forward_dynamics", "inverse_dynamics", "mass_matrix")


def uninstall(robot, names=NAMES):
    """Remove the KernelCalls of `names` from robot (the class methods apply again)."""
    for name in names:
        robot.__dict__.pop(name, None)


def installed(robot, name):
    """True when robot.<name> is a KernelCall."""
    return AVAILABLE and isinstance(robot.__dict__.get(name), KernelCall)


# the link methods' inputs before `link`: a LinkCall passes them, then out, to the pair's entry
LINK_INPUTS = {"link_jacobian": 1, "link_velocity": 2, "link_acceleration": 3}


def add_link_call(robot, method, link, frame, call, default_frame):
    """Route robot.<method>(inputs..., link[, frame], out=out) (method one of LINK_INPUTS) to
    `call`, the KernelCall of that (link, frame), at C level: the robot's LinkCall (installed
    on the instance at its first pair, with the class's method as fallback) gets the pair in its
    table. Pairs whose link or frame is not an exact str stay with the Python method. Returns
    the LinkCall, or None without it (the Python method then calls `call`). Caller holds the
    robot's lock."""
    if LinkCall is None:
        return None
    dispatch = robot.__dict__.get(method)
    if not isinstance(dispatch, LinkCall):
        dispatch = LinkCall({}, LINK_INPUTS[method], getattr(type(robot), method).__get__(robot),
                            default_frame)
        setattr(robot, method, dispatch)
    if type(link) is str and type(frame) is str:
        dispatch.table.setdefault(frame, {})[link] = call
    return dispatch
