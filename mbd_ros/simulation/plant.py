"""A simulated robot as its drivers see it: drives, joint limits, external forces, divergence
detection, around the fixed-step Simulator. No ROS imports (the simulate node uses it).

    plant = Plant(robot, dt=1e-3, joints=robot.joint_names, q=q0)
    plant.drives.command_position(target)          # or command_velocity / command_effort
    for _ in range(1000):
        plant.step()                               # drives -> limits -> integrate -> stops
    plant.q, plant.v, plant.tau, plant.time

One step:
1. tau = drives.torques(q, v, dt): the drive torques of the latest commands (held over the
   step, as a drive's zero-order hold);
2. limits.saturate(q, v, tau): effort limits and the velocity-limit envelope;
3. the integrator advances (q, v) with tau plus the force hooks (contacts, ...) evaluated at
   every stage; closed loops and mimic couplings are then re-closed as robot.step re-closes
   its result (robot.close_loops_after_step: projected once a residual passes 1e-10);
4. limits.enforce(q, v): joints beyond a position limit are put back on it with an inelastic
   impulse (hard stops: no penetration, no tunnelling);
5. divergence check: a non-finite state or a speed above `max_speed` (any entry of v, rad/s or
   m/s) is a divergence: the state goes back to the last sane one (before the step) and
   DivergenceError is raised; the caller decides (stop publishing, wait for a reset).

See mbd_ros.limits and mbd_ros.drives for the limit and drive models.

One compiled call per step: where the robot and the plant allow it (compiled_step.py; no Python
force hooks such as the ground contact), evaluate() runs steps 1-5 in one kernel call and keeps
the result pending, advance() commits it; the same numbers as the Python path (the same kernels
in the same order). compiled="auto" (default) takes it for robots with force elements or closed
loops, whose Python path composes each forward dynamics in Python; a plain rigid tree's Python
path is a few C-level calls (mbd_ros/fastcall: KernelCall.rk4, M and ID entries), faster than
the kernel's ~55-argument dispatch (measured 6-10 µs vs 12-15 µs per step on ur5 and arm7).
compiled=True takes it wherever possible, False never.
"""
from __future__ import annotations

import numpy as np

from .compiled_step import CompiledStep
from .drives import JointDrives
from ..kernels.plant import effective_inertias as _effective_inertias
from ..kernels.plant import max_abs as _max_abs
from ..robot.joint_map import scalar_dofs
from .limits import JointLimits
from ..robot.integrators import Simulator

MAX_SPEED = 1.0e3   # rad/s or m/s: faster than any robot joint; beyond it the plant has diverged


class DivergenceError(FloatingPointError):
    """The simulation left the physically plausible range (the state is kept at the last sane
    one)."""


