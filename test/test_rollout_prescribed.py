"""Prescribed joints in the compiled rollouts (robot/rollout_prescribed.py,
kernels/rollout_prescribed.py): the trajectories sampled in Python before the compiled call, the
hybrid dynamics and the placement on the trajectories in numba.

References: repeated robot.step with the same `prescribed` trajectories from Python, robot.time
set to t0 + k dt at each row as the rollout defines it (the same arithmetic in the same order:
equal bit for bit), the reference engine, and the trajectories themselves (the prescribed joints
sit exactly on q(t_k), qd(t_k) at every row, an invariant of the Simulator). implicit_euler and
symplectic_euler: row by row against robot.step within that step's round-off bound
(test_rollout_implicit.py's: their dense algebra is not numpy's BLAS / LAPACK).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mbd_ros.robot import rollout_prescribed
from mbd_ros.robot.integrators import UnstableStepWarning
from test_rollout_implicit import BOUNDS as IMPLICIT_BOUNDS
from test_rollout import (DT, arm, flexible_arm, floating_leg, sprung_arm, sprung_floating_arm,
                          start_state, torques)

T0 = 0.3   # a start time that is not 0: the samples are at t0 + k dt + c h


def sine(amplitude, omega, offset):
    """A trajectory t -> (q, qd, qdd) (rad, rad/s, rad/s^2)."""
    def trajectory(t):
        s, c = math.sin(omega * t), math.cos(omega * t)
        return offset + amplitude * s, amplitude * omega * c, -amplitude * omega * omega * s
    return trajectory


def trajectories(robot):
    """Two prescribed joints of the arm7 (the last seven joint names of a floating base); the
    flexible arm's shoulder."""
    if robot.elastic_names:
        return {"shoulder": sine(0.4, 3.0, 0.2)}
    names = robot.joint_names[-7:]
    return {names[1]: sine(0.4, 3.0, 0.2), names[4]: sine(-0.3, 5.0, -0.1)}


def stepped(robot, q, v, tau, dt, integrator, prescribed, t0, substeps=1):
    """Q, V by repeated robot.step with `prescribed` from Python, robot.time = t0 + k dt at the
    start of row k (robot.time restored). The flexible arm's explicit steps past their
    stability are compared as they are (their UnstableStepWarning is expected here)."""
    start = robot.time
    rows_q, rows_v = [np.array(q, float)], [np.array(v, float)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableStepWarning)
            for k in range(len(tau)):
                robot.time = t0 + k * dt
                for _ in range(substeps):
                    q, v = robot.step(q, v, tau[k], dt / substeps, integrator,
                                      prescribed=prescribed)
                rows_q.append(q)
                rows_v.append(v)
    finally:
        robot.time = start
    return np.array(rows_q), np.array(rows_v)


def on_trajectories(robot, Q, V, prescribed, t0, dt):
    """The prescribed joints at every row k >= 1 are exactly on q(t_k), qd(t_k)."""
    for name, trajectory in prescribed.items():
        j = robot.joint_names.index(name)
        iq, iv = int(robot.model.idx_q[j]), int(robot.model.idx_v[j])
        for k in range(1, len(Q)):
            position, rate, _ = trajectory(t0 + k * dt)
            # the row's end time is the last substep's t + h: within a few ulp of t0 + k dt
            assert abs(Q[k, iq] - position) <= 1e-12 and abs(V[k, iv] - rate) <= 1e-11


ROBOTS = {"arm7": arm, "floating_base": floating_leg, "force_element": sprung_arm,
          "force_elements_floating": sprung_floating_arm, "flexible": flexible_arm}


CASES = [(None, DT, 1), ("rk4", DT, 1), ("semi_implicit_euler", DT, 1), ("rk4", 2e-3, 2),
         (None, 3e-3, 1)]   # (the default integrator: three RK4 steps per row, more if flexible)


# (the flexible arm's 835 Hz mode is beyond RK4's stability at 1 ms, omega h = 5.2 > 2.83: only
# the default integrator's short substeps and the damped semi-implicit Euler run it)
@pytest.mark.parametrize("kind, integrator, dt, substeps", [
    (kind,) + case for kind in ROBOTS for case in CASES
    if not (kind == "flexible" and case[0] == "rk4")])
