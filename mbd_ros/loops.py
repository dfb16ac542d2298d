"""Robots with closed kinematic loops: a URDF tree plus cut (secondary) joints (docs/theory.md §4-6).

ClosedLoopRobot keeps the Robot contract and adds the loops:
- forward_dynamics: the seeds' recursive formalism [000] (kernels/closed_loop.py) by default;
  method="minimal" (coordinate partitioning, docs/theory.md §5 end) and method="descriptor" (body
  coordinates with multipliers for every joint, docs/theory.md §6) are dense independent formalisms.
- inverse_dynamics: torques of the actuated joints (+ the root wrench of a floating base).
- joint_wrenches / closure_wrenches include the loop forces.
- loop kinematics: residuals, the closure Jacobian G_l, assembly (Newton), velocity projection,
  coordinate partitioning, DOF analysis (Grübler-Kutzbach, rank), simulation steps.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

from . import layout as L
from .errors import ModelError, excerpt
from .kernels import closure_kinematics as ck
from .kernels.checked import STATUS_ALIASED as _STATUS_ALIASED
from .kernels.closed_loop import closed_loop_forward_dynamics as _closed_loop_fd
from .kernels.closed_loop import add_loop_loads as _add_loop_loads
from .kernels.closed_loop import cut_rows as _cut_rows
from .kernels.closed_loop import cut_wrenches as _cut_wrench_kernel
from .kernels.closed_loop import loop_jacobian as _loop_jacobian
from .kernels.closed_loop import world_poses as _world_poses
from .kernels.kinematics import forward_kinematics as _forward_kinematics
from .kernels.loop_results import loop_results as _loop_results
from .finite import all_finite as _all_finite
from .kernels.linalg import RANK_TOLERANCE
from .robot import _EMPTY, Robot, _aliased, _locked, _output, _real_array, _vector

# Newton assembly stops when the largest residual is below this (m or rad).
ASSEMBLY_TOLERANCE = 1e-12
# assemble(): steps of the continuation in the held coordinates, and further random starts.
ASSEMBLY_CONTINUATION_STEPS = 16
ASSEMBLY_STARTS = 8
# Forward and inverse dynamics warn (LoopResidualWarning) when the loops are open by more than
# this (m or rad) at the given q: the results then describe a configuration the mechanism
# cannot take (assemble() first). Measured states carry noise well below it.
LOOP_RESIDUAL_WARNING = 1e-3
# The loop workspace grows with the square of the constraint rows; refuse absurd sizes.
MAX_LOOP_WORKSPACE_BYTES = 2**30
# A partition is re-chosen when cond(G_ld) exceeds this (the independent set no longer
# parametrises the motion well, docs/theory.md §4). Measured on the four-bar driven through the rocker's
# dead point: with 1e8 the energy error of an RK4 crank turn is 4.4e-5 J (accuracy is lost from
# cond ~4e3 on), with 1e3 it stays at the integrator's 1e-8 J (test_integrators.py).
PARTITION_CONDITION_LIMIT = 1e3
# Freedoms a joint keeps when the whole mechanism moves in one plane (Grübler-Kutzbach's planar
# count f = sum f_i - 3 n_h [003]): a spherical, universal or cylindrical joint of a planar
# mechanism can only turn about the plane's normal; a distance constraint leaves 2 of 3.
PLANAR_CUT_FREEDOMS = {"revolute": 1, "prismatic": 1, "cylindrical": 1, "universal": 1,
                       "spherical": 1, "planar": 3, "fixed": 0, "distance": 2, "helical": 1}
PLANAR_TREE_FREEDOMS = {"revolute": 1, "prismatic": 1, "spherical": 1, "floating": 3, "planar": 3,
                        "helical": 1, "cylindrical": 1, "universal": 1}


# ClosedLoopRobot.step projects back onto the loops when the position residual (m, rad) or the
# velocity residual (m/s, rad/s) exceeds this.
PROJECTION_TOLERANCE = 1e-10


class _StepReport(dict):
    """ClosedLoopRobot.last_step: position_residual, velocity_residual, and the mechanical
    energy (kinetic + potential) after the step, computed when first read."""

    def __init__(self, robot, q, v, position, velocity):
        super().__init__(position_residual=position, velocity_residual=velocity)
        self._state = (robot, q, v)

    def __missing__(self, key):
        if key != "energy":
            raise KeyError(key)
        robot, q, v = self._state
        self["energy"] = robot.kinetic_energy(q, v) + robot.potential_energy(q)
        return self["energy"]


class LoopResidualWarning(UserWarning):
    """Dynamics asked for at a configuration where the loops are not closed."""


@dataclass(frozen=True)
class LoopAnalysis:
    """Degrees of freedom and constraint structure of a closed-loop robot at one configuration."""
    n_loops: int                  # n_h: independent loops (= cut joints)
    n_constraints: int            # b: constraint rows of all cuts
    rank: int                     # rank of G_l at q
    generic_rank: int             # largest rank seen at nearby assembled configurations
    dof: int                      # nv - generic rank (mobility)
    dof_at_q: int                 # nv - rank at q
    gruebler_kutzbach: int        # sum f_i - 6 n_h (spatial)
    gruebler_kutzbach_planar: int  # sum f_i - 3 n_h with the joints' planar freedoms (planar mechanisms)
    redundant_constraints: int    # b - generic rank
    singular: bool                # rank drops at q (a singular configuration)
    statically_determinate: bool  # no redundant constraints: loop forces are unique
    residual: float               # max |g_s| at q
    independent: tuple            # joint coordinates chosen as minimal coordinates (v indices)
    partition_condition: float    # cond(G_ld) of that partition

    def __str__(self):
        lines = [
            f"loops {self.n_loops}, constraint rows {self.n_constraints}, rank of G_l {self.rank} "
            f"(generic {self.generic_rank})",
            f"degrees of freedom: {self.dof} by rank; Grübler-Kutzbach {self.gruebler_kutzbach} "
            f"(spatial), {self.gruebler_kutzbach_planar} (planar formula)",
            f"redundant constraints: {self.redundant_constraints} -> statically "
            f"{'determinate' if self.statically_determinate else 'indeterminate (loop forces: minimum norm)'}",
            f"singular configuration: {'YES (rank drops to %d)' % self.rank if self.singular else 'no'}",
            f"closure residual: {self.residual:.3g}",
            f"independent coordinates (v indices): {list(self.independent)}, "
            f"cond(G_ld) {self.partition_condition:.3g}",
        ]
        return "\n".join(lines)


def _null_space(matrix, tolerance=RANK_TOLERANCE):
    """Orthonormal basis (n, n - rank) of the null space of matrix (m, n), and its rank."""
    n = matrix.shape[1]
    if matrix.shape[0] == 0:
        return np.eye(n), 0
    _, sigma, vt = np.linalg.svd(matrix)
    rank = int(np.sum(sigma > tolerance * max(sigma.max(initial=0.0), 1e-300)))
    return vt[rank:].T, rank


def _rank(matrix, tolerance=RANK_TOLERANCE):
    if matrix.size == 0:
        return 0
    sigma = np.linalg.svd(matrix, compute_uv=False)
    return int(np.sum(sigma > tolerance * max(sigma.max(initial=0.0), 1e-300)))


class ClosedLoopRobot(Robot):
    """A Robot whose tree is closed by cut joints (see module docstring and docs/design.md)."""

    def __init__(self, model, closure_set):
        super().__init__(model)
        self.closure_set = closure_set
        self.closure_names = [c.name for c in closure_set.closures]
        self.closure_types = [c.type for c in closure_set.closures]
        where = closure_set.source
        joint_index = {name: i for i, name in enumerate(self.joint_names)}
        self.actuated_joints = list(closure_set.actuated)
        for name in self.actuated_joints + list(closure_set.independent):
            if name not in joint_index:
                raise ModelError(f"{where}: '{excerpt(name, 80)}' in actuated/independent is not a movable joint "
                                 f"of the tree (joints: {', '.join(self.joint_names[:8])}...)")
        self._actuated_dofs = self._dofs(self.actuated_joints)
        # a free joint on the universe (floating_base=True, or a URDF root joint of type
        # "floating"): its wrench is reported like rnea's, never solved away
        for i in range(1, model.n_bodies + 1):
            if model.body_int[i, L.PARENT] == 0 and model.body_int[i, L.JOINT_TYPE] == L.JOINT_FREE:
                iv = int(model.body_int[i, L.IDX_V])
                self._actuated_dofs = np.union1d(np.arange(iv, iv + 6), self._actuated_dofs)
        self._preferred_independent = self._dofs(closure_set.independent)

        n_cuts = len(closure_set.closures)
        cut_int = np.zeros((n_cuts, L.CUT_INT_WIDTH), dtype=np.int64)
        rows = []
        n_rows = 0
        link_index = {name: i for i, name in enumerate(self.link_names)}
        self._cut_links = []
        for s, spec in enumerate(closure_set.closures):
            link_a, link_b = link_index[spec.parent], link_index[spec.child]
            body_a = int(model.link_int[link_a, L.LINK_BODY])
            body_b = int(model.link_int[link_b, L.LINK_BODY])
            if body_a == body_b:
                raise ModelError(f"{where}: closure '{spec.name}': links '{spec.parent}' and "
                                 f"'{spec.child}' are welded into one rigid body (fixed joints): "
                                 "a cut joint between them constrains nothing")
            code = ck.CUT_TYPE_CODES[spec.type]
            cut_int[s] = (code, body_a, body_b, n_rows, ck.CUT_ROWS[code])
            rows.append(ck.cut_row(spec, self._link_placement(link_a), self._link_placement(link_b)))
            self._cut_links.append((link_a, link_b))
            n_rows += ck.CUT_ROWS[code]
        self._cut_int = cut_int
        self._cut_link_index = np.array(self._cut_links, dtype=np.int64).reshape(n_cuts, 2)
        self._cut_float = np.ascontiguousarray(np.array(rows, dtype=float).reshape(n_cuts, -1))
        self.n_constraints = n_rows
        width = L.LOOP_FIXED_WIDTH + 3 * n_rows + self.nv
        if n_rows * width * 8 > MAX_LOOP_WORKSPACE_BYTES:
            raise ModelError(f"{where}: {n_cuts} closures with {n_rows} constraint rows need a "
                             f"{n_rows * width * 8 / 2**30:.1f} GiB loop workspace (more than "
                             f"{MAX_LOOP_WORKSPACE_BYTES / 2**30:.0f} GiB): too many closures")
        try:
            self._loop_float = np.zeros((n_rows, width))
        except MemoryError:
            raise ModelError(f"{where}: not enough memory for the loop workspace of {n_cuts} "
                             f"closures ({n_rows} constraint rows)") from None
        self._info = np.zeros(2, dtype=np.int64)   # [status, rank] of the last recursive FD
        self._loop_jac = np.zeros((n_rows, self.nv))
        # ---- C-level entry of forward_dynamics (mbd_ros/fastcall/closed_loop.py) ----
        # its lock-free loop workspace (with Robot._fast_work), [alpha, beta, residual warning
        # threshold] (the baumgarte setter keeps them current), the owner thread's multipliers
        self._fast_loop_float = np.zeros_like(self._loop_float)
        self._c_gains = np.array([0.0, 0.0, LOOP_RESIDUAL_WARNING])
        self._c_multipliers = np.zeros(n_rows)
        # ---- end C-level entry ----
        # Baumgarte gains (alpha, beta) used by forward_dynamics: 0 = the exact acceleration
        # constraint; simulation sets them (docs/theory.md §6).
        self._baumgarte = (0.0, 0.0)
        self.last_rank = n_rows
        self._partition = None
        self._simulators = {}
        self._thread_state = threading.local()   # per-thread: multipliers of the last FD
        self._last_assembled = None        # the last configuration assemble() returned
        self._reference_assemblies = {}    # dependent dofs -> neutral configuration assembled
        # q index of each v index of a one-dof joint (revolute, prismatic), -1 elsewhere
        self._dof_q = np.full(self.nv, -1, dtype=np.int64)
        self._revolute_q = np.full(self.nv, -1, dtype=np.int64)
        for t, iq, iv in zip(self.joint_types, self.idx_q, self.idx_v):
            if t in ("revolute", "prismatic"):
                self._dof_q[iv] = iq
            if t == "revolute":
                self._revolute_q[iv] = iq

    @property
    def baumgarte(self):
        """(alpha, beta): Baumgarte gains of forward_dynamics, finite and >= 0 (docs/theory.md §6)."""
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
        self._c_gains[0] = alpha    # the C entry reads them at every call
        self._c_gains[1] = beta

    @property
    def last_rank(self):
        """Rank of G_s A in the last recursive forward_dynamics (any thread, either path)."""
        return int(self._info[1])

    @last_rank.setter
    def last_rank(self, rank):
        self._info[1] = rank

    # ------------------------------------------------------------------ C-level entry
    def _c_call_names(self):
        """Robot's KernelCalls (the tree's mass matrix), and forward_dynamics's own
        (mbd_ros/fastcall/closed_loop.py) unless a subclass overrides it (mimic couplings)."""
        names = Robot._c_call_names(self)
        if getattr(type(self), "forward_dynamics") is ClosedLoopRobot.forward_dynamics:
            names.append("forward_dynamics")
        return names

    def _c_call_spec(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns[, affine]) of `name`."""
        if name != "forward_dynamics":
            return Robot._c_call_spec(self, name)
        from .fastcall import closed_loop
        return closed_loop.spec(self)

    def _set_c_entry(self, name, entry):
        """Robot's, except for forward_dynamics: Robot.forward_dynamics (the open tree, which
        some callers run on this robot) must not call the closed-loop entry."""
        if name != "forward_dynamics":
            Robot._set_c_entry(self, name, entry)

    def drop_c_calls(self):
        """Robot.drop_c_calls; the calling thread keeps the multipliers of its last call through
        the C entry (multipliers())."""
        if self._c_multiplier_owner():
            self._thread_state.multipliers = self._c_multipliers.copy()
        Robot.drop_c_calls(self)

    def _c_multiplier_owner(self):
        """True when this thread owns the forward_dynamics KernelCall: its multipliers are then
        in self._c_multipliers, written by either path."""
        call = self.__dict__.get("forward_dynamics")
        return call is not None and getattr(call, "owner", 0) == threading.get_ident()

    def _multiplier_buffer(self):
        """The (b,) buffer of this thread's multipliers (created on its first call)."""
        if self._c_multiplier_owner():
            return self._c_multipliers
        lam = getattr(self._thread_state, "multipliers", None)
        if lam is None:
            lam = self._thread_state.multipliers = np.empty(self._loop_float.shape[0])
        return lam

    def summary(self):
        """Robot.summary() plus the cut joints, actuation and constraint count."""
        lines = [super().summary(), f"  loop closures ({self.n_constraints} constraint rows) "
                                    f"from {self.closure_set.source}:"]
        for spec, s in zip(self.closure_set.closures, range(len(self.closure_names))):
            lines.append(f"    {spec.name:<28} {spec.type:<11} {spec.parent} -> {spec.child} "
                         f"({int(self._cut_int[s, L.CUT_ROWS])} rows)")
        lines.append(f"  actuated joints: {', '.join(self.actuated_joints) or 'none'}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ helpers
    def _dofs(self, joint_names):
        dofs = []
        for name in joint_names:
            j = self.joint_names.index(name)
            start = self.idx_v[j]
            stop = self.idx_v[j + 1] if j + 1 < len(self.idx_v) else self.nv
            dofs.extend(range(start, stop))
        return np.array(sorted(set(dofs)), dtype=np.int64)

    def _link_placement(self, link):
        rot = self.model.link_float[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3).copy()
        pos = self.model.link_float[link, L.LINK_POS:L.LINK_POS + 3].copy()
        return rot, pos

    def _rows(self, s):
        r0 = self._cut_int[s, L.CUT_ROW0]
        return slice(r0, r0 + self._cut_int[s, L.CUT_ROWS])

    # ------------------------------------------------------------------ loop kinematics
    @_locked
    def loop_state(self, q, v=None):
        """(g (b,), G_l (b, nv), G_l v (b,)) at (q, v): position residuals, closure Jacobian and
        velocity residual (zeros when v is None). Returns copies."""
        q = self._q(q)
        v = np.zeros(self.nv) if v is None else self._v(v)
        self._check_state(q, v, _EMPTY, "")
        _forward_kinematics(self._body_int, self._body_float, self._work, q, v)
        _cut_rows(self._cut_int, self._cut_float, self._work, self._loop_float)
        _loop_jacobian(self._body_int, self._body_float, self._work, self._cut_int,
                       self._loop_float, self._loop_jac)
        residual = self._loop_float[:, L.LOOP_RESIDUAL].copy()
        jacobian = self._loop_jac.copy()
        return residual, jacobian, jacobian @ v

    def loop_jacobian(self, q):
        """G_l (b, nv): closure constraints on the joint velocities, G_l v + gamma_bar = 0."""
        return self.loop_state(q)[1]

    def closure_residual(self, q, v=None):
        """(max |g|, max |G_l v|): position and velocity residuals of the loops."""
        g, _, gv = self.loop_state(q, v)
        return float(np.abs(g).max(initial=0.0)), float(np.abs(gv).max(initial=0.0))

    def _acceleration_bias(self, q, v):
        """gamma''_l (b,) with G_l qdd + gamma''_l = 0: G_s a(qdd = 0) + gamma''_s. The RNEA's
        accelerations carry a uniform -g, which relative constraints do not see."""
        self._tree_inverse_dynamics(q, v, np.zeros(self.nv), out=self._tau_scratch)
        _cut_rows(self._cut_int, self._cut_float, self._world_from_work(), self._loop_float)
        bias = np.empty(self.n_constraints)
        for s in range(len(self.closure_names)):
            a, b = self._cut_int[s, L.CUT_BODY_A], self._cut_int[s, L.CUT_BODY_B]
            rows = self._rows(s)
            lf = self._loop_float[rows]
            bias[rows] = (lf[:, L.LOOP_JAC_A:L.LOOP_JAC_A + 6] @ self._work[a, L.ACC:L.ACC + 6]
                          + lf[:, L.LOOP_JAC_B:L.LOOP_JAC_B + 6] @ self._work[b, L.ACC:L.ACC + 6]
                          + lf[:, L.LOOP_BIAS])
        return bias

    def _world_from_work(self):
        _world_poses(self._body_int, self._work)
        return self._work

    @_locked
    def partition(self, q, refresh=False):
        """(independent, dependent) v indices: `independent` from the closure file if given, else
        chosen by QR with column pivoting of G_l (docs/theory.md §4); re-chosen when cond(G_ld) grows
        beyond PARTITION_CONDITION_LIMIT or refresh is set."""
        jac = self.loop_jacobian(q)
        if self._partition is not None and not refresh:   # one small SVD while it stays good
            ind, dep = self._partition
            if len(dep) == 0:
                return self._partition
            sigma = np.linalg.svd(jac[:, dep], compute_uv=False)
            if sigma[-1] * PARTITION_CONDITION_LIMIT > sigma[0]:
                return self._partition
        rank = _rank(jac)
        if len(self._preferred_independent) and not refresh:
            ind = self._preferred_independent
            dep = np.setdiff1d(np.arange(self.nv), ind)
            if len(dep) == rank and np.linalg.cond(jac[:, dep]) < PARTITION_CONDITION_LIMIT:
                self._partition = (ind, dep)
                return self._partition
        import scipy.linalg   # here, not at import: ~0.15 s that codegen=True robots never need
        _, _, pivots = scipy.linalg.qr(jac, pivoting=True, mode="economic")
        dep = np.sort(pivots[:rank])
        ind = np.setdiff1d(np.arange(self.nv), dep)
        self._partition = (ind, dep)
        return self._partition

    @_locked
    def assemble(self, q, independent=None, max_iterations=50):
        """q with the dependent coordinates moved so that every loop closes (Newton on g_l = 0
        with the independent coordinates held, minimum-norm steps, docs/theory.md §4).

        independent: joint names to hold (default: the closure file's `independent`, else a
        partition chosen at q). The guess q need not be close: when Newton from q (with a
        backtracking line search on |g|) fails, the independent coordinates are reached by
        continuation from the last assembled configuration and from the assembled neutral one,
        then from ASSEMBLY_STARTS other guesses of the dependent coordinates.
        Raises ValueError naming the held coordinates and the worst closure when none closes
        the loops: the configuration is then out of the mechanism's reach."""
        q = np.array(self._q(q), dtype=float)
        self._check_finite(q, "q")
        if independent is not None:
            candidates = [self._dofs(independent)]
        else:
            candidates = []
            if len(self._preferred_independent):
                candidates.append(self._preferred_independent)
            candidates.append(self.partition(q)[0])
        best_residual, best_q, best_ind = np.inf, q, candidates[0]
        tried = []
        for ind in candidates:
            if any(np.array_equal(ind, other) for other in tried):
                continue
            tried.append(ind)
            dep = np.setdiff1d(np.arange(self.nv), ind)
            result, residual, closest = self._assemble_holding(q, ind, dep, max_iterations)
            if result is not None:
                # revolute angles: the equivalent angle nearest to the guess (continuity for
                # simulation steps; no multiples of 2 pi from far starts)
                moved = self._revolute_q[dep]
                moved = moved[moved >= 0]
                result[moved] = q[moved] + np.remainder(result[moved] - q[moved] + np.pi,
                                                        2.0 * np.pi) - np.pi
                self._last_assembled = result.copy()
                return result
            if residual < best_residual:
                best_residual, best_q, best_ind = residual, closest, ind
        g = self.loop_state(best_q)[0]
        worst = max(range(len(self.closure_names)), key=lambda s: np.abs(g[self._rows(s)]).max())
        held = ", ".join(f"{self._dof_name(i)}" for i in best_ind)
        raise ValueError(f"the loops cannot be closed with the independent coordinates ({held}) "
                         f"held: Newton from q, continuation from assembled configurations and "
                         f"{ASSEMBLY_STARTS} other starts leave a residual of at least "
                         f"{best_residual:.3g} (worst: closure '{self.closure_names[worst]}'); "
                         "this configuration is out of the mechanism's reach")

    def _newton(self, q, dep, max_iterations):
        """Newton on g(q) = 0 moving the dependent dofs, with a backtracking line search on |g|.
        Returns (q, max |g|)."""
        step = np.zeros(self.nv)
        g = self.loop_state(q)[0]
        norm = np.linalg.norm(g)
        for _ in range(max_iterations):
            if np.abs(g).max(initial=0.0) < ASSEMBLY_TOLERANCE:
                break
            jac = self.loop_state(q)[1]
            step[:] = 0.0
            step[dep] = -np.linalg.lstsq(jac[:, dep], g, rcond=RANK_TOLERANCE)[0]
            if not np.all(np.isfinite(step)):
                break
            scale = 1.0
            while True:
                q_try = self.integrate(q, step, scale)
                g_try = self.loop_state(q_try)[0]
                norm_try = np.linalg.norm(g_try)
                if norm_try < norm or scale < 1.0 / 64:
                    break
                scale *= 0.5
            if not norm_try < norm:   # no descent even for a tiny step: a local minimum of |g|
                break
            q, g, norm = q_try, g_try, norm_try
        return q, float(np.abs(g).max(initial=0.0))

    def _assemble_holding(self, q, ind, dep, max_iterations):
        """(assembled q or None, smallest residual seen, q of that residual), independent dofs
        `ind` held at their values in q."""
        result, residual = self._newton(q, dep, max_iterations)
        if residual < ASSEMBLY_TOLERANCE:
            return result, residual, result
        best = (residual, result)
        held_q = self._dof_q[ind]
        # continuation: walk the held coordinates from an assembled configuration to q's values
        if np.all(held_q >= 0):
            starts = [self._last_assembled] if self._last_assembled is not None else []
            reference = self._reference_assembly(dep)
            if reference is not None:
                starts.append(reference)
            for start in starts:
                current = start.copy()
                for t in np.linspace(0.0, 1.0, ASSEMBLY_CONTINUATION_STEPS + 1)[1:]:
                    current[held_q] = (1.0 - t) * start[held_q] + t * q[held_q]
                    current, residual = self._newton(current, dep, 20)
                    if residual > 1e-6:
                        break
                if residual < 1e-6:
                    current, residual = self._newton(current, dep, max_iterations)
                    if residual < ASSEMBLY_TOLERANCE:
                        return current, residual, current
                if residual < best[0]:
                    best = (residual, current)
        # other guesses of the dependent coordinates (fixed seed: reproducible)
        rng = np.random.default_rng(0)
        for _ in range(ASSEMBLY_STARTS):
            guess = self.random_configuration(rng)
            for j in range(len(self.joint_names)):   # joints with a held dof keep q's values
                start, stop = self.idx_v[j], (self.idx_v[j + 1] if j + 1 < len(self.idx_v) else self.nv)
                if np.any(np.isin(np.arange(start, stop), ind)):
                    iq = self.idx_q[j]
                    nq = (self.idx_q[j + 1] if j + 1 < len(self.idx_q) else self.nq) - iq
                    guess[iq:iq + nq] = q[iq:iq + nq]
            result, residual = self._newton(guess, dep, max_iterations)
            if residual < ASSEMBLY_TOLERANCE:
                return result, residual, result
            if residual < best[0]:
                best = (residual, result)
        return None, best[0], best[1]

    def _reference_assembly(self, dep):
        """The neutral configuration assembled (cached per dependent set), or None."""
        key = tuple(int(i) for i in dep)
        if key not in self._reference_assemblies:
            q, residual = self._newton(self.neutral(), dep, 50)
            self._reference_assemblies[key] = q if residual < ASSEMBLY_TOLERANCE else None
        return self._reference_assemblies[key]

    def _check_finite(self, x, name):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf")

    @_locked
    def project_velocity(self, q, v):
        """v with its dependent components solved from G_l v = 0 (independent ones kept)."""
        v = np.array(self._v(v), dtype=float)
        self._check_state(self._q(q), v, _EMPTY, "")
        ind, dep = self.partition(q)
        jac = self.loop_jacobian(q)
        if len(dep):
            v[dep] = -np.linalg.lstsq(jac[:, dep], jac[:, ind] @ v[ind], rcond=RANK_TOLERANCE)[0]
        return v

    @_locked
    def project_acceleration(self, q, v, qdd):
        """qdd with its dependent components solved from G_l qdd + gamma = 0 (independent ones
        kept): the loop-consistent acceleration closest to a commanded one, e.g. for
        computed-torque control of a parallel robot."""
        qdd = np.array(_vector(qdd, self.nv, "qdd"), dtype=float)
        self._check_state(self._q(q), self._v(v), qdd, "qdd")
        ind, dep = self.partition(q)
        if len(dep):
            _, jac, _ = self.loop_state(q, v)
            gamma = self._acceleration_bias(q, v)
            qdd[dep] = -np.linalg.lstsq(jac[:, dep], jac[:, ind] @ qdd[ind] + gamma,
                                        rcond=RANK_TOLERANCE)[0]
        return qdd

    def _dof_name(self, dof):
        j = int(np.searchsorted(self.idx_v, dof, side="right") - 1)
        name = self.joint_names[j]
        k = dof - self.idx_v[j]
        return name if (j + 1 < len(self.idx_v) and self.idx_v[j + 1] - self.idx_v[j] == 1) or \
            (j + 1 == len(self.idx_v) and self.nv - self.idx_v[j] == 1) else f"{name}[{k}]"

    @_locked
    def analyze(self, q, samples=5, rng=0):
        """LoopAnalysis at q: DOF by Grübler-Kutzbach and by the rank of G_l, redundant
        constraints, singular configuration, static determinacy (docs/theory.md §4)."""
        q = self._q(q)
        g, jac, _ = self.loop_state(q)
        rank = _rank(jac)
        generic = rank
        generator = np.random.default_rng(rng)
        ind, dep = self.partition(q)
        for _ in range(samples):  # nearby assembled configurations tell the generic rank
            dq = np.zeros(self.nv)
            dq[ind] = generator.normal(scale=0.05, size=len(ind))
            try:
                nearby = self.assemble(self.integrate(q, dq, 1.0), independent=None)
            except ValueError:
                continue
            generic = max(generic, _rank(self.loop_jacobian(nearby)))
        n_loops = len(self.closure_names)
        joint_freedoms = self.nv + sum(6 - int(self._cut_int[s, L.CUT_ROWS]) for s in range(n_loops))
        planar_freedoms = (sum(PLANAR_TREE_FREEDOMS.get(t, 1) for t in self.joint_types)
                           + sum(PLANAR_CUT_FREEDOMS[t] for t in self.closure_types))
        condition = float(np.linalg.cond(jac[:, dep])) if len(dep) else 1.0
        return LoopAnalysis(
            n_loops=n_loops, n_constraints=self.n_constraints, rank=rank, generic_rank=generic,
            dof=self.nv - generic, dof_at_q=self.nv - rank,
            gruebler_kutzbach=joint_freedoms - 6 * n_loops,
            gruebler_kutzbach_planar=planar_freedoms - 3 * n_loops,
            redundant_constraints=self.n_constraints - generic, singular=rank < generic,
            statically_determinate=self.n_constraints == generic,
            residual=float(np.abs(g).max(initial=0.0)), independent=tuple(int(i) for i in ind),
            partition_condition=condition)

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, method="recursive", prescribed=None,
                         return_torques=False):
        """Joint accelerations (nv,) of the closed-loop robot for drive forces tau.

        method: "recursive" (seed [000], O(n b + b^3), default), "minimal" (coordinate
        partitioning) or "descriptor" (body coordinates with multipliers). With redundant
        constraints the accelerations are exact and the multipliers minimum-norm.
        Baumgarte gains self.baumgarte = (alpha, beta) add 2 alpha G v + beta^2 g.
        Force elements and add_force callbacks act as in Robot.forward_dynamics; prescribed /
        return_torques as there (rheonomic joints inside the loops, dense hybrid solve).
        """
        if prescribed is not None:   # ---- prescribed motion ----
            from .prescribed import dispatch
            return dispatch(self, q, v, tau, f_ext, out, prescribed, return_torques)
        applied = self._applied is not None and not self._applying
        if applied and method != "recursive":   # force elements, added once
            from .forces import with_forces
            return with_forces(self, self.forward_dynamics, q, v, tau, f_ext, out=out, method=method)
        with self._lock:
            if method == "minimal":
                return self._forward_dynamics_minimal(q, v, tau, f_ext, out)
            if method == "descriptor":
                return self._forward_dynamics_descriptor(q, v, tau, f_ext, out)[0]
            if method != "recursive":
                raise ValueError(f"method must be 'recursive', 'minimal' or 'descriptor', got {method!r}")
            if applied:   # force elements: load FEXT (as Robot.forward_dynamics)
                tau = self._applied.load(q, v, tau, f_ext, self.time)
            elif f_ext is not None or self._fext_dirty:
                self._set_external_wrenches(f_ext)
            if out is None:
                out = np.empty(self.nv)
            alpha, beta = self._baumgarte
            try:  # fast path as in Robot.forward_dynamics (explicit signature refuses other types)
                if out is q or out is v or out is tau:
                    raise TypeError
                status = _closed_loop_fd(self._body_int, self._body_float, self._work, self._cut_int,
                                         self._cut_float, self._loop_float, q, v, tau, alpha, beta,
                                         out, self._info)
                if status == _STATUS_ALIASED:   # out is a view over an input: the general path
                    raise TypeError
            except TypeError:
                q, v, tau, _ = self._state_arrays(q, v, tau, None, "tau")
                requested = _output(out, (self.nv,))
                # compute privately when out overlaps an input (the kernel reads them late)
                out = np.empty(self.nv) if _aliased(requested, q, v, tau) else requested
                status = _closed_loop_fd(self._body_int, self._body_float, self._work, self._cut_int,
                                         self._cut_float, self._loop_float, q, v, tau, float(alpha),
                                         float(beta), out, self._info)
                if out is not requested and not status:
                    requested[:] = out
                    out = requested
            if status or not _all_finite(out):
                self._raise(status, q, v, tau, out, "tau")
            # this thread's multipliers (a buffer of its own, copied by multipliers()) and the
            # largest loop residual, in one kernel call; last_rank reads self._info
            residual = _loop_results(self._loop_float, L.LOOP_LAMBDA, L.LOOP_RESIDUAL,
                                     self._multiplier_buffer())
            if residual > LOOP_RESIDUAL_WARNING:
                self._warn_off_loop(residual, "forward_dynamics")
            elif not applied and f_ext is None and "forward_dynamics" in self._c_pending:
                self._promote_c_call("forward_dynamics")   # C entry at the second such call
            return out

    def forward_dynamics_batch(self, q, v, tau, out=None):
        """qdd (N, nv) for N states, state by state through forward_dynamics (the loops'
        recursive solve, on the calling thread); Robot's batch kernel knows only the open tree."""
        from .forces import batch_with_forces
        return batch_with_forces(self, self.forward_dynamics, q, v, tau, "tau", out)

    def inverse_dynamics_batch(self, q, v, qdd, out=None):
        """tau (N, nv) for N states, state by state through inverse_dynamics (the actuated
        joints' forces of the closed loops, as inverse_dynamics)."""
        from .forces import batch_with_forces
        return batch_with_forces(self, self.inverse_dynamics, q, v, qdd, "qdd", out)

    def _warn_off_loop(self, residual, what):
        if residual > LOOP_RESIDUAL_WARNING:
            warnings.warn(f"{what}: the loops are open by {residual:.3g} (m or rad) at this q, more "
                          f"than {LOOP_RESIDUAL_WARNING:g}: the result is for a configuration the "
                          "mechanism cannot take (assemble(q) first)", LoopResidualWarning,
                          stacklevel=4)

    @_locked
    def multipliers(self):
        """(b,) loop multipliers lambda_s of this thread's last recursive forward_dynamics call."""
        mine = (self._c_multipliers if self._c_multiplier_owner()
                else getattr(self._thread_state, "multipliers", None))
        return mine.copy() if mine is not None else self._loop_float[:, L.LOOP_LAMBDA].copy()

    @_locked
    def closure_wrenches(self, q, v, tau, f_ext=None, multipliers=None):
        """(n_closures, 6): wrench each cut joint exerts on its child-side link, in the child-side
        cut frame about its origin [fx fy fz tx ty tz] (minimum-norm if redundant).

        multipliers: robot.multipliers() of a forward_dynamics call at this same (q, v, tau),
        to skip solving it again (a node publishing accelerations and wrenches per cycle)."""
        if multipliers is None:
            self.forward_dynamics(q, v, tau, f_ext=f_ext)
            multipliers = self.multipliers()
        else:
            self.loop_state(q)   # the cut frames at this q (another thread may have moved them)
        return self._cut_wrenches(self._multiplier_vector(multipliers))

    def _multiplier_vector(self, multipliers):
        """multipliers as a finite float64 (n_constraints,) array, else ValueError."""
        lam = _real_array(multipliers, "multipliers", "an array of numbers (robot.multipliers())")
        if lam.shape != (self.n_constraints,):
            raise ValueError(f"multipliers must have shape ({self.n_constraints},) (one per "
                             f"constraint row, robot.multipliers()), got {lam.shape}")
        if not np.all(np.isfinite(lam)):
            raise ValueError("multipliers contain NaN or inf")
        return lam

    def _cut_wrenches(self, lam):
        out = np.zeros((len(self.closure_names), 6))
        _cut_wrench_kernel(self._cut_int, self._cut_float, self._loop_float,
                           np.ascontiguousarray(lam, dtype=float), np.zeros(6), out)
        return out

    def _solve_actuation(self, q, v, qdd, f_ext=None):
        """(tau (nv,) on the actuated dofs, lambda (b,)) with tau_rnea = tau + G_l^T lambda;
        tau minimum-norm (redundant actuation), lambda minimum-norm (redundant constraints)."""
        q, v, qdd, _ = self._state_arrays(q, v, qdd, None, "qdd")
        if self._applied is not None and not self._applying:   # force elements: subtracted
            tau_tree = Robot.inverse_dynamics(self, q, v, qdd, f_ext=f_ext)
        else:
            tau_tree = self._tree_inverse_dynamics(q, v, qdd, f_ext=f_ext)
        g, jac, gv = self.loop_state(q, v)
        self._warn_off_loop(np.abs(g).max(initial=0.0), "inverse_dynamics")
        scale = max(1.0, np.abs(qdd).max(initial=0.0))
        # the acceleration constraint forward_dynamics enforces, Baumgarte terms included, so
        # that its own accelerations are always accepted
        alpha, beta = self.baumgarte
        acc_residual = jac @ qdd + self._acceleration_bias(q, v) + 2.0 * alpha * gv + beta * beta * g
        if np.abs(acc_residual).max(initial=0.0) > 1e-6 * scale:
            raise ValueError(f"qdd violates the loop acceleration constraint G_l qdd + gamma = 0 by "
                             f"{np.abs(acc_residual).max():.3g}: only loop-consistent motions have "
                             "actuator torques (see assemble / project_velocity)")
        null, _ = _null_space(jac)
        selection = np.zeros((self.nv, len(self._actuated_dofs)))
        selection[self._actuated_dofs, np.arange(len(self._actuated_dofs))] = 1.0
        reduced = null.T @ selection
        target = null.T @ tau_tree
        actuation, *_ = np.linalg.lstsq(reduced, target, rcond=RANK_TOLERANCE)
        if np.abs(reduced @ actuation - target).max(initial=0.0) > 1e-8 * max(1.0, np.abs(target).max(initial=0.0)):
            raise ValueError("the actuated joints cannot produce this motion (the mechanism is "
                             "under-actuated here or at a singular configuration); actuated: "
                             f"{self.actuated_joints}")
        tau = np.zeros(self.nv)
        tau[self._actuated_dofs] = actuation
        # the same rank cut-off as the recursive solver, so both give the same min-norm lambda
        lam, *_ = np.linalg.lstsq(jac.T, tau_tree - tau, rcond=RANK_TOLERANCE)
        return tau, lam

    @_locked
    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces (nv,) of the actuated joints (zeros elsewhere; the root wrench too for a
        floating base) that make forward_dynamics reproduce the loop-consistent qdd."""
        tau, _ = self._solve_actuation(q, v, qdd, f_ext)
        if out is None:
            return tau
        _output(out, (self.nv,))[:] = tau   # written after every input was read: aliasing is fine
        return out

    @_locked
    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None, multipliers=None):
        """Joint wrenches (see Robot.joint_wrenches) including the loop forces, for a
        loop-consistent (q, v, qdd).

        multipliers: robot.multipliers() of the forward_dynamics call that returned this qdd at
        this (q, v): the loop forces are then taken from it instead of being solved again from
        the inverse dynamics (same result, minimum-norm in both; ~10x cheaper)."""
        if multipliers is None:
            _, lam = self._solve_actuation(q, v, qdd, f_ext)
        else:
            lam = self._multiplier_vector(multipliers)
            self.loop_state(q, v)   # the cut rows at this state (not another call's)
        q, v, qdd, _ = self._state_arrays(q, v, qdd, None, "qdd")
        out = _output(out, (len(self.wrench_joint_names), 6))
        if self._applied is not None and not self._applying:   # force elements load the links
            _, f_ext = self._applied.combine(q, v, None, f_ext, self.time)
        self._set_external_wrenches(f_ext)
        self._add_loop_loads(lam)
        return self._joint_wrenches_loaded(q, v, qdd, out)

    def _add_loop_loads(self, lam):
        """Add the cut forces G_a^T lambda, G_b^T lambda to the loads of the two cut bodies and
        of their cut links (for the fixed-joint wrench pass)."""
        _add_loop_loads(self._cut_int, self._cut_link_index, self._loop_float,
                        np.ascontiguousarray(lam, dtype=float), self._work, self._link_fext)
        self._fext_dirty = True

    # ------------------------------------------------------------------ other formalisms
    def _forward_dynamics_minimal(self, q, v, tau, f_ext, out):
        """Minimal coordinates (docs/theory.md §5 end): M = J_l^T M^ J_l, s' = M^-1 J_l^T (tau - b - M^ eta''),
        eta' = J_l s' + eta''."""
        q, v, tau, _ = self._state_arrays(q, v, tau, None, "tau")
        self._check_state(q, v, tau, "tau")
        if out is not None:
            _output(out, (self.nv,))
        self._warn_off_loop(self.closure_residual(q)[0], "forward_dynamics")
        mass = self.mass_matrix(q).copy()
        bias_tree = self._tree_inverse_dynamics(q, v, np.zeros(self.nv), f_ext=f_ext).copy()
        jac = self.loop_jacobian(q)
        gamma = self._acceleration_bias(q, v)
        alpha, beta = self.baumgarte
        if alpha or beta:
            g, _, gv = self.loop_state(q, v)
            gamma = gamma + 2.0 * alpha * gv + beta * beta * g
        ind, dep = self.partition(q)
        jl = np.zeros((self.nv, len(ind)))
        jl[ind, np.arange(len(ind))] = 1.0
        eta2 = np.zeros(self.nv)
        if len(dep):
            dep_pinv = np.linalg.pinv(jac[:, dep], rcond=RANK_TOLERANCE)
            jl[dep] = -dep_pinv @ jac[:, ind]
            eta2[dep] = -dep_pinv @ gamma
        reduced_mass = jl.T @ mass @ jl
        s_dot = np.linalg.solve(reduced_mass, jl.T @ (tau - bias_tree - mass @ eta2))
        result = jl @ s_dot + eta2
        if out is not None:
            out[:] = result
            return out
        return result

    def _forward_dynamics_descriptor(self, q, v, tau, f_ext, out):
        """Body coordinates with multipliers (docs/theory.md §6): every tree joint and every cut becomes
        a constraint between two bodies' accelerations; one dense KKT solve (minimum-norm).
        Returns (qdd, joint wrenches of the movable joints (nb, 6), loop multipliers (b,))."""
        q, v, tau, _ = self._state_arrays(q, v, tau, None, "tau")
        self._check_state(q, v, tau, "tau")
        if out is not None:
            _output(out, (self.nv,))
        self._warn_off_loop(self.closure_residual(q)[0], "forward_dynamics")
        # kinematics (poses, velocities, c_i) from one RNEA pass with qdd = 0; the external
        # wrenches are loaded after it (it clears earlier loads when called without f_ext)
        self._tree_inverse_dynamics(q, v, np.zeros(self.nv), out=self._tau_scratch)
        if f_ext is not None or self._fext_dirty:
            self._set_external_wrenches(f_ext)
        self._world_from_work()
        _cut_rows(self._cut_int, self._cut_float, self._work, self._loop_float)
        nb = self.model.n_bodies
        work, bi, bf = self._work, self._body_int, self._body_float
        gravity = bf[0, L.GRAVITY:L.GRAVITY + 3]
        k = [int(bi[i, L.JOINT_NV_COL]) for i in range(nb + 1)]
        n_lam = [6 - k[i] for i in range(nb + 1)]
        lam_start = np.concatenate([[0], np.cumsum([n_lam[i] for i in range(1, nb + 1)])]).astype(int)
        n_joint_lam = int(lam_start[-1])
        b = self.n_constraints
        size = 6 * nb + n_joint_lam + b
        kkt = np.zeros((size, size))
        rhs = np.zeros(size)
        acc = lambda i: slice(6 * (i - 1), 6 * i)  # noqa: E731
        complements = {}
        drive = tau - self.damping_forces(v) if self.model.passive_forces else tau
        for i in range(1, nb + 1):
            parent = bi[i, L.PARENT]
            rot = work[i, L.ROT:L.ROT + 9].reshape(3, 3)
            pos = work[i, L.POS:L.POS + 3]
            x = np.zeros((6, 6))  # motion transform parent -> body
            x[:3, :3] = rot.T
            x[:3, 3:] = -rot.T @ np.array([[0, -pos[2], pos[1]], [pos[2], 0, -pos[0]], [-pos[1], pos[0], 0]])
            x[3:, 3:] = rot.T
            s_mat = bf[i, L.MOTION_SUBSPACE:L.MOTION_SUBSPACE + 6 * k[i]].reshape(k[i], 6).T
            import scipy.linalg   # noqa: F811 -- imported where used, as in partition()
            complement = scipy.linalg.null_space(s_mat.T)          # T_i: T^T S = 0
            complements[i] = (complement, s_mat, x)
            inertia = bf[i, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36].reshape(6, 6)
            vel = work[i, L.VEL:L.VEL + 6]
            momentum = inertia @ vel
            gyro = np.concatenate([np.cross(vel[3:], momentum[:3]),
                                   np.cross(vel[3:], momentum[3:]) + np.cross(vel[:3], momentum[:3])])
            # M_i a_i - T_i lam_i - W_i tau_i + sum_c B_c^T (T_c lam_c + W_c tau_c) = f^ext - v x* M v
            kkt[acc(i), acc(i)] = inertia
            rhs[acc(i)] += work[i, L.FEXT:L.FEXT + 6] - gyro
            lam_cols = slice(6 * nb + lam_start[i - 1], 6 * nb + lam_start[i])
            kkt[acc(i), lam_cols] = -complement
            iv = bi[i, L.IDX_V]
            drive_wrench = s_mat @ np.linalg.solve(s_mat.T @ s_mat, drive[iv:iv + k[i]])
            rhs[acc(i)] += drive_wrench
            if parent > 0:
                kkt[acc(parent), lam_cols] += x.T @ complement
                rhs[acc(parent)] -= x.T @ drive_wrench
            # T_i^T (a_i - B_pi a_p - c_i) = 0, with a_0 = -g (gravity as a base acceleration)
            kkt[lam_cols, acc(i)] = -complement.T
            if parent > 0:
                kkt[lam_cols, acc(parent)] = complement.T @ x
                rhs[lam_cols] = complement.T @ work[i, L.BIAS_ACC:L.BIAS_ACC + 6]
            else:
                base = np.concatenate([-gravity, np.zeros(3)])
                rhs[lam_cols] = complement.T @ (work[i, L.BIAS_ACC:L.BIAS_ACC + 6] + x @ base)
            rhs[lam_cols] *= -1.0
            # now: -T^T a_i + T^T B a_p = -T^T c_i (- T^T B a_0)
        # cut rows: M a - G^T lam_s = ...,  -G_a a_a - G_b a_b = gamma''_s (+ Baumgarte)
        alpha, beta = self.baumgarte
        lf = self._loop_float
        for s in range(len(self.closure_names)):
            a_body, b_body = self._cut_int[s, L.CUT_BODY_A], self._cut_int[s, L.CUT_BODY_B]
            for r in range(self._rows(s).start, self._rows(s).stop):
                col = 6 * nb + n_joint_lam + r
                ja = lf[r, L.LOOP_JAC_A:L.LOOP_JAC_A + 6]
                jb = lf[r, L.LOOP_JAC_B:L.LOOP_JAC_B + 6]
                vel_term = 0.0
                acc_base = 0.0
                for body, jrow in ((a_body, ja), (b_body, jb)):
                    vel_term += jrow @ work[body, L.VEL:L.VEL + 6]
                    if body > 0:
                        kkt[acc(body), col] -= jrow
                        kkt[col, acc(body)] -= jrow
                    else:
                        acc_base += jrow @ np.concatenate([-gravity, np.zeros(3)])
                rhs[col] = (lf[r, L.LOOP_BIAS] + acc_base + 2 * alpha * vel_term
                            + beta * beta * lf[r, L.LOOP_RESIDUAL])
        if not (np.all(np.isfinite(kkt)) and np.all(np.isfinite(rhs))):
            raise ValueError("forward_dynamics (descriptor): the system is not finite (overflow "
                             "for absurd velocities or forces?)")
        solution, *_ = np.linalg.lstsq(kkt, rhs, rcond=None)
        qdd = np.empty(self.nv)
        wrenches = np.zeros((nb, 6))
        body_acc = solution[:6 * nb].reshape(nb, 6)
        for i in range(1, nb + 1):
            complement, s_mat, x = complements[i]
            parent = bi[i, L.PARENT]
            parent_acc = body_acc[parent - 1] if parent > 0 else np.concatenate([-gravity, np.zeros(3)])
            relative = body_acc[i - 1] - x @ parent_acc - work[i, L.BIAS_ACC:L.BIAS_ACC + 6]
            iv = bi[i, L.IDX_V]
            qdd[iv:iv + k[i]] = np.linalg.lstsq(s_mat, relative, rcond=None)[0]
            lam_i = solution[6 * nb + lam_start[i - 1]:6 * nb + lam_start[i]]
            wrenches[i - 1] = complement @ lam_i + s_mat @ np.linalg.solve(
                s_mat.T @ s_mat, drive[iv:iv + k[i]])
        if out is not None:
            out[:] = qdd
            qdd = out
        return qdd, wrenches, solution[6 * nb + n_joint_lam:]

    # ------------------------------------------------------------------ simulation
    @_locked
    def step(self, q, v, tau, dt, integrator=None, project=True, prescribed=None, **options):
        """One simulation step of the closed-loop robot; returns (q, v) (see Robot.step).

        integrator: None (the default, rk4), "rk4", "semi_implicit_euler" or "implicit_euler"
        (mbd_ros.simulation.Simulator) on forward_dynamics with the self.baumgarte gains;
        project: afterwards re-close the loops (assemble) and project v onto G_l v = 0
        (docs/theory.md §6). self.last_step holds the position and velocity residuals and the
        mechanical energy after the step.
        """
        from .simulation import step_robot
        start = self.time
        q_next, v_next = step_robot(self, q, v, tau, dt, integrator, options, prescribed)
        try:   # a failed projection leaves robot.time unchanged, as a failed step does
            position, velocity = self.closure_residual(q_next, v_next)
            # project once the residuals pass PROJECTION_TOLERANCE (an RK4 step adds ~1e-13): the
            # loops stay closed to that tolerance at a fraction of the cost of projecting each step
            if project and (position > PROJECTION_TOLERANCE or velocity > PROJECTION_TOLERANCE):
                fixed = self._dofs(list(prescribed)) if prescribed else None
                q_next, v_next = self.project_state(q_next, v_next, fixed=fixed)
                position, velocity = self.closure_residual(q_next, v_next)
        except BaseException:
            self.time = start
            raise
        self.last_step = _StepReport(self, q_next, v_next, position, velocity)
        return q_next, v_next

    def project_state(self, q, v, max_iterations=20, fixed=None):
        """(q, v) moved back onto the constraint manifold after an integration step (docs/theory.md §6),
        independently of the coordinate partition: Gauss-Newton with minimum-norm steps
        q <- q (+) (-G_l^+ g) until |g| < ASSEMBLY_TOLERANCE, then the velocity correction of
        least kinetic energy, v <- v - M^-1 G^T (G M^-1 G^T)^+ G v (the mass-orthogonal
        projection: it removes no energy of the admissible motion). A partition-based
        projection (assemble, project_velocity) is inaccurate near the partition's singular
        configurations (dead points); this one is not. fixed: v indices held (prescribed
        joints); the corrections then act on the other coordinates only."""
        q = np.array(self._q(q), dtype=float)
        v = np.array(self._v(v), dtype=float)
        free = np.setdiff1d(np.arange(self.nv), fixed) if fixed is not None else np.arange(self.nv)
        step = np.zeros(self.nv)
        for _ in range(max_iterations):
            g, jac, _ = self.loop_state(q)
            if np.abs(g).max(initial=0.0) < ASSEMBLY_TOLERANCE:
                break
            step[free] = -np.linalg.lstsq(jac[:, free], g, rcond=RANK_TOLERANCE)[0]
            q = self.integrate(q, step, 1.0)
        else:
            return self.assemble(q), self.project_velocity(self.assemble(q), v)
        if jac.shape[0]:
            mass = self.mass_matrix(q)[np.ix_(free, free)]
            jac_free = jac[:, free]
            m_inv_gt = np.linalg.solve(mass, jac_free.T)
            v[free] = v[free] - m_inv_gt @ (np.linalg.pinv(jac_free @ m_inv_gt, rcond=RANK_TOLERANCE)
                                            @ (jac @ v))
        return q, v

    # ------------------------------------------------------------------ validation shortcuts
    def _q(self, q):
        return _vector(q, self.nq, "q")

    def _v(self, v):
        return _vector(v, self.nv, "v")
