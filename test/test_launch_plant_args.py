"""The plant's launch arguments (launch/forward_dynamics.launch.py, launch/robot_args.py), tested
without the launch wheels (launch and launch_ros have none on PyPI):

- robot_args' functions: params_file resolved in the package share directory (a missing file
  an error naming params_file), `urdf:=none` for no URDF, use_sim_time / publish_clock /
  initial_positions parsed (bad text refused naming the argument), topic remappings;
- the launch file itself, run on stand-ins of launch / launch_ros that record what it declares
  and the node it starts: every argument declared, and the arguments reach the node's
  parameters and remappings;
- the node started as the launch file starts it (its parameter list written to files, its
  remappings as -r rules): the state and command topics are the remapped ones, /clock is
  published, the initial positions are the argument's.
"""
from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest
import yaml

from ros_harness import CONFIG, READY_TIMEOUT, REPO, URDF

sys.path.insert(0, str(REPO / "launch"))
from robot_args import (PLANT_TOPICS, params_file_path, parse_positions,  # noqa: E402
                        plant_overrides, robot_parameters, topic_remappings)

SHARE = REPO   # the source tree has the share directory's layout (config/, urdf/, launch/)
Q_ARG = "[0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]"


def test_params_file_is_resolved_in_the_share_directory(tmp_path):
    assert params_file_path("", SHARE) is None
    assert params_file_path("  ", SHARE) is None
    assert params_file_path("config/arm7_simulate.yaml", SHARE) == \
        str(SHARE / "config" / "arm7_simulate.yaml")
    absolute = tmp_path / "p.yaml"
    absolute.write_text("{}")
    assert params_file_path(str(absolute), SHARE) == str(absolute)
    for missing in ("config/nope.yaml", str(tmp_path / "nope.yaml")):
        with pytest.raises(ValueError, match=r"params_file: .*nope\.yaml.* not found"):
            params_file_path(missing, SHARE)
    with pytest.raises(ValueError, match="share directory"):
        params_file_path("nope.yaml", SHARE)


def test_urdf_none_means_no_urdf():
    assert robot_parameters(urdf="none") == {}
    assert robot_parameters(urdf=" NONE ") == {}
    assert robot_parameters(urdf="") == {}
    assert robot_parameters(urdf="arm7.urdf", search_dirs=[URDF]) == \
        {"urdf_path": str(URDF / "arm7.urdf")}


def test_plant_overrides_are_parsed_and_checked():
    assert plant_overrides() == {}
    assert plant_overrides("true", "False", Q_ARG) == {
        "use_sim_time": True, "publish_clock": False,
        "initial_positions": [0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]}
    assert parse_positions("0.5 -1") == [0.5, -1.0] == parse_positions("0.5,-1")
    with pytest.raises(ValueError, match="use_sim_time: 'yes' is not true or false"):
        plant_overrides(use_sim_time="yes")
    with pytest.raises(ValueError, match="publish_clock"):
        plant_overrides(publish_clock="1")
    with pytest.raises(ValueError, match=r"initial_positions: 'a' is not a number.*joints"):
        plant_overrides(initial_positions="[0.1, a]")
    with pytest.raises(ValueError, match="initial_positions: 'nan'"):
        plant_overrides(initial_positions="[0.1, nan]")
    with pytest.raises(ValueError, match="no values"):
        parse_positions("[]")


def test_topic_remappings():
    assert topic_remappings(joint_states_topic="", effort_commands_topic=" ") == []
    assert topic_remappings(joint_states_topic="/arm/joint_states",
                            position_commands_topic="/arm/pos") == [
        ("joint_states", "/arm/joint_states"), ("~/position_commands", "/arm/pos")]
    with pytest.raises(ValueError, match="unknown topic arguments"):
        topic_remappings(state_topic="/x")


# ---------------------------------------------------------------------- the launch file
def stand_ins(monkeypatch, values, started):
    """Modules launch, launch.actions, launch.substitutions, launch_ros.actions and
    launch_ros.substitutions doing what the launch file needs of them: arguments recorded,
    LaunchConfiguration read from `values` (the declared defaults where not given), the node's
    keyword arguments appended to `started`."""
    declared = {}

    class DeclareLaunchArgument:
        def __init__(self, name, default_value=None, description="", choices=None):
            declared[name] = (default_value, description, choices)

    class OpaqueFunction:
        def __init__(self, function):
            self.function = function

    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return values.get(self.name, declared[self.name][0])

    class FindPackageShare:
        def __init__(self, package):
            assert package == "mbd_ros"

        def perform(self, context):
            return str(SHARE)

    modules = {
        "launch": types.ModuleType("launch"),
        "launch.actions": types.ModuleType("launch.actions"),
        "launch.substitutions": types.ModuleType("launch.substitutions"),
        "launch_ros": types.ModuleType("launch_ros"),
        "launch_ros.actions": types.ModuleType("launch_ros.actions"),
        "launch_ros.substitutions": types.ModuleType("launch_ros.substitutions"),
    }
    modules["launch"].LaunchDescription = lambda actions: actions
    modules["launch.actions"].DeclareLaunchArgument = DeclareLaunchArgument
    modules["launch.actions"].OpaqueFunction = OpaqueFunction
    modules["launch.actions"].Shutdown = lambda **kw: ("Shutdown", kw)
    modules["launch.substitutions"].LaunchConfiguration = LaunchConfiguration
    modules["launch_ros.actions"].LifecycleNode = lambda **kw: started.append(kw) or kw
    modules["launch_ros.substitutions"].FindPackageShare = FindPackageShare
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return declared


