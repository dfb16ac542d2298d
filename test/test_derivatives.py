"""Analytic derivatives of the dynamics: Robot.inverse_dynamics_derivatives and
Robot.forward_dynamics_derivatives (kernels/derivatives.py, docs/derivatives.md).

References, none of them our own derivative code:
- Pinocchio's computeRNEADerivatives / computeABADerivatives on example-robot-data robots (ur5,
  panda: fixed base; solo12: floating base, branched), with and without external wrenches, q/v
  mapped by joint name (test/oracle.py), free-flyer q = [x y z qx qy qz qw] in both;
  max |ours - Pinocchio| <= 1e-10 ||Pinocchio||_2 (both sides are sums of products over the tree
  and backward-stable M^-1 solves: measured agreement 1e-16-1e-13 of the norm);
- central finite differences of our inverse/forward dynamics on the tangent space
  (q (+) h e_k = robot.integrate(q, h e_k, 1)) where Pinocchio has no counterpart: URDF damping
  and smoothed friction, external wrenches, force elements, spherical / planar / free joints
  inside random trees. Error bound of a central difference with step h:
  h^2 / 6 |f'''| + eps |f| / h per entry; with the dynamics' derivatives of every order of the size
  of its values on these unit-scale robots, the tolerance is FD_SAFETY (h^2 + eps / h) S with S
  the largest of |tau|, |analytic matrix| (max-abs) and 1. h = 1e-5 makes it ~1e-8 S (measured
  use: at most 0.003 of it for the inverse dynamics, 0.08 for the forward dynamics, whose M^-1
  amplifies the differences' round-off);
- identities: dtau/dqdd = mass_matrix(q), dqdd/dtau M = 1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import EPS, _missing_oracle
from derivative_cases import EXAMPLE_ROBOTS, PIN_RTOL, ExampleRobot, assert_matrix_close
from random_trees import random_tree_xml

import mbd_ros

ROOT = Path(__file__).resolve().parent.parent
ARM = ROOT / "urdf" / "arm7.urdf"           # damping and Coulomb friction on every joint

FD_STEP = 1e-5
FD_SAFETY = 100.0
N_STATES = 4

ROBOTS = EXAMPLE_ROBOTS


class Case(ExampleRobot):
    """One example robot (passive forces off: Pinocchio has none) and its Pinocchio oracle."""


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request, pin, erd_dir):
    return Case(pin, erd_dir, request.param)


def some_link_wrenches(robot, rng, k=4):
    links = rng.choice(robot.link_names, size=min(k, len(robot.link_names)), replace=False)
    return {str(name): rng.standard_normal(6) * 5.0 for name in links}


# ---- against Pinocchio ---------------------------------------------------------------------------

def test_inverse_dynamics_derivatives_vs_pinocchio(case, pin):
    o = case.oracle
    for k in range(N_STATES):
        q, v, a = case.state()
        dq, dv, da = case.robot.inverse_dynamics_derivatives(q, v, a)
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(a))
        for name, ours, theirs in zip(("dtau_dq", "dtau_dv", "dtau_dqdd"), (dq, dv, da), ref):
            assert_matrix_close(ours, case.matrix(theirs),
                                f"{case.key} state {k}: {name} vs computeRNEADerivatives")


def test_inverse_dynamics_derivatives_with_external_wrenches_vs_pinocchio(case, pin):
    """Link wrenches (welded links included) carried by their links, as Pinocchio's fext in the
    joint frames."""
    o = case.oracle
    for k in range(N_STATES):
        q, v, a = case.state()
        f = some_link_wrenches(case.robot, case.rng)
        dq, dv, da = case.robot.inverse_dynamics_derivatives(q, v, a, f_ext=f)
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(a),
                                         o.fext(f))
        for name, ours, theirs in zip(("dtau_dq", "dtau_dv", "dtau_dqdd"), (dq, dv, da), ref):
            assert_matrix_close(ours, case.matrix(theirs),
                                f"{case.key} state {k}, f_ext on {sorted(f)}: {name} vs "
                                "computeRNEADerivatives")


def test_forward_dynamics_derivatives_vs_pinocchio(case, pin):
    o = case.oracle
    for k in range(N_STATES):
        q, v, tau = case.state()
        for f in (None, some_link_wrenches(case.robot, case.rng)):
            dq, dv, dtau = case.robot.forward_dynamics_derivatives(q, v, tau, f_ext=f)
            args = (o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(tau))
            if f is not None:
                args += (o.fext(f),)
            pin.computeABADerivatives(*args)
            minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T   # upper triangle filled
            what = f"{case.key} state {k}" + (f", f_ext on {sorted(f)}" if f else "")
            assert_matrix_close(dq, case.matrix(o.data.ddq_dq), f"{what}: dqdd_dq vs pin")
            assert_matrix_close(dv, case.matrix(o.data.ddq_dv), f"{what}: dqdd_dv vs pin")
            assert_matrix_close(dtau, case.matrix(minv), f"{what}: dqdd_dtau vs pin Minv")


def test_c_level_path_vs_pinocchio_and_its_fallbacks(case, pin):
    """From the second call without f_ext, the derivatives of a plain tree are one C-level kernel
    call (robot/fast_derivatives.py): its results against Pinocchio, the calls counted as fast,
    out= filled in place, and unfitting inputs or outs sent to the general path (converted, or
    the documented error)."""
    from mbd_ros import fastcall
    assert fastcall.AVAILABLE, "the C extension mbd_ros.fastcall._fastcall is not built"
    r, o = case.robot, case.oracle
    q, v, x = case.state()
    for _ in range(2):
        r.inverse_dynamics_derivatives(q, v, x)
        r.forward_dynamics_derivatives(q, v, x)
    fast = r._fast_derivatives
    assert fast.rnea_c is not None and fast.aba_c is not None
    before = fast.rnea_c.counts()[0], fast.aba_c.counts()[0]
    for k in range(N_STATES):
        q, v, x = case.state()
        ref = pin.computeRNEADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        for name, ours, theirs in zip(("dtau_dq", "dtau_dv", "dtau_dqdd"),
                                      r.inverse_dynamics_derivatives(q, v, x), ref):
            assert_matrix_close(ours, case.matrix(theirs), f"{case.key} C path {k}: {name}")
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        minv = np.triu(o.data.Minv) + np.triu(o.data.Minv, 1).T
        for name, ours, theirs in zip(("dqdd_dq", "dqdd_dv", "dqdd_dtau"),
                                      r.forward_dynamics_derivatives(q, v, x),
                                      (o.data.ddq_dq, o.data.ddq_dv, minv)):
            assert_matrix_close(ours, case.matrix(theirs), f"{case.key} C path {k}: {name}")
    assert (fast.rnea_c.counts()[0], fast.aba_c.counts()[0]) == (before[0] + N_STATES,
                                                                before[1] + N_STATES)
    # out= on the C path: filled in place (the arrays returned), the allocating form's values
    n = r.nv
    for method, call in (("inverse_dynamics_derivatives", fast.rnea_c),
                         ("forward_dynamics_derivatives", fast.aba_c)):
        fn = getattr(r, method)
        out = tuple(np.full((n, n), np.nan) for _ in range(3))
        count = call.counts()[0]
        result = fn(q, v, x, out=out)
        assert call.counts()[0] == count + 1, f"{method}: out= did not take the C path"
        assert all(a is b for a, b in zip(result, out)), method
        for a, b in zip(result, fn(q, v, x)):
            assert np.array_equal(a, b), method
        # an out overlapping q or another out: the general path's error, out of the C path
        buffer = np.zeros(3 * n * n + r.nq)
        q_shared = buffer[:r.nq]
        q_shared[:] = q
        shared = (buffer[:n * n].reshape(n, n), out[1], out[2])
        with pytest.raises(ValueError, match=r"out\[0\] must not share memory"):
            fn(q_shared, v, x, out=shared)
        with pytest.raises(ValueError, match=r"out\[2\] must not share memory"):
            fn(q, v, x, out=(out[0], out[1], out[0]))
    # the general path: lists converted (same results), bad vectors named
    for method in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
        fn = getattr(r, method)
        for a, b in zip(fn(list(q), list(v), list(x)), fn(q, v, x)):
            assert_matrix_close(a, b, f"{case.key} {method}: list inputs", rtol=1e-15)
        third = "qdd" if method.startswith("inverse") else "tau"
        with pytest.raises(ValueError, match=f"{third} must have shape"):
            fn(q, v, x[:-1])
        with pytest.raises(ValueError, match="v contains NaN"):
            fn(q, np.full(r.nv, np.nan), x)


def test_c_level_path_from_threads_gives_each_call_its_own_results(case, pin):
    """The C path runs lock-free on one private workspace: calls from several threads (each one
    GIL-holding kernel call) must each return the derivatives of their own state."""
    import threading
    r, o = case.robot, case.oracle
    states = [case.state() for _ in range(4)]
    expected = []
    for q, v, x in states:
        pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x))
        expected.append(case.matrix(o.data.ddq_dq).copy())
    r.forward_dynamics_derivatives(*states[0])
    r.forward_dynamics_derivatives(*states[0])
    assert r._fast_derivatives.aba_c is not None
    errors = []

    def worker(k):
        q, v, x = states[k]
        for _ in range(200):
            dq, _, _ = r.forward_dynamics_derivatives(q, v, x)
            err = np.max(np.abs(dq - expected[k]))
            if err > PIN_RTOL * np.linalg.norm(expected[k], 2):
                errors.append((k, err))
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"{case.key}: a thread got another state's derivatives: {errors[:3]}"


def test_singular_mass_matrix_raises_as_forward_dynamics():
    """A joint that moves no inertia: M is singular; the forward derivatives (general and C
    path, whose pivots are tested relative to M_kk) raise forward_dynamics' ValueError, and
    mass_matrix_inverse (the same factor) one naming the joint."""
    import warnings
    xml = """<?xml version="1.0"?><robot name="s"><link name="base"/>
      <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
      <link name="b"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
      <joint name="ja" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="jb" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0"/>
        <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(xml)
    q, z = robot.neutral(), np.zeros(robot.nv)
    with pytest.raises(ValueError) as reference:
        robot.forward_dynamics(q, z, z)
    assert "joint 'jb'" in str(reference.value)
    for _ in range(3):   # the general path, then the C path's fallback
        with pytest.raises(ValueError) as error:
            robot.forward_dynamics_derivatives(q, z, z)
        assert str(error.value) == str(reference.value)
    for _ in range(3):   # mass_matrix_inverse: the same factor's pivot test (kernels/minverse.py)
        with pytest.raises(ValueError, match="joint 'jb'"):
            robot.mass_matrix_inverse(q)


