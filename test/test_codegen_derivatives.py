"""Generated derivative kernels of codegen=True robots (codegen/derivative_generator.py,
robot/fast_derivatives.GeneratedFastDerivatives, docs/derivatives.md).

References, none of them our own generated code (rnea_derivatives: dtau/dq, dtau/dv, M;
aba_derivatives: dqdd/dq, dqdd/dv, M^-1 at qdd = FD(q, v, tau)):
- Pinocchio's computeRNEADerivatives / computeABADerivatives on example-robot-data robots (ur5,
  panda: fixed base, nv 6 and 9), q/v mapped by joint name (test/oracle.py):
  max |ours - Pinocchio| <= 1e-10 ||Pinocchio||_2 (the issue's tolerance; both sides are sums
  of products over the tree, measured agreement ~1e-15 of the norm). The generated kernel is
  checked called directly (so a kernel that always failed over to the generic one could not
  pass) and through the robot's C-level path (its counters show the calls took it);
- the generic kernels (kernels/derivatives.py) on the same robots and on three small random
  trees (nv 6-8) that together have every joint type (spherical, planar, free in mid-tree,
  prismatic...) and a floating base, two with URDF damping and friction: the same recursion on the same constants in another order of floating-point
  operations, so they agree to round-off: CODEGEN_RTOL = 1e-12 of the matrix norm, as
  test_codegen.py's generated-vs-generic checks (the forward derivatives, -M^-1 dtau/dx and
  M^-1, are solves with M: their round-off is the inputs' times cond(M), so the forward checks
  allow CODEGEN_RTOL max(1, cond(M) / 1e4)).
solo12 (floating base, branched, nv 18 > derivative_generator.MAX_DOFS = 12) is the large-robot
case: no generated derivatives (their compile time grows too fast with nv: derivative_generator's
MAX_DOFS comment), the generic kernels' C entries, checked against Pinocchio.
The robots are those test_codegen.py builds (codegen=True, passive forces off for the Pinocchio
cases, on for the random trees): their generated modules and compiled kernels come from the same
on-disk cache.
"""
from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
from conftest import require_fastcall
from derivative_cases import PIN_RTOL, ExampleRobot, assert_matrix_close
from oracle import layout, parse_urdf, random_state
from random_trees import random_tree_xml

import mbd_ros
from mbd_ros.codegen.derivative_generator import MAX_DOFS
from mbd_ros.robot.fast_derivatives import FastDerivatives, GeneratedFastDerivatives

CODEGEN_RTOL = 1e-12
N_STATES = 4
NAMES = ("dtau_dq", "dtau_dv", "dtau_dqdd")

ROBOTS = ("ur5", "panda")      # nv <= MAX_DOFS: generated derivatives
LARGE_ROBOT = "solo12"         # nv 18 > MAX_DOFS: the generic kernels serve
# random trees (seed, floating base, links; random_trees.random_tree_xml), four links each, small
# because the cold compile of the unrolled kernels grows fast with nv: tree 56 (floating base,
# nv 8: revolute, prismatic, fixed), tree 221 (fixed base, nv 7: free mid-tree, continuous,
# fixed), both with damping and friction, and tree 9 (fixed base, nv 6: spherical, planar,
# fixed) together have every joint type
TREE_CASES = [(56, True, 4), (221, False, 4), (9, False, 4)]
PASSIVE_TREES = [(56, True, 4), (221, False, 4)]


class Case(ExampleRobot):
    """A codegen robot (`generated`) and the generic robot of the same URDF (`generic`), with
    Pinocchio's model."""

    def __init__(self, pin, erd_dir, key):
        super().__init__(pin, erd_dir, key, codegen=True)
        self.generic = self.robot


@pytest.fixture(scope="module", params=ROBOTS)
def case(request, pin, erd_dir):
    return Case(pin, erd_dir, request.param)


def generated_kernel(robot, name="rnea_derivatives"):
    return robot.tree.kernels.get(name)


FORWARD_NAMES = ("dqdd_dq", "dqdd_dv", "dqdd_dtau")


def forward_rtol(robot, q):
    return CODEGEN_RTOL * max(1.0, np.linalg.cond(robot.mass_matrix(q)) / 1e4)


