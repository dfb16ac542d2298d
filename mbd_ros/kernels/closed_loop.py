"""Recursive forward dynamics of closed chains (docs/theory.md §5, seed [000]).

The open tree is solved once by the ABA (kernels/aba.py), giving the motion without loop forces
(a°, eta'°), and the articulated quantities M*_i, C_i, N_i^-1 are kept. Each constraint row r of
the cuts is then a unit wrench pair on the cut's two bodies; the same recursion with that load
only (a_rel = 0, tau = 0, no gravity) gives its effect A (body accelerations) and L (joint
accelerations). The multipliers solve the b x b system

    (G_s A) lambda = -G_s a° - gamma''_s - 2 alpha (G_s v) - beta^2 g_s   [000 eqs. 16-18, + Baumgarte]

(minimum-norm when constraints are redundant), and eta' = eta'° + L lambda. Cost O(n b + b^3).
"""
from numba import njit

from ..layout import (ACC, FEXT, CUT_BODY_A, CUT_BODY_B, CUT_ROW0, CUT_ROWS, CUT_TYPE, D_INV, IDX_V,
                      JOINT_NV_COL, LOOP_BIAS, LOOP_EIGENVALUE, LOOP_JAC_A,
                      LOOP_JAC_B, LOOP_LAMBDA, LOOP_MATRIX, LOOP_RESIDUAL, LOOP_RHS,
                      MOTION_SUBSPACE, PARENT, ROT, SCRATCH, STATUS_OK, SUBTREE_END, U_MAT,
                      UNIT_ACC, UNIT_LOAD, UNIT_ON_PATH, UNIT_U, VEL, WORLD_POS, WORLD_ROT)
from . import signatures
from .entry import entry_point
from .aba import articulated_step, forward_dynamics
from .closure_kinematics import closure_kinematics as cut_constraints
from .closure_kinematics import wrench_in_cut_frame
from .kinematics import compose_world_pose, set_world_root
from .spatial import add_force_to_parent, motion_to_child
from .linalg import solve_psd_min_norm


@njit(cache=True)
def world_poses(body_int, work):
    """WORLD_ROT/WORLD_POS of every body from the parent-relative poses ROT/POS the last ABA
    left in work (the ABA itself needs no world poses; the cut kinematics do)."""
    set_world_root(work)
    for i in range(1, body_int.shape[0]):
        compose_world_pose(work, i, body_int[i, PARENT])


@njit(cache=True)
def cut_rows(cut_int, cut_float, work, loop_float):
    """g_s, G^s_a, G^s_b and gamma''_s of every cut into loop_float, from the world poses and
    body velocities in work. Returns the total number of rows."""
    for s in range(cut_int.shape[0]):
        a = cut_int[s, CUT_BODY_A]
        b = cut_int[s, CUT_BODY_B]
        r0 = cut_int[s, CUT_ROW0]
        r1 = r0 + cut_int[s, CUT_ROWS]
        cut_constraints(cut_int[s, CUT_TYPE], cut_float[s],
                        work[a, WORLD_ROT:WORLD_ROT + 9], work[a, WORLD_POS:WORLD_POS + 3],
                        work[a, VEL:VEL + 6],
                        work[b, WORLD_ROT:WORLD_ROT + 9], work[b, WORLD_POS:WORLD_POS + 3],
                        work[b, VEL:VEL + 6],
                        loop_float[r0:r1, LOOP_RESIDUAL],
                        loop_float[r0:r1, LOOP_JAC_A:LOOP_JAC_A + 6],
                        loop_float[r0:r1, LOOP_JAC_B:LOOP_JAC_B + 6],
                        loop_float[r0:r1, LOOP_BIAS])
    return loop_float.shape[0]


@njit(cache=True)
def _row_body(cut_int, row, side):
    """Body on `side` (0: a, 1: b) of the cut that owns constraint row `row`."""
    for s in range(cut_int.shape[0]):
        r0 = cut_int[s, CUT_ROW0]
        if r0 <= row < r0 + cut_int[s, CUT_ROWS]:
            return cut_int[s, CUT_BODY_A] if side == 0 else cut_int[s, CUT_BODY_B]
    return 0


