"""Recursive Newton-Euler inverse dynamics (docs/theory.md §2, last paragraph; Featherstone's RNEA).

tau = M(q) qdd + b(q, v) - tau_passive, and the wrench f^p_i every joint transmits.
"""
import math

from numba import njit

from . import signatures
from .entry import entry_point

from ..model.layout import (FRICTION_SPEED, JOINT_REVOLUTE, STATUS_SHAPE_OUT, ACC, BIAS_ACC,
                            DAMPING, FEXT, FORCE, FRICTION, IDX_Q, IDX_V, JOINT_NV_COL,
                            JOINT_TYPE, PARENT, ROT, SCRATCH, SPATIAL_INERTIA, STATUS_OK,
                            TRANSFORM_SCRATCH, VEL)
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, all_finite, overlaps_any
from .kinematics import revolute_pose, state_status, joint_force, joint_motion, joint_pose, set_base_motion
from .spatial import add_cross_force, add_force_to_parent, cross_motion, motion_to_child, rigid_inertia_times


@entry_point(signatures.STATE_KERNEL)
def inverse_dynamics(body_int, body_float, work, q, v, qdd, tau_out):
    """Drive forces tau_out (nv,) for (q, v, qdd); work[:, FORCE] = joint wrenches f^p_i.

    Model: body_int, body_float. Data in/out: work (FEXT read: external wrench per body, body frame).
    Returns a status code (layout.STATUS_*; output_checks.STATUS_ALIASED when tau_out overlaps
    q, v or qdd, before anything is written; STATUS_NOT_FINITE when the result overflowed);
    never raises.
    """
    if overlaps_any(tau_out, q, v, qdd):
        return STATUS_ALIASED
    status = state_status(body_int, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    if tau_out.shape[0] != v.shape[0]:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    set_base_motion(body_float, work)
    # ---- forward pass, base -> tips: kinematics and the net wrench each body needs
    for i in range(1, nb + 1):
        parent = body_int[i, PARENT]
        nv_joint = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        # v_i = B_pi v_p + C_i eta_i                                          [002 eq. 6]
        motion_to_child(work, i, ROT, work, parent, VEL, work, i, VEL)
        joint_motion(body_float, i, nv_joint, v, iv, work, i, SCRATCH)
        for r in range(6):
            work[i, VEL + r] += work[i, SCRATCH + r]
        # a_rel,i = v_i x (C_i eta_i)
        cross_motion(work, i, VEL, work, i, SCRATCH, work, i, BIAS_ACC)
        # a_i = B_pi a_p + C_i eta'_i + a_rel,i                               [002 eq. 7]
        motion_to_child(work, i, ROT, work, parent, ACC, work, i, ACC)
        joint_motion(body_float, i, nv_joint, qdd, iv, work, i, SCRATCH)
        for r in range(6):
            work[i, ACC + r] += work[i, SCRATCH + r] + work[i, BIAS_ACC + r]
        # body equation: f_net = M_i a_i - f^tc_i,  f^tc = f^ext - v x* M v   [002 eqs. 3-4]
        rigid_inertia_times(body_float, i, SPATIAL_INERTIA, work, i, ACC, work, i, FORCE)
        rigid_inertia_times(body_float, i, SPATIAL_INERTIA, work, i, VEL, work, i, SCRATCH)
        add_cross_force(work, i, VEL, work, i, SCRATCH, work, i, FORCE)
        for r in range(6):
            work[i, FORCE + r] -= work[i, FEXT + r]
    # ---- backward pass, tips -> base: f^p_i = f_net,i + sum_c B_ci^T f^p_c   [002 eqs. 3-4]
    #      tau_i = C_i^T f^p_i   [002 eq. 12, the drive carried explicitly as in docs/theory.md §2]
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        iv = body_int[i, IDX_V]
        nv_joint = body_int[i, JOINT_NV_COL]
        joint_force(body_float, i, nv_joint, work, i, FORCE, tau_out, iv)
        # the drive supplies what the joint's damping and friction do not
        for j in range(nv_joint):
            damping = body_float[i, DAMPING + j]
            friction = body_float[i, FRICTION + j]
            if damping != 0.0 or friction != 0.0:
                rate = v[iv + j]
                tau_out[iv + j] += damping * rate + friction * math.tanh(rate / body_float[i, FRICTION_SPEED])
        if parent > 0:
            add_force_to_parent(work, i, ROT, work, i, FORCE, work, parent, FORCE)
    if not all_finite(tau_out):
        return STATUS_NOT_FINITE
    return STATUS_OK


@njit(cache=True)
def remove_passive_forces(body_int, body_float, v, tau):
    """tau -= damping v + friction tanh(v / friction_speed) per dof: the passive term that
    inverse_dynamics adds, the same expression, so that bias_forces = inverse_dynamics(q, v, 0)
    minus it is the tree's b(q, v) alone without a second pass over the tree."""
    for i in range(1, body_int.shape[0]):
        iv = body_int[i, IDX_V]
        for j in range(body_int[i, JOINT_NV_COL]):
            damping = body_float[i, DAMPING + j]
            friction = body_float[i, FRICTION + j]
            if damping != 0.0 or friction != 0.0:
                rate = v[iv + j]
                tau[iv + j] -= damping * rate + friction * math.tanh(rate / body_float[i, FRICTION_SPEED])
