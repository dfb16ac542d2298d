"""Derivatives of the dynamics of a Robot (kernels/derivatives.py; docs/derivatives.md).

`Derivatives` owns the per-robot workspaces of the derivative kernels (built at the first call)
and runs them on the tree's loaded workspace (the caller holds the Robot's lock and has validated
q, v and the third vector). Supported: rigid trees, fixed or floating base, generic or codegen
(the generic kernels on the same model arrays), with URDF damping and friction, external
wrenches, and force elements / add_force callbacks, whose contribution is differentiated by
central differences on the tangent space (`element_derivatives`). Closed loops, mimic couplings
and flexible links: constrained_derivatives.py (built on these workspaces for rigid trees);
a kind without derivatives would raise one ValueError (`check_supported`).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..kernels import derivatives as K
from ..model import layout as L
from . import arguments as A

# central-difference step of the force elements' contribution: h = eps^(1/3) balances the
# O(h^2) truncation error against the O(eps / h) round-off: both ~ eps^(2/3) ~ 4e-11 relative to
# the elements' forces (and their second derivatives times the state's scale)
ELEMENT_STEP = float(np.finfo(float).eps) ** (1.0 / 3.0)


def unsupported_kind(robot):
    """The kind of robot the derivatives do not cover, or None. Every kind is covered today:
    rigid trees here, closed loops, mimic couplings and flexible links in
    constrained_derivatives.py; a kind added to the library without derivatives is refused
    here, the one refusal point."""
    return None


def check_supported(robot, method):
    """Raise ValueError naming `method` and the robot's kind when the derivatives do not cover
    it (unsupported_kind): the one place where a kind of robot is refused."""
    kind = unsupported_kind(robot)
    if kind is not None:
        raise ValueError(f"{method}: not available for a robot with {kind} "
                         "(docs/derivatives.md)")


def outputs(out, nv, *inputs):
    """The three (nv, nv) result arrays: views of one new (3, nv, nv) block for out None, else
    out = (d_first, d_second, d_third) validated (writable C-contiguous float64 (nv, nv), not
    sharing memory with each other or with the inputs: the kernels write them from their
    start); ValueError naming the one at fault."""
    if out is None:
        block = np.empty((3, nv, nv))
        return block[0], block[1], block[2]
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError(f"out must be None or a tuple of three ({nv}, {nv}) arrays, got "
                         f"{type(out).__name__}")
    arrays = tuple(A.output(o, (nv, nv), f"out[{k}]") for k, o in enumerate(out))
    for k, o in enumerate(arrays):
        if A.shares_memory(o, *inputs, *arrays[:k]):
            raise ValueError(f"out[{k}] must not share memory with an input or another out array")
    return arrays


def dof_structure(body_int):
    """dof_int (nv, DOF_INT_WIDTH): for every dof its body, the previous dof on its path to the
    root (the joint's own previous axis, else the parent joint's last one; -1 at the root) and
    one past the last dof of its subtree (bodies are numbered depth-first: layout.SUBTREE_END);
    kernels/derivatives.fill_dof_int."""
    nb = body_int.shape[0] - 1
    nv = int(body_int[nb, L.IDX_V] + body_int[nb, L.JOINT_NV_COL]) if nb else 0
    dofs = np.full((nv, K.DOF_INT_WIDTH), -1, dtype=np.int64)
    K.dof_structure_into(np.ascontiguousarray(body_int, dtype=np.int64), dofs)
    return dofs


class Derivatives:
    """Workspaces and calls of the derivative kernels for one rigid tree:
    rnea(q, v, qdd, tau, dq, dv, dqdd) and aba(q, v, tau, qdd, tau_scratch, dq, dv, dtau) are
    the kernels with the model and workspace arrays bound (status codes, never raise)."""

    def __init__(self, tree):
        self.tree = tree
        rows = tree.body_int.shape[0]
        nv = tree.nv
        self.dwork = np.zeros((rows, K.DWORK_WIDTH))
        self.dof_work = np.zeros((nv, K.DOF_WIDTH))
        self.dof_int = dof_structure(tree.body_int)
        self.factor = np.zeros((nv, nv))
        self.tau = np.zeros(nv)
        self.qdd = np.zeros(nv)
        self.element_tau = np.zeros(nv)
        self.q_step = np.zeros(tree.nq)
        self.step = np.zeros(nv)
        arrays = (tree.body_int, tree.body_float, tree.work, self.dwork, self.dof_work,
                  self.dof_int)
        self.rnea = partial(K.rnea_derivatives, *arrays)
        self.aba = partial(K.aba_derivatives, *arrays, self.factor)

    def outputs(self, out, *inputs):
        """The three (nv, nv) result arrays (module function `outputs`)."""
        return outputs(out, self.tree.nv, *inputs)

    def forward_from_inverse(self, dq, dv, mass):
        """dq, dv <- -M^-1 dq, -M^-1 dv; mass <- M^-1 (in place); returns the status."""
        return K.forward_from_inverse(self.dof_int, self.factor, dq, dv, mass)

    # ------------------------------------------------------------------ force elements
    def element_forces(self, forces, t, q, v):
        """(nv,) what the force elements and add_force callbacks (`forces`, the Robot's
        ForceElements) change in the inverse dynamics at (q, v, t): -(their generalized
        forces)."""
        link_wrench, body_wrench, joint_force = forces.evaluate(q, v, t, None)
        joint_force = joint_force.copy()
        tree = self.tree
        tree.set_loads(link_wrench, body_wrench)
        K.load_forces(tree.body_int, tree.body_float, tree.work, q, self.element_tau)
        return self.element_tau - joint_force

    def element_derivatives(self, forces, t, q, v):
        """(d/dq, d/dv) (nv, nv) of element_forces by central differences on the tangent space:
        q (+) (+-h e_k) with h = ELEMENT_STEP, v +- h max(1, |v_k|) e_k. Accuracy ~ h^2 times the
        elements' third derivatives plus eps / h times their forces: ~1e-10 relative for smooth
        elements (the tanh-smoothed friction of a bushing varies on friction_velocity's scale)."""
        nv = self.tree.nv
        d_q = np.empty((nv, nv))
        d_v = np.empty((nv, nv))
        tree = self.tree
        for k in range(nv):
            h = ELEMENT_STEP
            self.step[:] = 0.0
            self.step[k] = h
            tree.integrate(q, self.step, 1.0, self.q_step)
            plus = self.element_forces(forces, t, self.q_step, v).copy()
            tree.integrate(q, self.step, -1.0, self.q_step)
            d_q[:, k] = (plus - self.element_forces(forces, t, self.q_step, v)) / (2.0 * h)
            h = ELEMENT_STEP * max(1.0, abs(v[k]))
            self.step[:] = v
            self.step[k] += h
            plus = self.element_forces(forces, t, q, self.step).copy()
            self.step[k] -= 2.0 * h
            d_v[:, k] = (plus - self.element_forces(forces, t, q, self.step)) / (2.0 * h)
        return d_q, d_v
