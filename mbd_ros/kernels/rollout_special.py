"""The stage dynamics of the compiled rollouts' parts that replace the plain forward dynamics
(kernels/rollout.py): prescribed joints (kernels/rollout_prescribed.py), mimic couplings
(kernels/rollout_mimic.py) and force elements on flexible trees
(kernels/rollout_flexible_loads.py). One dispatcher, inlined into kernels/rollout.py's stages:
a call that has none of these parts passes parts=None there and numba prunes the branch (the
plain path never binds these tuples), and a call that has them unpacks the tuples in the
caller's frame instead of at every stage call (each array a tuple holds costs a reference count
per call: not inlined, the flexible force elements' RK4 step cost 13.2 µs, inlined 12.0, 0.5 µs
under h17-rebuild's).

parts = (prescribed, mimic, flexible, both): the three modules' tuples, each with empty index
arrays when the robot or the call has none of that part (robot/rollout_compiled.py), and
kernels/rollout_prescribed_mimic.py's for prescribed joints together with mimic couplings;
prescribed joints with force elements on a flexible tree take
kernels/rollout_flexible_loads.py's hybrid path (the engine refuses the other combinations,
robot/rollout_prescribed.py, robot/rollout_flexible_loads.py).
"""
from numba import njit

from .rollout_flexible_loads import (X_ELEMENT_INT, flexible_loaded_forward_dynamics,
                                     flexible_prescribed_forward_dynamics)
from .rollout_mimic import M_PAIR_INT, mimic_forward_dynamics
from .rollout_prescribed import P_FIXED_V, prescribed_forward_dynamics
from .rollout_prescribed_mimic import prescribed_mimic_forward_dynamics


@njit(cache=True, nogil=True)
def has_special_dynamics(parts):
    """(prescribing, mimicking, any of the three): which part replaces the stage dynamics."""
    prescribing = parts[0][P_FIXED_V].shape[0] > 0
    mimicking = parts[1][M_PAIR_INT].shape[0] > 0
    return prescribing, mimicking, prescribing or mimicking or \
        parts[2][X_ELEMENT_INT].shape[0] > 0


@njit(cache=True, nogil=True, inline="always")
def special_forward_dynamics(entries, bound, dims, forces, loaded, parts, n, c, q, v, tau, out):
    """out (nv,) = the stage's forward dynamics at (q, v) for tau (nv,): the hybrid dynamics of
    the prescribed joints (table row n, sample c; with mimic couplings in their minimal
    coordinates), the mimic couplings' minimal-coordinate form, or the flexible tree's loaded
    forward dynamics. Returns 0 or the kernel's status."""
    prescribed, mimic, flexible, both = parts
    if prescribed[P_FIXED_V].shape[0] > 0 and mimic[M_PAIR_INT].shape[0] > 0:
        return prescribed_mimic_forward_dynamics(entries, bound, dims, forces, loaded,
                                                 prescribed, mimic, both, n, c, q, v, tau, out)
    if prescribed[P_FIXED_V].shape[0] > 0 and flexible[X_ELEMENT_INT].shape[0] > 0:
        return flexible_prescribed_forward_dynamics(entries, bound, dims, prescribed, flexible,
                                                    n, c, q, v, tau, out)
    if prescribed[P_FIXED_V].shape[0] > 0:
        return prescribed_forward_dynamics(entries, bound, dims, forces, loaded, prescribed, n, c,
                                           q, v, tau, out)
    if mimic[M_PAIR_INT].shape[0] > 0:
        return mimic_forward_dynamics(entries, bound, dims, forces, loaded, mimic, q, v, tau, out)
    return flexible_loaded_forward_dynamics(flexible, q, v, tau, out)
