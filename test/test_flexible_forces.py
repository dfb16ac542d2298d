"""Force elements on robots with flexible links: an end on a flexible link acts at the deformed
point, and its generalized force has elastic rows. References: -dV/dq of the elements' potential
by central finite differences over every coordinate (joints and elastic), the Rayleigh function's
-dD/dv with dl/dq from finite differences of the element lengths, and energy conservation of an
undamped simulation. One tolerance per test, stated."""
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from conftest import roundoff_tol

ROOT = Path(__file__).resolve().parents[1]
ARM_URDF = ROOT / "urdf" / "flexible_arm.urdf"
ARM_YAML = ROOT / "config" / "flexible_arm.yaml"


def elements(damping=0.0):
    """A spring between the upper arm and a point of the forearm off its axis (a flexible end), a
    bushing between the ground and the tool welded to the forearm's tip (a frame riding on the
    deformed tip: translation and rotation), and a joint spring on the elbow."""
    return {"forces": [
        {"name": "strut", "type": "spring_damper", "parent": "upper_arm",
         "parent_point": [0.1, 0.0, 0.05], "child": "forearm", "child_point": [0.45, 0.004, 0.01],
         "stiffness": 300.0, "damping": damping, "rest_length": 0.3, "preload": 2.0},
        {"name": "elbow_spring", "type": "joint_spring", "joint": "elbow", "stiffness": 5.0,
         "rest_position": 0.2},
        {"name": "tip_mount", "type": "bushing", "parent": "base",
         "parent_origin": {"xyz": [0.9, 0.1, 0.3], "rpy": [0.1, -0.2, 0.3]}, "child": "tool",
         "child_origin": {"xyz": [0.02, 0.0, 0.0], "rpy": [0.0, 0.1, 0.0]},
         "stiffness": [50.0, 60.0, 70.0, 3.0, 4.0, 5.0]}]}


def arm(forces=None, damping_ratio=None):
    data = yaml.safe_load(ARM_YAML.read_text())
    if damping_ratio is not None:
        data["flexible_links"][0]["damping_ratio"] = damping_ratio
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(str(ARM_URDF), flexible=data, forces=forces)


def deformed_state(robot, rng, scale=3e-3):
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * scale
    return q


def test_generalized_forces_are_minus_gradient_of_the_spring_potential():
    """Q = ID_without(q, 0, 0) - ID_with(q, 0, 0) (the elements' generalized forces, joint and
    elastic rows) equals -dV/dq of V = robot_with.potential_energy - robot_without's (the
    elements' springs, evaluated at the deformed points), central differences h = 1e-6 over all
    coordinates: within 1e-6 of max |Q| (the difference error is ~h^2 V''')."""
    with_forces, without = arm(elements()), arm()
    rng = np.random.default_rng(3)
    zero = np.zeros(with_forces.nv)
    h = 1e-6
    for _ in range(4):
        q = deformed_state(with_forces, rng)
        Q = without.inverse_dynamics(q, zero, zero) - with_forces.inverse_dynamics(q, zero, zero)

        def V(x):
            return with_forces.potential_energy(x) - without.potential_energy(x)
        grad = np.array([(V(q + h * e) - V(q - h * e)) / (2 * h) for e in np.eye(with_forces.nq)])
        assert np.abs(Q[with_forces.elastic_v_indices]).max() > 1.0     # the elastic rows load
        np.testing.assert_allclose(Q, -grad, rtol=0, atol=1e-6 * np.abs(Q).max())


