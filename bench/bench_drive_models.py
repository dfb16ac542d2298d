"""Drive models of the simulated plant (docs/plant.md "Drive models"): what they cost per step
and what they do to a computed-torque loop's tracking error. Run by hand, not a test.

    PYTHONPATH=. python bench/bench_drive_models.py [--rounds N] [--seconds S] [--out FILE]

1. Cost, interleaved in one process (common.time_interleaved), the sample arm7 at 1 ms steps
   (RK4, URDF limits) holding a pose: Plant.step with the "ideal" drives (model compensation:
   M, 1 / diag(M^-1), ID per step), with "pd" drives (none of those), "pd" + a 500 Hz actuator
   lag, and JointSensors.measure of 7 joints (encoder, noise, 1 cycle of delay); ratios to
   "ideal".
2. Tracking, in lockstep (no processes, no scheduling: the numbers are the models' alone): the
   hil-demo's loop, computed torque (kp 400, kd 40, the controller's model = the URDF) on the
   reference of config/arm7_reference.yaml at 1 kHz, effort commands held over the step, over
   the exact plant and over the plant of config/arm7_drives.yaml (each option alone, then all):
   rms and max of q_ref - q (true) and of q_ref - q_seen (what the controller sees).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

import common  # noqa: E402
import mbd_ros  # noqa: E402
from mbd_ros.simulation.mismatch import scaled_mass_robot  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402
from mbd_ros.simulation.sensors import JointSensors  # noqa: E402

ARM = common.REPO / "urdf" / "arm7.urdf"
CONFIG = common.REPO / "config"
Q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])


def params(name):
    return yaml.safe_load((CONFIG / name).read_text())["/**"]["ros__parameters"]


def cost(robot, rounds):
    plants = {}
    for label, model, lag in (("ideal", "ideal", 0.0), ("pd", "pd", 0.0),
                              ("pd + 500 Hz lag", "pd", 500.0)):
        plant = Plant(robot, 1e-3, "rk4", q=Q0)
        plant.drives.set_model(model, q=Q0)
        plant.drives.set_actuator_bandwidth(lag)
        plant.drives.command_position(Q0)
        plants[label] = plant
    sensors = JointSensors(7, 1e-3, 1e-5, 0.0, 1, 2.4e-5, 1)
    z = np.zeros(7)
    namespace = {"plants": plants, "sensors": sensors, "q": Q0.copy(), "z": z}
    stmts = {label: f"plants[{label!r}].step()" for label in plants}
    stmts["sensors.measure (7 joints)"] = "sensors.measure(q, z)"
    return common.time_interleaved(stmts, namespace, rounds=rounds)


def reference(t, ref):
    """q, v, a of the reference publisher's swing: center + A (1 - cos(2 pi f t))."""
    c, a, f = (np.asarray(ref[k], dtype=float) for k in ("center", "amplitude", "frequency_hz"))
    w = 2.0 * math.pi * f
    return c + a * (1.0 - np.cos(w * t)), a * w * np.sin(w * t), a * w * w * np.cos(w * t)


def track(robot, drives, seconds, ref):
    """(rms, max) of the true and of the seen tracking error of the lockstep loop."""
    true_robot = scaled_mass_robot(robot, drives.get("plant_mass_scale", 1.0))
    plant = Plant(true_robot, 1e-3, "rk4", q=Q0)
    plant.drives.set_actuator_bandwidth(drives.get("actuator_bandwidth_hz", 0.0))
    sensors = JointSensors(7, 1e-3, drives.get("measurement_noise_position", 0.0),
                           drives.get("measurement_noise_velocity", 0.0),
                           drives.get("measurement_delay_cycles", 0),
                           drives.get("encoder_resolution", 0.0), drives.get("noise_seed", 0))
    sensors.reset(plant.q, plant.v)
    kp, kd = 400.0, 40.0
    true_err, seen_err = [], []
    for k in range(int(round(seconds / 1e-3))):
        t = k * 1e-3
        q_seen, v_seen = sensors.measure(plant.q, plant.v)
        q_ref, v_ref, a_ref = reference(t, ref)
        qdd = a_ref + kd * (v_ref - v_seen) + kp * (q_ref - q_seen)
        plant.drives.command_effort(robot.inverse_dynamics(q_seen, v_seen, qdd))
        if t >= 1.0:   # after the start-up transient, as the demo measures
            true_err.append(q_ref - plant.q)
            seen_err.append(q_ref - q_seen)
        plant.step()
    out = []
    for e in (np.array(true_err), np.array(seen_err)):
        out += [float(np.sqrt(np.mean(e ** 2))), float(np.max(np.abs(e)))]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    robot = mbd_ros.load(str(ARM))
    md = ["## Drive models: cost per step and tracking error", "",
          common.machine_markdown(common.this_command()),
          f"- lscpu model name: {common.lscpu_model_name()}", ""]
    times = cost(robot, args.rounds)
    base = times["ideal"]["median"]
    rows = [[k, common.fmt_us(v["min"]), common.fmt_us(v["median"]),
             common.fmt_ratio(v["median"] / base)] for k, v in times.items()]
    md += ["### Cost (arm7, RK4, 1 ms, holding a pose)", "",
           common.md_table(["case", "min [us]", "median [us]", "median / ideal"], rows), ""]
    ref = params("arm7_reference.yaml")
    drives = params("arm7_drives.yaml")
    cases = {"exact plant": {},
             "mass x 1.05": {"plant_mass_scale": drives["plant_mass_scale"]},
             "500 Hz actuator lag": {"actuator_bandwidth_hz": drives["actuator_bandwidth_hz"]},
             "encoder + noise + 1 cycle delay": {k: drives[k] for k in (
                 "encoder_resolution", "measurement_noise_position",
                 "measurement_noise_velocity", "noise_seed", "measurement_delay_cycles")},
             "all of config/arm7_drives.yaml": drives}
    rows = []
    for label, case in cases.items():
        rms, top, seen_rms, seen_top = track(robot, case, args.seconds, ref)
        rows.append([label, f"{rms * 1e3:.4g}", f"{top * 1e3:.4g}", f"{seen_rms * 1e3:.4g}",
                     f"{seen_top * 1e3:.4g}"])
    md += [f"### Tracking (computed torque kp 400 kd 40 on the URDF, lockstep 1 kHz, "
           f"{args.seconds:g} s, error from t = 1 s)", "",
           common.md_table(["plant", "true rms [mrad]", "true max [mrad]", "seen rms [mrad]",
                            "seen max [mrad]"], rows), ""]
    return common.finish_report(md, [], [], args.out)


if __name__ == "__main__":
    sys.exit(main())
