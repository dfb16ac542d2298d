"""The hot topics as serialized bytes (CDR): joint_states in, joint_states and accelerations out.

Why: rclpy converts every message between Python objects and C structures. For a 7-joint
JointState or JointTrajectory that conversion, not the middleware, is most of a message's cost
on this path: publishing prebuilt bytes costs ~4 µs against ~10 µs for the message object, and a
bare relay node (JointState in, JointTrajectory out, EventsExecutor on both ends) measured 284-295
µs p50 across processes with serialized messages against 337-353 µs with message objects (AMD
EPYC, load 2.5; bench/HISTORY.md). So the forward dynamics node takes joint_states serialized and
keeps its outputs serialized:

- ``SerializedOut``: a message serialized once at set-up (rclpy.serialization); its float64[]
  fields are writable numpy views into those bytes (found by writing distinct sentinel values
  before serializing), the header stamp is written in place, and ``payload()`` is what
  ``publisher.publish`` sends (rclpy publishes ``bytes`` as a serialized message).
- ``JointStateReader``: reads a serialized JointState. When its ``name`` sequence is byte for
  byte the one of an earlier message (a driver's names never change), it returns the stamp and
  position / velocity / effort (copied into arrays it reuses) without building a message object; anything else
  (new names, other encodings, truncated data) is deserialized by rclpy, so every message is
  read exactly as before and the node's checks (sizes, NaN, unknown joints) apply unchanged.

Layout: CDR version 1, little endian (encapsulation 0x0001), as ROS 2's default middleware
writes it: primitives aligned to their size relative to the byte after the 4-byte
encapsulation header; a string is a uint32 length (with the terminating NUL) and its bytes; a
sequence is a uint32 count and its elements. ``test/test_nodes_cdr.py`` checks the reader and the
outputs against rclpy's own (de)serialization.
"""
from __future__ import annotations

import struct
import sys

import numpy as np
from builtin_interfaces.msg import Time
from numba import njit
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

_CDR_LE = b"\x00\x01"     # encapsulation id of CDR (XCDR1), little endian
_BASE = 4                 # alignment origin: the byte after the encapsulation header
_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_F8 = np.dtype(np.float64)


def _align(offset, size):
    """offset rounded up to a multiple of `size` relative to _BASE."""
    return _BASE + ((offset - _BASE + size - 1) & ~(size - 1))


def _sentinel(k, i):
    """A double that no other field of the message holds (a pattern to search the bytes for)."""
    return -1.2345678901234567e-299 * (1000 * (k + 1) + i + 1)


