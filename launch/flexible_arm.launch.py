"""The two-link arm with a flexible forearm as a simulated plant (forward dynamics node, simulate
mode, lifecycle, autostarts).

    ros2 launch mbd_ros flexible_arm.launch.py                 # 4 kHz RK4, see the config
    ros2 launch mbd_ros flexible_arm.launch.py rate:=5000.0

Publishes joint_states (shoulder, elbow), ~/elastic_states (forearm/mode_1..4), ~/accelerations,
~/wrenches/<joint>; takes ~/effort_commands (Float64MultiArray [shoulder, elbow]) or
joint_commands. Files: urdf/flexible_arm.urdf, config/flexible_arm.yaml (the flexible_links
section), config/flexible_arm_simulate.yaml (node parameters).
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import existing_file, launch_value, params_file_path  # noqa: E402 (beside)


def _node(context):
    """The node, its files checked first: a missing params file was passed on to launch_ros,
    which only warned and started the node without it; a relative path is resolved in the
    package share directory, as in forward_dynamics.launch.py."""
    share = FindPackageShare('mbd_ros').perform(context)
    params = params_file_path(launch_value(context, 'params_file'), share)
    files = {name: existing_file(name, launch_value(context, name), [share])
             for name in ('urdf', 'flexible')}
    return [LifecycleNode(
        package='mbd_ros',
        executable='forward_dynamics',
        name='forward_dynamics',
        namespace=launch_value(context, 'namespace'),
        output='screen',
        parameters=([params] if params else []) + [{
            'urdf_path': files['urdf'],
            'flexible_path': files['flexible'],
            'mode': 'simulate',
            'rate_hz': float(launch_value(context, 'rate')),
        }],
    )]


def generate_launch_description():
    share = FindPackageShare('mbd_ros')
    arguments = [
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'urdf', 'flexible_arm.urdf']),
            description='URDF file of the robot (a relative path: also looked for in the '
                        'package share directory)'),
        DeclareLaunchArgument(
            'flexible', default_value=PathJoinSubstitution([share, 'config', 'flexible_arm.yaml']),
            description='YAML file with the flexible_links section (a relative path: also '
                        'looked for in the package share directory)'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([share, 'config', 'flexible_arm_simulate.yaml']),
            description='node parameters (YAML; a relative path is resolved in the package '
                        'share directory; empty: none)'),
        DeclareLaunchArgument(
            'rate', default_value='4000.0',
            description='step rate in Hz: RK4 needs 2 pi f dt < 2.8 for the highest mode of the '
                        'arm with free joints (835 Hz for the sample)'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
    ]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
