"""Hostile model inputs: every malformed URDF or closure file gives mbd_ros.ModelError (a
ValueError) whose message names the file and the field/link/joint at fault; nothing else escapes
(no OverflowError, RecursionError, MemoryError, UnicodeDecodeError, numpy errors) and long inputs
are never echoed whole. The small files are in test/hostile/; huge inputs are generated here."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import mbd_ros

HOSTILE = Path(__file__).resolve().parent / "hostile"
REPO = Path(__file__).resolve().parent.parent
FOURBAR = str(REPO / "urdf" / "fourbar.urdf")
FOURBAR_CLOSURES = REPO / "config" / "fourbar_closures.yaml"

# file -> (load keyword arguments, fragments the message must contain)
URDF_CASES = {
    "duplicate_axis.urdf": ({}, ["joint 'elbow'", "<axis>", "more than once"]),
    "duplicate_inertial.urdf": ({}, ["link 'arm'", "<inertial>", "more than once"]),
    "partial_inertia.urdf": ({}, ["link 'arm'", "<inertia>", "ixy", "izz"]),
    "inertial_without_inertia.urdf": ({}, ["link 'arm'", "<inertia"]),
    "negative_mass.urdf": ({}, ["link 'arm'", "mass"]),
    "negative_effort.urdf": ({}, ["joint 'elbow'", "effort"]),
    "nan_effort.urdf": ({}, ["joint 'elbow'", "effort"]),
    "negative_velocity_limit.urdf": ({}, ["joint 'elbow'", "velocity"]),
    "nan_lower_limit.urdf": ({}, ["joint 'elbow'", "lower"]),
    "axis_two_components.urdf": ({}, ["joint 'elbow'", "axis", "3 numbers"]),
    "origin_two_components.urdf": ({}, ["joint 'elbow'", "origin", "3 numbers"]),
    "zero_axis.urdf": ({}, ["joint 'elbow'", "axis"]),
    "root_joint_name.urdf": ({"floating_base": True}, ["joint 'root_joint'", "floating_base"]),
    "invalid_utf8.urdf": ({}, ["UTF-8"]),
    "empty.urdf": ({}, ["malformed XML"]),
}

# closure file for urdf/fourbar.urdf -> fragments the message must contain
CLOSURE_CASES = {
    "duplicate_key.yaml": ["duplicate key 'axis'", "line"],
    "duplicate_top_key.yaml": ["duplicate key 'actuated'"],
    "empty_closures.yaml": ["'closures'", "empty"],
    "axis_two_components.yaml": ["field 'axis'", "3 numbers"],
    "huge_integer.yaml": ["field 'length'", "digits"],
    "nan_origin.yaml": ["field 'parent_origin.xyz[0]'", "finite"],
    "empty.yaml": ["empty"],
    "invalid_utf8.yaml": ["UTF-8"],
}


def check_message(exc, fragments, source=None):
    message = str(exc)
    assert isinstance(exc, mbd_ros.ModelError) and isinstance(exc, ValueError), type(exc)
    for fragment in fragments:
        assert fragment in message, f"the message does not say {fragment!r}: {message}"
    if source is not None:
        assert source in message, f"the message does not name the file {source}: {message}"
    assert len(message) < 2000, f"the message is {len(message)} characters long"


@pytest.mark.parametrize("name", list(URDF_CASES))
def test_hostile_urdf_files(name):
    kwargs, fragments = URDF_CASES[name]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(str(HOSTILE / name), **kwargs)
    check_message(exc.value, fragments, name)


@pytest.mark.parametrize("name", list(URDF_CASES))
def test_hostile_urdf_text(name):
    """The same content given as text (or bytes) names the field too."""
    kwargs, fragments = URDF_CASES[name]
    data = (HOSTILE / name).read_bytes()
    if name == "empty.urdf":
        fragments = ["empty"]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(data, **kwargs)
    check_message(exc.value, fragments)


@pytest.mark.parametrize("name", list(CLOSURE_CASES))
def test_hostile_closure_files(name):
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=str(HOSTILE / name))
    check_message(exc.value, CLOSURE_CASES[name], name)


def test_the_corpus_is_complete():
    """Every file in test/hostile/ is exercised by a case above."""
    files = {p.name for p in HOSTILE.iterdir()}
    assert files == set(URDF_CASES) | set(CLOSURE_CASES), files ^ (set(URDF_CASES) | set(CLOSURE_CASES))


# ---- generated hostile inputs --------------------------------------------------------------------

def test_deeply_nested_yaml_is_a_model_error():
    text = "closures: " + "[" * 100_000 + "]" * 100_000
    # the cost bound is on this process's CPU time, which other jobs on the machine do not
    # stretch (wall time under load does); an unbounded parse would take minutes
    t0 = time.process_time()
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=text)
    check_message(exc.value, ["<closures text>", "nesting"])
    assert time.process_time() - t0 < 10.0


def test_too_many_closures_is_a_model_error():
    entry = "  - {name: c%d, type: spherical, parent: coupler, child: rocker}\n"
    text = "closures:\n" + "".join(entry % i for i in range(1001))
    t0 = time.process_time()                    # CPU time: see above
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=text)
    check_message(exc.value, ["'closures'", "1001 entries"])
    assert time.process_time() - t0 < 30.0


def test_absurd_numbers_in_a_closure_dict():
    data = {"closures": [{"name": "c", "type": "distance", "parent": "coupler", "child": "rocker",
                          "length": 10 ** 5000}]}
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=data)
    check_message(exc.value, ["field 'length'", "digits"])


@pytest.mark.parametrize("digits", [5000, 6000])
def test_huge_yaml_integer_text_beyond_python_int_limit(digits):
    """Beyond Python's 4300-digit limit the message was its bare ValueError; now it names the
    line (shorter integers are read and refused by the field's check, naming it: above)."""
    text = ("closures:\n  - {name: c, type: distance, parent: coupler, child: rocker,\n"
            "     length: " + "7" * digits + "}\n")
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=text)
    check_message(exc.value, ["<closures text>", "line 3", f"an integer of {digits} characters"])


