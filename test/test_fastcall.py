"""C-level entries of forward/inverse dynamics (mbd_ros/fastcall): after the first fast call,
robot.forward_dynamics / inverse_dynamics are KernelCalls that give bit-identical results to the
Python methods, agree with Pinocchio, and hand every other form of call (other types, lengths,
aliasing, f_ext, NaN, read-only out) to the Python method, which converts or raises as before."""
from __future__ import annotations

import copy
import os
import pickle
import threading

import numpy as np
import pytest

import mbd_ros
from mbd_ros import fastcall
from conftest import assert_close, require_fastcall
from test_mimic import GRIPPER


@pytest.fixture(scope="module", autouse=True)
def extension():
    require_fastcall()


def arm_path():
    from pathlib import Path
    return str(Path(mbd_ros.__file__).resolve().parent.parent / "urdf" / "arm7.urdf")


@pytest.fixture(scope="module", params=[False, True], ids=["generic", "codegen"])
def arm(request):
    return mbd_ros.load(arm_path(), passive_forces=False, codegen=request.param)


def state(robot, seed):
    rng = np.random.default_rng(seed)
    return (robot.random_configuration(rng), rng.normal(size=robot.nv),
            rng.normal(size=robot.nv) * 5.0)


def python_method(robot, name):
    """The class's method (what runs without the KernelCall)."""
    return getattr(type(robot), name).__get__(robot)


def test_first_fast_call_installs_kernel_calls_with_identical_results(arm):
    q, v, tau = state(arm, 1)
    out = np.empty(arm.nv)
    for k in range(2):      # installed by the second call
        arm.forward_dynamics(q, v, tau, out=out)
        arm.inverse_dynamics(q, v, out, out=np.empty(arm.nv))
        assert fastcall.installed(arm, "forward_dynamics") == (k == 1)
    assert fastcall.installed(arm, "forward_dynamics")
    assert fastcall.installed(arm, "inverse_dynamics")
    assert not fastcall.installed(arm, "mass_matrix")      # never called yet: not compiled
    for _ in range(2):
        mass = arm.mass_matrix(q, out=np.empty((arm.nv, arm.nv)))
    assert fastcall.installed(arm, "mass_matrix")
    again = arm.mass_matrix(q, out=np.empty((arm.nv, arm.nv)))
    assert np.array_equal(again, mass) and arm.mass_matrix.counts() == (1, 0)
    assert np.array_equal(arm.mass_matrix(list(q)), mass)            # a list: the fallback
    with pytest.raises(ValueError):
        arm.mass_matrix(q, out=np.empty((arm.nv, arm.nv + 1)))
    for seed in range(20):
        q, v, tau = state(arm, seed)
        fast_before = arm.forward_dynamics.counts()[0]
        qdd = arm.forward_dynamics(q, v, tau, out=np.empty(arm.nv))
        assert arm.forward_dynamics.counts()[0] == fast_before + 1      # took the C path
        expected = python_method(arm, "forward_dynamics")(q, v, tau, out=np.empty(arm.nv))
        assert np.array_equal(qdd, expected)
        tau_back = arm.inverse_dynamics(q, v, qdd, out=np.empty(arm.nv))
        assert np.array_equal(tau_back, python_method(arm, "inverse_dynamics")(q, v, qdd))
        assert_close(tau_back, tau, "ID(FD(tau))")


