"""Generated robot-specific kernels (mbd_ros.load(..., codegen=True)).

- Pinocchio oracles on the generated kernels: ur5, panda, solo12 (floating), talos_reduced
  (floating), and random branched trees with every joint type (revolute, continuous, prismatic,
  fixed, spherical, free in mid-tree, planar) and URDF damping/friction.
- Generated and generic paths agree to CODEGEN_RTOL = 1e-12 relative (the same recursions on the
  same constants, in another order of floating-point operations: round-off only); on the random
  trees with the URDF damping and friction applied.
- Same API: validation errors, `out=`, conversion of lists, f_ext (generic path), summary().
- The on-disk cache: a changed URDF gives another key and is regenerated, an unchanged one is
  reused; the user cache directory is the default, never the package directory (writable or
  not); MBD_ROS_CACHE_DIR. (Signed modules, private directories and broken entries:
  test_cache_trust.py.)

The generated modules and numba's compiled kernels are cached (~/.cache/mbd_ros, or
$MBD_ROS_CACHE_DIR), so only the first run of this file pays the compilation.
"""
from __future__ import annotations

import os
import stat
import zlib

import numpy as np
import pytest

from conftest import _missing_oracle   # skip only outside CI (an oracle robot file missing)

import mbd_ros
from conftest import assert_close
from mbd_ros.codegen import cache as codegen_cache
from mbd_ros.codegen.generator import FUNCTIONS
from oracle import PinOracle, layout, parse_urdf, pin_model_from_tree, pin_model_from_xml, random_state
from random_trees import ALL_TYPES, random_tree_xml

CODEGEN_RTOL = 1e-12
N_STATES = 6

ERD_ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
}
TREE_CASES = [(2, True), (6, False)]   # together: every joint type, passive forces, branching

