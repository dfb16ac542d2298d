"""launch_testing test of launch/hil_demo.launch.py: the simulated arm, the computed-torque
controller and the reference publisher come up from the launch file and close the loop over
topics (joint_states and effort commands flow, the controller receives the reference), and
every process exits cleanly when the launch shuts down.

Runs where launch_testing and launch_ros are importable (a ROS 2 workspace: `colcon test`, or
`launch_test test/test_launch_hil_demo.py`) with mbd_ros installed (FindPackageShare and the
executables under lib/mbd_ros); skipped otherwise. The process-level tests
(test_nodes_*.py) cover the same nodes without the launch system.
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

isolate_ros(salt=71)


@pytest.mark.launch_test
def generate_test_description():
    demo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file('hil_demo.launch.py')),
        launch_arguments={'rate': '500.0'}.items())
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()]), {}


class TestLoopCloses(unittest.TestCase):

    def test_states_commands_and_diagnostics_flow(self, proc_output):
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        got = wait_for_messages({
            '/joint_states': JointState,
            '/forward_dynamics/effort_commands': Float64MultiArray,
            '/diagnostics': DiagnosticArray,
        }, until=lambda got: got['/joint_states'] and got['/forward_dynamics/effort_commands']
            and any(kv.key == 'reference' and kv.value == 'received'
                    for m in got['/diagnostics'] for s in m.status for kv in s.values),
            timeout=120.0)   # wait for every output asserted below (no race)
        self.assertTrue(got['/joint_states'], 'no joint_states from the simulated arm')
        self.assertTrue(got['/forward_dynamics/effort_commands'],
                        'no effort commands from the controller')
        state = got['/joint_states'][-1]
        self.assertEqual(len(state.name), 7)
        proc_output.assertWaitFor('configured: robot', timeout=10)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes(self, proc_info):
        # SIGINT from the launch system: the nodes shut down cleanly with 0
        launch_testing.asserts.assertExitCodes(proc_info)
