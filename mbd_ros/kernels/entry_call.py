"""call_entry: a call, from numba code, of a C entry (mbd_ros.fastcall.C_SIGNATURE) by its
address. Shared by the compiled rollouts (kernels/rollout.py) and their implicit integrators
(kernels/rollout_implicit.py)."""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def call_entry(typingctx, address, bound, dims, a, b, c, out):
    """entry(bound, dims, a, b, c, out) for the C entry at `address` (int64) with the data
    pointers of the arrays bound (int64: the bound arrays' addresses), dims (int64), a, b, c,
    out (float64, any rank); returns the entry's int64 status."""
    sig = types.int64(address, bound, dims, a, b, c, out)

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        f64p = ir.DoubleType().as_pointer()
        i64p = ir.IntType(64).as_pointer()
        fnty = ir.FunctionType(ir.IntType(64), [i8p.as_pointer(), i64p, f64p, f64p, f64p, f64p])
        pointers = []
        for ty, value in zip(signature.args[1:], args[1:]):
            pointers.append(context.make_array(ty)(context, builder, value).data)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.bitcast(pointers[0], i8p.as_pointer()),
                                 builder.bitcast(pointers[1], i64p)]
                            + [builder.bitcast(p, f64p) for p in pointers[2:]])

    return sig, codegen