def test_kernel_calls_agree_with_pinocchio(pin, erd_dir, tmp_path):
    path = erd_dir / "ur_description" / "urdf" / "ur5_robot.urdf"
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    for codegen in (False, True):
        robot = mbd_ros.load(str(path), passive_forces=False, codegen=codegen)
        assert robot.compile_c_calls() == ["forward_dynamics", "inverse_dynamics", "mass_matrix"]
        rng = np.random.default_rng(3)
        out = np.empty(robot.nv)
        for _ in range(10):
            q = pin.randomConfiguration(model)
            v, x = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
            assert_close(robot.forward_dynamics(q, v, x, out=out), pin.aba(model, data, q, v, x),
                         "FD vs pin.aba")
            assert_close(robot.inverse_dynamics(q, v, x, out=out), pin.rnea(model, data, q, v, x),
                         "ID vs pin.rnea")
            mass = robot.mass_matrix(q, out=np.empty((robot.nv, robot.nv)))
            expected = pin.crba(model, data, q)
            assert_close(mass, np.triu(expected) + np.triu(expected, 1).T, "M vs pin.crba")
        for name in ("forward_dynamics", "inverse_dynamics", "mass_matrix"):
            assert getattr(robot, name).counts() == (10, 0), name


def test_a_method_bound_before_installation_uses_the_c_entry(tmp_path):
    robot = mbd_ros.load(arm_path(), passive_forces=False)
    fd = robot.forward_dynamics            # the Python method, held by the caller
    q, v, tau = state(robot, 4)
    out = np.empty(robot.nv)
    first = fd(q, v, tau, out=out).copy()
    fd(q, v, tau, out=out)                 # the second call installs the KernelCall
    installed = robot.forward_dynamics
    fast0 = installed.counts()[0]
    for _ in range(3):
        assert np.array_equal(fd(q, v, tau, out=out), first)
    assert installed.counts()[0] == fast0 + 3       # the held method went through the C entry
    assert np.array_equal(fd(list(q), v, tau), first)   # conversions as before


def test_other_calls_take_the_python_method(arm):
    arm.compile_c_calls()
    q, v, tau = state(arm, 7)
    expected = python_method(arm, "forward_dynamics")(q, v, tau)
    fd = arm.forward_dynamics
    _, slow0 = fd.counts()
    cases = [
        ((list(q), v, tau), {"out": np.empty(arm.nv)}),                    # a list
        ((q, v, tau), {}),                                                  # no out
        ((q, v, tau.astype(np.float32)), {"out": np.empty(arm.nv)}),        # float32 input
        ((np.repeat(q, 2)[::2], v, tau), {"out": np.empty(arm.nv)}),        # strided view
        ((q, v, tau, None), {"out": np.empty(arm.nv)}),                     # f_ext positional
        ((q, v, tau), {"f_ext": None, "out": np.empty(arm.nv)}),            # two keywords
        ((q, v, tau, None, np.empty(arm.nv)), {}),                          # out positional
    ]
    for args, kwargs in cases:
        got = fd(*args, **kwargs)
        assert_close(got, expected, f"FD of {[type(a).__name__ for a in args]} {kwargs.keys()}",
                     rtol=1e-6)
    _, slow1 = fd.counts()
    assert slow1 == slow0 + len(cases)       # each went to the Python method
    # out overlapping an input: the kernel refuses (status), the Python method computes privately
    tau_copy = tau.copy()
    assert np.array_equal(fd(q, v, tau_copy, out=tau_copy), expected)
    # outputs the Python method refuses are refused with its error
    readonly = np.empty(arm.nv)
    readonly.flags.writeable = False
    for out in (readonly, np.empty(arm.nv, dtype=np.float32), np.empty(2 * arm.nv)[::2]):
        with pytest.raises(ValueError) as fast_error:
            fd(q, v, tau, out=out)
        with pytest.raises(ValueError) as python_error:
            python_method(arm, "forward_dynamics")(q, v, tau, out=out)
        assert str(fast_error.value) == str(python_error.value)


@pytest.mark.parametrize("bad, message", [
    (lambda q, v, tau: (q, v, np.r_[tau[:-1], np.nan]), "NaN"),
    (lambda q, v, tau: (q[:-1], v, tau), "q"),
    (lambda q, v, tau: (q, v, np.r_[tau, 1.0]), "tau"),
])
def test_bad_inputs_raise_the_python_methods_errors(arm, bad, message):
    arm.compile_c_calls()
    args = bad(*state(arm, 11))
    with pytest.raises(ValueError) as fast_error:
        arm.forward_dynamics(*args, out=np.empty(arm.nv))
    with pytest.raises(ValueError) as python_error:
        python_method(arm, "forward_dynamics")(*args, out=np.empty(arm.nv))
    assert str(fast_error.value) == str(python_error.value)
    assert message in str(fast_error.value)


