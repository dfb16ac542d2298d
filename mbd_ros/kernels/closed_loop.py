"""Recursive forward dynamics of closed chains (docs/theory.md §5, seed [000]).

The open tree is solved once by the ABA (kernels/aba.py), giving the motion without loop forces
(a°, eta'°), and the articulated quantities M*_i, C_i, N_i^-1 are kept. Each constraint row c of
the cuts is then a unit wrench pair on the cut's two bodies; the same recursion with that load
only (a_rel = 0, tau = 0, no gravity) gives its effect A (body accelerations). The multipliers
solve the b x b system

    (G_s A) lambda = -G_s a° - gamma''_s - 2 alpha (G_s v) - beta^2 g_s   [000 eqs. 16-18, + Baumgarte]

(Cholesky; minimum-norm when constraints are redundant), and eta' = eta'° + L lambda, with the
rows L_c stored by the unit passes (small loops whose paths are all the moved bodies), else by
one more pass of the same recursion with the load G_s^T lambda (L lambda is linear in the load).
Cost O(n b + b^3).

Only bodies on the loop paths (a cut body or one of its ancestors) carry the unit loads, and
A is needed only at the cut bodies, whose accelerations depend on their ancestors alone: each
unit pass visits the loop paths inside the subtrees its load moves (those of its two paths' top
ancestors: loops in other branches see A = 0); the final pass also visits the joints hanging
off the paths (they accelerate too). A loop in one branch of a large tree costs in proportion
to its own paths.

Kernel style (see kernels/spatial.py): flat arrays plus integer offsets, no views; the body steps
are inline helpers, the passes of one unit load (_unit_column, _add_loop_response) out-of-line
functions taking whole arrays (a call costs no reference counts; inlining them too doubled
numba's compile time, measured). work[:, UNIT_ON_PATH] flags the loop paths during a call (0
elsewhere and after).
"""
from numba import njit

from ..model.layout import (ACC, FEXT, CUT_BODY_A, CUT_BODY_B, CUT_ROW0, CUT_ROWS, CUT_TYPE,
                            D_INV, IDX_V, JOINT_NV_COL, LOOP_BIAS, LOOP_EIGENVALUE, LOOP_JAC_A,
                            LOOP_JAC_B, LOOP_LAMBDA, LOOP_MATRIX, LOOP_RESIDUAL, LOOP_RHS,
                            MOTION_SUBSPACE, PARENT, ROT, SCRATCH, STATUS_OK, SUBTREE_END, U_MAT,
                            UNIT_ACC, UNIT_LOAD, UNIT_ON_PATH, UNIT_U, VEL, WORLD_POS, WORLD_ROT)
from . import signatures
from .entry import entry_point
from .aba import forward_dynamics
from .checked import STATUS_ALIASED, STATUS_NOT_FINITE, all_finite, overlaps
from .closure_kinematics import cut_kinematics
from .closure_kinematics import wrench_in_cut_frame
from .kinematics import compose_world_pose, set_world_root
from .spatial import add_force_to_parent, motion_to_child
from .linalg import solve_psd_min_norm
from .loop_results import loop_results

# Status of forward_dynamics_checked (the C entry's kernel) when the loops are open by more than
# its warning threshold: the Python method then runs and warns (loops.LoopResidualWarning).
STATUS_LOOP_OPEN = 902

# UNIT_ON_PATH flags: on a loop path; on the path of the current unit load too
_ON_LOOP_PATH = 1.0
_LOADED = 2.0


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
        cut_kinematics(cut_int[s, CUT_TYPE], cut_float, s, work, cut_int[s, CUT_BODY_A],
                       cut_int[s, CUT_BODY_B], WORLD_ROT, WORLD_POS, VEL, loop_float,
                       cut_int[s, CUT_ROW0], LOOP_RESIDUAL, LOOP_BIAS, LOOP_JAC_A, LOOP_JAC_B)
    return loop_float.shape[0]


# ---- the passes of a unit load (inline steps) -----------------------------------------------------

@njit(cache=True, inline="always")
def _mark_loop_paths(body_int, cut_int, work):
    """Flag (UNIT_ON_PATH) every body on a path from a cut body to the root; returns the
    highest flagged body (0 when every cut is on the universe)."""
    top = 0
    for s in range(cut_int.shape[0]):
        for side in range(2):
            i = cut_int[s, CUT_BODY_A + side]
            if i > top:
                top = i
            while i > 0 and work[i, UNIT_ON_PATH] == 0.0:
                work[i, UNIT_ON_PATH] = _ON_LOOP_PATH
                i = body_int[i, PARENT]
    return top


