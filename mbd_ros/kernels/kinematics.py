"""Joint kinematics and the forward kinematics pass (docs/theory.md §2 step 1, §3).

`joint_pose` is the one switch over joint types (Featherstone's jcalc): it composes the constant
joint placement with the joint's own motion. Every joint's motion subspace S_i is constant in the
body frame (revolute, prismatic, helical, cylindrical, spherical, free and planar with body-frame
velocities; the helical and cylindrical axis is unchanged by the joint's own rotation), so the
joint contributes no S'_i term and the velocity-product acceleration is c_i = v_i x (S_i eta_i).
"""
import math

from numba import njit

from . import signatures
from .entry import entry_point

from ..model.layout import (JOINT_CYLINDRICAL, JOINT_HELICAL, ROT_AXIS, ROT_AXIS_SKEW, ACC, AXIS,
                            AXIS2, AXIS3, GRAVITY, IDX_Q, IDX_V, JOINT_FREE, JOINT_NQ_COL,
                            JOINT_NV_COL, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_SPHERICAL,
                            JOINT_TYPE, MOTION_SUBSPACE, PARENT, PLACEMENT_POS, PLACEMENT_ROT,
                            QUATERNION_NORM_TOL, ROT, STATUS_BAD_INPUT, STATUS_BAD_Q,
                            STATUS_BAD_QUATERNION, STATUS_BAD_V, STATUS_OK, STATUS_SHAPE_INPUT,
                            STATUS_SHAPE_Q, STATUS_SHAPE_V, TRANSFORM_SCRATCH, VEL, WORLD_POS,
                            WORLD_ROT)
from .spatial import (compose_pose, compose_rotation, motion_to_child, rotation_about_axis,
                      rotation_from_quaternion)


@njit(inline="always")
def revolute_pose(body_float, i, angle, out, oi, oc):
    """Pose (12 floats at out[oi, oc:]) of body i in its parent frame for a revolute joint:
    R = R_T Rodrigues(a, q) = c R_T + s R_T[a] + (1 - c)(R_T a) a^T (R_T[a], R_T a precomputed),
    p = p_T                                                                    [docs/theory.md §1]

    The kernels call this inline for revolute joints and `joint_pose` (out of line) otherwise.
    """
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    a0 = body_float[i, AXIS]
    a1 = body_float[i, AXIS + 1]
    a2 = body_float[i, AXIS + 2]
    for r in range(3):
        u = t * body_float[i, ROT_AXIS + r]
        out[oi, oc + 3 * r] = (c * body_float[i, PLACEMENT_ROT + 3 * r]
                               + s * body_float[i, ROT_AXIS_SKEW + 3 * r] + u * a0)
        out[oi, oc + 3 * r + 1] = (c * body_float[i, PLACEMENT_ROT + 3 * r + 1]
                                   + s * body_float[i, ROT_AXIS_SKEW + 3 * r + 1] + u * a1)
        out[oi, oc + 3 * r + 2] = (c * body_float[i, PLACEMENT_ROT + 3 * r + 2]
                                   + s * body_float[i, ROT_AXIS_SKEW + 3 * r + 2] + u * a2)
    for r in range(3):
        out[oi, oc + 9 + r] = body_float[i, PLACEMENT_POS + r]


