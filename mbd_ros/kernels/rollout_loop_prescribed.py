"""Prescribed joints on closed loops in the compiled rollouts (kernels/rollout.py): the hybrid
dynamics of a rigid tree with loops of the recursive solver, and robot.step's projection onto
the loops with the prescribed coordinates held.

1. Stage dynamics (robot.forward_dynamics(q, v, tau, prescribed=...) on a robot with loops,
   robot/prescribed.py `solve`, docs/theory.md §3): with M the tree's mass matrix (CRBA), h =
   ID(q, v, 0) its bias (RNEA; with force elements their loads in the workspace and their joint
   forces added to tau, as robot._forward_dynamics_general runs them), and the loop rows
   G qdd + gamma = 0 of Constraints.acceleration_rows,

       gamma = G_s a(qdd = 0) + gamma''_s + 2 alpha G v + beta^2 g          (Loops.bias,
                                                                             Baumgarte terms)

   the dense KKT system for (qdd_f, lambda, u_p), qdd_p from the trajectory table,

       [ M_ff   -G_f^T   0 ] [ qdd_f  ]   [ tau_f - h_f - M_fp qdd_p ]
       [ M_pf   -G_p^T  -1 ] [ lambda ] = [ tau_p - h_p - M_pp qdd_p ]
       [ G_f     0       0 ] [ u_p    ]   [ -gamma - G_p qdd_p       ]

   (nv + b rows and columns for b loop rows), for its minimum-norm solution as numpy's lstsq
   finds it: `consistent_min_norm_solve`, the pivoted Householder QR of the transpose of
   kernels/rollout_projection.py (whose docstring relates its rank rule to lstsq's) and a
   triangular solve, round-off times cond(KKT) like lstsq (min_norm_solve's normal equations
   would make it cond^2: the KKT blocks mix units, cond ~ 2e3 on the four-bar on a shaker rig).
   The redundant rows of a planar loop closed by a 3-D cut are exact zeros in G (the four-bar's
   and the double wishbone's three out-of-plane rows), so both rank decisions drop exactly
   those, and the system is consistent. qdd_f is unique where the mechanism with the prescribed
   joints held is well-posed (lambda and u_p are not with redundant rows; the rollout does not
   need them).

2. The projection after a step (robot.step with `prescribed`: Constraints.project_state(fixed=
   the prescribed dofs)): the residual test of kernels/rollout_projection.py close_loops, then
   Gauss-Newton with minimum-norm steps on the free dofs only, q <- q (+) (-G_f^+ g), and the
   mass-orthogonal velocity correction on them, v_f <- v_f - M_ff^-1 G_f^T (G_f M_ff^-1
   G_f^T)^+ G v (G v with every dof: the prescribed velocities stay, the free ones absorb the
   violation). Not converged in MAX_ITERATIONS steps (constraints.py then re-assembles in
   Python), a singular M_ff or a failed solve: False with q, v unchanged, and the caller projects
   in Python (robot/rollout_compiled.py project, with `fixed=`).

Workspace (`loop_prescribed_workspace`, per thread, built once): (mats (3, p, p): the KKT matrix,
the QR's t, min_norm_solve's normal matrix; mass (nv, nv); vec (N_ROWS, p); perm (p,) int64),
p = nv + b.
The projection uses kernels/rollout_projection.py's workspace (loop_arrays[10]).
"""
import math

import numpy as np
from numba import njit

from ..model.layout import LOOP_RESIDUAL
from .checked import inverse_dynamics as _tree_inverse_dynamics
from .closed_loop import cut_rows, loop_jacobian
from .configuration import integrate
from .crba import mass_matrix
from .force_elements import force_element_loads
from .kinematics import forward_kinematics
from .rollout_prescribed import P_FIXED_V, P_FREE, P_TABLE
from .rollout_projection import (MAX_ITERATIONS, P_NORMAL, P_T, P_W, V_BETA, V_C,
                                 V_G, V_HV0, V_Q, V_QN, V_RDIAG, V_STEP, V_Y, V_Z,
                                 apply_reflectors, loop_acceleration_rows, min_norm_solve,
                                 pivoted_qr_transposed, project_velocity)
from .wrenches import load_link_wrenches

