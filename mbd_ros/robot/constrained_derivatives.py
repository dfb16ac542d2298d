"""Derivatives of the dynamics of constrained and flexible robots (docs/derivatives.md).

For robots with closed loops, mimic couplings or flexible links, `GeneralDerivatives` gives the
partial derivatives of exactly what Robot.forward_dynamics (default method) and
Robot.inverse_dynamics return, on the full tangent space (q (+) eps e_k = robot.integrate(q,
eps e_k, 1): a perturbation may leave the constraint manifold; the derivative is that of the
function, as a central difference of robot.forward_dynamics gives it).

Tree part: d ID / dq, d ID / dv and M of the open tree's inverse dynamics ID(q, v, qdd) (with
gravity, passive forces, f_ext, force elements and callbacks), analytic on rigid trees (RSS
2018 recursion, kernels/derivatives.py, through derivatives.Derivatives) and by central
differences of the tree's inverse dynamics on flexible trees (`TREE_STEP`).

Forward dynamics (constrained): differentiate the KKT system every default method solves
(recursive [000], minimal coordinates, KKT: they give the same qdd for a full-rank G),

    ID(q, v, qdd) - tau = G^T lambda,        G qdd + gamma~(q, v) = 0
    (gamma~ = gamma + 2 alpha G v + beta^2 g with the Baumgarte gains),

    M dqdd - G^T dlambda = -A_x,   G dqdd = -C_x,
    A_x = d ID/dx - d(G^T lambda)/dx |lambda,   C_x = d(G qdd + gamma~)/dx |qdd,

solved by the Schur complement S = G M^-1 G^T (pseudo-inverse with the rank cut-off of the KKT
solve: redundant rows are allowed): dlambda = S^+ (G M^-1 A_x - C_x), dqdd = M^-1 (G^T dlambda
- A_x); dqdd/dtau = M^-1 - M^-1 G^T S^+ G M^-1 (the constrained M^-1 projection). The
constraint terms d(G^T lambda)/dq and C_x are central differences of the rows (Constraints.
state / acceleration_rows) at fixed lambda and qdd, step CONSTRAINT_STEP.

Redundant rows that the state makes inconsistent: with rank(G) < m, gamma~ need not lie in
range(G) (a floating base turning while a planar loop's cut moves, G v != 0, puts a Coriolis
term into the rows G cannot reach), and the solvers return the least-squares solution: what
holds is P (G qdd + gamma~) = 0 with P = G G^+ the projector onto range(G), leaving the
residual r = G qdd + gamma~ in null(G^T). Differentiating P too: dP r = (G^+)^T dG^T r (the
other half of dP vanishes on null(G^T)), so C_q gains (G^+)^T d(G^T r)/dq |r fixed (E_q, the
same central differences as B_q); G does not depend on v, so C_v does not change. Without it
the floating leg's base columns of dqdd/dq were off by up to 3 % (test_derivatives_constrained).

Inverse dynamics (constrained): robot.inverse_dynamics returns tau = Act(q) ID(q, v, qdd), with
Act(q) the linear map of Constraints.actuation_forces (the actuated dofs' least-squares,
minimum-norm forces on null(G(q))). Hence dtau/dqdd = Act M, dtau/dv = Act dID/dv and
dtau/dq = Act dID/dq + d(Act(q) b)/dq at fixed b = ID(q, v, qdd) (central differences).
inverse_dynamics accepts only loop-consistent qdd; the derivative is that of this formula (the
columns of dtau/dqdd along directions that break the rows are those of the formula).
"""
from __future__ import annotations

import numpy as np

from ..kernels.linalg import RANK_TOLERANCE
from .constraints import matrix_rank
from .derivatives import ELEMENT_STEP, Derivatives