def test_generated_forward_kernel_vs_compute_aba_derivatives(case, pin):
    """The generated aba_derivatives called directly against Pinocchio."""
    o, nv = case.oracle, case.generated.nv
    kernel = generated_kernel(case.generated, "aba_derivatives")
    for k in range(N_STATES):
        q, v, tau = case.state()
        block = np.full((3, nv, nv), np.nan)
        assert kernel(q, v, tau, block) == 0
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(tau))
        minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T
        for name, ours, theirs in zip(FORWARD_NAMES, block, (o.data.ddq_dq, o.data.ddq_dv, minv)):
            assert_matrix_close(ours, case.matrix(theirs),
                                f"{case.key} state {k}: generated {name} vs computeABADerivatives",
                                PIN_RTOL)


# ---- against Pinocchio ---------------------------------------------------------------------------

def test_generated_kernel_vs_compute_rnea_derivatives(case, pin):
    """The generated kernel called directly (status 0, its (3, nv, nv) block) against Pinocchio."""
    o, nv = case.oracle, case.generated.nv
    kernel = generated_kernel(case.generated)
    for k in range(N_STATES):
        q, v, a = case.state()
        block = np.full((3, nv, nv), np.nan)
        assert kernel(q, v, a, block) == 0
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(a))
        for name, ours, theirs in zip(NAMES, block, ref):
            assert_matrix_close(ours, case.matrix(theirs),
                                f"{case.key} state {k}: generated {name} vs computeRNEADerivatives",
                                PIN_RTOL)


def test_c_level_path_runs_the_generated_kernel(case, pin):
    """From the second call, robot.inverse_dynamics_derivatives and
    forward_dynamics_derivatives of a codegen robot are the generated module's C entries (their
    KernelCalls count the calls): results against Pinocchio."""
    require_fastcall()
    r, o = case.generated, case.oracle
    q, v, x = case.state()
    for _ in range(2):
        r.inverse_dynamics_derivatives(q, v, x)
        r.forward_dynamics_derivatives(q, v, x)
    fast = r._fast_derivatives
    assert isinstance(fast, GeneratedFastDerivatives) and fast.rnea_c is not None
    assert r.call_paths()["inverse_dynamics_derivatives"].startswith("generated rnea_derivatives")
    assert r.call_paths()["forward_dynamics_derivatives"].startswith("generated aba_derivatives")
    before = fast.rnea_c.counts()[0], fast.aba_c.counts()[0]
    for k in range(N_STATES):
        q, v, x = case.state()
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        for name, ours, theirs in zip(NAMES, r.inverse_dynamics_derivatives(q, v, x), ref):
            assert_matrix_close(ours, case.matrix(theirs), f"{case.key} C path {k}: {name}",
                                PIN_RTOL)
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T
        for name, ours, theirs in zip(("dqdd_dq", "dqdd_dv", "dqdd_dtau"),
                                      r.forward_dynamics_derivatives(q, v, x),
                                      (o.data.ddq_dq, o.data.ddq_dv, minv)):
            assert_matrix_close(ours, case.matrix(theirs), f"{case.key} C path {k}: {name}",
                                PIN_RTOL)
    assert (fast.rnea_c.counts()[0], fast.aba_c.counts()[0]) == (before[0] + N_STATES,
                                                                before[1] + N_STATES), \
        "calls did not take the C path"


# ---- against the generic kernels -----------------------------------------------------------------

def test_generated_equals_generic(case):
    for k in range(N_STATES):
        q, v, a = case.state()
        ours = case.generated.inverse_dynamics_derivatives(q, v, a)
        ref = case.generic.inverse_dynamics_derivatives(q, v, a)
        for name, x, y in zip(NAMES, ours, ref):
            assert_matrix_close(x, y, f"{case.key} state {k}: generated vs generic {name}",
                                CODEGEN_RTOL)
        ours = case.generated.forward_dynamics_derivatives(q, v, a)
        ref = case.generic.forward_dynamics_derivatives(q, v, a)
        for name, x, y in zip(FORWARD_NAMES, ours, ref):
            assert_matrix_close(x, y, f"{case.key} state {k}: generated vs generic {name}",
                                forward_rtol(case.generic, q))


