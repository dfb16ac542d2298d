"""Fixed-step simulation of a robot's motion (robot.step, and mbd_ros.simulation.Simulator). No
ROS imports; the Simulator uses only the Robot's public methods, the same for every kind of robot.

    sim = Simulator(robot, dt=1e-3)                 # integrator=None: DEFAULT_INTEGRATOR (rk4)
    sim.add_force(lambda t, q, v: -50.0 * v)        # fn(t, q, v) -> (nv,) added to tau at every stage
    qdd = sim.evaluate(tau)     # accelerations at the current state (q, v, time) for drive forces tau
    sim.advance()               # (q, v) <- state at t + dt, reusing qdd as the first stage
    sim.step(tau)               # both at once; tau: (nv,) held over the step, or a callable tau(t)

Every integrator evaluates, at each of its stages (time t_s, state q_s, v_s): tau(t_s) (when tau
is a callable), the Simulator's force callbacks fn(t_s, q_s, v_s), and, inside
robot.forward_dynamics, the robot's force elements and robot.add_force callbacks (robot.time is
set to t_s). Configurations advance with robot.integrate, so quaternions stay unit.
f(t, q, v) below is robot.forward_dynamics with all of that.

Integrators (INTEGRATORS; h = dt):

- ``rk4`` (the default, DEFAULT_INTEGRATOR; robot.step with integrator=None splits a step into
  equal substeps of at most DEFAULT_MAX_STEP = 1 ms, and of at most RK4_OMEGA_STEP / omega_max
  for a robot with flexible links, omega_max = 2 pi times the highest elastic frequency over
  sampled configurations, default_max_step(): see below):
  classical Runge-Kutta on the configuration manifold through the exponential map,
      a1 = f(t, q, v)
      q2 = q (+) v h/2,    v2 = v + a1 h/2,   a2 = f(t + h/2, q2, v2)
      q3 = q (+) v2 h/2,   v3 = v + a2 h/2,   a3 = f(t + h/2, q3, v3)
      q4 = q (+) v3 h,     v4 = v + a3 h,     a4 = f(t + h, q4, v4)
      q+ = q (+) (v + 2 v2 + 2 v3 + v4) h/6,  v+ = v + (a1 + 2 a2 + 2 a3 + a4) h/6
  Four forward dynamics per step; fourth order. Energy error of passive motion O(h^4) (it
  drifts, slowly: see test/test_integrators.py for the measured values).
- ``semi_implicit_euler``:  v+ = v + h f(t, q, v);  q+ = q (+) v+ h.  One forward dynamics per
  step, first order. It is symplectic only when the mass matrix is constant and the forces do
  not depend on v (a single pendulum, a Cartesian gantry); on articulated robots the velocity
  product terms are treated explicitly and it is NOT energy conserving: undamped, it gains
  energy and can diverge (measured on the undamped arm7 at dt = 1 ms). Use it for damped
  systems where one evaluation per step matters; the divergence guard stops it otherwise.
- ``implicit_euler``: linearly implicit (Rosenbrock) Euler. With A_q = df/dq, A_v = df/dv
  (forward differences along an orthonormal basis N of the admissible velocities: N = 1 for a
  tree, the null space of the loop Jacobian G_l for closed loops), v = N s, v+ - v = N z:
      (1 - h N^T A_v N - h^2 N^T A_q N) z = h N^T a1 + h^2 N^T A_q N s
      v+ = v + h (a1 + h A_q N (s + z) + A_v N z),   q+ = q (+) v+ h
  First order, L-stable on the linearised dynamics: stiff springs and dampers (and stiff
  friction) stay stable at 1 kHz where the explicit schemes blow up. Numerical damping
  dissipates energy (O(h)). Cost: 1 + 2 dim(N) forward dynamics per step.
- ``symplectic_euler``: the symplectic Euler method in the canonical momenta p = M(q) v
  (variational, from the discrete Lagrangian h L(q_k, (q_k+1 - q_k)/h)):
      M(q_k) u = M(q_k) v_k + h (dL/dq(q_k, u) + Q(q_k, u)),    q_k+1 = q_k (+) h u,
      v_k+1 = M(q_k+1)^-1 M(q_k) u,
  with dL/dq + Q = (dM/dq u) u - h(q, u) + tau (h: the tree's inverse dynamics at qdd = 0, i.e.
  Coriolis, gravity, springs, dampers, force elements; (dM/dq u) u by central differences of
  the mass matrix along q (+) +-eps u). Since the forward dynamics are M^-1 (tau - h), the
  momentum equation is u = v_k + h f(t, q_k, u) with the extra force (dM/dq u) u, solved by
  fixed-point iteration: one forward dynamics per iteration, so constraints (loops, mimic
  couplings: the constrained forward dynamics, then the step's projection), prescribed joints,
  force elements and flexible links take part like in the other schemes. First order; for
  conservative systems the energy error stays bounded (no drift) over long times, also where the
  mass matrix depends on q. On quaternion joints q (+) h u is the exponential map: the scheme
  stays first-order consistent, its symplecticity is that of the vector-space formula.

Divergence: after each step the new state must be finite with |v_i| <= max_velocity (default
MAX_VELOCITY, rad/s or m/s), and, when max_kinetic_energy is set, kinetic energy <= it;
otherwise SimulationDiverged (a FloatingPointError) is raised naming the time, and the state is
left at the last good step (a step is transactional: it also leaves the state unchanged when
forward dynamics raises).

Every buffer is allocated at construction: a step with a held tau allocates nothing.
"""
from __future__ import annotations

