"""Cost of the ground contact of every link's <collision> geometry (mbd_ros.contact) against the
four declared feet it replaces as the plant's default, interleaved in one process, reported as
µs per call and ratios.

    PYTHONPATH=. python bench/bench_contact.py [--rounds N] [--out FILE]

Cases (solo12 standing on its position drives, RK4, 1 ms plant steps):
- one contact evaluation: 4 foot spheres | 136 mesh bounding-box corners (17 links);
- one plant step: 4 feet, 2 substeps (the old docs' setting) | every link, the automatic
  substeps (2) | every link + the PhysicalStateMonitor after each step (MonitoredPlant);
- the bare Simulator.step (no contact, no drives) as the unit.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import common  # noqa: E402
import mbd_ros  # noqa: E402
from mbd_ros.robot.integrators import Simulator  # noqa: E402
from mbd_ros.simulation.contact import (ContactPoint, GroundContact,  # noqa: E402
                                        contact_points_from_urdf)
from mbd_ros.simulation.physical_state import MonitoredPlant, PhysicalStateMonitor  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402

STANDING = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6, "HL_HAA": 0.1, "HL_HFE": -0.8,
            "HL_KFE": 1.6, "FR_HAA": -0.1, "FR_HFE": 0.8, "FR_KFE": -1.6, "HR_HAA": -0.1,
            "HR_HFE": -0.8, "HR_KFE": 1.6}
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]


def standing_plant(solo, contact, q, substeps, monitor=False):
    kwargs = dict(q=q, joints=list(STANDING), forces=[contact], substeps=substeps, kp=1e4,
                  kd=200.0)
    if monitor:
        plant = MonitoredPlant(solo, 1e-3, "rk4", monitor=PhysicalStateMonitor(solo, contact),
                               **kwargs)
    else:
        plant = Plant(solo, 1e-3, "rk4", **kwargs)
    plant.drives.command_position(q[plant.drives.iq])
    for _ in range(1000):      # settled on the ground
        plant.step()
    return plant


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    md = ["## Ground contact: every link's collision geometry vs four declared feet", "",
          common.machine_markdown(common.this_command()), ""]
    print("CPU:", common.lscpu_model_name())
    urdf = str(common.example_robot_data_dir() / common.ROBOTS["solo12"][0])
    solo = mbd_ros.load(urdf, floating_base=True)
    q = solo.neutral()
    for name, value in STANDING.items():
        q[solo.idx_q[solo.joint_names.index(name)]] = value
    q[2] = 0.016 - min(solo.link_pose(q, f)[2, 3] for f in FEET)
    feet = GroundContact(solo, [ContactPoint(f, (0, 0, 0), 0.016) for f in FEET])
    every = GroundContact(solo, contact_points_from_urdf(solo, urdf))
    every(0.0, q, np.zeros(solo.nv))
    q_every = q.copy()
    q_every[2] += max(0.0, every.max_penetration())
    substeps = every.substeps_for(1e-3, "rk4", q_every)
    feet_plant = standing_plant(solo, feet, q, 2)
    every_plant = standing_plant(solo, every, q_every, substeps)
    monitored = GroundContact(solo, every.points)
    monitored.substeps_for(1e-3, "rk4", q_every)
    every_monitored = standing_plant(solo, monitored, q_every, substeps, monitor=True)
    ns = {"feet": feet, "every": every, "fp": feet_plant, "ep": every_plant,
          "mp": every_monitored, "q": every_plant.q.copy(), "v": every_plant.v.copy(),
          "bare": Simulator(solo, 1e-3, "rk4", q=q), "zero": np.zeros(solo.nv)}
    t = common.time_interleaved({
        "contact evaluation, 4 feet": "feet(0.0, q, v)",
        f"contact evaluation, every link ({len(every.points)} features)": "every(0.0, q, v)",
        "Plant.step, 4 feet, 2 substeps": "fp.step()",
        f"Plant.step, every link, {substeps} substeps": "ep.step()",
        f"MonitoredPlant.step, every link, {substeps} substeps": "mp.step()",
        "Simulator.step (bare, RK4)": "bare.step(zero)"}, ns, rounds=args.rounds)
    unit = t["Simulator.step (bare, RK4)"]["median"]
    rows = [[label, common.fmt_us(r["median"]), common.fmt_us(r["min"]),
             f"{r['median'] / unit:.2f} x bare step"] for label, r in t.items()]
    md += [common.md_table(["call", "median µs", "min µs", "ratio"], rows), ""]
    notes = [f"every link: {len(every.points)} features (solo12's 17 mesh bounding boxes); "
             f"automatic substeps {substeps} (lightest effective mass "
             f"{every.effective_masses(q_every).min() * 1e3:.0f} g)"]
    return common.finish_report(md, notes, [], args.out)


if __name__ == "__main__":
    sys.exit(main())
