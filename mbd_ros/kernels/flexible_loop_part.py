"""The part tuple of closed loops on a flexible tree in the compiled rollouts (the items'
indices) and the stage dynamics on it, apart from kernels/rollout_flexible_loops.py so that
kernels/rollout_implicit.py's symplectic step can call them (rollout_flexible_loops imports
the implicit integrators' helpers). The tuple: kernels/rollout_flexible_loops.py's docstring."""
from numba import njit

from .flexible_loop_dynamics import flexible_loop_forward_dynamics

# items of the part tuple
FL_TREE, FL_ENDS, FL_CUT_INT, FL_CUT_DATA, FL_WORKSPACE, FL_RESIDUAL, FL_JACOBIAN, FL_LAM, \
    FL_INFO, FL_GAINS, FL_DRIVES = range(11)


@njit(cache=True, nogil=True)
def flexible_loops_forward_dynamics(part, q, v, tau, out):
    """out (nv,) = robot.forward_dynamics(q, v, tau) of the flexible tree with closed loops
    (kernels/flexible_loop_dynamics.py). Returns 0 or its status."""
    gains = part[FL_GAINS]
    return flexible_loop_forward_dynamics(part[FL_TREE], part[FL_ENDS], part[FL_CUT_INT],
                                          part[FL_CUT_DATA], part[FL_WORKSPACE], q, v, tau,
                                          gains[0], gains[1], part[FL_RESIDUAL],
                                          part[FL_JACOBIAN], out, part[FL_LAM], part[FL_INFO])
