"""Several threads sharing one Robot / ClosedLoopRobot get the same results as one thread
(issue 10). Each thread repeats every public method on its own states and compares with results
computed beforehand on a separate robot; a tiny switch interval makes the interpreter change
threads every few bytecodes, so a shared workspace would be corrupted (the case before the fix:
13 of 96 batch results wrong). Bounded: a fixed number of rounds, joined with a timeout."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import mbd_ros

ROOT = Path(__file__).resolve().parents[1]
N_THREADS = 4
ROUNDS = 12
TIMEOUT = 120.0


def run_threads(work):
    """Run work(thread_index) on N_THREADS threads with a tiny switch interval; re-raise the
    first failure."""
    errors = []

    def target(index):
        try:
            work(index)
        except BaseException as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(N_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        assert not any(t.is_alive() for t in threads), "threads did not finish in time"
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]


def tree_calls(robot, q, v, x, link, f_ext):
    batch = (np.tile(q, (70, 1)), np.tile(v, (70, 1)), np.tile(x, (70, 1)))
    return {
        "fd": lambda: robot.forward_dynamics(q, v, x),
        "fd_out": lambda: robot.forward_dynamics(q, v, x, out=np.empty(robot.nv)),
        "fd_fext": lambda: robot.forward_dynamics(q, v, x, f_ext=f_ext),
        "id": lambda: robot.inverse_dynamics(q, v, x),
        "id_fext": lambda: robot.inverse_dynamics(q, v, x, f_ext=f_ext),
        "mass": lambda: robot.mass_matrix(q),
        "bias": lambda: robot.bias_forces(q, v),
        "gravity": lambda: robot.gravity_forces(q),
        "wrenches": lambda: robot.joint_wrenches(q, v, x),
        "wrenches_fext": lambda: robot.joint_wrenches(q, v, x, f_ext=f_ext),
        "pose": lambda: robot.link_pose(q, link),
        "kinetic": lambda: robot.kinetic_energy(q, v),
        "potential": lambda: robot.potential_energy(q),
        "integrate": lambda: robot.integrate(q, v, 1e-2),
        "fd_batch": lambda: robot.forward_dynamics_batch(*batch),
        "id_batch": lambda: robot.inverse_dynamics_batch(*batch),
    }


@pytest.mark.parametrize("urdf, floating", [("arm7.urdf", False), ("branching.urdf", True)])
def test_threads_sharing_a_robot(urdf, floating):
    path = str(ROOT / "urdf" / urdf)
    shared = mbd_ros.load(path, floating_base=floating)
    shared.batch_threads = 2
    reference = mbd_ros.load(path, floating_base=floating)
    rng = np.random.default_rng(11)
    cases = []
    for _ in range(N_THREADS):
        q = reference.random_configuration(rng)
        v, x = rng.standard_normal(reference.nv), rng.standard_normal(reference.nv)
        link = reference.link_names[int(rng.integers(len(reference.link_names)))]
        f_ext = {reference.link_names[-1]: rng.standard_normal(6)}
        expected = {name: np.array(call()) for name, call in
                    tree_calls(reference, q, v, x, link, f_ext).items()}
        cases.append((q, v, x, link, f_ext, expected))

    def work(index):
        q, v, x, link, f_ext, expected = cases[index]
        calls = tree_calls(shared, q, v, x, link, f_ext)
        names = list(calls)
        for r in range(ROUNDS):
            for name in names[r % len(names):] + names[:r % len(names)]:
                got = np.array(calls[name]())
                assert np.array_equal(got, expected[name]), f"thread {index}, {name}, round {r}"

    run_threads(work)


def test_threads_sharing_a_closed_loop_robot():
    path = str(ROOT / "urdf" / "fourbar.urdf")
    closures = str(ROOT / "config" / "fourbar_closures.yaml")
    shared = mbd_ros.load(path, closures=closures)
    reference = mbd_ros.load(path, closures=closures)
    rng = np.random.default_rng(12)
    cases = []
    for i in range(N_THREADS):
        q = reference.assemble(np.array([-2.5 + 1.5 * i, 0.0, 0.0]))
        v = reference.project_velocity(q, rng.standard_normal(3))
        tau = np.array([rng.standard_normal(), 0.0, 0.0])
        qdd = reference.forward_dynamics(q, v, tau)
        calls = lambda robot, q=q, v=v, tau=tau, qdd=qdd: {   # noqa: E731
            "fd": lambda: robot.forward_dynamics(q, v, tau),
            "fd_minimal": lambda: robot.forward_dynamics(q, v, tau, method="minimal"),
            "closure_wrenches": lambda: robot.closure_wrenches(q, v, tau),
            "id": lambda: robot.inverse_dynamics(q, v, qdd),
            "wrenches": lambda: robot.joint_wrenches(q, v, qdd),
            "assemble": lambda: robot.assemble(q + np.array([0.0, 0.05, -0.05])),
            "project": lambda: robot.project_velocity(q, np.array([1.0, 0.0, 0.0])),
            "step": lambda: np.concatenate(robot.step(q, v, tau, 1e-3)),
            "residual": lambda: np.array(robot.closure_residual(q, v)),
            "fd_then_wrenches": lambda: np.concatenate([
                robot.forward_dynamics(q, v, tau),
                robot.closure_wrenches(q, v, tau, multipliers=robot.multipliers()).ravel(),
                robot.joint_wrenches(q, v, qdd, multipliers=robot.multipliers()).ravel()]),
        }
        expected = {name: np.array(call()) for name, call in calls(reference).items()}
        cases.append((calls, expected))

    def work(index):
        calls, expected = cases[index]
        mine = calls(shared)
        for r in range(ROUNDS // 2):
            for name, call in mine.items():
                got = np.array(call())
                np.testing.assert_allclose(got, expected[name], rtol=1e-12, atol=1e-12,
                                           err_msg=f"thread {index}, {name}, round {r}")

    run_threads(work)


# ---- loads: force elements, add_force callbacks, f_ext, flexible links, closed loops ------------
# Every kind of robot with everything that loads it: each thread hammers every public method of one
# shared robot with its own state, and must get what a separately built robot gives serially
# (before the fix the loaded paths of the flexible robots ran without the lock, and a thread could
# see another thread's "forces already applied" flag and skip its force elements). The callbacks
# depend on (q, v) only: robot.time, which step() advances, is shared on purpose.

ARM_FORCES = {"forces": [
    {"name": "wrist_spring", "type": "joint_spring", "joint": "joint_4", "stiffness": 40.0,
     "damping": 0.5, "rest_position": -1.0},
    {"name": "elastic_cord", "type": "spring_damper", "parent": "link_1",
     "parent_point": [0.05, 0.0, 0.1], "child": "link_5", "child_point": [0.0, 0.03, 0.0],
     "stiffness": 300.0, "damping": 3.0, "rest_length": 0.2, "preload": 5.0},
    {"name": "tool_bushing", "type": "bushing", "parent": "link_6", "child": "link_7",
     "stiffness": [0.0, 0.0, 0.0, 0.0, 0.0, 8.0], "damping": [0.0, 0.0, 0.0, 0.0, 0.0, 0.1]}]}


def _callbacks(robot, link):
    """Two add_force callbacks of (q, v): generalized forces, and a wrench on `link`."""
    gains = np.linspace(0.2, 0.8, robot.nv)
    robot.add_force(lambda t, q, v: -gains * v - 0.1 * np.sin(np.resize(q, robot.nv)))
    robot.add_force(lambda t, q, v: {link: np.array([0.3, -0.2 * q[0], 0.1, 0.0, 0.05 * v[0], 0.0])})
    return robot


ROUNDS_LOADED = 10


def _loaded_robot(kind):
    urdf, config = ROOT / "urdf", ROOT / "config"
    if kind in ("tree_forces", "codegen_forces"):
        robot = mbd_ros.load(str(urdf / "arm7.urdf"), forces=ARM_FORCES,
                             codegen=kind == "codegen_forces")
        return _callbacks(robot, "link_6")
    if kind == "closed_loop_forces":
        path = str(config / "double_wishbone.yaml")
        robot = mbd_ros.load(str(urdf / "double_wishbone.urdf"), closures=path, forces=path)
        return _callbacks(robot, "knuckle")
    if kind == "flexible":
        return mbd_ros.load(str(urdf / "flexible_arm.urdf"), flexible=str(config / "flexible_arm.yaml"))
    if kind == "flexible_forces":
        robot = mbd_ros.load(str(urdf / "flexible_arm.urdf"), flexible=str(config / "flexible_arm.yaml"),
                             forces=str(config / "flexible_arm_forces.yaml"))
        return _callbacks(robot, "upper_arm")
    if kind == "flexible_closed_loop":
        path = str(config / "flexible_fourbar.yaml")
        robot = mbd_ros.load(str(urdf / "flexible_fourbar.urdf"), flexible=path, closures=path,
                             forces={"forces": [{"name": "crank_spring", "type": "joint_spring",
                                                 "joint": "crank_joint", "stiffness": 2.0}]})
        return _callbacks(robot, "coupler")
    raise AssertionError(kind)


def _loaded_state(robot, index, rng):
    """A different valid state per thread (on the loops for closed-loop robots)."""
    if robot.closure_names and len(robot.elastic_names):
        from test_flexible_loops import assembled
        q = assembled(robot, crank=0.4 + 0.5 * index)
    elif robot.closure_names:
        q = robot.neutral()
        q[0] = -0.15 + 0.1 * index
        q = robot.assemble(q)
    else:
        q = robot.random_configuration(rng)
        if len(robot.elastic_names):
            q[robot.elastic_q_indices] = 1e-3 * rng.standard_normal(len(robot.elastic_names))
    v = 0.5 * rng.standard_normal(robot.nv)
    if robot.closure_names:
        v = robot.project_velocity(q, v)
    tau = rng.standard_normal(robot.nv)
    if robot.closure_names:   # drives on the actuated joints only: inverse dynamics reproduces them
        actuated = np.zeros(robot.nv, dtype=bool)
        actuated[[robot.joint_names.index(j) for j in robot.actuated_joints]] = True
        tau[~actuated] = 0.0
    return q, v, tau


def loaded_calls(robot, q, v, tau, f_ext):
    """Every public method on one state (with loads), as {name: call()}; a closed-loop robot's
    inverse dynamics and wrenches take the loop-consistent accelerations of the same loads."""
    qdd = robot.forward_dynamics(q, v, tau)
    qdd_fext = robot.forward_dynamics(q, v, tau, f_ext=f_ext)
    link = robot.link_names[-1]
    batch = lambda x: np.tile(x, (3, 1))   # noqa: E731
    calls = {
        "fd": lambda: robot.forward_dynamics(q, v, tau),
        "fd_out": lambda: robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv)),
        "fd_fext": lambda: robot.forward_dynamics(q, v, tau, f_ext=f_ext),
        "id": lambda: robot.inverse_dynamics(q, v, qdd),
        "id_fext": lambda: robot.inverse_dynamics(q, v, qdd_fext, f_ext=f_ext),
        "mass": lambda: robot.mass_matrix(q),
        "bias": lambda: robot.bias_forces(q, v),
        "gravity": lambda: robot.gravity_forces(q),
        "damping": lambda: robot.damping_forces(v),
        "wrenches": lambda: robot.joint_wrenches(q, v, qdd),
        "wrenches_fext": lambda: robot.joint_wrenches(q, v, qdd_fext, f_ext=f_ext),
        "pose": lambda: robot.link_pose(q, link),
        "kinetic": lambda: robot.kinetic_energy(q, v),
        "potential": lambda: robot.potential_energy(q),
        "integrate": lambda: robot.integrate(q, v, 1e-2),
        "fd_batch": lambda: robot.forward_dynamics_batch(batch(q), batch(v), batch(tau)),
        "id_batch": lambda: robot.inverse_dynamics_batch(batch(q), batch(v), batch(qdd)),
        "elements": lambda: np.concatenate([robot.force_element_values(q, v).force,
                                            robot.force_element_values(q, v).length]),
        "step": lambda: np.concatenate(robot.step(q, v, tau, 2e-4)),
    }
    if robot.closure_names and not robot.actuated_joints:   # nothing can hold it still
        del calls["gravity"]
    if robot.closure_names:
        calls.update({
            "closure_wrenches": lambda: robot.closure_wrenches(q, v, tau),
            "fd_then_wrenches": lambda: np.concatenate([
                robot.forward_dynamics(q, v, tau),
                robot.closure_wrenches(q, v, tau, multipliers=robot.multipliers()).ravel(),
                robot.joint_wrenches(q, v, qdd, multipliers=robot.multipliers()).ravel()]),
            "loop_state": lambda: np.concatenate([x.ravel() for x in robot.loop_state(q, v)]),
            "project": lambda: robot.project_velocity(q, v + 0.1),
        })
    elif not len(robot.elastic_names):   # (prescribed motion: rigid robots)
        joint = robot.joint_names[0]
        calls["prescribed"] = lambda: np.concatenate(
            robot.forward_dynamics(q, v, tau, prescribed={joint: 0.3}, return_torques=True))
    if len(robot.elastic_names):
        calls["elastic_energy"] = lambda: robot.elastic_energy(q)
    return calls


@pytest.mark.parametrize("kind", ["tree_forces", "codegen_forces", "closed_loop_forces",
                                  "flexible", "flexible_forces", "flexible_closed_loop"])
def test_threads_with_loads_on_every_robot_kind(kind):
    """Threaded results equal serial ones (1e-12 of each result's scale: the same arithmetic on
    the same numbers, bit-identical unless a shared buffer is corrupted)."""
    from conftest import assert_close
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        shared, reference = _loaded_robot(kind), _loaded_robot(kind)
    shared.batch_threads = 2
    rng = np.random.default_rng(21)
    cases = []
    for index in range(N_THREADS):
        q, v, tau = _loaded_state(reference, index, rng)
        f_ext = {shared.link_names[-2]: rng.standard_normal(6)}
        expected = {name: np.array(call()) for name, call in
                    loaded_calls(reference, q, v, tau, f_ext).items()}
        cases.append((q, v, tau, f_ext, expected))

    def work(index):
        q, v, tau, f_ext, expected = cases[index]
        calls = loaded_calls(shared, q, v, tau, f_ext)
        names = list(calls)
        for r in range(ROUNDS_LOADED):
            for name in names[r % len(names):] + names[:r % len(names)]:
                assert_close(np.array(calls[name]()), expected[name],
                             f"{kind}: thread {index}, {name}, round {r}", rtol=1e-12)

    run_threads(work)


@pytest.mark.parametrize("kind", ["tree_forces", "flexible_forces"])
def test_forces_are_added_while_another_thread_runs_inverse_dynamics(kind):
    """One thread runs inverse dynamics in a loop (its force elements are subtracted inside a
    window where its nested call must not add them again), another forward dynamics: every
    forward result carries the force elements (equal to the serial result, bit for bit). Before
    the fix the "already added" flag was the robot's, not the thread's: ~13% of the forward
    results lacked the forces."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = _loaded_robot(kind)
    q, v, tau = _loaded_state(robot, 0, np.random.default_rng(3))
    expected = robot.forward_dynamics(q, v, tau)
    qdd = expected.copy()
    done = threading.Event()
    wrong = []

    def inverse(_):
        while not done.is_set():
            robot.inverse_dynamics(q, v, qdd)

    def forward(_):
        try:
            for _ in range(3000):
                if not np.array_equal(robot.forward_dynamics(q, v, tau), expected):
                    wrong.append(1)
        finally:
            done.set()

    run_threads(lambda index: (inverse, forward)[index % 2](index))
    assert not wrong, f"{len(wrong)} of 3000 forward dynamics results lacked the force elements"