import numpy as np

from ..kernels.rk4 import rk4_combine as _rk4_combine
from ..kernels.rk4 import rk4_stage as _rk4_stage
from ..kernels.rk4 import state_bound as _state_bound
from ..kernels.lie_rk4 import correct_stage_velocity as _correct_stage_velocity
from .arguments import FLOAT, real_array, real_scalar, time_step, vector
from ..constants import VECTOR_SPACE_JOINTS
from ..errors import excerpt, user_stacklevel

INTEGRATORS = ("rk4", "semi_implicit_euler", "implicit_euler", "symplectic_euler")
# symplectic_euler: fixed-point iterations stop when the velocity update is below this (rad/s, m/s)
SYMPLECTIC_TOLERANCE = 1e-13
DEFAULT_INTEGRATOR = "rk4"
# robot.step with integrator=None splits a longer dt into equal RK4 substeps of at most this (s):
# measured over 20 s of undamped motion, RK4's energy error relative to the peak kinetic energy
# is 6.7e-6 (arm7) and 1e-7 (four-bar) at 1 ms, but 0.14 and 3.4e-3 at 10 ms
DEFAULT_MAX_STEP = 1e-3
# ... and, with flexible links, of at most RK4_OMEGA_STEP / omega_max (rad/s, the highest elastic
# frequency): RK4 is stable up to omega h = 2.83, but damps a mode by |R(i omega h)| per step,
# 1 - (omega h)^6 / 144 for small omega h: 0.7 % per step at omega h = 1, where the highest
# (least resolved) mode keeps its energy over tens of periods and the lower modes are accurate
# (the sample flexible arm: 835 Hz, 6 substeps per ms)
RK4_OMEGA_STEP = 1.0
# omega h beyond which an explicit integrator's step of an undamped mode grows (the stability
# boundaries on the imaginary axis: RK4 2 sqrt(2); semi-implicit and symplectic Euler 2;
# implicit Euler, L-stable, has none): robot.step warns (UnstableStepWarning) when the highest
# elastic mode is past them, and the plant's substeps (flexible links, contact springs) keep
# a margin below them
EXPLICIT_STABILITY = {"rk4": 2.0 * np.sqrt(2.0), "semi_implicit_euler": 2.0,
                      "symplectic_euler": 2.0}
