"""Force elements evaluated on each kind of tree: their loads on the links and joints.

The force-element part of a Robot (forces.py) reads the `forces:` section once; at every call it
asks its tree's evaluator for the elements' loads at (q, v):

- RigidForceLoads (kernels/force_elements.py): spring_damper and bushing ends on rigid links give
  link wrenches (link frames, about the link origins); joint_spring gives joint forces.
- FlexibleForceLoads (flexible_force_loads.py): ends at the deformed points of flexible links;
  the loads come as body wrenches (reference frames) plus generalized forces.

After evaluate(q, v): `link_wrench` (n_links, 6) or None, `body_wrench` (rows, 6) or None,
`joint_force` (nv,), `values` (n, VALUE_WIDTH) (kernels/force_elements.py columns).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
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
