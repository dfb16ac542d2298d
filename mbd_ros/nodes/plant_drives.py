"""Drives that behave like drives, for the simulate-mode plant (a mixin of PlantInterface; the
models are in mbd_ros.simulation.drives, .sensors and .mismatch; docs/plant.md "Drive models").

Parameters (defaults keep the exact plant of earlier versions: `ideal`, everything off):

- ``drive_model``: ``ideal`` (inertia-normalised PD + the model's compensation) or ``pd`` (a
  servo's PD without compensation, ``drive_pd_kp`` N m/rad, ``drive_pd_kd`` N m s/rad, one
  number or one per joint of `joints`; 0: derived from the joint's effective inertia at the
  initial configuration for a ``drive_pd_bandwidth_hz`` loop, critically damped); applied at once;
- ``actuator_bandwidth_hz``: first-order lag of every drive torque (0: none); at once;
- what the controller sees on joint_states (read at configure): ``measurement_noise_position``,
  ``measurement_noise_velocity`` (standard deviations), ``noise_seed``,
  ``measurement_delay_cycles``, ``encoder_resolution`` (rad or m per count);
- model mismatch (read at configure): ``plant_urdf`` (a second URDF file, same joints: the
  robot simulated; read at configure only, like urdf_path, never from a topic; no xacro),
  ``plant_friction_scale`` (its <dynamics> damping and friction scaled), ``plant_mass_scale``
  (every body) and ``plant_link_mass_scales`` (['link: factor', ...]): the plant integrates
  that robot while the controller keeps the URDF. The node's robot is then the plant's (its
  wrenches and accelerations are those of the robot simulated).
"""
from __future__ import annotations

import numpy as np
from rcl_interfaces.msg import ParameterType

from ..simulation.drives import DRIVE_MODELS, PD_BANDWIDTH_HZ, gain_vector, pd_gains
from ..simulation.mismatch import check_same_joints, scaled_friction_urdf, scaled_mass_robot
from ..simulation.sensors import MAX_DELAY_CYCLES, JointSensors
from .base import gains, one_of

MAX_LINK_SCALES = 1000   # entries of plant_link_mass_scales (a bounded parse)


def link_scales(entries):
    """{link: factor} of plant_link_mass_scales entries 'link: factor' (or 'link=factor');
    ValueError naming the entry."""
    if len(entries) > MAX_LINK_SCALES:
        raise ValueError(f"plant_link_mass_scales has {len(entries)} entries: more than "
                         f"{MAX_LINK_SCALES}")
    scales = {}
    for entry in entries:
        link, sep, factor = entry.replace("=", ":").rpartition(":")
        link = link.strip()
        try:
            value = float(factor)
        except ValueError:
            value = None
        if not sep or not link or value is None:
            raise ValueError(f"plant_link_mass_scales: entry '{entry[:80]}' is not "
                             "'link: factor'")
        if link in scales:
            raise ValueError(f"plant_link_mass_scales: link '{link}' named twice")
        scales[link] = value
    return scales


