"""The plant parts a rollout runs in its loop (robot.rollout(drives=..., limits=True)): the
joint drives in POSITION mode and the URDF joint limits, as the packed arrays of the plant's
kernels (kernels/plant.py drive_torques / limited_drive_torques, kernels/stops.py
enforce_positions / enforce_velocities).

Why here and not through mbd_ros.simulation's JointDrives and JointLimits: Robot.rollout lives in
the robot layer, which may not import the simulation layer (docs/design.md, "Layers"). These
builders fill the same arrays, row for row, as JointDrives.__init__ + command_position and
JointLimits.__init__ do (the DRIVE_* and STOP_* rows of the kernels' modules); the rollout then
calls the very kernels the Plant calls. test/test_rollout.py checks a drives rollout against a
Plant stepping with command_position, and a limited rollout against JointLimits.enforce.
"""
from __future__ import annotations

import numpy as np

from ..kernels.plant import (DRIVE_FLOAT_ROWS, DRIVE_INT_ROWS, DRIVE_IQ, DRIVE_IV, DRIVE_KD,
                             DRIVE_KP, DRIVE_LAW, DRIVE_LOWER, DRIVE_MODE, DRIVE_PD_KD,
                             DRIVE_PD_KP, DRIVE_Q_REF, DRIVE_UPPER, DRIVE_VELOCITY_CMD, PD,
                             POSITION)
from ..kernels.plant import beyond_limits as _beyond_limits
from ..kernels.stops import (STOP_DQ, STOP_FLOAT_ROWS, STOP_IDX, STOP_INT_ROWS, STOP_LIMITED_IQ,
                             STOP_LIMITED_IV, STOP_LOWER, STOP_TARGET, STOP_UPPER)
from ..kernels.stops import enforce_positions as _enforce_positions
from ..kernels.stops import enforce_velocities as _enforce_velocities
from ..kernels.stops import place_on_limits as _place_on_limits
from .joint_map import ONE_DOF_TYPES, scalar_dofs

# the Plant's drive gains (mbd_ros.simulation.plant.Plant: kp 1/s^2, kd 1/s, inertia-normalised)
DEFAULT_KP = 400.0
DEFAULT_KD = 40.0
# the Plant's divergence bound on |v| (mbd_ros.simulation.plant.MAX_SPEED, rad/s or m/s)
MAX_SPEED = 1.0e3
# JointLimits' VELOCITY_TIME_CONSTANT (s): the velocity-limit envelope of the drive torques
VELOCITY_TIME_CONSTANT = 0.01
DRIVE_KEYS = ("joints", "kp", "kd", "position", "velocity", "model")
# the Plant's drive models (mbd_ros.simulation.drives DRIVE_MODELS): "ideal" (inertia-normalised
# gains kp 1/s^2, kd 1/s, plus the model compensation b(q, v)) or "pd" (a servo's PD, kp N m/rad,
# kd N m s/rad, no compensation)
DRIVE_MODELS = ("ideal", "pd")


