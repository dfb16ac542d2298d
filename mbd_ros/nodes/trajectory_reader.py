"""trajectory_msgs/JointTrajectory read from its serialized bytes (CDR), with bounded cost.

Why: rclpy turns a received JointTrajectory into Python objects, one JointTrajectoryPoint (five
objects) per point, before a callback can look at it: a 100 000-point message cost ~1.5 s of
the node's only thread, and a few of them a second took a 1 kHz plant down to ~1 Hz. The nodes
take ``~/prescribed_trajectory`` and ``~/reference`` serialized instead and read them here:
the joint names and point counts are checked against their caps first (a message over a cap
costs O(1) and is rejected), then the points' values are copied straight from the bytes into
numpy arrays by one numba call (~10 ns per value), or only the first point (``~/reference``).

Layout (CDR version 1, little endian, as ROS 2's middleware writes it; see nodes/cdr.py):
header (stamp int32 sec, uint32 nanosec; string frame_id), string[] joint_names, then the
points: each four float64[] (positions, velocities, accelerations, effort) and time_from_start
(int32 sec, uint32 nanosec). test/test_nodes_trajectory_reader.py checks it against rclpy's
own deserialization.
"""
from __future__ import annotations

import struct

import numpy as np
from numba import njit

_CDR_LE = b"\x00\x01"
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
FIELDS = ("positions", "velocities", "accelerations", "effort")


class TrajectoryFormatError(ValueError):
    """Bytes that are not a JointTrajectory this reader can read, or over a cap."""


def _align(offset, size):
    return 4 + ((offset - 4 + size - 1) & ~(size - 1))


def _u32(data, offset):
    if offset + 4 > len(data):
        raise TrajectoryFormatError("truncated message")
    return _U32.unpack_from(data, offset)[0]


class TrajectoryHeader:
    """The part of a serialized JointTrajectory before its points."""
    __slots__ = ("stamp_sec", "stamp_nanosec", "joint_names", "n_points", "points_offset")


def read_header(data, max_names, max_points):
    """TrajectoryHeader of `data` (bytes). Raises TrajectoryFormatError for bytes that are not
    CDR-LE or are truncated, more than `max_names` joint names or `max_points` points (checked
    before anything is decoded: the cost of a rejected message does not grow with its size)."""
    if len(data) < 16 or data[:2] != _CDR_LE:
        raise TrajectoryFormatError("not a little-endian CDR message")
    head = TrajectoryHeader()
    head.stamp_sec = _I32.unpack_from(data, 4)[0]
    head.stamp_nanosec = _u32(data, 8)
    offset = _align(16 + _u32(data, 12), 4)          # after frame_id
    count = _u32(data, offset)
    if count > max_names:
        raise TrajectoryFormatError(f"{count} joint names: more than {max_names} (the most a "
                                    "message may carry)")
    offset += 4
    names = []
    for _ in range(count):
        offset = _align(offset, 4)
        length = _u32(data, offset)
        if length == 0 or offset + 4 + length > len(data):
            raise TrajectoryFormatError("truncated joint name")
        names.append(bytes(data[offset + 4:offset + 3 + length]).decode("utf-8", "replace"))
        offset += 4 + length
    offset = _align(offset, 4)
    n_points = _u32(data, offset)
    if n_points > max_points:
        raise TrajectoryFormatError(f"{n_points} points: more than {max_points}; send the "
                                    "trajectory in pieces")
    head.joint_names = names
    head.n_points = n_points
    head.points_offset = offset + 4
    return head


# read_points' result codes (with the point and field in `where`)
OK, TRUNCATED, WRONG_COUNT, NO_POSITIONS = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _load_u32(data, offset):
    return (np.int64(data[offset]) | (np.int64(data[offset + 1]) << 8) |
            (np.int64(data[offset + 2]) << 16) | (np.int64(data[offset + 3]) << 24))


@njit(cache=True)
def _read_points(data, offset, n_points, n, max_fields, values, times, given, where):
    """Walk n_points JointTrajectoryPoints from `offset` of `data` (bytes), each field empty or
    of n values: values[f, i, :] = field f (positions, velocities, accelerations) of point i
    for f < max_fields; times[i] = time_from_start (s); given[f] = 0 when a point has field f
    empty. Returns OK, or a code with where = [point, field] (nothing else is meaningful)."""
    size = len(data)
    for f in range(4):
        given[f] = 1
    for i in range(n_points):
        for f in range(4):
            offset = 4 + ((offset - 4 + 3) & ~3)
            if offset + 4 > size:
                where[0] = i
                where[1] = f
                return TRUNCATED
            count = _load_u32(data, offset)
            offset += 4
            if count == 0:
                given[f] = 0
                if f == 0:
                    where[0] = i
                    where[1] = f
                    return NO_POSITIONS
                continue
            if count != n:
                where[0] = i
                where[1] = f
                where[2] = count
                return WRONG_COUNT
            offset = 4 + ((offset - 4 + 7) & ~7)
            if offset + 8 * count > size:
                where[0] = i
                where[1] = f
                return TRUNCATED
            if f < max_fields:
                row = values[f, i].view(np.uint8)
                for b in range(8 * count):
                    row[b] = data[offset + b]
            offset += 8 * count
        offset = 4 + ((offset - 4 + 3) & ~3)
        if offset + 8 > size:
            where[0] = i
            where[1] = 4
            return TRUNCATED
        sec = _load_u32(data, offset)
        if sec >= 2 ** 31:
            sec -= 2 ** 32
        times[i] = sec + 1e-9 * _load_u32(data, offset + 4)
        offset += 8
    return OK


class TrajectoryPoints:
    """The points of a JointTrajectory as arrays: times (k,), positions, velocities,
    accelerations (k, n) each (velocities / accelerations None when a point has them empty)."""
    __slots__ = ("times", "positions", "velocities", "accelerations")


def read_points(data, head, max_points=None):
    """TrajectoryPoints of the first `max_points` points (default all) of `data` after
    read_header gave `head`. Raises TrajectoryFormatError (a point without positions, a field
    whose length is not the number of joint names, truncated bytes), naming the point."""
    n = len(head.joint_names)
    k = head.n_points if max_points is None else min(head.n_points, max_points)
    values = np.zeros((3, k, n))
    times = np.zeros(k)
    given = np.zeros(4, dtype=np.int64)
    where = np.zeros(3, dtype=np.int64)
    if type(data) is not bytes:   # compiled for bytes (what rclpy gives)
        data = bytes(data)
    code = _read_points(data, head.points_offset, k, n, 3, values, times, given, where)
    if code:
        i, f = int(where[0]), int(where[1])
        field = FIELDS[f] if f < 4 else "time_from_start"
        if code == NO_POSITIONS:
            raise TrajectoryFormatError(f"point {i}: positions has 0 values for {n} joints")
        if code == WRONG_COUNT:
            raise TrajectoryFormatError(f"point {i}: {field} has {int(where[2])} values for "
                                        f"{n} joints")
        raise TrajectoryFormatError(f"point {i}: truncated {field}")
    points = TrajectoryPoints()
    points.times = times
    points.positions = values[0]
    points.velocities = values[1] if given[1] else None
    points.accelerations = values[2] if given[2] and given[1] else None
    return points


def warm_up():
    """Compile (or load from numba's cache) the point reader now, with the argument types of
    every later call, so that a node's first message pays no compilation."""
    _read_points(b"\x00\x01\x00\x00", 4, 0, 0, 3, np.zeros((3, 0, 0)), np.zeros(0),
                 np.zeros(4, dtype=np.int64), np.zeros(3, dtype=np.int64))
