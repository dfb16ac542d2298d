"""Recursive O(n) forward dynamics of a tree in the seeds' formalism (docs/theory.md §2; the ABA).

Seed names -> workspace slots: M*_i -> ART_INERTIA, -f^tc*_i (articulated bias force) -> FORCE,
a_rel,i -> BIAS_ACC, M*_i C_i -> U_MAT, N_i^-1 -> D_INV, tau_i - C_i^T (-f^tc*_i) -> U_TAU.
We carry p^A = -f^tc* (Featherstone's sign) so the recursions read as in spatial_v2's FDab.m.
"""
import math

from numba import njit

from . import signatures
from .entry import entry_point

from ..model.layout import (JOINT_HELICAL, JOINT_PRISMATIC, FRICTION_SPEED, STATUS_SHAPE_OUT, ACC,
                            ART_INERTIA, AXIS, JOINT_FREE, JOINT_REVOLUTE, BIAS_ACC, D_INV,
                            DAMPING, FEXT, FORCE, FRICTION, IDX_Q, IDX_V, JOINT_NV_COL,
                            JOINT_TYPE, MOTION_SUBSPACE, PARENT, ROT, SCRATCH, SPATIAL_INERTIA,
                            STATUS_OK, STATUS_SINGULAR, TRANSFORM_SCRATCH, U_MAT, U_TAU, VEL)
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, all_finite, overlaps_any
from .kinematics import revolute_pose, state_status, joint_motion, joint_pose, set_base_motion
from .spatial import (add_cross_force, add_force_to_parent, add_inertia_to_parent, cross_motion,
                      inertia_times, invert_spd, motion_to_child, rigid_inertia_times)


@njit(inline="always")
def articulated_step(work, i, body_float, k, u_col, acc_col, qdd_out, iv):
    """One joint of the ABA's last pass (any number of axes k), for body i:
    eta'_i = N_i^-1 (u_i - U_i^T a'_i) into qdd_out[iv:iv+k], then a_i = a'_i + C_i eta'_i in
    work[i, acc_col:+6] (which holds a'_i = B_pi a_p + a_rel,i on entry); u_i = work[i, u_col:+k].
    """
    for j in range(k):
        s = work[i, u_col + j]
        for r in range(6):
            s -= work[i, U_MAT + 6 * j + r] * work[i, acc_col + r]
        work[i, SCRATCH + j] = s
    for j in range(k):
        s = 0.0
        for m in range(k):
            s += work[i, D_INV + j * k + m] * work[i, SCRATCH + m]
        qdd_out[iv + j] = s
    for j in range(k):
        for r in range(6):
            work[i, acc_col + r] += body_float[i, MOTION_SUBSPACE + 6 * j + r] * qdd_out[iv + j]


@njit(cache=True)
def multi_axis_projection(work, body_float, i, joint_type, k, parent, v, tau, iv):
    """Pass 2 of the ABA for a joint other than revolute/prismatic (spherical, free, planar,
    helical (k = 1), cylindrical): U_i, N_i^-1, u_i,
    and (below a moving parent) the projected M*_i (1 - P_i) and p^a_i, in place in work row i.
    Returns False when N_i is not positive definite. Out of line: rare, and large to inline."""
    # U = M*_i C_i;  N_i = C_i^T M*_i C_i;  u = tau_i + tau_passive - C_i^T p^A_i
    if joint_type == JOINT_FREE:
        # C_i = 1 (6 x 6: body-frame [linear; angular]), so U = M*_i and N_i = M*_i
        for j in range(6):
            for r in range(6):
                work[i, U_MAT + 6 * j + r] = work[i, ART_INERTIA + 6 * r + j]
        for m in range(36):
            work[i, SCRATCH + m] = work[i, ART_INERTIA + m]
    else:
        for j in range(k):
            inertia_times(work, i, ART_INERTIA, body_float, i, MOTION_SUBSPACE + 6 * j,
                          work, i, U_MAT + 6 * j)
        for a in range(k):
            for b in range(k):
                s = 0.0
                for r in range(6):
                    s += body_float[i, MOTION_SUBSPACE + 6 * a + r] * work[i, U_MAT + 6 * b + r]
                work[i, SCRATCH + a * k + b] = s
    if not invert_spd(work, i, SCRATCH, k, work, i, D_INV):
        return False
    for j in range(k):
        rate = v[iv + j]
        s = (tau[iv + j] - body_float[i, DAMPING + j] * rate
             - body_float[i, FRICTION + j] * math.tanh(rate / body_float[i, FRICTION_SPEED]))
        for r in range(6):
            s -= body_float[i, MOTION_SUBSPACE + 6 * j + r] * work[i, FORCE + r]
        work[i, U_TAU + j] = s
    if parent == 0:
        return True
    # scratch = U N^-1 (6 x k, column-major)
    for j in range(k):
        for r in range(6):
            s = 0.0
            for m in range(k):
                s += work[i, U_MAT + 6 * m + r] * work[i, D_INV + m * k + j]
            work[i, SCRATCH + 6 * j + r] = s
    # M*_i (1 - P_i) = M*_i - U N^-1 U^T                [docs/theory.md §2 step 2; 002 eq. 18]
    for r in range(6):
        for c in range(6):
            s = 0.0
            for j in range(k):
                s += work[i, SCRATCH + 6 * j + r] * work[i, U_MAT + 6 * j + c]
            work[i, ART_INERTIA + 6 * r + c] -= s
    # p^a = p^A + (M*_i - U N^-1 U^T) a_rel,i + U N^-1 u     [docs/theory.md §2 step 2]
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += work[i, ART_INERTIA + 6 * r + c] * work[i, BIAS_ACC + c]
        for j in range(k):
            s += work[i, SCRATCH + 6 * j + r] * work[i, U_TAU + j]
        work[i, FORCE + r] += s
    return True


