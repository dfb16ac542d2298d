"""The Plant's step as one compiled call (kernels/plant_step.py), for the plants that allow it
(docs/plant.md, "One compiled call per step"). No ROS imports.

Plant.evaluate() runs the whole step in the kernel (drive torques -> limits -> integrator ->
stops -> divergence check) and keeps its result pending; the plant's state, torques and
accelerations then read as after the Python evaluate(), and Plant.advance() commits the pending
state. When the kernel reports a failure (a dynamics error, a divergence), the velocity-mode
references are restored and the step is replayed on the Python path, which raises the
documented error: failures cost two steps, successes one call.

Which plants: robot.step_parts(...) accepts the robot (a generic rigid tree, vector-space
configuration, rigid force elements, recursive closed loops, no Python force callbacks); the
Simulator has no force hooks (fn(t, q, v): the ground contact) and no prescribed joints, the
integrator is rk4 or semi_implicit_euler, no kinetic-energy bound; limits are None or a
JointLimits of one-dof joints; a closed-loop robot whose drives need the model terms has no
actuated joint (their compensation is then zero). Anything else takes the Python path, every
step (the conditions are checked at each step: force hooks or an integrator can change).
"""
from __future__ import annotations

import numpy as np

from ..kernels.plant import DRIVE_Q_REF
from ..kernels.rollout_projection import projection_workspace
from ..robot.constraints import ASSEMBLY_TOLERANCE, EULER_CLOSING_TOLERANCE, \
    PROJECTION_TOLERANCE
from ..kernels.plant_step import plant_step as _plant_step
from ..robot.step_parts import step_parts
from .limits import VELOCITY_TIME_CONSTANT

INTEGRATORS = ("rk4", "semi_implicit_euler")


