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

from ..kernels.drive_rows import drive_torque_rows
from ..robot.joint_map import scalar_dofs
from ..simulation.drives import JointDrives
from ..simulation.limits import VELOCITY_TIME_CONSTANT, JointLimits

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
    """The drive torques the rollout applied, recomputed for all rows at once on the run's
    robot: M(q) per row (the robot's C-level entry), b(q, v) = ID(q, v, 0) in one batch call,
    then kernels/drive_rows.py (the Plant's drive and limit kernels, row by row). Built once
    per robot context (the arrays preallocated for the scenario's steps); the robot of each
    run is passed to torques()."""

    def __init__(self, robot, arrays, limits, steps, model="ideal"):
        self.model = model     # the drives' model: "ideal" or "pd" (JointDrives.set_model)
        self.limits = JointLimits(robot) if limits else None
        lower = upper = None
        if self.limits is not None:
            lower, upper = self.limits.lower, self.limits.upper
        n = len(arrays.drive_joints)
        self.drives = JointDrives(robot, arrays.drive_joints, 400.0, 40.0, lower, upper)
        self.drives.command_position(np.clip(arrays.ref_position[0], self.drives.lower,
                                             self.drives.upper), velocities=np.zeros(n))
        # the drives' position targets as command_position clips them
        self.targets = np.ascontiguousarray(np.clip(arrays.ref_position, self.drives.lower,
                                                    self.drives.upper))
        self.velocities = np.ascontiguousarray(arrays.ref_velocity)
        nv = robot.nv
        self.m_rows = np.zeros((steps, nv, nv))
        self.bias_rows = np.zeros((steps, nv))
        self.zero_rows = np.zeros((steps, nv))
        self.lower = np.zeros((nv, nv))
        self.scratch = np.zeros((nv, nv))
        self.m_eff = np.zeros(nv)
        self.m_stable = np.zeros(nv)
        self.zero = np.zeros(nv)
        if self.limits is not None:
            self.velocity = np.ascontiguousarray(self.limits.velocity)
            self.effort = np.ascontiguousarray(self.limits.effort)
        else:
            self.velocity = self.effort = np.full(nv, np.inf)
        self.vel_idx = np.flatnonzero(np.isfinite(self.velocity)).astype(np.int64)

    def torques(self, robot, Q, V, kp, kd, dt, out):
        """Drive torques (K, nv) into out at the rows 0..K-1 of Q, V (the state at the start
        of each step), commanded with the reference rows 0..K-1, gains kp, kd (nd,)."""
        K = out.shape[0]
        if not K:
            return out
        drives = self.drives
        if self.model == "pd":
            drives.set_model("pd", pd_kp=kp, pd_kd=kd)
        else:
            drives.set_gains(kp, kd)
        m_rows, bias_rows = self.m_rows[:K], self.bias_rows[:K]
        for k in range(K):
            robot.mass_matrix(Q[k], out=m_rows[k])
        if robot.closure_names:   # the Plant's compensation (plant.py _compensation)
            for k in range(K):
                try:
                    qdd = robot.project_acceleration(Q[k], V[k], self.zero)
                    bias_rows[k] = robot.inverse_dynamics(Q[k], V[k], qdd)
                except ValueError:
                    bias_rows[k] = 0.0
        else:
            robot.inverse_dynamics_batch(Q[:K], V[:K], self.zero_rows[:K], out=bias_rows)
        drive_int, drive_float = drives.kernel_arrays()
        bad = drive_torque_rows(drive_int, drive_float, np.ascontiguousarray(Q[:K]),
                                np.ascontiguousarray(V[:K]), m_rows, bias_rows,
                                self.targets[:K], self.velocities[:K], float(dt),
                                self.limits is not None, self.vel_idx, self.velocity,
                                self.effort, 1.0 / VELOCITY_TIME_CONSTANT, self.lower,
                                self.scratch, self.m_eff, self.m_stable, out)
        if bad:
            raise ValueError(f"row {bad - 1}: the mass matrix is not positive definite")
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


def run_metrics(metrics, robot, arrays, scenario, Q, V, status, kp=None, kd=None,
                recorder=None):
    """{column: value} of the metrics of one run (module docstring). Q, V: the rollout's rows
    (finite: a diverged rollout's rows up to its last sane state); status: its status; kp, kd
    the run's drive gains; recorder: a TorqueRecorder of the scenario (made here if None)."""
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
                recorder = recorder or TorqueRecorder(robot, arrays, scenario.limits,
                                                      scenario.steps, scenario.drive_model)
                recorder.torques(robot, Q, V, kp, kd, scenario.dt, drive_tau)
            tau += drive_tau
            # no step: no torque was applied (NaN, as the metrics of an error row)
            out["peak_torque"] = float(np.abs(tau).max()) if K else math.nan
            dofs = scalar_dofs(robot)
            for joint in arrays.drive_joints or []:
                iv = dofs[joint][1]
                out[f"peak_torque:{joint}"] = float(np.abs(tau[:, iv]).max()) if K else math.nan
        elif metric == "limit_hits":
            out["limit_hits"] = position_limit_hits(robot, Q)
        elif metric == "diverged":
            out["diverged"] = status != "ok"
        elif metric == "final_state":
            q_names, v_names = final_state_names(robot)
            out.update(zip(q_names, Q[-1].tolist()))
            out.update(zip(v_names, V[-1].tolist()))
    return out
