"""C entries (mbd_ros.fastcall.C_SIGNATURE) of the generic tree kernels of Robot.

bound = (body_int, body_float, work): the robot's model arrays and its lock-free workspace;
dims = their shapes (rows, cols) x 3, then (nq, nv). mass_matrix_c ignores b and c (NULL). Each entry is the checked kernel the Python
method calls (kernels/checked.py), on the same arrays: the same status codes, the same results.
"""
import numpy as np
from numba import carray

from ..kernels.checked import forward_dynamics as _forward_dynamics
from ..kernels.checked import inverse_dynamics as _inverse_dynamics
from ..kernels.crba import mass_matrix as _mass_matrix


def forward_dynamics_c(bound, dims, q, v, tau, out):
    body_int = carray(bound[0], (dims[0], dims[1]), np.int64)
    body_float = carray(bound[1], (dims[2], dims[3]), np.float64)
    work = carray(bound[2], (dims[4], dims[5]), np.float64)
    nq, nv = dims[6], dims[7]
    return _forward_dynamics(body_int, body_float, work, carray(q, (nq,)), carray(v, (nv,)),
                             carray(tau, (nv,)), carray(out, (nv,)))


def inverse_dynamics_c(bound, dims, q, v, qdd, out):
    body_int = carray(bound[0], (dims[0], dims[1]), np.int64)
    body_float = carray(bound[1], (dims[2], dims[3]), np.float64)
    work = carray(bound[2], (dims[4], dims[5]), np.float64)
    nq, nv = dims[6], dims[7]
    return _inverse_dynamics(body_int, body_float, work, carray(q, (nq,)), carray(v, (nv,)),
                             carray(qdd, (nv,)), carray(out, (nv,)))


def mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    body_int = carray(bound[0], (dims[0], dims[1]), np.int64)
    body_float = carray(bound[1], (dims[2], dims[3]), np.float64)
    work = carray(bound[2], (dims[4], dims[5]), np.float64)
    nq, nv = dims[6], dims[7]
    return _mass_matrix(body_int, body_float, work, carray(q, (nq,)), carray(out, (nv, nv)))