SMALL_URDF = """<?xml version="1.0"?>
<robot name="pendulum2">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0 0 -0.2"/><mass value="{m}"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.002"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0 0 -0.15"/><mass value="0.7"/>
    <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.001"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/>
    <dynamics damping="0.1" friction="0.02"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 -0.4" rpy="0.3 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


class Case:
    """A robot (generic and generated, passive forces off for Pinocchio and on for the agreement
    checks), its Pinocchio oracle and fixed random states."""

    def __init__(self, pin, key, xml, source, floating, oracle_model, passive):
        self.key = key
        self.tree = parse_urdf(xml)
        self.slots, self.nq, self.nv = layout(self.tree, floating)
        self.generated = mbd_ros.load(source, floating_base=floating, passive_forces=False, codegen=True)
        # generated vs generic: with the URDF damping and friction for the random trees; without
        # them for the example robots (each option is another model to compile)
        self.generic_passive = mbd_ros.load(source, floating_base=floating, passive_forces=passive)
        self.generated_passive = (mbd_ros.load(source, floating_base=floating, codegen=True)
                                  if passive else self.generated)
        model, link_frame = oracle_model
        self.oracle = PinOracle(pin, model, link_frame, self.tree, floating)
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        self.states = []
        for _ in range(N_STATES):
            q, v = random_state(self.slots, self.nq, self.nv, rng)
            self.states.append((q, v, rng.standard_normal(self.nv), rng.standard_normal(self.nv)))


@pytest.fixture(scope="module", params=list(ERD_ROBOTS) + [f"tree{s}" for s, _ in TREE_CASES])
def case(request, pin, erd_dir):
    key = request.param
    if key in ERD_ROBOTS:
        rel, floating = ERD_ROBOTS[key]
        path = erd_dir / rel
        if not path.is_file():
            _missing_oracle(f"{rel} not found in example-robot-data at {erd_dir}")
        xml = path.read_text()
        return Case(pin, key, xml, str(path), floating, pin_model_from_xml(pin, xml, floating), False)
    return _tree_case(pin, key)


def _tree_case(pin, key):
    seed = int(key[4:])
    floating = dict(TREE_CASES)[seed]
    xml = random_tree_xml(seed)
    return Case(pin, key, xml, xml, floating, pin_model_from_tree(pin, parse_urdf(xml), floating), True)


@pytest.fixture(scope="module", params=[f"tree{s}" for s, _ in TREE_CASES])
def tree_case(request, pin):
    return _tree_case(pin, request.param)


def test_tree_cases_cover_every_joint_type():
    types = set()
    for seed, _ in TREE_CASES:
        types.update(j.type for j in parse_urdf(random_tree_xml(seed)).joints)
    assert types == set(ALL_TYPES), types


# ---- Pinocchio oracles on the generated kernels ---------------------------------------------------

def test_generated_robot_is_generated(case):
    r = case.generated
    assert isinstance(r, mbd_ros.Robot) and r.tree.kind == "generated"
    assert r.codegen_path.is_file()
    summary = r.summary()
    for name in FUNCTIONS:
        assert f"{name}" in summary
    assert "generated" in summary and "generic" in summary


def test_forward_dynamics_vs_aba(case):
    for k, (q, v, tau, _) in enumerate(case.states):
        assert_close(case.generated.forward_dynamics(q, v, tau), case.oracle.aba(q, v, tau),
                     f"{case.key} state {k}: generated forward_dynamics vs pin.aba")


def test_inverse_dynamics_vs_rnea(case):
    for k, (q, v, _, a) in enumerate(case.states):
        assert_close(case.generated.inverse_dynamics(q, v, a), case.oracle.rnea(q, v, a),
                     f"{case.key} state {k}: generated inverse_dynamics vs pin.rnea")


def test_mass_matrix_vs_crba(case):
    for k, (q, _, _, _) in enumerate(case.states):
        assert_close(case.generated.mass_matrix(q), case.oracle.crba(q),
                     f"{case.key} state {k}: generated mass_matrix vs pin.crba")


def test_bias_and_gravity_vs_pinocchio(case):
    for k, (q, v, _, _) in enumerate(case.states):
        assert_close(case.generated.bias_forces(q, v), case.oracle.nle(q, v),
                     f"{case.key} state {k}: generated bias_forces vs pin.nonLinearEffects")
        assert_close(case.generated.gravity_forces(q), case.oracle.gravity(q),
                     f"{case.key} state {k}: generated gravity_forces vs pin.computeGeneralizedGravity")


def test_movable_joint_wrenches_vs_pinocchio(case):
    rows = {name: i for i, name in enumerate(case.generated.wrench_joint_names)}
    for k, (q, v, _, a) in enumerate(case.states[:3]):
        w = case.generated.joint_wrenches(q, v, a)
        for name, f in case.oracle.joint_forces(q, v, a, None).items():
            assert_close(w[rows[name]], f, f"{case.key} state {k}: generated wrench of {name!r} vs pin data.f")


def test_valid_calls_never_reach_the_generic_kernels(case, monkeypatch):
    """The generated path really computes (a kernel that always failed over to the generic path
    would pass every comparison above): with the generic kernels replaced by traps, valid calls
    still give Pinocchio's results."""
    import mbd_ros.robot.rigid_tree as generic_robot

    def trap(*args):
        raise AssertionError("a generic kernel was called on the generated path")

    for name in ("_forward_dynamics", "_inverse_dynamics", "_mass_matrix", "_joint_wrenches"):
        monkeypatch.setattr(generic_robot, name, trap)
    g = case.generated
    q, v, tau, a = case.states[1]
    out = np.empty(case.nv)
    assert_close(g.forward_dynamics(q, v, tau, out=out), case.oracle.aba(q, v, tau), f"{case.key}: FD")
    assert_close(g.inverse_dynamics(q, v, a, out=out), case.oracle.rnea(q, v, a), f"{case.key}: ID")
    assert_close(g.mass_matrix(q), case.oracle.crba(q), f"{case.key}: M")
    assert_close(g.bias_forces(q, v), case.oracle.nle(q, v), f"{case.key}: b")
    assert_close(g.gravity_forces(q), case.oracle.gravity(q), f"{case.key}: g")
    assert g.joint_wrenches(q, v, a).shape == (len(g.wrench_joint_names), 6)
    with pytest.raises(AssertionError, match="generic kernel"):   # the traps are in place
        g.forward_dynamics(q, v, tau, f_ext={g.link_names[-1]: np.ones(6)})
    g.tree.set_loads(None)   # leave the shared robot without loads


# ---- generated == generic (passive forces on, every method, fixed-joint wrenches included) -------

