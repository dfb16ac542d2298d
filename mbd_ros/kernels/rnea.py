"""Recursive Newton-Euler inverse dynamics (docs/theory.md §2, last paragraph; Featherstone's RNEA).

tau = M(q) qdd + b(q, v) - tau_passive, and the wrench f^p_i every joint transmits.
"""
import math

from numba import njit

from . import signatures

from ..layout import (FRICTION_SPEED, STATUS_SHAPE_OUT, ACC, BIAS_ACC, DAMPING, FEXT, FORCE, FRICTION, IDX_Q, IDX_V, JOINT_NV_COL,
                      JOINT_TYPE, PARENT, POS, ROT, SCRATCH, SPATIAL_INERTIA, STATUS_OK,
                      TRANSFORM_SCRATCH, VEL)
from .kinematics import check_state, joint_force, joint_motion, joint_pose, set_base_motion
from .spatial import add_cross_force, add_force_to_parent, cross_motion, motion_to_child, rigid_inertia_times


@njit(signatures.STATE_KERNEL, cache=True)
def inverse_dynamics(body_int, body_float, work, q, v, qdd, tau_out):
    """Drive forces tau_out (nv,) for (q, v, qdd); work[:, FORCE] = joint wrenches f^p_i.

    Model: body_int, body_float. Data in/out: work (FEXT read: external wrench per body, body frame).
    Returns a status code (layout.STATUS_*); never raises.
    """
    status = check_state(body_int, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    if tau_out.shape[0] != v.shape[0]:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    set_base_motion(body_float, work)
    # ---- forward pass, base -> tips: kinematics and the net wrench each body needs
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        row = work[i]
        body_row = body_float[i]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        rot = row[ROT:ROT + 9]
        pos = row[POS:POS + 3]
        vel = row[VEL:VEL + 6]
        acc = row[ACC:ACC + 6]
        bias_acc = row[BIAS_ACC:BIAS_ACC + 6]
        scratch = row[SCRATCH:SCRATCH + 6]
        joint_pose(body_int[i, JOINT_TYPE], body_row, q, body_int[i, IDX_Q], rot, pos,
                   row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 12])
        # v_i = B_pi v_p + C_i eta_i                                          [002 eq. 6]
        motion_to_child(rot, pos, work[parent, VEL:VEL + 6], vel)
        joint_motion(body_row, nv_joint, v, iv, scratch)
        for r in range(6):
            vel[r] += scratch[r]
        # a_rel,i = v_i x (C_i eta_i)
        cross_motion(vel, scratch, bias_acc)
        # a_i = B_pi a_p + C_i eta'_i + a_rel,i                               [002 eq. 7]
        motion_to_child(rot, pos, work[parent, ACC:ACC + 6], acc)
        joint_motion(body_row, nv_joint, qdd, iv, scratch)
        for r in range(6):
            acc[r] += scratch[r] + bias_acc[r]
        # body equation: f_net = M_i a_i - f^tc_i,  f^tc = f^ext - v x* M v   [002 eqs. 3-4]
        force = row[FORCE:FORCE + 6]
        inertia = body_row[SPATIAL_INERTIA:SPATIAL_INERTIA + 36]
        rigid_inertia_times(inertia, acc, force)
        rigid_inertia_times(inertia, vel, scratch)
        add_cross_force(vel, scratch, force)
        for r in range(6):
            force[r] -= row[FEXT + r]
    # ---- backward pass, tips -> base: f^p_i = f_net,i + sum_c B_ci^T f^p_c   [002 eqs. 3-4]
    #      tau_i = C_i^T f^p_i   [002 eq. 12, the drive carried explicitly as in THEORY §2]
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        row = work[i]
        iv = body_int[i, IDX_V]
        nv_joint = body_int[i, JOINT_NV_COL]
        joint_force(body_float[i], nv_joint, row[FORCE:FORCE + 6], tau_out, iv)
        # the drive supplies what the joint's damping and friction do not
        for j in range(nv_joint):
            damping = body_float[i, DAMPING + j]
            friction = body_float[i, FRICTION + j]
            if damping != 0.0 or friction != 0.0:
                rate = v[iv + j]
                tau_out[iv + j] += damping * rate + friction * math.tanh(rate / body_float[i, FRICTION_SPEED])
        if parent > 0:
            add_force_to_parent(row[ROT:ROT + 9], row[POS:POS + 3], row[FORCE:FORCE + 6],
                                work[parent, FORCE:FORCE + 6])
    return STATUS_OK