@njit(cache=True)
def joint_pose(joint_type, body_float, i, q, iq, out, oi, oc, sc):
    """Pose of body i's frame in its parent body frame for the joint coordinates q[iq:], written
    as 12 floats (R row-major, then p) at out[oi, oc:oc+12]; out[oi, sc:sc+9] is scratch.

    pose = placement * joint motion:  R = R_T R_J,  p = p_T + R_T p_J        [docs/theory.md §1]
    Out of line (the kernels inline `revolute_pose` for the common case): inlining all joint
    types into every kernel costs seconds of compile time, and numba's reference counts of the
    array arguments around an inlined branch are not pruned (~6 atomic operations per body).
    """
    if joint_type == JOINT_REVOLUTE:
        revolute_pose(body_float, i, q[iq], out, oi, oc)
        return
    px = 0.0
    py = 0.0
    pz = 0.0
    if joint_type == JOINT_PRISMATIC:
        for k in range(9):
            out[oi, oc + k] = body_float[i, PLACEMENT_ROT + k]
        d = q[iq]
        px = body_float[i, AXIS] * d
        py = body_float[i, AXIS + 1] * d
        pz = body_float[i, AXIS + 2] * d
    else:
        # R_J into the scratch slot, then R = R_T R_J
        if joint_type == JOINT_SPHERICAL:
            rotation_from_quaternion(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], out, oi, sc)
        elif joint_type == JOINT_FREE:
            rotation_from_quaternion(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], out, oi, sc)
            px = q[iq]
            py = q[iq + 1]
            pz = q[iq + 2]
        elif joint_type == JOINT_HELICAL:
            # R_J = Rodrigues(a, q), p_J = pitch q a; pitch a is S's linear part [docs/formats.md]
            angle = q[iq]
            rotation_about_axis(body_float, i, AXIS, angle, out, oi, sc)
            px = body_float[i, MOTION_SUBSPACE] * angle
            py = body_float[i, MOTION_SUBSPACE + 1] * angle
            pz = body_float[i, MOTION_SUBSPACE + 2] * angle
        elif joint_type == JOINT_CYLINDRICAL:
            # R_J = Rodrigues(a, q0), p_J = q1 a
            rotation_about_axis(body_float, i, AXIS, q[iq], out, oi, sc)
            d = q[iq + 1]
            px = body_float[i, AXIS] * d
            py = body_float[i, AXIS + 1] * d
            pz = body_float[i, AXIS + 2] * d
        else:  # JOINT_PLANAR: translate (x, y) in the plane, rotate theta about its normal
            rotation_about_axis(body_float, i, AXIS, q[iq + 2], out, oi, sc)
            x = q[iq]
            y = q[iq + 1]
            px = body_float[i, AXIS2] * x + body_float[i, AXIS3] * y
            py = body_float[i, AXIS2 + 1] * x + body_float[i, AXIS3 + 1] * y
            pz = body_float[i, AXIS2 + 2] * x + body_float[i, AXIS3 + 2] * y
        compose_rotation(body_float, i, PLACEMENT_ROT, out, oi, sc, out, oi, oc)
    for r in range(3):
        out[oi, oc + 9 + r] = (body_float[i, PLACEMENT_POS + r]
                               + body_float[i, PLACEMENT_ROT + 3 * r] * px
                               + body_float[i, PLACEMENT_ROT + 3 * r + 1] * py
                               + body_float[i, PLACEMENT_ROT + 3 * r + 2] * pz)


@njit(inline="always")
def joint_motion(body_float, i, nv_joint, x, iv, out, oi, oc):
    """out[oi, oc:oc+6] = S_i x[iv:iv+k]: a joint-space vector mapped to a body-frame motion."""
    if nv_joint == 1:
        xi = x[iv]
        for r in range(6):
            out[oi, oc + r] = body_float[i, MOTION_SUBSPACE + r] * xi
    else:
        for r in range(6):
            s = 0.0
            for j in range(nv_joint):
                s += body_float[i, MOTION_SUBSPACE + 6 * j + r] * x[iv + j]
            out[oi, oc + r] = s


@njit(inline="always")
def joint_force(body_float, i, nv_joint, f, fi, fc, out, iv):
    """out[iv:iv+k] = S_i^T f: a body-frame wrench f[fi, fc:fc+6] projected on the joint's motion
    subspace."""
    for j in range(nv_joint):
        s = 0.0
        for r in range(6):
            s += body_float[i, MOTION_SUBSPACE + 6 * j + r] * f[fi, fc + r]
        out[iv + j] = s