@njit(cache=True)
def _top_ancestor(body_int, body):
    """The ancestor of `body` hanging from the universe (0 for the universe itself)."""
    while body > 0 and body_int[body, PARENT] > 0:
        body = body_int[body, PARENT]
    return body


@njit(cache=True)
def _unit_response(body_int, body_float, work, jac_a, jac_b, body_a, body_b, qdd_column):
    """Joint (qdd_column) and body (work UNIT_ACC) accelerations caused by the unit wrench pair
    G_a^T on body a, G_b^T on body b, with the articulated quantities of the last ABA.

    Backward: [G^T]*_p += B_pi^T (1 - P_i) [G^T]*_i; forward: L_i = N_i^-1 C_i^T ([G^T]*_i -
    M*_i B_pi A_p), A_i = B_pi A_p + C_i L_i  [docs/theory.md §5 step 1; 000 eqs. 17-18; p^A = -[G^T]*
    as in kernels/aba.py].
    Only the bodies on the paths from a and b to the root carry the load, and only the subtrees
    of their top ancestors move: the passes visit just those, which keeps a loop's cost
    proportional to its own branch. Returns (lo_a, hi_a, lo_b, hi_b): the body index ranges
    whose UNIT_ACC is valid (elsewhere the response is zero).
    """
    # ---- load on the two paths (flags mark them; loads start from zero)
    for start in (body_a, body_b):
        i = start
        while i > 0:
            work[i, UNIT_ON_PATH] = 1.0
            for r in range(6):
                work[i, UNIT_LOAD + r] = 0.0
            i = body_int[i, PARENT]
    for r in range(6):
        work[body_a, UNIT_LOAD + r] -= jac_a[r]
        work[body_b, UNIT_LOAD + r] -= jac_b[r]
    # ---- backward along the union of the two paths, deepest body first (parent[i] < i)
    ia = body_a
    ib = body_b
    while ia > 0 or ib > 0:
        i = ia if ia > ib else ib
        if ia == i:
            ia = body_int[ia, PARENT]
        if ib == i:
            ib = body_int[ib, PARENT]
        parent = body_int[i, PARENT]
        k = body_int[i, JOINT_NV_COL]
        for j in range(k):
            s = 0.0
            for r in range(6):
                s -= body_float[i, MOTION_SUBSPACE + 6 * j + r] * work[i, UNIT_LOAD + r]
            work[i, UNIT_U + j] = s
        if parent == 0:
            continue
        # p^a = p + U N^-1 u
        for r in range(6):
            s = work[i, UNIT_LOAD + r]
            for j in range(k):
                for m in range(k):
                    s += work[i, U_MAT + 6 * j + r] * work[i, D_INV + j * k + m] * work[i, UNIT_U + m]
            work[i, SCRATCH + r] = s
        add_force_to_parent(work, i, ROT, work, i, SCRATCH, work, parent, UNIT_LOAD)
    # ---- forward over the moved subtrees: [top, SUBTREE_END) of each path's top ancestor
    for j in range(qdd_column.shape[0]):
        qdd_column[j] = 0.0
    top_a = _top_ancestor(body_int, body_a)
    top_b = _top_ancestor(body_int, body_b)
    if top_b == top_a:
        top_b = 0
    lo_a = top_a
    hi_a = body_int[top_a, SUBTREE_END] if top_a > 0 else 0
    lo_b = top_b
    hi_b = body_int[top_b, SUBTREE_END] if top_b > 0 else 0
    for lo, hi in ((lo_a, hi_a), (lo_b, hi_b)):
        for i in range(lo, hi):
            parent = body_int[i, PARENT]
            k = body_int[i, JOINT_NV_COL]
            iv = body_int[i, IDX_V]
            if i == lo:  # hangs from the universe, which does not move
                for r in range(6):
                    work[i, UNIT_ACC + r] = 0.0
            else:
                motion_to_child(work, i, ROT, work, parent, UNIT_ACC, work, i, UNIT_ACC)
            if work[i, UNIT_ON_PATH] == 0.0:  # moved, but carries no load of its own
                for j in range(k):
                    work[i, UNIT_U + j] = 0.0
            articulated_step(work, i, body_float, k, UNIT_U, UNIT_ACC, qdd_column, iv)
    for start in (body_a, body_b):
        i = start
        while i > 0:
            work[i, UNIT_ON_PATH] = 0.0
            i = body_int[i, PARENT]
    return lo_a, hi_a, lo_b, hi_b


