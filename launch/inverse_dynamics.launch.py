"""Inverse dynamics node for controllers (lifecycle; autostarts by default).

    ros2 launch mbd_ros inverse_dynamics.launch.py                       # arm7, computed torque
    ros2 launch mbd_ros inverse_dynamics.launch.py mode:=gravity
    ros2 launch mbd_ros inverse_dynamics.launch.py rate:=500.0 \
        commands_topic:=/forward_command_controller/commands

joint_states and ~/reference in -> ~/effort_commands (Float64MultiArray, remappable with
commands_topic) and ~/efforts (JointState).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('mbd_ros')
    arguments = [
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'urdf', 'arm7.urdf']),
            description='URDF file of the robot'),
        DeclareLaunchArgument(
            'closures', default_value='',
            description='YAML file declaring the loop closures of a closed-loop robot '
                        '(empty: the robot is a tree); the torques are then those of the '
                        'actuated joints'),
        DeclareLaunchArgument(
            'mode', default_value='computed_torque',
            choices=['gravity', 'feedforward', 'computed_torque'],
            description='gravity: tau = g(q); feedforward: tau = ID(reference); '
                        'computed_torque: PD on the reference through the inverse dynamics'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([share, 'config', 'arm7_computed_torque.yaml']),
            description='node parameters (YAML): joints, kp, kd, ...'),
        DeclareLaunchArgument(
            'rate', default_value='0.0',
            description='0: one output per joint_states message; > 0: timer rate in Hz'),
        DeclareLaunchArgument(
            'commands_topic', default_value='~/effort_commands',
            description='where to publish the effort commands (Float64MultiArray)'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
    ]
    node = LifecycleNode(
        package='mbd_ros',
        executable='inverse_dynamics',
        name='inverse_dynamics',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        parameters=[
            LaunchConfiguration('params_file'),
            {
                'urdf_path': ParameterValue(LaunchConfiguration('urdf'), value_type=str),
                'closures_path': ParameterValue(LaunchConfiguration('closures'), value_type=str),
                'mode': ParameterValue(LaunchConfiguration('mode'), value_type=str),
                'rate_hz': ParameterValue(LaunchConfiguration('rate'), value_type=float),
            },
        ],
        remappings=[('~/effort_commands', LaunchConfiguration('commands_topic'))],
    )
    return LaunchDescription(arguments + [node])
