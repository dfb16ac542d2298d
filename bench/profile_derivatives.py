"""Where the generic derivative kernels spend their time on one robot (default talos_reduced):
the whole kernels and the stages of the forward and inverse derivatives (kernels/derivatives.py),
each called in a numba loop (no dispatcher, no Python), and the product M^-1 X (X = -dtau/dq, as
the kernel writes it) in the forms tried: the dense BLAS product the kernel uses from
DENSE_PRODUCTS_FROM dofs on, products exploiting the sparsity of X (nonzero only in each row's
ancestors and subtree) by loops or by dgemm per branch block, a vectorised i-k-j loop, and both
products in one dgemm.

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
    def dense(dof_int, minv, x, out):
        """The kernel's: out = minv x, x = -dtau/dq (BLAS dgemm)."""
        np.dot(minv, x, out)

    @njit
    def support_sets(dof_int, minv, x, out):
        """out = minv x over row k's support only: its subtree [k, end) and its ancestors."""
        n = x.shape[0]
        for r in range(n):
            acc = out[r]
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

    @njit
    def up_to_subtree_end(dof_int, minv, x, out):
        """out = minv x over [0, end) of row k (contiguous: vectorises, touches other
        branches)."""
        n = x.shape[0]
        for r in range(n):
            acc = out[r]
            for c in range(n):
                acc[c] = 0.0
            for k in range(n):
                m = minv[r, k]
                row_k = x[k]
                for c in range(dof_int[k, END]):
                    acc[c] += m * row_k[c]

    @njit(fastmath=True)
    def ikj_fastmath(dof_int, minv, x, out):
        """out = minv x, dense, i-k-j order (contiguous inner loop), fastmath."""
        n = x.shape[0]
        for i in range(n):
            acc = out[i]
            for c in range(n):
                acc[c] = 0.0
            for k in range(n):
                m = minv[i, k]
                row_k = x[k]
                for c in range(n):
                    acc[c] += m * row_k[c]

    def product_loop(f):
        @njit
        def loop(n, dof_int, minv, x, out):
            for _ in range(n):
                f(dof_int, minv, x, out)
        return loop

    products = {name: (f, product_loop(f)) for name, f in
                (("dense (BLAS dgemm, the kernel's)", dense), ("support sets", support_sets),
                 ("[0, subtree end)", up_to_subtree_end),
                 ("dense loop, i-k-j, fastmath", ikj_fastmath))}
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