class SerializedOut:
    """A message kept serialized, with numpy views of its float64[] fields.

    msg: the message, fully built (names, frame ids: everything that does not change per
    message); fields: (container, field name, length) of each float64[] field to expose, in the
    order ``views`` returns them (the container is msg or a sub-message of it). The header stamp
    must be msg.header.stamp. Raises RuntimeError if a field's bytes cannot be located (the
    middleware's encoding is not the CDR assumed here)."""

    def __init__(self, msg, fields):
        for k, (container, field, n) in enumerate(fields):
            setattr(container, field, [_sentinel(k, i) for i in range(n)])
        msg.header.stamp.sec, msg.header.stamp.nanosec = 0x12345678, 0x0ABCDEF1
        data = serialize_message(msg)
        if data[:2] != _CDR_LE:
            raise RuntimeError(f"serialized {type(msg).__name__} is not little-endian CDR")
        self._stamp_offset = self._find(data, _STAMP.pack(0x12345678, 0x0ABCDEF1))
        offsets = [self._find(data, struct.pack("<d", _sentinel(k, 0)))
                   for k in range(len(fields))]
        self._buffer = bytearray(data)
        self.views = []
        for k, ((container, field, n), offset) in enumerate(zip(fields, offsets)):
            view = np.frombuffer(self._buffer, dtype="<f8", count=n, offset=offset)
            expected = [_sentinel(k, i) for i in range(n)]
            if view.tolist() != expected:
                raise RuntimeError(f"{field}: its {n} values are not contiguous in the CDR bytes")
            view[:] = 0.0
            self.views.append(view)
            setattr(container, field, [0.0] * n)    # the object form stays consistent
        msg.header.stamp.sec = msg.header.stamp.nanosec = 0
        self._buffer[self._stamp_offset:self._stamp_offset + 8] = bytes(8)
        # for write(): the bytes as uint8, [stamp offset, each field's offset, its length]
        self._bytes = np.frombuffer(self._buffer, dtype=np.uint8)
        pad = 4 - len(fields)
        self._offsets = np.array([self._stamp_offset] + offsets + [-1] * pad +
                                 [n for _, _, n in fields] + [0] * pad, dtype=np.int64)
        self._one_call = len(fields) in (3, 4) and sys.byteorder == "little"
        if self._one_call:   # compile (or load) _write_fields for aligned vectors, as used
            self.write(0, 0, *[np.zeros(n) for _, _, n in fields])

    def write(self, sec, nanosec, a, b, c, d=None):
        """The stamp (sec, nanosec) and the float64[] fields (a message built with three or
        four `fields`; d None for three) from the numpy vectors a, b, c, d: what set_stamp and
        the views' assignments do, in one numba call for float64 vectors (~5 µs less per
        message in the node). Raises ValueError for a vector of the wrong length (nothing
        written)."""
        if self._one_call and a.dtype is _F8 and b.dtype is _F8 and c.dtype is _F8 and \
                (d is None or d.dtype is _F8):
            code = _write_fields(self._bytes, self._offsets, sec, nanosec, a, b, c,
                                 c if d is None else d)   # (a missing 4th is not written)
            if code:
                raise ValueError(f"field {code - 1}: {len((a, b, c, d)[code - 1])} values for "
                                 f"{self._offsets[4 + code]}")
            return
        vectors = (a, b, c) if d is None else (a, b, c, d)
        for k, (view, x) in enumerate(zip(self.views, vectors)):
            if len(x) != len(view):
                raise ValueError(f"field {k}: {len(x)} values for {len(view)}")
        _STAMP.pack_into(self._buffer, self._stamp_offset, sec, nanosec)
        for view, x in zip(self.views, vectors):
            view[:] = x

    @staticmethod
    def _find(data, pattern):
        at = data.find(pattern)
        if at < 0 or data.find(pattern, at + 1) >= 0:
            raise RuntimeError("a field of the serialized message could not be located")
        return at

    def set_stamp(self, stamp):
        """Write header.stamp (builtin_interfaces/Time) into the bytes."""
        _STAMP.pack_into(self._buffer, self._stamp_offset, stamp.sec, stamp.nanosec)

    def payload(self):
        """The serialized message, as `publisher.publish` takes it (bytes: a copy)."""
        return bytes(self._buffer)


@njit(cache=True)
def _write_fields(data, offsets, sec, nanosec, a, b, c, d):
    """SerializedOut.write: int32 sec and uint32 nanosec (little endian) at offsets[0], the
    doubles of a, b, c, d at offsets[1:5] as they are (a little-endian host; an offset -1: no
    such field), each checked to be offsets[5 + k] doubles' bytes first. Returns 0, or 1 + k
    (nothing written) for a wrong length or item size."""
    for k in range(4):
        x = a if k == 0 else (b if k == 1 else (c if k == 2 else d))
        if offsets[1 + k] >= 0 and x.view(np.uint8).shape[0] != 8 * offsets[5 + k]:
            return 1 + k
    at = offsets[0]
    for i in range(4):
        data[at + i] = (sec >> (8 * i)) & 0xFF
        data[at + 4 + i] = (nanosec >> (8 * i)) & 0xFF
    for k in range(4):
        x = a if k == 0 else (b if k == 1 else (c if k == 2 else d))
        source = x.view(np.uint8)
        at = offsets[1 + k]
        if at < 0:
            continue
        for i in range(source.shape[0]):
            data[at + i] = source[i]
    return 0


@njit(cache=True, inline="always")
def _u32(data, offset):
    return (np.int64(data[offset]) | (np.int64(data[offset + 1]) << 8) |
            (np.int64(data[offset + 2]) << 16) | (np.int64(data[offset + 3]) << 24))


