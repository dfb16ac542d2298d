"""URDF joint limits enforced on a simulated plant: effort, velocity and position. No ROS imports.

    limits = JointLimits(robot)
    limits.saturate(q, v, tau)      # drive torques within the effort and velocity limits (in place)
    limits.enforce(q, v)            # after a step: positions back inside [lower, upper] (in place)

Effort (``<limit effort>``): every drive torque is clipped to [-effort, effort]. A limit of 0
(a common URDF placeholder) counts as no limit; a negative or NaN limit is a ValueError naming
the joints.

Velocity (``<limit velocity>``): a drive never drives a joint beyond its velocity limit, and
brakes it when something else does. The drive torque is kept inside the envelope

    b_i + m_i (-vmax_i - v_i) / T  <=  tau_i  <=  b_i + m_i (vmax_i - v_i) / T

(b = ID(q, v, 0) the torque that holds the speeds, m_i = 1 / (M(q)^-1)_ii the inertia the
joint's drive feels with the other joints free, T = VELOCITY_TIME_CONSTANT): far below the limit the envelope is wide and inactive; near it the
drive can add at most what brings the joint to vmax in about T; beyond it, it brakes. The
effort limit comes last, so a drive whose effort cannot stop the motion lets the joint exceed
its velocity limit, as a real one would (ros2_control's joint limiters treat effort commands
alike).

Position (``<limit lower upper>``): hard unilateral constraints with inelastic impacts,
enforced after each integration step by a projection (time-stepping, as in Moreau's and
Stewart–Trinkle's schemes). With A the joints beyond a limit and r_A = limit_A - q_A their
violations, the smallest correction in the kinetic-energy metric that puts them back on their
limits is

    dq = M^-1 S_A^T (S_A M^-1 S_A^T)^-1 r_A          (q <- q (+) dq)

(S_A selects the rows of A), and the contact impulse that stops their outward motion is

    dv = M^-1 S_A^T (S_A M^-1 S_A^T)^-1 (-v_A)        (v <- v + dv),

applied only to joints moving outward, with an active-set loop dropping any joint whose impulse
would pull it outward instead of pushing it back. The impulse acts on the whole robot through
M^-1 (momentum is exchanged with the other joints, as a mechanical stop does). After enforce()
every limited joint is within [lower, upper] up to round-off: no penetration, no tunnelling,
whatever the torque and the step. The limits are checked once per step (not at the inner
stages of RK4). Costs nothing while no joint is beyond a limit; one mass matrix and a small
solve when one is.

For a closed-loop robot the correction ignores the loop constraints (the simulator's Baumgarte
stabilization then closes the loops again): a stop on a closed-loop robot is approximate.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..robot.joint_map import ONE_DOF_TYPES
from ..kernels.plant import limit_torques as _limit_torques
from ..kernels.plant import limited_drive_torques as _limited_drive_torques
from ..kernels.plant import spd_inverse as _spd_inverse
from ..kernels.stops import (STOP_FLOAT_ROWS, STOP_INT_ROWS, STOP_LIMITED_IQ, STOP_LIMITED_IV,
                             STOP_LOWER, STOP_UPPER)
from ..robot.rollout_plant import enforce_stops

VELOCITY_TIME_CONSTANT = 0.01   # s: the drive reaches / returns to the velocity limit in about this time


class JointLimits:
    """Effort, velocity and position limits of `robot`'s 1-dof joints (from its URDF).

    position, velocity, effort: enforce that kind of limit (default all three).
    Attributes (nv,): lower, upper (-inf/inf where there is no limit), effort, velocity (inf
    where there is none); `position_limited` indices in v of the joints with a position limit.
    Counters: `saturated` (calls of saturate() that changed a torque), `stops` (enforce() calls
    that corrected a position).
    """

    def __init__(self, robot, position=True, velocity=True, effort=True):
        nv = robot.nv
        lower, upper = robot.position_limits
        self.robot = robot
        self.lower = np.full(nv, -np.inf)
        self.upper = np.full(nv, np.inf)
        self.effort = np.full(nv, np.inf)
        self.velocity = np.full(nv, np.inf)
        one_dof = np.zeros(nv, dtype=bool)
        for kind, iv in zip(robot.joint_types, robot.idx_v):
            if kind in ONE_DOF_TYPES:
                one_dof[iv] = True
        if position:
            self.lower[one_dof] = np.asarray(lower, dtype=float)[one_dof]
            self.upper[one_dof] = np.asarray(upper, dtype=float)[one_dof]
        if effort:
            self.effort[:] = np.asarray(robot.effort_limits, dtype=float)
        if velocity:
            self.velocity[:] = np.asarray(robot.velocity_limits, dtype=float)
        for name, values in (("effort", self.effort), ("velocity", self.velocity)):
            bad = sorted({robot.joint_names[self._joint_of(i)] for i in range(nv)
                          if not values[i] >= 0.0})
            if bad:
                raise ValueError(f"<limit {name}> must be >= 0: joints {bad} have "
                                 f"{values[np.logical_not(values >= 0.0)].tolist()}")
            values[values == 0.0] = np.inf   # 0: not given (a common URDF placeholder)
        # q index of each position-limited dof (1-dof joints: one q entry per v entry)
        iq_of_iv = {int(iv): int(iq) for kind, iq, iv in
                    zip(robot.joint_types, robot.idx_q, robot.idx_v) if kind in ONE_DOF_TYPES}
        limited = np.flatnonzero(np.isfinite(self.lower) | np.isfinite(self.upper))
        n_limited = len(limited)
        # the stop kernels' model and workspaces, packed (kernels/stops.py STOP_* rows); the
        # named attributes are views of their rows
        self._stops_int = np.zeros((STOP_INT_ROWS, n_limited), dtype=np.int64)
        self._stops_float = np.zeros((STOP_FLOAT_ROWS, n_limited))
        self._stop_work = np.zeros((3, nv))
        self.position_limited = self._stops_int[STOP_LIMITED_IV]
        self.position_limited[:] = limited
        self._limited_iq = self._stops_int[STOP_LIMITED_IQ]
        self._limited_iq[:] = [iq_of_iv[int(i)] for i in limited]
        self._lower_l = self._stops_float[STOP_LOWER]
        self._lower_l[:] = self.lower[limited]
        self._upper_l = self._stops_float[STOP_UPPER]
        self._upper_l[:] = self.upper[limited]
        self._ql = np.zeros(n_limited)
        self._any_velocity = bool(np.isfinite(self.velocity).any())
        self._any_effort = bool(np.isfinite(self.effort).any())
        self._vel_idx = np.flatnonzero(np.isfinite(self.velocity)).astype(np.int64)
        self._no_idx = np.zeros(0, dtype=np.int64)
        self._zero = np.zeros(nv)
        self._bias = np.zeros(nv)
        self._m = np.zeros((nv, nv))
        self._lower = np.zeros((nv, nv))
        self._minv = np.zeros((nv, nv))
        self._one_dof_only = all(t in ONE_DOF_TYPES for t in robot.joint_types)
        # enforce()'s arrays under the names enforce_stops reads (PlantLimits, StopWork)
        self._stop_model = SimpleNamespace(limited_iq=self._limited_iq,
                                           stops_float=self._stops_float,
                                           one_dof_only=self._one_dof_only)
        self._stop_arrays = SimpleNamespace(mass=self._m, stops_int=self._stops_int,
                                            stops_float=self._stops_float, chol=self._lower,
                                            minv=self._minv, nv_work=self._stop_work)
        self.saturated = 0
        self.stops = 0

    def _joint_of(self, iv):
        idx = self.robot.idx_v
        return max(j for j in range(len(idx)) if idx[j] <= iv)

    # ------------------------------------------------------------------ positions
    def violations(self, q, tol=0.0):
        """Names of the joints of q (nq,) beyond a position limit by more than tol."""
        self._ql[:] = np.take(q, self._limited_iq)
        bad = np.flatnonzero((self._ql < self._lower_l - tol) | (self._ql > self._upper_l + tol))
        return [self.robot.joint_names[self._joint_of(int(self.position_limited[k]))]
                for k in bad]

    def enforce(self, q, v):
        """Put the joints beyond a position limit back on it and stop their outward motion,
        in place (see the module docstring; kernels in mbd_ros/kernels/stops.py). Returns the
        number of joints on a stop."""
        # the same kernel calls as a rollout's stops (robot/rollout_plant.py enforce_stops),
        # on this object's arrays
        k = enforce_stops(self.robot, self._stop_model, self._stop_arrays, q, v)
        if k:
            self.stops += 1
        return k

    def kernel_arrays(self):
        """The arrays the compiled plant step (kernels/plant_step.py) passes to the stop and
        torque-limit kernels, the very ones enforce() and saturated_drive_torques() pass:
        (stops_int, stops_float, chol (nv, nv), minv (nv, nv), stop_work (3, nv), vel_idx,
        velocity (nv,), effort (nv,), one_dof_only)."""
        vel_idx = self._vel_idx if self._any_velocity else self._no_idx
        return (self._stops_int, self._stops_float, self._lower, self._minv, self._stop_work,
                vel_idx, self.velocity, self.effort, self._one_dof_only)

    def _inverse(self, m):
        """M^-1 (numba Cholesky, into a preallocated array)."""
        if _spd_inverse(m, self._lower, self._minv):
            raise ValueError("the mass matrix is not positive definite")
        return self._minv

    # ------------------------------------------------------------------ torques
    @property
    def has_velocity_limits(self):
        """True when a joint has a finite velocity limit (saturate then needs M and b)."""
        return self._any_velocity

    def saturated_drive_torques(self, drives, q, v, dt, tau, m=None, m_eff=None, bias=None,
                                m_stable=None):
        """drives.torques(q, v, dt) then saturate(q, v, tau) in one kernel call, into tau (nv,).
        m = M(q), m_eff = 1 / diag(M^-1), bias = ID(q, v, 0) and m_stable (the drives'
        coupled-stable inertias, kernels/plant.py effective_inertias) as drives.torques and
        saturate take them: given whenever a drive is a servo or a joint has a velocity limit
        (the caller computes them once for both). Returns True if a torque was changed."""
        m, m_eff, bias, m_stable = drives.model_terms_or_zeros(m, m_eff, bias, m_stable)
        vel_idx = self._vel_idx if self._any_velocity else self._no_idx
        drive_int, drive_float = drives.kernel_arrays()
        changed = _limited_drive_torques(drive_int, drive_float, q, v, m, m_eff, m_stable, bias,
                                         float(dt),
                                         vel_idx, self.velocity, self.effort,
                                         1.0 / VELOCITY_TIME_CONSTANT, tau)
        if changed:
            self.saturated += 1
        return changed

    def saturate(self, q, v, tau, m_eff=None, bias=None):
        """Clip the drive torques tau (nv,) in place to the velocity-limit envelope and the
        effort limits (see the module docstring). m_eff (nv,) = 1 / diag(M(q)^-1) and bias =
        ID(q, v, 0), if the caller has them (else they are computed when a joint has a
        velocity limit). Returns True if a torque was changed."""
        if self._any_velocity:
            if m_eff is None:
                m_eff = 1.0 / np.diagonal(self._inverse(self.robot.mass_matrix(q, out=self._m)))
            if bias is None:
                bias = self.robot.inverse_dynamics(q, v, self._zero, out=self._bias)
            vel_idx = self._vel_idx
        else:
            m_eff = bias = self._zero
            vel_idx = self._no_idx
        # b + m (-vmax - v) / T <= tau <= b + m (vmax - v) / T, then |tau| <= effort
        changed = _limit_torques(vel_idx, self.velocity, self.effort, v, m_eff, bias,
                                 1.0 / VELOCITY_TIME_CONSTANT, tau)
        if changed:
            self.saturated += 1
        return changed


def onto_position_limits(robot, q):
    """Move every 1-dof joint of q (nq,) whose value lies outside its URDF position limits onto
    the nearest limit, in place. Returns [(joint name, old value, new value)] of the moved
    joints (empty when q was inside every limit).

    The default start of a simulated robot is its zero configuration; a joint whose zero is not
    allowed (the Panda's panda_joint4, limits [-3.07, -0.07]) would be refused as a start. The
    nearest limit is the smallest change of the zero configuration (the middle of the range
    would move such a joint by half its range), and it keeps every other joint at zero."""
    lower, upper = (np.asarray(x, dtype=float) for x in robot.position_limits)
    moved = []
    for name, kind, iq, iv in zip(robot.joint_names, robot.joint_types, robot.idx_q,
                                  robot.idx_v):
        if kind not in ONE_DOF_TYPES:
            continue
        lo, hi = lower[iv], upper[iv]
        value = float(q[iq])
        if lo > hi:
            raise ValueError(f"joint '{name}': URDF position limits lower {lo:g} > upper {hi:g}")
        new = min(max(value, lo), hi)
        if new != value:
            q[iq] = new
            moved.append((name, value, float(new)))
    return moved


def outside_position_limits(robot, q, tol=1e-9):
    """[(joint name, value, lower, upper)] of the 1-dof joints of q (nq,) outside their URDF
    position limits by more than tol."""
    lower, upper = (np.asarray(x, dtype=float) for x in robot.position_limits)
    return [(name, float(q[iq]), float(lower[iv]), float(upper[iv]))
            for name, kind, iq, iv in zip(robot.joint_names, robot.joint_types, robot.idx_q,
                                          robot.idx_v)
            if kind in ONE_DOF_TYPES and not lower[iv] - tol <= q[iq] <= upper[iv] + tol]
