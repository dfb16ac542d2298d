"""Robot sources without ROS: .xacro paths given to mbd_ros.load are expanded with xacro (or
refused with an error naming xacro, never loaded as an empty robot), and the launch files'
robot arguments map to node parameters (launch/robot_args.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.robot_source import expand_xacro

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


def test_xacro_without_the_package_is_refused_naming_xacro(monkeypatch):
    monkeypatch.setitem(sys.modules, "xacro", None)    # import xacro -> ImportError
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
    from mbd_ros.joint_map import JointMap   # the nodes' default `joints`
    assert commanded_joints(fourbar, closures) == \
        list(JointMap(mbd_ros.load(fourbar["urdf_path"], closures=closures)).joints)

def xacro_free(xml):
    return "${" not in xml and "$(arg" not in xml
