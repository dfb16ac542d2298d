"""Hard position stops of the simulated plant (mbd_ros.limits.JointLimits.enforce) as numba
kernels: the kinetic-metric projection of the joints beyond a limit back onto it, and the
inelastic impulse that stops their outward motion, with the active-set loops, without
allocation (the numpy version cost ~130 µs per step while a 7-DoF arm rested on a stop).

With A the joints on a stop (S_A selects their rows of v) and M^-1 the inverse mass matrix:

    dq = M^-1 S_A^T (S_A M^-1 S_A^T)^-1 r_A          r_A = limit_A - q_A
    dv = M^-1 S_A^T (S_A M^-1 S_A^T)^-1 (-v_B)       on the joints B of A moving outward

S_A M^-1 S_A^T is a principal block of the symmetric positive definite M^-1, hence itself SPD:
it is solved by Cholesky.

Model: limited_iq, limited_iv (L,) q and v index of each position-limited joint; lower, upper
(L,) its limits. Data: minv (nv, nv) = M^-1; the workspaces are preallocated by the caller
(JointLimits), their sizes given in each docstring.
"""
import math

from numba import njit

from .plant import spd_inverse

# Rows of the packed arrays of enforce_positions / enforce_velocities (one (rows, L) int64 and
# one float64 array per JointLimits instead of ~16 separate arguments: numba's dispatcher costs
# ~60-80 ns per array argument, and these run every step while a joint rests on a stop)
STOP_LIMITED_IQ, STOP_LIMITED_IV, STOP_ACTIVE, STOP_UPPER_SIDE, STOP_IDX, STOP_SEL, \
    STOP_MOVING_OUT = range(7)
STOP_INT_ROWS = 7
STOP_LOWER, STOP_UPPER, STOP_Q0, STOP_TARGET, STOP_RHS, STOP_X, STOP_SIGN = range(7)
STOP_FLOAT_ROWS = 7
# rows of the (3, nv) work array: the position correction dq, then v0 and trial of
# stop_velocities
STOP_DQ, STOP_V0, STOP_TRIAL = range(3)

SLACK = 1e-12   # a joint counts as beyond a limit (another active one) past this round-off


@njit(cache=True, inline="always")
def _solve_block(minv, sel, m, rhs, chol, x):
    """x[:m] = (minv[sel, sel])^-1 rhs[:m] for the m v-indices sel[:m], by Cholesky into chol
    (nv, nv) scratch. Returns 0, or 1 if the block is not positive definite."""
    # ---- block = L L^T
    for j in range(m):
        s = minv[sel[j], sel[j]]
        for k in range(j):
            s -= chol[j, k] * chol[j, k]
        if not s > 0.0:
            return 1
        d = math.sqrt(s)
        chol[j, j] = d
        for i in range(j + 1, m):
            s = minv[sel[i], sel[j]]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / d
    # ---- L y = rhs, L^T x = y
    for i in range(m):
        s = rhs[i]
        for k in range(i):
            s -= chol[i, k] * x[k]
        x[i] = s / chol[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, m):
            s -= chol[k, i] * x[k]
        x[i] = s / chol[i, i]
    return 0


@njit(cache=True)
def stop_positions(q, limited_iq, limited_iv, lower, upper, minv,
                   q0, active, upper_side, idx, sel, target, rhs, x, chol, dq):
    """Correction dq (nv,) that puts the joints beyond a limit back on it (kinetic metric),
    growing the active set until no other joint ends beyond a limit.

    Data in: q (nq,), minv (nv, nv). Workspaces: q0 (L,) float; active, upper_side (L,) bool;
    idx, sel (L,) int64; target, rhs, x (L,) float; chol (nv, nv).
    Data out: dq (nv,); idx[:k] the active joints (positions in the limited list), target[:k]
    their limits, upper_side[idx[a]] True for an upper stop.
    Returns k (0: no joint beyond a limit), or -1 if the block is singular."""
    n_limited = limited_iq.shape[0]
    any_beyond = False
    for j in range(n_limited):
        q0[j] = q[limited_iq[j]]
        upper_side[j] = q0[j] > upper[j]
        active[j] = upper_side[j] or q0[j] < lower[j]
        any_beyond = any_beyond or active[j]
    if not any_beyond:
        return 0
    k = 0
    for _ in range(n_limited):
        # A and r_A = limit_A - q_A
        k = 0
        for j in range(n_limited):
            if active[j]:
                idx[k] = j
                sel[k] = limited_iv[j]
                target[k] = upper[j] if upper_side[j] else lower[j]
                rhs[k] = target[k] - q0[j]
                k += 1
        # dq = M^-1 S_A^T (S_A M^-1 S_A^T)^-1 r_A
        if _solve_block(minv, sel, k, rhs, chol, x):
            return -1
        for i in range(dq.shape[0]):
            s = 0.0
            for a in range(k):
                s += minv[i, sel[a]] * x[a]
            dq[i] = s
        # joints the correction pushes beyond a limit join A (from the original q)
        grew = False
        for j in range(n_limited):
            if active[j]:
                continue
            moved = q0[j] + dq[limited_iv[j]]
            if moved > upper[j] + SLACK or moved < lower[j] - SLACK:
                active[j] = True
                upper_side[j] = moved > upper[j]
                grew = True
        if not grew:
            break
    return k


