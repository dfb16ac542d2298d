"""launch_testing test of launch/forward_dynamics.launch.py (observe mode) and
launch/inverse_dynamics.launch.py (gravity mode) with their declared arguments: both nodes come
up from the launch files with the package's sample robot and answer a joint_states message.

Runs where launch_testing and launch_ros are importable (see test_launch_hil_demo.py);
skipped otherwise.
"""
import sys
import unittest
from pathlib import Path

import pytest

launch_testing = pytest.importorskip(
    'launch_testing', reason='launch_testing is not installed (it has no PyPI wheel; it comes '
    'with a ROS 2 installation); test_nodes_*.py test the nodes as processes instead')
pytest.importorskip('launch_ros', reason='launch_ros is not installed (ROS 2 installation)')

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_harness import isolate_ros, launch_file, wait_for_messages  # noqa: E402

isolate_ros(salt=83)
NAMES = [f'joint_{i}' for i in range(1, 8)]


@pytest.mark.launch_test
def generate_test_description():
    forward = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file('forward_dynamics.launch.py')),
        launch_arguments={'urdf': 'arm7.urdf', 'mode': 'observe', 'rate': '500.0'}.items())
    inverse = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file('inverse_dynamics.launch.py')),
        launch_arguments={'urdf': 'arm7.urdf', 'mode': 'gravity'}.items())
    return launch.LaunchDescription([forward, inverse, launch_testing.actions.ReadyToTest()]), {}


class TestNodesAnswer(unittest.TestCase):

    def test_accelerations_and_efforts(self):
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        def state(node):
            msg = JointState()
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.name = NAMES
            msg.position = [0.1] * 7
            msg.velocity = [0.0] * 7
            return msg
        got = wait_for_messages(
            {'/forward_dynamics/accelerations': JointTrajectory,
             '/inverse_dynamics/efforts': JointState},
            until=lambda got: all(got.values()), timeout=120.0,
            publish=('joint_states', JointState, state))
        self.assertEqual(list(got['/forward_dynamics/accelerations'][-1].joint_names), NAMES)
        self.assertEqual(len(got['/inverse_dynamics/efforts'][-1].effort), 7)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
