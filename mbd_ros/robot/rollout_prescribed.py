"""Prescribed joints in the compiled rollouts: the trajectories sampled in Python before the
compiled call (kernels/rollout_prescribed.py reads the table), at exactly the times robot.step's
Simulator samples them (robot/integrators.py):

- row k starts at t_k = t0 + k dt (robot/rollout.py sets robot.time so); robot.step's substep s
  starts at t_k + h + ... + h (robot.time advanced by h = dt / substeps per call);
- the Simulator of one robot.step takes `inner` integrator steps of h_i = h / inner (the default
  integrator's RK4 substeps; else one), step i starting at t = start + i h_i;
- each integrator step samples at t (its first stage; every stage of the implicit schemes),
  t + h_i / 2 (RK4's middle stages, t + 0.5 h_i as Simulator._rk4 computes it) and t + h_i
  (RK4's last stage, and Simulator.advance placing the joints on their trajectories).

The table holds (q, qd, qdd) per sample and joint; MAX_PRESCRIBED_SAMPLES caps the trajectory
calls (and so the table's memory) of one rollout call.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import excerpt

# the most trajectory samples (calls of one joint's trajectory) one compiled rollout call takes:
# 3 floats each in the table (<= 24 MB), and ~1 s of Python calls
MAX_PRESCRIBED_SAMPLES = 1_000_000
# integrators whose compiled steps read the table (all: the implicit ones evaluate every stage
# at the step's start, sample 0, kernels/rollout_implicit.py), on trees and on closed loops of
# the recursive solver (kernels/rollout_loop_prescribed.py; implicit Euler on the loops' tangent
# basis with their hybrid dynamics, kernels/rollout_tangent.py)
PRESCRIBED_INTEGRATORS = (None, "rk4", "semi_implicit_euler", "implicit_euler",
                          "symplectic_euler")


def check_prescribed(robot, prescribed):
    """ValueError naming the joint when `prescribed` ({joint: trajectory(t) -> (q, qd, qdd)})
    names an unknown joint, a joint that is not one-dof, or a trajectory that is not callable."""
    slots = robot._prescribed.slots
    for name, trajectory in prescribed.items():
        slot = slots.get(name)
        if slot is None:
            raise ValueError(f"prescribed: unknown movable joint '{excerpt(str(name), 80)}'")
        if slot[4] not in ("revolute", "prismatic", "helical"):
            raise ValueError(f"prescribed: joint '{name}' is {slot[4]}; trajectories are "
                             "supported on one-dof joints")
        if not callable(trajectory):
            raise ValueError(f"prescribed['{name}'] must be a callable trajectory(t) -> "
                             f"(q, qd, qdd), got {excerpt(trajectory, 60)}")


def prescribed_unsupported(problem):
    """Why the compiled engine cannot run the prescribed joints of `problem`, or None."""
    robot = problem.robot
    if problem.integrator not in PRESCRIBED_INTEGRATORS:
        return f"prescribed joints with the {problem.integrator} integrator run in Python"
    followers = [name for name in problem.prescribed if name in robot.mimic_joints]
    if followers:
        return (f"prescribed mimicking joints ({', '.join(followers)}: a dense KKT solve) run "
                "in Python; prescribe their leaders")
    return None


def prescribed_table(problem, inner):
    """The shared part of kernels/rollout_prescribed.py's tuple for `problem` (robot.step's
    Simulator taking `inner` integrator steps per call): (table (n_steps, 3, np, 3), fixed_v
    (np,), fixed_q (np,), free (nv - np,)), or the empty placeholders without prescribed joints.
    ValueError beyond MAX_PRESCRIBED_SAMPLES, or for a trajectory failing or returning
    non-finite values (naming the joint and the time)."""
    robot = problem.robot
    if not problem.prescribed:
        empty = np.zeros(0, dtype=np.int64)
        return (np.zeros((1, 3, 0, 3)), empty, empty.copy(), np.arange(robot.nv))
    trajectories = problem.prescribed
    names = list(trajectories)
    plans = robot._prescribed
    _, fixed_v, free, _, _, _, _ = plans.plan(names)   # v indices in the dict's order
    fixed_q = np.array([plans.slots[name][1] for name in names], dtype=np.int64)
    rk4 = problem.integrator in (None, "rk4")
    n_steps = problem.steps * problem.substeps * inner
    samples = n_steps * (3 if rk4 else 2) * len(names)
    if samples > MAX_PRESCRIBED_SAMPLES:
        raise ValueError(
            f"prescribed: {len(names)} trajectories sampled {samples // len(names)} times "
            f"({problem.steps} rows x {problem.substeps} substeps x {inner} integrator steps) "
            f"is more than MAX_PRESCRIBED_SAMPLES = {MAX_PRESCRIBED_SAMPLES} samples in one "
            "compiled rollout: split the rollout (t0=) or use engine='reference'")
    table = np.zeros((n_steps, 3, len(names), 3))
    h = problem.h                 # robot.step's dt
    h_inner = h / inner           # its Simulator's dt (step_robot: dt / substeps)
    half = 0.5 * h_inner
    n = 0
    for k in range(problem.steps):
        start = problem.t0 + k * problem.dt
        for _ in range(problem.substeps):
            for i in range(inner):
                t = start if i == 0 else start + i * h_inner   # Simulator.time
                _sample(trajectories, names, t, table[n, 0])
                if rk4:
                    _sample(trajectories, names, t + half, table[n, 1])
                _sample(trajectories, names, t + h_inner, table[n, 2])
                n += 1
            start = start + h     # robot.time after robot.step
    return table, np.ascontiguousarray(fixed_v, dtype=np.int64), fixed_q, \
        np.ascontiguousarray(free, dtype=np.int64)


def _sample(trajectories, names, t, out):
    """out (np, 3) = (q, qd, qdd) of each trajectory at t, converted as
    robot/prescribed.py trajectory_targets converts them (float() of each of the three; the
    joints were checked by check_prescribed)."""
    for j, name in enumerate(names):
        try:   # a user's callable: whatever it raises becomes the documented ValueError
            value = trajectories[name](t)
        except Exception as exc:
            raise ValueError(f"prescribed['{name}']({t:.6f}) raised {type(exc).__name__}: "
                             f"{excerpt(str(exc), 200)}") from exc
        try:
            position, rate, acceleration = (float(x) for x in value)
        except (TypeError, ValueError):
            raise ValueError(f"prescribed['{name}'](t) must return (q, qd, qdd), got "
                             f"{excerpt(value, 80)} (at t = {t:.6f} s)") from None
        if not (math.isfinite(position) and math.isfinite(rate) and math.isfinite(acceleration)):
            raise ValueError(f"prescribed['{name}']({t:.6f}) returned a non-finite value: "
                             f"({position}, {rate}, {acceleration})")
        out[j, 0], out[j, 1], out[j, 2] = position, rate, acceleration


def thread_prescribed(shared, nv):
    """kernels/rollout_prescribed.py's tuple for one thread: the shared table and indices, and
    private scratch (mass, lower (nv, nv); rhs, bias (nv,); qdd_p (np,); torques, tau_loaded,
    zero (nv,))."""
    n_fixed = shared[1].shape[0]
    return shared + (np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv),
                     np.zeros(n_fixed), np.zeros(nv), np.zeros(nv), np.zeros(nv))


def prescribed_mimic_arrays(problem, shared, nv):
    """kernels/rollout_prescribed_mimic.py's tuple for one thread (order, vectors (5, nz),
    matrices (2, nz, nz)): order the prescribed joints' reduced coordinates (their positions
    among robot.mimic_independent, which T's columns follow) in the table's order, then the
    free ones; or placeholders (order empty) unless the call has prescribed joints and the robot
    mimic couplings. shared: prescribed_table's tuple."""
    robot = problem.robot
    if not problem.prescribed or not robot.mimic_joints:
        return np.zeros(0, dtype=np.int64), np.zeros((5, 1)), np.zeros((2, 1, 1))
    independent = [int(i) for i in robot.mimic_independent]
    fixed_z = np.array([independent.index(int(i)) for i in shared[1]], dtype=np.int64)
    nz = len(independent)
    free_z = np.setdiff1d(np.arange(nz), fixed_z).astype(np.int64)
    return (np.concatenate([fixed_z, free_z]), np.zeros((5, nz)), np.zeros((2, nz, nz)))
