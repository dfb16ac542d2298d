"""Flood publisher for the node flood test (run as a child process, not a test):

    python flood_publisher.py SECONDS PLANT_NS CONTROLLER_NS TAU1,...,TAU7

publishes valid effort commands TAU (Float64MultiArray on <plant>/forward_dynamics/effort_commands),
joint commands (JointState on <plant>/joint_commands) and references (JointTrajectory on
<controller>/inverse_dynamics/reference) in turn, as fast as it can, for SECONDS, then prints
how many messages it sent. The plant's command subscriptions are reliable: a reliable writer
whose history is full of samples the loaded plant has not acknowledged yet fails in publish
("cannot publish data", after its blocking time); such refusals are counted, and the flood goes
on (docs/plant.md).
"""
import sys
import time

import rclpy
from rclpy._rclpy_pybind11 import RCLError
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

NAMES = [f"joint_{i}" for i in range(1, 8)]


def main():
    seconds, plant, controller = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    tau = [float(x) for x in sys.argv[4].split(",")]
    rclpy.init()
    node = rclpy.create_node("flood_publisher")
    effort = node.create_publisher(Float64MultiArray, f"{plant}/forward_dynamics/effort_commands",
                                   10)
    joint = node.create_publisher(JointState, f"{plant}/joint_commands", 10)
    reference = node.create_publisher(JointTrajectory, f"{controller}/inverse_dynamics/reference",
                                      10)
    m_effort = Float64MultiArray(data=tau)
    m_joint = JointState(name=NAMES, effort=tau)
    point = JointTrajectoryPoint(positions=[0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2],
                                 velocities=[0.0] * 7, accelerations=[0.0] * 7)
    m_reference = JointTrajectory(joint_names=NAMES, points=[point])
    time.sleep(1.0)   # discovery
    sent = refused = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(100):
            for publisher, message in ((effort, m_effort), (joint, m_joint),
                                       (reference, m_reference)):
                try:
                    publisher.publish(message)
                    sent += 1
                except RCLError:
                    refused += 1
    print(f"sent {sent} messages in {seconds:g} s ({refused} refused by a full reliable history)",
          flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
