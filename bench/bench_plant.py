"""Cost of one simulated-plant step (mbd_ros.plant.Plant: drives, limits, contact) against the
bare integrator step and against Pinocchio's forward dynamics + integrate (the peer), interleaved
in one process, reported as µs per step and ratios.

    PYTHONPATH=. python bench/bench_plant.py [--rounds N] [--out FILE]

Cases (1 ms steps, semi-implicit Euler):
- ur5: `Simulator.step` (no limits) | `Plant.step` with effort commands (limits: velocity
  envelope + effort clip) | `Plant.step` with position drives | Pinocchio `aba` + `integrate`;
- arm7 resting on its position stops (the stop projection runs every step);
- solo12 standing on its feet: ground contact (4 feet), position drives, 2 substeps;
- the double wishbone (closed loop + strut, RK4, URDF limits, the forward dynamics node's
  plant): `Plant.step` through its one compiled call vs the same plant on the Python path
  (`compiled=False`), after checking that both give the same state over 1000 steps.
Every Plant above takes the compiled call where it can (the line after the table says which
did, or why not); solo12 (quaternion base, contact hook) keeps the Python path.
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
from mbd_ros.simulation.contact import ContactPoint, GroundContact  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402
from mbd_ros.robot.integrators import Simulator  # noqa: E402

STANDING = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6, "HL_HAA": 0.1, "HL_HFE": -0.8,
            "HL_KFE": 1.6, "FR_HAA": -0.1, "FR_HFE": 0.8, "FR_KFE": -1.6, "HR_HAA": -0.1,
            "HR_HFE": -0.8, "HR_KFE": 1.6}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    import pinocchio as pin
    md = ["## Plant step (drives, limits, contact) vs the bare step and Pinocchio", "",
          common.machine_markdown(common.this_command()), ""]
    rows, notes, failures = [], [], []
    dt = 1e-3

    # ---- ur5: free motion, limits on, drives
    xml, floating, n = common.robot_xml("ur5")
    notes += n
    ur5 = mbd_ros.load(xml)
    model = pin.buildModelFromXML(xml)
    data = model.createData()
    q0 = np.array([0.0, -1.0, 1.0, 0.0, 0.5, 0.0])
    sim = Simulator(ur5, dt, q=q0)
    effort = Plant(ur5, dt, q=q0)
    effort.drives.command_effort(np.full(6, 1.0))
    drives = Plant(ur5, dt, q=q0)
    drives.drives.command_position(q0 + 0.1)
    zero = np.zeros(6)
    state = {"q": q0.copy(), "v": np.zeros(6)}

    def pin_step():
        a = pin.aba(model, data, state["q"], state["v"], zero)
        state["v"] = state["v"] + dt * a
        state["q"] = pin.integrate(model, state["q"], dt * state["v"])
    ns = {"sim": sim, "effort": effort, "drives": drives, "zero": zero, "pin_step": pin_step}
    t = common.time_interleaved({
        "Simulator.step": "sim.step(zero)",
        "Plant.step, effort": "effort.step()",
        "Plant.step, position drives": "drives.step()",
        "Pinocchio aba + integrate": "pin_step()"}, ns, rounds=args.rounds)
    peer = t["Pinocchio aba + integrate"]["median"]
    for label, r in t.items():
        rows.append(["ur5", label, common.fmt_us(r["median"]), common.fmt_us(r["min"]),
                     common.fmt_ratio(r["median"] / peer)])

    # ---- arm7 on its stops
    arm7 = mbd_ros.load(str(common.REPO / "urdf" / "arm7.urdf"))
    resting = Plant(arm7, dt)
    for _ in range(3000):
        resting.step()
    stops_before = resting.limits.stops
    t = common.time_interleaved({"Plant.step, resting on stops": "resting.step()",
                                 "Simulator.step": "bare.step(zero7)"},
                                {"resting": resting, "bare": Simulator(arm7, dt),
                                 "zero7": np.zeros(7)}, rounds=args.rounds)
    notes.append(f"arm7 resting: the stop projection ran in "
                 f"{resting.limits.stops - stops_before} of the timed steps (all of them: "
                 "every step corrects a joint on its stop)")
    base = t["Simulator.step"]["median"]
    for label, r in t.items():
        rows.append(["arm7", label, common.fmt_us(r["median"]), common.fmt_us(r["min"]),
                     f"{r['median'] / base:.2f} x bare step"])

    # ---- solo12 standing
    erd = common.example_robot_data_dir()
    solo = mbd_ros.load(str(erd / common.ROBOTS["solo12"][0]), floating_base=True)
    q = solo.neutral()
    for name, value in STANDING.items():
        q[solo.idx_q[solo.joint_names.index(name)]] = value
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    q[2] = 0.016 - min(solo.link_pose(q, f)[2, 3] for f in feet)
    contact = GroundContact(solo, [ContactPoint(f, (0, 0, 0), 0.016) for f in feet])
    standing = Plant(solo, dt, q=q, joints=list(STANDING), forces=[contact], substeps=2,
                     kp=1e4, kd=200.0)
    standing.drives.command_position(q[standing.drives.iq])
    for _ in range(2000):
        standing.step()
    t = common.time_interleaved({"Plant.step, contact + drives, 2 substeps": "standing.step()",
                                 "contact force (one evaluation)": "contact(0.0, sq, sv)",
                                 "Simulator.step": "bare.step(zero18)"},
                                {"standing": standing, "contact": contact, "sq": standing.q,
                                 "sv": standing.v, "bare": Simulator(solo, dt, q=q),
                                 "zero18": np.zeros(18)}, rounds=args.rounds)
    base = t["Simulator.step"]["median"]
    for label, r in t.items():
        rows.append(["solo12", label, common.fmt_us(r["median"]), common.fmt_us(r["min"]),
                     f"{r['median'] / base:.2f} x bare step"])

    # ---- double wishbone: compiled call vs the Python path
    cfg = str(common.REPO / "config" / "double_wishbone.yaml")
    urdf = str(common.REPO / "urdf" / "double_wishbone.urdf")
    fast = Plant(mbd_ros.load(urdf, closures=cfg, forces=cfg), dt, "rk4")
    slow = Plant(mbd_ros.load(urdf, closures=cfg, forces=cfg), dt, "rk4", compiled=False)
    for _ in range(1000):
        fast.step()
        slow.step()
    difference = max(float(np.abs(fast.q - slow.q).max()), float(np.abs(fast.v - slow.v).max()))
    notes.append(f"double wishbone: compiled vs Python path after 1000 steps: max |difference| "
                 f"of q and v {difference:.1e} (same kernels in the same order)")
    if difference > 1e-12:
        failures.append(f"double wishbone: the compiled step differs from the Python path by "
                        f"{difference:.1e}")
    t = common.time_interleaved({"Plant.step, compiled call": "fast.step()",
                                 "Plant.step, Python path": "slow.step()"},
                                {"fast": fast, "slow": slow}, rounds=args.rounds)
    base = t["Plant.step, Python path"]["median"]
    for label, r in t.items():
        rows.append(["double wishbone", label, common.fmt_us(r["median"]),
                     common.fmt_us(r["min"]), f"{r['median'] / base:.2f} x Python path"])
    md += [common.md_table(["robot", "step", "median µs", "min µs", "ratio"], rows), ""]
    md += ["Compiled call: " + "; ".join(
        f"{name}: " + ("yes" if plant.compiled_steps else
                       f"no ({plant.compiled_reason or 'a force hook'})") for name, plant in
        (("ur5 effort", effort), ("arm7 resting", resting), ("solo12", standing),
         ("double wishbone", fast))), ""]
    return common.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
