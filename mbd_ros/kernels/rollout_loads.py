"""The force elements' loads in the compiled rollouts on rigid trees: forward and inverse dynamics
as robot.forward_dynamics / robot.inverse_dynamics run them with force elements (robot.py
_apply_loads: the elements' loads at (q, v), the link wrenches into the tree's loaded workspace,
the elements' joint forces added to tau, or subtracted from the inverse dynamics' result).

forces: kernels/rollout.py's `forces` tuple (robot/rollout_compiled.py
RolloutEngine.force_arrays): (body_int, body_float, work, link_int, link_float, link_fext,
element_int, element_float, link_wrench, joint_force, values, scratch), the last ones and the
workspace per thread.
"""
from numba import njit

from .aba import forward_dynamics as _tree_forward_dynamics
from .checked import inverse_dynamics as _tree_inverse_dynamics
from .force_elements import force_element_loads
from .wrenches import load_link_wrenches


@njit(cache=True, nogil=True, inline="always")
def _load(forces, q, v):
    """The elements' loads at (q, v): link wrenches into the loaded workspace (FEXT), the joint
    forces into forces[9]."""
    (body_int, body_float, work, link_int, link_float, link_fext, element_int, element_float,
     link_wrench, joint_force, values, scratch) = forces
    force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench, joint_force, values, scratch)
    load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)


@njit(cache=True, nogil=True)
def loaded_tree_forward_dynamics(forces, q, v, tau, out, tau_loaded):
    """out (nv,) = f(q, v, tau) with the force elements: the ABA on the loaded workspace for
    tau + the elements' joint forces (into tau_loaded (nv,)). Returns the kernel's status."""
    _load(forces, q, v)
    joint_force = forces[9]
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return _tree_forward_dynamics(forces[0], forces[1], forces[2], q, v, tau_loaded, out)


@njit(cache=True, nogil=True)
def loaded_tree_inverse_dynamics(forces, q, v, qdd, out):
    """out (nv,) = ID(q, v, qdd) with the force elements: the RNEA on the loaded workspace, minus
    the elements' joint forces (robot.inverse_dynamics). Returns the kernel's status."""
    _load(forces, q, v)
    status = _tree_inverse_dynamics(forces[0], forces[1], forces[2], q, v, qdd, out)
    if status:
        return status
    joint_force = forces[9]
    for i in range(out.shape[0]):
        out[i] -= joint_force[i]
    return 0
