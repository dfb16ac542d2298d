"""Identities between algorithms, physical invariants and closed forms, on random branched trees.

The trees come from random_trees.py (fixed seeds, 5-15 links, revolute / continuous / prismatic /
fixed / spherical / floating / planar joints, random origins, axes and inertias); odd seeds are
loaded with a floating base. The references are independent of the library's recursions:

- oracle.Kinematics: link poses, twists, accelerations and body Jacobians J_L by direct sums over
  each link's path (checked against Pinocchio in test_oracle_kinematics_vs_pinocchio);
- oracle.parse_urdf: inertias, damping and friction read from the XML;
- Pinocchio, built joint by joint from that parse (it has a spherical joint; URDF parsers do not).

Round-off comparisons use conftest.RTOL; the RK4 energy checks use conftest.RK4_RTOL.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mbd_ros
from conftest import RK4_RTOL, assert_close
from oracle import (GRAVITY, Kinematics, PinOracle, axis_angle, force_transform, net_wrench,
                    normalize_quaternions, parse_urdf, pin_model_from_tree, qdot, quat_matrix,
                    random_state, subtree_wrench)
from random_trees import ALL_TYPES, random_tree_xml

# (seed, floating base). Seed 12 (floating) is the one tree of the first twenty whose last joint in
# depth-first order is fixed: a floating-base robot whose last link hangs from a fixed joint.
CASES = [(seed, seed % 2 == 1) for seed in range(8)] + [(12, True)]
SEEDS = [seed for seed, _ in CASES]
N_STATES = 10


class TreeCase:
    def __init__(self, seed, floating):
        self.seed = seed
        self.floating = floating
        self.xml = random_tree_xml(seed)
        self.tree = parse_urdf(self.xml)
        self.kin = Kinematics(self.tree, self.floating)
        self.slots, self.nq, self.nv = self.kin.slots, self.kin.nq, self.kin.nv
        self.robot = mbd_ros.load(self.xml, floating_base=self.floating, passive_forces=False)
        self.robot_passive = mbd_ros.load(self.xml, floating_base=self.floating, passive_forces=True)
        rng = np.random.default_rng(1000 + seed)
        self.states = []
        for _ in range(N_STATES):
            q, v = random_state(self.slots, self.nq, self.nv, rng)
            self.states.append((q, v, rng.standard_normal(self.nv), rng.standard_normal(self.nv)))
        self.label = f"tree {seed}{' (floating base)' if self.floating else ''}"

    def rows(self):
        return {name: i for i, name in enumerate(self.robot.wrench_joint_names)}

    def tau_passive(self, v):
        out = np.zeros(self.nv)
        for s in self.slots:
            if s.joint is not None and s.nv == 1:
                out[s.iv] = (-s.joint.damping * v[s.iv]
                             - s.joint.friction * np.tanh(v[s.iv] / mbd_ros.FRICTION_VELOCITY))
        return out

    def f_ext(self, rng, k=3):
        links = list(self.tree.links)
        return {str(n): rng.standard_normal(6) for n in rng.choice(links, size=min(k, len(links)), replace=False)}


@pytest.fixture(scope="module", params=CASES, ids=[f"seed{s}{'-floating' if f else ''}" for s, f in CASES])
def tc(request):
    return TreeCase(*request.param)


@pytest.fixture(scope="module")
def pin_oracle(tc, pin):
    model, link_frame = pin_model_from_tree(pin, tc.tree, tc.floating)
    return PinOracle(pin, model, link_frame, tc.tree, tc.floating)


# ---- the generator covers what it claims ------------------------------------------------------------

def test_random_trees_cover_all_joint_types():
    types, massless, mid_free = set(), 0, 0
    for seed in SEEDS:
        tree = parse_urdf(random_tree_xml(seed))
        types.update(j.type for j in tree.joints)
        massless += sum(link.mass == 0 for link in tree.links.values())
        mid_free += sum(j.type in ("floating", "spherical") and j.parent != tree.root for j in tree.joints)
        assert any(len(c) > 1 for c in tree.child_joints.values()), f"tree {seed} does not branch"
        assert 5 <= len(tree.links) <= 15
    assert types == set(ALL_TYPES), types
    assert massless > 0 and mid_free > 0
    assert any(floating and parse_urdf(random_tree_xml(seed)).joints_dfs()[-1].type == "fixed"
               for seed, floating in CASES)


# ---- structure ------------------------------------------------------------------------------------

def test_layout(tc):
    r = tc.robot
    assert (r.nq, r.nv) == (tc.nq, tc.nv)
    assert list(r.joint_names) == [s.name for s in tc.slots], "joint order: depth first, children in document order"
    assert list(r.idx_q) == [s.iq for s in tc.slots]
    assert list(r.idx_v) == [s.iv for s in tc.slots]
    assert list(r.joint_types) == ["revolute" if s.type == "continuous" else s.type for s in tc.slots]
    assert sorted(r.link_names) == sorted(tc.tree.links)
    names = list(r.wrench_joint_names)
    if tc.floating:
        assert names.pop(0) == "root_joint"
    assert sorted(names) == sorted(j.name for j in tc.tree.joints)
    assert list(r.closure_names) == []


def test_neutral_and_random_configuration(tc):
    r = tc.robot
    q0 = r.neutral()
    expected = np.zeros(tc.nq)
    for s in tc.slots:
        if s.type in ("spherical", "floating"):
            expected[s.iq + s.nq - 1] = 1.0      # identity quaternion [0 0 0 1]
    assert_close(q0, expected, f"{tc.label}: neutral()")
    rng = np.random.default_rng(tc.seed)
    for _ in range(5):
        q = r.random_configuration(rng)
        assert q.shape == (tc.nq,)
        for s in tc.slots:
            qs = q[s.iq:s.iq + s.nq]
            if s.type in ("revolute", "continuous"):
                assert -np.pi <= qs[0] <= np.pi, (s.name, qs)
            if s.type in ("spherical", "floating"):
                assert_close(np.linalg.norm(qs[-4:]), 1.0, f"{tc.label}: random_configuration quaternion of {s.name}")
        r.forward_dynamics(q, np.zeros(tc.nv), np.zeros(tc.nv))   # accepted as a valid q


def test_summary_names_the_joints(tc):
    text = tc.robot.summary()
    assert isinstance(text, str) and text.count("\n") >= 2
    for s in tc.slots:
        assert s.name in text


def test_link_pose_vs_independent_kinematics(tc):
    for k, (q, _, _, _) in enumerate(tc.states[:5]):
        T = tc.kin.poses(q)
        for link in tc.tree.links:
            assert_close(tc.robot.link_pose(q, link), T[link], f"{tc.label} state {k}: link_pose({link!r})")


# ---- identities between algorithms ----------------------------------------------------------------

def test_forward_and_inverse_dynamics_are_inverse(tc):
    r = tc.robot
    for k, (q, v, tau, a) in enumerate(tc.states):
        assert_close(r.forward_dynamics(q, v, r.inverse_dynamics(q, v, a)), a, f"{tc.label} state {k}: FD(ID(a))")
        assert_close(r.inverse_dynamics(q, v, r.forward_dynamics(q, v, tau)), tau, f"{tc.label} state {k}: ID(FD(tau))")
        rp = tc.robot_passive
        assert_close(rp.forward_dynamics(q, v, rp.inverse_dynamics(q, v, a)), a,
                     f"{tc.label} state {k}: FD(ID(a)) with passive forces")


def test_mass_matrix_identities(tc):
    r = tc.robot
    for k, (q, v, _, a) in enumerate(tc.states):
        M = r.mass_matrix(q)
        assert_close(M, M.T, f"{tc.label} state {k}: M symmetric")
        assert np.linalg.eigvalsh(M).min() > 0, f"{tc.label} state {k}: M not positive definite"
        g = r.inverse_dynamics(q, np.zeros(tc.nv), np.zeros(tc.nv))
        assert_close(r.gravity_forces(q), g, f"{tc.label} state {k}: gravity_forces = ID(q, 0, 0)")
        assert_close(r.bias_forces(q, v), r.inverse_dynamics(q, v, np.zeros(tc.nv)), f"{tc.label} state {k}: bias = ID(q, v, 0)")
        assert_close(r.inverse_dynamics(q, v, a), M @ a + r.bias_forces(q, v), f"{tc.label} state {k}: ID = M a + bias")
        cols = np.column_stack([r.inverse_dynamics(q, np.zeros(tc.nv), e) - g for e in np.eye(tc.nv)])
        assert_close(M, cols, f"{tc.label} state {k}: M columns = ID(q, 0, e_i) - ID(q, 0, 0)")


def test_mass_matrix_and_gravity_from_jacobians(tc):
    """M = sum_L J_L^T I_L J_L and gravity = -sum_L J_L^T I_L [R_L^T g; 0], with the body Jacobians
    of the independent kinematics."""
    for k, (q, _, _, _) in enumerate(tc.states[:4]):
        J = tc.kin.body_jacobians(q)
        T = tc.kin.poses(q)
        M = sum(J[L].T @ tc.kin.inertia[L] @ J[L] for L in tc.tree.links)
        G = -sum(J[L].T @ tc.kin.inertia[L] @ np.concatenate([T[L][:3, :3].T @ GRAVITY, np.zeros(3)])
                 for L in tc.tree.links)
        assert_close(tc.robot.mass_matrix(q), M, f"{tc.label} state {k}: M vs sum J^T I J")
        assert_close(tc.robot.gravity_forces(q), G, f"{tc.label} state {k}: gravity vs -sum J^T I g")


def test_energies(tc):
    r = tc.robot
    q0 = tc.states[0][0]
    for k, (q, v, _, _) in enumerate(tc.states):
        ke = r.kinetic_energy(q, v)
        assert_close(ke, 0.5 * v @ r.mass_matrix(q) @ v, f"{tc.label} state {k}: KE = 1/2 v^T M v")
        assert_close(ke, tc.kin.kinetic_energy(q, v), f"{tc.label} state {k}: KE = sum 1/2 V^T I V")
        if tc.floating:
            assert_close(r.potential_energy(q), tc.kin.potential_energy(q), f"{tc.label} state {k}: PE = -sum m g.c")
        else:   # the constant of links welded to a fixed base is a convention
            assert_close(r.potential_energy(q) - r.potential_energy(q0),
                         tc.kin.potential_energy(q) - tc.kin.potential_energy(q0),
                         f"{tc.label} state {k}: PE difference = -sum m g.dc")


def test_external_forces_through_jacobians(tc):
    """A wrench f_L on link L (link frame) enters as the generalized force J_L^T f_L."""
    r = tc.robot
    rng = np.random.default_rng(50 + tc.seed)
    for k, (q, v, tau, a) in enumerate(tc.states[:4]):
        f = tc.f_ext(rng)
        J = tc.kin.body_jacobians(q)
        gen = sum(J[L].T @ w for L, w in f.items())
        assert_close(r.inverse_dynamics(q, v, a, f_ext=f), r.inverse_dynamics(q, v, a) - gen,
                     f"{tc.label} state {k}: ID with f_ext on {sorted(f)} = ID - sum J^T f")
        assert_close(r.forward_dynamics(q, v, tau, f_ext=f), r.forward_dynamics(q, v, tau + gen),
                     f"{tc.label} state {k}: FD with f_ext on {sorted(f)} = FD(tau + sum J^T f)")
        F = np.zeros((len(r.link_names), 6))
        for i, name in enumerate(r.link_names):
            F[i] = f.get(name, 0.0)
        assert_close(r.forward_dynamics(q, v, tau, f_ext=F), r.forward_dynamics(q, v, tau, f_ext=f),
                     f"{tc.label} state {k}: f_ext as an array = as a dict")


def test_passive_forces(tc):
    r, rp = tc.robot, tc.robot_passive
    assert_close(rp.damping, [s.joint.damping if s.joint is not None and s.nv == 1 else 0.0
                              for s in tc.slots for _ in range(s.nv)], f"{tc.label}: robot.damping")
    assert_close(rp.friction, [s.joint.friction if s.joint is not None and s.nv == 1 else 0.0
                               for s in tc.slots for _ in range(s.nv)], f"{tc.label}: robot.friction")
    for k, (q, v, tau, a) in enumerate(tc.states[:5]):
        for vv in (v, v * mbd_ros.FRICTION_VELOCITY):
            tp = tc.tau_passive(vv)
            assert_close(rp.forward_dynamics(q, vv, tau), r.forward_dynamics(q, vv, tau + tp),
                         f"{tc.label} state {k}: FD with passive forces = FD(tau + tau_passive)")
            assert_close(rp.inverse_dynamics(q, vv, a), r.inverse_dynamics(q, vv, a) - tp,
                         f"{tc.label} state {k}: ID with passive forces = ID - tau_passive")


# ---- Newton-Euler balance of every link ---------------------------------------------------------

def _motion_subspace_projection(s, w):
    """S^T w for the joint's motion subspace in its child frame (wrench w = [f; tau])."""
    if s.type in ("revolute", "continuous"):
        return np.array([s.joint.axis @ w[3:]])
    if s.type == "prismatic":
        return np.array([s.joint.axis @ w[:3]])
    if s.type == "spherical":
        return w[3:]
    if s.type == "floating":
        return w
    if s.type == "planar":
        return np.array([w[0], w[1], w[5]])
    raise AssertionError(s.type)


