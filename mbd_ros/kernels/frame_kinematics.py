"""Kinematics of one link frame: spatial velocity, classical acceleration and Jacobian.

Conventions (as Pinocchio's Motion): a spatial motion is [linear (3); angular (3)]. The result
is expressed in one of three frames (code `frame`):

- FRAME_WORLD (Pinocchio WORLD): root-frame axes, about the root origin (the linear part is the
  velocity of the body-fixed point that is at the root origin);
- FRAME_LOCAL (LOCAL): the link's axes, about the link origin;
- FRAME_LOCAL_WORLD_ALIGNED (LOCAL_WORLD_ALIGNED): root-frame axes, about the link origin.

Method: the link's body b hangs from the root through the chain of its ancestors. Bodies are
numbered depth first (parent < child, the subtree of i is [i, SUBTREE_END_i)), so i is on the
chain iff i <= b < SUBTREE_END_i, and each chain body's parent is the previous chain body. One
pass over 1..b, down the chain, composes the root-frame poses ^0T_i = ^0T_p ^pT_i (carried in
registers, not in the workspace) and maps each joint's motion subspace to the root frame at the
root origin,

    S^0_i = ^0X_i S_i:   w = R_i w_S,   v = R_i v_S + p_i x (R_i w_S)       [RBDA eq. 2.24]

In root coordinates the velocities and accelerations simply add along the chain
(Featherstone, RBDA §7.3 / eqs. 7.34-7.35 in ground coordinates, S_i constant in the body frame):

    v_i = v_p + S^0_i qd_i,      a_i = a_p + S^0_i qdd_i + v_i x (S^0_i qd_i)

and the Jacobian's column block of joint i is S^0_i (the world Jacobian, Pinocchio's
computeJointJacobians); columns of joints off the chain are zero. A world motion m0 = [v0; w] is
then moved to the link frame (pose R_l, p_l in the root frame) with a cross product and a
rotation (no 6 x 6 transform):

    local_world_aligned: [v0 + w x p_l; w],      local: R_l^T [v0 + w x p_l; w].

Classical acceleration (Pinocchio's getFrameClassicalAcceleration): the spatial acceleration and
velocity in the requested frame, then a_lin + w x v_lin. In "local_world_aligned" and "local" it
is the second time derivative of the link origin's position (and the angular acceleration), in
root resp. link axes; in "world" the classical acceleration of the body point at the root origin.

Gravity is not included (these are kinematic quantities). The workspace `work` has
FRAME_WORK_WIDTH columns: the tree's layout (ROT and TRANSFORM_SCRATCH of the non-revolute joints'
poses here; the centroidal kernels use more) plus the constant link table (LINK_TABLE_BODY,
LINK_TABLE_POSE) in its last columns, and max(nb + 1, n_links) rows plus those of cos and sin of
q for centroidal.py (`frame_workspace`). Entry points: lazily compiled with one explicit
signature each (entry.py's entry_point: @njit(signature, cache=True) compiled at first use);
the Jacobian and the velocity with fastmath={"contract"} only (multiply-adds fused, ~6% on ur5;
no other IEEE relaxation: the NaN and inf checks still hold).
"""
import math

import numpy as np
from numba import njit, types

from .entry import entry_point
from .kinematics import joint_pose, state_status
from .pose_tuples import (IDENTITY_POSE, compose, free_relative_pose, pose_at,
                          revolute_relative_pose, subspace_column)
from .output_checks import STATUS_ALIASED, overlaps

from ..model.layout import (IDX_Q, IDX_V, JOINT_FREE, JOINT_NV_COL, JOINT_REVOLUTE, JOINT_TYPE,
                            LINK_BODY, LINK_ROT, ROT, STATUS_OK, STATUS_SHAPE_OUT, SUBTREE_END,
                            TRANSFORM_SCRATCH, WORK_WIDTH)

FRAME_WORLD = 0
FRAME_LOCAL = 1
FRAME_LOCAL_WORLD_ALIGNED = 2

