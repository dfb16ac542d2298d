"""Per-cycle kernels of the plant's trajectory following (mbd_ros/nodes/follow_joint_trajectory.py
and trajectory_spline.py): sample a piecewise polynomial trajectory, and compare the sample with
the robot's state against tolerances. No allocation: the caller's arrays are filled.

A trajectory of S segments over k joints is begin (S,), end (S,) (segment s covers
[begin[s], end[s]], s, relative to the trajectory's start) and coefs (S, 6, k): on segment s,
p(t) = sum_j coefs[s, j] tau^j with tau = t - begin[s] (a quintic; cubic and linear segments have
zero upper coefficients).

Compiled (or loaded from numba's cache) on the first call (entry.py), not at import.
"""
from numba import types

from .entry import entry_point

_f8_1 = types.Array(types.float64, 1, "C")
_f8_2 = types.Array(types.float64, 2, "C")
_f8_3 = types.Array(types.float64, 3, "C")
_i8_1 = types.Array(types.int64, 1, "C")


@entry_point(types.int64(types.float64, _f8_1, _f8_1, _f8_3, types.int64, types.float64, _f8_1,
                         _f8_1, _f8_1, _f8_2))
def sample_trajectory(t, begin, end, coefs, segment, duration, start_pos, last_pos, last_vel,
                      out):
    """out[0], out[1], out[2] (k,) = position, velocity, acceleration at relative time t.
    Returns the segment sampled: -1 before the start (start positions held, velocity 0),
    len(begin) at and after `duration` (the last point: last_pos, last_vel, acceleration 0).
    `segment`: the segment of the previous sample (samples move forward; searched from there)."""
    k = out.shape[1]
    S = begin.shape[0]
    if t < 0.0:
        for i in range(k):
            out[0, i] = start_pos[i]
            out[1, i] = 0.0
            out[2, i] = 0.0
        return -1
    if t >= duration or S == 0:
        for i in range(k):
            out[0, i] = last_pos[i]
            out[1, i] = last_vel[i]
            out[2, i] = 0.0
        return S
    s = segment
    if s < 0 or s >= S or t < begin[s]:
        s = 0
    while s + 1 < S and t >= end[s]:
        s += 1
    tau = t - begin[s]
    for i in range(k):
        # Horner: p = c0 + tau (c1 + tau (c2 + ...)); p' and p'' from the same coefficients
        c0 = coefs[s, 0, i]
        c1 = coefs[s, 1, i]
        c2 = coefs[s, 2, i]
        c3 = coefs[s, 3, i]
        c4 = coefs[s, 4, i]
        c5 = coefs[s, 5, i]
        out[0, i] = c0 + tau * (c1 + tau * (c2 + tau * (c3 + tau * (c4 + tau * c5))))
        out[1, i] = c1 + tau * (2.0 * c2 + tau * (3.0 * c3 + tau * (4.0 * c4 + tau * 5.0 * c5)))
        out[2, i] = 2.0 * c2 + tau * (6.0 * c3 + tau * (12.0 * c4 + tau * 20.0 * c5))
    return s


@entry_point(types.int64(_f8_2, _f8_1, _f8_1, _f8_1, _i8_1, _i8_1, _f8_2, _f8_2, types.int64))
def first_violation(desired, q, v, qdd, iq, iv, error, tolerance, columns):
    """error (k, 3) = desired (3, k) - the state (q[iq], v[iv], qdd[iv]) per joint
    (JTC's sign); returns the first j * 3 + c (joint j, column c < `columns`: 0 position,
    1 velocity, 2 acceleration) with tolerance[j, c] > 0 and |error[j, c]| > tolerance[j, c],
    or -1 (a tolerance of 0 is not checked)."""
    k = desired.shape[1]
    found = -1
    for j in range(k):
        error[j, 0] = desired[0, j] - q[iq[j]]
        error[j, 1] = desired[1, j] - v[iv[j]]
        error[j, 2] = desired[2, j] - qdd[iv[j]]
        if found < 0:
            for c in range(columns):
                tol = tolerance[j, c]
                if tol > 0.0 and abs(error[j, c]) > tol:
                    found = j * 3 + c
                    break
    return found
