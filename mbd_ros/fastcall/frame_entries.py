"""C entries (fastcall/entries.py's contract) of the frame kinematics kernels
(kernels/centroidal.py, minverse.py, frame_kinematics.py) on a FrameKinematics' arrays
(robot/frames.py): robot.center_of_mass / com_jacobian / centroidal_momentum_matrix /
mass_matrix_inverse (q, out=out) as a KernelCall, as mass_matrix(q, out=out); and one
KernelCall per (link method, link, frame) that the robot's link_jacobian / link_velocity /
link_acceleration call when out is given.

bound = (body_int, body_float, work[, blocks]); dims = their shapes (rows, cols) each, then
(nq, out rows, out cols). Any non-zero status goes to the Python method (which raises).
"""
import numpy as np
from numba import carray, njit

from ..kernels.centroidal import center_of_mass as _center_of_mass
from ..kernels.centroidal import centroidal_momentum_matrix as _centroidal_momentum_matrix
from ..kernels.centroidal import com_jacobian as _com_jacobian
from ..kernels.frame_kinematics import frame_classical_acceleration as \
    _frame_classical_acceleration
from ..kernels.frame_kinematics import frame_jacobian as _frame_jacobian
from ..kernels.frame_kinematics import frame_velocity as _frame_velocity
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


# ---- link calls: one KernelCall per (method, link, frame); bound[3] = [link index, frame code]
# (int64, owned by that KernelCall's FrameKinematics entry, never changed); dims = the three
# shapes, then (nq, nv)
def link_jacobian_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    target = carray(bound[3], (2,), np.int64)
    return _frame_jacobian(body_int, body_float, work, carray(q, (dims[6],)), target[0],
                           target[1], carray(out, (6, dims[7])))


def link_velocity_c(bound, dims, q, v, unused_c, out):
    body_int, body_float, work = _arrays(bound, dims)
    target = carray(bound[3], (2,), np.int64)
    return _frame_velocity(body_int, body_float, work, carray(q, (dims[6],)),
                           carray(v, (dims[7],)), target[0], target[1], carray(out, (6,)))


def link_acceleration_c(bound, dims, q, v, qdd, out):
    body_int, body_float, work = _arrays(bound, dims)
    target = carray(bound[3], (2,), np.int64)
    return _frame_classical_acceleration(body_int, body_float, work, carray(q, (dims[6],)),
                                         carray(v, (dims[7],)), carray(qdd, (dims[7],)),
                                         target[0], target[1], carray(out, (6,)))


LINK_ENTRIES = {"link_jacobian": link_jacobian_c, "link_velocity": link_velocity_c,
                "link_acceleration": link_acceleration_c}
