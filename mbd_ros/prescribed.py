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
and u_p = (M qdd + h - tau)_p (a numba kernel, mbd_ros/kernels/hybrid.py). O(n^3): an exact, simple hybrid solver, not the O(n) recursion.
"""
from __future__ import annotations

import math

import numpy as np

from .kernels.hybrid import hybrid_tree_solve as _hybrid_tree_solve


def _joint_slots(robot):
    """{movable joint name: (joint index, q index, v index, dofs, type)}, cached on the robot."""
    slots = robot.__dict__.get("_prescribed_slots")
    if slots is None:
        slots = {}
        for j, name in enumerate(robot.joint_names):
            start = int(robot.idx_v[j])
            stop = int(robot.idx_v[j + 1]) if j + 1 < len(robot.idx_v) else robot.nv
            slots[name] = (j, int(robot.idx_q[j]), start, stop - start, robot.joint_types[j])
        robot.__dict__["_prescribed_slots"] = slots
    return slots


def _plan(robot, names):
    """Index arrays of a set of prescribed joints (cached per name tuple on the robot):
    (sizes, p (k,), f (nv - k,), ix_ff, ix_fp, ix_pp, ix_pf). Raises ValueError naming the joint."""
    key = tuple(names)
    plans = robot.__dict__.setdefault("_prescribed_plans", {})
    plan = plans.get(key)
    if plan is not None:
        return plan
    slots = _joint_slots(robot)
    sizes, dofs = [], []
    for name in key:
        if name not in slots:
            raise ValueError(f"prescribed: unknown movable joint '{name}' (joints: "
                             f"{', '.join(robot.joint_names[:8])}...)")
        _, _, start, size, _ = slots[name]
        sizes.append(size)
        dofs.extend(range(start, start + size))
    p = np.array(dofs, dtype=np.int64)
    f = np.setdiff1d(np.arange(robot.nv), p)
    plan = (sizes, p, f, np.ix_(f, f), np.ix_(f, p), np.ix_(p, p), np.ix_(p, f))
    if len(plans) >= 32:   # a caller varying the set: keep the cache bounded
        plans.clear()
    plans[key] = plan
    return plan


def prescribed_dofs(robot, prescribed):
    """(dofs (k,), qdd (k,)) of a {joint name: qdd} mapping (one-dof joints take a number,
    multi-dof joints a sequence). Raises ValueError naming the joint."""
    sizes, p, _, _, _, _, _ = _plan(robot, prescribed)
    values = np.empty(len(p))
    k = 0
    for (name, value), size in zip(prescribed.items(), sizes):
        if size == 1 and type(value) is float and math.isfinite(value):   # the common case
            values[k] = value
            k += 1
            continue
        from .robot import _real_array
        value = np.atleast_1d(_real_array(value, f"prescribed['{name}']", f"{size} acceleration(s)"))
        if value.shape != (size,) or not np.isfinite(value).all():
            raise ValueError(f"prescribed['{name}']: expected {size} finite "
                             f"acceleration(s), got {value!r}")
        values[k:k + size] = value
        k += size
    return p, values


def _constraint_rows(robot, q, v):
    """(G (b, nv), gamma (b,)) of the robot's constraints on qdd, G qdd + gamma = 0, or None for
    a plain tree: the loops' rows (Baumgarte terms included) for a closed-loop robot, which carry
    its mimic couplings too (mbd_ros/mimic.py); the coupling rows e_m - r e_l (gamma = 0) for a
    tree with coupled mimic joints."""
    if robot.closure_names:
        g, jac, gv = robot.loop_state(q, v)
        gamma = robot._acceleration_bias(q, v)
        alpha, beta = robot.baumgarte
        if alpha or beta:
            gamma = gamma + 2.0 * alpha * gv + beta * beta * g
        return jac, gamma
    pairs = getattr(robot, "_mimic_pairs", None)
    if pairs:
        jac = np.zeros((len(pairs), robot.nv))
        for k, (_, _, iv_m, iv_l, multiplier, _) in enumerate(pairs):
            jac[k, iv_m] = 1.0
            jac[k, iv_l] -= multiplier
        return jac, np.zeros(len(pairs))
    return None


def forward_dynamics_prescribed(robot, q, v, tau, prescribed, f_ext=None):
    """(qdd (nv,), u (nv,)): accelerations with the prescribed joints' accelerations as given,
    and the drive forces u the prescribed joints need on top of tau (zeros on free joints)."""
    from .robot import Robot, _vector
    q = _vector(q, robot.nq, "q")
    v = _vector(v, robot.nv, "v")
    tau = _vector(tau, robot.nv, "tau")
    p, qdd_p = prescribed_dofs(robot, prescribed)
    _, _, f, ix_ff, ix_fp, ix_pp, ix_pf = _plan(robot, prescribed)
    mass = robot.mass_matrix(q)
    h = Robot.inverse_dynamics(robot, q, v, np.zeros(robot.nv), f_ext=f_ext).copy()
    qdd = np.zeros(robot.nv)
    rows = _constraint_rows(robot, q, v)
    if rows is not None:
        qdd[p] = qdd_p
        jac, gamma = rows
        b = jac.shape[0]
        nf, npr = len(f), len(p)
        kkt = np.zeros((robot.nv + b, nf + b + npr))
        rhs = np.zeros(robot.nv + b)
        kkt[:nf, :nf] = mass[ix_ff]
        kkt[:nf, nf:nf + b] = -jac[:, f].T
        kkt[nf:robot.nv, :nf] = mass[ix_pf]
        kkt[nf:robot.nv, nf:nf + b] = -jac[:, p].T
        kkt[nf:robot.nv, nf + b:] = -np.eye(npr)
        kkt[robot.nv:, :nf] = jac[:, f]
        rhs[:nf] = tau[f] - h[f] - mass[ix_fp] @ qdd_p
        rhs[nf:robot.nv] = tau[p] - h[p] - mass[ix_pp] @ qdd_p
        rhs[robot.nv:] = -gamma - jac[:, p] @ qdd_p
        solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        qdd[f] = solution[:nf]
        u = np.zeros(robot.nv)
        u[p] = solution[nf + b:]
        return qdd, u
    u = np.zeros(robot.nv)
    scratch = robot.__dict__.get("_prescribed_scratch")
    if scratch is None:   # per robot, used under its lock
        scratch = robot.__dict__["_prescribed_scratch"] = (np.zeros((robot.nv, robot.nv)),
                                                           np.zeros(robot.nv))
    with robot._lock:
        if _hybrid_tree_solve(mass, h, tau, f, p, qdd_p, scratch[0], scratch[1], qdd, u):
            raise ValueError("prescribed: the free joints' mass matrix is not positive definite "
                             "(a free joint moves no mass)")
    return qdd, u


def dispatch(robot, q, v, tau, f_ext, out, prescribed, return_torques):
    """robot.forward_dynamics(..., prescribed=...): solve, keep u in robot.last_prescribed_torques.
    Under the robot's lock: the constraint rows and the tree solve use its workspaces."""
    with robot._lock:
        qdd, u = forward_dynamics_prescribed(robot, q, v, tau, prescribed, f_ext)
    robot.last_prescribed_torques = u
    if out is not None:
        from .robot import _output
        _output(out, (robot.nv,))[:] = qdd   # written after every input was read
        qdd = out
    return (qdd, u) if return_torques else qdd


def trajectory_targets(robot, trajectories, t):
    """{joint: trajectory(t)} -> ({joint: qdd}, [(iq, iv, q, qd)]) for one-dof joints."""
    slots = _joint_slots(robot)
    accelerations, states = {}, []
    for name, trajectory in trajectories.items():
        slot = slots.get(name)
        if slot is None:
            raise ValueError(f"prescribed: unknown movable joint '{name}'")
        _, iq, iv, _, kind = slot
        if kind not in ("revolute", "prismatic", "helical"):
            raise ValueError(f"prescribed: joint '{name}' is {kind}; trajectories "
                             "are supported on one-dof joints")
        value = trajectory(t)
        try:
            position, rate, acceleration = (float(x) for x in value)
        except (TypeError, ValueError):
            raise ValueError(f"prescribed['{name}'](t) must return (q, qd, qdd), got {value!r}") from None
        accelerations[name] = acceleration
        states.append((iq, iv, position, rate))
    return accelerations, states
