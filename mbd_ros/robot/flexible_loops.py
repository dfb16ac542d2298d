"""Loop closures on a flexible tree: FlexibleLoopKinematics (loop_kinematics.py's contract).

A cut frame on a flexible link rides on the DEFORMED point of its origin (like a child joint), so
G_l has elastic columns. The frames' twist Jacobians come from kernels/flexible_frames.py, the
residuals and their frame Jacobians from closure_kinematics; gamma uses the frames'
velocity-product accelerations a = d/dt (J(q) v)|qdd=0 by a central difference along q (+) h v
(h ~ 1e-6 / |v|: error ~h^2 |v|^3, ~1e-12 relative). No recursive solver: the constrained
dynamics are solved densely, in one compiled call (`forward_dynamics`,
kernels/flexible_loop_dynamics.py; constraints.py `_kkt` is the same solve in numpy, kept for
method="kkt").
"""
from __future__ import annotations

import numpy as np

from ..model.flexible import layout as F
from ..kernels import closure_kinematics as ck
from ..kernels import flexible_forces as ff
from ..kernels import flexible_frames as fr
from ..kernels import flexible_loop_dynamics as fld
from .flexible_force_loads import frame_ends
from .loop_kinematics import CutSet


class FlexibleLoopKinematics(CutSet):
    """Cut frames at deformed points of a flexible tree (see the module docstring)."""

    recursive = False
    compiled_kkt = True    # Constraints.forward_dynamics runs `forward_dynamics` (compiled)

    def __init__(self, tree, closure_set):
        super().__init__(tree, closure_set)
        ends, rows = [], []
        for spec, (link_a, link_b), code in zip(self.specs, self.links, self.codes):
            ends += [(link_a, np.asarray(spec.parent_origin, float)),
                     (link_b, np.asarray(spec.child_origin, float))]
            row = ck.cut_row(spec)
            # each cut frame is its own "body": frames at the body origin, aligned by Q
            align = row[ck.CUT_ALIGN:ck.CUT_ALIGN + 9]
            row[ck.CUT_A_ROT:ck.CUT_A_ROT + 9] = align
            row[ck.CUT_B_ROT:ck.CUT_B_ROT + 9] = align
            row[ck.CUT_A_POS:ck.CUT_A_POS + 3] = 0.0
            row[ck.CUT_B_POS:ck.CUT_B_POS + 3] = 0.0
            row[ck.CUT_CHILD_ROT:ck.CUT_CHILD_ROT + 9] = np.eye(3).ravel()
            rows.append(row)
        self.cut_data = np.array(rows)
        self.frame_int, self.frame_float, self.frame_data, _ = frame_ends(tree, ends)
        n_ends = len(ends)
        self.frame_state = np.zeros((n_ends, ff.END_STATE_WIDTH))
        self.frame_jac = np.zeros((n_ends, 6, tree.nv))
        self.frame_twist = np.zeros((n_ends, 6, 1))
        self.unit_v = np.zeros(tree.nv)
        self._zero_v = np.zeros(tree.nv)
        # the compiled forward dynamics' arguments, built once (on the tree's loaded workspace;
        # public: robot/rollout_flexible_loops.py copies their workspaces per rollout thread)
        model = tree.model
        self.tree_args = (tree.fint, tree.ffloat, tree.fdata, tree.body_int, int(model.nq),
                           int(model.nv), tree.work, tree.fwork)
        self.end_args = (self.frame_int, self.frame_float, self.frame_data, self.frame_state,
                          self.frame_jac, self.unit_v)
        self.cut_int = np.array([(code, rows.start) for code, rows in zip(self.codes, self.rows)],
                                 dtype=np.int64).reshape(-1, 2)
        self.workspace = fld.flexible_loop_workspace(tree.nq, tree.nv, self.n_constraints,
                                                      len(self.specs))
        self.residual = np.zeros(self.n_constraints)
        self.jacobian = np.zeros((self.n_constraints, tree.nv))
        self.kkt_info = np.zeros(2, dtype=np.int64)

    def forward_dynamics(self, q, v, tau, alpha, beta, out, lam_out):
        """out (nv,) = the constrained accelerations at (q, v) for tau (nv,) on the tree's loaded
        workspace, the multipliers in lam_out (b,), g in self.residual and G in self.jacobian
        (kernels/flexible_loop_dynamics.py, one call). Returns the kernel's status (0 on
        success; self.kkt_info[1] is then the rank of G M^-1 G^T)."""
        return fld.flexible_loop_forward_dynamics(
            self.tree_args, self.end_args, self.cut_int, self.cut_data, self.workspace, q, v,
            tau, alpha, beta, self.residual, self.jacobian, out, lam_out, self.kkt_info)

    def _frame_twists(self, q, v):
        """(n_ends, 6) twists of the cut frames at (q, v), their own axes; poses in frame_state."""
        t = self.tree
        fr.frame_states(t.fint, t.ffloat, t.fdata, t.work, t.fwork, self.frame_int,
                        self.frame_float, self.frame_data, q, v, self.frame_state,
                        self.frame_twist)
        return self.frame_twist[:, :, 0].copy()

    def _cut_terms(self, q, v):
        """Per cut: (rows slice, residual, G_A (b_s, 6), G_B (b_s, 6), gamma2) at (q, v)."""
        twists = self._frame_twists(q, v)
        st = self.frame_state
        terms = []
        for s, code in enumerate(self.codes):
            a, b = 2 * s, 2 * s + 1
            n = ck.CUT_ROWS[code]
            residual, bias = np.zeros(6), np.zeros(6)
            jac_a, jac_b = np.zeros((6, 6)), np.zeros((6, 6))
            ck.closure_kinematics(code, self.cut_data[s],
                                  np.ascontiguousarray(st[a, ff.ES_R:ff.ES_R + 9]),
                                  np.ascontiguousarray(st[a, ff.ES_X:ff.ES_X + 3]),
                                  np.ascontiguousarray(twists[a]),
                                  np.ascontiguousarray(st[b, ff.ES_R:ff.ES_R + 9]),
                                  np.ascontiguousarray(st[b, ff.ES_X:ff.ES_X + 3]),
                                  np.ascontiguousarray(twists[b]), residual, jac_a, jac_b, bias)
            terms.append((self.rows[s], residual[:n], jac_a[:n], jac_b[:n], bias[:n]))
        return terms

    def state(self, q, v):
        """(g (b,), G_l (b, nv), G_l v (b,)) at (q, v), elastic columns included."""
        t = self.tree
        fr.frame_jacobians(t.fint, t.ffloat, t.fdata, t.work, t.fwork, self.frame_int,
                           self.frame_float, self.frame_data, q, self.unit_v, self.frame_state,
                           self.frame_jac)
        frames = self.frame_jac.copy()
        g = np.zeros(self.n_constraints)
        jacobian = np.zeros((self.n_constraints, t.nv))
        for s, (rows, residual, jac_a, jac_b, _) in enumerate(self._cut_terms(q, self._zero_v)):
            g[rows] = residual
            jacobian[rows] = jac_a @ frames[2 * s] + jac_b @ frames[2 * s + 1]
        return g, jacobian, jacobian @ v

    def bias(self, q, v):
        """gamma (b,): G_A a_A + G_B a_B + gamma2 (module docstring)."""
        t = self.tree
        h = 1e-6 / max(1.0, float(np.abs(v).max(initial=0.0)))
        stage = np.empty(t.nq)
        t.integrate(q, v, h, stage)
        plus = self._frame_twists(stage, v)
        t.integrate(q, v, -h, stage)
        minus = self._frame_twists(stage, v)
        acc = (plus - minus) / (2.0 * h)
        gamma = np.zeros(self.n_constraints)
        for s, (rows, _, jac_a, jac_b, bias) in enumerate(self._cut_terms(q, v)):
            gamma[rows] = jac_a @ acc[2 * s] + jac_b @ acc[2 * s + 1] + bias
        return gamma

    def add_loads(self, q, lam):
        """Add each cut frame's wrench jac^T lambda (its axes, about its deformed origin), moved
        to its body's reference frame (f_b = R f, t_b = R t + u x f_b), to the loads at q. Loads
        on links welded to a cut link are not split per fixed joint."""
        t = self.tree
        terms = self._cut_terms(q, self._zero_v)       # frame poses at q (frame_state)
        t.kinematics(q)
        st = self.frame_state
        for s, (rows, _, jac_a, jac_b, _) in enumerate(terms):
            for end, jac in ((2 * s, jac_a), (2 * s + 1, jac_b)):
                wrench = jac.T @ lam[rows]
                body = int(self.frame_int[end, ff.END_BODY])
                if body <= 0:
                    continue                                 # on the ground
                body_rot = t.work[body, F.WORLD_ROT:F.WORLD_ROT + 9].reshape(3, 3)
                rot = body_rot.T @ st[end, ff.ES_R:ff.ES_R + 9].reshape(3, 3)
                force = rot @ wrench[:3]
                torque = rot @ wrench[3:] + np.cross(st[end, ff.ES_U:ff.ES_U + 3], force)
                t.add_body_loads(body, self.links[s][end % 2], np.concatenate([force, torque]))

    def cut_wrenches(self, q, lam):
        """(n_cuts, 6): G_B^T lambda of each cut's rows, in the (deformed) child-side cut frame
        about its origin, at q."""
        out = np.zeros((len(self.specs), 6))
        for s, (rows, _, _, jac_b, _) in enumerate(self._cut_terms(q, self._zero_v)):
            out[s] = jac_b.T @ lam[rows]
        return out