@pytest.mark.parametrize("seed, floating, links", TREE_CASES)
def test_random_trees_every_joint_type_and_passive_forces_equal_generic(seed, floating, links):
    """Spherical, planar, free (mid-tree), prismatic, fixed joints, a floating base and URDF
    damping and smoothed friction (on the diagonal of dtau_dv; PASSIVE_TREES): the generated
    kernels against the generic ones."""
    xml = random_tree_xml(seed, n_links=links)
    generated = mbd_ros.load(xml, floating_base=floating, codegen=True)
    generic = mbd_ros.load(xml, floating_base=floating)
    if (seed, floating, links) in PASSIVE_TREES:
        assert np.any(generic.damping) and np.any(generic.friction), "no passive forces to test"
    assert generated.nv <= MAX_DOFS and generated.tree.kernels.module.RNEA_DERIVATIVES_GENERATED
    slots, nq, nv = layout(parse_urdf(xml), floating)
    rng = np.random.default_rng(seed)
    kernel = generated_kernel(generated)
    for k in range(N_STATES):
        q, v = random_state(slots, nq, nv, rng)
        a = rng.standard_normal(nv)
        block = np.full((3, nv, nv), np.nan)
        assert kernel(q, v, a, block) == 0
        ref = generic.inverse_dynamics_derivatives(q, v, a)
        for name, x, y in zip(NAMES, block, ref):
            assert_matrix_close(x, y, f"tree{seed} state {k}: generated vs generic {name}",
                                CODEGEN_RTOL)
        tau = rng.standard_normal(nv)
        assert generated_kernel(generated, "aba_derivatives")(q, v, tau, block) == 0
        ref = generic.forward_dynamics_derivatives(q, v, tau)
        for name, x, y in zip(FORWARD_NAMES, block, ref):
            assert_matrix_close(x, y, f"tree{seed} state {k}: generated vs generic {name}",
                                forward_rtol(generic, q))


def test_random_trees_cover_every_joint_type():
    types = set()
    for seed, _, links in TREE_CASES:
        types.update(j.type for j in parse_urdf(random_tree_xml(seed, n_links=links)).joints)
    assert types == {"revolute", "continuous", "prismatic", "fixed", "spherical", "floating",
                     "planar"}, types
    assert any(floating for _, floating, _ in TREE_CASES), "no floating-base tree"
    assert set(PASSIVE_TREES) <= set(TREE_CASES)


def test_robots_above_max_dofs_keep_the_generic_kernel(pin, erd_dir):
    """solo12 (nv 18 > MAX_DOFS) gets stubs (status 1, never called): its derivatives run the
    generic kernels' C entries (call_paths says so, the generic FastDerivatives' counters count
    the calls), with the generic robot's results, bit for bit, and Pinocchio's."""
    require_fastcall()
    case = Case(pin, erd_dir, LARGE_ROBOT)
    generated, o = case.generated, case.oracle
    assert generated.nv > MAX_DOFS
    module = generated.tree.kernels.module
    assert not module.RNEA_DERIVATIVES_GENERATED
    assert generated.call_paths()["inverse_dynamics_derivatives"].startswith("generic")
    assert generated.call_paths()["forward_dynamics_derivatives"].startswith("generic")
    nv = generated.nv
    q, v, x = case.state()
    assert module.rnea_derivatives(q, v, x, np.zeros((3, nv, nv))) == 1
    assert module.aba_derivatives(q, v, x, np.zeros((3, nv, nv))) == 1
    for _ in range(2):
        generated.inverse_dynamics_derivatives(q, v, x)
        generated.forward_dynamics_derivatives(q, v, x)
    fast = generated._fast_derivatives
    assert type(fast) is FastDerivatives and fast.rnea_c is not None and fast.aba_c is not None
    before = fast.rnea_c.counts()[0], fast.aba_c.counts()[0]
    for k in range(N_STATES):
        q, v, x = case.state()
        ours = generated.inverse_dynamics_derivatives(q, v, x)
        for a, b in zip(ours, case.generic.inverse_dynamics_derivatives(q, v, x)):
            assert np.array_equal(a, b)
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        for name, a, b in zip(NAMES, ours, ref):
            assert_matrix_close(a, case.matrix(b), f"solo12 state {k}: {name}", PIN_RTOL)
        ours = generated.forward_dynamics_derivatives(q, v, x)
        for a, b in zip(ours, case.generic.forward_dynamics_derivatives(q, v, x)):
            assert np.array_equal(a, b)
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T
        for name, a, b in zip(FORWARD_NAMES, ours, (o.data.ddq_dq, o.data.ddq_dv, minv)):
            assert_matrix_close(a, case.matrix(b), f"solo12 state {k}: {name}", PIN_RTOL)
    assert (fast.rnea_c.counts()[0], fast.aba_c.counts()[0]) == (before[0] + N_STATES,
                                                                before[1] + N_STATES)