# matrices of mats (3, p, p)
L_KKT, L_T, L_NORMAL = range(3)
# rows of vec (N_ROWS, p)
L_RHS, L_X, L_RDIAG, L_HV0, L_BETA, L_C, L_Z, L_BIAS, L_GAMMA, L_QDDP, L_TOTAL, L_ZERO = range(12)
N_ROWS = 12
EPS = 2.220446049250313e-16   # float64's machine epsilon
# statuses (returned as the forward dynamics' kernel status: kernels/rollout.py DYNAMICS_FAILED)
NOT_FINITE_QDD = 91    # a non-finite acceleration


def loop_prescribed_workspace(nv, n_rows):
    """A thread's workspace for nv dofs and n_rows loop rows (module docstring)."""
    p = max(nv + n_rows, 1)
    return (np.zeros((3, p, p)), np.zeros((nv, nv)), np.zeros((N_ROWS, p)),
            np.zeros(p, dtype=np.int64))


@njit(cache=True, nogil=True)
def loop_prescribed_forward_dynamics(loops, forces, loaded, workspace, prescribed, n, c, q, v,
                                     tau, out):
    """out (nv,) = the hybrid forward dynamics of the closed-loop robot at (q, v) for tau (nv,),
    the prescribed joints' accelerations from table[n, c] of `prescribed` (module docstring, 1).
    loops: kernels/rollout.py's loops tuple (the tree's arrays, the thread's kinematics and loop
    workspaces: written), forces / loaded: the force elements' tuple and whether the robot has
    them, workspace: loop_prescribed_workspace(...). Returns 0, the RNEA's or CRBA's status, or
    NOT_FINITE_QDD."""
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    gains = loops[7]
    mats, mass, vec, perm = workspace
    table, fixed, free = prescribed[P_TABLE], prescribed[P_FIXED_V], prescribed[P_FREE]
    nv, b = v.shape[0], jacobian.shape[0]
    nf, n_fixed = free.shape[0], fixed.shape[0]
    size = nv + b
    bias, gamma, qdd_p = vec[L_BIAS, :nv], vec[L_GAMMA, :b], vec[L_QDDP, :n_fixed]
    zero = vec[L_ZERO, :nv]
    kkt, rhs, x = mats[L_KKT], vec[L_RHS, :size], vec[L_X, :size]
    total = tau
    # M (CRBA), then h = ID(q, v, 0) whose pass leaves the poses, velocities and accelerations
    # at qdd = 0 that the cut rows read (robot._tree_mass_and_bias; Loops.state, Loops.bias)
    if loaded:   # robot._apply_loads, then the RNEA on the loaded workspace
        (body_int, body_float, work, link_int, link_float, link_fext, element_int,
         element_float, link_wrench, joint_force, values, scratch) = forces
        status = mass_matrix(body_int, body_float, work, q, mass)
        if status:
            return status
        force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                            element_float, q, v, link_wrench, joint_force, values, scratch)
        load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
        total = vec[L_TOTAL, :nv]
        for i in range(nv):
            total[i] = tau[i] + joint_force[i]
    else:
        status = mass_matrix(body_int, body_float, work, q, mass)
        if status:
            return status
    for i in range(nv):
        zero[i] = 0.0
    status = _tree_inverse_dynamics(body_int, body_float, work, q, v, zero, bias)
    if status:
        return status
    # G, g and gamma = G_s a(qdd = 0) + gamma''_s + 2 alpha G v + beta^2 g (acceleration_rows)
    loop_acceleration_rows(body_int, body_float, work, cut_int, cut_float, loop_float, jacobian,
                           gamma)
    alpha, beta_gain = gains[0], gains[1]
    if alpha != 0.0 or beta_gain != 0.0:   # (gamma + 2 alpha G v + beta^2 g, numpy's order)
        for r in range(b):
            gv = 0.0
            for j in range(nv):
                gv += jacobian[r, j] * v[j]
            gamma[r] = gamma[r] + 2.0 * alpha * gv + beta_gain * beta_gain * \
                loop_float[r, LOOP_RESIDUAL]
    for k in range(n_fixed):
        qdd_p[k] = table[n, c, k, 2]
    # the KKT system of prescribed.solve: columns (qdd_f, lambda, u_p), rows (free dofs,
    # prescribed dofs, loop rows)
    for i in range(size):
        for j in range(size):
            kkt[i, j] = 0.0
    for a in range(nf):
        i = free[a]
        for col in range(nf):
            kkt[a, col] = mass[i, free[col]]
        for r in range(b):
            kkt[a, nf + r] = -jacobian[r, i]
        s = total[i] - bias[i]
        for k in range(n_fixed):
            s -= mass[i, fixed[k]] * qdd_p[k]
        rhs[a] = s
    for a in range(n_fixed):
        i = fixed[a]
        row = nf + a
        for col in range(nf):
            kkt[row, col] = mass[i, free[col]]
        for r in range(b):
            kkt[row, nf + r] = -jacobian[r, i]
        kkt[row, nf + b + a] = -1.0
        s = total[i] - bias[i]
        for k in range(n_fixed):
            s -= mass[i, fixed[k]] * qdd_p[k]
        rhs[row] = s
    for r in range(b):
        row = nv + r
        for col in range(nf):
            kkt[row, col] = jacobian[r, free[col]]
        s = -gamma[r]
        for k in range(n_fixed):
            s -= jacobian[r, fixed[k]] * qdd_p[k]
        rhs[row] = s
    if consistent_min_norm_solve(kkt, size, size, rhs, x, mats[L_T], vec[L_RDIAG], vec[L_HV0],
                                 vec[L_BETA], vec[L_C], perm) < 0:
        # inconsistent (e.g. two prescribed joints of one loop whose trajectories disagree):
        # lstsq's least-squares solution, by min_norm_solve (round-off times cond^2; the QR
        # worked on a copy, the KKT matrix is intact)
        if min_norm_solve(kkt, size, size, rhs, x, mats[L_T], mats[L_NORMAL], vec[L_RDIAG],
                          vec[L_HV0], vec[L_BETA], vec[L_C], vec[L_Z], perm) < 0:
            return NOT_FINITE_QDD
    for a in range(nf):
        out[free[a]] = x[a]
    for k in range(n_fixed):
        out[fixed[k]] = qdd_p[k]
    for i in range(nv):
        if not math.isfinite(out[i]):
            return NOT_FINITE_QDD
    return 0


