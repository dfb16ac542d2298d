"""`exit_zero`: a C signal handler, void(int), that ends the process with _exit(0) (used by
nodes/stopping.py while a transition or a robot load may hold the GIL for seconds). _exit is
async-signal-safe; the handler touches nothing else. A numba cfunc calling libc's _exit through
an LLVM declaration (no ctypes object in the function, so it is cached on disk)."""
from __future__ import annotations

from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _c_exit(typingctx, code):
    """_exit(code) (libc) for an integer code."""
    if not isinstance(code, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        status = context.cast(builder, args[0], signature.args[0], types.int32)
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32)])
        builder.call(cgutils.get_or_insert_function(builder.module, fnty, "_exit"), [status])
        return context.get_dummy_value()
    return types.void(code), codegen


@cfunc(types.void(types.int32), cache=True)
def exit_zero(signum):
    _c_exit(0)
