"""Closed loops on robots with flexible links (docs/flexible.md, "Closed loops").

A cut joint of the `closures:` file (mbd_ros/closures.py) may have either side on a flexible link
(or on a link welded to one): its frame then rides on the DEFORMED point of its origin, with the
child joints' kinematics (origin c + Phi_t q_f, axes turned by the Cayley rotation of Phi_r q_f),
so the closure Jacobian has elastic columns. The residuals, their Jacobians with respect to the
two frames' twists and the velocity-product terms are those of the rigid loops
(kernels/closure_kinematics.py closure_kinematics, applied to the two cut frames as if each were
a body of its own); the frames' twist Jacobians J_frame (6 x nv) come from
kernels/flexible_frames.py, so that

    G_l = G_A J_A(q) + G_B J_B(q),   gamma = G_A a_A + G_B a_B + gamma2,   a = d/dt (J(q) v)|qdd=0

Deviation from the rigid loops (docs/theory.md §5-6): the dynamics are the dependent-coordinate
formalism with multipliers, dense (seed [003] eqs. 7-11): M qdd + b = tau + G_l^T lambda,
G_l qdd = -gamma - 2 alpha G_l v - beta^2 g (Baumgarte), with M from the flexible recursion's
mass matrix and the frames' velocity-product accelerations a by a central difference of the
frames' twists along q (+) h v (h ~ 1e-6 / |v|: error ~h^2 |v|^3, ~1e-12 relative); the
recursive closed-loop formalism of seed [000] is not extended to flexible bodies (yet).
"""
from __future__ import annotations

import threading

import numpy as np

from .. import layout as L
from ..errors import ModelError
from ..kernels import closure_kinematics as ck
from ..kernels import flexible_forces as ff
from ..kernels import flexible_frames as fr
from ..kernels.linalg import RANK_TOLERANCE
from ..loops import ASSEMBLY_STARTS, ASSEMBLY_TOLERANCE, LOOP_RESIDUAL_WARNING, \
    PROJECTION_TOLERANCE, LoopResidualWarning
from ..robot import _EMPTY, _locked, _output, _real_array, _vector
from .forces import frame_ends
from ..kernels import flexible_dynamics as K
from . import layout as F
from .robot import FlexibleRobot


