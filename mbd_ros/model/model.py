"""The Model: a validated tree turned into immutable flat arrays (layout.py), plus name maps.

Bodies are what the kernels see: one per movable joint, plus body 0, the universe. A fixed joint
does not make a body: its child link is merged into the parent's body (inertia added, frame kept
as a constant placement), so the recursions run over movable joints only while every fixed joint
still reports its wrench (kernels/wrenches.py).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import layout as L
from ..constants import FRICTION_VELOCITY, STANDARD_GRAVITY
from ..errors import ModelError
from ..inputs.urdf import TreeSpec, inertia_problem

# |gravity| in m/s^2 above which load() refuses it (1e5 g: beyond any test rig or centrifuge;
# a finite 1e300 made every result 1e300-large, then overflow)
MAX_GRAVITY = 1e6

_JOINT_CODES = {
    "revolute": L.JOINT_REVOLUTE,
    "continuous": L.JOINT_REVOLUTE,
    "prismatic": L.JOINT_PRISMATIC,
    "spherical": L.JOINT_SPHERICAL,
    "floating": L.JOINT_FREE,
    "planar": L.JOINT_PLANAR,
    "helical": L.JOINT_HELICAL,
    "cylindrical": L.JOINT_CYLINDRICAL,
}


@dataclass(frozen=True, eq=False)
class Model:
    """Immutable description of a robot for the kernels. Arrays are read-only.

    body_int (nb+1, BODY_INT_WIDTH), body_float (nb+1, BODY_FLOAT_WIDTH): see layout.py.
    link_int (n_links, LINK_INT_WIDTH), link_float (n_links, LINK_FLOAT_WIDTH): every URDF link,
        depth-first; link placement and inertia are expressed in the frame of the body it belongs to.
    wrench_rows (n_wrench_joints, 2): (body, -1) for a movable joint, (-1, child link) for a fixed one.
    """
    name: str
    source: str
    body_int: np.ndarray
    body_float: np.ndarray
    link_int: np.ndarray
    link_float: np.ndarray
    wrench_rows: np.ndarray
    nq: int
    nv: int
    joint_names: tuple            # movable joints, order of v
    joint_types: tuple            # "revolute" | "prismatic" | "spherical" | "floating" | "planar" |
                                  # "helical" | "cylindrical" | "universal"
    urdf_joint_types: tuple       # as written in the URDF ('continuous', ...; 'floating' for root_joint)
    idx_q: np.ndarray             # (n_joints,) first index of each movable joint in q
    idx_v: np.ndarray             # (n_joints,) first index in v
    link_names: tuple             # depth-first
    wrench_joint_names: tuple     # every URDF joint (+ 'root_joint' first with a floating base)
    body_names: tuple             # root link of each body ('universe' for body 0)
    damping: np.ndarray           # (nv,) URDF <dynamics damping>
    friction: np.ndarray          # (nv,) URDF <dynamics friction>
    lower: np.ndarray             # (nv,) position limits of 1-dof joints (-inf/inf elsewhere)
    upper: np.ndarray
    effort: np.ndarray            # (nv,) effort limits (inf where not given)
    velocity_limit: np.ndarray    # (nv,)
    total_mass: float
    floating_base: bool
    passive_forces: bool
    friction_velocity: float      # Coulomb friction smoothing: F tanh(v / friction_velocity)

    @property
    def n_bodies(self):
        return self.body_int.shape[0] - 1


def _placement(origin):
    return origin[:3, :3].copy(), origin[:3, 3].copy()


def _compose(first, second):
    (r1, p1), (r2, p2) = first, second
    return r1 @ r2, p1 + r1 @ p2


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def spatial_inertia(mass, com, inertia_com):
    """6x6 inertia about the frame origin, [linear; angular] order (as Pinocchio):
    [[m 1, -m [c]], [m [c], I_c - m [c][c]]]."""
    c = _skew(com)
    out = np.zeros((6, 6))
    out[:3, :3] = mass * np.eye(3)
    out[:3, 3:] = -mass * c
    out[3:, :3] = mass * c
    out[3:, 3:] = inertia_com - mass * c @ c
    return out


def _plane_axes(normal):
    """In-plane unit axes (t1, t2) with t1 x t2 = normal; (x, y) when the normal is z (Pinocchio)."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = helper - helper.dot(normal) * normal
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def _motion_subspace(code, axis, pitch=0.0):
    """S (6, k) of a joint type in its body frame, [linear; angular] rows (pitch: helical, m/rad)."""
    zero = np.zeros(3)
    if code == L.JOINT_HELICAL:
        # rotation q about a with translation pitch q along it: v_J = [pitch a; a] qdot; a is
        # fixed by the joint's own rotation, so S is constant in the body frame
        return np.concatenate([pitch * axis, axis])[:, None]
    if code == L.JOINT_CYLINDRICAL:
        # q = [angle, displacement]: columns [0; a] and [a; 0]
        return np.column_stack([np.concatenate([zero, axis]), np.concatenate([axis, zero])])
    if code == L.JOINT_REVOLUTE:
        return np.concatenate([zero, axis])[:, None]
    if code == L.JOINT_PRISMATIC:
        return np.concatenate([axis, zero])[:, None]
    if code == L.JOINT_SPHERICAL:
        return np.vstack([np.zeros((3, 3)), np.eye(3)])
    if code == L.JOINT_FREE:
        return np.eye(6)
    t1, t2 = _plane_axes(axis)
    return np.column_stack([np.concatenate([t1, zero]), np.concatenate([t2, zero]),
                            np.concatenate([zero, axis])])


