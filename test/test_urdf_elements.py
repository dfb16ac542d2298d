"""The URDF element readers (mbd_ros.urdf_elements) against yourdfpy's parsers, the reference they
replace: every link and joint of every example-robot-data URDF and of the package samples must
give the same numbers (poses to 1e-15, everything else exactly)."""
import os
import re
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from mbd_ros.inputs import urdf_elements

yourdfpy = pytest.importorskip("yourdfpy") if os.environ.get("CI") != "true" else __import__("yourdfpy")
URDF = yourdfpy.URDF

REPO = Path(__file__).resolve().parent.parent


def _urdf_files():
    files = sorted((REPO / "urdf").glob("*.urdf"))
    import site
    for d in site.getsitepackages():
        robots = Path(d) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if robots.is_dir():
            files += sorted(robots.rglob("*.urdf"))
    return files


FILES = _urdf_files()


def _same(a, b, what):
    if a is None or b is None:
        assert a is None and b is None, what
    else:
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=1e-15,
                                   err_msg=what)


def test_there_are_files_to_compare():
    assert len(FILES) >= 10, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_same_as_yourdfpy(path):
    root = etree.fromstring(path.read_bytes(), etree.XMLParser(remove_comments=True))
    for element in root.findall("link"):
        ours, ref = urdf_elements.parse_link(element), URDF._parse_link(element)
        what = f"{path.name} link {ref.name}"
        assert ours.name == ref.name
        if ref.inertial is None:
            assert ours.inertial is None, what
            continue
        assert ours.inertial.mass == ref.inertial.mass, what
        _same(ours.inertial.origin, ref.inertial.origin, what + " inertial origin")
        _same(ours.inertial.inertia, ref.inertial.inertia, what + " inertia")
    for element in root.findall("joint"):
        ours, ref = urdf_elements.parse_joint(element), URDF._parse_joint(element)
        what = f"{path.name} joint {ref.name}"
        assert (ours.name, ours.type, ours.parent, ours.child) == (ref.name, ref.type, ref.parent, ref.child)
        _same(ours.origin, ref.origin, what + " origin")
        _same(ours.axis, ref.axis, what + " axis")
        for key in ("lower", "upper", "effort", "velocity"):
            assert (getattr(ours.limit, key) if ours.limit else None) == \
                   (getattr(ref.limit, key) if ref.limit else None), what + " limit " + key
        for key in ("damping", "friction"):
            assert (getattr(ours.dynamics, key) if ours.dynamics else None) == \
                   (getattr(ref.dynamics, key) if ref.dynamics else None), what + " dynamics " + key


def test_rpy_convention():
    """R = Rz(y) Ry(p) Rx(r): a closed-form check independent of both parsers."""
    r, p, y = 0.3, -0.7, 1.1
    rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    np.testing.assert_allclose(urdf_elements.rpy_matrix(r, p, y), rz @ ry @ rx, atol=1e-15)


def test_bad_numbers_raise_value_error():
    element = etree.fromstring('<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
                               '<origin xyz="0 0" rpy="0 0 0"/></joint>')
    with pytest.raises(ValueError):
        urdf_elements.parse_joint(element)


@pytest.mark.parametrize("text", ["1_000", "\u0661\u0662", "0x10", "1.0f", "1e", "--1", "nan1", ""])
def test_numbers_are_xml_doubles_not_python_literals(text, tmp_path):
    """URDF numbers are XML Schema doubles: Python's float() also takes "1_000" (1000.0) and
    non-ASCII digits, which urdfdom, yourdfpy's lxml schema and Pinocchio refuse; a mass,
    inertia, origin, limit, dynamics or mimic value written so is refused naming the element,
    and the XML forms (exponents, a leading '.', INF / NaN, read and refused later as
    non-finite) still read."""
    with pytest.raises(ValueError, match="not a number"):
        urdf_elements.xml_float(text)
    for good, value in (("1E+03", 1000.0), (" -.5 ", -0.5), ("+1.", 1.0), ("2e-3", 0.002)):
        assert urdf_elements.xml_float(good) == value
    assert np.isnan(urdf_elements.xml_float("NaN")) and urdf_elements.xml_float("-INF") == -np.inf
    if not text:
        return
    import mbd_ros
    from mbd_ros.errors import ModelError
    sample = (REPO / "urdf" / "arm7.urdf").read_text()
    parse = "cannot parse: not a number"
    for old, message in (('<mass value="', f"link 'base_link': {parse}"),
                         ('ixx="', f"link 'base_link': {parse}"),
                         ('effort="', f"joint 'joint_1': {parse}"),
                         ('damping="', "joint 'joint_1': <dynamics> damping and friction must "
                                       "be numbers")):
        assert old in sample
        bad = tmp_path / "bad.urdf"
        bad.write_text(re.sub(re.escape(old) + '[^"]*"', old + text + '"', sample, count=1))
        with pytest.raises(ModelError, match=f"bad.urdf: {message}"):
            mbd_ros.load(str(bad))


def test_a_continuous_joint_keeps_its_effort_and_velocity_limits(pin):
    """<limit effort velocity> of a continuous joint hold (its position limits do not exist): the
    loader dropped every limit of continuous joints, so the plant applied any torque to a wheel
    and let it spin without bound (an outside audit). Pinocchio's URDF reader as the
    reference."""
    import mbd_ros
    xml = ('<robot name="wheel"><link name="base"/><link name="wheel"><inertial><mass value="1"/>'
           '<inertia ixx="0.01" iyy="0.01" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<joint name="spin" type="continuous"><parent link="base"/><child link="wheel"/>'
           '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1.5" velocity="2.5"/>'
           '</joint></robot>')
    robot = mbd_ros.load(xml)
    model = pin.buildModelFromXML(xml)
    assert robot.effort_limits[0] == 1.5 == model.effortLimit[0]
    assert robot.velocity_limits[0] == 2.5 == model.velocityLimit[0]
    lower, upper = robot.position_limits
    assert lower[0] == -np.inf and upper[0] == np.inf
