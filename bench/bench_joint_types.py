"""Extension joints: forward and inverse dynamics of a chain of 6 helical, cylindrical or
universal joints, mbd_ros vs Pinocchio (JointModelHelicalUnaligned; a cylindrical joint as
revolute + prismatic, a universal one as two revolutes, with zero-inertia bodies between), and
the same chain with revolute joints as the baseline of the fast one-axis paths. Interleaved,
same process; results are checked against Pinocchio before timing.

    PYTHONPATH=. python bench/bench_joint_types.py [--rounds 100]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

N_JOINTS = 6


def chain(kind):
    """(URDF text, Pinocchio model) of N_JOINTS joints of `kind`, tilted axes and offsets."""
    import pinocchio as pin
    rng = np.random.default_rng(1)
    parts = ['<robot name="bench"><link name="l0"/>']
    model = pin.Model()
    parent = 0
    for k in range(N_JOINTS):
        xyz = rng.uniform(-0.2, 0.2, 3)
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        axis2 = np.cross(axis, rng.normal(size=3))
        axis2 /= np.linalg.norm(axis2)
        mass, com = 1.0 + k * 0.1, rng.uniform(-0.1, 0.1, 3)
        extra = {"helical": ' pitch="0.05"', "universal": ""}.get(kind, "")
        second = f'<axis2 xyz="{axis2[0]} {axis2[1]} {axis2[2]}"/>' if kind == "universal" else ""
        jtype = "continuous" if kind == "revolute" else kind
        parts.append(f'<joint name="j{k}" type="{jtype}"><parent link="l{k}"/><child link="l{k + 1}"/>'
                     f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/>'
                     f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"{extra}/>{second}</joint>')
        parts.append(f'<link name="l{k + 1}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
                     f'<mass value="{mass}"/><inertia ixx="0.02" iyy="0.03" izz="0.025" ixy="0.001" '
                     f'ixz="0" iyz="0"/></inertial></link>')
        place = pin.SE3(np.eye(3), xyz)
        if kind == "helical":
            parent = model.addJoint(parent, pin.JointModelHelicalUnaligned(axis, 0.05), place, f"j{k}")
        elif kind == "revolute":
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(axis), place, f"j{k}")
        else:
            second_joint = (pin.JointModelPrismaticUnaligned(axis) if kind == "cylindrical"
                            else pin.JointModelRevoluteUnaligned(axis2))
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(axis), place, f"j{k}a")
            parent = model.addJoint(parent, second_joint, pin.SE3.Identity(), f"j{k}b")
        inertia = np.array([[0.02, 0.001, 0.0], [0.001, 0.03, 0.0], [0.0, 0.0, 0.025]])
        model.appendBodyToJoint(parent, pin.Inertia(mass, com, inertia), pin.SE3.Identity())
    parts.append("</robot>")
    return "".join(parts), model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    import pinocchio as pin

    import mbd_ros
    print(f"CPU: {C.lscpu_model_name()}  ({C.cpu_model()})")
    print(f"chain of {N_JOINTS} joints; per-call µs (median of {args.rounds} interleaved rounds)")
    print(f"{'joint':12s} {'ours FD':>9s} {'pin.aba':>9s} {'ratio':>6s}   {'ours ID':>9s} {'pin.rnea':>9s} {'ratio':>6s}")
    for kind in ("revolute", "helical", "cylindrical", "universal"):
        text, model = chain(kind)
        robot = mbd_ros.load(text)
        data = model.createData()
        rng = np.random.default_rng(0)
        q = robot.random_configuration(rng)
        v = rng.normal(size=robot.nv)
        tau = rng.normal(size=robot.nv)
        out = np.empty(robot.nv)
        ref = pin.aba(model, data, q, v, tau)
        err = np.abs(robot.forward_dynamics(q, v, tau) - ref).max() / max(1.0, np.abs(ref).max())
        assert err < 1e-9, (kind, err)
        ref = pin.rnea(model, data, q, v, tau)
        assert np.abs(robot.inverse_dynamics(q, v, tau) - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())
        ns = dict(robot=robot, pin=pin, model=model, data=data, q=q, v=v, tau=tau, out=out)
        t = C.time_interleaved({"fd": "robot.forward_dynamics(q, v, tau, out=out)",
                                "aba": "pin.aba(model, data, q, v, tau)",
                                "id": "robot.inverse_dynamics(q, v, tau, out=out)",
                                "rnea": "pin.rnea(model, data, q, v, tau)"}, ns, rounds=args.rounds)
        m = {k: t[k]["median"] for k in t}
        print(f"{kind:12s} {m['fd']:9.2f} {m['aba']:9.2f} {m['fd'] / m['aba']:6.2f}   "
              f"{m['id']:9.2f} {m['rnea']:9.2f} {m['id'] / m['rnea']:6.2f}")


if __name__ == "__main__":
    main()
