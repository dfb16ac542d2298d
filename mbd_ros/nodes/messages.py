"""Reusable output messages whose array fields are filled in place from numpy.

rclpy stores float64[] fields as array.array('d'); a numpy view of that buffer lets a cycle copy
its results into a prebuilt message without allocating. A message is serialized synchronously by
publish(), so reusing the same message object for every cycle is safe.
"""
from __future__ import annotations

import array
import time

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .cdr import SerializedOut


def float_field(msg, field, n):
    """Set msg.<field> (float64[]) to n zeros and return a writable numpy view of the array the
    message holds (the setter may copy what it is given, so the view is taken afterwards)."""
    setattr(msg, field, array.array("d", bytes(8 * n)))
    return np.frombuffer(getattr(msg, field), dtype=np.float64)


def stamp_ns(stamp):
    """builtin_interfaces/Time -> int nanoseconds."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def time_msg(sec, nanosec):
    """A new builtin_interfaces/Time (sec, nanosec) (~1-5 µs in a node: build it off the hot
    path)."""
    stamp = Time()
    stamp.sec, stamp.nanosec = sec, nanosec
    return stamp


def set_stamp(header, ns):
    header.stamp.sec, header.stamp.nanosec = divmod(int(ns), 1_000_000_000)


def topic_token(name):
    """A joint or closure name as a valid ROS topic token (letters, digits, underscores; not
    starting with a digit): other characters become '_'."""
    token = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    if not token or token[0].isdigit():
        token = "_" + token
    return token


def unique_topic_tokens(names):
    """topic_token of each name, made unique in order: a name whose token an earlier name already
    took (e.g. 'arm-1' and 'arm_1', or 'é' and '_') gets '_2', '_3', ... appended, so that two
    joints never share a topic. Returns the list of tokens (same order as names)."""
    tokens, taken = [], set()
    for name in names:
        base = token = topic_token(name)
        k = 2
        while token in taken:
            token = f"{base}_{k}"
            k += 1
        taken.add(token)
        tokens.append(token)
    return tokens


def output_fields(msg, fields):
    """(views, set_stamp, payload, write) of an output message: cdr.SerializedOut's (publish
    the bytes), or, where the middleware's encoding is not the CDR it knows (RuntimeError), the
    message object's own arrays (float_field views) with payload() returning the message.
    write(sec, nanosec, *vectors): the stamp and every field at once (SerializedOut.write)."""
    try:
        serialized = SerializedOut(msg, fields)
        return serialized.views, serialized.set_stamp, serialized.payload, serialized.write
    except RuntimeError:
        views = [float_field(container, field, n) for container, field, n in fields]

        def set_stamp(stamp):
            msg.header.stamp = stamp

        def write(sec, nanosec, *vectors):
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
            for view, x in zip(views, vectors):
                view[:] = x
        return views, set_stamp, lambda: msg, write


class JointStateOut:
    """sensor_msgs/JointState with fixed names, kept serialized (cdr.SerializedOut: publish
    ``payload()``); position / velocity / effort are numpy views of its bytes (None when
    left out: empty in the message)."""

    def __init__(self, names, position=True, velocity=True, effort=True):
        n = len(names)
        self.msg = JointState()
        self.msg.name = list(names)
        wanted = [f for f, on in (("position", position), ("velocity", velocity),
                                  ("effort", effort)) if on]
        views, self.set_stamp, self.payload, _ = output_fields(
            self.msg, [(self.msg, f, n) for f in wanted])
        views = dict(zip(wanted, views))
        self.position = views.get("position")
        self.velocity = views.get("velocity")
        self.effort = views.get("effort")


class AccelerationsOut:
    """trajectory_msgs/JointTrajectory with one point: positions (when nq == nv), velocities,
    accelerations and effort, one entry per degree of freedom; kept serialized like
    JointStateOut."""

    def __init__(self, dof_names, with_positions):
        n = len(dof_names)
        self.msg = JointTrajectory()
        self.msg.joint_names = list(dof_names)
        point = JointTrajectoryPoint()
        self.msg.points = [point]
        point = self.msg.points[0]
        wanted = (["positions"] if with_positions else []) + ["velocities", "accelerations",
                                                             "effort"]
        views, self.set_stamp, self.payload, self._write = output_fields(
            self.msg, [(point, f, n) for f in wanted])
        views = dict(zip(wanted, views))
        self.positions = views.get("positions")
        self.velocities = views["velocities"]
        self.accelerations = views["accelerations"]
        self.effort = views["effort"]

    def fill(self, sec, nanosec, q, v, qdd, tau):
        """The stamp and the point from float64 vectors (q only when positions are published)
        in one call."""
        if self.positions is None:
            self._write(sec, nanosec, v, qdd, tau)
        else:
            self._write(sec, nanosec, q, v, qdd, tau)


class EffortCommandOut:
    """std_msgs/Float64MultiArray in the order of `joints` (ros2_control forward command format:
    one dimension labelled 'joints')."""

    def __init__(self, joints):
        n = len(joints)
        self.msg = Float64MultiArray()
        self.msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.data = float_field(self.msg, "data", n)


class WrenchOut:
    """geometry_msgs/WrenchStamped in a given frame, filled from a [fx fy fz tx ty tz] row."""

    __slots__ = ("msg", "force", "torque")

    def __init__(self, frame_id):
        self.msg = WrenchStamped()
        self.msg.header.frame_id = frame_id
        self.force = self.msg.wrench.force
        self.torque = self.msg.wrench.torque

    def fill(self, stamp, row):
        """stamp: builtin_interfaces/Time; row: 6 Python floats."""
        self.msg.header.stamp = stamp
        f, t = self.force, self.torque
        f.x, f.y, f.z, t.x, t.y, t.z = row


class Listeners:
    """Which output publishers have subscribers, each rechecked every `period` s.

    A publish costs ~10-15 µs of rclpy conversion and middleware work even when nobody listens
    (the node's nine ~/wrenches topics were most of a 1 kHz cycle), while
    get_subscription_count() costs ~1-2 µs: outputs nobody subscribes to (a recorder such as
    rosbag counts) are neither computed nor published. A new subscriber is served within
    `period` (at low message rates: from the next message), as if it had subscribed that much
    later. The checks are spread over the cycles (each publisher is due at its own time), so
    no cycle pays for all of them."""

    def __init__(self, period=0.02):
        self.period_ns = int(period * 1e9)
        self._next_ns = 0      # earliest due time of any publisher
        self._publishers = []
        self._due = []         # monotonic ns at which each publisher is checked again
        self.heard = {}        # publisher -> True while it has a subscriber

    def track(self, publisher):
        """Add a publisher (heard until its first check); returns it."""
        self._publishers.append(publisher)
        self._due.append(0)
        self.heard[publisher] = True
        self._next_ns = 0
        return publisher

    def refresh(self):
        """Check the subscriber counts of the publishers that are due; returns `heard`."""
        now = time.monotonic_ns()
        if now < self._next_ns:
            return self.heard
        due, period = self._due, self.period_ns
        stagger = period // max(len(due), 1)
        for i, pub in enumerate(self._publishers):
            if now >= due[i]:
                self.heard[pub] = pub.get_subscription_count() > 0
                # first check: spread the next ones over the period
                due[i] = now + period + (i * stagger if due[i] == 0 else 0)
        self._next_ns = min(due) if due else now + period
        return self.heard

    def any(self, publishers):
        """True if one of `publishers` has a subscriber (at their last check)."""
        heard = self.heard
        for pub in publishers:
            if heard.get(pub, True):
                return True
        return False
