"""The topic_based_ros2_control recipe of docs/ros2_control.md, checked against the plant:

- the page's XML and YAML blocks parse, agree with the config files they document
  (config/ur5_ros2_control.xacro, config/ur5_ros2_controllers.yaml) and name the plant's joints
  (config/ur5_topic_based_plant.yaml `joints`, every actuated joint of the UR5 of
  example-robot-data); the hardware is TopicBasedSystem on its default topics; the controllers
  use interfaces the block declares; MoveIt's controller entry names the plant's action;
- as processes: the plant started with the page's command line (params file and remaps) and a
  test process that does on the wire what TopicBasedSystem does (topic_based_ros2_control 0.3.0,
  src/topic_based_system.cpp: commands on /robot_joint_commands with QoS(1), states from
  /robot_joint_states with SensorDataQoS, a JointState of every joint of the block, in its order,
  with positions, published each 100 Hz cycle while sum |state - command| > 1e-5) moves the
  UR5 to each of three poses, read back on /robot_joint_states; the publishing stops once the
  plant is there and the pose is held without further commands.

References: TopicBasedSystem's defaults and rule as its source has them (constants below), the
UR5 URDF's joints, the commanded poses.
"""
from __future__ import annotations

from pathlib import Path
import re
import shlex

from lxml import etree
import numpy as np
import pytest
import yaml

import mbd_ros
from ros_harness import CONFIG, READY_TIMEOUT, REPO

DOC = REPO / "docs" / "ros2_control.md"
UR5 = "ur_description/urdf/ur5_robot.urdf"
# topic_based_ros2_control 0.3.0, src/topic_based_system.cpp:143-152 and
# include/topic_based_ros2_control/topic_based_system.hpp:95
PLUGIN = "topic_based_ros2_control/TopicBasedSystem"
COMMANDS_TOPIC = "/robot_joint_commands"
STATES_TOPIC = "/robot_joint_states"
THRESHOLD = 1e-5
UPDATE_RATE = 100.0   # Hz, config/ur5_ros2_controllers.yaml


def blocks(language):
    """The fenced code blocks of docs/ros2_control.md in `language`."""
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def plant_joints():
    params = yaml.safe_load((CONFIG / "ur5_topic_based_plant.yaml").read_text())
    return params["/**"]["ros__parameters"]["joints"]


def ros2_control_element(text):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
    root = etree.fromstring(text.encode(), parser)
    found = [e for e in root.iter() if etree.QName(e).localname == "ros2_control"]
    assert len(found) == 1
    return found[0]


def block_summary(element):
    """(plugin, {param: value}, [(joint, command interfaces, state interfaces)])."""
    hardware = element.find("hardware")
    params = {p.get("name"): p.text.strip() for p in hardware.findall("param")}
    joints = [(j.get("name"), [c.get("name") for c in j.findall("command_interface")],
               [s.get("name") for s in j.findall("state_interface")])
              for j in element.findall("joint")]
    return hardware.find("plugin").text.strip(), params, joints


def documented_command():
    """The plant's command line on the page: (params file, {from: to} remaps)."""
    for block in blocks("bash"):
        if "forward_dynamics" in block:
            words = shlex.split(block.replace("\\\n", " "))
            remaps = dict(words[k + 1].split(":=") for k, w in enumerate(words) if w == "-r")
            params_file = words[words.index("--params-file") + 1]
            return params_file, remaps
    raise AssertionError("no forward_dynamics command line in docs/ros2_control.md")


# ---------------------------------------------------------------------- the documents
def test_the_ros2_control_block_is_topic_based_on_the_plants_joints(erd_dir):
    xml_blocks = blocks("xml")
    assert len(xml_blocks) == 1
    documented = block_summary(ros2_control_element(xml_blocks[0]))
    shipped = block_summary(ros2_control_element((CONFIG / "ur5_ros2_control.xacro").read_text()))
    assert documented == shipped
    plugin, params, joints = documented
    assert plugin == PLUGIN
    assert params["joint_commands_topic"] == COMMANDS_TOPIC
    assert params["joint_states_topic"] == STATES_TOPIC
    assert float(params["trigger_joint_command_threshold"]) == THRESHOLD
    names = [j[0] for j in joints]
    assert names == plant_joints()
    robot = mbd_ros.load(str(erd_dir / UR5))
    actuated = [n for n, t in zip(robot.joint_names, robot.joint_types)
                if t in ("revolute", "prismatic", "continuous")]
    assert sorted(names) == sorted(actuated)
    for name, commands, states in joints:
        assert commands == ["position"], name
        assert states == ["position", "velocity"], name


def test_the_controllers_use_the_blocks_joints_and_interfaces():
    _, _, joints = block_summary(ros2_control_element(blocks("xml")[0]))
    documented = [yaml.safe_load(b) for b in blocks("yaml")]
    controllers = [d for d in documented if "controller_manager" in d]
    assert len(controllers) == 1
    config = yaml.safe_load((CONFIG / "ur5_ros2_controllers.yaml").read_text())
    assert controllers[0] == config
    manager = config["controller_manager"]["ros__parameters"]
    assert manager["update_rate"] == UPDATE_RATE
    assert manager["joint_state_broadcaster"]["type"] == \
        "joint_state_broadcaster/JointStateBroadcaster"
    assert manager["joint_trajectory_controller"]["type"] == \
        "joint_trajectory_controller/JointTrajectoryController"
    jtc = config["joint_trajectory_controller"]["ros__parameters"]
    assert jtc["joints"] == [j[0] for j in joints]
    for name, commands, states in joints:
        assert set(jtc["command_interfaces"]) <= set(commands), name
        assert set(jtc["state_interfaces"]) <= set(states), name


