"""Independent references for the mbd_ros tests (a helper module, not a test).

Nothing here imports mbd_ros. It holds:

- ``parse_urdf``: a small URDF reader on lxml (entities and network off) giving the tree, the
  joint origins/axes, <dynamics> and the link inertias, straight from the XML.
- spatial algebra in Pinocchio's convention: motion [linear; angular], force [force; torque].
- ``Kinematics``: link poses, twists, accelerations and body Jacobians by a direct,
  non-recursive sum over the joints on each link's path from the root (no recursion shared with
  the library; checked against Pinocchio in test_identities.py).
- Pinocchio oracles: ``pin_model_from_xml`` (Pinocchio's own URDF parser, continuous joints
  rewritten as revolute because Pinocchio stores them as (cos, sin)) and ``pin_model_from_tree``
  (built joint by joint, for the extension joint types URDF parsers reject, e.g. spherical).
  ``PinOracle`` maps our q/v layout to Pinocchio's by joint name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

# Joint coordinate sizes of the contract (docs/design.md), by URDF type.
NQ = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 4, "floating": 7, "planar": 3,
      "fixed": 0}
NV = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 3, "floating": 6, "planar": 3,
      "fixed": 0}
GRAVITY = np.array([0.0, 0.0, -9.81])


# ==== URDF reading ===============================================================================

@dataclass
class Link:
    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about the com, link axes


@dataclass
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray          # 4x4 pose of the joint frame (= child link frame at q = 0) in parent
    axis: np.ndarray            # unit axis in the joint frame
    damping: float = 0.0
    friction: float = 0.0


def _floats(text, n, default):
    if text is None:
        return np.array(default, dtype=float)
    vals = [float(s) for s in text.split()]
    assert len(vals) == n, text
    return np.array(vals)


def rpy_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def pose(R=None, p=None):
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def _origin(elem):
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.eye(4)
    return pose(rpy_matrix(_floats(o.get("rpy"), 3, [0, 0, 0])), _floats(o.get("xyz"), 3, [0, 0, 0]))


class Tree:
    """A URDF kinematic tree read independently of the library."""

    def __init__(self, links, joints):
        self.links = links                      # dict name -> Link, document order
        self.joints = joints                    # list of Joint, document order
        self.joint = {j.name: j for j in joints}
        self.parent_joint = {j.child: j for j in joints}
        self.child_joints = {name: [] for name in links}
        for j in joints:
            self.child_joints[j.parent].append(j)
        roots = [name for name in links if name not in self.parent_joint]
        assert len(roots) == 1, roots
        self.root = roots[0]

    def joints_dfs(self):
        """All joints, depth first from the root, children in document order."""
        out = []

        def visit(link):
            for j in self.child_joints[link]:
                out.append(j)
                visit(j.child)

        visit(self.root)
        return out

    def movable_dfs(self):
        return [j for j in self.joints_dfs() if j.type != "fixed"]

    def subtree_links(self, link):
        out = [link]
        for j in self.child_joints[link]:
            out += self.subtree_links(j.child)
        return out

    def path(self, link):
        """Joints from the root down to ``link`` (root first)."""
        out = []
        while link in self.parent_joint:
            j = self.parent_joint[link]
            out.append(j)
            link = j.parent
        return out[::-1]


def parse_urdf(xml):
    """Read a URDF (text) into a Tree. Only top-level <link>/<joint> elements count (the <joint>
    inside <transmission> is not a kinematic joint)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
    robot = etree.fromstring(xml.encode() if isinstance(xml, str) else xml, parser)
    links = {}
    for le in robot.findall("link"):
        link = Link(le.get("name"))
        ine = le.find("inertial")
        if ine is not None:
            T = _origin(ine)
            link.mass = float(ine.find("mass").get("value"))
            i = ine.find("inertia")
            g = lambda k: float(i.get(k, "0"))  # noqa: E731
            Ii = np.array([[g("ixx"), g("ixy"), g("ixz")],
                           [g("ixy"), g("iyy"), g("iyz")],
                           [g("ixz"), g("iyz"), g("izz")]])
            R = T[:3, :3]
            link.com = T[:3, 3].copy()
            link.inertia = R @ Ii @ R.T
        links[link.name] = link
    joints = []
    for je in robot.findall("joint"):
        ax = _floats(je.find("axis").get("xyz") if je.find("axis") is not None else None, 3, [1, 0, 0])
        n = np.linalg.norm(ax)
        dyn = je.find("dynamics")
        joints.append(Joint(
            name=je.get("name"), type=je.get("type"),
            parent=je.find("parent").get("link"), child=je.find("child").get("link"),
            origin=_origin(je), axis=ax / n if n > 0 else ax,
            damping=float(dyn.get("damping", 0) or 0) if dyn is not None else 0.0,
            friction=float(dyn.get("friction", 0) or 0) if dyn is not None else 0.0))
    return Tree(links, joints)


