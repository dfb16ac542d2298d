"""Force elements (springs, dampers, bushings) and user force callbacks.

YAML format (section `forces:`; the file may also hold `closures:` and other sections, which are
ignored here):

    forces:
      - name: strut
        type: spring_damper        # point to point; tension f = k (l - l0) + c dl/dt + preload
        parent: chassis            # f > 0 pulls the two points together
        parent_point: [0.18, 0.0, 0.26]    # in the parent link's frame (m)
        child: lower_arm
        child_point: [0.25, 0.0, 0.0]      # in the child link's frame
        stiffness: 25000.0         # k, N/m
        damping: 1800.0            # c, N s/m (optional, default 0)
        rest_length: 0.36          # l0, m
        preload: 150.0             # N (optional, default 0)
      - name: elbow_spring
        type: joint_spring         # tau = -k (q - q0) - c dq/dt on a one-dof joint
        joint: elbow
        stiffness: 35.0            # N m/rad (N/m on a prismatic joint)
        damping: 0.8               # optional, default 0
        rest_position: 0.4         # q0, optional, default 0
      - name: hub_bushing
        type: bushing              # 6-dof linear spring-damper between two link frames
        parent: a
        parent_origin: {xyz: [0, 0, 0], rpy: [0, 0, 0]}    # frame A in link a (optional)
        child: b
        child_origin: {xyz: [0, 0, 0], rpy: [0, 0, 0]}     # frame B in link b (optional)
        stiffness: [kx, ky, kz, krx, kry, krz]   # in frame A: N/m and N m/rad
        damping: [cx, cy, cz, crx, cry, crz]     # optional, default 0

`read_forces` returns the parsed ForceSpec list; every error is a ModelError naming the source
(file path, '<forces text>' or '<forces dict>'), the entry (index and name) and the field.
`AppliedForces` holds one robot's elements in flat arrays (kernels/force_elements.py) and the
user callbacks, and turns them into the joint forces and link wrenches the dynamics add.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from . import layout as L
from .closures import _check_keys, _kind, _number, _numbers, _origin, _suggest, _text
from .errors import ModelError, excerpt
from .yaml_input import read_yaml
from .kernels import force_elements as fk
from .kernels.wrenches import load_link_wrenches as _load_link_wrenches
from .robot import _real_array

_FLOAT = np.dtype(np.float64)

FORCE_TYPES = ("spring_damper", "joint_spring", "bushing")
FIELDS = {
    "spring_damper": ("name", "type", "parent", "parent_point", "child", "child_point",
                      "stiffness", "damping", "rest_length", "preload"),
    "joint_spring": ("name", "type", "joint", "stiffness", "damping", "rest_position"),
    "bushing": ("name", "type", "parent", "parent_origin", "child", "child_origin", "stiffness",
                "damping"),
}
REQUIRED = {
    "spring_damper": ("parent", "parent_point", "child", "child_point", "stiffness",
                      "rest_length"),
    "joint_spring": ("joint", "stiffness"),
    "bushing": ("parent", "child", "stiffness"),
}
ONE_DOF_JOINTS = ("revolute", "prismatic", "helical")   # helical: its angle
# More elements than this is a hostile input, not a model (each costs a row of the element
# arrays and its share of every dynamics call).
MAX_FORCES = 10_000


@dataclass(frozen=True, eq=False)
class ForceSpec:
    """One force element as read from the file (SI units, frames as in the module docstring)."""
    name: str
    type: str
    parent: str | None = None
    child: str | None = None
    joint: str | None = None
    parent_point: np.ndarray | None = None   # (3,) spring_damper
    child_point: np.ndarray | None = None
    parent_origin: np.ndarray | None = None  # (4, 4) bushing
    child_origin: np.ndarray | None = None
    stiffness: np.ndarray | float = 0.0      # float, or (6,) for a bushing
    damping: np.ndarray | float = 0.0
    rest: float = 0.0                        # rest_length / rest_position
    preload: float = 0.0


def read_forces(source, link_names, joints):
    """Parse and validate the `forces:` section of a file path, YAML text or dict.

    link_names: the robot's links; joints: {movable joint name: joint type}.
    Returns a tuple of ForceSpec. Raises ModelError naming the source, entry and field.
    """
    data, where = read_yaml(source, "forces", "forces file")
    if isinstance(data, (list, tuple)):           # a bare list of entries
        entries = data
    elif isinstance(data, dict):
        if "forces" not in data:
            keys = ", ".join(_text(key, 40) for key in list(data)[:10])
            raise ModelError(f"{where}: missing the 'forces' list (top-level keys: "
                             f"{keys or 'none'})")
        entries = data["forces"]
    else:
        raise ModelError(f"{where}: expected a mapping with a 'forces' list, got {_kind(data)}")
    if entries is None:
        entries = []
    if not isinstance(entries, (list, tuple)):
        raise ModelError(f"{where}: 'forces' must be a list of force elements, got {_kind(entries)}")
    if len(entries) > MAX_FORCES:
        raise ModelError(f"{where}: 'forces' has {len(entries)} entries, more than the "
                         f"{MAX_FORCES} a model may have")
    links = tuple(link_names)
    specs, first = [], {}
    for index, entry in enumerate(entries):
        spec = _read_entry(entry, index, where, links, joints)
        if spec.name in first:
            raise ModelError(f"{where}: force {index} ('{spec.name}'): field 'name': duplicate "
                             f"name, already used by force {first[spec.name]}")
        first[spec.name] = index
        specs.append(spec)
    return tuple(specs), where


def _read_entry(entry, index, where, links, joints):
    if not isinstance(entry, dict):
        raise ModelError(f"{where}: force {index}: expected a mapping, got {_kind(entry)}")
    name = entry.get("name")
    label = f"{where}: force {index}"
    if name is None or name == "":
        raise ModelError(f"{label} (unnamed): field 'name': missing; every force element needs "
                         "a unique name")
    if not isinstance(name, str):
        raise ModelError(f"{label}: field 'name': must be a string, got {_kind(name)}")
    label = f"{where}: force {index} ('{excerpt(name, 80)}')"
    kind = entry.get("type")
    if kind is None:
        raise ModelError(f"{label}: field 'type': missing (one of {', '.join(FORCE_TYPES)})")
    if not isinstance(kind, str) or kind not in FORCE_TYPES:
        close = difflib.get_close_matches(kind, FORCE_TYPES, n=1) \
            if isinstance(kind, str) and len(kind) < 200 else []
        hint = f"did you mean '{close[0]}'? " if close else ""
        shown = repr(excerpt(kind, 80)) if isinstance(kind, str) else excerpt(kind, 80)
        raise ModelError(f"{label}: field 'type': unknown type {shown} ({hint}expected one of "
                         f"{', '.join(FORCE_TYPES)})")
    _check_keys(entry, FIELDS[kind], f"{label}: unknown field", f"a {kind} takes")
    for key in REQUIRED[kind]:
        if entry.get(key) is None:
            raise ModelError(f"{label}: field '{key}': missing")
    spec = dict(name=name, type=kind)
    for role in ("parent", "child"):
        if role in FIELDS[kind]:
            link = entry[role]
            if not isinstance(link, str) or link not in links:
                if not isinstance(link, str):
                    raise ModelError(f"{label}: field '{role}': must be a link name, got "
                                     f"{_kind(link)}")
                raise ModelError(f"{label}: field '{role}': unknown link '{excerpt(link, 80)}' "
                                 f"({_suggest(link, links)})")
            spec[role] = link
    if kind == "spring_damper":
        if spec["parent"] == spec["child"]:
            raise ModelError(f"{label}: fields 'parent' and 'child': both are link "
                             f"'{spec['parent']}'; a spring-damper joins two different links")
        spec["parent_point"] = _numbers(entry["parent_point"], 3, f"{label}: field 'parent_point'")
        spec["child_point"] = _numbers(entry["child_point"], 3, f"{label}: field 'child_point'")
        spec["stiffness"] = _nonnegative(entry["stiffness"], f"{label}: field 'stiffness'")
        spec["damping"] = _nonnegative(entry.get("damping", 0.0), f"{label}: field 'damping'")
        spec["rest"] = _nonnegative(entry["rest_length"], f"{label}: field 'rest_length'")
        spec["preload"] = _number(entry.get("preload", 0.0), f"{label}: field 'preload'")
    elif kind == "joint_spring":
        joint = entry["joint"]
        if not isinstance(joint, str):
            raise ModelError(f"{label}: field 'joint': must be a joint name, got {_kind(joint)}")
        if joint not in joints:
            close = difflib.get_close_matches(joint, list(joints), n=3) if len(joint) < 200 else []
            hint = ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else \
                f"movable joints: {', '.join(list(joints)[:6])}"
            raise ModelError(f"{label}: field 'joint': unknown movable joint "
                             f"'{excerpt(joint, 80)}' ({hint})")
        if joints[joint] not in ONE_DOF_JOINTS:
            raise ModelError(f"{label}: field 'joint': '{joint}' is a {joints[joint]} joint; a "
                             "joint_spring acts on a one-dof (revolute, continuous, prismatic, "
                             "helical) joint")
        spec["joint"] = joint
        spec["stiffness"] = _nonnegative(entry["stiffness"], f"{label}: field 'stiffness'")
        spec["damping"] = _nonnegative(entry.get("damping", 0.0), f"{label}: field 'damping'")
        spec["rest"] = _number(entry.get("rest_position", 0.0), f"{label}: field 'rest_position'")
    else:
        if spec["parent"] == spec["child"]:
            raise ModelError(f"{label}: fields 'parent' and 'child': both are link "
                             f"'{spec['parent']}'; a bushing joins two different links")
        spec["parent_origin"] = _origin(entry, "parent_origin", label)
        spec["child_origin"] = _origin(entry, "child_origin", label)
        spec["stiffness"] = _six(entry["stiffness"], f"{label}: field 'stiffness'")
        spec["damping"] = _six(entry.get("damping", [0.0] * 6), f"{label}: field 'damping'")
    return ForceSpec(**spec)


def _nonnegative(value, what):
    number = _number(value, what)
    if number < 0.0:
        raise ModelError(f"{what}: must be >= 0, got {number}")
    return number


def _six(value, what):
    values = _numbers(value, 6, what)
    if (values < 0.0).any():
        raise ModelError(f"{what}: must be >= 0, got {values.tolist()}")
    return values


@dataclass(frozen=True)
class ForceElementValues:
    """What each force element does at one state (robot.force_element_values(q, v)).

    names, types: one per element, in file order.
    force (n,): spring_damper tension (N, > 0 pulls the points together); joint_spring joint
        force tau (N m or N); bushing |force| (N).
    length (n,): spring_damper length l (m); joint_spring deflection q - q0; bushing |d| (m).
    rate (n,): dl/dt; dq/dt; 0 for a bushing.
    wrench (n, 6): bushing wrench on the child-side frame B at its origin, in frame A [f; t]
        (zeros for the other types).
    deflection (n, 6): bushing [d; theta] of frame B relative to frame A, in frame A.
    """
    names: tuple
    types: tuple
    force: np.ndarray
    length: np.ndarray
    rate: np.ndarray
    wrench: np.ndarray
    deflection: np.ndarray

    def as_dict(self):
        """{name: (force, length)} for quick inspection."""
        return {n: (float(f), float(x)) for n, f, x in zip(self.names, self.force, self.length)}


class AppliedForces:
    """The force elements and user callbacks of one robot, evaluated into joint forces and link
    wrenches (link frames, about the link origins) that the dynamics add to tau and f_ext."""

    def __init__(self, robot, specs=(), source=""):
        self.robot = robot
        self.source = source
        self.specs = tuple(specs)
        self.names = tuple(s.name for s in self.specs)
        self.callbacks = []
        n = len(self.specs)
        link_index = {name: i for i, name in enumerate(robot.link_names)}
        joint_index = {name: j for j, name in enumerate(robot.joint_names)}
        self.element_int = np.zeros((n, fk.ELEMENT_INT_WIDTH), dtype=np.int64)
        self.element_float = np.zeros((n, fk.ELEMENT_FLOAT_WIDTH))
        for e, s in enumerate(self.specs):
            ei, ef = self.element_int[e], self.element_float[e]
            ei[fk.ELEMENT_TYPE] = fk.TYPE_CODES[s.type]
            if s.type == "joint_spring":
                j = joint_index[s.joint]
                ei[fk.JOINT_IQ] = robot.idx_q[j]
                ei[fk.JOINT_IV] = robot.idx_v[j]
                ef[fk.STIFFNESS], ef[fk.DAMPING], ef[fk.REST] = s.stiffness, s.damping, s.rest
                continue
            ei[fk.LINK_A], ei[fk.LINK_B] = link_index[s.parent], link_index[s.child]
            if robot.model.link_int[ei[fk.LINK_A], L.LINK_BODY] == \
                    robot.model.link_int[ei[fk.LINK_B], L.LINK_BODY]:
                raise ModelError(f"{source}: force '{s.name}': links '{s.parent}' and '{s.child}' "
                                 "are welded into one rigid body (fixed joints): the element "
                                 "would only load that body internally")
            if s.type == "spring_damper":
                ef[fk.POINT_A:fk.POINT_A + 3] = s.parent_point
                ef[fk.POINT_B:fk.POINT_B + 3] = s.child_point
                ef[fk.STIFFNESS], ef[fk.DAMPING] = s.stiffness, s.damping
                ef[fk.REST], ef[fk.PRELOAD] = s.rest, s.preload
            else:
                ef[fk.FRAME_A_ROT:fk.FRAME_A_ROT + 9] = s.parent_origin[:3, :3].ravel()
                ef[fk.FRAME_A_POS:fk.FRAME_A_POS + 3] = s.parent_origin[:3, 3]
                ef[fk.FRAME_B_ROT:fk.FRAME_B_ROT + 9] = s.child_origin[:3, :3].ravel()
                ef[fk.FRAME_B_POS:fk.FRAME_B_POS + 3] = s.child_origin[:3, 3]
                ef[fk.STIFFNESS6:fk.STIFFNESS6 + 6] = s.stiffness
                ef[fk.DAMPING6:fk.DAMPING6 + 6] = s.damping
        n_links = len(robot.link_names)
        self.link_wrench = np.zeros((n_links, 6))   # elements' wrenches (link frames)
        self.joint_force = np.zeros(robot.nv)       # elements' joint forces
        self.values = np.zeros((n, fk.VALUE_WIDTH))
        self._scratch = np.zeros(72)
        self._total_wrench = np.zeros((n_links, 6))
        self._total_tau = np.zeros(robot.nv)

    @property
    def active(self):
        return bool(self.specs) or bool(self.callbacks)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, q, v, t):
        """Fill joint_force (nv,) and link_wrench (n_links, 6) with every element's and
        callback's load at (q, v, t). q, v must be validated float64 arrays."""
        robot = self.robot
        if self.specs:
            fk.force_element_loads(robot._body_int, robot._body_float, robot._link_int,
                                   robot._link_float, robot._work, self.element_int,
                                   self.element_float, q, v, self.link_wrench, self.joint_force,
                                   self.values, self._scratch)
        else:
            self.link_wrench[:] = 0.0
            self.joint_force[:] = 0.0
        add_callback_loads(robot, self.callbacks, t, q, v, self.link_wrench, self.joint_force)

    def load(self, q, v, tau, f_ext, t):
        """Hot path of forward_dynamics: evaluate the elements and callbacks at (q, v, t), load
        their link wrenches (plus f_ext) into the robot's workspace (FEXT, as
        _set_external_wrenches does) and return tau + their joint forces (a buffer)."""
        robot = self.robot
        if not (type(q) is np.ndarray and q.dtype == _FLOAT and q.shape == (robot.nq,)
                and q.flags.c_contiguous and type(v) is np.ndarray and v.dtype == _FLOAT
                and v.shape == (robot.nv,) and v.flags.c_contiguous):
            q, v = _checked(robot, q, v)
        if not (type(tau) is np.ndarray and tau.shape == (robot.nv,)):
            from .robot import _vector
            tau = _vector(tau, robot.nv, "tau")
        self.evaluate(q, v, t)
        wrench = self.link_wrench
        if f_ext is not None:
            wrench = self._add_user_wrenches(f_ext)
        _load_link_wrenches(robot._link_int, robot._link_float, wrench, robot._link_fext, robot._work)
        robot._fext_dirty = True
        np.add(tau, self.joint_force, out=self._total_tau)
        return self._total_tau

    def _add_user_wrenches(self, f_ext):
        """_total_wrench = the elements' link wrenches + f_ext (dict or (n_links, 6) array)."""
        robot = self.robot
        self._total_wrench[:] = self.link_wrench
        if isinstance(f_ext, dict):
            for link, w in f_ext.items():
                w = _real_array(w, f"f_ext['{link}']", "a wrench of 6 numbers")
                if w.shape != (6,):
                    raise ValueError(f"f_ext['{link}'] must have shape (6,), got {w.shape}")
                self._total_wrench[robot._link(link)] += w
        else:
            w = _real_array(f_ext, "f_ext", "an array (n_links, 6) or a dict {link: wrench}")
            if w.shape != self._total_wrench.shape:
                raise ValueError(f"f_ext must have shape {self._total_wrench.shape} or be a "
                                 f"dict {{link: wrench}}, got {w.shape}")
            self._total_wrench += w
        if not np.isfinite(self._total_wrench).all():
            raise ValueError("f_ext contains NaN or inf")
        return self._total_wrench

    def combine(self, q, v, tau, f_ext, t):
        """(tau + joint forces, f_ext + element wrenches): the inputs of the plain dynamics."""
        robot = self.robot
        q, v = _checked(robot, q, v)
        self.evaluate(q, v, t)
        if tau is not None:
            from .robot import _vector
            np.add(_vector(tau, robot.nv, "tau"), self.joint_force, out=self._total_tau)
        if f_ext is None:
            self._total_wrench[:] = self.link_wrench
        else:
            self._add_user_wrenches(f_ext)
        return self._total_tau, self._total_wrench

    def element_values(self, q, v):
        q, v = _checked(self.robot, q, v)
        if self.specs:
            fk.force_element_loads(self.robot._body_int, self.robot._body_float,
                                   self.robot._link_int, self.robot._link_float, self.robot._work,
                                   self.element_int, self.element_float, q, v, self.link_wrench,
                                   self.joint_force, self.values, self._scratch)
        val = self.values
        return ForceElementValues(
            names=self.names, types=tuple(s.type for s in self.specs),
            force=val[:, fk.VALUE_FORCE].copy(), length=val[:, fk.VALUE_LENGTH].copy(),
            rate=val[:, fk.VALUE_RATE].copy(),
            wrench=val[:, fk.VALUE_WRENCH:fk.VALUE_WRENCH + 6].copy(),
            deflection=val[:, fk.VALUE_DEFLECTION:fk.VALUE_DEFLECTION + 6].copy())

    def potential_energy(self, q):
        """Elastic energy stored in the springs (J): k (l - l0)^2 / 2 + preload l per
        spring_damper, k (q - q0)^2 / 2 per joint_spring, (d^T K_t d + theta^T K_r theta) / 2 per
        bushing. Callbacks have no potential."""
        if not self.specs:
            return 0.0
        values = self.element_values(q, np.zeros(self.robot.nv))
        energy = 0.0
        for e, s in enumerate(self.specs):
            if s.type == "spring_damper":
                energy += 0.5 * s.stiffness * (values.length[e] - s.rest) ** 2 + s.preload * values.length[e]
            elif s.type == "joint_spring":
                energy += 0.5 * s.stiffness * values.length[e] ** 2
            else:
                energy += 0.5 * float(values.deflection[e] @ (s.stiffness * values.deflection[e]))
        return energy


