"""Where the four-bar's semi-implicit Euler rollout step spends its time: the parts of robot.step's
projection after the step, compiled (kernels/rollout_projection.py), against the forward dynamics.

    PYTHONPATH=. python bench/bench_loop_projection.py [--steps 400] [--rounds 9]

The states: bench/bench_rollout.py's four-bar trajectory (the loops closed at rest, tau = 0.1 N m
random per row, dt = 1 ms, semi-implicit Euler; |v| up to ~27 rad/s) and, for each of its rows,
the state one semi-implicit Euler step later before the projection (the loops open by up to
2e-5). Each part is a numba loop over those states (the copy of the state into the buffers
subtracted), timed by thread CPU time in interleaved rounds (a new random order every round),
minimum over the rounds, µs per call:

- the constrained forward dynamics through the loop solver's C entry (call_entry), and one
  robot.forward_dynamics call from Python (the rollout bench's unit);
- close_loops after an Euler step (the residual test, the Gauss-Newton, the velocity projection)
  with the Gauss-Newton stopped at EULER_CLOSING_TOLERANCE (robot.step's, since h19-euler) and at
  ASSEMBLY_TOLERANCE (before); close_loops at the projected rows (the residual test alone);
- the parts: the kinematics with and without body velocities, the cut rows, the loop Jacobian,
  the mass matrix, q (+) dq, the minimum-norm solve with G (5 x 3) and with K = G M^-1 G^T
  (5 x 5), each at the open states;
- the Gauss-Newton steps per projection under both stops (counted in Python with
  Constraints.state and numpy's lstsq).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

from numba import njit  # noqa: E402

import mbd_ros  # noqa: E402
from mbd_ros.kernels.closed_loop import cut_rows, loop_jacobian  # noqa: E402
from mbd_ros.kernels.configuration import integrate  # noqa: E402
from mbd_ros.kernels.crba import mass_matrix  # noqa: E402
from mbd_ros.kernels.entry_call import call_entry  # noqa: E402
from mbd_ros.kernels.kinematics import forward_kinematics  # noqa: E402
from mbd_ros.kernels.rollout_projection import close_loops, min_norm_solve  # noqa: E402
from mbd_ros.robot.constraints import (ASSEMBLY_TOLERANCE, EULER_CLOSING_TOLERANCE,  # noqa: E402
                                       PROJECTION_TOLERANCE)
from mbd_ros.robot.rollout_compiled import engine_of  # noqa: E402

DT = 1e-3


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def _copy(Q, V, q, v, k):
    for i in range(q.shape[0]):
        q[i] = Q[k, i]
    for i in range(v.shape[0]):
        v[i] = V[k, i]


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def run_copy(Q, V, q, v, n):
    for _ in range(n):
        for k in range(Q.shape[0]):
            _copy(Q, V, q, v, k)


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def run_close(loops, workspace, Q, V, q, v, closing, n):
    c = 0
    for _ in range(n):
        for k in range(Q.shape[0]):
            _copy(Q, V, q, v, k)
            c += close_loops(loops, workspace, q, v, PROJECTION_TOLERANCE, closing)
    return c


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def run_fd(entry, bound, dims, Q, V, tau, out, n):
    c = 0
    for _ in range(n):
        for k in range(Q.shape[0]):
            c += call_entry(entry, bound, dims, Q[k], V[k], tau[k], out)
    return c


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def run_parts(part, body_int, body_float, work, cut_int, cut_float, loop_float, jacobian, mass,
              Q, V, q, v, n):
    none = v[:0]
    for _ in range(n):
        for k in range(Q.shape[0]):
            _copy(Q, V, q, v, k)
            if part == 0:
                forward_kinematics(body_int, body_float, work, q, v)
            elif part == 1:
                forward_kinematics(body_int, body_float, work, q, none)
            elif part == 2:
                cut_rows(cut_int, cut_float, work, loop_float)
            elif part == 3:
                loop_jacobian(body_int, body_float, work, cut_int, loop_float, jacobian)
            elif part == 4:
                mass_matrix(body_int, body_float, work, q, mass)
            else:
                integrate(body_int, q, v, 1e-9, q)


@njit(cache=False)   # (a cached loop would keep the kernels it was compiled with)
def run_solve(A, B, n_cols, n):
    p = max(A.shape[1], A.shape[2])
    t, normal = np.zeros((p, p)), np.zeros((p, p))
    x, rdiag, hv0, beta = np.zeros(p), np.zeros(p), np.zeros(p), np.zeros(p)
    c, z, perm = np.zeros(p), np.zeros(p), np.zeros(p, dtype=np.int64)
    r = 0
    for _ in range(n):
        for k in range(A.shape[0]):
            r += min_norm_solve(A[k], A.shape[1], n_cols, B[k], x, t, normal, rdiag, hv0, beta,
                                c, z, perm)
    return r


def states(robot, steps, rng):
    """(Q, V, tau, QU, VU): the rows of a semi-implicit Euler rollout and the states one step
    after each row before the projection."""
    q0, v0 = robot.assemble(robot.neutral()), np.zeros(robot.nv)
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    Q, V = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler")
    Q, V = np.ascontiguousarray(Q[:-1]), np.ascontiguousarray(V[:-1])
    QU, VU = np.empty_like(Q), np.empty_like(V)
    for k in range(steps):
        VU[k] = V[k] + DT * robot.forward_dynamics(Q[k], V[k], tau[k])
        QU[k] = robot.integrate(Q[k], VU[k], DT)
    return Q, V, tau, QU, VU


def gauss_newton_steps(robot, QU, tolerance):
    """Mean number of Gauss-Newton steps of Constraints.project_state from the open states."""
    constraints, zero, total = robot._constraints, np.zeros(robot.nv), 0
    for q in QU:
        for _ in range(20):
            g, jacobian, _ = constraints.state(q, zero)
            if np.abs(g).max() < tolerance:
                break
            q = robot.integrate(q, -np.linalg.lstsq(jacobian, g, rcond=1e-9)[0], 1.0)
            total += 1
    return total / len(QU)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=10, help="passes over the states per call")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print(f"CPU (lscpu): {C.lscpu_model_name()}; {C.cpu_model()}")
    root = C.REPO
    robot = mbd_ros.load(str(root / "urdf" / "fourbar.urdf"),
                         closures=str(root / "config" / "fourbar_closures.yaml"))
    robot.compile_c_calls()
    Q, V, tau, QU, VU = states(robot, args.steps, np.random.default_rng(0))
    engine = engine_of(robot)
    w = engine.take(1)[0]
    w.bound[engine.gains_index][:] = robot._constraints.gains
    loops, workspace = w.loops[:10], w.loops[10]
    body_int, body_float, work, cut_int, cut_float, loop_float, jacobian = loops[:7]
    q, v, out = np.empty(robot.nq), np.empty(robot.nv), np.empty(robot.nv)
    mass = np.empty((robot.nv, robot.nv))
    zero = np.zeros(robot.nv)
    G = np.array([robot._constraints.state(x, zero)[1] for x in QU])
    g = np.array([robot._constraints.state(x, zero)[0] for x in QU])
    K = np.array([j @ np.linalg.solve(robot.mass_matrix(x), j.T) for j, x in zip(G, QU)])
    n = args.repeat
    fd_python = robot.forward_dynamics

    def python_fd():
        for k in range(len(Q)):
            fd_python(Q[k], V[k], tau[k], out=out)

    parts = ["kinematics with velocities", "kinematics without velocities", "cut rows",
             "loop Jacobian", "mass matrix", "q (+) dq"]
    funcs = {
        "copy": lambda: run_copy(QU, VU, q, v, n),
        "forward dynamics (C entry, numba)": lambda: run_fd(
            engine.entries[0], w.pointers, engine.dims, Q, V, tau, out, n),
        "forward dynamics (Python call)": lambda: [python_fd() for _ in range(n)],
        "close_loops after an Euler step, stop EULER_CLOSING_TOLERANCE": lambda: run_close(
            loops, workspace, QU, VU, q, v, EULER_CLOSING_TOLERANCE, n),
        "close_loops after an Euler step, stop ASSEMBLY_TOLERANCE": lambda: run_close(
            loops, workspace, QU, VU, q, v, ASSEMBLY_TOLERANCE, n),
        "close_loops at the rows (residual test only)": lambda: run_close(
            loops, workspace, Q[1:], V[1:], q, v, EULER_CLOSING_TOLERANCE, n),
        "min-norm solve with G (5 x 3)": lambda: run_solve(G, g, robot.nv, n),
        "min-norm solve with K (5 x 5)": lambda: run_solve(K, g, K.shape[2], n),
    }
    for i, label in enumerate(parts):
        funcs[label] = (lambda i=i: run_parts(i, body_int, body_float, work, cut_int, cut_float,
                                              loop_float, jacobian, mass, QU, VU, q, v, n))
    for f in funcs.values():
        f()
    labels = list(funcs)
    samples = {k: [] for k in labels}
    order = random.Random(0)
    for _ in range(args.rounds):
        order.shuffle(labels)
        for k in labels:
            t0 = time.thread_time()
            funcs[k]()
            samples[k].append((time.thread_time() - t0) / (n * len(Q)) * 1e6)
    best = {k: min(s) for k, s in samples.items()}
    copy = best.pop("copy")
    print(f"\nfour-bar, {len(Q)} states, max |v| {np.abs(V).max():.1f} rad/s, loops open by up to "
          f"{np.abs(g).max():.2g} after the Euler step; minima of {args.rounds} rounds\n")
    print("| part | µs per call |")
    print("|---|---:|")
    for k, t in best.items():
        exact = k.startswith("forward dynamics") or k.startswith("min-norm")
        print(f"| {k} | {t if exact else t - copy:.3f} |")
    strict = gauss_newton_steps(robot, QU, ASSEMBLY_TOLERANCE)
    loose = gauss_newton_steps(robot, QU, EULER_CLOSING_TOLERANCE)
    print(f"\nGauss-Newton steps per projection: {strict:.2f} (stop ASSEMBLY_TOLERANCE), "
          f"{loose:.2f} (stop EULER_CLOSING_TOLERANCE)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
