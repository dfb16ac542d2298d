"""The metrics of one run, from its rollout (Q (K + 1, nq), V (K + 1, nv): K = the steps done,
fewer than the scenario's when it diverged) and the scenario's arrays. Each is a column of
the results (docs/sweeps.md):

- tracking_rms, tracking_max: over the reference joints and the rows 0..K, the RMS and the
  largest |q - q_ref(t_k)| (rad or m);
- peak_torque: the largest |tau| over every dof and step of the torque the robot received:
  the drive torques (those of the Plant's drives, recomputed at each row's state with the same
  kernel: plant.py evaluate()) plus the open-loop torque; peak_torque:<joint> the same per
  driven joint;
- limit_hits: the steps (rows 1..K) that ended with a position-limited joint on or beyond a
  limit (within LIMIT_TOLERANCE), i.e. on a URDF stop;
- diverged: the rollout's status is not "ok";
- final_state: q_final:<dof>, v_final:<dof> of the last row (the last sane state of a diverged
  run); multi-dof joints (free, spherical) as q_final[<index>], v_final[<index>].
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.plant import effective_inertias
from ..robot.joint_map import scalar_dofs
from ..simulation.drives import POSITION, JointDrives
from ..simulation.limits import JointLimits

LIMIT_TOLERANCE = 1e-9   # rad or m: the stops put a joint exactly on its limit (round-off)


def final_state_names(robot):
    """(q names (nq,), v names (nv,)) of the final_state columns."""
    q_names = [f"q_final[{i}]" for i in range(robot.nq)]
    v_names = [f"v_final[{i}]" for i in range(robot.nv)]
    for name, (iq, iv) in scalar_dofs(robot).items():
        q_names[iq] = f"q_final:{name}"
        v_names[iv] = f"v_final:{name}"
    return q_names, v_names


def metric_columns(metrics, robot, arrays):
    """The names of the metric columns of a sweep, in order."""
    columns = []
    for metric in metrics:
        if metric == "peak_torque":
            columns.append("peak_torque")
            columns += [f"peak_torque:{j}" for j in (arrays.drive_joints or [])]
        elif metric == "final_state":
            q_names, v_names = final_state_names(robot)
            columns += q_names + v_names
        else:
            columns.append(metric)
    return columns


def nan_metrics(columns):
    """Every metric column NaN (a run that did not run); diverged is True."""
    return {c: (True if c == "diverged" else math.nan) for c in columns}


class TorqueRecorder:
    """The drive torques the rollout applied, recomputed row by row on the run's robot with the
    Plant's drives (JointDrives in POSITION mode, the same kernel, its preallocated arrays) and,
    with limits, the Plant's JointLimits saturation."""

    def __init__(self, robot, arrays, kp, kd, limits):
        self.robot = robot
        self.limits = JointLimits(robot) if limits else None
        lower = upper = None
        if self.limits is not None:
            lower, upper = self.limits.lower, self.limits.upper
        self.drives = JointDrives(robot, arrays.drive_joints, kp, kd, lower, upper)
        n = len(arrays.drive_joints)
        self.drives.command_position(np.clip(arrays.ref_position[0], self.drives.lower,
                                             self.drives.upper), velocities=np.zeros(n))
        assert (self.drives.mode == POSITION).all()
        nv = robot.nv
        self.m = np.zeros((nv, nv))
        self.lower = np.zeros((nv, nv))
        self.scratch = np.zeros((nv, nv))
        self.m_eff = np.zeros(nv)
        self.zero = np.zeros(nv)
        self.bias = np.zeros(nv)
        self.closed = bool(robot.closure_names)

    def torques(self, Q, V, ref_position, ref_velocity, dt, out):
        """Drive torques (K, nv) into out at the rows 0..K-1 of Q, V, commanded with the
        reference rows 0..K-1 (positions clipped to the limits, as command_position does)."""
        robot, drives = self.robot, self.drives
        targets = np.clip(ref_position, drives.lower, drives.upper)
        K = out.shape[0]
        bias_rows = None
        if not self.closed and K:
            bias_rows = robot.inverse_dynamics_batch(Q[:K], V[:K], np.zeros((K, robot.nv)))
        for k in range(K):
            q, v = Q[k], V[k]
            drives.q_ref[:] = targets[k]
            drives.velocity_cmd[:] = ref_velocity[k]
            m = robot.mass_matrix(q, out=self.m)
            if effective_inertias(m, self.lower, self.scratch, self.m_eff):
                raise ValueError(f"row {k}: the mass matrix is not positive definite")
            if bias_rows is not None:
                bias = bias_rows[k]
            else:   # closed loops: the Plant's compensation (plant.py _compensation)
                try:
                    qdd = robot.project_acceleration(q, v, self.zero)
                    self.bias[:] = robot.inverse_dynamics(q, v, qdd)
                except ValueError:
                    self.bias[:] = 0.0
                bias = self.bias
            if self.limits is None:
                drives.torques(q, v, dt, out=out[k], m=m, m_eff=self.m_eff, bias=bias)
            else:
                self.limits.saturated_drive_torques(drives, q, v, dt, out[k], m, self.m_eff,
                                                    bias)
        return out


