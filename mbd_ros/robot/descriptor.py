"""The body-coordinate (descriptor) formalism of closed-loop forward dynamics (docs/theory.md §6):
every tree joint and every cut becomes a constraint between two bodies' accelerations, solved in
one dense KKT system (minimum-norm). An independent check of the recursive formalism on rigid
trees (robot.forward_dynamics(..., method="descriptor")); O((6 nb + b)^3).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..model import layout as L
from ..kernels.closed_loop import cut_rows as _cut_rows
from ..kernels.closed_loop import world_poses as _world_poses


def descriptor_forward_dynamics(robot, q, v, tau):
    """(qdd (nv,), joint wrenches of the movable joints (nb, 6), loop multipliers (b,)) of the
    rigid closed-loop `robot` for the total generalized forces tau, with the loads of the call in
    its tree's loaded workspace. Caller holds the robot's lock; inputs validated."""
    tree = robot._tree
    loops = robot._constraints.loops
    # kinematics (poses, velocities, c_i) from one RNEA pass with qdd = 0 (the loads stay)
    tree.inverse_dynamics(q, v, np.zeros(tree.nv), tree.scratch)
    _world_poses(tree.body_int, tree.work)
    _cut_rows(loops.cut_int, loops.cut_float, tree.work, loops.loop_float)
    nb = robot.model.n_bodies
    work, bi, bf = tree.work, tree.body_int, tree.body_float
    gravity = bf[0, L.GRAVITY:L.GRAVITY + 3]
    k = [int(bi[i, L.JOINT_NV_COL]) for i in range(nb + 1)]
    n_lam = [6 - k[i] for i in range(nb + 1)]
    lam_start = np.concatenate([[0], np.cumsum([n_lam[i] for i in range(1, nb + 1)])]).astype(int)
    n_joint_lam = int(lam_start[-1])
    b = loops.n_constraints
    size = 6 * nb + n_joint_lam + b
    kkt = np.zeros((size, size))
    rhs = np.zeros(size)
    acc = lambda i: slice(6 * (i - 1), 6 * i)  # noqa: E731
    complements = {}
    drive = tau - robot.damping_forces(v) if robot.model.passive_forces else tau
    for i in range(1, nb + 1):
        parent = bi[i, L.PARENT]
        rot = work[i, L.ROT:L.ROT + 9].reshape(3, 3)
        pos = work[i, L.POS:L.POS + 3]
        x = np.zeros((6, 6))  # motion transform parent -> body
        x[:3, :3] = rot.T
        x[:3, 3:] = -rot.T @ np.array([[0, -pos[2], pos[1]], [pos[2], 0, -pos[0]], [-pos[1], pos[0], 0]])
        x[3:, 3:] = rot.T
        s_mat = bf[i, L.MOTION_SUBSPACE:L.MOTION_SUBSPACE + 6 * k[i]].reshape(k[i], 6).T
        complement = scipy.linalg.null_space(s_mat.T)          # T_i: T^T S = 0
        complements[i] = (complement, s_mat, x)
        inertia = bf[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36].reshape(6, 6)
        vel = work[i, L.VEL:L.VEL + 6]
        momentum = inertia @ vel
        gyro = np.concatenate([np.cross(vel[3:], momentum[:3]),
                               np.cross(vel[3:], momentum[3:]) + np.cross(vel[:3], momentum[:3])])
        # M_i a_i - T_i lam_i - W_i tau_i + sum_c B_c^T (T_c lam_c + W_c tau_c) = f^ext - v x* M v
        kkt[acc(i), acc(i)] = inertia
        rhs[acc(i)] += work[i, L.FEXT:L.FEXT + 6] - gyro
        lam_cols = slice(6 * nb + lam_start[i - 1], 6 * nb + lam_start[i])
        kkt[acc(i), lam_cols] = -complement
        iv = bi[i, L.IDX_V]
        drive_wrench = s_mat @ np.linalg.solve(s_mat.T @ s_mat, drive[iv:iv + k[i]])
        rhs[acc(i)] += drive_wrench
        if parent > 0:
            kkt[acc(parent), lam_cols] += x.T @ complement
            rhs[acc(parent)] -= x.T @ drive_wrench
        # T_i^T (a_i - B_pi a_p - c_i) = 0, with a_0 = -g (gravity as a base acceleration)
        kkt[lam_cols, acc(i)] = -complement.T
        if parent > 0:
            kkt[lam_cols, acc(parent)] = complement.T @ x
            rhs[lam_cols] = complement.T @ work[i, L.BIAS_ACC:L.BIAS_ACC + 6]
        else:
            base = np.concatenate([-gravity, np.zeros(3)])
            rhs[lam_cols] = complement.T @ (work[i, L.BIAS_ACC:L.BIAS_ACC + 6] + x @ base)
        rhs[lam_cols] *= -1.0
        # now: -T^T a_i + T^T B a_p = -T^T c_i (- T^T B a_0)
    # cut rows: M a - G^T lam_s = ...,  -G_a a_a - G_b a_b = gamma''_s (+ Baumgarte)
    alpha, beta = robot.baumgarte
    lf = loops.loop_float
    for s in range(len(loops.specs)):
        a_body, b_body = loops.cut_int[s, L.CUT_BODY_A], loops.cut_int[s, L.CUT_BODY_B]
        for r in range(loops.rows[s].start, loops.rows[s].stop):
            col = 6 * nb + n_joint_lam + r
            ja = lf[r, L.LOOP_JAC_A:L.LOOP_JAC_A + 6]
            jb = lf[r, L.LOOP_JAC_B:L.LOOP_JAC_B + 6]
            vel_term = 0.0
            acc_base = 0.0
            for body, jrow in ((a_body, ja), (b_body, jb)):
                vel_term += jrow @ work[body, L.VEL:L.VEL + 6]
                if body > 0:
                    kkt[acc(body), col] -= jrow
                    kkt[col, acc(body)] -= jrow
                else:
                    acc_base += jrow @ np.concatenate([-gravity, np.zeros(3)])
            rhs[col] = (lf[r, L.LOOP_BIAS] + acc_base + 2 * alpha * vel_term
                        + beta * beta * lf[r, L.LOOP_RESIDUAL])
    if not (np.all(np.isfinite(kkt)) and np.all(np.isfinite(rhs))):
        raise ValueError("forward_dynamics (descriptor): the system is not finite (overflow "
                         "for absurd velocities or forces?)")
    solution, *_ = np.linalg.lstsq(kkt, rhs, rcond=None)
    qdd = np.empty(robot.nv)
    wrenches = np.zeros((nb, 6))
    body_acc = solution[:6 * nb].reshape(nb, 6)
    for i in range(1, nb + 1):
        complement, s_mat, x = complements[i]
        parent = bi[i, L.PARENT]
        parent_acc = body_acc[parent - 1] if parent > 0 else np.concatenate([-gravity, np.zeros(3)])
        relative = body_acc[i - 1] - x @ parent_acc - work[i, L.BIAS_ACC:L.BIAS_ACC + 6]
        iv = bi[i, L.IDX_V]
        qdd[iv:iv + k[i]] = np.linalg.lstsq(s_mat, relative, rcond=None)[0]
        lam_i = solution[6 * nb + lam_start[i - 1]:6 * nb + lam_start[i]]
        wrenches[i - 1] = complement @ lam_i + s_mat @ np.linalg.solve(
            s_mat.T @ s_mat, drive[iv:iv + k[i]])
    return qdd, wrenches, solution[6 * nb + n_joint_lam:]