@dataclass
class Slot:
    """One movable joint in our q/v layout."""
    name: str
    type: str          # URDF type (continuous kept as such)
    joint: Joint | None
    iq: int
    nq: int
    iv: int
    nv: int


def layout(tree, floating_base):
    """The contract's layout: 'root_joint' (free) first if floating_base, then the movable URDF
    joints depth first, children in document order."""
    slots, iq, iv = [], 0, 0
    if floating_base:
        slots.append(Slot("root_joint", "floating", None, 0, 7, 0, 6))
        iq, iv = 7, 6
    for j in tree.movable_dfs():
        slots.append(Slot(j.name, j.type, j, iq, NQ[j.type], iv, NV[j.type]))
        iq += NQ[j.type]
        iv += NV[j.type]
    return slots, iq, iv


def random_unit_quaternion(rng):
    x = rng.standard_normal(4)
    return x / np.linalg.norm(x)


def random_state(slots, nq, nv, rng):
    """A valid random configuration (angles in [-pi, pi], unit quaternions) and standard normal v."""
    q = np.zeros(nq)
    for s in slots:
        t = s.type
        if t in ("revolute", "continuous"):
            q[s.iq] = rng.uniform(-np.pi, np.pi)
        elif t == "prismatic":
            q[s.iq] = rng.uniform(-0.5, 0.5)
        elif t == "spherical":
            q[s.iq:s.iq + 4] = random_unit_quaternion(rng)
        elif t == "floating":
            q[s.iq:s.iq + 3] = rng.uniform(-1, 1, 3)
            q[s.iq + 3:s.iq + 7] = random_unit_quaternion(rng)
        elif t == "planar":
            q[s.iq:s.iq + 2] = rng.uniform(-1, 1, 2)
            q[s.iq + 2] = rng.uniform(-np.pi, np.pi)
        else:
            raise AssertionError(t)
    return q, rng.standard_normal(nv)


# ==== spatial algebra ============================================================================

def skew(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def quat_matrix(qxyzw):
    x, y, z, w = qxyzw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def axis_angle(axis, angle):
    K = skew(axis)
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def motion_transform(T):
    """6x6 X mapping a twist in frame B to frame A, T = A_T_B: v_A = R v_B + p x (R w_B)."""
    R, p = T[:3, :3], T[:3, 3]
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[:3, 3:] = skew(p) @ R
    X[3:, 3:] = R
    return X


def force_transform(T):
    """6x6 X* mapping a wrench in frame B (about B's origin) to frame A, T = A_T_B."""
    R, p = T[:3, :3], T[:3, 3]
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, :3] = skew(p) @ R
    X[3:, 3:] = R
    return X


def crm(v):
    """Motion cross product matrix: v x m."""
    X = np.zeros((6, 6))
    X[:3, :3] = skew(v[3:])
    X[:3, 3:] = skew(v[:3])
    X[3:, 3:] = skew(v[3:])
    return X


def crf(v):
    """Force cross product matrix: v x* f = -crm(v)^T f."""
    return -crm(v).T


def spatial_inertia(link):
    """6x6 inertia about the link origin, link axes: I [v; w] = [m(v + w x c); I_c w + c x m(v + w x c)]."""
    m, c, Ic = link.mass, link.com, link.inertia
    C = skew(c)
    I6 = np.zeros((6, 6))
    I6[:3, :3] = m * np.eye(3)
    I6[:3, 3:] = -m * C
    I6[3:, :3] = m * C
    I6[3:, 3:] = Ic - m * C @ C
    return I6


# ==== non-recursive kinematics ===================================================================

