"""Compiled rollouts (robot.rollout's compiled engine, robot/rollout_compiled.py): whole
trajectories of a robot's fixed-step integration in one numba call, GIL-free (nogil=True) so
that batch members run on threads.

The dynamics are called through the robot's C entries (mbd_ros.fastcall.C_SIGNATURE:
int64 entry(void **bound, int64 *dims, double *a, double *b, double *c, double *out)), by
address (`call_entry`): one loop serves every tree with entries (rigid, flexible, generated), and
the numbers are the bits robot.forward_dynamics / mass_matrix / inverse_dynamics return, since
those run the same compiled kernels (the KernelCall path calls these very entries).

Why this design (measured on the arm7, AMD EPYC, bench/bench_rollout.py and bench/RESULTS.md):
the cost of a step is the forward dynamics plus the vector updates; a numba loop calling the ABA
kernel directly took 1.02 µs per call and the same loop calling its C entry by address 0.81 µs
(the entry only wraps the pointers in array views), and the address keeps one loop for every
tree (a direct call would need one compiled loop per tree kind and per generated model). A C
loop in _fastcall.c would call the same entries by address, so it would save nothing per step,
and would need the integrators, the drives and the stops written again in C (not built).

Force elements (rigid trees) and closed loops (the recursive solver) run as robot.py's loaded
path and the solver's C entry run them (_forward_dynamics); robot.step's projection onto the
loops runs in kernels/rollout_projection.py when the loop residuals pass the tolerance; only
when it does not converge the kernel returns NEEDS_PROJECTION (the caller projects in Python)
and is called again to resume the row.

The step is robot.step's, operation for operation (robot/integrators.py Simulator._rk4 and
_semi_implicit_euler, kernels/rk4.py; q (+) v dt by kernels/configuration.py integrate where a
joint is not a vector space; implicit_euler and symplectic_euler on trees by
kernels/rollout_implicit.py, equal to robot.step to round-off: its docstring says why not
bits), then the Plant's position stops (kernels/stops.py, as JointLimits.enforce) and the
divergence checks; the drive torques of each row are kernels/plant.py drive_torques (or
limited_drive_torques) on M, m_eff = 1 / diag(M^-1) and b = ID(q, v, 0), as the Plant computes
them. No allocation in the loop: the caller passes the workspaces (one set per thread).
"""
import math

import numpy as np
from numba import njit

from .aba import forward_dynamics as _tree_forward_dynamics
from .closed_loop import forward_dynamics_checked
from .configuration import integrate as _integrate_joints
from .entry_call import call_entry
from .force_elements import force_element_loads
from .plant import (DRIVE_Q_REF, DRIVE_VELOCITY_CMD, beyond_limits, drive_torques,
                    effective_inertias, limited_drive_torques, max_abs)
from .lie_rk4 import correct_stage_velocity
from .rk4 import rk4_combine, rk4_stage, state_bound
from .rollout_loop_drives import NEEDS_PARTITION, loop_drive_bias
from .rollout_projection import close_loops
from .rollout_loop_prescribed import close_loops_holding, loop_prescribed_forward_dynamics
from .rollout_tangent import implicit_euler_loop_step
from .rollout_implicit import implicit_euler_step, symplectic_euler_step
from .rollout_loads import loaded_tree_inverse_dynamics
from .rollout_flexible_loads import X_ELEMENT_INT, flexible_loaded_inverse_dynamics
from .flexible_loop_part import flexible_loops_forward_dynamics
from .rollout_flexible_loops import (close_flexible_loops, flexible_loop_drive_bias,
                                     flexible_loop_implicit_euler_step)
from .rollout_mimic import M_PAIR_INT, coupling_residual_exceeds, mimic_drive_bias
from .rollout_mimic_implicit import mimic_implicit_euler_step
from .rollout_prescribed import FIRST_STAGE, LAST_STAGE, MIDDLE_STAGE, place_prescribed
from .rollout_special import has_special_dynamics, special_forward_dynamics
from .stops import (STOP_DQ, STOP_IDX, STOP_LOWER, STOP_TARGET, STOP_UPPER, enforce_positions,
                    enforce_velocities, place_on_limits)
from .wrenches import load_link_wrenches

# ---- integer options (iopt) and float options (fopt) of one rollout
I_INTEGRATOR, I_SUBSTEPS, I_INNER, I_INTEGRATE, I_NQ_JOINTS, I_NV_JOINTS, I_DRIVES, I_LIMITS, \
    I_ONE_DOF, I_FORCES, I_LOOPS = range(11)
N_IOPT = 11
F_DT, F_H, F_MAX_SPEED, F_MAX_VELOCITY, F_INV_TIME_CONSTANT, F_PROJECTION_TOLERANCE, \
    F_CLOSING_TOLERANCE = range(7)
