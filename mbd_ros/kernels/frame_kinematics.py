"""Kinematics of one link frame: spatial velocity, classical acceleration and Jacobian.

Conventions (as Pinocchio's Motion): a spatial motion is [linear (3); angular (3)]. The result
is expressed in one of three frames (code `frame`):

- FRAME_WORLD (Pinocchio WORLD): root-frame axes, about the root origin (the linear part is the
  velocity of the body-fixed point that is at the root origin);
- FRAME_LOCAL (LOCAL): the link's axes, about the link origin;
- FRAME_LOCAL_WORLD_ALIGNED (LOCAL_WORLD_ALIGNED): root-frame axes, about the link origin.

Method: the link's body b hangs from the root through the chain of its ancestors. Bodies are
numbered depth first (parent < child, the subtree of i is [i, SUBTREE_END_i)), so i is on the
chain iff i <= b < SUBTREE_END_i: one pass over 1..b, down the chain, composes the root-frame
poses ^0T_i and maps each joint's motion subspace to the root frame at the root origin,

    S^0_i = ^0X_i S_i:   w = R_i w_S,   v = R_i v_S + p_i x (R_i w_S)       [RBDA eq. 2.24]

In root coordinates the velocities and accelerations simply add along the chain
(Featherstone, RBDA §7.3 / eqs. 7.34-7.35 in ground coordinates, S_i constant in the body frame):

    v_i = v_p + S^0_i qd_i,      a_i = a_p + S^0_i qdd_i + v_i x (S^0_i qd_i)

and the Jacobian's column block of joint i is S^0_i (the world Jacobian, Pinocchio's
computeJointJacobians); columns of joints off the chain are zero. A world motion m0 = [v0; w] is
then moved to the link frame (pose R_l, p_l in the root frame):

    local_world_aligned: [v0 + w x p_l; w],      local: R_l^T [v0 + w x p_l; w].

Classical acceleration (Pinocchio's getFrameClassicalAcceleration): the spatial acceleration and
velocity in the requested frame, then a_lin + w x v_lin. In "local_world_aligned" and "local" it
is the second time derivative of the link origin's position (and the angular acceleration), in
root resp. link axes; in "world" the classical acceleration of the body point at the root origin.

Gravity is not included (these are kinematic quantities). The workspace `work` has
FRAME_WORK_WIDTH columns: the tree's layout (ROT, WORLD_ROT, VEL, ACC, TRANSFORM_SCRATCH used
here, VEL/ACC in ROOT coordinates unlike the dynamics kernels) plus S_WORLD, LINK_POSE, TMP,
and max(nb + 1, n_links) rows: the constant link table (LINK_TABLE_BODY, LINK_TABLE_POSE) is
in its last columns (`frame_workspace`). Entry points: lazily compiled with one explicit
signature each (entry.py's entry_point: @njit(signature, cache=True) compiled at first use).
"""
import numpy as np
from numba import njit, types

from .entry import entry_point
from .kinematics import joint_pose, revolute_pose, set_world_root, state_status
from .output_checks import STATUS_ALIASED, overlaps
from .spatial import compose_pose

from ..model.layout import (ACC, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_REVOLUTE, JOINT_TYPE,
                            LINK_BODY, LINK_ROT, MOTION_SUBSPACE, PARENT, ROT, STATUS_OK, SUBTREE_END,
                            STATUS_SHAPE_OUT, TRANSFORM_SCRATCH, VEL, WORK_WIDTH, WORLD_POS,
                            WORLD_ROT)

FRAME_WORLD = 0
FRAME_LOCAL = 1
FRAME_LOCAL_WORLD_ALIGNED = 2

# ---- workspace columns beyond the tree's layout ----
S_WORLD = WORK_WIDTH            # 36: S^0_i, the motion subspace in root coordinates (k columns)
LINK_POSE = WORK_WIDTH + 36     # 12: (row 0) the link frame's pose in the root frame
TMP = WORK_WIDTH + 48           # 12: (row 0) scratch motions
# constant link table, row = link index (the workspace has max(nb + 1, n_links) rows), written
# once by `frame_workspace`: fewer kernel arguments (numba's dispatch costs ~0.06-0.1 us each)
LINK_TABLE_BODY = WORK_WIDTH + 60   # 1: the link's body (as a float)
LINK_TABLE_POSE = WORK_WIDTH + 61   # 12: the link frame's pose in its body frame
FRAME_WORK_WIDTH = WORK_WIDTH + 73

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


