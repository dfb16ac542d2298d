"""The mimic-joint part of a Robot: URDF <mimic joint="leader" multiplier="r" offset="o"/> as
coupling constraints (load(..., mimic=True)).

A mimicking joint m follows its leader l: q_m = r q_l + o, so v_m = r v_l and qdd_m = r qdd_l
(a linear, scleronomic constraint: gamma = 0). The mimicking joint keeps its place in q and v
(joint_states still report it) but is no independent degree of freedom. Each coupling is one
constraint row beside the loops' (constraints.py),

    g_m = q_m - r q_l - o = 0,     G_m = e_m^T - r e_l^T,     G_m v = v_m - r v_l,   gamma_m = 0,

so assembly, projections, forward and inverse dynamics, prescribed motion and simulation respect
it on every kind of robot. With the independent coordinates z (every dof but the mimicking ones)
and the coupling matrix T (nv, nz), v = T z: without loops the forward dynamics are the
minimal-coordinate form (T^T M T) z'' = T^T (tau - h) (docs/theory.md §5 end, J_l = T), and the
inverse dynamics return drive forces on the independent joints only, tau_z = T^T (M qdd + h).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .joint_map import ONE_DOF_TYPES


class MimicCouplings:
    """The couplings of `mimics` [(joint, leader, multiplier, offset)] on a model. Raises
    ModelError naming the joint for an unknown or multi-dof joint, or a chain of mimics."""

    def __init__(self, model, mimics, source):
        index = {name: j for j, name in enumerate(model.joint_names)}
        mimicking = {m[0] for m in mimics}
        coupling = np.eye(model.nv)
        dependent, pairs = [], []
        for name, leader, multiplier, offset in mimics:
            for role, joint in (("mimicking", name), ("leader", leader)):
                if joint not in index:
                    raise ModelError(f"{source}: joint '{name}': <mimic joint='{leader}'>: the "
                                     f"{role} joint '{joint}' is not a movable joint")
                if model.joint_types[index[joint]] not in ONE_DOF_TYPES:
                    raise ModelError(f"{source}: joint '{name}': <mimic>: the {role} joint "
                                     f"'{joint}' must have one degree of freedom (revolute, "
                                     "continuous, prismatic, helical)")
            if leader in mimicking:
                raise ModelError(f"{source}: joint '{name}' mimics '{leader}', which itself "
                                 "mimics another joint: chains of mimic joints are not supported")
            m, lead = int(model.idx_v[index[name]]), int(model.idx_v[index[leader]])
            coupling[m] = 0.0
            coupling[m, lead] = multiplier
            dependent.append(m)
            pairs.append((int(model.idx_q[index[name]]), int(model.idx_q[index[leader]]), m, lead,
                          float(multiplier), float(offset)))
        self.joints = [m[0] for m in mimics]
        self.pairs = pairs
        self.dependent = np.array(sorted(dependent), dtype=np.int64)
        self.independent = np.setdiff1d(np.arange(model.nv), dependent)
        self.coupling = np.ascontiguousarray(coupling[:, self.independent])   # T (nv, nz)
        self.n_rows = len(pairs)

    def rows(self, q, v, nv):
        """(g_m (m,), G_m (m, nv), G_m v (m,)) of the couplings at (q, v)."""
        g = np.empty(self.n_rows)
        jacobian = np.zeros((self.n_rows, nv))
        for k, (iq_m, iq_l, iv_m, iv_l, multiplier, offset) in enumerate(self.pairs):
            g[k] = q[iq_m] - multiplier * q[iq_l] - offset
            jacobian[k, iv_m] = 1.0
            jacobian[k, iv_l] -= multiplier
        return g, jacobian, jacobian @ v

    def apply(self, q, v=None):
        """q (and v) with every mimicking joint set from its leader (copies)."""
        q = np.array(q, dtype=float)
        v = None if v is None else np.array(v, dtype=float)
        self.couple_in_place(q, v)
        return q if v is None else (q, v)

    def couple_in_place(self, q=None, v=None, qdd=None):
        """Set the mimicking joints' entries of the given arrays from their leaders, in place:
        q_m = r q_l + o (q (nq,)), v_m = r v_l, qdd_m = r qdd_l ((nv,) each)."""
        for iq_m, iq_l, iv_m, iv_l, multiplier, offset in self.pairs:
            if q is not None:
                q[iq_m] = multiplier * q[iq_l] + offset
            if v is not None:
                v[iv_m] = multiplier * v[iv_l]
            if qdd is not None:
                qdd[iv_m] = multiplier * qdd[iv_l]