@njit(cache=True, inline="always")
def _load_path(body_int, work, start):
    """Zero the unit loads on the path from `start` to the root and flag it as loaded; returns
    the path's top ancestor (the body hanging from the universe; 0 for the universe)."""
    i = start
    top = 0
    while i > 0:
        work[i, UNIT_ON_PATH] = _LOADED
        for r in range(6):
            work[i, UNIT_LOAD + r] = 0.0
        top = i
        i = body_int[i, PARENT]
    return top


@njit(cache=True, inline="always")
def _backward_step(body_int, body_float, work, i):
    """Body i of the backward pass of a unit load (p^A = -[G^T]*, as in kernels/aba.py):
    u_i = -C_i^T [G^T]*_i (UNIT_U), then [G^T]*_p += B_pi^T (1 - P_i) [G^T]*_i, i.e.
    p^a = p + U N^-1 u moved to the parent      [docs/theory.md §5 step 1; 000 eqs. 17-18]."""
    parent = body_int[i, PARENT]
    k = body_int[i, JOINT_NV_COL]
    if k == 1:   # one axis (revolute, prismatic, helical): scalars, no inner loops
        u = 0.0
        for r in range(6):
            u -= body_float[i, MOTION_SUBSPACE + r] * work[i, UNIT_LOAD + r]
        work[i, UNIT_U] = u
        if parent > 0:
            du = work[i, D_INV] * u
            for r in range(6):
                work[i, SCRATCH + r] = work[i, UNIT_LOAD + r] + work[i, U_MAT + r] * du
            add_force_to_parent(work, i, ROT, work, i, SCRATCH, work, parent, UNIT_LOAD)
        return
    for j in range(k):
        s = 0.0
        for r in range(6):
            s -= body_float[i, MOTION_SUBSPACE + 6 * j + r] * work[i, UNIT_LOAD + r]
        work[i, UNIT_U + j] = s
    if parent > 0:
        for r in range(6):
            s = work[i, UNIT_LOAD + r]
            for j in range(k):
                for m in range(k):
                    s += work[i, U_MAT + 6 * j + r] * work[i, D_INV + j * k + m] * work[i, UNIT_U + m]
            work[i, SCRATCH + r] = s
        add_force_to_parent(work, i, ROT, work, i, SCRATCH, work, parent, UNIT_LOAD)


@njit(cache=True, inline="always")
def _forward_step(body_int, body_float, work, i, loaded):
    """Body i of the forward pass of a unit load: L_i = N_i^-1 (u_i - U_i^T B_pi A_p) into
    work[i, SCRATCH + 6:+k], A_i = B_pi A_p + C_i L_i into UNIT_ACC (u_i = 0 unless `loaded`;
    A_0 = 0: the universe does not move)      [docs/theory.md §5 step 1; 000 eqs. 17-18]."""
    parent = body_int[i, PARENT]
    k = body_int[i, JOINT_NV_COL]
    if parent == 0:
        for r in range(6):
            work[i, UNIT_ACC + r] = 0.0
    else:
        motion_to_child(work, i, ROT, work, parent, UNIT_ACC, work, i, UNIT_ACC)
    if k == 1:   # one axis: scalars, no inner loops
        s = work[i, UNIT_U] if loaded else 0.0
        for r in range(6):
            s -= work[i, U_MAT + r] * work[i, UNIT_ACC + r]
        s *= work[i, D_INV]
        work[i, SCRATCH + 6] = s
        for r in range(6):
            work[i, UNIT_ACC + r] += body_float[i, MOTION_SUBSPACE + r] * s
        return
    for j in range(k):
        s = work[i, UNIT_U + j] if loaded else 0.0
        for r in range(6):
            s -= work[i, U_MAT + 6 * j + r] * work[i, UNIT_ACC + r]
        work[i, SCRATCH + j] = s
    for j in range(k):
        s = 0.0
        for m in range(k):
            s += work[i, D_INV + j * k + m] * work[i, SCRATCH + m]
        work[i, SCRATCH + 6 + j] = s
        for r in range(6):
            work[i, UNIT_ACC + r] += body_float[i, MOTION_SUBSPACE + 6 * j + r] * s