def test_prescribed_rollout_equals_repeated_step(kind, integrator, dt, substeps):
    robot = ROBOTS[kind]()
    prescribed = trajectories(robot)
    q0, v0 = start_state(robot, 11)
    steps = 12
    tau = torques(robot, steps, 12, scale=0.5)
    result = robot.rollout(q0, v0, tau, dt, integrator=integrator, substeps=substeps,
                           prescribed=prescribed, t0=T0, engine="compiled")
    assert result.status == "ok", result.message
    q_ref, v_ref = stepped(robot, q0, v0, tau, dt, integrator, prescribed, T0, substeps)
    np.testing.assert_array_equal(result.Q, q_ref)   # the same steps: the same bits
    np.testing.assert_array_equal(result.V, v_ref)
    on_trajectories(robot, result.Q, result.V, prescribed, T0, dt)
    # and the prescribed joints move: their accelerations are not the free motion's
    free = robot.rollout(q0, v0, tau, dt, integrator=integrator, substeps=substeps, t0=T0,
                         engine="compiled")
    assert np.abs(free.Q[-1] - result.Q[-1]).max() > 1e-4


@pytest.mark.parametrize("threads", [1, 2])
def test_prescribed_batch_equals_single_rollouts(threads):
    robot = floating_leg()
    prescribed = trajectories(robot)
    starts = [start_state(robot, seed) for seed in (21, 22, 23)]
    q0 = np.array([q for q, _ in starts])
    v0 = np.array([v for _, v in starts])
    tau = np.array([torques(robot, 10, seed, scale=0.5) for seed in (24, 25, 26)])
    batch = robot.rollout(q0, v0, tau, DT, integrator="rk4", prescribed=prescribed, t0=T0,
                          batch_threads=threads, engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        q_ref, v_ref = stepped(robot, q0[i], v0[i], tau[i], DT, "rk4", prescribed, T0)
        np.testing.assert_array_equal(batch.Q[i], q_ref)
        np.testing.assert_array_equal(batch.V[i], v_ref)


def test_prescribed_with_drives_and_limits_equals_the_reference_engine():
    """drives= and limits= around the prescribed joints: the reference engine's numbers."""
    robot = arm()
    prescribed = trajectories(robot)
    q0, v0 = np.zeros(robot.nq), np.zeros(robot.nv)
    steps = 40
    position = np.tile(np.linspace(-0.5, 0.5, robot.nv), (steps, 1))
    drives = {"joints": list(robot.joint_names), "position": position}
    for integrator in ("rk4", "semi_implicit_euler"):
        compiled = robot.rollout(q0, v0, np.zeros((steps, robot.nv)), DT, integrator=integrator,
                                 drives=drives, limits=True, prescribed=prescribed,
                                 engine="compiled")
        reference = robot.rollout(q0, v0, np.zeros((steps, robot.nv)), DT,
                                  integrator=integrator, drives=drives, limits=True,
                                  prescribed=prescribed, engine="reference")
        assert compiled.status == reference.status == "ok"
        np.testing.assert_array_equal(compiled.Q, reference.Q)
        np.testing.assert_array_equal(compiled.V, reference.V)


class HybridDynamics:
    """The robot as the implicit integrators see it at time t with prescribed joints: its
    forward dynamics with the trajectories' accelerations at t (robot.step's Simulator evaluates
    every stage of implicit_euler and symplectic_euler at the step's start), everything else the
    robot's (for test_rollout_implicit.py's round-off bounds; |M_ff^-1| <= |M^-1| by
    interlacing, so their mass-matrix terms still bound the hybrid solve's)."""

    def __init__(self, robot, prescribed, t):
        self._robot = robot
        self._accelerations = robot._prescribed_targets(prescribed, t)[0]

    def forward_dynamics(self, q, v, tau):
        return self._robot.forward_dynamics(q, v, tau, prescribed=self._accelerations)

    def __getattr__(self, name):
        return getattr(self._robot, name)


@pytest.mark.parametrize("kind", ["arm7", "floating_base", "force_element"])
@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_prescribed_implicit_integrators_rows_equal_step(kind, integrator):
    """implicit_euler and symplectic_euler with prescribed joints run compiled: every row
    against robot.step (with the same trajectories, robot.time = t0 + k dt) from the row before,
    within test_rollout_implicit.py's bound of that step's round-off (its Jacobians, solves and
    fixed-point tolerance, of the hybrid dynamics at the step's time); the prescribed joints on
    their trajectories at every row; and the joints move otherwise than without them."""
    robot = ROBOTS[kind]()
    prescribed = trajectories(robot)
    q0, v0 = start_state(robot, 31)
    steps = 20
    tau = torques(robot, steps, 32, scale=0.5)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed,
                           t0=T0, engine="compiled")
    assert result.status == "ok", result.message
    start = robot.time
    worst = 0.0
    try:
        for k in range(steps):
            t = T0 + k * DT
            robot.time = t
            q1, v1 = robot.step(result.Q[k], result.V[k], tau[k], DT, integrator,
                                prescribed=prescribed)
            d_q, d_v = IMPLICIT_BOUNDS[integrator](HybridDynamics(robot, prescribed, t),
                                                   result.Q[k], result.V[k], tau[k], DT, q1, v1)
            dq = np.abs(result.Q[k + 1] - q1).max()
            dv = np.abs(result.V[k + 1] - v1).max()
            assert dq <= d_q and dv <= d_v, (k, dq, d_q, dv, d_v)
            worst = max(worst, dq / d_q, dv / d_v)
    finally:
        robot.time = start
    on_trajectories(robot, result.Q, result.V, prescribed, T0, DT)
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator, t0=T0, engine="compiled")
    assert np.abs(free.Q[-1] - result.Q[-1]).max() > 1e-4
    print(f"{kind} {integrator}: largest share of the bound {worst:.3g}")