N_FOPT = 7
RK4, SEMI_IMPLICIT_EULER = 0, 1                  # iopt[I_INTEGRATOR]
IMPLICIT_EULER, SYMPLECTIC_EULER = 2, 3          # (trees: kernels/rollout_implicit.py)
VECTOR_SPACE, JOINT_MANIFOLDS = 0, 1             # iopt[I_INTEGRATE]: q (+) v dt = q + v dt, or not
FD, MM, ID = range(3)                            # entries[]: the C entries' addresses
# rows of the (WORK_ROWS, max(nq, nv)) workspace
W_Q, W_V, W_A1, W_A2, W_A3, W_A4, W_V2, W_V3, W_V4, W_QS, W_SUM, W_QN, W_VN, W_TOTAL, \
    W_DRIVE, W_MEFF, W_BIAS, W_ZERO, W_LOADED, W_MSTABLE = range(20)
WORK_ROWS = 20
M_MASS, M_CHOL, M_INV = range(3)                 # the (3, nv, nv) matrices
# result codes (codes[i]); info[i] holds the detail (a speed, a kernel status)
DONE, NOT_FINITE, TOO_FAST, DYNAMICS_FAILED, STOP_FAILED, DRIVE_TERMS_FAILED, \
    NEEDS_PROJECTION, NEEDS_DRIVE_TERMS = range(8)


@njit(cache=True, nogil=True)
def _loaded_forward_dynamics(forces, loops, iopt, q, v, tau, out, tau_loaded):
    """out = f(q, v, tau) as robot.forward_dynamics's loaded path runs it with force elements
    (iopt[I_FORCES], a rigid tree): the elements' loads at (q, v) (force_element_loads: link
    wrenches and joint forces), the link wrenches into the workspace's FEXT
    (load_link_wrenches), tau + joint forces (into tau_loaded), the ABA on that workspace; with
    closed loops too (iopt[I_LOOPS]) the recursive closed-loop solver on it, as its C entry runs
    it (forward_dynamics_checked). forces = (body_int, body_float, work, link_int, link_float,
    link_fext, element_int, element_float, link_wrench, joint_force, values, scratch) (the arrays
    of robot/force_loads.py RigidForceLoads and the tree; per-thread copies of those written);
    loops: see rollout_member. (Not inlined, and called only on this path: binding the two
    tuples costs an atomic reference count per array, ~0.5 µs per call measured on the arm7.)"""
    (body_int, body_float, work, link_int, link_float, link_fext, element_int, element_float,
     link_wrench, joint_force, values, scratch) = forces
    force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench, joint_force, values, scratch)
    load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    if iopt[I_LOOPS]:
        cut_int, cut_float, loop_float = loops[3], loops[4], loops[5]
        gains, info, multipliers = loops[7], loops[8], loops[9]
        return forward_dynamics_checked(body_int, body_float, work, cut_int, cut_float,
                                        loop_float, q, v, tau_loaded, gains, out, info,
                                        multipliers)
    return _tree_forward_dynamics(body_int, body_float, work, q, v, tau_loaded, out)


@njit(cache=True, nogil=True, inline="always")
def _integrate(body_int, iopt, q, v, dt, out):
    """out = q (+) v dt as robot.integrate: a vector space q + v dt; else the joints' manifolds
    (configuration.integrate on the first nq_joints / nv_joints entries) and the elastic
    coordinates q_f + v_f dt."""
    if iopt[I_INTEGRATE] == VECTOR_SPACE:
        for i in range(q.shape[0]):
            out[i] = q[i] + v[i] * dt
        return
    nqj, nvj = iopt[I_NQ_JOINTS], iopt[I_NV_JOINTS]
    _integrate_joints(body_int, q[:nqj], v[:nvj], dt, out[:nqj])
    for i in range(q.shape[0] - nqj):
        out[nqj + i] = v[nvj + i] * dt + q[nqj + i]


@njit(cache=True, nogil=True, inline="always")
def _rk4_stage(body_int, iopt, q, v, v_prev, a_prev, c, q_out, v_out):
    """An RK4 stage state (Simulator._rk4): q_out = q (+) v_prev c, v_out = v + a_prev c
    (kernels/rk4.py rk4_stage for a vector space; else robot.integrate's map and the numpy
    update's operations, element by element)."""
    if iopt[I_INTEGRATE] == VECTOR_SPACE:
        rk4_stage(q, v, v_prev, a_prev, c, q_out, v_out)
        return
    _integrate(body_int, iopt, q, v_prev, c, q_out)
    for i in range(v.shape[0]):
        v_out[i] = v[i] + a_prev[i] * c