def test_generated_equals_generic(case):
    g, r = case.generated_passive, case.generic_passive
    for k, (q, v, tau, a) in enumerate(case.states):
        for label, mine, ref in (
                ("forward_dynamics", g.forward_dynamics(q, v, tau), r.forward_dynamics(q, v, tau)),
                ("inverse_dynamics", g.inverse_dynamics(q, v, a), r.inverse_dynamics(q, v, a)),
                ("mass_matrix", g.mass_matrix(q), r.mass_matrix(q)),
                ("bias_forces", g.bias_forces(q, v), r.bias_forces(q, v)),
                ("gravity_forces", g.gravity_forces(q), r.gravity_forces(q)),
                ("joint_wrenches", g.joint_wrenches(q, v, a), r.joint_wrenches(q, v, a))):
            assert_close(mine, ref, f"{case.key} state {k}: generated vs generic {label}", rtol=CODEGEN_RTOL)


def test_passive_forces_are_generated(tree_case):
    """The passive model differs from the passive-free one exactly by the joint forces."""
    case = tree_case
    g, g0 = case.generated_passive, case.generated
    assert np.any(g.damping) and np.any(g.friction), f"{case.key}: no damping or friction to test"
    for k, (q, v, tau, a) in enumerate(case.states[:3]):
        tp = g.damping_forces(v)
        assert_close(g.inverse_dynamics(q, v, a), g0.inverse_dynamics(q, v, a) + tp,
                     f"{case.key} state {k}: generated ID with passive forces = ID + damping forces")
        assert_close(g.forward_dynamics(q, v, tau), g0.forward_dynamics(q, v, tau - tp),
                     f"{case.key} state {k}: generated FD with passive forces = FD(tau - damping forces)")


def test_external_wrenches_take_the_generic_path(case):
    g, r = case.generated_passive, case.generic_passive
    rng = np.random.default_rng(3)
    links = list(r.link_names)
    q, v, tau, a = case.states[0]
    f_ext = {str(n): rng.standard_normal(6) for n in rng.choice(links, size=3, replace=False)}
    assert_close(g.forward_dynamics(q, v, tau, f_ext=f_ext), r.forward_dynamics(q, v, tau, f_ext=f_ext),
                 f"{case.key}: FD with f_ext", rtol=CODEGEN_RTOL)
    assert_close(g.inverse_dynamics(q, v, a, f_ext=f_ext), r.inverse_dynamics(q, v, a, f_ext=f_ext),
                 f"{case.key}: ID with f_ext", rtol=CODEGEN_RTOL)
    # and the loads are gone on the next call without f_ext
    assert_close(g.forward_dynamics(q, v, tau), r.forward_dynamics(q, v, tau),
                 f"{case.key}: FD after f_ext", rtol=CODEGEN_RTOL)


# ---- same API -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("codegen") / "pendulum2.urdf"
    path.write_text(SMALL_URDF.format(m="1.3"))
    return mbd_ros.load(str(path), codegen=True), mbd_ros.load(str(path))


def test_out_and_conversions(small):
    g, r = small
    q, v, x = np.array([0.3, -0.7]), np.array([0.5, 1.5]), np.array([0.2, -0.1])
    out = np.empty(2)
    assert g.forward_dynamics(q, v, x, out=out) is out
    assert_close(out, r.forward_dynamics(q, v, x), "FD out=", rtol=CODEGEN_RTOL)
    assert_close(g.forward_dynamics(list(q), tuple(v), [float(t) for t in x]), out, "FD from lists",
                 rtol=CODEGEN_RTOL)
    assert_close(g.inverse_dynamics(q.astype(np.float32), v, x), r.inverse_dynamics(q.astype(np.float32), v, x),
                 "ID from float32", rtol=CODEGEN_RTOL)
    m = np.empty((2, 2))
    assert g.mass_matrix(q, out=m) is m
    assert_close(m, r.mass_matrix(q), "M out=", rtol=CODEGEN_RTOL)
    w = np.empty((len(g.wrench_joint_names), 6))
    assert g.joint_wrenches(q, v, x, out=w) is w
    assert_close(w, r.joint_wrenches(q, v, x), "wrenches out=", rtol=CODEGEN_RTOL)
    strided = np.zeros(4)[::2]
    strided[:] = q
    assert_close(g.gravity_forces(strided), r.gravity_forces(q), "gravity from a strided view",
                 rtol=CODEGEN_RTOL)


