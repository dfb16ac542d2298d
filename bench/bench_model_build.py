"""Model building time vs the number of links (issue 10: it must be linear).

Times mbd_ros.load on generated URDFs (a serial chain of revolute links with every third joint
fixed, plus a wide star: one base with N children) for a list of sizes, in this process, and
prints seconds, microseconds per link and the ratio to the smallest size per link (~1 when
linear). Pinocchio's buildModelFromXML on the same text is timed in turn as the peer, for the
star only (its URDF parser recurses and crashes on chains deeper than a few thousand links).

    PYTHONPATH=. python bench/bench_model_build.py [--sizes 1000,5000,10000,20000]
"""
from __future__ import annotations

import argparse
import subprocess
import time
import warnings

import mbd_ros

LINK = ('<link name="l{i}"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')


def chain(n):
    parts = ['<robot name="chain">'] + [LINK.format(i=i) for i in range(n)]
    for i in range(1, n):
        kind = "fixed" if i % 3 == 0 else "revolute"
        parts.append(f'<joint name="j{i}" type="{kind}"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
                     '<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>')
    return "".join(parts + ["</robot>"])


def star(n):
    parts = ['<robot name="star">'] + [LINK.format(i=i) for i in range(n)]
    for i in range(1, n):
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l0"/><child link="l{i}"/>'
                     '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
                     '<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>')
    return "".join(parts + ["</robot>"])


def timed(fn, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,5000,10000,20000")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True,
                         text=True).stdout.strip()
    print(f"CPU: {cpu}")
    mbd_ros.load(chain(10))   # compile / load the kernels once
    print("| shape | links | mbd_ros.load s | us/link | per-link ratio | pin build s | mbd/pin |")
    print("|---|---|---|---|---|---|---|")
    for shape, make in (("chain", chain), ("star", star)):
        base = None
        for n in sizes:
            xml = make(n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = timed(lambda: mbd_ros.load(xml), args.rounds)
                peer = (timed(lambda: pin.buildModelFromXML(xml), args.rounds)
                        if pin and shape == "star" else float("nan"))
            per_link = ours / n * 1e6
            base = base or per_link
            print(f"| {shape} | {n} | {ours:.3f} | {per_link:.1f} | {per_link / base:.2f} | "
                  f"{peer:.3f} | {ours / peer:.1f} |")


if __name__ == "__main__":
    main()
