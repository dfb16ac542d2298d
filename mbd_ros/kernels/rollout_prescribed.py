"""Prescribed (rheonomic) joints in the compiled rollouts (kernels/rollout.py), as robot.step runs
them (robot/integrators.py Simulator with `prescribed`, robot/prescribed.py).

A trajectory is a Python callable, so robot/rollout_prescribed.py samples it before the
compiled call, at exactly the times the Simulator samples it, into a table read here:

    table[n, c, j, :] = (q_j, qd_j, qdd_j) of prescribed joint j at t_n + c h / 2,

n the integrator step of the rollout (row k, substep s, inner step i: n = (k S + s) I + i),
t_n its start time, c = 0 (the first stage; every stage of implicit schemes), 1 (RK4's middle
stages), 2 (RK4's last stage and the state after the step).

At every stage the forward dynamics are the hybrid dynamics of the tree (docs/theory.md §3,
robot/prescribed.py solve): with M the tree's mass matrix and h = ID(q, v, 0) its bias (the
force elements' loads in the workspace, their joint forces added to tau, as
robot._forward_dynamics_general runs them),

    M_ff qdd_f = tau_f - h_f - M_fp qdd_p,   qdd_p from the table      (kernels/hybrid.py)

and after each integrator step the prescribed joints are set on their trajectories, q_p = q(t +
h), v_p = qd(t + h) (Simulator.advance), before the divergence check.

prescribed: the tuple of robot/rollout_prescribed.py (table (n_steps, 3, np, 3), fixed_v (np,)
int64 v indices in the dict's order, fixed_q (np,) int64 q indices, free (nf,) int64 v indices
ascending; then per-thread scratch: mass (nv, nv), lower (nv, nv), rhs (nv,), bias (nv,),
qdd_p (np,), torques (nv,), tau_loaded (nv,), zero (nv,)).
"""
from numba import njit

from .checked import inverse_dynamics as _tree_inverse_dynamics
from .entry_call import call_entry
from .force_elements import force_element_loads
from .hybrid import hybrid_tree_solve
from .wrenches import load_link_wrenches

FIRST_STAGE, MIDDLE_STAGE, LAST_STAGE = 0, 1, 2   # the table's sample index c
P_TABLE, P_FIXED_V, P_FIXED_Q, P_FREE, P_MASS, P_LOWER, P_RHS, P_BIAS, P_QDD, P_TORQUES, \
    P_TAU_LOADED, P_ZERO = range(12)
MASS_MATRIX, INVERSE_DYNAMICS = 1, 2   # entries[]: as kernels/rollout.py MM, ID


@njit(cache=True, nogil=True)
def prescribed_forward_dynamics(entries, bound, dims, forces, loaded, prescribed, n, c, q, v, tau,
                                out):
    """out (nv,) = the hybrid forward dynamics at (q, v) for tau (nv,) with the prescribed joints'
    accelerations of table[n, c] (robot.forward_dynamics(q, v, tau, prescribed=...) on a tree).
    loaded: the force elements' path (forces: kernels/rollout.py's tuple) instead of the C
    entries. Returns 0, or the failing kernel's status (1: M_ff not positive definite)."""
    table, fixed_v, free = prescribed[P_TABLE], prescribed[P_FIXED_V], prescribed[P_FREE]
    mass, lower, rhs = prescribed[P_MASS], prescribed[P_LOWER], prescribed[P_RHS]
    bias, qdd_p, torques = prescribed[P_BIAS], prescribed[P_QDD], prescribed[P_TORQUES]
    zero = prescribed[P_ZERO]
    total = tau
    if loaded:   # robot._apply_loads, then the tree's ID on the loaded workspace
        (body_int, body_float, work, link_int, link_float, link_fext, element_int,
         element_float, link_wrench, joint_force, values, scratch) = forces
        force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                            element_float, q, v, link_wrench, joint_force, values, scratch)
        load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
        total = prescribed[P_TAU_LOADED]
        for i in range(tau.shape[0]):
            total[i] = tau[i] + joint_force[i]
        status = _tree_inverse_dynamics(body_int, body_float, work, q, v, zero, bias)
    else:
        status = call_entry(entries[INVERSE_DYNAMICS], bound, dims, q, v, zero, bias)
    if status:
        return status
    status = call_entry(entries[MASS_MATRIX], bound, dims, q, q, q, mass)
    if status:
        return status
    for j in range(fixed_v.shape[0]):
        qdd_p[j] = table[n, c, j, 2]
    return hybrid_tree_solve(mass, bias, total, free, fixed_v, qdd_p, lower, rhs, out, torques)


@njit(cache=True, nogil=True)
def place_prescribed(prescribed, n, q, v):
    """The prescribed joints onto their trajectories at the end of integrator step n
    (Simulator.advance): q[fixed_q] = q_p(t + h), v[fixed_v] = qd_p(t + h)."""
    table, fixed_v, fixed_q = prescribed[P_TABLE], prescribed[P_FIXED_V], prescribed[P_FIXED_Q]
    for j in range(fixed_v.shape[0]):
        q[fixed_q[j]] = table[n, LAST_STAGE, j, 0]
        v[fixed_v[j]] = table[n, LAST_STAGE, j, 1]
