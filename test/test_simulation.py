"""mbd_ros.simulation.Simulator: the fixed-step integrators the forward dynamics node's simulate
mode runs. Checked against an independent high-accuracy ODE solution (scipy DOP853), energy
conservation of passive (undamped) motion, convergence order, quaternion joints, transactional
steps and the absence of allocations in the steady state."""

from __future__ import annotations

import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot.integrators import INTEGRATORS, Simulator

URDF = Path(__file__).resolve().parent.parent / "urdf"
Q_BENT = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])   # the CLI demo's start configuration

# A single pendulum: its mass matrix is constant, so semi-implicit Euler is a symplectic map of
# (q, p = I v) and its energy error stays bounded (it oscillates, O(dt), with no drift).
PENDULUM = """<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"/>
  <joint name="hinge" type="revolute">
    <parent link="base"/><child link="bob"/>
    <origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3.2" upper="3.2" effort="10" velocity="10"/>
  </joint>
  <link name="bob">
    <inertial><origin xyz="0 0 -0.5" rpy="0 0 0"/><mass value="1"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
</robot>"""


@pytest.fixture(scope="module")
def arm():
    """arm7 without damping and friction: a conservative system."""
    return mbd_ros.load(str(URDF / "arm7.urdf"), passive_forces=False)


def energy(robot, q, v):
    return robot.kinetic_energy(q, v) + robot.potential_energy(q)


