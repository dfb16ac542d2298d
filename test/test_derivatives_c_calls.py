"""The derivatives' methods replaced on the instance by their C-level KernelCalls
(robot/fast_derivatives.py METHODS, KernelCall(blocks=True) in mbd_ros/fastcall/_fastcall.c) and
the reuse of the last result's block when nothing holds it any more.

References: Pinocchio's computeRNEADerivatives / computeABADerivatives (ur5, fixed base; solo12,
floating base and branched; q/v mapped by joint name, test/oracle.py), max |ours - Pinocchio|
<= 1e-10 ||Pinocchio||_2 (as test_derivatives.py); the general (Python, locked) path of the same
methods for the forms the C call hands back to it; a closed form for a linear spring callback
(tau = ID - f with f = -k q: dtau/dq gains k I).
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from conftest import require_fastcall
from derivative_cases import PIN_RTOL, ExampleRobot


ROBOTS = ("ur5", "solo12")
METHODS = ("inverse_dynamics_derivatives", "forward_dynamics_derivatives")


class Case(ExampleRobot):
    def assert_matches(self, method, ours, q, v, x, what):
        for k, (a, b) in enumerate(zip(ours, self.reference(method, q, v, x))):
            err = np.max(np.abs(a - b))
            assert err <= PIN_RTOL * max(np.linalg.norm(b, 2), 1e-300), \
                f"{self.key} {method} {what}: matrix {k} off Pinocchio by {err:.2e}"


@pytest.fixture(params=ROBOTS)
def case(request, pin, erd_dir):
    require_fastcall()
    return Case(pin, erd_dir, request.param)


def installed_calls(case):
    """Two calls of each method install the KernelCalls; returns them (inverse, forward)."""
    from mbd_ros import fastcall
    r = case.robot
    q, v, x = case.state()
    for _ in range(2):
        for method in METHODS:
            getattr(r, method)(q, v, x)
    calls = tuple(r.__dict__.get(method) for method in METHODS)
    for method, call in zip(METHODS, calls):
        assert isinstance(call, fastcall.KernelCall), f"{method} not replaced by its KernelCall"
    fast = r._fast_derivatives
    assert calls == (fast.rnea_c, fast.aba_c)
    return calls


@pytest.mark.parametrize("method", METHODS)
def test_replaced_methods_vs_pinocchio(case, method):
    """The instance's KernelCall serves f(q, v, x) and f(q, v, x, out=outs) in C (its fast count
    grows by one per call, its fallback count not at all): values against Pinocchio, out= filled
    and returned, out=None a new result."""
    call = installed_calls(case)[METHODS.index(method)]
    r = case.robot
    fn = getattr(r, method)
    n = r.nv
    fast, slow = call.counts()
    for k in range(3):
        q, v, x = case.state()
        case.assert_matches(method, fn(q, v, x), q, v, x, f"state {k}")
        outs = tuple(np.full((n, n), np.nan) for _ in range(3))
        result = fn(q, v, x, out=outs)
        assert all(a is b for a, b in zip(result, outs))
        case.assert_matches(method, outs, q, v, x, f"state {k}, out=")
        case.assert_matches(method, fn(q, v, x, out=None), q, v, x, f"state {k}, out=None")
    assert call.counts() == (fast + 9, slow)


@pytest.mark.parametrize("method", METHODS)
def test_a_result_still_held_is_never_reused(case, method):
    """The block of a result is reused only when nothing else holds it: a kept result, a slice of
    one of its matrices, its block reached through .base, a weak reference to that block, or a
    block made read-only keep their values (Pinocchio's at their own state) through later calls,
    and each new result is writable and right for its state."""
    installed_calls(case)
    fn = getattr(case.robot, method)
    states = [case.state() for _ in range(6)]
    kept = fn(*states[0])
    part = fn(*states[1])[1][:, :3]                     # a view of a view: holds the block
    base = fn(*states[2])[2].base                       # the block itself
    ref = weakref.ref(fn(*states[3])[0].base)           # a weak reference only
    frozen = fn(*states[4])
    frozen[0].base.flags.writeable = False
    del frozen
    gc.collect()
    for k in range(4):
        latest = fn(*states[5])
        case.assert_matches(method, latest, *states[5], f"new result {k}")
        assert all(m.flags.writeable for m in latest), "a reused block came back read-only"
    case.assert_matches(method, kept, *states[0], "kept result")
    ref_part = case.reference(method, *states[1])[1]
    assert np.max(np.abs(part - ref_part[:, :3])) <= PIN_RTOL * np.linalg.norm(ref_part, 2), \
        "a slice of a result changed"
    case.assert_matches(method, tuple(base), *states[2], "block held through .base")
    held = ref()
    if held is not None:   # alive only while the KernelCall keeps it as its spare
        case.assert_matches(method, tuple(held), *states[3], "block under a weak reference")


@pytest.mark.parametrize("method", METHODS)
def test_other_forms_go_to_the_method(case, method):
    """Keywords other than out, lists, a list as out, and bad vectors are handed to the class's
    method (the KernelCall's fallback count grows): the same values, the documented errors."""
    call = installed_calls(case)[METHODS.index(method)]
    r = case.robot
    fn = getattr(r, method)
    third = "qdd" if method.startswith("inverse") else "tau"
    q, v, x = case.state()
    fast, slow = call.counts()
    case.assert_matches(method, fn(q=q, v=v, **{third: x}), q, v, x, "keywords")
    case.assert_matches(method, fn(list(q), list(v), list(x)), q, v, x, "lists")
    case.assert_matches(method, fn(q, v, x, f_ext=None), q, v, x, "f_ext=None")
    n = r.nv
    outs = [np.zeros((n, n)) for _ in range(3)]
    fn(q, v, x, out=outs)
    case.assert_matches(method, outs, q, v, x, "out as a list")
    with pytest.raises(ValueError, match=f"{third} must have shape"):
        fn(q, v, x[:-1])
    with pytest.raises(ValueError, match="v contains NaN"):
        fn(q, np.full(n, np.nan), x)
    assert call.counts()[1] >= slow + 6, "the other forms did not go to the method"


def test_add_force_removes_the_c_calls(pin, erd_dir):
    """A callback attached after the KernelCalls were installed removes them (they do not
    evaluate callbacks): with a linear spring f = -k q on the fixed-base ur5 (q = the joint
    angles), tau = ID - f, so dtau/dq = dID/dq + k I and dtau/dv, M unchanged (the callback's
    part by central differences: exact for a linear f up to round-off eps k |q| / h ~ 1e-10 k)."""
    require_fastcall()
    case = Case(pin, erd_dir, "ur5")
    installed_calls(case)
    r = case.robot
    q, v, x = case.state()
    before = tuple(m.copy() for m in r.inverse_dynamics_derivatives(q, v, x))
    k = 7.0
    r.add_force(lambda t, q_, v_: -k * q_)
    for method in METHODS:
        assert method not in r.__dict__, f"{method}: KernelCall left after add_force"
    after = r.inverse_dynamics_derivatives(q, v, x)
    tol = 1e-8 * k
    assert np.max(np.abs(after[0] - (before[0] + k * np.eye(r.nv)))) <= tol
    assert np.max(np.abs(after[1] - before[1])) <= tol
    assert np.max(np.abs(after[2] - before[2])) <= tol


@pytest.mark.parametrize("method", METHODS)
def test_keeping_the_previous_result_allocates_no_block(pin, erd_dir, method):
    """A caller that holds its previous result while making the next call (prev = f(...) in a
    loop) reuses the other of the KernelCall's two spare blocks: over 300 such calls on solo12
    (nv 18, a (3, 18, 18) block = 7776 bytes) tracemalloc's peak stays below a third of one
    block (new blocks would raise it by at least one; the matrices' array objects and the tuple
    are a few hundred bytes), and the last two results are Pinocchio's at their states."""
    import tracemalloc
    require_fastcall()
    case = Case(pin, erd_dir, "solo12")
    installed_calls(case)
    fn = getattr(case.robot, method)
    states = [case.state() for _ in range(2)]
    n = case.robot.nv
    for k in range(3):   # the second spare is allocated here, once
        prev = fn(*states[k % 2])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for k in range(300):
            prev = fn(*states[k % 2])   # prev holds the last result during the call
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 8 * n * n, f"{peak} bytes allocated at once: a new block per call"
    last = prev
    prev = fn(*states[0])
    case.assert_matches(method, prev, *states[0], "latest")
    case.assert_matches(method, last, *states[1], "previous, held during the call")


def test_add_force_between_the_plain_test_and_the_install_keeps_the_callback(pin, erd_dir):
    """The interleaving of two threads, replayed in one: thread A passed the method's lock-free
    `_plain` test and goes on to install the KernelCalls (its second call, FastDerivatives.inverse),
    while thread B's add_force (locked: forces set, then drop_c_calls) ran in between. The install
    must not put the KernelCalls (which do not evaluate callbacks) on the robot after B dropped
    them: with a linear spring f = -k q on the fixed-base ur5 the method's dtau/dq is then
    dID/dq + k I, dID/dq from Pinocchio (tolerance PIN_RTOL of its norm plus the callback's
    central differences, eps k |q| / h ~ 1e-10 k, as test_add_force_removes_the_c_calls)."""
    require_fastcall()
    case = Case(pin, erd_dir, "ur5")
    r = case.robot
    q, v, x = case.state()
    r.inverse_dynamics_derivatives(q, v, x)   # first call: makes the FastDerivatives
    fast = r._fast_derivatives
    while fast.calls < fast.INSTALL_AT - 1:   # the calls before the installing one
        r.inverse_dynamics_derivatives(q, v, x)
    assert fast.rnea_c is None and "inverse_dynamics_derivatives" not in r.__dict__
    k = 7.0
    r.add_force(lambda t, q_, v_: -k * q_)    # thread B
    fast.inverse(q, v, x)                     # thread A, past its _plain test: installs
    for method in METHODS:
        assert method not in r.__dict__, f"{method}: KernelCall installed after add_force"
    ours = r.inverse_dynamics_derivatives(q, v, x)
    ref = case.reference("inverse_dynamics_derivatives", q, v, x)
    tol = PIN_RTOL * np.linalg.norm(ref[0], 2) + 1e-8 * k
    assert np.max(np.abs(ours[0] - (ref[0] + k * np.eye(r.nv)))) <= tol, "callback's k I lost"
    assert np.max(np.abs(ours[1] - ref[1])) <= PIN_RTOL * np.linalg.norm(ref[1], 2) + 1e-8 * k
