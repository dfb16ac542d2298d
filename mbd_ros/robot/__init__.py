"""The robot layer: one Robot class for every kind of robot, built from parts.

robot.py (the Robot facade), build.py (load: which tree and parts), trees (tree.py,
rigid_tree.py, generated_tree.py, flexible_tree.py), parts (constraints.py with
loop_kinematics.py and mimic.py, forces.py with force_loads.py, prescribed.py), the formalisms
they use (descriptor.py) and the integrators of robot.step (integrators.py).
"""
from .robot import Robot  # noqa: F401
