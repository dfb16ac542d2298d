"""Lazily compiled kernel entry points with one explicit signature.

`@entry_point(signature)` behaves like `@njit(signature, cache=True)` (exactly one compiled
variant; a call with other argument types raises TypeError, which the Robot's fast path relies
on to convert inputs only when needed), except that nothing is compiled (or loaded from numba's
cache) at import: the signature is compiled on the first call, from Python or from another
kernel. `import mbd_ros` then costs no compilation, and a program compiles only the kernels it
uses (a node computing forward dynamics never compiles the mass matrix).

How: a numba dispatcher without signatures compiles on demand through two methods, one for calls
from Python (`_compile_for_args`) and one for calls from other jitted functions
(`get_call_template`). We route both through `_LazyEntry.ensure_compiled`, which compiles the one
signature and then disables further compilation; afterwards numba dispatches in C as for an
eager signature (no Python in the call path). These are numba internals (checked on numba 0.58-0.68);
if they are missing, `entry_point` falls back to eager compilation.

Loading from numba's disk cache: numba's own cache load first "refreshes" its CPU target (imports
and installs every typing and lowering registry, ~0.12 s of CPU, and through
numba.np.arraymath imports scipy.linalg, ~0.12 s more), which only a compilation needs. A fresh
process whose kernels are all cached (a warm start) never compiles, so `load_cached` loads the
overload without the refresh (the runtime NRT, which loaded code links against, is initialised);
any compilation later refreshes the target as usual. On a cache miss, or if these numba internals
changed, it falls back to `dispatcher.compile`, which refreshes, loads or compiles.
"""
import threading

from numba import njit
from numba.core import sigutils

try:
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import rtsys
except ImportError:      # other numba internals: load through dispatcher.compile
    global_compiler_lock = rtsys = None

_LAZY_SUPPORTED = None


def _lazy_supported(dispatcher):
    global _LAZY_SUPPORTED
    if _LAZY_SUPPORTED is None:
        _LAZY_SUPPORTED = (callable(getattr(dispatcher, "_compile_for_args", None))
                           and callable(getattr(dispatcher, "get_call_template", None))
                           and callable(getattr(dispatcher, "disable_compile", None)))
    return _LAZY_SUPPORTED


class _LazyEntry:
    """Compile-on-first-use state of one dispatcher."""

    def __init__(self, dispatcher, signature):
        self.dispatcher = dispatcher
        self.signature = signature
        self.arg_types, _ = sigutils.normalize_signature(signature)
        self.lock = threading.Lock()
        self.compiled = False
        self.get_call_template = dispatcher.get_call_template  # the class's bound method

    def ensure_compiled(self):
        if self.compiled:
            return
        with self.lock:
            if not self.compiled:
                if not load_cached(self.dispatcher, self.signature):
                    if global_compiler_lock is None:
                        self.dispatcher.compile(self.signature)
                    else:
                        compile_memoized(self.dispatcher, self.signature)
                self.dispatcher.disable_compile()
                self.compiled = True

    def compile_for_args(self, *args, **kws):
        """Called by numba's C dispatcher when no compiled variant matches a Python call."""
        self.ensure_compiled()
        arg_types = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        if kws or arg_types != tuple(self.arg_types):
            raise TypeError(f"{self.dispatcher.py_func.__name__}: no matching definition for "
                            f"argument types {arg_types}")
        return self.dispatcher.overloads[tuple(self.arg_types)].entry_point

    def call_template(self, args, kws):
        """Called when another jitted function calling this one is typed."""
        self.ensure_compiled()
        return self.get_call_template(args, kws)


def load_overload_without_refresh(cache, signature, context):
    """numba's `cache.load_overload(signature, context)` without its target refresh (module
    docstring): the CompileResult, or None on a miss or when numba's internals are not the
    expected ones. Holds numba's compiler lock."""
    load = getattr(cache, "_load_overload", None)
    if global_compiler_lock is None or load is None:
        return None
    with global_compiler_lock:
        try:
            rtsys.initialize(context)   # the runtime the loaded machine code links against
            guard = getattr(cache, "_guard_against_spurious_io_errors", None)
            if guard is None:
                return load(signature, context)
            result = None
            with guard():
                result = load(signature, context)
            return result
        except Exception:   # noqa: BLE001 -- an unreadable entry: numba's own path decides
            return None


def load_cached(dispatcher, signature):
    """Add `signature`'s overload from numba's disk cache to dispatcher without refreshing numba's
    target (module docstring). Returns False, having changed nothing, on a cache miss or when
    numba's internals are not the expected ones (the caller then uses dispatcher.compile)."""
    context = getattr(dispatcher, "targetctx", None)
    if global_compiler_lock is None or context is None \
            or not hasattr(context, "insert_user_function"):
        return False
    with global_compiler_lock:
        args, _ = sigutils.normalize_signature(signature)
        if tuple(args) in dispatcher.overloads:
            return True
        result = load_overload_without_refresh(getattr(dispatcher, "_cache", None), signature,
                                               context)
        if result is None or result.objectmode:
            return False
        context.insert_user_function(result.entry_point, result.fndesc, [result.library])
        dispatcher.add_overload(result)
        hits = getattr(dispatcher, "_cache_hits", None)
        if hits is not None:
            hits[signature] += 1
        return True


def compile_memoized(dispatcher, signature):
    """dispatcher.compile(signature) (a cache load, or a compilation) with numba's typing of
    calls on scalars, arrays and homogeneous tuples memoized for its duration
    (kernels/fast_typing.py): the kernels are thousands of scalar operations and `work[i, c]`
    accesses, each typed by trying every template in turn. Measured on the first FD of ur5:
    ~1.5 s less CPU of ~10.3 s (~0.9 s from the scalars, ~0.6 s from arrays and tuples)."""
    from .fast_typing import SCALARS_ARRAYS_TUPLES, memoized_call_types
    # numba's compiler lock first, then the memo's (never waited for: a kernel compiled while
    # another one is typed is memoized by the outer block already)
    with global_compiler_lock, memoized_call_types(SCALARS_ARRAYS_TUPLES, wait=False):
        dispatcher.compile(signature)


def entry_point(signature, **options):
    """Decorator: a `cache=True` numba kernel with one explicit signature, compiled on first use.
    `options` are passed to njit (e.g. nogil=True)."""
    def decorate(func):
        dispatcher = njit(cache=True, **options)(func)
        if not _lazy_supported(dispatcher):
            return njit(signature, cache=True, **options)(func)
        lazy = _LazyEntry(dispatcher, signature)
        dispatcher._compile_for_args = lazy.compile_for_args
        dispatcher.get_call_template = lazy.call_template
        dispatcher.ensure_compiled = lazy.ensure_compiled
        return dispatcher
    return decorate
