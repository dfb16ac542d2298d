"""C entries (fastcall/entries.py's contract) of the rigid tree kernels and of the recursive
closed-loop solver (kernels/aba.py, rnea.py, crba.py, closed_loop.py)."""
import numpy as np
from numba import carray, njit

from ..kernels.checked import forward_dynamics as _forward_dynamics
from ..kernels.checked import inverse_dynamics as _inverse_dynamics
from ..kernels.closed_loop import forward_dynamics_checked as _closed_loop_forward_dynamics
from ..kernels.crba import mass_matrix as _mass_matrix


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


def closed_loop_mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    """The tree's mass matrix (CRBA) called with the closed-loop entry's bound arrays and dims
    (nq, nv at dims[12], dims[13]): the compiled rollout's position stops on closed loops
    (kernels/rollout.py calls both entries with one bound/dims pair)."""
    body_int, body_float, work = _rigid(bound, dims)
    nq, nv = dims[12], dims[13]
    return _mass_matrix(body_int, body_float, work, carray(q, (nq,)), carray(out, (nv, nv)))
