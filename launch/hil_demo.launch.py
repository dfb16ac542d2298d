"""Hardware-in-the-loop demo: the simulated arm controlled by computed torque over topics.

    ros2 launch mbd_ros hil_demo.launch.py [rate:=1000.0] [urdf:=...] [params_file:=...]

- forward_dynamics (simulate): the plant; joint_states out, effort commands in
- inverse_dynamics (computed_torque): joint_states + reference -> effort commands, remapped
  onto forward_dynamics/effort_commands
- reference_publisher: a smooth swing of every joint, remapped onto inverse_dynamics/reference
Watch it with `ros2 topic echo /diagnostics` or `ros2 topic hz /joint_states`.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('mbd_ros')
    config = PathJoinSubstitution([share, 'config'])
    urdf = ParameterValue(LaunchConfiguration('urdf'), value_type=str)
    closures = ParameterValue(LaunchConfiguration('closures'), value_type=str)
    executor = ParameterValue(LaunchConfiguration('executor'), value_type=str)
    arguments = [
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'urdf', 'arm7.urdf']),
            description='URDF file of the robot (the default parameter files are for arm7)'),
        DeclareLaunchArgument(
            'closures', default_value='',
            description='YAML file declaring the loop closures (empty: a tree)'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'arm7_simulate.yaml']),
            description='parameters of the simulated plant (forward_dynamics, simulate mode)'),
        DeclareLaunchArgument(
            'controller_params_file',
            default_value=PathJoinSubstitution([config, 'arm7_computed_torque.yaml']),
            description='parameters of the controller (inverse_dynamics)'),
        DeclareLaunchArgument(
            'reference_params_file',
            default_value=PathJoinSubstitution([config, 'arm7_reference.yaml']),
            description='parameters of the reference trajectory (reference_publisher)'),
        DeclareLaunchArgument(
            'mode', default_value='computed_torque',
            choices=['gravity', 'feedforward', 'computed_torque'],
            description='control mode of the inverse dynamics node'),
        DeclareLaunchArgument(
            'rate', default_value='1000.0', description='plant step rate, Hz'),
        DeclareLaunchArgument(
            'executor', default_value='events', choices=['single_threaded', 'events'],
            description='rclpy executor of the two dynamics nodes'),
    ]
    plant = LifecycleNode(
        package='mbd_ros', executable='forward_dynamics', name='forward_dynamics', namespace='',
        output='screen',
        parameters=[LaunchConfiguration('params_file'), {
            'urdf_path': urdf, 'closures_path': closures, 'mode': 'simulate',
            'rate_hz': ParameterValue(LaunchConfiguration('rate'), value_type=float),
            'executor': executor}],
    )
    controller = LifecycleNode(
        package='mbd_ros', executable='inverse_dynamics', name='inverse_dynamics', namespace='',
        output='screen',
        parameters=[LaunchConfiguration('controller_params_file'), {
            'urdf_path': urdf, 'closures_path': closures,
            'mode': ParameterValue(LaunchConfiguration('mode'), value_type=str),
            'executor': executor}],
        remappings=[('~/effort_commands', 'forward_dynamics/effort_commands')],
    )
    reference = Node(
        package='mbd_ros', executable='reference_publisher', name='reference_publisher',
        output='screen',
        parameters=[LaunchConfiguration('reference_params_file')],
        remappings=[('reference', 'inverse_dynamics/reference')],
    )
    return LaunchDescription(arguments + [plant, controller, reference])
