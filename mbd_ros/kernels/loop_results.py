"""What the closed-loop forward dynamics wrapper (mbd_ros.loops) reads back from the loop
workspace after each call, in one numba call: the multipliers column copied out and the largest
loop residual. With numpy these were a column copy and two strided reductions, ~2-3 µs per call
(more than the rest of the one-loop wrapper together)."""
from numba import njit


@njit(cache=True)
def loop_results(loop_float, lambda_column, residual_column, lam_out):
    """lam_out (b,) = loop_float[:, lambda_column]; returns max_r |loop_float[r,
    residual_column]| (0 without rows; NaN entries are skipped, as numpy's max/min comparisons
    skipped them)."""
    top = 0.0
    for r in range(loop_float.shape[0]):
        lam_out[r] = loop_float[r, lambda_column]
        x = abs(loop_float[r, residual_column])
        if x > top:
            top = x
    return top
