"""Closed-loop forward dynamics per call: mbd_ros (recursive, seed [000]) vs pin.constraintDynamics.

Mechanisms:
- the package samples with 3D (spherical) cuts: urdf/spatial_rssr.urdf (1 loop, non-redundant)
  and urdf/fourbar.urdf + config/fourbar_spherical_cut.yaml (redundant: rank 2 of 3);
- generated mechanisms with k = 1, 2, 4, 8 loops, each loop two serial chains from the base
  whose tips are joined by a cut: spherical cuts (3D; chains of 2 joints each) or fixed cuts
  (6D; chains of 4 joints each), random axes, so cost can be read against the number of loops.

Both libraries get the same URDF (revolute joints) and the same cut frames; Pinocchio uses
RigidConstraintModel(CONTACT_3D | CONTACT_6D, LOCAL) with tight proximal settings
(mu = 1e-14, accuracy 1e-12, 100 iterations), as the tests do. Before timing, the accelerations
of both are compared (relative 1e-9).

    PYTHONPATH=. python bench/bench_closed_loops.py [--out bench/results/closed_loops.md]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.add_repo_to_path()


def _inertial(rng, mass):
    moments = rng.uniform(0.5, 1.0, 3) * mass * 0.01
    return (f'<inertial><origin xyz="{rng.uniform(-.05, .05):.4f} 0 0.05"/><mass value="{mass:.3f}"/>'
            f'<inertia ixx="{moments[0]:.6f}" ixy="0" ixz="0" iyy="{moments[1]:.6f}" iyz="0" '
            f'izz="{moments[2]:.6f}"/></inertial>')


def generated_mechanism(n_loops, cut_type, seed=0):
    """(URDF text, closures dict) of n_loops two-chain loops on one base, assembled at q = 0."""
    rng = np.random.default_rng(seed)
    joints_per_chain = 2 if cut_type == "spherical" else 4
    links = ['<link name="base"/>']
    joints = []
    closures = []
    for loop in range(n_loops):
        anchor = np.array([np.cos(2 * np.pi * loop / n_loops), np.sin(2 * np.pi * loop / n_loops), 0.0])
        tip = anchor * 0.5 + np.array([0.0, 0.0, 0.6])
        chain_tips = []
        for chain, start in enumerate((anchor * 0.3, anchor * 0.7)):
            parent = "base"
            # offsets from the start to the common tip, split over the chain's links
            offsets = [start] + [(tip - start) / joints_per_chain] * joints_per_chain
            offsets = [o + (rng.normal(scale=0.03, size=3) if 0 < i < joints_per_chain else 0)
                       for i, o in enumerate(offsets)]
            offsets[-1] = tip - start - sum(offsets[1:-1], np.zeros(3))
            for j in range(joints_per_chain):
                name = f"l{loop}c{chain}j{j}"
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis)
                xyz = offsets[j]
                links.append(f'<link name="{name}">{_inertial(rng, rng.uniform(0.2, 1.0))}</link>')
                joints.append(f'<joint name="{name}_joint" type="revolute"><parent link="{parent}"/>'
                              f'<child link="{name}"/><origin xyz="{xyz[0]:.17g} {xyz[1]:.17g} {xyz[2]:.17g}"/>'
                              f'<axis xyz="{axis[0]:.17g} {axis[1]:.17g} {axis[2]:.17g}"/>'
                              '<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>')
                parent = name
            chain_tips.append((parent, offsets[-1]))
        (link_a, off_a), (link_b, off_b) = chain_tips
        closures.append({"name": f"cut{loop}", "type": cut_type, "parent": link_a, "child": link_b,
                         "parent_origin": {"xyz": [float(x) for x in off_a]},
                         "child_origin": {"xyz": [float(x) for x in off_b]}})
    xml = '<robot name="loops">' + "".join(links) + "".join(joints) + "</robot>"
    return xml, {"closures": closures, "actuated": []}


def sample_mechanism(urdf, closures_file):
    import yaml
    import re
    xml = (common.REPO / urdf).read_text()
    # continuous -> revolute with wide limits (Pinocchio's continuous joints take cos/sin
    # coordinates); a continuous joint's own <limit effort velocity> (no lower/upper) goes, as
    # URDF allows one <limit> per joint
    xml = re.sub(r'<limit (?![^>]*lower)[^>]*/>', '', xml)
    xml = xml.replace('type="continuous">', 'type="revolute"><limit lower="-10" upper="10" '
                                            'effort="1" velocity="1"/>')
    return xml, yaml.safe_load((common.REPO / closures_file).read_text())


def pin_constraints(model, closures):
    """RigidConstraintModel list equal to our cuts (frames on the joints' bodies)."""
    import pinocchio as pin
    from mbd_ros.inputs.closures import read_closures
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    names = [f.name for f in model.frames]
    spec_set = read_closures(closures, names)
    for spec in spec_set.closures:
        kind = {"spherical": pin.ContactType.CONTACT_3D, "fixed": pin.ContactType.CONTACT_6D}[spec.type]
        placements = []
        for link, origin in ((spec.parent, spec.parent_origin), (spec.child, spec.child_origin)):
            frame = model.frames[model.getFrameId(link)]
            placements.append((frame.parentJoint,
                               frame.placement * pin.SE3(origin[:3, :3].copy(), origin[:3, 3].copy())))
        cm = pin.RigidConstraintModel(kind, model, placements[0][0], placements[0][1],
                                      placements[1][0], placements[1][1], pin.ReferenceFrame.LOCAL)
        models.append(cm)
        datas.append(cm.createData())
    return models, datas


def measure(label, xml, closures, rng, rounds):
    import mbd_ros
    import pinocchio as pin
    robot = mbd_ros.load(xml, closures=closures, passive_forces=False)
    tree = mbd_ros.load(xml, passive_forces=False)   # the same tree without the loops
    model = common.pin_model(xml, False)
    data = model.createData()
    perm = common.Permutation(robot, model)
    cms, cds = pin_constraints(model, closures)
    pin.initConstraintDynamics(model, data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 100)
    try:  # a nearby assembled configuration (the neutral one is assembled by construction)
        q = robot.assemble(robot.neutral() + 0.01 * rng.standard_normal(robot.nq))
    except ValueError:
        q = robot.neutral()
    v = robot.project_velocity(q, rng.standard_normal(robot.nv))
    tau = rng.standard_normal(robot.nv)
    qp, vp, tp = (np.ascontiguousarray(x[p]) for x, p in ((q, perm.q), (v, perm.v), (tau, perm.v)))
    out = np.empty(robot.nv)
    robot.compile_c_calls()   # the C-level entry (mbd_ros/fastcall/closed_loop.py), timed below
    tree.compile_c_calls()
    ours = robot.forward_dynamics(q, v, tau, out=out).copy()
    theirs = pin.constraintDynamics(model, data, qp, vp, tp, cms, cds, prox)[perm.v_inv]
    error = common.rel_err(ours, theirs)
    from mbd_ros import fastcall
    if fastcall.AVAILABLE:   # else numba's dispatcher is timed (the report's command line says)
        assert robot.forward_dynamics.counts()[0] >= 1, "the closed-loop C entry was not taken"
    ns = dict(robot=robot, tree=tree, q=q, v=v, tau=tau, out=out, pin=pin, model=model, data=data,
              qp=qp, vp=vp, tp=tp, cms=cms, cds=cds, prox=prox)
    t = common.time_interleaved({
        "ours": "robot.forward_dynamics(q, v, tau, out=out)",
        "tree": "tree.forward_dynamics(q, v, tau, out=out)",
        "pin": "pin.constraintDynamics(model, data, qp, vp, tp, cms, cds, prox)",
    }, ns, rounds=rounds)
    return [label, robot.nv, robot.n_constraints, robot.last_rank, f"{error:.1e}",
            common.fmt_us(t["ours"]["min"]) + " / " + common.fmt_us(t["ours"]["median"]),
            common.fmt_us(t["pin"]["min"]) + " / " + common.fmt_us(t["pin"]["median"]),
            common.fmt_ratio(t["ours"]["min"] / t["pin"]["min"]) + " / "
            + common.fmt_ratio(t["ours"]["median"] / t["pin"]["median"]),
            common.fmt_us(t["tree"]["min"]),
            # issue 7 target: <= 1.0 x pin.constraintDynamics on one-loop mechanisms
            common.target_verdict(t["ours"]["min"] / t["pin"]["min"], 1.0)
            if robot.n_constraints and label_is_one_loop(label) else ""]


def label_is_one_loop(label):
    """The mechanisms the closed-loop target applies to (one loop)."""
    return label.startswith("spatial_rssr") or label.startswith("fourbar") or " 1 x " in label


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the markdown to this file")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    cases = [("spatial_rssr (sample, 1 x 3D)", *sample_mechanism("urdf/spatial_rssr.urdf",
                                                                   "config/spatial_rssr_closures.yaml")),
             ("fourbar spherical cut (sample, 3D, redundant)",
              *sample_mechanism("urdf/fourbar.urdf", "config/fourbar_spherical_cut.yaml"))]
    for kind in ("spherical", "fixed"):
        for n in (1, 2, 4, 8):
            cases.append((f"generated {n} x {'3D' if kind == 'spherical' else '6D'} ({kind})",
                          *generated_mechanism(n, kind, seed=n)))
    for label, xml, closures in cases:
        rows.append(measure(label, xml, closures, rng, args.rounds))
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    text = "\n".join([
        "## Closed-loop forward dynamics vs pin.constraintDynamics",
        "",
        common.machine_markdown(common.this_command()),
        "- ours: `robot.forward_dynamics(q, v, tau, out=out)` of a ClosedLoopRobot (recursive [000]) "
        "through its C-level entry (mbd_ros/fastcall/closed_loop.py, installed by compile_c_calls()); "
        "tree: the same URDF loaded without the loops, its FD through its C entry, for reference "
        "(ours - tree = the cost of the loops)",
        "- pin: `pin.constraintDynamics(model, data, q, v, tau, constraint_models, constraint_datas, "
        "ProximalSettings(1e-14, 1e-12, 100))` with CONTACT_3D / CONTACT_6D constraints in LOCAL",
        "- cells `min / median` µs per call; ratio = ours / pin; err = max|qdd ours - qdd pin| / max(1, |qdd pin|)",
        "",
        "- target (issue 7): closed-loop FD <= 1.0 x pin.constraintDynamics on one-loop mechanisms "
        "(ratio of the interleaved minima; interleaved ratios are the trustworthy number on a shared machine)",
        "",
        common.md_table(["mechanism", "nv", "rows", "rank", "err", "ours µs", "pin µs", "ratio",
                         "tree FD µs", "one-loop target"], rows),
        "",
        common.end_markdown(),
    ])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