# Central-difference steps: h = eps^(1/3) balances the truncation error h^2 |f'''| / 6 against
# the round-off eps |f| / h, both ~ eps^(2/3) ~ 4e-11 relative on unit-scale robots. Velocity
# steps are scaled by max(1, |v_k|) (the rows are quadratic in v: exact up to round-off).
CONSTRAINT_STEP = ELEMENT_STEP
TREE_STEP = ELEMENT_STEP
# Velocity step (times max(1, |v_k|)) of a flexible tree's d ID / dv when its inverse dynamics is
# a polynomial of degree <= 2 in v (inertial terms quadratic, damping linear: no smoothed
# friction, no force elements or callbacks): the central difference is then exact for any
# step and only the round-off eps |ID| / h remains, which the elastic forces in ID make large
# at h = eps^(1/3): per matrix, d qdd / dv of the flexible four-bar was off by 1.7e-6 of its
# largest entry with TREE_STEP and is 3e-11 with this step (test_derivatives_constrained.py)
POLYNOMIAL_VELOCITY_STEP = 1.0


class GeneralDerivatives:
    """Per-robot workspaces and the derivative computation of a robot with constraints
    (closed loops, mimic couplings) and/or flexible links. The caller holds the robot's lock."""

    def __init__(self, robot):
        self.robot = robot
        self.tree = robot._tree
        self.constraints = robot._constraints
        nv = robot.nv
        self.nv = nv
        self.rigid = robot.flexible is None
        self.tree_derivatives = Derivatives(self.tree) if self.rigid else None
        # the open tree's (dID/dq, dID/dv, M), and scratch of the finite differences
        self.d_id = np.zeros((3, nv, nv))
        self.id_plus = np.zeros(nv)
        self.id_minus = np.zeros(nv)
        self.step = np.zeros(nv)
        self.q_step = np.zeros(robot.nq)
        self.v_step = np.zeros(nv)
        m = self.constraints.n_rows
        self.tau_tree = np.zeros(nv)
        self.b_q = np.zeros((nv, nv))         # d(G^T lambda)/dq
        self.c_q = np.zeros((m, nv))          # d(G qdd + gamma~)/dq, /dv
        self.c_v = np.zeros((m, nv))
        self.e_q = np.zeros((nv, nv))         # d(G^T r)/dq, r the rows' least-squares residual
        self.act_q = np.zeros((nv, nv))       # d(Act(q) b)/dq

    # ------------------------------------------------------------------ tree part
    def tree_inverse(self, q, v, qdd, f_ext):
        """(dID/dq, dID/dv, M) (views of self.d_id) of the open tree's inverse dynamics with the
        call's loads: analytic on a rigid tree, central differences on a flexible one."""
        robot = self.robot
        d_q, d_v, mass = self.d_id
        if self.rigid:
            derivatives = self.tree_derivatives
            self.tree.set_loads(None if f_ext is None else robot._link_wrench_array(f_ext))
            status = derivatives.rnea(q, v, qdd, derivatives.tau, d_q, d_v, mass)
            if status:
                robot._raise(status, q, v, qdd, None, "qdd")
            if robot._forces is not None:
                elements_q, elements_v = derivatives.element_derivatives(robot._forces,
                                                                         robot.time, q, v)
                d_q += elements_q
                d_v += elements_v
            return d_q, d_v, mass
        # flexible tree: ID is linear in qdd (dID/dqdd = M, exact); q and v by central
        # differences on the tangent space, elastic coordinates included
        status = self.tree.mass_matrix(q, mass)
        if status:
            robot._raise(status, q, v, qdd, None, "qdd")
        polynomial = robot._forces is None and not np.any(robot.friction)
        velocity_step = POLYNOMIAL_VELOCITY_STEP if polynomial else TREE_STEP
        for k in range(self.nv):
            self.step[:] = 0.0
            self.step[k] = TREE_STEP
            self.tree.integrate(q, self.step, 1.0, self.q_step)
            robot._tree_inverse_dynamics(self.q_step, v, qdd, f_ext, self.id_plus)
            self.tree.integrate(q, self.step, -1.0, self.q_step)
            robot._tree_inverse_dynamics(self.q_step, v, qdd, f_ext, self.id_minus)
            d_q[:, k] = (self.id_plus - self.id_minus) / (2.0 * TREE_STEP)
            h = velocity_step * max(1.0, abs(v[k]))
            self.v_step[:] = v
            self.v_step[k] = v[k] + h
            robot._tree_inverse_dynamics(q, self.v_step, qdd, f_ext, self.id_plus)
            self.v_step[k] = v[k] - h
            robot._tree_inverse_dynamics(q, self.v_step, qdd, f_ext, self.id_minus)
            d_v[:, k] = (self.id_plus - self.id_minus) / (2.0 * h)
        return d_q, d_v, mass

    # ------------------------------------------------------------------ constraint part
    def constraint_terms(self, q, v, qdd, lam, residual):
        """(B_q (nv, nv), C_q (m, nv), C_v (m, nv), E_q (nv, nv)): B_q = d(G^T lambda)/dq at
        fixed lambda, C_x = d(G qdd + gamma~)/dx at fixed qdd (Baumgarte terms included), E_q =
        d(G^T r)/dq at fixed r = residual (m,) (module docstring), by central differences of the
        rows on the tangent space (step CONSTRAINT_STEP; in v scaled by max(1, |v_k|))."""
        constraints = self.constraints
        b_q, c_q, c_v, e_q = self.b_q, self.c_q, self.c_v, self.e_q
        h = CONSTRAINT_STEP
        for k in range(self.nv):
            self.step[:] = 0.0
            self.step[k] = h
            self.tree.integrate(q, self.step, 1.0, self.q_step)
            g_plus, gamma_plus = constraints.acceleration_rows(self.q_step, v)
            self.tree.integrate(q, self.step, -1.0, self.q_step)
            g_minus, gamma_minus = constraints.acceleration_rows(self.q_step, v)
            b_q[:, k] = (g_plus - g_minus).T @ lam / (2.0 * h)
            e_q[:, k] = (g_plus - g_minus).T @ residual / (2.0 * h)
            c_q[:, k] = ((g_plus - g_minus) @ qdd + gamma_plus - gamma_minus) / (2.0 * h)
            hv = POLYNOMIAL_VELOCITY_STEP * max(1.0, abs(v[k]))   # gamma~: quadratic in v
            self.v_step[:] = v
            self.v_step[k] = v[k] + hv
            gamma_plus = constraints.acceleration_rows(q, self.v_step)[1]
            self.v_step[k] = v[k] - hv
            gamma_minus = constraints.acceleration_rows(q, self.v_step)[1]
            c_v[:, k] = (gamma_plus - gamma_minus) / (2.0 * hv)
        return b_q, c_q, c_v, e_q

    def actuation_terms(self, q, tau_tree, rank):
        """d(Act(q) b)/dq (nv, nv) at fixed b = tau_tree, by central differences, the rank of G
        held at its value at q (`rank`). Off the constraint manifold a dependent row can turn
        independent (e.g. a planar loop's rotation row once the loop opens, seen by the base
        columns of a floating base): the numerical rank, and with it inverse_dynamics, then
        jump at the manifold; holding the rank differentiates the branch through q, which is
        the derivative along the manifold and its smooth extension."""
        constraints = self.constraints
        result = self.act_q
        h = CONSTRAINT_STEP
        zero = np.zeros(self.nv)
        for k in range(self.nv):
            self.step[:] = 0.0
            self.step[k] = h
            self.tree.integrate(q, self.step, 1.0, self.q_step)
            plus = constraints.actuation_forces(constraints.state(self.q_step, zero)[1],
                                                tau_tree, rank)[0]
            self.tree.integrate(q, self.step, -1.0, self.q_step)
            minus = constraints.actuation_forces(constraints.state(self.q_step, zero)[1],
                                                 tau_tree, rank)[0]
            result[:, k] = (plus - minus) / (2.0 * h)
        return result

    # ------------------------------------------------------------------ the two derivatives
    def forward(self, q, v, tau, f_ext, outputs):
        """Fill outputs = (dqdd/dq, dqdd/dv, dqdd/dtau) of robot.forward_dynamics(q, v, tau,
        f_ext) at validated (q, v, tau)."""
        robot = self.robot
        qdd = robot.forward_dynamics(q, v, tau, f_ext=f_ext)
        id_q, id_v, mass = self.tree_inverse(q, v, qdd, f_ext)
        constraints = self.constraints
        if constraints.empty:    # a flexible tree: no rows, dqdd/dx = -M^-1 dID/dx
            jacobian = np.zeros((0, self.nv))
            b_q = c_q = c_v = None
        else:
            jacobian, gamma = constraints.acceleration_rows(q, v)
            tau_tree = self.tau_tree
            robot._tree_inverse_dynamics(q, v, qdd, f_ext, tau_tree)
            # the multipliers of this solution: G^T lambda = ID(q, v, qdd) - tau (minimum norm)
            lam = np.linalg.lstsq(jacobian.T, tau_tree - tau, rcond=RANK_TOLERANCE)[0]
            # the rows' least-squares residual (zero where they are consistent)
            residual = jacobian @ qdd + gamma
            b_q, c_q, c_v, e_q = self.constraint_terms(q, v, qdd, lam, residual)
            # C_q + (G^+)^T E_q: the derivative of the projector onto range(G) (module docstring)
            c_q = c_q + np.linalg.pinv(jacobian, rcond=RANK_TOLERANCE).T @ e_q
        return kkt_derivatives(mass, jacobian, id_q, id_v, b_q, c_q, c_v, outputs)

    def inverse(self, q, v, qdd, f_ext, outputs):
        """Fill outputs = (dtau/dq, dtau/dv, dtau/dqdd) of robot.inverse_dynamics(q, v, qdd,
        f_ext) at validated (q, v, qdd)."""
        robot = self.robot
        d_q, d_v, d_qdd = outputs
        robot.inverse_dynamics(q, v, qdd, f_ext=f_ext)   # its checks (loop-consistent qdd...)
        tau_tree = self.tau_tree
        robot._tree_inverse_dynamics(q, v, qdd, f_ext, tau_tree)
        id_q, id_v, mass = self.tree_inverse(q, v, qdd, f_ext)
        if self.constraints.empty:
            d_q[:] = id_q
            d_v[:] = id_v
            d_qdd[:] = mass
            return outputs
        constraints = self.constraints
        jacobian = constraints.state(q, np.zeros(self.nv))[1]
        rank = matrix_rank(jacobian)
        act_q = self.actuation_terms(q, tau_tree, rank)
        # Act(q) applied to the columns of [dID/dq | dID/dv | M] in one solve
        stacked = constraints.actuation_forces(jacobian, np.hstack((id_q, id_v, mass)))[0]
        nv = self.nv
        np.add(stacked[:, :nv], act_q, out=d_q)
        d_v[:] = stacked[:, nv:2 * nv]
        d_qdd[:] = stacked[:, 2 * nv:]
        return outputs