def joint_motion(jtype, axis, qj):
    """Relative pose of the child frame in the joint frame, and the motion subspace S (6 x nv) in
    the child frame. Planar: plane normal = joint z (the random trees use axis z)."""
    if jtype == "fixed":
        return np.eye(4), np.zeros((6, 0))
    if jtype in ("revolute", "continuous"):
        return pose(axis_angle(axis, qj[0])), np.concatenate([np.zeros(3), axis])[:, None]
    if jtype == "prismatic":
        return pose(p=axis * qj[0]), np.concatenate([axis, np.zeros(3)])[:, None]
    if jtype == "spherical":
        S = np.zeros((6, 3))
        S[3:, :] = np.eye(3)
        return pose(quat_matrix(qj)), S
    if jtype == "floating":
        return pose(quat_matrix(qj[3:7]), qj[:3]), np.eye(6)
    if jtype == "planar":
        assert np.allclose(axis, [0, 0, 1]), "planar joints of the test trees have axis z"
        S = np.zeros((6, 3))
        S[0, 0] = S[1, 1] = S[5, 2] = 1.0
        return pose(axis_angle(np.array([0.0, 0, 1]), qj[2]), [qj[0], qj[1], 0.0]), S
    raise AssertionError(jtype)


class Kinematics:
    """Link poses, body twists V_L and body accelerations A_L (both in the link frame), by the
    direct sums over the joints j on the path root -> L (c(j) = child link of j):

        T_L = prod_j origin_j J_j(q_j)
        V_L = sum_j X(T_L^-1 T_c(j)) S_j v_j
        A_L = sum_j X(T_L^-1 T_c(j)) (S_j a_j + V_c(j) x S_j v_j)      (S_j constant in c(j))

    The acceleration is the spatial (not classical) one, as in Pinocchio's data.a."""

    def __init__(self, tree, floating_base):
        self.tree = tree
        self.slots, self.nq, self.nv = layout(tree, floating_base)
        self.slot = {s.name: s for s in self.slots}
        self.floating_base = floating_base
        self.inertia = {name: spatial_inertia(link) for name, link in tree.links.items()}

    def _joints_on_path(self, link):
        """(slot or None, joint-like) on the path, root first; root_joint first if floating."""
        js = [("root_joint", "floating", np.eye(4), None, self.tree.root)] if self.floating_base else []
        for j in self.tree.path(link):
            js.append((j.name, j.type, j.origin, j.axis, j.child))
        return js

    def poses(self, q):
        T = {}
        root = self.tree.root
        if self.floating_base:
            T[root], _ = joint_motion("floating", None, q[0:7])
        else:
            T[root] = np.eye(4)
        for j in self.tree.joints_dfs():
            qj = q[self.slot[j.name].iq:self.slot[j.name].iq + NQ[j.type]] if j.type != "fixed" else None
            Tj, _ = joint_motion(j.type, j.axis, qj)
            T[j.child] = T[j.parent] @ j.origin @ Tj
        return T

    def state(self, q, v, a=None):
        """Dict link -> (T world pose, V twist, A acceleration) (A None if a is None)."""
        T = self.poses(q)
        S = {}
        for name, jtype, _, axis, child in self._all_joints():
            s = self.slot.get(name)
            if s is None:
                continue
            _, S[name] = joint_motion(jtype, axis, q[s.iq:s.iq + s.nq])
        # twists first (the accelerations need the twists of the joint child links)
        V = {}
        for link in self.tree.links:
            TLinv = np.linalg.inv(T[link])
            acc = np.zeros(6)
            for name, jtype, _, _, child in self._joints_on_path(link):
                if jtype == "fixed":
                    continue
                s = self.slot[name]
                acc += motion_transform(TLinv @ T[child]) @ S[name] @ v[s.iv:s.iv + s.nv]
            V[link] = acc
        out = {}
        for link in self.tree.links:
            A = None
            if a is not None:
                TLinv = np.linalg.inv(T[link])
                A = np.zeros(6)
                for name, jtype, _, _, child in self._joints_on_path(link):
                    if jtype == "fixed":
                        continue
                    s = self.slot[name]
                    Sv = S[name] @ v[s.iv:s.iv + s.nv]
                    A += motion_transform(TLinv @ T[child]) @ (S[name] @ a[s.iv:s.iv + s.nv] + crm(V[child]) @ Sv)
            out[link] = (T[link], V[link], A)
        return out

    def _all_joints(self):
        js = [("root_joint", "floating", np.eye(4), None, self.tree.root)] if self.floating_base else []
        for j in self.tree.joints:
            js.append((j.name, j.type, j.origin, j.axis, j.child))
        return js

    def body_jacobians(self, q):
        """Dict link -> 6 x nv body Jacobian (V_L = J_L v), column by column from the twist sum."""
        J = {link: np.zeros((6, self.nv)) for link in self.tree.links}
        for k in range(self.nv):
            e = np.zeros(self.nv)
            e[k] = 1.0
            st = self.state(q, e)
            for link in self.tree.links:
                J[link][:, k] = st[link][1]
        return J

    def kinetic_energy(self, q, v):
        st = self.state(q, v)
        return sum(0.5 * V @ self.inertia[link] @ V for link, (_, V, _) in st.items())

    def potential_energy(self, q, gravity=GRAVITY):
        """-sum m g.c over the links that move (links welded to a fixed base are left out, as in
        Pinocchio, whose universe inertia does not count)."""
        T = self.poses(q)
        pe = 0.0
        for name, link in self.tree.links.items():
            if not self.floating_base and all(j.type == "fixed" for j in self.tree.path(name)):
                continue
            c = T[name][:3, :3] @ link.com + T[name][:3, 3]
            pe -= link.mass * gravity @ c
        return pe


