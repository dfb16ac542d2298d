"""Named joint values (ROS messages) <-> the robot's q, v and tau vectors. No ROS imports.

A sensor_msgs/JointState, a trajectory point or an effort command carries one value per named
1-dof joint, in any order. JointMap turns a list of names into index arrays once (cached per
distinct name list), validates lengths and values, and scatters the values into preallocated
q / v / tau arrays without allocating in the steady state.

Joint names used by messages (``state_names``): one per scalar degree of freedom, in the order
of v: a 1-dof movable joint (revolute, prismatic, helical: its value is the angle) is named as
itself; each dof of a cylindrical or universal joint (q and v have one entry per dof, so a
JointState can carry it) is ``<joint>/<component>``: ``<joint>/angle`` (rad) and
``<joint>/displacement`` (m) for a cylindrical joint, ``<joint>/angle1`` (about its axis) and
``<joint>/angle2`` (about axis2) for a universal joint. These names are accepted and published
like joint names (joint_states, commands, `joints`). Joints whose configuration is not one
number per dof (floating base, spherical: quaternions; planar) cannot be expressed in a
JointState; their entries of q and v are left as the caller set them.

Degree-of-freedom names (``dof_names``, one per entry of v) label vectors over all of v, such as
the accelerations: a 1-dof joint is named as itself, a dof of a multi-dof joint is
``<joint>/<component>`` (e.g. ``root_joint/vx`` ... ``root_joint/wz``; a cylindrical joint's
dofs are ``<joint>/angle`` and ``<joint>/displacement``, a universal joint's ``<joint>/angle1``
(about its axis) and ``<joint>/angle2`` (about axis2)).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.finite import all_finite

ONE_DOF_TYPES = ("revolute", "prismatic", "helical")
# multi-dof joints with one q entry per v entry: each dof is a JointState entry '<joint>/<component>'
SCALAR_DOF_TYPES = ("cylindrical", "universal")
DOF_COMPONENTS = {
    "cylindrical": ("angle", "displacement"),
    "universal": ("angle1", "angle2"),
    "floating": ("vx", "vy", "vz", "wx", "wy", "wz"),
    "spherical": ("wx", "wy", "wz"),
    "planar": ("vx", "vy", "wz"),
}


def scalar_dofs(robot):
    """{message name: (q index, v index)} of every dof a JointState can carry, in the order of v:
    1-dof joints by their name, cylindrical / universal dofs as `<joint>/<component>`."""
    dofs = {}
    for name, kind, iq, iv in zip(robot.joint_names, robot.joint_types, robot.idx_q, robot.idx_v):
        if kind in ONE_DOF_TYPES:
            dofs[name] = (int(iq), int(iv))
        elif kind in SCALAR_DOF_TYPES:
            for k, component in enumerate(DOF_COMPONENTS[kind]):
                dofs[f"{name}/{component}"] = (int(iq) + k, int(iv) + k)
    return dofs


class JointMapError(ValueError):
    """A message whose names or values do not fit the robot (the message is to be dropped)."""


MAX_MESSAGE_NAMES = 4096   # names a message may carry (or twice the robot's dofs, if more)


def max_message_names(n_dofs):
    """The most names (and values per field) one message may carry for a robot with `n_dofs`
    JointState entries: MAX_MESSAGE_NAMES, or twice the robot's entries when that is more (a
    message may name other joints too, with ignore_unknown_joints). A longer message is
    rejected before its names are looked at, so its cost is bounded."""
    return max(MAX_MESSAGE_NAMES, 2 * int(n_dofs))


def duplicates(names, limit=5):
    """Up to `limit` names that occur more than once in `names`, sorted (empty: none). O(n):
    one pass with a set (a message with 30 000 names took 9 s with list.count)."""
    seen, repeated = set(), set()
    for name in names:
        if name in seen:
            repeated.add(name)
        else:
            seen.add(name)
    return sorted(repeated)[:limit]


def dof_names(robot):
    """One name per entry of v: the joint's name for 1-dof joints, `<joint>/<component>` else."""
    names = []
    for name, kind in zip(robot.joint_names, robot.joint_types):
        if kind in ONE_DOF_TYPES:
            names.append(name)
        else:
            names.extend(f"{name}/{c}" for c in DOF_COMPONENTS[kind])
    # flexible links: their elastic coordinates follow the joints in v ('forearm/mode_1', ...)
    names.extend(getattr(robot, "elastic_names", ()))
    return names


