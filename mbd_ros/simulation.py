"""Fixed-step simulation of a robot's motion under given drive forces. No ROS imports.

    sim = Simulator(robot, dt=1e-3, integrator="semi_implicit_euler")
    qdd = sim.evaluate(tau)     # accelerations at the current state (q, v) for drive forces tau
    sim.advance()               # (q, v) <- state at t + dt, reusing qdd as the first stage
    sim.step(tau)               # both at once

Integrators (x = (q, v), f(q, v) = robot.forward_dynamics(q, v, tau), tau held over the step;
configurations advance with robot.integrate, so quaternions stay unit):

- ``semi_implicit_euler`` (symplectic Euler):  v+ = v + dt f(q, v);  q+ = q (+) v+ dt.
  One forward dynamics per step; energy error bounded (no drift) for conservative systems.
- ``rk4`` (classical Runge-Kutta, on the configuration manifold through the exponential map):
      a1 = f(q, v)
      q2 = q (+) v dt/2,    v2 = v + a1 dt/2,   a2 = f(q2, v2)
      q3 = q (+) v2 dt/2,   v3 = v + a2 dt/2,   a3 = f(q3, v3)
      q4 = q (+) v3 dt,     v4 = v + a3 dt,     a4 = f(q4, v4)
      q+ = q (+) (v + 2 v2 + 2 v3 + v4) dt/6,   v+ = v + (a1 + 2 a2 + 2 a3 + a4) dt/6
  Four forward dynamics per step; fourth order (exactly, on vector-space joints).

Force hook: ``Simulator(..., forces=[fn, ...])`` / ``add_force(fn)``; each ``fn(t, q, v)``
returns (nv,) generalized forces that are added to tau at EVERY stage of the integrator
(contacts, springs, limits). Without hooks nothing changes.

Every buffer is allocated at construction: a step allocates nothing. A step is transactional:
if forward dynamics raises (singular configuration, non-finite input) or the new state is not
finite, the state is left unchanged and the error propagates.
"""
from __future__ import annotations

import numpy as np

INTEGRATORS = ("semi_implicit_euler", "rk4")
_VECTOR_SPACE_JOINTS = ("revolute", "prismatic")