def kkt_derivatives(mass, jacobian, id_q, id_v, b_q, c_q, c_v, outputs):
    """outputs = (dqdd/dq, dqdd/dv, dqdd/dtau) of the constrained dynamics M qdd + h - tau =
    G^T lambda, G qdd + gamma~ = 0 (module docstring), from the tree's dID/dq, dID/dv and M,
    the rows' G (m, nv) and their terms B_q = d(G^T lambda)/dq, C_q, C_v (None: zeros, e.g.
    m = 0, which gives the tree's -M^-1 dID/dx and M^-1, RSS 2018 eq. 13)."""
    d_q, d_v, d_tau = outputs
    nv = mass.shape[0]
    try:
        chol = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        raise ValueError("forward_dynamics_derivatives: the mass matrix is not positive "
                         "definite (a joint moves no mass)") from None
    m_inv = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(nv)))
    m = jacobian.shape[0]
    if m:
        m_inv_gt = m_inv @ jacobian.T
        schur_pinv = np.linalg.pinv(jacobian @ m_inv_gt, rcond=RANK_TOLERANCE, hermitian=True)
    terms = ((d_q, id_q if b_q is None else id_q - b_q, c_q), (d_v, id_v, c_v))
    for target, a_x, c_x in terms:
        m_inv_a = m_inv @ a_x
        if m:   # dlambda = S^+ (G M^-1 A_x - C_x), dqdd = M^-1 G^T dlambda - M^-1 A_x
            rhs = jacobian @ m_inv_a
            if c_x is not None:
                rhs -= c_x
            np.matmul(m_inv_gt, schur_pinv @ rhs, out=target)
            target -= m_inv_a
        else:
            np.negative(m_inv_a, out=target)
    if m:   # M^-1 - M^-1 G^T S^+ G M^-1
        np.matmul(m_inv_gt, schur_pinv @ (jacobian @ m_inv), out=d_tau)
        np.subtract(m_inv, d_tau, out=d_tau)
    else:
        d_tau[:] = m_inv
    return outputs