@pytest.mark.parametrize("text", ["", "   \n  ", "\ufeff"])
def test_empty_closure_text_says_empty(text):
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures=text)
    check_message(exc.value, ["empty"])
    assert "not found" not in str(exc.value)


def test_bom_prefixed_xml_string_is_xml():
    text = "\ufeff" + Path(FOURBAR).read_text()
    robot = mbd_ros.load(text)
    assert robot.nv == 3
    robot = mbd_ros.load(text.encode("utf-8"))
    assert robot.nv == 3


def test_bom_prefixed_closure_text_is_yaml():
    robot = mbd_ros.load(FOURBAR, closures="\ufeff" + FOURBAR_CLOSURES.read_text())
    assert robot.closure_names == ["coupler_rocker"]


def test_multi_megabyte_inputs_are_not_echoed():
    """A 5 MB non-XML string (neither a file nor XML) and a 5 MB malformed XML: the error quotes
    an excerpt only."""
    junk = "x" * 5_000_000
    for source in (junk, "<robot>" + junk, "<robot name='" + junk + "'><link name='a'/></robot>" * 2):
        with pytest.raises(mbd_ros.ModelError) as exc:
            mbd_ros.load(source)
        assert len(str(exc.value)) < 1000, len(str(exc.value))
    name = "n" * 1_000_000
    xml = (f'<robot name="r"><link name="a"/><link name="b"/>'
           f'<joint name="{name}" type="screw"><parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(xml)
    assert len(str(exc.value)) < 1000 and "characters)" in str(exc.value), str(exc.value)[:300]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures="closures: [" + "y" * 5_000_000)
    assert len(str(exc.value)) < 1000


def test_effort_limits_of_a_valid_file_are_kept():
    """Guard: the limit checks do not reject valid limits (0 is a valid effort limit)."""
    xml = (HOSTILE / "negative_effort.urdf").read_text().replace('effort="-5"', 'effort="0"')
    robot = mbd_ros.load(xml)
    assert np.array_equal(robot.effort_limits, [0.0])


def test_huge_names_in_a_closure_file_are_not_echoed():
    big = "z" * 2_000_000
    entry = {"name": "c", "type": "spherical", "parent": "coupler", "child": "rocker"}
    for mutate in (lambda e: e.update(name=big, parent=big), lambda e: e.update(child=big),
                   lambda e: e.update(type=big), lambda e: e.update({big: 1})):
        data = {"closures": [dict(entry)]}
        mutate(data["closures"][0])
        with pytest.raises(mbd_ros.ModelError) as exc:
            mbd_ros.load(FOURBAR, closures=data)
        assert len(str(exc.value)) < 1000, str(exc.value)[:200]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(FOURBAR, closures={"closures": [entry], "actuated": [big]})
    assert len(str(exc.value)) < 1000, str(exc.value)[:200]


def test_huge_undefined_link_names_in_a_urdf_are_not_echoed():
    big = "w" * 3_000_000
    xml = (f'<robot name="r"><link name="a"/><link name="b"/>'
           f'<joint name="j" type="fixed"><parent link="a"/><child link="{big}"/></joint></robot>')
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(xml)
    assert "joint 'j'" in str(exc.value) and len(str(exc.value)) < 2100
