"""The pose of one link frame in the root frame, in one kernel call (docs/theory.md §1).

One call instead of forward kinematics followed by numpy products on views of the workspace:
the numpy glue cost ~10 µs per call on a 7-dof arm (the kernel is ~0.3 µs), and reading the
workspace after the kernel returned let another thread's call overwrite it in between.
"""
from numba import njit

from ..model.layout import LINK_BODY, LINK_POS, LINK_ROT, WORLD_POS, WORLD_ROT
from .kinematics import forward_kinematics


@njit(cache=True)
def link_pose(body_int, body_float, work, link_int, link_float, q, no_velocity, link, out):
    """out (4, 4) = pose of link `link` in the root frame at q (validated by the caller):
    the body's world pose (forward kinematics, velocities skipped: no_velocity is an empty
    vector) composed with the link's constant placement in its body, R = R_b R_l,
    p = p_b + R_b p_l."""
    forward_kinematics(body_int, body_float, work, q, no_velocity)
    b = link_int[link, LINK_BODY]
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                s += work[b, WORLD_ROT + 3 * r + k] * link_float[link, LINK_ROT + 3 * k + c]
            out[r, c] = s
        s = work[b, WORLD_POS + r]
        for k in range(3):
            s += work[b, WORLD_ROT + 3 * r + k] * link_float[link, LINK_POS + k]
        out[r, 3] = s
        out[3, r] = 0.0
    out[3, 3] = 1.0
