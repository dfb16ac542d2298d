"""The launch files' robot arguments, tested as processes: the nodes are started exactly as the
launch files start them (launch/robot_args.py's robot_parameters maps the arguments to
parameters, written to a parameter file as launch_ros does), without launch installed.

- urdf:=pendulum.urdf.xacro xacro_args:="length:=0.7 mass:=2.0": the node gets the expanded
  XML as robot_description, and its accelerations are the closed-form ones of that pendulum;
- urdf:=gantry.urdf mode:=simulate, no parameter file: the plant runs with the defaults (every
  1-dof joint of the gantry);
- no robot argument: the node waits for the robot_description topic.
The launch_testing version is test_launch_robot_sources.py (where launch_testing exists).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import assert_close  # noqa: E402
from ros_harness import (READY_TIMEOUT, URDF, Ros, joint_state, now_stamp,  # noqa: E402
                         warm_numba_cache)
sys.path.insert(0, str(URDF.parent / "launch"))
from robot_args import robot_parameters  # noqa: E402
from test_robot_source import pendulum_closed_form  # noqa: E402


@pytest.fixture(scope="module")
def ros():
    warm_numba_cache(mbd_ros.load(str(URDF / "gantry.urdf")))
    warm_numba_cache(mbd_ros.load(str(URDF / "pendulum.urdf.xacro")))
    ros = Ros(salt=79)
    yield ros
    ros.close()


def launch_like(ros, tmp_path, node, name, launch_args, **overrides):
    """Start `node` as the launch file does: robot parameters from the launch arguments plus
    the overrides, in a parameter file."""
    params = dict(robot_parameters(search_dirs=[URDF], **launch_args), **overrides)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    return ros.start(node, params_files=[path], remaps={"__ns": f"/{name}"})


def test_xacro_with_arguments(ros, tmp_path):
    launch_like(ros, tmp_path, "forward_dynamics", "xacro",
                {"urdf": "pendulum.urdf.xacro", "xacro_args": "length:=0.7 mass:=2.0"},
                mode="observe", rate_hz=500.0)
    acc = ros.subscribe(JointTrajectory, "/xacro/forward_dynamics/accelerations")
    q = np.array([0.3, 0.8])
    ros.spin_until(lambda: len(acc) > 0, READY_TIMEOUT, every=0.2,
                   action=lambda: ros.publish(JointState, "/xacro/joint_states", joint_state(
                       now_stamp(ros), ["joint_1", "joint_2"], q, [0, 0], [0, 0])),
                   what="accelerations of the xacro robot")
    M, g = pendulum_closed_form(q, 0.7, 2.0)
    assert_close(np.array(acc[-1][1].points[0].accelerations), np.linalg.solve(M, -g),
                 "accelerations of the xacro pendulum (length 0.7, mass 2)", rtol=1e-6)


def test_any_robot_runs_on_the_defaults(ros, tmp_path):
    """urdf:=gantry.urdf mode:=simulate with no parameter file (the old launch file failed on
    arm7's parameters)."""
    gantry = mbd_ros.load(str(URDF / "gantry.urdf"))
    launch_like(ros, tmp_path, "forward_dynamics", "gantry", {"urdf": "gantry.urdf"},
                mode="simulate", rate_hz=500.0)
    states = ros.subscribe(JointState, "/gantry/joint_states")
    ros.spin_until(lambda: len(states) > 20, READY_TIMEOUT, what="the gantry plant")
    msg = states[-1][1]
    assert list(msg.name) == list(gantry.joint_names)
    assert np.isfinite(np.array(msg.position)).all()


def test_no_robot_argument_waits_for_the_topic(ros, tmp_path):
    from std_msgs.msg import String
    from mbd_ros.nodes.qos import DESCRIPTION_QOS
    child = launch_like(ros, tmp_path, "inverse_dynamics", "waiting", {}, mode="gravity")
    ros.spin_until(lambda: "waiting for the robot description" in child.output(),
                   READY_TIMEOUT, what="the node to wait for the topic")
    assert ros.lifecycle_state("waiting/inverse_dynamics") == "unconfigured"
    efforts = ros.subscribe(JointState, "/waiting/inverse_dynamics/efforts")
    ros.publisher(String, "/waiting/robot_description", DESCRIPTION_QOS).publish(
        String(data=(URDF / "gantry.urdf").read_text()))
    gantry = mbd_ros.load(str(URDF / "gantry.urdf"))
    q = gantry.neutral() + 0.1
    ros.spin_until(lambda: len(efforts) > 0, READY_TIMEOUT, every=0.2,
                   action=lambda: ros.publish(JointState, "/waiting/joint_states", joint_state(
                       now_stamp(ros), gantry.joint_names, q)),
                   what="gravity torques once the description arrived")
    tau = np.array(efforts[-1][1].effort)
    limits = np.array(gantry.effort_limits)
    expected = np.clip(gantry.gravity_forces(q), -limits, limits)
    assert_close(tau, expected, "gravity torques of the gantry")
