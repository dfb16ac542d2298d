"""robot.rollout (robot/rollout.py): whole trajectories and batches in one call, by the compiled
engine (kernels/rollout.py) and the reference engine (repeated robot.step from Python).

References: repeated robot.step from the same state (the rollout's definition: the same numbers,
bit for bit, as both run the same step), a Plant stepping with command_position per step (the
drives), JointLimits.enforce's invariants (a joint driven into its stop ends on it, not beyond),
and the divergence of an undamped explicit integration (its status, step index and the rows it
keeps).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot.integrators import INTEGRATORS, UnstableStepWarning
from mbd_ros.robot.rollout import (DIVERGED, OK, Rollout, RolloutBatch, RolloutDiverged)
from mbd_ros.robot.rollout_plant import MAX_SPEED
from mbd_ros.simulation.plant import MAX_SPEED as PLANT_MAX_SPEED
from mbd_ros.simulation.plant import Plant

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf"
CONFIG = ROOT / "config"
DT = 1e-3


def arm():
    return mbd_ros.load(str(URDF / "arm7.urdf"))


def fourbar():
    return mbd_ros.load(str(URDF / "fourbar.urdf"), closures=str(CONFIG / "fourbar_closures.yaml"))


def floating_leg():
    return mbd_ros.load(str(URDF / "arm7.urdf"), floating_base=True)


def flexible_arm():
    return mbd_ros.load(str(URDF / "flexible_arm.urdf"), flexible=str(CONFIG / "flexible_arm.yaml"))


def stepped(robot, q, v, tau, dt, integrator=None, substeps=1):
    """The reference: Q, V by repeated robot.step from (q, v) (robot.time restored). Steps past
    an explicit integrator's stability (the flexible arm at 1 ms) are compared as they are: their
    UnstableStepWarning is expected here."""
    start = robot.time
    rows_q, rows_v = [np.array(q, float)], [np.array(v, float)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableStepWarning)
        for k in range(len(tau)):
            for _ in range(substeps):
                q, v = robot.step(q, v, tau[k], dt / substeps, integrator)
            rows_q.append(q)
            rows_v.append(v)
    robot.time = start
    return np.array(rows_q), np.array(rows_v)


def start_state(robot, seed):
    rng = np.random.default_rng(seed)
    q = robot.random_configuration(rng) if not robot.closure_names else robot.assemble(
        robot.neutral())
    v = 0.3 * rng.standard_normal(robot.nv)
    if robot.closure_names:
        v = robot.project_velocity(q, v)
    return q, v


def torques(robot, steps, seed, scale=2.0):
    return scale * np.random.default_rng(seed).standard_normal((steps, robot.nv))


@pytest.fixture(scope="module")
def arm7():
    return arm()


COMPILED_INTEGRATORS = (None, "rk4", "semi_implicit_euler")
PYTHON_INTEGRATORS = ("implicit_euler", "symplectic_euler")
assert set(COMPILED_INTEGRATORS[1:] + PYTHON_INTEGRATORS) == set(INTEGRATORS)
ENGINES = ("compiled", "reference")


def engines_for(integrator):
    return ENGINES if integrator in COMPILED_INTEGRATORS else ("reference",)


# ---------------------------------------------------------------- the API: equality with step
@pytest.mark.parametrize("integrator, engine", [(i, e) for i in (None,) + INTEGRATORS
                                                for e in engines_for(i)])
def test_arm_rollout_equals_repeated_step(arm7, integrator, engine):
    q0, v0 = start_state(arm7, 1)
    steps = 6 if integrator in PYTHON_INTEGRATORS else 25
    tau = torques(arm7, steps, 2)
    result = arm7.rollout(q0, v0, tau, DT, integrator=integrator, engine=engine)
    q_ref, v_ref = stepped(arm7, q0, v0, tau, DT, integrator)
    assert isinstance(result, Rollout) and len(result) == 2
    Q, V = result
    assert result.status == "ok" and result.steps == steps and result.message == ""
    assert Q.shape == (steps + 1, arm7.nq) and V.shape == (steps + 1, arm7.nv)
    np.testing.assert_array_equal(Q, q_ref)   # the same steps: the same bits
    np.testing.assert_array_equal(V, v_ref)


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_implicit_integrators_run_compiled_with_mimic_couplings(integrator):
    """Compiled on trees (test_rollout_implicit.py), on closed loops
    (test_rollout_loop_integrators.py) and with mimic couplings (test_rollout_mimic.py, row by
    row against robot.step): the auto engine picks the compiled one (the same bits)."""
    robot = mimic_gripper()
    q0, v0 = mimic_start(robot, 1)
    tau = np.zeros((2, robot.nv))
    auto = robot.rollout(q0, v0, tau, DT, integrator=integrator)
    compiled = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert auto.status == compiled.status == "ok"
    np.testing.assert_array_equal(auto.Q, compiled.Q)
    np.testing.assert_array_equal(auto.V, compiled.V)


@pytest.mark.parametrize("engine", ENGINES)
def test_substeps_take_k_steps_of_dt_over_k(arm7, engine):
    q0, v0 = start_state(arm7, 3)
    tau = torques(arm7, 10, 4)
    Q, V = arm7.rollout(q0, v0, tau, 4e-3, integrator="semi_implicit_euler", substeps=4,
                        engine=engine)
    q_ref, v_ref = stepped(arm7, q0, v0, tau, 4e-3, "semi_implicit_euler", substeps=4)
    np.testing.assert_array_equal(Q, q_ref)
    np.testing.assert_array_equal(V, v_ref)
    # the default integrator splits a 5 ms row into five 1 ms RK4 substeps, as robot.step does
    Q5, V5 = arm7.rollout(q0, v0, tau, 5e-3, engine=engine)
    q_ref, v_ref = stepped(arm7, q0, v0, tau, 5e-3)
    np.testing.assert_array_equal(Q5, q_ref)
    np.testing.assert_array_equal(V5, v_ref)


def codegen_arm():
    return mbd_ros.load(str(URDF / "arm7.urdf"), codegen=True)


def double_wishbone():
    return mbd_ros.load(str(URDF / "double_wishbone.urdf"),
                        closures=str(CONFIG / "double_wishbone.yaml"),
                        forces=str(CONFIG / "double_wishbone.yaml"))


def sprung_arm():
    """arm7 with a joint spring force element (evaluated in Python at every stage)."""
    forces = {"forces": [{"type": "joint_spring", "name": "elbow_spring", "joint": "joint_4",
                          "stiffness": 20.0, "damping": 0.5}]}
    return mbd_ros.load(str(URDF / "arm7.urdf"), forces=forces)


GRIPPER = (ROOT / "urdf" / "gripper_mimic.urdf").read_text()   # finger_b mimics finger_a


def mimic_gripper():
    return mbd_ros.load(GRIPPER, mimic=True)


# kinds the compiled engine runs, and kinds that run in the reference loop (robot/rollout_compiled.py)
def sprung_floating_arm():
    """A floating-base arm7 with a spring-damper between two links and a joint spring."""
    forces = {"forces": [
        {"type": "joint_spring", "name": "elbow_spring", "joint": "joint_4", "stiffness": 20.0,
         "damping": 0.5},
        {"type": "spring_damper", "name": "strut", "parent": "link_1", "child": "link_3",
         "parent_point": [0.0, 0.05, 0.0], "child_point": [0.0, 0.0, 0.1], "stiffness": 300.0,
         "damping": 3.0, "rest_length": 0.3}]}
    return mbd_ros.load(str(URDF / "arm7.urdf"), forces=forces, floating_base=True)


def arm_with_callback():
    robot = arm()
    robot.add_force(lambda t, q, v: -0.5 * v)
    return robot


COMPILED_KINDS = {"floating_base": floating_leg, "flexible": flexible_arm, "codegen": codegen_arm,
                  "force_element": sprung_arm, "force_elements_floating": sprung_floating_arm,
                  "closed_loop": fourbar, "forces_and_loops": double_wishbone}
# (mimic couplings run compiled, equal to robot.step to round-off: test/test_rollout_mimic.py)
PYTHON_KINDS = {"callback": arm_with_callback}


def assert_same_trajectory(robot, Q, V, q_ref, v_ref):
    """The compiled rollout against repeated robot.step: bit for bit, except on closed loops,
    whose projection the compiled engine runs in numba (kernels/rollout_projection.py: QR and
    Cholesky where robot.step uses LAPACK's SVD and LU): equal there to round-off, bounded by
    64 eps (the operations of one projection on these 5-row loops, each rounding once) per row
    and per unit of state, accumulated over the rows."""
    if not robot.closure_names:
        np.testing.assert_array_equal(Q, q_ref)
        np.testing.assert_array_equal(V, v_ref)
        return
    rows = len(Q)
    eps = np.finfo(float).eps
    np.testing.assert_allclose(Q, q_ref, rtol=0,
                               atol=64 * eps * rows * max(1.0, np.abs(q_ref).max()))
    np.testing.assert_allclose(V, v_ref, rtol=0,
                               atol=64 * eps * rows * max(1.0, np.abs(v_ref).max()))


def mimic_start(robot, seed):
    q, v = start_state(robot, seed)
    if robot.mimic_joints:
        q, v = robot.apply_mimic(q, v)
    return q, v


@pytest.mark.parametrize("kind", list(COMPILED_KINDS) + list(PYTHON_KINDS))
def test_other_kinds_equal_repeated_step(kind):
    make = {**COMPILED_KINDS, **PYTHON_KINDS}[kind]
    robot = make()
    q0, v0 = mimic_start(robot, 5)
    tau = torques(robot, 8, 6, scale=0.5)
    engine = "compiled" if kind in COMPILED_KINDS else "auto"
    if kind in PYTHON_KINDS:
        with pytest.raises(ValueError, match="engine='compiled'"):
            robot.rollout(q0, v0, tau, DT, engine="compiled")
    for integrator in (None, "semi_implicit_euler"):
        Q, V = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine=engine)
        q_ref, v_ref = stepped(robot, q0, v0, tau, DT, integrator)
        assert_same_trajectory(robot, Q, V, q_ref, v_ref)
    if robot.closure_names:   # robot.step's projection keeps the loop closed
        position, velocity = robot.closure_residual(Q[-1], V[-1])
        assert position < 1e-9 and velocity < 1e-9
    if kind == "closed_loop":   # a longer run: many returns to Python for the projection
        tau = torques(robot, 300, 9, scale=0.5)
        for integrator in ("rk4", "semi_implicit_euler"):
            Q, V = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
            q_ref, v_ref = stepped(robot, q0, v0, tau, DT, integrator)
            assert_same_trajectory(robot, Q, V, q_ref, v_ref)
        batch = robot.rollout(np.array([q0, q0]), np.array([v0, v0]), np.array([tau, -tau]), DT,
                              integrator="rk4", batch_threads=2, engine="compiled")
        for member, sign in ((0, 1.0), (1, -1.0)):   # a member does not depend on the threads
            single = robot.rollout(q0, v0, sign * tau, DT, integrator="rk4", engine="compiled")
            np.testing.assert_array_equal(batch.Q[member], single.Q)
            np.testing.assert_array_equal(batch.V[member], single.V)
            q_ref, v_ref = robot.rollout(q0, v0, sign * tau, DT, integrator="rk4",
                                         engine="reference")
            assert_same_trajectory(robot, batch.Q[member], batch.V[member], q_ref, v_ref)
        # drives on closed loops run compiled too (test/test_rollout_loop_drives.py)
        drives = {"joints": ["crank_joint"], "position": np.zeros((len(tau), 1))}
        Q, V = robot.rollout(q0, v0, tau, DT, drives=drives, engine="compiled")
        q_ref, v_ref = robot.rollout(q0, v0, tau, DT, drives=drives, engine="reference")
        assert_same_trajectory(robot, Q, V, q_ref, v_ref)
    if kind == "floating_base":   # the free joint's quaternion stays unit (the exponential map)
        assert abs(np.linalg.norm(Q[-1, 3:7]) - 1.0) < 1e-14


def test_rollout_leaves_time_and_starts_at_t0(arm7):
    arm7.time = 0.25
    q0, v0 = start_state(arm7, 7)
    tau = torques(arm7, 3, 8)
    arm7.rollout(q0, v0, tau, DT)
    assert arm7.time == 0.25
    arm7.time = 0.0


# ---------------------------------------------------------------- batches
@pytest.mark.parametrize("engine, threads", [("compiled", 1), ("compiled", 2),
                                             ("compiled", 5), ("reference", 2)])
def test_batch_equals_single_rollouts(arm7, engine, threads):
    n, steps = 3, 12
    starts = [start_state(arm7, 10 + i) for i in range(n)]
    q0 = np.array([s[0] for s in starts])
    v0 = np.array([s[1] for s in starts])
    tau = np.array([torques(arm7, steps, 20 + i) for i in range(n)])
    result = arm7.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=threads,
                          engine=engine)
    assert isinstance(result, RolloutBatch)
    Q, V = result
    assert Q.shape == (n, steps + 1, arm7.nq) and V.shape == (n, steps + 1, arm7.nv)
    assert result.status.tolist() == [OK] * n and result.steps.tolist() == [steps] * n
    assert result.messages == [""] * n
    for i in range(n):
        single_q, single_v = arm7.rollout(q0[i], v0[i], tau[i], DT, integrator="rk4",
                                          engine="reference")
        np.testing.assert_array_equal(Q[i], single_q)
        np.testing.assert_array_equal(V[i], single_v)


def test_concurrent_rollouts_on_one_robot_do_not_share_workspaces(arm7):
    """Two Python threads rolling out different trajectories on one robot at once get what each
    gets alone (each call takes its own workspace set)."""
    import threading
    runs = []
    for i in range(2):
        q0, v0 = start_state(arm7, 40 + i)
        runs.append((q0, v0, torques(arm7, 300, 50 + i)))
    alone = [arm7.rollout(*run, DT, engine="compiled") for run in runs]
    together = [None, None]

    def work(i):
        together[i] = arm7.rollout(*runs[i], DT, engine="compiled")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


# ---------------------------------------------------------------- divergence
@pytest.mark.parametrize("engine", ENGINES)
def test_divergence_truncates_warns_and_names_the_step(engine):
    """An undamped pendulum-like arm under a torque growing without bound passes max_speed:
    the rollout keeps the rows before, says the step and its time, and warns."""
    robot = mbd_ros.load(str(URDF / "arm7.urdf"), passive_forces=False)
    q0, v0 = robot.neutral(), np.zeros(robot.nv)
    steps = 400
    tau = np.zeros((steps, robot.nv))
    tau[:, 0] = 20.0 * np.arange(1, steps + 1)   # N m: spins the base joint ever faster
    with pytest.warns(RolloutDiverged, match="diverged at step"):
        result = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", max_speed=50.0,
                               engine=engine)
    Q, V = result
    k = result.steps
    assert result.status == "diverged" and 0 < k < steps
    assert Q.shape == (k + 1, robot.nq) and V.shape == (k + 1, robot.nv)
    assert f"step {k} " in result.message and f"t = {k * DT:.6f}" in result.message
    # every kept row is within the bound and is what robot.step gives; the next step is not
    assert np.abs(V).max() <= 50.0
    q_ref, v_ref = stepped(robot, q0, v0, tau[:k + 1], DT, "semi_implicit_euler")
    np.testing.assert_array_equal(Q, q_ref[:k + 1])
    assert np.abs(v_ref[k + 1]).max() > 50.0
    # in a batch, the diverging member's rows after its failure are NaN, the other is complete
    q0s = np.array([q0, q0])
    taus = np.array([tau, np.zeros_like(tau)])
    with pytest.warns(RolloutDiverged):
        batch = robot.rollout(q0s, np.zeros((2, robot.nv)), taus, DT,
                              integrator="semi_implicit_euler", max_speed=50.0, engine=engine,
                              batch_threads=2)
    assert batch.status.tolist() == [DIVERGED, OK]
    assert batch.steps.tolist() == [k, steps]
    np.testing.assert_array_equal(batch.Q[0, :k + 1], Q)
    assert np.isnan(batch.Q[0, k + 1:]).all() and np.isnan(batch.V[0, k + 1:]).all()
    assert np.isfinite(batch.Q[1]).all()
    assert "diverged at step" in batch.messages[0] and batch.messages[1] == ""


def test_default_max_speed_is_the_plants():
    assert MAX_SPEED == PLANT_MAX_SPEED


# ---------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("change, name", [
    ({"q0": np.zeros(3)}, "q0"),
    ({"v0": np.zeros(3)}, "v0"),
    ({"tau": np.zeros((4, 3))}, "tau"),
    ({"tau": np.full((4, 7), np.nan)}, "tau"),
    ({"q0": np.full(7, np.inf)}, "q0"),
    ({"dt": -1.0}, "dt"),
    ({"dt": 20.0}, "dt / substeps"),
    ({"integrator": "euler"}, "integrator"),
    ({"substeps": 0}, "substeps"),
    ({"max_speed": 0.0}, "max_speed"),
    ({"batch_threads": 0}, "batch_threads"),
    ({"drives": {"position": np.zeros((4, 2))}}, "drives"),
    ({"drives": {"joints": ["nope"], "position": np.zeros((4, 1))}}, "drives"),
    ({"drives": {"position": np.zeros((4, 7)), "kp": -1.0}}, "kp"),
    ({"drives": {"position": np.zeros((4, 7)), "model": "servo"}}, r"drives\['model'\]"),
    ({"drives": {"position": np.zeros((4, 7)), "model": "pd", "kp": 10.0}},
     r"drives\['kd'\] is required with model 'pd'"),
    ({"engine": "fast"}, "engine"),
    ({"t0": np.nan}, "t0 must be finite"),
    ({"t0": np.inf}, "t0 must be finite"),
    ({"q0": np.zeros((0, 7)), "v0": np.zeros((0, 7)), "tau": np.zeros((0, 4, 7))},
     "q0 has shape"),
])
def test_bad_arguments_name_the_argument(arm7, change, name):
    args = {"q0": np.zeros(7), "v0": np.zeros(7), "tau": np.zeros((4, 7)), "dt": DT}
    args.update(change)
    with pytest.raises(ValueError, match=name):
        arm7.rollout(**args)


def test_batch_shapes_must_agree(arm7):
    with pytest.raises(ValueError, match="tau"):
        arm7.rollout(np.zeros((2, 7)), np.zeros((2, 7)), np.zeros((3, 4, 7)), DT)
    with pytest.raises(ValueError, match="v0"):
        arm7.rollout(np.zeros((2, 7)), np.zeros(7), np.zeros((2, 4, 7)), DT)


# ---------------------------------------------------------------- drives and limits
@pytest.mark.parametrize("model", ["ideal", "pd"])
@pytest.mark.parametrize("engine", ENGINES)
def test_drives_equal_a_plant_with_command_position(arm7, engine, model):
    """drives= is the Plant's position drives: a Plant stepping with command_position per step
    (same integrator, same gains, its URDF limits) gives the same states; "model": "pd" the
    Plant's drives after set_model("pd", kp, kd) (a servo's PD, gains in N m/rad)."""
    steps = 30
    rng = np.random.default_rng(31)
    q0 = arm7.neutral()
    joints = [arm7.joint_names[i] for i in range(arm7.nv)]
    targets = 0.3 * np.sin(np.linspace(0, 3, steps))[:, None] * rng.uniform(-1, 1, arm7.nv)
    velocity = np.gradient(targets, DT, axis=0)
    # ideal: inertia-normalised 1/s^2, 1/s; pd: a 10 Hz loop's N m/rad, N m s/rad on the arm7
    kp, kd = (300.0, 30.0) if model == "ideal" else (
        np.array([960.0, 2270.0, 190.0, 480.0, 20.0, 31.0, 2.1]),
        np.array([31.0, 72.0, 6.0, 15.0, 0.64, 1.0, 0.07]))
    for limits in (True, False):
        for integrator in ("semi_implicit_euler", "rk4"):
            plant = Plant(arm7, DT, integrator=integrator, q=q0, kp=300.0, kd=30.0,
                          limits=limits, joints=joints)
            if model == "pd":
                plant.drives.set_model("pd", pd_kp=kp, pd_kd=kd)
            rows_q, rows_v = [plant.q.copy()], [plant.v.copy()]
            for k in range(steps):
                plant.drives.command_position(targets[k], velocities=velocity[k])
                plant.step()
                rows_q.append(plant.q.copy())
                rows_v.append(plant.v.copy())
            Q, V = arm7.rollout(q0, np.zeros(arm7.nv), np.zeros((steps, arm7.nv)), DT,
                                integrator=integrator, limits=limits, engine=engine,
                                drives={"joints": joints, "kp": kp, "kd": kd, "model": model,
                                        "position": targets, "velocity": velocity})
            np.testing.assert_array_equal(Q, np.array(rows_q))
            np.testing.assert_array_equal(V, np.array(rows_v))


@pytest.mark.parametrize("engine", ENGINES)
def test_flexible_drives_equal_a_plant(engine):
    """drives= on the flexible arm (its joints driven, the elastic coordinates free) equals a
    Plant with command_position, semi-implicit Euler at the arm's default_max_step."""
    from mbd_ros.simulation import default_max_step
    robot = flexible_arm()
    dt = default_max_step(robot)
    steps = 40
    q0 = robot.neutral()
    plant = Plant(robot, dt, q=q0)
    joints = plant.drives.joints
    targets = 0.2 * np.sin(np.linspace(0, 2, steps))[:, None] * np.ones(len(joints))
    rows_q, rows_v = [plant.q.copy()], [plant.v.copy()]
    for k in range(steps):
        plant.drives.command_position(targets[k])
        plant.step()
        rows_q.append(plant.q.copy())
        rows_v.append(plant.v.copy())
    Q, V = robot.rollout(q0, np.zeros(robot.nv), np.zeros((steps, robot.nv)), dt,
                         integrator="semi_implicit_euler", limits=True, engine=engine,
                         drives={"position": targets})
    np.testing.assert_array_equal(Q, np.array(rows_q))
    np.testing.assert_array_equal(V, np.array(rows_v))


