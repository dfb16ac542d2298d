"""Prescribed (rheonomic) joints of the simulate-mode plant, driven by a JointTrajectory topic (a
mixin of ForwardDynamicsNode; the physics is mbd_ros.prescribed and mbd_ros.point_trajectory).

Parameter ``prescribed_joints`` (default empty): one-dof joints (revolute, prismatic, helical)
whose motion is given instead of integrated. They follow the trajectories received on
``~/prescribed_trajectory`` (trajectory_msgs/JointTrajectory: joint_names a subset of
``prescribed_joints``; points with positions, optional velocities and accelerations, and
strictly increasing time_from_start), interpolated by mbd_ros.point_trajectory's rule (quintic
with positions, velocities and accelerations; cubic with velocities; linear with positions
only); the other joints are free (hybrid dynamics, mbd_ros.prescribed). The trajectory starts
at header.stamp (in the time base of the plant's own stamps: the simulated time with
publish_clock, the system or /clock time otherwise), or when it is received if the stamp is
zero; when its first point lies ahead, the joint moves from where it is (its current q, q', q''
as a first waypoint). After the last point the joint holds its last position at rest; before
any trajectory arrives (and after ~/reset) it holds its initial position. A new trajectory
replaces the current one of the joints it names. A trajectory whose start lies in the past is
joined at its value now (the joint jumps there: stamp trajectories ahead of the plant's time).

Efforts: ``joint_states`` reports, for a prescribed joint, the total force it needs to follow
its motion (drive command + the prescribed force mbd_ros.prescribed solves for), which is the
inverse dynamics of the full motion at that joint.

Bad messages (unknown or non-prescribed joints, duplicate names, no points or more than
MAX_POINTS, wrong lengths, NaN/inf, times not increasing) are dropped and counted in /diagnostics
("rejected prescribed_trajectory").
"""
from __future__ import annotations

import numpy as np
from rcl_interfaces.msg import ParameterType
from trajectory_msgs.msg import JointTrajectory

from ..robot.joint_map import duplicates
from ..simulation.point_trajectory import PointTrajectory
from . import trajectory_reader
from .qos import SUBSCRIBE_QOS

PRESCRIBED_TYPES = ("revolute", "prismatic", "helical")
# a longer trajectory is refused, unread. Read from its bytes (trajectory_reader), 10 000 points
# cost ~3 ms; rclpy's message objects took ~1.5 s for 100 000 points, the former cap, and a few
# such messages a second brought the 1 kHz plant down to ~1 Hz.
MAX_POINTS = 10_000


