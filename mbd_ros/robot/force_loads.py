"""Force elements evaluated on each kind of tree: their loads on the links and joints.

The force-element part of a Robot (forces.py) reads the `forces:` section once; at every call it
asks its tree's evaluator for the elements' loads at (q, v):

- RigidForceLoads (kernels/force_elements.py): spring_damper and bushing ends on rigid links give
  link wrenches (link frames, about the link origins); joint_spring gives joint forces.
- FlexibleForceLoads (kernels/flexible_forces.py): an end on a flexible link (or on a link welded
  to one) acts at the DEFORMED point c + Phi_t(c) q_f with the frame turned by the Cayley rotation
  of Phi_r(c) q_f, exactly as a child joint hangs there, so its generalized force has elastic rows
  Phi_t^T F + (G Phi_r)^T T. The loads come as body wrenches (reference frames) plus generalized
  forces.

After evaluate(q, v): `link_wrench` (n_links, 6) or None, `body_wrench` (rows, 6) or None,
`joint_force` (nv,), `values` (n, VALUE_WIDTH) (kernels/force_elements.py columns).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..flexible import layout as F
from ..kernels import flexible_forces as ff
from ..kernels import force_elements as fk


class ElementArrays:
    """The elements' flat arrays (kernels/force_elements.py) from the ForceSpec list."""

    def __init__(self, tree, specs, source):
        model = tree.model
        n = len(specs)
        link_index = {name: i for i, name in enumerate(model.link_names)}
        joint_index = {name: j for j, name in enumerate(model.joint_names)}
        self.element_int = np.zeros((n, fk.ELEMENT_INT_WIDTH), dtype=np.int64)
        self.element_float = np.zeros((n, fk.ELEMENT_FLOAT_WIDTH))
        for e, s in enumerate(specs):
            ei, ef = self.element_int[e], self.element_float[e]
            ei[fk.ELEMENT_TYPE] = fk.TYPE_CODES[s.type]
            if s.type == "joint_spring":
                j = joint_index[s.joint]
                ei[fk.JOINT_IQ] = model.idx_q[j]
                ei[fk.JOINT_IV] = model.idx_v[j]
                ef[fk.STIFFNESS], ef[fk.DAMPING], ef[fk.REST] = s.stiffness, s.damping, s.rest
                continue
            ei[fk.LINK_A], ei[fk.LINK_B] = link_index[s.parent], link_index[s.child]
            if tree.link_body(ei[fk.LINK_A]) == tree.link_body(ei[fk.LINK_B]):
                raise ModelError(f"{source}: force '{s.name}': links '{s.parent}' and "
                                 f"'{s.child}' are welded into one rigid body (fixed joints): the "
                                 "element would only load that body internally")
            if s.type == "spring_damper":
                ef[fk.POINT_A:fk.POINT_A + 3] = s.parent_point
                ef[fk.POINT_B:fk.POINT_B + 3] = s.child_point
                ef[fk.STIFFNESS], ef[fk.DAMPING] = s.stiffness, s.damping
                ef[fk.REST], ef[fk.PRELOAD] = s.rest, s.preload
            else:
                ef[fk.FRAME_A_ROT:fk.FRAME_A_ROT + 9] = s.parent_origin[:3, :3].ravel()
                ef[fk.FRAME_A_POS:fk.FRAME_A_POS + 3] = s.parent_origin[:3, 3]
                ef[fk.FRAME_B_ROT:fk.FRAME_B_ROT + 9] = s.child_origin[:3, :3].ravel()
                ef[fk.FRAME_B_POS:fk.FRAME_B_POS + 3] = s.child_origin[:3, 3]
                ef[fk.STIFFNESS6:fk.STIFFNESS6 + 6] = s.stiffness
                ef[fk.DAMPING6:fk.DAMPING6 + 6] = s.damping
        self.values = np.zeros((n, fk.VALUE_WIDTH))
        self.joint_force = np.zeros(tree.nv)
        self._scratch = np.zeros(72)


class RigidForceLoads(ElementArrays):
    """Element loads on a rigid tree: link wrenches and joint forces."""

    def __init__(self, tree, specs, source):
        super().__init__(tree, specs, source)
        self.tree = tree
        self.link_wrench = np.zeros((tree.n_links, 6))
        self.body_wrench = None

    def evaluate(self, q, v):
        """The elements' loads at (q, v) (validated float64 arrays); runs the kinematics on the
        tree's loaded workspace."""
        t = self.tree
        fk.force_element_loads(t.body_int, t.body_float, t.link_int, t.link_float, t.work,
                               self.element_int, self.element_float, q, v, self.link_wrench,
                               self.joint_force, self.values, self._scratch)

    def fixed_joint_link_loads(self):
        """Element loads to record on links for the fixed-joint wrench pass beyond link_wrench
        (none: every rigid load is a link wrench)."""
        return None


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
            phi_t, phi_r = fb.shapes(c)
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


def force_loads(tree, specs, source):
    """The evaluator of `specs` (a ForceSpec tuple) for `tree`."""
    cls = FlexibleForceLoads if tree.kind == "flexible" else RigidForceLoads
    return cls(tree, specs, source)
