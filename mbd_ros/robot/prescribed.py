"""Prescribed (rheonomic) joint motion: hybrid dynamics (docs/theory.md §3).

Some joints p follow given accelerations qdd_p (from a trajectory q_p(t)); the others f are free.
The drive forces u_p the prescribed joints need are unknowns, like the multipliers of rheonomic
constraints q_p - q_p(t) = 0 [003]. With the tree's mass matrix M and h = the tree's inverse
dynamics at qdd = 0 (bias, gravity, passive and force elements), the equations of motion

    M qdd + h = tau + u + G_l^T lambda,     G_l qdd + gamma = 0  (closed loops, mimic couplings)

with qdd_p known and u zero on the free joints are solved densely for (qdd_f, lambda, u_p):

    [ M_ff   -G_f^T   0 ] [ qdd_f  ]   [ tau_f - h_f - M_fp qdd_p ]
    [ M_pf   -G_p^T  -1 ] [ lambda ] = [ tau_p - h_p - M_pp qdd_p ]
    [ G_f     0       0 ] [ u_p    ]   [ -gamma - G_p qdd_p       ]

(minimum-norm with redundant constraints). For a tree it reduces to a Cholesky solve with M_ff
and u_p = (M qdd + h - tau)_p (a numba kernel, mbd_ros/kernels/hybrid.py). O(n^3): an exact,
simple hybrid solver, not the O(n) recursion. The same for every kind of tree (rigid, generated,
flexible: M and h are the tree's).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import excerpt
from .arguments import real_array
from ..kernels.hybrid import hybrid_tree_solve as _hybrid_tree_solve


class PrescribedPlans:
    """Index arrays of the sets of prescribed joints a robot was asked for (bounded cache)."""

    def __init__(self, model, nv):
        self.nv = nv
        self.slots = {}     # movable joint name: (joint index, q index, v index, dofs, type)
        for j, name in enumerate(model.joint_names):
            start = int(model.idx_v[j])
            stop = int(model.idx_v[j + 1]) if j + 1 < len(model.idx_v) else model.nv
            self.slots[name] = (j, int(model.idx_q[j]), start, stop - start, model.joint_types[j])
        self.joint_names = model.joint_names
        self.plans = {}
        self.scratch = (np.zeros((nv, nv)), np.zeros(nv))   # used under the robot's lock

    def plan(self, names):
        """(sizes, p (k,), f (nv - k,), ix_ff, ix_fp, ix_pp, ix_pf) of a set of prescribed
        joints. Raises ValueError naming the joint."""
        key = tuple(names)
        plan = self.plans.get(key)
        if plan is not None:
            return plan
        sizes, dofs = [], []
        for name in key:
            if name not in self.slots:
                raise ValueError(f"prescribed: unknown movable joint '{excerpt(str(name), 80)}' "
                                 f"(joints: {', '.join(self.joint_names[:8])}...)")
            _, _, start, size, _ = self.slots[name]
            sizes.append(size)
            dofs.extend(range(start, start + size))
        p = np.array(dofs, dtype=np.int64)
        f = np.setdiff1d(np.arange(self.nv), p)
        plan = (sizes, p, f, np.ix_(f, f), np.ix_(f, p), np.ix_(p, p), np.ix_(p, f))
        if len(self.plans) >= 32:   # a caller varying the set: keep the cache bounded
            self.plans.clear()
        self.plans[key] = plan
        return plan


def prescribed_dofs(plans, prescribed):
    """(dofs (k,), qdd (k,)) of a {joint name: qdd} mapping (one-dof joints take a number,
    multi-dof joints a sequence). Raises ValueError naming the joint."""
    if not isinstance(prescribed, dict):
        raise ValueError(f"prescribed must be a dict {{joint: acceleration}}, got "
                         f"{type(prescribed).__name__}")
    sizes, p, _, _, _, _, _ = plans.plan(prescribed)
    values = np.empty(len(p))
    k = 0
    for (name, value), size in zip(prescribed.items(), sizes):
        if size == 1 and type(value) is float and math.isfinite(value):   # the common case
            values[k] = value
            k += 1
            continue
        value = np.atleast_1d(real_array(value, f"prescribed['{excerpt(str(name), 80)}']",
                                         f"{size} acceleration(s)"))
        if value.shape != (size,) or not np.isfinite(value).all():
            raise ValueError(f"prescribed['{excerpt(str(name), 80)}']: expected {size} finite "
                             f"acceleration(s), got {excerpt(prescribed[name], 80)}")
        values[k:k + size] = value
        k += size
    return p, values


def solve(plans, mass, bias, tau, prescribed, rows):
    """(qdd (nv,), u (nv,)): accelerations with the prescribed joints' accelerations as given,
    and the drive forces u the prescribed joints need on top of tau (zeros on free joints).

    mass (nv, nv), bias (nv,): the tree's M and h (its inverse dynamics at qdd = 0 with the
    call's loads); tau: the total generalized forces; rows: (G, gamma) of the robot's constraints
    (loops, mimic couplings; Baumgarte terms included) or None. Caller holds the robot's lock."""
    nv = plans.nv
    p, qdd_p = prescribed_dofs(plans, prescribed)
    _, _, f, ix_ff, ix_fp, ix_pp, ix_pf = plans.plan(prescribed)
    qdd = np.zeros(nv)
    u = np.zeros(nv)
    if rows is not None:
        qdd[p] = qdd_p
        jac, gamma = rows
        b = jac.shape[0]
        nf, npr = len(f), len(p)
        kkt = np.zeros((nv + b, nf + b + npr))
        rhs = np.zeros(nv + b)
        kkt[:nf, :nf] = mass[ix_ff]
        kkt[:nf, nf:nf + b] = -jac[:, f].T
        kkt[nf:nv, :nf] = mass[ix_pf]
        kkt[nf:nv, nf:nf + b] = -jac[:, p].T
        kkt[nf:nv, nf + b:] = -np.eye(npr)
        kkt[nv:, :nf] = jac[:, f]
        rhs[:nf] = tau[f] - bias[f] - mass[ix_fp] @ qdd_p
        rhs[nf:nv] = tau[p] - bias[p] - mass[ix_pp] @ qdd_p
        rhs[nv:] = -gamma - jac[:, p] @ qdd_p
        solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        qdd[f] = solution[:nf]
        u[p] = solution[nf + b:]
        return qdd, u
    lower, scratch = plans.scratch
    if _hybrid_tree_solve(mass, bias, tau, f, p, qdd_p, lower, scratch, qdd, u):
        raise ValueError("prescribed: the free joints' mass matrix is not positive definite "
                         "(a free joint moves no mass)")
    return qdd, u


def trajectory_targets(plans, trajectories, t):
    """{joint: trajectory(t)} -> ({joint: qdd}, [(iq, iv, q, qd)]) for one-dof joints."""
    accelerations, states = {}, []
    for name, trajectory in trajectories.items():
        slot = plans.slots.get(name)
        if slot is None:
            raise ValueError(f"prescribed: unknown movable joint '{excerpt(str(name), 80)}'")
        _, iq, iv, _, kind = slot
        if kind not in ("revolute", "prismatic", "helical"):
            raise ValueError(f"prescribed: joint '{name}' is {kind}; trajectories "
                             "are supported on one-dof joints")
        try:   # a user's callable: whatever it raises becomes a ValueError naming it
            value = trajectory(t)
        except Exception as exc:
            raise ValueError(f"prescribed['{name}']({t:.6f}) raised {type(exc).__name__}: "
                             f"{excerpt(str(exc), 200)}") from exc
        try:
            position, rate, acceleration = (float(x) for x in value)
        except (TypeError, ValueError):
            raise ValueError(f"prescribed['{name}'](t) must return (q, qd, qdd), got "
                             f"{excerpt(value, 80)}") from None
        accelerations[name] = acceleration
        states.append((iq, iv, position, rate))
    return accelerations, states
