"""The Plant's step through one compiled call (kernels/plant_step.py, simulation/compiled_step.py)
against the Plant's Python path (compiled=False), which runs the same model through
robot.forward_dynamics / mass_matrix / inverse_dynamics, JointDrives and JointLimits call by call.

Reference: the Python path, step by step, from the same state with the same commands: states,
drive torques, first-stage accelerations, clocks and counters must agree to round-off (the
compiled step calls the same kernels in the same order, so in practice bit for bit; the
tolerance allows the last bits of 200 steps: ROUND_OFF relative). Robots: arm7 (rigid tree with
URDF damping and friction), arm7 with force elements (spring-damper + joint spring: loads in
every stage, and in the drive compensation b = ID(q, v, 0)), the double wishbone (closed loop +
strut, no actuated joint), the four-bar (closed loop with an actuated crank: its compensation is
a least-squares actuation, so servo drives keep the Python path, effort commands do not);
arm7 and the double wishbone with generated kernels (codegen=True: the compiled step runs the
generic kernels where the Python path runs the generated ones on unloaded calls, the same
numbers to round-off).
Physical checks on the compiled path itself: joints stay within their position limits, and the
loop of the double wishbone stays closed.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from mbd_ros.simulation.plant import DivergenceError, Plant
from ros_harness import URDF

CONFIG = URDF.parent / "config"
ROUND_OFF = 1e-12
INTEGRATORS = ("rk4", "semi_implicit_euler")
FORCES = """forces:
  - name: shoulder_spring
    type: spring_damper
    parent: base_link
    parent_point: [0.1, 0.0, 0.1]
    child: link_3
    child_point: [0.0, 0.05, 0.1]
    stiffness: 400.0
    damping: 5.0
    rest_length: 0.3
    preload: 10.0
  - name: elbow_spring
    type: joint_spring
    joint: joint_4
    stiffness: 35.0
    damping: 0.8
    rest_position: 0.4
