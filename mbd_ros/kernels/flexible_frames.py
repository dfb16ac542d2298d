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

from ..model.flexible.layout import VEL
from .flexible_dynamics import body_kinematics, body_twist, set_base
from .flexible_forces import ES_R, ES_W, ES_XD, compute_end_state, end_velocity


@njit(cache=True)
def _frame_twists(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, v,
                  end_state, twist_out, column):
    """Kinematics with velocities v, then for every end e: twist_out[e, :, column] = T_e."""
    set_base(ffloat, work, True)
    for i in range(1, fint.shape[0]):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, True)
    for e in range(end_int.shape[0]):
        compute_end_state(work, end_int, end_float, end_data, q, v, e, end_state)
        _twist_in_frame_axes(end_state, e, twist_out, column)


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
    body twists (flexible_dynamics.body_twist) and the ends' velocities
    (flexible_forces.end_velocity), without the poses and the bias accelerations."""
    for r in range(6):
        work[0, VEL + r] = 0.0
    for i in range(1, fint.shape[0]):
        body_twist(fint, ffloat, work, fwork, i, v)
    for e in range(end_int.shape[0]):
        end_velocity(work, end_int, end_data, v, e, end_state)
        _twist_in_frame_axes(end_state, e, twist_out, column)


@njit(cache=True, inline="always")
def _twist_in_frame_axes(end_state, e, twist_out, column):
    """twist_out[e, :, column] = [R^T x'; R^T omega] of end e (world velocities ES_XD, ES_W,
    the frame's world rotation ES_R)."""
    for r in range(3):
        lin = 0.0
        ang = 0.0
        for m in range(3):
            rot = end_state[e, ES_R + 3 * m + r]          # (R^T)_rm
            lin += rot * end_state[e, ES_XD + m]
            ang += rot * end_state[e, ES_W + m]
        twist_out[e, r, column] = lin
        twist_out[e, 3 + r, column] = ang
