"""mbd_ros against Pinocchio on real robots from example-robot-data.

Pinocchio parses each URDF itself (buildModelFromXML; continuous joints rewritten as revolute since
Pinocchio stores them as (cos, sin)); our q/v are mapped to Pinocchio's by joint name (Pinocchio
orders siblings by name, the contract by document order). The robots together cover:

    ur5      fixed base, serial, revolute, fixed joints
    panda    fixed base, prismatic finger joints (a branch), damping
    solo12   floating base, branching (four legs)
    talos    floating base, branching, many fixed joints, damping and Coulomb friction
    pr2      fixed base, prismatic torso, continuous joints, 50 fixed joints, branching, damping
    baxter   fixed base, branching, prismatic grippers, damping

Every comparison uses conftest.RTOL. 20 random states per robot (fixed seeds).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from conftest import _missing_oracle   # skip only outside CI (an oracle robot file missing)
from lxml import etree

import mbd_ros
from conftest import assert_close
from oracle import (PinOracle, layout, parse_urdf, pin_model_from_xml, random_state,
                    spatial_inertia, subtree_wrench)

N_STATES = 20

# PR2's URDF gives two sensor links principal moments (0.001, 0.001, 0.01), which violate the
# triangle inequality (refused with strict_inertia=True; their merged bodies are valid). The
# comparisons use a copy with those two tensors set to 0.001 * identity, given to both mbd_ros
# (as XML text) and Pinocchio, which also exercises loading from XML text.
PR2_INVALID_INERTIAS = ("sensor_mount_link", "double_stereo_link")

ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "pr2": ("pr2_description/urdf/pr2.urdf", False),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
}


class Case:
    """One example robot: our models (passive forces off / on), the independent URDF parse, the
    Pinocchio oracle, and fixed random states."""

    def __init__(self, pin, erd_dir, key):
        rel, self.floating = ROBOTS[key]
        self.key = key
        self.path = erd_dir / rel
        if not self.path.is_file():
            _missing_oracle(f"{rel} not found in example-robot-data at {erd_dir}")
        self.xml = self.path.read_text()
        self.source = str(self.path)               # what mbd_ros.load gets: the file path ...
        if key == "pr2":
            self.xml = self.source = repaired_inertias(self.xml, PR2_INVALID_INERTIAS)  # ... or text
        self.tree = parse_urdf(self.xml)
        self.slots, self.nq, self.nv = layout(self.tree, self.floating)
        self.robot = mbd_ros.load(self.source, floating_base=self.floating, passive_forces=False)
        self._robot_passive = None
        model, link_frame = pin_model_from_xml(pin, self.xml, self.floating)
        self.oracle = PinOracle(pin, model, link_frame, self.tree, self.floating)
        self.inertia = {name: spatial_inertia(link) for name, link in self.tree.links.items()}
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        self.states = []
        for _ in range(N_STATES):
            q, v = random_state(self.slots, self.nq, self.nv, rng)
            self.states.append((q, v, rng.standard_normal(self.nv), rng.standard_normal(self.nv)))

    @property
    def robot_passive(self):
        if self._robot_passive is None:
            self._robot_passive = mbd_ros.load(self.source, floating_base=self.floating,
                                               passive_forces=True)
        return self._robot_passive

    def wrench_rows(self):
        return {name: i for i, name in enumerate(self.robot.wrench_joint_names)}


def repaired_inertias(xml, links):
    """The URDF text with the inertia tensors of ``links`` set to 0.001 * identity."""
    root = etree.fromstring(xml.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    for le in root.findall("link"):
        if le.get("name") in links:
            ie = le.find("inertial").find("inertia")
            for k, val in (("ixx", "0.001"), ("iyy", "0.001"), ("izz", "0.001"),
                           ("ixy", "0"), ("ixz", "0"), ("iyz", "0")):
                ie.set(k, val)
    return etree.tostring(root, encoding="unicode")


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request, pin, erd_dir):
    return Case(pin, erd_dir, request.param)


def some_external_forces(case, rng, k=4):
    """Random wrenches on k links, chosen to include links merged into a body by fixed joints."""
    links = list(case.tree.links)
    welded = [name for name, j in case.tree.parent_joint.items() if j.type == "fixed"]
    chosen = list(rng.choice(welded, size=min(2, len(welded)), replace=False)) if welded else []
    others = [name for name in links if name not in chosen]
    chosen += list(rng.choice(others, size=k - len(chosen), replace=False))
    return {str(name): rng.standard_normal(6) for name in chosen}


# ---- structure ------------------------------------------------------------------------------------

def test_layout_matches_urdf_and_pinocchio(case):
    r, o = case.robot, case.oracle
    assert (r.nq, r.nv) == (case.nq, case.nv), f"{case.key}: (nq, nv) = {(r.nq, r.nv)}"
    assert r.nv == o.model.nv
    # depth first, children in document order (not Pinocchio's order, which sorts siblings by name)
    assert list(r.joint_names) == [s.name for s in case.slots]
    pin_names = set(o.model.names[1:])
    assert set(r.joint_names) == pin_names
    assert list(r.idx_q) == [s.iq for s in case.slots]
    assert list(r.idx_v) == [s.iv for s in case.slots]
    for s, jid in ((s, o.jid[s.name]) for s in case.slots):
        assert o.model.joints[jid].nv == s.nv, s.name
    expected_types = ["revolute" if s.type == "continuous" else s.type for s in case.slots]
    assert list(r.joint_types) == expected_types
    assert set(r.link_names) == set(case.tree.links)
    assert len(r.link_names) == len(case.tree.links)
    names = list(r.wrench_joint_names)
    urdf_joints = [j.name for j in case.tree.joints]
    if case.floating:
        assert names[0] == "root_joint"
        names = names[1:]
    assert sorted(names) == sorted(urdf_joints)
    assert list(r.closure_names) == []
    assert r.closure_wrenches(*case.states[0][:3]).shape == (0, 6)


# ---- dynamics -------------------------------------------------------------------------------------

def test_forward_dynamics_vs_aba(case):
    for k, (q, v, tau, _) in enumerate(case.states):
        assert_close(case.robot.forward_dynamics(q, v, tau), case.oracle.aba(q, v, tau),
                     f"{case.key} state {k}: forward_dynamics vs pin.aba")


def test_inverse_dynamics_vs_rnea(case):
    for k, (q, v, _, a) in enumerate(case.states):
        assert_close(case.robot.inverse_dynamics(q, v, a), case.oracle.rnea(q, v, a),
                     f"{case.key} state {k}: inverse_dynamics vs pin.rnea")


def test_mass_matrix_vs_crba(case):
    for k, (q, _, _, _) in enumerate(case.states):
        assert_close(case.robot.mass_matrix(q), case.oracle.crba(q),
                     f"{case.key} state {k}: mass_matrix vs pin.crba")


def test_bias_and_gravity_vs_pinocchio(case):
    for k, (q, v, _, _) in enumerate(case.states):
        assert_close(case.robot.bias_forces(q, v), case.oracle.nle(q, v),
                     f"{case.key} state {k}: bias_forces vs pin.nonLinearEffects")
        assert_close(case.robot.gravity_forces(q), case.oracle.gravity(q),
                     f"{case.key} state {k}: gravity_forces vs pin.computeGeneralizedGravity")


def test_batch_forms_vs_pinocchio(case):
    Q = np.array([s[0] for s in case.states])
    V = np.array([s[1] for s in case.states])
    TAU = np.array([s[2] for s in case.states])
    A = np.array([s[3] for s in case.states])
    QDD = case.robot.forward_dynamics_batch(Q, V, TAU)
    T = case.robot.inverse_dynamics_batch(Q, V, A)
    assert QDD.shape == T.shape == (N_STATES, case.nv)
    for k in range(N_STATES):
        assert_close(QDD[k], case.oracle.aba(Q[k], V[k], TAU[k]), f"{case.key} batch row {k}: forward_dynamics_batch vs pin.aba")
        assert_close(T[k], case.oracle.rnea(Q[k], V[k], A[k]), f"{case.key} batch row {k}: inverse_dynamics_batch vs pin.rnea")


# ---- joint wrenches -------------------------------------------------------------------------------

def _check_wrenches(case, q, v, a, f_ext, label):
    """Movable joints: Pinocchio's data.f after rnea (joint frame = child link frame).
    Fixed joints: the Newton-Euler sum of the subtree below, from Pinocchio's link kinematics."""
    r = case.robot
    W = r.joint_wrenches(q, v, a, f_ext=f_ext) if f_ext is not None else r.joint_wrenches(q, v, a)
    assert W.shape == (len(r.wrench_joint_names), 6)
    rows = case.wrench_rows()
    pin_f = case.oracle.joint_forces(q, v, a, f_ext)
    for name, f in pin_f.items():
        assert_close(W[rows[name]], f, f"{label}: wrench of movable joint {name!r} vs pin data.f")
    kin = case.oracle.link_kinematics(q, v, a)
    for j in case.tree.joints:
        if j.type == "fixed":
            assert_close(W[rows[j.name]], subtree_wrench(case.tree, case.inertia, kin, j.child, f_ext),
                         f"{label}: wrench of fixed joint {j.name!r} vs Newton-Euler sum of its subtree")


