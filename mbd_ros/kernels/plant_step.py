"""One step of the simulated plant (mbd_ros.simulation.plant.Plant.step) in one compiled call:
drive torques with their limits -> integrator stages -> position stops -> divergence check, on
a rigid tree with optional rigid force elements and recursive closed loops
(mbd_ros/robot/step_parts.py says which robots). Called once per node cycle; the Python path of
the Plant makes ~20-60 Python-level calls per step for the same arithmetic.

Every number comes from the kernels the Python path calls, in the same order, so both paths
give the same bits:
- forward dynamics f(q, v, tau): force_element_loads + load_link_wrenches (the elements' link
  wrenches into the loaded workspace, tau + their joint forces), then the closed-loop solver
  (closed_loop.forward_dynamics_checked, Baumgarte gains and the loop-residual warning threshold
  in `gains`) or the ABA (aba.forward_dynamics, on `work`);
- drive model terms (when a drive is a servo or a joint has a velocity limit): M(q) by the CRBA
  on the lock-free workspace, m_eff = 1 / diag(M^-1) (effective_inertias), b(q, v) = ID(q, v, 0)
  minus the elements' joint forces (RNEA), or 0 for a closed loop without actuated joints;
- drive_torques / limited_drive_torques (kernels/plant.py), the RK4 updates rk4_stage /
  rk4_combine and the divergence bound state_bound (kernels/rk4.py), the stops
  enforce_positions / enforce_velocities (kernels/stops.py);
- semi-implicit Euler (Hairer, Lubich & Wanner, Geometric Numerical Integration, I.1.2):
  v+ = v + h a, q+ = q + h v+, with the operations in the numpy version's order;
- closed loops re-closed after every integrator step as robot.step re-closes its result
  (robot.close_loops_after_step): kernels/rollout_projection.close_loops, the compiled
  rollouts' (its pivoted-QR solves equal numpy's least squares to round-off, not bit for bit;
  when it declines, FAIL_PROJECTION sends the step to the Python path, which re-assembles).

The state is read from q0, v0 and the step is written to q, v (the caller commits it); nothing
the caller keeps is changed on failure except the velocity-mode references in drive_float
(restored by the caller) and scratch. Returns 0 or a failure code (FAIL_*): the caller then
replays the step on the Python path, which raises the documented error.
"""
from numba import njit

from ..model.layout import FEXT
from .aba import forward_dynamics as _aba
from .closed_loop import forward_dynamics_checked as _closed_loop_fd
from .crba import mass_matrix as _crba
from .force_elements import force_element_loads
from .plant import beyond_limits, drive_torques, effective_inertias, limited_drive_torques, \
    max_abs
from .rk4 import rk4_combine, rk4_stage, state_bound
from .rollout_projection import close_loops
from .rnea import inverse_dynamics as _rnea
from .stops import STOP_LIMITED_IQ, STOP_LOWER, STOP_UPPER, enforce_positions, \
    enforce_velocities
from .wrenches import load_link_wrenches

FAIL_DYNAMICS = 1      # a kernel status (non-finite, singular, loop open beyond the threshold)
FAIL_MASS = 2          # M not positive definite (drive terms or stops)
FAIL_BOUND = 3         # non-finite state or |v| > max_velocity after an integrator step
FAIL_STOP = 4          # a stop kernel failed
FAIL_SPEED = 5         # |v| > max_speed after the step (the Plant's divergence)
FAIL_PROJECTION = 6    # the loops' projection declined (not closed in its iterations)

# rows of the (7, nv) stage array: q_stage, v2, v3, v4, a2, a3, a4 (as Simulator's)
_QS, _V2, _V3, _V4, _A2, _A3, _A4 = range(7)


@njit(cache=True)
def _loads(body_int, body_float, work, link_int, link_float, link_fext, element_int,
           element_float, link_wrench, joint_force, values, scratch, q, v):
    """The force elements' loads at (q, v) into the loaded workspace (robot.py _apply_loads:
    RigidForceLoads.evaluate, then RigidTree.set_loads)."""
    force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench, joint_force, values, scratch)
    load_link_wrenches(link_int, link_float, link_wrench, link_fext, work)


