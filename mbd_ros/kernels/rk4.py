"""The vector updates of the classic Runge-Kutta step (mbd_ros.simulation.Simulator._rk4) as
numba kernels, for robots whose configuration is a vector space (q (+) v dt = q + v dt: every
joint revolute, prismatic, helical, cylindrical or universal). One call replaces the three to
five small numpy operations of each stage (~0.5-1 µs of call overhead each, the step's largest
cost after the forward dynamics on a 7-DoF arm). No allocation."""
from numba import njit


@njit(cache=True)
def rk4_stage(q, v, v_prev, a_prev, h, q_out, v_out):
    """Stage state of RK4: q_out = q + v_prev h, v_out = v + a_prev h (all (n,); nq == nv)."""
    for i in range(q.shape[0]):
        q_out[i] = q[i] + v_prev[i] * h
        v_out[i] = v[i] + a_prev[i] * h


@njit(cache=True)
def rk4_combine(q, v, v2, v3, v4, a1, a2, a3, a4, dt, q_next, v_next):
    """q_next = q + (v + 2 v2 + 2 v3 + v4) dt/6, v_next = v + (a1 + 2 a2 + 2 a3 + a4) dt/6
    (operations in the order of the numpy version, so the results are the same bits)."""
    sixth = 1.0 / 6.0
    h6 = dt / 6.0
    for i in range(q.shape[0]):
        s = (((v2[i] + v3[i]) * 2.0 + v[i]) + v4[i]) * sixth
        q_next[i] = q[i] + s * dt
        s = (((a2[i] + a3[i]) * 2.0 + a1[i]) + a4[i]) * h6
        v_next[i] = v[i] + s


@njit(cache=True)
def state_bound(q, v):
    """max |v_i|, or NaN if an entry of q or v is not finite (the divergence check)."""
    top = 0.0
    for i in range(q.shape[0]):
        x = q[i]
        if x - x != 0.0:
            return x - x
    for i in range(v.shape[0]):
        x = v[i]
        if x - x != 0.0:
            return x - x
        a = abs(x)
        if a > top:
            top = a
    return top
