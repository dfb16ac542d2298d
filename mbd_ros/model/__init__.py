"""The model layer: validated robots as immutable flat arrays for the kernels.

model.py builds the rigid Model from a URDF tree (layout.py: the columns of its arrays and of the
workspaces); flexible/ turns the flexible links into modal data (finite-element beams or modal
files, shape integrals, attachments of welded links) and the flexible kernels' arrays.
"""
from .model import Model, build_model  # noqa: F401
