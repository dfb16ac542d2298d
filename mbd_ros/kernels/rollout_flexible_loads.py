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

With prescribed joints the stage dynamics are robot.py _forward_dynamics_general's hybrid
path: tau + the generalized forces, M (the tree's C entry: M does not depend on the loads) and
h = the flexible RNEA at qdd = 0 on the loaded workspace, then kernels/hybrid.py as
kernels/rollout_prescribed.py (flexible_prescribed_forward_dynamics; the same kernels in the same
order: bit for bit).
"""
from numba import njit

from ..model.flexible.layout import FEXT
from .flexible_dynamics import forward_dynamics as _flexible_forward_dynamics
from .flexible_dynamics import inverse_dynamics as _flexible_inverse_dynamics
from .entry_call import call_entry
from .hybrid import hybrid_tree_solve
from .rollout_prescribed import (P_BIAS, P_FIXED_V, P_FREE, P_LOWER, P_MASS, P_QDD, P_RHS,
                                 P_TABLE, P_TORQUES, P_TAU_LOADED, P_ZERO)
from .flexible_forces import flexible_force_loads

X_ELEMENT_INT = 5   # the tuple's element_int (no rows: no elements)
X_JOINT_FORCE = 13  # the tuple's joint_force (nv,): the elements' generalized forces


@njit(cache=True, nogil=True, inline="always")
def _load(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float,
          end_data, end_state, body_wrench, end_wrench, joint_force, values, scratch, q, v):
    """The elements' loads at (q, v): body wrenches into the loaded workspace (FEXT), the
    generalized forces into joint_force. (The arrays unpacked once by the caller: each tuple
    access of the tuple's arrays costs reference counts per call, ~10 % of this path.)"""
    flexible_force_loads(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int,
                         end_float, end_data, q, v, end_state, body_wrench, end_wrench,
                         joint_force, values, scratch)
    for i in range(body_wrench.shape[0]):   # set_loads(None, body_wrench): zero_loads, then +=
        for r in range(6):
            work[i, FEXT + r] = 0.0
            work[i, FEXT + r] += body_wrench[i, r]


@njit(cache=True, nogil=True, inline="always")
def load_flexible_tree(flexible, q, v, tau):
    """The elements' loads at (q, v) into the tuple's loaded workspace (FEXT), and tau (nv,) +
    their generalized forces into its tau_loaded, which is returned (closed loops on a flexible
    tree: kernels/flexible_loop_part.py runs its dense solve on that workspace)."""
    (fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float, end_data,
     end_state, body_wrench, end_wrench, joint_force, values, scratch, tau_loaded) = flexible
    _load(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float,
          end_data, end_state, body_wrench, end_wrench, joint_force, values, scratch, q, v)
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return tau_loaded


@njit(cache=True, nogil=True)
def flexible_loaded_forward_dynamics(flexible, q, v, tau, out):
    """out (nv,) = f(q, v, tau) with the force elements on a flexible tree (module docstring).
    Returns the forward dynamics' status. (load_flexible_tree's lines written out: calling it
    and unpacking the tree's arrays again measured 2-5 % slower on the flexible arm's rollouts
    with force elements, bench_rollout.py --robots "flexible arm", A/B at 2e54579.)"""
    (fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float, end_data,
     end_state, body_wrench, end_wrench, joint_force, values, scratch, tau_loaded) = flexible
    _load(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float,
          end_data, end_state, body_wrench, end_wrench, joint_force, values, scratch, q, v)
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return _flexible_forward_dynamics(fint, ffloat, fdata, work, fwork, q, v, tau_loaded, out)


@njit(cache=True, nogil=True)
def flexible_loaded_inverse_dynamics(flexible, q, v, qdd, out):
    """out (nv,) = ID(q, v, qdd) with the force elements on a flexible tree, as
    robot.inverse_dynamics: the flexible RNEA on the loaded workspace minus the elements'
    generalized forces (joint and elastic rows). Returns the RNEA's status."""
    (fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float, end_data,
     end_state, body_wrench, end_wrench, joint_force, values, scratch, tau_loaded) = flexible
    _load(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float,
          end_data, end_state, body_wrench, end_wrench, joint_force, values, scratch, q, v)
    status = _flexible_inverse_dynamics(fint, ffloat, fdata, work, fwork, q, v, qdd, out)
    if status:
        return status
    for i in range(out.shape[0]):
        out[i] -= joint_force[i]
    return 0


MASS_MATRIX = 1   # entries[]: as kernels/rollout.py MM


@njit(cache=True, nogil=True)
def flexible_prescribed_forward_dynamics(entries, bound, dims, prescribed, flexible, n, c, q, v,
                                         tau, out):
    """out (nv,) = the hybrid dynamics of a flexible tree with force elements at (q, v) for tau
    (nv,), the prescribed joints' accelerations from table[n, c] (module docstring; prescribed:
    kernels/rollout_prescribed.py's tuple). Returns 0, or the failing kernel's status (1: M_ff
    not positive definite)."""
    (fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float, end_data,
     end_state, body_wrench, end_wrench, joint_force, values, scratch, tau_loaded) = flexible
    _load(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int, end_float,
          end_data, end_state, body_wrench, end_wrench, joint_force, values, scratch, q, v)
    total, bias, zero = prescribed[P_TAU_LOADED], prescribed[P_BIAS], prescribed[P_ZERO]
    for i in range(tau.shape[0]):   # tau + the elements' generalized forces
        total[i] = tau[i] + joint_force[i]
    status = _flexible_inverse_dynamics(fint, ffloat, fdata, work, fwork, q, v, zero, bias)
    if status:
        return status
    mass = prescribed[P_MASS]
    status = call_entry(entries[MASS_MATRIX], bound, dims, q, q, q, mass)
    if status:
        return status
    table, fixed_v, qdd_p = prescribed[P_TABLE], prescribed[P_FIXED_V], prescribed[P_QDD]
    for j in range(fixed_v.shape[0]):
        qdd_p[j] = table[n, c, j, 2]
    return hybrid_tree_solve(mass, bias, total, prescribed[P_FREE], fixed_v, qdd_p,
                             prescribed[P_LOWER], prescribed[P_RHS], out, prescribed[P_TORQUES])