def frame_workspace(body_int, link_int, link_float):
    """A new workspace (max(nb + 1, n_links), FRAME_WORK_WIDTH) with the link table filled."""
    n_links = link_int.shape[0]
    work = np.zeros((max(body_int.shape[0], n_links), FRAME_WORK_WIDTH))
    work[:n_links, LINK_TABLE_BODY] = link_int[:, LINK_BODY]
    work[:n_links, LINK_TABLE_POSE:LINK_TABLE_POSE + 12] = link_float[:, LINK_ROT:LINK_ROT + 12]
    return work


@njit(inline="always")
def world_pose_and_subspace(body_int, body_float, work, i):
    """Body i of the chain, its pose in the parent (ROT) computed: its pose in the root frame
    (WORLD_ROT), and S^0_i = ^0X_i S_i at S_WORLD (module docstring). Returns k, the joint's
    number of columns. (The joint pose stays in the kernels' loops: an out-of-line call inside
    an inlined helper made numba keep reference counts around it, ~3x slower on ur5.)"""
    compose_pose(work, body_int[i, PARENT], WORLD_ROT, work, i, ROT, work, i, WORLD_ROT)
    k = body_int[i, JOINT_NV_COL]
    px = work[i, WORLD_POS]
    py = work[i, WORLD_POS + 1]
    pz = work[i, WORLD_POS + 2]
    for j in range(k):
        s = MOTION_SUBSPACE + 6 * j
        o = S_WORLD + 6 * j
        for r in range(3):
            work[i, o + 3 + r] = (work[i, WORLD_ROT + 3 * r] * body_float[i, s + 3]
                                  + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, s + 4]
                                  + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, s + 5])
            work[i, o + r] = (work[i, WORLD_ROT + 3 * r] * body_float[i, s]
                              + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, s + 1]
                              + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, s + 2])
        wx = work[i, o + 3]
        wy = work[i, o + 4]
        wz = work[i, o + 5]
        work[i, o] += py * wz - pz * wy
        work[i, o + 1] += pz * wx - px * wz
        work[i, o + 2] += px * wy - py * wx
    return k


@njit(inline="always")
def set_link_pose(work, b, link):
    """work[0, LINK_POSE:+12] = ^0T_b ^bT_link (the link's pose in the root frame)."""
    compose_pose(work, b, WORLD_ROT, work, link, LINK_TABLE_POSE, work, 0, LINK_POSE)


@njit(inline="always")
def world_motion_to_frame(frame, work, m, mi, mc, out_row, out, oi, oc):
    """A root-coordinate motion m[mi, mc:+6] (about the root origin) expressed in `frame` for
    the link at work[0, LINK_POSE] (module docstring), written at out[oi, oc:+6] (a row) when
    out_row, else at out[oc:+6, oi] (a column). m may be out."""
    vx = m[mi, mc]
    vy = m[mi, mc + 1]
    vz = m[mi, mc + 2]
    wx = m[mi, mc + 3]
    wy = m[mi, mc + 4]
    wz = m[mi, mc + 5]
    if frame != FRAME_WORLD:
        px = work[0, LINK_POSE + 9]
        py = work[0, LINK_POSE + 10]
        pz = work[0, LINK_POSE + 11]
        # velocity of the point at p: v0 + w x p
        vx += wy * pz - wz * py
        vy += wz * px - wx * pz
        vz += wx * py - wy * px
        if frame == FRAME_LOCAL:
            # R_l^T [v; w]
            r = LINK_POSE
            ax = work[0, r] * vx + work[0, r + 3] * vy + work[0, r + 6] * vz
            ay = work[0, r + 1] * vx + work[0, r + 4] * vy + work[0, r + 7] * vz
            az = work[0, r + 2] * vx + work[0, r + 5] * vy + work[0, r + 8] * vz
            bx = work[0, r] * wx + work[0, r + 3] * wy + work[0, r + 6] * wz
            by = work[0, r + 1] * wx + work[0, r + 4] * wy + work[0, r + 7] * wz
            bz = work[0, r + 2] * wx + work[0, r + 5] * wy + work[0, r + 8] * wz
            vx, vy, vz, wx, wy, wz = ax, ay, az, bx, by, bz
    if out_row:
        out[oi, oc] = vx
        out[oi, oc + 1] = vy
        out[oi, oc + 2] = vz
        out[oi, oc + 3] = wx
        out[oi, oc + 4] = wy
        out[oi, oc + 5] = wz
    else:
        out[oc, oi] = vx
        out[oc + 1, oi] = vy
        out[oc + 2, oi] = vz
        out[oc + 3, oi] = wx
        out[oc + 4, oi] = wy
        out[oc + 5, oi] = wz


@njit(inline="always")
def vector_dims(body_int):
    nb = body_int.shape[0] - 1
    return body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0