@njit(cache=True, nogil=True, inline="always")
def _lie_stage(body_int, iopt, u_velocity, c, w):
    """On joint manifolds, a stage's twist w becomes its k_i in place, the increment u = c
    u_velocity (kernels/lie_rk4.py, as Simulator._rk4); a vector space: nothing to do."""
    if iopt[I_INTEGRATE] != VECTOR_SPACE:
        correct_stage_velocity(body_int, u_velocity, c, w)


@njit(cache=True, nogil=True, inline="always")
def _rk4_combine(body_int, iopt, work, h, nq, nv):
    """q+ = q (+) (v + 2 v2 + 2 v3 + v4) h/6, v+ = v + (a1 + 2 a2 + 2 a3 + a4) h/6 into
    (W_QN, W_VN), in the Simulator's operation order (kernels/rk4.py rk4_combine)."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    a1, a2, a3, a4 = work[W_A1, :nv], work[W_A2, :nv], work[W_A3, :nv], work[W_A4, :nv]
    v2, v3, v4 = work[W_V2, :nv], work[W_V3, :nv], work[W_V4, :nv]
    if iopt[I_INTEGRATE] == VECTOR_SPACE:
        rk4_combine(q, v, v2, v3, v4, a1, a2, a3, a4, h, work[W_QN, :nq], work[W_VN, :nv])
        return
    s = work[W_SUM, :nv]
    sixth = 1.0 / 6.0
    for i in range(nv):
        s[i] = (((v2[i] + v3[i]) * 2.0 + v[i]) + v4[i]) * sixth
    _integrate(body_int, iopt, q, s, h, work[W_QN, :nq])
    h6 = h / 6.0
    vn = work[W_VN, :nv]
    for i in range(nv):
        vn[i] = v[i] + (((a2[i] + a3[i]) * 2.0 + a1[i]) + a4[i]) * h6


@njit(cache=True, nogil=True)
def _enforce_stops(entries, bound, dims, body_int, iopt, limited_iq, stops_int, stops_float,
                   work, mats, nv_work, nq, nv):
    """JointLimits.enforce on (W_Q, W_V) in place (robot/rollout_plant.py enforce_stops: the same
    kernels in the same order; nv_work (3, nv) their vectors). Returns 0, or a stop kernel's
    negative status."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    if limited_iq.shape[0] == 0:
        return 0
    if not beyond_limits(q, limited_iq, stops_float[STOP_LOWER], stops_float[STOP_UPPER]):
        return 0
    mass, chol, minv = mats[M_MASS], mats[M_CHOL], mats[M_INV]
    status = call_entry(entries[MM], bound, dims, q, q, q, mass)
    if status:
        return -2
    k = enforce_positions(q, mass, stops_int, stops_float, chol, minv, nv_work,
                          iopt[I_ONE_DOF] != 0)
    if k <= 0:
        return k
    if iopt[I_ONE_DOF] == 0:
        qs = work[W_QS, :nq]
        _integrate(body_int, iopt, q, nv_work[STOP_DQ], 1.0, qs)
        for i in range(nq):
            q[i] = qs[i]
        place_on_limits(q, limited_iq, stops_int[STOP_IDX], stops_float[STOP_TARGET], k)
    status = call_entry(entries[MM], bound, dims, q, q, q, mass)
    if status:
        return -2
    return enforce_velocities(v, mass, stops_int, stops_float, k, chol, minv, nv_work)


@njit(cache=True, nogil=True)
def _drive_row(entries, bound, dims, iopt, fopt, drive_int, drive_float, position, velocity,
               vel_idx, velocity_limit, effort, work, mats, nq, nv, bias_ready):
    """The Plant's drive torques at the row's start (Plant.evaluate): M, m_eff = 1/diag(M^-1),
    b = ID(q, v, 0) (unless bias_ready: W_BIAS already holds it, with the force elements'
    loads), then drive_torques (or limited_drive_torques with limits) into W_DRIVE.
    position, velocity (nd,): the row's references. Returns 0, or 1 if a model term failed."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    mass, chol, minv = mats[M_MASS], mats[M_CHOL], mats[M_INV]
    m_eff, bias = work[W_MEFF, :nv], work[W_BIAS, :nv]
    m_stable = work[W_MSTABLE, :nv]
    zero = work[W_ZERO, :nv]
    if call_entry(entries[MM], bound, dims, q, q, q, mass):
        return 1
    if effective_inertias(mass, chol, minv, drive_int, m_eff, m_stable):
        return 1
    if not bias_ready and call_entry(entries[ID], bound, dims, q, v, zero, bias):
        return 1
    for j in range(drive_int.shape[1]):   # command_position(position, velocities=velocity)
        drive_float[DRIVE_Q_REF, j] = position[j]
        drive_float[DRIVE_VELOCITY_CMD, j] = velocity[j]
    if iopt[I_LIMITS]:
        limited_drive_torques(drive_int, drive_float, q, v, mass, m_eff, m_stable, bias,
                              fopt[F_DT], vel_idx, velocity_limit, effort,
                              fopt[F_INV_TIME_CONSTANT], work[W_DRIVE, :nv])
    else:
        drive_torques(drive_int, drive_float, q, v, mass, m_stable, bias, fopt[F_DT],
                      work[W_DRIVE, :nv])
    return 0


@njit(cache=True, nogil=True, inline="always")
def _after_step(entries, bound, dims, body_int, iopt, fopt, limited_iq, stops_int, stops_float,
                work, mats, stop_work, nq, nv, detail):
    """What follows a robot.step in a row: the position stops, then the divergence check on
    |v| (max_speed) and q. Returns DONE or the failure code."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    if iopt[I_LIMITS]:
        if _enforce_stops(entries, bound, dims, body_int, iopt, limited_iq, stops_int,
                          stops_float, work, mats, stop_work, nq, nv) < 0:
            return STOP_FAILED
    speed = max_abs(v)
    if not speed <= fopt[F_MAX_SPEED]:
        detail[0] = speed
        return TOO_FAST
    for i in range(nq):
        if not math.isfinite(q[i]):
            return NOT_FINITE
    return DONE


