"""C-level entries (mbd_ros/fastcall/entries.py) of a flexible Robot: after the second fast call,
forward_dynamics, inverse_dynamics and mass_matrix of the flexible arm are KernelCalls giving
bit-identical results to the Python methods; FD agrees with M^-1 (tau - b) from the RNEA (an
independent algorithm: the articulated recursion vs Newton-Euler columns); every other form of
call (lists, wrong lengths, NaN, f_ext, force callbacks) takes the Python method and raises its
ValueError. The flexible closed loop (which overrides FD and ID) gets only the mass matrix's."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import require_fastcall
from mbd_ros import fastcall
from test_flexible_loops import assembled, fourbar

REPO = Path(mbd_ros.__file__).resolve().parent.parent
NAMES = ("forward_dynamics", "inverse_dynamics", "mass_matrix")


@pytest.fixture(scope="module", autouse=True)
def extension():
    require_fastcall()


def flexible_arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(str(REPO / "urdf" / "flexible_arm.urdf"),
                            flexible=str(REPO / "config" / "flexible_arm.yaml"))


@pytest.fixture(scope="module")
def arm():
    return flexible_arm()


def state(robot, seed):
    rng = np.random.default_rng(seed)
    q = robot.random_configuration(rng)
    q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * 2e-3
    return q, rng.normal(size=robot.nv), rng.normal(size=robot.nv) * 3.0


def python_method(robot, name):
    return getattr(type(robot), name).__get__(robot)


def call(robot, name, q, v, x, method=None):
    method = method or getattr(robot, name)
    if name == "mass_matrix":
        return method(q, out=np.empty((robot.nv, robot.nv)))
    return method(q, v, x, out=np.empty(robot.nv))


def test_second_fast_call_installs_bit_identical_kernel_calls():
    robot = flexible_arm()
    assert robot.tree.kind == "flexible" and not robot.closure_names
    q, v, x = state(robot, 1)
    first = {}
    for k in range(2):
        for name in NAMES:
            first.setdefault(name, call(robot, name, q, v, x).copy())
            assert fastcall.installed(robot, name) == (k == 1), name
    for seed in range(2, 6):
        q, v, x = state(robot, seed)
        for name in NAMES:
            fast = call(robot, name, q, v, x)
            assert fastcall.installed(robot, name)
            expected = call(robot, name, q, v, x, python_method(robot, name))
            assert np.array_equal(fast, expected), name       # the same kernel: bit-identical
        # FD (articulated recursion) against M^-1 (tau - b) (Newton-Euler columns), rel. 1e-9
        M = robot.mass_matrix(q, out=np.empty((robot.nv, robot.nv)))
        b = robot.inverse_dynamics(q, v, np.zeros(robot.nv), out=np.empty(robot.nv))
        ref = np.linalg.solve(M, x - b)
        fd = robot.forward_dynamics(q, v, x, out=np.empty(robot.nv))
        assert np.abs(fd - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())


def test_compile_c_calls_and_fallbacks_raise_the_python_errors(arm):
    assert arm.compile_c_calls() == list(NAMES)
    q, v, x = state(arm, 7)
    expected = call(arm, "forward_dynamics", q, v, x, python_method(arm, "forward_dynamics"))
    fd = arm.forward_dynamics
    _, slow0 = fd.counts()
    got = fd(list(q), list(v), x, out=np.empty(arm.nv))        # lists: converted
    assert np.array_equal(got, expected)
    assert np.array_equal(fd(q, v, x), expected)               # no out
    assert fd.counts()[1] == slow0 + 2
    M = arm.mass_matrix(list(q))
    assert np.array_equal(M, python_method(arm, "mass_matrix")(q))
    bad_cases = [((q[:-1], v, x), "q"), ((q, v, np.r_[x, 1.0]), "tau"),
                 ((q, v, np.r_[x[:-1], np.nan]), "NaN")]
    for args, message in bad_cases:
        with pytest.raises(ValueError) as fast_error:
            fd(*args, out=np.empty(arm.nv))
        with pytest.raises(ValueError) as python_error:
            python_method(arm, "forward_dynamics")(*args, out=np.empty(arm.nv))
        assert str(fast_error.value) == str(python_error.value)
        assert message in str(fast_error.value)
    for bad_q in (q[:-1], np.r_[q, 0.0]):
        with pytest.raises(ValueError) as fast_error:
            arm.mass_matrix(bad_q, out=np.empty((arm.nv, arm.nv)))
        with pytest.raises(ValueError) as python_error:
            python_method(arm, "mass_matrix")(bad_q, out=np.empty((arm.nv, arm.nv)))
        assert str(fast_error.value) == str(python_error.value)
    with pytest.raises(ValueError) as fast_error:
        arm.mass_matrix(q, out=np.empty((arm.nv, arm.nv + 1)))
    with pytest.raises(ValueError) as python_error:
        python_method(arm, "mass_matrix")(q, out=np.empty((arm.nv, arm.nv + 1)))
    assert str(fast_error.value) == str(python_error.value)


def test_external_wrenches_do_not_leak_into_later_fast_calls(arm):
    arm.compile_c_calls()
    q, v, x = state(arm, 5)
    free = arm.forward_dynamics(q, v, x, out=np.empty(arm.nv)).copy()
    wrench = {"forearm": np.array([40.0, -80.0, 20.0, 4.0, 0.0, 12.0])}   # at its clamp
    loaded = arm.forward_dynamics(q, v, x, f_ext=wrench, out=np.empty(arm.nv))
    assert np.abs(loaded - free).max() > 1e-3 * np.abs(free).max()
    assert np.array_equal(loaded, python_method(arm, "forward_dynamics")(q, v, x, f_ext=wrench))
    # the KernelCall runs on the load-free workspace: the wrench is not applied again
    assert np.array_equal(arm.forward_dynamics(q, v, x, out=np.empty(arm.nv)), free)
    tau = arm.inverse_dynamics(q, v, free, out=np.empty(arm.nv))
    assert np.abs(tau - x).max() <= 1e-9 * np.abs(free).max()     # ID(FD) round trip


def test_force_callbacks_drop_the_kernel_calls():
    robot = flexible_arm()
    assert robot.compile_c_calls() == list(NAMES)
    q, v, x = state(robot, 2)
    free = robot.forward_dynamics(q, v, x, out=np.empty(robot.nv)).copy()
    push = np.linspace(0.5, 2.0, robot.nv)
    robot.add_force(lambda t, q, v: push)
    assert not any(fastcall.installed(robot, name) for name in NAMES)
    pushed = robot.forward_dynamics(q, v, x, out=np.empty(robot.nv))
    assert np.allclose(pushed, flexible_arm().forward_dynamics(q, v, x + push), rtol=1e-12,
                       atol=1e-12)
    assert not np.allclose(pushed, free)
    assert robot.compile_c_calls() == []


def test_flexible_closed_loop_gets_only_the_mass_matrix_entry():
    robot = fourbar()
    assert robot.tree.kind == "flexible" and robot.closure_names
    assert robot._c_call_names() == ["mass_matrix"]
    q = assembled(robot)
    rng = np.random.default_rng(3)
    v = robot.project_velocity(q, rng.normal(size=robot.nv))
    tau = rng.normal(size=robot.nv)
    before = robot.forward_dynamics(q, v, tau).copy()
    assert robot.compile_c_calls() == ["mass_matrix"]
    assert not fastcall.installed(robot, "forward_dynamics")
    M = robot.mass_matrix(q, out=np.empty((robot.nv, robot.nv)))
    assert np.array_equal(M, python_method(robot, "mass_matrix")(q))
    # FD with the loop (which uses M) unchanged bit for bit, and the loop acceleration closes
    qdd = robot.forward_dynamics(q, v, tau)
    assert np.array_equal(qdd, before)
    _, G, _ = robot.loop_state(q, v)
    multipliers = robot.multipliers()
    # the tree's inverse dynamics at qdd = 0 (passive forces included)
    b = robot.bias_forces(q, v) + robot.damping_forces(v)
    # M qdd + b = tau + G^T lambda (the multipliers' definition), rel. 1e-9
    residual = M @ qdd + b - tau - G.T @ multipliers
    assert np.abs(residual).max() <= 1e-9 * max(1.0, np.abs(tau).max())
