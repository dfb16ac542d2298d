"""C entries (fastcall/entries.py's contract) of the q-only frame kinematics kernels
(kernels/centroidal.py, kernels/minverse.py) on a FrameKinematics' arrays (robot/frames.py):
robot.center_of_mass / com_jacobian / centroidal_momentum_matrix / mass_matrix_inverse
(q, out=out) as a KernelCall, as mass_matrix(q, out=out).

bound = (body_int, body_float, work[, blocks]); dims = their shapes (rows, cols) each, then
(nq, out rows, out cols). Any non-zero status goes to the Python method (which raises).
"""
import numpy as np
from numba import carray, njit

from ..kernels.centroidal import center_of_mass as _center_of_mass
from ..kernels.centroidal import centroidal_momentum_matrix as _centroidal_momentum_matrix
from ..kernels.centroidal import com_jacobian as _com_jacobian
from ..kernels.minverse import mass_matrix_inverse as _mass_matrix_inverse


@njit(inline="always")
def _arrays(bound, dims):
    """(body_int, body_float, work) viewed from the bound pointers."""
    return (carray(bound[0], (dims[0], dims[1]), np.int64),
            carray(bound[1], (dims[2], dims[3]), np.float64),
            carray(bound[2], (dims[4], dims[5]), np.float64))


def center_of_mass_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    return _center_of_mass(body_int, body_float, work, carray(q, (dims[6],)),
                           carray(out, (dims[7],)))


def com_jacobian_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    return _com_jacobian(body_int, body_float, work, carray(q, (dims[6],)),
                         carray(out, (dims[7], dims[8])))


def centroidal_momentum_matrix_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    return _centroidal_momentum_matrix(body_int, body_float, work, carray(q, (dims[6],)),
                                       carray(out, (dims[7], dims[8])))


def mass_matrix_inverse_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    blocks = carray(bound[3], (dims[9], dims[10]), np.float64)
    return _mass_matrix_inverse(body_int, body_float, work, blocks, carray(q, (dims[6],)),
                                carray(out, (dims[7], dims[8])))


ENTRIES = {"center_of_mass": center_of_mass_c, "com_jacobian": com_jacobian_c,
           "centroidal_momentum_matrix": centroidal_momentum_matrix_c,
           "mass_matrix_inverse": mass_matrix_inverse_c}