def test_overflow_raises_not_finite_on_both_paths():
    """v = 1e200 overflows the products (v^2): the kernels' finiteness checks (four running sums
    over the matrices) must see it, on the general path and the C path, as inverse_dynamics."""
    robot = mbd_ros.load(str(ARM))
    q, v, x = robot.neutral(), np.full(robot.nv, 1e200), np.zeros(robot.nv)
    with pytest.raises(ValueError, match="not finite") as reference:
        robot.inverse_dynamics(q, v, x)
    for method in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
        for _ in range(3):
            with pytest.raises(ValueError) as error:
                getattr(robot, method)(q, v, x)
            assert str(error.value) == str(reference.value), method


# ---- central differences on the tangent space ----------------------------------------------------

def tangent_differences(robot, fn, q, v, x, h=FD_STEP):
    """(d fn/dq, d fn/dv, d fn/dx) of fn(q, v, x) -> (nv,) by central differences, q perturbed on
    the tangent space with robot.integrate."""
    nv = robot.nv
    cols = ([], [], [])
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        cols[0].append(fn(robot.integrate(q, e, 1.0), v, x) - fn(robot.integrate(q, -e, 1.0), v, x))
        cols[1].append(fn(q, v + e, x) - fn(q, v - e, x))
        cols[2].append(fn(q, v, x + e) - fn(q, v, x - e))
    return tuple(np.array(c).T / (2.0 * h) for c in cols)


