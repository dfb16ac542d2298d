"""launch_testing test of the launch files' robot arguments: forward_dynamics.launch.py with a
xacro file and xacro_args (simulate mode, no parameter file), inverse_dynamics.launch.py with
`urdf:=gantry.urdf` and no parameter file (gravity mode), and hil_demo.launch.py on the gantry
(its arm7 parameter files are not used for another robot). Every node comes up and publishes
for its robot; every process exits cleanly.

Runs where launch_testing and launch_ros are importable; skipped otherwise (they have no PyPI
wheels). test_nodes_robot_sources.py tests the same behaviours by starting the nodes as these
launch files do.
"""
import sys
import unittest
from pathlib import Path

import pytest

launch_testing = pytest.importorskip(
    'launch_testing', reason='launch_testing is not installed (it has no PyPI wheel; it comes '
    'with a ROS 2 installation); test_nodes_robot_sources.py tests the nodes as processes')
pytest.importorskip('launch_ros', reason='launch_ros is not installed (ROS 2 installation)')

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from launch.actions import GroupAction, IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.actions import PushRosNamespace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_harness import isolate_ros, launch_file, wait_for_messages  # noqa: E402

isolate_ros(salt=89)


def include(name, **arguments):
    """The launch file with its arguments, in a scope of its own (launch configurations of
    plain includes leak into the next include)."""
    return GroupAction([IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file(name)), launch_arguments=arguments.items())])


@pytest.mark.launch_test
def generate_test_description():
    return launch.LaunchDescription([
        include('forward_dynamics.launch.py', urdf='pendulum.urdf.xacro',
                xacro_args='length:=0.7 mass:=2.0', mode='simulate', rate='500.0',
                namespace='xacro'),
        include('inverse_dynamics.launch.py', urdf='gantry.urdf', mode='gravity',
                namespace='gantry'),
        GroupAction([PushRosNamespace('demo'),
                     include('hil_demo.launch.py', urdf='gantry.urdf', rate='500.0')]),
        launch_testing.actions.ReadyToTest()]), {}


class TestRobotSources(unittest.TestCase):

    def test_each_node_runs_its_robot(self):
        from sensor_msgs.msg import JointState
        import mbd_ros
        gantry = mbd_ros.load(str(Path(__file__).resolve().parent.parent / 'urdf' /
                                  'gantry.urdf'))

        def state(node):
            msg = JointState()
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.name = list(gantry.joint_names)
            msg.position = [0.1] * gantry.nv
            return msg
        got = wait_for_messages(
            {'/xacro/joint_states': JointState, '/gantry/inverse_dynamics/efforts': JointState,
             '/demo/joint_states': JointState},
            until=lambda got: all(got.values()), timeout=120.0,
            publish=('/gantry/joint_states', JointState, state))
        self.assertEqual(list(got['/xacro/joint_states'][-1].name), ['joint_1', 'joint_2'])
        self.assertEqual(len(got['/gantry/inverse_dynamics/efforts'][-1].effort), gantry.nv)
        self.assertEqual(list(got['/demo/joint_states'][-1].name), list(gantry.joint_names))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
