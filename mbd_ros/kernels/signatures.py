"""Explicit numba signatures of the entry-point kernels.

A call with other argument types raises TypeError instead of compiling a new specialisation, so
the Python wrappers skip all type checks on the fast path and convert only when numba refuses.
The Model's public arrays are read-only, but the Robot passes private writable copies to the
kernels: numba's dispatcher types read-only arrays on a slow path (+0.1 µs per call measured).
"""
from numba import types

_f8 = types.float64
_i8 = types.int64
MODEL_INT = types.Array(_i8, 2, "C")                      # body_int, link_int, wrench_rows
MODEL_FLOAT = types.Array(_f8, 2, "C")                    # body_float, link_float
WORK = types.Array(_f8, 2, "C")                           # the workspace (Data)
VECTOR = types.Array(_f8, 1, "C")
MATRIX = types.Array(_f8, 2, "C")

STATE_KERNEL = _i8(MODEL_INT, MODEL_FLOAT, WORK, VECTOR, VECTOR, VECTOR, VECTOR)
CHECK_STATE = _i8(MODEL_INT, VECTOR, VECTOR, VECTOR, types.boolean, types.boolean)
FORWARD_KINEMATICS = types.void(MODEL_INT, MODEL_FLOAT, WORK, VECTOR, VECTOR)
MASS_MATRIX = _i8(MODEL_INT, MODEL_FLOAT, WORK, VECTOR, MATRIX)
JOINT_WRENCHES = types.void(MODEL_INT, MODEL_INT, MODEL_FLOAT, WORK, MATRIX, MODEL_INT, MATRIX, MATRIX)
LOAD_LINK_WRENCHES = types.void(MODEL_INT, MODEL_FLOAT, MATRIX, MATRIX, WORK)
INTEGRATE = types.void(MODEL_INT, VECTOR, VECTOR, _f8, VECTOR)
ENERGY = types.void(MODEL_INT, MODEL_FLOAT, WORK, VECTOR, VECTOR, VECTOR)
CLOSED_LOOP_FD = _i8(MODEL_INT, MODEL_FLOAT, WORK, MODEL_INT, MODEL_FLOAT, MATRIX, VECTOR, VECTOR,
                     VECTOR, _f8, _f8, VECTOR, types.Array(_i8, 1, "C"))