def position_limit_hits(robot, Q):
    """Rows 1.. of Q (K + 1, nq) with a position-limited 1-dof joint on or beyond a limit."""
    limits = JointLimits(robot, velocity=False, effort=False)
    limited = np.asarray(limits.position_limited, dtype=np.int64)
    if Q.shape[0] < 2 or not limited.size:
        return 0
    iq_of_iv = {iv: iq for _, (iq, iv) in scalar_dofs(robot).items()}
    iq = np.array([iq_of_iv[int(i)] for i in limited], dtype=np.int64)
    q = Q[1:, iq]
    lower, upper = limits.lower[limited], limits.upper[limited]
    on_stop = (q <= lower + LIMIT_TOLERANCE) | (q >= upper - LIMIT_TOLERANCE)
    return int(on_stop.any(axis=1).sum())


def run_metrics(metrics, robot, arrays, scenario, Q, V, status, kp=None, kd=None):
    """{column: value} of the metrics of one run (module docstring). Q, V: the rollout's rows
    (finite: a diverged rollout's rows up to its last sane state); status: its status."""
    K = Q.shape[0] - 1
    out = {}
    for metric in metrics:
        if metric in ("tracking_rms", "tracking_max"):
            error = Q[:, arrays.ref_iq] - arrays.ref_position[:K + 1]
            out[metric] = float(np.sqrt(np.mean(error ** 2)) if metric == "tracking_rms"
                                else np.abs(error).max())
        elif metric == "peak_torque":
            tau = np.array(arrays.tau[:K])
            drive_tau = np.zeros_like(tau)
            if arrays.drive_joints is not None and K:
                recorder = TorqueRecorder(robot, arrays, kp, kd, scenario.limits)
                recorder.torques(Q, V, arrays.ref_position[:K], arrays.ref_velocity[:K],
                                 scenario.dt, drive_tau)
            tau += drive_tau
            out["peak_torque"] = float(np.abs(tau).max()) if K else 0.0
            dofs = scalar_dofs(robot)
            for joint in arrays.drive_joints or []:
                iv = dofs[joint][1]
                out[f"peak_torque:{joint}"] = float(np.abs(tau[:, iv]).max()) if K else 0.0
        elif metric == "limit_hits":
            out["limit_hits"] = position_limit_hits(robot, Q)
        elif metric == "diverged":
            out["diverged"] = status != "ok"
        elif metric == "final_state":
            q_names, v_names = final_state_names(robot)
            out.update(zip(q_names, Q[-1].tolist()))
            out.update(zip(v_names, V[-1].tolist()))
    return out