def run_launch_file(monkeypatch, values):
    """(declared arguments, [node keyword arguments]) of forward_dynamics.launch.py."""
    started = []
    declared = stand_ins(monkeypatch, values, started)
    spec = importlib.util.spec_from_file_location(
        "forward_dynamics_launch", REPO / "launch" / "forward_dynamics.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    actions = module.generate_launch_description()
    for action in actions:
        if hasattr(action, "function"):
            action.function(object())
    return declared, started


def test_the_launch_file_declares_and_passes_the_plant_arguments(monkeypatch):
    values = {"urdf": "arm7.urdf", "mode": "simulate", "params_file": "config/arm7_simulate.yaml",
              "use_sim_time": "false", "publish_clock": "true", "initial_positions": Q_ARG,
              "joint_states_topic": "/arm/joint_states",
              "position_commands_topic": "/arm/position_commands"}
    declared, started = run_launch_file(monkeypatch, values)
    for name in ["use_sim_time", "publish_clock", "initial_positions", "params_file", "urdf",
                 *PLANT_TOPICS]:
        assert name in declared, name
        assert declared[name][0] == "", (name, declared[name])   # empty: params file / default
    assert "none" in declared["urdf"][1]
    assert len(started) == 1
    node = started[0]
    params_file, overrides = node["parameters"]
    assert params_file == str(CONFIG / "arm7_simulate.yaml")
    assert overrides["urdf_path"] == str(URDF / "arm7.urdf")
    assert (overrides["use_sim_time"], overrides["publish_clock"]) == (False, True)
    assert overrides["initial_positions"] == [0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]
    assert sorted(node["remappings"]) == [("joint_states", "/arm/joint_states"),
                                          ("~/position_commands", "/arm/position_commands")]
    # the defaults: no params file, no remapping, nothing overridden
    _, started = run_launch_file(monkeypatch, {"urdf": "none"})
    assert started[0]["parameters"] == [{"closures_path": "", "mode": "observe",
                                         "rate_hz": 1000.0}]
    assert started[0]["remappings"] == []
    # a params file that does not exist is an error, not ignored
    with pytest.raises(ValueError, match="params_file: 'config/missing.yaml' not found"):
        run_launch_file(monkeypatch, {"urdf": "arm7.urdf", "params_file": "config/missing.yaml"})


def test_the_node_runs_as_the_launch_file_starts_it(monkeypatch, tmp_path):
    pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                        "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    import mbd_ros
    from ros_harness import Ros, warm_numba_cache
    values = {"urdf": "arm7.urdf", "mode": "simulate", "params_file": "config/arm7_simulate.yaml",
              "publish_clock": "true", "initial_positions": Q_ARG,
              "joint_states_topic": "/launched/arm_states",
              "position_commands_topic": "/launched/arm_targets"}
    _, started = run_launch_file(monkeypatch, values)
    params_file, overrides = started[0]["parameters"]
    overrides = dict(overrides, hold_initial_positions=True, wrench_joints=["none"])
    path = tmp_path / "overrides.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": overrides}}))
    warm_numba_cache(mbd_ros.load(str(URDF / "arm7.urdf")))
    ros = Ros(salt=149)
    try:
        states = ros.subscribe(JointState, "/launched/arm_states")
        clock = ros.subscribe(Clock, "/clock")
        ros.start("forward_dynamics", params_files=[params_file, path],
                  remaps=dict(started[0]["remappings"], __ns="/launched"))
        ros.spin_until(lambda: len(states) > 10 and len(clock) > 10, READY_TIMEOUT,
                       what="joint_states on the remapped topic and /clock")
        first = states[0][1]
        # held at the initial positions of the argument (publish_clock: stamps from 0)
        assert np.abs(np.array(first.position) - overrides["initial_positions"]).max() < 1e-3
        target = np.array(overrides["initial_positions"]) + 0.1
        pub = ros.matched_publisher(Float64MultiArray, "/launched/arm_targets")
        pub.publish(Float64MultiArray(data=target.tolist()))
        ros.spin_until(lambda: np.abs(np.array(ros.last("/launched/arm_states").position)
                                      - target).max() < 1e-2, 60.0,
                       what="the command on the remapped topic to take effect")
    finally:
        ros.close()