@njit(cache=True)
def stage_dynamics(body_int, body_float, work, link_int, link_float, link_fext, element_int,
                   element_float, link_wrench, joint_force, values, scratch, has_elements,
                   cut_int, cut_float, loop_float, gains, info, multipliers, has_loops,
                   q, v, tau, tau_total, out):
    """out (nv,) = robot.forward_dynamics(q, v, tau) for the robots of step_parts.py; tau_total
    (nv,) scratch. Returns the kernel's status (0: ok)."""
    n = tau.shape[0]
    if has_elements:
        _loads(body_int, body_float, work, link_int, link_float, link_fext, element_int,
               element_float, link_wrench, joint_force, values, scratch, q, v)
        for i in range(n):
            tau_total[i] = tau[i] + joint_force[i]
    else:
        if has_loops:   # RigidTree.clear_loads: no loads act
            for i in range(work.shape[0]):
                for r in range(6):
                    work[i, FEXT + r] = 0.0
            for i in range(link_fext.shape[0]):
                for r in range(6):
                    link_fext[i, r] = 0.0
        for i in range(n):
            tau_total[i] = tau[i]
    if has_loops:
        return _closed_loop_fd(body_int, body_float, work, cut_int, cut_float, loop_float, q, v,
                               tau_total, gains, out, info, multipliers)
    return _aba(body_int, body_float, work, q, v, tau_total, out)


