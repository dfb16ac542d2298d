"""Compiled rollouts (robot.rollout's compiled engine, robot/rollout_compiled.py): whole
trajectories of a robot's fixed-step integration in one numba call, GIL-free (nogil=True) so
that batch members run on threads.

The dynamics are called through the robot's C entries (mbd_ros.fastcall.C_SIGNATURE:
int64 entry(void **bound, int64 *dims, double *a, double *b, double *c, double *out)), by
address (`call_entry`): one loop serves every tree with entries (rigid, flexible, generated), and
the numbers are the bits robot.forward_dynamics / mass_matrix / inverse_dynamics return, since
those run the same compiled kernels (the KernelCall path calls these very entries).

Why this design (measured on the arm7, AMD EPYC, see bench/bench_rollout.py): the cost of a
step is the forward dynamics (~0.6 µs) plus the vector updates; a numba loop calling the ABA
kernel directly and the same loop calling its C entry by address cost the same per step (the
entry only wraps the pointers in array views), while the address keeps one loop for every tree
(a direct call would need one compiled loop per tree kind and per generated model). A C loop in
_fastcall.c would save nothing more per step and would need the integrators, the drives and the
stops written again in C.

The step is robot.step's, operation for operation (robot/integrators.py Simulator._rk4 and
_semi_implicit_euler, kernels/rk4.py; q (+) v dt by kernels/configuration.py integrate where a
joint is not a vector space), then the Plant's position stops (kernels/stops.py, as
JointLimits.enforce) and the divergence checks; the drive torques of each row are
kernels/plant.py drive_torques (or limited_drive_torques) on M, m_eff = 1 / diag(M^-1) and
b = ID(q, v, 0), as the Plant computes them. No allocation in the loop: the caller passes the
workspaces (one set per thread).
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .aba import forward_dynamics as _tree_forward_dynamics
from .configuration import integrate as _integrate_joints
from .force_elements import force_element_loads
from .plant import (DRIVE_Q_REF, DRIVE_VELOCITY_CMD, beyond_limits, drive_torques,
                    effective_inertias, limited_drive_torques, max_abs)
from .rk4 import rk4_combine, rk4_stage, state_bound
from .stops import (STOP_DQ, STOP_IDX, STOP_LOWER, STOP_TARGET, STOP_UPPER, enforce_positions,
                    enforce_velocities, place_on_limits)
from .wrenches import load_link_wrenches

# ---- integer options (iopt) and float options (fopt) of one rollout
I_INTEGRATOR, I_SUBSTEPS, I_INNER, I_INTEGRATE, I_NQ_JOINTS, I_NV_JOINTS, I_DRIVES, I_LIMITS, \
    I_ONE_DOF, I_FORCES = range(10)
N_IOPT = 10
F_DT, F_H, F_MAX_SPEED, F_MAX_VELOCITY, F_INV_TIME_CONSTANT = range(5)
N_FOPT = 5
RK4, SEMI_IMPLICIT_EULER = 0, 1                  # iopt[I_INTEGRATOR]
VECTOR_SPACE, JOINT_MANIFOLDS = 0, 1             # iopt[I_INTEGRATE]: q (+) v dt = q + v dt, or not
FD, MM, ID = range(3)                            # entries[]: the C entries' addresses
# rows of the (WORK_ROWS, max(nq, nv)) workspace
W_Q, W_V, W_A1, W_A2, W_A3, W_A4, W_V2, W_V3, W_V4, W_QS, W_SUM, W_QN, W_VN, W_TOTAL, \
    W_DRIVE, W_MEFF, W_BIAS, W_ZERO, W_LOADED = range(19)
WORK_ROWS = 19
M_MASS, M_CHOL, M_INV = range(3)                 # the (3, nv, nv) matrices
# result codes (codes[i]); info[i] holds the detail (a speed, a kernel status)
DONE, NOT_FINITE, TOO_FAST, DYNAMICS_FAILED, STOP_FAILED, DRIVE_TERMS_FAILED = range(6)


@intrinsic
def call_entry(typingctx, address, bound, dims, a, b, c, out):
    """entry(bound, dims, a, b, c, out) for the C entry at `address` (int64) with the data
    pointers of the arrays bound (int64: the bound arrays' addresses), dims (int64), a, b, c,
    out (float64, any rank); returns the entry's int64 status."""
    sig = types.int64(address, bound, dims, a, b, c, out)

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        f64p = ir.DoubleType().as_pointer()
        i64p = ir.IntType(64).as_pointer()
        fnty = ir.FunctionType(ir.IntType(64), [i8p.as_pointer(), i64p, f64p, f64p, f64p, f64p])
        pointers = []
        for ty, value in zip(signature.args[1:], args[1:]):
            pointers.append(context.make_array(ty)(context, builder, value).data)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.bitcast(pointers[0], i8p.as_pointer()),
                                 builder.bitcast(pointers[1], i64p)]
                            + [builder.bitcast(p, f64p) for p in pointers[2:]])

    return sig, codegen