@entry_point(signatures.STATE_KERNEL)
def forward_dynamics(body_int, body_float, work, q, v, tau, qdd_out):
    """Joint accelerations qdd_out (nv,) for drive forces tau (nv,) at (q, v).

    Model: body_int, body_float. Data in/out: work (FEXT read). Returns a status code
    (STATUS_SINGULAR + i when the joint-space articulated inertia N_i of body i is singular;
    output_checks.STATUS_ALIASED when qdd_out overlaps q, v or tau, before anything is written;
    STATUS_NOT_FINITE when the result overflowed).
    """
    if overlaps_any(qdd_out, q, v, tau):
        return STATUS_ALIASED
    status = state_status(body_int, q, v, tau, True, True)
    if status != STATUS_OK:
        return status
    if qdd_out.shape[0] != v.shape[0]:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    set_base_motion(body_float, work)
    # ---- pass 1, base -> tips: kinematics, M*_i = M_i, p^A_i = v_i x* M_i v_i - f^ext_i   [docs/theory.md §2 step 1]
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        # v_i = B_pi v_p + C_i eta_i;  a_rel,i = v_i x (C_i eta_i)              [002 eqs. 6-7]
        motion_to_child(work, i, ROT, work, parent, VEL, work, i, VEL)
        joint_motion(body_float, i, body_int[i, JOINT_NV_COL], v, body_int[i, IDX_V], work, i,
                     SCRATCH)
        for r in range(6):
            work[i, VEL + r] += work[i, SCRATCH + r]
        cross_motion(work, i, VEL, work, i, SCRATCH, work, i, BIAS_ACC)
        for k in range(36):
            work[i, ART_INERTIA + k] = body_float[i, SPATIAL_INERTIA + k]
        rigid_inertia_times(body_float, i, SPATIAL_INERTIA, work, i, VEL, work, i, SCRATCH)
        for r in range(6):
            work[i, FORCE + r] = -work[i, FEXT + r]
        add_cross_force(work, i, VEL, work, i, SCRATCH, work, i, FORCE)
    # ---- pass 2, tips -> base: project each body's articulated inertia and load on its parent
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        joint_type = body_int[i, JOINT_TYPE]
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        if joint_type == JOINT_REVOLUTE or joint_type == JOINT_PRISMATIC or joint_type == JOINT_HELICAL:
            if joint_type == JOINT_HELICAL:
                # one column C_i = [h a; a] (layout.JOINT_HELICAL): U = M*_i C_i, N_i = C_i^T U
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += work[i, ART_INERTIA + 6 * r + c] * body_float[i, MOTION_SUBSPACE + c]
                    work[i, U_MAT + r] = s
                n_joint = 0.0
                u = tau[iv]
                for r in range(6):
                    n_joint += body_float[i, MOTION_SUBSPACE + r] * work[i, U_MAT + r]
                    u -= body_float[i, MOTION_SUBSPACE + r] * work[i, FORCE + r]
            else:
                # one axis a: C_i = [a; 0] (prismatic) or [0; a] (revolute), so U = M*_i C_i reads
                # three columns of M*_i, N_i is a scalar, and the update is a rank-1 correction
                offset = ART_INERTIA + (3 if joint_type == JOINT_REVOLUTE else 0)
                force = FORCE + (3 if joint_type == JOINT_REVOLUTE else 0)
                ax = body_float[i, AXIS]
                ay = body_float[i, AXIS + 1]
                az = body_float[i, AXIS + 2]
                for r in range(6):
                    work[i, U_MAT + r] = (work[i, offset + 6 * r] * ax + work[i, offset + 6 * r + 1] * ay
                                          + work[i, offset + 6 * r + 2] * az)
                axis_row = U_MAT + offset - ART_INERTIA
                n_joint = (ax * work[i, axis_row] + ay * work[i, axis_row + 1]
                           + az * work[i, axis_row + 2])
                u = (tau[iv] - ax * work[i, force] - ay * work[i, force + 1] - az * work[i, force + 2])
            if not n_joint > 1e-13 * (abs(work[i, ART_INERTIA]) + abs(work[i, ART_INERTIA + 21])):
                return STATUS_SINGULAR + i
            d_inv = 1.0 / n_joint
            work[i, D_INV] = d_inv
            rate = v[iv]
            if body_float[i, DAMPING] != 0.0 or body_float[i, FRICTION] != 0.0:
                u -= (body_float[i, DAMPING] * rate
                      + body_float[i, FRICTION] * math.tanh(rate / body_float[i, FRICTION_SPEED]))
            work[i, U_TAU] = u
            if parent == 0:
                continue
            # M*_i (1 - P_i) = M*_i - U U^T / N_i               [docs/theory.md §2 step 2; 002 eq. 18]
            for r in range(6):
                ur = work[i, U_MAT + r] * d_inv
                work[i, SCRATCH + r] = ur
                for c in range(6):
                    work[i, ART_INERTIA + 6 * r + c] -= ur * work[i, U_MAT + c]
            # p^a = p^A + (M*_i - U U^T / N_i) a_rel,i + U u / N_i   [docs/theory.md §2 step 2]
            for r in range(6):
                s = work[i, SCRATCH + r] * u
                for c in range(6):
                    s += work[i, ART_INERTIA + 6 * r + c] * work[i, BIAS_ACC + c]
                work[i, FORCE + r] += s
        elif not multi_axis_projection(work, body_float, i, joint_type, k, parent, v, tau, iv):
            return STATUS_SINGULAR + i
        elif parent == 0:
            continue
        # M*_p += B_pi^T (...) B_pi ; p^A_p += B_pi^T p^a
        add_inertia_to_parent(work, i, ROT, work, i, ART_INERTIA, work, i, TRANSFORM_SCRATCH,
                              work, parent, ART_INERTIA)
        add_force_to_parent(work, i, ROT, work, i, FORCE, work, parent, FORCE)
    # ---- pass 3, base -> tips: eta'_i = N_i^-1 (u_i - U_i^T (B_pi a_p + a_rel,i))    [docs/theory.md §2 step 3]
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        motion_to_child(work, i, ROT, work, parent, ACC, work, i, ACC)
        for r in range(6):
            work[i, ACC + r] += work[i, BIAS_ACC + r]
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE or joint_type == JOINT_PRISMATIC:
            acc = ACC + (3 if joint_type == JOINT_REVOLUTE else 0)
            s = work[i, U_TAU]
            for r in range(6):
                s -= work[i, U_MAT + r] * work[i, ACC + r]
            qdd = s * work[i, D_INV]
            qdd_out[iv] = qdd
            work[i, acc] += body_float[i, AXIS] * qdd
            work[i, acc + 1] += body_float[i, AXIS + 1] * qdd
            work[i, acc + 2] += body_float[i, AXIS + 2] * qdd
            continue
        articulated_step(work, i, body_float, k, U_TAU, ACC, qdd_out, iv)
    if not all_finite(qdd_out):
        return STATUS_NOT_FINITE
    return STATUS_OK