# ---- workspace columns beyond the tree's layout ----
# constant link table, row = link index (the workspace has max(nb + 1, n_links) rows), written
# once by `frame_workspace`: fewer kernel arguments (numba's dispatch costs ~0.06-0.1 us each)
LINK_TABLE_BODY = WORK_WIDTH        # 1: the link's body (as a float)
LINK_TABLE_POSE = WORK_WIDTH + 1    # 12: the link frame's pose in its body frame
FRAME_WORK_WIDTH = WORK_WIDTH + 13
COS_SIN = TRANSFORM_SCRATCH         # 2: cos and sin of a revolute chain joint's angle (its
                                    # pose scratch, unused for revolute joints)

_f8 = types.float64
_i8 = types.int64
_INT2 = types.Array(_i8, 2, "C")
_FLOAT2 = types.Array(_f8, 2, "C")
_VECTOR = types.Array(_f8, 1, "C")
# (body_int, body_float, work, q, [v, [qdd]], link, frame, out)
JACOBIAN_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _i8, _i8, _FLOAT2)
VELOCITY_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _VECTOR, _i8, _i8, _VECTOR)
ACCELERATION_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _VECTOR, _VECTOR, _i8, _i8,
                             _VECTOR)


def frame_workspace(body_int, link_int, link_float, nq=0):
    """A new workspace (max(nb + 1, n_links) + cos_sin.rows_needed(nq, FRAME_WORK_WIDTH),
    FRAME_WORK_WIDTH) with the link table filled; its last rows take cos and sin of q
    (centroidal.py's pose pass; without them, nq = 0, that pass calls libm per joint)."""
    n_links = link_int.shape[0]
    trig_rows = 2 * ((nq + FRAME_WORK_WIDTH - 1) // FRAME_WORK_WIDTH)   # cos_sin.rows_needed
    work = np.zeros((max(body_int.shape[0], n_links) + trig_rows, FRAME_WORK_WIDTH))
    work[:n_links, LINK_TABLE_BODY] = link_int[:, LINK_BODY]
    work[:n_links, LINK_TABLE_POSE:LINK_TABLE_POSE + 12] = link_float[:, LINK_ROT:LINK_ROT + 12]
    return work


@njit(inline="always")
def vector_dims(body_int):
    nb = body_int.shape[0] - 1
    return body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0


# ---- the chain pass in registers ---------------------------------------------------------------
# The three link kernels walk the chain root -> b in index order: each chain body's parent is the
# previous chain body, so the running root-frame pose ^0T_p (and velocity, acceleration) is carried
# in local scalars (12-tuples) instead of being written to and re-read from the workspace (the
# stores made the compiler reload every operand: ~35 ns per body before, on ur5).

@njit(inline="always")
def chain_from(body_int, i, b):
    """The first body >= i on the chain root -> b (b + 1 if none): a body whose subtree ends at
    or before b is skipped with its whole subtree (depth-first numbering), so a pass visits the
    chain and the roots of the subtrees beside it, not every body up to b."""
    while i <= b and body_int[i, SUBTREE_END] <= b:
        i = body_int[i, SUBTREE_END]
    return i


@njit(inline="always")
def chain_cos_sin(body_int, q, work, b):
    """cos and sin of the chain's revolute angles into work[i, COS_SIN:+2], in a loop of their
    own: a libm call inside the pose pass spills the running pose (every vector register is
    caller-saved), and here the calls are independent of each other (~10 ns instead of ~20 ns
    per joint on ur5)."""
    i = chain_from(body_int, 1, b)
    while i <= b:
        if body_int[i, JOINT_TYPE] == JOINT_REVOLUTE:
            angle = q[body_int[i, IDX_Q]]
            work[i, COS_SIN] = math.cos(angle)
            work[i, COS_SIN + 1] = math.sin(angle)
        i = chain_from(body_int, i + 1, b)


@njit(inline="always")
def motion_in_frame(frame, link_pose, m):
    """A root-coordinate motion m = [v0; w] (6-tuple, about the root origin) in `frame` for the
    link at root-frame pose link_pose (module docstring): "world" m; "local_world_aligned"
    [v0 + w x p_l; w]; "local" R_l^T [v0 + w x p_l; w]."""
    vx, vy, vz, wx, wy, wz = m
    if frame != FRAME_WORLD:
        px = link_pose[9]
        py = link_pose[10]
        pz = link_pose[11]
        vx += wy * pz - wz * py
        vy += wz * px - wx * pz
        vz += wx * py - wy * px
        if frame == FRAME_LOCAL:
            r = link_pose
            return (r[0] * vx + r[3] * vy + r[6] * vz, r[1] * vx + r[4] * vy + r[7] * vz,
                    r[2] * vx + r[5] * vy + r[8] * vz, r[0] * wx + r[3] * wy + r[6] * wz,
                    r[1] * wx + r[4] * wy + r[7] * wz, r[2] * wx + r[5] * wy + r[8] * wz)
    return (vx, vy, vz, wx, wy, wz)


@entry_point(JACOBIAN_SIGNATURE, fastmath={"contract"})
def frame_jacobian(body_int, body_float, work, q, link, frame, out):
    """out (6, nv) = J with v_link = J v in `frame` (module docstring). Returns a status.
    One pass down the chain writes the root-frame columns S^0_i (Pinocchio's
    computeJointJacobians on the chain only); a pass over the chain's columns moves them to
    `frame` once the link's pose is known (none for "world")."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    nv = vector_dims(body_int)
    if out.shape[0] != 6 or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    for r in range(6):
        for c in range(nv):
            out[r, c] = 0.0
    b = int(work[link, LINK_TABLE_BODY])
    pose = IDENTITY_POSE
    chain_cos_sin(body_int, q, work, b)
    i = chain_from(body_int, 1, b)
    while i <= b:
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            relative = revolute_relative_pose(body_float, i, work[i, COS_SIN],
                                              work[i, COS_SIN + 1])
        elif joint_type == JOINT_FREE:
            relative = free_relative_pose(body_float, i, q, body_int[i, IDX_Q])
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
            relative = pose_at(work, i, ROT)
        pose = compose(pose, relative)      # ^0T_i = ^0T_p ^pT_i
        iv = body_int[i, IDX_V]
        for j in range(body_int[i, JOINT_NV_COL]):
            column = subspace_column(body_float, i, j, pose)
            for r in range(6):
                out[r, iv + j] = column[r]
        i = chain_from(body_int, i + 1, b)
    if frame != FRAME_WORLD:
        link_pose = compose(pose, pose_at(work, link, LINK_TABLE_POSE))
        i = chain_from(body_int, 1, b)
        while i <= b:
            iv = body_int[i, IDX_V]
            for c in range(iv, iv + body_int[i, JOINT_NV_COL]):
                moved = motion_in_frame(frame, link_pose, (out[0, c], out[1, c], out[2, c],
                                                           out[3, c], out[4, c], out[5, c]))
                for r in range(6):
                    out[r, c] = moved[r]
            i = chain_from(body_int, i + 1, b)
    return STATUS_OK


@entry_point(VELOCITY_SIGNATURE, fastmath={"contract"})
def frame_velocity(body_int, body_float, work, q, v, link, frame, out):
    """out (6,) = the link's spatial velocity J v in `frame`. Returns a status."""
    if overlaps(out, q) or overlaps(out, v):
        return STATUS_ALIASED
    status = state_status(body_int, q, v, v, True, False)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 6:
        return STATUS_SHAPE_OUT
    b = int(work[link, LINK_TABLE_BODY])
    pose = IDENTITY_POSE
    vel = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    chain_cos_sin(body_int, q, work, b)
    i = chain_from(body_int, 1, b)
    while i <= b:
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            relative = revolute_relative_pose(body_float, i, work[i, COS_SIN],
                                              work[i, COS_SIN + 1])
        elif joint_type == JOINT_FREE:
            relative = free_relative_pose(body_float, i, q, body_int[i, IDX_Q])
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
            relative = pose_at(work, i, ROT)
        pose = compose(pose, relative)
        iv = body_int[i, IDX_V]
        # v_i = v_p + S^0_i qd_i                                  [RBDA eq. 7.34, root coords]
        for j in range(body_int[i, JOINT_NV_COL]):
            column = subspace_column(body_float, i, j, pose)
            qd = v[iv + j]
            vel = (vel[0] + column[0] * qd, vel[1] + column[1] * qd, vel[2] + column[2] * qd,
                   vel[3] + column[3] * qd, vel[4] + column[4] * qd, vel[5] + column[5] * qd)
        i = chain_from(body_int, i + 1, b)
    link_pose = compose(pose, pose_at(work, link, LINK_TABLE_POSE))
    moved = motion_in_frame(frame, link_pose, vel)
    for r in range(6):
        out[r] = moved[r]
    return STATUS_OK


@entry_point(ACCELERATION_SIGNATURE)
def frame_classical_acceleration(body_int, body_float, work, q, v, qdd, link, frame, out):
    """out (6,) = the link's classical acceleration in `frame`: [a_lin + w x v_lin; alpha] of the
    spatial acceleration and velocity there (module docstring). Returns a status."""
    if overlaps(out, q) or overlaps(out, v) or overlaps(out, qdd):
        return STATUS_ALIASED
    status = state_status(body_int, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 6:
        return STATUS_SHAPE_OUT
    b = int(work[link, LINK_TABLE_BODY])
    pose = IDENTITY_POSE
    vel = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    chain_cos_sin(body_int, q, work, b)
    i = chain_from(body_int, 1, b)
    while i <= b:
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            relative = revolute_relative_pose(body_float, i, work[i, COS_SIN],
                                              work[i, COS_SIN + 1])
        elif joint_type == JOINT_FREE:
            relative = free_relative_pose(body_float, i, q, body_int[i, IDX_Q])
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
            relative = pose_at(work, i, ROT)
        pose = compose(pose, relative)
        iv = body_int[i, IDX_V]
        # v_i = v_p + S^0_i qd_i;  a_i = a_p + S^0_i qdd_i + v_i x (S^0_i qd_i)
        #                                         [RBDA eqs. 7.34-7.35 in root coordinates]
        sx = sy = sz = tx = ty = tz = 0.0          # S^0_i qd_i = [s; t]
        for j in range(body_int[i, JOINT_NV_COL]):
            column = subspace_column(body_float, i, j, pose)
            qd = v[iv + j]
            a = qdd[iv + j]
            sx += column[0] * qd
            sy += column[1] * qd
            sz += column[2] * qd
            tx += column[3] * qd
            ty += column[4] * qd
            tz += column[5] * qd
            acc = (acc[0] + column[0] * a, acc[1] + column[1] * a, acc[2] + column[2] * a,
                   acc[3] + column[3] * a, acc[4] + column[4] * a, acc[5] + column[5] * a)
        vx = vel[0] + sx
        vy = vel[1] + sy
        vz = vel[2] + sz
        wx = vel[3] + tx
        wy = vel[4] + ty
        wz = vel[5] + tz
        vel = (vx, vy, vz, wx, wy, wz)
        # [v; w] x [s; t] = [w x s + v x t; w x t]
        acc = (acc[0] + wy * sz - wz * sy + vy * tz - vz * ty,
               acc[1] + wz * sx - wx * sz + vz * tx - vx * tz,
               acc[2] + wx * sy - wy * sx + vx * ty - vy * tx,
               acc[3] + wy * tz - wz * ty,
               acc[4] + wz * tx - wx * tz,
               acc[5] + wx * ty - wy * tx)
        i = chain_from(body_int, i + 1, b)
    link_pose = compose(pose, pose_at(work, link, LINK_TABLE_POSE))
    vx, vy, vz, wx, wy, wz = motion_in_frame(frame, link_pose, vel)
    ax, ay, az, bx, by, bz = motion_in_frame(frame, link_pose, acc)
    out[0] = ax + wy * vz - wz * vy
    out[1] = ay + wz * vx - wx * vz
    out[2] = az + wx * vy - wy * vx
    out[3] = bx
    out[4] = by
    out[5] = bz
    return STATUS_OK
