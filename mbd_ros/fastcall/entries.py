"""The C entries (mbd_ros.fastcall.C_SIGNATURE) of every tree's hot calls: one table.

Each entry is `int64 entry(void **bound, int64 *dims, double *a, double *b, double *c,
double *out)`: `bound` points at the robot's arrays (never reallocated), `dims` holds their shapes
and the vector lengths; a, b, c are the input vectors (b and c NULL for mass_matrix(q, out)). An
entry runs the very kernel the Python method calls, on the same arrays: the same status codes and
results. Entries are module-level functions so that numba's disk cache finds them by file and name.

- generic (RigidTree, robot/rigid_tree.py): bound = (body_int, body_float, free_work);
  dims = their shapes (rows, cols) x 3, then (nq, nv).
- flexible (FlexibleTree, robot/flexible_tree.py): bound = (fint, ffloat, fdata, free_work,
  free_fwork, unit, column); dims = (fint rows, cols, ffloat rows, cols, nd, work rows, cols, nw,
  nq, nv).
- closed loop (the recursive loop solver, robot/loop_kinematics.py): bound = (body_int,
  body_float, free_work, cut_int, cut_float, loop_float, gains, info, multipliers); dims = the
  shapes of the six 2-D arrays, then (nq, nv, b). Any non-zero status (bad input, aliasing, a
  singular tree, a non-finite result, loops open by more than the warning threshold) sends the
  call to the Python method, which raises or warns. Thread-affine: the multipliers are per
  thread, only the owner thread's are written here.
Generated kernels (codegen/) carry their own entries in their generated module.
"""
import numpy as np
from numba import carray, njit

from ..kernels.checked import forward_dynamics as _forward_dynamics
from ..kernels.checked import inverse_dynamics as _inverse_dynamics
from ..kernels.closed_loop import forward_dynamics_checked as _closed_loop_forward_dynamics
from ..kernels.crba import mass_matrix as _mass_matrix
from ..kernels import flexible_dynamics as _flexible


# ---- generic tree kernels ------------------------------------------------------------------------
@njit(inline="always")
def _rigid(bound, dims):
    """(body_int, body_float, work) viewed from the bound pointers."""
    return (carray(bound[0], (dims[0], dims[1]), np.int64),
            carray(bound[1], (dims[2], dims[3]), np.float64),
            carray(bound[2], (dims[4], dims[5]), np.float64))


def forward_dynamics_c(bound, dims, q, v, tau, out):
    body_int, body_float, work = _rigid(bound, dims)
    nq, nv = dims[6], dims[7]
    return _forward_dynamics(body_int, body_float, work, carray(q, (nq,)), carray(v, (nv,)),
                             carray(tau, (nv,)), carray(out, (nv,)))


def inverse_dynamics_c(bound, dims, q, v, qdd, out):
    body_int, body_float, work = _rigid(bound, dims)
    nq, nv = dims[6], dims[7]
    return _inverse_dynamics(body_int, body_float, work, carray(q, (nq,)), carray(v, (nv,)),
                             carray(qdd, (nv,)), carray(out, (nv,)))


def mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    body_int, body_float, work = _rigid(bound, dims)
    nq, nv = dims[6], dims[7]
    return _mass_matrix(body_int, body_float, work, carray(q, (nq,)), carray(out, (nv, nv)))


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


# ---- the recursive closed-loop solver ------------------------------------------------------------
def closed_loop_forward_dynamics_c(bound, dims, q, v, tau, out):
    body_int, body_float, work = _rigid(bound, dims)
    cut_int = carray(bound[3], (dims[6], dims[7]), np.int64)
    cut_float = carray(bound[4], (dims[8], dims[9]), np.float64)
    loop_float = carray(bound[5], (dims[10], dims[11]), np.float64)
    nq, nv, n_rows = dims[12], dims[13], dims[14]
    gains = carray(bound[6], (3,), np.float64)
    info = carray(bound[7], (2,), np.int64)
    multipliers = carray(bound[8], (n_rows,), np.float64)
    return _closed_loop_forward_dynamics(body_int, body_float, work, cut_int, cut_float,
                                         loop_float, carray(q, (nq,)), carray(v, (nv,)),
                                         carray(tau, (nv,)), gains, carray(out, (nv,)), info,
                                         multipliers)


# ---- the table -----------------------------------------------------------------------------------
ENTRIES = {
    ("rigid", "forward_dynamics"): forward_dynamics_c,
    ("rigid", "inverse_dynamics"): inverse_dynamics_c,
    ("rigid", "mass_matrix"): mass_matrix_c,
    ("flexible", "forward_dynamics"): flexible_forward_dynamics_c,
    ("flexible", "inverse_dynamics"): flexible_inverse_dynamics_c,
    ("flexible", "mass_matrix"): flexible_mass_matrix_c,
    ("closed_loop", "forward_dynamics"): closed_loop_forward_dynamics_c,
}


def entry(kind, name):
    """The C entry function of method `name` of a `kind` tree ("rigid", "flexible",
    "closed_loop")."""
    return ENTRIES[(kind, name)]
