"""Hardware-in-the-loop demo: a simulated robot controlled by computed torque over topics.

    ros2 launch mbd_ros hil_demo.launch.py [rate:=1000.0]                 # the sample arm7
    ros2 launch mbd_ros hil_demo.launch.py urdf:=gantry.urdf
    ros2 launch mbd_ros hil_demo.launch.py urdf:=robot.urdf.xacro xacro_args:="a:=1"
    ros2 launch mbd_ros hil_demo.launch.py robot_description:="$(cat robot.urdf)"

- forward_dynamics (simulate): the plant; joint_states out, effort commands in
- inverse_dynamics (computed_torque): joint_states + reference -> effort commands, remapped
  onto forward_dynamics/effort_commands
- reference_publisher: a smooth swing of every commanded joint, remapped onto
  inverse_dynamics/reference
The robot: `robot_description` (XML), else `urdf` (default: the sample arm7; a URDF or .xacro
path + `xacro_args`), else (urdf:=none) the robot_description topic, and then no reference
publisher (its joints are unknown until the robot arrives). The parameter files default to
config/arm7_*.yaml for the sample arm7 and to none (the nodes' defaults) for any other robot.
Watch it with `ros2 topic echo /diagnostics` or `ros2 topic hz /joint_states`.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch_ros.actions import LifecycleNode, Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import (commanded_joints, ends_the_launch, launch_value,  # noqa: E402
                        params_file_path, robot_arguments, robot_from_launch)

SAMPLE = 'arm7.urdf'


def ends_the_demo(what):
    return ends_the_launch(f'hil_demo: {what} exited')


def _nodes(context):

    def arg(name):
        return launch_value(context, name)
    robot, share = robot_from_launch(context)
    config = os.path.join(share, 'config')
    sample = robot.get('urdf_path', '').endswith(os.sep + SAMPLE) or \
        robot.get('urdf_path') == SAMPLE

    def params_file(name, sample_file):
        # a relative path is resolved in the share directory, a missing file is an error
        # naming the argument (launch_ros only warned and started the nodes without it)
        value = arg(name)
        if value == 'auto':
            return [os.path.join(config, sample_file)] if sample else []
        path = params_file_path(value, share)
        return [path] if path else []
    executor = arg('executor')
    common = dict(robot, closures_path=arg('closures'), executor=executor)
    # realistic drives of the sample arm (docs/plant.md "Drive models"); drives:=ideal: none
    drives_file = [os.path.join(config, 'arm7_drives.yaml')] \
        if sample and arg('drives') == 'realistic' else []
    plant = LifecycleNode(
        package='mbd_ros', executable='forward_dynamics', name='forward_dynamics',
        namespace=arg('namespace'), on_exit=ends_the_demo('the plant (forward_dynamics)'),
        output='screen',
        parameters=params_file('params_file', 'arm7_simulate.yaml') + drives_file + [dict(
            common, mode='simulate', rate_hz=float(arg('rate')))])
    controller = LifecycleNode(
        package='mbd_ros', executable='inverse_dynamics', name='inverse_dynamics',
        namespace=arg('namespace'), on_exit=ends_the_demo('the controller (inverse_dynamics)'),
        output='screen',
        parameters=params_file('controller_params_file', 'arm7_computed_torque.yaml') + [dict(
            common, mode=arg('mode'))],
        remappings=[('~/effort_commands', 'forward_dynamics/effort_commands')])
    reference_params = params_file('reference_params_file', 'arm7_reference.yaml')
    if not reference_params:
        if not robot:
            return [plant, controller, LogInfo(msg='hil_demo: no robot given, the nodes wait '
                                                   'for the robot_description topic; no '
                                                   'reference publisher')]
        reference_params = [{'joints': commanded_joints(robot, arg('closures'))}]
    reference = Node(
        package='mbd_ros', executable='reference_publisher', name='reference_publisher',
        namespace=arg('namespace'), on_exit=ends_the_demo('the reference publisher'),
        output='screen', parameters=reference_params,
        remappings=[('reference', 'inverse_dynamics/reference')])
    return [plant, controller, reference]


def generate_launch_description():
    return LaunchDescription(robot_arguments(
            urdf_default=SAMPLE,
            urdf_description='URDF or xacro file of the robot (default: the sample arm7; empty: '
                             'wait for the robot_description topic)',
            closures_description='YAML file declaring the loop closures (empty: a tree)') + [
        DeclareLaunchArgument(
            'params_file', default_value='auto',
            description='parameters of the simulated plant (auto: config/arm7_simulate.yaml '
                        'for the sample arm7, none otherwise)'),
        DeclareLaunchArgument(
            'controller_params_file', default_value='auto',
            description='parameters of the controller (auto: config/arm7_computed_torque.yaml '
                        'for the sample arm7, none otherwise)'),
        DeclareLaunchArgument(
            'reference_params_file', default_value='auto',
            description='parameters of the reference (auto: config/arm7_reference.yaml for '
                        'the sample arm7, else every commanded joint swings around 0)'),
        DeclareLaunchArgument(
            'mode', default_value='computed_torque',
            choices=['gravity', 'feedforward', 'computed_torque'],
            description='control mode of the inverse dynamics node'),
        DeclareLaunchArgument(
            'rate', default_value='1000.0', description='plant step rate, Hz'),
        DeclareLaunchArgument(
            'drives', default_value='realistic', choices=['realistic', 'ideal'],
            description='realistic: config/arm7_drives.yaml on top of the plant parameters '
                        'for the sample arm7 (pd servos, torque-loop lag, encoder, noise, '
                        'one cycle of delay, 5 % heavier than its URDF); ideal: the exact '
                        'plant'),
        DeclareLaunchArgument(
            'executor', default_value='single_threaded',
            choices=['single_threaded', 'events', 'rclpy_single_threaded'],
            description='rclpy executor of the two dynamics nodes (events: less CPU, but a '
                        'topic flood freezes it)'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='namespace of the three nodes and their topics (the remappings between '
                        'them are relative: they stay inside it)'),
        OpaqueFunction(function=_nodes),
    ])