@pytest.mark.parametrize("engine", ENGINES)
def test_limited_joint_pushed_into_its_stop_stays_on_it(arm7, engine):
    """A constant torque drives joint 2 into its URDF limit: with limits=True it ends on the
    limit (not beyond, up to round-off), at rest against it, as the Plant's stops hold it; and
    the trajectory equals a Plant's (zero drive efforts, same integrator)."""
    lower, upper = arm7.position_limits
    joint = 1
    steps = 400
    tau = np.zeros((steps, arm7.nv))
    tau[:, joint] = 200.0   # N m, far beyond gravity's torque: pushes to the upper limit
    q0 = arm7.neutral()
    Q, V = arm7.rollout(q0, np.zeros(arm7.nv), tau, DT, integrator="semi_implicit_euler",
                        limits=True, engine=engine)
    assert np.all(Q[:, joint] <= upper[joint] + 1e-12)
    assert Q[-1, joint] == pytest.approx(upper[joint], abs=1e-12)
    assert abs(V[-1, joint]) < 1e-9
    # without the stops the same torque carries it past the limit
    free_q, _ = arm7.rollout(q0, np.zeros(arm7.nv), tau, DT, integrator="semi_implicit_euler",
                             engine=engine)
    assert free_q[-1, joint] > upper[joint] + 0.1
    plant = Plant(arm7, DT, q=q0, limits=True)
    plant.drives.command_effort(np.zeros(len(plant.drives.joints)))
    rows = [plant.q.copy()]
    for k in range(steps):
        plant.sim.step(tau[k])   # the Plant's integrator, then its stops
        plant.limits.enforce(plant.sim.q, plant.sim.v)
        rows.append(plant.q.copy())
    np.testing.assert_array_equal(Q, np.array(rows))


