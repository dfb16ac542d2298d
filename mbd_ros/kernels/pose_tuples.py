"""Rigid-body poses as 12-tuples (R row-major, then p), for kernels that carry a running pose in
registers instead of the workspace (frame_kinematics.py's chain pass, centroidal.py's pose pass):
numba keeps a homogeneous tuple of floats in registers, and a pose that is never stored is never
reloaded. Same formulas as kinematics.revolute_pose and spatial.compose_pose."""
from numba import njit

from ..model.layout import (AXIS, MOTION_SUBSPACE, PLACEMENT_POS, PLACEMENT_ROT, ROT_AXIS,
                            ROT_AXIS_SKEW)

IDENTITY_POSE = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)


@njit(inline="always")
def revolute_relative_pose(body_float, i, c, s):
    """Pose of body i in its parent for a revolute joint of angle q (c = cos q, s = sin q), as a
    12-tuple (R row-major, p): R = c R_T + s R_T[a] + (1 - c)(R_T a) a^T, p = p_T
    (kinematics.revolute_pose, Rodrigues [docs/theory.md §1]). cos and sin come from the caller:
    computed in a loop of their own, the libm calls spill no running pose (every vector register
    is caller-saved) and overlap each other (~10 ns instead of ~20 ns per joint on ur5)."""
    t = 1.0 - c
    a0 = body_float[i, AXIS]
    a1 = body_float[i, AXIS + 1]
    a2 = body_float[i, AXIS + 2]
    u0 = t * body_float[i, ROT_AXIS]
    u1 = t * body_float[i, ROT_AXIS + 1]
    u2 = t * body_float[i, ROT_AXIS + 2]
    return (c * body_float[i, PLACEMENT_ROT] + s * body_float[i, ROT_AXIS_SKEW] + u0 * a0,
            c * body_float[i, PLACEMENT_ROT + 1] + s * body_float[i, ROT_AXIS_SKEW + 1] + u0 * a1,
            c * body_float[i, PLACEMENT_ROT + 2] + s * body_float[i, ROT_AXIS_SKEW + 2] + u0 * a2,
            c * body_float[i, PLACEMENT_ROT + 3] + s * body_float[i, ROT_AXIS_SKEW + 3] + u1 * a0,
            c * body_float[i, PLACEMENT_ROT + 4] + s * body_float[i, ROT_AXIS_SKEW + 4] + u1 * a1,
            c * body_float[i, PLACEMENT_ROT + 5] + s * body_float[i, ROT_AXIS_SKEW + 5] + u1 * a2,
            c * body_float[i, PLACEMENT_ROT + 6] + s * body_float[i, ROT_AXIS_SKEW + 6] + u2 * a0,
            c * body_float[i, PLACEMENT_ROT + 7] + s * body_float[i, ROT_AXIS_SKEW + 7] + u2 * a1,
            c * body_float[i, PLACEMENT_ROT + 8] + s * body_float[i, ROT_AXIS_SKEW + 8] + u2 * a2,
            body_float[i, PLACEMENT_POS], body_float[i, PLACEMENT_POS + 1],
            body_float[i, PLACEMENT_POS + 2])


@njit(inline="always")
def pose_at(a, ai, ac):
    """The pose stored at a[ai, ac:+12] as a 12-tuple."""
    return (a[ai, ac], a[ai, ac + 1], a[ai, ac + 2], a[ai, ac + 3], a[ai, ac + 4],
            a[ai, ac + 5], a[ai, ac + 6], a[ai, ac + 7], a[ai, ac + 8], a[ai, ac + 9],
            a[ai, ac + 10], a[ai, ac + 11])


@njit(inline="always")
def compose(a, b):
    """A B for 12-tuple poses: R = R_a R_b, p = p_a + R_a p_b (spatial.compose_pose)."""
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6],
            a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
            a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
            a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
            a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6],
            a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
            a[9] + a[0] * b[9] + a[1] * b[10] + a[2] * b[11],
            a[10] + a[3] * b[9] + a[4] * b[10] + a[5] * b[11],
            a[11] + a[6] * b[9] + a[7] * b[10] + a[8] * b[11])




@njit(inline="always")
def store_pose(pose, out, oi, oc):
    """out[oi, oc:+12] = the 12-tuple pose."""
    for k in range(12):
        out[oi, oc + k] = pose[k]


@njit(inline="always")
def subspace_column(body_float, i, j, pose):
    """S^0 = ^0X_i S_i[:, j] for body i at root-frame pose `pose` (12-tuple), as a 6-tuple
    [v; w]: w = R w_S, v = R v_S + p x w                                    [RBDA eq. 2.24]"""
    s = MOTION_SUBSPACE + 6 * j
    x0 = body_float[i, s]
    x1 = body_float[i, s + 1]
    x2 = body_float[i, s + 2]
    y0 = body_float[i, s + 3]
    y1 = body_float[i, s + 4]
    y2 = body_float[i, s + 5]
    wx = pose[0] * y0 + pose[1] * y1 + pose[2] * y2
    wy = pose[3] * y0 + pose[4] * y1 + pose[5] * y2
    wz = pose[6] * y0 + pose[7] * y1 + pose[8] * y2
    px = pose[9]
    py = pose[10]
    pz = pose[11]
    return (pose[0] * x0 + pose[1] * x1 + pose[2] * x2 + py * wz - pz * wy,
            pose[3] * x0 + pose[4] * x1 + pose[5] * x2 + pz * wx - px * wz,
            pose[6] * x0 + pose[7] * x1 + pose[8] * x2 + px * wy - py * wx,
            wx, wy, wz)


@njit(inline="always")
def free_relative_pose(body_float, i, q, iq):
    """Pose of body i in its parent for a free joint, q[iq:iq+7] = [x y z qx qy qz qw], as a
    12-tuple: R = R_T R(quaternion), p = p_T + R_T [x y z] (kinematics.joint_pose's free case,
    spatial.rotation_from_quaternion: Hamilton, unit quaternion checked by the caller)."""
    qx = q[iq + 3]
    qy = q[iq + 4]
    qz = q[iq + 5]
    qw = q[iq + 6]
    joint = (1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qz * qw),
             2.0 * (qx * qz + qy * qw), 2.0 * (qx * qy + qz * qw),
             1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qx * qw),
             2.0 * (qx * qz - qy * qw), 2.0 * (qy * qz + qx * qw),
             1.0 - 2.0 * (qx * qx + qy * qy), q[iq], q[iq + 1], q[iq + 2])
    return compose(pose_at(body_float, i, PLACEMENT_ROT), joint)
