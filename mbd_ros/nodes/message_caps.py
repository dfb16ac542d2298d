"""Caps on the size of incoming messages, checked on their serialized bytes (CDR) before rclpy
builds any Python object from them (no ROS imports).

rclpy turns a received message into Python objects before a callback sees it: one str per name
of a JointState, one object per trajectory point. A message's cost then grows with its size,
and a single large message (30 000 names, 100 000 points) blocked a node for seconds. The nodes
take their command and state topics serialized and check here, in one numba call over the
bytes, that every sequence is within its cap; a message over a cap is rejected (counted) having
cost O(its sequence headers), one within them is read as before.

- ``joint_state_counts``: sensor_msgs/JointState: (names, positions, velocities, efforts).
- ``float64_array``: std_msgs/Float64MultiArray: its data as a float64 array (the layout's
  dimensions are skipped: the nodes use the data in `joints` order).

Layout: CDR version 1, little endian, as ROS 2's middleware writes it (nodes/cdr.py).
test/test_nodes_message_caps.py checks both against rclpy's serialization.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_CDR_LE = b"\x00\x01"


class MessageSizeError(ValueError):
    """A serialized message over a cap, truncated, or not little-endian CDR."""


@njit(cache=True, inline="always")
def _u32(data, offset):
    return (np.int64(data[offset]) | (np.int64(data[offset + 1]) << 8) |
            (np.int64(data[offset + 2]) << 16) | (np.int64(data[offset + 3]) << 24))


@njit(cache=True, inline="always")
def _align4(offset):
    return 4 + ((offset - 4 + 3) & ~3)


@njit(cache=True)
def _skip_strings(data, offset, count):
    """Offset after `count` CDR strings from offset, or -1 if the bytes end first."""
    size = len(data)
    for _ in range(count):
        offset = _align4(offset)
        if offset + 4 > size:
            return -1
        length = _u32(data, offset)
        offset += 4 + length
        if offset > size:
            return -1
    return offset


@njit(cache=True)
def _joint_state_counts(data, max_entries, counts):
    """counts[:] = JointState's (names, positions, velocities, efforts) sequence lengths.
    Returns 0, 1 (truncated), or 2 + k when sequence k exceeds max_entries (counts[k] is set;
    the walk stops there, so a rejected message costs at most max_entries strings)."""
    size = len(data)
    if size < 16:
        return 1
    offset = _align4(16 + _u32(data, 12))           # after the stamp and frame_id
    if offset + 4 > size:
        return 1
    n = _u32(data, offset)
    counts[0] = n
    if n > max_entries:
        return 2
    offset = _skip_strings(data, offset + 4, n)
    if offset < 0:
        return 1
    for k in range(1, 4):
        offset = _align4(offset)
        if offset + 4 > size:
            return 1
        count = _u32(data, offset)
        counts[k] = count
        if count > max_entries:
            return 2 + k
        offset += 4
        if count:
            offset = 4 + ((offset - 4 + 7) & ~7)
            offset += 8 * count
            if offset > size:
                return 1
    return 0


_FIELDS = ("name", "position", "velocity", "effort")


def joint_state_counts(data, max_entries):
    """(names, positions, velocities, efforts) of a serialized sensor_msgs/JointState.
    Raises MessageSizeError when a sequence has more than `max_entries` entries (naming it),
    or the bytes are truncated or not little-endian CDR."""
    if type(data) is not bytes:
        data = bytes(data)
    if data[:2] != _CDR_LE:
        raise MessageSizeError("not a little-endian CDR message")
    counts = np.zeros(4, dtype=np.int64)
    code = _joint_state_counts(data, max_entries, counts)
    if code == 1:
        raise MessageSizeError("truncated JointState")
    if code:
        field = _FIELDS[code - 2]
        raise MessageSizeError(f"{field} has {int(counts[code - 2])} entries: more than "
                               f"{max_entries} (the most a message may carry)")
    return tuple(int(x) for x in counts)


@njit(cache=True)
def _float64_array(data, max_values, max_dims, out):
    """Float64MultiArray: out[0] = data's offset, out[1] = its count. Returns 0, 1 (truncated),
    2 (more than max_dims layout dimensions) or 3 (more than max_values values)."""
    size = len(data)
    offset = 4
    if offset + 4 > size:
        return 1
    dims = _u32(data, offset)
    out[1] = dims
    if dims > max_dims:
        return 2
    offset += 4
    for _ in range(dims):           # MultiArrayDimension: string label, uint32 size, stride
        offset = _skip_strings(data, offset, 1)
        if offset < 0:
            return 1
        offset = _align4(offset) + 8
    offset = _align4(offset) + 4    # data_offset
    offset = _align4(offset)
    if offset + 4 > size:
        return 1
    count = _u32(data, offset)
    out[1] = count
    if count > max_values:
        return 3
    offset += 4
    if count:
        offset = 4 + ((offset - 4 + 7) & ~7)
    if offset + 8 * count > size:
        return 1
    out[0] = offset
    return 0


MAX_DIMENSIONS = 16   # layout dimensions of a Float64MultiArray command (the nodes use 0 or 1)


def float64_array(data, max_values):
    """The data of a serialized std_msgs/Float64MultiArray as a new float64 array. Raises
    MessageSizeError for more than `max_values` values or MAX_DIMENSIONS layout dimensions,
    truncated bytes or not little-endian CDR."""
    if type(data) is not bytes:
        data = bytes(data)
    if data[:2] != _CDR_LE:
        raise MessageSizeError("not a little-endian CDR message")
    out = np.zeros(2, dtype=np.int64)
    code = _float64_array(data, max_values, MAX_DIMENSIONS, out)
    if code == 1:
        raise MessageSizeError("truncated Float64MultiArray")
    if code == 2:
        raise MessageSizeError(f"layout has {int(out[1])} dimensions: more than "
                               f"{MAX_DIMENSIONS}")
    if code == 3:
        raise MessageSizeError(f"data has {int(out[1])} values: more than {max_values} (the "
                               "most a message may carry)")
    return np.frombuffer(data, dtype="<f8", count=int(out[1]), offset=int(out[0])).copy()


def warm_up():
    """Compile (or load from numba's cache) both kernels now, so a node's first message pays
    no compilation."""
    _joint_state_counts(b"\x00\x01\x00\x00", 0, np.zeros(4, dtype=np.int64))
    _float64_array(b"\x00\x01\x00\x00", 0, 0, np.zeros(2, dtype=np.int64))