@njit(inline="always")
def state_status(body_int, q, v, x, check_v, check_x):
    """Status of the inputs: wrong length of q (and of v, x when checked), non-finite values,
    or a quaternion off the unit sphere. v and x have nv entries.

    One exit and no early loop exits: numba then prunes the reference counts of the inlined
    array arguments (with early returns it does not, ~10 atomic operations per call).
    """
    nb = body_int.shape[0] - 1
    nq = body_int[nb, IDX_Q] + body_int[nb, JOINT_NQ_COL] if nb > 0 else 0
    nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    status = STATUS_OK
    if q.shape[0] != nq:
        status = STATUS_SHAPE_Q
    elif check_v and v.shape[0] != nv:
        status = STATUS_SHAPE_V
    elif check_x and x.shape[0] != nv:
        status = STATUS_SHAPE_INPUT
    else:
        # x * 0 is 0 for finite x, NaN for NaN and +-inf: one sum per vector, no branch per entry
        zero_q = 0.0
        for k in range(nq):
            zero_q += q[k] * 0.0
        zero_v = 0.0
        zero_x = 0.0
        if check_v:
            for k in range(nv):
                zero_v += v[k] * 0.0
        if check_x:
            for k in range(nv):
                zero_x += x[k] * 0.0
        if zero_q != 0.0:
            status = STATUS_BAD_Q
        elif zero_v != 0.0:
            status = STATUS_BAD_V
        elif zero_x != 0.0:
            status = STATUS_BAD_INPUT
        else:
            for i in range(1, nb + 1):
                joint_type = body_int[i, JOINT_TYPE]
                if joint_type == JOINT_SPHERICAL or joint_type == JOINT_FREE:
                    iq = body_int[i, IDX_Q] + (3 if joint_type == JOINT_FREE else 0)
                    norm2 = (q[iq] * q[iq] + q[iq + 1] * q[iq + 1] + q[iq + 2] * q[iq + 2]
                             + q[iq + 3] * q[iq + 3])
                    if abs(norm2 - 1.0) > 2.0 * QUATERNION_NORM_TOL:
                        status = STATUS_BAD_QUATERNION
    return status


@entry_point(signatures.CHECK_STATE)
def check_state(body_int, q, v, x, check_v, check_x):
    """Entry point of `state_status` (for the wrappers that check before calling a kernel)."""
    return state_status(body_int, q, v, x, check_v, check_x)


@njit(inline="always")
def set_world_root(work):
    """The universe row's pose in the root frame: identity."""
    for k in range(9):
        work[0, WORLD_ROT + k] = 1.0 if k % 4 == 0 else 0.0
    for k in range(3):
        work[0, WORLD_POS + k] = 0.0


@njit(inline="always")
def compose_world_pose(work, i, parent):
    """^0T_i = ^0T_p ^pT_i: WORLD_ROT/WORLD_POS of body i from its parent's and its own ROT/POS."""
    compose_pose(work, parent, WORLD_ROT, work, i, ROT, work, i, WORLD_ROT)


@entry_point(signatures.FORWARD_KINEMATICS)
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
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        compose_world_pose(work, i, parent)
        if with_velocity:
            # v_i = B_pi v_p + S_i v_i(joint)                                   [002 eq. 6]
            motion_to_child(work, i, ROT, work, parent, VEL, work, i, VEL)
            joint_motion(body_float, i, body_int[i, JOINT_NV_COL], v, body_int[i, IDX_V], work, i,
                         TRANSFORM_SCRATCH)
            for r in range(6):
                work[i, VEL + r] += work[i, TRANSFORM_SCRATCH + r]


@njit(inline="always")
def set_base_motion(body_float, work):
    """Universe row: at rest, accelerating by -g so that gravity acts on every body (Featherstone's
    trick; the seeds' f^t gravity load gives the same joint forces)."""
    for k in range(6):
        work[0, VEL + k] = 0.0
        work[0, ACC + k] = 0.0
    for k in range(3):
        work[0, ACC + k] = -body_float[0, GRAVITY + k]