class PlantLimits:
    """The URDF limits of `robot` as JointLimits(robot) holds them (position limits of 1-dof
    joints; effort and velocity limits, 0 meaning none): lower, upper, effort, velocity (nv,),
    vel_idx (dofs with a velocity limit), and the stop kernels' packed model arrays
    stops_int (STOP_INT_ROWS, n_limited), stops_float (STOP_FLOAT_ROWS, n_limited)."""

    def __init__(self, robot):
        nv = robot.nv
        lower, upper = robot.position_limits
        one_dof = np.zeros(nv, dtype=bool)
        for kind, iv in zip(robot.joint_types, robot.idx_v):
            if kind in ONE_DOF_TYPES:
                one_dof[iv] = True
        self.lower = np.full(nv, -np.inf)
        self.upper = np.full(nv, np.inf)
        self.lower[one_dof] = np.asarray(lower, dtype=float)[one_dof]
        self.upper[one_dof] = np.asarray(upper, dtype=float)[one_dof]
        self.effort = np.asarray(robot.effort_limits, dtype=float).copy()
        self.velocity = np.asarray(robot.velocity_limits, dtype=float).copy()
        for name, values in (("effort", self.effort), ("velocity", self.velocity)):
            if not (values >= 0.0).all():
                raise ValueError(f"limits: <limit {name}> must be >= 0, got "
                                 f"{values[np.logical_not(values >= 0.0)].tolist()}")
            values[values == 0.0] = np.inf   # 0: not given (a common URDF placeholder)
        self.vel_idx = np.flatnonzero(np.isfinite(self.velocity)).astype(np.int64)
        iq_of_iv = {int(iv): int(iq) for kind, iq, iv in
                    zip(robot.joint_types, robot.idx_q, robot.idx_v) if kind in ONE_DOF_TYPES}
        limited = np.flatnonzero(np.isfinite(self.lower) | np.isfinite(self.upper))
        self.limited_iq = np.array([iq_of_iv[int(i)] for i in limited], dtype=np.int64)
        self.stops_int = np.zeros((STOP_INT_ROWS, len(limited)), dtype=np.int64)
        self.stops_float = np.zeros((STOP_FLOAT_ROWS, len(limited)))
        self.stops_int[STOP_LIMITED_IV] = limited
        self.stops_int[STOP_LIMITED_IQ] = self.limited_iq
        self.stops_float[STOP_LOWER] = self.lower[limited]
        self.stops_float[STOP_UPPER] = self.upper[limited]
        self.one_dof_only = all(t in ONE_DOF_TYPES for t in robot.joint_types)

    def violations(self, q, tol=1e-9):
        """Indices in limited_iq of the joints of q (nq,) beyond a position limit by > tol."""
        x = q[..., self.limited_iq]
        lo, hi = self.stops_float[STOP_LOWER], self.stops_float[STOP_UPPER]
        return (x < lo - tol) | (x > hi + tol)


class StopWork:
    """The workspaces of one rollout's position stops (enforce_stops): M, its Cholesky factor
    and inverse (nv, nv), the stop kernels' vectors (3, nv), and a copy of the stop kernels'
    packed arrays (their rows past the model are per-call scratch)."""

    def __init__(self, nv, limits):
        self.mass = np.zeros((nv, nv))
        self.chol = np.zeros((nv, nv))
        self.minv = np.zeros((nv, nv))
        self.nv_work = np.zeros((3, nv))
        self.stops_int = limits.stops_int.copy()
        self.stops_float = limits.stops_float.copy()


def enforce_stops(robot, limits, work, q, v):
    """JointLimits.enforce(q, v) with the arrays of `limits` (PlantLimits) and `work`
    (StopWork): joints beyond a position limit put back on it, their outward motion stopped by
    an inelastic impulse, in place (mbd_ros/simulation/limits.py's docstring; the same kernel
    calls in the same order). Returns the number of joints on a stop; ValueError when a stop
    kernel fails (M not positive definite, a singular block)."""
    if not len(limits.limited_iq):
        return 0
    if not _beyond_limits(q, limits.limited_iq, limits.stops_float[STOP_LOWER],
                          limits.stops_float[STOP_UPPER]):
        return 0
    k = _enforce_positions(q, robot.mass_matrix(q, out=work.mass), work.stops_int,
                           work.stops_float, work.chol, work.minv, work.nv_work,
                           limits.one_dof_only)
    check_stop_status(k)
    if k == 0:
        return 0
    if not limits.one_dof_only:
        q[:] = robot.integrate(q, work.nv_work[STOP_DQ], 1.0)
        _place_on_limits(q, limits.limited_iq, work.stops_int[STOP_IDX],
                         work.stops_float[STOP_TARGET], k)
    status = _enforce_velocities(v, robot.mass_matrix(q, out=work.mass), work.stops_int,
                                 work.stops_float, k, work.chol, work.minv, work.nv_work)
    check_stop_status(status)
    return k


def check_stop_status(status):
    """ValueError for a failed stop kernel (kernels/stops.py): -2 M not positive definite, other
    negative codes a singular block of M^-1 on the stopped joints."""
    if status == -2:
        raise ValueError("the mass matrix is not positive definite")
    if status < 0:
        raise ValueError("the joints on their position stops have a singular inverse "
                         "mass matrix block")