def test_newton_euler_balance_of_every_link(tc):
    """joint wrench of L's parent joint - sum over child joints of their wrenches (moved to L's
    frame) = I_L (A_L - g_L) + V_L x* I_L V_L - f_ext_L, for every link (the fixed base's root
    excepted); the drive part S^T f of each movable joint's wrench = ID's tau; a fixed joint's
    wrench = Newton-Euler sum of its subtree."""
    r = tc.robot
    rows = tc.rows()
    rng = np.random.default_rng(70 + tc.seed)
    parent_row = {j.child: rows[j.name] for j in tc.tree.joints}
    if tc.floating:
        parent_row[tc.tree.root] = rows["root_joint"]
    for k, (q, v, _, a) in enumerate(tc.states[:5]):
        f = tc.f_ext(rng) if k % 2 else None
        W = r.joint_wrenches(q, v, a, f_ext=f)
        assert W.shape == (len(r.wrench_joint_names), 6)
        st = tc.kin.state(q, v, a)
        for L in tc.tree.links:
            if L not in parent_row:
                continue
            TL = st[L][0]
            lhs = W[parent_row[L]].copy()
            for j in tc.tree.child_joints[L]:
                lhs -= force_transform(np.linalg.inv(TL) @ st[j.child][0]) @ W[rows[j.name]]
            rhs = net_wrench(tc.kin.inertia[L], *st[L])
            if f is not None and L in f:
                rhs = rhs - f[L]
            assert_close(lhs, rhs, f"{tc.label} state {k}: Newton-Euler balance of link {L!r}")
        tau = r.inverse_dynamics(q, v, a, f_ext=f)
        for s in tc.slots:
            assert_close(_motion_subspace_projection(s, W[rows[s.name]]), tau[s.iv:s.iv + s.nv],
                         f"{tc.label} state {k}: S^T (wrench of {s.name!r}) = tau")
        for j in tc.tree.joints:
            if j.type == "fixed":
                assert_close(W[rows[j.name]], subtree_wrench(tc.tree, tc.kin.inertia, st, j.child, f),
                             f"{tc.label} state {k}: wrench of fixed joint {j.name!r} = subtree sum")


