"""Closed loops on flexible trees in the compiled rollouts (kernels/rollout.py, rollout_member's
`flexible_loops` argument): the stage dynamics are kernels/flexible_loop_dynamics.py's dense
solve (robot.forward_dynamics' default on these robots), and robot.step's closing of the loops
after a step (robot.step: the residual test against PROJECTION_TOLERANCE, then
Constraints.project_state) runs here too:

1. positions: Gauss-Newton with minimum-norm steps, q <- q (+) (-G^+ g), until max |g| <
   `closing` (ASSEMBLY_TOLERANCE, after a semi-implicit Euler step EULER_CLOSING_TOLERANCE), at
   most MAX_ITERATIONS steps (constraints.py _close_min_norm; lstsq there, the pivoted-QR
   minimum-norm solve of kernels/rollout_projection.py here: its docstring relates the two);
2. velocities: v <- v - M^-1 G^T (G M^-1 G^T)^+ G v with the flexible M (Cholesky; numpy: LU)
   and G at the projected q (numpy's pinv: the same pivoted-QR solve here).

A Gauss-Newton that does not converge (constraints.py then re-assembles in Python) or a failed
solve returns -1 with q and v untouched: the rollout returns NEEDS_PROJECTION and the caller
projects in Python (robot/rollout_compiled.py).

The residual test (robot.closure_residual: max |g|, max |G v|) takes G v from the cut frames'
twists of one kinematics pass, G_A T_A + G_B T_B, where robot.step forms G (nv passes) and
multiplies: the same value to round-off (a test exactly at the tolerance could go either way),
and the RK4 step that does not project (most of them) skips the frame Jacobians (~8 µs of the
sample four-bar's ~100 µs step, bench/bench_flexible_loops.py).

The part (robot/rollout_flexible_loops.py `flexible_loop_arrays`, one per thread):
(tree, ends, cut_int, cut_data, workspace, residual (b,), jacobian (b, nv), lam (b,), info (2,)
int64, gains (2,): the Baumgarte alpha, beta, drives: kernels/rollout_loop_drives.py's
drive_workspace, loads: kernels/rollout_flexible_loads.py's tuple of the force elements, on the
tree's workspace), the first five as kernels/flexible_loop_dynamics.py takes them (tree and ends
with private copies of the workspaces they write); indices FL_* and the stage dynamics in
kernels/flexible_loop_part.py. None for every other robot (numba prunes the branches).

`implicit_euler` (`flexible_loop_implicit_euler_step`) is the Simulator's linearly implicit
Euler on the tangent basis, as kernels/rollout_tangent.py runs it on rigid loops: N =
tangent_basis of G(q) (the cut frames' rows at the deformed points, flexible_loop_state: the G
robot.constraint_basis takes), the Jacobians A_v N, A_q N by forward differences of this dense
solve along N's columns, then tangent_implicit_update; robot.step's projection follows as after
the other integrators. `symplectic_euler` runs kernels/rollout_implicit.py's step with this
part's dense solve (kernels/flexible_loop_part.py); its fixed-point iteration is explicit in the
stiffness (it diverges on the sample's beam at dt = 1 ms, as robot.step does).

The drives' compensation (`flexible_loop_drive_bias`, at the start of a row with drives) is the
Plant's on closed loops (kernels/rollout_loop_drives.py's module docstring, its shared steps) with
this tree's rows and inverse dynamics (with force elements robot.inverse_dynamics' loaded RNEA
minus their generalized forces): gamma from flexible_loop_rows (the central difference, as
FlexibleLoopKinematics.bias), qdd0 on the robot's partition (whose dependent coordinates may be
elastic ones), tau_tree by the flexible RNEA at qdd0, and the actuated forces as least squares
without the exactness test: no drive moves the elastic coordinates, so a qdd0 their dynamics do not
produce has no exact actuation, and Constraints.actuation returns the least-squares forces then.
"""
from numba import njit

from .flexible_dynamics import inverse_dynamics as flexible_inverse_dynamics
from .flexible_dynamics import mass_matrix
from .flexible_loop_dynamics import (F_BETA, F_C, F_G, F_GV, F_HV0, F_LAM, F_NORMAL, F_QN,
                                     F_RDIAG, F_STEP, F_T, F_Z, flexible_loop_residuals,
                                     flexible_loop_rows, flexible_loop_state, integrate_flexible,
                                     loop_inertia)
from .flexible_loop_part import (FL_DRIVES, FL_GAINS, FL_JACOBIAN, FL_LOADS, FL_RESIDUAL,
                                 flexible_loops_forward_dynamics)
