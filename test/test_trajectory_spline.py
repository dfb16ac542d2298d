"""The trajectory interpolation of the plant's ~/follow_joint_trajectory
(mbd_ros/nodes/trajectory_spline.py) against scipy's piecewise polynomials, an independent
implementation of the same splines: cubic Hermite where the points have velocities
(CubicHermiteSpline), quintic Hermite where they also have accelerations
(BPoly.from_derivatives with [p, p', p''] at both ends), straight lines where they have
positions only; the first segment starts from the given state (positions and velocities, no
accelerations: cubic even when the points have accelerations, as joint_trajectory_controller's
start state without acceleration interfaces); before the start the start positions are held,
after the end the last point.

Tolerance: round-off of degree-5 polynomials on O(1) values and O(1) s segments (1e-12
relative, 1e-10 absolute is a few hundred ulps of the largest coefficient products).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import BPoly, CubicHermiteSpline

from mbd_ros.nodes.trajectory_spline import CUBIC, LINEAR, QUINTIC, TrajectorySpline

ATOL = 1e-10
TIMES = np.array([0.4, 1.1, 1.9, 3.0])
N = 3


def data(seed=0):
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(len(TIMES), N))
    vel = rng.normal(size=(len(TIMES), N))
    vel[-1] = 0.0
    acc = rng.normal(size=(len(TIMES), N))
    q0, v0 = rng.normal(size=N), rng.normal(size=N)
    return pos, vel, acc, q0, v0


def samples(spline, ts):
    p, v, a = np.zeros(N), np.zeros(N), np.zeros(N)
    out = []
    for t in ts:
        index = spline.sample(t, p, v, a)
        out.append((index, p.copy(), v.copy(), a.copy()))
    return out


def inside(times):
    """Sample times inside the segments (not on a knot, where a quintic next to a cubic
    segment has two accelerations)."""
    knots = np.concatenate([[0.0], times])
    return np.concatenate([np.linspace(a, b, 9)[1:-1] for a, b in zip(knots[:-1], knots[1:])])


@pytest.mark.parametrize("kind", ["quintic", "cubic", "linear"])
def test_samples_match_scipy_piecewise_polynomials(kind):
    pos, vel, acc, q0, v0 = data()
    use_vel = vel if kind in ("quintic", "cubic") else None
    use_acc = acc if kind == "quintic" else None
    spline = TrajectorySpline(TIMES, pos, use_vel, use_acc, q0, v0)
    expected_degree = {"quintic": QUINTIC, "cubic": CUBIC, "linear": LINEAR}[kind]
    # the first segment starts from a state with velocities but no accelerations
    assert spline.degrees[0] == (CUBIC if use_vel is not None else LINEAR)
    assert all(d == expected_degree for d in spline.degrees[1:])
    knots = np.concatenate([[0.0], TIMES])
    allp = np.vstack([q0, pos])
    if kind == "quintic":
        first = CubicHermiteSpline(knots[:2], allp[:2], np.vstack([v0, vel[:1]]))
        rest = BPoly.from_derivatives(TIMES, [np.array([pos[k], vel[k], acc[k]])
                                              for k in range(len(TIMES))])
    elif kind == "cubic":
        first = rest = CubicHermiteSpline(knots, allp, np.vstack([v0, vel]))
    else:
        first = rest = None
    ts = inside(TIMES)
    for t, (index, p, v, a) in zip(ts, samples(spline, ts)):
        segment = int(np.searchsorted(knots, t) - 1)
        assert index == segment            # the point the sample moves towards
        if first is None:                  # straight line between the two knots
            w = (t - knots[segment]) / (knots[segment + 1] - knots[segment])
            ref_p = (1 - w) * allp[segment] + w * allp[segment + 1]
            ref_v = (allp[segment + 1] - allp[segment]) / (knots[segment + 1] - knots[segment])
            ref_a = np.zeros(N)
        else:
            f = first if segment == 0 else rest
            ref_p, ref_v, ref_a = f(t), f(t, 1), f(t, 2)
        np.testing.assert_allclose(p, ref_p, rtol=1e-12, atol=ATOL)
        np.testing.assert_allclose(v, ref_v, rtol=1e-12, atol=ATOL)
        np.testing.assert_allclose(a, ref_a, rtol=1e-12, atol=1e-8)


def test_before_the_start_and_after_the_end():
    pos, vel, acc, q0, v0 = data(1)
    spline = TrajectorySpline(TIMES, pos, vel, acc, q0, v0)
    (i0, p, v, a), (i1, p1, v1, a1) = samples(spline, [-0.5, TIMES[-1] + 2.0])
    assert i0 == -1 and np.array_equal(p, q0) and not v.any() and not a.any()
    assert i1 == len(TIMES) - 1 and np.array_equal(p1, pos[-1]) and not v1.any()


def test_a_first_point_at_time_zero_starts_there():
    """time_from_start 0 for the first point: no segment from the start state; the sample at
    0 is that point."""
    pos, vel, _, q0, v0 = data(2)
    times = TIMES - TIMES[0]
    spline = TrajectorySpline(times, pos, vel, None, q0, v0)
    assert len(spline.degrees) == len(times) - 1
    (index, p, v, _), = samples(spline, [0.0])
    np.testing.assert_allclose(p, pos[0], atol=ATOL)
    np.testing.assert_allclose(v, vel[0], atol=ATOL)
    assert index == 1


def test_a_single_point_at_time_zero_has_no_segment():
    """One point at time_from_start 0: nothing to interpolate; every sample from 0 on is that
    point (the compiled kernel's empty-trajectory branch)."""
    _, _, _, q0, v0 = data(3)
    point = np.array([[0.5, -0.25, 1.0]])
    spline = TrajectorySpline([0.0], point, None, None, q0, v0)
    assert spline.degrees == []
    for index, p, v, a in samples(spline, [0.0, 1.0]):
        assert index == 0
        np.testing.assert_array_equal(p, point[0])
        assert not v.any() and not a.any()
