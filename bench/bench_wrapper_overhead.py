"""Cost of issue 10's hardening on the single-thread hot path (thread safety, finite results,
aliasing checks): µs per call of forward_dynamics / inverse_dynamics / mass_matrix of this
mbd_ros vs an earlier revision of the package, and vs Pinocchio, timed interleaved in one process.

The earlier revision is imported under another name from a directory holding its `mbd_ros`
package, e.g.

    mkdir -p /tmp/before && git archive adec0ef mbd_ros | tar -x -C /tmp/before
    PYTHONPATH=. python bench/bench_wrapper_overhead.py --before /tmp/before

Robots: urdf/arm7.urdf (7 revolute joints) and example-robot-data's solo12 (free base, 12
joints). The difference "now - before" is the wrapper's added cost per call.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.add_repo_to_path()
import mbd_ros  # noqa: E402


def import_before(directory):
    """The package in directory/mbd_ros, imported as 'mbd_ros_before'."""
    init = Path(directory) / "mbd_ros" / "__init__.py"
    spec = importlib.util.spec_from_file_location("mbd_ros_before", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["mbd_ros_before"] = module
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="directory containing an earlier mbd_ros package")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    before = import_before(args.before) if args.before else None
    import pinocchio as pin

    robots = {"arm7": ((common.REPO / "urdf" / "arm7.urdf").read_text(), False),
              "solo12": common.robot_xml("solo12")[:2]}
    print(f"CPU: {common.cpu_model()}")
    print(f"command: {common.this_command()}\n")
    print("| robot | call | now µs | before µs | now - before µs | pin µs | now / pin |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for name, (xml, floating) in robots.items():
        now = mbd_ros.load(xml, floating_base=floating, passive_forces=False)
        old = before.load(xml, floating_base=floating, passive_forces=False,
                          strict_inertia=False) if before else None
        model = common.pin_model(xml, floating)
        data = model.createData()
        perm = common.Permutation(now, model)
        (q, v, x), (qp, vp, xp) = common.random_state(now, perm, rng)
        out = np.empty(now.nv)
        ns = dict(now=now, old=old, pin=pin, model=model, data=data, q=q, v=v, x=x, qp=qp, vp=vp,
                  xp=xp, out=out)
        for call, ours, peer in (("FD", "{r}.forward_dynamics(q, v, x, out=out)", "pin.aba(model, data, qp, vp, xp)"),
                                 ("ID", "{r}.inverse_dynamics(q, v, x, out=out)", "pin.rnea(model, data, qp, vp, xp)"),
                                 ("M", "{r}.mass_matrix(q)", "pin.crba(model, data, qp)")):
            stmts = {"now": ours.format(r="now"), "pin": peer}
            if old is not None:
                stmts["before"] = ours.format(r="old")
            t = common.time_interleaved(stmts, ns, rounds=args.rounds)
            b = t["before"]["min"] if "before" in t else float("nan")
            print(f"| {name} | {call} | {t['now']['min']:.3f} | {b:.3f} | {t['now']['min'] - b:+.3f} | "
                  f"{t['pin']['min']:.3f} | {t['now']['min'] / t['pin']['min']:.2f} |")


if __name__ == "__main__":
    main()
