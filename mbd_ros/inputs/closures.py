"""Loop closures: the YAML file that declares the cut (secondary) joints URDF cannot express.

Format (docs/formats.md, "Closed loops"):

    closures:
      - name: rod_b                 # unique
        type: spherical             # one of CUT_TYPES
        parent: link_a              # link on one side of the cut
        child: link_b               # link on the other side
        parent_origin: {xyz: [0.1, 0, 0], rpy: [0, 0, 0]}   # joint frame A in the parent link
        child_origin:  {xyz: [0, 0, 0.2], rpy: [0, 0, 0]}   # joint frame B in the child link
        axis: [0, 0, 1]             # revolute/prismatic/cylindrical axis, universal first axis,
                                    # planar normal; in the joint frame, unit
        axis2: [0, 1, 0]            # universal only: second axis, in the joint frame, unit
        length: 0.35                # distance only: distance between the two frame origins, > 0
        pitch: 0.01                 # helical only: translation along axis per radian (m/rad), != 0
    actuated: [joint_1]             # drives of the mechanism (tree joint names)
    independent: [joint_1]          # optional preferred minimal coordinates

A universal cut's first axis is fixed in the parent-side frame A, its second in the child-side
frame B; they must not be parallel (kernels/closure_kinematics.py keeps their angle constant).

`read_closures` accepts a file path, YAML text or an already-parsed dict, and returns a frozen
ClosureSet. It checks everything that does not need the tree's joints: every error is a
ModelError naming the source (file path, '<closures text>' or '<closures dict>'), the entry
(index and name) and the field. The names in `actuated` and `independent` are returned as given;
the model builder checks them against the tree's joints. YAML is read by yaml_input.read_yaml
(safe constructors only, duplicate keys refused, sizes capped).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import fields
from ..errors import ModelError, excerpt
from .yaml_input import read_yaml

CUT_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "fixed",
             "distance", "helical")
AXIS_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "planar", "helical")   # need `axis`
TOP_LEVEL_KEYS = ("closures", "actuated", "independent", "forces",   # forces: inputs/forces.py
                  "flexible_links")   # flexible_links: inputs/flexible.py (one file may hold both)
ENTRY_FIELDS = ("name", "type", "parent", "child", "parent_origin", "child_origin", "axis",
                "axis2", "length", "pitch")
# More cut joints than this is not a mechanism but a hostile input (the loop workspace grows with
# the square of the constraint rows: 1000 spherical cuts already need ~0.2 GB).
MAX_CLOSURES = 1000

# |norm - 1| allowed for `axis` and `axis2` (they are never silently normalised: a wrong axis is
# more often a typo than round-off), and the smallest |axis x axis2| of a universal joint.
UNIT_TOLERANCE = 1e-6
PARALLEL_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class ClosureSpec:
    """One cut joint. Arrays are read-only float64.

    parent_origin, child_origin: (4, 4) pose of the joint frame (A, resp. B) in the parent (child)
        link frame; identity when not given. The two frames coincide when the loop is assembled
        with the cut joint at its zero.
    axis: (3,) unit, in the joint frame; [0, 0, 1] for types that take no axis.
    axis2: (3,) unit (universal) or None.  length: float > 0 (distance) or None.
    pitch: float != 0 (helical: m of translation along axis per radian of rotation) or None.
    """
    name: str
    type: str
    parent: str
    child: str
    parent_origin: np.ndarray
    child_origin: np.ndarray
    axis: np.ndarray
    axis2: np.ndarray | None
    length: float | None
    pitch: float | None = None

    def __eq__(self, other):
        if not isinstance(other, ClosureSpec):
            return NotImplemented
        return (self.name == other.name and self.type == other.type
                and self.parent == other.parent and self.child == other.child
                and np.array_equal(self.parent_origin, other.parent_origin)
                and np.array_equal(self.child_origin, other.child_origin)
                and np.array_equal(self.axis, other.axis)
                and (self.axis2 is None) == (other.axis2 is None)
                and (self.axis2 is None or np.array_equal(self.axis2, other.axis2))
                and self.length == other.length and self.pitch == other.pitch)

    __hash__ = None


@dataclass(frozen=True)
class ClosureSet:
    """The parsed closure file. `source` names where it came from (not compared by ==)."""
    closures: tuple                   # ClosureSpec, in file order
    actuated: tuple                   # joint names (str), as given; () when absent
    independent: tuple                # joint names (str), as given; () when absent
    source: str = field(default="", compare=False)

    @property
    def names(self):
        return tuple(spec.name for spec in self.closures)


def read_closures(source, link_names) -> ClosureSet:
    """Parse and validate closures from a file path (str or Path), YAML text or a dict.

    link_names: the URDF's link names (parent and child must be among them).
    Raises ModelError naming the source, the entry and the field at fault.
    """
    data, where = _load(source)
    links = tuple(link_names)
    link_set = set(links)
    if not isinstance(data, dict):
        raise ModelError(f"{where}: expected a mapping with the keys {', '.join(TOP_LEVEL_KEYS)}, "
                         f"got {fields.kind(data)}")
    fields.check_keys(data, TOP_LEVEL_KEYS, f"{where}: unknown top-level key", "expected")
    if "closures" not in data:
        raise ModelError(f"{where}: missing the 'closures' list")
    entries = data["closures"]
    if not isinstance(entries, (list, tuple)):
        raise ModelError(f"{where}: 'closures' must be a list of closure entries, "
                         f"got {fields.kind(entries)}")
    if not entries:
        raise ModelError(f"{where}: 'closures' is empty: declare at least one closure "
                         "(or load the robot without closures)")
    specs = fields.named_entries(
        entries, where, "closures", "closure", MAX_CLOSURES,
        lambda entry, index: _read_entry(entry, index, where, links, link_set))
    return ClosureSet(closures=specs,
                      actuated=_joint_list(data, "actuated", where),
                      independent=_joint_list(data, "independent", where),
                      source=where)


# ---- sources -----------------------------------------------------------------------------------

def _load(source):
    """(parsed data, name of the source for messages): yaml_input.read_yaml (safe loading,
    duplicate keys refused, sizes capped)."""
    return read_yaml(source, "closures", "closure file")


# ---- one entry ---------------------------------------------------------------------------------

def _read_entry(entry, index, where, links, link_set):
    if not isinstance(entry, dict):
        raise ModelError(f"{where}: closure {index}: expected a mapping with the fields "
                         f"{', '.join(ENTRY_FIELDS)}, got {fields.kind(entry)}")
    name = entry.get("name")
    label = f"{where}: closure {index}"
    if "name" not in entry or name is None or name == "":
        raise ModelError(f"{label} (unnamed): field 'name': missing; every closure needs a "
                         "unique name")
    if not isinstance(name, str):
        raise ModelError(f"{label}: field 'name': must be a string, got {fields.kind(name)}")
    label = f"{where}: closure {index} ('{excerpt(name, 80)}')"
    fields.check_keys(entry, ENTRY_FIELDS, f"{label}: unknown field", "expected")

    cut_type = entry.get("type")
    if cut_type is None:
        raise ModelError(f"{label}: field 'type': missing (one of {', '.join(CUT_TYPES)})")
    if not isinstance(cut_type, str) or cut_type not in CUT_TYPES:
        shown = fields.quoted(cut_type, 80) if isinstance(cut_type, str) else excerpt(cut_type, 80)
        raise ModelError(f"{label}: field 'type': unknown type {shown} "
                         f"(expected one of {', '.join(CUT_TYPES)})")

    ends = {}
    for role in ("parent", "child"):
        link = entry.get(role)
        if link is None:
            raise ModelError(f"{label}: field '{role}': missing (a link name)")
        if not isinstance(link, str):
            raise ModelError(f"{label}: field '{role}': must be a link name, got {fields.kind(link)}")
        if link not in link_set:
            raise ModelError(f"{label}: field '{role}': unknown link '{excerpt(link, 80)}' "
                             f"({fields.suggest(link, links)})")
        ends[role] = link
    if ends["parent"] == ends["child"]:
        raise ModelError(f"{label}: fields 'parent' and 'child': both are link '{ends['parent']}'; "
                         "a closure joins two different links")

    parent_origin = fields.origin(entry, "parent_origin", label)
    child_origin = fields.origin(entry, "child_origin", label)

    uses = {"axis": cut_type in AXIS_TYPES, "axis2": cut_type == "universal",
            "length": cut_type == "distance", "pitch": cut_type == "helical"}
    for key, used in uses.items():
        if key in entry and not used:
            users = {"axis": ", ".join(AXIS_TYPES), "axis2": "universal",
                     "length": "distance", "pitch": "helical"}[key]
            raise ModelError(f"{label}: field '{key}': not used by a {cut_type} closure "
                             f"(only by {users}); remove it or fix the type")

    axis = np.array([0.0, 0.0, 1.0])
    if uses["axis"]:
        axis = _unit_vector(entry, "axis", label, cut_type)
    axis2 = None
    if uses["axis2"]:
        axis2 = _unit_vector(entry, "axis2", label, cut_type)
        if np.linalg.norm(np.cross(axis, axis2)) < PARALLEL_TOLERANCE:
            raise ModelError(f"{label}: field 'axis2': {axis2.tolist()} is parallel to axis "
                             f"{axis.tolist()}; a universal joint needs two different axes")
        axis2.setflags(write=False)
    length = None
    if uses["length"]:
        if entry.get("length") is None:
            raise ModelError(f"{label}: field 'length': missing (distance between the two frame "
                             "origins, > 0)")
        length = fields.number(entry["length"], f"{label}: field 'length'")
        if not length > 0.0:
            raise ModelError(f"{label}: field 'length': must be positive, got {length} "
                             "(a spherical closure joins two coincident points)")
    pitch = None
    if uses["pitch"]:
        if entry.get("pitch") is None:
            raise ModelError(f"{label}: field 'pitch': missing (translation along the axis per "
                             "radian, m/rad, non-zero)")
        pitch = fields.number(entry["pitch"], f"{label}: field 'pitch'")
        if not (math.isfinite(pitch) and pitch != 0.0):
            raise ModelError(f"{label}: field 'pitch': must be a finite non-zero number, got "
                             f"{pitch} (a helical joint of pitch 0 is a revolute joint)")
    axis.setflags(write=False)
    return ClosureSpec(name=name, type=cut_type, parent=ends["parent"], child=ends["child"],
                       parent_origin=parent_origin, child_origin=child_origin, axis=axis,
                       axis2=axis2, length=length, pitch=pitch)


def _unit_vector(entry, key, label, cut_type):
    if entry.get(key) is None:
        what = {"revolute": "the rotation axis", "prismatic": "the sliding axis",
                "cylindrical": "the rotation and sliding axis",
                "helical": "the screw axis",
                "universal": "the first rotation axis (fixed in the parent frame)" if key == "axis"
                else "the second rotation axis (fixed in the child frame)",
                "planar": "the plane's normal"}[cut_type]
        raise ModelError(f"{label}: field '{key}': missing; a {cut_type} closure needs {what}, "
                         "a unit vector in the joint frame")
    vector = fields.numbers(entry[key], 3, f"{label}: field '{key}'")
    norm = float(np.linalg.norm(vector))
    if abs(norm - 1.0) > UNIT_TOLERANCE:
        raise ModelError(f"{label}: field '{key}': {vector.tolist()} must be a unit vector "
                         f"(norm {norm:.9g})")
    return vector



def _joint_list(data, key, where):
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ModelError(f"{where}: '{key}': must be a list of joint names, got {fields.kind(value)}")
    seen = set()
    for i, name in enumerate(value):
        if not isinstance(name, str) or not name:
            raise ModelError(f"{where}: '{key}[{i}]': must be a joint name (a string), "
                             f"got {fields.kind(name)}")
        if name in seen:
            raise ModelError(f"{where}: '{key}[{i}]': joint '{excerpt(name, 80)}' is listed twice")
        seen.add(name)
    return tuple(value)


