"""Wrenches at fixed joints (virtual force/torque sensors) and the per-link bookkeeping.

Fixed joints are merged into their parent body for the recursions; after the RNEA has produced
every body's velocity, acceleration and movable-joint wrench f^p, the wrench a fixed joint
transmits is the Newton-Euler sum of everything below it (docs/theory.md §8):

    F_c = h_c + sum_{fixed children c'} F_c' + sum_{movable children b} B_b^T f^p_b,
    h_L = I_L a_b + v_b x* I_L v_b - f^ext_L         (link L's own net wrench, body b's frame)

accumulated over links in reverse depth-first order, in the frame of the body the links belong to,
then expressed in the fixed joint's child link frame.
"""
from numba import njit

from . import signatures

from ..layout import (ACC, FEXT, FORCE, LINK_BODY, LINK_FIXED, LINK_INERTIA, LINK_PARENT, LINK_POS,
                      LINK_ROT, PARENT_LINK, POS, ROT, SCRATCH, VEL)
from .spatial import add_cross_force, add_force_to_parent, inertia_times


@njit(signatures.JOINT_WRENCHES, cache=True)
def joint_wrenches(body_int, link_int, link_float, work, link_fext, wrench_rows, link_wrench, out):
    """out (n_rows, 6): wrench each URDF joint transmits, in its child link frame.

    Data in: work after `inverse_dynamics` (VEL, ACC, FORCE, ROT, POS); link_fext (n_links, 6)
    external wrench on each link in its body's frame. wrench_rows (n_rows, 2): (body, -1) for a
    movable joint moving `body`, (-1, link) for a fixed joint whose child is `link`.
    Scratch: link_wrench (n_links, 6).
    """
    n_links = link_int.shape[0]
    momentum = work[0, SCRATCH:SCRATCH + 6]  # the universe row's scratch is free
    for link in range(n_links):
        body = link_int[link, LINK_BODY]
        inertia = link_float[link, LINK_INERTIA:LINK_INERTIA + 36]
        vel = work[body, VEL:VEL + 6]
        h = link_wrench[link]
        inertia_times(inertia, work[body, ACC:ACC + 6], h)
        for r in range(6):
            h[r] -= link_fext[link, r]
        inertia_times(inertia, vel, momentum)
        add_cross_force(vel, momentum, h)
    for body in range(1, body_int.shape[0]):
        parent_link = body_int[body, PARENT_LINK]
        if parent_link >= 0:  # a floating root body hangs from no link
            add_force_to_parent(work[body, ROT:ROT + 9], work[body, POS:POS + 3],
                                work[body, FORCE:FORCE + 6], link_wrench[parent_link])
    for link in range(n_links - 1, 0, -1):
        if link_int[link, LINK_FIXED] == 1:
            parent_link = link_int[link, LINK_PARENT]
            for r in range(6):
                link_wrench[parent_link, r] += link_wrench[link, r]
    for row in range(wrench_rows.shape[0]):
        body = wrench_rows[row, 0]
        if body >= 0:
            for r in range(6):
                out[row, r] = work[body, FORCE + r]
        else:
            link = wrench_rows[row, 1]
            rot = link_float[link, LINK_ROT:LINK_ROT + 9]
            pos = link_float[link, LINK_POS:LINK_POS + 3]
            w = link_wrench[link]
            # move the reference point to the link origin, then rotate into the link frame
            tx = w[3] - (pos[1] * w[2] - pos[2] * w[1])
            ty = w[4] - (pos[2] * w[0] - pos[0] * w[2])
            tz = w[5] - (pos[0] * w[1] - pos[1] * w[0])
            for r in range(3):
                out[row, r] = rot[r] * w[0] + rot[3 + r] * w[1] + rot[6 + r] * w[2]
                out[row, 3 + r] = rot[r] * tx + rot[3 + r] * ty + rot[6 + r] * tz


@njit(signatures.LOAD_LINK_WRENCHES, cache=True)
def load_link_wrenches(link_int, link_float, wrench, link_fext_out, work):
    """External wrenches on links into the workspace.

    wrench (n_links, 6): on each link, in its link frame about its origin. link_fext_out
    (n_links, 6) receives each in its body's frame about the body origin (n_b = R n,
    t_b = R t + p x n_b); work[:, FEXT] the sum over each body's links.
    """
    for i in range(work.shape[0]):
        for r in range(6):
            work[i, FEXT + r] = 0.0
    for link in range(link_int.shape[0]):
        body_load = link_fext_out[link]
        for r in range(6):
            body_load[r] = 0.0
        add_force_to_parent(link_float[link, LINK_ROT:LINK_ROT + 9],
                            link_float[link, LINK_POS:LINK_POS + 3], wrench[link], body_load)
        body = link_int[link, LINK_BODY]
        for r in range(6):
            work[body, FEXT + r] += body_load[r]
