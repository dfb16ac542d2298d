"""mbd_ros.load: a Robot built from its parts (docs/design.md, "Library contract").

The one place that decides, from the inputs, which tree a robot runs on (rigid generic, rigid
generated, flexible) and which parts it has (loop closures, mimic couplings, force elements), and
that says which combinations are not supported.
"""
from __future__ import annotations

import warnings

from ..model import layout as L
from ..codegen import MAX_GENERATED_BODIES
from ..constants import FRICTION_VELOCITY, STANDARD_GRAVITY
from ..errors import ModelError
from ..model.model import build_model
from ..inputs.urdf import read_urdf
from .mimic import MimicCouplings
from .rigid_tree import RigidTree
from .robot import Robot


def load(urdf, closures=None, floating_base=False, gravity=STANDARD_GRAVITY, passive_forces=True,
         friction_velocity=FRICTION_VELOCITY, strict_inertia=False, flexible=None, codegen=False,
         forces=None, mimic=False):
    """A Robot from a URDF file path or URDF XML text (see mbd_ros.load for the arguments)."""
    tree_spec = read_urdf(urdf, strict_inertia)
    model = build_model(tree_spec, floating_base=floating_base, gravity=gravity,
                        passive_forces=passive_forces, friction_velocity=friction_velocity)
    tree = _tree(tree_spec, model, flexible, codegen)
    model = tree.model   # a flexible link welded to its parent is a body of its own (split.py)
    closure_set = loops = None
    if closures is not None:
        from ..inputs.closures import read_closures
        closure_set = read_closures(closures, model.link_names)
        if tree.kind == "flexible":
            from .flexible_loops import FlexibleLoopKinematics
            loops = FlexibleLoopKinematics(tree, closure_set)
        else:
            from .loop_kinematics import RigidLoopKinematics
            loops = RigidLoopKinematics(tree, closure_set)
    couplings = None
    if mimic:
        from ..inputs.mimic import read_mimics
        mimics = read_mimics(tree_spec, model.source)   # the XML read (a .xacro: expanded once)
        if mimics:
            couplings = MimicCouplings(model, mimics, model.source)
    specs, where = None, ""
    if forces is not None:
        from ..inputs.forces import read_forces
        joints = dict(zip(model.joint_names, model.joint_types))
        try:
            specs, where = read_forces(forces, model.link_names, joints)
        except ModelError as exc:
            raise ModelError(str(exc).replace("closure file", "forces file")) from None
    robot = Robot(model, tree, closure_set=closure_set, loops=loops, mimic=couplings,
                  forces=specs or None, force_source=where)
    robot._check_regular()
    return robot


def _tree(tree_spec, model, flexible, codegen):
    """The tree the robot runs on: flexible kernels with flexible links, generated kernels with
    codegen=True where the generator supports the model, else the generic kernels."""
    if flexible is not None:
        if codegen:
            warnings.warn(f"{model.source}: codegen=True: there are no generated kernels for "
                          "flexible links; using the flexible kernels", stacklevel=3)
        from ..model.flexible import read_flexible
        from ..model.flexible.build import build_flexible
        from .flexible_tree import FlexibleTree
        specs = read_flexible(flexible, model.link_names)
        built = build_flexible(tree_spec, model, specs)
        return FlexibleTree(built.model, built)
    if codegen:
        reason = _codegen_unsupported(model)
        if reason is None:
            from .generated_tree import GeneratedTree
            try:
                return GeneratedTree(model)
            except OSError as exc:
                reason = f"generated kernels unavailable, using the generic ones: {exc}"
        warnings.warn(f"{model.source}: {reason}", stacklevel=3)
    return RigidTree(model)


def _codegen_unsupported(model):
    """Why codegen cannot serve this model, or None."""
    if model.n_bodies > MAX_GENERATED_BODIES:
        return (f"{model.n_bodies} bodies is more than codegen handles ({MAX_GENERATED_BODIES}); "
                "using the generic kernels")
    # (a universal joint is two bodies, and the generator names body i after joint i - 1)
    unsupported = sorted({L.JOINT_TYPE_NAMES[t] for t in model.body_int[1:, L.JOINT_TYPE]
                          if t in (L.JOINT_HELICAL, L.JOINT_CYLINDRICAL)}
                         | ({"universal"} & set(model.joint_types)))
    if unsupported:
        return (f"codegen does not support {', '.join(unsupported)} joints; using the generic "
                "kernels")
    return None