@njit(cache=True)
def plant_step(body_int, body_float, work, free_work, link_int, link_float, link_fext,
               element_int, element_float, link_wrench, joint_force, values, scratch,
               has_elements, cut_int, cut_float, loop_float, gains, info, multipliers, has_loops,
               loop_jacobian, projection, project_tolerance, closing, first_multipliers,
               zero_bias, drive_int, drive_float, model_terms, has_limits, vel_idx, velocity,
               effort, inv_time_constant, stops_int, stops_float, chol, minv, stop_work,
               has_stops, q0, v0, step_dt, dt, substeps, rk4, max_velocity, max_speed,
               mass, m_eff, m_stable, bias, zero, tau, tau_total, qdd_first, qdd, stages, q, v,
               q_next, v_next, counts):
    """One Plant step (module docstring) from (q0, v0) into (q, v) (nq = nv), in place.

    Tree and loads: body_int ... has_loops as in stage_dynamics; free_work the lock-free
    workspace (M, and b without force elements; the loops' projection). Loops: loop_jacobian
    (rows, nv) and projection (rollout_projection.projection_workspace) the projection's
    scratch, project_tolerance (robot.step's PROJECTION_TOLERANCE) and closing (its
    Gauss-Newton stop) as close_loops takes them; first_multipliers (b,) scratch: the loop
    multipliers of the forward dynamics at (q0, v0), put back into `multipliers` at the end, so
    that robot.multipliers() after the call is that state's, as after the Python path's
    evaluate() (the node's wrenches of the evaluated state reuse them), not the last stage's. zero_bias: b = 0 (closed loop, no actuated
    joint). Drives: drive_int, drive_float (kernels/plant.py DRIVE_* rows); model_terms: compute
    M, m_eff, b (a servo drive or a velocity limit); has_limits: limited_drive_torques with
    vel_idx, velocity, effort, inv_time_constant (else drive_torques). Stops (has_stops):
    stops_int, stops_float (kernels/stops.py STOP_* rows), chol, minv (nv, nv), stop_work
    (3, nv). step_dt: the plant's step (s, the drives' dt); dt = step_dt / substeps, the
    integrator's; rk4: RK4 (else semi-implicit Euler); max_velocity: the integrator's bound,
    max_speed: the plant's (rad/s, m/s).
    Out: tau (nv,) the drive torques, qdd_first (nv,) the accelerations at (q0, v0), qdd the
    last substep's first stage, q, v the new state; counts (2,) int64: [1 if the limits changed
    a torque, number of stop corrections]. Scratch: mass (nv, nv), m_eff, bias, tau_total,
    zero (zeros), stages (7, nv), q_next, v_next, m_stable (nv,) (effective_inertias).
    Returns 0 or FAIL_*."""
    nv = q0.shape[0]
    counts[0] = 0
    counts[1] = 0
    for i in range(nv):
        q[i] = q0[i]
        v[i] = v0[i]
    # ---- drive torques (Plant.evaluate)
    if model_terms:
        if _crba(body_int, body_float, free_work, q, mass) != 0:
            return FAIL_DYNAMICS
        if effective_inertias(mass, chol, minv, drive_int, m_eff, m_stable) != 0:
            return FAIL_MASS
        if zero_bias:
            for i in range(nv):
                bias[i] = 0.0
        elif has_elements:   # ID(q, v, 0) with the elements' loads, minus their joint forces
            _loads(body_int, body_float, work, link_int, link_float, link_fext, element_int,
                   element_float, link_wrench, joint_force, values, scratch, q, v)
            if _rnea(body_int, body_float, work, q, v, zero, bias) != 0:
                return FAIL_DYNAMICS
            for i in range(nv):
                bias[i] -= joint_force[i]
        elif _rnea(body_int, body_float, free_work, q, v, zero, bias) != 0:
            return FAIL_DYNAMICS
    if has_limits:
        if limited_drive_torques(drive_int, drive_float, q, v, mass, m_eff, m_stable, bias,
                                 step_dt, vel_idx, velocity, effort, inv_time_constant, tau):
            counts[0] = 1
    else:
        drive_torques(drive_int, drive_float, q, v, mass, m_stable, bias, step_dt, tau)
    # ---- substeps (Plant.advance: Simulator.advance, then the stops)
    h = 0.5 * dt
    # the loops' projection arrays, gathered once for every substep (close_loops' tuple)
    loops = (body_int, body_float, free_work, cut_int, cut_float, loop_float, loop_jacobian)
    qs, v2, v3, v4 = stages[_QS], stages[_V2], stages[_V3], stages[_V4]
    a2, a3, a4 = stages[_A2], stages[_A3], stages[_A4]
    for k in range(substeps):
        a1 = qdd_first if k == 0 else qdd
        if stage_dynamics(body_int, body_float, work, link_int, link_float, link_fext,
                          element_int, element_float, link_wrench, joint_force, values, scratch,
                          has_elements, cut_int, cut_float, loop_float, gains, info, multipliers,
                          has_loops, q, v, tau, tau_total, a1) != 0:
            return FAIL_DYNAMICS
        if k == 0:
            for i in range(nv):
                qdd[i] = qdd_first[i]
            if has_loops:
                for i in range(multipliers.shape[0]):
                    first_multipliers[i] = multipliers[i]
        if rk4:
            rk4_stage(q, v, v, a1, h, qs, v2)      # q2 = q + v h, v2 = v + a1 h
            if stage_dynamics(body_int, body_float, work, link_int, link_float, link_fext,
                              element_int, element_float, link_wrench, joint_force, values,
                              scratch, has_elements, cut_int, cut_float, loop_float, gains,
                              info, multipliers, has_loops, qs, v2, tau, tau_total, a2) != 0:
                return FAIL_DYNAMICS
            rk4_stage(q, v, v2, a2, h, qs, v3)     # q3 = q + v2 h, v3 = v + a2 h
            if stage_dynamics(body_int, body_float, work, link_int, link_float, link_fext,
                              element_int, element_float, link_wrench, joint_force, values,
                              scratch, has_elements, cut_int, cut_float, loop_float, gains,
                              info, multipliers, has_loops, qs, v3, tau, tau_total, a3) != 0:
                return FAIL_DYNAMICS
            rk4_stage(q, v, v3, a3, dt, qs, v4)    # q4 = q + v3 dt, v4 = v + a3 dt
            if stage_dynamics(body_int, body_float, work, link_int, link_float, link_fext,
                              element_int, element_float, link_wrench, joint_force, values,
                              scratch, has_elements, cut_int, cut_float, loop_float, gains,
                              info, multipliers, has_loops, qs, v4, tau, tau_total, a4) != 0:
                return FAIL_DYNAMICS
            rk4_combine(q, v, v2, v3, v4, a1, a2, a3, a4, dt, q_next, v_next)
        else:   # v+ = v + h a, q+ = q + h v+
            for i in range(nv):
                v_next[i] = v[i] + a1[i] * dt
            for i in range(nv):
                q_next[i] = q[i] + v_next[i] * dt
        bound = state_bound(q_next, v_next)
        if bound != bound or bound > max_velocity:
            return FAIL_BOUND
        for i in range(nv):
            q[i] = q_next[i]
            v[i] = v_next[i]
        if has_loops:   # robot.step's closing of the loops (robot.close_loops_after_step)
            if close_loops(loops, projection, q, v, project_tolerance, closing) < 0:
                return FAIL_PROJECTION
        # JointLimits.enforce: projection onto the stops, then the inelastic impulse
        if has_stops and beyond_limits(q, stops_int[STOP_LIMITED_IQ], stops_float[STOP_LOWER],
                                       stops_float[STOP_UPPER]):
            if _crba(body_int, body_float, free_work, q, mass) != 0:
                return FAIL_DYNAMICS
            active = enforce_positions(q, mass, stops_int, stops_float, chol, minv, stop_work,
                                       True)
            if active < 0:
                return FAIL_STOP
            if active > 0:
                if _crba(body_int, body_float, free_work, q, mass) != 0:
                    return FAIL_DYNAMICS
                if enforce_velocities(v, mass, stops_int, stops_float, active, chol, minv,
                                      stop_work) != 0:
                    return FAIL_STOP
                counts[1] += 1
    # ---- the plant's divergence bound
    if not max_abs(v) <= max_speed:
        return FAIL_SPEED
    if has_loops:   # the evaluated state's multipliers (docstring)
        for i in range(multipliers.shape[0]):
            multipliers[i] = first_multipliers[i]
    return 0