@njit(cache=True, nogil=True)
def _implicit_step(entries, bound, dims, forces, loops, body_int, iopt, q, v, total, a1, h, work,
                   mats, qn, vn, loaded, special, loop_parts):
    """(qn, vn) by the implicit_euler step of a tree or the symplectic_euler step of a tree or
    closed loops (kernels/rollout_implicit.py; loops: the loop tuple; special: None or
    (entries, parts, n), kernels/rollout_special.py's parts; with mimic couplings implicit Euler
    on their tangent basis, kernels/rollout_mimic_implicit.py; loop_parts: None, or with
    prescribed joints on closed loops their KKT workspace, symplectic Euler only); returns its
    status (0: done)."""
    manifold = iopt[I_INTEGRATE] == JOINT_MANIFOLDS
    rows, implicit_mats = work[WORK_ROWS:], mats[M_INV + 1:]
    if special is not None and iopt[I_INTEGRATOR] == IMPLICIT_EULER and \
            special[1][1][M_PAIR_INT].shape[0] > 0:
        return mimic_implicit_euler_step(special[0], bound, dims, forces, loaded, special[1],
                                         special[2], body_int, manifold, iopt[I_NQ_JOINTS],
                                         iopt[I_NV_JOINTS], q, v, total, a1, h, rows,
                                         implicit_mats, qn, vn)
    if iopt[I_INTEGRATOR] == IMPLICIT_EULER:
        return implicit_euler_step(entries[FD], bound, dims, forces, loaded, body_int, manifold,
                                   iopt[I_NQ_JOINTS], iopt[I_NV_JOINTS], q, v, total, a1, h,
                                   rows, implicit_mats, qn, vn, special)
    return symplectic_euler_step(entries[FD], entries[MM], bound, dims, forces, loaded, loops,
                                 iopt[I_LOOPS] != 0, body_int, manifold, iopt[I_NQ_JOINTS],
                                 iopt[I_NV_JOINTS], q, v, total, a1, h, rows, implicit_mats, qn,
                                 vn, special, loop_parts, None)


@njit(cache=True, nogil=True, inline="always")
def _special_stage(entries, bound, dims, forces, loaded, parts, loops, loop_parts, n, c, q, v,
                   tau, out):
    """The stage dynamics of a call with special parts (kernels/rollout_special.py): with
    prescribed joints on closed loops (loop_parts not None: their KKT workspace) the hybrid KKT
    solve on the loops tuple (kernels/rollout_loop_prescribed.py), else
    special_forward_dynamics. (loop_parts is rollout_member's argument: None prunes the branch
    at compile time; a runtime flag here cost the trees' special paths 4-7 %, measured.)"""
    if loop_parts is not None:
        return loop_prescribed_forward_dynamics(loops, forces, loaded, loop_parts, parts[0], n, c,
                                                q, v, tau, out)
    return special_forward_dynamics(entries, bound, dims, forces, loaded, parts, n, c, q, v, tau,
                                    out)


