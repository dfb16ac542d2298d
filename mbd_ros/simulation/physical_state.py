"""Detection of physically impossible plant states, after each step: what a divergence check
(non-finite values, speeds beyond max_speed) does not see. No ROS imports.

    monitor = PhysicalStateMonitor(robot, contact)            # contact: a GroundContact or None
    plant.step()
    problem = monitor.check(plant.q, plant.v, plant.q_before_step, plant.v_before_step,
                            plant.tau, plant.dt)             # None, or what happened (str)

Checks (each returns a sentence naming the link, joint or quantity and the numbers):

- **below the ground** (or inside a static box): a contact point deeper than `max_depth` (default MAX_DEPTH, 5 cm: 50
  times the design penetration; a hard landing at the reachable speed stays well inside it,
  see contact.reachable_speed), or the root link's origin below the ground by more than
  `max_depth` (a robot whose body went through the floor; the issue's solo12 ended 0.31 m
  under it);
- **quaternion**: a free or spherical joint's quaternion whose norm is off 1 by more than
  1e-6 (the integrators renormalise it), or that flipped sign between two steps (q and -q are
  the same rotation, but no integrator step produces the jump: a flip means the state was
  overwritten or integrated through a singularity) or turned by more than the angular speed
  allows (|w| dt + 0.1 rad);
- **energy rising without input**: kinetic + gravity (+ contact spring) energy rising over a
  step by more than the work of the drive torques, tau . (v + v_before) / 2 dt (the contact,
  joint damping and friction and the hard stops only dissipate), beyond `energy_tolerance`
  (relative to the kinetic + spring energy, default 5 %) plus 1e-3 J (round-off of the
  gravity energy of a robot far from the origin).
"""
from __future__ import annotations

import math

import numpy as np

from .plant import DivergenceError, Plant

MAX_DEPTH = 0.05                 # m: deeper than this is "under the floor"
QUATERNION_NORM_TOLERANCE = 1e-6
ROTATION_SLACK = 0.1             # rad per step beyond |w| dt
ENERGY_TOLERANCE = 0.05          # of the kinetic + spring energy
ENERGY_FLOOR = 1e-3              # J