def test_joint_wrenches_vs_pinocchio(case):
    for k, (q, v, _, a) in enumerate(case.states[:10]):
        _check_wrenches(case, q, v, a, None, f"{case.key} state {k}")


def test_joint_wrenches_with_external_forces(case):
    rng = np.random.default_rng(7)
    for k, (q, v, _, a) in enumerate(case.states[:5]):
        _check_wrenches(case, q, v, a, some_external_forces(case, rng), f"{case.key} state {k} with f_ext")


# ---- external forces ------------------------------------------------------------------------------

def test_external_forces_vs_pinocchio(case):
    rng = np.random.default_rng(11)
    r = case.robot
    for k, (q, v, tau, a) in enumerate(case.states[:10]):
        f = some_external_forces(case, rng)
        assert_close(r.forward_dynamics(q, v, tau, f_ext=f), case.oracle.aba(q, v, tau, f),
                     f"{case.key} state {k}: forward_dynamics with f_ext on {sorted(f)} vs pin.aba")
        assert_close(r.inverse_dynamics(q, v, a, f_ext=f), case.oracle.rnea(q, v, a, f),
                     f"{case.key} state {k}: inverse_dynamics with f_ext on {sorted(f)} vs pin.rnea")
        # the (n_links, 6) array form, rows in robot.link_names order, is the same input
        F = np.zeros((len(r.link_names), 6))
        for i, name in enumerate(r.link_names):
            if name in f:
                F[i] = f[name]
        assert_close(r.forward_dynamics(q, v, tau, f_ext=F), case.oracle.aba(q, v, tau, f),
                     f"{case.key} state {k}: forward_dynamics with f_ext as an array vs pin.aba")


