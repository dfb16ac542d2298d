"""Independent references for the closed-loop tests (a helper module, not a test).

Nothing here imports mbd_ros. Link poses, mass matrices, bias forces and Jacobians come from
Pinocchio (through oracle.PinOracle, which maps our q/v layout to Pinocchio's by joint name);
the loop constraints are this module's own definitions, written from the relative pose of the
two cut frames, independently of mbd_ros/kernels/closure_kinematics.py:

    T_A = pose of the parent-side cut frame (parent link * parent_origin),
    T_B = pose of the child-side cut frame (child link * child_origin),
    R = R_A^T R_B,  p = R_A^T (p_B - p_A)    (B relative to A, in A's axes),
    a = axis (in the joint frame), (e1, e2) = an orthonormal pair normal to a,
    rotvec(R) = the rotation vector of R (log map), axis2 (universal) fixed in B.

    type         rows  g
    revolute      5    p, e1.(R a), e2.(R a)
    prismatic     5    e1.p, e2.p, rotvec(R)
    cylindrical   4    e1.p, e2.p, e1.(R a), e2.(R a)
    universal     4    p, a.(R axis2) - a.axis2
    spherical     3    p
    planar        3    a.p, e1.(R a), e2.(R a)
    fixed         6    p, rotvec(R)
    distance      1    |p| - length

The rows differ from the library's (its orientation locks are products of the frame axes, its
positions are world components), so only row-independent quantities are compared: the joint
accelerations, the joint-space loop force G_l^T lambda, and the cut wrench.

G_l and gamma are found by finite differences on vector-space trees (revolute and prismatic
joints only, so q + v t is a valid motion with qdd = 0): 4-point central differences for
dg/dq, and the 5-point stencil for d^2/dt^2 g(q + v t) at t = 0 (= gamma, since qdd = 0 along
that path). Step FD_STEP = 1e-3: truncation O(h^4) ~ 1e-12 times the 5th/6th derivatives
(~ |v|^6 * 0.5 m for these mechanisms), round-off ~ 1e-16 / h^2 ~ 1e-10 for the second
derivative: about 1e-10 absolute in gamma, ~1e-13 in G_l.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from oracle import PinOracle, parse_urdf, pin_model_from_xml, rpy_matrix, skew

FD_STEP = 1e-3
ROW_COUNT = {"revolute": 5, "prismatic": 5, "cylindrical": 4, "universal": 4, "spherical": 3,
             "planar": 3, "fixed": 6, "distance": 1}


# ==== small geometry ============================================================================

def normal_pair(axis):
    """(e1, e2): unit vectors with (e1, e2, axis) right-handed orthonormal."""
    a = np.asarray(axis, float)
    helper = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.6 else np.array([0.0, 1.0, 0.0])
    e1 = helper - helper.dot(a) * a
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def axis_rotation(axis, angle):
    return Rotation.from_rotvec(np.asarray(axis, float) * angle).as_matrix()


def homogeneous(rot=None, pos=None):
    T = np.eye(4)
    if rot is not None:
        T[:3, :3] = rot
    if pos is not None:
        T[:3, 3] = pos
    return T


def origin_dict(T):
    """{xyz, rpy} of a pose (URDF convention R = Rz(yaw) Ry(pitch) Rx(roll))."""
    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")
    out = {"xyz": [float(x) for x in T[:3, 3]], "rpy": [float(x) for x in rpy]}
    assert np.allclose(rpy_matrix(out["rpy"]), T[:3, :3], atol=1e-12)
    return out


def origin_matrix(origin):
    if origin is None:
        return np.eye(4)
    return homogeneous(rpy_matrix(origin.get("rpy", (0, 0, 0))), origin.get("xyz", (0, 0, 0)))


def random_unit(rng):
    x = rng.standard_normal(3)
    return x / np.linalg.norm(x)


# ==== the test's own cut residuals ==============================================================

def cut_residual(cut_type, TA, TB, axis=(0, 0, 1), axis2=None, length=None):
    """g (rows,) of one cut from the world poses of its two frames (definitions: module doc)."""
    RA, RB = TA[:3, :3], TB[:3, :3]
    R = RA.T @ RB
    p = RA.T @ (TB[:3, 3] - TA[:3, 3])
    a = np.asarray(axis, float)
    e1, e2 = normal_pair(a)
    Ra = R @ a
    if cut_type == "spherical":
        return p.copy()
    if cut_type == "revolute":
        return np.concatenate([p, [e1 @ Ra, e2 @ Ra]])
    if cut_type == "prismatic":
        return np.concatenate([[e1 @ p, e2 @ p], Rotation.from_matrix(R).as_rotvec()])
    if cut_type == "cylindrical":
        return np.array([e1 @ p, e2 @ p, e1 @ Ra, e2 @ Ra])
    if cut_type == "universal":
        a2 = np.asarray(axis2, float)
        return np.concatenate([p, [a @ R @ a2 - a @ a2]])
    if cut_type == "planar":
        return np.array([a @ p, e1 @ Ra, e2 @ Ra])
    if cut_type == "fixed":
        return np.concatenate([p, Rotation.from_matrix(R).as_rotvec()])
    if cut_type == "distance":
        return np.array([np.linalg.norm(p) - length])
    raise AssertionError(cut_type)


def cut_joint_motion(cut_type, axis, axis2, rng):
    """A relative pose T_A^-1 T_B that the cut joint allows (random joint coordinates), used to
    place frame A so that the loop is closed with the cut joint away from its zero."""
    a = np.asarray(axis, float)
    e1, e2 = normal_pair(a)
    angle, shift = rng.uniform(-0.8, 0.8), rng.uniform(-0.1, 0.1)
    if cut_type == "revolute":
        return homogeneous(axis_rotation(a, angle))
    if cut_type == "prismatic":
        return homogeneous(pos=a * shift)
    if cut_type == "cylindrical":
        return homogeneous(axis_rotation(a, angle), a * shift)
    if cut_type == "universal":
        return homogeneous(axis_rotation(a, angle) @ axis_rotation(axis2, rng.uniform(-0.8, 0.8)))
    if cut_type == "spherical":
        return homogeneous(Rotation.from_rotvec(rng.uniform(-0.6, 0.6, 3)).as_matrix())
    if cut_type == "planar":
        return homogeneous(axis_rotation(a, angle), shift * e1 + rng.uniform(-0.1, 0.1) * e2)
    if cut_type == "fixed":
        return np.eye(4)
    if cut_type == "distance":
        # the rod: any relative rotation, origins `length` apart (length set by the caller)
        return homogeneous(Rotation.from_rotvec(rng.uniform(-0.6, 0.6, 3)).as_matrix(),
                           random_unit(rng) * rng.uniform(0.15, 0.3))
    raise AssertionError(cut_type)


def free_twists(cut_type, axis, axis2, TA, TB):
    """Columns: the relative twists of B w.r.t. A that the cut joint allows, in B's axes about
    B's origin ([linear; angular]). A cut wrench does no work on them. Distance: None (handled
    by its own check: the wrench is a force along the rod)."""
    RB_A = TB[:3, :3].T @ TA[:3, :3]              # A's axes -> B's axes
    a = RB_A @ np.asarray(axis, float)
    e1, e2 = (RB_A @ e for e in normal_pair(axis))
    lin = lambda u: np.concatenate([u, np.zeros(3)])   # noqa: E731
    ang = lambda u: np.concatenate([np.zeros(3), u])   # noqa: E731
    if cut_type == "universal":
        cols = [ang(a), ang(np.asarray(axis2, float))]
    else:
        cols = {"revolute": [ang(a)], "prismatic": [lin(a)], "cylindrical": [lin(a), ang(a)],
                "spherical": [ang(e) for e in np.eye(3)],
                "planar": [lin(e1), lin(e2), ang(a)], "fixed": [], "distance": None}[cut_type]
    return None if cols is None else (np.array(cols).T if cols else np.zeros((6, 0)))


def constraint_wrench_basis(cut_type, axis, axis2, TA, TB):
    """(6, rows): the wrenches (B's axes, about B's origin) a cut joint can transmit: the
    annihilator of free_twists; for distance the force along the rod."""
    if cut_type == "distance":
        d = TB[:3, :3].T @ (TB[:3, 3] - TA[:3, 3])
        return np.concatenate([d / np.linalg.norm(d), np.zeros(3)])[:, None]
    twists = free_twists(cut_type, axis, axis2, TA, TB)
    if twists.shape[1] == 0:
        return np.eye(6)
    u, s, vt = np.linalg.svd(twists.T)
    return vt[len(s):].T if len(s) else np.eye(6)


# ==== mechanism builder =========================================================================

@dataclass
class JointSpec:
    name: str
    type: str            # revolute | prismatic | continuous | fixed
    parent: str
    child: str
    xyz: tuple
    rpy: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)


def _fmt(x):
    return " ".join(f"{float(v):.17g}" for v in x)


def urdf_text(name, joints, rng, root="ground"):
    """URDF XML of a tree: `joints` (JointSpec) in document order, random inertials (mass
    0.3-1 kg, centre of mass within 0.15 m, box-like principal inertias, random principal axes)."""
    links = [root] + [j.child for j in joints]
    parts = [f'<?xml version="1.0"?>\n<robot name="{name}">']
    for link in links:
        mass = rng.uniform(0.3, 1.0)
        dims = rng.uniform(0.04, 0.3, 3)
        principal = mass / 12.0 * np.array([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2,
                                            dims[0] ** 2 + dims[1] ** 2])
        com = rng.uniform(-0.15, 0.15, 3)
        rpy = rng.uniform(-math.pi, math.pi, 3)
        parts.append(
            f'  <link name="{link}"><inertial><origin xyz="{_fmt(com)}" rpy="{_fmt(rpy)}"/>'
            f'<mass value="{mass:.17g}"/><inertia ixx="{principal[0]:.17g}" ixy="0" ixz="0" '
            f'iyy="{principal[1]:.17g}" iyz="0" izz="{principal[2]:.17g}"/></inertial></link>')
    for j in joints:
        limit = ('<limit lower="-10" upper="10" effort="100" velocity="100"/>'
                 if j.type in ("revolute", "prismatic") else "")
        axis = f'<axis xyz="{_fmt(j.axis)}"/>' if j.type != "fixed" else ""
        parts.append(
            f'  <joint name="{j.name}" type="{j.type}"><parent link="{j.parent}"/>'
            f'<child link="{j.child}"/><origin xyz="{_fmt(j.xyz)}" rpy="{_fmt(j.rpy)}"/>'
            f'{axis}{limit}</joint>')
    parts.append("</robot>")
    return "\n".join(parts)


def random_branch(prefix, types, rng, root="ground", weld_tip=False):
    """JointSpecs of a serial branch from `root` with joints of the given types (random axes,
    offsets 0.1-0.3 m); weld_tip adds a link welded by a fixed joint at an offset
    (`<prefix>_tool`), so that a cut on it goes through a link placement in its body."""
    joints, parent = [], root
    for k, jtype in enumerate(types):
        child = f"{prefix}{k + 1}"
        joints.append(JointSpec(f"{prefix}_joint{k + 1}", jtype, parent, child,
                                tuple(random_unit(rng) * rng.uniform(0.1, 0.3)),
                                tuple(rng.uniform(-1.0, 1.0, 3)), tuple(random_unit(rng))))
        parent = child
    if weld_tip:
        joints.append(JointSpec(f"{prefix}_weld", "fixed", parent, f"{prefix}_tool",
                                tuple(rng.uniform(-0.15, 0.15, 3)), tuple(rng.uniform(-1, 1, 3))))
        parent = f"{prefix}_tool"
    return joints, parent


# ==== reference dynamics ========================================================================

def fd_jacobian(fun, q, h=FD_STEP):
    """d fun / dq by 4-point central differences (q in a vector space)."""
    q = np.asarray(q, float)
    cols = []
    for k in range(len(q)):
        e = np.zeros(len(q))
        e[k] = h
        cols.append((-fun(q + 2 * e) + 8 * fun(q + e) - 8 * fun(q - e) + fun(q - 2 * e)) / (12 * h))
    return np.array(cols).T


class LoopReference:
    """Dense KKT reference of a closed-loop robot: Pinocchio's M (crba) and b (rnea with zero
    acceleration), this module's cut residuals, G_l and gamma by finite differences."""

    def __init__(self, pin, xml, closures, floating_base=False):
        self.pin = pin
        self.tree = parse_urdf(xml)
        model, link_frame = pin_model_from_xml(pin, xml, floating_base)
        self.oracle = PinOracle(pin, model, link_frame, self.tree, floating_base)
        self.model, self.data = model, model.createData()
        self.nq, self.nv = self.oracle.nq, self.oracle.nv
        self.vector_space = all(s.type in ("revolute", "continuous", "prismatic")
                                for s in self.oracle.slots)
        self.cuts = []
        for c in closures["closures"]:
            self.cuts.append(dict(
                name=c["name"], type=c["type"], parent=c["parent"], child=c["child"],
                TA=origin_matrix(c.get("parent_origin")), TB=origin_matrix(c.get("child_origin")),
                axis=np.asarray(c.get("axis", (0, 0, 1)), float),
                axis2=None if c.get("axis2") is None else np.asarray(c["axis2"], float),
                length=c.get("length")))
        self.rows = []
        r = 0
        for c in self.cuts:
            n = ROW_COUNT[c["type"]]
            self.rows.append(slice(r, r + n))
            r += n
        self.n_rows = r

    # ---- kinematics (Pinocchio) ----
    def link_poses(self, q):
        pin = self.pin
        pin.forwardKinematics(self.model, self.data, self.oracle.q_pin(q))
        out = {}
        for link, (jid, P) in self.oracle.link_frame.items():
            out[link] = (self.data.oMi[jid] * P).homogeneous
        return out

    def cut_frames(self, q):
        """[(T_A, T_B)] world poses of the cut frames."""
        poses = self.link_poses(q)
        return [(poses[c["parent"]] @ c["TA"], poses[c["child"]] @ c["TB"]) for c in self.cuts]

    def residual(self, q):
        frames = self.cut_frames(q)
        return np.concatenate([cut_residual(c["type"], TA, TB, c["axis"], c["axis2"], c["length"])
                               for c, (TA, TB) in zip(self.cuts, frames)])

    # ---- finite differences (vector-space trees only) ----
    def jacobian(self, q, h=FD_STEP):
        assert self.vector_space, "finite-difference G_l needs revolute/prismatic joints only"
        return fd_jacobian(self.residual, q, h)

    def gamma(self, q, v, h=FD_STEP, residual=None):
        """d^2/dt^2 g(q + v t) at t = 0 (5-point stencil)."""
        assert self.vector_space
        g = self.residual if residual is None else residual
        return (-g(q + 2 * h * v) + 16 * g(q + h * v) - 30 * g(q) + 16 * g(q - h * v)
                - g(q - 2 * h * v)) / (12 * h * h)

    # ---- dynamics ----
    def mass_and_bias(self, q, v):
        return self.oracle.crba(q), self.oracle.rnea(q, v, np.zeros(self.nv))

    def forward_dynamics(self, q, v, tau):
        """Dense KKT [M -G^T; G 0][qdd; lam] = [tau - b; -gamma], least squares (minimum norm
        for redundant rows). Returns dict with qdd, lam, G, gamma, M, b, loop_force = G^T lam."""
        M, b = self.mass_and_bias(q, v)
        G = self.jacobian(q)
        gam = self.gamma(q, v)
        n, m = self.nv, self.n_rows
        kkt = np.zeros((n + m, n + m))
        kkt[:n, :n] = M
        kkt[:n, n:] = -G.T
        kkt[n:, :n] = G
        sol = np.linalg.lstsq(kkt, np.concatenate([tau - b, -gam]), rcond=None)[0]
        qdd, lam = sol[:n], sol[n:]
        return dict(qdd=qdd, lam=lam, G=G, gamma=gam, M=M, b=b, loop_force=G.T @ lam)

    # ---- cut wrench Jacobians ----
    def point_jacobian(self, q, link, T_point):
        """(6, nv) in our v order: [linear velocity of the link-fixed point at T_point's origin;
        angular velocity], both in T_point's axes (world pose T_point)."""
        pin = self.pin
        jid, _ = self.oracle.link_frame[link]
        if jid == 0:
            return np.zeros((6, self.nv))
        pin.computeJointJacobians(self.model, self.data, self.oracle.q_pin(q))
        J = pin.getJointJacobian(self.model, self.data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        r = T_point[:3, 3] - self.data.oMi[jid].translation
        lin = J[:3] - skew(r) @ J[3:]
        R = T_point[:3, :3]
        return np.vstack([R.T @ lin, R.T @ J[3:]])[:, self.oracle.vperm]

    def cut_wrench_map(self, q, s):
        """K (6, nv): a wrench w that cut s exerts on its child link (B's axes, about B's origin),
        with -w on the parent link at the same point, is the joint-space force K^T w."""
        c = self.cuts[s]
        _, TB = self.cut_frames(q)[s]
        return self.point_jacobian(q, c["child"], TB) - self.point_jacobian(q, c["parent"], TB)


# ==== Pinocchio's constraint dynamics ===========================================================

def pin_constraint_models(ref, contact_type):
    """One RigidConstraintModel per cut (joint1 = parent side, joint2 = child side, placements of
    the cut frames in the joint frames, LOCAL)."""
    pin = ref.pin
    models = pin.StdVec_RigidConstraintModel()
    for c in ref.cuts:
        j1, P1 = ref.oracle.link_frame[c["parent"]]
        j2, P2 = ref.oracle.link_frame[c["child"]]
        A = P1 * pin.SE3(c["TA"][:3, :3].copy(), c["TA"][:3, 3].copy())
        B = P2 * pin.SE3(c["TB"][:3, :3].copy(), c["TB"][:3, 3].copy())
        models.append(pin.RigidConstraintModel(contact_type, ref.model, j1, A, j2, B,
                                               pin.ReferenceFrame.LOCAL))
    return models


def pin_constraint_dynamics(ref, q, v, tau, contact_type, accuracy=1e-14, mu=1e-12, iterations=100):
    """(qdd in our layout, [contact force of each constraint (3,) or (6,)], constraint models,
    constraint datas, pin data). Pinocchio's contact_force is the wrench on joint1's side (here
    the cut's parent link) in the LOCAL axes of its placement (frame A), about A's origin
    (checked by test_pinocchio_constraint_dynamics). ProximalSettings: Pinocchio's default
    (mu = 0, 1 iteration) returns NaN on the redundant welded 4R chain (measured); mu = 1e-12 with
    100 iterations converges to the minimum-norm force within 3 iterations there."""
    pin = ref.pin
    models = pin_constraint_models(ref, contact_type)
    data = ref.model.createData()
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(ref.model, data, models, datas)
    prox = pin.ProximalSettings(accuracy, mu, iterations)
    a = pin.constraintDynamics(ref.model, data, ref.oracle.q_pin(q), ref.oracle.v_pin(v),
                               ref.oracle.v_pin(tau), models, datas, prox)
    forces = [np.array(cd.contact_force.vector if hasattr(cd.contact_force, "vector")
                       else cd.contact_force, dtype=float) for cd in datas]
    return ref.oracle.v_ours(a), forces, models, datas, data


# ==== planar four-bar in closed form ============================================================

def fourbar_closed_form(theta2, O2, O4, l2, l3, l4, branch_sign):
    """Freudenstein solution of a planar four-bar (angles in the plane from +x): crank O2-A of
    length l2 at theta2, coupler A-B (l3), rocker O4-B (l4). Returns (theta3, theta4) on the
    branch where sign(cross(B - A, O4 - A)) == branch_sign, or None out of reach."""
    A = np.asarray(O2, float) + l2 * np.array([math.cos(theta2), math.sin(theta2)])
    P = np.asarray(O4, float) - A
    # |P + l4 e(theta4)|^2 = l3^2  ->  Px cos t4 + Py sin t4 = (l3^2 - |P|^2 - l4^2) / (2 l4)
    k = (l3 ** 2 - P @ P - l4 ** 2) / (2 * l4)
    r = math.hypot(P[0], P[1])
    if abs(k) > r:
        return None
    base, spread = math.atan2(P[1], P[0]), math.acos(k / r)
    for theta4 in (base + spread, base - spread):
        B = np.asarray(O4, float) + l4 * np.array([math.cos(theta4), math.sin(theta4)])
        AB, AO4 = B - A, np.asarray(O4, float) - A
        if np.sign(AB[0] * AO4[1] - AB[1] * AO4[0]) == branch_sign:
            return math.atan2(AB[1], AB[0]), theta4
    raise AssertionError("no root on the requested branch")


def fourbar_rates(theta2, theta3, theta4, l2, l3, l4):
    """(dtheta3/dtheta2, dtheta4/dtheta2) from the time derivative of the loop equation
    l2 e(t2) + l3 e(t3) = (l1, 0) + l4 e(t4), dotted with e(t4) and e(t3)."""
    w3 = -l2 * math.sin(theta4 - theta2) / (l3 * math.sin(theta4 - theta3))
    w4 = l2 * math.sin(theta3 - theta2) / (l4 * math.sin(theta3 - theta4))
    return w3, w4


# ==== small test mechanisms =====================================================================

# cut type -> (joint types of the parent-side branch, weld a tool link on its tip?,
#              joint types of the child-side branch (None: the cut's child is the ground), weld?)
# Each branch hangs from the ground; rows = sum of joint freedoms - mobility (1 everywhere):
# the cut is never redundant for generic (random) joint axes.
CUT_CASES = {
    "revolute": (["revolute", "prismatic", "revolute"], False, ["revolute"] * 3, False),
    "prismatic": (["revolute", "revolute"], False, ["revolute", "prismatic", "revolute", "revolute"], False),
    "cylindrical": (["revolute", "revolute"], False, ["revolute"] * 3, False),
    "universal": ([], False, ["revolute"] * 5, True),
    "spherical": (["revolute", "revolute"], True, ["revolute", "revolute"], False),
    "planar": (["revolute"], False, ["revolute", "prismatic", "revolute"], False),
    "fixed": (["revolute"] * 3, False, ["revolute", "revolute", "prismatic", "revolute"], True),
    "distance": (["revolute", "revolute"], False, None, False),
}


def build_cut_case(pin, cut_type, seed):
    """(urdf xml, closures dict, q0): two random branches from the ground (or one, when a side
    of the cut is the ground) closed by one cut of `cut_type` whose frames are placed so that the
    loop is closed at q0 with the cut joint itself away from its zero (cut_joint_motion)."""
    rng = np.random.default_rng(seed)
    ptypes, pweld, ctypes, cweld = CUT_CASES[cut_type]
    pj, plink = random_branch("a", ptypes, rng, weld_tip=pweld) if ptypes else ([], "ground")
    cj, clink = random_branch("b", ctypes, rng, weld_tip=cweld) if ctypes else ([], "ground")
    xml = urdf_text(f"cut_{cut_type}", pj + cj, rng)
    axis = random_unit(rng)
    axis2 = None
    if cut_type == "universal":
        axis2 = random_unit(rng)
        while np.linalg.norm(np.cross(axis, axis2)) < 0.5:
            axis2 = random_unit(rng)
    child_origin = homogeneous(Rotation.from_rotvec(rng.uniform(-1, 1, 3)).as_matrix(),
                               rng.uniform(-0.1, 0.1, 3))
    tree = LoopReference(pin, xml, {"closures": []})
    q0 = np.array([rng.uniform(-0.1, 0.1) if s.type == "prismatic" else rng.uniform(-1, 1)
                   for s in tree.oracle.slots])
    poses = tree.link_poses(q0)
    TB = poses[clink] @ child_origin
    motion = cut_joint_motion(cut_type, axis, axis2, rng)
    parent_origin = np.linalg.inv(poses[plink]) @ TB @ np.linalg.inv(motion)
    spec = {"name": f"cut_{cut_type}", "type": cut_type, "parent": plink, "child": clink,
            "parent_origin": origin_dict(parent_origin), "child_origin": origin_dict(child_origin)}
    if cut_type in ("revolute", "prismatic", "cylindrical", "universal", "planar"):
        spec["axis"] = [float(x) for x in axis]
    if cut_type == "universal":
        spec["axis2"] = [float(x) for x in axis2]
    if cut_type == "distance":
        spec["length"] = float(np.linalg.norm(motion[:3, 3]))
    return xml, {"closures": [spec]}, q0


def welded_4r_case(seed=3):
    """A planar serial 4R chain (the four-bar of urdf/fourbar.urdf opened at the rocker pivot,
    all axes y) whose last link is welded to the ground by a FIXED (6D) cut at O4: mobility 1,
    rank 3 of 6 (3 redundant rows). Assembled at q = 0."""
    rng = np.random.default_rng(seed)
    joints = [JointSpec("j1", "revolute", "ground", "crank", (0, 0, 0), axis=(0, 1, 0)),
              JointSpec("j2", "revolute", "crank", "coupler", (-0.08, 0, 0.06), axis=(0, 1, 0)),
              JointSpec("j3", "revolute", "coupler", "rocker", (0.24, 0, 0.18), axis=(0, 1, 0)),
              JointSpec("j4", "revolute", "rocker", "end", (0.18, 0, -0.24), axis=(0, 1, 0))]
    closures = {"closures": [{"name": "weld", "type": "fixed", "parent": "ground", "child": "end",
                              "parent_origin": {"xyz": [0.34, 0.0, 0.0]}}], "actuated": ["j1"]}
    return urdf_text("welded_4r", joints, rng), closures, np.zeros(4)


# ==== Newton-Euler with cut forces ==============================================================

def cut_link_wrenches(ref, kin_state, closure_wrenches):
    """{link: wrench (link frame, about its origin)} of the cut forces: w_s on the child link at
    B, -w_s on the parent link at the same point (Newton's third law for a massless joint)."""
    from oracle import force_transform
    ext = {}
    for c, w in zip(ref.cuts, closure_wrenches):
        TB = kin_state[c["child"]][0] @ c["TB"]
        for link, sign in ((c["child"], 1.0), (c["parent"], -1.0)):
            TL = kin_state[link][0]
            ext[link] = ext.get(link, np.zeros(6)) + sign * force_transform(np.linalg.inv(TL) @ TB) @ w
    return ext