def assert_matches_differences(analytic, differences, value, what, h=FD_STEP):
    scale = max(1.0, float(np.max(np.abs(value))),
                max(float(np.max(np.abs(a))) for a in analytic))
    tol = FD_SAFETY * (h * h + EPS / h) * scale
    for name, a, d in zip(("d/dq", "d/dv", "d/dx"), analytic, differences):
        err = np.abs(a - d)
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        assert err[worst] <= tol, (f"{what} {name}: |analytic - central difference| "
                                   f"{err[worst]:.3e} > {tol:.2e} at {worst}: analytic "
                                   f"{a[worst]!r}, difference {d[worst]!r}")


def away_from_zero(rng, n):
    """Velocities with |v_k| >= 0.2: the URDF friction tanh(v / 1e-3) is flat there (its third
    derivative, which the central difference's error bound needs, is below 1e-100)."""
    return np.sign(rng.standard_normal(n)) * (0.2 + np.abs(rng.standard_normal(n)))


def check_against_differences(robot, q, v, x, f_ext, what):
    def inverse(q, v, qdd):
        return robot.inverse_dynamics(q, v, qdd, f_ext=f_ext)

    def forward(q, v, tau):
        return robot.forward_dynamics(q, v, tau, f_ext=f_ext)

    analytic = robot.inverse_dynamics_derivatives(q, v, x, f_ext=f_ext)
    assert_matches_differences(analytic, tangent_differences(robot, inverse, q, v, x),
                               inverse(q, v, x), f"{what}: inverse dynamics")
    analytic = robot.forward_dynamics_derivatives(q, v, x, f_ext=f_ext)
    assert_matches_differences(analytic, tangent_differences(robot, forward, q, v, x),
                               forward(q, v, x), f"{what}: forward dynamics")


