"""Kernels of the simulated plant's joint sensors (mbd_ros.simulation.sensors): encoder
quantisation, Gaussian measurement noise from a per-object seeded generator, and a measurement
delay of whole cycles in a preallocated ring buffer. No allocation per call.

The generator is xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
generators", ACM TOMS 47(4), 2021), its state 4 uint64 words seeded by splitmix64; normal
deviates by the Box-Muller transform z = sqrt(-2 ln u1) cos(2 pi u2) (Box and Muller, Ann.
Math. Statist. 29, 1958) with u1 in (0, 1], u2 in [0, 1) of 53 random bits each.
"""
import math

import numpy as np
from numba import njit

# rows of the sensors' float parameters
SENSOR_NOISE_POSITION, SENSOR_NOISE_VELOCITY, SENSOR_RESOLUTION, SENSOR_DT = range(4)
SENSOR_FLOAT_ROWS = 4
# entries of the sensors' int state: the ring slot written next, whether prev_q holds the
# previous cycle's quantised positions (velocity by backward difference)
SENSOR_HEAD, SENSOR_PRIMED = range(2)
SENSOR_INT_ROWS = 2

_MASK64 = (1 << 64) - 1
_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0


def seed_state(seed):
    """(4,) uint64 xoshiro256** state from an integer seed (splitmix64 of it, as the authors
    recommend); plain Python, called once per object."""
    x = int(seed) & _MASK64
    words = []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & _MASK64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        words.append(z ^ (z >> 31))
    return np.array(words, dtype=np.uint64)


@njit(cache=True)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True)
def next_uint64(s):
    """The next 64-bit output of xoshiro256** with state s (4,) uint64 (advanced in place)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(cache=True)
def uniform(s):
    """A uniform deviate in [0, 1) of 53 random bits."""
    return float(next_uint64(s) >> np.uint64(11)) * _TWO_POW_MINUS_53


@njit(cache=True)
def standard_normal(s):
    """A standard normal deviate (Box-Muller; the second deviate of the pair is dropped)."""
    u1 = 1.0 - uniform(s)   # (0, 1]: log is finite
    u2 = uniform(s)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True)
def fill_standard_normal(s, out):
    """out (n,) = standard normal deviates (tests, and seeding nothing else)."""
    for i in range(out.shape[0]):
        out[i] = standard_normal(s)


@njit(cache=True)
def measure(params, counters, rng, prev_q, ring_q, ring_v, q, v, q_out, v_out):
    """One cycle of the joint sensors. Model: params (SENSOR_FLOAT_ROWS,) noise standard
    deviations of position and velocity, encoder resolution (0: none) and cycle dt, s.
    State: counters (SENSOR_INT_ROWS,) int64, rng (4,) uint64, prev_q (n,) the last quantised
    positions, ring_q, ring_v (delay + 1, n) the samples of the last delay + 1 cycles.
    In: q, v (n,) the true positions and velocities. Out: q_out, v_out (n,) what the
    controller sees: the sample taken `delay` cycles ago (q_out may be q: each entry is read
    before it is written).

    A sample is y_q = Q(q) + sigma_q n1, y_v = (Q(q) - Q(q_prev)) / dt + sigma_v n2 with an
    encoder (Q(x) = r round(x / r), so |Q(x) - x| <= r / 2) or y_v = v + sigma_v n2 without one
    (and at the first cycle after a reset, which has no previous position)."""
    sigma_q = params[SENSOR_NOISE_POSITION]
    sigma_v = params[SENSOR_NOISE_VELOCITY]
    resolution = params[SENSOR_RESOLUTION]
    dt = params[SENSOR_DT]
    slots = ring_q.shape[0]
    head = counters[SENSOR_HEAD]
    primed = counters[SENSOR_PRIMED] != 0
    oldest = head + 1 if head + 1 < slots else 0   # written slots - 1 = delay cycles ago
    for i in range(q.shape[0]):
        position = q[i]
        velocity = v[i]
        if resolution > 0.0:
            position = resolution * round(position / resolution)
            if primed:
                velocity = (position - prev_q[i]) / dt
            prev_q[i] = position
        if sigma_q > 0.0:
            position += sigma_q * standard_normal(rng)
        if sigma_v > 0.0:
            velocity += sigma_v * standard_normal(rng)
        ring_q[head, i] = position
        ring_v[head, i] = velocity
        q_out[i] = ring_q[oldest, i]
        v_out[i] = ring_v[oldest, i]
    counters[SENSOR_HEAD] = oldest
    counters[SENSOR_PRIMED] = 1
