"""The kinematics of the cut joints on each kind of tree (docs/theory.md §4-6).

The loop-closure part of a Robot (constraints.py) needs, at (q, v): the stacked position
residuals g (b,), the closure Jacobian G_l (b, nv) on the joint (and elastic) velocities, the
velocity product gamma with G_l qdd + gamma = 0, the loads of multipliers lambda on the cut
bodies, and the cut wrenches. How they are computed depends on the tree:

- RigidLoopKinematics: cut frames fixed in rigid bodies; kernels/closed_loop.py computes the cut
  rows, G_l and gamma from the RNEA's accelerations, and offers the seeds' recursive forward
  dynamics [000] (with a C entry) and the body-coordinate descriptor formalism.
- FlexibleLoopKinematics: a cut frame on a flexible link rides on the DEFORMED point of its
  origin (like a child joint), so G_l has elastic columns. The frames' twist Jacobians come from
  kernels/flexible_frames.py, the residuals and their frame Jacobians from closure_kinematics;
  gamma uses the frames' velocity-product accelerations a = d/dt (J(q) v)|qdd=0 by a central
  difference along q (+) h v (h ~ 1e-6 / |v|: error ~h^2 |v|^3, ~1e-12 relative). No recursive
  solver: the constrained dynamics are solved densely (constraints.py).

Both share the constructor's checks (CutSet) and return copies; they run on the tree's loaded
workspace under the Robot's lock.
"""
from __future__ import annotations

import numpy as np

from .. import layout as L
from ..errors import ModelError
from ..kernels import closure_kinematics as ck
from ..kernels import flexible_forces as ff
from ..kernels import flexible_frames as fr
from ..kernels.closed_loop import add_loop_loads as _add_loop_loads
from ..kernels.closed_loop import closed_loop_forward_dynamics as _closed_loop_fd
from ..kernels.closed_loop import cut_rows as _cut_rows
from ..kernels.closed_loop import cut_wrenches as _cut_wrenches
from ..kernels.closed_loop import loop_jacobian as _loop_jacobian
from ..kernels.closed_loop import world_poses as _world_poses
from ..flexible import layout as F

# The loop workspace grows with the square of the constraint rows; refuse absurd sizes.
MAX_LOOP_WORKSPACE_BYTES = 2**30


class CutSet:
    """The cut joints of a closure file on a tree: their links, bodies and constraint rows.
    Raises ModelError naming the file and the closure for a cut inside one rigid body."""

    def __init__(self, tree, closure_set):
        model = tree.model
        where = closure_set.source
        link_index = {name: i for i, name in enumerate(model.link_names)}
        self.tree = tree
        self.specs = tuple(closure_set.closures)
        self.names = [c.name for c in self.specs]
        self.types = [c.type for c in self.specs]
        self.codes = []
        self.links = []           # (parent-side link, child-side link) per cut
        self.rows = []            # slice of each cut's constraint rows
        n_rows = 0
        for spec in self.specs:
            link_a, link_b = link_index[spec.parent], link_index[spec.child]
            if tree.link_body(link_a) == tree.link_body(link_b):
                raise ModelError(f"{where}: closure '{spec.name}': links '{spec.parent}' and "
                                 f"'{spec.child}' are welded into one rigid body (fixed joints): "
                                 "a cut joint between them constrains nothing")
            code = ck.CUT_TYPE_CODES[spec.type]
            self.codes.append(code)
            self.links.append((link_a, link_b))
            self.rows.append(slice(n_rows, n_rows + ck.CUT_ROWS[code]))
            n_rows += ck.CUT_ROWS[code]
        self.n_constraints = n_rows
        self.source = where