"""


def load(which, tmp_path_factory=None):
    if which == "arm7":
        return mbd_ros.load(str(URDF / "arm7.urdf"))
    if which == "arm7_codegen":
        return mbd_ros.load(str(URDF / "arm7.urdf"), codegen=True)
    if which == "wishbone_codegen":
        cfg = str(CONFIG / "double_wishbone.yaml")
        return mbd_ros.load(str(URDF / "double_wishbone.urdf"), closures=cfg, forces=cfg,
                            codegen=True)
    if which == "arm7_forces":
        path = tmp_path_factory.mktemp("forces") / "arm7_forces.yaml"
        path.write_text(FORCES)
        return mbd_ros.load(str(URDF / "arm7.urdf"), forces=str(path))
    if which == "wishbone":
        cfg = str(CONFIG / "double_wishbone.yaml")
        return mbd_ros.load(str(URDF / "double_wishbone.urdf"), closures=cfg, forces=cfg)
    cfg = str(CONFIG / "fourbar_closures.yaml")
    return mbd_ros.load(str(URDF / "fourbar.urdf"), closures=cfg)


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    """Two instances of each robot: the paths must not share a workspace."""
    return {which: (load(which, tmp_path_factory), load(which, tmp_path_factory))
            for which in ("arm7", "arm7_forces", "wishbone", "fourbar", "arm7_codegen",
                          "wishbone_codegen")}


def pair(robots, which, **options):
    a, b = robots[which]
    for robot in (a, b):
        robot.time = 0.0
    compiled = Plant(a, 1e-3, compiled=True, **options)
    python = Plant(b, 1e-3, compiled=False, **options)
    return compiled, python


def assert_same(compiled, python, what):
    for name in ("q", "v", "tau", "qdd", "time", "q_before_step", "v_before_step"):
        x, y = np.asarray(getattr(compiled, name)), np.asarray(getattr(python, name))
        scale = max(1.0, float(np.abs(y).max(initial=0.0)))
        assert np.abs(x - y).max(initial=0.0) <= ROUND_OFF * scale, \
            f"{what}: {name} differs: compiled {x}, python {y}"
    assert compiled.robot.time == pytest.approx(python.robot.time, abs=1e-15), what
    assert compiled.divergences == python.divergences, what
    if python.limits is not None:
        assert compiled.limits.stops == python.limits.stops, what
        assert compiled.limits.saturated == python.limits.saturated, what


def step_both(compiled, python, n, what, command=None):
    for k in range(n):
        if command is not None:
            command(compiled, k)
            command(python, k)
        compiled.step()
        python.step()
        assert_same(compiled, python, f"{what}, step {k}")


def start_state(plant):
    """A configuration inside the limits with some motion (the loops assembled)."""
    robot = plant.robot
    q = robot.neutral()
    if robot.nv == 7:
        q[:] = [0.3, -0.6, 0.4, 1.1, -0.5, 0.7, 0.2]
    return q


@pytest.mark.parametrize("substeps", [1, 2])
@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("which", ["arm7", "arm7_forces", "wishbone", "arm7_codegen",
                                   "wishbone_codegen"])
def test_position_velocity_effort_commands_equal_the_python_path(robots, which, integrator,
                                                                  substeps):
    compiled, python = pair(robots, which, integrator=integrator, substeps=substeps)
    assert compiled.compiled_reason == ""
    for plant in (compiled, python):
        plant.reset(start_state(plant))
    n = len(compiled.drives.joints)
    q0 = compiled.q[compiled.drives.iq].copy()

    def command(plant, k):
        if k == 0:      # every joint a servo: M, m_eff and b in the step
            plant.drives.command_position(q0 + 0.2)
        elif k == 60:   # velocity loops from the current positions
            plant.drives.command_velocity(np.full(n, 0.3), q=plant.q)
        elif k == 120:  # effort commands on some joints, the others keep their velocity loop
            plant.drives.command_effort(np.full(2, 0.5), idx=[0, n - 1])
    step_both(compiled, python, 180, f"{which} {integrator} x{substeps}", command)
    assert compiled.compiled_steps == 180 and python.compiled_steps == 0


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_stops_and_effort_limits_equal_the_python_path(robots, integrator):
    """Efforts beyond the URDF effort limits (clipped), driving joints onto their position stops
    (projection and impulse every step): both paths alike, and no joint beyond its limits."""
    compiled, python = pair(robots, "arm7", integrator=integrator)
    for plant in (compiled, python):   # 0.05 rad from the upper stops, pushed towards them
        plant.reset(plant.limits.upper - 0.05)
        plant.drives.command_effort(np.full(7, 500.0))
    step_both(compiled, python, 400, f"arm7 on its stops, {integrator}")
    assert compiled.limits.stops > 100 and compiled.limits.saturated == 400
    lo, hi = compiled.limits.lower, compiled.limits.upper
    assert (compiled.q <= hi + ROUND_OFF).all() and (compiled.q >= lo - ROUND_OFF).all()
    assert compiled.compiled_steps == 400


def test_a_divergence_raises_and_restores_as_the_python_path(robots):
    """A max_speed the falling arm passes: DivergenceError at the same step on both paths, the
    state back at the one before, the velocity-mode references not advanced twice."""
    compiled, python = pair(robots, "arm7", integrator="rk4", max_speed=0.5)
    for plant in (compiled, python):
        plant.reset(start_state(plant))
        plant.drives.command_velocity(np.full(3, 0.1), idx=[0, 1, 2], q=plant.q)
    failed = []
    for k in range(500):
        outcomes = []
        for plant in (compiled, python):
            try:
                plant.step()
                outcomes.append(None)
            except DivergenceError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1], f"step {k}: {outcomes}"
        assert_same(compiled, python, f"step {k}")
        assert np.array_equal(compiled.drives.q_ref, python.drives.q_ref), f"step {k}"
        if outcomes[0] is not None:
            failed.append(k)
            if len(failed) == 3:
                break
    assert len(failed) == 3, "the arm never exceeded max_speed"
    assert compiled.divergences == 3
    assert np.array_equal(compiled.q, compiled.q_before_step)   # restored


def test_the_loop_stays_closed_on_the_compiled_path(robots):
    """The double wishbone released from its neutral pose (strut preload and gravity), 1 s:
    loop-closure residual at the level of the Baumgarte-stabilised explicit integration (the
    RK4 local error, (h |v|)^5-ish: far below 1e-6 m)."""
    compiled, python = pair(robots, "wishbone", integrator="rk4")
    start = compiled.q.copy()
    step_both(compiled, python, 1000, "wishbone released")
    position, velocity = compiled.robot.closure_residual(compiled.q, compiled.v)
    assert position < 1e-6 and velocity < 1e-6, (position, velocity)
    assert np.abs(compiled.q - start).max() > 1e-3   # it moved (it settles on the strut)



@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_the_loops_are_reclosed_after_every_step_as_robot_step_does(robots, integrator):
    """Both paths re-close the double wishbone's loops after each integrator step as robot.step
    does (robot.close_loops_after_step; the compiled call with kernels/rollout_projection.py):
    residuals within PROJECTION_TOLERANCE (1e-10) after every step; without the re-closing,
    semi-implicit Euler's velocity residual passes it at the second step (1.9e-10)."""
    from mbd_ros.robot.constraints import PROJECTION_TOLERANCE
    compiled, python = pair(robots, "wishbone", integrator=integrator)
    for k in range(300):
        compiled.step()
        python.step()
        assert_same(compiled, python, f"wishbone released, {integrator}, step {k}")
        for plant in (compiled, python):
            position, velocity = plant.robot.closure_residual(plant.q, plant.v)
            assert position <= PROJECTION_TOLERANCE and velocity <= PROJECTION_TOLERANCE, \
                (k, position, velocity)
    assert compiled.compiled_steps == 300



