"""Entry kernels with the checks the Python wrappers would otherwise pay for on the hot path.

Robot.forward_dynamics / inverse_dynamics call these instead of aba/rnea directly: one numba
dispatch does the dynamics and also
- refuses an output that overlaps an input (the recursions read q, v, tau after writing the
  output), returning STATUS_ALIASED before touching anything: the wrapper then computes into a
  private array;
- reports a result that is not finite (an overflow inside, e.g. v = 1e154) as
  STATUS_NOT_FINITE: the wrapper raises ValueError instead of returning NaN.
Kernels never raise. Same signature as the kernels they wrap (signatures.STATE_KERNEL).
"""
from numba import njit

from . import signatures
from .entry import entry_point
from ..layout import STATUS_OK
from .aba import forward_dynamics as _aba
from .rnea import inverse_dynamics as _rnea

STATUS_ALIASED = 900       # the output array overlaps an input
STATUS_NOT_FINITE = 901    # the result is not finite (overflow inside the recursion)


@njit(cache=True, inline="always")
def overlaps(a, b):
    """True when the memory of the 1-D float64 arrays a and b overlaps."""
    a0 = a.ctypes.data
    b0 = b.ctypes.data
    return a0 < b0 + 8 * b.size and b0 < a0 + 8 * a.size


@njit(cache=True, inline="always")
def all_finite(x):
    """True when every entry of x is finite (x * 0 is 0 for finite x, NaN otherwise)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * 0.0
    return total == 0.0


@entry_point(signatures.STATE_KERNEL)
def forward_dynamics(body_int, body_float, work, q, v, tau, qdd_out):
    """aba.forward_dynamics with the output overlap and finiteness checks (module docstring)."""
    if overlaps(qdd_out, q) or overlaps(qdd_out, v) or overlaps(qdd_out, tau):
        return STATUS_ALIASED
    status = _aba(body_int, body_float, work, q, v, tau, qdd_out)
    if status == STATUS_OK and not all_finite(qdd_out):
        return STATUS_NOT_FINITE
    return status


@entry_point(signatures.STATE_KERNEL)
def inverse_dynamics(body_int, body_float, work, q, v, qdd, tau_out):
    """rnea.inverse_dynamics with the output overlap and finiteness checks (module docstring)."""
    if overlaps(tau_out, q) or overlaps(tau_out, v) or overlaps(tau_out, qdd):
        return STATUS_ALIASED
    status = _rnea(body_int, body_float, work, q, v, qdd, tau_out)
    if status == STATUS_OK and not all_finite(tau_out):
        return STATUS_NOT_FINITE
    return status
