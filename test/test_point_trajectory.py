"""PointTrajectory (waypoint interpolation of prescribed joints) against closed forms: each rule
reproduces the polynomials of its degree exactly, its derivatives are those of its position
(central differences), it interpolates a sinusoid to the truncation order, and holds at both
ends; bad input is a ValueError."""
import numpy as np
import pytest

from mbd_ros.simulation.point_trajectory import PointTrajectory

TIMES = np.array([0.2, 0.35, 0.5, 0.9, 1.0])


def _poly(coefficients):
    c = np.polynomial.Polynomial(coefficients)
    return c, c.deriv(), c.deriv(2)


@pytest.mark.parametrize("degree,fields", [(1, 1), (3, 2), (5, 3)])
def test_each_rule_reproduces_polynomials_of_its_degree(degree, fields):
    rng = np.random.default_rng(degree)
    q, qd, qdd = _poly(rng.uniform(-1, 1, degree + 1))
    args = [TIMES, q(TIMES), qd(TIMES) if fields > 1 else None,
            qdd(TIMES) if fields > 2 else None]
    trajectory = PointTrajectory(*args)
    for t in np.linspace(TIMES[0] + 1e-9, TIMES[-1] - 1e-9, 97):
        got = trajectory(t)
        assert got[0] == pytest.approx(q(t), abs=1e-12)
        assert got[1] == pytest.approx(qd(t), abs=1e-10)
        if degree > 1:
            assert got[2] == pytest.approx(qdd(t), abs=1e-8)
        else:
            assert got[2] == 0.0


def test_derivatives_are_consistent_and_sinusoid_is_interpolated():
    w = 2 * np.pi * 0.8
    times = np.linspace(0.0, 2.0, 41)    # 50 ms between points
    trajectory = PointTrajectory(times, np.sin(w * times), w * np.cos(w * times),
                                 -w * w * np.sin(w * times))
    eps = 1e-6
    worst = 0.0
    for t in np.linspace(0.013, 1.987, 200):
        q, qd, qdd = trajectory(t)
        assert qd == pytest.approx((trajectory(t + eps)[0] - trajectory(t - eps)[0]) / (2 * eps),
                                   abs=1e-7)
        assert qdd == pytest.approx((trajectory(t + eps)[1] - trajectory(t - eps)[1]) / (2 * eps),
                                    abs=1e-6)
        worst = max(worst, abs(q - np.sin(w * t)))
    # quintic Hermite: |error| <= max|q^(6)| max|s^3 (s - h)^3| / 6! = (w h)^6 / (64 * 720)
    # = (5.027 * 0.05)^6 / 46080 = 5.45e-9 (reached at mid-segment where |sin| = 1)
    bound = (w * 0.05) ** 6 / 46080
    assert 0.5 * bound < worst <= bound * (1 + 1e-6)


def test_holds_before_and_after():
    trajectory = PointTrajectory([1.0, 2.0], [0.5, -0.3], [0.0, 0.0], [0.0, 0.0])
    assert trajectory(0.0) == (0.5, 0.0, 0.0)
    assert trajectory(5.0) == (-0.3, 0.0, 0.0)
    assert PointTrajectory.hold(0.7)(123.0) == (0.7, 0.0, 0.0)


@pytest.mark.parametrize("args,match", [
    (([0.0, 0.0], [1.0, 2.0]), "increasing"),
    (([0.0, 1.0], [1.0]), "as many"),
    (([0.0, 1.0], [1.0, np.nan]), "finite"),
    (([0.0, 1.0], [1.0, 2.0], [0.0]), "velocities"),
    (([0.0, 1.0], [1.0, 2.0], None, [0.0, 0.0]), "need velocities"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        PointTrajectory(*args)
