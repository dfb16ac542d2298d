"""Joint kinematics and the forward kinematics pass (docs/theory.md §2 step 1, §3).

`joint_pose` is the one switch over joint types (Featherstone's jcalc): it composes the constant
joint placement with the joint's own motion. Every joint's motion subspace S_i is constant in the
body frame (revolute, prismatic, spherical, free and planar with body-frame velocities), so the
joint contributes no S'_i term and the velocity-product acceleration is c_i = v_i x (S_i eta_i).
"""
import math

from numba import njit

from . import signatures

from ..layout import (ROT_AXIS, ROT_AXIS_SKEW, ACC, AXIS, AXIS2, AXIS3, GRAVITY, IDX_Q, IDX_V, JOINT_FREE, JOINT_NQ_COL,
                      JOINT_NV_COL, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_SPHERICAL, JOINT_TYPE,
                      MOTION_SUBSPACE, PARENT, PLACEMENT_POS, PLACEMENT_ROT, POS,
                      QUATERNION_NORM_TOL, ROT, STATUS_BAD_INPUT, STATUS_BAD_Q,
                      STATUS_BAD_QUATERNION, STATUS_BAD_V, STATUS_OK, STATUS_SHAPE_INPUT,
                      STATUS_SHAPE_Q, STATUS_SHAPE_V, TRANSFORM_SCRATCH, VEL, WORLD_POS,
                      WORLD_ROT)
from .spatial import compose_rotation, motion_to_child, rotation_about_axis, rotation_from_quaternion


@njit(cache=True)
def joint_pose(joint_type, body_row, q, iq, rot_out, pos_out, scratch):
    """Pose (rot_out 9, pos_out 3) of the body frame in its parent body frame for joint q[iq:].

    pose = placement * joint motion:  R = R_T R_J,  p = p_T + R_T p_J.
    `scratch` (>= 12 floats) holds R_J and p_J.
    """
    placement_rot = body_row[PLACEMENT_ROT:PLACEMENT_ROT + 9]
    placement_pos = body_row[PLACEMENT_POS:PLACEMENT_POS + 3]
    joint_rot = scratch[0:9]
    px = 0.0
    py = 0.0
    pz = 0.0
    if joint_type == JOINT_REVOLUTE:
        # R_T Rodrigues(a, q) = c R_T + s R_T[a] + (1 - c)(R_T a) a^T with R_T[a], R_T a precomputed
        c = math.cos(q[iq])
        s = math.sin(q[iq])
        t = 1.0 - c
        for r in range(3):
            u = t * body_row[ROT_AXIS + r]
            for k in range(3):
                rot_out[3 * r + k] = (c * placement_rot[3 * r + k]
                                      + s * body_row[ROT_AXIS_SKEW + 3 * r + k]
                                      + u * body_row[AXIS + k])
        for r in range(3):
            pos_out[r] = placement_pos[r]
        return
    elif joint_type == JOINT_PRISMATIC:
        for k in range(9):
            rot_out[k] = placement_rot[k]
        d = q[iq]
        px = body_row[AXIS] * d
        py = body_row[AXIS + 1] * d
        pz = body_row[AXIS + 2] * d
    elif joint_type == JOINT_SPHERICAL:
        rotation_from_quaternion(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], joint_rot)
    elif joint_type == JOINT_FREE:
        rotation_from_quaternion(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], joint_rot)
        px = q[iq]
        py = q[iq + 1]
        pz = q[iq + 2]
    else:  # JOINT_PLANAR: translate (x, y) in the plane, rotate theta about its normal
        rotation_about_axis(body_row[AXIS:AXIS + 3], q[iq + 2], joint_rot)
        x = q[iq]
        y = q[iq + 1]
        px = body_row[AXIS2] * x + body_row[AXIS3] * y
        py = body_row[AXIS2 + 1] * x + body_row[AXIS3 + 1] * y
        pz = body_row[AXIS2 + 2] * x + body_row[AXIS3 + 2] * y
    if joint_type != JOINT_PRISMATIC:
        compose_rotation(placement_rot, joint_rot, rot_out)
    for r in range(3):
        pos_out[r] = (placement_pos[r] + placement_rot[3 * r] * px + placement_rot[3 * r + 1] * py
                      + placement_rot[3 * r + 2] * pz)


@njit(cache=True)
def joint_motion(body_row, nv_joint, x, iv, out):
    """out (6) = S_i x[iv:iv+k]: a joint-space vector mapped to a body-frame motion vector."""
    if nv_joint == 1:
        xi = x[iv]
        for r in range(6):
            out[r] = body_row[MOTION_SUBSPACE + r] * xi
        return
    for r in range(6):
        s = 0.0
        for j in range(nv_joint):
            s += body_row[MOTION_SUBSPACE + 6 * j + r] * x[iv + j]
        out[r] = s


