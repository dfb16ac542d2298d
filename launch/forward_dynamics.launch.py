"""Forward dynamics node (lifecycle; autostarts by default).

    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=arm7.urdf               # observe mode
    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=gantry.urdf mode:=simulate
    ros2 launch mbd_ros forward_dynamics.launch.py urdf:=/path/robot.urdf.xacro \
        xacro_args:="prefix:=left_ arm:=true" params_file:=/path/params.yaml
    ros2 launch mbd_ros forward_dynamics.launch.py robot_description:="$(cat robot.urdf)"
    ros2 launch mbd_ros forward_dynamics.launch.py          # waits for the robot_description topic

The robot: `robot_description` (URDF XML), else `urdf` (a URDF path, or a .xacro path expanded
with `xacro_args`; a relative name not found is looked up in the package's urdf/ folder), else
none: the node waits for the robot_description topic (as robot_state_publisher publishes it).
`params_file` is optional; the node's defaults work for any robot (every 1-dof joint
commanded, zero initial state). See docs/nodes.md.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import LifecycleNode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_args import launch_value, robot_arguments, robot_from_launch  # noqa: E402  (beside)


def _node(context):

    def arg(name):
        return launch_value(context, name)
    robot, _ = robot_from_launch(context)
    overrides = dict(robot, closures_path=arg('closures'), mode=arg('mode'),
                     rate_hz=float(arg('rate')))
    parameters = ([arg('params_file')] if arg('params_file') else []) + [overrides]
    return [LifecycleNode(
        package='mbd_ros', executable='forward_dynamics', name='forward_dynamics',
        namespace=arg('namespace'), output='screen', parameters=parameters)]


def generate_launch_description():
    return LaunchDescription(robot_arguments() + [
        DeclareLaunchArgument(
            'mode', default_value='observe', choices=['observe', 'simulate'],
            description='observe: outputs for each joint_states message; simulate: '
                        'integrate the motion from effort commands and publish joint_states'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description='node parameters (YAML), optional, e.g. config/arm7_simulate.yaml'),
        DeclareLaunchArgument(
            'rate', default_value='1000.0',
            description='simulate: step rate in Hz; observe: expected input rate'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the node and its topics'),
        OpaqueFunction(function=_node),
    ])