@njit(cache=True, inline="always")
def _unit_acc_dot(loop_float, r, column, work, body, lo_a, hi_a, lo_b, hi_b):
    """G[r] . A_body for the 6 columns of G at `column`: zero outside the moved subtrees
    [lo, hi) (and for the universe)."""
    if not ((lo_a <= body < hi_a) or (lo_b <= body < hi_b)):
        return 0.0
    x = 0.0
    for m in range(6):
        x += loop_float[r, column + m] * work[body, UNIT_ACC + m]
    return x


@njit(cache=True)
def _unit_column(body_int, body_float, work, cut_int, loop_float, s, c, unit_qdd, nv):
    """Column c of G_s A: the accelerations A of the unit load of constraint row c (of cut s)
    on the loop paths inside the subtrees it moves (those of its two paths' top ancestors),
    then every row's G_a A_a + G_b A_b (zero for cut bodies outside those subtrees). With
    unit_qdd > 0 also the row L_c of the joint accelerations (loop_float[c, unit_qdd:+nv];
    complete when the loop paths are all the moved bodies)."""
    body_a = cut_int[s, CUT_BODY_A]
    body_b = cut_int[s, CUT_BODY_B]
    top_a = _load_path(body_int, work, body_a)
    top_b = _load_path(body_int, work, body_b)
    if top_b == top_a:
        top_b = 0
    lo_a = top_a
    hi_a = body_int[top_a, SUBTREE_END] if top_a > 0 else 0
    lo_b = top_b
    hi_b = body_int[top_b, SUBTREE_END] if top_b > 0 else 0
    for r in range(6):
        work[body_a, UNIT_LOAD + r] -= loop_float[c, LOOP_JAC_A + r]
        work[body_b, UNIT_LOAD + r] -= loop_float[c, LOOP_JAC_B + r]
    # backward along the union of the two paths, deepest body first (parent[i] < i)
    ia = body_a
    ib = body_b
    while ia > 0 or ib > 0:
        i = ia if ia > ib else ib
        if ia == i:
            ia = body_int[ia, PARENT]
        if ib == i:
            ib = body_int[ib, PARENT]
        _backward_step(body_int, body_float, work, i)
    # forward over the loop paths in the moved subtrees (only the paths hold a cut body or an
    # ancestor of one)
    if unit_qdd > 0:
        for j in range(nv):
            loop_float[c, unit_qdd + j] = 0.0
    for side in range(2):
        lo = lo_a if side == 0 else lo_b
        hi = hi_a if side == 0 else hi_b
        for i in range(lo, hi):
            flag = work[i, UNIT_ON_PATH]
            if flag != 0.0:
                _forward_step(body_int, body_float, work, i, flag == _LOADED)
                work[i, UNIT_ON_PATH] = _ON_LOOP_PATH
                if unit_qdd > 0:
                    iv = body_int[i, IDX_V]
                    for j in range(body_int[i, JOINT_NV_COL]):
                        loop_float[c, unit_qdd + iv + j] = work[i, SCRATCH + 6 + j]
    for s2 in range(cut_int.shape[0]):
        a = cut_int[s2, CUT_BODY_A]
        b = cut_int[s2, CUT_BODY_B]
        r0 = cut_int[s2, CUT_ROW0]
        for r in range(r0, r0 + cut_int[s2, CUT_ROWS]):
            loop_float[r, LOOP_MATRIX + c] = (
                _unit_acc_dot(loop_float, r, LOOP_JAC_A, work, a, lo_a, hi_a, lo_b, hi_b)
                + _unit_acc_dot(loop_float, r, LOOP_JAC_B, work, b, lo_a, hi_a, lo_b, hi_b))