def _floats(values, field):
    """values as a float64 array (a view of an array.array('d'), as rclpy gives, no copy)."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise JointMapError(f"{field}: not numbers ({exc})") from None


def _all_finite(x):
    """np.isfinite(x).all() for a 1-D float64 x, by one numba call (~0.1 µs instead of ~1-3 µs
    of numpy reductions, three times per JointState)."""
    if x.ndim == 1 and x.flags.c_contiguous:
        return all_finite(x)
    return bool(np.isfinite(x).all())


def _check_magnitude(x, field):
    """JointMapError naming the first entry of x (finite) beyond MAX_MESSAGE_VALUE."""
    big = np.flatnonzero(np.abs(x) > MAX_MESSAGE_VALUE)
    if big.size:
        raise JointMapError(f"{field}[{int(big[0])}] = {float(x[big[0]]):.3g}: beyond "
                            f"{MAX_MESSAGE_VALUE:g} (not a joint state)")


# read_state's checks and scatter in one call (scatter_state): its result codes
_FIELDS = ("position", "velocity", "effort")
_EMPTY_REQUIRED, _WRONG_COUNT, _NOT_FINITE = 1, 2, 3
# |value| of any field of a joint state, command or reference point: beyond it no joint state is
# meant (a float64 angle there still resolves 1e-7 rad, a wheel turning 100 rad/s needs 100
# days to reach it), and a finite 1e300 drove every torque to its limit or to overflow
MAX_MESSAGE_VALUE = 1e9


@njit(cache=True)
def scatter_state(position, velocity, effort, n_names, src, iq, iv, required, q, v, tau,
                   has_tau):
    """JointMap.read_state for float64 fields: validates position, velocity, effort (in that
    order: empty but required, a count other than n_names, NaN, inf or |x| > MAX_MESSAGE_VALUE)
    and returns
    4 * field + code of the first problem without writing anything; else scatters the kept
    entries (src: their positions in the message, empty when all are kept) into q[iq] and
    v[iv] (zeros for an empty velocity), and tau[iv] if has_tau (effort is then checked too),
    and returns 0."""
    for f in range(3):
        x = position if f == 0 else (velocity if f == 1 else effort)
        if f == 2 and not has_tau:
            break
        if x.shape[0] == 0:
            if required[f]:
                return 4 * f + 1
            continue
        if x.shape[0] != n_names:
            return 4 * f + 2
        for i in range(x.shape[0]):
            if not abs(x[i]) <= MAX_MESSAGE_VALUE:     # (NaN fails too)
                return 4 * f + 3
    for k in range(iq.shape[0]):
        j = src[k] if src.shape[0] else k
        q[iq[k]] = position[j]
        v[iv[k]] = velocity[j] if velocity.shape[0] else 0.0
        if has_tau:
            tau[iv[k]] = effort[j] if effort.shape[0] else 0.0
    return 0


_NO_VALUES = np.zeros(0)   # scatter_state's tau when there is none


class _Lookup:
    """Index arrays for one list of message names (see JointMap.lookup)."""
    __slots__ = ("src", "iq", "iv", "n", "src_or_empty")

    def __init__(self, src, iq, iv, n):
        self.src = src      # positions in the message of the known names; None when all are known
        self.src_or_empty = np.zeros(0, dtype=np.int64) if src is None else src
        self.iq = iq        # (k,) index in q of each kept entry
        self.iv = iv        # (k,) index in v of each kept entry
        self.n = n          # number of names in the message


class JointMap:
    """Maps the named 1-dof joints (and cylindrical / universal dofs, `<joint>/<component>`) of
    messages to and from q, v, tau of `robot`.

    joints: names of the commanded joints, the order of effort command arrays (default: the
        robot's `actuated_joints` if it declares them (closed loops), else every name of
        `state_names` but coupled mimic joints). Must be names of `state_names`.
    ignore_unknown: accept messages that also name joints the robot does not have (their
        values are ignored) instead of rejecting them.
    """

    MAX_CACHED = 16   # distinct name lists remembered (publishers normally use one)

    def __init__(self, robot, joints=None, ignore_unknown=False):
        position = scalar_dofs(robot)
        self.state_names = list(position)
        self._index = position
        self.state_iq = np.array([position[n][0] for n in self.state_names], dtype=np.int64)
        self.state_iv = np.array([position[n][1] for n in self.state_names], dtype=np.int64)
        self.dof_names = dof_names(robot)
        self.nq, self.nv = robot.nq, robot.nv
        self.ignore_unknown = bool(ignore_unknown)
        mimic = set(getattr(robot, "mimic_joints", ()))   # driven through their leaders
        joints = list(joints or getattr(robot, "actuated_joints", None)
                      or [n for n in self.state_names if n not in mimic])
        dup = duplicates(joints)
        if dup:
            raise ValueError(f"joints: duplicate names {dup}")
        unknown = [n for n in joints if n not in position]
        if unknown:
            multi = [n for n in unknown if n in robot.joint_names]
            if multi:
                raise ValueError(f"joints: {multi} are multi-dof joints; command 1-dof joints "
                                 "by name and cylindrical / universal dofs as "
                                 "'<joint>/<component>' (floating, spherical and planar joints "
                                 "cannot be commanded)")
            raise ValueError(f"joints: unknown joint names {unknown}; the robot's commandable "
                             f"joints are {self.state_names}")
        self.joints = joints
        self.joint_iq = np.array([position[n][0] for n in joints], dtype=np.int64)
        self.joint_iv = np.array([position[n][1] for n in joints], dtype=np.int64)
        self.max_names = max_message_names(len(self.state_names))
        self._cache = {}
        self.version = 0   # changes with the mapping (set_ignore_unknown): lookups kept are stale
        # scatter_state's `required` flags [need_velocity][need_effort] (position always)
        self._required = [[np.array([1, v, e], dtype=np.int64) for e in (0, 1)] for v in (0, 1)]

    def set_ignore_unknown(self, value):
        """Change ignore_unknown (forgets the lookups made under the old value)."""
        self.ignore_unknown = bool(value)
        self._cache.clear()
        self.version += 1

    def warm_up(self):
        """Compile (or load from numba's cache) read_state's one-call kernel now (a node calls
        this before it goes active, so its first message pays no compilation)."""
        n = len(self.state_names)
        if n:
            values = np.zeros((3, n))
            self.read_state(self.state_names, *values, np.zeros(self.nq), np.zeros(self.nv),
                            np.zeros(self.nv), required=())

    # ------------------------------------------------------------------ names -> indices
    def lookup(self, names, required=None):
        """Index arrays for the message names `names` (list of str).

        required: the names that must all be present (default: every 1-dof joint).
        Raises JointMapError on more than `max_names` names, duplicate, unknown (unless
        ignore_unknown) or missing names. Cost O(len(names)).
        """
        if len(names) > self.max_names:
            raise JointMapError(f"{len(names)} joint names: more than {self.max_names} "
                                "(the most a message may carry)")
        key = (tuple(names), None if required is None else tuple(required))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        names = list(key[0])
        if len(set(names)) != len(names):
            raise JointMapError(f"duplicate joint names {duplicates(names)}")
        known = [k for k, n in enumerate(names) if n in self._index]
        if len(known) != len(names) and not self.ignore_unknown:
            unknown = [n for n in names if n not in self._index]
            raise JointMapError(f"unknown joint names {unknown[:5]}"
                                f"{' ...' if len(unknown) > 5 else ''}")
        need = self.state_names if required is None else required
        present = set(names)
        missing = [n for n in need if n not in present]
        if missing:
            raise JointMapError(f"missing joints {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        src = None if len(known) == len(names) else np.array(known, dtype=np.int64)
        iq = np.array([self._index[names[k]][0] for k in known], dtype=np.int64)
        iv = np.array([self._index[names[k]][1] for k in known], dtype=np.int64)
        hit = _Lookup(src, iq, iv, len(names))
        if len(self._cache) >= self.MAX_CACHED:
            self._cache.clear()
        self._cache[key] = hit
        return hit

    # ------------------------------------------------------------------ messages -> vectors
    def _values(self, values, lookup, field, required):
        """values (sequence of float) as a float64 array of the kept entries, or None if empty
        and not required. Raises JointMapError on a wrong length or NaN/inf."""
        n = len(values)
        if n == 0:
            if required:
                raise JointMapError(f"{field} is empty")
            return None
        if n != lookup.n:
            raise JointMapError(f"{field} has {n} values for {lookup.n} joint names")
        x = _floats(values, field)
        if not _all_finite(x):
            raise JointMapError(f"{field} contains NaN or inf")
        _check_magnitude(x, field)
        return x if lookup.src is None else x[lookup.src]

    def read_state(self, names, position, velocity, effort, q, v, tau=None,
                   need_velocity=True, need_effort=False, required=None):
        """Scatter a JointState's fields into q (nq,), v (nv,) and tau (nv,).

        Empty optional fields (velocity unless need_velocity, effort unless need_effort) give
        zeros. Entries of q, v, tau that the message does not cover are left unchanged.
        Validates everything before writing: on JointMapError nothing has been written.
        """
        lookup = self.lookup(names, required)
        if type(position) is np.ndarray and type(velocity) is np.ndarray and \
                type(effort) is np.ndarray and position.dtype == velocity.dtype == \
                effort.dtype == np.float64 and position.ndim == velocity.ndim == \
                effort.ndim == 1 and type(q) is np.ndarray and type(v) is np.ndarray and \
                q.dtype == v.dtype == np.float64 and \
                (tau is None or type(tau) is np.ndarray and tau.dtype == np.float64):
            # float64 arrays (nodes/cdr.py's reader): the same checks and writes in one call
            code = scatter_state(position, velocity, effort, lookup.n, lookup.src_or_empty,
                                  lookup.iq, lookup.iv,
                                  self._required[bool(need_velocity)][bool(need_effort)], q, v,
                                  _NO_VALUES if tau is None else tau, tau is not None)
            if code:
                field, problem = _FIELDS[code // 4], code % 4
                n = len((position, velocity, effort)[code // 4])
                if problem == _NOT_FINITE:
                    x = (position, velocity, effort)[code // 4]
                    if _all_finite(x):
                        _check_magnitude(x, field)
                raise JointMapError(
                    f"{field} is empty" if problem == _EMPTY_REQUIRED else
                    f"{field} has {n} values for {lookup.n} joint names"
                    if problem == _WRONG_COUNT else f"{field} contains NaN or inf")
            return lookup
        pos = self._values(position, lookup, "position", True)
        vel = self._values(velocity, lookup, "velocity", need_velocity)
        eff = self._values(effort, lookup, "effort", need_effort) if tau is not None else None
        q[lookup.iq] = pos
        if vel is None:
            v[lookup.iv] = 0.0
        else:
            v[lookup.iv] = vel
        if tau is not None:
            if eff is None:
                tau[lookup.iv] = 0.0
            else:
                tau[lookup.iv] = eff
        return lookup

    def read_point(self, names, positions, velocities, accelerations, q, v, qdd, required):
        """Scatter a trajectory point (positions required; velocities, accelerations optional,
        zeros when empty) into q, v, qdd for the named joints; `required` names must be present."""
        lookup = self.lookup(names, required)
        pos = self._values(positions, lookup, "positions", True)
        vel = self._values(velocities, lookup, "velocities", False)
        acc = self._values(accelerations, lookup, "accelerations", False)
        q[lookup.iq] = pos
        v[lookup.iv] = 0.0 if vel is None else vel
        qdd[lookup.iv] = 0.0 if acc is None else acc
        return lookup

    def read_command(self, data, tau):
        """An effort command array in `joints` order -> tau (nv,) (zero for other dofs)."""
        n = len(data)
        if n != len(self.joints):
            raise JointMapError(f"effort command has {n} values, expected {len(self.joints)} "
                                f"(joints {self.joints})")
        x = _floats(data, "effort command")
        if not np.isfinite(x).all():
            raise JointMapError("effort command contains NaN or inf")
        tau[:] = 0.0
        tau[self.joint_iv] = x

    def read_named_command(self, names, effort, tau):
        """A JointState effort command (all `joints` by name) -> tau (nv,) (zero elsewhere)."""
        lookup = self.lookup(names, self.joints)
        eff = self._values(effort, lookup, "effort", True)
        tau[:] = 0.0
        tau[lookup.iv] = eff

    # ------------------------------------------------------------------ vectors -> messages
    def state_positions(self, q, out):
        """out[:] = q of the `state_names` dofs, in that order."""
        np.take(q, self.state_iq, out=out)

    def state_values(self, x, out):
        """out[:] = x (an nv vector) of the `state_names` dofs, in that order."""
        np.take(x, self.state_iv, out=out)

    def joint_values(self, x, out):
        """out[:] = x (an nv vector) of the commanded joints, in `joints` order."""
        np.take(x, self.joint_iv, out=out)
