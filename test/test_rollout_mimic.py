"""Mimic couplings in the compiled rollouts (kernels/rollout_mimic.py, robot/rollout_mimic.py):
the minimal-coordinate forward dynamics (T^T M T) s' = T^T (tau - h), qdd = T s' in numba.

References: robot.step from the row before (the rollout's definition). The compiled solve sums
in index order and factors by Cholesky where robot.step uses numpy's BLAS products and LAPACK's
LU, so every row equals robot.step from the previous row to that step's round-off, bounded from
its own matrices (conftest.solve_tol for the reduced solve, roundoff_tol for the products), not
bit for bit; the couplings themselves (q_m = r q_l + o, v_m = r v_l hold on every row to
round-off; robot.step's projection when they do not); a batch against its single rollouts (bit
for bit: the same kernel on each thread).
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EPS, roundoff_tol, solve_tol
from test_rollout import DT, GRIPPER, start_state, torques

import mbd_ros
from mbd_ros.robot.constraints import PROJECTION_TOLERANCE


def gripper(**options):
    return mbd_ros.load(GRIPPER, mimic=True, **options)


def sprung_gripper():
    """The gripper with a joint spring-damper on the leading finger (a force element)."""
    forces = {"forces": [{"type": "joint_spring", "name": "finger_spring", "joint": "finger_a",
                          "stiffness": 2.0, "damping": 0.05}]}
    return gripper(forces=forces)


def floating_gripper():
    """The gripper on a floating base (its base link given mass: a free joint must move some)."""
    base = ('<link name="base"><inertial><mass value="2.0"/><inertia ixx="0.02" ixy="0" ixz="0" '
            'iyy="0.02" iyz="0" izz="0.02"/></inertial></link>')
    return mbd_ros.load(GRIPPER.replace('<link name="base"/>', base), mimic=True,
                        floating_base=True)


ROBOTS = {"gripper": gripper, "floating_gripper": floating_gripper,
          "sprung_gripper": sprung_gripper}


def coupled_start(robot, seed):
    q, v = start_state(robot, seed)
    return robot.apply_mimic(q, v)


def step_bound(robot, q, v, tau, h, q_next, v_next):
    """The round-off bound of one step's difference from robot.step (module docstring): the
    reduced solve's (solve_tol of T^T M T at the step's start, its products by roundoff_tol),
    propagated through the step's stages (weights summing to h, each stage's perturbation
    amplified by at most 2 at these step sizes), and one rounding of each state entry."""
    T = robot.mimic_coupling
    mass = robot.mass_matrix(q)
    reduced = T.T @ mass @ T
    qdd = robot.forward_dynamics(q, v, tau)
    s = qdd[robot.mimic_independent]
    d_a = solve_tol(reduced, s) + roundoff_tol(robot.nv, (mass, qdd), tau, (T.T, tau))
    d_v = 2.0 * h * d_a + 4 * EPS * np.linalg.norm(v_next)
    d_q = h * d_v + 4 * EPS * np.linalg.norm(q_next)
    return d_q, d_v


def assert_rows_equal_step(robot, result, tau, integrator, dt):
    """Every row of `result` against robot.step from the row before, within step_bound."""
    start = robot.time
    try:
        for k in range(len(tau)):
            robot.time = start + k * dt
            q_ref, v_ref = robot.step(result.Q[k], result.V[k], tau[k], dt, integrator)
            d_q, d_v = step_bound(robot, result.Q[k], result.V[k], tau[k], dt, q_ref, v_ref)
            assert np.abs(result.Q[k + 1] - q_ref).max() <= d_q, (k, result.Q[k + 1] - q_ref, d_q)
            assert np.abs(result.V[k + 1] - v_ref).max() <= d_v, (k, result.V[k + 1] - v_ref, d_v)
    finally:
        robot.time = start


def assert_coupled(robot, Q, V, tolerance):
    for iq_m, iq_l, iv_m, iv_l, ratio, offset in robot._mimic.pairs:
        assert np.abs(Q[:, iq_m] - ratio * Q[:, iq_l] - offset).max() <= tolerance
        assert np.abs(V[:, iv_m] - ratio * V[:, iv_l]).max() <= tolerance


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
def test_mimic_rollout_rows_equal_step(kind, integrator):
    robot = ROBOTS[kind]()
    q0, v0 = coupled_start(robot, 41)
    tau = torques(robot, 100, 42, scale=0.2)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    assert_rows_equal_step(robot, result, tau, integrator, DT)
    # the couplings hold: a step adds round-off of the state's size, far below the projection
    # tolerance over 100 rows
    assert_coupled(robot, result.Q, result.V, 100 * 8 * EPS * max(1.0, np.abs(result.V).max()))
    # the mimicking finger moves (the coupling forces act): it is not at rest on its offset
    iq_m = robot._mimic.pairs[0][0]
    assert np.ptp(result.Q[:, iq_m]) > 1e-3


def test_mimic_state_off_the_coupling_is_projected_as_robot_step():
    """A start 1e-6 rad off the coupling: robot.step projects after the first step; the
    compiled kernel returns to Python for that projection and resumes."""
    robot = gripper()
    q0, v0 = coupled_start(robot, 43)
    iq_m = robot._mimic.pairs[0][0]
    q0[iq_m] += 1e-6
    tau = torques(robot, 20, 44, scale=0.2)
    for integrator in ("rk4", "semi_implicit_euler"):
        result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
        assert result.status == "ok"
        assert_rows_equal_step(robot, result, tau, integrator, DT)
        assert_coupled(robot, result.Q[1:], result.V[1:], PROJECTION_TOLERANCE)


@pytest.mark.parametrize("threads", [1, 2])
def test_mimic_batch_equals_single_rollouts(threads):
    robot = floating_gripper()
    starts = [coupled_start(robot, seed) for seed in (51, 52, 53)]
    q0 = np.array([q for q, _ in starts])
    v0 = np.array([v for _, v in starts])
    tau = np.array([torques(robot, 30, seed, scale=0.2) for seed in (54, 55, 56)])
    batch = robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=threads,
                          engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        single = robot.rollout(q0[i], v0[i], tau[i], DT, integrator="rk4", engine="compiled")
        np.testing.assert_array_equal(batch.Q[i], single.Q)
        np.testing.assert_array_equal(batch.V[i], single.V)


def test_mimic_parts_left_to_the_reference_loop():
    robot = gripper()
    q0, v0 = coupled_start(robot, 61)
    tau = torques(robot, 3, 62, scale=0.2)
    cases = [({"integrator": "implicit_euler"}, "implicit_euler"), ({"limits": True}, "stops"),
             ({"drives": {"joints": ["slide"], "position": np.zeros((3, 1))}}, "drives")]
    for options, reason in cases:
        with pytest.raises(ValueError, match=f"engine='compiled'.*{reason}.*mimic|"
                                             f"engine='compiled'.*mimic.*{reason}"):
            robot.rollout(q0, v0, tau, DT, engine="compiled", **options)
        auto = robot.rollout(q0, v0, tau, DT, **options)
        reference = robot.rollout(q0, v0, tau, DT, engine="reference", **options)
        np.testing.assert_array_equal(auto.Q, reference.Q)
