"""The closure file (mbd_ros/closures.py): a valid file, YAML text and dict give equal results,
and every invalid entry gives a ModelError that names the source, the entry and the field."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from conftest import assert_close
from mbd_ros.inputs.closures import CUT_TYPES, ClosureSet, ClosureSpec, read_closures
from mbd_ros.errors import ModelError

LINKS = ["base", "crank", "coupler", "rocker", "arm", "platform"]


def entry(name, cut_type, **fields):
    base = {"name": name, "type": cut_type, "parent": "coupler", "child": "rocker"}
    base.update(fields)
    return base


VALID = {
    "closures": [
        entry("c_revolute", "revolute", axis=[0, 1, 0],
              parent_origin={"xyz": [0.1, 0.0, -0.2], "rpy": [0.1, -0.2, 0.3]},
              child_origin={"xyz": [0.0, 0.05, 0.0]}),
        entry("c_prismatic", "prismatic", axis=[1, 0, 0], child_origin={"rpy": [0, 0, 1.5]}),
        entry("c_cylindrical", "cylindrical", axis=[0.6, 0.0, 0.8]),
        entry("c_universal", "universal", parent="arm", child="platform", axis=[0, 0, 1],
              axis2=[0, 1, 0]),
        entry("c_spherical", "spherical", parent="base", child="platform"),
        entry("c_planar", "planar", axis=[0, 0, -1]),
        entry("c_fixed", "fixed", parent="crank", child="arm"),
        entry("c_distance", "distance", length=0.35, parent_origin={"xyz": [0.2, 0, 0]}),
        entry("c_helical", "helical", axis=[0, 0, 1], pitch=0.01),
    ],
    "actuated": ["j1", "j2"],
    "independent": ["j1"],
}


def as_text(data):
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture
def sources(tmp_path):
    """Functions turning a dict into each accepted kind of source, with the name errors use."""
    def as_file(data):
        path = tmp_path / "closures.yaml"
        path.write_text(as_text(data))
        return str(path)

    return {"dict": (lambda d: copy.deepcopy(d), "<closures dict>"),
            "text": (as_text, "<closures text>"),
            "file": (as_file, str(tmp_path / "closures.yaml"))}


def test_valid_file_text_and_dict_are_equal(sources, tmp_path):
    results = {kind: read_closures(make(VALID), LINKS) for kind, (make, _) in sources.items()}
    results["path"] = read_closures(tmp_path / "closures.yaml", LINKS)
    reference = results["dict"]
    assert isinstance(reference, ClosureSet)
    for kind, result in results.items():
        assert result == reference, kind
        assert result.closures == reference.closures
        assert result.actuated == ("j1", "j2") and result.independent == ("j1",)
    assert results["file"].source == str(tmp_path / "closures.yaml")
    assert results["text"].source == "<closures text>"
    assert reference.source == "<closures dict>"
    assert reference.names == tuple(e["name"] for e in VALID["closures"])
    assert [c.type for c in reference.closures] == list(CUT_TYPES)


def test_field_values():
    specs = {c.name: c for c in read_closures(VALID, LINKS).closures}
    rev = specs["c_revolute"]
    assert isinstance(rev, ClosureSpec)
    assert (rev.parent, rev.child) == ("coupler", "rocker")
    expected = np.eye(4)
    expected[:3, :3] = Rotation.from_euler("xyz", [0.1, -0.2, 0.3]).as_matrix()  # Rz Ry Rx
    expected[:3, 3] = [0.1, 0.0, -0.2]
    assert_close(rev.parent_origin, expected, "parent_origin (URDF rpy)")
    child = np.eye(4)
    child[:3, 3] = [0.0, 0.05, 0.0]
    assert_close(rev.child_origin, child, "child_origin without rpy")
    assert_close(rev.axis, [0, 1, 0], "axis")
    assert rev.axis2 is None and rev.length is None
    assert_close(specs["c_spherical"].parent_origin, np.eye(4), "missing origin = identity")
    assert_close(specs["c_spherical"].axis, [0, 0, 1], "default axis")
    assert_close(specs["c_universal"].axis2, [0, 1, 0], "axis2")
    assert specs["c_distance"].length == 0.35
    assert not rev.parent_origin.flags.writeable and not rev.axis.flags.writeable
    with pytest.raises(AttributeError):
        rev.name = "other"


def test_optional_lists_and_yaml_numbers():
    text = ("closures:\n  - {name: d, type: distance, parent: crank, child: arm, length: 5e-2,\n"
            "     parent_origin: {xyz: [1e-3, 0, 0]}}\n")
    result = read_closures(text, LINKS)
    assert result.actuated == () and result.independent == ()
    assert result.closures[0].length == 0.05          # YAML 1.1 reads 5e-2 as a string
    assert result.closures[0].parent_origin[0, 3] == 1e-3
    # an empty list declares no loop: an error naming the field, not an empty ClosedLoopRobot
    with pytest.raises(ModelError, match="'closures' is empty"):
        read_closures({"closures": []}, LINKS)


# ---- errors: (description, mutation of VALID, entry label or None, field, message fragment) ----

def set_field(index, key, value):
    def mutate(data):
        data["closures"][index][key] = value
    return mutate


def del_field(index, key):
    def mutate(data):
        del data["closures"][index][key]
    return mutate


def set_top(key, value):
    def mutate(data):
        data[key] = value
    return mutate


def chain(*mutations):
    def mutate(data):
        for m in mutations:
            m(data)
    return mutate


ERRORS = [
    ("unknown type", set_field(0, "type", "hinge"), "closure 0 ('c_revolute')", "'type'",
     "unknown type 'hinge'"),
    ("missing type", del_field(1, "type"), "closure 1 ('c_prismatic')", "'type'", "missing"),
    ("unknown parent link", set_field(2, "parent", "couplr"), "closure 2 ('c_cylindrical')",
     "'parent'", "did you mean 'coupler'"),
    ("unknown child link", set_field(2, "child", "zzz"), "closure 2 ('c_cylindrical')", "'child'",
     "links are base, crank, coupler, rocker, arm, ..."),
    ("parent == child", set_field(4, "child", "base"), "closure 4 ('c_spherical')", "'child'",
     "both are link 'base'"),
    ("missing name", del_field(3, "name"), "closure 3 (unnamed)", "'name'", "missing"),
    ("name not a string", set_field(3, "name", 12), "closure 3", "'name'", "must be a string"),
    ("duplicate name", set_field(5, "name", "c_revolute"), "closure 5 ('c_revolute')", "'name'",
     "already used by closure 0"),
    ("missing axis revolute", del_field(0, "axis"), "closure 0 ('c_revolute')", "'axis'",
     "missing"),
    ("missing axis prismatic", del_field(1, "axis"), "closure 1 ('c_prismatic')", "'axis'",
     "missing"),
    ("missing axis cylindrical", del_field(2, "axis"), "closure 2 ('c_cylindrical')", "'axis'",
     "missing"),
    ("missing axis universal", del_field(3, "axis"), "closure 3 ('c_universal')", "'axis'",
     "missing"),
    ("missing axis planar", del_field(5, "axis"), "closure 5 ('c_planar')", "'axis'", "normal"),
    ("missing axis2", del_field(3, "axis2"), "closure 3 ('c_universal')", "'axis2'", "missing"),
    ("axis2 parallel", set_field(3, "axis2", [0, 0, -1]), "closure 3 ('c_universal')", "'axis2'",
     "parallel"),
    ("non-unit axis", set_field(0, "axis", [0, 2, 0]), "closure 0 ('c_revolute')", "'axis'",
     "must be a unit vector"),
    ("nearly unit axis", set_field(0, "axis", [0, 1.00001, 0]), "closure 0 ('c_revolute')",
     "'axis'", "must be a unit vector"),
    ("non-unit axis2", set_field(3, "axis2", [0, 0.5, 0]), "closure 3 ('c_universal')", "'axis2'",
     "must be a unit vector"),
    ("axis of 2 numbers", set_field(0, "axis", [0, 1]), "closure 0 ('c_revolute')", "'axis'",
     "list of 3 numbers"),
    ("axis with a word", set_field(0, "axis", [0, "one", 0]), "closure 0 ('c_revolute')",
     "'axis[1]'", "must be a number"),
    ("axis on spherical", set_field(4, "axis", [0, 0, 1]), "closure 4 ('c_spherical')", "'axis'",
     "not used by a spherical"),
    ("axis2 on revolute", set_field(0, "axis2", [1, 0, 0]), "closure 0 ('c_revolute')",
     "'axis2'", "not used by a revolute"),
    ("length on fixed", set_field(6, "length", 1.0), "closure 6 ('c_fixed')", "'length'",
     "not used by a fixed"),
    ("xyz of 2", set_field(0, "parent_origin", {"xyz": [0, 1]}), "closure 0 ('c_revolute')",
     "'parent_origin.xyz'", "list of 3 numbers"),
    ("rpy of 4", set_field(0, "child_origin", {"rpy": [0, 0, 0, 0]}), "closure 0 ('c_revolute')",
     "'child_origin.rpy'", "list of 3 numbers"),
    ("non-finite xyz", set_field(1, "parent_origin", {"xyz": [0, math.inf, 0]}),
     "closure 1 ('c_prismatic')", "'parent_origin.xyz[1]'", "must be finite"),
    ("nan rpy", set_field(1, "child_origin", {"rpy": [math.nan, 0, 0]}),
     "closure 1 ('c_prismatic')", "'child_origin.rpy[0]'", "must be finite"),
    ("origin not a mapping", set_field(1, "parent_origin", [0, 0, 0]), "closure 1 ('c_prismatic')",
     "'parent_origin'", "must be a mapping"),
    ("origin typo", set_field(1, "parent_origin", {"xzy": [0, 0, 0]}), "closure 1 ('c_prismatic')",
     "'parent_origin'", "unknown key 'xzy' (did you mean 'xyz'?"),
    ("missing length", del_field(7, "length"), "closure 7 ('c_distance')", "'length'", "missing"),
    ("negative length", set_field(7, "length", -0.1), "closure 7 ('c_distance')", "'length'",
     "must be positive"),
    ("zero length", set_field(7, "length", 0.0), "closure 7 ('c_distance')", "'length'",
     "must be positive"),
    ("length not a number", set_field(7, "length", "long"), "closure 7 ('c_distance')",
     "'length'", "must be a number"),
    ("boolean length", set_field(7, "length", True), "closure 7 ('c_distance')", "'length'",
     "must be a number"),
    ("entry field typo", set_field(2, "axsi", [0, 0, 1]), "closure 2 ('c_cylindrical')",
     "'axsi'", "did you mean 'axis'"),
    ("entry not a mapping", lambda d: d["closures"].append("oops"), "closure 9",
     "expected a mapping", "name, type"),
    ("unknown top-level key", set_top("closure", []), None, "'closure'", "did you mean 'closures'"),
    ("missing closures", lambda d: d.pop("closures"), None, "'closures'", "missing"),
    ("closures not a list", set_top("closures", {"a": 1}), None, "'closures'", "must be a list"),
    ("actuated not a list", set_top("actuated", "j1"), None, "'actuated'", "list of joint names"),
    ("actuated not strings", set_top("actuated", ["j1", 3]), None, "'actuated[1]'",
     "must be a joint name"),
    ("actuated duplicate", set_top("actuated", ["j1", "j1"]), None, "'actuated[1]'",
     "listed twice"),
    ("independent not strings", set_top("independent", [None]), None, "'independent[0]'",
     "must be a joint name"),
    ("top level not a mapping", None, None, "expected a mapping", "closures, actuated"),
]


# every case as a dict, YAML text and a file (a top-level list is YAML, not a dict source)
ERROR_PARAMS = [pytest.param(case, kind, id=f"{case[0]}-{kind}") for case in ERRORS
                for kind in ("dict", "text", "file") if case[1] is not None or kind != "dict"]


@pytest.mark.parametrize("case,kind", ERROR_PARAMS)
def test_errors_name_source_entry_and_field(case, kind, sources):
    _, mutate, label, field, fragment = case
    if mutate is None:
        data = ["not", "a", "mapping"]
    else:
        data = copy.deepcopy(VALID)
        mutate(data)
    make, source_name = sources[kind]
    with pytest.raises(ModelError) as info:
        read_closures(make(data), LINKS)
    message = str(info.value)
    assert message.startswith(f"{source_name}: "), message
    if label is not None:
        assert label in message, message
    assert field in message, message
    assert fragment in message, message


def test_source_errors(tmp_path):
    with pytest.raises(ModelError, match="closure file not found: nowhere/closures.yaml"):
        read_closures("nowhere/closures.yaml", LINKS)
    bad = tmp_path / "bad.yaml"
    bad.write_text("closures: [\n  {name: x\n")
    with pytest.raises(ModelError, match=f"{bad}: malformed YAML"):
        read_closures(str(bad), LINKS)
    with pytest.raises(ModelError, match="<closures text>: malformed YAML"):
        read_closures("closures: [\n  {name: x\n", LINKS)
    with pytest.raises(ModelError, match="file path, YAML text or a dict"):
        read_closures(42, LINKS)


def test_safe_load_only():
    """Python-object tags are refused by yaml.safe_load, never constructed."""
    text = "closures: !!python/object/apply:os.system ['echo unsafe']\n"
    with pytest.raises(ModelError, match="<closures text>: malformed YAML"):
        read_closures(text, LINKS)