@njit(cache=True, nogil=True)
def rollout_member(entries, bound, dims, forces, loop_arrays, body_int, iopt, fopt, q0, v0, tau,
                   drive_int, drive_float, position, velocity, limited_iq, stops_int, stops_float,
                   vel_idx, velocity_limit, effort, work, mats, stop_work, q_out, v_out, detail,
                   resume, parts, loop_parts, flexible_loops):
    """One rollout: q0 (nq,), v0 (nv,), tau (T, nv) -> rows 0..steps of q_out (T+1, nq), v_out
    (T+1, nv) (rows after a failure left as they were). Returns (code, steps): DONE, or the
    failure (NOT_FINITE, TOO_FAST: detail[0] the speed; DYNAMICS_FAILED: detail[0] the forward
    dynamics' status; STOP_FAILED; DRIVE_TERMS_FAILED) in the step from row `steps`, or
    NEEDS_PROJECTION (closed loops, iopt[I_LOOPS]: the loop residuals after the robot.step of
    row `steps`, substep resume[1] - 1, passed the projection tolerance and
    kernels/rollout_projection.py's projection did not converge; the state is in work[W_Q],
    work[W_V]: the caller projects it there, as robot.step does, and calls again with `resume`
    as returned), or NEEDS_DRIVE_TERMS (drives on closed loops: the compensation of row
    `steps` needs the partition re-chosen; resume = [steps, -1]: the caller writes b(q, v) of the
    state in work[W_Q], work[W_V] into work[W_BIAS] and calls again). loop_arrays:
    robot/rollout_compiled.py's loop tuple, its item 10 the projection's workspace, item 11 the
    loop drives' (kernels/rollout_loop_drives.py). resume (2,) int64: [0, 0] to start from q0,
    v0.
    position, velocity (T, nd): drive references (read when iopt[I_DRIVES]); the stop arrays
    read when iopt[I_LIMITS] (kernels/stops.py rows; stops_int, stops_float and drive_float are
    written: per-thread copies). parts: None, or (prescribed joints, mimic couplings, force
    elements on a flexible tree), kernels/rollout_special.py's tuples (empty index arrays for
    what the call does not have); with mimic couplings NEEDS_PROJECTION also comes for
    robot.step's projection onto them, in Python. loop_parts: None, or with prescribed joints
    (parts[0]) on closed loops their KKT workspace (kernels/rollout_loop_prescribed.py
    loop_prescribed_workspace): their hybrid dynamics and robot.step's projection holding them.
    flexible_loops: None, or for closed loops on a flexible tree (iopt[I_LOOPS] is 0 for them,
    parts None) kernels/rollout_flexible_loops.py's part: their dense solve at the stages,
    robot.step's projection (NEEDS_PROJECTION when it declines) and the drives' compensation
    (NEEDS_DRIVE_TERMS as on rigid loops). (An argument of its own, not a
    fifth part: every array a tuple holds costs the calls that pass it, and None prunes the
    branches; as the fifth part the other parts' implicit steps measured 8-22 % slower.)
    """
    nq, nv = q0.shape[0], v0.shape[0]
    q, v = work[W_Q, :nq], work[W_V, :nv]
    total = work[W_TOTAL, :nv]
    a1 = work[W_A1, :nv]
    qn, vn = work[W_QN, :nq], work[W_VN, :nv]
    qs = work[W_QS, :nq]
    a2, a3, a4 = work[W_A2, :nv], work[W_A3, :nv], work[W_A4, :nv]
    v2, v3, v4 = work[W_V2, :nv], work[W_V3, :nv], work[W_V4, :nv]
    tau_loaded = work[W_LOADED, :nv]
    loaded = iopt[I_FORCES] != 0
    # prescribed joints, mimic couplings, flexible force elements (kernels/rollout_special.py).
    # parts is None when the call has none of them: numba then prunes the `parts is not None`
    # branches at compile time and the plain path compiles as it did without them (runtime
    # flags here cost the arm7 8-15 % per step, measured)
    prescribing = mimicking = special = flexible_loads = False
    if parts is not None:
        prescribing, mimicking, special = has_special_dynamics(parts)
        flexible_loads = parts[2][X_ELEMENT_INT].shape[0] > 0   # (force elements, flexible)
    # loop_arrays: the loops tuple and (item 10) the projection's workspace, kept out of the
    # tuple the stages pass to _loaded_forward_dynamics (each array it holds costs per call)
    loops, projection_work = loop_arrays[:10], loop_arrays[10]
    h = fopt[F_H]
    half = 0.5 * h
    k0, s0 = resume[0], resume[1]
    if k0 == 0 and s0 == 0:
        for i in range(nq):
            q[i] = q0[i]
            q_out[0, i] = q0[i]
        for i in range(nv):
            v[i] = v0[i]
            v_out[0, i] = v0[i]
            work[W_ZERO, i] = 0.0
    elif s0 > 0:   # back from a projection of the step before substep s0 of row k0
        code = _after_step(entries, bound, dims, body_int, iopt, fopt, limited_iq, stops_int,
                           stops_float, work, mats, stop_work, nq, nv, detail)
        if code != DONE:
            return code, k0
    for k in range(k0, tau.shape[0]):
        first = s0 if k == k0 and s0 > 0 else 0
        if first == 0:   # the row's held forces (on a resumed row they are still in work)
            for i in range(nv):
                total[i] = tau[k, i]
            if iopt[I_DRIVES]:
                if iopt[I_LOOPS] or flexible_loops is not None:
                    # closed loops: the loop-consistent compensation (kernels/
                    # rollout_loop_drives.py; on a flexible tree the same steps,
                    # kernels/rollout_flexible_loops.py), unless the caller computed it
                    # (resume[1] = -1)
                    if not (k == k0 and s0 < 0):
                        if flexible_loops is not None:
                            status = flexible_loop_drive_bias(flexible_loops, q, v,
                                                              work[W_BIAS, :nv])
                        else:
                            status = loop_drive_bias(loops, loop_arrays[11], forces, loaded, q,
                                                     v, work[W_BIAS, :nv])
                        if status == NEEDS_PARTITION:
                            resume[0] = k
                            resume[1] = -1
                            return NEEDS_DRIVE_TERMS, k
                        if status:
                            return DRIVE_TERMS_FAILED, k
                # mimic couplings: robot.inverse_dynamics(q, v, 0) = S T^T h, the actuated
                # (independent) dofs' forces (kernels/rollout_mimic.py mimic_drive_bias)
                elif parts is not None and mimicking:
                    if mimic_drive_bias(entries, bound, dims, forces, loaded, parts[1], q, v,
                                        work[W_ZERO, :nv], work[W_BIAS, :nv]):
                        return DRIVE_TERMS_FAILED, k
                # force elements on a flexible tree: ID(q, v, 0) with their loads
                # (kernels/rollout_flexible_loads.py)
                elif parts is not None and flexible_loads:
                    if flexible_loaded_inverse_dynamics(parts[2], q, v, work[W_ZERO, :nv],
                                                        work[W_BIAS, :nv]):
                        return DRIVE_TERMS_FAILED, k
                # with force elements, b = ID(q, v, 0) with their loads (robot.inverse_dynamics;
                # here, so that the plain path never binds the forces tuple)
                elif loaded and loaded_tree_inverse_dynamics(forces, q, v, work[W_ZERO, :nv],
                                                             work[W_BIAS, :nv]):
                    return DRIVE_TERMS_FAILED, k
                if _drive_row(entries, bound, dims, iopt, fopt, drive_int, drive_float,
                              position[k], velocity[k], vel_idx, velocity_limit, effort, work,
                              mats, nq, nv, loaded or iopt[I_LOOPS] != 0 or
                              flexible_loops is not None or
                              (parts is not None and (mimicking or flexible_loads))):
                    return DRIVE_TERMS_FAILED, k
                for i in range(nv):
                    total[i] += work[W_DRIVE, i]
        for s in range(first, iopt[I_SUBSTEPS]):   # robot.step calls of dt / substeps
            for j in range(iopt[I_INNER]):         # their integrator steps (None: RK4 substeps)
                n = (k * iopt[I_SUBSTEPS] + s) * iopt[I_INNER] + j   # (prescribed table row)
                # the forward dynamics at the stages: the C entry, or the loaded path (force
                # elements), branched here so that the plain path never binds those tuples
                if parts is not None and special:
                    status = _special_stage(entries, bound, dims, forces, loaded, parts, loops,
                                            loop_parts, n, FIRST_STAGE, q, v, total, a1)
                elif flexible_loops is not None:
                    status = flexible_loops_forward_dynamics(flexible_loops, q, v, total, a1)
                elif loaded:
                    status = _loaded_forward_dynamics(forces, loops, iopt, q, v, total, a1,
                                                      tau_loaded)
                else:
                    status = call_entry(entries[FD], bound, dims, q, v, total, a1)
                if status:
                    detail[0] = status
                    return DYNAMICS_FAILED, k
                if iopt[I_INTEGRATOR] == RK4:   # Simulator._rk4 (see _rk4_stage, _rk4_combine;
                    # on joint manifolds each stage's twist becomes its k_i after its forward
                    # dynamics: _lie_stage, kernels/lie_rk4.py)
                    _rk4_stage(body_int, iopt, q, v, v, a1, half, qs, v2)
                    if parts is not None and special:
                        status = _special_stage(entries, bound, dims, forces, loaded, parts,
                                                loops, loop_parts, n, MIDDLE_STAGE, qs, v2,
                                                total, a2)
                    elif flexible_loops is not None:
                        status = flexible_loops_forward_dynamics(flexible_loops, qs, v2, total,
                                                                 a2)
                    elif loaded:
                        status = _loaded_forward_dynamics(forces, loops, iopt, qs, v2, total, a2,
                                                          tau_loaded)
                    else:
                        status = call_entry(entries[FD], bound, dims, qs, v2, total, a2)
                    if status == 0:
                        _lie_stage(body_int, iopt, v, half, v2)
                        _rk4_stage(body_int, iopt, q, v, v2, a2, half, qs, v3)
                        if parts is not None and special:
                            status = _special_stage(
                                entries, bound, dims, forces, loaded, parts, loops, loop_parts,
                                n, MIDDLE_STAGE, qs, v3, total, a3)
                        elif flexible_loops is not None:
                            status = flexible_loops_forward_dynamics(flexible_loops, qs, v3,
                                                                     total, a3)
                        elif loaded:
                            status = _loaded_forward_dynamics(forces, loops, iopt, qs, v3, total,
                                                              a3, tau_loaded)
                        else:
                            status = call_entry(entries[FD], bound, dims, qs, v3, total, a3)
                    if status == 0:
                        _lie_stage(body_int, iopt, v2, half, v3)
                        _rk4_stage(body_int, iopt, q, v, v3, a3, h, qs, v4)
                        if parts is not None and special:
                            status = _special_stage(
                                entries, bound, dims, forces, loaded, parts, loops, loop_parts,
                                n, LAST_STAGE, qs, v4, total, a4)
                        elif flexible_loops is not None:
                            status = flexible_loops_forward_dynamics(flexible_loops, qs, v4,
                                                                     total, a4)
                        elif loaded:
                            status = _loaded_forward_dynamics(forces, loops, iopt, qs, v4, total,
                                                              a4, tau_loaded)
                        else:
                            status = call_entry(entries[FD], bound, dims, qs, v4, total, a4)
                    if status:
                        detail[0] = status
                        return DYNAMICS_FAILED, k
                    _lie_stage(body_int, iopt, v3, h, v4)
                    _rk4_combine(body_int, iopt, work, h, nq, nv)
                elif iopt[I_INTEGRATOR] == SEMI_IMPLICIT_EULER:   # v+ = v + h a1, q+ = q (+) h v+
                    for i in range(nv):
                        vn[i] = v[i] + a1[i] * h
                    _integrate(body_int, iopt, q, vn, h, qn)
                elif flexible_loops is not None:   # closed loops on a flexible tree:
                    # implicit Euler on their tangent basis (kernels/rollout_flexible_loops.py),
                    # symplectic Euler with their dense solve (kernels/rollout_implicit.py)
                    if iopt[I_INTEGRATOR] == IMPLICIT_EULER:
                        status = flexible_loop_implicit_euler_step(
                            flexible_loops, body_int, iopt[I_INTEGRATE] == JOINT_MANIFOLDS,
                            iopt[I_NQ_JOINTS], iopt[I_NV_JOINTS], q, v, total, a1, h,
                            work[WORK_ROWS:], mats[M_INV + 1:], qn, vn)
                    else:
                        status = symplectic_euler_step(
                            entries[FD], entries[MM], bound, dims, forces, False, loops, False,
                            body_int, iopt[I_INTEGRATE] == JOINT_MANIFOLDS, iopt[I_NQ_JOINTS],
                            iopt[I_NV_JOINTS], q, v, total, a1, h, work[WORK_ROWS:],
                            mats[M_INV + 1:], qn, vn, None, None, flexible_loops)
                    if status:
                        detail[0] = status
                        return DYNAMICS_FAILED, k
                elif iopt[I_LOOPS] and iopt[I_INTEGRATOR] == IMPLICIT_EULER:
                    # closed loops: on their tangent basis (kernels/rollout_tangent.py); with
                    # prescribed joints (loop_parts) their hybrid KKT dynamics at every column
                    if loop_parts is not None:
                        status = implicit_euler_loop_step(
                            entries[FD], bound, dims, forces, loaded, loops, loop_arrays[11],
                            body_int, iopt[I_INTEGRATE] == JOINT_MANIFOLDS, iopt[I_NQ_JOINTS],
                            iopt[I_NV_JOINTS], q, v, total, a1, h, work[WORK_ROWS:],
                            mats[M_INV + 1:], qn, vn, (parts[0], loop_parts, n))
                    else:
                        status = implicit_euler_loop_step(
                            entries[FD], bound, dims, forces, loaded, loops, loop_arrays[11],
                            body_int, iopt[I_INTEGRATE] == JOINT_MANIFOLDS, iopt[I_NQ_JOINTS],
                            iopt[I_NV_JOINTS], q, v, total, a1, h, work[WORK_ROWS:],
                            mats[M_INV + 1:], qn, vn, None)
                    if status:
                        detail[0] = status
                        return DYNAMICS_FAILED, k
                else:   # implicit_euler, symplectic_euler: kernels/rollout_implicit.py, on the
                    # workspace rows after WORK_ROWS and the matrices after M_INV
                    # (prescribed joints: the hybrid dynamics at every evaluation; force
                    # elements on a flexible tree: its loaded forward dynamics; mimic couplings:
                    # their minimal-coordinate dynamics, implicit Euler on their tangent basis)
                    if parts is not None and special:
                        status = _implicit_step(entries, bound, dims, forces, loops, body_int,
                                                iopt, q, v, total, a1, h, work, mats, qn, vn,
                                                loaded, (entries, parts, n), loop_parts)
                    else:
                        status = _implicit_step(entries, bound, dims, forces, loops, body_int,
                                                iopt, q, v, total, a1, h, work, mats, qn, vn,
                                                loaded, None, None)
                    if status:
                        detail[0] = status
                        return DYNAMICS_FAILED, k
                if parts is not None and prescribing:   # Simulator.advance: onto the trajectories
                    place_prescribed(parts[0], n, qn, vn)
                speed = state_bound(qn, vn)   # the Simulator's check (NaN: not finite)
                if speed != speed:
                    return NOT_FINITE, k
                if speed > fopt[F_MAX_VELOCITY]:
                    detail[0] = speed
                    return TOO_FAST, k
                for i in range(nq):
                    q[i] = qn[i]
                for i in range(nv):
                    v[i] = vn[i]
            # robot.step's projection test (PROJECTION_TOLERANCE) and projection
            if iopt[I_LOOPS]:
                # (prescribed joints: the projection holding them, kernels/
                # rollout_loop_prescribed.py)
                if loop_parts is not None:
                    closed = close_loops_holding(loops, projection_work, parts[0], q, v,
                                                 fopt[F_PROJECTION_TOLERANCE],
                                                 fopt[F_CLOSING_TOLERANCE])
                else:
                    closed = close_loops(loops, projection_work, q, v,
                                         fopt[F_PROJECTION_TOLERANCE], fopt[F_CLOSING_TOLERANCE])
                if closed < 0:
                    resume[0] = k   # not converged: the caller projects in Python (assembles)
                    resume[1] = s + 1
                    return NEEDS_PROJECTION, k
            elif flexible_loops is not None:
                # closed loops on a flexible tree: kernels/rollout_flexible_loops.py
                if close_flexible_loops(flexible_loops, q, v, fopt[F_PROJECTION_TOLERANCE],
                                        fopt[F_CLOSING_TOLERANCE]) < 0:
                    resume[0] = k   # not converged: the caller projects in Python
                    resume[1] = s + 1
                    return NEEDS_PROJECTION, k
            elif parts is not None and mimicking and coupling_residual_exceeds(
                    parts[1], q, v, fopt[F_PROJECTION_TOLERANCE]):
                resume[0] = k   # robot.step's projection onto the couplings: in Python
                resume[1] = s + 1
                return NEEDS_PROJECTION, k
            code = _after_step(entries, bound, dims, body_int, iopt, fopt, limited_iq, stops_int,
                               stops_float, work, mats, stop_work, nq, nv, detail)
            if code != DONE:
                return code, k
        for i in range(nq):
            q_out[k + 1, i] = q[i]
        for i in range(nv):
            v_out[k + 1, i] = v[i]
    return DONE, tau.shape[0]


