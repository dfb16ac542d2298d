"""The kinematics of the cut joints on each kind of tree (docs/theory.md §4-6).

The loop-closure part of a Robot (constraints.py) needs, at (q, v): the stacked position
residuals g (b,), the closure Jacobian G_l (b, nv) on the joint (and elastic) velocities, the
velocity product gamma with G_l qdd + gamma = 0, the loads of multipliers lambda on the cut
bodies, and the cut wrenches. How they are computed depends on the tree:

- RigidLoopKinematics: cut frames fixed in rigid bodies; kernels/closed_loop.py computes the cut
  rows, G_l and gamma from the RNEA's accelerations, and offers the seeds' recursive forward
  dynamics [000] (with a C entry) and the body-coordinate descriptor formalism.
- FlexibleLoopKinematics (flexible_loops.py): a cut frame on a flexible link rides on the
  DEFORMED point of its origin, so G_l has elastic columns; no recursive solver (the constrained
  dynamics are solved densely, constraints.py).

Both share the constructor's checks (CutSet) and return copies; they run on the tree's loaded
workspace under the Robot's lock.
"""
from __future__ import annotations

import numpy as np

from ..model import layout as L
from ..errors import ModelError
from ..kernels import closure_kinematics as ck
from ..kernels.closed_loop import add_loop_loads as _add_loop_loads
from ..kernels.closed_loop import closed_loop_forward_dynamics as _closed_loop_fd
from ..kernels.closed_loop import cut_rows as _cut_rows
from ..kernels.closed_loop import cut_wrenches as _cut_wrenches
from ..kernels.closed_loop import loop_jacobian as _loop_jacobian
from ..kernels.closed_loop import world_poses as _world_poses

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