def test_prescribed_sample_cap_and_bad_trajectories_raise(monkeypatch):
    robot = arm()
    prescribed = trajectories(robot)
    q0, v0 = np.zeros(robot.nq), np.zeros(robot.nv)
    tau = np.zeros((20, robot.nv))
    # 20 rows x 3 RK4 samples x 2 joints = 120 samples
    monkeypatch.setattr(rollout_prescribed, "MAX_PRESCRIBED_SAMPLES", 119)
    with pytest.raises(ValueError, match="MAX_PRESCRIBED_SAMPLES = 119"):
        robot.rollout(q0, v0, tau, DT, integrator="rk4", prescribed=prescribed)
    monkeypatch.setattr(rollout_prescribed, "MAX_PRESCRIBED_SAMPLES", 120)
    assert robot.rollout(q0, v0, tau, DT, integrator="rk4", prescribed=prescribed).status == "ok"
    with pytest.raises(ValueError, match="unknown movable joint 'elbow'"):
        robot.rollout(q0, v0, tau, DT, prescribed={"elbow": sine(1.0, 1.0, 0.0)})
    with pytest.raises(ValueError, match=r"prescribed\['joint_2'\] must be a callable"):
        robot.rollout(q0, v0, tau, DT, prescribed={"joint_2": 0.5})
    with pytest.raises(ValueError, match=r"prescribed\['joint_2'\].*non-finite.*at|non-finite"):
        robot.rollout(q0, v0, tau, DT, prescribed={"joint_2": lambda t: (0.0, math.nan, 0.0)})
    with pytest.raises(ValueError, match=r"joint_2.*\(q, qd, qdd\)"):
        robot.rollout(q0, v0, tau, DT, prescribed={"joint_2": lambda t: 1.0})

    # a trajectory that raises: ValueError naming the joint, the time and the exception
    # (compiled engine), a divergence at that step (reference engine, as robot.step raises it)
    def failing(t):
        if t > 0.0105:
            raise RuntimeError("encoder lost")
        return 0.0, 0.0, 0.0

    with pytest.raises(ValueError, match=r"prescribed\['joint_2'\]\(0\.011000\) raised "
                                         r"RuntimeError: encoder lost"):
        robot.rollout(q0, v0, tau, DT, prescribed={"joint_2": failing}, t0=0.0)
    with pytest.warns(RuntimeWarning, match="encoder lost"):
        result = robot.rollout(q0, v0, tau, DT, prescribed={"joint_2": failing}, t0=0.0,
                               engine="reference")
    assert (result.status, result.steps) == ("diverged", 10)


def test_free_joint_cannot_be_prescribed():
    robot = floating_leg()
    name = robot.joint_names[0]
    assert robot.joint_types[0] == "floating"
    with pytest.raises(ValueError, match=f"'{name}' is floating"):
        robot.rollout(robot.neutral(), np.zeros(robot.nv), np.zeros((2, robot.nv)), DT,
                      prescribed={name: sine(1.0, 1.0, 0.0)})

