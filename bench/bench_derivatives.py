"""Per-call time of the analytic derivatives of the dynamics against Pinocchio's, interleaved in
one process (bench/common.py): Robot.inverse_dynamics_derivatives vs
pinocchio.computeRNEADerivatives and Robot.forward_dynamics_derivatives vs
pinocchio.computeABADerivatives, on example-robot-data robots, passive forces off (Pinocchio has
none), no external wrenches. Each call returns its three (nv, nv) matrices (Pinocchio's Python
binding returns its Data's matrices; computeABADerivatives fills data.ddq_dq, ddq_dv, Minv).
Results are checked against Pinocchio before timing (relative to the matrix norm, 1e-10).
Timed in process CPU time (time_interleaved_cpu), not wall time: on a shared machine the wall
clock counts the waits for a core.

    PYTHONPATH=. .venv/bin/python bench/bench_derivatives.py [--robots ur5 panda solo12]
        [--loops fourbar double_wishbone] [--rounds 200] [--out file.md]

Target: ours / Pinocchio <= 0.7 per call (generic kernels). The timed calls (allocating, and
out=) without f_ext are, from the second call, the C-level path (robot/fast_derivatives.py).
--codegen adds the same robot loaded with codegen=True ("gen" rows, in the same interleaved
rounds): its derivatives run the generated kernels (codegen/derivative_generator.py:
rnea_derivatives, aba_derivatives); target <= 0.35 x Pinocchio.

Closed-loop robots (--loops: the sample four-bar, the double wishbone with its strut, the
delta robot): the derivatives (KKT differentiation, robot/constrained_derivatives.py) per call
against the robot's own forward_dynamics per call (no Pinocchio counterpart of our loop
formalism is timed), at an assembled state; no target.
"""
from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_repo_to_path, finish_report, fmt_us, load_pair,  # noqa: E402
                    machine_markdown, md_table, random_state, robot_xml, target_verdict,
                    this_command)

add_repo_to_path()
ROOT = Path(__file__).resolve().parent.parent
# name: (urdf, closures file, forces file or None)
LOOPS = {"fourbar": ("fourbar.urdf", "fourbar_closures.yaml", None),
         "double_wishbone": ("double_wishbone.urdf", "double_wishbone.yaml",
                             "double_wishbone.yaml"),
         "delta3": ("delta3.urdf", "delta3_closures.yaml", None)}
TARGET = 0.7
CODEGEN_TARGET = 0.35
CHECK_RTOL = 1e-10
# the allocating call with the two previous results still held when the next is made: the C
# path can reuse neither block (KernelCall.blocks keeps two spares, mbd_ros/fastcall/_fastcall.c)
# and allocates a new one every call; the plain allocating statement drops each result at once
# (and a caller keeping only its previous result reuses the other spare)
KEPT = "kept.append({method}(q, v, x)); kept.pop(0)"


def time_interleaved_cpu(stmts, namespace, rounds, target_s=2e-3, warmup=3):
    """common.time_interleaved with the process's CPU time as the clock: on a machine shared
    with other jobs (load average above the core count) wall-clock samples include the time the
    process waits for a core, ~3x at a load of 6 on 2 cores; CPU time does not (the cache
    pollution by the other jobs remains). Each round times `number` calls of every statement,
    the order rotated every round. Returns {label: {"min", "median"}} in us."""
    timers = {k: timeit.Timer(s, timer=time.process_time, globals=namespace)
              for k, s in stmts.items()}
    for t in timers.values():
        t.timeit(warmup)
    est = max(min(t.timeit(20) for _ in range(3)) / 20 for t in timers.values())
    number = max(1, int(target_s / max(est, 1e-9)))
    samples = {k: [] for k in timers}
    labels = list(timers)
    for r in range(rounds):
        shift = r % len(labels)
        for k in labels[shift:] + labels[:shift]:
            samples[k].append(timers[k].timeit(number) / number)
    return {k: {"min": 1e6 * min(s), "median": 1e6 * float(np.median(s))}
            for k, s in samples.items()}


def rel_matrix_err(ours, ref):
    ref = np.asarray(ref)
    return float(np.max(np.abs(np.asarray(ours) - ref)) / max(np.linalg.norm(ref, 2), 1e-300))


def loop_rows(names, rounds):
    """Rows [robot, nv, rows, call, us, ratio to forward_dynamics] of the closed-loop robots."""
    import warnings

    import mbd_ros
    rows = []
    for name in names:
        urdf, closures, forces = LOOPS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            robot = mbd_ros.load(str(ROOT / "urdf" / urdf),
                                 closures=str(ROOT / "config" / closures),
                                 forces=None if forces is None else str(ROOT / "config" / forces))
        rng = np.random.default_rng(0)
        q = robot.assemble(robot.integrate(robot.neutral(), 0.05 * rng.standard_normal(robot.nv),
                                           1.0))
        v = robot.project_velocity(q, rng.standard_normal(robot.nv))
        tau = np.zeros(robot.nv) if not robot.actuated_joints else rng.standard_normal(robot.nv)
        qdd = robot.forward_dynamics(q, v, tau)
        ns = dict(robot=robot, q=q, v=v, tau=tau, qdd=qdd)
        stmts = {"forward_dynamics": "robot.forward_dynamics(q, v, tau)",
                 "forward_dynamics_derivatives": "robot.forward_dynamics_derivatives(q, v, tau)"}
        if robot.actuated_joints:   # a passive mechanism's inverse dynamics raises off tau = 0
            stmts["inverse_dynamics_derivatives"] = "robot.inverse_dynamics_derivatives(q, v, qdd)"
        times = time_interleaved_cpu(stmts, ns, rounds=rounds)
        base = times["forward_dynamics"]["median"]
        for call in stmts:
            t = times[call]["median"]
            rows.append([name, robot.nv, robot.n_constraints, call, fmt_us(t), f"{t / base:.0f}"])
    return rows