def test_joint_wrenches_do_not_depend_on_passive_forces(tc):
    """The wrench a joint transmits is fixed by the motion: the same with passive forces on."""
    for k, (q, v, _, a) in enumerate(tc.states[:3]):
        assert_close(tc.robot_passive.joint_wrenches(q, v, a), tc.robot.joint_wrenches(q, v, a),
                     f"{tc.label} state {k}: joint_wrenches with/without passive forces")


# ---- power and energy -----------------------------------------------------------------------------

def test_power_balance(tc):
    """d/dt (KE + PE) = sum_L V_L . (I_L (A_L - g_L) + V_L x* I_L V_L) (the gyroscopic term does no
    work) must equal the power of the joint forces and external wrenches, v.(tau + tau_passive) +
    sum_L V_L . f_L, with A_L from the accelerations forward_dynamics returns."""
    rng = np.random.default_rng(90 + tc.seed)
    for k, (q, v, tau, _) in enumerate(tc.states[:5]):
        for robot, tp in ((tc.robot, np.zeros(tc.nv)), (tc.robot_passive, tc.tau_passive(v))):
            f = tc.f_ext(rng)
            a = robot.forward_dynamics(q, v, tau, f_ext=f)
            st = tc.kin.state(q, v, a)
            dE = sum(st[L][1] @ net_wrench(tc.kin.inertia[L], *st[L]) for L in tc.tree.links)
            power = v @ (tau + tp) + sum(st[L][1] @ w for L, w in f.items())
            assert_close(dE, power, f"{tc.label} state {k}: d/dt(KE + PE) = joint + external power "
                                    f"(passive forces {'on' if robot is tc.robot_passive else 'off'})")