@njit(cache=True)
def place_on_limits(q, limited_iq, idx, target, k):
    """q[limited_iq[idx[a]]] = target[a] for a < k: exactly on the limit (round-off)."""
    for a in range(k):
        q[limited_iq[idx[a]]] = target[a]


@njit(cache=True)
def stop_velocities(v, limited_iv, upper_side, idx, k, minv,
                    sign, moving_out, sel, rhs, x, chol, v0, trial):
    """Inelastic impulse on the joints of A = idx[:k] (stop_positions) moving outward, in
    place on v (nv,): v <- v + M^-1 S_B^T (S_B M^-1 S_B^T)^-1 (-v_B) with B grown by joints of
    A pushed outward and shrunk by joints the impulse would pull outward (active-set
    iterations of the small complementarity problem).

    Workspaces: sign (L,) float; moving_out (L,) bool; sel (L,) int64; rhs, x (L,) float;
    chol (nv, nv); v0, trial (nv,). Returns 0, or -1 if a block is singular."""
    nv = v.shape[0]
    for a in range(k):   # outward direction on A; B = the joints moving outward
        sign[a] = 1.0 if upper_side[idx[a]] else -1.0
        moving_out[a] = sign[a] * v[limited_iv[idx[a]]] > 0.0
    for i in range(nv):
        v0[i] = v[i]
    for _ in range(2 * k + 1):
        m = 0
        for a in range(k):
            if moving_out[a]:
                sel[m] = limited_iv[idx[a]]
                rhs[m] = -v0[sel[m]]
                m += 1
        if m == 0:
            break
        if _solve_block(minv, sel, m, rhs, chol, x):
            return -1
        wrong = False   # an impulse that would pull its joint outward: drop that joint
        b = 0
        for a in range(k):
            if moving_out[a]:
                if sign[a] * x[b] > 0.0:
                    moving_out[a] = False
                    wrong = True
                b += 1
        if wrong:
            continue
        for i in range(nv):   # trial = v0 + M^-1 S_B^T impulse
            s = v0[i]
            for b in range(m):
                s += minv[i, sel[b]] * x[b]
            trial[i] = s
        grew = False   # a joint of A the impulse pushes outward joins B
        for a in range(k):
            if not moving_out[a] and sign[a] * trial[limited_iv[idx[a]]] > SLACK:
                moving_out[a] = True
                grew = True
        if grew:
            continue
        for i in range(nv):
            v[i] = trial[i]
        for b in range(m):
            v[sel[b]] = 0.0   # exactly at rest (round-off)
        break
    return 0


@njit(cache=True)
def enforce_positions(q, m, stops_int, stops_float, chol, minv, nv_work, vector_space):
    """One call for the position part of JointLimits.enforce: M^-1 from m (nv, nv) = M(q)
    (into minv; chol (nv, nv) scratch), the correction dq = nv_work[STOP_DQ] (stop_positions)
    and, when the configuration is a vector space (vector_space True: q (+) dq = q + dq), q
    moved by it and the active joints put exactly on their limits. Returns k (the number of
    joints on a stop, 0: none beyond a limit), -1 if the active block is singular, -2 if m is
    not positive definite. Packed rows: STOP_* above."""
    if spd_inverse(m, chol, minv):
        return -2
    dq = nv_work[STOP_DQ]
    k = stop_positions(q, stops_int[STOP_LIMITED_IQ], stops_int[STOP_LIMITED_IV],
                       stops_float[STOP_LOWER], stops_float[STOP_UPPER], minv,
                       stops_float[STOP_Q0], stops_int[STOP_ACTIVE],
                       stops_int[STOP_UPPER_SIDE], stops_int[STOP_IDX], stops_int[STOP_SEL],
                       stops_float[STOP_TARGET], stops_float[STOP_RHS], stops_float[STOP_X],
                       chol, dq)
    if k > 0 and vector_space:
        for i in range(dq.shape[0]):
            q[i] += dq[i]
        place_on_limits(q, stops_int[STOP_LIMITED_IQ], stops_int[STOP_IDX],
                        stops_float[STOP_TARGET], k)
    return k


@njit(cache=True)
def enforce_velocities(v, m, stops_int, stops_float, k, chol, minv, nv_work):
    """One call for the velocity part of JointLimits.enforce: M^-1 from m = M(q) at the stop
    configuration, then the impulse of stop_velocities on the k joints enforce_positions left
    in stops_int[STOP_IDX]. Returns 0, -1 if a block is singular, -2 if m is not positive
    definite."""
    if spd_inverse(m, chol, minv):
        return -2
    return stop_velocities(v, stops_int[STOP_LIMITED_IV], stops_int[STOP_UPPER_SIDE],
                           stops_int[STOP_IDX], k, minv, stops_float[STOP_SIGN],
                           stops_int[STOP_MOVING_OUT], stops_int[STOP_SEL],
                           stops_float[STOP_RHS], stops_float[STOP_X], chol,
                           nv_work[STOP_V0], nv_work[STOP_TRIAL])