from .rollout_flexible_loads import X_ELEMENT_INT, X_JOINT_FORCE, load_flexible_tree
from .rollout_loop_drives import (DONE, NEEDS_PARTITION, TREE_FAILED, V_GAMMA, V_GV, V_QDD,
                                  V_TAU, actuated_forces, dependent_accelerations,
                                  loop_rows_accept)
from .rollout_implicit import (FD_STEP, R_LOADED, R_P, R_PIV, R_QS, R_S, R_T, R_U, R_V2, R_Z,
                               SINGULAR, X_AQ, X_AV, X_LHS, X_MASS, integrate_state)
from .rollout_projection import MAX_ITERATIONS, min_norm_solve
from .rollout_tangent import tangent_basis, tangent_implicit_update


@njit(cache=True, nogil=True)
def close_flexible_loops(part, q, v, tolerance, closing):
    """robot.step's closing of the loops after a step, in place on q (nq,), v (nv,) (module
    docstring): 0 when max |g| and max |G v| are within `tolerance` (nothing done), 1 when
    projected, -1 when the projection declined (q, v unchanged: the caller projects in
    Python)."""
    tree, ends, cut_int, cut_data, workspace = part[:5]
    residual, jacobian = part[FL_RESIDUAL], part[FL_JACOBIAN]
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    unit = ends[5]
    chol, w, kmat, mats, vec, perm = workspace[:6]
    stage = workspace[9]
    nq, nv, b = q.shape[0], v.shape[0], jacobian.shape[0]
    gv, step, qn, g, y = vec[F_GV, :b], vec[F_STEP, :nv], vec[F_QN, :nq], vec[F_G, :b], \
        vec[F_LAM, :b]
    t, normal = mats[F_T], mats[F_NORMAL]
    rdiag, hv0, beta, c, z = vec[F_RDIAG], vec[F_HV0], vec[F_BETA], vec[F_C], vec[F_Z]
    # the residual test from one kinematics pass (no frame Jacobians: most RK4 steps stop here)
    position, velocity = flexible_loop_residuals(tree, ends, cut_int, cut_data, workspace, q, v)
    if not (position > tolerance or velocity > tolerance):
        return 0
    position = flexible_loop_state(tree, ends, cut_int, cut_data, workspace, q, v, residual,
                                   jacobian, gv)
    # 1. Gauss-Newton with minimum-norm steps on a copy of q (stage)
    for i in range(nq):
        stage[i] = q[i]
    iterations = 0
    while not position < closing:
        if iterations == MAX_ITERATIONS:
            return -1
        for r in range(b):
            g[r] = residual[r]
        if min_norm_solve(jacobian, b, nv, g, step, t, normal, rdiag, hv0, beta, c, z,
                          perm) < 0:
            return -1
        for i in range(nv):
            step[i] = -step[i]
        integrate_flexible(body_int, joint_nq, joint_nv, stage, step, 1.0, qn)
        for i in range(nq):
            stage[i] = qn[i]
        iterations += 1
        position = flexible_loop_state(tree, ends, cut_int, cut_data, workspace, stage, v,
                                       residual, jacobian, gv)
    # 2. v <- v - M^-1 G^T (G M^-1 G^T)^+ G v at the projected q (G v: gv, from the last state)
    if mass_matrix(fint, ffloat, fdata, work, fwork, stage, unit, vec[F_C, :nv], chol):
        return -1
    if not loop_inertia(chol, nv, jacobian, b, w, kmat):   # M = L L^T, W = M^-1 G^T, K = G W
        return -1
    if min_norm_solve(kmat, b, b, gv, y, t, normal, rdiag, hv0, beta, c, z, perm) < 0:
        return -1
    for i in range(nv):
        s = 0.0
        for r in range(b):
            s += w[i, r] * y[r]
        v[i] -= s
    for i in range(nq):
        q[i] = stage[i]
    return 1