def test_after_evaluate_the_multipliers_are_the_evaluated_states(robots):
    """The simulate node publishes the wrenches of the state it evaluated, reusing
    robot.multipliers() between Plant.evaluate() and advance(): on the compiled path, whose
    evaluate() runs the whole step, they must be those of the forward dynamics at the
    evaluated state (as after the Python path's evaluate()), not the last RK4 stage's (the
    published closure and joint wrenches were off by up to 284 N on a driven four-bar)."""
    compiled, python = pair(robots, "wishbone", integrator="rk4")
    robot = compiled.robot
    for k in range(50):
        state = (compiled.q.copy(), compiled.v.copy())
        compiled.evaluate()
        python.evaluate()
        lam_compiled, lam_python = robot.multipliers(), python.robot.multipliers()
        scale = max(1.0, float(np.abs(lam_python).max()))
        assert np.abs(lam_compiled - lam_python).max() <= ROUND_OFF * scale, k
        robot.forward_dynamics(*state, compiled.tau)   # the library at that state
        assert np.abs(robot.multipliers() - lam_compiled).max() <= ROUND_OFF * scale, k
        compiled.advance()
        python.advance()
    assert compiled.compiled_steps == 50

def test_a_driven_closed_loop_plant_equals_the_rollout_with_its_drives(robots):
    """The four-bar with a position drive on its crank, semi-implicit Euler (which opens the
    loop every step): the Plant's rows equal robot.rollout(drives=...) (the reference engine's
    robot.step, re-closed after each step) to round-off; before the Plant re-closed the loops
    they differed by 5e-5 rad after 200 steps."""
    robot = robots["fourbar"][0]
    robot.time = 0.0
    q0 = robot.assemble(np.array([0.5, 0.0, 0.0]))
    steps, dt = 200, 1e-3
    t = dt * np.arange(steps)
    position = (0.5 + 0.3 * np.sin(2.0 * np.pi * t))[:, None]
    velocity = (0.3 * 2.0 * np.pi * np.cos(2.0 * np.pi * t))[:, None]
    drives = {"joints": ["crank_joint"], "kp": 400.0, "kd": 40.0, "position": position,
              "velocity": velocity}
    rows = robot.rollout(q0, np.zeros(robot.nv), np.zeros((steps, robot.nv)), dt,
                         integrator="semi_implicit_euler", drives=drives, t0=0.0)
    assert rows.status == "ok", rows.message
    plant = Plant(robot, dt, "semi_implicit_euler", q=q0, joints=["crank_joint"], kp=400.0,
                  kd=40.0, limits=False)
    for k in range(steps):
        plant.drives.command_position(position[k], velocities=velocity[k])
        plant.step()
        scale = max(1.0, float(np.abs(rows.Q[k + 1]).max()))
        assert np.abs(plant.q - rows.Q[k + 1]).max() <= ROUND_OFF * scale, k
        assert np.abs(plant.v - rows.V[k + 1]).max() <= ROUND_OFF * max(
            1.0, float(np.abs(rows.V[k + 1]).max())), k
    assert np.abs(rows.Q[1:, 0] - position[:, 0]).max() < 0.05    # it tracks the crank