@njit(cache=True)
def read_known_joint_state(data, chunk_ranges, chunk_bytes, names_length, value_bytes, meta):
    """The fast path of JointStateReader in one call: 1 if `data` (bytes, a serialized
    JointState) has the remembered name bytes and position / velocity / effort each empty or of
    n values, else 0 (the caller takes the general path). The values' bytes are copied into
    value_bytes (3, 8 n), the uint8 view of the reader's (3, n) float64 array (a little-endian
    host reads the little-endian doubles as they are); their counts and the stamp go to meta
    [sec, nanosec, n_position, n_velocity, n_effort]. Offsets are CDR-aligned relative to byte
    4, the byte after the encapsulation header."""
    size = len(data)
    if size < 16 or data[0] != 0 or data[1] != 1:
        return 0
    start = 4 + ((12 + _u32(data, 12) + 3) & ~3)   # after the stamp and frame_id
    at = 0
    for c in range(chunk_ranges.shape[0]):
        a = chunk_ranges[c, 0]
        b = chunk_ranges[c, 1]
        if start + b > size:
            return 0
        for i in range(b - a):
            if data[start + a + i] != chunk_bytes[at + i]:
                return 0
        at += b - a
    n = value_bytes.shape[1] // 8
    offset = start + names_length
    for field in range(3):
        offset = 4 + ((offset - 4 + 3) & ~3)
        if offset + 4 > size:
            return 0
        count = _u32(data, offset)
        offset += 4
        if count == 0:
            meta[2 + field] = 0
            continue
        if count != n:          # other lengths: the general path reads (and rejects) them
            return 0
        offset = 4 + ((offset - 4 + 7) & ~7)
        if offset + 8 * count > size:
            return 0
        for i in range(8 * count):
            value_bytes[field, i] = data[offset + i]
        meta[2 + field] = count
        offset += 8 * count
    sec = _u32(data, 4)
    if sec >= 2 ** 31:          # int32 in the bytes
        sec -= 2 ** 32
    meta[0] = sec
    meta[1] = _u32(data, 8)
    return 1


class _Header:
    __slots__ = ("stamp",)


class JointStateView:
    """What the node reads of a JointState: header.stamp (a new builtin_interfaces/Time per
    message, so a node may keep it), name, position, velocity, effort (float64 arrays the
    reader reuses). Valid until the reader's next read."""
    __slots__ = ("header", "name", "position", "velocity", "effort")

    def __init__(self):
        self.header = _Header()


