"""Frame kinematics of a robot with flexible links (docs/controllers.md, "Kinds of robot"):
FlexibleFrameKinematics, the FrameKinematics contract (robot/frames.py) on the flexible kernels
(kernels/flexible_frame_kinematics.py).

Every link is an end of kernels/flexible_forces.py at its own origin and axes (end index = link
index): a link on or beyond a flexible link has elastic columns, and a link welded to a flexible
link sits at the deformed point of its origin, turned by the elastic rotation there, exactly as
link_pose places it; the flexible link's own frame is its reference frame (the clamp). Each call
is one kernel call on private workspaces (copies of the tree's), atomic under the GIL as the
rigid frame kinematics; no C-level entries (calls go through numba's dispatcher).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..kernels import flexible_forces as ff
from ..kernels import flexible_frame_kinematics as K
from ..model.flexible import layout as F
from .flexible_force_loads import frame_ends
from .frames import FrameKinematics


class FlexibleFrameKinematics(FrameKinematics):
    """Kernels and workspaces of one flexible robot's frame kinematics (module docstring)."""

    def __init__(self, tree):
        # FrameKinematics' attributes that robot.py reads, without its rigid model arrays
        self.tree = tree
        self.nq = tree.nq
        self.nv = tree.nv
        self.link_names = list(tree.model.link_names)
        self.link_index = dict(tree.link_index)
        self.work = np.zeros_like(tree.work)
        self.fwork = np.zeros_like(tree.fwork)
        eye = np.eye(4)
        self.end_int, self.end_float, self.end_data, _ = frame_ends(
            tree, [(link, eye) for link in range(len(self.link_names))])
        self.end_state = np.zeros((len(self.link_names), ff.END_STATE_WIDTH))
        self.unit = np.zeros(self.nv)
        self.column = np.zeros(self.nv)
        self.scratch = np.zeros(8)
        self.factor = np.zeros((self.nv, self.nv))
        self.dof_body = self._dof_bodies(tree)
        self.minv = np.zeros((self.nv, self.nv))
        self.jacobian_scratch = np.zeros((6, self.nv))
        self.osi_scratch = np.zeros((6, self.nv + 6))
        self.targets = {}
        self.c_pending = {}        # no C-level entries
        self.link_calls = {}
        self.link_counts = {}
        self.link_targets = []
        self.bind_kernels()

    @staticmethod
    def _dof_bodies(tree):
        """(nv,) the body of each velocity coordinate (a joint's or an elastic one's), for the
        error naming the joint above a singular coordinate."""
        fint = tree.fint
        out = np.zeros(tree.nv, dtype=np.int64)
        for body in range(1, fint.shape[0]):
            iv = fint[body, F.IDX_V]
            out[iv:iv + fint[body, F.NV_JOINT]] = body
            if fint[body, F.NF] > 0:
                ivf = fint[body, F.IDX_VF]
                out[ivf:ivf + fint[body, F.NF]] = body
        return out

    def bind_kernels(self):
        """The flexible kernels bound to this robot's arrays, with FrameKinematics' call forms."""
        t = self.tree
        model = (t.fint, t.ffloat, t.fdata, self.work, self.fwork)
        ends = (self.end_int, self.end_float, self.end_data, self.end_state)
        self.jacobian = partial(K.flexible_link_jacobian, *model, *ends, self.unit,
                                self.dof_body)
        self.velocity = partial(K.flexible_link_velocity, *model, *ends)
        self.acceleration = partial(K.flexible_link_acceleration, *model, *ends)
        self.center_of_mass = partial(K.flexible_center_of_mass, *model)
        centroidal = partial(K.flexible_centroidal, *model, self.unit, self.scratch)
        self.com_jacobian = lambda q, out: centroidal(q, 3, out)
        self.centroidal = lambda q, out: centroidal(q, 6, out)
        self.minverse = partial(K.flexible_mass_matrix_inverse, *model, self.unit, self.column,
                                self.factor, self.dof_body)

    def install_c_entry(self, robot, method):
        return None

    def link_call(self, method, index, code, fallback):
        return None
