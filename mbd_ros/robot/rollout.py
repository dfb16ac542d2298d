"""robot.rollout: a whole trajectory, or a batch of them, in one call (docs/rollouts.md).

    Q, V = robot.rollout(q0, v0, tau, dt)             # tau (T, nv) -> Q (T+1, nq), V (T+1, nv)
    result = robot.rollout(q0s, v0s, taus, dt)         # (N, nq), (N, nv), (N, T, nv): a batch
    result.status, result.steps, result.message        # (batch: status codes, steps, messages)

Each row k of tau is held over the step from t_k = t0 + k dt to t_{k+1}; row 0 of Q, V is the
initial state. The step is what robot.step(q, v, tau_k, dt, integrator) does (integrator=None:
RK4 in substeps of at most default_max_step; a named integrator: one step of dt), taken
`substeps` times with dt / substeps, so a rollout gives the same numbers as repeated robot.step.

Engines: the compiled one (robot/rollout_compiled.py: one numba call for the whole trajectory,
no Python per step) where the robot and options allow it, else the reference loop below: the
same robot.step calls from Python (status, shapes and numbers identical; it is also the
specification the compiled engine is tested against). engine="auto" picks, "compiled" refuses
(ValueError) what the compiled engine cannot run, "reference" forces the loop.

Plant parts in the loop (robot/rollout_plant.py): drives= (the Plant's joint drives in POSITION
mode: drive torques from kernels/plant.py drive_torques at the start of each row, held over it,
added to tau) and limits=True (the URDF position limits as hard stops after every substep, as
JointLimits.enforce; with drives, the drive torques saturated by the effort limits and the
velocity-limit envelope as the Plant's JointLimits.saturated_drive_torques).

Divergence (status "diverged"): a non-finite state, |v_i| > max_speed after a substep, or the
forward dynamics failing (a ValueError of the step) stop the rollout; a single rollout returns
the rows it has (steps + 1 of them) and warns with RolloutDiverged; a batch fills the rows after
a member's failure with NaN. Status "error": a failure that is not the dynamics' (a position
stop with a singular block, ...); warned as RolloutWarning. Bad arguments raise ValueError
naming the argument.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import excerpt
from ..kernels.plant import DRIVE_Q_REF, DRIVE_VELOCITY_CMD
from ..kernels.plant import drive_torques as _drive_torques
from ..kernels.plant import effective_inertias as _effective_inertias
from ..kernels.plant import limited_drive_torques as _limited_drive_torques
from ..kernels.plant import max_abs as _max_abs
from ..kernels.flexible_loop_dynamics import STATUS_NOT_POSITIVE_DEFINITE, STATUS_SOLVE_FAILED
from ..kernels.output_checks import STATUS_NOT_FINITE
from ..kernels.rollout_implicit import MASS_FAILED, SINGULAR
from ..model import layout as L
from .arguments import real_array, real_scalar, time_step
from .constraints import warn_off_loop
from .integrators import INTEGRATORS, MAX_DEFAULT_DT, MAX_VELOCITY, SimulationDiverged
from .rollout_prescribed import check_prescribed
from .rollout_plant import (MAX_SPEED, VELOCITY_TIME_CONSTANT, PlantLimits, StopWork,
                            drive_arrays, enforce_stops)

# batch status codes (RolloutBatch.status), and their names (Rollout.status)
OK, DIVERGED, ERROR = 0, 1, 2
STATUS_NAMES = ("ok", "diverged", "error")
ENGINES = ("auto", "compiled", "reference")
# the most steps x members one call may take (a bound on memory: Q and V hold (N, T+1, n))
MAX_ROWS = 100_000_000


class RolloutWarning(RuntimeWarning):
    """A rollout stopped early (status "diverged" or "error"): the message says where."""


class RolloutDiverged(RolloutWarning):
    """A rollout diverged: a non-finite state, a speed above max_speed, or failing forward
    dynamics. The message names the step index and time."""


class Rollout(tuple):
    """(Q (steps+1, nq), V (steps+1, nv)) of one rollout, with .status ("ok", "diverged",
    "error"), .steps (steps completed: T when "ok") and .message ("" when "ok")."""

    def __new__(cls, q, v, status="ok", steps=0, message=""):
        result = super().__new__(cls, (q, v))
        result.status = status
        result.steps = int(steps)
        result.message = message
        return result

    Q = property(lambda self: self[0], doc="(steps+1, nq) configurations, row 0 the start")
    V = property(lambda self: self[1], doc="(steps+1, nv) velocities, row 0 the start")


class RolloutBatch(tuple):
    """(Q (N, T+1, nq), V (N, T+1, nv)) of a batch, rows after a member's failure NaN, with
    .status (N,) int codes OK = 0, DIVERGED = 1, ERROR = 2 (STATUS_NAMES), .steps (N,) steps
    completed and .messages (list of N str, "" for "ok")."""

    def __new__(cls, q, v, status, steps, messages):
        result = super().__new__(cls, (q, v))
        result.status = status
        result.steps = steps
        result.messages = messages
        return result

    Q = property(lambda self: self[0], doc="(N, T+1, nq) configurations")
    V = property(lambda self: self[1], doc="(N, T+1, nv) velocities")


class RolloutProblem:
    """The validated arguments of one robot.rollout call (shared by both engines).
    Attributes: q0 (N, nq), v0 (N, nv), tau (N, T, nv) (N = 1 for a single rollout), batch
    (bool), dt (s, one row), substeps, h (s, one integrator call: dt / substeps), integrator
    (None or a name), drive_int / drive_float / position / velocity (N, T, nd) or None,
    limits (PlantLimits or None), max_speed, prescribed (dict or None), t0 (s)."""

    def __init__(self, robot, q0, v0, tau, dt, integrator, substeps, drives, limits, max_speed,
                 prescribed, t0):
        self.robot = robot
        q0 = real_array(q0, "q0", f"an array of shape ({robot.nq},) or (N, {robot.nq})")
        self.batch = q0.ndim == 2
        lead = "(N, " if self.batch else "("
        if q0.ndim not in (1, 2) or q0.shape[-1] != robot.nq:
            raise ValueError(f"q0 must have shape ({robot.nq},) or (N, {robot.nq}), got "
                             f"{q0.shape}")
        n = q0.shape[0] if self.batch else 1
        if n == 0:
            raise ValueError(f"q0 has shape {q0.shape}: a batch needs at least one member")
        v0 = real_array(v0, "v0", f"an array of shape {lead}{robot.nv})")
        want = (n, robot.nv) if self.batch else (robot.nv,)
        if v0.shape != want:
            raise ValueError(f"v0 must have shape {want} (as q0), got {v0.shape}")
        tau = real_array(tau, "tau", f"an array of shape {lead}T, {robot.nv})")
        if tau.ndim != (3 if self.batch else 2) or tau.shape[-1] != robot.nv or \
                (self.batch and tau.shape[0] != n):
            want = f"({n}, T, {robot.nv})" if self.batch else f"(T, {robot.nv})"
            raise ValueError(f"tau must have shape {want}, got {tau.shape}")
        for name, x in (("q0", q0), ("v0", v0), ("tau", tau)):
            if not np.isfinite(x).all():
                bad = np.argwhere(~np.isfinite(x))[0]
                raise ValueError(f"{name} must be finite: entry {tuple(int(i) for i in bad)} is "
                                 f"{x[tuple(bad)]}")
        self.q0 = q0.reshape(n, robot.nq)
        self.v0 = v0.reshape(n, robot.nv)
        self.tau = np.ascontiguousarray(tau.reshape(n, -1, robot.nv))
        self.n, self.steps = n, self.tau.shape[1]
        if n * (self.steps + 1) > MAX_ROWS:
            raise ValueError(f"tau: {n} x {self.steps} steps is more than MAX_ROWS = {MAX_ROWS}")
        for i in range(n):   # quaternions of free / spherical joints: unit (robot.integrate)
            try:
                robot.integrate(self.q0[i], self.v0[i], 0.0)
            except ValueError as exc:
                where = f"q0[{i}]" if self.batch else "q0"
                raise ValueError(f"{where}: {exc}") from None
        self.dt = time_step(dt)
        if integrator is not None and integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS} or None, got "
                             f"{excerpt(integrator, 60)}")
        self.integrator = integrator
        if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) \
                or substeps < 1:
            raise ValueError(f"substeps must be an integer >= 1, got {excerpt(substeps, 60)}")
        self.substeps = int(substeps)
        self.h = self.dt / self.substeps
        if integrator is None and self.h > MAX_DEFAULT_DT * (1.0 + 1e-12):
            raise ValueError(f"dt / substeps = {self.h:g} s is longer than the default integrator "
                             f"takes in one robot.step (MAX_DEFAULT_DT = {MAX_DEFAULT_DT:g} s): "
                             "raise substeps, or name an integrator")
        max_speed = real_scalar(max_speed, "max_speed")
        if not max_speed > 0.0:
            raise ValueError(f"max_speed must be positive, got {max_speed}")
        self.max_speed = max_speed
        if not isinstance(limits, (bool, np.bool_)):
            raise ValueError(f"limits must be True or False, got {excerpt(limits, 60)}")
        self.limits = PlantLimits(robot) if limits else None
        if self.limits is not None:
            bad = self.limits.violations(self.q0)
            if bad.any():
                member, joint = np.argwhere(bad)[0]
                iq = int(self.limits.limited_iq[joint])
                where = f"q0[{member}]" if self.batch else "q0"
                raise ValueError(f"{where} is beyond the position limits of the joint at q "
                                 f"index {iq} (limits=True)")
        self.drive_int = self.drive_float = self.position = self.velocity = None
        if drives is not None:
            (self.drive_int, self.drive_float, position, velocity) = drive_arrays(
                robot, drives, self.steps, self.limits, n if self.batch else None)
            nd = self.drive_int.shape[1]
            self.position = position.reshape(n, self.steps, nd)
            self.velocity = velocity.reshape(n, self.steps, nd)
        if prescribed is not None and not isinstance(prescribed, dict):
            raise ValueError("prescribed must be a dict {joint: trajectory(t) -> (q, qd, qdd)}")
        self.prescribed = dict(prescribed) if prescribed else None
        if self.prescribed:
            check_prescribed(robot, self.prescribed)
        self.t0 = robot.time if t0 is None else real_scalar(t0, "t0")
        if not math.isfinite(self.t0):
            raise ValueError(f"t0 must be finite, got {self.t0}")
        # robot.step's own bound is MAX_VELOCITY: raise it when max_speed is higher
        self.step_options = {"max_velocity": max_speed} if max_speed > MAX_VELOCITY else {}


def rollout(robot, q0, v0, tau, dt, integrator=None, substeps=1, drives=None, limits=False,
            max_speed=None, batch_threads=None, prescribed=None, t0=None, engine="auto"):
    """Robot.rollout (see its docstring and this module's)."""
    if max_speed is None:
        max_speed = MAX_SPEED
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {excerpt(engine, 60)}")
    problem = RolloutProblem(robot, q0, v0, tau, dt, integrator, substeps, drives, limits,
                             max_speed, prescribed, t0)
    threads = _thread_count(batch_threads, robot)
    q = np.full((problem.n, problem.steps + 1, robot.nq), np.nan)
    v = np.full((problem.n, problem.steps + 1, robot.nv), np.nan)
    status = np.zeros(problem.n, dtype=np.int64)
    steps = np.zeros(problem.n, dtype=np.int64)
    messages = [""] * problem.n
    reason = None
    if engine != "reference":
        from .rollout_compiled import compiled_rollout, unsupported
        reason = unsupported(problem)
        if reason is not None and engine == "compiled":
            raise ValueError(f"engine='compiled' cannot run this rollout: {reason}")
    if engine != "reference" and reason is None:
        if robot.closure_names:   # robot.step's first forward dynamics would warn so
            warn_off_loop(max(float(robot.closure_residual(q)[0]) for q in problem.q0),
                          "rollout: q0")
        compiled_rollout(problem, q, v, status, steps, messages, threads,
                         lambda code, k, detail: _compiled_message(problem, code, k, detail))
    else:   # the reference engine runs the members one after the other
        for i in range(problem.n):
            status[i], steps[i], messages[i] = reference_rollout(problem, i, q[i], v[i])
    if problem.batch:
        failed = np.flatnonzero(status)
        if len(failed):
            warnings.warn(f"{len(failed)} of {problem.n} rollouts stopped early; the first: "
                          f"member {failed[0]}: {messages[failed[0]]}",
                          RolloutDiverged if (status == DIVERGED).any() else RolloutWarning,
                          stacklevel=3)
        return RolloutBatch(q, v, status, steps, messages)
    k = int(steps[0])
    if status[0]:
        warnings.warn(messages[0], RolloutDiverged if status[0] == DIVERGED else RolloutWarning,
                      stacklevel=3)
    return Rollout(q[0, :k + 1].copy(), v[0, :k + 1].copy(), STATUS_NAMES[status[0]], k,
                   messages[0])


def _thread_count(batch_threads, robot):
    if batch_threads is None:
        return max(1, int(getattr(robot, "batch_threads", 1) or 1))
    if isinstance(batch_threads, bool) or not isinstance(batch_threads, (int, np.integer)) \
            or batch_threads < 1:
        raise ValueError(f"batch_threads must be an integer >= 1 or None, got "
                         f"{excerpt(batch_threads, 60)}")
    return int(batch_threads)


def diverged_message(k, problem, what):
    """The message of a rollout stopped in the step from row k (t_k to t_k + dt)."""
    t = problem.t0 + k * problem.dt
    return f"rollout diverged at step {k} (t = {t:.6f} s to {t + problem.dt:.6f} s): {what}"


def _kernel_reason(status):
    """What a dynamics kernel's status means in a rollout (robot.py _raise says it for one
    call, naming the argument; here the state and the forces are the rollout's own)."""
    if status in (L.STATUS_BAD_Q, L.STATUS_BAD_V):
        return "the state became non-finite"
    if status == L.STATUS_BAD_INPUT:
        return "the forces became non-finite (tau, drive or force element forces)"
    if status in (L.STATUS_OK, STATUS_NOT_FINITE):
        return "an overflow inside the dynamics (absurd velocities or forces)"
    if status == STATUS_NOT_POSITIVE_DEFINITE:
        return "the mass matrix is not positive definite"
    if status == STATUS_SOLVE_FAILED:
        return "the loop multipliers' solve failed (non-finite constraint rows)"
    if status >= L.STATUS_SINGULAR:
        return "an articulated inertia became singular"
    return "see robot.forward_dynamics at that state"


def _compiled_message(problem, code, k, detail):
    """(status, message) of kernels/rollout.py's result code for the step from row k."""
    if code == 0:
        return OK, ""
    if code == 1:
        what = "the state became non-finite"
    elif code == 2:
        what = f"a speed of {detail:.4g} exceeds max_speed {problem.max_speed:g}"
    elif code == 3 and detail == -1.0:
        what = "robot.step's projection onto the loop constraints failed"
    elif code == 3 and detail == SINGULAR:
        what = f"the {problem.integrator} step's linear system is singular"
    elif code == 3 and detail == MASS_FAILED:
        what = f"the mass matrix failed in the {problem.integrator} step"
    elif code == 3:
        what = f"the forward dynamics failed: {_kernel_reason(int(detail))} (kernel status " \
               f"{int(detail)})"
    elif code == 4:
        return ERROR, diverged_message(k, problem, "position stops: the mass matrix is not "
                                       "positive definite or a stop block is singular")
    else:
        what = "the drives' model terms failed (M not positive definite)"
    return DIVERGED, diverged_message(k, problem, what)


def reference_rollout(problem, i, q_out, v_out):
    """Member i of `problem` by repeated robot.step from Python (the reference engine): rows of
    q_out (T+1, nq), v_out (T+1, nv) written up to the last good state. Returns (status code,
    steps completed, message). Leaves robot.time as it was."""
    from .integrators import UnstableStepWarning
    robot = problem.robot
    start = robot.time
    try:
        # a rollout says an unstable step by its status (as the compiled engine does), not by
        # robot.step's UnstableStepWarning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableStepWarning)
            return _reference_loop(problem, i, q_out, v_out)
    finally:
        robot.time = start


def _reference_loop(problem, i, q_out, v_out):
    robot, nv = problem.robot, problem.robot.nv
    q = problem.q0[i].copy()
    v = problem.v0[i].copy()
    q_out[0], v_out[0] = q, v
    limits = problem.limits
    drives = problem.drive_int is not None
    if drives:   # the Plant's per-step model terms (Plant.evaluate)
        drive_float = problem.drive_float.copy()
        mass, chol, minv = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
        m_eff, bias, zero = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        m_stable = np.zeros(nv)
        drive_tau = np.zeros(nv)
        project = getattr(robot, "project_acceleration", None) if robot.closure_names else None
    stop_work = None if limits is None else StopWork(robot.nv, limits)
    total = np.zeros(nv)
    for k in range(problem.steps):
        t = problem.t0 + k * problem.dt
        robot.time = t
        total[:] = problem.tau[i, k]
        if drives:
            drive_float[DRIVE_Q_REF] = problem.position[i, k]   # command_position per row
            drive_float[DRIVE_VELOCITY_CMD] = problem.velocity[i, k]
            try:
                robot.mass_matrix(q, out=mass)
                if _effective_inertias(mass, chol, minv, problem.drive_int, m_eff, m_stable):
                    raise ValueError("the mass matrix is not positive definite")
                _compensation(robot, project, q, v, zero, bias)
            except ValueError as exc:
                return DIVERGED, k, diverged_message(k, problem, f"drive model terms: {exc}")
            if limits is None:
                _drive_torques(problem.drive_int, drive_float, q, v, mass, m_stable, bias,
                               problem.dt, drive_tau)
            else:
                _limited_drive_torques(problem.drive_int, drive_float, q, v, mass, m_eff,
                                       m_stable, bias,
                                       problem.dt, limits.vel_idx, limits.velocity,
                                       limits.effort, 1.0 / VELOCITY_TIME_CONSTANT, drive_tau)
            total += drive_tau
        for s in range(problem.substeps):
            try:
                q, v = robot.step(q, v, total, problem.h, problem.integrator,
                                  prescribed=problem.prescribed, **problem.step_options)
            except SimulationDiverged as exc:
                return DIVERGED, k, diverged_message(k, problem, str(exc))
            except ValueError as exc:
                return DIVERGED, k, diverged_message(k, problem,
                                                     f"the forward dynamics failed: {exc}")
            if limits is not None:
                try:
                    enforce_stops(robot, limits, stop_work, q, v)
                except ValueError as exc:
                    return ERROR, k, diverged_message(k, problem, f"position stops: {exc}")
            speed = _max_abs(v)
            if not (speed <= problem.max_speed and np.isfinite(q).all()):
                return DIVERGED, k, diverged_message(
                    k, problem, f"a speed of {speed:.4g} exceeds max_speed "
                    f"{problem.max_speed:g}" if np.isfinite(q).all() else "non-finite state")
        robot.time = problem.t0 + (k + 1) * problem.dt
        q_out[k + 1], v_out[k + 1] = q, v
    return OK, problem.steps, ""


def _compensation(robot, project, q, v, zero, out):
    """b(q, v) as Plant._compensation: ID(q, v, 0), or for a closed-loop robot the actuated
    torques of the loop-consistent acceleration nearest to 0 (0 where that has no solution)."""
    if project is None:
        robot.inverse_dynamics(q, v, zero, out=out)
        return out
    try:
        qdd = project(q, v, zero)
        out[:] = robot.inverse_dynamics(q, v, qdd)
    except ValueError:
        out[:] = 0.0
    return out

