"""Forward dynamics node (lifecycle; autostarts by default).

    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=arm7.urdf               # observe mode
    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=gantry.urdf mode:=simulate
    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=/path/robot.urdf.xacro \
        xacro_args:="prefix:=left_ arm:=true" params_file:=/path/params.yaml
    ros2 launch mbd_ros forward_dynamics.launch.py robot_description:="$(cat robot.urdf)"
    ros2 launch mbd_ros forward_dynamics.launch.py          # waits for the robot_description topic

The robot: `robot_description` (URDF XML), else `urdf` (a URDF path, or a .xacro path expanded
with `xacro_args`; a relative name not found is looked up in the package's urdf/ folder), else
none (`urdf:=none` or empty): the node waits for the robot_description topic (as
robot_state_publisher publishes it). `params_file` is optional: an absolute path, or a path
relative to the package's share directory (`params_file:=config/arm7_simulate.yaml`); a file
that does not exist is an error. The node's defaults work for any robot (every 1-dof joint
commanded, zero initial state, joints whose zero is outside their limits at the nearest limit).

Plant (simulate mode) arguments, each empty by default (the params file's value or the node's
default then applies): `use_sim_time`, `publish_clock` (true / false), `initial_positions`
("[0.0, -1.57, ...]" in the order of `joints`), and remappings of the topics:
`joint_states_topic`, `joint_commands_topic`, `effort_commands_topic`,
`position_commands_topic`, `velocity_commands_topic` (e.g.
`position_commands_topic:=/arm/position_controller/commands`). See docs/nodes.md.

    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=arm7.urdf mode:=simulate \
        params_file:=config/arm7_simulate.yaml publish_clock:=true \
        initial_positions:="[0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]" \
        joint_states_topic:=/arm/joint_states
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import LifecycleNode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import (PLANT_TOPICS, launch_value, params_file_path,  # noqa: E402 (beside)
                        plant_overrides, robot_arguments, robot_from_launch, topic_remappings)


def _node(context):

    def arg(name):
        return launch_value(context, name)
    robot, share = robot_from_launch(context)
    overrides = dict(robot, closures_path=arg('closures'), mode=arg('mode'),
                     rate_hz=float(arg('rate')))
    overrides.update(plant_overrides(arg('use_sim_time'), arg('publish_clock'),
                                     arg('initial_positions')))
    params_file = params_file_path(arg('params_file'), share)
    parameters = ([params_file] if params_file else []) + [overrides]
    remappings = topic_remappings(**{name: arg(name) for name in PLANT_TOPICS})
    return [LifecycleNode(
        package='mbd_ros', executable='forward_dynamics', name='forward_dynamics',
        namespace=arg('namespace'), output='screen', parameters=parameters,
        remappings=remappings)]


def generate_launch_description():
    return LaunchDescription(robot_arguments() + [
        DeclareLaunchArgument(
            'mode', default_value='observe', choices=['observe', 'simulate'],
            description='observe: outputs for each joint_states message; simulate: '
                        'integrate the motion from effort commands and publish joint_states'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description='node parameters (YAML), optional: an absolute path or one relative '
                        'to the package share directory, e.g. config/arm7_simulate.yaml (a '
                        'missing file is an error)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='',
            description='true: the node follows /clock (simulate: lockstep with an external '
                        '/clock); empty: the params file or false'),
        DeclareLaunchArgument(
            'publish_clock', default_value='',
            description='simulate: true: publish simulated time on /clock; empty: the params '
                        'file or false'),
        DeclareLaunchArgument(
            'initial_positions', default_value='',
            description='simulate: initial positions, "[q1, q2, ...]" in the order of the '
                        '`joints` parameter; empty: the params file, else zero (joints whose '
                        'zero is outside their limits: the nearest limit)'),
    ] + [
        DeclareLaunchArgument(
            name, default_value='',
            description=f'remap the node\'s {topic} to this name (empty: no remapping)')
        for name, topic in PLANT_TOPICS.items()
    ] + [
        DeclareLaunchArgument(
            'rate', default_value='1000.0',
            description='simulate: step rate in Hz; observe: expected input rate'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
        OpaqueFunction(function=_node),
    ])