def _name(fn):
    name = getattr(fn, "__name__", None)
    return excerpt(name, 80) if isinstance(name, str) else excerpt(fn, 80)


def _as_floats(value, fn, what):
    """`value` as a float array; ValueError naming the callback (numpy's own message may
    quote the whole value)."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"force callback {_name(fn)}: {what} is not numbers: "
                         f"{excerpt(value, 200)}") from None


def _returned(array):
    """What a callback returned (as the float array it was converted to), for a message: its
    shape and a bounded excerpt (a 10^7-entry result must not become a 50 MB message)."""
    shape = "x".join(map(str, array.shape)) or "scalar"
    return f"an array of shape ({shape}) {excerpt(array, 200)}"


def add_callback_loads(robot, callbacks, t, q, v, link_wrench, joint_force):
    """Add the add_force callbacks' loads at (q, v, t): a {link: wrench} result into
    link_wrench (n_links, 6), a generalized-force result into joint_force (nv,). ValueError
    naming the callback for a wrong shape or a non-finite value."""
    for fn in callbacks:
        result = fn(t, q, v)
        if isinstance(result, dict):
            for link, wrench in result.items():
                wrench = _real_array(wrench, f"force callback {_name(fn)}: the wrench on link "
                                     f"'{excerpt(link, 80)}'", "6 numbers")
                if wrench.shape != (6,) or not np.isfinite(wrench).all():
                    raise ValueError(f"force callback {_name(fn)}: the wrench on link "
                                     f"'{excerpt(link, 80)}' must be 6 finite numbers, got "
                                     f"{_returned(wrench)}")
                link_wrench[robot._link(link)] += wrench
        else:
            tau = _real_array(result, f"force callback {_name(fn)}", f"{robot.nv} generalized "
                              "forces or a dict {link: wrench}")
            if tau.shape != (robot.nv,) or not np.isfinite(tau).all():
                raise ValueError(f"force callback {_name(fn)} must return {robot.nv} finite "
                                 f"generalized forces or a dict {{link: wrench}}, got "
                                 f"{_returned(tau)}")
            joint_force += tau


# ---- the Robot's entry points (robot.py and loops.py call these only when forces exist) --------

def _checked(robot, q, v):
    """q, v as validated float64 arrays (shapes, finite, unit quaternions)."""
    from .robot import _vector
    q = _vector(q, robot.nq, "q")
    v = _vector(v, robot.nv, "v")
    robot._check_state(q, v, np.zeros(0), "")
    return q, v


def attach(robot, source):
    """Give robot the force elements of `source` (path, YAML text or dict; `forces:` section)."""
    joints = dict(zip(robot.joint_names, robot.joint_types))
    specs, where = read_forces(source, robot.link_names, joints)
    robot._applied = AppliedForces(robot, specs, where)
    robot.drop_c_calls()     # the C-level FD/ID entries do not evaluate force elements
    return robot


def add_force(robot, fn):
    """robot.add_force: register fn(t, q, v) -> (nv,) or {link: wrench}."""
    if not callable(fn):
        raise ValueError(f"a force must be a callable fn(t, q, v) -> (nv,) generalized forces or "
                         f"{{link: wrench}}, got {excerpt(fn, 120)}")
    if robot._applied is None:
        robot._applied = AppliedForces(robot)
        robot.drop_c_calls()     # the C-level FD/ID entries do not evaluate callbacks
    robot._applied.callbacks.append(fn)
    return fn


def inverse_dynamics_with_forces(robot, q, v, qdd, f_ext, out):
    """Tree inverse dynamics with the elements as external loads, minus their joint forces: the
    drive forces that produce qdd while the force elements act."""
    from .robot import Robot
    q, v = _checked(robot, q, v)
    _, total = robot._applied.combine(q, v, None, f_ext, robot.time)
    joint_force = robot._applied.joint_force
    robot._applying = True
    try:
        result = Robot.inverse_dynamics(robot, q, v, qdd, f_ext=total, out=out)
    finally:
        robot._applying = False
    result -= joint_force
    return result


def with_forces(robot, call, q, v, tau, f_ext, **kwargs):
    """Call call(q, v, tau + joint forces, f_ext=f_ext + element wrenches, **kwargs) with the
    robot's forces added once (nested dynamics calls then do not add them again)."""
    with robot._lock:   # combine() fills the robot's workspace and the elements' buffers
        tau_total, f_total = robot._applied.combine(q, v, tau, f_ext, robot.time)
        robot._applying = True
        try:
            return call(q, v, tau_total, f_ext=f_total, **kwargs)
        finally:
            robot._applying = False


def batch_with_forces(robot, call, q, v, x, x_name, out):
    """The batch forms of a robot with force elements: call(q_i, v_i, x_i) state by state."""
    from .robot import _batch, _output, _shares
    q = _batch(q, robot.nq, "q")
    v = _batch(v, robot.nv, "v", q.shape[0])
    x = _batch(x, robot.nv, x_name, q.shape[0])
    out = _output(out, (q.shape[0], robot.nv))
    if _shares(out, (q, v, x)):   # rows are written in turn: compute privately, then copy
        out[:] = batch_with_forces(robot, call, q, v, x, x_name, None)
        return out
    for i in range(q.shape[0]):
        try:
            out[i] = call(q[i], v[i], x[i])
        except ValueError as exc:
            raise ValueError(f"state {i}: {exc}") from None
    return out