class FlexibleClosedLoopRobot(FlexibleRobot):
    """A FlexibleRobot whose tree is closed by cut joints (module docstring)."""

    def __init__(self, model, flexible, closure_set):
        super().__init__(model, flexible)
        where = closure_set.source
        self.closure_set = closure_set
        self.closure_names = [c.name for c in closure_set.closures]
        self.closure_types = [c.type for c in closure_set.closures]
        self.actuated_joints = list(closure_set.actuated)
        dofs = []
        for name in self.actuated_joints:
            if name not in self.joint_names:
                raise ModelError(f"{where}: '{name}' in actuated is not a movable joint of the "
                                 f"tree (joints: {', '.join(self.joint_names[:8])})")
            j = self.joint_names.index(name)
            stop = self.idx_v[j + 1] if j + 1 < len(self.idx_v) else model.nv
            dofs.extend(range(self.idx_v[j], stop))
        for i in range(1, model.n_bodies + 1):     # a free root's wrench, as rnea gives it
            if model.body_int[i, L.PARENT] == 0 and model.body_int[i, L.JOINT_TYPE] == L.JOINT_FREE:
                iv = int(model.body_int[i, L.IDX_V])
                dofs.extend(range(iv, iv + 6))
        self._actuated_dofs = np.array(sorted(set(dofs)), dtype=np.int64)
        ends, rows, self._cut_codes, self._cut_rows_slices = [], [], [], []
        n_rows = 0
        for spec in closure_set.closures:
            link_a, link_b = self._link_index[spec.parent], self._link_index[spec.child]
            if model.link_int[link_a, L.LINK_BODY] == model.link_int[link_b, L.LINK_BODY]:
                raise ModelError(f"{where}: closure '{spec.name}': links '{spec.parent}' and "
                                 f"'{spec.child}' are welded into one body (fixed joints): a cut "
                                 "joint between them constrains nothing")
            ends += [(link_a, np.asarray(spec.parent_origin, float)),
                     (link_b, np.asarray(spec.child_origin, float))]
            code = ck.CUT_TYPE_CODES[spec.type]
            row = ck.cut_row(spec)
            # each cut frame is its own "body": frames at the body origin, aligned by Q
            align = row[ck.CUT_ALIGN:ck.CUT_ALIGN + 9]
            row[ck.CUT_A_ROT:ck.CUT_A_ROT + 9] = align
            row[ck.CUT_B_ROT:ck.CUT_B_ROT + 9] = align
            row[ck.CUT_A_POS:ck.CUT_A_POS + 3] = 0.0
            row[ck.CUT_B_POS:ck.CUT_B_POS + 3] = 0.0
            row[ck.CUT_CHILD_ROT:ck.CUT_CHILD_ROT + 9] = np.eye(3).ravel()
            rows.append(row)
            self._cut_codes.append(code)
            self._cut_rows_slices.append(slice(n_rows, n_rows + ck.CUT_ROWS[code]))
            n_rows += ck.CUT_ROWS[code]
        self.n_constraints = n_rows
        self._cut_data = np.array(rows)
        self._frame_int, self._frame_float, self._frame_data, _ = frame_ends(self, ends)
        n_ends = len(ends)
        self._frame_state = np.zeros((n_ends, ff.END_STATE_WIDTH))
        self._frame_jac = np.zeros((n_ends, 6, self.nv))
        self._frame_twist = np.zeros((n_ends, 6, 1))
        self._unit_v = np.zeros(self.nv)
        self._baumgarte = (0.0, 0.0)
        self._thread_multipliers = threading.local()   # per thread: multipliers()
        self.last_rank = n_rows

    @property
    def _multipliers(self):
        """(b,) the loop multipliers of this thread's last forward or inverse dynamics (zeros
        before its first): per thread, as ClosedLoopRobot.multipliers()."""
        lam = getattr(self._thread_multipliers, "value", None)
        return np.zeros(self.n_constraints) if lam is None else lam

    @_multipliers.setter
    def _multipliers(self, lam):
        self._thread_multipliers.value = lam

    # ------------------------------------------------------------------ loop kinematics
    @property
    def baumgarte(self):
        """(alpha, beta): Baumgarte gains of forward_dynamics (0: the exact acceleration
        constraint)."""
        return self._baumgarte

    @baumgarte.setter
    def baumgarte(self, gains):
        try:
            alpha, beta = (float(g) for g in gains)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"baumgarte must be two numbers (alpha, beta), got {gains!r}") from None
        if not (np.isfinite(alpha) and np.isfinite(beta) and alpha >= 0.0 and beta >= 0.0):
            raise ValueError(f"baumgarte gains must be finite and >= 0, got ({alpha}, {beta})")
        self._baumgarte = (alpha, beta)

    def _frame_twists(self, q, v):
        """(n_ends, 6) twists of the cut frames at (q, v), their own axes; poses in _frame_state."""
        fr.frame_states(self._fint, self._ffloat, self._fdata, self._work, self._fwork,
                        self._frame_int, self._frame_float, self._frame_data, q, v,
                        self._frame_state, self._frame_twist)
        return self._frame_twist[:, :, 0].copy()

    def _cut_terms(self, q, v):
        """Per cut: (rows slice, residual, G_A (b, 6), G_B (b, 6), gamma2) at (q, v), from
        closure_kinematics on the two deformed cut frames."""
        twists = self._frame_twists(q, v)
        terms = []
        for s, code in enumerate(self._cut_codes):
            a, b = 2 * s, 2 * s + 1
            n = ck.CUT_ROWS[code]
            residual, bias = np.zeros(6), np.zeros(6)
            jac_a, jac_b = np.zeros((6, 6)), np.zeros((6, 6))
            st = self._frame_state
            ck.closure_kinematics(code, self._cut_data[s],
                                  np.ascontiguousarray(st[a, ff.ES_R:ff.ES_R + 9]),
                                  np.ascontiguousarray(st[a, ff.ES_X:ff.ES_X + 3]),
                                  np.ascontiguousarray(twists[a]),
                                  np.ascontiguousarray(st[b, ff.ES_R:ff.ES_R + 9]),
                                  np.ascontiguousarray(st[b, ff.ES_X:ff.ES_X + 3]),
                                  np.ascontiguousarray(twists[b]), residual, jac_a, jac_b, bias)
            terms.append((self._cut_rows_slices[s], residual[:n], jac_a[:n], jac_b[:n], bias[:n]))
        return terms

    def _frame_jacobians(self, q):
        fr.frame_jacobians(self._fint, self._ffloat, self._fdata, self._work, self._fwork,
                           self._frame_int, self._frame_float, self._frame_data, q, self._unit_v,
                           self._frame_state, self._frame_jac)
        return self._frame_jac.copy()

    @_locked
    def loop_state(self, q, v=None):
        """(g (b,), G_l (b, nv), G_l v (b,)) at (q, v): position residuals, closure Jacobian
        (elastic columns included) and velocity residual (zeros when v is None)."""
        q = _vector(q, self.nq, "q")
        v = np.zeros(self.nv) if v is None else _vector(v, self.nv, "v")
        self._check_state(q, v, _EMPTY, "")
        frames = self._frame_jacobians(q)
        g = np.zeros(self.n_constraints)
        G = np.zeros((self.n_constraints, self.nv))
        for s, (rows, residual, jac_a, jac_b, _) in enumerate(self._cut_terms(q, np.zeros(self.nv))):
            g[rows] = residual
            G[rows] = jac_a @ frames[2 * s] + jac_b @ frames[2 * s + 1]
        return g, G, G @ v

    def loop_jacobian(self, q):
        """G_l (b, nv): G_l v = 0 on the loops."""
        return self.loop_state(q)[1]

    def closure_residual(self, q, v=None):
        """(max |g|, max |G_l v|): position and velocity residuals of the loops."""
        g, _, gv = self.loop_state(q, v)
        return float(np.abs(g).max(initial=0.0)), float(np.abs(gv).max(initial=0.0))

    @_locked
    def _acceleration_bias(self, q, v):
        """gamma (b,) with G_l qdd + gamma = 0: G_A a_A + G_B a_B + gamma2, the frames'
        velocity-product accelerations a = d/dt (J(q) v) by a central difference along q (+) h v."""
        h = 1e-6 / max(1.0, float(np.abs(v).max(initial=0.0)))
        plus = self._frame_twists(self.integrate(q, v, h), v)
        minus = self._frame_twists(self.integrate(q, v, -h), v)
        acc = (plus - minus) / (2.0 * h)
        gamma = np.zeros(self.n_constraints)
        for s, (rows, _, jac_a, jac_b, bias) in enumerate(self._cut_terms(q, v)):
            gamma[rows] = jac_a @ acc[2 * s] + jac_b @ acc[2 * s + 1] + bias
        return gamma

    # ------------------------------------------------------------------ dynamics
    def _tree_terms(self, q, v, tau, f_ext):
        """(M, tau - ID(q, v, 0)): the tree's M qdd = rhs (forces, elements, passive included)."""
        rhs = np.asarray(tau, dtype=float) - FlexibleRobot.inverse_dynamics(
            self, q, v, np.zeros(self.nv), f_ext=f_ext)
        return self.mass_matrix(q), rhs

    @_locked
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None):
        """Accelerations (nv,) of the closed-loop flexible robot: M qdd + b = tau + G_l^T lambda,
        G_l qdd = -gamma - 2 alpha G_l v - beta^2 g (module docstring); the multipliers are kept
        (multipliers()). Minimum-norm multipliers for redundant constraints."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        tau = _vector(tau, self.nv, "tau")
        if out is not None:
            _output(out, (self.nv,))
        self._check_state(q, v, tau, "tau")
        M, rhs = self._tree_terms(q, v, tau, f_ext)
        g, G, Gv = self.loop_state(q, v)
        if np.abs(g).max(initial=0.0) > LOOP_RESIDUAL_WARNING:
            import warnings
            warnings.warn(f"forward_dynamics: the loops are open by {np.abs(g).max():.3g} (m or "
                          f"rad) at this q, more than {LOOP_RESIDUAL_WARNING:g}", LoopResidualWarning,
                          stacklevel=3)
        alpha, beta = self._baumgarte
        target = -self._acceleration_bias(q, v) - 2.0 * alpha * Gv - beta * beta * g
        chol = np.linalg.cholesky(M)
        solve = lambda x: np.linalg.solve(chol.T, np.linalg.solve(chol, x))  # noqa: E731
        qdd0 = solve(rhs)
        if self.n_constraints:
            Minv_Gt = solve(G.T)
            A = G @ Minv_Gt
            lam, _, rank, _ = np.linalg.lstsq(A, target - G @ qdd0, rcond=RANK_TOLERANCE)
            self.last_rank = int(rank)
            qdd = qdd0 + Minv_Gt @ lam
            self._multipliers = lam
        else:
            qdd = qdd0
        if not np.all(np.isfinite(qdd)):
            raise ValueError("forward_dynamics: the result is not finite")
        if out is None:
            return qdd
        out[:] = qdd
        return out

    def multipliers(self):
        """(b,) loop multipliers of this thread's last forward_dynamics call."""
        return self._multipliers.copy()

    @_locked
    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces (nv,) of the actuated joints (zeros elsewhere; the elastic rows are not
        actuated) that produce qdd on the loops: ID_tree(q, v, qdd) = tau + G_l^T lambda, least
        squares with minimum norm (redundant actuation or constraints)."""
        if out is not None:
            _output(out, (self.nv,))
        tau_tree = FlexibleRobot.inverse_dynamics(self, q, v, qdd, f_ext=f_ext)
        _, G, _ = self.loop_state(q)
        act = self._actuated_dofs
        A = np.hstack([np.eye(self.nv)[:, act], G.T])
        x = np.linalg.lstsq(A, tau_tree, rcond=RANK_TOLERANCE)[0]
        tau = np.zeros(self.nv)
        tau[act] = x[:len(act)]
        self._multipliers = x[len(act):]
        if out is None:
            return tau
        out[:] = tau
        return out

    @_locked
    def closure_wrenches(self, q, v, tau, f_ext=None, multipliers=None):
        """(n_closures, 6): wrench each cut joint exerts on its child-side link, in the (deformed)
        child-side cut frame about its origin: G_B^T lambda of the cut's rows. multipliers: those
        of a forward_dynamics call at this same state (multipliers()), to skip solving again."""
        if multipliers is None:
            self.forward_dynamics(q, v, tau, f_ext=f_ext)
            lam = self._multipliers
        else:
            lam = _real_array(multipliers, "multipliers", "an array of numbers (robot.multipliers())")
            if lam.shape != (self.n_constraints,) or not np.all(np.isfinite(lam)):
                raise ValueError(f"multipliers must be {self.n_constraints} finite numbers "
                                 "(robot.multipliers())")
        out = np.zeros((len(self.closure_names), 6))
        for s, (rows, _, _, jac_b, _) in enumerate(self._cut_terms(_vector(q, self.nq, "q"),
                                                                   np.zeros(self.nv))):
            out[s] = jac_b.T @ lam[rows]
        return out

    @_locked
    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None, multipliers=None):
        """Joint wrenches (FlexibleRobot.joint_wrenches) including the loop forces, for a
        loop-consistent (q, v, qdd). multipliers: robot.multipliers() of the forward_dynamics
        call that returned this qdd at this (q, v) (else they are solved from the inverse
        dynamics). Each cut's wrench G_A^T lambda / G_B^T lambda acts on its two links at the
        deformed cut frames; loads on links welded to a cut link are not split per fixed joint."""
        if multipliers is None:
            self.inverse_dynamics(q, v, qdd, f_ext=f_ext)
            lam = self._multipliers.copy()
        else:
            lam = _real_array(multipliers, "multipliers", "an array of numbers (robot.multipliers())")
            if lam.shape != (self.n_constraints,) or not np.all(np.isfinite(lam)):
                raise ValueError(f"multipliers must be {self.n_constraints} finite numbers "
                                 "(robot.multipliers())")
        self._loop_loads = lam
        try:
            return FlexibleRobot.joint_wrenches(self, q, v, qdd, f_ext=f_ext, out=out)
        finally:
            self._loop_loads = None

    def _add_extra_loads(self, q, v):
        """FEXT += each cut frame's wrench jac^T lambda (its axes, about its deformed origin),
        moved to its body's reference frame: f_b = R f, t_b = R t + u x f_b with R the frame's
        rotation in the body frame and u its deformed origin there."""
        lam = getattr(self, "_loop_loads", None)
        if lam is None or not self.n_constraints:
            return
        q = _vector(q, self.nq, "q")
        terms = self._cut_terms(q, np.zeros(self.nv))      # frame poses at q (_frame_state)
        K.forward_kinematics(self._fint, self._ffloat, self._fdata, self._work, self._fwork, q)
        st = self._frame_state
        for s, (rows, _, jac_a, jac_b, _) in enumerate(terms):
            for end, jac in ((2 * s, jac_a), (2 * s + 1, jac_b)):
                wrench = jac.T @ lam[rows]
                body = int(self._frame_int[end, ff.END_BODY])
                if body <= 0:
                    continue                                 # on the ground
                body_rot = self._work[body, F.WORLD_ROT:F.WORLD_ROT + 9].reshape(3, 3)
                rot = body_rot.T @ st[end, ff.ES_R:ff.ES_R + 9].reshape(3, 3)
                force = rot @ wrench[:3]
                torque = rot @ wrench[3:] + np.cross(st[end, ff.ES_U:ff.ES_U + 3], force)
                self._work[body, F.FEXT:F.FEXT + 3] += force
                self._work[body, F.FEXT + 3:F.FEXT + 6] += torque
        self._fext_dirty = True

    def forward_dynamics_batch(self, q, v, tau, out=None):
        from ..forces import batch_with_forces
        return batch_with_forces(self, self.forward_dynamics, q, v, tau, "tau", out)

    def inverse_dynamics_batch(self, q, v, qdd, out=None):
        from ..forces import batch_with_forces
        return batch_with_forces(self, self.inverse_dynamics, q, v, qdd, "qdd", out)

    # ------------------------------------------------------------------ assembly, simulation
    @_locked
    def assemble(self, q, max_iterations=50, elastic=False):
        """q moved onto the loops (g = 0) by Gauss-Newton with minimum-norm steps and a
        backtracking line search on |g|, moving the joint coordinates only: the elastic
        coordinates keep their values in q (at rest for q from neutral() or a node's initial
        positions), so the loop is not closed by pre-stressing the structure. elastic=True moves
        them too (the minimum-norm correction of every coordinate, as project_state after a
        step). When Newton from q stalls (e.g. at the stretched, singular configuration) it
        restarts from ASSEMBLY_STARTS guesses with the joint coordinates perturbed (fixed seed).
        Raises ValueError when none closes the loops."""
        q = np.array(_vector(q, self.nq, "q"), dtype=float)
        self._check_state(q, _EMPTY, _EMPTY, "")
        joints = np.setdiff1d(np.arange(self.nv), self.elastic_v_indices)
        moved = np.arange(self.nv) if elastic else joints
        result, residual = self._newton(q, moved, max_iterations)
        best = residual
        rng = np.random.default_rng(0)
        for _ in range(ASSEMBLY_STARTS):
            if residual < ASSEMBLY_TOLERANCE:
                return result
            step = np.zeros(self.nv)
            step[joints] = rng.normal(scale=0.3, size=len(joints))
            result, residual = self._newton(self.integrate(q, step, 1.0), moved, max_iterations)
            best = min(best, residual)
        if residual < ASSEMBLY_TOLERANCE:
            return result
        held = "" if elastic else " with the elastic coordinates held (elastic=True moves them too)"
        raise ValueError(f"assemble: the loops did not close{held}: Newton from q and "
                         f"{ASSEMBLY_STARTS} other starts leave a residual of at least {best:.3g}")

    def _newton(self, q, moved, max_iterations):
        """Gauss-Newton on g(q) = 0 moving the v indices `moved` (minimum-norm steps, halved
        while |g| does not decrease). Returns (q, max |g|)."""
        g, jac, _ = self.loop_state(q)
        norm = np.linalg.norm(g)
        step = np.zeros(self.nv)
        for _ in range(max_iterations):
            if np.abs(g).max(initial=0.0) < ASSEMBLY_TOLERANCE:
                break
            step[:] = 0.0
            step[moved] = -np.linalg.lstsq(jac[:, moved], g, rcond=RANK_TOLERANCE)[0]
            if not np.all(np.isfinite(step)):
                break
            scale = 1.0
            while True:
                q_try = self.integrate(q, step, scale)
                g_try, jac_try, _ = self.loop_state(q_try)
                norm_try = np.linalg.norm(g_try)
                if norm_try < norm or scale < 1.0 / 64:
                    break
                scale *= 0.5
            if not norm_try < norm:   # no descent even for a small step: a local minimum of |g|
                break
            q, g, jac, norm = q_try, g_try, jac_try, norm_try
        return q, float(np.abs(g).max(initial=0.0))

    @_locked
    def project_velocity(self, q, v):
        """v with G_l v = 0 by the correction of least kinetic energy,
        v - M^-1 G^T (G M^-1 G^T)^+ G v (q on the loops)."""
        v = np.array(_vector(v, self.nv, "v"), dtype=float)
        _, G, Gv = self.loop_state(q, v)
        if G.shape[0]:
            Minv_Gt = np.linalg.solve(self.mass_matrix(q), G.T)
            v = v - Minv_Gt @ (np.linalg.pinv(G @ Minv_Gt, rcond=RANK_TOLERANCE) @ Gv)
        return v

    @_locked
    def project_state(self, q, v):
        """(q, v) back on the loops after a step: q by the minimum-norm correction of every
        coordinate (assemble(q, elastic=True)), then project_velocity."""
        q = self.assemble(q, elastic=True)
        return q, self.project_velocity(q, v)

    @_locked
    def step(self, q, v, tau, dt, integrator=None, project=True, **options):
        """One simulation step (FlexibleRobot.step) -> (q, v); afterwards the loops are re-closed
        (project_state) when the residuals exceed PROJECTION_TOLERANCE. self.time advances by dt,
        and is unchanged when the step or the projection fails."""
        start = self.time
        q_next, v_next = FlexibleRobot.step(self, q, v, tau, dt, integrator, **options)
        try:
            if project:
                position, velocity = self.closure_residual(q_next, v_next)
                if position > PROJECTION_TOLERANCE or velocity > PROJECTION_TOLERANCE:
                    q_next, v_next = self.project_state(q_next, v_next)
        except BaseException:
            self.time = start
            raise
        return q_next, v_next