def _rk4_energy(tc, q, v, tau, T=1.0, dt=1e-3):
    """Integrate with classical RK4 in the ambient coordinates (quaternions renormalized when
    handed to the library and after each step), carrying the work W of tau. Returns
    (E(0), E(T), W(T), max KE)."""
    r = tc.robot

    def f(q, v):
        qn = normalize_quaternions(tc.slots, q)
        return qdot(tc.slots, q, v), r.forward_dynamics(qn, v, tau), v @ tau

    E = lambda q, v: r.kinetic_energy(q, v) + r.potential_energy(q)  # noqa: E731
    E0, W, ke_max = E(q, v), 0.0, r.kinetic_energy(q, v)
    for _ in range(int(round(T / dt))):
        k1 = f(q, v)
        k2 = f(q + dt / 2 * k1[0], v + dt / 2 * k1[1])
        k3 = f(q + dt / 2 * k2[0], v + dt / 2 * k2[1])
        k4 = f(q + dt * k3[0], v + dt * k3[1])
        q = normalize_quaternions(tc.slots, q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]))
        v = v + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        W += dt / 6 * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
        ke_max = max(ke_max, r.kinetic_energy(q, v))
    return E0, E(q, v), W, ke_max


@pytest.mark.parametrize("driven", [False, True], ids=["conservative", "driven"])
def test_energy_over_rk4_trajectory(tc, driven):
    """Passive-force-free, 1 s of RK4 at dt = 1e-3 from a random state: with tau = 0 the energy
    is conserved; with a constant random tau, E(T) - E(0) = work of tau. Tolerance RK4_RTOL
    relative to the largest kinetic energy on the way (the energy that moves around). tau is
    0.1 x standard normal: at full scale the light links of some trees spin up until RK4's
    truncation error at dt = 1e-3 reaches 1e-4 (it falls 16x when dt halves: the integrator, not
    the dynamics)."""
    rng = np.random.default_rng(300 + tc.seed)
    q, v = random_state(tc.slots, tc.nq, tc.nv, rng)
    tau = 0.1 * rng.standard_normal(tc.nv) if driven else np.zeros(tc.nv)
    E0, E1, W, ke_max = _rk4_energy(tc, q, 0.5 * v, tau)
    assert abs((E1 - E0) - W) <= RK4_RTOL * max(1.0, ke_max), (
        f"{tc.label}: E(1 s) - E(0) = {E1 - E0:.9g}, work of tau = {W:.9g}; |difference| "
        f"{abs(E1 - E0 - W):.2e} > {RK4_RTOL:g} x max KE {ke_max:.3g}")


