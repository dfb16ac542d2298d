"""Flexible links in the floating frame of reference formulation (docs/flexible.md).

spec.py reads the `flexible_links:` YAML section; beam.py discretises a beam with finite elements;
modal.py reads lumped-mass modal data; points.py computes the shape integrals; build.py makes the
flat arrays of kernels/flexible_dynamics.py; robot/flexible_tree.py runs them behind the Robot.
"""
from ...inputs.flexible import read_flexible  # noqa: F401
