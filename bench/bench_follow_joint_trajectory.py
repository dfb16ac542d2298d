"""Cost of the plant's ~/follow_joint_trajectory sampling per cycle (mbd_ros/nodes/
follow_joint_trajectory.py, TrajectoryFollower.cycle: sample the spline, command the drives,
check the path tolerances, feedback at action_monitor_rate) against the plant step it precedes,
interleaved in one process, as µs per cycle and the ratio.

    PYTHONPATH=. python bench/bench_follow_joint_trajectory.py [--rounds N]

Case: the UR5 of example-robot-data, 1 ms RK4 steps (the node's defaults), position drives on
all 6 joints; a 3-point cubic trajectory (positions + velocities) long enough not to end during
the measurement, path tolerances on every joint, feedback at 20 Hz of simulated time. The
action server's handle is a stand-in (its publish_feedback does nothing): rclpy's publish of
the feedback message, at 20 Hz, is not counted. Needs control_msgs (mbd-ros build-interfaces).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import common  # noqa: E402
import mbd_ros  # noqa: E402
from mbd_ros.nodes.follow_joint_trajectory import (ParsedGoal, TrajectoryFollower,  # noqa: E402
                                                   _Run)
from mbd_ros.nodes.messages import time_msg  # noqa: E402
from mbd_ros.nodes.trajectory_spline import TrajectorySpline  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402

NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
         "wrist_2_joint", "wrist_3_joint"]


class Handle:
    """Stands for rclpy's ServerGoalHandle of an executing goal."""
    is_active = True
    is_cancel_requested = False

    def publish_feedback(self, feedback):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance
    from trajectory_msgs.msg import JointTrajectoryPoint

    path = common.example_robot_data_dir() / "ur_description/urdf/ur5_robot.urdf"
    robot = mbd_ros.load(str(path))
    q0 = np.array([0.0, -1.0, 1.0, 0.0, 0.5, 0.0])
    plant = Plant(robot, 1e-3, "rk4", q0, np.zeros(6), joints=NAMES, kp=400.0, kd=40.0)
    plant.drives.command_position(q0)
    params = {"constraints.trajectory": 0.0, "constraints.goal": 0.0,
              "constraints.stopped_velocity_tolerance": 0.01, "constraints.goal_time": 0.0,
              "action_monitor_rate": 20.0, "trajectory_max_points": 10000}
    node = SimpleNamespace(plant=plant, sim=plant.sim, param=params.__getitem__,
                           publish_clock=True, _base_stamp_ns=0, cycles=0, period_ns=1_000_000,
                           _stamp=lambda ns: time_msg(*divmod(ns, 1_000_000_000)))
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = NAMES
    for k, t in enumerate((1000.0, 2000.0, 3000.0)):
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=(q0 + 0.1 * (k + 1)).tolist(),
            velocities=[1e-4 if k < 2 else 0.0] * 6, time_from_start=Duration(sec=int(t))))
    goal.path_tolerance = [JointTolerance(name=n, position=10.0) for n in NAMES]
    parsed = ParsedGoal(goal, {n: k for k, n in enumerate(NAMES)}, 64, 10000,
                        {"trajectory": 0.0, "goal": 0.0, "stopped_velocity_tolerance": 0.01,
                         "goal_time": 0.0})
    spline = TrajectorySpline(parsed.times, parsed.positions, parsed.velocities, None,
                              q0, np.zeros(6))
    follower = object.__new__(TrajectoryFollower)   # no action server: the per-cycle part only
    follower.node, follower.action_type = node, FollowJointTrajectory
    follower.run = _Run(Handle(), parsed, spline, 0.0, plant.drives, 1.0 / 20.0)
    plant.step()
    result = common.time_interleaved(
        {"plant step": "plant.step()",
         "trajectory cycle + plant step": "follower.cycle(); plant.step()"},
        {"plant": plant, "follower": follower}, rounds=args.rounds)
    step = result["plant step"]["median"]
    both = result["trajectory cycle + plant step"]["median"]
    assert follower.run is not None, "the goal ended during the measurement"
    print(f"CPU: {common.lscpu_model_name()} ({common.cpu_model()})")
    print(f"UR5, 1 ms RK4, position drives; {args.rounds} interleaved rounds, medians:")
    print(f"  plant step                      {step:8.1f} µs")
    print(f"  trajectory cycle + plant step   {both:8.1f} µs")
    print(f"  trajectory cycle alone          {both - step:8.1f} µs "
          f"(ratio with / without: {both / step:.2f})")


if __name__ == "__main__":
    main()
