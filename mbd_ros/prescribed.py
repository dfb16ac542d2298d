"""Prescribed (rheonomic) joint motion: hybrid dynamics (docs/theory.md §3).

Some joints p follow given accelerations qdd_p (from a trajectory q_p(t)); the others f are free.
The drive forces u_p the prescribed joints need are unknowns, like the multipliers of rheonomic
constraints q_p - q_p(t) = 0 [003]. With the tree's mass matrix M and h = the tree's inverse
dynamics at qdd = 0 (bias, gravity, passive and force elements), the equations of motion

    M qdd + h = tau + u + G_l^T lambda,     G_l qdd + gamma = 0  (closed loops only)

with qdd_p known and u zero on the free joints are solved densely for (qdd_f, lambda, u_p):

    [ M_ff   -G_f^T   0 ] [ qdd_f  ]   [ tau_f - h_f - M_fp qdd_p ]
    [ M_pf   -G_p^T  -1 ] [ lambda ] = [ tau_p - h_p - M_pp qdd_p ]
    [ G_f     0       0 ] [ u_p    ]   [ -gamma - G_p qdd_p       ]

(minimum-norm with redundant constraints). For a tree it reduces to a Cholesky solve with M_ff
and u_p = (M qdd + h - tau)_p. O(n^3): an exact, simple hybrid solver, not the O(n) recursion.
"""
from __future__ import annotations

import numpy as np


def prescribed_dofs(robot, prescribed):
    """(dofs (k,), qdd (k,)) of a {joint name: qdd} mapping (one-dof joints take a number,
    multi-dof joints a sequence). Raises ValueError naming the joint."""
    dofs, values = [], []
    for name, value in prescribed.items():
        if name not in robot.joint_names:
            raise ValueError(f"prescribed: unknown movable joint '{name}' (joints: "
                             f"{', '.join(robot.joint_names[:8])}...)")
        j = robot.joint_names.index(name)
        start = robot.idx_v[j]
        stop = robot.idx_v[j + 1] if j + 1 < len(robot.idx_v) else robot.nv
        value = np.atleast_1d(np.asarray(value, dtype=float))
        if value.shape != (stop - start,) or not np.isfinite(value).all():
            raise ValueError(f"prescribed['{name}']: expected {stop - start} finite "
                             f"acceleration(s), got {value!r}")
        dofs.extend(range(start, stop))
        values.extend(value)
    return np.array(dofs, dtype=np.int64), np.array(values)


def forward_dynamics_prescribed(robot, q, v, tau, prescribed, f_ext=None):
    """(qdd (nv,), u (nv,)): accelerations with the prescribed joints' accelerations as given,
    and the drive forces u the prescribed joints need on top of tau (zeros on free joints)."""
    from .robot import Robot, _vector
    q = _vector(q, robot.nq, "q")
    v = _vector(v, robot.nv, "v")
    tau = _vector(tau, robot.nv, "tau")
    p, qdd_p = prescribed_dofs(robot, prescribed)
    f = np.setdiff1d(np.arange(robot.nv), p)
    mass = robot.mass_matrix(q).copy()
    h = Robot.inverse_dynamics(robot, q, v, np.zeros(robot.nv), f_ext=f_ext).copy()
    qdd = np.zeros(robot.nv)
    qdd[p] = qdd_p
    closed = bool(robot.closure_names)
    if closed:
        _, jac, gv = robot.loop_state(q, v)
        gamma = robot._acceleration_bias(q, v)
        alpha, beta = robot.baumgarte
        if alpha or beta:
            g = robot.loop_state(q)[0]
            gamma = gamma + 2.0 * alpha * gv + beta * beta * g
        b = jac.shape[0]
        nf, npr = len(f), len(p)
        kkt = np.zeros((robot.nv + b, nf + b + npr))
        rhs = np.zeros(robot.nv + b)
        kkt[:nf, :nf] = mass[np.ix_(f, f)]
        kkt[:nf, nf:nf + b] = -jac[:, f].T
        kkt[nf:robot.nv, :nf] = mass[np.ix_(p, f)]
        kkt[nf:robot.nv, nf:nf + b] = -jac[:, p].T
        kkt[nf:robot.nv, nf + b:] = -np.eye(npr)
        kkt[robot.nv:, :nf] = jac[:, f]
        rhs[:nf] = tau[f] - h[f] - mass[np.ix_(f, p)] @ qdd_p
        rhs[nf:robot.nv] = tau[p] - h[p] - mass[np.ix_(p, p)] @ qdd_p
        rhs[robot.nv:] = -gamma - jac[:, p] @ qdd_p
        solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
        qdd[f] = solution[:nf]
        u = np.zeros(robot.nv)
        u[p] = solution[nf + b:]
        return qdd, u
    if len(f):
        qdd[f] = np.linalg.solve(mass[np.ix_(f, f)], tau[f] - h[f] - mass[np.ix_(f, p)] @ qdd_p)
    u = np.zeros(robot.nv)
    u[p] = mass[p] @ qdd + h[p] - tau[p]
    return qdd, u


def dispatch(robot, q, v, tau, f_ext, out, prescribed, return_torques):
    """robot.forward_dynamics(..., prescribed=...): solve, keep u in robot.last_prescribed_torques."""
    qdd, u = forward_dynamics_prescribed(robot, q, v, tau, prescribed, f_ext)
    robot.last_prescribed_torques = u
    if out is not None:
        out[:] = qdd
        qdd = out
    return (qdd, u) if return_torques else qdd


def trajectory_targets(robot, trajectories, t):
    """{joint: trajectory(t)} -> ({joint: qdd}, [(iq, iv, q, qd)]) for one-dof joints."""
    accelerations, states = {}, []
    for name, trajectory in trajectories.items():
        if name not in robot.joint_names:
            raise ValueError(f"prescribed: unknown movable joint '{name}'")
        j = robot.joint_names.index(name)
        if robot.joint_types[j] not in ("revolute", "prismatic", "helical"):
            raise ValueError(f"prescribed: joint '{name}' is {robot.joint_types[j]}; trajectories "
                             "are supported on one-dof joints")
        value = trajectory(t)
        try:
            position, rate, acceleration = (float(x) for x in value)
        except (TypeError, ValueError):
            raise ValueError(f"prescribed['{name}'](t) must return (q, qd, qdd), got {value!r}") from None
        accelerations[name] = acceleration
        states.append((int(robot.idx_q[j]), int(robot.idx_v[j]), position, rate))
    return accelerations, states