@njit(cache=True, nogil=True)
def flexible_loop_drive_bias(part, q, v, out):
    """out (nv,) = b(q, v), the drives' compensation (module docstring) at q (nq,), v (nv,).
    Returns DONE (out 0 where robot.inverse_dynamics refuses qdd0), NEEDS_PARTITION (the
    partition would be re-chosen: out not set; the caller computes it in Python) or TREE_FAILED
    (the RNEA failed)."""
    tree, ends, cut_int, cut_data, workspace = part[:5]
    residual, jacobian, gains, drive_work = part[FL_RESIDUAL], part[FL_JACOBIAN], \
        part[FL_GAINS], part[FL_DRIVES]
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = tree
    vec = drive_work[3]
    nv, m = v.shape[0], jacobian.shape[0]
    for i in range(nv):
        out[i] = 0.0
    if drive_work[1].shape[0] == 0:   # no actuated joint: b = 0 (the Plant's _no_actuation)
        return DONE
    gamma, qdd, tau, gv = vec[V_GAMMA, :m], vec[V_QDD, :nv], vec[V_TAU, :nv], vec[V_GV, :m]
    flexible_loop_rows(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv,
                       gamma)
    status = dependent_accelerations(jacobian, gamma, drive_work, qdd)
    if status != DONE:   # NEEDS_PARTITION, or a failed solve: b = 0
        return NEEDS_PARTITION if status == NEEDS_PARTITION else DONE
    if not loop_rows_accept(jacobian, gamma, residual, gv, gains[0], gains[1], qdd):
        return DONE     # robot.inverse_dynamics raises: b = 0
    loads = part[FL_LOADS]
    loaded = loads[X_ELEMENT_INT].shape[0] > 0
    if loaded:   # robot.inverse_dynamics: the loads at (q, v), the RNEA, minus their forces
        load_flexible_tree(loads, q, v, tau)
    if flexible_inverse_dynamics(fint, ffloat, fdata, work, fwork, q, v, qdd, tau):
        return TREE_FAILED
    if loaded:
        joint_force = loads[X_JOINT_FORCE]
        for i in range(nv):
            tau[i] -= joint_force[i]
    actuated_forces(jacobian, tau, drive_work, False, out)
    return DONE


@njit(cache=True, nogil=True)
def flexible_loop_implicit_euler_step(part, body_int, manifold, nq_joints, nv_joints, q, v, tau,
                                      a1, h, rows, mats, q_next, v_next):
    """One linearly implicit Euler step (module docstring): (q (nq,), v (nv,)) -> (q_next,
    v_next) for the held tau (nv,), a1 = f(q, v, tau) given, step h (s); rows, mats:
    kernels/rollout_implicit.py's workspace (IMPLICIT_ROWS, IMPLICIT_MATS); manifold,
    nq_joints, nv_joints: integrate_state's. Returns 0, the dense solve's status or SINGULAR."""
    tree, ends, cut_int, cut_data, workspace = part[:5]
    residual, jacobian = part[FL_RESIDUAL], part[FL_JACOBIAN]
    mats_work, vec, perm = workspace[3], workspace[4], workspace[5]
    nq, nv, m = q.shape[0], v.shape[0], jacobian.shape[0]
    v2, qs, p = rows[R_V2, :nv], rows[R_QS, :nq], rows[R_P, :nv]
    s, z, t, direction = rows[R_S, :nv], rows[R_Z, :nv], rows[R_T, :nv], rows[R_U, :nv]
    sz = rows[R_LOADED, :nv]
    a_q, a_v, lhs, basis = mats[X_AQ], mats[X_AV], mats[X_LHS], mats[X_MASS]
    # N at q (the columns' solves below overwrite G and the scratch: N is taken first)
    flexible_loop_state(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian,
                        vec[F_GV, :m])
    k = tangent_basis(jacobian, m, nv, mats_work[F_T], vec[F_RDIAG], vec[F_HV0], vec[F_BETA],
                      perm, basis)
    for j in range(k):
        for i in range(nv):
            direction[i] = basis[i, j]
        # d f / d v along n_j: v2 = n_j 1e-7 + v
        for i in range(nv):
            v2[i] = direction[i] * FD_STEP + v[i]
        status = flexible_loops_forward_dynamics(part, q, v2, tau, p)
        if status:
            return status
        for i in range(nv):
            a_v[i, j] = (p[i] - a1[i]) / FD_STEP
        # d f / d q along n_j: q (+) n_j 1e-7
        integrate_state(body_int, manifold, nq_joints, nv_joints, q, direction, FD_STEP, qs)
        status = flexible_loops_forward_dynamics(part, qs, v, tau, p)
        if status:
            return status
        for i in range(nv):
            a_q[i, j] = (p[i] - a1[i]) / FD_STEP
    if tangent_implicit_update(basis, k, a1, a_v, a_q, v, h, lhs, s, z, t, sz, rows[R_PIV],
                               v_next):
        return SINGULAR
    integrate_state(body_int, manifold, nq_joints, nv_joints, q, v_next, h, q_next)
    return 0