def _check_body_inertias(tree, links, body_mass, body_first_moment, body_inertia):
    """Physical consistency of the inertias: of each link as written, and of each moving body's
    merged inertia (what the dynamics uses). With tree.strict_inertia the first problem is a
    ModelError (links in document order, then bodies). Otherwise one warning per problem, naming
    the link(s) and saying what was assumed: the inertia is used as written, as Pinocchio does;
    a link whose defect is absorbed by the body it is welded into is said to be harmless."""
    members = {}
    body_of = {}
    for link in links:
        members.setdefault(link["body"], []).append(link["name"])
        body_of[link["name"]] = link["body"]
    link_problems = {}
    for name, spec in tree.links.items():   # document order
        problem = inertia_problem(spec.mass, spec.inertia)
        if problem is not None:
            link_problems[name] = problem
    body_problems = {}
    for body in range(1, len(body_mass)):
        mass = body_mass[body]
        com = body_first_moment[body] / mass if mass > 0 else np.zeros(3)
        c = _skew(com)
        # I_o = I_c - m [c][c]  (spatial_inertia)  =>  I_c = I_o + m [c][c]
        problem = inertia_problem(mass, body_inertia[body][3:, 3:] + mass * c @ c)
        if problem is not None:
            body_problems[body] = problem
    refuse = "; load(..., strict_inertia=False) accepts it with a warning"
    messages = []
    covered = set()
    for body, problem in body_problems.items():
        names = members.get(body, [])
        culprits = [n for n in names if n in link_problems] or names
        others = [n for n in names if n not in culprits]
        what = ", ".join(f"'{n}'" for n in culprits[:5]) + (", ..." if len(culprits) > 5 else "")
        merged = (f" (merged by fixed joints with {', '.join(others[:5])}"
                  f"{', ...' if len(others) > 5 else ''})") if others else ""
        messages.append((f"{tree.source}: link {what}{merged}: {problem}",
                         "; used as written (as Pinocchio does)"))
        covered.update(culprits)
    for name, problem in link_problems.items():
        if name in covered:
            continue
        body = body_of[name]
        if body == 0 and not tree.strict_inertia:
            where = "it belongs to the fixed base, which never moves: harmless"
        else:
            root = members[body][0]
            where = (f"welded into the body of link '{root}', whose merged inertia is consistent: "
                     "harmless" if root != name else
                     "the body it forms with the links welded to it is consistent: harmless")
        messages.append((f"{tree.source}: link '{name}': {problem}", f"; {where}, used as written"))
    if tree.strict_inertia:   # today's refusal: the first link in document order, then bodies
        if link_problems:
            name, problem = next(iter(link_problems.items()))
            raise ModelError(f"{tree.source}: link '{name}': {problem}{refuse}")
        if messages:
            raise ModelError(messages[0][0] + refuse)
        return
    for message, assumed in messages:
        warnings.warn(message + assumed, UserWarning, stacklevel=4)