@njit(cache=True, nogil=True)
def consistent_min_norm_solve(a, m, n, b, x, t, rdiag, hv0, beta, c, perm):
    """x (n,) = the minimum-norm solution of the consistent system A x = b, A = a[:m, :n] of any
    rank, b (m,): the pivoted Householder QR of A^T (A^T P = Q R, kernels/rollout_projection.py
    pivoted_qr_transposed, its rank rule |R_kk| > RANK_TOLERANCE |R_00|), then R_r^T y = (P^T b)
    [:r] by forward substitution (R_r^T's first r rows are lower triangular) and x = Q_r y,
    which lies in range(A^T): the minimum-norm solution, solving every equation when b is in
    range(A) (the dependent rows, pivoted last, follow from the kept ones: checked, and -1
    returned when one is off by more than 64 EPS of the system's scale, x then not the
    solution: the caller takes min_norm_solve's least squares). min_norm_solve's
    least squares goes through the normal equations R_r R_r^T, round-off times cond(A)^2; here
    the error is round-off times cond(A), as numpy's lstsq's (backward stable), which matters
    for a KKT matrix whose blocks mix units (cond ~ 2e3 on the four-bar on a shaker rig). A
    right side off range(A) by d gives the solution of the kept rows, within ~cond |d| of
    lstsq's least squares; prescribed.solve's systems are consistent unless prescribed joints
    contradict each other (its dropped rows are the exactly zero rows of a planar loop closed in
    3-D, with zero right sides). t (>= n x m), rdiag, hv0, beta, c (>= m,), perm (>= m,) int64:
    scratch. Returns the rank r, or -1 (inconsistent)."""
    rank = pivoted_qr_transposed(a, m, n, t, rdiag, hv0, beta, perm)
    for j in range(m):
        c[j] = b[perm[j]]
    # R_r^T y = c[:r]: (R^T)[i, k] = R[k, i] = t[k, i] (k < i), rdiag[i] (k = i)
    for i in range(n):
        x[i] = 0.0
    for i in range(rank):
        s = c[i]
        for k in range(i):
            s -= t[k, i] * x[k]
        x[i] = s / rdiag[i]
    # the dropped rows i >= r: sum_k R[k, i] y_k = c_i must hold (a consistent system)
    scale = 1.0
    for i in range(m):
        scale = max(scale, abs(c[i]))
    for i in range(rank):
        scale = max(scale, abs(x[i] * rdiag[0]))
    for i in range(rank, m):
        s = c[i]
        for k in range(rank):
            s -= t[k, i] * x[k]
        if not abs(s) <= 64.0 * EPS * scale:
            return -1
    apply_reflectors(t, hv0, beta, rank, n, x)     # x = Q (y, 0)
    return rank


