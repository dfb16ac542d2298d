"""Forward dynamics node (lifecycle; autostarts by default).

    ros2 launch mbd_ros forward_dynamics.launch.py                       # arm7, observe mode
    ros2 launch mbd_ros forward_dynamics.launch.py mode:=simulate rate:=500.0
    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=/path/robot.urdf \
        params_file:=/path/params.yaml

observe: joint_states in -> ~/accelerations, ~/wrenches/<joint>, ~/closure_wrenches/<closure>.
simulate: ~/effort_commands or joint_commands in -> joint_states and the same outputs.
The default params_file is config/arm7_<mode>.yaml of this package.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('mbd_ros')
    mode = LaunchConfiguration('mode')
    arguments = [
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'urdf', 'arm7.urdf']),
            description='URDF file of the robot'),
        DeclareLaunchArgument(
            'closures', default_value='',
            description='YAML file declaring the loop closures of a closed-loop robot '
                        '(empty: the robot is a tree)'),
        DeclareLaunchArgument(
            'mode', default_value='observe', choices=['observe', 'simulate'],
            description='observe: outputs for each joint_states message; simulate: '
                        'integrate the motion from effort commands and publish joint_states'),
        DeclareLaunchArgument(
            'params_file',
            default_value=[PathJoinSubstitution([share, 'config', 'arm7_']), mode, '.yaml'],
            description='node parameters (YAML); default config/arm7_<mode>.yaml'),
        DeclareLaunchArgument(
            'rate', default_value='1000.0',
            description='simulate: step rate in Hz; observe: expected input rate'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
    ]
    node = LifecycleNode(
        package='mbd_ros',
        executable='forward_dynamics',
        name='forward_dynamics',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        parameters=[
            LaunchConfiguration('params_file'),
            {
                'urdf_path': ParameterValue(LaunchConfiguration('urdf'), value_type=str),
                'closures_path': ParameterValue(LaunchConfiguration('closures'), value_type=str),
                'mode': ParameterValue(mode, value_type=str),
                'rate_hz': ParameterValue(LaunchConfiguration('rate'), value_type=float),
            },
        ],
    )
    return LaunchDescription(arguments + [node])
