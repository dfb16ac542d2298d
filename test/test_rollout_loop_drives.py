"""Drives on closed loops in the compiled rollout engine (kernels/rollout_loop_drives.py): the
Plant's loop-consistent compensation b(q, v) in numba.

References: the Python compensation (robot.project_acceleration, then robot.inverse_dynamics: the
Plant's Plant._compensation and the reference engine's), the forward dynamics (b must give the
independent coordinates zero acceleration: an invariant independent of how b was computed), and
whole rollouts of the reference engine (repeated robot.step with the drives in Python).
"""
from __future__ import annotations

import numpy as np
import pytest

from loop_robots import ROBOTS, fourbar, fourbar_rocker_driven, rocker_dead_points
from mbd_ros.kernels import rollout_loop_drives as D
from mbd_ros.robot import constraints as C
from mbd_ros.robot.joint_map import scalar_dofs
from mbd_ros.robot.rollout_compiled import engine_of

EPS = np.finfo(float).eps
DT = 1e-3


def python_compensation(robot, q, v):
    """Plant._compensation: project_acceleration(q, v, 0), then the actuated forces of
    robot.inverse_dynamics; 0 where that refuses (and without actuated joints)."""
    if not len(robot.actuated_joints):
        return np.zeros(robot.nv)
    try:
        qdd = robot.project_acceleration(q, v, np.zeros(robot.nv))
        return robot.inverse_dynamics(q, v, qdd)
    except ValueError:
        return np.zeros(robot.nv)


def compiled_compensation(robot, q, v):
    """loop_drive_bias on a fresh thread workspace, with the robot's partition at q."""
    engine = engine_of(robot)
    loops = engine.loop_arrays()
    flags = loops[11][0]
    flags[robot.partition(q)[1]] = 1
    out = np.zeros(robot.nv)
    forces = engine.force_arrays()
    loaded = robot._forces is not None and robot._forces.elements is not None
    status = D.loop_drive_bias(loops[:10], loops[11], forces, loaded, np.array(q, float),
                               np.array(v, float), out)
    return status, out


def assembled_states(robot, rng, n):
    """n states on the loops: the independent coordinates random, assembled, v projected."""
    ind, _ = robot.partition(robot.assemble(robot.neutral()))
    states = []
    while len(states) < n:
        q = robot.neutral()
        q[ind] += rng.uniform(-0.6, 0.6, len(ind))
        try:
            q = robot.assemble(q)
        except ValueError:
            continue
        states.append((q, robot.project_velocity(q, 2.0 * rng.standard_normal(robot.nv))))
    return states


def test_limits_equal_the_robot_layers():
    assert D.PARTITION_CONDITION_LIMIT == C.PARTITION_CONDITION_LIMIT


@pytest.mark.parametrize("name", list(ROBOTS))
def test_compensation_equals_the_plants(name):
    """b(q, v) of the kernel against the Python compensation at assembled states, and (four-bar,
    actuated crank) the invariant that defines it: with tau = b the constrained forward
    dynamics give the independent coordinate (the crank) zero acceleration."""
    robot = ROBOTS[name]()
    rng = np.random.default_rng(11)
    ind, _ = robot.partition(robot.assemble(robot.neutral()))
    for q, v in assembled_states(robot, rng, 8):
        status, b = compiled_compensation(robot, q, v)
        assert status == D.DONE
        reference = python_compensation(robot, q, v)
        mass = robot.mass_matrix(q)
        # round-off of the RNEA (|M| |qdd| + |b_tree|) through the least squares on G_dep and
        # N^T S (cond ~ the partition limit at most): generous constant, still 1e-10-level
        scale = np.abs(mass).max() * (1.0 + np.abs(v).max() ** 2) + np.abs(reference).max()
        np.testing.assert_allclose(b, reference, rtol=0, atol=1e3 * EPS * scale)
        if len(robot.actuated_joints):
            assert np.abs(b).max() > 1e-3   # gravity and the velocity terms: not trivially 0
            qdd = robot.forward_dynamics(q, v, b)
            assert np.abs(qdd[ind]).max() < 1e3 * EPS * scale / mass.diagonal().min()
        else:
            np.testing.assert_array_equal(b, 0.0)   # a passive mechanism: no compensation


