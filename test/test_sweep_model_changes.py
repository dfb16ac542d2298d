"""A sweep's changes to the robot (mbd_ros/sweep/model_changes.py) against the same change
written into the URDF and loaded by the URDF parser (an independent path: the parser merges a
welded payload link into its body and turns <inertial> origins and rpy into the body's
spatial inertia itself). Compared on the mass matrix and the inverse dynamics (gravity,
Coriolis) at random states, to RTOL (round-off: both are sums of products over the tree).
"""
from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from conftest import assert_close
import mbd_ros
from mbd_ros.cli.samples import sample_urdf
from mbd_ros.sweep import model_changes as C
from mbd_ros.sweep.spec import Variation


def _variation(quantity, target, axis="", offset=(0.0, 0.0, 0.0)):
    return Variation(f"{quantity}:{target}", quantity, target, (0.0,), None, axis, offset)


def _urdf_tree():
    return etree.fromstring(sample_urdf().read_bytes(),
                            etree.XMLParser(remove_comments=True, resolve_entities=False))


def _inertial(root, link):
    return root.find(f"link[@name='{link}']/inertial")


def _load(root):
    return mbd_ros.load(etree.tostring(root, encoding="unicode"))


def _changed(robot, variations, values):
    targets = C.InertialTargets(robot, variations)
    p = C.changed_parameters(robot.inertial_parameters(), targets, variations, values)
    return robot.with_inertial_parameters(p)


def _assert_same_dynamics(actual, expected, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q = expected.random_configuration(rng)
        v = rng.standard_normal(expected.nv)
        a = rng.standard_normal(expected.nv)
        assert_close(actual.mass_matrix(q), expected.mass_matrix(q), "M")
        assert_close(actual.inverse_dynamics(q, v, a), expected.inverse_dynamics(q, v, a), "ID")


@pytest.fixture(scope="module")
def arm():
    return mbd_ros.load(str(sample_urdf()))


def test_payload_equals_a_welded_point_mass_link_in_the_urdf(arm):
    """1.7 kg at (0.02, -0.01, 0.05) in ee_link (welded two links below link_7's body)."""
    mass, offset = 1.7, (0.02, -0.01, 0.05)
    root = _urdf_tree()
    link = etree.SubElement(root, "link", name="payload")
    inertial = etree.SubElement(link, "inertial")
    etree.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
    etree.SubElement(inertial, "mass", value=str(mass))
    etree.SubElement(inertial, "inertia", ixx="0", ixy="0", ixz="0", iyy="0", iyz="0", izz="0")
    joint = etree.SubElement(root, "joint", name="payload_joint", type="fixed")
    etree.SubElement(joint, "parent", link="ee_link")
    etree.SubElement(joint, "child", link="payload")
    etree.SubElement(joint, "origin", xyz=" ".join(map(str, offset)), rpy="0 0 0")
    changed = _changed(arm, [_variation("payload", "ee_link", offset=offset)], [mass])
    assert changed.total_mass == pytest.approx(arm.total_mass + mass, rel=1e-14)
    _assert_same_dynamics(changed, _load(root))


def test_mass_scales_the_body_like_a_denser_link(arm):
    """link_4 at 3.1 kg instead of 2.2: the URDF's mass and inertia times 3.1 / 2.2, the
    centre of mass unchanged."""
    root = _urdf_tree()
    inertial = _inertial(root, "link_4")
    old = float(inertial.find("mass").get("value"))
    inertial.find("mass").set("value", "3.1")
    inertia = inertial.find("inertia")
    for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        inertia.set(key, repr(float(inertia.get(key)) * 3.1 / old))
    _assert_same_dynamics(_changed(arm, [_variation("mass", "link_4")], [3.1]), _load(root))


def test_inertia_scale_scales_the_rotational_inertia_about_the_com(arm):
    """link_2 (its inertial origin rotated: rpy 0 -0.08 0.1) with its <inertia> times 1.5."""
    root = _urdf_tree()
    inertia = _inertial(root, "link_2").find("inertia")
    for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        inertia.set(key, repr(float(inertia.get(key)) * 1.5))
    _assert_same_dynamics(_changed(arm, [_variation("inertia_scale", "link_2")], [1.5]),
                          _load(root))


def test_com_offset_moves_the_inertial_origin(arm):
    """link_1's centre of mass 0.02 m further along y of its frame (its inertial rpy kept)."""
    root = _urdf_tree()
    origin = _inertial(root, "link_1").find("origin")
    xyz = [float(x) for x in origin.get("xyz").split()]
    xyz[1] += 0.02
    origin.set("xyz", " ".join(repr(x) for x in xyz))
    _assert_same_dynamics(_changed(arm, [_variation("com_offset", "link_1", axis="y")], [0.02]),
                          _load(root))


def test_changes_apply_in_file_order(arm):
    """A payload then a mass change scales the payload too; the other order does not."""
    payload, mass = _variation("payload", "link_6"), _variation("mass", "link_6")
    body = arm.body_names.index("link_6")
    m6 = arm.inertial_parameters()[10 * body]
    first = _changed(arm, [payload, mass], [1.0, 2.0 * m6])
    second = _changed(arm, [mass, payload], [2.0 * m6, 1.0])
    assert first.inertial_parameters()[10 * body] == pytest.approx(2.0 * m6)
    assert second.inertial_parameters()[10 * body] == pytest.approx(2.0 * m6 + 1.0)


def test_negative_mass_is_an_error_naming_the_body(arm):
    with pytest.raises(ValueError, match="link_3"):
        _changed(arm, [_variation("mass", "link_3")], [-1.0])


@pytest.mark.parametrize("variation, message", [
    (_variation("mass", "tool0"), "welded to the body 'link_7'"),
    (_variation("mass", "base_link"), "fixed base"),
    (_variation("payload", "no_such_link"), "'no_such_link' is not a link"),
])
def test_targets_that_do_not_fit_the_robot_are_named(arm, variation, message):
    with pytest.raises(C.VariationError, match=message):
        C.InertialTargets(arm, [variation])


def test_stiffness_is_written_into_the_named_element():
    data = {"forces": [{"name": "strut", "type": "spring_damper", "stiffness": 300.0},
                       {"name": "elbow_spring", "type": "joint_spring", "stiffness": 5.0}]}
    changed = C.forces_with_stiffness(data, [("elbow_spring", 7.5)])
    assert changed["forces"][1]["stiffness"] == 7.5 and changed["forces"][0]["stiffness"] == 300.0
    assert data["forces"][1]["stiffness"] == 5.0      # the parsed data is not changed
    with pytest.raises(C.VariationError, match="'nope' is not in"):
        C.forces_with_stiffness(data, [("nope", 1.0)])