# ---- kinematics and energy ------------------------------------------------------------------------

def test_link_pose_vs_pinocchio(case):
    for k, (q, v, _, a) in enumerate(case.states[:5]):
        kin = case.oracle.link_kinematics(q, v, a)
        for link in case.tree.links:
            assert_close(case.robot.link_pose(q, link), kin[link][0],
                         f"{case.key} state {k}: link_pose({link!r}) vs pin frame placement")


def test_energies_vs_pinocchio(case):
    r, o = case.robot, case.oracle
    q0 = case.states[0][0]
    for k, (q, v, _, _) in enumerate(case.states):
        ke = r.kinetic_energy(q, v)
        assert_close(ke, o.kinetic_energy(q, v), f"{case.key} state {k}: kinetic_energy vs pin")
        assert_close(ke, 0.5 * v @ o.crba(q) @ v, f"{case.key} state {k}: kinetic_energy vs 1/2 v^T M v")
        # With a fixed base the potential's constant (links welded to the base) is a convention:
        # compare differences. A floating base has no such constant.
        if case.floating:
            assert_close(r.potential_energy(q), o.potential_energy(q), f"{case.key} state {k}: potential_energy vs pin")
        else:
            assert_close(r.potential_energy(q) - r.potential_energy(q0),
                         o.potential_energy(q) - o.potential_energy(q0),
                         f"{case.key} state {k}: potential_energy difference vs pin")


def test_total_mass(case, pin):
    assert_close(case.robot.total_mass, sum(link.mass for link in case.tree.links.values()),
                 f"{case.key}: total_mass vs the sum of the URDF masses")
    if case.floating:
        # with a fixed base Pinocchio leaves out links welded to the universe, so only a floating
        # base has the whole robot in pin's bodies
        assert_close(case.robot.total_mass, pin.computeTotalMass(case.oracle.model),
                     f"{case.key}: total_mass vs pin.computeTotalMass")


def test_integrate_vs_pinocchio(case):
    """On a floating base q contains a quaternion: integrate is the Lie-group exponential."""
    for k, (q, v, _, _) in enumerate(case.states[:5]):
        for dt in (1e-3, 0.3):
            got = case.robot.integrate(q, v, dt)
            exp = case.oracle.integrate(q, v * dt)
            if case.floating and np.dot(got[3:7], exp[3:7]) < 0:   # q and -q: the same rotation
                exp[3:7] *= -1
            assert_close(got, exp, f"{case.key} state {k}: integrate(dt={dt}) vs pin.integrate")


def test_custom_gravity_vs_pinocchio(case, pin):
    """load(gravity=g) against Pinocchio with model.gravity = g."""
    g = np.array([0.8, -1.7, -9.2])
    r = mbd_ros.load(case.source, floating_base=case.floating, passive_forces=False, gravity=tuple(g))
    model = pin.Model(case.oracle.model)
    model.gravity = pin.Motion(np.concatenate([g, np.zeros(3)]))
    o = PinOracle(pin, model, case.oracle.link_frame, case.tree, case.floating)
    for k, (q, v, tau, a) in enumerate(case.states[:3]):
        assert_close(r.forward_dynamics(q, v, tau), o.aba(q, v, tau), f"{case.key} state {k}: FD with gravity {g}")
        assert_close(r.inverse_dynamics(q, v, a), o.rnea(q, v, a), f"{case.key} state {k}: ID with gravity {g}")
        assert_close(r.gravity_forces(q), o.gravity(q), f"{case.key} state {k}: gravity_forces with gravity {g}")