def test_compensation_at_the_dead_points_of_a_rocker_drive():
    """The four-bar driven by its rocker, at the rocker's extremes (no actuation moves the
    loop: robot.inverse_dynamics refuses, the Plant's compensation is 0) and 1e-3 rad of crank
    away (finite, ~1/n_rocker large): the kernel makes the same decision and gives the same
    numbers (the relative rank cut-off of its QR alone returned gravity / round-off there)."""
    robot = fourbar_rocker_driven()
    dead, assembled = rocker_dead_points(robot)
    crank = robot.joint_names.index("crank_joint")
    zero = np.zeros(robot.nv)
    for q in dead:
        status, b = compiled_compensation(robot, q, zero)
        assert status == D.DONE
        np.testing.assert_array_equal(python_compensation(robot, q, zero), 0.0)
        np.testing.assert_array_equal(b, 0.0)
        near = assembled(q[crank] + 1e-3, q)
        status, b = compiled_compensation(robot, near, zero)
        reference = python_compensation(robot, near, zero)
        assert status == D.DONE and np.abs(reference).max() > 1.0
        # as above, with the 1e3 amplification of n_rocker ~ 1e-3
        scale = np.abs(robot.mass_matrix(near)).max() + np.abs(reference).max()
        np.testing.assert_allclose(b, reference, rtol=0, atol=1e6 * EPS * scale)


def test_an_ill_conditioned_partition_asks_for_python():
    """Every coordinate declared dependent (G_dep of rank 2 with 3 columns: the partition would
    be re-chosen): the kernel declines instead of guessing."""
    robot = fourbar()
    q = robot.assemble(robot.neutral())
    loops = engine_of(robot).loop_arrays()
    loops[11][0][:] = 1
    out = np.zeros(robot.nv)
    status = D.loop_drive_bias(loops[:10], loops[11], engine_of(robot).force_arrays(), False, q,
                               np.zeros(robot.nv), out)
    assert status == D.NEEDS_PARTITION


def drives_problem(robot, steps, rng):
    q0 = robot.assemble(robot.neutral())
    v0 = robot.project_velocity(q0, 0.5 * rng.standard_normal(robot.nv))
    tau = 0.05 * rng.standard_normal((steps, robot.nv))
    joints = list(scalar_dofs(robot))
    iq = [int(robot.idx_q[robot.joint_names.index(j)]) for j in joints]
    position = q0[iq] + 0.2 * np.sin(np.linspace(0.0, 3.0, steps))[:, None]
    velocity = np.gradient(position, DT, axis=0)
    return q0, v0, tau, {"joints": joints, "position": position, "velocity": velocity}


@pytest.mark.parametrize("name", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
@pytest.mark.parametrize("limits", [False, True])
def test_drives_on_closed_loops_run_compiled_and_equal_the_reference(name, integrator, limits,
                                                                     monkeypatch):
    """300 rows with the Plant's position drives: engine="compiled" runs them (the
    compensation in numba: no Python compensation called) and equals the reference engine
    (repeated robot.step, the drives' terms in Python) to the projection's round-off."""
    robot = ROBOTS[name]()
    steps = 300
    q0, v0, tau, drives = drives_problem(robot, steps, np.random.default_rng(5))
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                              limits=limits, engine="reference")
    calls = []
    python_projection = C.Constraints.project_acceleration

    def counted(self, *args, **kwargs):
        calls.append(1)
        return python_projection(self, *args, **kwargs)

    monkeypatch.setattr(C.Constraints, "project_acceleration", counted)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives, limits=limits,
                           engine="compiled")
    assert result.status == reference.status == "ok"
    assert calls == []
    rows = steps + 1
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(reference.Q).max()))
    np.testing.assert_allclose(result.V, reference.V, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(reference.V).max()))
    # the drives acted: the driven run differs from the undriven one by far more than round-off
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert np.abs(free.Q - result.Q).max() > 1e-3


def test_partition_change_falls_back_to_python_for_that_row(monkeypatch):
    """When the kernel finds the partition it was given ill-conditioned (here: a bad one handed
    over at the start), the row's compensation comes from Python (which re-chooses the
    partition) and the kernel resumes: the rollout still equals the reference engine's."""
    robot = fourbar()
    steps = 50
    q0, v0, tau, drives = drives_problem(robot, steps, np.random.default_rng(6))
    reference = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", drives=drives,
                              engine="reference")
    real_partition = C.Constraints.partition
    handed = []

    def bad_first(self, q, refresh=False):
        if not handed:    # the compiled engine's first question: every coordinate dependent
            handed.append(1)
            return np.zeros(0, dtype=np.int64), np.arange(self.nv)
        return real_partition(self, q, refresh)

    projections = []
    real_projection = C.Constraints.project_acceleration

    def counted(self, *args, **kwargs):
        projections.append(1)
        return real_projection(self, *args, **kwargs)

    monkeypatch.setattr(C.Constraints, "partition", bad_first)
    monkeypatch.setattr(C.Constraints, "project_acceleration", counted)
    result = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", drives=drives,
                           engine="compiled")
    assert handed and len(projections) == 1   # one row in Python, then the kernel again
    assert result.status == "ok"
    rows = steps + 1
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=64 * EPS * rows)
    np.testing.assert_allclose(result.V, reference.V, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(reference.V).max()))
