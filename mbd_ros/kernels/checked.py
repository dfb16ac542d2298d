"""The entry kernels of Robot.forward_dynamics / inverse_dynamics: aba.forward_dynamics and
rnea.inverse_dynamics, which check their output themselves (kernels/output_checks.py: an output
overlapping an input gives STATUS_ALIASED, a non-finite result STATUS_NOT_FINITE).

These were wrappers around aba/rnea; each wrapper compiled the whole recursion a second time (its
own machine code plus the linked ABA's), ~1.7 s more on the first call. The names stay here for
the callers (robot.py, fastcall/generic.py). Kernels never raise.
"""
from .aba import forward_dynamics
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, all_finite, overlaps
from .rnea import inverse_dynamics

__all__ = ["forward_dynamics", "inverse_dynamics", "STATUS_ALIASED", "STATUS_NOT_FINITE",
           "overlaps", "all_finite"]
