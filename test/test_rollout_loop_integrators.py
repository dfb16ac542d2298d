"""symplectic_euler on closed loops in the compiled rollout engine (kernels/rollout_implicit.py's
step through the recursive solver's C entry, then robot.step's projection in numba).

Reference: robot.step from the same state, row by row (as test/test_rollout_implicit.py does on
trees, and for the same reason: the fixed-point iteration and its dense algebra differ from
numpy's by round-off, which a trajectory amplifies). The bound of one row is that file's
symplectic_bound for the step without the projection (robot.step(..., project=False)) plus the
projection's round-off (test_rollout_loops.py: 64 eps, times |v| for the velocities), and the
loops stay closed (the projection's own invariant).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot import constraints as C

from conftest import EPS
from test_rollout_implicit import symplectic_bound

ROOT = Path(__file__).resolve().parent.parent
DT = 1e-3


def fourbar():
    return mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"),
                        closures=str(ROOT / "config" / "fourbar_closures.yaml"))


def test_symplectic_euler_on_a_four_bar_runs_compiled_row_by_row_equal_to_step(monkeypatch):
    robot = fourbar()
    rng = np.random.default_rng(9)
    q0 = robot.assemble(robot.neutral())
    v0 = robot.project_velocity(q0, 0.3 * rng.standard_normal(robot.nv))
    steps = 200
    tau = 0.5 * rng.standard_normal((steps, robot.nv))
    calls = []
    python_projection = C.Constraints.project_state

    def counted(self, *args, **kwargs):
        calls.append(1)
        return python_projection(self, *args, **kwargs)

    monkeypatch.setattr(C.Constraints, "project_state", counted)
    result = robot.rollout(q0, v0, tau, DT, integrator="symplectic_euler", engine="compiled")
    assert result.status == "ok"
    assert calls == []          # projected in numba
    Q, V = result
    start = robot.time
    worst = 0.0
    for k in range(steps):
        q_ref, v_ref = robot.step(Q[k], V[k], tau[k], DT, "symplectic_euler")
        q_open, v_open = robot.step(Q[k], V[k], tau[k], DT, "symplectic_euler", project=False)
        d_q, d_v = symplectic_bound(robot, Q[k], V[k], tau[k], DT, q_open, v_open)
        d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
        d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
        assert np.abs(Q[k + 1] - q_ref).max() <= d_q, k
        assert np.abs(V[k + 1] - v_ref).max() <= d_v, k
        worst = max(worst, np.abs(V[k + 1] - v_ref).max() / d_v)
        position, velocity = robot.closure_residual(Q[k + 1], V[k + 1])
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    robot.time = start
    assert np.abs(V).max() > 1.0   # it moved
    assert len(calls) > 0          # (robot.step's projections: the loop was opened and closed)


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_what_still_runs_in_python_is_refused_with_its_reason(integrator):
    """implicit_euler on closed loops (its tangent basis), symplectic_euler on closed loops with
    force elements (the double wishbone): engine="compiled" says why."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "double_wishbone.urdf"),
                         closures=str(ROOT / "config" / "double_wishbone.yaml"),
                         forces=str(ROOT / "config" / "double_wishbone.yaml"))
    q0 = robot.assemble(robot.neutral())
    with pytest.raises(ValueError, match=f"engine='compiled'.*{integrator}.*closed loops"):
        robot.rollout(q0, np.zeros(robot.nv), np.zeros((3, robot.nv)), DT,
                      integrator=integrator, engine="compiled")
