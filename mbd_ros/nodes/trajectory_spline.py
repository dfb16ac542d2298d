"""A joint trajectory (trajectory_msgs/JointTrajectory points) as per-segment polynomials,
interpolated as ros2_control's joint_trajectory_controller does (its spline interpolation,
joint_trajectory_controller/trajectory.cpp ``interpolate_between_points``):

- both ends of a segment with accelerations: quintic (position, velocity and acceleration
  continuous);
- else both with velocities: cubic Hermite (position and velocity continuous);
- else linear (the velocity is the segment's slope, the acceleration 0).

The first segment runs from the state the trajectory starts from (its positions and
velocities, no accelerations: a state has none, as in JTC without acceleration state
interfaces) to the first point; a first point at time_from_start 0 has no such segment. Before
the start the sample is the start state; after the last point it is the last point (its
velocity, which the validation requires to be 0, and zero acceleration).

No ROS import (the node module builds it from the message: follow_joint_trajectory.py); the
per-cycle sampling is a compiled kernel (kernels/trajectory_sampling.py). Units:
positions rad or m, velocities /s, accelerations /s^2, times s relative to the trajectory's start.
"""
from __future__ import annotations

import numpy as np

from ..kernels.trajectory_sampling import sample_trajectory

LINEAR, CUBIC, QUINTIC = 1, 3, 5


def segment_coefficients(duration, p0, p1, v0=None, v1=None, a0=None, a1=None):
    """(6, n) coefficients c of p(s) = sum_k c[k] s^k, 0 <= s <= duration, between two knots
    (each argument (n,) or None), and the degree used (LINEAR, CUBIC or QUINTIC)."""
    T = float(duration)
    p0 = np.asarray(p0, dtype=float)
    dp = np.asarray(p1, dtype=float) - p0
    c = np.zeros((6, p0.size))
    c[0] = p0
    if a0 is not None and a1 is not None and v0 is not None and v1 is not None:
        # quintic Hermite: the c solving p(0) = p0, p'(0) = v0, p''(0) = a0, p(T) = p1,
        # p'(T) = v1, p''(T) = a1 (c0..c2 from the first three; c3..c5 from the 3x3 system of
        # the last three), the coefficients of JTC's spline interpolation
        v0, v1, a0, a1 = (np.asarray(x, dtype=float) for x in (v0, v1, a0, a1))
        c[1] = v0
        c[2] = 0.5 * a0
        c[3] = (20.0 * dp - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T**2) / (2.0 * T**3)
        c[4] = (-30.0 * dp + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T**2) / \
            (2.0 * T**4)
        c[5] = (12.0 * dp - 6.0 * (v1 + v0) * T + (a1 - a0) * T**2) / (2.0 * T**5)
        return c, QUINTIC
    if v0 is not None and v1 is not None:
        # cubic Hermite: the c solving p(0) = p0, p'(0) = v0, p(T) = p1, p'(T) = v1
        v0, v1 = np.asarray(v0, dtype=float), np.asarray(v1, dtype=float)
        c[1] = v0
        c[2] = (3.0 * dp - (2.0 * v0 + v1) * T) / T**2
        c[3] = (-2.0 * dp + (v0 + v1) * T) / T**3
        return c, CUBIC
    c[1] = dp / T
    return c, LINEAR


class TrajectorySpline:
    """The polynomials of a trajectory of n joints starting from (start_positions,
    start_velocities) at relative time 0.

    times (P,): the points' time_from_start, s, strictly increasing, >= 0; positions (P, n);
    velocities, accelerations (P, n) or None (the message's empty fields)."""

    def __init__(self, times, positions, velocities, accelerations, start_positions,
                 start_velocities):
        times = np.asarray(times, dtype=float)
        positions = np.asarray(positions, dtype=float)
        P, n = positions.shape
        knots_t = [0.0]
        knots = [(np.asarray(start_positions, dtype=float),
                  np.asarray(start_velocities, dtype=float), None)]
        for k in range(P):
            knots_t.append(times[k])
            knots.append((positions[k], None if velocities is None else velocities[k],
                          None if accelerations is None else accelerations[k]))
        begin, end, point, coefs, degrees = [], [], [], [], []
        for k in range(1, len(knots)):
            duration = knots_t[k] - knots_t[k - 1]
            if duration <= 0.0:   # a first point at time 0: no segment from the start state
                continue
            (p0, v0, a0), (p1, v1, a1) = knots[k - 1], knots[k]
            c, degree = segment_coefficients(duration, p0, p1, v0, v1, a0, a1)
            begin.append(knots_t[k - 1])
            end.append(knots_t[k])
            point.append(k - 1)       # the point this segment ends at
            coefs.append(c)
            degrees.append(degree)
        self.n = n
        self.begin = np.array(begin, dtype=float)     # segment k covers [begin[k], end[k]]
        self.end = np.array(end, dtype=float)
        self.point = point
        self.coefs = np.ascontiguousarray(np.array(coefs, dtype=float).reshape(len(coefs), 6, n))
        self.degrees = degrees
        self.duration = float(times[-1])
        self.start_positions = knots[0][0].copy()
        self.start_velocities = knots[0][1].copy()
        self.last_positions = positions[-1].copy()
        self.last_velocities = np.zeros(n) if velocities is None else velocities[-1].copy()
        self.last_point = P - 1
        self.segment = 0   # the segment of the last sample (samples move forward in time)
        self._out = np.zeros((3, n))

    def sample(self, t, position, velocity, acceleration):
        """Fill position, velocity, acceleration (n,) with the trajectory at relative time t
        (s); returns the index of the point the sample moves towards (the last point at and
        after the end; -1 before the start), as JTC's feedback `index`. (Python form of
        sample_into, for callers with separate arrays.)"""
        out = self._out
        index = self.sample_into(t, out)
        position[:] = out[0]
        velocity[:] = out[1]
        acceleration[:] = out[2]
        return index

    def sample_into(self, t, out):
        """out (3, n) C-contiguous = position, velocity, acceleration at relative time t (one
        compiled call, no allocation: kernels/trajectory_sampling.py); returns the point index
        as sample() does."""
        s = sample_trajectory(float(t), self.begin, self.end, self.coefs, self.segment,
                              self.duration, self.start_positions, self.last_positions,
                              self.last_velocities, out)
        if s < 0:
            return -1
        if s >= len(self.point):
            return self.last_point
        self.segment = s
        return self.point[s]
