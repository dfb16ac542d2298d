"""Force elements on flexible trees in the compiled rollouts (kernels/rollout.py), as
robot.forward_dynamics runs them (robot.py _apply_loads with robot/flexible_force_loads.py and
FlexibleTree.set_loads): the elements' loads at (q, v) (kernels/flexible_forces.py: body wrenches
at the deformed ends, in the bodies' reference frames, and generalized forces: joint springs and
the elastic rows Phi_t^T F + (G Phi_r)^T T), the body wrenches into the loaded workspace's FEXT
(zeroed, then added, as set_loads), tau + the generalized forces, and the flexible forward
dynamics on that workspace (kernels/flexible_dynamics.py).

flexible: robot/rollout_compiled.py's tuple (fint, ffloat, fdata, work, fwork, element_int,
element_float, end_int, end_float, end_data, end_state, body_wrench, end_wrench, joint_force,
values, scratch, tau_loaded): the model arrays shared, the workspaces and outputs per thread.
Without such elements element_int has no rows.

With drives the Plant's compensation is robot.inverse_dynamics(q, v, 0) with the same loads
(robot.py _tree_inverse_dynamics: the loads into the workspace, the flexible RNEA on it, minus
the elements' generalized forces): flexible_loaded_inverse_dynamics.
"""
from numba import njit

from ..model.flexible.layout import FEXT
from .flexible_dynamics import forward_dynamics as _flexible_forward_dynamics
from .flexible_dynamics import inverse_dynamics as _flexible_inverse_dynamics
from .flexible_forces import flexible_force_loads

X_ELEMENT_INT = 5   # the tuple's element_int (no rows: no elements)


@njit(cache=True, nogil=True, inline="always")
def _load(flexible, q, v):
    """The elements' loads at (q, v): body wrenches into the loaded workspace (FEXT), the
    generalized forces into flexible[13]."""
    (fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float, end_data,
     end_state, body_wrench, end_wrench, joint_force, values, scratch, tau_loaded) = flexible
    flexible_force_loads(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int,
                         end_float, end_data, q, v, end_state, body_wrench, end_wrench,
                         joint_force, values, scratch)
    for i in range(body_wrench.shape[0]):   # set_loads(None, body_wrench): zero_loads, then +=
        for r in range(6):
            work[i, FEXT + r] = 0.0
            work[i, FEXT + r] += body_wrench[i, r]


@njit(cache=True, nogil=True)
def flexible_loaded_forward_dynamics(flexible, q, v, tau, out):
    """out (nv,) = f(q, v, tau) with the force elements on a flexible tree (module docstring).
    Returns the forward dynamics' status."""
    _load(flexible, q, v)
    fint, ffloat, fdata, work, fwork = flexible[:5]
    joint_force, tau_loaded = flexible[13], flexible[16]
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return _flexible_forward_dynamics(fint, ffloat, fdata, work, fwork, q, v, tau_loaded, out)


@njit(cache=True, nogil=True)
def flexible_loaded_inverse_dynamics(flexible, q, v, qdd, out):
    """out (nv,) = ID(q, v, qdd) with the force elements on a flexible tree, as
    robot.inverse_dynamics: the flexible RNEA on the loaded workspace minus the elements'
    generalized forces (joint and elastic rows). Returns the RNEA's status."""
    _load(flexible, q, v)
    status = _flexible_inverse_dynamics(flexible[0], flexible[1], flexible[2], flexible[3],
                                        flexible[4], q, v, qdd, out)
    if status:
        return status
    joint_force = flexible[13]
    for i in range(out.shape[0]):
        out[i] -= joint_force[i]
    return 0
