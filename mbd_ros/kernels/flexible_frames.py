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

from .flexible_dynamics import body_kinematics, set_base
from .flexible_forces import ES_R, ES_W, ES_XD, compute_end_state


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
    """jacobian_out (n_ends, 6, nv): T_e = jacobian_out[e] v, one kinematics pass per column.
    unit (nv,): scratch. end_state holds the poses afterwards."""
    nv = unit.shape[0]
    for k in range(nv):
        for j in range(nv):
            unit[j] = 0.0
        unit[k] = 1.0
        _frame_twists(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data, q, unit,
                      end_state, jacobian_out, k)