class PhysicalStateMonitor:
    """Checks a plant's state after each step (see the module docstring). robot: the plant's
    robot; contact: its GroundContact (None: no ground, the depth checks are off); max_depth
    (m), energy_tolerance (fraction; None: no energy check, e.g. with force hooks that do
    work, such as prescribed motion or external wrenches)."""

    def __init__(self, robot, contact=None, max_depth=MAX_DEPTH,
                 energy_tolerance=ENERGY_TOLERANCE):
        if not (math.isfinite(max_depth) and max_depth > 0.0):
            raise ValueError(f"max_depth must be > 0, got {max_depth}")
        if energy_tolerance is not None and not (math.isfinite(energy_tolerance)
                                                 and energy_tolerance > 0.0):
            raise ValueError(f"energy_tolerance must be a positive fraction or None, got "
                             f"{energy_tolerance}")
        self.robot = robot
        self.contact = contact
        self.max_depth = float(max_depth)
        self.energy_tolerance = energy_tolerance
        # quaternion joints: (name, q index of x y z w, v index of the angular velocity)
        self.quaternions = []
        for j, kind in enumerate(robot.joint_types):
            if kind == "floating":
                self.quaternions.append((robot.joint_names[j], int(robot.idx_q[j]) + 3,
                                         int(robot.idx_v[j]) + 3))
            elif kind == "spherical":
                self.quaternions.append((robot.joint_names[j], int(robot.idx_q[j]),
                                         int(robot.idx_v[j])))
        self.root_height_index = (int(robot.idx_q[0]) + 2
                                  if robot.joint_types and robot.joint_types[0] == "floating"
                                  else None)
        self._last = None   # (q, v, total energy, kinetic + spring energy) of the last state

    def energy(self, q, v):
        """Kinetic + gravity (+ elastic) + contact spring energy at (q, v) (J)."""
        robot = self.robot
        energy = robot.kinetic_energy(q, v) + robot.potential_energy(q)
        if self.contact is not None:
            self.contact(0.0, q, v)
            energy += self.contact.spring_energy()
        return energy

    def check(self, q, v, q_before, v_before, tau, dt):
        """None when (q, v) after a step of dt (s) from (q_before, v_before) under the drive
        torques tau (nv,) is possible, else what is impossible about it (str)."""
        problem = self._check_depth(q, v) or self._check_quaternions(q, v, q_before, dt)
        if problem or self.energy_tolerance is None:
            return problem
        return self._check_energy(q, v, q_before, v_before, tau, dt)

    def check_state(self, q, v):
        """The checks of one state alone (depth, quaternion norms): None or what is wrong."""
        problem = self._check_depth(q, v)
        if problem:
            return problem
        for name, iq, _ in self.quaternions:
            norm = float(np.sqrt(q[iq:iq + 4] @ q[iq:iq + 4]))
            if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
                return f"the quaternion of joint '{name}' has norm {norm:.9g} (not a rotation)"
        return None

    def _check_depth(self, q, v):
        contact = self.contact
        if contact is None:
            return None
        contact(0.0, q, v)
        k = int(np.argmax(contact.penetration))
        depth = float(contact.penetration[k])
        if depth > self.max_depth:
            into = contact.obstacle_name(k)
            where = "below the ground" if into == "the ground" else f"inside {into}"
            return (f"link '{contact.points[k].link}' is {depth:.3g} m {where} "
                    f"(a contact point deeper than {self.max_depth:g} m)")
        if self.root_height_index is not None:
            below = contact.ground_height - float(q[self.root_height_index])
            if below > self.max_depth:
                return (f"the base link '{self.robot.link_names[0]}' is {below:.3g} m below "
                        f"the ground (more than {self.max_depth:g} m)")
        return None

    def _check_quaternions(self, q, v, q_before, dt):
        for name, iq, iw in self.quaternions:
            quat = q[iq:iq + 4]
            norm = float(np.sqrt(quat @ quat))
            if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
                return f"the quaternion of joint '{name}' has norm {norm:.9g} (not a rotation)"
            dot = float(quat @ q_before[iq:iq + 4])
            if dot < 0.0:
                return (f"the quaternion of joint '{name}' flipped sign in one step "
                        f"(dot product with the previous one {dot:.3g})")
            turned = 2.0 * math.acos(min(1.0, abs(dot) / norm))
            allowed = float(np.sqrt(v[iw:iw + 3] @ v[iw:iw + 3])) * dt + ROTATION_SLACK
            if turned > allowed:
                return (f"joint '{name}' turned {turned:.3g} rad in one step, more than its "
                        f"angular speed allows ({allowed:.3g} rad)")
        return None

    def _energies(self, q, v):
        """(total, kinetic + spring) energy at (q, v); the last step's end state is kept, so
        a sequence of steps evaluates each state once."""
        last = self._last
        if last is not None and np.array_equal(last[0], q) and np.array_equal(last[1], v):
            return last[2], last[3]
        kinetic = self.robot.kinetic_energy(q, v)
        total = kinetic + self.robot.potential_energy(q)
        spring = 0.0
        if self.contact is not None:
            self.contact(0.0, q, v)
            spring = self.contact.spring_energy()
        self._last = (q.copy(), v.copy(), total + spring, kinetic + spring)
        return total + spring, kinetic + spring

    def _check_energy(self, q, v, q_before, v_before, tau, dt):
        before, active_before = self._energies(q_before, v_before)
        after, _ = self._energies(q, v)
        work = float(tau @ (v + v_before)) * 0.5 * dt
        slack = self.energy_tolerance * (active_before + abs(work)) \
            + ENERGY_FLOOR
        gain = after - before - work
        if gain > slack:
            return (f"the energy rose by {after - before:.4g} J in one step with {work:.4g} J "
                    f"of drive work (kinetic + gravity + contact springs; {gain:.4g} J "
                    "from nowhere)")
        return None


class ImpossibleStateError(DivergenceError):
    """The step produced a physically impossible state (the plant is back at the state before
    the step): handled as a divergence."""


class MonitoredPlant(Plant):
    """A Plant whose advance() (and so step()) also runs a PhysicalStateMonitor: an impossible
    state puts the plant back at the state before the step, counts a divergence and raises
    ImpossibleStateError saying what happened; a divergence from an impossible state is raised
    as an ImpossibleStateError saying so. Arguments: those of Plant, plus `monitor`."""

    def __init__(self, *args, monitor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.monitor = monitor

    def advance(self):
        try:
            super().advance()
        except DivergenceError as exc:
            # a step from an impossible state (e.g. deep under the floor) diverges: say why
            problem = None if self.monitor is None else self.monitor.check_state(self.q, self.v)
            if problem:
                raise ImpossibleStateError(f"a physically impossible state at t = "
                                           f"{self.time:.4f} s: {problem} ({exc})") from None
            raise
        if self.monitor is None:
            return
        problem = self.monitor.check(self.q, self.v, self.q_before_step, self.v_before_step,
                                     self.tau, self.dt)
        if problem:
            self.sim.q[:] = self.q_before_step
            self.sim.v[:] = self.v_before_step
            self.divergences += 1
            raise ImpossibleStateError(f"a physically impossible state at t = "
                                       f"{self.time:.4f} s: {problem}")