@pytest.mark.parametrize("method", ["forward_dynamics", "inverse_dynamics"])
def test_bad_inputs_raise_the_generic_errors(small, method):
    g, r = small
    good = np.array([0.3, -0.7])
    for args, match in (((np.zeros(3), good, good), r"q must have shape \(2,\)"),
                        ((good, np.zeros(1), good), r"v must have shape \(2,\)"),
                        ((np.array([np.nan, 0.0]), good, good), "q contains NaN or inf"),
                        ((good, np.array([0.0, np.inf]), good), "v contains NaN or inf"),
                        ((good, good, np.array([np.nan, 1.0])), "contains NaN or inf")):
        with pytest.raises(ValueError, match=match):
            getattr(g, method)(*args)
        with pytest.raises(ValueError, match=match):
            getattr(r, method)(*args)
    with pytest.raises(ValueError, match="out"):
        getattr(g, method)(good, good, good, out=np.empty(3))
    with pytest.raises(ValueError, match="q contains NaN"):
        g.mass_matrix(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match=r"q must have shape"):
        g.gravity_forces(np.zeros(5))


def test_quaternion_norm_is_checked(pin, erd_dir):
    path = erd_dir / ERD_ROBOTS["solo12"][0]
    if not path.is_file():
        _missing_oracle("solo12 not found in example-robot-data")
    g = mbd_ros.load(str(path), floating_base=True, passive_forces=False, codegen=True)
    q = g.neutral()
    q[3:7] = [0.0, 0.0, 0.0, 1.1]
    zero = np.zeros(g.nv)
    for call in (lambda: g.forward_dynamics(q, zero, zero), lambda: g.inverse_dynamics(q, zero, zero),
                 lambda: g.mass_matrix(q), lambda: g.bias_forces(q, zero), lambda: g.gravity_forces(q),
                 lambda: g.joint_wrenches(q, zero, zero)):
        with pytest.raises(ValueError, match="quaternion of joint.*root_joint"):
            call()


def test_closed_loop_robot_generates_its_tree_quantities():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    urdf, closures = root / "urdf" / "fourbar.urdf", root / "config" / "fourbar_closures.yaml"
    if not closures.is_file():
        closures = next((root / "config").glob("*fourbar*.yaml"))
    g = mbd_ros.load(str(urdf), closures=str(closures), codegen=True)
    r = mbd_ros.load(str(urdf), closures=str(closures))
    assert g.tree.kind == "generated" and g.closure_names
    q = r.assemble(r.neutral() + 0.1)
    v = np.full(r.nv, 0.3)
    assert_close(g.mass_matrix(q), r.mass_matrix(q), "closed loop: mass matrix", rtol=CODEGEN_RTOL)
    assert_close(g.bias_forces(q, v), r.bias_forces(q, v), "closed loop: bias forces", rtol=CODEGEN_RTOL)
    tau = np.zeros(r.nv)
    assert_close(g.forward_dynamics(q, v, tau), r.forward_dynamics(q, v, tau), "closed loop: FD (generic)",
                 rtol=CODEGEN_RTOL)
    assert "closed-loop calls generic" in g.summary()


# ---- the on-disk cache ----------------------------------------------------------------------------

def test_changed_urdf_invalidates_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    path = tmp_path / "robot.urdf"
    path.write_text(SMALL_URDF.format(m="1.3"))
    first = mbd_ros.load(str(path), codegen=True)
    assert first.tree.kernels.generated and first.codegen_path.parent == tmp_path / "cache"
    again = mbd_ros.load(str(path), codegen=True)
    assert again.codegen_path == first.codegen_path and not again.tree.kernels.generated
    path.write_text(SMALL_URDF.format(m="2.6"))     # heavier upper link: another model
    changed = mbd_ros.load(str(path), codegen=True)
    assert changed.codegen_path != first.codegen_path and changed.tree.kernels.generated
    # the regenerated kernels compute the new model
    generic = mbd_ros.load(str(path))
    q, v, x = np.array([0.4, 0.2]), np.array([-1.0, 0.5]), np.array([0.1, 0.3])
    assert_close(changed.forward_dynamics(q, v, x), generic.forward_dynamics(q, v, x),
                 "regenerated kernels", rtol=CODEGEN_RTOL)
    assert np.max(np.abs(changed.gravity_forces(q) - first.gravity_forces(q))) > 0.1