@njit(cache=True, nogil=True)
def _forward_dynamics(entries, bound, dims, forces, iopt, q, v, tau, out, tau_loaded):
    """out = f(q, v, tau) as robot.forward_dynamics: the C entry of a plain tree; with force
    elements (iopt[I_FORCES], a rigid tree) what robot.py's loaded path does: the elements'
    loads at (q, v) (force_element_loads: link wrenches and joint forces), the link wrenches into
    the workspace's FEXT (load_link_wrenches), tau + joint forces (into tau_loaded), the ABA on
    that workspace. forces = (body_int, body_float, work, link_int, link_float, link_fext,
    element_int, element_float, link_wrench, joint_force, values, scratch) (the arrays of
    robot/force_loads.py RigidForceLoads and the tree; per-thread copies of those written)."""
    if iopt[I_FORCES] == 0:
        return call_entry(entries[FD], bound, dims, q, v, tau, out)
    (body_int, body_float, work, link_int, link_float, link_fext, element_int, element_float,
     link_wrench, joint_force, values, scratch) = forces
    force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench, joint_force, values, scratch)
    load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)
    for i in range(tau.shape[0]):
        tau_loaded[i] = tau[i] + joint_force[i]
    return _tree_forward_dynamics(body_int, body_float, work, q, v, tau_loaded, out)


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _rk4_step(entries, bound, dims, forces, body_int, iopt, h, work, nq, nv):
    """One classic RK4 step of h from (W_Q, W_V) with a1 = f(q, v) already in W_A1, into
    (W_QN, W_VN) (Simulator._rk4: a1 = f(t, q, v); q_s = q (+) v_{s-1} c h, v_s = v + a_{s-1} c h;
    q+ = q (+) (v + 2 v2 + 2 v3 + v4) h/6, v+ = v + (a1 + 2 a2 + 2 a3 + a4) h/6). Returns the
    first non-zero status of the forward dynamics, else 0."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    qs = work[W_QS, :nq]
    tau = work[W_TOTAL, :nv]
    a1, a2, a3, a4 = work[W_A1, :nv], work[W_A2, :nv], work[W_A3, :nv], work[W_A4, :nv]
    v2, v3, v4 = work[W_V2, :nv], work[W_V3, :nv], work[W_V4, :nv]
    loaded = work[W_LOADED, :nv]
    half = 0.5 * h
    if iopt[I_INTEGRATE] == VECTOR_SPACE:   # kernels/rk4.py, as the vector-space Simulator
        rk4_stage(q, v, v, a1, half, qs, v2)
        status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v2, tau, a2, loaded)
        if status:
            return status
        rk4_stage(q, v, v2, a2, half, qs, v3)
        status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v3, tau, a3, loaded)
        if status:
            return status
        rk4_stage(q, v, v3, a3, h, qs, v4)
        status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v4, tau, a4, loaded)
        if status:
            return status
        rk4_combine(q, v, v2, v3, v4, a1, a2, a3, a4, h, work[W_QN, :nq], work[W_VN, :nv])
        return 0
    # joint manifolds: the Simulator's numpy updates, element by element in the same order
    _integrate(body_int, iopt, q, v, half, qs)
    for i in range(nv):
        v2[i] = v[i] + a1[i] * half
    status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v2, tau, a2, loaded)
    if status:
        return status
    _integrate(body_int, iopt, q, v2, half, qs)
    for i in range(nv):
        v3[i] = v[i] + a2[i] * half
    status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v3, tau, a3, loaded)
    if status:
        return status
    _integrate(body_int, iopt, q, v3, h, qs)
    for i in range(nv):
        v4[i] = v[i] + a3[i] * h
    status = _forward_dynamics(entries, bound, dims, forces, iopt, qs, v4, tau, a4, loaded)
    if status:
        return status
    s = work[W_SUM, :nv]
    sixth = 1.0 / 6.0
    for i in range(nv):
        s[i] = (((v2[i] + v3[i]) * 2.0 + v[i]) + v4[i]) * sixth
    _integrate(body_int, iopt, q, s, h, work[W_QN, :nq])
    h6 = h / 6.0
    vn = work[W_VN, :nv]
    for i in range(nv):
        vn[i] = v[i] + (((a2[i] + a3[i]) * 2.0 + a1[i]) + a4[i]) * h6
    return 0


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
               vel_idx, velocity_limit, effort, work, mats, nq, nv):
    """The Plant's drive torques at the row's start (Plant.evaluate): M, m_eff = 1/diag(M^-1),
    b = ID(q, v, 0), then drive_torques (or limited_drive_torques with limits) into W_DRIVE.
    position, velocity (nd,): the row's references. Returns 0, or 1 if a model term failed."""
    q, v = work[W_Q, :nq], work[W_V, :nv]
    mass, chol, minv = mats[M_MASS], mats[M_CHOL], mats[M_INV]
    m_eff, bias = work[W_MEFF, :nv], work[W_BIAS, :nv]
    zero = work[W_ZERO, :nv]
    if call_entry(entries[MM], bound, dims, q, q, q, mass):
        return 1
    if effective_inertias(mass, chol, minv, m_eff):
        return 1
    if call_entry(entries[ID], bound, dims, q, v, zero, bias):
        return 1
    for j in range(drive_int.shape[1]):   # command_position(position, velocities=velocity)
        drive_float[DRIVE_Q_REF, j] = position[j]
        drive_float[DRIVE_VELOCITY_CMD, j] = velocity[j]
    if iopt[I_LIMITS]:
        limited_drive_torques(drive_int, drive_float, q, v, mass, m_eff, bias, fopt[F_DT],
                              vel_idx, velocity_limit, effort, fopt[F_INV_TIME_CONSTANT],
                              work[W_DRIVE, :nv])
    else:
        drive_torques(drive_int, drive_float, q, v, mass, m_eff, bias, fopt[F_DT],
                      work[W_DRIVE, :nv])
    return 0