class JointStateReader:
    """Reads serialized sensor_msgs/JointState (see the module docstring). One per
    subscription (it remembers the last names)."""

    def __init__(self):
        self._names_chunks = None   # the name sequence's CDR bytes (count, strings), as chunks
        self._names_length = 0      # ... and its length in bytes, padding included
        self._names = None          # the same names as a list of str
        self._view = JointStateView()
        self._arrays = {}           # (field, length) -> the array its values are copied into
        self.fast_reads = 0         # for tests and benchmarks
        self.full_reads = 0
        self.kernel_reads = 0       # fast reads done by the one-call kernel
        # read_known_joint_state's tables of the remembered names (see _remember_names)
        self._chunk_ranges = self._chunk_bytes = None
        self._values = np.zeros((3, 0))
        self._rows = ()
        self._meta = np.zeros(5, dtype=np.int64)
        # (names, chunk ranges, chunk bytes, names' length in bytes) of the remembered names
        # for the one-call kernel, a new tuple whenever they change; None: none (state_intake)
        self.known_names = None
        self._warm()

    def _warm(self):
        """Compile (or load from numba's cache) the fast-path kernel now, with the argument
        types of every later call, so the first message pays no compilation."""
        read_known_joint_state(serialize_message(JointState()), np.zeros((1, 2), dtype=np.int64),
                                np.frombuffer(b"\0", dtype=np.uint8), 0,
                                np.zeros((3, 1)).view(np.uint8), np.zeros(5, dtype=np.int64))

    def read(self, data):
        """A JointStateView (fast path) or a deserialized JointState of `data` (bytes)."""
        view = self._known(data)
        if view is None:
            view = self._fast(data)
        if view is not None:
            self.fast_reads += 1
            return view
        self.full_reads += 1
        msg = deserialize_message(data, JointState)
        self._remember_names(data, msg)
        return msg

    def _names_start(self, data):
        """Offset of the name sequence (after the stamp and frame_id), or -1 when data is not
        CDR-LE or too short."""
        if len(data) < 16 or data[:2] != _CDR_LE:
            return -1
        length = _U32.unpack_from(data, 12)[0]
        return _align(16 + length, 4)

    def _remember_names(self, data, msg):
        """Cache the name sequence of a message rclpy deserialized, when this reader's own walk
        of its bytes finds the same names (else the fast path stays off): as the byte chunks
        to compare (the alignment padding between strings is not part of the message: its
        bytes are arbitrary) and the sequence's length in bytes."""
        self._names_chunks = self._names = self._chunk_ranges = self.known_names = None
        start = self._names_start(data)
        if start < 0 or start + 4 > len(data):
            return
        count = _U32.unpack_from(data, start)[0]
        offset, names, chunks, chunk_start = start + 4, [], [], start
        for _ in range(count):
            if offset + 4 > len(data):
                return
            length = _U32.unpack_from(data, offset)[0]
            if length == 0 or offset + 4 + length > len(data):
                return
            names.append(bytes(data[offset + 4:offset + 3 + length]).decode("utf-8", "replace"))
            end = offset + 4 + length
            offset = _align(end, 4)
            if offset != end:          # padding follows: close this chunk
                chunks.append((chunk_start - start, end - start,
                               bytes(data[chunk_start:end])))
                chunk_start = offset
        if chunk_start < offset or not chunks:
            chunks.append((chunk_start - start, offset - start, bytes(data[chunk_start:offset])))
        if names != list(msg.name):
            return
        self._names_chunks = tuple(chunks)
        self._names_length = offset - start
        self._names = list(msg.name)
        if sys.byteorder != "little":   # the kernel copies the doubles' bytes as they are
            return
        self._chunk_ranges = np.array([(a, b) for a, b, _ in chunks], dtype=np.int64)
        self._chunk_bytes = np.frombuffer(b"".join(c for _, _, c in chunks), dtype=np.uint8)
        self._values = np.zeros((3, len(names)))
        self._value_bytes = self._values.view(np.uint8)
        self._rows = tuple(self._values)
        self.known_names = (self._names, self._chunk_ranges, self._chunk_bytes,
                            self._names_length)

    def _known(self, data):
        """The fast path in one numba call (read_known_joint_state), or None where it does not
        apply (then _fast or rclpy reads the message)."""
        if self._chunk_ranges is None:
            return None
        if type(data) is not bytes:   # the kernel is compiled for bytes (what rclpy takes)
            data = bytes(data)
        if not read_known_joint_state(data, self._chunk_ranges,
                                       self._chunk_bytes, self._names_length,
                                       self._value_bytes, self._meta):
            return None
        self.kernel_reads += 1
        sec, nanosec, n_position, n_velocity, n_effort = self._meta.tolist()
        rows = self._rows
        view = self._view
        stamp = Time()
        stamp.sec, stamp.nanosec = sec, nanosec
        view.header.stamp = stamp
        view.name = self._names
        view.position = rows[0] if n_position else _EMPTY
        view.velocity = rows[1] if n_velocity else _EMPTY
        view.effort = rows[2] if n_effort else _EMPTY
        return view

    def _doubles(self, data, offset, field):
        """(float64 array, next offset) of the sequence at offset, or (None, -1). The values are
        copied into this reader's array for `field` (0-2) and that length: the bytes' doubles
        are 4 bytes off 8-byte alignment and read-only, which numba's kernels refuse."""
        offset = _align(offset, 4)
        if offset + 4 > len(data):
            return None, -1
        count = _U32.unpack_from(data, offset)[0]
        offset += 4
        if count == 0:
            return _EMPTY, offset
        offset = _align(offset, 8)
        end = offset + 8 * count
        if end > len(data):
            return None, -1
        values = self._arrays.get((field, count))
        if values is None:
            if len(self._arrays) > 64:      # bounded: lengths change only with bad input
                self._arrays.clear()
            values = self._arrays[(field, count)] = np.empty(count)
        values[:] = np.frombuffer(data, dtype="<f8", count=count, offset=offset)
        return values, end

    def _fast(self, data):
        chunks = self._names_chunks
        if chunks is None:
            return None
        start = self._names_start(data)
        if start < 0:
            return None
        for a, b, expected in chunks:
            if data[start + a:start + b] != expected:
                return None
        end = start + self._names_length
        position, offset = self._doubles(data, end, 0)
        if position is None:
            return None
        velocity, offset = self._doubles(data, offset, 1)
        if velocity is None:
            return None
        effort, offset = self._doubles(data, offset, 2)
        if effort is None:
            return None
        view = self._view
        stamp = Time()
        stamp.sec, stamp.nanosec = _STAMP.unpack_from(data, 4)
        view.header.stamp = stamp
        view.name = self._names
        view.position, view.velocity, view.effort = position, velocity, effort
        return view


# an empty field's array: writable (a read-only one would make numba compile separate code for
# JointMap.read_state's kernel in the node's first such message); nothing fits in it anyway
_EMPTY = np.zeros(0)