# robot.step with the default integrator refuses a dt longer than MAX_DEFAULT_SUBSTEPS *
# DEFAULT_MAX_STEP = 10 s (ValueError naming the largest dt: a dt of hours would block for
# minutes): step in pieces, or name an integrator for one step of dt. (A flexible robot's shorter
# substeps make more of them in those 10 s: the cost stays bounded by 10 s / default_max_step.)
MAX_DEFAULT_SUBSTEPS = 10_000
MAX_DEFAULT_DT = MAX_DEFAULT_SUBSTEPS * DEFAULT_MAX_STEP
# default divergence bound on every velocity coordinate (rad/s, m/s): no robot joint moves
# this fast, and a diverging explicit integration passes it long before overflowing
MAX_VELOCITY = 1e4


class SimulationDiverged(FloatingPointError):
    """The integration left its bounds (non-finite state, |v| > max_velocity or kinetic energy >
    max_kinetic_energy). `time` is the time of the last good state."""

    def __init__(self, message, time):
        super().__init__(message)
        self.time = time


class Simulator:
    """Fixed-step integrator of (q, v) for one Robot (which it uses as its workspace).

    robot: an mbd_ros Robot; dt: step in s (> 0); integrator: one of INTEGRATORS or None for
    DEFAULT_INTEGRATOR; q, v: initial state (default: robot.neutral(), zeros);
    forces: callables fn(t, q, v) -> (nv,) generalized forces added to tau at every stage;
    prescribed: {joint: trajectory(t) -> (q, qd, qdd)} one-dof joints moved rheonomically: their
    accelerations at every stage and their (q, qd) after every step come from the trajectory,
    the drive forces they need are in robot.last_prescribed_torques (robot/prescribed.py);
    max_velocity, max_kinetic_energy: divergence bounds (see the module docstring).
    Attributes: q (nq,), v (nv,), qdd (nv,) accelerations of the last evaluate(), tau (nv,) the
    drive forces (plus callback forces) of the last evaluate(), time (s), steps (int).
    """

    def __init__(self, robot, dt, integrator=None, q=None, v=None, forces=(),
                 max_velocity=MAX_VELOCITY, max_kinetic_energy=None, prescribed=None):
        if integrator is None:
            integrator = DEFAULT_INTEGRATOR
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS} (or None for "
                             f"{DEFAULT_INTEGRATOR}), got {integrator!r}")
        dt = time_step(dt)
        max_velocity = real_scalar(max_velocity, "max_velocity")
        if not max_velocity > 0.0:
            raise ValueError(f"max_velocity must be positive, got {max_velocity}")
        if max_kinetic_energy is not None \
                and not real_scalar(max_kinetic_energy, "max_kinetic_energy") > 0.0:
            raise ValueError(f"max_kinetic_energy must be positive, got {max_kinetic_energy}")
        self.robot = robot
        self.dt = dt
        self.integrator = integrator
        self.max_velocity = max_velocity
        self.max_kinetic_energy = None if max_kinetic_energy is None else float(max_kinetic_energy)
        self.prescribed = dict(prescribed) if prescribed else {}
        self.forces = []
        for fn in forces or ():
            self.add_force(fn)
        nq, nv = robot.nq, robot.nv
        # q (+) v dt is q + v dt when every joint is revolute or prismatic (no quaternions,
        # no planar body-frame velocities): skip robot.integrate's checks on the hot path.
        self._vector_space = all(t in VECTOR_SPACE_JOINTS for t in robot.joint_types)
        # the joint tree's arrays, for RK4's stage corrections on SE(3), SO(3), SE(2) joints
        # (kernels/lie_rk4.py; the compiled rollout takes the same: rollout_compiled.py)
        self._body_int = np.array(getattr(robot.tree, "body_int",
                                          np.zeros((1, 1), dtype=np.int64)))
        self._constrained = bool(robot.closure_names) or bool(robot.mimic_joints)
        self.q = np.zeros(nq)
        self.v = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self.tau = np.zeros(nv)
        self._tau_held = np.zeros(nv)
        self._tau_source = self._tau_held   # tau held over the step, or a callable of t
        self._tau_stage = np.zeros(nv)
        self.time = self._t0 = 0.0
        self.steps = 0
        self._evaluated = False
        # stages and scratch: rows of one (7, nv) array when nq == nv, the layout of the C-level
        # RK4 step (KernelCall.rk4, mbd_ros/fastcall/_fastcall.c)
        self._stages = np.zeros((7, nv))
        if nq == nv:
            (self._q_stage, self._v2, self._v3, self._v4,
             self._a2, self._a3, self._a4) = self._stages
        else:
            self._q_stage = np.zeros(nq)
            self._v2, self._v3, self._v4, self._a2, self._a3, self._a4 = \
                (np.zeros(nv) for _ in range(6))
        self._q_next = np.zeros(nq)
        self._v_next = np.zeros(nv)
        self._scratch = np.zeros(nv)
        self.reset(q, v)

    def add_force(self, fn):
        """Add fn(t, q, v) -> (nv,) generalized forces, evaluated at every integrator stage and
        added to the drive forces (e.g. joint limits, contact, a controller inside the step)."""
        if not callable(fn):
            raise ValueError(f"a force must be a callable fn(t, q, v) -> (nv,), got {fn!r}")
        self.forces.append(fn)
        return fn

    def reset(self, q=None, v=None, time=0.0):
        """Set the state (default: neutral configuration at rest) and the clock."""
        robot = self.robot
        if q is None:
            q = robot.neutral()
        elif type(q) is not np.ndarray or q.dtype is not FLOAT:   # (float64: used as it is)
            q = real_array(q, "q", f"{robot.nq} finite numbers")
        if v is None:
            v = np.zeros(robot.nv)
        elif type(v) is not np.ndarray or v.dtype is not FLOAT:
            v = real_array(v, "v", f"{robot.nv} finite numbers")
        if q.shape != (robot.nq,) or not np.isfinite(q).all():
            raise ValueError(f"q must be {robot.nq} finite numbers, got {excerpt(q, 60)}")
        if v.shape != (robot.nv,) or not np.isfinite(v).all():
            raise ValueError(f"v must be {robot.nv} finite numbers, got {excerpt(v, 60)}")
        robot.integrate(q, v, 0.0, out=self._q_next)    # validates q (quaternions) cheaply
        self.q[:] = q
        self.v[:] = v
        self.qdd[:] = 0.0
        self.tau[:] = 0.0
        self._tau_held[:] = 0.0
        self._tau_source = self._tau_held
        self.time = self._t0 = float(time)
        self.steps = 0
        self._evaluated = False

    # ------------------------------------------------------------------ stepping
    def evaluate(self, tau):
        """qdd = f(time, q, v) at the current state for drive forces tau ((nv,) held over the
        step, or a callable tau(t) -> (nv,)); kept as the first stage of advance()."""
        if callable(tau):
            self._tau_source = tau
        else:
            if type(tau) is not np.ndarray or tau.dtype is not FLOAT or tau.ndim != 1:
                tau = vector(tau, self.robot.nv, "tau")   # (no broadcasting of a 0-d or 2-d tau)
            try:
                self._tau_held[:] = tau
            except ValueError:                            # another length: the error names tau
                vector(tau, self.robot.nv, "tau")
                raise
            self._tau_source = self._tau_held
        self._acceleration(self.time, self.q, self.v, self.qdd)
        self.tau[:] = self._tau_stage
        self._evaluated = True
        return self.qdd

    def advance(self):
        """Advance (q, v) by one step with the drive forces and accelerations of evaluate()."""
        if not self._evaluated:
            raise RuntimeError("advance() needs evaluate(tau) first")
        if self.integrator == "rk4":
            self._rk4()
        elif self.integrator == "implicit_euler":
            self._implicit_euler()
        elif self.integrator == "symplectic_euler":
            self._symplectic_euler()
        else:
            self._semi_implicit_euler()
        if self.prescribed:   # the prescribed joints sit exactly on their trajectories
            _, states = self.robot._prescribed_targets(self.prescribed, self.time + self.dt)
            for iq, iv, position, rate in states:
                self._q_next[iq] = position
                self._v_next[iv] = rate
        self._check_bounds()
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

    # ------------------------------------------------------------------ stages
    def _acceleration(self, t, q, v, out, extra=None):
        """out = f(t, q, v): forward dynamics with tau(t) and every force callback at (t, q, v),
        plus the generalized forces `extra` (nv,) when given."""
        tau = self._tau_source
        if callable(tau):
            value = real_array(tau(t), "tau(t)", f"{self.robot.nv} drive forces")
            if value.shape != (self.robot.nv,):
                raise ValueError(f"tau(t) must return ({self.robot.nv},) drive forces, got shape "
                                 f"{value.shape}")
            self._tau_stage[:] = value
        else:
            self._tau_stage[:] = tau
        for fn in self.forces:
            value = real_array(fn(t, q, v), f"force {excerpt(getattr(fn, '__name__', fn), 60)}",
                               f"{self.robot.nv} generalized forces")
            if value.shape != (self.robot.nv,):
                raise ValueError(f"force {getattr(fn, '__name__', fn)!r} must return "
                                 f"({self.robot.nv},) generalized forces, got shape {value.shape}")
            self._tau_stage += value
        tau = self._tau_stage
        if extra is not None:
            tau = tau + extra
        self.robot.time = t
        if self.prescribed:   # rheonomic joints: their accelerations from the trajectories
            accelerations, _ = self.robot._prescribed_targets(self.prescribed, t)
            self.robot.forward_dynamics(q, v, tau, out=out, prescribed=accelerations)
            return
        self.robot.forward_dynamics(q, v, tau, out=out)

    def _check_bounds(self):
        q_next, v_next = self._q_next, self._v_next
        # one pass: NaN if an entry is not finite, else max |v_i| (kernels/rk4.py)
        speed = _state_bound(q_next, v_next)
        t_end = self._t0 + (self.steps + 1) * self.dt
        if speed != speed:
            raise SimulationDiverged(f"the simulation diverged: the state became non-finite in "
                                     f"the step from t = {self.time:.6f} s to {t_end:.6f} s",
                                     self.time)
        if speed > self.max_velocity:
            raise SimulationDiverged(
                f"the simulation diverged at t = {t_end:.6f} s: a velocity reached {speed:.4g} > "
                f"max_velocity {self.max_velocity:g} (step {self.dt:g} s too large for the "
                f"{self.integrator} integrator, or forces out of bounds); state kept at "
                f"t = {self.time:.6f} s", self.time)
        if self.max_kinetic_energy is not None:
            energy = self.robot.kinetic_energy(q_next, v_next)
            if energy > self.max_kinetic_energy:
                raise SimulationDiverged(
                    f"the simulation diverged at t = {t_end:.6f} s: kinetic energy {energy:.4g} J "
                    f"> max_kinetic_energy {self.max_kinetic_energy:g} J; state kept at "
                    f"t = {self.time:.6f} s", self.time)

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
        dt, h, t = self.dt, 0.5 * self.dt, self.time
        q, v, a1 = self.q, self.v, self.qdd
        v2, v3, v4, a2, a3, a4 = self._v2, self._v3, self._v4, self._a2, self._a3, self._a4
        qs, s = self._q_stage, self._scratch
        if self._vector_space and not self.forces and self._tau_source is self._tau_held \
                and not self.prescribed:
            # the whole step at C level when the robot's forward dynamics has its C entry
            # (mbd_ros/fastcall): the same bits as below, without ~10 Python-level calls
            fd = self.robot.__dict__.get("forward_dynamics")
            if fd is not None and hasattr(fd, "rk4") and \
                    fd.rk4(q, v, a1, self._tau_stage, dt, self._stages, self._q_next,
                           self._v_next):
                self.robot.time = t + dt   # as after the last stage below
                return
        if self._vector_space:   # the same updates, one numba call each (kernels/rk4.py)
            _rk4_stage(q, v, v, a1, h, qs, v2)      # q2 = q + v h, v2 = v + a1 h
            self._acceleration(t + h, qs, v2, a2)
            _rk4_stage(q, v, v2, a2, h, qs, v3)     # q3 = q + v2 h, v3 = v + a2 h
            self._acceleration(t + h, qs, v3, a3)
            _rk4_stage(q, v, v3, a3, dt, qs, v4)    # q4 = q + v3 dt, v4 = v + a3 dt
            self._acceleration(t + dt, qs, v4, a4)
            _rk4_combine(q, v, v2, v3, v4, a1, a2, a3, a4, dt, self._q_next, self._v_next)
            return
        # On the joints' Lie groups (free, spherical, planar) each stage's twist, once its
        # forward dynamics is done, becomes the algebra's k_i (kernels/lie_rk4.py, RKMK):
        # without it the step is second order there.
        body_int = self._body_int
        # stage 2: q2 = q (+) v h, v2 = v + a1 h; then k2 (u2 = h v) in v2
        self._integrate(q, v, h, qs)
        np.multiply(a1, h, out=v2)
        np.add(v, v2, out=v2)
        self._acceleration(t + h, qs, v2, a2)
        _correct_stage_velocity(body_int, v, h, v2)
        # stage 3: q3 = q (+) k2 h, v3 = v + a2 h; then k3 (u3 = h k2) in v3
        self._integrate(q, v2, h, qs)
        np.multiply(a2, h, out=v3)
        np.add(v, v3, out=v3)
        self._acceleration(t + h, qs, v3, a3)
        _correct_stage_velocity(body_int, v2, h, v3)
        # stage 4: q4 = q (+) k3 dt, v4 = v + a3 dt; then k4 (u4 = dt k3) in v4
        self._integrate(q, v3, dt, qs)
        np.multiply(a3, dt, out=v4)
        np.add(v, v4, out=v4)
        self._acceleration(t + dt, qs, v4, a4)
        _correct_stage_velocity(body_int, v3, dt, v4)
        # q+ = q (+) (v + 2 k2 + 2 k3 + k4) dt/6
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

    def _symplectic_euler(self):
        """Symplectic Euler in (q, p = M v) (module docstring): u = v + h f(t, q, u) with the
        extra force (dM/dq u) u, by fixed-point iteration; tau(t) at the step start."""
        robot, h, t = self.robot, self.dt, self.time
        q, v = self.q, self.v
        mass = robot.mass_matrix(q).copy()
        u = v + h * self.qdd
        acceleration = self._scratch
        for _ in range(50):
            with np.errstate(over="ignore", invalid="ignore"):   # checked below
                extra = self._mass_rate(q, u) @ u
            # an iteration that runs away (a step too long for the stiffness) overflows here:
            # a divergence of the simulation, not a bad argument of the forward dynamics
            if not (np.isfinite(u).all() and np.isfinite(extra).all()):
                t_end = self._t0 + (self.steps + 1) * self.dt
                raise SimulationDiverged(
                    f"the simulation diverged: the symplectic Euler iteration left the finite "
                    f"range in the step from t = {self.time:.6f} s to {t_end:.6f} s (step "
                    f"{self.dt:g} s too large for the stiffness)", self.time)
            self._acceleration(t, q, u, acceleration, extra=extra)
            u_next = v + h * acceleration
            change = np.abs(u_next - u).max(initial=0.0)
            u = u_next
            if change < SYMPLECTIC_TOLERANCE * max(1.0, np.abs(u).max(initial=0.0)):
                break
        self._integrate(q, u, h, self._q_next)
        self._v_next[:] = np.linalg.solve(robot.mass_matrix(self._q_next), mass @ u)

    def _mass_rate(self, q, u):
        """dM/dq u (nv, nv) = d/ds M(q (+) s u) at s = 0, by central differences."""
        robot = self.robot
        eps = 1e-6 / max(1.0, np.abs(u).max(initial=0.0))
        self._integrate(q, u, eps, self._q_stage)
        upper = robot.mass_matrix(self._q_stage).copy()
        self._integrate(q, u, -eps, self._q_stage)
        lower = robot.mass_matrix(self._q_stage)
        return (upper - lower) / (2.0 * eps)

    def _tangent_basis(self):
        """N (nv, m): orthonormal basis of the admissible velocities (None: every velocity, a
        robot without constraints; else the null space of the constraint Jacobian at q)."""
        if not self._constrained:
            return None
        return self.robot.constraint_basis(self.q)

    def _implicit_euler(self):
        """Linearly implicit Euler (module docstring), Jacobians by forward differences."""
        robot, h, t = self.robot, self.dt, self.time
        q, v, a1 = self.q, self.v, self.qdd
        basis = self._tangent_basis()
        m = robot.nv if basis is None else basis.shape[1]
        a_q = np.empty((robot.nv, m))
        a_v = np.empty((robot.nv, m))
        perturbed = self._a2
        for j in range(m):
            direction = self._unit(j, basis)
            # d f / d v along n_j
            np.multiply(direction, 1e-7, out=self._v2)
            self._v2 += v
            self._acceleration(t, q, self._v2, perturbed)
            a_v[:, j] = (perturbed - a1) / 1e-7
            # d f / d q along n_j (q (+) eps n_j)
            self._integrate(q, direction, 1e-7, self._q_stage)
            self._acceleration(t, self._q_stage, v, perturbed)
            a_q[:, j] = (perturbed - a1) / 1e-7
        s = v if basis is None else basis.T @ v
        if basis is None:
            lhs = np.eye(m) - h * a_v - h * h * a_q
            rhs = h * a1 + h * h * (a_q @ s)
        else:
            lhs = np.eye(m) - h * (basis.T @ a_v) - h * h * (basis.T @ a_q)
            rhs = h * (basis.T @ a1) + h * h * (basis.T @ (a_q @ s))
        z = np.linalg.solve(lhs, rhs)
        self._v_next[:] = v + h * (a1 + h * (a_q @ (s + z)) + a_v @ z)
        self._integrate(q, self._v_next, h, self._q_next)

    def _unit(self, j, basis):
        if basis is None:
            e = self._v3
            e[:] = 0.0
            e[j] = 1.0
            return e
        return np.ascontiguousarray(basis[:, j])