def extra_stages(K, robot, bi, bf, work, dwork, dof_work, dof_int, q, v, x, minv, d_q, calls):
    """Rows of the inverse derivatives' stages and of the other product forms tried: the
    forward pass alone, rnea_derivatives without its per-ancestor loops (timing only: the dof
    tree cut at every dof), one dgemm for both products, and dgemm per branch block through
    numba's BLAS wrapper with leading dimensions (~48 % of the multiplications in 11 calls)."""
    from numba import njit, types
    from numba.np.linalg import ensure_blas
    ensure_blas()
    nv = robot.nv
    PARENT, END = K.DOF_PARENT, K.DOF_SUBTREE_END
    f8p = types.CPointer(types.float64)
    xxgemm = types.ExternalFunction("numba_xxgemm", types.intc(
        types.char, types.char, types.char, types.intp, types.intp, types.intp, f8p, f8p,
        types.intp, f8p, types.intp, f8p, f8p, types.intp))

    @njit
    def forward(n, bi, bf, work, dwork, dof_work, q, v, x):
        for _ in range(n):
            K.forward_pass(bi, bf, work, dwork, dof_work, q, v, x)

    @njit
    def rnea(n, bi, bf, work, dwork, dof_work, dof_int, q, v, x, tau, out):
        for _ in range(n):
            K.rnea_derivatives(bi, bf, work, dwork, dof_work, dof_int, q, v, x, tau, out[0],
                               out[1], out[2])

    @njit
    def stacked(n, minv, x2, out2):
        for _ in range(n):
            np.dot(minv, x2, out2)

    @njit
    def blocks(n, groups, minv, x, out, consts):
        """out[:, C] = sum over the row segments S of column group C of minv[:, S] x[S, C]
        (column-major BLAS: out^T[C, :] = x^T[C, S] minv[S, :], minv symmetric)."""
        for _ in range(n):
            for g in range(groups.shape[0]):
                c0, c1, s0, s1, first = (groups[g, 0], groups[g, 1], groups[g, 2], groups[g, 3],
                                         groups[g, 4])
                xxgemm(ord("d"), ord("N"), ord("N"), c1 - c0, nv, s1 - s0, consts[2:].ctypes,
                       x[s0, c0:].ctypes, nv, minv[0, s0:].ctypes, nv,
                       consts[1:].ctypes if first else consts[2:].ctypes, out[0, c0:].ctypes, nv)

    # column groups: consecutive dofs whose nonzero rows (ancestors and subtree) are the same
    # contiguous segments
    segs = []
    for c in range(nv):
        rows = set(range(c, dof_int[c, END]))
        a = dof_int[c, PARENT]
        while a >= 0:
            rows.add(a)
            a = dof_int[a, PARENT]
        rows = sorted(rows)
        s, start, prev = [], rows[0], rows[0]
        for r in rows[1:]:
            if r != prev + 1:
                s.append((start, prev + 1))
                start = r
            prev = r
        segs.append(tuple(s + [(start, prev + 1)]))
    groups, c = [], 0
    while c < nv:
        e = c + 1
        while e < nv and segs[e] == segs[c]:
            e += 1
        groups += [(c, e, s0, s1, int(i == 0)) for i, (s0, s1) in enumerate(segs[c])]
        c = e
    groups = np.array(groups, dtype=np.int64)
    share = sum((g[1] - g[0]) * (g[3] - g[2]) for g in groups) / nv ** 2
    out = np.zeros((3, nv, nv))
    tau = np.zeros(nv)
    cut = dof_int.copy()
    cut[:, PARENT] = -1
    x2 = np.ascontiguousarray(np.hstack([-d_q, -d_q]))
    out2 = np.zeros_like(x2)
    res = np.full((nv, nv), np.nan)
    blocks(1, groups, minv, -d_q, res, np.array([-1.0, 0.0, 1.0]))
    err = np.max(np.abs(res + minv @ d_q)) / np.linalg.norm(minv @ d_q, 2)
    return [
        ("forward_pass (both kernels' first pass)",
         per_call(forward, bi, bf, work, dwork, dof_work, q, v, x, calls=calls)),
        ("rnea_derivatives without the per-ancestor loops (timing only)",
         per_call(rnea, bi, bf, work, dwork, dof_work, cut, q, v, x, tau, out, calls=calls)),
        ("both products in one dgemm, (nv, nv) x (nv, 2 nv)",
         per_call(stacked, minv, x2, out2, calls=calls)),
        (f"-M^-1 dtau/dq, dgemm per branch block ({len(groups)} calls, {share:.0%} of the "
         f"multiplications; rel. err {err:.0e})",
         per_call(blocks, groups, minv, -d_q, res, np.array([-1.0, 0.0, 1.0]), calls=calls)),
    ]


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
        scratch[:] = np.nan
        f(dof_int, minv, -d_q, scratch)
        err = np.max(np.abs(scratch - ref)) / np.linalg.norm(ref, 2)
        rows.append((f"-M^-1 dtau/dq, {name} (rel. err {err:.0e})",
                     per_call(loop, dof_int, minv, -d_q, scratch, calls=n)))
    rows += extra_stages(K, robot, bi, bf, work, dwork, dof_work, dof_int, q, v, x, minv, d_q,
                         calls=n)
    print(f"\n{args.robot}: nv {nv}, sum of depths {depths}, nonzeros of dtau/dq "
          f"{np.count_nonzero(d_q)} of {nv * nv}\n")
    print("| stage | µs per call |\n|---|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