def test_moveit_controller_entry_names_the_plants_action():
    """MoveIt's action name is <controller>/<action_ns>: the plant's node name and its
    follow_joint_trajectory action (mbd_ros/nodes/follow_joint_trajectory.py)."""
    from mbd_ros.nodes.follow_joint_trajectory import ACTION_NAME
    moveit = [yaml.safe_load(b) for b in blocks("yaml") if "moveit_simple_controller_manager"
              in b]
    assert len(moveit) == 1
    manager = moveit[0]["moveit_simple_controller_manager"]
    (name,) = manager["controller_names"]
    assert name == "forward_dynamics"
    entry = manager[name]
    assert entry["type"] == "FollowJointTrajectory"
    assert f"~/{entry['action_ns']}" == ACTION_NAME
    assert entry["joints"] == plant_joints()


def test_the_plants_command_line_remaps_onto_the_default_topics():
    params_file, remaps = documented_command()
    assert (REPO / params_file).is_file()
    assert remaps == {"joint_commands": COMMANDS_TOPIC, "joint_states": STATES_TOPIC}


# ---------------------------------------------------------------------- on the wire
def test_topic_based_system_drives_the_plant(erd_dir):
    pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                        "'mbd_ros[ros]', or source a ROS 2 install)")
    from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                           qos_profile_sensor_data)
    from sensor_msgs.msg import JointState

    from ros_harness import Ros, now_stamp, stamp_key, warm_numba_cache

    path = str(erd_dir / UR5)
    warm_numba_cache(mbd_ros.load(path))
    _, _, joints = block_summary(ros2_control_element(blocks("xml")[0]))
    names = [j[0] for j in joints]
    params_file, remaps = documented_command()
    ros = Ros(salt=227)
    try:
        latest = {}

        def on_state(msg):
            latest["msg"] = msg
        ros.node.create_subscription(JointState, STATES_TOPIC, on_state,
                                     qos_profile_sensor_data)
        ros.start("forward_dynamics", {"urdf_path": path}, remaps=remaps,
                  params_files=[str(REPO / params_file)])
        ros.spin_until(lambda: "msg" in latest, READY_TIMEOUT, what=STATES_TOPIC)
        commands = ros.node.create_publisher(    # rclcpp::QoS(1)
            JointState, COMMANDS_TOPIC,
            QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.VOLATILE))
        ros.spin_until(lambda: commands.get_subscription_count() > 0, 60.0,
                       what=f"the plant's subscription of {COMMANDS_TOPIC}")

        def state_positions():
            msg = latest["msg"]
            index = {n: k for k, n in enumerate(msg.name)}
            return np.array([msg.position[index[n]] for n in names])

        q0 = state_positions()
        sent = {"count": 0, "quiet": 0}

        def write(target):
            """TopicBasedSystem::write() of one controller-manager cycle."""
            diff = np.abs(state_positions() - target).sum()
            if diff <= THRESHOLD:
                sent["quiet"] += 1
                return
            sent["quiet"] = 0
            msg = JointState(name=names, position=[float(x) for x in target])
            msg.header.stamp = now_stamp(ros)
            commands.publish(msg)
            sent["count"] += 1

        offsets = [np.array([0.3, -0.2, 0.25, 0.2, -0.3, 0.4]),
                   np.array([-0.2, 0.15, -0.3, -0.1, 0.2, -0.5]), np.zeros(6)]
        for k, offset in enumerate(offsets):
            target = q0 + offset
            before = sent["count"]
            sent["quiet"] = 0
            # the rule stops publishing once the plant is there (sum of errors <= 1e-5):
            # wait for 10 quiet cycles in a row
            ros.spin_until(lambda: sent["quiet"] >= 10, 120.0, every=1.0 / UPDATE_RATE,
                           action=lambda: write(target), what=f"pose {k} reached")
            assert sent["count"] > before             # it was commanded
            assert np.abs(state_positions() - target).sum() <= THRESHOLD
            # held without further commands: 0.5 s of the plant's stamps later, still there
            t = stamp_key(latest["msg"].header.stamp)
            ros.spin_until(lambda: stamp_key(latest["msg"].header.stamp) > t + 500_000_000,
                           60.0, what="0.5 s of states")
            assert np.abs(state_positions() - target).sum() <= THRESHOLD
    finally:
        ros.close()


def test_the_recipe_files_are_installed():
    """setup.py ships config/*.yaml and config/*.xacro (share/mbd_ros/config)."""
    setup = (REPO / "setup.py").read_text()
    assert "share_files('config', ['*.yaml', '*.xacro'])" in setup
    assert Path(CONFIG / "ur5_ros2_control.xacro").is_file()
