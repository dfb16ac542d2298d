"""Many states in one call: a serial loop over a range of states, releasing the GIL.

The Robot runs one call per worker thread, each on its own workspace, so states are processed in
parallel without numba's parallel backend: prange kernels compiled 4x slower here and their
OpenMP threads busy-wait between calls, starving a shared 2-core machine. These kernels compile
lazily on the first batch call (the wrapper always passes C-contiguous float64 arrays).
"""
from numba import njit

from .aba import forward_dynamics
from .rnea import inverse_dynamics


@njit(cache=True, nogil=True)
def forward_dynamics_batch(body_int, body_float, work, q, v, tau, qdd_out, status_out):
    """qdd_out[s] = FD(q[s], v[s], tau[s]) for the rows s of q (N, nq), v, tau (N, nv);
    status_out (N,) receives each state's status."""
    for s in range(q.shape[0]):
        status_out[s] = forward_dynamics(body_int, body_float, work, q[s], v[s], tau[s], qdd_out[s])


@njit(cache=True, nogil=True)
def inverse_dynamics_batch(body_int, body_float, work, q, v, qdd, tau_out, status_out):
    """tau_out[s] = ID(q[s], v[s], qdd[s]) for the rows s of q (N, nq), v, qdd (N, nv)."""
    for s in range(q.shape[0]):
        status_out[s] = inverse_dynamics(body_int, body_float, work, q[s], v[s], qdd[s], tau_out[s])