@njit(cache=True)
def _unit_acc_dot(work, jac_row, body, lo_a, hi_a, lo_b, hi_b):
    """jac_row . A_body: zero for bodies outside the moved subtrees (and the universe)."""
    if not ((lo_a <= body < hi_a) or (lo_b <= body < hi_b)):
        return 0.0
    x = 0.0
    for m in range(6):
        x += jac_row[m] * work[body, UNIT_ACC + m]
    return x


@entry_point(signatures.CLOSED_LOOP_FD)
def closed_loop_forward_dynamics(body_int, body_float, work, cut_int, cut_float, loop_float,
                                 q, v, tau, alpha, beta, qdd_out, info):
    """Joint accelerations qdd_out (nv,) of a closed-loop robot, multipliers in loop_float.

    Model: body_int, body_float, cut_int, cut_float. Data: work, loop_float (b, width).
    alpha, beta: Baumgarte gains (0, 0 for the exact acceleration constraint).
    info (2,) int64 receives [status, rank of G_s A]. Returns the status.
    """
    status = forward_dynamics(body_int, body_float, work, q, v, tau, qdd_out)
    info[0] = status
    info[1] = 0
    if status != STATUS_OK:
        return status
    n_rows = loop_float.shape[0]
    nv = qdd_out.shape[0]
    matrix = loop_float[:, LOOP_MATRIX:LOOP_MATRIX + n_rows]
    factor = loop_float[:, LOOP_MATRIX + n_rows:LOOP_MATRIX + 2 * n_rows]
    vectors = loop_float[:, LOOP_MATRIX + 2 * n_rows:LOOP_MATRIX + 3 * n_rows]
    unit_qdd = loop_float[:, LOOP_MATRIX + 3 * n_rows:LOOP_MATRIX + 3 * n_rows + nv]
    world_poses(body_int, work)
    cut_rows(cut_int, cut_float, work, loop_float)
    # ---- columns A, L of the unit multipliers, and G_s A
    for c in range(n_rows):
        lo_a, hi_a, lo_b, hi_b = _unit_response(
            body_int, body_float, work, loop_float[c, LOOP_JAC_A:LOOP_JAC_A + 6],
            loop_float[c, LOOP_JAC_B:LOOP_JAC_B + 6], _row_body(cut_int, c, 0),
            _row_body(cut_int, c, 1), unit_qdd[c])
        for s in range(cut_int.shape[0]):
            a = cut_int[s, CUT_BODY_A]
            b = cut_int[s, CUT_BODY_B]
            r0 = cut_int[s, CUT_ROW0]
            for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
                matrix[r, c] = (
                    _unit_acc_dot(work, loop_float[r, LOOP_JAC_A:LOOP_JAC_A + 6], a, lo_a, hi_a, lo_b, hi_b)
                    + _unit_acc_dot(work, loop_float[r, LOOP_JAC_B:LOOP_JAC_B + 6], b, lo_a, hi_a, lo_b, hi_b))
    # ---- right-hand side: -G_s a° - gamma'' (- Baumgarte terms)
    for s in range(cut_int.shape[0]):
        a = cut_int[s, CUT_BODY_A]
        b = cut_int[s, CUT_BODY_B]
        r0 = cut_int[s, CUT_ROW0]
        for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
            acc_term = 0.0
            vel_term = 0.0
            for m in range(6):
                acc_term += (loop_float[r, LOOP_JAC_A + m] * work[a, ACC + m]
                             + loop_float[r, LOOP_JAC_B + m] * work[b, ACC + m])
                vel_term += (loop_float[r, LOOP_JAC_A + m] * work[a, VEL + m]
                             + loop_float[r, LOOP_JAC_B + m] * work[b, VEL + m])
            loop_float[r, LOOP_RHS] = (-acc_term - loop_float[r, LOOP_BIAS] - 2.0 * alpha * vel_term
                                       - beta * beta * loop_float[r, LOOP_RESIDUAL])
    rank = solve_psd_min_norm(matrix, n_rows, loop_float[:, LOOP_RHS], loop_float[:, LOOP_LAMBDA],
                              factor, loop_float[:, LOOP_EIGENVALUE], vectors)
    info[1] = rank
    # ---- eta' = eta'° + L lambda
    for c in range(n_rows):
        lam = loop_float[c, LOOP_LAMBDA]
        for j in range(nv):
            qdd_out[j] += unit_qdd[c, j] * lam
    return STATUS_OK