class PlantDrives:
    """Mixin: needs self.robot, self.jmap, self.param, self.declare, self.get_logger."""

    def declare_drive_parameters(self):
        self.declare("drive_model", "ideal", "simulate: drive law of position and velocity "
                     "commands: ideal (inertia-normalised drive_kp / drive_kd + the model's "
                     "compensation: zero steady-state error) or pd (a servo's PD, drive_pd_kp / "
                     "drive_pd_kd, without model compensation: it sags under gravity by g/Kp)",
                     one_of(*DRIVE_MODELS))
        self.declare("drive_pd_kp", 0.0, "simulate, drive_model pd: position gain, N m/rad, one "
                     "number or one per joint of `joints`; 0: m_i w^2, m_i = 1 / (M(q0)^-1)_ii, "
                     "w = 2 pi drive_pd_bandwidth_hz", gains, dynamic=True)
        self.declare("drive_pd_kd", 0.0, "simulate, drive_model pd: velocity gain, N m s/rad; "
                     "0: 2 m_i w (critically damped)", gains, dynamic=True)
        self.declare("drive_pd_bandwidth_hz", PD_BANDWIDTH_HZ, "simulate, drive_model pd: "
                     "position-loop bandwidth of the derived gains, Hz",
                     float_range=(1e-3, 1e4))
        self.declare("actuator_bandwidth_hz", 0.0, "simulate: first-order lag of every drive "
                     "torque (effort commands too), Hz, exp(-2 pi f dt) per cycle; 0: none",
                     float_range=(0.0, 1e6))
        self.declare("measurement_noise_position", 0.0, "simulate: standard deviation of the "
                     "Gaussian noise on joint_states positions, rad or m",
                     float_range=(0.0, 1e3))
        self.declare("measurement_noise_velocity", 0.0, "simulate: standard deviation of the "
                     "Gaussian noise on joint_states velocities, rad/s or m/s",
                     float_range=(0.0, 1e6))
        self.declare("noise_seed", 0, "simulate: seed of the measurement noise (the same seed "
                     "gives the same noise)", int_range=(0, 2 ** 62))
        self.declare("measurement_delay_cycles", 0, "simulate: joint_states carry the state of "
                     "this many cycles earlier", int_range=(0, MAX_DELAY_CYCLES))
        self.declare("encoder_resolution", 0.0, "simulate: joint_states positions rounded to "
                     "this many rad (or m) per count, velocities the backward difference of "
                     "the rounded positions; 0: none", float_range=(0.0, 1e3))
        self.declare("plant_urdf", "", "simulate: URDF file of the robot the plant simulates "
                     "(same joints as the controller's robot; read at configure only; not "
                     "xacro); empty: the node's robot")
        self.declare("plant_friction_scale", 1.0, "simulate: the plant's URDF <dynamics> damping "
                     "and friction times this", float_range=(0.0, 1e6))
        self.declare("plant_mass_scale", 1.0, "simulate: the plant's bodies have this times "
                     "the URDF's mass and inertia (the controller's model is the URDF)",
                     float_range=(1e-6, 1e6))
        self.declare("plant_link_mass_scales", None, "simulate: per body, 'link: factor' "
                     "(times plant_mass_scale)", type_=ParameterType.PARAMETER_STRING_ARRAY)

    # ------------------------------------------------------------------ configure
    def plant_robot(self, robot):
        """The robot the plant integrates: `robot`, or the plant_urdf's, with the friction and
        mass scales (itself when none)."""
        robot = self._plant_source_robot(robot)
        scale = float(self.param("plant_mass_scale"))
        per_link = link_scales(self.param("plant_link_mass_scales"))
        self._mass_note = ""
        self._pd_problems = ""   # joints whose pd gains the step cannot keep stable (configure)
        if scale == 1.0 and not per_link:
            return robot
        factors = {name: scale * per_link.pop(name, 1.0) for name in robot.body_names}
        if per_link:
            raise ValueError(f"plant_link_mass_scales: {sorted(per_link)[:5]} are not moving "
                             f"bodies of the robot (bodies: {robot.body_names})")
        try:
            true_robot = scaled_mass_robot(robot, factors)
        except ValueError as exc:
            raise ValueError(f"plant_mass_scale / plant_link_mass_scales: {exc}") from None
        self._mass_note = f"x {scale:g}" + (
            f", per link {self.param('plant_link_mass_scales')}"
            if self.param("plant_link_mass_scales") else "")
        self.get_logger().info("model mismatch: the plant's body masses are "
                               f"{self._mass_note} the URDF's")
        return true_robot

    def _plant_source_robot(self, robot):
        """`robot`, or the robot of plant_urdf and plant_friction_scale (loaded with the node's
        robot options, its joints checked against `robot`'s)."""
        path = self.param("plant_urdf").strip()
        friction = float(self.param("plant_friction_scale"))
        self._plant_note = ""
        if not path and friction == 1.0:
            return robot
        what = f"plant_urdf '{path[:200]}'" if path else "the robot"
        try:
            xml = scaled_friction_urdf(path or self.robot_xml(), friction)
            plant = self.load_robot(xml, what)
            check_same_joints(robot, plant)
        except Exception as exc:   # ModelError, ValueError: configure fails, saying why
            raise ValueError(f"plant_urdf / plant_friction_scale: {exc}") from None
        self._plant_note = ", ".join(x for x in (
            f"plant_urdf {path[:200]}" if path else "",
            f"friction x {friction:g}" if friction != 1.0 else "") if x)
        self.get_logger().info(f"model mismatch: the plant simulates {self._plant_note}")
        return plant

    def pd_gain_vectors(self, drives, q0):
        """(Kp, Kd) (n,) of drive_pd_kp / drive_pd_kd, their 0 entries derived at q0."""
        n = len(drives.joints)
        kp = gain_vector(self.param("drive_pd_kp"), n, "drive_pd_kp")
        kd = gain_vector(self.param("drive_pd_kd"), n, "drive_pd_kd")
        derived_kp, derived_kd = pd_gains(drives.robot, q0, drives.iv,
                                          self.param("drive_pd_bandwidth_hz"))
        return np.where(kp > 0.0, kp, derived_kp), np.where(kd > 0.0, kd, derived_kd)

    def configure_drives(self, plant, q0):
        """The drive model and actuator lag of the parameters on plant.drives; the joint
        sensors (self.sensors, None when all are off)."""
        drives = plant.drives
        self._pd_q0 = np.array(q0, dtype=float)
        kp, kd = self.pd_gain_vectors(drives, self._pd_q0)
        drives.set_model(self.param("drive_model"), kp, kd)
        self.check_pd_sampling(plant, q0)
        drives.set_actuator_bandwidth(self.param("actuator_bandwidth_hz"))
        n = len(self.jmap.state_names)
        sensors = JointSensors(n, plant.dt, self.param("measurement_noise_position"),
                               self.param("measurement_noise_velocity"),
                               self.param("measurement_delay_cycles"),
                               self.param("encoder_resolution"), self.param("noise_seed"))
        self.sensors = sensors if sensors.active else None
        self._sensor_q = np.zeros(n)
        self._sensor_v = np.zeros(n)
        if self.sensors is not None:   # numba compiles (or loads) the kernel now, not in a cycle
            sensors.measure(self._sensor_q, self._sensor_v)
        self.reset_sensors(plant.q, plant.v)

    def check_pd_sampling(self, plant, q):
        """Warn (and show in /diagnostics) when "pd" gains exceed what the plant's step can keep
        stable at the configuration q (JointDrives.pd_sampling_problems): accepted, as a
        servo's gains are, but the plant would diverge and halt."""
        drives = plant.drives
        try:
            problems = drives.pd_sampling_problems(drives.robot.mass_matrix(q), plant.dt)
        except ValueError:   # no positive-definite M at q: nothing to judge here
            problems = []
        self._pd_problems = ", ".join(joint for joint, _ in problems)
        if problems:
            self.get_logger().warning(
                f"drive_model pd: gains no {plant.dt * 1e3:g} ms step keeps stable: "
                + "; ".join(f"{joint}: {text}" for joint, text in problems[:8])
                + " (the plant would diverge and halt: lower the gains or raise rate_hz)")

    # ------------------------------------------------------------------ cycle
    def reset_sensors(self, q, v):
        """The sensors start again at the state q (nq,), v (nv,) (reset, set_state)."""
        if self.sensors is None:
            return
        self.jmap.state_positions(q, self._sensor_q)
        self.jmap.state_values(v, self._sensor_v)
        self.sensors.reset(self._sensor_q, self._sensor_v)

    def measure_joint_states(self, position, velocity):
        """In place: a joint_states message's position and velocity fields (the true state of
        state_names) become what the sensors report."""
        q_seen, v_seen = self.sensors.measure(position, velocity)
        position[:] = q_seen
        velocity[:] = v_seen

    def measure_silent_cycle(self):
        """A cycle that publishes nothing (a catch-up step) still takes its sample: the delay
        is counted in cycles of simulated time, published or not."""
        self.jmap.state_positions(self.plant.q, self._sensor_q)
        self.jmap.state_values(self.plant.v, self._sensor_v)
        self.sensors.measure(self._sensor_q, self._sensor_v)

    def drive_diagnostics(self):
        drives = self.plant.drives
        values = [("drive model", drives.model)]
        if drives.bandwidth.any():
            values.append(("actuator bandwidth [Hz]", f"{float(drives.bandwidth.max()):g}"))
        s = self.sensors
        if s is not None:
            values.append(("measurement", f"noise {s.noise_position:g} / {s.noise_velocity:g}, "
                                          f"delay {s.delay_cycles} cycles, encoder "
                                          f"{s.resolution:g}"))
        if self._pd_problems:
            values.append(("pd gains unstable at this rate", self._pd_problems))
        if self._mass_note:
            values.append(("mass scale", self._mass_note))
        if self._plant_note:
            values.append(("plant model", self._plant_note))
        return values

    # ------------------------------------------------------------------ runtime
    def drive_parameter(self, name, value):
        """Apply a runtime change of a drive-model parameter; an error text, None when applied,
        or NotImplemented for other parameters."""
        drives = self.plant.drives
        if name == "drive_model":
            drives.set_model(value)
            self.check_pd_sampling(self.plant, self.plant.q)
            return None
        if name in ("drive_pd_kp", "drive_pd_kd", "drive_pd_bandwidth_hz"):
            values = {"drive_pd_kp": self.param("drive_pd_kp"),
                      "drive_pd_kd": self.param("drive_pd_kd"),
                      "drive_pd_bandwidth_hz": self.param("drive_pd_bandwidth_hz"), name: value}
            n = len(drives.joints)
            try:
                kp = gain_vector(values["drive_pd_kp"], n, "drive_pd_kp")
                kd = gain_vector(values["drive_pd_kd"], n, "drive_pd_kd")
                derived_kp, derived_kd = pd_gains(drives.robot, self._pd_q0, drives.iv,
                                                  values["drive_pd_bandwidth_hz"])
            except ValueError as exc:
                return f"{exc} (joints: {drives.joints})"
            drives.set_model(drives.model, np.where(kp > 0.0, kp, derived_kp),
                             np.where(kd > 0.0, kd, derived_kd))
            self.check_pd_sampling(self.plant, self.plant.q)
            return None
        if name == "actuator_bandwidth_hz":
            drives.set_actuator_bandwidth(value)
            return None
        return NotImplemented
