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
(file path, '<forces text>' or '<forces dict>'), the entry (index and name) and the field. The
Robot's force-element part (robot/forces.py) evaluates them.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from . import fields
from ..errors import ModelError, excerpt
from .yaml_input import read_yaml

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
            keys = ", ".join(fields.text(key, 40) for key in list(data)[:10])
            raise ModelError(f"{where}: missing the 'forces' list (top-level keys: "
                             f"{keys or 'none'})")
        entries = data["forces"]
    else:
        raise ModelError(f"{where}: expected a mapping with a 'forces' list, got {fields.kind(data)}")
    if entries is None:
        entries = []
    if not isinstance(entries, (list, tuple)):
        raise ModelError(f"{where}: 'forces' must be a list of force elements, got {fields.kind(entries)}")
    links = tuple(link_names)
    specs = fields.named_entries(
        entries, where, "forces", "force", MAX_FORCES,
        lambda entry, index: _read_entry(entry, index, where, links, joints))
    return specs, where


def _read_entry(entry, index, where, links, joints):
    if not isinstance(entry, dict):
        raise ModelError(f"{where}: force {index}: expected a mapping, got {fields.kind(entry)}")
    name = entry.get("name")
    label = f"{where}: force {index}"
    if name is None or name == "":
        raise ModelError(f"{label} (unnamed): field 'name': missing; every force element needs "
                         "a unique name")
    if not isinstance(name, str):
        raise ModelError(f"{label}: field 'name': must be a string, got {fields.kind(name)}")
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
    fields.check_keys(entry, FIELDS[kind], f"{label}: unknown field", f"a {kind} takes")
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
                                     f"{fields.kind(link)}")
                raise ModelError(f"{label}: field '{role}': unknown link '{excerpt(link, 80)}' "
                                 f"({fields.suggest(link, links)})")
            spec[role] = link
    if kind == "spring_damper":
        if spec["parent"] == spec["child"]:
            raise ModelError(f"{label}: fields 'parent' and 'child': both are link "
                             f"'{spec['parent']}'; a spring-damper joins two different links")
        spec["parent_point"] = fields.numbers(entry["parent_point"], 3, f"{label}: field 'parent_point'")
        spec["child_point"] = fields.numbers(entry["child_point"], 3, f"{label}: field 'child_point'")
        spec["stiffness"] = _nonnegative(entry["stiffness"], f"{label}: field 'stiffness'")
        spec["damping"] = _nonnegative(entry.get("damping", 0.0), f"{label}: field 'damping'")
        spec["rest"] = _nonnegative(entry["rest_length"], f"{label}: field 'rest_length'")
        spec["preload"] = fields.number(entry.get("preload", 0.0), f"{label}: field 'preload'")
    elif kind == "joint_spring":
        joint = entry["joint"]
        if not isinstance(joint, str):
            raise ModelError(f"{label}: field 'joint': must be a joint name, got {fields.kind(joint)}")
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
        spec["rest"] = fields.number(entry.get("rest_position", 0.0), f"{label}: field 'rest_position'")
    else:
        if spec["parent"] == spec["child"]:
            raise ModelError(f"{label}: fields 'parent' and 'child': both are link "
                             f"'{spec['parent']}'; a bushing joins two different links")
        spec["parent_origin"] = fields.origin(entry, "parent_origin", label)
        spec["child_origin"] = fields.origin(entry, "child_origin", label)
        spec["stiffness"] = _six(entry["stiffness"], f"{label}: field 'stiffness'")
        spec["damping"] = _six(entry.get("damping", [0.0] * 6), f"{label}: field 'damping'")
    return ForceSpec(**spec)


def _nonnegative(value, what):
    number = fields.number(value, what)
    if number < 0.0:
        raise ModelError(f"{what}: must be >= 0, got {number}")
    return number


def _six(value, what):
    values = fields.numbers(value, 6, what)
    if (values < 0.0).any():
        raise ModelError(f"{what}: must be >= 0, got {values.tolist()}")
    return values