def test_external_wrenches_go_through_the_python_method(arm):
    arm.compile_c_calls()
    q, v, tau = state(arm, 5)
    link = arm.link_names[-1]
    f_ext = {link: np.array([1.0, -2.0, 0.5, 0.1, 0.0, 0.3])}
    got = arm.forward_dynamics(q, v, tau, f_ext=f_ext, out=np.empty(arm.nv))
    # the same load as generalized forces: tau + J^T f (tested against Pinocchio elsewhere);
    # here: different from the unloaded result and equal to the Python method's
    assert not np.allclose(got, arm.forward_dynamics(q, v, tau, out=np.empty(arm.nv)))
    assert np.array_equal(got, python_method(arm, "forward_dynamics")(q, v, tau, f_ext=f_ext))


def test_force_callbacks_drop_the_kernel_calls():
    robot = mbd_ros.load(arm_path(), passive_forces=False)
    assert robot.compile_c_calls() == ["forward_dynamics", "inverse_dynamics", "mass_matrix"]
    q, v, tau = state(robot, 2)
    free = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv)).copy()
    push = np.linspace(0.5, 2.0, robot.nv)
    robot.add_force(lambda t, q, v: push)
    assert not fastcall.installed(robot, "forward_dynamics")
    pushed = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
    plain = mbd_ros.load(arm_path(), passive_forces=False)
    assert_close(pushed, plain.forward_dynamics(q, v, tau + push), "FD with the callback")
    assert not np.allclose(pushed, free)
    assert robot.compile_c_calls() == []          # never re-installed while forces apply


def test_subclasses_keep_their_own_methods():
    robot = mbd_ros.load(GRIPPER, passive_forces=False, mimic=True)   # class swapped after init
    q = robot.neutral()
    for _ in range(3):
        qdd = robot.forward_dynamics(q, np.zeros(robot.nv), np.zeros(robot.nv),
                                     out=np.empty(robot.nv))
    assert not fastcall.installed(robot, "forward_dynamics")
    assert qdd[2] == pytest.approx(-1.5 * qdd[1], abs=1e-12)     # the mimic coupling holds


def test_threads_share_a_robot_safely():
    robot = mbd_ros.load(arm_path(), passive_forces=False)
    robot.compile_c_calls()
    states = [state(robot, s) for s in range(8)]
    expected = [python_method(robot, "forward_dynamics")(*s) for s in states]
    errors = []

    def worker(k):
        out = np.empty(robot.nv)
        for i in range(2000):
            s = (k + i) % len(states)
            robot.forward_dynamics(*states[s], out=out)
            if not np.array_equal(out, expected[s]):
                errors.append(s)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_kernel_calls_cannot_be_copied():
    robot = mbd_ros.load(arm_path(), passive_forces=False)
    robot.compile_c_calls()
    with pytest.raises(TypeError, match="bound to one robot"):
        pickle.dumps(robot.forward_dynamics)
    with pytest.raises(TypeError, match="bound to one robot"):
        copy.copy(robot.forward_dynamics)


def test_generated_robot_uses_its_generated_entries():
    robot = mbd_ros.load(arm_path(), passive_forces=False, codegen=True)
    assert robot.tree.kind == "generated"
    robot.compile_c_calls()
    module = robot.tree.kernels.module
    assert robot.forward_dynamics.fallback.__func__ is mbd_ros.Robot.forward_dynamics
    assert hasattr(module, "forward_dynamics_c") and hasattr(module, "forward_dynamics_jit")