def test_damper_force_is_minus_rayleigh_gradient():
    """The spring-damper's velocity part Q(q, v) - Q(q, 0) = -c (dl/dq . v) dl/dq, with dl/dq of
    the deformed points' distance from central differences of the reported lengths (h = 1e-6):
    within 1e-6 of its max."""
    c = 40.0
    with_forces, without = arm(elements(damping=c)), arm()
    rng = np.random.default_rng(5)
    zero = np.zeros(with_forces.nv)
    h = 1e-6
    for _ in range(3):
        q = deformed_state(with_forces, rng)
        v = rng.normal(size=with_forces.nv)
        v[with_forces.elastic_v_indices] *= 0.1
        Q_v = without.inverse_dynamics(q, v, zero) - with_forces.inverse_dynamics(q, v, zero)
        Q_0 = without.inverse_dynamics(q, zero, zero) - with_forces.inverse_dynamics(q, zero, zero)

        def length(x):
            return with_forces.force_element_values(x, zero).length[0]
        dl = np.array([(length(q + h * e) - length(q - h * e)) / (2 * h)
                       for e in np.eye(with_forces.nq)])
        expected = -c * (dl @ v) * dl
        np.testing.assert_allclose(Q_v - Q_0, expected, rtol=0, atol=1e-6 * np.abs(expected).max())
        rate = with_forces.force_element_values(q, v).rate[0]
        assert rate == pytest.approx(dl @ v, rel=1e-6)


def test_fd_id_round_trip_batches_and_joint_wrench_with_elements():
    """ID(FD(tau)) = tau and the elbow's joint wrench projected on its axis is the elbow's total
    joint force M qdd + b = tau + joint spring, both to the round-off of M qdd + b
    (conftest.roundoff_tol from this state's M: the elastic accelerations reach ~1e5); batches
    equal single calls (1e-12)."""
    robot = arm(elements(damping=10.0))
    rng = np.random.default_rng(7)
    qs, vs, taus = [], [], []
    for _ in range(3):
        q = deformed_state(robot, rng)
        v = rng.normal(size=robot.nv)
        tau = rng.normal(size=robot.nv)
        qdd = robot.forward_dynamics(q, v, tau)
        roundoff = roundoff_tol(robot.nv, (robot.mass_matrix(q), qdd),
                                robot.bias_forces(q, v), tau)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), tau, rtol=0, atol=roundoff)
        elbow = robot.wrench_joint_names.index("elbow")
        wrench = robot.joint_wrenches(q, v, qdd)[elbow]
        spring = robot.force_element_values(q, v).force[1]
        assert wrench[4] == pytest.approx(tau[1] + spring, abs=roundoff)
        qs.append(q), vs.append(v), taus.append(tau)
    batch = robot.forward_dynamics_batch(np.array(qs), np.array(vs), np.array(taus))
    single = np.array([robot.forward_dynamics(q, v, t) for q, v, t in zip(qs, vs, taus)])
    np.testing.assert_allclose(batch, single, rtol=0, atol=1e-12)


def test_energy_conservation_undamped_arm_with_elements():
    """Undamped flexible arm (modal damping 0) with the spring, the bushing on the deformed tip
    and the elbow spring, released undeformed and moving (the elements bend the forearm: elastic
    energy ~0.1 J). Kinetic + gravity + elastic + springs' energy over 0.5 s of RK4: its error
    must be the integrator's, i.e. shrink with dt at RK4's order (halving dt divides it by more
    than 8; a non-conservative load would leave a dt-independent drift), and at dt = 5e-5 s stay
    within 1e-5 of the scale m g (1 m)."""
    from mbd_ros.robot.integrators import Simulator
    robot = arm(elements(), damping_ratio=0.0)
    scale = robot.total_mass * 9.81 * 1.0

    def energy_error(dt, duration=0.5):
        q = robot.neutral()
        q[:2] = [0.3, -0.5]
        v = np.zeros(robot.nv)
        v[:2] = [0.8, -1.0]
        sim = Simulator(robot, dt, "rk4", q=q, v=v)
        tau = np.zeros(robot.nv)
        energy = lambda: robot.kinetic_energy(sim.q, sim.v) + robot.potential_energy(sim.q)  # noqa: E731
        e0 = energy()
        worst, elastic_seen = 0.0, 0.0
        for k in range(int(round(duration / dt))):
            sim.step(tau)
            if k % 100 == 0:
                worst = max(worst, abs(energy() - e0))
                elastic_seen = max(elastic_seen, robot.elastic_energy(sim.q))
        assert elastic_seen > 0.01        # J: the elements bend the forearm
        return max(worst, abs(energy() - e0))

    coarse, fine = energy_error(1e-4), energy_error(5e-5)
    assert fine < coarse / 8
    assert fine < 1e-5 * scale
