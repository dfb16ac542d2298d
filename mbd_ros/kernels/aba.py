"""Recursive O(n) forward dynamics of a tree in the seeds' formalism (docs/theory.md §2; the ABA).

Seed names -> workspace slots: M*_i -> ART_INERTIA, -f^tc*_i (articulated bias force) -> FORCE,
a_rel,i -> BIAS_ACC, M*_i C_i -> U_MAT, N_i^-1 -> D_INV, tau_i - C_i^T (-f^tc*_i) -> U_TAU.
We carry p^A = -f^tc* (Featherstone's sign) so the recursions read as in spatial_v2's FDab.m.
"""
import math

from numba import njit

from . import signatures

from ..layout import (FRICTION_SPEED, STATUS_SHAPE_OUT, ACC, ART_INERTIA, AXIS, JOINT_REVOLUTE, BIAS_ACC, D_INV, DAMPING, FEXT, FORCE, FRICTION, IDX_Q,
                      IDX_V, JOINT_NV_COL, JOINT_TYPE, MOTION_SUBSPACE, PARENT, POS, ROT, SCRATCH,
                      SPATIAL_INERTIA, STATUS_OK, STATUS_SINGULAR, TRANSFORM_SCRATCH, U_MAT, U_TAU,
                      VEL)
from .kinematics import check_state, joint_motion, joint_pose, set_base_motion
from .spatial import (add_cross_force, add_force_to_parent, add_inertia_to_parent, cross_motion,
                      inertia_times, invert_spd, motion_to_child, rigid_inertia_times)


@njit(cache=True)
def articulated_step(row, body_row, k, u, acc, qdd_out, iv):
    """One joint of the ABA's last pass (any number of axes k):
    eta'_i = N_i^-1 (u_i - U_i^T a'_i) into qdd_out[iv:iv+k], then a_i = a'_i + C_i eta'_i in acc
    (which holds a'_i = B_pi a_p + a_rel,i on entry)."""
    scratch = row[SCRATCH:SCRATCH + 6]
    for j in range(k):
        s = u[j]
        for r in range(6):
            s -= row[U_MAT + 6 * j + r] * acc[r]
        scratch[j] = s
    for j in range(k):
        s = 0.0
        for m in range(k):
            s += row[D_INV + j * k + m] * scratch[m]
        qdd_out[iv + j] = s
    for j in range(k):
        for r in range(6):
            acc[r] += body_row[MOTION_SUBSPACE + 6 * j + r] * qdd_out[iv + j]