def test_warning_class_is_a_runtime_warning():
    assert issubclass(RolloutDiverged, RuntimeWarning)


def test_floating_base_stops_and_batched_drives_match_the_reference():
    """The stops on a floating-base robot (q (+) dq through the exponential map, then onto the
    limit) and drives with a leading batch axis: the compiled engine equals the reference loop,
    member by member, and the joint pushed into its stop ends on it."""
    robot = floating_leg()
    lower, upper = robot.position_limits
    joint = robot.joint_names.index("joint_2")
    iq, iv = robot.idx_q[joint], robot.idx_v[joint]
    steps = 200
    tau = np.zeros((steps, robot.nv))
    tau[:, iv] = 150.0
    q0 = robot.neutral()
    results = [robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="semi_implicit_euler",
                             limits=True, engine=engine, max_speed=1e4) for engine in ENGINES]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0].status == "ok"
    assert results[0][0][-1, iq] == pytest.approx(upper[iv], abs=1e-12)
    # drives in a batch: two members with different references
    arm = arm_robot()
    n, steps = 2, 40
    q0s = np.array([arm.neutral(), arm.neutral()])
    references = np.array([0.2 * np.ones((steps, arm.nv)), -0.3 * np.ones((steps, arm.nv))])
    drives = {"position": references, "kp": 200.0}
    batch = arm.rollout(q0s, np.zeros((n, arm.nv)), np.zeros((n, steps, arm.nv)), DT,
                        integrator="rk4", drives=drives, batch_threads=2, engine="compiled")
    for i in range(n):
        single = arm.rollout(q0s[i], np.zeros(arm.nv), np.zeros((steps, arm.nv)), DT,
                             integrator="rk4", drives={"position": references[i], "kp": 200.0},
                             engine="reference")
        np.testing.assert_array_equal(batch.Q[i], single[0])
        np.testing.assert_array_equal(batch.V[i], single[1])


def arm_robot():
    return arm()


def test_force_elements_with_stops_match_the_reference():
    """Force elements and position stops together (compiled: the loaded forward dynamics, then
    the stops with the tree's mass matrix) equal the reference loop."""
    robot = sprung_arm()
    steps = 400
    tau = np.zeros((steps, robot.nv))
    tau[:, 1] = 200.0   # into joint_2's upper stop
    q0 = robot.neutral()
    compiled = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="rk4", limits=True,
                             engine="compiled")
    reference = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="rk4", limits=True,
                              engine="reference")
    np.testing.assert_array_equal(compiled[0], reference[0])
    np.testing.assert_array_equal(compiled[1], reference[1])
    assert compiled[0][-1, 1] == pytest.approx(robot.position_limits[1][1], abs=1e-12)
    # (drives with force elements: compiled too, test_rollout_implicit.py)