# ---- out=, errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["inverse_dynamics_derivatives",
                                    "forward_dynamics_derivatives"])
def test_out_fills_in_place_without_allocating(case, method):
    """1000 calls with out= on the C path: the arrays returned are the outs, with the allocating
    call's values, and tracemalloc's peak stays below one (nv, nv) matrix (an allocated result
    block, even freed at once, would raise it by 3 nv^2 doubles)."""
    require_fastcall()
    r = case.generated
    n = r.nv
    q, v, a = case.state()
    fn = getattr(r, method)
    for _ in range(2):
        fn(q, v, a)
    fast = r._fast_derivatives
    call = fast.rnea_c if method.startswith("inverse") else fast.aba_c
    out = tuple(np.full((n, n), np.nan) for _ in range(3))
    result = fn(q, v, a, out=out)
    assert all(x is y for x, y in zip(result, out))
    for x, y in zip(result, fn(q, v, a)):
        assert np.array_equal(x, y)
    count = call.counts()[0]
    calls = itertools.repeat(None, 1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in calls:
            fn(q, v, a, out=out)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert call.counts()[0] == count + 1000, "out= calls did not take the C path"
    assert peak < 8 * n * n, f"{peak} bytes allocated at once during calls with out="


def test_bad_inputs_raise_the_generic_errors(case):
    """The generated kernel returns status 1 on bad input; the call then takes the general
    path, which names the argument."""
    r = case.generated
    q, v, a = case.state()
    kernel = generated_kernel(r)
    n = r.nv
    assert kernel(q, v, a[:-1], np.zeros((3, n, n))) == 1
    assert kernel(q, v, a, np.zeros((2, n, n))) == 1
    bad = v.copy()
    bad[0] = np.nan
    assert kernel(q, bad, a, np.zeros((3, n, n))) == 1
    for _ in range(3):
        with pytest.raises(ValueError, match="v contains NaN"):
            r.inverse_dynamics_derivatives(q, bad, a)
        with pytest.raises(ValueError, match="qdd must have shape"):
            r.inverse_dynamics_derivatives(q, v, a[:-1])
    # overflow (v^2 ~ 1e400): the generated kernel's finiteness check returns 1, the generic
    # kernel then raises as inverse_dynamics does (first call: general path; then the C path)
    huge = np.full(n, 1e200)
    assert kernel(q, huge, a, np.zeros((3, n, n))) == 1
    for _ in range(3):
        with pytest.raises(ValueError, match="not finite"):
            r.inverse_dynamics_derivatives(q, huge, a)
    forward = generated_kernel(r, "aba_derivatives")
    assert forward(q, v, a[:-1], np.zeros((3, n, n))) == 1
    assert forward(q, bad, a, np.zeros((3, n, n))) == 1
    assert forward(q, v, a, np.zeros((3, n, n - 1))) == 1
    assert forward(q, huge, a, np.zeros((3, n, n))) != 0
    for _ in range(3):
        with pytest.raises(ValueError, match="v contains NaN"):
            r.forward_dynamics_derivatives(q, bad, a)
        with pytest.raises(ValueError, match="tau must have shape"):
            r.forward_dynamics_derivatives(q, v, a[:-1])
        with pytest.raises(ValueError, match="not finite"):
            r.forward_dynamics_derivatives(q, huge, a)