def step_robot(robot, q, v, tau, dt, integrator=None, options=None, prescribed=None):
    """robot.step: one step from (q, v) at t = robot.time with a Simulator kept per
    (dt, integrator, options) on the robot; returns copies of (q, v) and advances robot.time, or
    leaves robot.time as it was when the step fails (SimulationDiverged, ValueError).
    prescribed: {joint: trajectory(t) -> (q, qd, qdd)} (see Simulator)."""
    options = dict(options or {})
    dt = time_step(dt)
    substeps = 1
    if integrator is None:   # the accurate default: substeps of at most default_max_step
        if dt > MAX_DEFAULT_DT * (1.0 + 1e-12):
            raise ValueError(f"dt = {dt:g} s is longer than the default integrator takes in one "
                             f"step (MAX_DEFAULT_SUBSTEPS = {MAX_DEFAULT_SUBSTEPS} substeps of "
                             f"{DEFAULT_MAX_STEP:g} s): the largest dt allowed is "
                             f"{MAX_DEFAULT_DT:g} s (take several steps, or name an integrator "
                             "for one step of dt)")
        substeps = default_substeps(robot, dt)
    key = (dt, substeps, integrator or DEFAULT_INTEGRATOR, tuple(sorted(options.items())))
    simulator = robot._simulators.get(key)
    start = robot.time
    try:   # robot.time (which the stages set) is back at start when the step fails
        if simulator is None:
            if integrator is not None:
                warn_if_unstable(robot, dt, integrator)
            if len(robot._simulators) >= 8:   # a caller varying dt: keep the cache bounded
                robot._simulators.clear()
            simulator = robot._simulators[key] = Simulator(robot, dt / substeps, integrator, q=q,
                                                           v=v, **options)
        simulator.reset(q, v, time=start)
        simulator.prescribed = dict(prescribed) if prescribed else {}
        for _ in range(substeps):
            simulator.step(tau)
    except BaseException:
        robot.time = start
        raise
    robot.time = start + dt
    return simulator.q.copy(), simulator.v.copy()


