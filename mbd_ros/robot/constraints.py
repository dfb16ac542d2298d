"""The constraint part of a Robot: closed loops (cut joints of a `closures:` file) and mimic
couplings, as rows G qdd + gamma = 0 on the tree's accelerations (docs/theory.md §4-6).

Every Robot has one Constraints object, empty for a plain tree. It stacks the loop rows (from the
tree's LoopKinematics, loop_kinematics.py) and the mimic rows (mimic.py), and owns everything
built on those rows, the same for every kind of tree:

- kinematics: residuals, the constraint Jacobian, assembly (Newton), the coordinate partition,
  velocity / acceleration projection, DOF analysis (Grübler-Kutzbach, rank);
- forward dynamics: the seeds' recursive formalism [000] (rigid trees, kernels/closed_loop.py),
  superposed with the mimic rows when both exist; the minimal-coordinate formalism (coordinate
  partitioning, docs/theory.md §5 end; for mimic rows alone the coupling matrix T); a dense KKT
  solve (flexible trees, or method="kkt"); the body-coordinate descriptor formalism (rigid loops,
  descriptor.py);
- inverse dynamics: the actuated joints' forces (minimum norm), and the loop multipliers;
- the state projection after an integration step.

Deviation from the seeds, where the tree is flexible: the recursive formalism of [000] is not
extended to flexible bodies; their loops use the dependent-coordinate formalism with
multipliers, dense (seed [003] eqs. 7-11), with M from the flexible recursion's mass matrix.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

from ..model import layout as L
from ..errors import ModelError, excerpt, user_stacklevel
from ..kernels.linalg import RANK_TOLERANCE
from ..kernels.loop_results import loop_results as _loop_results
from .arguments import real_array

# Newton assembly stops when the largest residual is below this (m or rad).
ASSEMBLY_TOLERANCE = 1e-12
# assemble(): steps of the continuation in the held coordinates, and further random starts.
ASSEMBLY_CONTINUATION_STEPS = 16
ASSEMBLY_STARTS = 8
# Forward and inverse dynamics warn (LoopResidualWarning) when the loops are open by more than
# this (m or rad) at the given q: the results then describe a configuration the mechanism
# cannot take (assemble() first). Measured states carry noise well below it.
LOOP_RESIDUAL_WARNING = 1e-3
# A partition is re-chosen when cond(G_ld) exceeds this (the independent set no longer
# parametrises the motion well, docs/theory.md §4). Measured on the four-bar driven through the
# rocker's dead point: with 1e8 the energy error of an RK4 crank turn is 4.4e-5 J (accuracy is
# lost from cond ~4e3 on), with 1e3 it stays at the integrator's 1e-8 J (test_integrators.py).
PARTITION_CONDITION_LIMIT = 1e3
# Robot.step projects back onto the constraints when the position residual (m, rad) or the
# velocity residual (m/s, rad/s) exceeds this.
PROJECTION_TOLERANCE = 1e-10
# ... and then closes the loops (the Gauss-Newton of project_state) until the position residual
# is below ASSEMBLY_TOLERANCE, except after a semi_implicit_euler step: below this. That
# integrator opens the loops by O(h^2 |v|^2) in every step (up to 2e-5 m on the four-bar at
# 1 ms and 27 rad/s), from which one Gauss-Newton step reaches 1e-10 but often not 1e-12 (the
# quadratic convergence: 1.9e-5 -> 5e-10, 4e-6 -> 2e-11): every returned state is still within
# PROJECTION_TOLERANCE, and a projection takes 1.33 Gauss-Newton steps on average instead of
# 1.86 on bench/bench_rollout.py's four-bar (docs/rollouts.md, "The projection after a
# semi-implicit Euler step").
EULER_CLOSING_TOLERANCE = PROJECTION_TOLERANCE
# Freedoms a joint keeps when the whole mechanism moves in one plane (Grübler-Kutzbach's planar
# count f = sum f_i - 3 n_h [003]): a spherical, universal or cylindrical joint of a planar
# mechanism can only turn about the plane's normal; a distance constraint leaves 2 of 3.
PLANAR_CUT_FREEDOMS = {"revolute": 1, "prismatic": 1, "cylindrical": 1, "universal": 1,
                       "spherical": 1, "planar": 3, "fixed": 0, "distance": 2, "helical": 1}
PLANAR_TREE_FREEDOMS = {"revolute": 1, "prismatic": 1, "spherical": 1, "floating": 3, "planar": 3,
                        "helical": 1, "cylindrical": 1, "universal": 1}
METHODS = ("recursive", "minimal", "kkt", "descriptor")


class LoopResidualWarning(UserWarning):
    """Dynamics asked for at a configuration where the loops are not closed."""


# project_velocity / project_acceleration warn when the constraint rows of their result are
# above this, relative to the largest entry involved (max 1): the gross cases, as the dynamics
# warn beyond LOOP_RESIDUAL_WARNING; a measured state's noise on redundant rows (below it) only
# leaves the result off by that noise
PROJECTION_RESIDUAL = LOOP_RESIDUAL_WARNING


def _warn_unsatisfied(what, equation, residual, *scales):
    """A LoopResidualWarning when `residual` (the constraint rows after a projection) is not
    zero to round-off: at an unassembled q, with redundant rows that the given velocity
    violates, the equation cannot hold (the docstrings promise it: say when it does not)."""
    scale = max([1.0] + [float(np.abs(x).max(initial=0.0)) for x in scales])
    worst = float(np.abs(residual).max(initial=0.0))
    if worst > PROJECTION_RESIDUAL * scale:
        warnings.warn(f"{what}: {equation} does not hold after the projection (largest row "
                      f"{worst:.3g}): the loops are open at q, or the velocity given violates "
                      "redundant rows; assemble(q) and project_velocity first",
                      LoopResidualWarning, stacklevel=user_stacklevel())


@dataclass(frozen=True)
class LoopAnalysis:
    """Degrees of freedom and constraint structure of a constrained robot at one configuration."""
    n_loops: int                  # n_h: independent loops (= cut joints)
    n_constraints: int            # b: constraint rows of all cuts (and mimic couplings)
    rank: int                     # rank of G_l at q
    generic_rank: int             # largest rank seen at nearby assembled configurations
    dof: int                      # nv - generic rank (mobility)
    dof_at_q: int                 # nv - rank at q
    gruebler_kutzbach: int        # sum f_i - 6 n_h (spatial)
    gruebler_kutzbach_planar: int  # sum f_i - 3 n_h with the joints' planar freedoms
    redundant_constraints: int    # b - generic rank
    singular: bool                # rank drops at q (a singular configuration)
    statically_determinate: bool  # no redundant constraints: loop forces are unique
    residual: float               # max |g_s| at q
    independent: tuple            # joint coordinates chosen as minimal coordinates (v indices)
    partition_condition: float    # cond(G_ld) of that partition

    def __str__(self):
        return "\n".join([
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
        ])


class StepReport(dict):
    """robot.last_step: position_residual, velocity_residual, and the mechanical energy
    (kinetic + potential) after the step, computed when first read."""

    def __init__(self, robot, q, v, position, velocity):
        super().__init__(position_residual=position, velocity_residual=velocity)
        self._state = (robot, q, v)

    def __missing__(self, key):
        if key != "energy":
            raise KeyError(key)
        robot, q, v = self._state
        self["energy"] = robot.kinetic_energy(q, v) + robot.potential_energy(q)
        return self["energy"]


def null_space(matrix, tolerance=RANK_TOLERANCE):
    """Orthonormal basis (n, n - rank) of the null space of matrix (m, n), and its rank."""
    n = matrix.shape[1]
    if matrix.shape[0] == 0:
        return np.eye(n), 0
    _, sigma, vt = np.linalg.svd(matrix)
    rank = int(np.sum(sigma > tolerance * max(sigma.max(initial=0.0), 1e-300)))
    return vt[rank:].T, rank


def matrix_rank(matrix, tolerance=RANK_TOLERANCE):
    if matrix.size == 0:
        return 0
    sigma = np.linalg.svd(matrix, compute_uv=False)
    return int(np.sum(sigma > tolerance * max(sigma.max(initial=0.0), 1e-300)))


def warn_off_loop(residual, what):
    if residual > LOOP_RESIDUAL_WARNING:
        warnings.warn(f"{what}: the loops are open by {residual:.3g} (m or rad) at this q, more "
                      f"than {LOOP_RESIDUAL_WARNING:g}: the result is for a configuration the "
                      "mechanism cannot take (assemble(q) first)", LoopResidualWarning,
                      stacklevel=user_stacklevel())


class Constraints:
    """Loop rows (`loops`: a LoopKinematics or None) then mimic rows (`mimic`: MimicCouplings
    or None) of `robot` (module docstring). `closure_set`: the closures file as read (actuated
    and independent joints), or None."""

    def __init__(self, robot, loops=None, closure_set=None, mimic=None):
        self.robot = robot
        self.tree = robot._tree
        self.loops = loops
        self.mimic = mimic
        model = robot.model
        nv = self.tree.nv
        self.nv = nv
        self.n_loop_rows = loops.n_constraints if loops is not None else 0
        self.n_rows = self.n_loop_rows + (mimic.n_rows if mimic is not None else 0)
        self.closure_names = list(loops.names) if loops is not None else []
        self.closure_types = list(loops.types) if loops is not None else []
        self.closure_set = closure_set
        self.actuated_joints = list(closure_set.actuated) if closure_set is not None else []
        where = closure_set.source if closure_set is not None else model.source
        joint_index = {name: i for i, name in enumerate(model.joint_names)}
        if closure_set is not None:
            for name in self.actuated_joints + list(closure_set.independent):
                if name not in joint_index:
                    raise ModelError(f"{where}: '{excerpt(name, 80)}' in actuated/independent is "
                                     "not a movable joint of the tree (joints: "
                                     f"{', '.join(model.joint_names[:8])}...)")
        # drives: the closure file's actuated joints, or every independent dof of a tree with
        # mimic couplings; a free joint on the universe reports its wrench, as rnea gives it
        if loops is not None:
            actuated = self.dofs(self.actuated_joints)
        elif mimic is not None:
            actuated = mimic.independent
        else:
            actuated = np.arange(nv)
        for i in range(1, model.n_bodies + 1):
            if model.body_int[i, L.PARENT] == 0 and model.body_int[i, L.JOINT_TYPE] == L.JOINT_FREE:
                iv = int(model.body_int[i, L.IDX_V])
                actuated = np.union1d(np.arange(iv, iv + 6), actuated)
        self.actuated_dofs = np.asarray(actuated, dtype=np.int64)
        self.preferred_independent = (self.dofs(closure_set.independent)
                                      if closure_set is not None else np.zeros(0, np.int64))
        self.independent_names = list(closure_set.independent) if closure_set is not None \
            else []
        # elastic coordinates are never moved to close the loops (assemble(elastic=True) does)
        self.rigid_dofs = np.arange(model.nv)
        # Baumgarte gains (alpha, beta): 0 = the exact acceleration constraint; simulation
        # sets them (docs/theory.md §6). The C entry reads gains = [alpha, beta, threshold].
        self._baumgarte = (0.0, 0.0)
        self.gains = np.array([0.0, 0.0, LOOP_RESIDUAL_WARNING])
        self.info = np.zeros(2, dtype=np.int64)     # [status, rank] of the last recursive FD
        self.info[1] = self.n_loop_rows
        self.c_multipliers = np.zeros(self.n_loop_rows)   # the C entry owner thread's
        self._thread_state = threading.local()
        self._partition = None
        self._last_assembled = None
        self._reference_assemblies = {}
        self.last_step = None
        # q index of each v index of a one-dof joint (revolute, prismatic), -1 elsewhere
        self._dof_q = np.full(nv, -1, dtype=np.int64)
        self._revolute_q = np.full(nv, -1, dtype=np.int64)
        for t, iq, iv in zip(model.joint_types, model.idx_q, model.idx_v):
            if t in ("revolute", "prismatic"):
                self._dof_q[iv] = iq
            if t == "revolute":
                self._revolute_q[iv] = iq

    @property
    def empty(self):
        return self.n_rows == 0

    # ------------------------------------------------------------------ helpers
    def dofs(self, joint_names):
        """Sorted v indices of the named movable joints."""
        model = self.robot.model
        dofs = []
        for name in joint_names:
            j = model.joint_names.index(name)
            start = model.idx_v[j]
            stop = model.idx_v[j + 1] if j + 1 < len(model.idx_v) else model.nv
            dofs.extend(range(start, stop))
        return np.array(sorted(set(dofs)), dtype=np.int64)

    def dof_name(self, dof):
        model = self.robot.model
        if dof >= model.nv:
            return self.tree.elastic_names[dof - model.nv]
        j = int(np.searchsorted(model.idx_v, dof, side="right") - 1)
        stop = model.idx_v[j + 1] if j + 1 < len(model.idx_v) else model.nv
        name = model.joint_names[j]
        return name if stop - model.idx_v[j] == 1 else f"{name}[{dof - model.idx_v[j]}]"

    @property
    def baumgarte(self):
        """(alpha, beta): Baumgarte gains of forward_dynamics, finite and >= 0 (docs/theory.md §6)."""
        return self._baumgarte

    @baumgarte.setter
    def baumgarte(self, gains):
        try:
            alpha, beta = (float(g) for g in gains)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"baumgarte must be two numbers (alpha, beta), got "
                             f"{excerpt(gains, 80)}") from None
        if not (np.isfinite(alpha) and np.isfinite(beta) and alpha >= 0.0 and beta >= 0.0):
            raise ValueError(f"baumgarte gains must be finite and >= 0, got ({alpha}, {beta})")
        self._baumgarte = (alpha, beta)
        self.gains[0] = alpha      # the C entry reads them at every call
        self.gains[1] = beta

    # ------------------------------------------------------------------ rows
    def state(self, q, v):
        """(g (n,), G (n, nv), G v (n,)) of every row at (q, v) (validated arrays)."""
        parts = []
        if self.loops is not None:
            parts.append(self.loops.state(q, v))
        if self.mimic is not None:
            parts.append(self.mimic.rows(q, v, self.nv))
        if not parts:
            return np.zeros(0), np.zeros((0, self.nv)), np.zeros(0)
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate(x) for x in zip(*parts))

    def bias(self, q, v):
        """gamma (n,) with G qdd + gamma = 0 (zeros on the mimic rows: they are linear)."""
        gamma = np.zeros(self.n_rows)
        if self.loops is not None:
            gamma[:self.n_loop_rows] = self.loops.bias(q, v)
        return gamma

    def acceleration_rows(self, q, v):
        """(G (n, nv), gamma (n,)) with G qdd + gamma = 0, the Baumgarte terms included."""
        g, jacobian, gv = self.state(q, v)
        gamma = self.bias(q, v)
        alpha, beta = self._baumgarte
        if alpha or beta:
            gamma = gamma + 2.0 * alpha * gv + beta * beta * g
        return jacobian, gamma

    def loop_residual(self, q):
        """max |g| of the loop rows at q (0 without loops)."""
        if self.loops is None:
            return 0.0
        return float(np.abs(self.loops.state(q, np.zeros(self.nv))[0]).max(initial=0.0))

    # ------------------------------------------------------------------ partition, assembly
    def partition(self, q, refresh=False):
        """(independent, dependent) v indices (docs/theory.md §4): with mimic rows only, the
        mimicking dofs are dependent; else `independent` from the closure file if given, or
        chosen by QR with column pivoting of G; re-chosen when cond(G_d) grows beyond
        PARTITION_CONDITION_LIMIT or refresh is set."""
        if self.loops is None:
            dependent = self.mimic.dependent if self.mimic is not None else np.zeros(0, np.int64)
            return np.setdiff1d(np.arange(self.nv), dependent), dependent
        jacobian = self.state(q, np.zeros(self.nv))[1]
        if self._partition is not None and not refresh:   # one small SVD while it stays good
            ind, dep = self._partition
            if len(dep) == 0:
                return self._partition
            sigma = np.linalg.svd(jacobian[:, dep], compute_uv=False)
            if sigma[-1] * PARTITION_CONDITION_LIMIT > sigma[0]:
                return self._partition
        rank = matrix_rank(jacobian)
        if len(self.preferred_independent) and not refresh:
            ind = self.preferred_independent
            dep = np.setdiff1d(np.arange(self.nv), ind)
            if len(dep) == rank and np.linalg.cond(jacobian[:, dep]) < PARTITION_CONDITION_LIMIT:
                self._partition = (ind, dep)
                return self._partition
        import scipy.linalg   # here, not at import: ~0.15 s that many robots never need
        _, _, pivots = scipy.linalg.qr(jacobian, pivoting=True, mode="economic")
        dep = np.sort(pivots[:rank])
        ind = np.setdiff1d(np.arange(self.nv), dep)
        self._partition = (ind, dep)
        return self._partition

    def assemble(self, q, independent=None, max_iterations=50, elastic=False):
        """q with the dependent coordinates moved so that every row closes (Newton on g = 0 with
        the independent coordinates held, minimum-norm steps, docs/theory.md §4).

        independent: joint names to hold (default: the closure file's `independent`, else a
        partition chosen at q). Elastic coordinates are held (at the values in q: at rest, zero)
        unless `elastic` is True, which closes the loops with the joints at rest first, then
        gives the deformation back and corrects every coordinate by minimum-norm steps. When
        Newton from q (with a backtracking line search on |g|) fails, the independent
        coordinates are reached by continuation from the last assembled configuration and from
        the assembled neutral one, then from ASSEMBLY_STARTS other guesses of the dependent
        coordinates. Raises ValueError naming the held coordinates and the worst closure when
        none closes the rows: the configuration is then out of the mechanism's reach (with the
        elastic coordinates held: say so, elastic=True moves them)."""
        q = np.array(q, dtype=float)
        if self.empty:
            return q
        if len(self.rigid_dofs) == self.nv:      # no elastic coordinates
            return self._assemble(q, independent, max_iterations, self.rigid_dofs)
        if not elastic:
            try:
                return self._assemble(q, independent, max_iterations, self.rigid_dofs)
            except ValueError as exc:
                raise ValueError(f"{exc}; the elastic coordinates were held as q gives them: "
                                 "assemble(q, elastic=True) moves them too") from None
        # elastic=True: the loops closed by the joints with the structure at rest (the branch
        # of q's joint angles), then the deformation given back and every coordinate corrected by
        # minimum-norm steps (a small change, not a stiff mode driven far)
        model = self.robot.model
        at_rest = q.copy()
        at_rest[model.nq:] = 0.0
        try:
            closed = self._assemble(at_rest, independent, max_iterations, self.rigid_dofs)
            closed[model.nq:] = q[model.nq:]
        except ValueError:
            closed = q
        closed, residual = self._close_min_norm(closed, np.arange(self.nv), max_iterations)
        if residual < ASSEMBLY_TOLERANCE:
            return closed
        return self._assemble(q, independent, max_iterations, np.arange(self.nv))

    def _assemble(self, q, independent, max_iterations, movable):
        """assemble(), moving only the dofs `movable`."""
        if independent is not None:
            candidates = [self.dofs(independent)]
        else:
            candidates = []
            if len(self.preferred_independent):
                candidates.append(self.preferred_independent)
            candidates.append(self._rigid_partition(q, movable))
        best_residual, best_q, best_ind = np.inf, q, candidates[0]
        tried = []
        for ind in candidates:
            ind = np.union1d(ind, np.setdiff1d(np.arange(self.nv), movable))
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
        # last resort when no coordinate is held by name (a singular start, e.g. a stretched
        # four-bar, whose partition moves too few coordinates): minimum-norm Newton on every
        # movable coordinate, from q and from ASSEMBLY_STARTS guesses with the movable joint
        # coordinates perturbed (fixed seed)
        rng = np.random.default_rng(0)
        joints = movable[movable < self.robot.model.nv]
        start = q
        for _ in range(ASSEMBLY_STARTS + 1 if independent is None else 0):
            result, residual = self._newton(start, movable, max_iterations)
            if residual < ASSEMBLY_TOLERANCE:
                self._last_assembled = result.copy()
                return result
            if residual < best_residual:
                best_residual, best_q = residual, result
            step = np.zeros(self.nv)
            step[joints] = rng.normal(scale=0.3, size=len(joints))
            start = self.robot.integrate(q, step, 1.0)
        g = self.state(best_q, np.zeros(self.nv))[0]
        held = ", ".join(self.dof_name(i) for i in best_ind if i < self.robot.model.nv)
        raise ValueError(f"the loops cannot be closed with the independent coordinates ({held}) "
                         f"held: Newton from q, continuation from assembled configurations and "
                         f"{ASSEMBLY_STARTS} other starts leave a residual of at least "
                         f"{best_residual:.3g} (worst: {self._worst_row(g)}); "
                         "this configuration is out of the mechanism's reach")

    def _worst_row(self, g):
        """'closure <name>' or 'mimic joint <name>' of the largest residual in g."""
        worst = int(np.argmax(np.abs(g)))
        if worst < self.n_loop_rows:
            s = next(s for s, rows in enumerate(self.loops.rows) if rows.start <= worst < rows.stop)
            return f"closure '{self.closure_names[s]}'"
        return f"mimic joint '{self.mimic.joints[worst - self.n_loop_rows]}'"

    def _rigid_partition(self, q, movable):
        """Independent dofs of a partition whose dependent dofs are among `movable`."""
        if len(movable) == self.nv:
            return self.partition(q)[0]
        jacobian = self.state(q, np.zeros(self.nv))[1][:, movable]
        rank = matrix_rank(jacobian)
        import scipy.linalg
        _, _, pivots = scipy.linalg.qr(jacobian, pivoting=True, mode="economic")
        return np.setdiff1d(np.arange(self.nv), movable[np.sort(pivots[:rank])])

    def _newton(self, q, dep, max_iterations):
        """Newton on g(q) = 0 moving the dependent dofs, with a backtracking line search on |g|.
        Returns (q, max |g|)."""
        robot, zero = self.robot, np.zeros(self.nv)
        step = np.zeros(self.nv)
        g = self.state(q, zero)[0]
        norm = np.linalg.norm(g)
        for _ in range(max_iterations):
            if np.abs(g).max(initial=0.0) < ASSEMBLY_TOLERANCE:
                break
            jacobian = self.state(q, zero)[1]
            step[:] = 0.0
            step[dep] = -np.linalg.lstsq(jacobian[:, dep], g, rcond=RANK_TOLERANCE)[0]
            if not np.all(np.isfinite(step)):
                break
            scale = 1.0
            while True:
                q_try = robot.integrate(q, step, scale)
                g_try = self.state(q_try, zero)[0]
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
        model = self.robot.model
        held_q = self._dof_q[ind[ind < model.nv]]
        # continuation: walk the held coordinates from an assembled configuration to q's values
        if np.all(held_q >= 0):
            starts = [self._last_assembled] if self._last_assembled is not None else []
            reference = self._reference_assembly(dep)
            if reference is not None:
                starts.append(reference)
            for start in starts:
                current = start.copy()
                current[model.nq:] = q[model.nq:]     # elastic coordinates as given
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
        robot = self.robot
        rng = np.random.default_rng(0)
        for _ in range(ASSEMBLY_STARTS):
            guess = robot.random_configuration(rng)
            guess[model.nq:] = q[model.nq:]            # elastic coordinates as given
            for j in range(len(model.joint_names)):   # joints with a held dof keep q's values
                start = model.idx_v[j]
                stop = model.idx_v[j + 1] if j + 1 < len(model.idx_v) else model.nv
                if np.any(np.isin(np.arange(start, stop), ind)):
                    iq = model.idx_q[j]
                    nq = (model.idx_q[j + 1] if j + 1 < len(model.idx_q) else model.nq) - iq
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
            q, residual = self._newton(self.robot.neutral(), dep, 50)
            self._reference_assemblies[key] = q if residual < ASSEMBLY_TOLERANCE else None
        return self._reference_assemblies[key]

    def project_velocity(self, q, v):
        """v with its dependent components solved from G v = 0 (independent ones kept). With
        elastic coordinates: the correction of least kinetic energy, v - M^-1 G^T (G M^-1 G^T)^+
        G v (a partition would let stiff elastic coordinates absorb the violation)."""
        v = np.array(v, dtype=float)
        if len(self.rigid_dofs) < self.nv:
            _, jacobian, gv = self.state(q, v)
            if jacobian.shape[0]:
                m_inv_gt = np.linalg.solve(self.robot.mass_matrix(q), jacobian.T)
                v = v - m_inv_gt @ (np.linalg.pinv(jacobian @ m_inv_gt, rcond=RANK_TOLERANCE)
                                    @ gv)
            return v
        ind, dep = self.partition(q)
        if len(dep):
            jacobian = self.state(q, np.zeros(self.nv))[1]
            v[dep] = -np.linalg.lstsq(jacobian[:, dep], jacobian[:, ind] @ v[ind],
                                      rcond=RANK_TOLERANCE)[0]
            _warn_unsatisfied("project_velocity", "G v = 0", jacobian @ v, v)
        return v

    def project_acceleration(self, q, v, qdd):
        """qdd with its dependent components solved from G qdd + gamma = 0 (independent ones
        kept): the constraint-consistent acceleration closest to a commanded one."""
        qdd = np.array(qdd, dtype=float)
        ind, dep = self.partition(q)
        if len(dep):
            jacobian = self.state(q, v)[1]
            gamma = self.bias(q, v)
            qdd[dep] = -np.linalg.lstsq(jacobian[:, dep], jacobian[:, ind] @ qdd[ind] + gamma,
                                        rcond=RANK_TOLERANCE)[0]
            _warn_unsatisfied("project_acceleration", "G qdd + gamma = 0",
                              jacobian @ qdd + gamma, qdd, gamma)
        return qdd

    def project_state(self, q, v, max_iterations=20, fixed=None, tolerance=ASSEMBLY_TOLERANCE):
        """(q, v) moved back onto the constraint manifold after an integration step (docs/theory.md
        §6), independently of the coordinate partition: Gauss-Newton with minimum-norm steps
        q <- q (+) (-G^+ g) until |g| < tolerance (m, rad; default ASSEMBLY_TOLERANCE,
        robot.step after a semi_implicit_euler step EULER_CLOSING_TOLERANCE), then the velocity
        correction of least kinetic energy, v <- v - M^-1 G^T (G M^-1 G^T)^+ G v (the
        mass-orthogonal projection: it removes no energy of the admissible motion). fixed: v
        indices held (prescribed joints); the corrections then act on the other coordinates
        only. When the Gauss-Newton does not get below `tolerance` in max_iterations steps, the
        loops are re-assembled (assemble(): below ASSEMBLY_TOLERANCE)."""
        robot = self.robot
        v = np.array(v, dtype=float)
        free = np.setdiff1d(np.arange(self.nv), fixed) if fixed is not None else np.arange(self.nv)
        q, residual = self._close_min_norm(np.array(q, dtype=float), free, max_iterations,
                                           tolerance)
        if residual >= tolerance:
            q = self.assemble(q)
            return q, self.project_velocity(q, v)
        jacobian = self.state(q, np.zeros(self.nv))[1]
        if jacobian.shape[0]:
            mass = robot.mass_matrix(q)[np.ix_(free, free)]
            jacobian_free = jacobian[:, free]
            m_inv_gt = np.linalg.solve(mass, jacobian_free.T)
            v[free] = v[free] - m_inv_gt @ (np.linalg.pinv(jacobian_free @ m_inv_gt,
                                                           rcond=RANK_TOLERANCE) @ (jacobian @ v))
        return q, v

    def _close_min_norm(self, q, free, max_iterations, tolerance=ASSEMBLY_TOLERANCE):
        """Gauss-Newton with minimum-norm steps on the dofs `free`, q <- q (+) (-G_f^+ g), until
        |g| < tolerance or max_iterations. Returns (q, max |g|)."""
        step = np.zeros(self.nv)
        zero = np.zeros(self.nv)
        for _ in range(max_iterations):
            g, jacobian, _ = self.state(q, zero)
            residual = float(np.abs(g).max(initial=0.0))
            if residual < tolerance:
                return q, residual
            step[free] = -np.linalg.lstsq(jacobian[:, free], g, rcond=RANK_TOLERANCE)[0]
            q = self.robot.integrate(q, step, 1.0)
        return q, float(np.abs(self.state(q, zero)[0]).max(initial=0.0))

    def analyze(self, q, samples=5, rng=0):
        """LoopAnalysis at q: DOF by Grübler-Kutzbach and by the rank of G, redundant
        constraints, singular configuration, static determinacy (docs/theory.md §4)."""
        robot = self.robot
        model = robot.model
        g, jacobian, _ = self.state(q, np.zeros(self.nv))
        rank = matrix_rank(jacobian)
        generic = rank
        generator = np.random.default_rng(rng)
        ind, dep = self.partition(q)
        for _ in range(samples):  # nearby assembled configurations tell the generic rank
            dq = np.zeros(self.nv)
            dq[ind] = generator.normal(scale=0.05, size=len(ind))
            try:
                nearby = self.assemble(robot.integrate(q, dq, 1.0))
            except ValueError:
                continue
            generic = max(generic, matrix_rank(self.state(nearby, np.zeros(self.nv))[1]))
        n_loops = len(self.closure_names)
        n_mimic = self.n_rows - self.n_loop_rows
        cut_rows = [rows.stop - rows.start for rows in self.loops.rows] if self.loops else []
        joint_freedoms = self.nv + sum(6 - n for n in cut_rows)
        planar_freedoms = (sum(PLANAR_TREE_FREEDOMS.get(t, 1) for t in model.joint_types)
                           + (self.nv - model.nv)
                           + sum(PLANAR_CUT_FREEDOMS[t] for t in self.closure_types))
        condition = float(np.linalg.cond(jacobian[:, dep])) if len(dep) else 1.0
        return LoopAnalysis(
            n_loops=n_loops, n_constraints=self.n_rows, rank=rank, generic_rank=generic,
            dof=self.nv - generic, dof_at_q=self.nv - rank,
            gruebler_kutzbach=joint_freedoms - 6 * n_loops - n_mimic,
            gruebler_kutzbach_planar=planar_freedoms - 3 * n_loops - n_mimic,
            redundant_constraints=self.n_rows - generic, singular=rank < generic,
            statically_determinate=self.n_rows == generic,
            residual=float(np.abs(g).max(initial=0.0)), independent=tuple(int(i) for i in ind),
            partition_condition=condition)

    # ------------------------------------------------------------------ multipliers
    def c_multiplier_owner(self):
        """True when this thread owns the forward_dynamics KernelCall: its multipliers are then
        in c_multipliers, written by either path."""
        call = self.robot.__dict__.get("forward_dynamics")
        return call is not None and getattr(call, "owner", 0) == threading.get_ident()

    def multiplier_buffer(self):
        """The (b,) buffer of this thread's loop multipliers (created on its first call)."""
        if self.c_multiplier_owner():
            return self.c_multipliers
        lam = getattr(self._thread_state, "multipliers", None)
        if lam is None:
            lam = self._thread_state.multipliers = np.zeros(self.n_loop_rows)
        return lam

    def keep_multipliers(self, lam):
        """Keep lam (the loop rows' part) as this thread's multipliers."""
        self.multiplier_buffer()[:] = lam[:self.n_loop_rows]

    def multipliers(self):
        """(b,) loop multipliers of this thread's last forward dynamics (a copy)."""
        mine = (self.c_multipliers if self.c_multiplier_owner()
                else getattr(self._thread_state, "multipliers", None))
        return mine.copy() if mine is not None else np.zeros(self.n_loop_rows)

    def detach_c_owner(self):
        """Before the C entry goes: the owner thread keeps its multipliers."""
        if self.c_multiplier_owner():
            self._thread_state.multipliers = self.c_multipliers.copy()

    def multiplier_vector(self, multipliers):
        """multipliers as a finite float64 (b,) array, else ValueError."""
        lam = real_array(multipliers, "multipliers", "an array of numbers (robot.multipliers())")
        if lam.shape != (self.n_loop_rows,):
            raise ValueError(f"multipliers must have shape ({self.n_loop_rows},) (one per "
                             f"constraint row, robot.multipliers()), got {lam.shape}")
        if not np.all(np.isfinite(lam)):
            raise ValueError("multipliers contain NaN or inf")
        return lam

    # ------------------------------------------------------------------ forward dynamics
    def forward_dynamics(self, q, v, tau, out, method):
        """out (nv,) = the constrained accelerations for the total generalized forces tau, the
        loads already in the tree's loaded workspace (robot.py). Caller holds the lock."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {excerpt(method, 40)}")
        loops = self.loops
        if method == "descriptor":
            if loops is None or self.mimic is not None or self.tree.kind == "flexible":
                raise ValueError("method 'descriptor' needs closed loops on a rigid tree without "
                                 "mimic couplings")
            from .descriptor import descriptor_forward_dynamics
            warn_off_loop(self.loop_residual(q), "forward_dynamics")
            out[:] = descriptor_forward_dynamics(self.robot, q, v, tau)[0]
            return out
        if method == "minimal" or (method == "recursive" and loops is None):
            warn_off_loop(self.loop_residual(q), "forward_dynamics")
            return self._minimal(q, v, tau, out)
        if method == "recursive" and loops.recursive:
            if self.mimic is None:
                return self._recursive(q, v, tau, out)
            try:
                total = self._coupling_drive(q, v, tau)
            except np.linalg.LinAlgError:   # a coupling the loops already impose
                total = None
            if total is not None:
                return self._recursive(q, v, total, out)
        if method == "recursive" and self.mimic is None and getattr(loops, "compiled_kkt", False):
            return self._compiled_kkt(q, v, tau, out)
        return self._kkt(q, v, tau, out)

    def _recursive(self, q, v, tau, out):
        """The seeds' recursive formalism [000] (kernels/closed_loop.py)."""
        alpha, beta = self._baumgarte
        status = self.loops.recursive_forward_dynamics(q, v, tau, float(alpha), float(beta), out,
                                                       self.info)
        if status:
            self.robot._raise(status, q, v, tau, out, "tau")
        if not np.all(np.isfinite(out)):
            self.robot._raise(L.STATUS_OK, q, v, tau, out, "tau")
        # this thread's multipliers and the largest loop residual in one kernel call
        residual = _loop_results(self.loops.loop_float, L.LOOP_LAMBDA, L.LOOP_RESIDUAL,
                                 self.multiplier_buffer())
        warn_off_loop(residual, "forward_dynamics")
        return out

    def _coupling_drive(self, q, v, tau):
        """tau + G_m^T mu: the drive forces plus the coupling forces that keep every mimic joint
        on its leader. The closed-loop forward dynamics is affine in tau, qdd = a0 + A mu with
        A's columns the responses to the unit coupling forces G_m^T e_k, and the coupling rows
        G_m qdd = -(2 alpha G_m v + beta^2 g_m) give the m x m system for mu."""
        base = self._recursive(q, v, tau, np.empty(self.nv)).copy()
        gm, jm, gvm = self.mimic.rows(q, v, self.nv)
        response = np.empty((self.nv, self.mimic.n_rows))
        for k in range(self.mimic.n_rows):
            self._recursive(q, v, tau + jm[k], response[:, k])
            response[:, k] -= base
        alpha, beta = self._baumgarte
        target = -(jm @ base) - 2.0 * alpha * gvm - beta * beta * gm
        mu = np.linalg.solve(jm @ response, target)
        return tau + jm.T @ mu

    def _tree_terms(self, q, v, tau):
        """(M, tau - h): the tree's M qdd = rhs (h: the tree's inverse dynamics at qdd = 0 with
        the loads of the call and the passive forces)."""
        tree = self.tree
        mass = np.empty((self.nv, self.nv))
        bias = np.empty(self.nv)
        status = tree.inverse_dynamics(q, v, np.zeros(self.nv), bias) or tree.mass_matrix(q, mass)
        if status:
            self.robot._raise(status, q, v, tau, None, "tau")
        return mass, tau - bias

    def _kkt(self, q, v, tau, out):
        """M qdd = tau - h + G^T lambda, G qdd = -gamma (Baumgarte included): Cholesky of M and
        the minimum-norm multipliers of G M^-1 G^T lambda = -gamma - G M^-1 (tau - h)."""
        mass, rhs = self._tree_terms(q, v, tau)
        g, jacobian, gv = self.state(q, v)
        warn_off_loop(float(np.abs(g[:self.n_loop_rows]).max(initial=0.0)), "forward_dynamics")
        alpha, beta = self._baumgarte
        target = -self.bias(q, v) - 2.0 * alpha * gv - beta * beta * g
        try:
            chol = np.linalg.cholesky(mass)
        except np.linalg.LinAlgError:
            raise ValueError("forward_dynamics: the mass matrix is not positive definite (a "
                             "joint moves no mass)") from None
        solve = lambda x: np.linalg.solve(chol.T, np.linalg.solve(chol, x))  # noqa: E731
        qdd = solve(rhs)
        lam = np.zeros(self.n_rows)
        if self.n_rows:
            m_inv_gt = solve(jacobian.T)
            lam, _, rank, _ = np.linalg.lstsq(jacobian @ m_inv_gt, target - jacobian @ qdd,
                                              rcond=RANK_TOLERANCE)
            self.info[1] = int(rank)
            qdd = qdd + m_inv_gt @ lam
        if not np.all(np.isfinite(qdd)):
            self.robot._raise(L.STATUS_OK, q, v, tau, out, "tau")
        self.keep_multipliers(lam)
        out[:] = qdd
        return out

    def _compiled_kkt(self, q, v, tau, out):
        """_kkt's solve in one compiled call (flexible trees: robot/flexible_loops.py
        forward_dynamics, kernels/flexible_loop_dynamics.py)."""
        # (imported here: the flexible kernels stay out of a rigid robot's process, whose
        # warm start loads no numba compiler, test/test_startup.py)
        from ..kernels import flexible_loop_dynamics as fld
        alpha, beta = self._baumgarte
        loops = self.loops
        status = loops.forward_dynamics(q, v, tau, float(alpha), float(beta), out,
                                        self.multiplier_buffer())
        if status == fld.STATUS_NOT_POSITIVE_DEFINITE:
            raise ValueError("forward_dynamics: the mass matrix is not positive definite (a "
                             "joint moves no mass)")
        if status:
            self.robot._raise(L.STATUS_OK if status == fld.STATUS_SOLVE_FAILED else status, q, v,
                              tau, out, "tau")
        self.info[1] = int(loops.kkt_info[1])
        warn_off_loop(float(np.abs(loops.residual).max(initial=0.0)), "forward_dynamics")
        return out

    def _minimal(self, q, v, tau, out):
        """Minimal coordinates (docs/theory.md §5 end): M_z = J_l^T M J_l,
        s' = M_z^-1 J_l^T (tau - h - M eta''), qdd = J_l s' + eta''."""
        mass, rhs = self._tree_terms(q, v, tau)
        jacobian, gamma = self.acceleration_rows(q, v)
        ind, dep = self.partition(q)
        jl = np.zeros((self.nv, len(ind)))
        jl[ind, np.arange(len(ind))] = 1.0
        eta2 = np.zeros(self.nv)
        if len(dep):
            dep_pinv = np.linalg.pinv(jacobian[:, dep], rcond=RANK_TOLERANCE)
            jl[dep] = -dep_pinv @ jacobian[:, ind]
            eta2[dep] = -dep_pinv @ gamma
        reduced_mass = jl.T @ mass @ jl
        s_dot = np.linalg.solve(reduced_mass, jl.T @ (rhs - mass @ eta2))
        out[:] = jl @ s_dot + eta2
        if not np.all(np.isfinite(out)):
            self.robot._raise(L.STATUS_OK, q, v, tau, out, "tau")
        return out

    # ------------------------------------------------------------------ inverse dynamics
    def actuation_forces(self, jacobian, tau_tree, rank=None):
        """(tau, N^T S, a, N^T tau_tree) of actuation without its checks: the actuated dofs'
        forces tau = S a, a = (N^T S)^+ N^T tau_tree (least squares, minimum norm), N an
        orthonormal basis of null(G) (the result does not depend on which; `rank`: that of G,
        else numerical). Linear in tau_tree, which may be (nv,) or (nv, k) (k right-hand sides);
        constrained_derivatives.py differentiates it."""
        if rank is None or jacobian.shape[0] == 0:
            null, _ = null_space(jacobian)
        else:
            null = np.linalg.svd(jacobian)[2][rank:].T
        act = self.actuated_dofs
        reduced = null[act].T            # N^T S, S the selection of the actuated dofs
        target = null.T @ tau_tree
        if np.sqrt((reduced * reduced).sum(axis=1)).max(initial=0.0) > RANK_TOLERANCE:
            actuation, *_ = np.linalg.lstsq(reduced, target, rcond=RANK_TOLERANCE)
        else:
            # N is orthonormal, so N^T S is on the scale of 1: every row below RANK_TOLERANCE
            # means no actuated joint moves the mechanism here (a dead point, e.g. a four-bar
            # driven by its rocker at the rocker's extreme). lstsq's cut-off is relative to the
            # largest singular value and would return target / (round-off), ~1e8 N m;
            # rollout_loop_drives.actuated_forces makes the same decision
            actuation = np.zeros((len(act),) + np.shape(target)[1:])
        tau = np.zeros((self.nv,) + np.shape(tau_tree)[1:])
        tau[act] = actuation
        return tau, reduced, actuation, target

    def actuation(self, q, v, qdd, tau_tree):
        """(tau (nv,) on the actuated dofs, lambda (n,)) with tau_tree = tau + G^T lambda for the
        constraint-consistent qdd; tau minimum-norm (redundant actuation), lambda minimum-norm
        (redundant constraints). Raises ValueError when qdd breaks a row or the actuated joints
        cannot produce the motion."""
        g, jacobian, gv = self.state(q, v)
        warn_off_loop(float(np.abs(g[:self.n_loop_rows]).max(initial=0.0)), "inverse_dynamics")
        scale = max(1.0, np.abs(qdd).max(initial=0.0))
        # the acceleration constraint forward_dynamics enforces, Baumgarte terms included, so
        # that its own accelerations are always accepted
        alpha, beta = self._baumgarte
        residual = jacobian @ qdd + self.bias(q, v) + 2.0 * alpha * gv + beta * beta * g
        loop_part = residual[:self.n_loop_rows]
        if np.abs(loop_part).max(initial=0.0) > 1e-6 * scale:
            raise ValueError(f"qdd violates the loop acceleration constraint G_l qdd + gamma = 0 "
                             f"by {np.abs(loop_part).max():.3g}: only loop-consistent motions "
                             "have actuator torques (see assemble / project_velocity)")
        for k, (_, _, iv_m, iv_l, multiplier, _) in enumerate(self.mimic.pairs if self.mimic
                                                              else ()):
            if abs(residual[self.n_loop_rows + k]) > 1e-9 * max(1.0, abs(qdd[iv_l])):
                raise ValueError(f"qdd breaks a mimic coupling (qdd[{iv_m}] must be "
                                 f"{multiplier} x qdd[{iv_l}])")
        tau, reduced, actuation, target = self.actuation_forces(jacobian, tau_tree)
        if np.abs(reduced @ actuation - target).max(initial=0.0) > \
                1e-8 * max(1.0, np.abs(target).max(initial=0.0)) and self.nv == self.robot.model.nv:
            # (with elastic coordinates, which no drive moves, a qdd their dynamics do not
            # produce has no exact actuation: the least-squares torques are returned)
            raise ValueError("the actuated joints cannot produce this motion (the mechanism is "
                             "under-actuated here or at a singular configuration); actuated: "
                             f"{self.actuated_joints}")
        # the same rank cut-off as the recursive solver, so both give the same min-norm lambda
        lam, *_ = np.linalg.lstsq(jacobian.T, tau_tree - tau, rcond=RANK_TOLERANCE)
        return tau, lam
