"""Inverse dynamics node for controllers (lifecycle; autostarts by default).

    ros2 launch mbd_ros inverse_dynamics.launch.py urdf:=arm7.urdf               # computed torque
    ros2 launch mbd_ros inverse_dynamics.launch.py urdf:=arm7.urdf mode:=gravity
    ros2 launch mbd_ros inverse_dynamics.launch.py urdf:=robot.urdf.xacro xacro_args:="a:=1" \
        rate:=500.0 commands_topic:=/forward_command_controller/commands

joint_states and ~/reference in -> ~/effort_commands (Float64MultiArray, remappable with
commands_topic) and ~/efforts (JointState). The robot: `robot_description` (XML), else `urdf`
(URDF or .xacro path + `xacro_args`), else the robot_description topic; `params_file` optional
(defaults: every 1-dof joint, kp 100, kd 20). See docs/nodes.md.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import LifecycleNode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import (launch_value, params_file_path, robot_arguments,  # noqa: E402 (beside)
                        robot_from_launch)


def _node(context):

    def arg(name):
        return launch_value(context, name)
    robot, share = robot_from_launch(context)
    overrides = dict(robot, closures_path=arg('closures'), mode=arg('mode'),
                     rate_hz=float(arg('rate')))
    params_file = params_file_path(arg('params_file'), share)   # relative: in the share dir
    parameters = ([params_file] if params_file else []) + [overrides]
    return [LifecycleNode(
        package='mbd_ros', executable='inverse_dynamics', name='inverse_dynamics',
        namespace=arg('namespace'), output='screen', parameters=parameters,
        remappings=[('~/effort_commands', arg('commands_topic'))])]


def generate_launch_description():
    return LaunchDescription(robot_arguments(closures_description=(
        'YAML file declaring the loop closures of a closed-loop robot (empty: the robot is a '
        'tree); the torques are then those of the actuated joints')) + [
        DeclareLaunchArgument(
            'mode', default_value='computed_torque',
            choices=['gravity', 'feedforward', 'computed_torque'],
            description='gravity: tau = g(q); feedforward: tau = ID(reference); '
                        'computed_torque: PD on the reference through the inverse dynamics'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description='node parameters (YAML), optional: joints, kp, kd, ... (an absolute '
                        'path or one relative to the package share directory; a missing file '
                        'is an error)'),
        DeclareLaunchArgument(
            'rate', default_value='0.0',
            description='0: one output per joint_states message; > 0: timer rate in Hz'),
        DeclareLaunchArgument(
            'commands_topic', default_value='~/effort_commands',
            description='where to publish the effort commands (Float64MultiArray)'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
        OpaqueFunction(function=_node),
    ])