@entry_point(JACOBIAN_SIGNATURE)
def frame_jacobian(body_int, body_float, work, q, link, frame, out):
    """out (6, nv) = J with v_link = J v in `frame` (module docstring). Returns a status."""
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
    set_world_root(work)
    for i in range(1, b + 1):
        if body_int[i, SUBTREE_END] > b:   # i is b or one of its ancestors
            joint_type = body_int[i, JOINT_TYPE]
            if joint_type == JOINT_REVOLUTE:
                revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
            else:
                joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                           TRANSFORM_SCRATCH)
            world_pose_and_subspace(body_int, body_float, work, i)
    set_link_pose(work, b, link)
    # columns of the chain's joints: S^0_i in the frame
    for i in range(1, b + 1):
        if body_int[i, SUBTREE_END] > b:
            iv = body_int[i, IDX_V]
            for j in range(body_int[i, JOINT_NV_COL]):
                world_motion_to_frame(frame, work, work, i, S_WORLD + 6 * j, False, out, iv + j,
                                      0)
    return STATUS_OK


@entry_point(VELOCITY_SIGNATURE)
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
    set_world_root(work)
    for r in range(6):
        work[0, VEL + r] = 0.0
    for i in range(1, b + 1):
        if body_int[i, SUBTREE_END] <= b:   # not on the chain to b
            continue
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        k = world_pose_and_subspace(body_int, body_float, work, i)
        parent = body_int[i, PARENT]
        iv = body_int[i, IDX_V]
        # v_i = v_p + S^0_i qd_i                                  [RBDA eq. 7.34, root coords]
        for r in range(6):
            s = work[parent, VEL + r]
            for j in range(k):
                s += work[i, S_WORLD + 6 * j + r] * v[iv + j]
            work[i, VEL + r] = s
    set_link_pose(work, b, link)
    world_motion_to_frame(frame, work, work, b, VEL, True, work, 0, TMP)
    for r in range(6):
        out[r] = work[0, TMP + r]
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
    set_world_root(work)
    for r in range(6):
        work[0, VEL + r] = 0.0
        work[0, ACC + r] = 0.0
    for i in range(1, b + 1):
        if body_int[i, SUBTREE_END] <= b:   # not on the chain to b
            continue
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        k = world_pose_and_subspace(body_int, body_float, work, i)
        parent = body_int[i, PARENT]
        iv = body_int[i, IDX_V]
        # v_i = v_p + S^0_i qd_i;  a_i = a_p + S^0_i qdd_i + v_i x (S^0_i qd_i)
        #                                         [RBDA eqs. 7.34-7.35 in root coordinates]
        for r in range(6):
            s = 0.0
            s2 = work[parent, ACC + r]
            for j in range(k):
                s += work[i, S_WORLD + 6 * j + r] * v[iv + j]
                s2 += work[i, S_WORLD + 6 * j + r] * qdd[iv + j]
            work[0, TMP + r] = s            # S^0_i qd_i
            work[i, VEL + r] = work[parent, VEL + r] + s
            work[i, ACC + r] = s2
        vx = work[i, VEL]
        vy = work[i, VEL + 1]
        vz = work[i, VEL + 2]
        wx = work[i, VEL + 3]
        wy = work[i, VEL + 4]
        wz = work[i, VEL + 5]
        sx = work[0, TMP]
        sy = work[0, TMP + 1]
        sz = work[0, TMP + 2]
        tx = work[0, TMP + 3]
        ty = work[0, TMP + 4]
        tz = work[0, TMP + 5]
        # [v; w] x [s; t] = [w x s + v x t; w x t]
        work[i, ACC] += wy * sz - wz * sy + vy * tz - vz * ty
        work[i, ACC + 1] += wz * sx - wx * sz + vz * tx - vx * tz
        work[i, ACC + 2] += wx * sy - wy * sx + vx * ty - vy * tx
        work[i, ACC + 3] += wy * tz - wz * ty
        work[i, ACC + 4] += wz * tx - wx * tz
        work[i, ACC + 5] += wx * ty - wy * tx
    set_link_pose(work, b, link)
    world_motion_to_frame(frame, work, work, b, VEL, True, work, 0, TMP)
    world_motion_to_frame(frame, work, work, b, ACC, True, work, 0, TMP + 6)
    wx = work[0, TMP + 3]
    wy = work[0, TMP + 4]
    wz = work[0, TMP + 5]
    vx = work[0, TMP]
    vy = work[0, TMP + 1]
    vz = work[0, TMP + 2]
    out[0] = work[0, TMP + 6] + wy * vz - wz * vy
    out[1] = work[0, TMP + 7] + wz * vx - wx * vz
    out[2] = work[0, TMP + 8] + wx * vy - wy * vx
    for r in range(3):
        out[3 + r] = work[0, TMP + 9 + r]
    return STATUS_OK

