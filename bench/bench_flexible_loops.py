"""Closed loops on a flexible tree: the compiled forward dynamics (kernels/flexible_loop_dynamics.py,
robot.forward_dynamics' default there) against the same dense solve in numpy (method="kkt",
robot/constraints.py `_kkt`, which every call took before), in one process, interleaved.

    PYTHONPATH=. python bench/bench_flexible_loops.py [--rounds 30]

The sample flexible four-bar (urdf/flexible_fourbar.urdf + config/flexible_fourbar.yaml: 3 joints,
a 4-mode beam, a spherical cut at its deformed tip), at an assembled state, the crank turning at
2 rad/s and the other velocities on the loop (robot.project_velocity), 0.5 N m on the crank:

- forward_dynamics from Python: compiled (default) vs method="kkt";
- the kernel alone in a numba loop, and its loop rows (g, G, gamma: 9 flexible kinematics
  passes) alone;
- robot.step per step, RK4 and semi-implicit Euler at dt = 1e-4 (robot.rollout's reference
  engine), with the compiled solve vs with numpy's (the same robot with the loops'
  `compiled_kkt` switched off, as before), and robot.rollout's compiled engine
  (kernels/rollout_flexible_loops.py) per step;
- a semi-implicit Euler rollout with the Plant's position drive on the crank (its
  loop-consistent compensation at every row) and the URDF limits, per step: the compiled engine
  vs the reference engine (robot.step repeated, the drive terms in Python: robot.rollout ran
  these in Python before the compiled compensation);
- the sample with config/flexible_fourbar_forces.yaml (a spring-damper to the beam's deformed
  mid-point, a crank spring): an RK4 rollout per step, compiled vs reference engine;
- an implicit Euler rollout at dt = 1 ms (RK4 diverges there on the stiff beam) and a
  symplectic Euler rollout at dt = 1e-4 s, per step: the compiled engine vs the reference engine.

Prints the CPU model, the load average, and medians / minima in µs.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

from numba import njit  # noqa: E402

import mbd_ros  # noqa: E402
from mbd_ros.kernels import flexible_loop_dynamics as fld  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def _kernel_loop(n, tree, ends, cut_int, cut_data, workspace, q, v, tau, residual, jacobian, out,
                 lam, info):
    for _ in range(n):
        fld.flexible_loop_forward_dynamics(tree, ends, cut_int, cut_data, workspace, q, v, tau,
                                           0.0, 0.0, residual, jacobian, out, lam, info)


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def _rows_loop(n, tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian, gv, gamma):
    for _ in range(n):
        fld.flexible_loop_rows(tree, ends, cut_int, cut_data, workspace, q, v, residual, jacobian,
                               gv, gamma)


def load(forces=None):
    config = REPO / "config" / "flexible_fourbar.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(REPO / "urdf" / "flexible_fourbar.urdf", closures=config,
                            flexible=config, forces=forces)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    print("load average before:", [round(x, 2) for x in os.getloadavg()])
    print("CPU (lscpu):", C.lscpu_model_name(), ";", C.cpu_model())
    robot, before = load(), load()
    before._constraints.loops.compiled_kkt = False      # every call through numpy's _kkt
    q = robot.assemble(robot.neutral())
    crank = np.zeros(robot.nv)
    crank[0] = 2.0
    v = robot.project_velocity(q, crank)     # the crank at 2 rad/s, the rest on the loop
    tau = np.zeros(robot.nv)
    tau[0] = 0.5
    qdd = robot.forward_dynamics(q, v, tau)
    qdd_numpy = before.forward_dynamics(q, v, tau)
    print(f"compiled vs numpy: max |dqdd| {np.abs(qdd - qdd_numpy).max():.2g} "
          f"(|qdd| {np.abs(qdd).max():.3g})")
    loops = robot._constraints.loops
    n_rows = loops.n_constraints
    out, lam = np.zeros(robot.nv), np.zeros(n_rows)
    gv, gamma = np.zeros(n_rows), np.zeros(n_rows)
    kernel_args = (loops.tree_args, loops.end_args, loops.cut_int, loops.cut_data,
                   loops.workspace, q, v, tau, loops.residual, loops.jacobian, out, lam,
                   loops.kkt_info)
    rows_args = (loops.tree_args, loops.end_args, loops.cut_int, loops.cut_data,
                 loops.workspace, q, v, loops.residual, loops.jacobian, gv, gamma)
    _kernel_loop(1, *kernel_args)
    _rows_loop(1, *rows_args)
    n = 2000

    def kernel():
        _kernel_loop(n, *kernel_args)

    def rows():
        _rows_loop(n, *rows_args)

    per_call = C.time_interleaved(
        {"forward_dynamics, compiled (default)": "robot.forward_dynamics(q, v, tau)",
         "forward_dynamics, numpy (method='kkt')": "robot.forward_dynamics(q, v, tau, "
                                                   "method='kkt')"},
        {"robot": robot, "q": q, "v": v, "tau": tau}, rounds=args.rounds)
    loops_timed = C.time_calls_interleaved({"kernel in a numba loop": kernel,
                                            "loop rows alone in a numba loop": rows},
                                           rounds=args.rounds, pause=0.0)
    steps = {}
    for integrator in ("rk4", "semi_implicit_euler"):
        for label, r in (("compiled", robot), ("numpy", before)):
            def run(r=r, integrator=integrator):
                state_q, state_v = q, v
                for _ in range(args.steps):
                    state_q, state_v = r.step(state_q, state_v, tau, 1e-4,
                                              integrator=integrator)
            steps[f"robot.step {integrator}, {label} solve"] = run
    tau_rows = np.tile(tau, (args.steps, 1))
    for integrator in ("rk4", "semi_implicit_euler"):
        def rollout(integrator=integrator):
            result = robot.rollout(q, v, tau_rows, 1e-4, integrator=integrator,
                                   engine="compiled")
            assert result.status == "ok"
        rollout()
        steps[f"robot.rollout {integrator}, compiled engine"] = rollout
    stepped = C.time_calls_interleaved(steps, rounds=max(5, args.rounds // 3), pause=0.0)
    drives = {"joints": ["crank_joint"],
              "position": q[0] + 0.1 * np.sin(np.linspace(0.0, 2 * np.pi, args.steps))[:, None]}
    driven = {}
    for engine in ("compiled", "reference"):
        def driven_rollout(engine=engine):
            result = robot.rollout(q, v, np.zeros_like(tau_rows), 1e-4,
                                   integrator="semi_implicit_euler", drives=drives, limits=True,
                                   engine=engine)
            assert result.status == "ok"
        driven_rollout()
        driven[f"robot.rollout semi_implicit_euler, drives + limits, {engine} engine"] = \
            driven_rollout
    for engine in ("compiled", "reference"):
        for integrator, dt, label in (("implicit_euler", 1e-3, "implicit_euler at 1 ms"),
                                      ("symplectic_euler", 1e-4, "symplectic_euler")):
            def stiff_rollout(engine=engine, integrator=integrator, dt=dt):
                result = robot.rollout(q, v, tau_rows, dt, integrator=integrator, engine=engine)
                assert result.status == "ok"
            stiff_rollout()
            driven[f"robot.rollout {label}, {engine} engine"] = stiff_rollout
    sprung = load(forces=REPO / "config" / "flexible_fourbar_forces.yaml")
    for engine in ("compiled", "reference"):
        def sprung_rollout(engine=engine):
            result = sprung.rollout(q, v, tau_rows, 1e-4, integrator="rk4", engine=engine)
            assert result.status == "ok"
        sprung_rollout()
        driven[f"robot.rollout rk4 with force elements, {engine} engine"] = sprung_rollout
    driven_timed = C.time_calls_interleaved(driven, rounds=max(5, args.rounds // 3), pause=0.0)
    projected = []
    original = type(robot._constraints).project_state

    def counting(self, *a, **k):
        projected.append(1)
        return original(self, *a, **k)

    type(robot._constraints).project_state = counting
    for integrator in ("rk4", "semi_implicit_euler"):
        projected.clear()
        robot.rollout(q, v, tau_rows, 1e-4, integrator=integrator, engine="reference")
        print(f"{integrator}: robot.step projects after {len(projected)} of {args.steps} steps")
    type(robot._constraints).project_state = original
    print(f"\nforward dynamics per step: RK4 4, semi-implicit Euler 1; the kernel "
          f"{loops_timed['kernel in a numba loop']['median'] / n:.2f} µs")
    print(f"\nflexible four-bar (nv {robot.nv}, {n_rows} loop rows); medians (minima), µs\n")
    print("| call | µs |\n|---|---:|")
    for label, t in per_call.items():
        print(f"| {label} | {t['median']:.2f} ({t['min']:.2f}) |")
    for label, t in loops_timed.items():
        print(f"| {label} | {t['median'] / n:.2f} ({t['min'] / n:.2f}) |")
    for label, t in stepped.items():
        print(f"| {label}, per step | {t['median'] / args.steps:.1f} "
              f"({t['min'] / args.steps:.1f}) |")
    for label, t in driven_timed.items():
        print(f"| {label}, per step | {t['median'] / args.steps:.1f} "
              f"({t['min'] / args.steps:.1f}) |")
    print("\nload average after:", [round(x, 2) for x in os.getloadavg()])


if __name__ == "__main__":
    main()