def drive_arrays(robot, drives, n_steps, limits, batch=None):
    """Validate robot.rollout's `drives` dict and return (drive_int (DRIVE_INT_ROWS, nd),
    drive_float (DRIVE_FLOAT_ROWS, nd), position (T, nd) or (N, T, nd), velocity (same shape)):
    the arrays JointDrives(robot, joints, kp, kd, lower, upper).kernel_arrays() holds after
    command_position (every drive in POSITION mode; with "model": "pd" after
    set_model("pd", kp, kd), kp and kd then the servo's N m/rad and N m s/rad); position and velocity are the per-step
    references (m or rad, m/s or rad/s), position clipped to the limits as command_position clips
    them (limits: a PlantLimits or None). batch: N for a batch (leading N axis), else None."""
    if not isinstance(drives, dict):
        raise ValueError(f"drives must be a dict with keys {DRIVE_KEYS}, got "
                         f"{type(drives).__name__}")
    unknown = sorted(set(drives) - set(DRIVE_KEYS))
    if unknown:
        raise ValueError(f"drives: unknown keys {unknown} (allowed: {DRIVE_KEYS})")
    dofs = scalar_dofs(robot)
    joints = drives.get("joints")
    joints = list(dofs) if joints is None else [str(j) for j in joints]
    bad = [j for j in joints if j not in dofs]
    if bad:
        raise ValueError(f"drives['joints']: {bad} are not 1-dof joints of the robot (nor "
                         "cylindrical / universal dofs '<joint>/<component>')")
    if len(set(joints)) != len(joints):
        raise ValueError(f"drives['joints'] names a joint twice: {joints}")
    nd = len(joints)
    drive_int = np.zeros((DRIVE_INT_ROWS, nd), dtype=np.int64)
    drive_float = np.zeros((DRIVE_FLOAT_ROWS, nd))
    drive_int[DRIVE_IV] = [dofs[j][1] for j in joints]
    drive_int[DRIVE_IQ] = [dofs[j][0] for j in joints]
    drive_int[DRIVE_MODE] = POSITION
    model = drives.get("model", "ideal")
    if model not in DRIVE_MODELS:
        raise ValueError(f"drives['model'] must be one of {DRIVE_MODELS}, got {model!r}")
    if model == "pd":   # JointDrives.set_model("pd", kp, kd): the PD rows and the PD law
        for key in ("kp", "kd"):
            if key not in drives:
                raise ValueError(f"drives['{key}'] is required with model 'pd' (the servo's "
                                 f"gains, {'N m/rad' if key == 'kp' else 'N m s/rad'})")
        drive_int[DRIVE_LAW] = PD
        drive_float[DRIVE_KP] = DEFAULT_KP
        drive_float[DRIVE_KD] = DEFAULT_KD
        drive_float[DRIVE_PD_KP] = _gain(drives["kp"], nd, "drives['kp']")
        drive_float[DRIVE_PD_KD] = _gain(drives["kd"], nd, "drives['kd']")
    else:
        drive_float[DRIVE_KP] = _gain(drives.get("kp", DEFAULT_KP), nd, "drives['kp']")
        drive_float[DRIVE_KD] = _gain(drives.get("kd", DEFAULT_KD), nd, "drives['kd']")
    lo = np.full(nd, -np.inf) if limits is None else limits.lower[drive_int[DRIVE_IV]]
    hi = np.full(nd, np.inf) if limits is None else limits.upper[drive_int[DRIVE_IV]]
    drive_float[DRIVE_LOWER] = lo
    drive_float[DRIVE_UPPER] = hi
    shape = (n_steps, nd) if batch is None else (batch, n_steps, nd)
    if "position" not in drives:
        raise ValueError(f"drives['position'] is required: {shape} position references")
    position = _references(drives["position"], shape, "drives['position']")
    position = np.clip(position, lo, hi)   # as JointDrives.command_position
    velocity = drives.get("velocity")
    velocity = np.zeros(shape) if velocity is None else \
        _references(velocity, shape, "drives['velocity']")
    drive_float[DRIVE_Q_REF] = 0.0
    drive_float[DRIVE_VELOCITY_CMD] = 0.0
    return drive_int, drive_float, position, velocity


def _gain(value, n, name):
    """One number or one per drive -> (n,) finite, >= 0 (as drives.gain_vector)."""
    try:
        values = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a list of numbers, got {value!r}") from None
    if values.ndim != 1:
        raise ValueError(f"{name} must be a number or a list of numbers")
    if len(values) == 1:
        values = np.full(n, values[0])
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values; give one, or one per driven "
                         f"joint ({n})")
    if not (np.isfinite(values).all() and (values >= 0.0).all()):
        raise ValueError(f"{name} must be finite and >= 0, got {values.tolist()}")
    return values


def _references(value, shape, name):
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of shape {shape}") from None
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or inf")
    return np.ascontiguousarray(array)
