"""Faster numba compilation of long straight-line scalar code.

numba types every operator application by trying each registered template in turn (scalar
arithmetic, then the numpy ufunc templates, ...): for a generated kernel made of thousands of
float64 products and sums this is most of the compile time, and every application of `*` to two
float64 gives the same answer. `memoized_call_types()` caches `Function.get_call_type` for
arguments that are plain scalar types (float, integer, boolean) and no keywords, for the duration
of a `with` block, and likewise the target context's lookup of the implementation of such a call
(`BaseContext.get_function`, which rebuilds a wrapper and inspects its signature every time).
The first resolution of each (function, argument types) still runs numba's own
code, with its side effects (the implementation key it records), so later hits return exactly what
numba would have computed.
"""
from __future__ import annotations

import contextlib
import threading

from numba.core import base, types
from numba.core.types import functions

_SCALARS = (types.Float, types.Integer, types.Boolean)
# also arrays and homogeneous tuples (the generic kernels' work[i, c] indexing): numba types are
# immutable and interned, and their typing and implementation depend only on the types
SCALARS_ARRAYS_TUPLES = _SCALARS + (types.Array, types.UniTuple)
_lock = threading.Lock()


@contextlib.contextmanager
def memoized_call_types(argument_kinds=_SCALARS, wait=True):
    """Within the block, cache numba's typing of calls whose arguments are all non-literal
    instances of `argument_kinds` (default: scalars; see module doc). Yields True. One block at a
    time: with wait=False, when another block is active (this thread's, e.g. a kernel compiled
    while typing another one, or another thread's) it yields False at once and changes nothing
    (callers holding numba's compiler lock must not wait for a block that waits for it)."""
    if not _lock.acquire(blocking=wait):
        yield False
        return
    try:
        original = functions.BaseFunction.get_call_type
        original_impl = base.BaseContext.get_function
        cache = {}
        impl_cache = {}

        def get_call_type(self, context, args, kws):
            if kws or not all(isinstance(a, argument_kinds) and not isinstance(a, types.Literal)
                              for a in args):
                return original(self, context, args, kws)
            key = (id(self), id(context), args)
            try:
                return cache[key]
            except KeyError:
                sig = cache[key] = original(self, context, args, kws)
                return sig

        def get_function(self, fn, sig, _firstcall=True):
            if not all(isinstance(a, argument_kinds) and not isinstance(a, types.Literal)
                       for a in sig.args):
                return original_impl(self, fn, sig, _firstcall)
            key = (id(self), fn, sig)
            try:
                return impl_cache[key]
            except KeyError:
                impl = impl_cache[key] = original_impl(self, fn, sig, _firstcall)
                return impl

        functions.BaseFunction.get_call_type = get_call_type
        base.BaseContext.get_function = get_function
        try:
            yield True
        finally:
            functions.BaseFunction.get_call_type = original
            base.BaseContext.get_function = original_impl
    finally:
        _lock.release()
