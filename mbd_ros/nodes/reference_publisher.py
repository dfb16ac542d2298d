"""Reference publisher: a smooth periodic reference trajectory for the HIL demo and tests.

    ros2 run mbd_ros reference_publisher --ros-args -p joints:="[joint_1, joint_2]" \
        -r reference:=/inverse_dynamics/reference

Publishes ``reference`` (trajectory_msgs/JointTrajectory with one point: positions,
velocities, accelerations of `joints`, header stamped with the current time) at ``rate_hz``.
For each joint, with t the time since the node started and w = 2 pi frequency_hz:

    q_ref = center + amplitude (1 - cos(w t)),  qd_ref = amplitude w sin(w t),
    qdd_ref = amplitude w^2 cos(w t)

so the reference starts at rest at `center` and swings between center and center + 2 amplitude.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .messages import float_field
from .qos import PUBLISH_QOS


def _per_joint(name, values, n):
    values = [float(x) for x in (values if isinstance(values, (list, tuple)) else [values])]
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(math.isfinite(x) for x in values):
        raise ValueError(f"{name} must be one finite number or one per joint ({n})")
    return np.array(values)


class ReferencePublisher(Node):

    def __init__(self, node_name="reference_publisher", **kwargs):
        super().__init__(node_name, **kwargs)

        def declare(name, default, description, **extra):
            self.declare_parameter(name, default, ParameterDescriptor(description=description,
                                                                      **extra))
        self.declare_parameter("joints", Parameter.Type.STRING_ARRAY, ParameterDescriptor(
            description="joint names of the reference (required)"))
        declare("center", 0.0, "start and lower end of the swing, per joint or one number",
                dynamic_typing=True)
        declare("amplitude", 0.2, "half the swing, per joint or one number", dynamic_typing=True)
        declare("frequency_hz", 0.5, "swing frequency, per joint or one number",
                dynamic_typing=True)
        declare("rate_hz", 250.0, "publication rate, Hz",
                type=ParameterType.PARAMETER_DOUBLE)
        joints = self.get_parameter_or("joints", Parameter("joints", value=[])).value or []
        if not joints:
            raise ValueError("the joints parameter is required (names of the reference joints)")
        n = len(joints)
        self.center = _per_joint("center", self.get_parameter("center").value, n)
        self.amplitude = _per_joint("amplitude", self.get_parameter("amplitude").value, n)
        self.omega = 2 * math.pi * _per_joint("frequency_hz",
                                              self.get_parameter("frequency_hz").value, n)
        rate = self.get_parameter("rate_hz").value
        if not rate > 0:
            raise ValueError("rate_hz must be positive")
        self.msg = JointTrajectory()
        self.msg.joint_names = list(joints)
        point = JointTrajectoryPoint()
        self.q = float_field(point, "positions", n)
        self.qd = float_field(point, "velocities", n)
        self.qdd = float_field(point, "accelerations", n)
        self.msg.points = [point]
        self.pub = self.create_publisher(JointTrajectory, "reference", PUBLISH_QOS)
        self.t0 = self.get_clock().now().nanoseconds
        self.timer = self.create_timer(1.0 / rate, self._publish)

    def sample(self, t):
        """Fill the point for time t (s)."""
        wt = self.omega * t
        c, s = np.cos(wt), np.sin(wt)
        self.q[:] = self.center + self.amplitude * (1.0 - c)
        self.qd[:] = self.amplitude * self.omega * s
        self.qdd[:] = self.amplitude * self.omega ** 2 * c

    def _publish(self):
        now = self.get_clock().now()
        self.sample((now.nanoseconds - self.t0) * 1e-9)
        self.msg.header.stamp = now.to_msg()
        self.pub.publish(self.msg)


def main(args=None):
    from .base import finish_process   # exit without the interpreter's slow teardown
    finish_process(_main(args))


def _main(args):
    rclpy.init(args=args)
    node = None
    try:
        try:
            node = ReferencePublisher()
        except ValueError as exc:
            print(f"reference_publisher: {exc}", file=sys.stderr)
            return 2
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.5)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
