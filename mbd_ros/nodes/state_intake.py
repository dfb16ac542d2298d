"""StateIntake: a serialized joint_states message straight into q, v, tau in one numba call.

Why: on the observe path (joint_states -> ~/accelerations) the node read the message
(JointStateReader), checked its stamp, scattered it into q, v, tau (JointMap.read_state) and
noted each joint's arrival: ~15 Python-level operations and two numba calls that cost ~30 µs
per message inside the node (the interpreter's and the caches' state is cold after 1 ms of
waiting) against ~6 µs in a tight loop. Here they are one call (~8 µs in the node, 1.65 µs in
a tight loop; AMD EPYC, bench/HISTORY.md) that does the same checks in the same order.

It applies to the usual message only: the names JointStateReader remembered (a driver's names
never change), each field empty or one value per name, a stamp no older than max_message_age,
finite values. For any other message ``read`` returns False having written nothing, and the
caller takes the general path (JointStateReader.read + JointMap.read_state), which reads, checks
and rejects it exactly as before: the error texts and counters live there only.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..robot.joint_map import JointMapError, scatter_state
from .cdr import read_known_joint_state
from .messages import time_msg

# StateIntake._plan: a header, then the tables (the names' chunk ranges and bytes, src, iq, iv);
# _REQUIRED holds 3 entries [1 (position), need velocity, need effort], as scatter_state wants
_N_CHUNKS, _NAME_BYTES, _NAMES_LENGTH, _N_NAMES, _N_SRC, _N_KEPT, _HAS_TAU, _REQUIRED = range(8)
_HEADER = _REQUIRED + 3
# clock: [oldest stamp accepted (ns), arrival time to note (ns), then read_known_joint_state's
# meta: stamp sec, nanosec, the three fields' counts]
_OLDEST, _NOW, _SEC, _NANOSEC = range(4)


@njit(cache=True)
def _read_state(data, plan, values, q, v, tau, arrival_ns, clock):
    """1 if `data` (bytes, a serialized JointState) is the usual message of `plan` (StateIntake:
    the remembered names' chunks, field counts, fresh stamp, finite values); its values are
    then in q[iq], v[iv] and, with _HAS_TAU, tau[iv] (zeros for empty optional fields),
    arrival_ns[iv] = clock[_NOW] and clock[_SEC], clock[_NANOSEC] = its stamp. Else 0 and
    nothing but the scratch `values` (3, n) and clock's stamp is written."""
    chunks = plan[_N_CHUNKS]
    head = _HEADER
    chunk_ranges = plan[head:head + 2 * chunks].reshape((chunks, 2))
    head += 2 * chunks
    chunk_bytes = plan[head:head + plan[_NAME_BYTES]]
    head += plan[_NAME_BYTES]
    meta = clock[_SEC:]
    if not read_known_joint_state(data, chunk_ranges, chunk_bytes, plan[_NAMES_LENGTH],
                                   values.view(np.uint8), meta):
        return 0
    stamp = clock[_SEC] * 1_000_000_000 + clock[_NANOSEC]
    if stamp < clock[_OLDEST] and (clock[_SEC] != 0 or clock[_NANOSEC] != 0):
        return 0   # stale (zero stamps never are, as BaseNode.stale)
    n_src = plan[_N_SRC]
    n_kept = plan[_N_KEPT]
    src = plan[head:head + n_src]
    head += n_src
    iq = plan[head:head + n_kept]
    iv = plan[head + n_kept:head + 2 * n_kept]
    if scatter_state(values[0, :meta[2]], values[1, :meta[3]], values[2, :meta[4]],
                      plan[_N_NAMES], src, iq, iv, plan[_REQUIRED:_REQUIRED + 3], q, v, tau,
                      plan[_HAS_TAU] != 0):
        return 0
    for k in range(n_kept):
        arrival_ns[iv[k]] = clock[_NOW]
    return 1


class StateIntake:
    """Reads the usual serialized joint_states message into q (nq,), v (nv,) and tau (nv,) in
    one call (see the module docstring).

    reader: the subscription's JointStateReader (its remembered names; the general path keeps
    them current); jmap: the node's JointMap; need_velocity, need_effort, required: as
    JointMap.read_state (tau None: effort not read); arrival_ns (nv,) int64 or None: each
    dof's arrival time is written there. After a True ``read``: ``lookup`` (the message names'
    JointMap lookup) and ``stamp_sec``, ``stamp_nanosec``."""

    def __init__(self, reader, jmap, q, v, tau, arrival_ns=None, need_velocity=True,
                 need_effort=False, required=None):
        self.reader, self.jmap = reader, jmap
        self.q, self.v = q, v
        self.arrival_ns = np.zeros(len(v), dtype=np.int64) if arrival_ns is None else arrival_ns
        self.required = None if required is None else tuple(required)
        self.tau = np.zeros(0) if tau is None else tau
        self._has_tau = int(tau is not None)
        self._field_flags = [1, int(bool(need_velocity)), int(bool(need_effort))]
        self._built_for = (None, None)   # (reader.known_names, jmap.version) of the plan
        self._plan = None
        self._values = np.zeros((3, 0))
        self._clock = np.zeros(_SEC + 5, dtype=np.int64)
        self.lookup = None
        self.reads = 0   # for tests and benchmarks
        self._warm()

    def _warm(self):
        """Compile (or load from numba's cache) the kernel now, with the argument types of every
        later call, so the first message pays no compilation."""
        plan = np.zeros(_HEADER, dtype=np.int64)
        _read_state(b"", plan, self._values, self.q, self.v,
                    self.tau, self.arrival_ns, self._clock)

    def read(self, data, oldest_ns, now_ns):
        """True when `data` (bytes) was the usual message and is now in q, v, tau (stamps
        older than oldest_ns ns, but zero stamps, are not); False, nothing written, otherwise.
        now_ns: the arrival time noted in arrival_ns."""
        known = self.reader.known_names
        built_names, built_version = self._built_for
        if known is not built_names or self.jmap.version != built_version:
            self._build(known)
        if self._plan is None:
            return False
        clock = self._clock
        clock[_OLDEST] = oldest_ns
        clock[_NOW] = now_ns
        if type(data) is not bytes:   # the kernel is compiled for bytes (what rclpy takes)
            data = bytes(data)
        if not _read_state(data, self._plan, self._values,
                           self.q, self.v, self.tau, self.arrival_ns, clock):
            return False
        self.reads += 1
        return True

    def set_need_velocity(self, need_velocity):
        """Change need_velocity (as a node's mode does); the table follows at the next read."""
        self._field_flags[1] = int(bool(need_velocity))
        self._built_for = (None, None)

    def stamp(self):
        """The last read message's stamp as a new builtin_interfaces/Time."""
        return time_msg(self.stamp_sec, self.stamp_nanosec)

    @property
    def stamp_sec(self):
        return int(self._clock[_SEC])

    @property
    def stamp_nanosec(self):
        return int(self._clock[_NANOSEC])

    def _build(self, known):
        """The kernel's table for the reader's remembered names (None: no fast path)."""
        self._built_for = (known, self.jmap.version)
        self._plan = self.lookup = None
        if known is None:
            return
        names, chunk_ranges, chunk_bytes, names_length = known
        try:
            lookup = self.jmap.lookup(names, self.required)
        except JointMapError:   # the general path rejects these names with its message
            return
        src = lookup.src_or_empty
        header = [len(chunk_ranges), len(chunk_bytes), names_length, lookup.n, len(src),
                  len(lookup.iq), self._has_tau, *self._field_flags]
        self._plan = np.concatenate([
            np.array(header, dtype=np.int64), chunk_ranges.ravel(),
            chunk_bytes.astype(np.int64), src, lookup.iq, lookup.iv]).astype(np.int64)
        self._values = np.zeros((3, lookup.n))
        self.lookup = lookup