class Simulator:
    """Fixed-step integrator of (q, v) for one Robot (which it uses as its workspace).

    robot: an mbd_ros Robot; dt: step in s (> 0); integrator: one of INTEGRATORS;
    q, v: initial state (default: robot.neutral(), zeros).
    Attributes: q (nq,), v (nv,), qdd (nv,) accelerations of the last evaluate(), tau (nv,) the
    drive forces of the last evaluate(), time (s), steps (int).
    """

    def __init__(self, robot, dt, integrator="semi_implicit_euler", q=None, v=None,
                 forces=None):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        dt = float(dt)
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f"dt must be a positive number, got {dt}")
        self.robot = robot
        self.dt = dt
        self.integrator = integrator
        nq, nv = robot.nq, robot.nv
        # q (+) v dt is q + v dt when every joint is revolute or prismatic (no quaternions,
        # no planar body-frame velocities): skip robot.integrate's checks on the hot path.
        self._vector_space = all(t in _VECTOR_SPACE_JOINTS for t in robot.joint_types)
        self.q = np.zeros(nq)
        self.v = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.time = self._t0 = 0.0
        self.steps = 0
        self._evaluated = False
        # RK4 stages and scratch
        self._q_stage = np.zeros(nq)
        self._v2 = np.zeros(nv)
        self._v3 = np.zeros(nv)
        self._v4 = np.zeros(nv)
        self._a2 = np.zeros(nv)
        self._a3 = np.zeros(nv)
        self._a4 = np.zeros(nv)
        self._q_next = np.zeros(nq)
        self._v_next = np.zeros(nv)
        self._scratch = np.zeros(nv)
        # force hook: fn(t, q, v) -> (nv,) generalized forces added to tau at every stage
        self.forces = []
        self._tau_stage = np.zeros(nv)
        for fn in forces or ():
            self.add_force(fn)
        self.reset(q, v)

    def add_force(self, fn):
        """Add a generalized force fn(t, q, v) -> (nv,), evaluated at every integrator stage."""
        if not callable(fn):
            raise ValueError(f"a force must be callable fn(t, q, v) -> (nv,), got {fn!r}")
        self.forces.append(fn)

    def _fd(self, t, q, v, out):
        """out = forward_dynamics(q, v, tau + sum of the force hooks at (t, q, v))."""
        tau = self.tau
        if self.forces:
            tau = self._tau_stage
            tau[:] = self.tau
            for fn in self.forces:
                tau += fn(t, q, v)
        self.robot.forward_dynamics(q, v, tau, out=out)

    def reset(self, q=None, v=None, time=0.0):
        """Set the state (default: neutral configuration at rest) and the clock."""
        robot = self.robot
        q = robot.neutral() if q is None else np.asarray(q, dtype=float)
        v = np.zeros(robot.nv) if v is None else np.asarray(v, dtype=float)
        if q.shape != (robot.nq,) or not np.isfinite(q).all():
            raise ValueError(f"q must be {robot.nq} finite numbers, got {q!r}")
        if v.shape != (robot.nv,) or not np.isfinite(v).all():
            raise ValueError(f"v must be {robot.nv} finite numbers, got {v!r}")
        robot.forward_dynamics(q, v, np.zeros(robot.nv), out=self._scratch)   # validates q
        self.q[:] = q
        self.v[:] = v
        self.qdd[:] = 0.0
        self.tau[:] = 0.0
        self.time = self._t0 = float(time)
        self.steps = 0
        self._evaluated = False

    # ------------------------------------------------------------------ stepping
    def evaluate(self, tau):
        """qdd = forward_dynamics(q, v, tau) at the current state; kept for advance()."""
        self.tau[:] = tau
        self._fd(self.time, self.q, self.v, self.qdd)
        self._evaluated = True
        return self.qdd

    def advance(self):
        """Advance (q, v) by one step with the drive forces and accelerations of evaluate()."""
        if not self._evaluated:
            raise RuntimeError("advance() needs evaluate(tau) first")
        if self.integrator == "rk4":
            self._rk4()
        else:
            self._semi_implicit_euler()
        # finite check in two reductions: a sum is NaN or inf iff an entry is (or the state is
        # ~1e308, diverged anyway); x - x is 0 exactly for finite x
        total = self._q_next.sum() + self._v_next.sum()
        if total - total != 0.0:
            raise FloatingPointError(f"the state became non-finite at t = {self.time:.6f} s")
        self.q[:] = self._q_next
        self.v[:] = self._v_next
        self.steps += 1
        self.time = self._t0 + self.steps * self.dt   # no accumulated round-off
        self._evaluated = False

    def step(self, tau):
        """evaluate(tau) then advance(); returns the accelerations at the start of the step."""
        self.evaluate(tau)
        self.advance()
        return self.qdd

    # ------------------------------------------------------------------ integrators
    def _integrate(self, q, v, dt, out):
        """out = q (+) v dt."""
        if self._vector_space:
            np.multiply(v, dt, out=out)
            np.add(q, out, out=out)
        else:
            self.robot.integrate(q, v, dt, out=out)

    def _semi_implicit_euler(self):
        dt = self.dt
        # v+ = v + dt qdd
        np.multiply(self.qdd, dt, out=self._v_next)
        np.add(self.v, self._v_next, out=self._v_next)
        # q+ = q (+) v+ dt
        self._integrate(self.q, self._v_next, dt, self._q_next)

    def _rk4(self):
        dt, h = self.dt, 0.5 * self.dt
        q, v, a1 = self.q, self.v, self.qdd
        v2, v3, v4, a2, a3, a4 = self._v2, self._v3, self._v4, self._a2, self._a3, self._a4
        qs, s = self._q_stage, self._scratch
        # stage 2: q2 = q (+) v h, v2 = v + a1 h
        self._integrate(q, v, h, qs)
        np.multiply(a1, h, out=v2)
        np.add(v, v2, out=v2)
        self._fd(self.time + h, qs, v2, a2)
        # stage 3: q3 = q (+) v2 h, v3 = v + a2 h
        self._integrate(q, v2, h, qs)
        np.multiply(a2, h, out=v3)
        np.add(v, v3, out=v3)
        self._fd(self.time + h, qs, v3, a3)
        # stage 4: q4 = q (+) v3 dt, v4 = v + a3 dt
        self._integrate(q, v3, dt, qs)
        np.multiply(a3, dt, out=v4)
        np.add(v, v4, out=v4)
        self._fd(self.time + dt, qs, v4, a4)
        # q+ = q (+) (v + 2 v2 + 2 v3 + v4) dt/6
        np.add(v2, v3, out=s)
        s *= 2.0
        s += v
        s += v4
        s *= 1.0 / 6.0
        self._integrate(q, s, dt, self._q_next)
        # v+ = v + (a1 + 2 a2 + 2 a3 + a4) dt/6
        np.add(a2, a3, out=s)
        s *= 2.0
        s += a1
        s += a4
        s *= dt / 6.0
        np.add(v, s, out=self._v_next)
