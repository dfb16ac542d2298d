"""Flexible links in the floating frame of reference formulation (docs/flexible.md).

spec.py reads the `flexible_links:` YAML section; beam.py discretises a beam with finite elements;
modal.py reads lumped-mass modal data; points.py computes the shape integrals; build.py makes the
flat arrays of kernels/flexible_dynamics.py; robot.py is the FlexibleRobot facade.
"""
from .spec import read_flexible  # noqa: F401


def make_flexible_robot(tree, model, flexible, closures=None):
    """FlexibleRobot of `model` (built from `tree`) with the flexible links of `flexible` (a path,
    YAML text or dict with a `flexible_links:` section); with `closures` (as load()'s) a
    FlexibleClosedLoopRobot (loops.py)."""
    from .build import build_flexible
    from .robot import FlexibleRobot
    specs = read_flexible(flexible, model.link_names)
    built = build_flexible(tree, model, specs)
    model = built.model      # welded flexible links split into bodies of their own (split.py)
    if closures is None:
        return FlexibleRobot(model, built)
    from ..closures import read_closures
    from .loops import FlexibleClosedLoopRobot
    return FlexibleClosedLoopRobot(model, built, read_closures(closures, model.link_names))