@pytest.mark.parametrize("friction_velocity", [1e-3, 0.5])
def test_damping_friction_and_external_wrenches_vs_differences(friction_velocity):
    """arm7: damping and Coulomb friction on every joint; friction_velocity 0.5 puts the
    smoothed friction's slope (1 - tanh^2) / v_s in play at unit velocities."""
    robot = mbd_ros.load(str(ARM), friction_velocity=friction_velocity)
    assert np.any(robot.damping > 0) and np.any(robot.friction > 0)
    rng = np.random.default_rng(3)
    for k in range(3):
        q = robot.random_configuration(rng)
        v = away_from_zero(rng, robot.nv) if friction_velocity < 0.1 else rng.standard_normal(robot.nv)
        x = rng.standard_normal(robot.nv)
        f = some_link_wrenches(robot, rng) if k else None
        check_against_differences(robot, q, v, x, f, f"arm7 (v_s {friction_velocity}) state {k}")


def test_floating_base_with_external_wrenches_vs_differences(erd_dir):
    path = erd_dir / ROBOTS["solo12"][0]
    if not path.is_file():
        _missing_oracle("solo12 not found in example-robot-data")
    robot = mbd_ros.load(str(path), floating_base=True)
    rng = np.random.default_rng(5)
    q = robot.random_configuration(rng)
    v = away_from_zero(rng, robot.nv)
    x = rng.standard_normal(robot.nv)
    check_against_differences(robot, q, v, x, some_link_wrenches(robot, rng), "solo12")


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_random_trees_with_spherical_planar_free_joints_vs_differences(seed):
    """Random branched trees (random_trees.py): spherical, planar and free joints inside the
    tree, damping and friction on some joints, floating or fixed base."""
    xml = random_tree_xml(seed)
    robot = mbd_ros.load(xml, floating_base=bool(seed % 2))
    rng = np.random.default_rng(seed)
    q = robot.random_configuration(rng)
    v = away_from_zero(rng, robot.nv)
    x = rng.standard_normal(robot.nv)
    check_against_differences(robot, q, v, x, some_link_wrenches(robot, rng, 2),
                              f"random tree {seed} ({sorted(set(robot.joint_types))})")


EXTENSION_JOINTS_XML = """<robot name="extension_joints">
  <link name="base"><inertial><mass value="2.0"/>
    <inertia ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="screw" type="helical"><parent link="base"/><child link="l0"/>
    <origin xyz="0 0.1 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="0 0.6 0.8" pitch="0.05"/></joint>
  <link name="l0"><inertial><origin xyz="0.05 -0.02 0.21"/><mass value="1.3"/>
    <inertia ixx="0.031" iyy="0.027" izz="0.012" ixy="0.002" ixz="-0.001" iyz="0.0015"/></inertial></link>
  <joint name="cyl" type="cylindrical"><parent link="l0"/><child link="l1"/>
    <origin xyz="0.3 0 0.1" rpy="0 0.4 0"/><axis xyz="0.48 0 0.64"/></joint>
  <link name="l1"><inertial><origin xyz="0.12 0.03 -0.04"/><mass value="0.9"/>
    <inertia ixx="0.011" iyy="0.019" izz="0.016" ixy="-0.001" ixz="0.0008" iyz="0"/></inertial></link>
  <joint name="uni" type="universal"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.25 0" rpy="-0.5 0.1 0.7"/><axis xyz="0 0 1"/><axis2 xyz="0.6 0.8 0"/></joint>
  <link name="l2"><inertial><origin xyz="-0.03 0.08 0.05"/><mass value="0.7"/>
    <inertia ixx="0.008" iyy="0.006" izz="0.009" ixy="0.0005" ixz="0" iyz="-0.0007"/></inertial></link>
</robot>"""