@njit(cache=True, nogil=True)
def rollout_member(entries, bound, dims, forces, body_int, iopt, fopt, q0, v0, tau, drive_int,
                   drive_float, position, velocity, limited_iq, stops_int, stops_float, vel_idx,
                   velocity_limit, effort, work, mats, stop_work, q_out, v_out, detail):
    """One rollout: q0 (nq,), v0 (nv,), tau (T, nv) -> rows 0..steps of q_out (T+1, nq), v_out
    (T+1, nv) (rows after a failure left as they were). Returns (code, steps): DONE, or the
    failure (NOT_FINITE, TOO_FAST: detail[0] the speed; DYNAMICS_FAILED: detail[0] the forward
    dynamics' status; STOP_FAILED; DRIVE_TERMS_FAILED) in the step from row `steps`.
    position, velocity (T, nd): drive references (read when iopt[I_DRIVES]); the stop arrays
    read when iopt[I_LIMITS] (kernels/stops.py rows; stops_int, stops_float and drive_float are
    written: per-thread copies)."""
    nq, nv = q0.shape[0], v0.shape[0]
    q, v = work[W_Q, :nq], work[W_V, :nv]
    for i in range(nq):
        q[i] = q0[i]
        q_out[0, i] = q0[i]
    for i in range(nv):
        v[i] = v0[i]
        v_out[0, i] = v0[i]
        work[W_ZERO, i] = 0.0
    total = work[W_TOTAL, :nv]
    a1 = work[W_A1, :nv]
    qn, vn = work[W_QN, :nq], work[W_VN, :nv]
    h = fopt[F_H]
    for k in range(tau.shape[0]):
        for i in range(nv):
            total[i] = tau[k, i]
        if iopt[I_DRIVES]:
            if _drive_row(entries, bound, dims, iopt, fopt, drive_int, drive_float, position[k],
                          velocity[k], vel_idx, velocity_limit, effort, work, mats, nq, nv):
                return DRIVE_TERMS_FAILED, k
            for i in range(nv):
                total[i] += work[W_DRIVE, i]
        for _ in range(iopt[I_SUBSTEPS]):         # robot.step calls of dt / substeps
            for _ in range(iopt[I_INNER]):        # their integrator steps (None: RK4 substeps)
                status = _forward_dynamics(entries, bound, dims, forces, iopt, q, v, total, a1,
                                           work[W_LOADED, :nv])
                if status:
                    detail[0] = status
                    return DYNAMICS_FAILED, k
                if iopt[I_INTEGRATOR] == RK4:
                    status = _rk4_step(entries, bound, dims, forces, body_int, iopt, h, work, nq,
                                       nv)
                    if status:
                        detail[0] = status
                        return DYNAMICS_FAILED, k
                else:   # semi-implicit Euler: v+ = v + h a1, q+ = q (+) h v+
                    for i in range(nv):
                        vn[i] = v[i] + a1[i] * h
                    _integrate(body_int, iopt, q, vn, h, qn)
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
            if iopt[I_LIMITS]:
                if _enforce_stops(entries, bound, dims, body_int, iopt, limited_iq, stops_int,
                                  stops_float, work, mats, stop_work, nq, nv) < 0:
                    return STOP_FAILED, k
            speed = max_abs(v)
            if not speed <= fopt[F_MAX_SPEED]:
                detail[0] = speed
                return TOO_FAST, k
            for i in range(nq):
                if not math.isfinite(q[i]):
                    return NOT_FINITE, k
        for i in range(nq):
            q_out[k + 1, i] = q[i]
        for i in range(nv):
            v_out[k + 1, i] = v[i]
    return DONE, tau.shape[0]


@njit(cache=True, nogil=True)
def rollout_members(entries, bound, dims, forces, body_int, iopt, fopt, q0, v0, tau, drive_int,
                    drive_float, position, velocity, limited_iq, stops_int, stops_float, vel_idx,
                    velocity_limit, effort, work, mats, stop_work, q_out, v_out, codes, steps, detail):
    """rollout_member for each member i of q0 (N, nq), v0 (N, nv), tau (N, T, nv), position,
    velocity (N, T, nd) into q_out (N, T+1, nq), v_out (N, T+1, nv), codes (N,), steps (N,),
    detail (N,): one thread's share of a batch, on that thread's workspaces."""
    for i in range(q0.shape[0]):
        codes[i], steps[i] = rollout_member(
            entries, bound, dims, forces, body_int, iopt, fopt, q0[i], v0[i], tau[i], drive_int,
            drive_float, position[i], velocity[i], limited_iq, stops_int, stops_float, vel_idx,
            velocity_limit, effort, work, mats, stop_work, q_out[i], v_out[i], detail[i:i + 1])


def new_options():
    """Zeroed (iopt (N_IOPT,) int64, fopt (N_FOPT,) float64)."""
    return np.zeros(N_IOPT, dtype=np.int64), np.zeros(N_FOPT)