@njit(signatures.STATE_KERNEL, cache=True)
def forward_dynamics(body_int, body_float, work, q, v, tau, qdd_out):
    """Joint accelerations qdd_out (nv,) for drive forces tau (nv,) at (q, v).

    Model: body_int, body_float. Data in/out: work (FEXT read). Returns a status code
    (STATUS_SINGULAR + i when the joint-space articulated inertia N_i of body i is singular).
    """
    status = check_state(body_int, q, v, tau, True, True)
    if status != STATUS_OK:
        return status
    if qdd_out.shape[0] != v.shape[0]:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    set_base_motion(body_float, work)
    # ---- pass 1, base -> tips: kinematics, M*_i = M_i, p^A_i = v_i x* M_i v_i - f^ext_i   [THEORY §2 step 1]
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        row = work[i]
        body_row = body_float[i]
        rot = row[ROT:ROT + 9]
        pos = row[POS:POS + 3]
        vel = row[VEL:VEL + 6]
        scratch = row[SCRATCH:SCRATCH + 6]
        joint_pose(body_int[i, JOINT_TYPE], body_row, q, body_int[i, IDX_Q], rot, pos,
                   row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 12])
        motion_to_child(rot, pos, work[parent, VEL:VEL + 6], vel)
        joint_motion(body_row, body_int[i, JOINT_NV_COL], v, body_int[i, IDX_V], scratch)
        for r in range(6):
            vel[r] += scratch[r]
        cross_motion(vel, scratch, row[BIAS_ACC:BIAS_ACC + 6])
        articulated_inertia = row[ART_INERTIA:ART_INERTIA + 36]
        for k in range(36):
            articulated_inertia[k] = body_row[SPATIAL_INERTIA + k]
        bias_force = row[FORCE:FORCE + 6]
        rigid_inertia_times(articulated_inertia, vel, scratch)
        for r in range(6):
            bias_force[r] = -row[FEXT + r]
        add_cross_force(vel, scratch, bias_force)
    # ---- pass 2, tips -> base: project each body's articulated inertia and load on its parent
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        joint_type = body_int[i, JOINT_TYPE]
        row = work[i]
        body_row = body_float[i]
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        articulated_inertia = row[ART_INERTIA:ART_INERTIA + 36]
        bias_force = row[FORCE:FORCE + 6]
        u_mat = row[U_MAT:U_MAT + 36]
        d_inv = row[D_INV:D_INV + 36]
        u_tau = row[U_TAU:U_TAU + 6]
        scratch = row[SCRATCH:SCRATCH + 36]
        if k == 1:
            # one axis a: C_i = [a; 0] (prismatic) or [0; a] (revolute), so U = M*_i C_i reads
            # three columns of M*_i, N_i is a scalar, and the update is a rank-1 correction
            offset = 3 if joint_type == JOINT_REVOLUTE else 0
            ax = body_row[AXIS]
            ay = body_row[AXIS + 1]
            az = body_row[AXIS + 2]
            for r in range(6):
                u_mat[r] = (articulated_inertia[6 * r + offset] * ax
                            + articulated_inertia[6 * r + offset + 1] * ay
                            + articulated_inertia[6 * r + offset + 2] * az)
            n_joint = ax * u_mat[offset] + ay * u_mat[offset + 1] + az * u_mat[offset + 2]
            if not n_joint > 1e-13 * (abs(articulated_inertia[0]) + abs(articulated_inertia[21])):
                return STATUS_SINGULAR + i
            d_inv[0] = 1.0 / n_joint
            rate = v[iv]
            u = (tau[iv] - ax * bias_force[offset] - ay * bias_force[offset + 1]
                 - az * bias_force[offset + 2])
            if body_row[DAMPING] != 0.0 or body_row[FRICTION] != 0.0:
                u -= (body_row[DAMPING] * rate
                      + body_row[FRICTION] * math.tanh(rate / body_row[FRICTION_SPEED]))
            u_tau[0] = u
            if parent == 0:
                continue
            # M*_i (1 - P_i) = M*_i - U U^T / N_i               [THEORY §2 step 2; 002 eq. 18]
            for r in range(6):
                ur = u_mat[r] * d_inv[0]
                scratch[r] = ur
                for c in range(6):
                    articulated_inertia[6 * r + c] -= ur * u_mat[c]
            # p^a = p^A + (M*_i - U U^T / N_i) a_rel,i + U u / N_i   [THEORY §2 step 2]
            bias_acc = row[BIAS_ACC:BIAS_ACC + 6]
            for r in range(6):
                s = scratch[r] * u
                for c in range(6):
                    s += articulated_inertia[6 * r + c] * bias_acc[c]
                bias_force[r] += s
        else:
            # U = M*_i C_i;  N_i = C_i^T M*_i C_i;  u = tau_i + tau_passive - C_i^T p^A_i
            for j in range(k):
                inertia_times(articulated_inertia,
                              body_row[MOTION_SUBSPACE + 6 * j:MOTION_SUBSPACE + 6 * j + 6],
                              u_mat[6 * j:6 * j + 6])
            for a in range(k):
                for b in range(k):
                    s = 0.0
                    for r in range(6):
                        s += body_row[MOTION_SUBSPACE + 6 * a + r] * u_mat[6 * b + r]
                    scratch[a * k + b] = s
            if not invert_spd(scratch, k, d_inv):
                return STATUS_SINGULAR + i
            for j in range(k):
                rate = v[iv + j]
                s = (tau[iv + j] - body_row[DAMPING + j] * rate
                     - body_row[FRICTION + j] * math.tanh(rate / body_row[FRICTION_SPEED]))
                for r in range(6):
                    s -= body_row[MOTION_SUBSPACE + 6 * j + r] * bias_force[r]
                u_tau[j] = s
            if parent == 0:
                continue
            # scratch = U N^-1 (6 x k, column-major)
            for j in range(k):
                for r in range(6):
                    s = 0.0
                    for m in range(k):
                        s += u_mat[6 * m + r] * d_inv[m * k + j]
                    scratch[6 * j + r] = s
            # M*_i (1 - P_i) = M*_i - U N^-1 U^T                [THEORY §2 step 2; 002 eq. 18]
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for j in range(k):
                        s += scratch[6 * j + r] * u_mat[6 * j + c]
                    articulated_inertia[6 * r + c] -= s
            # p^a = p^A + (M*_i - U N^-1 U^T) a_rel,i + U N^-1 u     [THEORY §2 step 2]
            bias_acc = row[BIAS_ACC:BIAS_ACC + 6]
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += articulated_inertia[6 * r + c] * bias_acc[c]
                for j in range(k):
                    s += scratch[6 * j + r] * u_tau[j]
                bias_force[r] += s
        # M*_p += B_pi^T (...) B_pi ; p^A_p += B_pi^T p^a
        rot = row[ROT:ROT + 9]
        pos = row[POS:POS + 3]
        add_inertia_to_parent(rot, pos, articulated_inertia,
                              row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 36],
                              work[parent, ART_INERTIA:ART_INERTIA + 36])
        add_force_to_parent(rot, pos, bias_force, work[parent, FORCE:FORCE + 6])
    # ---- pass 3, base -> tips: eta'_i = N_i^-1 (u_i - U_i^T (B_pi a_p + a_rel,i))    [THEORY §2 step 3]
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        row = work[i]
        body_row = body_float[i]
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        acc = row[ACC:ACC + 6]
        motion_to_child(row[ROT:ROT + 9], row[POS:POS + 3], work[parent, ACC:ACC + 6], acc)
        for r in range(6):
            acc[r] += row[BIAS_ACC + r]
        if k == 1:
            offset = 3 if body_int[i, JOINT_TYPE] == JOINT_REVOLUTE else 0
            s = row[U_TAU]
            for r in range(6):
                s -= row[U_MAT + r] * acc[r]
            qdd = s * row[D_INV]
            qdd_out[iv] = qdd
            acc[offset] += body_row[AXIS] * qdd
            acc[offset + 1] += body_row[AXIS + 1] * qdd
            acc[offset + 2] += body_row[AXIS + 2] * qdd
            continue
        articulated_step(row, body_row, k, row[U_TAU:U_TAU + 6], acc, qdd_out, iv)
    return STATUS_OK