class RigidLoopKinematics(CutSet):
    """Cut rows on a rigid tree (kernels/closed_loop.py; see the module docstring)."""

    recursive = True   # the seeds' recursive forward dynamics is available

    def __init__(self, tree, closure_set):
        super().__init__(tree, closure_set)
        n_cuts = len(self.specs)
        n_rows = self.n_constraints
        self.cut_int = np.zeros((n_cuts, L.CUT_INT_WIDTH), dtype=np.int64)
        rows = []
        for s, spec in enumerate(self.specs):
            link_a, link_b = self.links[s]
            self.cut_int[s] = (self.codes[s], tree.link_body(link_a), tree.link_body(link_b),
                               self.rows[s].start, ck.CUT_ROWS[self.codes[s]])
            rows.append(ck.cut_row(spec, tree.link_placement(link_a),
                                   tree.link_placement(link_b)))
        self.cut_links = np.array(self.links, dtype=np.int64).reshape(n_cuts, 2)
        self.cut_float = np.ascontiguousarray(np.array(rows, dtype=float).reshape(n_cuts, -1))
        width = L.LOOP_FIXED_WIDTH + 3 * n_rows + tree.nv
        if n_rows * width * 8 > MAX_LOOP_WORKSPACE_BYTES:
            raise ModelError(f"{self.source}: {n_cuts} closures with {n_rows} constraint rows "
                             f"need a {n_rows * width * 8 / 2**30:.1f} GiB loop workspace (more "
                             f"than {MAX_LOOP_WORKSPACE_BYTES / 2**30:.0f} GiB): too many closures")
        try:
            self.loop_float = np.zeros((n_rows, width))
            self.free_loop_float = np.zeros_like(self.loop_float)   # the C entry's own
        except MemoryError:
            raise ModelError(f"{self.source}: not enough memory for the loop workspace of "
                             f"{n_cuts} closures ({n_rows} constraint rows)") from None
        self.jacobian = np.zeros((n_rows, tree.nv))
        self._scratch = np.zeros(6)

    def state(self, q, v):
        """(g (b,), G_l (b, nv), G_l v (b,)) at (q, v) (copies)."""
        tree = self.tree
        tree.kinematics(q, v)
        _cut_rows(self.cut_int, self.cut_float, tree.work, self.loop_float)
        _loop_jacobian(tree.body_int, tree.body_float, tree.work, self.cut_int, self.loop_float,
                       self.jacobian)
        jacobian = self.jacobian.copy()
        return self.loop_float[:, L.LOOP_RESIDUAL].copy(), jacobian, jacobian @ v

    def bias(self, q, v):
        """gamma''_l (b,) with G_l qdd + gamma''_l = 0: G_s a(qdd = 0) + gamma''_s. The RNEA's
        accelerations carry a uniform -g, which relative constraints do not see (its joint
        forces, which the loads would change, are not used)."""
        tree = self.tree
        tree.inverse_dynamics(q, v, np.zeros(tree.nv), tree.scratch)
        _world_poses(tree.body_int, tree.work)
        _cut_rows(self.cut_int, self.cut_float, tree.work, self.loop_float)
        bias = np.empty(self.n_constraints)
        for s, rows in enumerate(self.rows):
            a, b = self.cut_int[s, L.CUT_BODY_A], self.cut_int[s, L.CUT_BODY_B]
            lf = self.loop_float[rows]
            bias[rows] = (lf[:, L.LOOP_JAC_A:L.LOOP_JAC_A + 6] @ tree.work[a, L.ACC:L.ACC + 6]
                          + lf[:, L.LOOP_JAC_B:L.LOOP_JAC_B + 6] @ tree.work[b, L.ACC:L.ACC + 6]
                          + lf[:, L.LOOP_BIAS])
        return bias

    def recursive_forward_dynamics(self, q, v, tau, alpha, beta, out, info):
        """The seeds' recursive closed-loop forward dynamics [000] on the loaded workspace (its
        loads act); multipliers and residuals in loop_float. -> status"""
        tree = self.tree
        return _closed_loop_fd(tree.body_int, tree.body_float, tree.work, self.cut_int,
                               self.cut_float, self.loop_float, q, v, tau, alpha, beta, out, info)

    def multipliers_and_residual(self):
        """(lambda (b,), max |g|) of the last recursive_forward_dynamics (copies)."""
        return (self.loop_float[:, L.LOOP_LAMBDA].copy(),
                float(np.abs(self.loop_float[:, L.LOOP_RESIDUAL]).max(initial=0.0)))

    def add_loads(self, q, lam):
        """Add the cut forces G_a^T lambda, G_b^T lambda to the loads of the two cut bodies and
        of their cut links (for the fixed-joint wrench pass); the cut rows are those of the last
        state(), which the caller computed at this q."""
        tree = self.tree
        _add_loop_loads(self.cut_int, self.cut_links, self.loop_float, lam, tree.work,
                        tree.link_fext)
        tree.loads_dirty = True

    def cut_wrenches(self, q, lam):
        """(n_cuts, 6): wrench each cut exerts on its child-side link, in the child-side cut
        frame about its origin; the cut rows are those of the last state(), at this q."""
        out = np.zeros((len(self.specs), 6))
        _cut_wrenches(self.cut_int, self.cut_float, self.loop_float, lam, self._scratch, out)
        return out

    def c_entry(self, gains, info, multipliers):
        """(C entry, bound arrays, dims, lengths, out columns) of the recursive forward dynamics
        on the tree's free workspace and this loop's own workspace (fastcall/entries.py)."""
        from ..fastcall.entries import entry
        tree = self.tree
        bound = (tree.body_int, tree.body_float, tree.free_work, self.cut_int, self.cut_float,
                 self.free_loop_float, gains, info, multipliers)
        dims = (tree.body_int.shape + tree.body_float.shape + tree.free_work.shape
                + self.cut_int.shape + self.cut_float.shape + self.free_loop_float.shape
                + (tree.nq, tree.nv, self.n_constraints))
        return (entry("closed_loop", "forward_dynamics"), bound, dims,
                (tree.nq, tree.nv, tree.nv, tree.nv), 0)


class FlexibleLoopKinematics(CutSet):
    """Cut frames at deformed points of a flexible tree (see the module docstring)."""

    recursive = False

    def __init__(self, tree, closure_set):
        super().__init__(tree, closure_set)
        from .force_loads import frame_ends
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