def main():
    import pinocchio as pin
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["ur5", "panda", "solo12", "talos_reduced"])
    parser.add_argument("--loops", nargs="*", default=list(LOOPS), choices=list(LOOPS))
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--codegen", action="store_true",
                        help="also time the robot loaded with codegen=True (generated kernels)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    md = ["## Derivatives of the dynamics: per call, ours vs Pinocchio", "",
          machine_markdown(this_command()), ""]
    notes, failures, rows = [], [], []
    rng = np.random.default_rng(0)
    for name in args.robots:
        xml, floating, robot_notes = robot_xml(name)
        notes += robot_notes
        robot, model, data, perm = load_pair(xml, floating)
        (q, v, x), (qp, vp, xp) = random_state(robot, perm, rng)
        ix = np.ix_(perm.v_inv, perm.v_inv)
        ours = robot.inverse_dynamics_derivatives(q, v, x)
        ref = pin.computeRNEADerivatives(model, data, qp, vp, xp)
        errs = [rel_matrix_err(o, np.asarray(r)[ix]) for o, r in zip(ours, ref)]
        ours = robot.forward_dynamics_derivatives(q, v, x)
        pin.computeABADerivatives(model, data, qp, vp, xp)
        minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        errs += [rel_matrix_err(o, np.asarray(r)[ix])
                 for o, r in zip(ours, (data.ddq_dq, data.ddq_dv, minv))]
        if max(errs) > CHECK_RTOL:
            failures.append(f"{name}: max relative error vs Pinocchio {max(errs):.2e} > {CHECK_RTOL:g}")
        outs = tuple(np.empty((robot.nv, robot.nv)) for _ in range(3))
        ns = dict(robot=robot, pin=pin, model=model, data=data, q=q, v=v, x=x, qp=qp, vp=vp, xp=xp,
                  outs=outs, kept=[None, None])
        stmts = {
            "ours ID": "robot.inverse_dynamics_derivatives(q, v, x)",
            "ours ID out=": "robot.inverse_dynamics_derivatives(q, v, x, out=outs)",
            "pin ID": "pin.computeRNEADerivatives(model, data, qp, vp, xp)",
            "ours FD": "robot.forward_dynamics_derivatives(q, v, x)",
            "ours FD out=": "robot.forward_dynamics_derivatives(q, v, x, out=outs)",
            "ours ID kept": KEPT.format(method="robot.inverse_dynamics_derivatives"),
            "ours FD kept": KEPT.format(method="robot.forward_dynamics_derivatives"),
            "pin FD": "pin.computeABADerivatives(model, data, qp, vp, xp)",
        }
        kinds = [("ours", "", TARGET, max(errs))]
        if args.codegen:
            import mbd_ros
            gen = ns["gen"] = mbd_ros.load(xml, floating_base=floating, passive_forces=False,
                                           codegen=True)
            gen_errs = [rel_matrix_err(o, r) for o, r in zip(
                gen.inverse_dynamics_derivatives(q, v, x)
                + gen.forward_dynamics_derivatives(q, v, x),
                robot.inverse_dynamics_derivatives(q, v, x)
                + robot.forward_dynamics_derivatives(q, v, x))]
            gen_errs = [e + max(errs) for e in gen_errs]   # vs generic, plus generic vs pin
            if max(gen_errs) > CHECK_RTOL:
                failures.append(f"{name} codegen: max relative error {max(gen_errs):.2e}")
            stmts.update({
                "gen ID": "gen.inverse_dynamics_derivatives(q, v, x)",
                "gen ID out=": "gen.inverse_dynamics_derivatives(q, v, x, out=outs)",
                "gen ID kept": KEPT.format(method="gen.inverse_dynamics_derivatives"),
                "gen FD": "gen.forward_dynamics_derivatives(q, v, x)",
                "gen FD out=": "gen.forward_dynamics_derivatives(q, v, x, out=outs)",
                "gen FD kept": KEPT.format(method="gen.forward_dynamics_derivatives"),
            })
            kinds.append(("gen", " (codegen)", CODEGEN_TARGET, max(gen_errs)))
        times = time_interleaved_cpu(stmts, ns, rounds=args.rounds)
        for who, label, target, err in kinds:
            for what in ("ID", "ID kept", "ID out=", "FD", "FD kept", "FD out="):
                o, p = times[f"{who} {what}"]["median"], times[f"pin {what.split()[0]}"]["median"]
                rows.append([name + label, robot.nv, what, fmt_us(o), fmt_us(p),
                             target_verdict(o / p, target), f"{err:.1e}"])
    md += [md_table(["robot", "nv", "call", "ours (us, median)", "pinocchio (us, median)",
                     "ratio ours / pin", "max rel. error vs pin"], rows), ""]
    if args.loops:
        md += ["### Closed-loop robots: per call, vs the robot's forward_dynamics", "",
               md_table(["robot", "nv", "constraint rows", "call", "us (median)",
                         "x forward_dynamics"], loop_rows(args.loops, max(10, args.rounds // 10))),
               ""]
    notes.append("ID = inverse_dynamics_derivatives vs computeRNEADerivatives; FD = "
                 "forward_dynamics_derivatives vs computeABADerivatives; 'out=': the same call "
                 "filling three preallocated arrays; 'kept': the allocating call while the "
                 "two previous results are still held (a new block every call; the plain "
                 "allocating call drops its result, whose block a later call reuses); medians of "
                 "interleaved "
                 "rounds, process CPU time (time_interleaved_cpu)")
    return finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
