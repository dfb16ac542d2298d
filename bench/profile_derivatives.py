"""Where the generic derivative kernels spend their time on one robot (default talos_reduced):
the whole kernels and the stages of the forward derivatives (kernels/derivatives.py), each
called in a numba loop (no dispatcher, no Python), and products -M^-1 X that exploit the
sparsity of X = dtau/dq (nonzero only in each row's ancestors and subtree) against the dense
BLAS product the kernel uses from DENSE_PRODUCTS_FROM dofs on.

    PYTHONPATH=. .venv/bin/python bench/profile_derivatives.py [--robot talos_reduced]

Per call in µs: minima over 7 runs of `--calls` calls, process CPU time. The loops compile
without cache (~1-2 min). The products are checked against numpy's -inv(M) @ X (printed).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_repo_to_path, load_pair, machine_markdown, random_state,  # noqa: E402
                    robot_xml, this_command)

add_repo_to_path()


def build(K):
    """The numba loops (compiled at first call, not cached: a benchmark)."""
    from numba import njit
    PARENT, END = K.DOF_PARENT, K.DOF_SUBTREE_END

    @njit
    def rnea(n, bi, bf, work, dwork, dof_work, dof_int, q, v, x, tau, out):
        for _ in range(n):
            K.rnea_derivatives(bi, bf, work, dwork, dof_work, dof_int, q, v, x, tau, out[0],
                               out[1], out[2])

    @njit
    def aba(n, bi, bf, work, dwork, dof_work, dof_int, factor, q, v, x, qdd, tau, out):
        for _ in range(n):
            K.aba_derivatives(bi, bf, work, dwork, dof_work, dof_int, factor, q, v, x, qdd, tau,
                              out[0], out[1], out[2])

    @njit
    def ltdl(n, dof_int, mass, factor):
        for _ in range(n):
            K.tree_ltdl(dof_int, mass, factor)

    @njit
    def copy(n, x0, x):
        for _ in range(n):
            x[:] = x0

    @njit
    def solve(n, dof_int, factor, x0, x, scale, columns):
        for _ in range(n):
            x[:] = x0
            K.ltdl_solve(dof_int, factor, x, scale, columns)

    @njit
    def dense(dof_int, minv, x, scratch):
        K.minus_product(minv, x, scratch)

    @njit
    def support_sets(dof_int, minv, x, scratch):
        """-minv x over row k's support only: its subtree [k, end) and its ancestors."""
        n = x.shape[0]
        for r in range(n):
            acc = scratch[r]
            for c in range(n):
                acc[c] = 0.0
            for k in range(n):
                m = minv[r, k]
                row_k = x[k]
                for c in range(k, dof_int[k, END]):
                    acc[c] += m * row_k[c]
                a = dof_int[k, PARENT]
                while a >= 0:
                    acc[a] += m * row_k[a]
                    a = dof_int[a, PARENT]
        for r in range(n):
            for c in range(n):
                x[r, c] = -scratch[r, c]

    @njit
    def up_to_subtree_end(dof_int, minv, x, scratch):
        """-minv x over [0, end) of row k (contiguous: vectorises, touches other branches)."""
        n = x.shape[0]
        for r in range(n):
            acc = scratch[r]
            for c in range(n):
                acc[c] = 0.0
            for k in range(n):
                m = minv[r, k]
                row_k = x[k]
                for c in range(dof_int[k, END]):
                    acc[c] += m * row_k[c]
        for r in range(n):
            for c in range(n):
                x[r, c] = -scratch[r, c]

    def product_loop(f):
        @njit
        def loop(n, dof_int, minv, x0, x, scratch):
            for _ in range(n):
                x[:] = x0
                f(dof_int, minv, x, scratch)
        return loop

    products = {name: (f, product_loop(f)) for name, f in
                (("dense (BLAS dgemm, the kernel's)", dense), ("support sets", support_sets),
                 ("[0, subtree end)", up_to_subtree_end))}
    return rnea, aba, ltdl, copy, solve, products


def per_call(loop, *args, calls):
    """µs per call: minimum over 7 runs of `calls` calls, process CPU time."""
    loop(10, *args)
    best = float("inf")
    for _ in range(7):
        t0 = time.process_time()
        loop(calls, *args)
        best = min(best, (time.process_time() - t0) / calls)
    return 1e6 * best


def main():
    from mbd_ros.kernels import derivatives as K
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="talos_reduced")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    print(machine_markdown(this_command()))
    xml, floating, _ = robot_xml(args.robot)
    robot, _, _, perm = load_pair(xml, floating)
    (q, v, x), _ = random_state(robot, perm, np.random.default_rng(0))
    for _ in range(3):   # the C path's workspaces (robot/fast_derivatives.py)
        robot.inverse_dynamics_derivatives(q, v, x)
        robot.forward_dynamics_derivatives(q, v, x)
    bi, bf, work, dwork, dof_work, dof_int, factor, _ = robot._fast_derivatives.bound
    nv = robot.nv
    depths = 0
    for i in range(nv):
        k = dof_int[i, K.DOF_PARENT]
        while k >= 0:
            depths += 1
            k = dof_int[k, K.DOF_PARENT]
    rnea, aba, ltdl, copy, solve, products = build(K)
    out = np.zeros((3, nv, nv))
    tau, qdd = np.zeros(nv), np.zeros(nv)
    n = args.calls
    rows = [("rnea_derivatives", per_call(rnea, bi, bf, work, dwork, dof_work, dof_int, q, v, x,
                                          tau, out, calls=n)),
            ("aba_derivatives", per_call(aba, bi, bf, work, dwork, dof_work, dof_int, factor, q,
                                         v, x, qdd, tau, out, calls=n))]
    mass = robot.mass_matrix(q)
    fac = np.zeros((nv, nv))
    rows.append(("tree_ltdl", per_call(ltdl, dof_int, mass, fac, calls=n)))
    d_q = robot.inverse_dynamics_derivatives(q, v, x)[0].copy()
    work_x, scratch = np.zeros((nv, nv)), np.zeros((nv, nv))
    base = per_call(copy, d_q, work_x, calls=n)
    rows.append(("M^-1 (ltdl_solve IDENTITY)",
                 per_call(solve, dof_int, fac, np.eye(nv), work_x, 1.0, K.IDENTITY, calls=n)
                 - base))
    rows.append(("-M^-1 dtau/dq (ltdl_solve TREE_COLUMNS)",
                 per_call(solve, dof_int, fac, d_q, work_x, -1.0, K.TREE_COLUMNS, calls=n)
                 - base))
    minv = np.linalg.inv(mass)
    ref = -minv @ d_q
    for name, (f, loop) in products.items():
        work_x[:] = d_q
        f(dof_int, minv, work_x, scratch)
        err = np.max(np.abs(work_x - ref)) / np.linalg.norm(ref, 2)
        rows.append((f"-M^-1 dtau/dq, {name} (rel. err {err:.0e})",
                     per_call(loop, dof_int, minv, d_q, work_x, scratch, calls=n) - base))
    print(f"\n{args.robot}: nv {nv}, sum of depths {depths}, nonzeros of dtau/dq "
          f"{np.count_nonzero(d_q)} of {nv * nv}\n")
    print("| stage | µs per call |\n|---|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