# configurations sampled for the highest elastic frequency (it varies with q: the sample flexible
# four-bar's goes from 250 Hz to 759 Hz between two configurations)
FREQUENCY_SAMPLES = 16


def default_substeps(robot, dt):
    """Substeps of robot.step's default integrator in a step of dt (s): dt / default_max_step
    rounded up (a dt a hair above a multiple is not one more substep), at least 1."""
    return max(1, int(np.ceil(dt / default_max_step(robot) - 1e-9)))


def highest_elastic_omega(robot):
    """omega_max (rad/s): the highest elastic frequency over the neutral and FREQUENCY_SAMPLES
    random configurations, 0 without elastic coordinates (cached per robot)."""
    if getattr(robot, "_highest_omega", None) is None:
        omega = 0.0
        if len(robot.elastic_names):
            rng = np.random.default_rng(0)
            frequency = max([robot.highest_frequency()] + [
                robot.highest_frequency(robot.random_configuration(rng))
                for _ in range(FREQUENCY_SAMPLES)])
            omega = 2.0 * np.pi * frequency
        robot._highest_omega = omega
    return robot._highest_omega


def default_max_step(robot):
    """Longest substep (s) of robot.step's default integrator: DEFAULT_MAX_STEP, or
    RK4_OMEGA_STEP / omega_max for stiff elastic modes (highest_elastic_omega; cached)."""
    if robot._default_max_step is None:
        omega = highest_elastic_omega(robot)
        step = DEFAULT_MAX_STEP
        if omega > 0.0:
            step = min(step, RK4_OMEGA_STEP / omega)
        robot._default_max_step = step
    return robot._default_max_step


class UnstableStepWarning(RuntimeWarning):
    """robot.step with a named explicit integrator and a dt past its stability for the robot's
    highest elastic mode: the states it returns grow without physical cause."""


def warn_if_unstable(robot, dt, integrator):
    """UnstableStepWarning when omega_max dt exceeds the named explicit integrator's stability
    boundary (EXPLICIT_STABILITY); nothing for the default (it substeps) or implicit Euler."""
    limit = EXPLICIT_STABILITY.get(integrator)
    if limit is None or not len(robot.elastic_names):
        return
    omega = highest_elastic_omega(robot)
    if omega * dt > limit:
        import warnings
        warnings.warn(
            f"robot.step: integrator={integrator!r} with dt = {dt:g} s is unstable for the "
            f"highest elastic mode ({omega / (2.0 * np.pi):.4g} Hz: omega dt = {omega * dt:.3g}"
            f" > {limit:.3g}); the states will grow. "
            + (f"integrator=None substeps it ({default_substeps(robot, dt)} RK4 substeps), "
               if dt <= MAX_DEFAULT_DT else "take shorter steps, ")
            + "implicit_euler is stable at any dt",
            UnstableStepWarning, stacklevel=user_stacklevel())