class Plant:
    """robot: an mbd_ros Robot; dt: step, s; integrator: see mbd_ros.simulation.INTEGRATORS;
    q, v: initial state (default neutral, at rest); joints: joints with a drive (default every
    1-dof joint and cylindrical / universal dof, named as in mbd_ros.joint_map); kp, kd: the
    drives' inertia-normalised gains (see mbd_ros.drives);
    limits: True (the URDF limits), False (none) or a JointLimits; forces: force hooks
    fn(t, q, v) -> (nv,) (see Simulator); max_speed: divergence bound on |v|; substeps:
    integrator steps per plant step (the drive torques held over them; stiff contacts);
    compiled: "auto", True or False: step through one compiled call (module docstring).
    Attributes: sim (Simulator), drives (JointDrives), limits (JointLimits or None), tau (nv,)
    the drive torques of the last step (after saturation), divergences (count),
    compiled_steps (count of the steps taken by the compiled call), compiled_reason (why the
    robot cannot take it, "" when it can).
    """

    def __init__(self, robot, dt, integrator="semi_implicit_euler", q=None, v=None,
                 joints=None, kp=400.0, kd=40.0, limits=True, forces=None,
                 max_speed=MAX_SPEED, substeps=1, compiled="auto"):
        self.robot = robot
        if limits is True:
            limits = JointLimits(robot)
        self.limits = limits or None
        if joints is None:
            joints = list(scalar_dofs(robot))   # 1-dof joints, cylindrical / universal dofs
        lower = upper = None
        if self.limits is not None:
            lower, upper = self.limits.lower, self.limits.upper
        self.drives = JointDrives(robot, joints, kp, kd, lower, upper)
        max_speed = float(max_speed)
        if not max_speed > 0.0:
            raise ValueError(f"max_speed must be > 0, got {max_speed}")
        self.max_speed = max_speed
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        self.substeps = substeps
        self.step_dt = float(dt)
        self.sim = Simulator(robot, float(dt) / substeps, integrator, q, v, forces)
        self._check_limits(self.sim.q)
        self.tau = np.zeros(robot.nv)
        self._m = np.zeros((robot.nv, robot.nv))
        self._minv = np.zeros((robot.nv, robot.nv))
        self._lower = np.zeros((robot.nv, robot.nv))
        self._bias = np.zeros(robot.nv)
        self._m_eff = np.zeros(robot.nv)
        self._m_stable = np.zeros(robot.nv)
        self._zero = np.zeros(robot.nv)
        self._project = getattr(robot, "project_acceleration", None) \
            if robot.closure_names else None
        self._q_prev = self.sim.q.copy()
        self._v_prev = self.sim.v.copy()
        self.divergences = 0
        self.compiled_steps = 0
        self._no_actuation = bool(robot.closure_names) and not robot.actuated_joints
        # closed loops and mimic couplings are re-closed after every integrator step, as
        # robot.step does (robot.close_loops_after_step)
        self._constrained = bool(robot.closure_names or robot.mimic_joints)
        if compiled not in ("auto", True, False):
            raise ValueError(f"compiled must be 'auto', True or False, got {compiled!r}")
        self._compiled = CompiledStep(self) if compiled else None
        self.compiled_reason = "compiled=False" if self._compiled is None \
            else self._compiled.reason
        if compiled == "auto" and not self.compiled_reason and self._compiled.plain():
            self._compiled = None
            self.compiled_reason = "a plain rigid tree: its C-level calls are faster"

    # ------------------------------------------------------------------ state
    q = property(lambda self: self.sim.q, doc="(nq,) the simulator's state (its own array)")
    v = property(lambda self: self.sim.v, doc="(nv,) the simulator's velocities")
    qdd = property(lambda self: self.sim.qdd, doc="(nv,) the accelerations of the last evaluate()")
    time = property(lambda self: self.sim.time, doc="the simulator's clock (s)")

    @property
    def q_before_step(self):
        """(nq,) the configuration at the start of the last advance() (after a failed step it
        equals q). The plant's own array, overwritten by the next advance(): read it, do not
        write it. (Not a read-only view: numba compiles separate code for read-only arrays.)"""
        return self._q_prev

    @property
    def v_before_step(self):
        """(nv,) the velocities at the start of the last advance() (as q_before_step)."""
        return self._v_prev

    @property
    def dt(self):
        """The plant's step (s): `substeps` integrator steps of dt / substeps."""
        return self.step_dt

    def add_force(self, fn):
        """A force hook fn(t, q, v) -> (nv,) generalized forces, at every integrator stage."""
        self.sim.add_force(fn)

    def _check_limits(self, q):
        if self.limits is not None:
            bad = self.limits.violations(q, tol=1e-9)
            if bad:
                raise ValueError(f"the initial configuration is beyond the position limits of "
                                 f"joints {bad}")

    def reset(self, q=None, v=None, time=0.0):
        """New state (validated, within the position limits), clock and zero effort commands
        (position and velocity commands are dropped too: every drive back to effort mode)."""
        if q is not None:
            self._check_limits(np.asarray(q, dtype=float))
        self.sim.reset(q, v, time)
        if self._compiled is not None:
            self._compiled.pending = False
        self.drives.reset()
        self.tau[:] = 0.0

    # ------------------------------------------------------------------ stepping
    def evaluate(self):
        """Drive torques (saturated) and accelerations at the current state; returns qdd.
        (Through the compiled call: the whole step, pending until advance().)"""
        if self._compiled is not None and self._compiled.run():
            return self.sim.qdd
        sim, robot = self.sim, self.robot
        m = m_eff = m_stable = bias = None
        if self.drives.needs_model_terms() or (self.limits is not None and
                                               self.limits.has_velocity_limits):
            # M, m_eff = 1 / diag(M^-1), b(q, v) = ID(q, v, 0): once for drives and limits
            m = robot.mass_matrix(sim.q, out=self._m)
            # m_eff = 1 / diag(M^-1), into a preallocated array (effective_inertia allocates)
            if _effective_inertias(m, self._lower, self._minv, self.drives.kernel_arrays()[0],
                                   self._m_eff, self._m_stable):
                raise ValueError("the mass matrix is not positive definite")
            m_eff, m_stable = self._m_eff, self._m_stable
            bias = self._compensation(sim.q, sim.v)
        limits = self.limits
        if limits is None:
            self.drives.torques(sim.q, sim.v, self.step_dt, out=self.tau, m=m, m_eff=m_eff,
                                bias=bias, m_stable=m_stable)
        else:   # drive torques and their limits in one kernel call
            limits.saturated_drive_torques(self.drives, sim.q, sim.v, self.step_dt, self.tau,
                                           m, m_eff, bias, m_stable)
        return sim.evaluate(self.tau)

    def _compensation(self, q, v):
        """b(q, v): the drive torques that give zero acceleration, ID(q, v, 0). A closed-loop
        robot takes the loop-consistent acceleration nearest to 0 (project_acceleration) and
        returns its actuated joints' torques; where that has no solution (a singular
        configuration) the compensation is 0 for this step."""
        robot = self.robot
        if self._no_actuation:   # no actuated joint: the actuation torques are all zero
            self._bias[:] = 0.0
            return self._bias
        if self._project is None:
            return robot.inverse_dynamics(q, v, self._zero, out=self._bias)
        try:
            qdd = self._project(q, v, self._zero)
            self._bias[:] = robot.inverse_dynamics(q, v, qdd)
        except ValueError:
            self._bias[:] = 0.0
        return self._bias

    def advance(self):
        """Integrate one step from the accelerations of evaluate(), then the position stops and
        the divergence check (DivergenceError: the state is restored to the one before)."""
        sim = self.sim
        self._q_prev[:] = sim.q
        self._v_prev[:] = sim.v
        compiled = self._compiled
        if compiled is not None and compiled.pending:   # the step evaluate() computed
            compiled.commit()
            self.compiled_steps += 1
            return
        try:
            for k in range(self.substeps):
                if k:
                    sim.step(self.tau)   # the drive torques are held over the plant step
                else:
                    sim.advance()        # FloatingPointError (non-finite): state unchanged
                if self._constrained:
                    q, v = self.robot.close_loops_after_step(sim.q, sim.v, sim.integrator,
                                                             sim.prescribed)
                    if q is not sim.q:
                        sim.q[:] = q
                        sim.v[:] = v
                if self.limits is not None:
                    self.limits.enforce(sim.q, sim.v)
        except (FloatingPointError, ValueError):
            sim.q[:] = self._q_prev
            sim.v[:] = self._v_prev
            raise
        speed = _max_abs(sim.v)
        if not speed <= self.max_speed:
            sim.q[:] = self._q_prev
            sim.v[:] = self._v_prev
            self.divergences += 1
            raise DivergenceError(f"the simulation diverged at t = {sim.time:.4f} s: a joint "
                                  f"speed of {speed:.3g} exceeds max_speed {self.max_speed:g}")

    def step(self):
        """evaluate() then advance(); returns the accelerations at the start of the step."""
        qdd = self.evaluate()
        try:
            self.advance()
        except FloatingPointError as exc:
            if not isinstance(exc, DivergenceError):
                self.divergences += 1
                raise DivergenceError(str(exc)) from None
            raise
        return qdd
