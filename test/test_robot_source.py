"""Robot sources without ROS: .xacro paths given to mbd_ros.load are expanded with xacro (or
refused with an error naming xacro, never loaded as an empty robot), and the launch files'
robot arguments map to node parameters (launch/robot_args.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.inputs.xacro import expand_xacro

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "launch"))
from robot_args import commanded_joints, parse_xacro_args, robot_parameters  # noqa: E402

URDF = Path(__file__).resolve().parent.parent / "urdf"
PENDULUM = URDF / "pendulum.urdf.xacro"
G = 9.81


def pendulum_closed_form(q, length, mass):
    """Double pendulum of point bobs (the sample's comment): M(q) and g(q), relative angles."""
    c2 = np.cos(q[1])
    M = mass * length ** 2 * np.array([[3 + 2 * c2, 1 + c2], [1 + c2, 1.0]])
    g = mass * G * length * np.array([2 * np.sin(q[0]) + np.sin(q[0] + q[1]),
                                      np.sin(q[0] + q[1])])
    return M, g


@pytest.mark.parametrize("args, length, mass", [({}, 0.5, 1.0),
                                                ({"length": "0.7", "mass": "2.0"}, 0.7, 2.0)])
def test_xacro_robot_matches_the_closed_form(args, length, mass):
    robot = mbd_ros.load(expand_xacro(PENDULUM, args)) if args else mbd_ros.load(str(PENDULUM))
    assert robot.joint_names == ["joint_1", "joint_2"]
    assert robot.total_mass == pytest.approx(2 * mass)
    q = np.array([0.3, 0.8])
    M, g = pendulum_closed_form(q, length, mass)
    # the bobs' 1e-9 kg m^2 inertias are the only difference from point masses
    assert_close(robot.mass_matrix(q), M, "mass matrix", rtol=1e-7)
    assert_close(robot.forward_dynamics(q, np.zeros(2), np.zeros(2)), np.linalg.solve(M, -g),
                 "accelerations", rtol=1e-7)


def test_load_accepts_xacro_paths_as_str_and_path():
    a = mbd_ros.load(PENDULUM)
    b = mbd_ros.load(str(PENDULUM))
    assert a.nv == b.nv == 2 and a.total_mass == b.total_mass == 2.0


def test_xacro_without_the_package_is_refused_naming_xacro(monkeypatch, tmp_path):
    # the expansion's child process finds this package first: `import xacro` -> ImportError
    (tmp_path / "xacro.py").write_text("raise ImportError('no xacro here')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    with pytest.raises(mbd_ros.ModelError, match="xacro") as info:
        mbd_ros.load(str(PENDULUM))
    assert "pendulum.urdf.xacro" in str(info.value)


def test_bad_xacro_files(tmp_path):
    with pytest.raises(mbd_ros.ModelError, match="not found"):
        mbd_ros.load(str(tmp_path / "missing.urdf.xacro"))
    broken = tmp_path / "broken.urdf.xacro"
    broken.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                      '<link name="${undefined_property}"/></robot>')
    with pytest.raises(mbd_ros.ModelError, match="broken.urdf.xacro.*xacro"):
        mbd_ros.load(str(broken))


def test_launch_robot_arguments():
    xml = PENDULUM.read_text()
    assert robot_parameters() == {}                                     # wait for the topic
    assert robot_parameters(robot_description=" <robot/>") == {"robot_description": " <robot/>"}
    assert robot_parameters(urdf="gantry.urdf", search_dirs=[URDF]) == \
        {"urdf_path": str(URDF / "gantry.urdf")}
    expanded = robot_parameters(urdf="pendulum.urdf.xacro", xacro_args="length:=0.7 mass:=2.0",
                                search_dirs=[URDF])["robot_description"]
    assert '<mass value="2.0"/>' in expanded and 'xyz="0 0 -0.7"' in expanded
    assert "xacro:property" not in expanded and xacro_free(expanded)
    assert "xacro:property" in xml
    assert parse_xacro_args('a:=1 b:="x y"') == {"a": "1", "b": "x y"}
    with pytest.raises(ValueError, match="xacro_args"):
        parse_xacro_args("a=1")
    with pytest.raises(ValueError, match="xacro_args"):
        robot_parameters(urdf="gantry.urdf", xacro_args="a:=1", search_dirs=[URDF])
    with pytest.raises(ValueError, match="xacro_args"):
        robot_parameters(xacro_args="a:=1")
    gantry = mbd_ros.load(str(URDF / "gantry.urdf"))
    assert sorted(commanded_joints({"urdf_path": str(URDF / "gantry.urdf")})) == \
        sorted(gantry.joint_names)
    assert commanded_joints({"robot_description": expanded}) == ["joint_1", "joint_2"]
    fourbar = {"urdf_path": str(URDF / "fourbar.urdf")}
    closures = str(URDF.parent / "config" / "fourbar_closures.yaml")
    from mbd_ros.robot.joint_map import JointMap   # the nodes' default `joints`
    assert commanded_joints(fourbar, closures) == \
        list(JointMap(mbd_ros.load(fourbar["urdf_path"], closures=closures)).joints)

def xacro_free(xml):
    return "${" not in xml and "$(arg" not in xml


# ---- mimic joints of a xacro come from its expansion ---------------------------------------------

GRIPPER_FINGERS = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <joint name="finger_a" type="revolute"><parent link="palm"/><child link="finger_a_link"/>
    <origin xyz="0 0.03 0.1"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="5"/></joint>
  <link name="finger_a_link"><inertial><origin xyz="0 0.01 0.04"/><mass value="0.08"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00002"/></inertial></link>
  <joint name="finger_b" type="revolute"><parent link="palm"/><child link="finger_b_link"/>
    <origin xyz="0 -0.03 0.1"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="5"/>
    <mimic joint="finger_a" multiplier="${ratio}" offset="0.1"/></joint>
  <link name="finger_b_link"><inertial><origin xyz="0 -0.01 0.04"/><mass value="0.08"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00002"/></inertial></link>
</robot>
"""
GRIPPER_MAIN = """<?xml version="1.0"?>
<robot name="gripper" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="ratio" value="-1.5"/>
  <link name="base"/>
  <joint name="wrist" type="revolute"><parent link="base"/><child link="palm"/>
    <origin xyz="0 0 0.1"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <link name="palm"><inertial><origin xyz="0 0 0.05"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <xacro:include filename="fingers.xacro"/>
</robot>
"""


def test_mimic_tags_of_an_included_file_are_coupled(tmp_path, monkeypatch):
    """mimic=True with a .xacro path: the <mimic> sits in an included file (with a xacro
    property as multiplier), so only the expansion has it; the file is expanded once. Reference:
    the same robot given as expanded XML text, and the coupling qdd_b = -1.5 qdd_a itself."""
    from mbd_ros.inputs import xacro_process
    (tmp_path / "fingers.xacro").write_text(GRIPPER_FINGERS)
    main = tmp_path / "gripper.urdf.xacro"
    main.write_text(GRIPPER_MAIN)
    calls = []
    expand = xacro_process.expand
    monkeypatch.setattr(xacro_process, "expand", lambda *a, **k: calls.append(a) or expand(*a, **k))
    robot = mbd_ros.load(str(main), mimic=True)
    assert getattr(robot, "mimic_joints", None) == ["finger_b"]
    assert len(calls) == 1, f"the xacro file was expanded {len(calls)} times"
    reference = mbd_ros.load(expand_xacro(main), mimic=True)
    assert reference.mimic_joints == ["finger_b"]
    q = robot.apply_mimic(np.array([0.2, 0.3, 0.0]))
    assert q[2] == pytest.approx(-1.5 * 0.3 + 0.1)
    v = robot.mimic_coupling @ np.array([0.5, -0.4])
    tau = np.array([0.3, 0.1, 0.0])
    qdd = robot.forward_dynamics(q, v, tau)
    np.testing.assert_array_equal(qdd, reference.forward_dynamics(q, v, tau))
    # the coupling is exact up to the round-off of the small (3 x 3) solve
    assert qdd[2] == pytest.approx(-1.5 * qdd[1], rel=1e-12, abs=1e-12)


def test_malformed_mimic_of_a_xacro_names_the_file(tmp_path):
    (tmp_path / "fingers.xacro").write_text(GRIPPER_FINGERS.replace('multiplier="${ratio}"',
                                                                    'multiplier="fast"'))
    main = tmp_path / "gripper.urdf.xacro"
    main.write_text(GRIPPER_MAIN)
    with pytest.raises(mbd_ros.ModelError, match="gripper.urdf.xacro: joint 'finger_b': <mimic> "
                                                 "multiplier and offset must be numbers"):
        mbd_ros.load(str(main), mimic=True)