@njit(cache=True)
def joint_force(body_row, nv_joint, f, out, iv):
    """out[iv:iv+k] = S_i^T f: a body-frame wrench projected on the joint's motion subspace."""
    for j in range(nv_joint):
        s = 0.0
        for r in range(6):
            s += body_row[MOTION_SUBSPACE + 6 * j + r] * f[r]
        out[iv + j] = s


@njit(signatures.CHECK_STATE, cache=True)
def check_state(body_int, q, v, x, check_v, check_x):
    """Status of the inputs: wrong length of q (and of v, x when checked), non-finite values,
    or a quaternion off the unit sphere. v and x have nv entries."""
    nb = body_int.shape[0] - 1
    nq = body_int[nb, IDX_Q] + body_int[nb, JOINT_NQ_COL] if nb > 0 else 0
    nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    if q.shape[0] != nq:
        return STATUS_SHAPE_Q
    if check_v and v.shape[0] != nv:
        return STATUS_SHAPE_V
    if check_x and x.shape[0] != nv:
        return STATUS_SHAPE_INPUT
    for k in range(q.shape[0]):
        if not math.isfinite(q[k]):
            return STATUS_BAD_Q
    for k in range(v.shape[0]):
        if not math.isfinite(v[k]):
            return STATUS_BAD_V
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return STATUS_BAD_INPUT
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_SPHERICAL or joint_type == JOINT_FREE:
            iq = body_int[i, IDX_Q] + (3 if joint_type == JOINT_FREE else 0)
            norm2 = q[iq] ** 2 + q[iq + 1] ** 2 + q[iq + 2] ** 2 + q[iq + 3] ** 2
            if abs(norm2 - 1.0) > 2.0 * QUATERNION_NORM_TOL:
                return STATUS_BAD_QUATERNION
    return STATUS_OK


@njit(cache=True)
def set_world_root(work):
    """The universe row's pose in the root frame: identity."""
    for k in range(9):
        work[0, WORLD_ROT + k] = 1.0 if k % 4 == 0 else 0.0
    for k in range(3):
        work[0, WORLD_POS + k] = 0.0


@njit(cache=True)
def compose_world_pose(work, i, parent):
    """^0T_i = ^0T_p ^pT_i: WORLD_ROT/WORLD_POS of body i from its parent's and its own ROT/POS."""
    parent_rot = work[parent, WORLD_ROT:WORLD_ROT + 9]
    pos = work[i, POS:POS + 3]
    compose_rotation(parent_rot, work[i, ROT:ROT + 9], work[i, WORLD_ROT:WORLD_ROT + 9])
    for r in range(3):
        work[i, WORLD_POS + r] = (work[parent, WORLD_POS + r] + parent_rot[3 * r] * pos[0]
                                  + parent_rot[3 * r + 1] * pos[1] + parent_rot[3 * r + 2] * pos[2])


@njit(signatures.FORWARD_KINEMATICS, cache=True)
def forward_kinematics(body_int, body_float, work, q, v):
    """Poses in the parent and in the root frame (ROT/POS, WORLD_ROT/WORLD_POS) and body
    velocities (VEL) of every body.  v may be empty (velocities are then not computed)."""
    nb = body_int.shape[0] - 1
    with_velocity = v.shape[0] > 0
    set_world_root(work)
    for k in range(6):
        work[0, VEL + k] = 0.0
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        row = work[i]
        rot = row[ROT:ROT + 9]
        pos = row[POS:POS + 3]
        joint_pose(body_int[i, JOINT_TYPE], body_float[i], q, body_int[i, IDX_Q], rot, pos,
                   row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 12])
        compose_world_pose(work, i, parent)
        if with_velocity:
            vel = row[VEL:VEL + 6]
            motion_to_child(rot, pos, work[parent, VEL:VEL + 6], vel)
            scratch = row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 6]
            joint_motion(body_float[i], body_int[i, JOINT_NV_COL], v, body_int[i, IDX_V], scratch)
            for r in range(6):
                vel[r] += scratch[r]


@njit(cache=True)
def set_base_motion(body_float, work):
    """Universe row: at rest, accelerating by -g so that gravity acts on every body (Featherstone's
    trick; the seeds' f^t gravity load gives the same joint forces)."""
    for k in range(6):
        work[0, VEL + k] = 0.0
        work[0, ACC + k] = 0.0
    for k in range(3):
        work[0, ACC + k] = -body_float[0, GRAVITY + k]