# ---- configuration space --------------------------------------------------------------------------

def test_integrate(tc, pin_oracle):
    r = tc.robot
    for k, (q, v, _, _) in enumerate(tc.states[:5]):
        for dt in (0.0, 1e-3, 0.7):
            got = r.integrate(q, v, dt)
            exp = pin_oracle.integrate(q, v * dt)
            for s in tc.slots:
                if s.type in ("spherical", "floating"):
                    qa = got[s.iq + s.nq - 4:s.iq + s.nq]
                    assert_close(np.linalg.norm(qa), 1.0, f"{tc.label}: |quaternion| of {s.name} after integrate")
                    if qa @ exp[s.iq + s.nq - 4:s.iq + s.nq] < 0:   # q and -q: the same rotation
                        exp[s.iq + s.nq - 4:s.iq + s.nq] *= -1
                if s.type == "planar":   # an angle: compare modulo 2 pi
                    exp[s.iq + 2] += 2 * np.pi * round((got[s.iq + 2] - exp[s.iq + 2]) / (2 * np.pi))
            assert_close(got, exp, f"{tc.label} state {k}: integrate(q, v, {dt}) vs pin.integrate")
            if dt == 0.0:
                assert_close(got, q, f"{tc.label}: integrate(q, v, 0) = q")


def test_integrate_follows_qdot(tc):
    """d/dt integrate(q, v, t) at t = 0 = qdot(q, v): the configuration moves with the body-frame
    velocity conventions of the contract. Five-point stencil, h = 1e-3: truncation
    h^4 |q^(5)| / 30 ~ 1e-12 and round-off ~ 1e-16 |q| / h ~ 1e-13, far within RTOL."""
    r = tc.robot
    h = 1e-3
    for k, (q, v, _, _) in enumerate(tc.states[:3]):
        p = {m: r.integrate(q, v, m * h) for m in (-2, -1, 1, 2)}
        for s in tc.slots:   # an angle may be wrapped to [-pi, pi]: unwrap near q
            for i in ([s.iq] if s.type in ("revolute", "continuous") else [s.iq + 2] if s.type == "planar" else []):
                for m in p:
                    p[m][i] -= 2 * np.pi * np.round((p[m][i] - q[i]) / (2 * np.pi))
        fd = (p[-2] - 8 * p[-1] + 8 * p[1] - p[2]) / (12 * h)
        assert_close(fd, qdot(tc.slots, q, v), f"{tc.label} state {k}: d/dt integrate(q, v, t) at t = 0")


