"""The two-link arm with a flexible forearm as a simulated plant (forward dynamics node, simulate
mode, lifecycle, autostarts).

    ros2 launch mbd_ros flexible_arm.launch.py                 # 4 kHz RK4, see the config
    ros2 launch mbd_ros flexible_arm.launch.py rate:=5000.0

Publishes joint_states (shoulder, elbow), ~/elastic_states (forearm/mode_1..4), ~/accelerations,
~/wrenches/<joint>; takes ~/effort_commands (Float64MultiArray [shoulder, elbow]) or
joint_commands. Files: urdf/flexible_arm.urdf, config/flexible_arm.yaml (the flexible_links
section), config/flexible_arm_simulate.yaml (node parameters).
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
            'urdf', default_value=PathJoinSubstitution([share, 'urdf', 'flexible_arm.urdf']),
            description='URDF file of the robot'),
        DeclareLaunchArgument(
            'flexible', default_value=PathJoinSubstitution([share, 'config', 'flexible_arm.yaml']),
            description='YAML file with the flexible_links section'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([share, 'config', 'flexible_arm_simulate.yaml']),
            description='node parameters (YAML)'),
        DeclareLaunchArgument(
            'rate', default_value='4000.0',
            description='step rate in Hz: RK4 needs 2 pi f dt < 2.8 for the highest mode of the '
                        'arm with free joints (835 Hz for the sample)'),
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
                'flexible_path': ParameterValue(LaunchConfiguration('flexible'), value_type=str),
                'mode': 'simulate',
                'rate_hz': ParameterValue(LaunchConfiguration('rate'), value_type=float),
            },
        ],
    )
    return LaunchDescription(arguments + [node])