@njit(cache=True)
def loop_jacobian(body_int, body_float, work, cut_int, loop_float, jac_out):
    """G_l (b, nv) = G_a J_a + G_b J_b, the closure Jacobian on the tree's joint velocities
    (docs/theory.md §4), from the cut rows in loop_float. Row r is the joint-space force of the unit
    wrench pair (G_a^T on body a, G_b^T on body b), accumulated tips -> base like the RNEA's
    backward pass: G_l^T lambda are the joint forces the loop multipliers exert."""
    nb = body_int.shape[0] - 1
    for row in range(loop_float.shape[0]):
        for i in range(nb + 1):
            for r in range(6):
                work[i, UNIT_LOAD + r] = 0.0
        body_a = _row_body(cut_int, row, 0)
        body_b = _row_body(cut_int, row, 1)
        for r in range(6):
            work[body_a, UNIT_LOAD + r] += loop_float[row, LOOP_JAC_A + r]
            work[body_b, UNIT_LOAD + r] += loop_float[row, LOOP_JAC_B + r]
        for i in range(nb, 0, -1):
            k = body_int[i, JOINT_NV_COL]
            iv = body_int[i, IDX_V]
            for j in range(k):
                s = 0.0
                for r in range(6):
                    s += body_float[i, MOTION_SUBSPACE + 6 * j + r] * work[i, UNIT_LOAD + r]
                jac_out[row, iv + j] = s
            parent = body_int[i, PARENT]
            if parent > 0:
                add_force_to_parent(work, i, ROT, work, i, UNIT_LOAD, work, parent, UNIT_LOAD)


@njit(cache=True)
def add_loop_loads(cut_int, cut_links, loop_float, lam, work, link_fext):
    """Loads of the loop multipliers lam (b,): G_a^T lam_s on body a and G_b^T lam_s on body b
    of every cut (body frames, about the body origins), added to work[:, FEXT] and to the
    rows of the two cut links (cut_links (n_cuts, 2)) in link_fext (same body frames)."""
    for s in range(cut_int.shape[0]):
        r0 = cut_int[s, CUT_ROW0]
        for side in range(2):
            body = cut_int[s, CUT_BODY_A + side]
            link = cut_links[s, side]
            column = LOOP_JAC_A if side == 0 else LOOP_JAC_B
            for m in range(6):
                w = 0.0
                for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
                    w += loop_float[r, column + m] * lam[r]
                work[body, FEXT + m] += w
                link_fext[link, m] += w


@njit(cache=True)
def cut_wrenches(cut_int, cut_float, loop_float, lam, scratch, out):
    """out (n_cuts, 6): wrench each cut exerts on its child-side link, G_b^T lam_s moved into the
    child-side cut frame (closure_kinematics.wrench_in_cut_frame). scratch: (6,)."""
    for s in range(cut_int.shape[0]):
        r0 = cut_int[s, CUT_ROW0]
        for m in range(6):
            w = 0.0
            for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
                w += loop_float[r, LOOP_JAC_B + m] * lam[r]
            scratch[m] = w
        wrench_in_cut_frame(cut_float[s], scratch, out[s])