# ---- against Pinocchio ----------------------------------------------------------------------------

def test_random_trees_vs_pinocchio(tc, pin_oracle):
    r, o = tc.robot, pin_oracle
    rows = tc.rows()
    rng = np.random.default_rng(500 + tc.seed)
    for k, (q, v, tau, a) in enumerate(tc.states):
        f = tc.f_ext(rng) if k % 2 else None
        assert_close(r.forward_dynamics(q, v, tau, f_ext=f), o.aba(q, v, tau, f), f"{tc.label} state {k}: FD vs pin.aba")
        assert_close(r.inverse_dynamics(q, v, a, f_ext=f), o.rnea(q, v, a, f), f"{tc.label} state {k}: ID vs pin.rnea")
        assert_close(r.mass_matrix(q), o.crba(q), f"{tc.label} state {k}: M vs pin.crba")
        assert_close(r.bias_forces(q, v), o.nle(q, v), f"{tc.label} state {k}: bias vs pin.nonLinearEffects")
        W = r.joint_wrenches(q, v, a, f_ext=f)
        for name, fj in o.joint_forces(q, v, a, f).items():
            assert_close(W[rows[name]], fj, f"{tc.label} state {k}: wrench of {name!r} vs pin data.f")
        assert_close(r.kinetic_energy(q, v), o.kinetic_energy(q, v), f"{tc.label} state {k}: KE vs pin")


def test_oracle_kinematics_vs_pinocchio(tc, pin_oracle):
    """Checks the test's own reference kinematics (oracle.Kinematics) against Pinocchio."""
    for k, (q, v, _, a) in enumerate(tc.states[:3]):
        st = tc.kin.state(q, v, a)
        pk = pin_oracle.link_kinematics(q, v, a)
        for L in tc.tree.links:
            for i, what in enumerate(("pose", "twist", "acceleration")):
                assert_close(st[L][i], pk[L][i], f"{tc.label} state {k}: oracle {what} of {L!r} vs Pinocchio")


# ---- batch and out= forms -------------------------------------------------------------------------

def test_batch_forms_equal_single_calls(tc):
    r = tc.robot
    Q = np.array([s[0] for s in tc.states])
    V = np.array([s[1] for s in tc.states])
    TAU = np.array([s[2] for s in tc.states])
    A = np.array([s[3] for s in tc.states])
    QDD = r.forward_dynamics_batch(Q, V, TAU)
    T = r.inverse_dynamics_batch(Q, V, A)
    assert QDD.shape == T.shape == (N_STATES, tc.nv)
    for k in range(N_STATES):
        assert_close(QDD[k], r.forward_dynamics(Q[k], V[k], TAU[k]), f"{tc.label} row {k}: forward_dynamics_batch")
        assert_close(T[k], r.inverse_dynamics(Q[k], V[k], A[k]), f"{tc.label} row {k}: inverse_dynamics_batch")
    rp = tc.robot_passive
    QDDp = rp.forward_dynamics_batch(Q, V, TAU)
    for k in range(N_STATES):
        assert_close(QDDp[k], rp.forward_dynamics(Q[k], V[k], TAU[k]), f"{tc.label} row {k}: forward_dynamics_batch (passive)")


def test_out_arguments(tc):
    r = tc.robot
    q, v, tau, a = tc.states[0]
    out = np.full(tc.nv, np.nan)
    assert r.forward_dynamics(q, v, tau, out=out) is out
    assert_close(out, r.forward_dynamics(q, v, tau), f"{tc.label}: forward_dynamics(out=)")
    out = np.full(tc.nv, np.nan)
    assert r.inverse_dynamics(q, v, a, out=out) is out
    assert_close(out, r.inverse_dynamics(q, v, a), f"{tc.label}: inverse_dynamics(out=)")
    out = np.full((tc.nv, tc.nv), np.nan)
    assert r.mass_matrix(q, out=out) is out
    assert_close(out, r.mass_matrix(q), f"{tc.label}: mass_matrix(out=)")
    out = np.full((len(r.wrench_joint_names), 6), np.nan)
    assert r.joint_wrenches(q, v, a, out=out) is out
    assert_close(out, r.joint_wrenches(q, v, a), f"{tc.label}: joint_wrenches(out=)")