class PrescribedInterface:
    """Mixin: needs self.robot, self.sim, self.plant, self.param, self.declare, self.reject of
    ForwardDynamicsNode (simulate mode)."""

    def declare_prescribed_parameters(self):
        self.declare("prescribed_joints", None, "simulate: one-dof joints whose motion follows "
                     "the trajectories of ~/prescribed_trajectory (hybrid dynamics; holding "
                     "their initial position until one arrives); their joint_states effort is "
                     "the force they need", type_=ParameterType.PARAMETER_STRING_ARRAY)

    def configure_prescribed(self):
        """Check prescribed_joints, hold them at the initial positions and subscribe (after
        make_plant). Raises ValueError naming a bad joint."""
        robot = self.robot
        names = list(self.param("prescribed_joints") or [])
        self.prescribed_joints = names
        self.prescribed_sub = None
        if not names:
            return
        dup = duplicates(names)
        if dup:
            raise ValueError(f"prescribed_joints: duplicate names {dup}")
        joint_index = {n: j for j, n in enumerate(robot.joint_names)}
        for name in names:
            if name not in joint_index:
                raise ValueError(f"prescribed_joints: '{name}' is not a movable joint of the "
                                 f"robot (joints: {list(robot.joint_names)[:10]})")
            kind = robot.joint_types[joint_index[name]]
            if kind not in PRESCRIBED_TYPES:
                raise ValueError(f"prescribed_joints: '{name}' is {kind}; only one-dof joints "
                                 "(revolute, prismatic, helical) can be prescribed")
        mimic = list(getattr(robot, "mimic_joints", None) or [])
        if set(mimic) & set(names):
            raise ValueError(f"prescribed_joints: {sorted(set(mimic) & set(names))} mimic other "
                             "joints: prescribe their leaders")
        index = [joint_index[n] for n in names]
        self._prescribed_iq = {n: int(robot.idx_q[j]) for n, j in zip(names, index)}
        self._prescribed_iv = np.array([robot.idx_v[j] for j in index], dtype=np.int64)
        rows = {n: k for k, n in enumerate(self.jmap.state_names)}
        self._prescribed_rows = [(rows[n], int(robot.idx_v[j])) for n, j in zip(names, index)]
        self._hold_prescribed(self.q0)
        self.counts["prescribed_trajectory"] = 0
        self.prescribed_received = 0
        trajectory_reader.warm_up()
        self.prescribed_sub = self.create_subscription(   # serialized: trajectory_reader.py
            JointTrajectory, "~/prescribed_trajectory", self._on_prescribed_trajectory,
            SUBSCRIBE_QOS, raw=True)
        self.subs.append(self.prescribed_sub)

    def _hold_prescribed(self, q0):
        """Every prescribed joint holds its position of q0, at rest (v0 = 0 there)."""
        self.sim.prescribed = {n: PointTrajectory.hold(float(q0[iq]))
                               for n, iq in self._prescribed_iq.items()}
        if self.v0 is not None:
            self.v0[self._prescribed_iv] = 0.0
            self.sim.v[self._prescribed_iv] = 0.0

    def reset_plant(self, q0=None, v0=None, time=None):
        """PlantInterface.reset_plant, then the prescribed joints hold their initial position."""
        super().reset_plant(q0, v0, time)
        if getattr(self, "prescribed_joints", None):
            self._hold_prescribed(self.q0)

    # ------------------------------------------------------------------ the topic
    def _state_stamp_ns(self):
        """The stamp the plant gives its current state (as _run_cycle computes it)."""
        if self.publish_clock:
            return self._base_stamp_ns + round(self.sim.time * 1e9)
        return self._base_stamp_ns + self.cycles * self.period_ns

    def _on_prescribed_trajectory(self, data):
        """A serialized JointTrajectory (bounded cost: caps checked before reading)."""
        if not self.active:
            return
        try:
            trajectories = self._read_prescribed(data)
        except ValueError as exc:
            self.reject("prescribed_trajectory", str(exc))
            return
        self.sim.prescribed.update(trajectories)
        self.prescribed_received += 1

    def _read_prescribed(self, data):
        """{joint: PointTrajectory} of a serialized JointTrajectory (ValueError if it is bad)."""
        head = trajectory_reader.read_header(data, len(self._prescribed_iq), MAX_POINTS)
        names = head.joint_names
        if not names:
            raise ValueError("no joint_names")
        dup = duplicates(names)
        if dup:
            raise ValueError(f"duplicate joint names {dup}")
        unknown = [n for n in names if n not in self._prescribed_iq]
        if unknown:
            raise ValueError(f"joints {unknown[:5]} are not prescribed_joints "
                             f"{self.prescribed_joints}")
        if not head.n_points:
            raise ValueError("no points")
        points = trajectory_reader.read_points(data, head)
        times = points.times
        fields = {"positions": points.positions, "velocities": points.velocities,
                  "accelerations": points.accelerations}
        for field, values in fields.items():
            if values is not None and not np.isfinite(values).all():
                raise ValueError(f"{field} contain NaN or inf")
        if (len(times) > 1 and not (np.diff(times) > 0.0).all()) or times[0] < 0.0:
            raise ValueError("time_from_start must be >= 0 and strictly increasing")
        given = {field: values is not None for field, values in fields.items()}
        # start: header.stamp in the plant's stamp time base, or now for a zero stamp
        now = self.sim.time
        stamp_ns = head.stamp_sec * 1_000_000_000 + head.stamp_nanosec
        start = now if stamp_ns == 0 else now + 1e-9 * (stamp_ns - self._state_stamp_ns())
        t = start + times
        result = {}
        for j, name in enumerate(names):
            q = fields["positions"][:, j]
            qd = fields["velocities"][:, j] if given["velocities"] else None
            qdd = fields["accelerations"][:, j] if given["accelerations"] else None
            tj = t
            if t[0] > now:   # move from the current motion to the first point
                q0, qd0, qdd0 = self.sim.prescribed[name](now)
                tj = np.concatenate(([now], t))
                q = np.concatenate(([q0], q))
                qd = None if qd is None else np.concatenate(([qd0], qd))
                qdd = None if qdd is None else np.concatenate(([qdd0], qdd))
            result[name] = PointTrajectory(tj, q, qd, qdd)
        return result

    # ------------------------------------------------------------------ efforts
    def prescribed_efforts(self, effort):
        """effort (state_names order, the drive torques) += the prescribed force each
        prescribed joint needs at the state just evaluated (robot.last_prescribed_torques)."""
        u = self.robot.last_prescribed_torques
        for row, iv in self._prescribed_rows:
            effort[row] += u[iv]

    def prescribed_diagnostics(self):
        if not getattr(self, "prescribed_joints", None):
            return []
        return [("prescribed joints", ", ".join(self.prescribed_joints)),
                ("prescribed trajectories", self.prescribed_received)]
