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
"""
import threading

from numba import njit
from numba.core import sigutils

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
                self.dispatcher.compile(self.signature)   # from numba's disk cache when present
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