def qdot(slots, q, v):
    """Time derivative of our q for velocity v (the contract's conventions): revolute/prismatic
    qdot = v; quaternion xyzw: d/dt quat = 1/2 quat (x) [w; 0] (body angular velocity); free:
    d/dt p = R v_lin; planar: d/dt (x, y) = R(theta) (vx, vy)."""
    qd = np.zeros_like(q)

    def quat_rate(qu, w):
        x, y, z, s = qu
        # quat (x) [w, 0] with quat = (x, y, z, s) in xyzw order
        return 0.5 * np.array([
            s * w[0] + y * w[2] - z * w[1],
            s * w[1] + z * w[0] - x * w[2],
            s * w[2] + x * w[1] - y * w[0],
            -(x * w[0] + y * w[1] + z * w[2])])

    for s in slots:
        qs, vs = q[s.iq:s.iq + s.nq], v[s.iv:s.iv + s.nv]
        if s.type in ("revolute", "continuous", "prismatic"):
            qd[s.iq] = vs[0]
        elif s.type == "spherical":
            qd[s.iq:s.iq + 4] = quat_rate(qs, vs)
        elif s.type == "floating":
            qu = qs[3:7] / np.linalg.norm(qs[3:7])
            qd[s.iq:s.iq + 3] = quat_matrix(qu) @ vs[:3]
            qd[s.iq + 3:s.iq + 7] = quat_rate(qs[3:7], vs[3:6])
        elif s.type == "planar":
            c, sn = math.cos(qs[2]), math.sin(qs[2])
            qd[s.iq] = c * vs[0] - sn * vs[1]
            qd[s.iq + 1] = sn * vs[0] + c * vs[1]
            qd[s.iq + 2] = vs[2]
        else:
            raise AssertionError(s.type)
    return qd


def net_wrench(I6, T, V, A, gravity=GRAVITY):
    """I (A - [R^T g; 0]) + V x* I V: rate of change of the link's momentum minus its weight, i.e.
    the wrench the rest of the world must apply to the link (link frame, about its origin)."""
    ag = np.array(A, dtype=float)
    ag[:3] -= T[:3, :3].T @ gravity
    return I6 @ ag + crf(V) @ (I6 @ V)


def subtree_wrench(tree, inertia, kin, link, f_ext=None, gravity=GRAVITY):
    """Newton-Euler sum over the subtree below ``link`` (itself included) of net_wrench - f_ext,
    moved to ``link``'s frame: what ``link``'s parent joint must transmit (an F/T sensor reading).
    kin: link -> (T, V, A) in world pose / link frame; inertia: link -> 6x6; f_ext: {link: (6,)}."""
    T0inv = np.linalg.inv(kin[link][0])
    w = np.zeros(6)
    for L in tree.subtree_links(link):
        T, V, A = kin[L]
        f = net_wrench(inertia[L], T, V, A, gravity)
        if f_ext is not None and L in f_ext:
            f = f - f_ext[L]
        w += force_transform(T0inv @ T) @ f
    return w


