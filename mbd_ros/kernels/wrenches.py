"""Wrenches at fixed joints (virtual force/torque sensors) and the per-link bookkeeping.

Fixed joints are merged into their parent body for the recursions; after the RNEA has produced
every body's velocity, acceleration and movable-joint wrench f^p, the wrench a fixed joint
transmits is the Newton-Euler sum of everything below it (docs/theory.md §8):

    F_c = h_c + sum_{fixed children c'} F_c' + sum_{movable children b} B_b^T f^p_b,
    h_L = I_L a_b + v_b x* I_L v_b - f^ext_L         (link L's own net wrench, body b's frame)

accumulated over links in reverse depth-first order, in the frame of the body the links belong to,
then expressed in the fixed joint's child link frame.
"""
from . import signatures
from .entry import entry_point

from ..model.layout import (ACC, FEXT, FORCE, LINK_BODY, LINK_FIXED, LINK_INERTIA, LINK_PARENT,
                            LINK_POS, LINK_ROT, PARENT_LINK, ROT, SCRATCH, VEL)
from .spatial import add_cross_force, add_force_to_parent, inertia_times


@entry_point(signatures.JOINT_WRENCHES)
def joint_wrenches(body_int, link_int, link_float, work, link_fext, wrench_rows, link_wrench, out):
    """out (n_rows, 6): wrench each URDF joint transmits, in its child link frame.

    Data in: work after `inverse_dynamics` (VEL, ACC, FORCE, ROT, POS); link_fext (n_links, 6)
    external wrench on each link in its body's frame. wrench_rows (n_rows, 2): (body, -1) for a
    movable joint moving `body`, (-1, link) for a fixed joint whose child is `link`.
    Scratch: link_wrench (n_links, 6).
    """
    n_links = link_int.shape[0]
    # the universe row's SCRATCH is free: it holds I_L v_b
    for link in range(n_links):
        body = link_int[link, LINK_BODY]
        # h_L = I_L a_b + v_b x* I_L v_b - f^ext_L
        inertia_times(link_float, link, LINK_INERTIA, work, body, ACC, link_wrench, link, 0)
        for r in range(6):
            link_wrench[link, r] -= link_fext[link, r]
        inertia_times(link_float, link, LINK_INERTIA, work, body, VEL, work, 0, SCRATCH)
        add_cross_force(work, body, VEL, work, 0, SCRATCH, link_wrench, link, 0)
    for body in range(1, body_int.shape[0]):
        parent_link = body_int[body, PARENT_LINK]
        if parent_link >= 0:  # a floating root body hangs from no link
            add_force_to_parent(work, body, ROT, work, body, FORCE, link_wrench, parent_link, 0)
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
            # move the reference point to the link origin, then rotate into the link frame
            w0 = link_wrench[link, 0]
            w1 = link_wrench[link, 1]
            w2 = link_wrench[link, 2]
            px = link_float[link, LINK_POS]
            py = link_float[link, LINK_POS + 1]
            pz = link_float[link, LINK_POS + 2]
            tx = link_wrench[link, 3] - (py * w2 - pz * w1)
            ty = link_wrench[link, 4] - (pz * w0 - px * w2)
            tz = link_wrench[link, 5] - (px * w1 - py * w0)
            for r in range(3):
                r0 = link_float[link, LINK_ROT + r]
                r1 = link_float[link, LINK_ROT + 3 + r]
                r2 = link_float[link, LINK_ROT + 6 + r]
                out[row, r] = r0 * w0 + r1 * w1 + r2 * w2
                out[row, 3 + r] = r0 * tx + r1 * ty + r2 * tz


@entry_point(signatures.LOAD_LINK_WRENCHES)
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
        for r in range(6):
            link_fext_out[link, r] = 0.0
        add_force_to_parent(link_float, link, LINK_ROT, wrench, link, 0, link_fext_out, link, 0)
        body = link_int[link, LINK_BODY]
        for r in range(6):
            work[body, FEXT + r] += link_fext_out[link, r]
