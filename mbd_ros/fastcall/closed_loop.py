"""C entry (mbd_ros.fastcall.C_SIGNATURE) of ClosedLoopRobot.forward_dynamics (recursive,
kernels/closed_loop.py).

bound = (body_int, body_float, work, cut_int, cut_float, loop_float, gains, info, multipliers):
the robot's model and cut arrays, its lock-free workspaces (work: Robot._fast_work, FEXT zero;
loop_float: a loop workspace of its own), gains (3,) = [alpha, beta, residual warning threshold]
(the Baumgarte setter writes it), info (2,) int64 = [status, rank] (last_rank reads it) and the
owner thread's multipliers (b,);
dims = the shapes of the six 2-D arrays (rows, cols), then (nq, nv, b).

The entry runs kernels/closed_loop.forward_dynamics_checked: any non-zero status (bad input,
aliasing, a singular tree, a non-finite result, loops open by more than the warning threshold)
sends the call to the Python method, which raises or warns as before. The KernelCall is
thread-affine (fastcall.install(affine=True)): the multipliers are per thread, and only the
owner thread's are written here.
"""
import numpy as np
from numba import carray

from ..kernels.closed_loop import forward_dynamics_checked as _forward_dynamics_checked


def forward_dynamics_c(bound, dims, q, v, tau, out):
    body_int = carray(bound[0], (dims[0], dims[1]), np.int64)
    body_float = carray(bound[1], (dims[2], dims[3]), np.float64)
    work = carray(bound[2], (dims[4], dims[5]), np.float64)
    cut_int = carray(bound[3], (dims[6], dims[7]), np.int64)
    cut_float = carray(bound[4], (dims[8], dims[9]), np.float64)
    loop_float = carray(bound[5], (dims[10], dims[11]), np.float64)
    nq, nv, n_rows = dims[12], dims[13], dims[14]
    gains = carray(bound[6], (3,), np.float64)
    info = carray(bound[7], (2,), np.int64)
    multipliers = carray(bound[8], (n_rows,), np.float64)
    return _forward_dynamics_checked(body_int, body_float, work, cut_int, cut_float, loop_float,
                                     carray(q, (nq,)), carray(v, (nv,)), carray(tau, (nv,)),
                                     gains, carray(out, (nv,)), info, multipliers)


def spec(robot):
    """(C entry function, bound arrays, dims, lengths, out columns, affine) of
    ClosedLoopRobot.forward_dynamics (Robot._c_call_spec's contract, plus thread affinity)."""
    bound = (robot._body_int, robot._body_float, robot._fast_work, robot._cut_int,
             robot._cut_float, robot._fast_loop_float, robot._c_gains, robot._info,
             robot._c_multipliers)
    dims = (robot._body_int.shape + robot._body_float.shape + robot._fast_work.shape
            + robot._cut_int.shape + robot._cut_float.shape + robot._fast_loop_float.shape
            + (robot.nq, robot.nv, robot.n_constraints))
    return forward_dynamics_c, bound, dims, (robot.nq, robot.nv, robot.nv, robot.nv), 0, True