@njit(cache=True, nogil=True)
def rollout_members(entries, bound, dims, forces, loops, body_int, iopt, fopt, q0, v0, tau,
                    drive_int, drive_float, position, velocity, limited_iq, stops_int, stops_float,
                    vel_idx, velocity_limit, effort, work, mats, stop_work, q_out, v_out, codes,
                    steps, detail, resume, parts):
    """rollout_member for each member i of q0 (N, nq), v0 (N, nv), tau (N, T, nv), position,
    velocity (N, T, nd) into q_out (N, T+1, nq), v_out (N, T+1, nv), codes (N,), steps (N,),
    detail (N,): one thread's share of a batch, on that thread's workspaces (robots without
    closed loops or mimic couplings: NEEDS_PROJECTION never comes; resume (2,) is scratch;
    parts: see rollout_member)."""
    for i in range(q0.shape[0]):
        resume[0] = 0
        resume[1] = 0
        codes[i], steps[i] = rollout_member(
            entries, bound, dims, forces, loops, body_int, iopt, fopt, q0[i], v0[i], tau[i],
            drive_int, drive_float, position[i], velocity[i], limited_iq, stops_int, stops_float,
            vel_idx, velocity_limit, effort, work, mats, stop_work, q_out[i], v_out[i],
            detail[i:i + 1], resume, parts, None, None)


def new_options():
    """Zeroed (iopt (N_IOPT,) int64, fopt (N_FOPT,) float64)."""
    return np.zeros(N_IOPT, dtype=np.int64), np.zeros(N_FOPT)
