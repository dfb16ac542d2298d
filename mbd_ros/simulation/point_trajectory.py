"""A prescribed joint trajectory given by waypoints (as a trajectory_msgs/JointTrajectory carries
them), interpolated into q(t), q'(t), q''(t) for rheonomic joints (robot/prescribed.py).

    trajectory = PointTrajectory(times, positions, velocities, accelerations)
    q, qd, qdd = trajectory(t)
    robot.step(q, v, tau, dt, prescribed={"elbow": trajectory})

Interpolation rule between consecutive waypoints (t_k, p_k) -> (t_k+1, p_k+1), as ros2_control's
joint_trajectory_controller splines:

- positions, velocities and accelerations given: the quintic polynomial matching position,
  velocity and acceleration at both ends (C2: continuous accelerations, so the drive forces the
  prescribed joint needs are continuous);
- positions and velocities: the cubic Hermite polynomial (C1);
- positions only: linear (velocity constant over the segment, acceleration zero).

Before the first waypoint the trajectory holds the first position at rest; after the last it
holds the last position at rest (q = p_last, q' = q'' = 0: a trajectory should end at rest, or
the prescribed joint's velocity jumps to zero there). `PointTrajectory.hold(q)` is a constant
trajectory. Times are absolute (seconds of the simulation's clock).
"""
from __future__ import annotations

import bisect

import numpy as np


class PointTrajectory:
    """One joint's waypoint trajectory. times (k,) strictly increasing, s; positions (k,);
    velocities, accelerations (k,) or None (see the module docstring for the rule).
    Calling it at t returns (q, qd, qdd) as floats. Raises ValueError on bad input."""

    def __init__(self, times, positions, velocities=None, accelerations=None):
        t = np.asarray(times, dtype=float).ravel()
        p = np.asarray(positions, dtype=float).ravel()
        if t.size == 0 or t.shape != p.shape:
            raise ValueError(f"a trajectory needs as many times as positions (at least one), got "
                             f"{t.size} and {p.size}")
        if not (np.isfinite(t).all() and np.isfinite(p).all()):
            raise ValueError("trajectory times and positions must be finite")
        if t.size > 1 and not (np.diff(t) > 0.0).all():
            raise ValueError("trajectory times must be strictly increasing")
        self.times, self.positions = t, p
        self.velocities = self._optional(velocities, t.size, "velocities")
        self.accelerations = self._optional(accelerations, t.size, "accelerations")
        if self.accelerations is not None and self.velocities is None:
            raise ValueError("trajectory accelerations need velocities too")

    @staticmethod
    def _optional(values, n, field):
        if values is None:
            return None
        x = np.asarray(values, dtype=float).ravel()
        if x.size == 0:
            return None
        if x.size != n or not np.isfinite(x).all():
            raise ValueError(f"trajectory {field}: expected {n} finite values, got {x.size}")
        return x

    @classmethod
    def hold(cls, position):
        """The constant trajectory q = position, at rest."""
        return cls([0.0], [position])

    @property
    def start(self):
        return float(self.times[0])

    @property
    def end(self):
        return float(self.times[-1])

    def _segment(self, k):
        """Coefficients c0..c5 of q(t_k + s) = sum c_i s^i on segment k, Python floats
        (evaluation by Horner's rule without numpy calls: a few µs per joint and stage).
        Computed when the segment is first evaluated, so that a long trajectory costs nothing
        up front (all 10 000 segments at once took ~20 ms, a stall of the plant's cycle)."""
        times, p = self.times, self.positions
        h = float(times[k + 1] - times[k])
        p0, p1 = float(p[k]), float(p[k + 1])
        if self.velocities is None:                          # linear
            return (p0, (p1 - p0) / h, 0.0, 0.0, 0.0, 0.0)
        v0, v1 = float(self.velocities[k]), float(self.velocities[k + 1])
        if self.accelerations is None:                       # cubic Hermite
            c2 = (3.0 * (p1 - p0) / h - 2.0 * v0 - v1) / h
            c3 = (2.0 * (p0 - p1) / h + v0 + v1) / (h * h)
            return (p0, v0, c2, c3, 0.0, 0.0)
        # quintic matching p, v, a at both ends (d, e, f: what the cubic-free part
        # p0 + v0 s + a0 s^2 / 2 misses at s = h in position, velocity, acceleration)
        a0, a1 = float(self.accelerations[k]), float(self.accelerations[k + 1])
        d = p1 - p0 - v0 * h - 0.5 * a0 * h * h
        e = v1 - v0 - a0 * h
        f = a1 - a0
        return (p0, v0, 0.5 * a0,
                (10.0 * d - 4.0 * e * h + 0.5 * f * h * h) / h ** 3,
                (-15.0 * d + 7.0 * e * h - f * h * h) / h ** 4,
                (6.0 * d - 3.0 * e * h + 0.5 * f * h * h) / h ** 5)

    def __call__(self, t):
        times = self.__dict__.get("_times")
        if times is None:
            times = self.__dict__["_times"] = self.times.tolist()
            self._current = (-1, None)
        if t <= times[0] or len(times) == 1:
            return float(self.positions[0]), 0.0, 0.0
        if t >= times[-1]:
            return float(self.positions[-1]), 0.0, 0.0
        # the segment of the last call, kept as one tuple (threads may share a trajectory);
        # consecutive calls mostly fall in the same one
        k, coefficients = self._current
        if k < 0 or not times[k] <= t < times[k + 1]:
            k = bisect.bisect_right(times, t) - 1
            coefficients = self._segment(k)
            self._current = (k, coefficients)
        s = t - times[k]
        c0, c1, c2, c3, c4, c5 = coefficients
        q = c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
        qd = c1 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)))
        qdd = 2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5))
        return q, qd, qdd
