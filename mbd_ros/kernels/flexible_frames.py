"""Poses, twists and twist Jacobians of frames riding on (possibly flexible) bodies: the cut-joint
frames of closed loops on robots with flexible links (robot/flexible_loops.py).

A frame is an "end" of kernels/flexible_forces.py (end_int, end_float, end_data): a point c and
axes in its body's reference frame, displaced on a flexible body to c + Phi_t q_f and turned by
the Cayley rotation of Phi_r q_f (the deformed-point kinematics of the child joints). Its twist
in its own (deformed) axes, T = [R^T x'; R^T omega] (body-fixed components: the d/dt of these
components is the frame's spatial acceleration in its axes), is linear in v: T = J_frame(q) v,
and J_frame's columns are the twists of unit velocities (one kinematics pass each, O(n nv)).
"""
from numba import njit

from ..model.flexible.layout import ATTACH, IDX_VF, NF, PARENT, ROT, SCRATCH, VEL, WORLD_ROT, XI
from .flexible_dynamics import add_joint_motion
from .flexible_dynamics import body_kinematics, set_base
from .flexible_forces import (END_BODY, END_IVF, END_NF, END_SHAPE, ES_G, ES_R, ES_SCALE, ES_U,
                              ES_W, ES_XD, compute_end_state)
from .spatial import motion_to_child


@njit(cache=True)
def _frame_twists(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, v,
                  end_state, twist_out, column):
    """Kinematics with velocities v, then for every end e: twist_out[e, :, column] = T_e."""
    set_base(ffloat, work, True)
    for i in range(1, fint.shape[0]):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, True)
    for e in range(end_int.shape[0]):
        compute_end_state(work, end_int, end_float, end_data, q, v, e, end_state)
        for r in range(3):
            lin = 0.0
            ang = 0.0
            for m in range(3):
                rot = end_state[e, ES_R + 3 * m + r]          # (R^T)_rm
                lin += rot * end_state[e, ES_XD + m]
                ang += rot * end_state[e, ES_W + m]
            twist_out[e, r, column] = lin
            twist_out[e, 3 + r, column] = ang


@njit(cache=True)
def frame_states(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, v,
                 end_state, twist_out):
    """World poses (end_state ES_X, ES_R) and twists twist_out (n_ends, 6, 1) of every frame."""
    _frame_twists(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, v,
                  end_state, twist_out, 0)


@njit(cache=True)
def frame_jacobians(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, unit,
                    end_state, jacobian_out):
    """jacobian_out (n_ends, 6, nv): T_e = jacobian_out[e] v. One kinematics pass for the poses
    (and the node Jacobians Xi, the ends' deformed points), then per column only the twists of
    a unit velocity (`_column_twists`: the velocity part of the kinematics, the same
    operations on the same poses: the columns equal those of a full kinematics pass with that
    unit velocity bit for bit, at ~1/3 of its cost on the sample flexible four-bar).
    unit (nv,): scratch. end_state holds the poses afterwards."""
    nv = unit.shape[0]
    for j in range(nv):
        unit[j] = 0.0
    _frame_twists(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, unit,
                  end_state, jacobian_out, 0)
    for k in range(nv):
        unit[k] = 1.0
        _column_twists(fint, ffloat, work, fwork, end_int, end_data, unit, end_state,
                       jacobian_out, k)
        unit[k] = 0.0


@njit(cache=True)
def _column_twists(fint, ffloat, work, fwork, end_int, end_data, v, end_state, twist_out,
                   column):
    """twist_out[e, :, column] = T_e for the velocity v at the poses of the last kinematics pass
    (ROT, POS, Xi, WORLD_ROT in work / fwork; the ends' u, g, scale and R in end_state): the
    body twists V_i = X (V_p + Xi qd_f,p) + S qd (flexible_dynamics._body_motion's velocity
    part) and the ends' twists (flexible_forces.compute_end_state's), without the poses and the
    bias accelerations."""
    for r in range(6):
        work[0, VEL + r] = 0.0
    for i in range(1, fint.shape[0]):
        p = fint[i, PARENT]
        att = fint[i, ATTACH]
        if att >= 0:
            xi = fint[i, XI]
            n_p = fint[p, NF]
            ivf = fint[p, IDX_VF]
            for r in range(6):
                s = 0.0
                for k in range(n_p):
                    s += fwork[xi + r * n_p + k] * v[ivf + k]
                work[i, SCRATCH + r] = work[p, VEL + r] + s
            motion_to_child(work, i, ROT, work, i, SCRATCH, work, i, VEL)
        else:
            motion_to_child(work, i, ROT, work, p, VEL, work, i, VEL)
        add_joint_motion(fint, ffloat, work, i, v, VEL)
    for e in range(end_int.shape[0]):
        body = end_int[e, END_BODY]
        n = end_int[e, END_NF]
        sh = end_int[e, END_SHAPE]
        t0 = t1 = t2 = 0.0          # Phi_t qd_f
        s0 = s1 = s2 = 0.0          # Phi_r qd_f
        if sh >= 0:
            ivf = end_int[e, END_IVF]
            for k in range(n):
                vk = v[ivf + k]
                t0 += end_data[sh + k] * vk
                t1 += end_data[sh + n + k] * vk
                t2 += end_data[sh + 2 * n + k] * vk
                s0 += end_data[sh + 3 * n + k] * vk
                s1 += end_data[sh + 4 * n + k] * vk
                s2 += end_data[sh + 5 * n + k] * vk
        u0, u1, u2 = end_state[e, ES_U], end_state[e, ES_U + 1], end_state[e, ES_U + 2]
        g0, g1, g2 = end_state[e, ES_G], end_state[e, ES_G + 1], end_state[e, ES_G + 2]
        scale = end_state[e, ES_SCALE]
        wx = work[body, VEL + 3] + scale * (s0 + 0.5 * (g1 * s2 - g2 * s1))
        wy = work[body, VEL + 4] + scale * (s1 + 0.5 * (g2 * s0 - g0 * s2))
        wz = work[body, VEL + 5] + scale * (s2 + 0.5 * (g0 * s1 - g1 * s0))
        ox = work[body, VEL + 3]
        oy = work[body, VEL + 4]
        oz = work[body, VEL + 5]
        vx = work[body, VEL] + oy * u2 - oz * u1 + t0
        vy = work[body, VEL + 1] + oz * u0 - ox * u2 + t1
        vz = work[body, VEL + 2] + ox * u1 - oy * u0 + t2
        for r in range(3):          # world velocities R_b v, R_b w, then R^T of them
            b0 = work[body, WORLD_ROT + 3 * r]
            b1 = work[body, WORLD_ROT + 3 * r + 1]
            b2 = work[body, WORLD_ROT + 3 * r + 2]
            end_state[e, ES_XD + r] = b0 * vx + b1 * vy + b2 * vz
            end_state[e, ES_W + r] = b0 * wx + b1 * wy + b2 * wz
        for r in range(3):
            lin = 0.0
            ang = 0.0
            for m in range(3):
                rot = end_state[e, ES_R + 3 * m + r]          # (R^T)_rm
                lin += rot * end_state[e, ES_XD + m]
                ang += rot * end_state[e, ES_W + m]
            twist_out[e, r, column] = lin
            twist_out[e, 3 + r, column] = ang
