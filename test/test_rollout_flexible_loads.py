"""Force elements on flexible trees in the compiled rollouts (kernels/rollout_flexible_loads.py):
at every stage the elements' loads at the deformed ends, the body wrenches into a per-thread
loaded workspace, the generalized forces (joint springs and elastic rows) added to tau, and the
flexible forward dynamics on that workspace.

References: repeated robot.step from Python (the same kernels on the same numbers in the same
order: equal bit for bit), the reference engine with limits=True, a batch against its single
rollouts, and the physics: the same rollout without the elements differs (the loads act), and
with the springs undamped and no drive forces, the elastic energy stored in the elements plus
the robot's mechanical energy is conserved to RK4's truncation error.
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


@pytest.mark.parametrize("options, reason", [
    ({"integrator": "implicit_euler"}, "implicit_euler"),
    ({"drives": {"joints": ["shoulder"], "position": np.zeros((3, 1))}}, "drives"),
    ({"prescribed": {"shoulder": lambda t: (0.0, 0.0, 0.0)}}, "prescribed")])
def test_flexible_force_element_parts_left_to_the_reference_loop(options, reason):
    robot = ROBOTS["spring_damper"]()
    q0, v0 = start(robot, 95)
    tau = torques(robot, 3, 96, scale=0.5)
    with pytest.raises(ValueError, match=f"engine='compiled'.*{reason}"):
        robot.rollout(q0, v0, tau, DT, engine="compiled", **options)