def normalize_quaternions(slots, q):
    q = q.copy()
    for s in slots:
        if s.type == "spherical":
            q[s.iq:s.iq + 4] /= np.linalg.norm(q[s.iq:s.iq + 4])
        elif s.type == "floating":
            q[s.iq + 3:s.iq + 7] /= np.linalg.norm(q[s.iq + 3:s.iq + 7])
    return q


# ==== Pinocchio oracles ==========================================================================

def pin_compatible_xml(xml):
    """Rewrite continuous joints as revolute (Pinocchio parses continuous as (cos, sin), the
    contract uses one angle). urdfdom requires <limit> with effort and velocity on revolute joints;
    lower/upper are set wide: limits play no part in dynamics."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    robot = etree.fromstring(xml.encode() if isinstance(xml, str) else xml, parser)
    for je in robot.findall("joint"):
        if je.get("type") == "continuous":
            je.set("type", "revolute")
            lim = je.find("limit")
            if lim is None:
                lim = etree.SubElement(je, "limit")
            for k, val in (("lower", "-3.14"), ("upper", "3.14"), ("effort", "100"), ("velocity", "100")):
                if lim.get(k) is None:
                    lim.set(k, val)
    return etree.tostring(robot, encoding="unicode")


def pin_model_from_xml(pin, xml, floating_base):
    """Pinocchio's own URDF parser. Returns (model, link_frame) with link_frame[link] =
    (joint id, SE3 placement of the link frame in that joint's frame)."""
    xml = pin_compatible_xml(xml)
    model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating_base
             else pin.buildModelFromXML(xml))
    link_frame = {}
    for f in model.frames:
        if f.type == pin.FrameType.BODY:
            link_frame[f.name] = (f.parentJoint, pin.SE3(f.placement))
    return model, link_frame


def pin_model_from_tree(pin, tree, floating_base):
    """A Pinocchio model built joint by joint from a parsed Tree (supports spherical joints)."""
    model = pin.Model()
    link_frame = {}
    if floating_base:
        jid = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")
        link_frame[tree.root] = (jid, pin.SE3.Identity())
    else:
        link_frame[tree.root] = (0, pin.SE3.Identity())

    def inertia(link):
        L = tree.links[link]
        return pin.Inertia(L.mass, L.com.copy(), L.inertia.copy())

    jid, P = link_frame[tree.root]
    model.appendBodyToJoint(jid, inertia(tree.root), P)
    for j in tree.joints_dfs():
        pj, P = link_frame[j.parent]
        M = P * pin.SE3(j.origin[:3, :3].copy(), j.origin[:3, 3].copy())
        if j.type == "fixed":
            link_frame[j.child] = (pj, M)
        else:
            a = j.axis.copy()
            jm = {"revolute": lambda: pin.JointModelRevoluteUnaligned(a),
                  "continuous": lambda: pin.JointModelRevoluteUnaligned(a),
                  "prismatic": lambda: pin.JointModelPrismaticUnaligned(a),
                  "spherical": pin.JointModelSpherical,
                  "floating": pin.JointModelFreeFlyer,
                  "planar": pin.JointModelPlanar}[j.type]()
            if j.type == "planar":
                assert np.allclose(a, [0, 0, 1])
            jid = model.addJoint(pj, jm, M, j.name)
            link_frame[j.child] = (jid, pin.SE3.Identity())
        cj, CP = link_frame[j.child]
        model.appendBodyToJoint(cj, inertia(j.child), CP)
    return model, link_frame


