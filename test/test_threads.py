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