def build_model(tree: TreeSpec, floating_base=False, gravity=STANDARD_GRAVITY,
                passive_forces=True, friction_velocity=FRICTION_VELOCITY) -> Model:
    """Flatten a validated tree into a Model.

    Joint order of q and v: depth-first from the root, children in document order (docs/design.md).
    """
    if not (np.isfinite(friction_velocity) and friction_velocity > 0):
        raise ModelError(f"friction_velocity must be a positive number, got {friction_velocity}")
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
        raise ModelError(f"gravity must be 3 finite numbers, got {gravity.tolist()}")
    if np.abs(gravity).max() > MAX_GRAVITY or np.linalg.norm(gravity) > MAX_GRAVITY:
        # (a finite 1e300 was taken: every result 1e300-large, then overflow; an outside audit)
        raise ModelError(f"gravity {gravity.tolist()}: its magnitude is above {MAX_GRAVITY:g} "
                         "m/s^2 (10^5 g: no robot is built or simulated there)")
    if floating_base and any(joint.name == "root_joint" for joint in tree.joints):
        raise ModelError(f"{tree.source}: joint 'root_joint': floating_base=True adds a free joint "
                         "of that name above the root link; rename the URDF joint or load with "
                         "floating_base=False")
    identity = (np.eye(3), np.zeros(3))

    bodies = [dict(name="universe", parent=-1, code=L.JOINT_FIXED, joint=None, placement=identity,
                   parent_link=-1)]
    links = []          # dicts: name, body, parent_link, fixed, placement (in body)
    link_index = {}
    wrench_rows = []    # (joint name, body, link)
    movable = []        # (joint name, urdf type, body index, JointSpec or None)

    def add_link(name, body, parent_link, fixed, placement):
        link_index[name] = len(links)
        links.append(dict(name=name, body=body, parent_link=parent_link, fixed=fixed,
                          placement=placement))

    if floating_base:
        bodies.append(dict(name=tree.root, parent=0, code=L.JOINT_FREE, joint=None,
                           placement=identity, parent_link=-1))
        movable.append(("root_joint", "floating", 1, None))
        wrench_rows.append(("root_joint", 1, -1))
        add_link(tree.root, 1, -1, 0, identity)
    else:
        add_link(tree.root, 0, -1, 0, identity)

    # depth-first, children in document order: a joint is taken when its child link is visited,
    # so bodies and links are numbered in that order (parent before child: parent[i] < i)
    stack = list(reversed(tree.child_joints(tree.root)))
    while stack:
        joint = stack.pop()
        parent = links[link_index[joint.parent]]
        in_parent_body = _compose(parent["placement"], _placement(joint.origin))
        if joint.type == "fixed":
            add_link(joint.child, parent["body"], link_index[joint.parent], 1, in_parent_body)
            wrench_rows.append((joint.name, -1, link_index[joint.child]))
        elif joint.type == "universal":
            # two revolute bodies: a massless cross turning about axis, then the child link
            # turning about axis2 in the cross frame (docs/formats.md: universal joints)
            cross = len(bodies)
            bodies.append(dict(name=f"{joint.name}/cross", parent=parent["body"],
                               code=L.JOINT_REVOLUTE, joint=joint, axis=joint.axis, nv_joint=2,
                               placement=in_parent_body, parent_link=link_index[joint.parent]))
            bodies.append(dict(name=joint.child, parent=cross, code=L.JOINT_REVOLUTE, joint=joint,
                               axis=joint.axis2, nv_joint=0, placement=identity, parent_link=-1))
            movable.append((joint.name, joint.type, cross, joint))
            wrench_rows.append((joint.name, cross + 1, -1))
            add_link(joint.child, cross + 1, link_index[joint.parent], 0, identity)
        else:
            body = len(bodies)
            bodies.append(dict(name=joint.child, parent=parent["body"],
                               code=_JOINT_CODES[joint.type], joint=joint,
                               placement=in_parent_body, parent_link=link_index[joint.parent]))
            movable.append((joint.name, joint.type, body, joint))
            wrench_rows.append((joint.name, body, -1))
            add_link(joint.child, body, link_index[joint.parent], 0, identity)
        stack.extend(reversed(tree.child_joints(joint.child)))

    nb = len(bodies) - 1
    body_int = np.zeros((nb + 1, L.BODY_INT_WIDTH), dtype=np.int64)
    body_float = np.zeros((nb + 1, L.BODY_FLOAT_WIDTH))
    body_int[0, L.PARENT] = -1
    body_int[0, L.PARENT_LINK] = -1
    body_float[0, L.GRAVITY:L.GRAVITY + 3] = gravity
    nq = nv = 0
    joint_meta = []
    for i in range(1, nb + 1):
        body = bodies[i]
        code = body["code"]
        joint = body["joint"]
        axis = body.get("axis", joint.axis if joint is not None else np.array([1.0, 0.0, 0.0]))
        rot, pos = body["placement"]
        subspace = _motion_subspace(code, axis, joint.pitch if joint is not None else 0.0)
        k = subspace.shape[1]
        body_int[i] = 0
        body_int[i, L.PARENT] = body["parent"]
        body_int[i, L.JOINT_TYPE] = code
        body_int[i, L.IDX_Q] = nq
        body_int[i, L.IDX_V] = nv
        body_int[i, L.JOINT_NQ_COL] = L.JOINT_NQ[code]
        body_int[i, L.JOINT_NV_COL] = k
        body_int[i, L.PARENT_LINK] = body["parent_link"]
        body_float[i, L.PLACEMENT_ROT:L.PLACEMENT_ROT + 9] = rot.ravel()
        body_float[i, L.PLACEMENT_POS:L.PLACEMENT_POS + 3] = pos
        body_float[i, L.AXIS:L.AXIS + 3] = axis
        if code == L.JOINT_PLANAR:
            t1, t2 = _plane_axes(axis)
            body_float[i, L.AXIS2:L.AXIS2 + 3] = t1
            body_float[i, L.AXIS3:L.AXIS3 + 3] = t2
        body_float[i, L.MOTION_SUBSPACE:L.MOTION_SUBSPACE + 6 * k] = subspace.T.ravel()
        body_float[i, L.FRICTION_SPEED] = friction_velocity
        if code == L.JOINT_REVOLUTE:  # constant factors of the joint rotation, see kinematics.joint_pose
            body_float[i, L.ROT_AXIS_SKEW:L.ROT_AXIS_SKEW + 9] = (rot @ _skew(axis)).ravel()
            body_float[i, L.ROT_AXIS:L.ROT_AXIS + 3] = rot @ axis
        if joint is not None and passive_forces:
            body_float[i, L.DAMPING:L.DAMPING + k] = joint.damping
            body_float[i, L.FRICTION:L.FRICTION + k] = joint.friction
        if body.get("nv_joint", k) > 0:   # a universal joint's second body: in its first's entry
            joint_meta.append((nq, nv, body.get("nv_joint", k), joint))
        nq += L.JOINT_NQ[code]
        nv += k

    n_links = len(links)
    link_int = np.zeros((n_links, L.LINK_INT_WIDTH), dtype=np.int64)
    link_float = np.zeros((n_links, L.LINK_FLOAT_WIDTH))
    body_mass = np.zeros(nb + 1)
    body_first_moment = np.zeros((nb + 1, 3))
    body_inertia = np.zeros((nb + 1, 6, 6))
    for index, link in enumerate(links):
        spec = tree.links[link["name"]]
        rot, pos = link["placement"]
        link_int[index, L.LINK_BODY] = link["body"]
        link_int[index, L.LINK_PARENT] = link["parent_link"]
        link_int[index, L.LINK_FIXED] = link["fixed"]
        link_float[index, L.LINK_ROT:L.LINK_ROT + 9] = rot.ravel()
        link_float[index, L.LINK_POS:L.LINK_POS + 3] = pos
        com = rot @ spec.com + pos
        inertia = spatial_inertia(spec.mass, com, rot @ spec.inertia @ rot.T)
        link_float[index, L.LINK_INERTIA:L.LINK_INERTIA + 36] = inertia.ravel()
        body_inertia[link["body"]] += inertia
        body_mass[link["body"]] += spec.mass
        body_first_moment[link["body"]] += spec.mass * com
    _check_body_inertias(tree, links, body_mass, body_first_moment, body_inertia)
    for i in range(1, nb + 1):
        body_float[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36] = body_inertia[i].ravel()
        body_float[i, L.MASS] = body_mass[i]
        if body_mass[i] > 0:
            body_float[i, L.COM:L.COM + 3] = body_first_moment[i] / body_mass[i]

    damping = np.zeros(nv)
    friction = np.zeros(nv)
    lower = np.full(nv, -np.inf)
    upper = np.full(nv, np.inf)
    effort = np.full(nv, np.inf)
    velocity = np.full(nv, np.inf)
    for _, iv, k, joint in joint_meta:
        if joint is None:
            continue
        damping[iv:iv + k] = joint.damping
        friction[iv:iv + k] = joint.friction
        effort[iv:iv + k] = joint.effort
        velocity[iv:iv + k] = joint.velocity
        if k == 1:
            lower[iv], upper[iv] = joint.lower, joint.upper

    # depth-first numbering: a body's subtree is [i, SUBTREE_END); fill from the leaves up
    body_int[:, L.SUBTREE_END] = np.arange(nb + 1) + 1
    for i in range(nb, 0, -1):
        parent = body_int[i, L.PARENT]
        body_int[parent, L.SUBTREE_END] = max(body_int[parent, L.SUBTREE_END],
                                              body_int[i, L.SUBTREE_END])
    for array in (body_int, body_float, link_int, link_float, damping, friction, lower, upper,
                  effort, velocity):
        array.setflags(write=False)
    rows = np.array([[b, l] for _, b, l in wrench_rows], dtype=np.int64).reshape(-1, 2)
    rows.setflags(write=False)
    idx_q = np.array([body_int[b, L.IDX_Q] for _, _, b, _ in movable], dtype=np.int64)
    idx_v = np.array([body_int[b, L.IDX_V] for _, _, b, _ in movable], dtype=np.int64)
    return Model(
        name=tree.name, source=tree.source, body_int=body_int, body_float=body_float,
        link_int=link_int, link_float=link_float, wrench_rows=rows, nq=nq, nv=nv,
        joint_names=tuple(m[0] for m in movable),
        joint_types=tuple("universal" if m[1] == "universal" else
                          L.JOINT_TYPE_NAMES[body_int[m[2], L.JOINT_TYPE]] for m in movable),
        urdf_joint_types=tuple(m[1] for m in movable),
        idx_q=idx_q, idx_v=idx_v,
        link_names=tuple(link["name"] for link in links),
        wrench_joint_names=tuple(name for name, _, _ in wrench_rows),
        body_names=tuple(body["name"] for body in bodies),
        damping=damping, friction=friction, lower=lower, upper=upper, effort=effort,
        velocity_limit=velocity,
        total_mass=float(sum(spec.mass for spec in tree.links.values())),
        floating_base=bool(floating_base), passive_forces=bool(passive_forces),
        friction_velocity=float(friction_velocity))
