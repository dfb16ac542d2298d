"""/clock messages a node accepts (use_sim_time): never negative, never backwards.

rclpy's TimeSource turns every /clock message into an rclpy Time, which raises ValueError for
a negative time; raised in a subscription callback, that ended the executor and the node (one
message with sec = -1 killed it). `ClockGuard` sits in front of it (base.DynamicsNode wraps the
TimeSource's callback) and in front of the simulate plant's lockstep: a message with a negative
time or nanoseconds out of range, or earlier than the latest accepted one, is ignored and counted
("rejected /clock" in /diagnostics). No ROS imports.
"""
from __future__ import annotations

NS = 1_000_000_000


def clock_ns(clock):
    """builtin_interfaces/Time of a /clock message -> int ns. Raises ValueError when it is
    negative or its nanosec is not below 1e9."""
    sec, nanosec = int(clock.sec), int(clock.nanosec)
    if sec < 0:
        raise ValueError(f"negative time (sec {sec})")
    if not 0 <= nanosec < NS:
        raise ValueError(f"nanosec {nanosec} out of [0, 1e9)")
    return sec * NS + nanosec


class ClockGuard:
    """Accepts /clock times that are valid and not earlier than the latest accepted one."""

    def __init__(self):
        self.last_ns = None

    def reset(self):
        """Forget the latest time (use_sim_time switched, node reactivated): the next valid
        /clock is accepted whatever it says."""
        self.last_ns = None

    def check(self, msg):
        """(ns, None) for an accepted rosgraph_msgs/Clock message, else (None, reason)."""
        try:
            ns = clock_ns(msg.clock)
        except ValueError as exc:
            return None, str(exc)
        if self.last_ns is not None and ns < self.last_ns:
            return None, (f"time went back {(self.last_ns - ns) * 1e-9:.6f} s (from "
                          f"{self.last_ns * 1e-9:.6f} to {ns * 1e-9:.6f} s)")
        self.last_ns = ns
        return ns, None