def test_auto_takes_the_compiled_call_where_the_python_path_is_python(robots):
    """compiled="auto" (the default): robots with force elements or loops step compiled; a
    plain rigid tree keeps its C-level Python path (faster than the kernel's dispatch)."""
    a, _ = robots["wishbone"]
    plant = Plant(a, 1e-3, "rk4")
    plant.step()
    assert plant.compiled_steps == 1 and plant.compiled_reason == ""
    a, _ = robots["arm7"]
    plant = Plant(a, 1e-3, "rk4")
    plant.step()
    assert plant.compiled_steps == 0 and "plain" in plant.compiled_reason
    with pytest.raises(ValueError, match="compiled"):
        Plant(a, 1e-3, compiled="yes")


def test_plants_the_kernel_cannot_take_stay_on_the_python_path(robots):
    """A Python force hook, a prescribed integrator outside the kernel, and a closed loop whose
    servo compensation needs its actuated joint: the Python path, the same results."""
    compiled, python = pair(robots, "arm7", integrator="rk4")
    for plant in (compiled, python):
        plant.add_force(lambda t, q, v: np.full(7, 0.2))   # a Python hook (any)
    step_both(compiled, python, 20, "force hook")
    assert compiled.compiled_steps == 0
    compiled, python = pair(robots, "arm7", integrator="implicit_euler")
    step_both(compiled, python, 5, "implicit Euler")
    assert compiled.compiled_steps == 0
    # the four-bar without the URDF limits: with them the crank's <limit velocity> envelope
    # needs M and b, the closed-loop compensation, as a servo does (Python steps)
    compiled, python = pair(robots, "fourbar", integrator="rk4", limits=False)
    for plant in (compiled, python):   # as config/fourbar_simulate.yaml: crank at 0.5 rad,
        plant.robot.baumgarte = (20.0, 20.0)   # Baumgarte kd = 2 alpha = 40, kp = beta^2 = 400
        plant.reset(plant.robot.assemble(np.array([0.5, 0.0, 0.0])))
    step_both(compiled, python, 20, "four-bar, effort")
    assert compiled.compiled_steps == 20          # effort commands: no compensation needed ...
    for plant in (compiled, python):
        plant.drives.command_position(plant.q[plant.drives.iq])
    step_both(compiled, python, 20, "four-bar, position drives")
    assert compiled.compiled_steps == 20          # ... a servo needs it: Python steps


@pytest.mark.parametrize("integrator, dt, duration", [("rk4", 1e-3, 0.3),
                                                      ("semi_implicit_euler", 0.05, 20.0)])
def test_simulate_command_trajectory_equals_the_simulator(integrator, dt, duration):
    """`mbd-ros simulate` of a tree (one robot.rollout call) records the states of repeated
    Simulator.step, and a divergence at the same time (semi-implicit Euler on the undamped arm
    at 50 ms: it gains energy until |v| passes the Simulator's bound)."""
    from mbd_ros.robot.integrators import SimulationDiverged, Simulator
    from mbd_ros.simulation.report import simulate
    robot = mbd_ros.load(str(URDF / "arm7.urdf"), passive_forces=False)
    q0 = np.array([0.3, -0.6, 0.4, 1.1, -0.5, 0.7, 0.2])
    record = simulate(robot, q0, np.zeros(7), duration, dt, integrator)
    sim = Simulator(robot, dt, integrator, q=q0)
    expected, diverged_at = [q0.copy()], None
    for k in range(int(round(duration / dt))):
        try:
            sim.step(np.zeros(7))
        except SimulationDiverged:
            diverged_at = (k + 1) * dt
            break
        expected.append(sim.q.copy())
    assert record["diverged_at"] == diverged_at
    assert record["q"].shape == (len(expected), 7)
    assert np.abs(record["q"] - np.array(expected)).max() <= ROUND_OFF
    if integrator == "semi_implicit_euler":
        assert diverged_at is not None, "the undamped Euler run did not diverge"
