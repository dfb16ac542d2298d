"""Task-space control demo: the sample arm7 simulated, its end effector held by the inverse
dynamics node in task_space mode (Cartesian impedance), the loop closed over topics.

    ros2 launch mbd_ros task_space.launch.py                               # the sample arm7
    ros2 launch mbd_ros task_space.launch.py task_link:=tool0
    ros2 topic pub --once /inverse_dynamics/target_pose geometry_msgs/msg/PoseStamped \
        "{header: {frame_id: base_link}, pose: {position: {x: 0.63, y: 0.02, z: 0.28},
          orientation: {x: 0.227, y: 0.957, z: 0.109, w: 0.147}}}"   # ~10 cm from the start
    ros2 topic echo /inverse_dynamics/task_error       # [position error; orientation error]

- forward_dynamics (simulate): the plant; joint_states out, effort commands in
- inverse_dynamics (task_space): joint_states + ~/target_pose (+ ~/target_twist,
  ~/reference: the null-space posture) -> effort commands, remapped onto
  forward_dynamics/effort_commands; ~/task_error
The robot: `robot_description` (XML), else `urdf` (default: the sample arm7; a URDF or .xacro
path + `xacro_args`), else (urdf:=none) the robot_description topic. The parameter files default
to config/arm7_simulate.yaml and config/arm7_task_space.yaml for the sample arm7 and to none
(the nodes' defaults) for any other robot; `task_link` is then required. Until a target arrives
the controller holds the first measured pose. The gains of the sample file assume a loop delay
of about one plant step (docs/nodes.md, "task_space": choosing the gains); on a heavily loaded
machine run the plant slower (rate:=500.0) or lower the angular gains.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import LifecycleNode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import (ends_the_launch, launch_value, params_file_path,  # noqa: E402
                        robot_arguments, robot_from_launch)

SAMPLE = 'arm7.urdf'


def ends_the_demo(what):
    return ends_the_launch(f'task_space: {what} exited')


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
    common = dict(robot, closures_path=arg('closures'))
    plant = LifecycleNode(
        package='mbd_ros', executable='forward_dynamics', name='forward_dynamics',
        namespace=arg('namespace'), output='screen',
        on_exit=ends_the_demo('the plant (forward_dynamics)'),
        parameters=params_file('params_file', 'arm7_simulate.yaml') + [dict(
            common, mode='simulate', rate_hz=float(arg('rate')))])
    overrides = dict(common, mode='task_space')
    if arg('task_link'):
        overrides['task_link'] = arg('task_link')
    controller = LifecycleNode(
        package='mbd_ros', executable='inverse_dynamics', name='inverse_dynamics',
        namespace=arg('namespace'), output='screen',
        on_exit=ends_the_demo('the controller (inverse_dynamics)'),
        parameters=params_file('controller_params_file', 'arm7_task_space.yaml') + [overrides],
        remappings=[('~/effort_commands', 'forward_dynamics/effort_commands')])
    return [plant, controller]


def generate_launch_description():
    return LaunchDescription(robot_arguments(
            urdf_default=SAMPLE,
            urdf_description='URDF or xacro file of the robot (default: the sample arm7; empty: '
                             'wait for the robot_description topic)',
            closures_description='YAML file declaring the loop closures (the task_space mode '
                                 'refuses closed-loop robots)') + [
        DeclareLaunchArgument(
            'task_link', default_value='',
            description='the link whose pose is controlled (empty: the parameter file\'s, '
                        'ee_link for the sample arm7)'),
        DeclareLaunchArgument(
            'params_file', default_value='auto',
            description='parameters of the simulated plant (auto: config/arm7_simulate.yaml '
                        'for the sample arm7, none otherwise)'),
        DeclareLaunchArgument(
            'controller_params_file', default_value='auto',
            description='parameters of the controller (auto: config/arm7_task_space.yaml for '
                        'the sample arm7, none otherwise)'),
        DeclareLaunchArgument(
            'rate', default_value='1000.0', description='plant step rate, Hz'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the nodes and topics'),
        OpaqueFunction(function=_nodes),
    ])
