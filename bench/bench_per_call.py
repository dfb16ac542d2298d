"""Per-call cost of forward dynamics (FD), inverse dynamics (ID) and the mass matrix (M):
mbd_ros vs Pinocchio (pin.aba / pin.rnea / pin.crba), called from Python, one state per call.

    PYTHONPATH=. python bench/bench_per_call.py [--quick] [--out FILE]

Part 1: robots of example-robot-data (ur5, panda, solo12, anymal, talos_reduced).
Part 2: scaling on generated serial chains of 10 ... 200 revolute links.

Before timing, every model is checked: our FD, ID and M equal Pinocchio's on the benchmarked
state to RTOL = 1e-9 relative (max|ours - pin| <= 1e-9 max(1, max|pin|)).

Timings are interleaved (each round times every candidate in turn), `min` and `median` over the
rounds are reported in microseconds per call; ratios are ours / Pinocchio (< 1: we are faster).
Prints ready-to-paste markdown.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

ALGOS = [  # label, our method, pin function, name of the third argument
    ("FD", "forward_dynamics", "aba", "tau"),
    ("ID", "inverse_dynamics", "rnea", "qdd"),
    ("M", "mass_matrix", "crba", None),
]


def namespace(robot, model, data, ours, pins):
    import pinocchio as pin
    q, v, x = ours
    qp, vp, xp = pins
    return {
        "robot": robot, "model": model, "data": data, "pin": pin,
        "fd": robot.forward_dynamics, "id_": robot.inverse_dynamics, "mm": robot.mass_matrix,
        "aba": pin.aba, "rnea": pin.rnea, "crba": pin.crba, "WORLD": pin.Convention.WORLD,
        "q": q, "v": v, "x": x, "qp": qp, "vp": vp, "xp": xp,
        "o_v": np.empty(robot.nv), "o_m": np.empty((robot.nv, robot.nv)),
        **kernel_namespace(robot),
    }


def kernel_namespace(robot):
    """The numba kernels behind the facade, with the robot's private arrays (internal names,
    used only for the 'kernel' column: the cost without the Python wrapper). {} if absent."""
    try:
        from mbd_ros.kernels.aba import forward_dynamics as kfd
        from mbd_ros.kernels.crba import mass_matrix as kmm
        from mbd_ros.kernels.rnea import inverse_dynamics as kid
        return {"kfd": kfd, "kid": kid, "kmm": kmm, "bi": robot.tree.body_int,
                "bf": robot.tree.body_float, "wk": robot.tree.work}
    except (ImportError, AttributeError):
        return {}


def dispatch_floor(rounds):
    """Cost of calling a numba function that does nothing with the kernels' 7 array arguments,
    next to an empty Python function: the per-call floor of any numba entry point."""
    from numba import njit

    @njit
    def noop(a, b, c, d, e, f, g):
        return 0

    def pynoop(a, b, c, d, e, f, g):
        return 0

    i2, f2, v = np.zeros((3, 3), np.int64), np.zeros((3, 3)), np.zeros(3)
    noop(i2, f2, f2, v, v, v, v)
    ns = {"noop": noop, "pynoop": pynoop, "i2": i2, "f2": f2, "v": v}
    return C.time_interleaved({"numba": "noop(i2, f2, f2, v, v, v, v)",
                               "python": "pynoop(i2, f2, f2, v, v, v, v)"}, ns, rounds=rounds)


GROUPS = {  # algorithm -> {column: statement}
    "FD": {"ours out=": "fd(q, v, x, out=o_v)", "ours": "fd(q, v, x)",
           "pin": "aba(model, data, qp, vp, xp)", "pin WORLD": "aba(model, data, qp, vp, xp, WORLD)"},
    "ID": {"ours out=": "id_(q, v, x, out=o_v)", "ours": "id_(q, v, x)",
           "pin": "rnea(model, data, qp, vp, xp)"},
    "M": {"ours out=": "mm(q, out=o_m)", "ours": "mm(q)",
          "pin": "crba(model, data, qp)", "pin WORLD": "crba(model, data, qp, WORLD)"},
}


TARGETS = {"FD": 0.7, "ID": 0.8, "M": 1.0}   # issue 7: ours / pin per call from Python

KERNELS = {"FD": "kfd(bi, bf, wk, q, v, x, o_v)", "ID": "kid(bi, bf, wk, q, v, x, o_v)",
           "M": "kmm(bi, bf, wk, q, o_m)"}


def time_robot(robot, model, data, perm, rng, rounds, algos=("FD", "ID", "M")):
    ours, pins = C.random_state(robot, perm, rng)
    errs = C.check_against_pin(robot, model, data, perm, ours, pins)
    ns = namespace(robot, model, data, ours, pins)
    res = {}
    for a in algos:
        stmts = dict(GROUPS[a])
        if "kfd" in ns:
            stmts["kernel"] = KERNELS[a]
        res[a] = C.time_interleaved(stmts, ns, rounds=rounds)
    return errs, res


def cell(t):
    return f"{C.fmt_us(t['min'])} / {C.fmt_us(t['median'])}"


def ratio_cell(t, ref):
    return f"{t['min'] / ref['min']:.2f} / {t['median'] / ref['median']:.2f}"


# ---------------------------------------------------------------------------- serial chains

def serial_chain_urdf(n_links: int, seed: int = 12345) -> str:
    """URDF text of a serial chain: base + n_links links, revolute joints with random unit axes,
    random joint offsets, masses, centres of mass and valid (triangle-inequality) inertias."""
    rng = np.random.default_rng(seed)
    f = lambda a: " ".join(f"{x:.9g}" for x in a)  # noqa: E731
    parts = ['<?xml version="1.0"?>', f'<robot name="chain{n_links}">',
             '  <link name="link_0"><inertial><mass value="2.0"/>'
             '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>']
    for i in range(1, n_links + 1):
        axis = rng.standard_normal(3)
        axis /= np.linalg.norm(axis)
        xyz = rng.uniform(-0.05, 0.05, 3) + np.array([0.0, 0.0, 0.1])
        rpy = rng.uniform(-np.pi, np.pi, 3)
        mass = rng.uniform(0.5, 2.0)
        com = rng.uniform(-0.03, 0.03, 3) + np.array([0.0, 0.0, 0.05])
        a, b = rng.uniform(1e-3, 1e-2, 2)
        c = rng.uniform(abs(a - b), a + b)     # I1 + I2 >= I3 for every ordering
        irpy = rng.uniform(-np.pi, np.pi, 3)
        parts.append(
            f'  <joint name="joint_{i}" type="revolute"><parent link="link_{i - 1}"/>'
            f'<child link="link_{i}"/><origin xyz="{f(xyz)}" rpy="{f(rpy)}"/>'
            f'<axis xyz="{f(axis)}"/><limit lower="-3.14159" upper="3.14159" effort="100" '
            f'velocity="10"/></joint>')
        parts.append(
            f'  <link name="link_{i}"><inertial><origin xyz="{f(com)}" rpy="{f(irpy)}"/>'
            f'<mass value="{mass:.9g}"/><inertia ixx="{a:.9g}" ixy="0" ixz="0" iyy="{b:.9g}" '
            f'iyz="0" izz="{c:.9g}"/></inertial></link>')
    parts.append("</robot>")
    return "\n".join(parts)


# ---------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", default=",".join(C.ROBOTS), help="comma-separated robot names")
    ap.add_argument("--chains", default="10,20,50,100,200", help="serial chain lengths ('' = none)")
    ap.add_argument("--rounds", type=int, default=200, help="interleaved rounds per measurement")
    ap.add_argument("--quick", action="store_true", help="30 rounds (smoke test)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the markdown to this file")
    args = ap.parse_args(argv)
    rounds = 30 if args.quick else args.rounds
    rng = np.random.default_rng(args.seed)
    failures, notes = [], []

    md = ["## Per-call cost: FD / ID / M vs Pinocchio", "", C.machine_markdown(C.this_command()),
          f"- timing: {rounds} interleaved rounds per cell, each round timing a loop of calls "
          "(about 2 ms) of every candidate in turn; cells are `min / median` microseconds per call",
          "- ours out= : preallocated output (`out=`); ours : new output array per call "
          "(the contract's plain call); pin : `pin.aba/rnea/crba(model, data, ...)` "
          "(default LOCAL convention; pin WORLD = `Convention.WORLD`)",
          "- ratio = ours / pin (< 1: mbd_ros faster), from the min and from the median",
          "- state: one random configuration (within joint limits, random base pose), "
          "v ~ N(0, 1), tau / qdd ~ N(0, 25); URDF damping/friction off in both (`passive_forces=False`)", ""]

    # ---- part 1: robots
    rows, check_rows = [], []
    target_rows = []
    for name in [s for s in args.robots.split(",") if s]:
        xml, floating, fix_notes = C.robot_xml(name)
        notes += fix_notes
        try:
            robot, model, data, perm = C.load_pair(xml, floating)
        except Exception as exc:  # report and go on with the other robots
            failures.append(f"{name}: cannot load: {type(exc).__name__}: {exc}")
            continue
        errs, res = time_robot(robot, model, data, perm, rng, rounds)
        ok = all(e <= C.RTOL for e in errs.values())
        if not ok:
            failures.append(f"{name}: ours vs pin relative error {errs} > {C.RTOL:g}")
        check_rows.append([name, f"{robot.nq}/{robot.nv}", "yes" if floating else "no",
                           *(f"{errs[a]:.1e}" for a in ("FD", "ID", "M")),
                           "ok" if ok else "**FAIL**"])
        for algo, method, pinf, _ in ALGOS:
            t = res[algo]
            rows.append([name, robot.nv, f"{algo} ({pinf})", cell(t["ours out="]), cell(t["ours"]),
                         cell(t["pin"]), cell(t["pin WORLD"]) if "pin WORLD" in t else "",
                         cell(t["kernel"]) if "kernel" in t else "",
                         ratio_cell(t["ours out="], t["pin"]), ratio_cell(t["ours"], t["pin"])])
        target_rows.append([name] + [C.target_verdict(res[a]["ours out="]["min"] / res[a]["pin"]["min"],
                                                      TARGETS[a]) for a in ("FD", "ID", "M")])
        print(f"# {name} done", file=sys.stderr)

    md += ["### Correctness check before timing (relative error ours vs pin, one random state)", "",
           C.md_table(["robot", "nq/nv", "floating", "FD", "ID", "M", f"<= {C.RTOL:g}"], check_rows), "",
           "### Robots (µs per call, min / median)", "",
           C.md_table(["robot", "nv", "algorithm", "ours out=", "ours", "pin", "pin WORLD", "ours kernel",
                       "ratio out= (min / med)", "ratio (min / med)"], rows), ""]
    floor = dispatch_floor(rounds)
    md += ["`ours kernel`: the numba kernel called directly (no Python wrapper; internal API). "
           f"Per-call floor for reference: an empty numba function of 7 array arguments costs "
           f"{cell(floor['numba'])} µs, an empty Python function {cell(floor['python'])} µs.", ""]

    # ---- part 2: serial chains
    chains = [int(s) for s in args.chains.split(",") if s.strip()]
    if chains:
        crow = []
        for n in chains:
            xml = serial_chain_urdf(n)
            robot, model, data, perm = C.load_pair(xml, False)
            errs, res = time_robot(robot, model, data, perm, rng, rounds, algos=("FD", "ID"))
            ok = errs["FD"] <= C.RTOL and errs["ID"] <= C.RTOL
            if not ok:
                failures.append(f"chain {n}: ours vs pin relative error {errs} > {C.RTOL:g}")
            fd, idd = res["FD"], res["ID"]
            crow.append([n, cell(fd["ours out="]), cell(fd["pin"]), ratio_cell(fd["ours out="], fd["pin"]),
                         f"{fd['ours out=']['min'] / n:.3f}", f"{fd['pin']['min'] / n:.3f}",
                         cell(idd["ours out="]), cell(idd["pin"]), ratio_cell(idd["ours out="], idd["pin"]),
                         f"{idd['ours out=']['min'] / n:.3f}", f"{idd['pin']['min'] / n:.3f}",
                         f"{errs['FD']:.0e} / {errs['ID']:.0e}" + ("" if ok else " **FAIL**")])
            target_rows.append([f"chain {n}"] + [C.target_verdict(r["ours out="]["min"] / r["pin"]["min"],
                                                                TARGETS[a]) for a, r in (("FD", fd), ("ID", idd))]
                               + ["(not timed)"])
            print(f"# chain {n} done", file=sys.stderr)
        md += ["### Scaling: serial chains of n revolute links (random axes and inertias, seed 12345)", "",
               "µs per call (min / median) with `out=`; µs/body = min / n. "
               "The last column is the relative error ours vs pin (FD / ID) on the timed state.", "",
               C.md_table(["n", "FD ours", "FD pin", "FD ratio (min / med)", "FD ours µs/body",
                           "FD pin µs/body", "ID ours", "ID pin", "ID ratio (min / med)",
                           "ID ours µs/body", "ID pin µs/body", "rel. err FD / ID"], crow), ""]

    md += ["### Targets (issue 7): ratio ours out= / pin, from the interleaved minima", "",
           "Per call from Python: FD <= 0.7 x pin.aba, ID <= 0.8 x pin.rnea, M <= 1.0 x pin.crba. "
           "Interleaved ratios from one process are the trustworthy number on a shared machine; "
           "the absolute times move with the load.", "",
           C.md_table(["robot", "FD / aba", "ID / rnea", "M / crba"], target_rows), ""]
    return C.finish_report(md, notes, failures, args.out)


if __name__ == "__main__":
    sys.exit(main())