@njit(cache=True)
def _add_loop_response(body_int, body_float, work, cut_int, loop_float, top, qdd_out):
    """eta' += L lambda: the joint accelerations of the load -G_s^T lambda (the multipliers in
    LOOP_LAMBDA) on the cut bodies, by one backward pass over the loop paths and one forward
    pass over the subtrees they move          [docs/theory.md §5 step 3; 000 eq. 18]."""
    for i in range(1, top + 1):
        if work[i, UNIT_ON_PATH] != 0.0:
            for r in range(6):
                work[i, UNIT_LOAD + r] = 0.0
    for s in range(cut_int.shape[0]):
        r0 = cut_int[s, CUT_ROW0]
        for side in range(2):
            body = cut_int[s, CUT_BODY_A + side]
            column = LOOP_JAC_A if side == 0 else LOOP_JAC_B
            if body > 0:
                for r in range(r0, r0 + cut_int[s, CUT_ROWS]):
                    lam = loop_float[r, LOOP_LAMBDA]
                    for m in range(6):
                        work[body, UNIT_LOAD + m] -= loop_float[r, column + m] * lam
    lo = top + 1
    hi = 0
    for i in range(top, 0, -1):
        if work[i, UNIT_ON_PATH] != 0.0:
            _backward_step(body_int, body_float, work, i)
            if body_int[i, PARENT] == 0:
                lo = i
                end = body_int[i, SUBTREE_END]
                if end > hi:
                    hi = end
    # the bodies moved: the subtrees of the loop paths' top ancestors (bodies between them
    # hang from the universe and carry no load: their A and L are zero)
    for i in range(lo, hi):
        loaded = work[i, UNIT_ON_PATH] != 0.0
        _forward_step(body_int, body_float, work, i, loaded)
        iv = body_int[i, IDX_V]
        for j in range(body_int[i, JOINT_NV_COL]):
            qdd_out[iv + j] += work[i, SCRATCH + 6 + j]
        if loaded:
            work[i, UNIT_ON_PATH] = 0.0


@entry_point(signatures.CLOSED_LOOP_FD)
def closed_loop_forward_dynamics(body_int, body_float, work, cut_int, cut_float, loop_float,
                                 q, v, tau, alpha, beta, qdd_out, info):
    """Joint accelerations qdd_out (nv,) of a closed-loop robot, multipliers in loop_float.

    # Model:    body_int, body_float, cut_int, cut_float
    # Data:     work (FEXT read), loop_float (b, LOOP_FIXED_WIDTH + 3 b + nv)
    # Data in:  q (nq,), v, tau (nv,); alpha, beta: Baumgarte gains (0, 0 for the exact
    #           acceleration constraint)
    # Data out: qdd_out (nv,); loop_float LOOP_LAMBDA (multipliers), LOOP_RESIDUAL (g_s), ...;
    #           info (2,) int64: [status, rank of G_s A] (the rank only on success)
    Returns the status.
    """
    status = forward_dynamics(body_int, body_float, work, q, v, tau, qdd_out)
    info[0] = status
    if status != STATUS_OK:
        return status
    n_rows = loop_float.shape[0]
    # ---- world poses of the loop paths, and the cut rows g_s, G_s, gamma''_s
    top = _mark_loop_paths(body_int, cut_int, work)
    set_world_root(work)
    for i in range(1, top + 1):
        if work[i, UNIT_ON_PATH] != 0.0:
            compose_world_pose(work, i, body_int[i, PARENT])
    for r in range(6):
        work[0, UNIT_ACC + r] = 0.0
    for s in range(cut_int.shape[0]):
        cut_kinematics(cut_int[s, CUT_TYPE], cut_float, s, work, cut_int[s, CUT_BODY_A],
                       cut_int[s, CUT_BODY_B], WORLD_ROT, WORLD_POS, VEL, loop_float,
                       cut_int[s, CUT_ROW0], LOOP_RESIDUAL, LOOP_BIAS, LOOP_JAC_A, LOOP_JAC_B)
    # ---- eta' = eta'° + L lambda at the end: from the rows L_c stored by the unit passes when
    # the loop paths are all the bodies the loads move and the dense b x nv product (with the
    # stores of L) stays well below one more pass (~100 flops per path body), else by that pass
    nv = qdd_out.shape[0]
    path_bodies = 0
    moved_bodies = 0
    for i in range(1, top + 1):
        if work[i, UNIT_ON_PATH] != 0.0:
            path_bodies += 1
            if body_int[i, PARENT] == 0:
                moved_bodies += body_int[i, SUBTREE_END] - i
    unit_qdd = 0
    if path_bodies == moved_bodies and n_rows * nv <= 16 * path_bodies:
        unit_qdd = LOOP_MATRIX + 3 * n_rows
    # ---- G_s A, column by column (one unit load per constraint row)   [docs/theory.md §5 step 1]
    for s in range(cut_int.shape[0]):
        r0 = cut_int[s, CUT_ROW0]
        for c in range(r0, r0 + cut_int[s, CUT_ROWS]):
            _unit_column(body_int, body_float, work, cut_int, loop_float, s, c, unit_qdd, nv)
    # ---- right-hand side: -G_s a° - gamma'' (- Baumgarte terms)      [docs/theory.md §5 step 2]
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
    # ---- (G_s A) lambda = rhs: Cholesky, minimum-norm on redundancy
    info[1] = solve_psd_min_norm(loop_float, LOOP_MATRIX, n_rows, LOOP_RHS, LOOP_LAMBDA,
                                 LOOP_MATRIX + n_rows, LOOP_EIGENVALUE, LOOP_MATRIX + 2 * n_rows)
    # ---- eta' = eta'° + L lambda                                      [docs/theory.md §5 step 3]
    if unit_qdd > 0:
        for c in range(n_rows):
            lam = loop_float[c, LOOP_LAMBDA]
            for j in range(nv):
                qdd_out[j] += loop_float[c, unit_qdd + j] * lam
        for i in range(1, top + 1):
            work[i, UNIT_ON_PATH] = 0.0
    else:
        _add_loop_response(body_int, body_float, work, cut_int, loop_float, top, qdd_out)
    return STATUS_OK


