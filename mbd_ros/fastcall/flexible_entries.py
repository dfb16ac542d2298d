"""C entries (fastcall/entries.py's contract) of the flexible tree kernels
(kernels/flexible_dynamics.py). Imported only for robots with flexible links: the flexible
kernels' module is heavier to import."""
import numpy as np
from numba import carray, njit

from ..kernels import flexible_dynamics as _flexible


# ---- flexible tree kernels -----------------------------------------------------------------------
@njit(inline="always")
def _flexible_model(bound, dims):
    """(fint, ffloat, fdata, work, fwork) viewed from the bound pointers."""
    return (carray(bound[0], (dims[0], dims[1]), np.int64),
            carray(bound[1], (dims[2], dims[3]), np.float64),
            carray(bound[2], (dims[4],), np.float64),
            carray(bound[3], (dims[5], dims[6]), np.float64),
            carray(bound[4], (dims[7],), np.float64))


def flexible_forward_dynamics_c(bound, dims, q, v, tau, out):
    fint, ffloat, fdata, work, fwork = _flexible_model(bound, dims)
    nq, nv = dims[8], dims[9]
    return _flexible.forward_dynamics(fint, ffloat, fdata, work, fwork, carray(q, (nq,)),
                                      carray(v, (nv,)), carray(tau, (nv,)), carray(out, (nv,)))


def flexible_inverse_dynamics_c(bound, dims, q, v, qdd, out):
    fint, ffloat, fdata, work, fwork = _flexible_model(bound, dims)
    nq, nv = dims[8], dims[9]
    return _flexible.inverse_dynamics(fint, ffloat, fdata, work, fwork, carray(q, (nq,)),
                                      carray(v, (nv,)), carray(qdd, (nv,)), carray(out, (nv,)))


def flexible_mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    fint, ffloat, fdata, work, fwork = _flexible_model(bound, dims)
    nq, nv = dims[8], dims[9]
    unit = carray(bound[5], (nv,), np.float64)
    column = carray(bound[6], (nv,), np.float64)
    return _flexible.mass_matrix(fint, ffloat, fdata, work, fwork, carray(q, (nq,)), unit,
                                 column, carray(out, (nv, nv)))