class CompiledStep:
    """The buffers of one Plant's compiled step; `reason` says why a plant cannot use it
    (empty when it can, at construction)."""

    def __init__(self, plant):
        self.plant = plant
        robot = plant.robot
        self.parts, self.reason = step_parts(robot)
        limits = plant.limits
        if self.parts is not None and limits is not None:
            if not hasattr(limits, "kernel_arrays"):
                self.parts, self.reason = None, "limits are not a JointLimits"
            elif not limits.kernel_arrays()[-1]:
                self.parts, self.reason = None, "position stops on multi-dof joints"
        nv = robot.nv
        self.mass = np.zeros((nv, nv))
        self.chol = np.zeros((nv, nv))
        self.minv = np.zeros((nv, nv))
        self.stop_work = np.zeros((3, nv))
        self.m_eff = np.zeros(nv)
        self.m_stable = np.zeros(nv)
        self.bias = np.zeros(nv)
        self.zero = np.zeros(nv)
        self.tau_total = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self.stages = np.zeros((7, nv))
        self.q = np.zeros(nv)
        self.v = np.zeros(nv)
        self.q_next = np.zeros(nv)
        self.v_next = np.zeros(nv)
        self.counts = np.zeros(2, dtype=np.int64)
        self.q_ref = np.zeros(len(plant.drives.joints))
        self.no_idx = np.zeros(0, dtype=np.int64)
        self.no_stops = (np.zeros((7, 0), dtype=np.int64), np.zeros((7, 0)))
        self.no_limit = np.full(nv, np.inf)
        # the loops' projection after each integrator step (robot.close_loops_after_step);
        # placeholders of the same types without loops (one compiled specialisation)
        rows = robot._constraints.loops.n_constraints \
            if self.parts is not None and self.parts.has_loops else 1
        self.loop_jacobian = np.zeros((rows, nv))
        self.projection = projection_workspace(robot.nq, nv, rows)
        self.first_multipliers = np.zeros(max(1, len(self.parts.multipliers))
                                          if self.parts is not None else 1)
        self.pending = False

    def plain(self):
        """True for a robot without force elements and loops (its Python path is C-level)."""
        return not (self.parts.has_elements or self.parts.has_loops)

    def usable(self):
        """True when this step can run compiled (module docstring); refreshes the robot's
        loop gains."""
        parts, plant = self.parts, self.plant
        if parts is None or not parts.current():
            return False
        sim = plant.sim
        if sim.forces or sim.prescribed or sim.integrator not in INTEGRATORS or \
                sim.max_kinetic_energy is not None:
            return False
        return True

    def run(self):
        """The step in one kernel call; True: its result is pending (commit()), False: the
        caller takes the Python path (not usable, or the kernel failed: nothing changed)."""
        self.pending = False
        if not self.usable():
            return False
        plant, parts = self.plant, self.parts
        sim, limits, drives = plant.sim, plant.limits, plant.drives
        servo = drives.needs_model_terms()
        model_terms = servo or (limits is not None and limits.has_velocity_limits)
        if model_terms and parts.has_loops and not parts.actuated_none:
            return False   # the closed-loop compensation (a least-squares actuation) in Python
        if limits is not None:
            stops_int, stops_float, chol, minv, stop_work, vel_idx, velocity, effort, _ = \
                limits.kernel_arrays()
            has_stops = stops_int.shape[1] > 0
        else:
            stops_int, stops_float = self.no_stops
            chol, minv, stop_work = self.chol, self.minv, self.stop_work
            vel_idx, velocity, effort, has_stops = self.no_idx, self.no_limit, self.no_limit, \
                False
        drive_int, drive_float = drives.kernel_arrays()
        self.q_ref[:] = drive_float[DRIVE_Q_REF]
        with parts.lock:
            status = _plant_step(
                parts.body_int, parts.body_float, parts.work, parts.free_work, parts.link_int,
                parts.link_float, parts.link_fext, parts.element_int, parts.element_float,
                parts.link_wrench, parts.joint_force, parts.values, parts.scratch,
                parts.has_elements, parts.cut_int, parts.cut_float, parts.loop_float,
                parts.gains, parts.info, parts.multipliers, parts.has_loops,
                self.loop_jacobian, self.projection, PROJECTION_TOLERANCE,
                EULER_CLOSING_TOLERANCE if sim.integrator == "semi_implicit_euler"
                else ASSEMBLY_TOLERANCE, self.first_multipliers,
                parts.has_loops,   # zero_bias: a loop robot gets here only without actuation
                drive_int, drive_float, model_terms, limits is not None, vel_idx, velocity,
                effort, 1.0 / VELOCITY_TIME_CONSTANT, stops_int, stops_float, chol, minv,
                stop_work, has_stops, sim.q, sim.v, plant.step_dt, sim.dt, plant.substeps,
                sim.integrator == "rk4", sim.max_velocity, plant.max_speed, self.mass,
                self.m_eff, self.m_stable, self.bias, self.zero, plant.tau, self.tau_total, sim.qdd, self.qdd,
                self.stages, self.q, self.v, self.q_next, self.v_next, self.counts)
            parts.after_step()
        if status:
            drive_float[DRIVE_Q_REF] = self.q_ref
            return False
        # as after the Python evaluate(): the drive forces, the robot's clock at the stage
        sim.tau[:] = plant.tau
        plant.robot.time = sim.time
        if self.counts[0] and limits is not None:
            limits.saturated += 1
        self.pending = True
        return True

    def commit(self):
        """Make the pending step the simulator's state, as Simulator.advance (and, for more
        substeps, Simulator.step) leave it: state, step count, clock (t0 + steps dt), the
        last substep's first-stage accelerations, the robot's clock at the last stage."""
        plant = self.plant
        sim = plant.sim
        self.pending = False
        sim.q[:] = self.q
        sim.v[:] = self.v
        sim.qdd[:] = self.qdd
        last = sim._t0 + (sim.steps + plant.substeps - 1) * sim.dt   # the last substep's start
        sim.steps += plant.substeps
        sim.time = sim._t0 + sim.steps * sim.dt
        plant.robot.time = last + sim.dt if sim.integrator == "rk4" else last
        if plant.limits is not None:
            plant.limits.stops += int(self.counts[1])
