"""What a controller sees of a simulated plant's joints: encoder quantisation, Gaussian
measurement noise (seeded) and a measurement delay of whole cycles. Not the physics: the plant
integrates the true state; these act on the published joint states only. No ROS imports.

    sensors = JointSensors(n, dt=1e-3, noise_position=1e-4, delay_cycles=2, seed=7)
    sensors.reset(q0, v0)                       # the state the delay line starts with
    q_seen, v_seen = sensors.measure(q, v)      # once per cycle; (n,) arrays of the object

One cycle (kernels/sensors.py measure): the sample of the true (q, v) is

- position: Q(q) + sigma_q n1, Q(x) = r round(x / r) with the encoder resolution r (rad or m
  per count; 0: no quantisation): |Q(q) - q| <= r / 2;
- velocity: with an encoder, the backward difference of the quantised positions,
  (Q(q_k) - Q(q_(k-1))) / dt, as a drive computes it from its encoder (so it is quantised in
  steps of r / dt and lags the true velocity by dt / 2 on average); without one, the true v;
  then + sigma_v n2;
- n1, n2 independent standard normal deviates of the object's own generator (xoshiro256**,
  seeded by `seed`: the same seed gives the same noise, whatever else runs);

and the output is the sample taken `delay_cycles` cycles ago (a ring buffer of delay + 1
samples, allocated once; after reset() it is filled with the reset state, so the first
`delay_cycles` outputs are that state). Every option is off by default (0): then the output is
the true state.
"""
from __future__ import annotations

import numpy as np

from ..kernels.sensors import (SENSOR_DT, SENSOR_FLOAT_ROWS, SENSOR_HEAD, SENSOR_INT_ROWS,
                               SENSOR_NOISE_POSITION, SENSOR_NOISE_VELOCITY, SENSOR_PRIMED,
                               SENSOR_RESOLUTION, seed_state)
from ..kernels.sensors import measure as _measure

MAX_DELAY_CYCLES = 10_000   # the ring buffer is (delay + 1, n): a bounded allocation


def _non_negative(value, name):
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


class JointSensors:
    """Sensors of n joints (see the module docstring).

    n: number of joints; dt: cycle, s; noise_position (rad or m), noise_velocity (rad/s or
    m/s): standard deviations; delay_cycles: whole cycles, 0 <= delay <= MAX_DELAY_CYCLES;
    resolution: encoder resolution, rad (or m) per count (0: none); seed: the noise generator's
    seed (an integer >= 0). ValueError naming the argument if invalid.
    """

    def __init__(self, n, dt, noise_position=0.0, noise_velocity=0.0, delay_cycles=0,
                 resolution=0.0, seed=0):
        self.n = int(n)
        self._params = np.zeros(SENSOR_FLOAT_ROWS)
        self._counters = np.zeros(SENSOR_INT_ROWS, dtype=np.int64)
        self.set_dt(dt)
        self._params[SENSOR_NOISE_POSITION] = _non_negative(noise_position, "noise_position")
        self._params[SENSOR_NOISE_VELOCITY] = _non_negative(noise_velocity, "noise_velocity")
        self._params[SENSOR_RESOLUTION] = _non_negative(resolution, "resolution")
        delay = int(delay_cycles)
        if delay != delay_cycles or not 0 <= delay <= MAX_DELAY_CYCLES:
            raise ValueError(f"delay_cycles must be an integer in [0, {MAX_DELAY_CYCLES}], got "
                             f"{delay_cycles}")
        self.delay_cycles = delay
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed}")
        self.seed = seed
        self._rng = seed_state(seed)
        self._ring_q = np.zeros((delay + 1, self.n))
        self._ring_v = np.zeros((delay + 1, self.n))
        self._prev_q = np.zeros(self.n)
        self._q_in = np.zeros(self.n)
        self._v_in = np.zeros(self.n)
        self.q = np.zeros(self.n)   # the last measurement (measure() returns these arrays)
        self.v = np.zeros(self.n)
        self.reset(self._q_in, self._v_in)

    noise_position = property(lambda self: float(self._params[SENSOR_NOISE_POSITION]))
    noise_velocity = property(lambda self: float(self._params[SENSOR_NOISE_VELOCITY]))
    resolution = property(lambda self: float(self._params[SENSOR_RESOLUTION]))
    dt = property(lambda self: float(self._params[SENSOR_DT]))

    @property
    def active(self):
        """True when the output differs from the true state (some option is on)."""
        return bool(self.delay_cycles or self._params[SENSOR_NOISE_POSITION]
                    or self._params[SENSOR_NOISE_VELOCITY] or self._params[SENSOR_RESOLUTION])

    def set_dt(self, dt):
        """The cycle, s (> 0): the velocity's backward difference divides by it."""
        dt = float(dt)
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f"dt must be a finite number > 0, got {dt}")
        self._params[SENSOR_DT] = dt

    def quantise(self, x):
        """Q(x) (a new array): x rounded to the encoder's counts (x itself without an encoder)."""
        r = self.resolution
        x = np.asarray(x, dtype=float)
        return r * np.round(x / r) if r > 0.0 else x.copy()

    def reset(self, q, v):
        """Start again at the true state q, v (n,): the delay line holds its (quantised,
        noise-free) sample, the velocity's backward difference starts from Q(q). The noise
        generator goes on (it is not reseeded)."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if q.shape != (self.n,) or v.shape != (self.n,):
            raise ValueError(f"q and v must have shape ({self.n},), got {q.shape}, {v.shape}")
        sample = self.quantise(q)
        self._ring_q[:] = sample
        self._ring_v[:] = v
        self._prev_q[:] = sample
        self._counters[SENSOR_HEAD] = 0
        self._counters[SENSOR_PRIMED] = 1
        self.q[:] = sample
        self.v[:] = v

    def measure(self, q, v):
        """(q_seen, v_seen) (n,): what the controller sees this cycle of the true q, v (n,)
        (rad or m, rad/s or m/s, the joints' own coordinates). Call once per cycle: it advances
        the delay line and the noise generator. Returns this object's arrays (overwritten by the
        next call)."""
        q_in, v_in = self._q_in, self._v_in
        q_in[:] = q   # any array-like of n values (a message's field, a view of the state)
        v_in[:] = v
        _measure(self._params, self._counters, self._rng, self._prev_q, self._ring_q,
                 self._ring_v, q_in, v_in, self.q, self.v)
        return self.q, self.v
