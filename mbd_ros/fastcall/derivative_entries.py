"""C entries (mbd_ros.fastcall.C_SIGNATURE) of the analytic derivatives of the dynamics
(kernels/derivatives.py), for robot.inverse_dynamics_derivatives(q, v, qdd) and
robot.forward_dynamics_derivatives(q, v, tau) of a plain rigid tree (robot/derivatives.py
installs them at the second fast call and calls them through KernelCall.entry).

The three (nv, nv) results are written into one (3 nv, nv) block, `out`: rows [0, nv) the
derivative w.r.t. q, [nv, 2 nv) w.r.t. v, [2 nv, 3 nv) w.r.t. the third vector (qdd: M; tau:
M^-1). bound = (body_int, body_float, work, dwork, dof_work, dof_int, factor, scratch), the
derivatives' own lock-free workspace (work[:, FEXT] stays 0: no loads); scratch (2, nv) holds
the tau (and qdd) the kernels also compute. dims = the shapes (rows, cols) of the eight bound
arrays, then (nq, nv). A module-level function, so numba's disk cache finds it by file and name;
fastcall/__init__.py drops this folder's cache whenever a kernel source changed.
"""
import numpy as np
from numba import carray, njit

from ..kernels.derivatives import aba_derivatives as _aba_derivatives
from ..kernels.derivatives import rnea_derivatives as _rnea_derivatives


@njit(inline="always")
def _bound(bound, dims):
    """The eight bound arrays viewed from their pointers."""
    return (carray(bound[0], (dims[0], dims[1]), np.int64),
            carray(bound[1], (dims[2], dims[3]), np.float64),
            carray(bound[2], (dims[4], dims[5]), np.float64),
            carray(bound[3], (dims[6], dims[7]), np.float64),
            carray(bound[4], (dims[8], dims[9]), np.float64),
            carray(bound[5], (dims[10], dims[11]), np.int64),
            carray(bound[6], (dims[12], dims[13]), np.float64),
            carray(bound[7], (dims[14], dims[15]), np.float64))


def rnea_derivatives_c(bound, dims, q, v, qdd, out):
    body_int, body_float, work, dwork, dof_work, dof_int, unused_factor, scratch = \
        _bound(bound, dims)
    nq, nv = dims[16], dims[17]
    block = carray(out, (3, nv, nv))
    return _rnea_derivatives(body_int, body_float, work, dwork, dof_work, dof_int,
                             carray(q, (nq,)), carray(v, (nv,)), carray(qdd, (nv,)), scratch[0],
                             block[0], block[1], block[2])


def aba_derivatives_c(bound, dims, q, v, tau, out):
    body_int, body_float, work, dwork, dof_work, dof_int, factor, scratch = _bound(bound, dims)
    nq, nv = dims[16], dims[17]
    block = carray(out, (3, nv, nv))
    return _aba_derivatives(body_int, body_float, work, dwork, dof_work, dof_int, factor,
                            carray(q, (nq,)), carray(v, (nv,)), carray(tau, (nv,)), scratch[1],
                            scratch[0], block[0], block[1], block[2])