# ---- closed forms ---------------------------------------------------------------------------------

INERTIAL = ('<inertial><origin xyz="{c}" rpy="0 0 0"/><mass value="{m}"/>'
            '<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def _one_body(jtype, axis, m, c, I, extra=""):
    return (f'<robot name="one"><link name="base"/>'
            f'<link name="body">{INERTIAL.format(c=c, m=m, ixx=I[0], iyy=I[1], izz=I[2])}</link>'
            f'<joint name="j" type="{jtype}"><parent link="base"/><child link="body"/>'
            f'<axis xyz="{axis}"/>{extra}</joint></robot>')


def test_closed_form_pendulum():
    """Pendulum about y, com at (l, 0, 0): (I_yy + m l^2) th'' = g m l cos th + tau; the pivot
    wrench is m (a_c - g) with a_c = (-l th'^2, 0, -l th'') in the link frame, torque c x force +
    I_c alpha (omega x I_c omega = 0 for omega along a principal axis)."""
    m, l, I = 1.7, 0.6, (0.02, 0.05, 0.03)
    r = mbd_ros.load(_one_body("revolute", "0 1 0", m, f"{l} 0 0", I,
                               '<limit lower="-4" upper="4" effort="1" velocity="1"/>'))
    g = 9.81
    for th, thd, tau in ((0.3, -1.2, 0.7), (-2.0, 0.4, -1.1), (1.0, 0.0, 0.0)):
        q, v = np.array([th]), np.array([thd])
        thdd = (g * m * l * math.cos(th) + tau) / (I[1] + m * l * l)
        assert_close(r.forward_dynamics(q, v, np.array([tau])), [thdd], f"pendulum th={th}: FD")
        assert_close(r.mass_matrix(q), [[I[1] + m * l * l]], f"pendulum th={th}: M")
        assert_close(r.gravity_forces(q), [-g * m * l * math.cos(th)], f"pendulum th={th}: gravity")
        assert_close(r.potential_energy(q), -g * m * l * math.sin(th), f"pendulum th={th}: PE")
        R = np.array([[math.cos(th), 0, math.sin(th)], [0, 1, 0], [-math.sin(th), 0, math.cos(th)]])
        force = m * (np.array([-l * thd ** 2, 0, -l * thdd]) - R.T @ [0, 0, -g])
        torque = np.cross([l, 0, 0], force) + np.array([0, I[1] * thdd, 0])
        W = r.joint_wrenches(q, v, np.array([thdd]))
        assert_close(W[list(r.wrench_joint_names).index("j")], np.concatenate([force, torque]),
                     f"pendulum th={th}: pivot wrench")
        assert_close(torque[1], tau, f"pendulum th={th}: closed form self-check")


def test_closed_form_vertical_slider_and_damping():
    """Mass on a vertical prismatic joint: m x'' = tau - m g - d x' - F tanh(x'/v0)."""
    m, d, F = 2.5, 0.8, 0.3
    xml = _one_body("prismatic", "0 0 1", m, "0.1 0.2 0.3", (0.1, 0.1, 0.1),
                    f'<limit lower="-1" upper="1" effort="1" velocity="1"/><dynamics damping="{d}" friction="{F}"/>')
    r = mbd_ros.load(xml)
    for xd, tau in ((0.5, 3.0), (-2e-4, 0.0), (0.0, 30.0)):
        exp = (tau - m * 9.81 - d * xd - F * math.tanh(xd / mbd_ros.FRICTION_VELOCITY)) / m
        assert_close(r.forward_dynamics(np.array([0.2]), np.array([xd]), np.array([tau])), [exp],
                     f"slider x'={xd}, tau={tau}: FD")
    assert_close(r.damping, [d], "slider: damping")
    assert_close(r.friction, [F], "slider: friction")


def test_closed_form_free_body():
    """A free rigid body with its com at the origin, tau = 0: body-frame linear acceleration
    R^T g - omega x v, Euler's equations I omega' = -omega x I omega."""
    m, I = 3.0, np.array([0.2, 0.3, 0.4])
    xml = ('<robot name="free"><link name="body">'
           + INERTIAL.format(c="0 0 0", m=m, ixx=I[0], iyy=I[1], izz=I[2]) + '</link></robot>')
    r = mbd_ros.load(xml, floating_base=True)
    rng = np.random.default_rng(3)
    for _ in range(5):
        quat = rng.standard_normal(4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([rng.standard_normal(3), quat])
        v = rng.standard_normal(6)
        R = quat_matrix(quat)
        lin, w = v[:3], v[3:]
        exp = np.concatenate([R.T @ GRAVITY - np.cross(w, lin), -np.cross(w, I * w) / I])
        assert_close(r.forward_dynamics(q, v, np.zeros(6)), exp, "free body: FD")
        assert_close(r.kinetic_energy(q, v), 0.5 * m * lin @ lin + 0.5 * w @ (I * w), "free body: KE")
        assert_close(r.potential_energy(q), m * 9.81 * q[2], "free body: PE")
        assert_close(r.total_mass, m, "free body: total mass")
        assert r.nq == 7 and r.nv == 6 and list(r.joint_names) == ["root_joint"]


# ---- planar joints with a random plane normal ---------------------------------------------------

@pytest.mark.parametrize("seed", [21, 26])
def test_planar_joint_with_random_normal(seed):
    """Planar joints whose <axis> (the plane normal n) is a random unit vector. The in-plane
    directions e1, e2 are the library's choice, so only basis-free facts are checked: the child
    pose relative to the joint frame is (Rot(n, theta), x e1 + y e2) with e1, e2, n a right-handed
    orthonormal frame; and the dynamics identities and RK4 energy conservation hold."""
    xml = random_tree_xml(seed, planar_normal="random")
    tree = parse_urdf(xml)
    planar = [j for j in tree.joints if j.type == "planar"]
    assert len(planar) >= 2 and not any(np.allclose(j.axis, [0, 0, 1]) for j in planar)
    r = mbd_ros.load(xml, passive_forces=False)
    slots, nv = Kinematics(tree, False).slots, r.nv
    slot = {s.name: s for s in slots}
    rng = np.random.default_rng(seed)
    q0 = r.random_configuration(rng)
    for j in planar:
        s = slot[j.name]

        def rel(x, y, th):
            q = q0.copy()
            q[s.iq:s.iq + 3] = [x, y, th]
            return np.linalg.inv(r.link_pose(q, j.parent) @ j.origin) @ r.link_pose(q, j.child)

        e1, e2 = rel(1, 0, 0)[:3, 3], rel(0, 1, 0)[:3, 3]
        assert_close(np.array([[e1 @ e1, e1 @ e2], [e2 @ e1, e2 @ e2]]), np.eye(2), f"{j.name}: e1, e2 orthonormal")
        assert_close(np.cross(e1, e2), j.axis, f"{j.name}: e1 x e2 = the <axis> normal")
        for x, y, th in ((0.3, -0.7, 1.1), (-1.2, 0.4, -2.5)):
            T = rel(x, y, th)
            expected = np.eye(4)
            expected[:3, :3] = axis_angle(j.axis, th)
            expected[:3, 3] = x * e1 + y * e2
            assert_close(T, expected, f"{j.name}: pose at (x, y, theta) = {(x, y, th)}")
    for k in range(5):
        q = r.random_configuration(rng)
        v, tau, a = rng.standard_normal((3, nv))
        M = r.mass_matrix(q)
        assert_close(M, M.T, f"planar tree {seed} state {k}: M symmetric")
        assert np.linalg.eigvalsh(M).min() > 0
        assert_close(r.forward_dynamics(q, v, r.inverse_dynamics(q, v, a)), a, f"planar tree {seed} state {k}: FD(ID(a))")
        assert_close(r.inverse_dynamics(q, v, a), M @ a + r.bias_forces(q, v), f"planar tree {seed} state {k}: ID = M a + b")
        assert_close(r.kinetic_energy(q, v), 0.5 * v @ M @ v, f"planar tree {seed} state {k}: KE")
    tc = type("PlanarCase", (), {})()
    tc.robot, tc.slots = r, slots
    q, v = r.random_configuration(rng), 0.5 * rng.standard_normal(nv)
    E0, E1, W, ke_max = _rk4_energy(tc, q, v, np.zeros(nv))
    assert abs(E1 - E0) <= RK4_RTOL * max(1.0, ke_max), f"planar tree {seed}: energy drift {E1 - E0:.3e} over 1 s (max KE {ke_max:.3g})"