def test_rk4_matches_an_accurate_ode_solution(arm):
    """0.3 s of the passive bent arm falling (joint speeds reach ~34 rad/s): RK4 at dt = 1 ms
    agrees with DOP853 at rtol 1e-12 (the arm's joints are all revolute: q' = v exactly) to its
    truncation error (measured 1.4e-8 rad, 3.6e-7 rad/s; 16x smaller at dt = 0.5 ms: O(dt^4))."""
    integrate = pytest.importorskip("scipy.integrate", reason="scipy is the ODE oracle")
    tau = np.zeros(arm.nv)

    def rhs(_, x):
        return np.concatenate([x[7:], arm.forward_dynamics(x[:7], x[7:], tau)])

    ref = integrate.solve_ivp(rhs, (0.0, 0.3), np.concatenate([Q_BENT, np.zeros(7)]),
                              method="DOP853", rtol=1e-12, atol=1e-12)
    sim = Simulator(arm, 1e-3, "rk4", q=Q_BENT)
    for _ in range(300):
        sim.step(tau)
    assert abs(sim.time - 0.3) < 1e-15
    np.testing.assert_allclose(sim.q, ref.y[:7, -1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(sim.v, ref.y[7:, -1], rtol=0, atol=3e-6)


def test_rk4_is_fourth_order(arm):
    """Halving dt divides the RK4 error of the final state by about 2^4 = 16."""
    tau = np.zeros(arm.nv)

    def final(dt):
        sim = Simulator(arm, dt, "rk4", q=Q_BENT)
        for _ in range(int(round(0.2 / dt))):
            sim.step(tau)
        return np.concatenate([sim.q, sim.v])

    ref = final(1.25e-4)
    e1 = np.abs(final(2e-3) - ref).max()
    e2 = np.abs(final(1e-3) - ref).max()
    assert 10.0 < e1 / e2 < 22.0, (e1, e2)


def test_rk4_conserves_the_energy_of_the_passive_arm(arm):
    """Undamped arm falling from the bent configuration for 2 s (kinetic energy up to ~50 J):
    RK4 at 1 ms keeps KE + PE constant to 1e-5 of the energy moved around (measured 1.4e-6)."""
    sim = Simulator(arm, 1e-3, "rk4", q=Q_BENT)
    e0 = energy(arm, sim.q, sim.v)
    tau = np.zeros(arm.nv)
    drift, ke_max = 0.0, 0.0
    for k in range(2000):
        sim.step(tau)
        if k % 50 == 0:
            drift = max(drift, abs(energy(arm, sim.q, sim.v) - e0))
            ke_max = max(ke_max, arm.kinetic_energy(sim.q, sim.v))
    assert ke_max > 10.0
    assert drift < 1e-5 * ke_max, (drift, ke_max)


def test_semi_implicit_euler_energy_error_is_bounded():
    """Pendulum swinging to +-1 rad for 100 periods at dt = 1 ms: the energy error of
    semi-implicit Euler stays within O(dt) of E0 and does not grow (last 10 periods vs first 10),
    while explicit Euler's grows steadily (the contrast that makes the check meaningful)."""
    robot = mbd_ros.load(PENDULUM, passive_forces=False)
    dt, q0 = 1e-3, np.array([1.0])
    period = 2 * np.pi * np.sqrt(0.251 / (9.81 * 0.5))   # ~1.42 s (small-angle estimate)
    n = int(100 * period / dt)
    sim = Simulator(robot, dt, "semi_implicit_euler", q=q0)
    e0 = energy(robot, sim.q, sim.v)
    err = np.empty(n)
    tau = np.zeros(1)
    for k in range(n):
        sim.step(tau)
        err[k] = energy(robot, sim.q, sim.v) - e0
    tenth = n // 10
    first, last = np.abs(err[:tenth]).max(), np.abs(err[-tenth:]).max()
    scale = 9.81 * 0.5 * (1 - np.cos(1.0))              # energy exchanged in a swing, ~2.25 J
    assert first < 5 * dt * scale * 10, first          # O(dt) band
    assert last < 1.2 * first, (first, last)           # bounded: no drift over 100 periods

    # explicit Euler (q+ = q + v dt with the old v) on the same system drifts upward
    q, v = q0.copy(), np.zeros(1)
    for _ in range(tenth * 2):
        a = robot.forward_dynamics(q, v, tau)
        q, v = q + v * dt, v + a * dt
    assert energy(robot, q, v) - e0 > 3 * first


def test_semi_implicit_euler_small_oscillations_of_the_arm(arm):
    """Arm hanging down (joint_2 = pi, a stable equilibrium) perturbed by 0.2 rad, 10 s at 1 ms:
    semi-implicit Euler stays close to RK4's energy (error well below the kinetic energy)."""
    q0 = np.array([0.0, np.pi, 0, 0, 0, 0, 0]) + 0.2 * np.random.default_rng(0).uniform(-1, 1, 7)
    sim = Simulator(arm, 1e-3, "semi_implicit_euler", q=q0)
    e0 = energy(arm, sim.q, sim.v)
    tau = np.zeros(arm.nv)
    worst, ke_max = 0.0, 0.0
    for k in range(10000):
        sim.step(tau)
        if k % 20 == 0:
            worst = max(worst, abs(energy(arm, sim.q, sim.v) - e0))
            ke_max = max(ke_max, arm.kinetic_energy(sim.q, sim.v))
    assert np.isfinite(sim.q).all() and ke_max > 0.05
    assert worst < 0.25 * ke_max, (worst, ke_max)


def test_quaternion_joints_stay_unit_and_energy_is_conserved():
    """Floating-base branching robot tumbling in gravity with a random initial twist: RK4 keeps
    every quaternion unit (configurations advance by the exponential map) and conserves energy."""
    robot = mbd_ros.load(str(URDF / "branching.urdf"), floating_base=True, passive_forces=False)
    rng = np.random.default_rng(3)
    sim = Simulator(robot, 1e-3, "rk4", q=robot.random_configuration(rng),
                    v=rng.normal(scale=0.5, size=robot.nv))
    e0 = energy(robot, sim.q, sim.v)
    tau = np.zeros(robot.nv)
    for _ in range(1000):
        sim.step(tau)
    assert abs(np.linalg.norm(sim.q[3:7]) - 1.0) < 1e-12
    assert abs(energy(robot, sim.q, sim.v) - e0) < 1e-6 * max(1.0, abs(e0))


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_step_with_gravity_compensation_holds_still(arm, integrator):
    """tau = g(q) at rest: the state does not move (up to round-off)."""
    sim = Simulator(arm, 1e-3, integrator, q=Q_BENT)
    tau = arm.gravity_forces(Q_BENT)
    for _ in range(200):
        sim.step(tau)
    np.testing.assert_allclose(sim.q, Q_BENT, atol=1e-9)
    np.testing.assert_allclose(sim.v, 0.0, atol=1e-9)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_failed_step_leaves_the_state_unchanged(arm, integrator):
    sim = Simulator(arm, 1e-3, integrator, q=Q_BENT)
    sim.step(np.ones(arm.nv))
    q, v, t = sim.q.copy(), sim.v.copy(), sim.time
    with pytest.raises(ValueError, match="tau"):
        sim.step(np.full(arm.nv, np.nan))
    np.testing.assert_array_equal(sim.q, q)
    np.testing.assert_array_equal(sim.v, v)
    assert sim.time == t and sim.steps == 1
    with np.errstate(all="ignore"):
        # finite torques whose accelerations overflow: forward dynamics refuse the result
        with pytest.raises(ValueError, match="not finite"):
            sim.evaluate(np.full(arm.nv, 1e308))
        # finite accelerations whose step overflows: the new state is not finite
        sim.evaluate(np.ones(arm.nv))
        sim.v[:] = 1.797e308
        sim.qdd[:] = 1e308                         # v + dt qdd overflows
        q, v = sim.q.copy(), sim.v.copy()
        with pytest.raises((FloatingPointError, ValueError), match="non-finite|NaN or inf|not finite"):
            sim.advance()
    np.testing.assert_array_equal(sim.q, q)
    np.testing.assert_array_equal(sim.v, v)


def test_evaluate_then_advance_equals_step(arm):
    a = Simulator(arm, 1e-3, "rk4", q=Q_BENT)
    b = Simulator(arm, 1e-3, "rk4", q=Q_BENT)
    tau = np.linspace(-1, 1, arm.nv)
    for _ in range(10):
        a.step(tau)
        qdd = b.evaluate(tau)
        np.testing.assert_array_equal(qdd, arm.forward_dynamics(b.q, b.v, tau))
        b.advance()
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)
    with pytest.raises(RuntimeError, match="evaluate"):
        b.advance()


def test_invalid_arguments(arm):
    with pytest.raises(ValueError, match="integrator"):
        Simulator(arm, 1e-3, "euler")
    with pytest.raises(ValueError, match="dt"):
        Simulator(arm, 0.0)
    with pytest.raises(ValueError, match="q must be"):
        Simulator(arm, 1e-3, q=np.zeros(3))
    with pytest.raises(ValueError, match="v must be"):
        Simulator(arm, 1e-3, v=np.full(arm.nv, np.inf))


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("urdf, floating", [("arm7.urdf", False), ("branching.urdf", True)])
def test_steps_allocate_nothing(integrator, urdf, floating):
    """The steady-state step allocates no memory (tracemalloc sees numpy's buffers): the traced
    memory after 2000 steps is the same as after 200."""
    robot = mbd_ros.load(str(URDF / urdf), floating_base=floating)
    sim = Simulator(robot, 1e-3, integrator, q=robot.random_configuration(np.random.default_rng(0)))
    tau = np.zeros(robot.nv)
    for _ in range(10):
        sim.step(tau)
    tracemalloc.start()
    try:
        for _ in range(200):
            sim.step(tau)
        after_200, _ = tracemalloc.get_traced_memory()
        for _ in range(1800):
            sim.step(tau)
        after_2000, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after_2000 - after_200 < 1024, (after_200, after_2000)


# ---- robot.step: dt, bounded substeps and robot.time on every robot kind --------------------------

def _robot_of_kind(kind):
    """(robot, q, v) of each kind, at a valid state (on the loops for closed-loop robots)."""
    config = URDF.parent / "config"
    if kind == "tree":
        robot = mbd_ros.load(str(URDF / "arm7.urdf"))
    elif kind == "codegen":
        robot = mbd_ros.load(str(URDF / "arm7.urdf"), codegen=True)
    elif kind == "closed_loop":
        robot = mbd_ros.load(str(URDF / "fourbar.urdf"), closures=str(config / "fourbar_closures.yaml"))
    elif kind == "flexible":
        robot = mbd_ros.load(str(URDF / "flexible_arm.urdf"), flexible=str(config / "flexible_arm.yaml"))
    else:
        path = str(config / "flexible_fourbar.yaml")
        robot = mbd_ros.load(str(URDF / "flexible_fourbar.urdf"), flexible=path, closures=path)
    q = robot.neutral()
    q[0] = 0.3
    if robot.closure_names:
        q = robot.assemble(q)
    return robot, q, np.zeros(robot.nv)


ROBOT_KINDS = ["tree", "codegen", "closed_loop", "flexible", "flexible_closed_loop"]


@pytest.mark.parametrize("kind", ROBOT_KINDS)
def test_step_refuses_a_bad_dt_naming_it(kind):
    """dt must be one positive finite number of seconds: anything else is a ValueError naming dt
    (before: a list gave TypeError, inf OverflowError, a string was parsed) and robot.time is
    unchanged."""
    robot, q, v = _robot_of_kind(kind)
    tau = np.zeros(robot.nv)
    robot.time = 0.5
    for dt in (None, [1e-3], np.array([1e-3]), np.inf, -np.inf, np.nan, 0.0, -1e-3, "0.001",
               1e-3 + 0j, True):
        with pytest.raises(ValueError, match="dt"):
            robot.step(q, v, tau, dt)
        assert robot.time == 0.5, dt


@pytest.mark.parametrize("kind", ["tree", "flexible"])
def test_default_integrator_substeps_are_bounded(kind):
    """The default integrator splits dt into substeps of at most DEFAULT_MAX_STEP (1 ms), at most
    MAX_DEFAULT_SUBSTEPS (10 000) of them: a dt past 10 s is a ValueError naming dt and the
    largest dt allowed, at once (before: 20 s ran 20 000 substeps, 1e6 s never returned); 10 s
    itself is allowed; an explicit integrator takes one step of any finite dt."""
    from mbd_ros.robot.integrators import DEFAULT_MAX_STEP, MAX_DEFAULT_SUBSTEPS
    robot, q, v = _robot_of_kind(kind)
    tau = robot.gravity_forces(q)
    largest = MAX_DEFAULT_SUBSTEPS * DEFAULT_MAX_STEP
    assert largest == 10.0
    for dt in (largest * (1 + 1e-6), 20.0, 1e6, 1e300):
        with pytest.raises(ValueError, match=r"dt.*10 s"):
            robot.step(q, v, tau, dt)
        assert robot.time == 0.0
    if kind == "tree":   # 10 000 substeps of the C-level RK4 step: well under a second
        q_next, v_next = robot.step(q, v, tau, largest)
        assert robot.time == largest
        np.testing.assert_allclose(q_next, q, rtol=0, atol=1e-6)   # gravity held: it stays
    with pytest.raises(mbd_ros.simulation.SimulationDiverged), \
            warnings.catch_warnings():    # one RK4 step of 1e6 s (said unstable on elastic modes)
        warnings.simplefilter("ignore", mbd_ros.simulation.UnstableStepWarning)
        robot.step(q, v, tau + 1.0, 1e6, integrator="rk4")


@pytest.mark.parametrize("kind", ROBOT_KINDS)
def test_robot_time_advances_and_is_kept_by_a_failed_step(kind):
    """robot.step advances robot.time by dt on every robot kind (the flexible robots' did not
    move), and a step that diverges (SimulationDiverged) or raises ValueError (non-finite tau, a
    tau(t) of the wrong shape) leaves robot.time where it was."""
    from mbd_ros.robot.integrators import SimulationDiverged
    robot, q, v = _robot_of_kind(kind)
    dt = 1e-4
    tau = np.zeros(robot.nv)
    robot.time = 1.25
    q1, v1 = robot.step(q, v, tau, dt)
    assert robot.time == 1.25 + dt
    start = robot.time
    with pytest.raises(SimulationDiverged):
        robot.step(q1, v1, tau, dt, max_velocity=1e-9)    # gravity moves it at once
    assert robot.time == start
    for bad in (np.full(robot.nv, np.nan), lambda t: np.zeros(robot.nv + 1)):
        with pytest.raises(ValueError, match="tau"):
            robot.step(q1, v1, bad, dt)
        assert robot.time == start
