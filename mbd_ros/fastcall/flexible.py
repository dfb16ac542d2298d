"""C entries (mbd_ros.fastcall.C_SIGNATURE) of the flexible kernels of FlexibleRobot
(kernels/flexible_dynamics.py).

bound = (fint, ffloat, fdata, work, fwork, unit, column): the robot's flexible model arrays
(fint (n, ni) int64, ffloat (n, nf), fdata (nd,)), its lock-free workspace with no external loads
(work (n, WORK_WIDTH), fwork (nw,)) and the mass matrix's two (nv,) scratch vectors;
dims = (fint rows, cols, ffloat rows, cols, nd, work rows, cols, nw, nq, nv).
mass_matrix_c ignores b and c (NULL). Each entry calls the kernel the Python method calls, on the
same arrays: the same status codes, the same results.
"""
import numpy as np
from numba import carray, njit

from ..kernels.flexible_dynamics import forward_dynamics as _forward_dynamics
from ..kernels.flexible_dynamics import inverse_dynamics as _inverse_dynamics
from ..kernels.flexible_dynamics import mass_matrix as _mass_matrix


@njit(inline="always")
def _model(bound, dims):
    """(fint, ffloat, fdata, work, fwork) viewed from the bound pointers (see the docstring)."""
    return (carray(bound[0], (dims[0], dims[1]), np.int64),
            carray(bound[1], (dims[2], dims[3]), np.float64),
            carray(bound[2], (dims[4],), np.float64),
            carray(bound[3], (dims[5], dims[6]), np.float64),
            carray(bound[4], (dims[7],), np.float64))


def forward_dynamics_c(bound, dims, q, v, tau, out):
    fint, ffloat, fdata, work, fwork = _model(bound, dims)
    nq, nv = dims[8], dims[9]
    return _forward_dynamics(fint, ffloat, fdata, work, fwork, carray(q, (nq,)),
                             carray(v, (nv,)), carray(tau, (nv,)), carray(out, (nv,)))


def inverse_dynamics_c(bound, dims, q, v, qdd, out):
    fint, ffloat, fdata, work, fwork = _model(bound, dims)
    nq, nv = dims[8], dims[9]
    return _inverse_dynamics(fint, ffloat, fdata, work, fwork, carray(q, (nq,)),
                             carray(v, (nv,)), carray(qdd, (nv,)), carray(out, (nv,)))


def mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    fint, ffloat, fdata, work, fwork = _model(bound, dims)
    nq, nv = dims[8], dims[9]
    unit = carray(bound[5], (nv,), np.float64)
    column = carray(bound[6], (nv,), np.float64)
    return _mass_matrix(fint, ffloat, fdata, work, fwork, carray(q, (nq,)), unit, column,
                        carray(out, (nv, nv)))


def spec(robot, name):
    """(C entry function, bound arrays, dims, lengths, out columns) of FlexibleRobot method
    `name` (Robot._c_call_spec's contract)."""
    bound = (robot._fint, robot._ffloat, robot._fdata, robot._free_work, robot._free_fwork,
             robot._unit, robot._column)
    dims = (robot._fint.shape + robot._ffloat.shape + robot._fdata.shape
            + robot._free_work.shape + robot._free_fwork.shape + (robot.nq, robot.nv))
    if name == "mass_matrix":
        return mass_matrix_c, bound, dims, (robot.nq, robot.nv), robot.nv
    function = {"forward_dynamics": forward_dynamics_c,
                "inverse_dynamics": inverse_dynamics_c}[name]
    return function, bound, dims, (robot.nq, robot.nv, robot.nv, robot.nv), 0
