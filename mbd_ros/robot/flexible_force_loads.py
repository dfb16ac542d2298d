"""Force elements on a flexible tree: FlexibleForceLoads (force_loads.py's contract).

An end on a flexible link (or on a link welded to one) acts at the DEFORMED point
c + Phi_t(c) q_f with the frame turned by the Cayley rotation of Phi_r(c) q_f, exactly as a child
joint hangs there, so its generalized force has elastic rows Phi_t^T F + (G Phi_r)^T T
(kernels/flexible_forces.py). The loads come as body wrenches (reference frames) plus generalized
forces (joint springs and elastic rows).
"""
from __future__ import annotations

import numpy as np

from ..model.flexible import layout as F
from ..kernels import flexible_forces as ff
from .force_loads import ElementArrays


def frame_ends(tree, ends):
    """Flat end arrays (kernels/flexible_forces.py) of frames on a FlexibleTree's links.

    ends: list of (link index, (4, 4) frame in the link) or None (an unused row). Returns
    (end_int, end_float, end_data, end_link): each frame's body, its origin c and axes in the
    body's reference frame, and on a flexible body the mode shapes Phi_t(c), Phi_r(c)."""
    by_body = {fb.body: fb for fb in tree.flexible.bodies}
    end_int = -np.ones((len(ends), ff.END_INT_WIDTH), dtype=np.int64)
    end_float = np.zeros((len(ends), ff.END_FLOAT_WIDTH))
    end_link = np.full(len(ends), -1, dtype=np.int64)
    blocks, offset = [], 0
    for row, end in enumerate(ends):
        if end is None:
            continue
        link, frame = end
        body = tree.link_body(link)
        rot, pos = tree.link_placement(link)
        c, frame_rot = rot @ frame[:3, 3] + pos, rot @ frame[:3, :3]
        end_link[row] = link
        end_int[row, ff.END_BODY] = body
        end_int[row, ff.END_NF] = 0
        end_float[row, ff.END_POINT:ff.END_POINT + 3] = c
        end_float[row, ff.END_ROT:ff.END_ROT + 9] = frame_rot.ravel()
        if body > 0 and tree.fint[body, F.NF] > 0:
            fb = by_body[body]
            phi_t, phi_r = fb.frame_shapes(link, c)   # welded links: at their attachment
            end_int[row, ff.END_NF] = fb.n_modes
            end_int[row, ff.END_IQF] = fb.iq
            end_int[row, ff.END_IVF] = fb.iv
            end_int[row, ff.END_SHAPE] = offset
            blocks.append(np.concatenate([np.ravel(phi_t), np.ravel(phi_r)]))
            offset += 6 * fb.n_modes
    end_data = np.concatenate(blocks) if blocks else np.zeros(1)
    return end_int, end_float, end_data, end_link


class FlexibleForceLoads(ElementArrays):
    """Element loads on a flexible tree: body wrenches at the deformed ends, generalized forces
    (joint springs and elastic rows)."""

    def __init__(self, tree, specs, source):
        super().__init__(tree, specs, source)
        self.tree = tree
        ends = []
        for s in specs:
            if s.type == "joint_spring":
                ends += [None, None]
                continue
            for link_name, point, frame in ((s.parent, s.parent_point, s.parent_origin),
                                            (s.child, s.child_point, s.child_origin)):
                if frame is None:           # spring_damper: a point, the link's axes
                    frame = np.eye(4)
                    frame[:3, 3] = point
                ends.append((tree.link_index[link_name], frame))
        self.end_int, self.end_float, self.end_data, self.end_link = frame_ends(tree, ends)
        self.end_state = np.zeros((2 * len(specs), ff.END_STATE_WIDTH))
        self.end_wrench = np.zeros((2 * len(specs), 6))
        self.body_wrench = np.zeros((tree.fint.shape[0], 6))
        self.link_wrench = None

    def evaluate(self, q, v):
        """The elements' loads at (q, v) (validated float64 arrays)."""
        t = self.tree
        ff.flexible_force_loads(t.fint, t.ffloat, t.fdata, t.work, t.fwork, self.element_int,
                                self.element_float, self.end_int, self.end_float, self.end_data,
                                q, v, self.end_state, self.body_wrench, self.end_wrench,
                                self.joint_force, self.values, self._scratch)

    def fixed_joint_link_loads(self):
        """(n_links, 6) the last evaluation's loads on rigid-body ends as link wrenches (link
        frame about its origin): already in body_wrench, recorded on their links for the
        fixed-joint wrenches of welded links."""
        t = self.tree
        out = np.zeros((t.n_links, 6))
        for row, link in enumerate(self.end_link):
            if link < 0 or self.end_int[row, ff.END_SHAPE] >= 0:
                continue
            rot, pos = t.link_placement(link)
            force, torque = self.end_wrench[row, :3], self.end_wrench[row, 3:]
            out[link, :3] += rot.T @ force
            out[link, 3:] += rot.T @ (torque - np.cross(pos, force))
        return out


