"""Helpers of the launch_testing tests (a helper module, not a test)."""
import os
import time
from pathlib import Path

LAUNCH_DIR = Path(__file__).resolve().parent.parent / 'launch'


def isolate_ros(salt):
    """A private ROS_DOMAIN_ID and localhost-only discovery for this test and the processes
    its launch description starts (they inherit the environment)."""
    os.environ.setdefault('ROS_DOMAIN_ID', str(1 + (os.getpid() + salt) % 100))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'


def launch_file(name):
    """The launch file of this source tree (its defaults find the installed package's share)."""
    return str(LAUNCH_DIR / name)


def wait_for_messages(topics, until, timeout, publish=None):
    """Subscribe to {topic: type}, spin (with timeouts) until until(received) is true, and
    return {topic: [messages]}. publish: (topic, type, make(node)) sent every 0.2 s meanwhile."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('mbd_ros_launch_test', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    got = {topic: [] for topic in topics}
    for topic, msg_type in topics.items():
        node.create_subscription(msg_type, topic, lambda m, t=topic: got[t].append(m), 100)
    pub = node.create_publisher(publish[1], publish[0], 10) if publish else None
    try:
        end = time.monotonic() + timeout
        next_pub = 0.0
        while time.monotonic() < end and not until(got):
            if pub is not None and time.monotonic() >= next_pub:
                pub.publish(publish[2](node))
                next_pub = time.monotonic() + 0.2
            executor.spin_once(timeout_sec=0.05)
        assert until(got), f'timed out after {timeout} s; received: ' + ', '.join(
            f'{t}: {len(m)}' for t, m in got.items())
        return got
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=context)