def test_read_only_package_dir_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    """The package directory is never the cache (an installed one may be shared or read-only):
    writable, read-only or impossible, the user cache directory is used."""
    writable = tmp_path / "checkout" / "mbd_ros" / "codegen"
    writable.mkdir(parents=True)
    read_only = tmp_path / "site-packages" / "mbd_ros" / "codegen"
    read_only.mkdir(parents=True)
    read_only.chmod(stat.S_IRUSR | stat.S_IXUSR)
    # a directory that cannot be created even by root: its parent is a regular file
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    monkeypatch.delenv(codegen_cache.ENV_CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for package_dir in ([writable / "_generated"] + ([read_only / "_generated"] if os.geteuid() != 0 else [])
                        + [blocked / "_generated"]):
        monkeypatch.setattr(codegen_cache, "PACKAGE_CACHE_DIR", package_dir)
        assert codegen_cache.cache_dir() == tmp_path / "xdg" / "mbd_ros"
    path = tmp_path / "robot.urdf"
    path.write_text(SMALL_URDF.format(m="1.3"))
    g = mbd_ros.load(str(path), codegen=True)
    assert g.codegen_path.parent == tmp_path / "xdg" / "mbd_ros"
    assert_close(g.mass_matrix(np.array([0.1, 0.2])), mbd_ros.load(str(path)).mass_matrix(np.array([0.1, 0.2])),
                 "kernels from the user cache", rtol=CODEGEN_RTOL)
    read_only.chmod(stat.S_IRWXU)


def test_cache_dir_override_must_be_writable(tmp_path, monkeypatch):
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(blocked / "cache"))
    with pytest.raises(OSError, match="MBD_ROS_CACHE_DIR"):
        codegen_cache.cache_dir()


def test_no_writable_cache_falls_back_to_generic_kernels_with_a_warning(tmp_path, monkeypatch):
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(blocked / "cache"))
    path = tmp_path / "robot.urdf"
    path.write_text(SMALL_URDF.format(m="1.3"))
    with pytest.warns(UserWarning, match="generic ones.*MBD_ROS_CACHE_DIR"):
        robot = mbd_ros.load(str(path), codegen=True)
    assert type(robot) is mbd_ros.Robot
    q = np.array([0.2, 0.1])
    assert_close(robot.gravity_forces(q), mbd_ros.load(str(path)).gravity_forces(q), "generic fallback")


def test_cli_codegen_prebuilds_the_cache(tmp_path, monkeypatch, capsys):
    from mbd_ros import cli
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    path = tmp_path / "robot.urdf"
    path.write_text(SMALL_URDF.format(m="1.3"))
    assert cli.main(["codegen", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "kernels in" in printed and str(tmp_path / "cache") in printed
    robot = mbd_ros.load(str(path), codegen=True)
    assert not robot.tree.kernels.generated                  # found in the cache
    assert any((tmp_path / "cache" / "__pycache__").glob("*.nbi"))   # numba's compiled kernels


def test_too_many_bodies_keep_the_generic_kernels():
    """Beyond MAX_GENERATED_BODIES (e.g. a 3000-link robot on a node whose `codegen` default is
    true) load(codegen=True) warns and returns the generic robot, with the generic results."""
    from mbd_ros.codegen import MAX_GENERATED_BODIES
    n = MAX_GENERATED_BODIES + 1
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" '
                    f'ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                     f'<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>'
                     f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>' for i in range(n))
    xml = f'<robot name="long">{links}{joints}</robot>'
    with pytest.warns(UserWarning, match="more than codegen handles"):
        robot = mbd_ros.load(xml, codegen=True)
    assert type(robot) is mbd_ros.Robot
    generic = mbd_ros.load(xml)
    q = np.linspace(-1.0, 1.0, robot.nq)
    zero = np.zeros(robot.nv)
    np.testing.assert_array_equal(robot.forward_dynamics(q, zero, zero),
                                  generic.forward_dynamics(q, zero, zero))