@njit(cache=True)
def forward_dynamics_checked(body_int, body_float, work, cut_int, cut_float, loop_float,
                             q, v, tau, gains, qdd_out, info, lam_out):
    """closed_loop_forward_dynamics with the checks and results of the Python method, for its C
    entry (mbd_ros/fastcall/rigid_entries.py): STATUS_ALIASED when qdd_out overlaps an input,
    STATUS_NOT_FINITE for a non-finite result, STATUS_LOOP_OPEN when the largest loop residual
    exceeds gains[2] (the method then warns); on success the multipliers are copied into
    lam_out (b,). gains (3,): alpha, beta, residual warning threshold."""
    if overlaps(qdd_out, q) or overlaps(qdd_out, v) or overlaps(qdd_out, tau):
        return STATUS_ALIASED
    status = closed_loop_forward_dynamics(body_int, body_float, work, cut_int, cut_float,
                                          loop_float, q, v, tau, gains[0], gains[1], qdd_out, info)
    if status != STATUS_OK:
        return status
    if not all_finite(qdd_out):
        return STATUS_NOT_FINITE
    if loop_results(loop_float, LOOP_LAMBDA, LOOP_RESIDUAL, lam_out) > gains[2]:
        return STATUS_LOOP_OPEN
    return STATUS_OK


@njit(cache=True)
def loop_jacobian(body_int, body_float, work, cut_int, loop_float, jac_out):
    """G_l (b, nv) = G_a J_a + G_b J_b, the closure Jacobian on the tree's joint velocities
    (docs/theory.md §4), from the cut rows in loop_float. Row r is the joint-space force of the unit
    wrench pair (G_a^T on body a, G_b^T on body b), accumulated tips -> base like the RNEA's
    backward pass: G_l^T lambda are the joint forces the loop multipliers exert."""
    nb = body_int.shape[0] - 1
    for s in range(cut_int.shape[0]):
        body_a = cut_int[s, CUT_BODY_A]
        body_b = cut_int[s, CUT_BODY_B]
        r0 = cut_int[s, CUT_ROW0]
        for row in range(r0, r0 + cut_int[s, CUT_ROWS]):
            for i in range(nb + 1):
                for r in range(6):
                    work[i, UNIT_LOAD + r] = 0.0
            for r in range(6):
                work[body_a, UNIT_LOAD + r] += loop_float[row, LOOP_JAC_A + r]
                work[body_b, UNIT_LOAD + r] += loop_float[row, LOOP_JAC_B + r]
            for i in range(nb, 0, -1):
                k = body_int[i, JOINT_NV_COL]
                iv = body_int[i, IDX_V]
                for j in range(k):
                    x = 0.0
                    for r in range(6):
                        x += body_float[i, MOTION_SUBSPACE + 6 * j + r] * work[i, UNIT_LOAD + r]
                    jac_out[row, iv + j] = x
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
