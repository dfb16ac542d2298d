"""Force elements on flexible trees in the compiled rollouts (kernels/rollout_flexible_loads.py):
at every stage the elements' loads at the deformed ends, the body wrenches into a per-thread
loaded workspace, the generalized forces (joint springs and elastic rows) added to tau, and the
flexible forward dynamics on that workspace.

References: repeated robot.step from Python (the same kernels on the same numbers in the same
order: equal bit for bit), the reference engine with limits=True and with drives= (bit for bit),
a Plant stepping with its drives, robot.step row by row for the implicit integrators (within
test_rollout_implicit.py's round-off bound), repeated robot.step with a prescribed joint (bit
for bit), a batch against its single rollouts, and the physics: the same rollout without the
elements differs (the loads act), and with the springs undamped and no drive forces, the elastic
energy stored in the elements plus the robot's mechanical energy is conserved to RK4's
truncation error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from test_flexible_forces import arm, deformed_state, elements
from test_rollout import DT, stepped, torques

ROOT = Path(__file__).resolve().parent.parent
FORCES = str(ROOT / "config" / "flexible_arm_forces.yaml")   # a spring-damper, a joint spring


def start(robot, seed):
    rng = np.random.default_rng(seed)
    return deformed_state(robot, rng), 0.3 * rng.standard_normal(robot.nv)


ROBOTS = {"spring_damper": lambda: arm(FORCES),
          "with_bushing": lambda: arm(elements(damping=1.5), damping_ratio=0.02)}


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator, dt, substeps", [
    (None, DT, 1), ("semi_implicit_euler", 2e-4, 1), (None, 2e-3, 2)])
def test_flexible_force_elements_equal_repeated_step(kind, integrator, dt, substeps):
    robot = ROBOTS[kind]()
    q0, v0 = start(robot, 71)
    tau = torques(robot, 15, 72, scale=0.5)
    result = robot.rollout(q0, v0, tau, dt, integrator=integrator, substeps=substeps,
                           engine="compiled")
    assert result.status == "ok", result.message
    q_ref, v_ref = stepped(robot, q0, v0, tau, dt, integrator, substeps)
    np.testing.assert_array_equal(result.Q, q_ref)   # the same kernels: the same bits
    np.testing.assert_array_equal(result.V, v_ref)
    bare = arm(damping_ratio=0.02) if kind == "with_bushing" else arm()
    free = bare.rollout(q0, v0, tau, dt, integrator=integrator, substeps=substeps,
                        engine="compiled")
    assert np.abs(free.Q[-1] - result.Q[-1]).max() > 1e-5   # the elements' loads act


def test_flexible_force_elements_batch_and_limits():
    robot = ROBOTS["spring_damper"]()
    starts = [start(robot, seed) for seed in (81, 82, 83)]
    q0 = np.array([q for q, _ in starts])
    v0 = np.array([v for _, v in starts])
    tau = np.array([torques(robot, 10, seed, scale=0.5) for seed in (84, 85, 86)])
    batch = robot.rollout(q0, v0, tau, DT, batch_threads=2, engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        q_ref, v_ref = stepped(robot, q0[i], v0[i], tau[i], DT)
        np.testing.assert_array_equal(batch.Q[i], q_ref)
        np.testing.assert_array_equal(batch.V[i], v_ref)
    # limits=True: the Plant's stops after every substep, as the reference engine
    q_start = np.clip(q0[0], -1.0, 1.0)
    compiled = robot.rollout(q_start, 5.0 * np.ones(robot.nv), tau[0], DT, limits=True,
                             engine="compiled")
    reference = robot.rollout(q_start, 5.0 * np.ones(robot.nv), tau[0], DT, limits=True,
                              engine="reference")
    assert compiled.status == reference.status
    np.testing.assert_array_equal(compiled.Q, reference.Q)
    np.testing.assert_array_equal(compiled.V, reference.V)


def test_undamped_flexible_springs_conserve_energy_to_rk4_order():
    """Undamped (modal damping 0, undamped elements: the spring, the bushing on the deformed tip,
    the elbow spring), no drive forces: kinetic + gravity + elastic + springs' energy
    (robot.potential_energy includes the elements') over 0.3 s of compiled RK4 steps of 0.1 ms
    (10 substeps per row; the default integrator's 1/6 ms is still pre-asymptotic for the
    835 Hz mode). Its error must be the integrator's: halving the step (20 substeps) divides it
    by more than 8
    (RK4: 16; a load that does work, or one evaluated at the wrong stage state, leaves an
    error that does not shrink at that order), and it stays within 1e-5 of m g (1 m)."""
    robot = arm(elements(damping=0.0), damping_ratio=0.0)
    scale = robot.total_mass * 9.81 * 1.0
    q0 = robot.neutral()
    q0[:2] = [0.3, -0.5]
    v0 = np.zeros(robot.nv)
    v0[:2] = [0.8, -1.0]
    steps = 300
    tau = np.zeros((steps, robot.nv))

    def energy_error(substeps):
        result = robot.rollout(q0, v0, tau, DT, integrator="rk4", substeps=substeps,
                               engine="compiled")
        assert result.status == "ok"
        energy = [robot.kinetic_energy(q, v) + robot.potential_energy(q)
                  for q, v in zip(result.Q, result.V)]
        assert max(robot.elastic_energy(q) for q in result.Q) > 0.01   # J: the forearm bends
        return np.abs(np.array(energy) - energy[0]).max()

    coarse, fine = energy_error(10), energy_error(20)
    assert fine < coarse / 8, (coarse, fine)
    assert fine < 1e-5 * scale


# ---------------------------------------------------------------- drives, implicit integrators
def drives_case(robot, steps, seed):
    """A deformed start at rest, small torques and position references swinging both joints."""
    rng = np.random.default_rng(seed)
    q0 = deformed_state(robot, rng)
    q0[:2] = [0.3, -0.5]
    joints = ["shoulder", "elbow"]
    position = q0[:2] + 0.4 * np.sin(np.linspace(0.0, 3.0, steps))[:, None] * [1.0, -1.0]
    velocity = np.gradient(position, DT, axis=0)
    drives = {"joints": joints, "kp": 300.0, "kd": 30.0, "position": position,
              "velocity": velocity}
    return q0, np.zeros(robot.nv), torques(robot, steps, seed + 1, scale=0.2), drives


def test_flexible_drive_compensation_is_inverse_dynamics_with_the_loads():
    """The drives' compensation on a flexible tree with force elements
    (kernels/rollout_flexible_loads.py flexible_loaded_inverse_dynamics) equals
    robot.inverse_dynamics(q, v, 0) (the Plant's) bit for bit (the same RNEA on the same loaded
    workspace, the same subtraction), includes the elements' loads (differs from the bare arm's),
    and is what it is defined as: with tau = b the forward dynamics give zero acceleration, to the
    round-off of the two recursions through M^-1 (|M^-1| roundoff_tol of the terms M qdd, b)."""
    from conftest import roundoff_tol
    from mbd_ros.kernels.rollout_flexible_loads import flexible_loaded_inverse_dynamics
    from mbd_ros.robot.rollout_flexible_loads import flexible_load_arrays
    for kind in ROBOTS:
        robot = ROBOTS[kind]()
        bare = arm(damping_ratio=0.02) if kind == "with_bushing" else arm()
        arrays = flexible_load_arrays(robot)
        for seed in range(4):
            q, v = start(robot, 200 + seed)
            b = np.zeros(robot.nv)
            assert flexible_loaded_inverse_dynamics(arrays, q, v, np.zeros(robot.nv), b) == 0
            np.testing.assert_array_equal(b, robot.inverse_dynamics(q, v, np.zeros(robot.nv)))
            assert np.abs(b - bare.inverse_dynamics(q, v, np.zeros(robot.nv))).max() > 1e-3
            qdd = robot.forward_dynamics(q, v, b)
            bound = np.linalg.norm(np.linalg.inv(robot.mass_matrix(q)), 2) * \
                roundoff_tol(robot.nv, b, robot.inverse_dynamics(q, np.zeros(robot.nv),
                                                                 np.zeros(robot.nv)))
            assert np.abs(qdd).max() <= bound, (np.abs(qdd).max(), bound)


@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
@pytest.mark.parametrize("limits", [False, True])
def test_flexible_force_elements_with_drives_equal_the_reference(integrator, limits):
    """drives= (and limits=True) on a flexible tree with force elements run compiled: bit for bit
    the reference engine (robot.inverse_dynamics with the loads from Python, the Plant's drive
    kernel, repeated robot.step, the stops): the same kernels in the same order. The drives act:
    over the second half the driven joints stay within a quarter of the undriven arm's distance
    from their references (measured: 0.10-0.16 of it; the references swing at 20 rad/s, beyond
    the drives' bandwidth, sqrt(kp) = 17 rad/s, so they lag)."""
    robot = ROBOTS["spring_damper"]()
    steps = 150
    q0, v0, tau, drives = drives_case(robot, steps, 61)
    # (rk4, semi-implicit Euler: 6 substeps of 1/6 ms per 1 ms row, the default integrator's step)
    substeps = 1 if integrator is None else 6
    rows = {engine: robot.rollout(q0, v0, tau, DT, integrator=integrator, substeps=substeps,
                                  drives=drives, limits=limits, engine=engine)
            for engine in ("compiled", "reference")}
    assert rows["compiled"].status == rows["reference"].status == "ok"
    np.testing.assert_array_equal(rows["compiled"].Q, rows["reference"].Q)
    np.testing.assert_array_equal(rows["compiled"].V, rows["reference"].V)
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator, substeps=substeps,
                         engine="compiled")
    error = np.abs(rows["compiled"].Q[1:, :2] - drives["position"])[steps // 2:].max()
    assert error < 0.25 * np.abs(free.Q[1:, :2] - drives["position"])[steps // 2:].max()


def test_flexible_force_elements_with_drives_equal_a_plant():
    """The compiled rollout with drives= against a Plant stepping with command_position (its own
    compensation, robot.inverse_dynamics with the loads), bit for bit (rk4 at 1/6 ms)."""
    from mbd_ros.simulation.plant import Plant
    robot = ROBOTS["spring_damper"]()
    steps = 30
    h = DT / 6
    q0, v0, tau, drives = drives_case(robot, steps, 62)
    tau[:] = 0.0
    result = robot.rollout(q0, v0, tau, h, integrator="rk4", drives=drives, engine="compiled")
    assert result.status == "ok"
    plant = Plant(robot, h, integrator="rk4", q=q0, kp=300.0, kd=30.0, limits=False,
                  joints=drives["joints"])
    plant_q = [plant.q.copy()]
    for k in range(steps):
        plant.drives.command_position(drives["position"][k], velocities=drives["velocity"][k])
        plant.step()
        plant_q.append(plant.q.copy())
    np.testing.assert_array_equal(result.Q, np.array(plant_q))


@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_flexible_force_elements_implicit_rows_are_robot_step(kind, integrator):
    """implicit_euler and symplectic_euler with the elements' loads evaluated at every Jacobian
    column and fixed-point iteration: every row against robot.step from the row before within
    test_rollout_implicit.py's round-off bound of that step (its own Jacobians, mass matrices and
    condition numbers; not bit for bit: the dense algebra differs, kernels/rollout_implicit.py).
    symplectic_euler at 0.1 ms (its iteration does not converge on the damped elastic modes at
    1 ms, as robot.step's). The loads act: the bare arm's rows differ."""
    from test_rollout_implicit import assert_rows_are_steps
    robot = ROBOTS[kind]()
    h = DT if integrator == "implicit_euler" else 1e-4
    q0, v0 = start(robot, 73)
    tau = torques(robot, 10, 74, scale=0.5)
    result = robot.rollout(q0, v0, tau, h, integrator=integrator, engine="compiled")
    assert result.status == "ok" and result.steps == 10, result.message
    assert_rows_are_steps(robot, result.Q, result.V, tau, h, integrator)
    bare = arm(damping_ratio=0.02) if kind == "with_bushing" else arm()
    free = bare.rollout(q0, v0, tau, h, integrator=integrator, engine="compiled")
    assert np.abs(free.V[-1] - result.V[-1]).max() > 1e-4


def test_flexible_force_elements_implicit_with_drives_equal_a_plant_step():
    """implicit_euler with drives: each compiled row against a Plant (its Simulator with the
    integrator, its compensation with the loads) reset to the row before, commanded and stepped
    once, within that step's round-off bound for the Plant's drive torques."""
    from mbd_ros.simulation.plant import Plant
    from test_rollout_implicit import BOUNDS
    robot = ROBOTS["spring_damper"]()
    steps = 10
    q0, v0, tau, drives = drives_case(robot, steps, 63)
    tau[:] = 0.0
    result = robot.rollout(q0, v0, tau, DT, integrator="implicit_euler", drives=drives,
                           engine="compiled")
    assert result.status == "ok", result.message
    plant = Plant(robot, DT, integrator="implicit_euler", q=q0, kp=300.0, kd=30.0, limits=False,
                  joints=drives["joints"])
    for k in range(steps):
        plant.reset(result.Q[k], result.V[k], time=k * DT)
        plant.drives.command_position(drives["position"][k], velocities=drives["velocity"][k])
        plant.step()
        d_q, d_v = BOUNDS["implicit_euler"](robot, result.Q[k], result.V[k], plant.tau.copy(),
                                            DT, plant.q, plant.v)
        assert np.abs(result.Q[k + 1] - plant.q).max() <= d_q
        assert np.abs(result.V[k + 1] - plant.v).max() <= d_v


# ---------------------------------------------------------------- prescribed joints
@pytest.mark.parametrize("kind", list(ROBOTS))
@pytest.mark.parametrize("integrator, dt", [(None, DT), ("rk4", 2e-4),
                                            ("semi_implicit_euler", 2e-4)])
def test_flexible_force_elements_with_prescribed_joints_equal_repeated_step(kind, integrator, dt):
    """The shoulder prescribed on the flexible arm with force elements: the hybrid dynamics on
    the loaded workspace (kernels/rollout_flexible_loads.py), bit for bit against repeated
    robot.step with the same trajectory (robot.time = t0 + k dt: the same kernels in the same
    order); the shoulder exactly on its trajectory; the elements' loads act (the bare arm
    differs). With drives on the elbow (limits too), bit for bit against the reference engine."""
    from test_rollout_prescribed import on_trajectories, sine
    from test_rollout_prescribed import stepped as stepped_prescribed
    robot = ROBOTS[kind]()
    prescribed = {"shoulder": sine(0.4, 3.0, 0.2)}
    t0 = 0.3
    q0, v0 = start(robot, 91)
    q0[0], v0[0], _ = prescribed["shoulder"](t0)
    steps = 20
    tau = torques(robot, steps, 92, scale=0.5)
    result = robot.rollout(q0, v0, tau, dt, integrator=integrator, prescribed=prescribed, t0=t0,
                           engine="compiled")
    assert result.status == "ok", result.message
    q_ref, v_ref = stepped_prescribed(robot, q0, v0, tau, dt, integrator, prescribed, t0)
    np.testing.assert_array_equal(result.Q, q_ref)
    np.testing.assert_array_equal(result.V, v_ref)
    on_trajectories(robot, result.Q, result.V, prescribed, t0, dt)
    bare = arm(damping_ratio=0.02) if kind == "with_bushing" else arm()
    free = bare.rollout(q0, v0, tau, dt, integrator=integrator, prescribed=prescribed, t0=t0,
                        engine="compiled")
    assert np.abs(free.Q[-1] - result.Q[-1]).max() > 1e-6
    drives = {"joints": ["elbow"], "kp": 300.0, "kd": 30.0,
              "position": q0[1] + 0.3 * np.sin(np.linspace(0.0, 2.0, steps))[:, None]}
    q_start = np.clip(q0, -1.0, 1.0)
    rows = {engine: robot.rollout(q_start, v0, tau, dt, integrator=integrator,
                                  prescribed=prescribed, t0=t0, drives=drives, limits=True,
                                  engine=engine) for engine in ("compiled", "reference")}
    assert rows["compiled"].status == rows["reference"].status == "ok"
    np.testing.assert_array_equal(rows["compiled"].Q, rows["reference"].Q)
    np.testing.assert_array_equal(rows["compiled"].V, rows["reference"].V)


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_flexible_force_elements_with_prescribed_implicit_rows_are_robot_step(integrator):
    """The implicit integrators with the shoulder prescribed and the force elements: every row
    against robot.step from the row before within test_rollout_implicit.py's round-off bound of
    the hybrid dynamics' step (test_rollout_prescribed.py's HybridDynamics at the step's time);
    symplectic Euler at 0.1 ms (as without prescribed joints)."""
    from test_rollout_implicit import BOUNDS
    from test_rollout_prescribed import HybridDynamics, on_trajectories, sine
    robot = ROBOTS["spring_damper"]()
    prescribed = {"shoulder": sine(0.4, 3.0, 0.2)}
    h = DT if integrator == "implicit_euler" else 1e-4
    t0 = 0.3
    q0, v0 = start(robot, 93)
    q0[0], v0[0], _ = prescribed["shoulder"](t0)
    steps = 10
    tau = torques(robot, steps, 94, scale=0.5)
    result = robot.rollout(q0, v0, tau, h, integrator=integrator, prescribed=prescribed, t0=t0,
                           engine="compiled")
    assert result.status == "ok", result.message
    start_time = robot.time
    try:
        for k in range(steps):
            t = t0 + k * h
            robot.time = t
            q1, v1 = robot.step(result.Q[k], result.V[k], tau[k], h, integrator,
                                prescribed=prescribed)
            d_q, d_v = BOUNDS[integrator](HybridDynamics(robot, prescribed, t), result.Q[k],
                                          result.V[k], tau[k], h, q1, v1)
            assert np.abs(result.Q[k + 1] - q1).max() <= d_q, k
            assert np.abs(result.V[k + 1] - v1).max() <= d_v, k
    finally:
        robot.time = start_time
    on_trajectories(robot, result.Q, result.V, prescribed, t0, h)