@njit(cache=True, nogil=True)
def close_loops_holding(loops, workspace, prescribed, q, v, tolerance, closing):
    """robot.step's closing of the loops after a step with prescribed joints, in place on q (nq,),
    v (nv,): the residual test (max |g|, max |G v| against `tolerance`, PROJECTION_TOLERANCE)
    and, when it fails, the projection holding the prescribed dofs (module docstring, 2), its
    Gauss-Newton stopped below `closing` (m, rad). loops: kernels/rollout.py's loops tuple,
    workspace: kernels/rollout_projection.py projection_workspace(...), prescribed: the
    prescribed joints' tuple (fixed and free v indices). Returns 0 (closed: nothing done),
    1 (projected) or -1 (declined, q and v unchanged: the caller projects in Python)."""
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    mass, mats, vec, perm = workspace
    free = prescribed[P_FREE]
    nq, nv, m, nf = q.shape[0], v.shape[0], jacobian.shape[0], free.shape[0]
    forward_kinematics(body_int, body_float, work, q, v[:0])   # (positions only: g, G)
    cut_rows(cut_int, cut_float, work, loop_float)
    loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
    position = 0.0
    velocity = 0.0
    for r in range(m):
        position = max(position, abs(loop_float[r, LOOP_RESIDUAL]))
        s = 0.0
        for j in range(nv):
            s += jacobian[r, j] * v[j]
        velocity = max(velocity, abs(s))
    if not (position > tolerance or velocity > tolerance):
        return 0
    if perm.shape[0] == 0:      # disabled (projection_workspace(enabled=False))
        return -1
    qp, qn, step = vec[V_Q, :nq], vec[V_QN, :nq], vec[V_STEP, :nv]
    g, y = vec[V_G, :m], vec[V_Y]
    rdiag, hv0, beta, cc, z = vec[V_RDIAG], vec[V_HV0], vec[V_BETA], vec[V_C], vec[V_Z]
    t, normal, reduced = mats[P_T], mats[P_NORMAL], mats[P_W]
    for i in range(nq):
        qp[i] = q[i]
    for i in range(nv):
        step[i] = 0.0            # (the prescribed dofs' entries stay 0)
    # 1. Gauss-Newton on the free dofs: q <- q (+) (-G_f^+ g) (constraints.py _close_min_norm)
    residual = position
    iterations = 0
    while not residual < closing:
        if iterations == MAX_ITERATIONS:
            return -1            # not closed: constraints.py assembles (Python)
        for r in range(m):
            g[r] = loop_float[r, LOOP_RESIDUAL]
            for a in range(nf):
                reduced[r, a] = jacobian[r, free[a]]
        if min_norm_solve(reduced, m, nf, g, y, t, normal, rdiag, hv0, beta, cc, z, perm) < 0:
            return -1
        for a in range(nf):
            step[free[a]] = -y[a]
        integrate(body_int, qp, step, 1.0, qn)      # robot.integrate(q, step, 1.0)
        for i in range(nq):
            qp[i] = qn[i]
        iterations += 1
        forward_kinematics(body_int, body_float, work, qp, v[:0])
        cut_rows(cut_int, cut_float, work, loop_float)
        loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
        residual = 0.0
        for r in range(m):
            residual = max(residual, abs(loop_float[r, LOOP_RESIDUAL]))
    # 2. v_f <- v_f - M_ff^-1 G_f^T (G_f M_ff^-1 G_f^T)^+ G v at the projected q
    if not project_velocity(body_int, body_float, work, qp, mass, mats, vec, perm, free,
                            jacobian, v):
        return -1
    for i in range(nq):
        q[i] = qp[i]
    return 1
