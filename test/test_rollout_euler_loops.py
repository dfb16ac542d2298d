"""Semi-implicit Euler on closed loops: robot.step's projection after each step closes the loops
to EULER_CLOSING_TOLERANCE (= PROJECTION_TOLERANCE) rather than ASSEMBLY_TOLERANCE
(robot/constraints.py), in robot.step and in the compiled rollout (kernels/rollout_projection.py).

References: the constraint residuals of every returned state (robot.closure_residual, evaluated
in Python by the loop formalism, independently of the kernel) against the documented tolerance
PROJECTION_TOLERANCE, over long runs that open the loops by up to ~1e-5 per step; repeated
robot.step (the Python projection, numpy's LAPACK) row by row against the compiled rollout; the
Gauss-Newton's own stop in Constraints.project_state.
"""
from __future__ import annotations

import numpy as np
import pytest

from loop_robots import ROBOTS, fourbar
from mbd_ros.robot import constraints as C
from mbd_ros.robot.rollout_compiled import closing_tolerance

EPS = np.finfo(float).eps
DT = 1e-3


def falling_start(robot, name, rows, seed):
    """(q0, v0, tau): the loops closed at rest, small random torques; the four-bar falls and
    swings under gravity (|v| up to ~27 rad/s: semi-implicit Euler opens its loop by up to
    2e-5 m per step); the double wishbone kicked hard (its strut damps it)."""
    rng = np.random.default_rng(seed)
    q0 = robot.assemble(robot.neutral())
    if name == "fourbar":
        return q0, np.zeros(robot.nv), 0.1 * rng.standard_normal((rows, robot.nv))
    v0 = robot.project_velocity(q0, 30.0 * rng.standard_normal(robot.nv))
    return q0, v0, 50.0 * rng.standard_normal((rows, robot.nv))


def test_the_euler_closing_tolerance_keeps_states_within_the_projection_tolerance():
    # the Gauss-Newton stops below it, so every projected state has max |g| below
    # PROJECTION_TOLERANCE, the bound robot.step's residual test (and the docs) promise
    assert C.EULER_CLOSING_TOLERANCE <= C.PROJECTION_TOLERANCE
    assert closing_tolerance("semi_implicit_euler") == C.EULER_CLOSING_TOLERANCE
    for other in (None, "rk4", "implicit_euler", "symplectic_euler"):
        assert closing_tolerance(other) == C.ASSEMBLY_TOLERANCE


def test_project_state_stops_at_the_given_tolerance():
    """Constraints.project_state(tolerance=): the loops closed below it, and a looser tolerance
    takes no more Gauss-Newton steps than the default (counted by the loop evaluations)."""
    robot = fourbar()
    constraints = robot._constraints
    rng = np.random.default_rng(3)
    q_closed = robot.assemble(robot.neutral())
    evaluations = []
    state = constraints.state

    def counted(q, v):
        evaluations.append(1)
        return state(q, v)

    constraints.state = counted
    try:
        for _ in range(10):
            q = robot.integrate(q_closed, 3e-3 * rng.standard_normal(robot.nv), 1.0)
            v = rng.standard_normal(robot.nv)
            counts = []
            for tolerance in (C.ASSEMBLY_TOLERANCE, C.EULER_CLOSING_TOLERANCE):
                evaluations.clear()
                q_new, v_new = constraints.project_state(q, v, tolerance=tolerance)
                counts.append(len(evaluations))
                position, velocity = robot.closure_residual(q_new, v_new)
                assert position < tolerance
                assert velocity < 64 * EPS * np.abs(v).max()
            assert counts[1] <= counts[0]
    finally:
        constraints.state = state


@pytest.mark.parametrize("name, rows", [("fourbar", 3000), ("double_wishbone", 1000)])
def test_long_euler_rollout_stays_closed_and_equals_robot_step(name, rows):
    """A long semi-implicit Euler run: every row of the compiled rollout within
    PROJECTION_TOLERANCE of the loops (positions and velocities, evaluated in Python), equal to
    robot.step from the row before to round-off (the same Gauss-Newton stop; the dense algebra
    differs: kernels/rollout_projection.py), and the looser stop in effect (rows with a
    position residual above ASSEMBLY_TOLERANCE, which the old stop would have closed further)."""
    robot = ROBOTS[name]()
    q0, v0, tau = falling_start(robot, name, rows, seed=11)
    result = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", engine="compiled")
    assert result.status == "ok", result.message
    Q, V = result
    assert np.abs(V).max() > (10.0 if name == "fourbar" else 1.0)   # it moved: loops opened
    positions = np.empty(rows + 1)
    velocities = np.empty(rows + 1)
    for k in range(rows + 1):
        positions[k], velocities[k] = robot.closure_residual(Q[k], V[k])
    assert positions.max() < C.PROJECTION_TOLERANCE, positions.max()
    assert velocities.max() < C.PROJECTION_TOLERANCE, velocities.max()
    if name == "fourbar":   # fast enough that one Gauss-Newton step often stops above 1e-12
        assert (positions > C.ASSEMBLY_TOLERANCE).sum() >= 10
    start = robot.time
    worst_q = worst_v = 0.0
    for k in range(rows):
        q, v = robot.step(Q[k], V[k], tau[k], DT, "semi_implicit_euler")
        # a step's round-off (the forward dynamics, the projection's solves), relative
        scale_q = max(1.0, np.abs(q).max())
        scale_v = max(1.0, np.abs(v).max())
        worst_q = max(worst_q, np.abs(Q[k + 1] - q).max() / scale_q)
        worst_v = max(worst_v, np.abs(V[k + 1] - v).max() / scale_v)
    robot.time = start
    # test_rollout_loops.py's bound for one projection (64 eps, relative to the state); measured
    # 0.25 eps (q) and 1.0 eps (v) on the four-bar, 0 and 0.96 eps on the double wishbone
    assert worst_q < 64 * EPS and worst_v < 64 * EPS, (worst_q / EPS, worst_v / EPS)