class PinOracle:
    """A Pinocchio model and data, with our layout (``layout(tree, floating_base)``) mapped to
    Pinocchio's by joint name (Pinocchio orders URDF siblings by name, not document order)."""

    def __init__(self, pin, model, link_frame, tree, floating_base):
        self.pin, self.model, self.data = pin, model, model.createData()
        self.link_frame = link_frame
        self.tree = tree
        self.slots, self.nq, self.nv = layout(tree, floating_base)
        assert (model.nv, len(self.slots)) == (self.nv, model.njoints - 1), \
            f"oracle: Pinocchio nv {model.nv} / {model.njoints - 1} joints vs layout {self.nv} / {len(self.slots)}"
        self.jid = {}
        for s in self.slots:
            jid = model.getJointId(s.name)
            assert jid < model.njoints, s.name
            self.jid[s.name] = jid
            assert model.joints[jid].nv == s.nv, s.name
        self.vperm = np.zeros(self.nv, dtype=int)   # v_pin[vperm] = v_ours
        for s in self.slots:
            pv = model.joints[self.jid[s.name]].idx_v
            self.vperm[s.iv:s.iv + s.nv] = np.arange(pv, pv + s.nv)
        self.link_names = list(tree.links)

    # ---- layout maps ----
    def q_pin(self, q):
        qp = np.zeros(self.model.nq)
        for s in self.slots:
            jm = self.model.joints[self.jid[s.name]]
            qs = q[s.iq:s.iq + s.nq]
            if s.type == "planar":   # Pinocchio planar: [x, y, cos, sin]
                qp[jm.idx_q:jm.idx_q + 4] = [qs[0], qs[1], math.cos(qs[2]), math.sin(qs[2])]
            else:
                assert jm.nq == s.nq, s.name
                qp[jm.idx_q:jm.idx_q + s.nq] = qs
        return qp

    def q_ours(self, qp):
        q = np.zeros(self.nq)
        for s in self.slots:
            jm = self.model.joints[self.jid[s.name]]
            qs = qp[jm.idx_q:jm.idx_q + jm.nq]
            q[s.iq:s.iq + s.nq] = [qs[0], qs[1], math.atan2(qs[3], qs[2])] if s.type == "planar" else qs
        return q

    def v_pin(self, v):
        vp = np.zeros(self.nv)
        vp[self.vperm] = v
        return vp

    def v_ours(self, vp):
        return np.asarray(vp)[self.vperm]

    def fext(self, f_ext):
        """Our f_ext ({link: (6,)} wrench in the link frame about its origin) -> Pinocchio's
        per-joint forces in the joint frame: sum over links of placement.act(f_link)."""
        pin = self.pin
        out = [pin.Force.Zero() for _ in range(self.model.njoints)]
        if f_ext is None:
            return out
        for link, w in f_ext.items():
            jid, P = self.link_frame[link]
            out[jid] = out[jid] + P.act(pin.Force(np.asarray(w, dtype=float)))
        return out

    # ---- algorithms, inputs and outputs in our layout ----
    def aba(self, q, v, tau, f_ext=None):
        p, m, d = self.pin, self.model, self.data
        return self.v_ours(p.aba(m, d, self.q_pin(q), self.v_pin(v), self.v_pin(tau), self.fext(f_ext)))

    def rnea(self, q, v, a, f_ext=None):
        p, m, d = self.pin, self.model, self.data
        return self.v_ours(p.rnea(m, d, self.q_pin(q), self.v_pin(v), self.v_pin(a), self.fext(f_ext)))

    def crba(self, q):
        M = self.pin.crba(self.model, self.data, self.q_pin(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.vperm, self.vperm)]

    def nle(self, q, v):
        return self.v_ours(self.pin.nonLinearEffects(self.model, self.data, self.q_pin(q), self.v_pin(v)))

    def gravity(self, q):
        return self.v_ours(self.pin.computeGeneralizedGravity(self.model, self.data, self.q_pin(q)))

    def kinetic_energy(self, q, v):
        return self.pin.computeKineticEnergy(self.model, self.data, self.q_pin(q), self.v_pin(v))

    def potential_energy(self, q):
        return self.pin.computePotentialEnergy(self.model, self.data, self.q_pin(q))

    def integrate(self, q, v):
        return self.q_ours(self.pin.integrate(self.model, self.q_pin(q), self.v_pin(v)))

    def link_kinematics(self, q, v, a):
        """After forwardKinematics: link -> (4x4 world pose, twist, spatial acceleration), link frame."""
        pin, m, d = self.pin, self.model, self.data
        pin.forwardKinematics(m, d, self.q_pin(q), self.v_pin(v), self.v_pin(a))
        out = {}
        for link in self.link_names:
            jid, P = self.link_frame[link]
            out[link] = ((d.oMi[jid] * P).homogeneous,
                         P.actInv(d.v[jid]).vector, P.actInv(d.a[jid]).vector)
        return out

    def joint_forces(self, q, v, a, f_ext=None):
        """Pinocchio's data.f (joint frame = child link frame) after rnea, by joint name."""
        self.rnea(q, v, a, f_ext)
        return {s.name: self.data.f[self.jid[s.name]].vector.copy() for s in self.slots}
