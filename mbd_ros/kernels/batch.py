"""Many states in one call, parallel over states (each thread owns one workspace)."""
from numba import njit, prange

from .aba import forward_dynamics
from .rnea import inverse_dynamics


@njit(cache=True, parallel=True)
def forward_dynamics_batch(body_int, body_float, works, q, v, tau, qdd_out, status_out):
    """qdd_out[s] = FD(q[s], v[s], tau[s]) for every state s; works (n_threads, nb + 1, width)."""
    n_states = q.shape[0]
    n_chunks = works.shape[0]
    for chunk in prange(n_chunks):
        for s in range(chunk * n_states // n_chunks, (chunk + 1) * n_states // n_chunks):
            status_out[s] = forward_dynamics(body_int, body_float, works[chunk], q[s], v[s], tau[s],
                                             qdd_out[s])


@njit(cache=True, parallel=True)
def inverse_dynamics_batch(body_int, body_float, works, q, v, qdd, tau_out, status_out):
    """tau_out[s] = ID(q[s], v[s], qdd[s]) for every state s."""
    n_states = q.shape[0]
    n_chunks = works.shape[0]
    for chunk in prange(n_chunks):
        for s in range(chunk * n_states // n_chunks, (chunk + 1) * n_states // n_chunks):
            status_out[s] = inverse_dynamics(body_int, body_float, works[chunk], q[s], v[s], qdd[s],
                                             tau_out[s])
