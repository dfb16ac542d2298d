"""A sweep's scenario as the arrays of one rollout, built once per robot (per worker), shared by
every run: the reference, the drives' joints and gains, the open-loop torque, the initial state.

Reference (type swing, the reference publisher's trajectory, docs/nodes.md):
    q_ref = center + amplitude (1 - cos(w t)),  qd_ref = amplitude w sin(w t),
    qdd_ref = amplitude w^2 cos(w t),  w = 2 pi frequency_hz,
at t_k = k dt, k = 0 .. steps (row k of the rollout). The drives take row k's q_ref and qd_ref
as their command over step k (a zero-order hold, as the Plant's drives hold their commands).

Torque (T, nv), held over each step: zero; `constant` (one value per dof); or
`inverse_dynamics`: tau_k = ID(q_ref(t_k), qd_ref(t_k), qdd_ref(t_k)) of the sweep's nominal
robot (the files as written, no variation): the open-loop feed-forward of a controller whose
model is the nominal one, so that a varied model shows as a tracking error.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..robot.joint_map import scalar_dofs


class ScenarioError(ValueError):
    """The scenario does not fit the robot (names the scenario key and the joint)."""


@dataclass
class ScenarioArrays:
    """t (steps + 1,) s; ref_joints (names), ref_iq (nr,) their q indices, ref_position,
    ref_velocity (steps + 1, nr); drive_joints (names) and their kp, kd (nd,); tau (steps, nv);
    q0 (nq,), v0 (nv,) the initial state before a run's own changes; effort_clip: whether the
    drives' torques are clipped to the URDF limits (scenario.limits)."""
    t: np.ndarray
    ref_joints: list
    ref_iq: np.ndarray
    ref_position: np.ndarray | None
    ref_velocity: np.ndarray | None
    drive_joints: list | None
    kp: np.ndarray | None
    kd: np.ndarray | None
    tau: np.ndarray
    q0: np.ndarray
    v0: np.ndarray


def per_joint(values, n, what):
    """One value or one per joint -> (n,) array; ScenarioError naming `what` otherwise."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return np.full(n, float(values[0]))
    if values.size != n:
        raise ScenarioError(f"{what}: {values.size} values for {n} joints (give one, or one "
                            "per joint)")
    return values.copy()


def swing(center, amplitude, frequency_hz, t):
    """(q_ref, qd_ref, qdd_ref), each (len(t), nr): the swing reference (module docstring) of
    the (nr,) center (rad or m), amplitude and frequency_hz (Hz) at the times t (s)."""
    omega = 2.0 * np.pi * np.asarray(frequency_hz, dtype=float)
    wt = np.outer(t, omega)
    cos, sin = np.cos(wt), np.sin(wt)
    return center + amplitude * (1.0 - cos), amplitude * omega * sin, amplitude * omega ** 2 * cos


def scenario_arrays(robot, scenario):
    """ScenarioArrays of `scenario` (spec.Scenario) on `robot` (the nominal one). Raises
    ScenarioError naming the scenario key and the joint when names or sizes do not fit."""
    steps, dt = scenario.steps, scenario.dt
    t = np.arange(steps + 1) * dt
    dofs = scalar_dofs(robot)

    def dof_names(names, what):
        names = list(names) or list(dofs)
        unknown = [n for n in names if n not in dofs]
        if unknown:
            raise ScenarioError(f"{what}: {unknown[:5]} are not 1-dof joints of the robot "
                                f"(they are {list(dofs)[:10]})")
        if len(set(names)) != len(names):
            raise ScenarioError(f"{what}: a joint is named twice")
        return names

    drive_joints = kp = kd = None
    if scenario.drive_joints is not None:
        drive_joints = dof_names(scenario.drive_joints, "scenario.drives.joints")
        kp = per_joint(scenario.drive_kp, len(drive_joints), "scenario.drives.kp")
        kd = per_joint(scenario.drive_kd, len(drive_joints), "scenario.drives.kd")
    ref_joints, ref_iq, ref_q, ref_v, ref_a = [], np.zeros(0, dtype=np.int64), None, None, None
    reference = scenario.reference
    if reference is not None:
        default = reference["joints"] or (drive_joints or [])
        ref_joints = dof_names(default, "scenario.reference.joints")
        if drive_joints is not None and ref_joints != drive_joints:
            raise ScenarioError("scenario.reference.joints: the drives track the reference, "
                                "so both name the same joints in the same order")
        n = len(ref_joints)
        center, amplitude, frequency = (per_joint(reference[key], n, f"scenario.reference.{key}")
                                        for key in ("center", "amplitude", "frequency_hz"))
        ref_iq = np.array([dofs[name][0] for name in ref_joints], dtype=np.int64)
        ref_q, ref_v, ref_a = swing(center, amplitude, frequency, t)
    q0 = np.asarray(robot.neutral(), dtype=float).copy()
    if ref_q is not None:
        q0[ref_iq] = ref_q[0]
    if scenario.initial_positions is not None:
        q0 = np.asarray(scenario.initial_positions, dtype=float)
        if q0.shape != (robot.nq,):
            raise ScenarioError(f"scenario.initial_positions: {q0.size} values, the robot has "
                                f"nq = {robot.nq}")
    v0 = np.zeros(robot.nv)
    if scenario.initial_velocities is not None:
        v0 = np.asarray(scenario.initial_velocities, dtype=float)
        if v0.shape != (robot.nv,):
            raise ScenarioError(f"scenario.initial_velocities: {v0.size} values, the robot has "
                                f"nv = {robot.nv}")
    tau = np.zeros((steps, robot.nv))
    torque = scenario.torque
    if torque is not None and torque["type"] == "constant":
        tau[:] = per_joint(torque["values"], robot.nv, "scenario.torque.values")
    elif torque is not None and torque["type"] == "inverse_dynamics":
        # the nominal model's ID along the reference, on the reference joints; the others at
        # their initial position, at rest
        q, v, a = q0.copy(), np.zeros(robot.nv), np.zeros(robot.nv)
        iv = np.array([dofs[name][1] for name in ref_joints], dtype=np.int64)
        for k in range(steps):
            q[ref_iq], v[iv], a[iv] = ref_q[k], ref_v[k], ref_a[k]
            tau[k] = robot.inverse_dynamics(q, v, a)
    return ScenarioArrays(t, ref_joints, ref_iq, ref_q, ref_v, drive_joints, kp, kd, tau, q0, v0)