# ---- passive joint forces -------------------------------------------------------------------------

def tau_passive(case, v):
    """-damping v - friction tanh(v / FRICTION_VELOCITY), from the URDF <dynamics> read here."""
    out = np.zeros(case.nv)
    for s in case.slots:
        if s.joint is not None and s.nv == 1:
            d, f = s.joint.damping, s.joint.friction
            out[s.iv] = -d * v[s.iv] - f * np.tanh(v[s.iv] / mbd_ros.FRICTION_VELOCITY)
    return out


def test_passive_forces_vs_pinocchio(case):
    rp = case.robot_passive
    damping = np.array([s.joint.damping if s.joint is not None else 0.0 for s in case.slots for _ in range(s.nv)])
    friction = np.array([s.joint.friction if s.joint is not None else 0.0 for s in case.slots for _ in range(s.nv)])
    assert_close(rp.damping, damping, f"{case.key}: robot.damping vs URDF <dynamics damping>")
    assert_close(rp.friction, friction, f"{case.key}: robot.friction vs URDF <dynamics friction>")
    for k, (q, v, tau, a) in enumerate(case.states[:10]):
        # also velocities inside the smoothing band of the friction model
        for vv in (v, v * mbd_ros.FRICTION_VELOCITY):
            tp = tau_passive(case, vv)
            assert_close(rp.forward_dynamics(q, vv, tau), case.oracle.aba(q, vv, tau + tp),
                         f"{case.key} state {k}: forward_dynamics with passive forces vs pin.aba(tau + tau_passive)")
            assert_close(rp.inverse_dynamics(q, vv, a), case.oracle.rnea(q, vv, a) - tp,
                         f"{case.key} state {k}: inverse_dynamics with passive forces vs pin.rnea - tau_passive")


def test_passive_forces_present(case):
    """Guard: at least the robots meant to exercise <dynamics> do have damping/friction."""
    if case.key in ("panda", "talos", "pr2", "baxter"):
        assert any(j.damping > 0 for j in case.tree.joints), case.key
    if case.key == "talos":
        assert any(j.friction > 0 for j in case.tree.joints), case.key


def test_pr2_as_shipped_is_refused_when_strict(erd_dir):
    """The unrepaired PR2 file with strict_inertia=True: a ModelError naming the file and the
    first offending link."""
    path = erd_dir / ROBOTS["pr2"][0]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(str(path), strict_inertia=True)
    assert "sensor_mount_link" in str(exc.value) and "pr2.urdf" in str(exc.value), str(exc.value)


def test_pr2_as_shipped_loads_by_default(erd_dir, pin):
    """By default the unrepaired PR2 loads with a warning naming each offending link (welded
    into valid bodies: harmless), and its dynamics are those of the file as written (=
    Pinocchio on the same text)."""
    path = erd_dir / ROBOTS["pr2"][0]
    with pytest.warns(UserWarning) as caught:     # all of them (a match= re-emits the others)
        robot = mbd_ros.load(str(path), passive_forces=False)
    named = "\n".join(str(w.message) for w in caught)
    assert "sensor_mount_link" in named and "double_stereo_link" in named, named
    xml = path.read_text()
    tree = parse_urdf(xml)
    slots, nq, nv = layout(tree, False)
    model, link_frame = pin_model_from_xml(pin, xml, False)
    oracle = PinOracle(pin, model, link_frame, tree, False)
    rng = np.random.default_rng(7)
    q, v = random_state(slots, nq, nv, rng)
    tau = rng.standard_normal(nv)
    assert_close(robot.forward_dynamics(q, v, tau), oracle.aba(q, v, tau),
                 "pr2 as shipped: FD vs pin.aba")


# ---- coverage guard -------------------------------------------------------------------------------

def test_robot_set_covers_the_joint_kinds(erd_dir):
    """The parametrised robots together cover fixed and floating bases, branching, prismatic,
    continuous and many fixed joints (fails if the robot list is edited into a weaker one)."""
    kinds = set()
    for key, (rel, floating) in ROBOTS.items():
        tree = parse_urdf((erd_dir / rel).read_text())
        types = [j.type for j in tree.joints]
        kinds.add("floating" if floating else "fixed base")
        kinds.update(t for t in types if t in ("prismatic", "continuous"))
        if any(len(c) > 1 for c in tree.child_joints.values()):
            kinds.add("branching")
        if types.count("fixed") >= 20:
            kinds.add("many fixed")
    assert kinds >= {"floating", "fixed base", "branching", "prismatic", "continuous", "many fixed"}, kinds