def test_helical_cylindrical_universal_joints_vs_differences():
    """The URDF extension joints (docs/formats.md) on a floating base."""
    robot = mbd_ros.load(EXTENSION_JOINTS_XML, floating_base=True)
    assert {"helical", "cylindrical"} <= set(robot.joint_types), robot.joint_types
    rng = np.random.default_rng(12)
    for k in range(2):
        q = robot.random_configuration(rng)
        v = rng.standard_normal(robot.nv)
        x = rng.standard_normal(robot.nv)
        check_against_differences(robot, q, v, x, some_link_wrenches(robot, rng, 2),
                                  f"extension joints state {k}")


def test_random_trees_cover_the_multi_axis_joints():
    kinds = set()
    for seed in (1, 2, 3, 4, 5, 6):
        kinds |= set(mbd_ros.load(random_tree_xml(seed), floating_base=bool(seed % 2)).joint_types)
    assert {"spherical", "planar", "floating"} <= kinds, kinds


def test_force_elements_vs_differences():
    """A spring-damper, a joint spring and a bushing on arm7 (their part is differentiated by
    central differences inside the library: the bound holds with the test's own step)."""
    spring = dict(name="s1", type="spring_damper", parent="base_link", parent_point=[0.1, 0.2, 0.3],
                  child="link_5", child_point=[0.05, -0.02, 0.1], stiffness=300.0, damping=2.0,
                  rest_length=0.3, preload=5.0)
    joint_spring = dict(name="js", type="joint_spring", joint="joint_2", stiffness=35.0,
                        damping=0.8, rest_position=0.4)
    bushing = dict(name="b", type="bushing", parent="link_2",
                   parent_origin={"xyz": [0.1, 0.0, 0.2], "rpy": [0.1, 0.2, 0.3]},
                   child="link_6", child_origin={"xyz": [0.0, 0.1, 0.0], "rpy": [0.3, -0.2, 0.1]},
                   stiffness=[100.0, 200.0, 300.0, 10.0, 20.0, 30.0],
                   damping=[1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    robot = mbd_ros.load(str(ARM), forces={"forces": [spring, joint_spring, bushing]})
    plain = mbd_ros.load(str(ARM))
    rng = np.random.default_rng(8)
    q = robot.random_configuration(rng)
    v = away_from_zero(rng, robot.nv)
    x = rng.standard_normal(robot.nv)
    f = some_link_wrenches(robot, rng, 2)
    check_against_differences(robot, q, v, x, f, "arm7 with force elements")
    # the elements do change the derivatives (the check above is not the plain robot's)
    with_elements = robot.inverse_dynamics_derivatives(q, v, x, f_ext=f)
    without = plain.inverse_dynamics_derivatives(q, v, x, f_ext=f)
    assert np.max(np.abs(with_elements[0] - without[0])) > 1.0
    assert np.max(np.abs(with_elements[1] - without[1])) > 0.1


def test_add_force_callback_vs_differences():
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    robot.add_force(lambda t, q, v: {"link_4": np.array([np.sin(q[0]), q[1] * v[2], 1.0,
                                                         0.0, 0.5 * v[0], 0.0])})
    rng = np.random.default_rng(9)
    q = robot.random_configuration(rng)
    v = rng.standard_normal(robot.nv)
    x = rng.standard_normal(robot.nv)
    check_against_differences(robot, q, v, x, None, "arm7 with an add_force callback")


# ---- identities, robot kinds, errors -------------------------------------------------------------

@pytest.mark.parametrize("codegen", [False, True], ids=["generic", "codegen"])
def test_talos_reduced_dense_products_vs_pinocchio(pin, erd_dir, codegen):
    """talos_reduced (nv 38 >= DENSE_PRODUCTS_FROM: M^-1 and two BLAS products write the forward
    derivatives, from the negated inverse ones) against Pinocchio: the general path (first call,
    and with f_ext: loads on some bodies, none on the others), the C-level path (later calls),
    out=. codegen=True: derivatives above codegen/derivative_generator.MAX_DOFS run the generic
    kernels on the generated tree's model arrays."""
    case = Case(pin, erd_dir, "talos_reduced", codegen=codegen)
    robot = case.generated if codegen else case.robot
    nv = robot.nv
    outs = tuple(np.full((nv, nv), np.nan) for _ in range(3))
    for k in range(3):
        q, v, x = case.state()
        for method in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
            ref = case.reference(method, q, v, x)
            for form in ("call", "C path", "out="):
                kwargs = {"out": outs} if form == "out=" else {}
                got = getattr(robot, method)(q, v, x, **kwargs)
                if form == "out=":
                    assert all(a is b for a, b in zip(got, outs)), method
                for name, a, b in zip(("dq", "dv", "third"), got, ref):
                    assert_matrix_close(a, b, f"talos state {k} {method} ({form}) {name}")
    o = case.oracle
    f = some_link_wrenches(robot, case.rng)
    dq, dv, dtau = robot.forward_dynamics_derivatives(q, v, x, f_ext=f)
    pin.computeABADerivatives(o.model, o.data, o.q_pin(q), o.v_pin(v), o.v_pin(x), o.fext(f))
    assert_matrix_close(dq, case.matrix(o.data.ddq_dq), f"talos f_ext on {sorted(f)}: dqdd_dq")
    assert_matrix_close(dv, case.matrix(o.data.ddq_dv), f"talos f_ext on {sorted(f)}: dqdd_dv")


def test_identities_mass_matrix_and_inverse(case):
    r = case.robot
    q, v, x = case.state()
    _, _, da = r.inverse_dynamics_derivatives(q, v, x)
    M = r.mass_matrix(q)
    assert_matrix_close(da, M, f"{case.key}: dtau_dqdd vs mass_matrix", rtol=1e-13)
    _, _, minv = r.forward_dynamics_derivatives(q, v, x)
    assert_matrix_close(minv @ M, np.eye(r.nv), f"{case.key}: dqdd_dtau M vs identity",
                        rtol=1e-12 * np.linalg.cond(M))


def test_codegen_robot_gives_the_generic_results(erd_dir):
    path = erd_dir / ROBOTS["ur5"][0]
    if not path.is_file():
        _missing_oracle("ur5 not found in example-robot-data")
    generic = mbd_ros.load(str(path))
    generated = mbd_ros.load(str(path), codegen=True)
    assert generated.tree.kind == "generated"
    rng = np.random.default_rng(4)
    q, v, x = generic.random_configuration(rng), rng.standard_normal(6), rng.standard_normal(6)
    # the first call: the generic kernel on the same model arrays (bit-identical); from the
    # second: the generated kernels (test_codegen_derivatives.py), the same recursions in another
    # order of operations: round-off, 1e-12 of the matrix norm as test_codegen.py's
    for call in range(3):
        for method in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
            for a, b in zip(getattr(generated, method)(q, v, x), getattr(generic, method)(q, v, x)):
                if call == 0:
                    assert np.array_equal(a, b), method
                assert_matrix_close(a, b, method, rtol=1e-12)


def random_dof_tree(rng, n):
    """dof_int (n, DOF_INT_WIDTH) of a random tree numbered depth first (each dof's parent is on
    the path from the root to the previous dof), and its ancestor sets."""
    from mbd_ros.kernels import derivatives as K
    parent = [-1]
    for k in range(1, n):
        path = [k - 1]
        while parent[path[-1]] >= 0:
            path.append(parent[path[-1]])
        parent.append(int(rng.choice(path + [-1])))
    ancestors = []
    for k in range(n):
        a, j = [], parent[k]
        while j >= 0:
            a.append(j)
            j = parent[j]
        ancestors.append(a)
    dof_int = np.zeros((n, K.DOF_INT_WIDTH), dtype=np.int64)
    dof_int[:, K.DOF_PARENT] = parent
    for k in range(n):
        dof_int[k, K.DOF_SUBTREE_END] = 1 + max([k] + [m for m in range(n) if k in ancestors[m]])
    return dof_int, ancestors


@pytest.mark.parametrize("n", [6, 9, 38])
def test_tree_solves_vs_numpy(n):
    """tree_ltdl and ltdl_solve (kernels/derivatives.py; row updates over signed indices below
    WIDE_ROWS_FROM dofs, unsigned from there) against numpy's LU solve and inverse, for the
    three kinds of right-hand side, on random trees with M = L^T D L of the tree's sparsity
    (L unit lower triangular, nonzero at ancestors). Tolerance: 1e-13 cond(M) of the result's
    norm (backward-stable solves of well-scaled factors)."""
    from mbd_ros.kernels import derivatives as K
    assert 6 < K.WIDE_ROWS_FROM <= 9   # both row-update loops are exercised
    rng = np.random.default_rng(n)
    for _ in range(5):
        dof_int, ancestors = random_dof_tree(rng, n)
        lower = np.eye(n)
        for k in range(n):
            lower[k, ancestors[k]] = rng.uniform(-1.0, 1.0, len(ancestors[k]))
        mass = lower.T @ np.diag(rng.uniform(0.5, 2.0, n)) @ lower
        related = np.eye(n, dtype=bool)
        for k in range(n):
            related[k, ancestors[k]] = related[ancestors[k], k] = True
        assert not mass[~related].any()    # the tree's sparsity
        factor = np.zeros((n, n))
        assert K.tree_ltdl(dof_int, mass, factor) == -1
        bound = 1e-13 * np.linalg.cond(mass)
        rhs_all = rng.standard_normal((n, n))
        rhs_tree = np.where(related, rng.standard_normal((n, n)), 0.0)
        for rhs, columns, scale in ((rhs_all, K.ALL_COLUMNS, -1.0),
                                    (rhs_tree, K.TREE_COLUMNS, -1.0),
                                    (np.eye(n), K.IDENTITY, 1.0)):
            x = rhs.copy()
            K.ltdl_solve(dof_int, factor, x, scale, columns)
            ref = scale * np.linalg.solve(mass, rhs)
            assert_matrix_close(x, ref, f"n {n} columns {columns}", rtol=bound)


def test_bad_inputs_name_the_argument():
    robot = mbd_ros.load(str(ARM))
    q, z = robot.neutral(), np.zeros(robot.nv)
    with pytest.raises(ValueError, match="qdd must have shape"):
        robot.inverse_dynamics_derivatives(q, z, np.zeros(3))
    with pytest.raises(ValueError, match="tau contains NaN"):
        robot.forward_dynamics_derivatives(q, z, np.full(robot.nv, np.nan))
    with pytest.raises(ValueError, match="q must have shape"):
        robot.inverse_dynamics_derivatives(q[:-1], z, z)
    with pytest.raises(ValueError, match="unknown link"):
        robot.forward_dynamics_derivatives(q, z, z, f_ext={"no_such_link": np.zeros(6)})


def test_out_arrays_are_filled_and_checked():
    robot = mbd_ros.load(str(ARM))
    rng = np.random.default_rng(2)
    q, v, x = robot.random_configuration(rng), rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)
    n = robot.nv
    for method in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
        expected = getattr(robot, method)(q, v, x)
        out = tuple(np.full((n, n), np.nan) for _ in range(3))
        result = getattr(robot, method)(q, v, x, out=out)
        assert all(r is o for r, o in zip(result, out)), method
        for r, e in zip(result, expected):
            assert np.array_equal(r, e), method
        with pytest.raises(ValueError, match=r"out\[1\] must be a writable, aligned, C-contiguous"):
            getattr(robot, method)(q, v, x, out=(out[0], np.zeros((n, n + 1)), out[2]))
        with pytest.raises(ValueError, match=r"out\[2\] must not share memory"):
            getattr(robot, method)(q, v, x, out=(out[0], out[1], out[0]))
        with pytest.raises(ValueError, match="out must be None or a tuple of three"):
            getattr(robot, method)(q, v, x, out=out[0])
