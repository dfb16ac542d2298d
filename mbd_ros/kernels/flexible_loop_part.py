"""The part tuple of closed loops on a flexible tree in the compiled rollouts (the items'
indices) and the stage dynamics on it, apart from kernels/rollout_flexible_loops.py so that
kernels/rollout_implicit.py's symplectic step can call them (rollout_flexible_loops imports
the implicit integrators' helpers). The tuple: kernels/rollout_flexible_loops.py's docstring;
its item FL_LOADS is kernels/rollout_flexible_loads.py's tuple of the robot's force elements
(no element rows without them), whose loaded workspace is the tree's (the same arrays).

(The loads are a runtime branch on the element rows, not a None argument: every call here is a
~14 µs dense solve, against which the branch and the tuple's binding are noise.)"""
from numba import njit

from .flexible_loop_dynamics import flexible_loop_forward_dynamics
from .rollout_flexible_loads import X_ELEMENT_INT, load_flexible_tree

# items of the part tuple
FL_TREE, FL_ENDS, FL_CUT_INT, FL_CUT_DATA, FL_WORKSPACE, FL_RESIDUAL, FL_JACOBIAN, FL_LAM, \
    FL_INFO, FL_GAINS, FL_DRIVES, FL_LOADS = range(12)


@njit(cache=True, nogil=True)
def flexible_loops_forward_dynamics(part, q, v, tau, out):
    """out (nv,) = robot.forward_dynamics(q, v, tau) of the flexible tree with closed loops
    (kernels/flexible_loop_dynamics.py), with force elements (part[FL_LOADS] has element rows)
    their loads at (q, v) in the tree's workspace and tau + their generalized forces, as
    robot.forward_dynamics applies them (robot.py _apply_loads). Returns 0 or its status."""
    loads = part[FL_LOADS]
    if loads[X_ELEMENT_INT].shape[0] > 0:
        tau = load_flexible_tree(loads, q, v, tau)
    gains = part[FL_GAINS]
    return flexible_loop_forward_dynamics(part[FL_TREE], part[FL_ENDS], part[FL_CUT_INT],
                                          part[FL_CUT_DATA], part[FL_WORKSPACE], q, v, tau,
                                          gains[0], gains[1], part[FL_RESIDUAL],
                                          part[FL_JACOBIAN], out, part[FL_LAM], part[FL_INFO])
