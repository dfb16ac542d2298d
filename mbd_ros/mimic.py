"""Mimic joints (URDF <mimic joint="leader" multiplier="r" offset="o"/>) as coupling constraints.

With load(..., mimic=True) a mimicking joint m follows its leader l: q_m = r q_l + o, so
v_m = r v_l and qdd_m = r qdd_l (a linear, scleronomic constraint: gamma = 0). The mimicking
joint keeps its place in q and v (joint_states still report it) but is no independent degree of
freedom. With the independent coordinates z (every dof but the mimicking ones) and the coupling
matrix T (nv, nz): v = T z, qdd = T z'. The equations of motion in z are the tree's projected
by T (the minimal-coordinate form, docs/theory.md §5 end, with J_l = T):

    (T^T M T) z'' = T^T (tau - h),     h = the tree's inverse dynamics at qdd = 0

and the coupling force is the rest, M qdd + h - tau. With loop closures the loops' constraints
G_l qdd + gamma = 0 become G_l T z'' + gamma = 0, solved with multipliers (dense KKT,
minimum norm). Inverse dynamics returns drive forces on the independent joints only (a mimic
joint is driven through its leader): tau_z = T^T (M qdd + h).

load(..., mimic=False) (the default, as Pinocchio's URDF parser) keeps every joint independent.
"""
from __future__ import annotations

import numpy as np
from lxml import etree

from .errors import ModelError


def read_mimics(urdf, source_name):
    """[(joint, leader, multiplier, offset)] of the <mimic> tags of a URDF (path or XML text)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        if isinstance(urdf, str) and "<" not in urdf:
            root = etree.parse(urdf, parser).getroot()
        else:
            text = urdf.encode() if isinstance(urdf, str) else urdf
            root = etree.fromstring(text, parser)
    except (OSError, etree.XMLSyntaxError) as exc:
        raise ModelError(f"{source_name}: cannot read the mimic tags: {exc}") from None
    mimics = []
    for joint in root.iter("joint"):
        tag = joint.find("mimic")
        if tag is None:
            continue
        name = joint.get("name")
        leader = tag.get("joint")
        if not leader:
            raise ModelError(f"{source_name}: joint '{name}': <mimic> needs a joint attribute")
        try:
            multiplier = float(tag.get("multiplier", "1"))
            offset = float(tag.get("offset", "0"))
        except ValueError:
            raise ModelError(f"{source_name}: joint '{name}': <mimic> multiplier and offset must "
                             "be numbers") from None
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"{source_name}: joint '{name}': <mimic> multiplier and offset must "
                             "be finite")
        mimics.append((name, leader, multiplier, offset))
    return mimics


def attach(robot, urdf):
    """Make `robot` honour the URDF's mimic tags (swaps in the MimicMixin behaviour)."""
    source = robot.model.source
    mimics = read_mimics(urdf, source)
    if not mimics:
        return robot
    if robot.closure_names:
        raise ModelError(f"{source}: mimic joints together with loop closures are not supported "
                         "yet; load with mimic=False")
    index = {name: j for j, name in enumerate(robot.joint_names)}
    coupling = np.eye(robot.nv)
    dependent, pairs = [], []
    for name, leader, multiplier, offset in mimics:
        for role, joint in (("mimicking", name), ("leader", leader)):
            if joint not in index:
                raise ModelError(f"{source}: joint '{name}': <mimic joint='{leader}'>: the {role} "
                                 f"joint '{joint}' is not a movable joint")
            if robot.joint_types[index[joint]] not in ("revolute", "prismatic"):
                raise ModelError(f"{source}: joint '{name}': <mimic>: the {role} joint '{joint}' "
                                 "must have one degree of freedom")
        if leader in {m[0] for m in mimics}:
            raise ModelError(f"{source}: joint '{name}' mimics '{leader}', which itself mimics "
                             "another joint: chains of mimic joints are not supported")
        m, lead = robot.idx_v[index[name]], robot.idx_v[index[leader]]
        coupling[m] = 0.0
        coupling[m, lead] = multiplier
        dependent.append(m)
        pairs.append((int(robot.idx_q[index[name]]), int(robot.idx_q[index[leader]]),
                      int(m), int(lead), multiplier, offset))
    independent = np.setdiff1d(np.arange(robot.nv), dependent)
    robot.mimic_joints = [m[0] for m in mimics]
    robot.mimic_coupling = np.ascontiguousarray(coupling[:, independent])   # T (nv, nz)
    robot.mimic_independent = independent
    robot._mimic_pairs = pairs
    robot.__class__ = type("Mimic" + type(robot).__name__, (MimicMixin, type(robot)), {})
    return robot


class MimicMixin:
    """forward / inverse dynamics and configurations of a robot with coupled mimic joints."""

    def neutral(self):
        """(nq,) the zero configuration with the mimic couplings applied (q_m = offset)."""
        return self.apply_mimic(super().neutral())

    def apply_mimic(self, q, v=None):
        """q (and v) with every mimicking joint set from its leader: q_m = r q_l + o, v_m = r v_l."""
        q = np.array(q, dtype=float)
        for iq_m, iq_l, iv_m, iv_l, multiplier, offset in self._mimic_pairs:
            q[iq_m] = multiplier * q[iq_l] + offset
        if v is None:
            return q
        v = np.array(v, dtype=float)
        for _, _, iv_m, iv_l, multiplier, _ in self._mimic_pairs:
            v[iv_m] = multiplier * v[iv_l]
        return q, v

    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, **options):
        """qdd (nv,) with the mimic joints coupled: (T^T M T) z'' = T^T (tau - h), qdd = T z''."""
        from .robot import Robot, _vector
        if options.get("prescribed") is not None:
            raise ValueError("prescribed motion is not supported together with mimic joints")
        tau = _vector(tau, self.nv, "tau")
        mass = Robot.mass_matrix(self, q).copy()
        h = Robot.inverse_dynamics(self, q, v, np.zeros(self.nv), f_ext=f_ext).copy()
        T = self.mimic_coupling
        z = np.linalg.solve(T.T @ mass @ T, T.T @ (tau - h))
        result = T @ z
        if out is not None:
            out[:] = result
            return out
        return result

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces (nv,) on the independent joints (zeros on mimicking joints) that produce
        the coupled qdd: tau_z = T^T (M qdd + h). Raises ValueError if qdd breaks a coupling."""
        from .robot import Robot, _vector
        qdd = _vector(qdd, self.nv, "qdd")
        for _, _, iv_m, iv_l, multiplier, _ in self._mimic_pairs:
            if abs(qdd[iv_m] - multiplier * qdd[iv_l]) > 1e-9 * max(1.0, abs(qdd[iv_l])):
                raise ValueError(f"qdd breaks a mimic coupling (qdd[{iv_m}] must be "
                                 f"{multiplier} x qdd[{iv_l}])")
        tau_tree = Robot.inverse_dynamics(self, q, v, qdd, f_ext=f_ext)
        result = np.zeros(self.nv)
        result[self.mimic_independent] = self.mimic_coupling.T @ tau_tree
        if out is not None:
            out[:] = result
            return out
        return result
