"""Per-step cost of simulating the sample arm7 (urdf/arm7.urdf, 7 revolute joints) with mbd_ros
against MuJoCo's `mujoco.rollout.rollout`, at the same integrator and step, interleaved in one
process. Run it in the bench venv that has MuJoCo (never a dependency of the package):

    make bench-mujoco                                  # creates .venv-bench (mbd_ros + mujoco)
    .venv-bench/bin/python bench/bench_mujoco.py [--steps 1000] [--rounds 30] [--out FILE]

Same model on both sides: the same URDF text, its <dynamics> elements (joint damping and
friction) removed and mbd_ros loaded with passive_forces=False (no passive joint forces on
either side); MuJoCo with contacts and every other constraint (its joint limits) disabled;
gravity (0, 0, -9.81) on both; no control input (tau = 0). The inertias are checked first: the
joint-space mass matrices and bias forces agree at random configurations to round-off.

Integrators, dt = 1 ms:
- RK4: MuJoCo's mjINT_RK4 is the classical Runge-Kutta scheme on (qpos, qvel); ours is
  "rk4" (robot/integrators.py): the same tableau and stage states, so for revolute joints
  both compute the same sequence up to round-off.
- Euler: MuJoCo's mjINT_EULER is semi-implicit Euler (v+ = v + h a, q+ = q + h v+) with the
  joint damping taken implicitly; with no damping (as here) it is plain semi-implicit Euler,
  which is ours "semi_implicit_euler".
Since each pair is the same method, the 1 s trajectories must agree far below the methods' own
error: the script measures that error against a reference (ours, RK4 at dt / 20) and requires
max |q_mujoco - q_ours| <= 1e-3 x it (and <= 1e-8 rad), else it exits with status 1.

Timed, per simulated step (T steps of one trajectory per call, from the same start state):
- `mujoco.rollout.rollout` (one trajectory, nstep = T; its C loop) and, for reference, mj_step
  called with nstep = T (also one C call);
- ours: robot.rollout(q0, v0, tau, dt, integrator) when this mbd_ros has it (one call for T
  steps; also on the robot loaded with codegen=True, its generated kernels),
  `Simulator.step(tau)` in a Python loop (the C-level RK4 step, KernelCall.rk4, for RK4), and
  robot.step (the public per-step call, returning copies) in a Python loop.
Ratios: ours / mujoco.rollout (target of issue "Simulation at scale": <= 0.3).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import common  # noqa: E402
import mbd_ros  # noqa: E402
from mbd_ros.robot.integrators import Simulator  # noqa: E402

TARGET = 0.3          # ours / mujoco.rollout per step
DT = 1e-3
Q0 = np.array([0.3, -0.6, 0.4, 1.1, -0.5, 0.7, 0.2])   # away from every limit; gravity moves it
OURS_OF = {"rk4": "rk4", "euler": "semi_implicit_euler"}


def urdf_text():
    """arm7's URDF without <dynamics> (damping, friction): both sides simulate the same
    conservative robot."""
    text = (common.REPO / "urdf" / "arm7.urdf").read_text()
    text, n = re.subn(r"<dynamics[^>]*/>", "", text)
    assert n == 7, n
    return text


def mujoco_model(text, integrator):
    import mujoco
    model = mujoco.MjModel.from_xml_string(text)
    model.opt.timestep = DT
    model.opt.integrator = {"rk4": mujoco.mjtIntegrator.mjINT_RK4,
                            "euler": mujoco.mjtIntegrator.mjINT_EULER}[integrator]
    model.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT
                               | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    model.opt.gravity[:] = (0.0, 0.0, -9.81)
    return model


def index_maps(robot, model):
    """qpos addresses of our joints (by name; all hinge joints, qpos index = dof index)."""
    iq = np.array([model.joint(name).qposadr[0] for name in robot.joint_names])
    iv = np.array([model.joint(name).dofadr[0] for name in robot.joint_names])
    assert model.nq == robot.nq == model.nv == robot.nv, (model.nq, robot.nq)
    return iq, iv


def check_model(robot, model, iq, iv, rng):
    """max relative error of M(q) and of the bias b(q, v) (ours: ID(q, v, 0); MuJoCo:
    qfrc_bias) over random states."""
    import mujoco
    data = mujoco.MjData(model)
    worst = 0.0
    for _ in range(20):
        q = rng.uniform(-2.0, 2.0, robot.nq)
        v = rng.uniform(-2.0, 2.0, robot.nv)
        data.qpos[iq] = q
        data.qvel[iv] = v
        mujoco.mj_forward(model, data)
        m = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, m)
        m = m[np.ix_(iv, iv)]
        ours_m = robot.mass_matrix(q)
        ours_b = robot.inverse_dynamics(q, v, np.zeros(robot.nv))
        worst = max(worst, common.rel_err(ours_m, m), common.rel_err(ours_b, data.qfrc_bias[iv]))
    return worst


def mujoco_trajectory(model, iq, iv, q0, steps):
    import mujoco
    data = mujoco.MjData(model)
    data.qpos[iq] = q0
    data.qvel[:] = 0.0
    out = np.zeros((steps + 1, model.nq))
    out[0] = data.qpos[iq]
    for k in range(steps):
        mujoco.mj_step(model, data)
        out[k + 1] = data.qpos[iq]
    return out


def ours_trajectory(robot, integrator, dt, q0, steps, every=1):
    sim = Simulator(robot, dt, integrator, q=q0)
    zero = np.zeros(robot.nv)
    out = np.zeros((steps // every + 1, robot.nq))
    out[0] = sim.q
    for k in range(steps):
        sim.step(zero)
        if (k + 1) % every == 0:
            out[(k + 1) // every] = sim.q
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000, help="steps per timed call")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out")
    args = parser.parse_args()
    import mujoco
    from mujoco import rollout
    md = ["## arm7 per simulation step: mbd_ros vs MuJoCo `rollout`", "",
          common.machine_markdown(common.this_command()), "",
          f"- MuJoCo {mujoco.__version__}; dt = {DT * 1e3:g} ms; {args.steps} steps per timed "
          f"call, {args.rounds} interleaved rounds (min / median per step)", ""]
    notes, failures = [], []
    text = urdf_text()
    robot = mbd_ros.load(str(common.REPO / "urdf" / "arm7.urdf"), passive_forces=False)
    # the same robot with generated kernels (docs/codegen.md), compiled once and cached
    generated = mbd_ros.load(str(common.REPO / "urdf" / "arm7.urdf"), passive_forces=False,
                             codegen=True)
    rng = np.random.default_rng(7)

    # ---- the same robot on both sides
    model = mujoco_model(text, "rk4")
    iq, iv = index_maps(robot, model)
    err = check_model(robot, model, iq, iv, rng)
    md.append(f"- model check: max relative difference of M(q) and b(q, v) over 20 random "
              f"states: {err:.1e}")
    if err > 1e-9:
        failures.append(f"the two models differ: M / b relative difference {err:.1e} > 1e-9")

    # ---- the same motion: 1 s from Q0 at rest; reference ours RK4 at dt / 20
    steps = int(round(1.0 / DT))
    reference = ours_trajectory(robot, "rk4", DT / 20, Q0, 20 * steps, every=20)[-1]
    rows = []
    for kind in ("rk4", "euler"):
        ours = ours_trajectory(robot, OURS_OF[kind], DT, Q0, steps)
        theirs = mujoco_trajectory(mujoco_model(text, kind), iq, iv, Q0, steps)
        method_error = float(np.abs(ours[-1] - reference).max())
        difference = float(np.abs(ours - theirs).max())
        bound = min(1e-3 * method_error, 1e-8)
        ok = difference <= bound
        rows.append([kind, OURS_OF[kind], f"{method_error:.2e}", f"{difference:.2e}",
                     f"{bound:.1e}", "ok" if ok else "**FAILED**"])
        if not ok:
            failures.append(f"{kind}: the trajectories differ by {difference:.2e} rad, more than "
                            f"{bound:.1e} (same method on both sides: round-off expected)")
    md += ["", "### Same motion (1 s from rest under gravity, no damping)", "",
           common.md_table(["MuJoCo integrator", "ours", "method error at 1 s, rad (vs RK4 "
                            "dt/20)", "max |q_mj - q_ours| over 1 s, rad", "bound", ""], rows), ""]

    # ---- per-step cost, interleaved
    T = args.steps
    zero = np.zeros(robot.nv)
    rows = []
    for kind in ("rk4", "euler"):
        integrator = OURS_OF[kind]
        m = mujoco_model(text, kind)
        d = mujoco.MjData(m)
        d.qpos[iq] = Q0
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state0 = np.zeros((1, mujoco.mj_stateSize(m, spec)))
        mujoco.mj_getState(m, d, state0[0], spec)
        out_state = np.zeros((1, T, state0.shape[1]))
        out_sensor = np.zeros((1, T, m.nsensordata))

        def mj_rollout(m=m, d=d, state0=state0, out_state=out_state, out_sensor=out_sensor):
            rollout.rollout(m, d, state0, nstep=T, state=out_state, sensordata=out_sensor)

        d_step = mujoco.MjData(m)

        def mj_step_n(m=m, d=d_step, state0=state0):
            mujoco.mj_setState(m, d, state0[0], spec)
            mujoco.mj_step(m, d, nstep=T)

        sim = Simulator(robot, DT, integrator, q=Q0)

        def ours_sim(sim=sim):
            sim.reset(Q0)
            for _ in range(T):
                sim.step(zero)

        def ours_step(integrator=integrator):
            q, v = Q0, zero
            robot.time = 0.0
            for _ in range(T):
                q, v = robot.step(q, v, zero, DT, integrator=integrator)

        funcs = {"mujoco.rollout.rollout": mj_rollout, "mj_step(nstep=T)": mj_step_n,
                 "ours Simulator.step loop": ours_sim, "ours robot.step loop": ours_step}
        if hasattr(robot, "rollout"):
            tau = np.zeros((T, robot.nv))

            def ours_rollout(integrator=integrator, tau=tau):
                # max_speed: the Simulator's bound (the undamped Euler motion is fast)
                return robot.rollout(Q0, zero, tau, DT, integrator=integrator, max_speed=1e4)
            result = ours_rollout()
            if result.status != "ok" or result.steps != T:
                failures.append(f"{kind}: robot.rollout stopped: {result.message}")
            ours = ours_trajectory(robot, integrator, DT, Q0, T)
            gap = float(np.abs(np.asarray(result[0]) - ours).max())
            notes.append(f"{kind}: robot.rollout vs Simulator.step over {T} steps: max |dq| "
                         f"{gap:.1e}")
            if gap > 1e-12:
                failures.append(f"{kind}: robot.rollout differs from Simulator.step by {gap:.1e}")
            funcs["ours robot.rollout"] = ours_rollout

            def ours_rollout_generated(integrator=integrator, tau=tau):
                return generated.rollout(Q0, zero, tau, DT, integrator=integrator,
                                         max_speed=1e4)
            gap = float(np.abs(np.asarray(ours_rollout_generated()[0]) - ours).max())
            notes.append(f"{kind}: robot.rollout with codegen vs Simulator.step (generic "
                         f"kernels): max |dq| {gap:.1e} (round-off: other operation order)")
            if gap > 1e-9:
                failures.append(f"{kind}: the generated robot's rollout differs by {gap:.1e}")
            funcs["ours robot.rollout, codegen"] = ours_rollout_generated
        t = common.time_calls_interleaved(funcs, rounds=args.rounds, pause=0.0)
        peer = t["mujoco.rollout.rollout"]["min"]
        # the verdict on the fastest of our whole-trajectory calls
        best = min((label for label in t if label.startswith("ours")),
                   key=lambda label: t[label]["min"])
        for label, r in t.items():
            ratio = r["min"] / peer
            cell = "" if not label.startswith("ours") else \
                common.target_verdict(ratio, TARGET) if label == best else f"{ratio:.2f}"
            rows.append([kind, label, f"{r['min'] / T:.2f}", f"{r['median'] / T:.2f}", cell])
    if not hasattr(robot, "rollout"):
        notes.append("robot.rollout is not in this mbd_ros: not timed")
    md += ["### Per step (µs), ratio ours / mujoco.rollout (min over rounds)", "",
           common.md_table(["integrator", "call", "min µs/step", "median µs/step",
                            "ratio"], rows), ""]
    notes.append("MuJoCo's Euler is semi-implicit Euler with implicit joint damping; with "
                 "the damping removed it is the same scheme as ours semi_implicit_euler")
    return common.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
