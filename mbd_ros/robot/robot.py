"""The Robot: one public class for every kind of robot (docs/design.md, "Library contract").

A Robot is built (build.py) from parts, chosen once at load:

- a tree (tree.py): the open kinematic tree's kernels, rigid (generic or generated) or flexible;
- a Constraints part (constraints.py): loop closures and mimic couplings (empty for a tree);
- a ForceElements part (forces.py): force elements and add_force callbacks (or none).

Every public method is written once, here: validation at the entry point, then the parts. The
behaviour depends on the model, not on the class.

Hot path: with no parts (a plain tree) forward_dynamics, inverse_dynamics and mass_matrix are one
kernel call on the tree's lock-free workspace (the kernels have explicit numba signatures, check
sizes, NaN/inf and quaternions themselves and return a status that the wrapper turns into a
ValueError naming the argument; only unusual inputs are converted), and from their second call a
C-level entry (mbd_ros/fastcall: the method replaced on the instance by a KernelCall). A rigid
closed-loop robot gets the C entry of its recursive loop solver.

Threads: every public method may be called from several threads sharing one Robot. The lock-free
calls are one GIL-holding kernel call each (atomic; test/test_threads.py fails if a kernel ever
releases the GIL there). Every other path runs under the robot's re-entrant lock, on the tree's
loaded workspace. Per-call results are private; multipliers() are those of the calling thread's
last forward dynamics; last_rank and last_step are those of the last call from any thread.
"""
from __future__ import annotations

import functools
import os
import threading
import warnings

import numpy as np

from .. import fastcall
from ..model import layout as L
from ..errors import ModelError, excerpt
from ..kernels.checked import STATUS_ALIASED, STATUS_NOT_FINITE
from ..kernels.finite import all_finite
from ..kernels.rnea import remove_passive_forces as _remove_passive_forces
from . import arguments as A
from . import prescribed as P
from .constraints import (ASSEMBLY_TOLERANCE, EULER_CLOSING_TOLERANCE, PROJECTION_TOLERANCE,
                          Constraints, StepReport)

_EMPTY = A.EMPTY
# the q-only frame calls that divide by the moving mass (FrameKinematics' kernel names)
_CENTRE_OF_MASS_CALLS = ("center_of_mass", "com_jacobian", "centroidal")


def locked(method):
    """Run the method under the robot's re-entrant lock (see the module docstring)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


class Robot:
    """Dynamics of one robot (see docs/design.md, "Library contract").

    Vectors: q (nq,), v (nv,), tau and qdd (nv,), ordered as `joint_names` (depth-first over the
    URDF tree), then the elastic coordinates of flexible links (`elastic_names`). Free joints:
    q = [x y z qx qy qz qw], v = [linear, angular] in the body frame.
    Build one with mbd_ros.load(...).
    """

    default_integrator = "rk4"   # what step(integrator=None) runs (in substeps: integrators.py)

    def __init__(self, model, tree, closure_set=None, loops=None, mimic=None, forces=None,
                 force_source=""):
        self.model = model
        self._tree = tree
        self._lock = threading.RLock()
        self.nq = tree.nq
        self.nv = tree.nv
        self.joint_names = list(model.joint_names)
        self.joint_types = list(model.joint_types)
        self.idx_q = model.idx_q
        self.idx_v = model.idx_v
        self.link_names = list(model.link_names)
        self.wrench_joint_names = list(model.wrench_joint_names)
        # child link of each row of joint_wrenches: the frame its wrench is expressed in
        self.wrench_frames = [model.body_names[b] if b >= 0 else model.link_names[link]
                              for b, link in model.wrench_rows]
        self.elastic_names = list(tree.elastic_names)
        self.elastic_q_indices = tree.elastic_q_indices.copy()
        self.elastic_v_indices = tree.elastic_v_indices.copy()
        n_elastic = self.nv - model.nv
        # per dof, elastic coordinates included (no damping, friction or limits there)
        self.damping = np.concatenate([model.damping, np.zeros(n_elastic)])
        self.friction = np.concatenate([model.friction, np.zeros(n_elastic)])
        self.effort_limits = np.concatenate([model.effort, np.full(n_elastic, np.inf)])
        self.velocity_limits = np.concatenate([model.velocity_limit, np.full(n_elastic, np.inf)])
        self.position_limits = (np.concatenate([model.lower, np.full(n_elastic, -np.inf)]),
                                np.concatenate([model.upper, np.full(n_elastic, np.inf)]))
        self.flexible = getattr(tree, "flexible", None)
        self.flexible_links = [fb.link for fb in self.flexible.bodies] if self.flexible else []
        self.total_mass = float(model.total_mass) if self.flexible is None else float(
            model.total_mass + sum(fb.mass - float(model.link_float[
                model.link_names.index(fb.link), L.LINK_INERTIA]) for fb in self.flexible.bodies))
        self._quaternion_slices = [
            (name, slice(iq + (3 if t == "floating" else 0), iq + (7 if t == "floating" else 4)))
            for name, t, iq in zip(self.joint_names, self.joint_types, self.idx_q)
            if t in ("floating", "spherical")]
        self.time = 0.0          # clock of force callbacks fn(t, q, v); step() advances it
        self.batch_threads = os.cpu_count() or 1   # threads of the batch forms
        self.last_prescribed_torques = np.zeros(self.nv)
        self._prescribed = P.PrescribedPlans(model, self.nv)
        self._simulators = {}          # robot.step's Simulators (integrators.py)
        self._default_max_step = None  # robot.step's default substep (integrators.py)
        self._forces = None
        if forces:
            from .forces import ForceElements   # here: the element kernels load on demand
            self._forces = ForceElements(tree, forces, force_source)
        self._constraints = Constraints(self, loops, closure_set, mimic)
        self._mimic = mimic
        # the constraints, as read: closures (names, types, file, actuated joints, loop rows b)
        # and mimic couplings (T (nv, nz): v = T z with z the independent velocities)
        self.closure_names = self._constraints.closure_names
        self.closure_types = self._constraints.closure_types
        self.closure_set = closure_set
        self.actuated_joints = self._constraints.actuated_joints
        self.n_constraints = self._constraints.n_loop_rows
        self.mimic_joints = list(mimic.joints) if mimic is not None else []
        self.mimic_coupling = mimic.coupling if mimic is not None else np.eye(self.nv)
        self.mimic_independent = mimic.independent if mimic is not None else np.arange(self.nv)
        self._scratch = np.zeros(self.nv)
        self._zero_velocity = np.zeros(self.nv)   # qdd = 0 of bias_forces (never written)
        self._total_tau = np.zeros(self.nv)
        self._free_calls = dict(tree.free_calls)   # replaced by the C entries once installed
        self._update_paths()
        # ---- C-level entries (mbd_ros/fastcall): installed at the second fast call ----
        self._c_pending = dict.fromkeys(self._c_call_names(), 0) if fastcall.AVAILABLE else {}

    @property
    def tree(self):
        """The tree dynamics this robot runs on (robot/tree.py: its kind, kernels and model
        arrays), for compiled extras of the simulation layer (contact)."""
        return self._tree

    # ------------------------------------------------------------------ parts and paths
    def _update_paths(self):
        """Which calls take the lock-free path: those of a robot with no parts."""
        self._plain = self._forces is None and self._constraints.empty

    def _c_call_names(self):
        """Methods that get a KernelCall: the tree's FD, ID and M of a plain robot; M, and the
        recursive loop solver's FD, of a rigid closed-loop robot; M of other constrained robots;
        none with force elements or callbacks (the entries do not evaluate them)."""
        if self._plain:
            return list(fastcall.NAMES)
        if self._forces is not None:
            return []
        constraints = self._constraints
        if constraints.mimic is None and constraints.loops is not None and \
                constraints.loops.recursive:
            return ["forward_dynamics", "mass_matrix"]
        return ["mass_matrix"]

    def _c_call_spec(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns, affine) of `name`."""
        if name == "forward_dynamics" and not self._plain:
            constraints = self._constraints
            return constraints.loops.c_entry(constraints.gains, constraints.info,
                                             constraints.c_multipliers) + (True,)
        return self._tree.c_entry(name) + (False,)

    def _promote_c_call(self, name, now=False):
        """Install the KernelCall of `name` at its second call that took the fast path in Python
        (the first result is not delayed by compiling the C entry, and a program calling once
        never compiles it), or `now`."""
        calls = self._c_pending.get(name)
        if calls is None:
            return
        if calls < 1 and not now:
            self._c_pending[name] = calls + 1
            return
        del self._c_pending[name]
        if name not in self._c_call_names():   # parts attached since
            return
        try:
            *spec, affine = self._c_call_spec(name)
            call = fastcall.install(self, name, *spec, affine=affine)
        except Exception as exc:   # keep numba's dispatcher: slower per call, same results
            warnings.warn(f"{name}: no C-level entry ({type(exc).__name__}: {exc}); calls go "
                          "through numba's dispatcher", RuntimeWarning, stacklevel=3)
            return
        if call is not None and self._plain:
            self._free_calls[name] = call.entry   # the Python method's fast path too

    def compile_c_calls(self):
        """Install the C-level entries of forward_dynamics, inverse_dynamics and mass_matrix now
        (compiling them, or loading them from numba's cache) instead of on their first calls;
        e.g. before a node goes active. Returns the names installed."""
        for name in sorted(self._c_pending):
            self._promote_c_call(name, now=True)
        return [name for name in fastcall.NAMES if fastcall.installed(self, name)]

    def drop_c_calls(self):
        """Remove the C-level entries of the dynamics (the Python methods apply again): when force
        elements or add_force callbacks are attached, which the C entries do not evaluate."""
        self._constraints.detach_c_owner()
        self._c_pending = {}
        fastcall.uninstall(self)
        # the derivatives' KernelCalls (robot/fast_derivatives.py; only called while plain)
        fastcall.uninstall(self, ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"))
        self._free_calls = dict(self._tree.free_calls)

    def compile_all(self):
        """Compile (or load from numba's cache) the kernels of the common calls now, e.g. before
        a node goes active: the generated kernels of a codegen robot, and the C entries."""
        if hasattr(self._tree, "compile_all"):
            self._tree.compile_all()
            self._free_calls.update({k: v for k, v in self._tree.free_calls.items()
                                     if not fastcall.installed(self, k)})
        return self.compile_c_calls()

    @property
    def GENERATED(self):   # noqa: N802 -- the name GeneratedRobot gave it
        """Names of the calls with generated kernels (codegen=True; empty otherwise)."""
        tree = self._tree
        return tuple(tree.free_calls) + tuple(tree.generated_calls) if tree.kind == "generated" \
            else ()

    @property
    def codegen_path(self):
        """Path of the generated kernels' module (codegen=True), else None."""
        return getattr(self._tree, "codegen_path", None)

    def call_paths(self):
        """{method: 'generated' | 'generic' | description}: which kernels each call runs."""
        generated = self._tree.kind == "generated"
        paths = {}
        for name in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces",
                     "gravity_forces", "joint_wrenches"):
            if not generated:
                paths[name] = self._tree.kind
            elif name == "mass_matrix":
                paths[name] = "generated"
            elif self._forces is not None:
                paths[name] = "generic (force elements / add_force callbacks)"
            elif not self._constraints.empty and name in ("forward_dynamics", "inverse_dynamics",
                                                          "joint_wrenches", "gravity_forces"):
                paths[name] = "generic (constraints)"
            elif name in ("forward_dynamics", "inverse_dynamics", "joint_wrenches"):
                paths[name] = "generated (generic with f_ext)"
            else:
                paths[name] = "generated"
        for name in ("forward_dynamics_batch", "inverse_dynamics_batch", "link_pose",
                     "kinetic_energy", "potential_energy", "integrate", "step"):
            paths[name] = "generic" if generated else self._tree.kind
        # derivatives: the generated rnea_derivatives on the plain tree (robot/fast_derivatives.py)
        if not generated:
            paths["inverse_dynamics_derivatives"] = self._tree.kind
        elif not self._tree.kernels.module.RNEA_DERIVATIVES_GENERATED:
            paths["inverse_dynamics_derivatives"] = "generic (rnea_derivatives not generated: " \
                                                    "too many dofs)"
        elif self._plain:
            paths["inverse_dynamics_derivatives"] = "generated rnea_derivatives (generic with " \
                                                    "f_ext)"
        else:
            paths["inverse_dynamics_derivatives"] = "generic (force elements, constraints)"
        paths["forward_dynamics_derivatives"] = paths["inverse_dynamics_derivatives"].replace(
            "rnea_derivatives", "aba_derivatives")
        return paths

    # ------------------------------------------------------------------ configuration helpers
    def neutral(self):
        """(nq,) the zero configuration: zero angles/displacements, identity quaternions, zero
        elastic coordinates (undeformed), mimic joints at their offsets."""
        q = np.zeros(self.nq)
        for _, quaternion in self._quaternion_slices:
            q[quaternion.stop - 1] = 1.0
        if self._mimic is not None:
            self._mimic.couple_in_place(q)
        return q

    def random_configuration(self, rng=None):
        """(nq,) a random valid q: within position limits (angles in [-pi, pi] and displacements
        in [-1, 1] where unlimited; helical: the angle), unit quaternions, free-joint positions
        in [-1, 1]^3, zero elastic coordinates. rng: None, a seed (int) or a
        numpy.random.Generator; ValueError otherwise."""
        try:
            rng = np.random.default_rng(rng)
        except (TypeError, ValueError):
            raise ValueError(f"rng must be None, an integer seed or a numpy Generator, got "
                             f"{type(rng).__name__}") from None
        model = self.model
        q = np.zeros(self.nq)
        for t, iq, iv in zip(self.joint_types, self.idx_q, self.idx_v):
            if t in ("revolute", "prismatic", "helical"):
                span = 1.0 if t == "prismatic" else np.pi
                lo = max(model.lower[iv], -span)
                hi = min(model.upper[iv], span)
                q[iq] = rng.uniform(lo, hi) if hi > lo else lo
            elif t == "spherical":
                quat = rng.normal(size=4)
                q[iq:iq + 4] = quat / np.linalg.norm(quat)
            elif t == "universal":     # [angle about axis, angle about axis2]
                q[iq:iq + 2] = rng.uniform(-np.pi, np.pi, 2)
            elif t == "cylindrical":   # [angle, displacement]
                q[iq] = rng.uniform(-np.pi, np.pi)
                q[iq + 1] = rng.uniform(-1.0, 1.0)
            elif t == "floating":
                q[iq:iq + 3] = rng.uniform(-1.0, 1.0, 3)
                quat = rng.normal(size=4)
                q[iq + 3:iq + 7] = quat / np.linalg.norm(quat)
            else:  # planar
                q[iq:iq + 2] = rng.uniform(-1.0, 1.0, 2)
                q[iq + 2] = rng.uniform(-np.pi, np.pi)
        return q

    def integrate(self, q, v, dt, out=None):
        """(nq,) q (+) v dt, the exact exponential map on every joint (as pinocchio.integrate);
        elastic coordinates q_f + v_f dt. out may overlap q or v."""
        q = A.vector(q, self.nq, "q")
        v = A.vector(v, self.nv, "v")
        dt = A.real_scalar(dt, "dt")
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        self._check_state(q, v, _EMPTY, "")
        target = A.output(out, (self.nq,))
        if out is not None and A.shares_memory(out, q, v):
            target = np.empty(self.nq)
        self._tree.integrate(q, v, dt, target)
        if not all_finite(target):
            raise ValueError("integrate: the result is not finite (v * dt overflows)")
        if target is not out and out is not None:
            out[:] = target
            return out
        return target

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, prescribed=None,
                         return_torques=False, method="recursive"):
        """Accelerations qdd (nv,) for generalized forces tau (nv,) at state (q, v).

        Includes gravity, the URDF joint damping and smoothed friction (passive_forces), the
        force elements and add_force callbacks (at t = self.time), and f_ext (see
        `joint_wrenches`); respects the loops and mimic couplings. Recursive O(n) for trees
        (docs/theory.md §2). Raises ValueError for bad inputs and when the result is not finite.
        out may overlap q, v or tau (the result is then computed privately).

        method (constrained robots): "recursive" (default: the seeds' formalism [000] on rigid
        trees, superposed with the mimic couplings; the KKT solve on flexible trees; minimal
        coordinates for mimic couplings alone), "minimal" (coordinate partitioning), "kkt"
        (dense, minimum-norm multipliers), "descriptor" (body coordinates, rigid loops).
        Baumgarte gains self.baumgarte = (alpha, beta) add 2 alpha G v + beta^2 g.
        prescribed: {joint: qdd} joints with given accelerations (rheonomic, prescribed.py): the
        drive forces they need are in self.last_prescribed_torques (nv,), and returned as
        (qdd, torques) with return_torques=True.
        """
        if self._plain and f_ext is None and prescribed is None and method == "recursive":
            if out is None:
                out = np.empty(self.nv)
            # Fast path, inline in forward_dynamics, inverse_dynamics and mass_matrix rather
            # than in a shared helper: one more Python call is ~40-80 ns on a ~0.5-1 us call.
            # numba accepts only C-contiguous float64 vectors (TypeError otherwise).
            try:
                status = self._free_calls["forward_dynamics"](q, v, tau, out)
            except TypeError:
                status = -1
            if status == 0:
                if "forward_dynamics" in self._c_pending:
                    self._promote_c_call("forward_dynamics")
                return out
        return self._forward_dynamics_general(q, v, tau, f_ext, out, prescribed,
                                              return_torques, method)

    @locked
    def _forward_dynamics_general(self, q, v, tau, f_ext, out, prescribed, return_torques,
                                  method):
        q, v, tau = self._checked(q, v, tau, "tau")
        result = self._result(out, (self.nv,), q, v, tau)
        joint_force = self._apply_loads(q, v, f_ext)
        if joint_force is not None:
            tau = np.add(tau, joint_force, out=self._total_tau)
        constraints = self._constraints
        if prescribed is not None:
            mass, bias = self._tree_mass_and_bias(q, v)
            rows = None if constraints.empty else constraints.acceleration_rows(q, v)
            qdd, torques = P.solve(self._prescribed, mass, bias, tau, prescribed, rows)
            self.last_prescribed_torques = torques
            result[:] = qdd
        elif constraints.empty:
            status = self._unloaded_call("forward_dynamics", joint_force, f_ext, q, v, tau, result)
            if status:
                status = self._tree.forward_dynamics(q, v, tau, result)
            if status:
                self._raise(status, q, v, tau, result, "tau")
        else:
            constraints.forward_dynamics(q, v, tau, result, method)
            if "forward_dynamics" in self._c_pending and f_ext is None and \
                    self._forces is None and method == "recursive":
                self._promote_c_call("forward_dynamics")
        if out is not None and result is not out:
            out[:] = result
            result = out
        if prescribed is not None and return_torques:
            return result, self.last_prescribed_torques
        return result

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces tau (nv,) that produce qdd (nv,) at (q, v): M qdd + b - tau_passive
        (RNEA), minus the force elements' and add_force callbacks' generalized forces. For a
        constrained robot: the forces of the actuated joints (zeros elsewhere; minimum-norm if
        redundantly actuated; plus the root wrench of a floating base, as rnea gives it) that
        make forward_dynamics reproduce the constraint-consistent qdd. Raises ValueError for bad
        inputs and non-finite results; out as in forward_dynamics."""
        if self._plain and f_ext is None:
            if out is None:
                out = np.empty(self.nv)
            try:
                status = self._free_calls["inverse_dynamics"](q, v, qdd, out)
            except TypeError:
                status = -1
            if status == 0:
                if "inverse_dynamics" in self._c_pending:
                    self._promote_c_call("inverse_dynamics")
                return out
        return self._inverse_dynamics_general(q, v, qdd, f_ext, out)

    @locked
    def _inverse_dynamics_general(self, q, v, qdd, f_ext, out):
        q, v, qdd = self._checked(q, v, qdd, "qdd")
        result = self._result(out, (self.nv,), q, v, qdd)
        self._tree_inverse_dynamics(q, v, qdd, f_ext, result)
        if not self._constraints.empty:
            result[:] = self._constraints.actuation(q, v, qdd, result)[0]
        if out is not None and result is not out:
            out[:] = result
            result = out
        return result

    def _unloaded_call(self, name, joint_force, f_ext, *args):
        """Status of the free call `name` (generated kernels, C entries) on validated arguments
        when the call has no loads; -1 when it has (the loaded workspace's kernels then run)."""
        if joint_force is not None or f_ext is not None or self._forces is not None:
            return -1
        return self._free_calls[name](*args)

    def _tree_inverse_dynamics(self, q, v, qdd, f_ext, out):
        """out = the tree's drive forces for qdd with the call's loads, minus the elements' and
        callbacks' generalized forces (validated inputs; caller holds the lock)."""
        joint_force = self._apply_loads(q, v, f_ext)
        status = self._unloaded_call("inverse_dynamics", joint_force, f_ext, q, v, qdd, out)
        if status:
            status = self._tree.inverse_dynamics(q, v, qdd, out)
        if status:
            self._raise(status, q, v, qdd, out, "qdd")
        if joint_force is not None:
            out -= joint_force
        return out

    def _tree_mass_and_bias(self, q, v):
        """(M (nv, nv), h (nv,)): the tree's mass matrix and its inverse dynamics at qdd = 0
        with the loads already in the workspace (passive forces included)."""
        mass = np.empty((self.nv, self.nv))
        bias = np.empty(self.nv)
        status = self._tree.inverse_dynamics(q, v, np.zeros(self.nv), bias) or \
            self._tree.mass_matrix(q, mass)
        if status:
            self._raise(status, q, v, _EMPTY, None, "")
        return mass, bias

    def mass_matrix(self, q, out=None):
        """Joint-space mass matrix M(q) (nv, nv), symmetric positive definite (CRBA; of the
        open tree for a constrained robot, elastic coordinates included)."""
        if out is None:
            out = np.empty((self.nv, self.nv))
        try:
            status = self._free_calls["mass_matrix"](q, out)
        except TypeError:
            status = -1
        if status == 0:
            if "mass_matrix" in self._c_pending:
                self._promote_c_call("mass_matrix")
            return out
        return self._mass_matrix_general(q, out)

    @locked
    def _mass_matrix_general(self, q, out):
        q = A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        result = self._result(out, (self.nv, self.nv), q)
        status = self._free_calls["mass_matrix"](q, result)
        if status:
            status = self._tree.mass_matrix(q, result)
        if status:
            self._raise(status, q, _EMPTY, _EMPTY, result, "")
        if result is not out:
            out[:] = result
        return out

    def bias_forces(self, q, v, out=None):
        """b(q, v) (nv,): Coriolis, centrifugal and gravity forces of the tree, the force
        elements' and callbacks' loads, the elastic forces (M qdd + b = tau + tau_passive); for a
        constrained robot still the open tree's (docs/theory.md §2: k^c + k^t)."""
        generated = self._tree.generated_calls.get("bias_forces")
        if generated is not None and self._forces is None:
            if out is None:
                out = np.empty(self.nv)
            try:
                if generated(q, v, out) == 0:
                    return out
            except TypeError:
                pass
        elif self._plain and self.flexible is None:
            # b = ID(q, v, 0) minus the passive term ID adds: the dynamics' fast path (its C
            # entry) and one small kernel, ~1 us instead of ~13 us through the general path
            if out is None:
                out = np.empty(self.nv)
            try:   # status 0 also says that out overlaps none of the inputs (checked first)
                status = self._free_calls["inverse_dynamics"](q, v, self._zero_velocity, out)
            except TypeError:   # not C-contiguous float64 vectors: convert, then check
                status = -1
            if status == 0:
                if "inverse_dynamics" in self._c_pending:
                    self._promote_c_call("inverse_dynamics")
                if self.model.passive_forces:
                    _remove_passive_forces(self._tree.body_int, self._tree.body_float, v, out)
                return out
        return self._bias_forces_general(q, v, out)

    @locked
    def _bias_forces_general(self, q, v, out):
        q, v, _ = self._checked(q, v, _EMPTY, "")
        result = self._result(out, (self.nv,), q, v)
        self._tree_inverse_dynamics(q, v, np.zeros(self.nv), None, result)
        if self.model.passive_forces:
            result -= self.damping_forces(v)
        if out is not None and result is not out:
            out[:] = result
            result = out
        return result

    def gravity_forces(self, q, out=None):
        """g(q) (nv,): generalized forces that hold the robot still at q (for a constrained robot
        those of its actuated joints; for a flexible one K_ff q_f - Q_gravity on the elastic
        coordinates, zero at the static deflection)."""
        generated = self._tree.generated_calls.get("gravity_forces")
        if generated is not None and self._plain:
            if out is None:
                out = np.empty(self.nv)
            try:
                if generated(q, out) == 0:
                    return out
            except TypeError:
                pass
        return self.inverse_dynamics(q, np.zeros(self.nv), np.zeros(self.nv), out=out)

    def damping_forces(self, v):
        """(nv,) damping v + friction tanh(v / friction_velocity): what the drives must add to
        overcome the URDF joint damping and friction (the negative of the passive joint force)."""
        v = A.vector(v, self.nv, "v")
        return self.damping * v + self.friction * np.tanh(v / self.model.friction_velocity)

    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None, multipliers=None):
        """Wrench each URDF joint transmits (len(wrench_joint_names), 6), [fx fy fz tx ty tz].

        Row j: what the parent link exerts on the child link through joint j, in the child link
        frame about its origin. For a movable joint, S^T row = M qdd + b (the total joint force,
        drive plus passive); for a fixed joint, what a force/torque sensor there would read.
        Loop forces are included (for a loop-consistent (q, v, qdd)).

        f_ext: None, an array (len(link_names), 6) or a dict {link name: (6,)}: wrenches applied
        to links, each in its link's frame about the link origin.
        multipliers: robot.multipliers() of the forward_dynamics call that returned this qdd at
        this (q, v): the loop forces are then taken from it instead of being solved again.
        """
        generated = self._tree.generated_calls.get("joint_wrenches")
        if generated is not None and self._plain and f_ext is None:
            if out is None:
                out = np.empty((len(self.wrench_joint_names), 6))
            try:
                if generated(q, v, qdd, out) == 0:
                    return out
            except TypeError:
                pass
        return self._joint_wrenches_general(q, v, qdd, f_ext, out, multipliers)

    @locked
    def _joint_wrenches_general(self, q, v, qdd, f_ext, out, multipliers):
        q, v, qdd = self._checked(q, v, qdd, "qdd")
        requested = out
        out = self._result(out, (len(self.wrench_joint_names), 6), q, v, qdd)
        constraints = self._constraints
        lam = None
        if constraints.loops is not None:
            if multipliers is None:
                tau_tree = np.empty(self.nv)
                self._tree_inverse_dynamics(q, v, qdd, f_ext, tau_tree)
                lam = constraints.actuation(q, v, qdd, tau_tree)[1][:constraints.n_loop_rows]
            else:
                lam = constraints.multiplier_vector(multipliers)
                constraints.loops.state(q, v)   # the cut rows at this state (not another call's)
        self._apply_loads(q, v, f_ext)
        if self._forces is not None:
            recorded = self._forces.fixed_joint_link_loads()
            if recorded is not None:
                self._tree.record_link_loads(recorded)
        if lam is not None:
            constraints.loops.add_loads(q, lam)
        status = self._tree.joint_wrenches(q, v, qdd, out)
        if status:
            self._raise(status, q, v, qdd, out, "qdd")
        if requested is not None and requested is not out:
            requested[:] = out
            return requested
        return out

    @locked
    def closure_wrenches(self, q, v, tau, f_ext=None, multipliers=None):
        """(len(closure_names), 6): wrench each cut joint exerts on its child-side link, in the
        child-side cut frame about its origin [fx fy fz tx ty tz] (minimum-norm if redundant);
        empty for a robot without loops.

        multipliers: robot.multipliers() of a forward_dynamics call at this same (q, v, tau),
        to skip solving it again (a node publishing accelerations and wrenches per cycle)."""
        q, v, tau = self._checked(q, v, tau, "tau")
        constraints = self._constraints
        if constraints.loops is None:
            return np.zeros((0, 6))
        if multipliers is None:
            self.forward_dynamics(q, v, tau, f_ext=f_ext)
            lam = constraints.multipliers()
        else:
            lam = constraints.multiplier_vector(multipliers)
        constraints.loops.state(q, np.zeros(self.nv))   # the cut frames at this q
        return constraints.loops.cut_wrenches(q, lam)

    # ------------------------------------------------------------------ derivatives
    def inverse_dynamics_derivatives(self, q, v, qdd, f_ext=None, out=None):
        """(dtau_dq, dtau_dv, dtau_dqdd), each (nv, nv): partial derivatives of
        inverse_dynamics(q, v, qdd, f_ext) (Carpentier and Mansard, RSS 2018; analytic and
        recursive, as Pinocchio's computeRNEADerivatives). dtau_dqdd = M(q).

        Derivatives w.r.t. q are on the tangent space: column k is d tau / d eps of
        q (+) eps e_k = robot.integrate(q, eps e_k, 1), so free (v = [linear, angular] in the body
        frame) and spherical joints have nv columns, as Pinocchio's. Included: gravity, the URDF
        joint damping and smoothed friction (damping_forces), f_ext (see joint_wrenches: link
        wrenches in their link frames, carried by the links), and the force elements and
        add_force callbacks at t = self.time, whose part is differentiated by central
        differences on the tangent space (step eps^(1/3), ~1e-10 relative; docs/derivatives.md).
        Every kind of robot: rigid trees (fixed or floating base, codegen or not: analytic);
        closed loops and mimic couplings (robot/constrained_derivatives.py): inverse_dynamics
        returns tau = Act(q) ID_tree(q, v, qdd), Act the actuation map (least squares on
        null(G)), so dtau_dqdd = Act M, dtau_dv = Act dID/dv, dtau_dq = Act dID/dq + d(Act b)/dq
        (that last term by central differences, ~1e-10 relative, G's rank held at its value at
        q); inverse_dynamics accepts only a loop-consistent qdd (same ValueError here), and only
        the columns of dtau_dqdd along null(G) are intrinsic (the others are the formula's).
        Flexible links: the tree part by central differences of the tree's inverse dynamics
        (elastic coordinates included; q: step eps^(1/3), agrees with a converged central
        difference to ~1e-10 of the largest entry; v: exact up to round-off where the dynamics
        is quadratic in v, docs/derivatives.md), dtau_dqdd = M exactly.
        out: None, or three writable C-contiguous float64 (nv, nv) arrays to fill and return,
        sharing memory with nothing (rigid trees: no allocation; the other kinds allocate
        their dense intermediates). A plain rigid tree's call without f_ext is, from the second, one
        lock-free C-level kernel call (robot/fast_derivatives.py)."""
        fast = self._fast_derivatives
        if fast is not None and f_ext is None and self._plain:
            result = fast.inverse(q, v, qdd, out)
            if result is not None:
                return result
        with self._lock:   # inline rather than @locked: ~0.1 us of a ~3 us call
            derivatives = self.__dict__.get("_derivative_work")
            if derivatives is None:   # first call, or a constrained / flexible robot
                derivatives = self._derivatives("inverse_dynamics_derivatives")
                if derivatives is None:
                    return self._general_derivatives("inverse", q, v, qdd, "qdd", f_ext, out)
            d_q, d_v, d_qdd = derivatives.outputs(out, q, v, qdd)
            self._tree.set_loads(None if f_ext is None else self._link_wrench_array(f_ext))
            try:   # the kernel checks sizes, NaN/inf and quaternions itself
                status = derivatives.rnea(q, v, qdd, derivatives.tau, d_q, d_v, d_qdd)
            except TypeError:   # not C-contiguous float64 vectors: convert, then check
                q, v, qdd = self._checked(q, v, qdd, "qdd")
                status = derivatives.rnea(q, v, qdd, derivatives.tau, d_q, d_v, d_qdd)
            if status:
                self._raise(status, q, v, qdd, None, "qdd")
            if self._forces is not None:
                elements_q, elements_v = derivatives.element_derivatives(self._forces, self.time,
                                                                         q, v)
                d_q += elements_q
                d_v += elements_v
            return d_q, d_v, d_qdd

    def forward_dynamics_derivatives(self, q, v, tau, f_ext=None, out=None):
        """(dqdd_dq, dqdd_dv, dqdd_dtau), each (nv, nv): partial derivatives of
        forward_dynamics(q, v, tau, f_ext) (RSS 2018, as Pinocchio's computeABADerivatives):
        qdd = FD(q, v, tau), then dqdd_dx = -M^-1 dtau_dx of inverse_dynamics_derivatives at
        that qdd, and dqdd_dtau = M^-1 (M factorised along the tree, Featherstone's LTDL).
        Same conventions, loads, robot kinds and `out` as inverse_dynamics_derivatives (q on
        the tangent space; force elements by central differences; the C-level path of plain
        rigid trees).

        Closed loops and mimic couplings: the derivatives of what forward_dynamics returns with
        its default method (all default methods solve the same KKT system
        M qdd + h - tau = G^T lambda, G qdd + gamma + 2 alpha G v + beta^2 g = 0, Baumgarte
        gains included), as functions on the full tangent space (a perturbation of q may open
        the loops: a central difference of forward_dynamics gives the same). Differentiating
        the KKT system: [M -G^T; G 0] [dqdd; dlambda] = -[dID/dx - d(G^T lambda)/dx; d(G qdd +
        gamma~)/dx], the tree's dID/dx analytic (rigid) and the rows' terms by central
        differences at fixed qdd and lambda (step eps^(1/3), ~1e-10 relative), solved through
        the Schur complement G M^-1 G^T (pseudo-inverse: redundant rows allowed); dqdd_dtau =
        M^-1 - M^-1 G^T (G M^-1 G^T)^+ G M^-1, with G dqdd_dtau = 0; redundant rows that the
        state makes inconsistent (least squares) add the derivative of the projector onto
        range(G) (docs/derivatives.md: where the rank of G also jumps off the manifold, ~5e-6
        relative in those columns at G v != 0). Flexible links: the tree's
        dID/dx by central differences (see inverse_dynamics_derivatives), then the same solve
        (no rows: -M^-1 dID/dx, M^-1). Without `prescribed` joints (forward_dynamics' default).
        """
        fast = self._fast_derivatives
        if fast is not None and f_ext is None and self._plain:
            result = fast.forward(q, v, tau, out)
            if result is not None:
                return result
        with self._lock:
            derivatives = self.__dict__.get("_derivative_work")
            if derivatives is None:   # first call, or a constrained / flexible robot
                derivatives = self._derivatives("forward_dynamics_derivatives")
                if derivatives is None:
                    return self._general_derivatives("forward", q, v, tau, "tau", f_ext, out)
            if self._forces is not None:
                q, v, tau = self._checked(q, v, tau, "tau")
                qdd = self.forward_dynamics(q, v, tau, f_ext=f_ext)
                d_q, d_v, d_tau = self.inverse_dynamics_derivatives(q, v, qdd, f_ext, out)
                status = derivatives.forward_from_inverse(d_q, d_v, d_tau)
                if status:
                    self._raise(status, q, v, tau, None, "tau")
                return d_q, d_v, d_tau
            d_q, d_v, d_tau = derivatives.outputs(out, q, v, tau)
            self._tree.set_loads(None if f_ext is None else self._link_wrench_array(f_ext))
            try:   # the kernel checks sizes, NaN/inf and quaternions itself
                status = derivatives.aba(q, v, tau, derivatives.qdd, derivatives.tau, d_q, d_v,
                                         d_tau)
            except TypeError:   # not C-contiguous float64 vectors: convert, then check
                q, v, tau = self._checked(q, v, tau, "tau")
                status = derivatives.aba(q, v, tau, derivatives.qdd, derivatives.tau, d_q, d_v,
                                         d_tau)
            if status:
                self._raise(status, q, v, tau, None, "tau")
            return d_q, d_v, d_tau

    def _derivatives(self, method):
        """The derivative kernels' workspaces of a rigid tree, built at the first call; None for
        a robot with constraints or flexible links (_general_derivatives then runs). Raises
        ValueError naming `method` for a kind of robot the derivatives do not cover
        (derivatives.check_supported)."""
        from .derivatives import Derivatives, check_supported
        check_supported(self, method)
        if self.flexible is not None or not self._constraints.empty:
            return None
        derivatives = self._derivative_work = Derivatives(self._tree)
        from .fast_derivatives import fast_derivatives
        self._fast_derivatives = fast_derivatives(self._tree, derivatives.dof_int, self)
        return derivatives

    def _general_derivatives(self, which, q, v, x, x_name, f_ext, out):
        """forward_dynamics_derivatives / inverse_dynamics_derivatives ("forward" / "inverse")
        of a robot with closed loops, mimic couplings or flexible links (caller holds the lock;
        constrained_derivatives.py)."""
        from .constrained_derivatives import GeneralDerivatives
        from .derivatives import outputs
        general = self.__dict__.get("_general_derivative_work")
        if general is None:
            general = self._general_derivative_work = GeneralDerivatives(self)
        q, v, x = self._checked(q, v, x, x_name)
        if f_ext is not None:
            self._link_wrench_array(f_ext)   # its errors before any work
        results = outputs(out, self.nv, q, v, x)
        return getattr(general, which)(q, v, x, f_ext, results)

    _fast_derivatives = None   # fast_derivatives.FastDerivatives, built with _derivative_work

    # ------------------------------------------------------------------ loads
    def _apply_loads(self, q, v, f_ext):
        """Put the loads of one call at (q, v, self.time) into the tree's loaded workspace: the
        force elements', the callbacks' and f_ext. Returns the generalized forces of elements
        and callbacks (nv,) to add to tau, or None. Caller holds the lock; q, v validated."""
        user = None if f_ext is None else self._link_wrench_array(f_ext)
        if self._forces is None:
            self._tree.set_loads(user)
            return None
        link_wrench, body_wrench, joint_force = self._forces.evaluate(q, v, self.time, user)
        self._tree.set_loads(link_wrench, body_wrench)
        return joint_force

    def _link_wrench_array(self, f_ext):
        """f_ext (a dict {link: (6,)} or an array (n_links, 6)) as a validated (n_links, 6) array
        of link wrenches, each in its link's frame about the link origin."""
        n_links = len(self.link_names)
        if isinstance(f_ext, dict):
            wrench = np.zeros((n_links, 6))
            for link, w in f_ext.items():
                index = self._link(link)
                w = A.vector(w, 6, f"f_ext['{excerpt(str(link), 60)}']")
                wrench[index] = w
        else:
            try:
                wrench = A.batch(f_ext, 6, "f_ext", n_links)
            except ValueError:
                raise ValueError(f"f_ext must have shape ({n_links}, 6) or be a dict "
                                 f"{{link: wrench}}, got {excerpt(str(np.shape(f_ext)), 40)}") \
                    from None
        if not np.all(np.isfinite(wrench)):
            raise ValueError("f_ext contains NaN or inf")
        return wrench

    # ------------------------------------------------------------------ batches
    def forward_dynamics_batch(self, q, v, tau, out=None):
        """qdd (N, nv) for N states q (N, nq), v (N, nv), tau (N, nv), on `batch_threads` threads
        (default: the number of CPUs). External wrenches are not applied in batches; force
        elements, callbacks and constraints are (one state at a time, on the calling thread)."""
        return self._batch("forward_dynamics", self.forward_dynamics, q, v, tau, "tau", out)

    def inverse_dynamics_batch(self, q, v, qdd, out=None):
        """tau (N, nv) for N states q (N, nq), v (N, nv), qdd (N, nv), on `batch_threads` threads."""
        return self._batch("inverse_dynamics", self.inverse_dynamics, q, v, qdd, "qdd", out)

    @locked
    def _batch(self, name, method, q, v, x, x_name, out):
        q = A.batch(q, self.nq, "q")
        v = A.batch(v, self.nv, "v", q.shape[0])
        x = A.batch(x, self.nv, x_name, q.shape[0])
        out = A.output(out, (q.shape[0], self.nv))
        if A.shares_memory(out, q, v, x):   # the rows are computed in turn: compute privately
            out[:] = self._batch(name, method, q, v, x, x_name, None)
            return out
        if not self._plain:   # parts: state by state through the method
            for i in range(q.shape[0]):
                try:
                    method(q[i], v[i], x[i], out=out[i])
                except ValueError as exc:
                    raise ValueError(f"state {i}: {exc}") from None
            return out
        status = np.zeros(q.shape[0], dtype=np.int64)
        n_threads = self._tree.batch_threads_for(q.shape[0], self.batch_threads)
        self._tree.batch(name, q, v, x, out, status, n_threads)
        bad = np.flatnonzero(status | ~np.isfinite(out).all(axis=1))
        if bad.size:
            s = int(bad[0])
            try:
                self._raise(int(status[s]), q[s], v[s], x[s], None, x_name)
            except ValueError as exc:
                raise ValueError(f"state {s}: {exc}") from None
        return out

    # ------------------------------------------------------------------ kinematics and energy
    @locked
    def link_pose(self, q, link):
        """(4, 4) homogeneous pose of `link`'s frame in the root (world) frame at q; deformed for
        links on or beyond a flexible link."""
        index = self._link(link)
        q = A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        return self._tree.link_pose(q, index)

    @locked
    def kinetic_energy(self, q, v):
        """1/2 v^T M(q) v (J), elastic velocities included."""
        q, v, _ = self._checked(q, v, _EMPTY, "")
        return self._tree.energies(q, v)[0]

    @locked
    def potential_energy(self, q):
        """Gravitational potential energy -sum m_i g . c_i (J), zero at the root frame origin,
        plus the elastic energy of flexible links (1/2 q_f^T K_ff q_f) and of the force
        elements' springs."""
        q = A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        _, gravity, elastic = self._tree.energies(q, _EMPTY)
        if self._forces is not None:
            return gravity + elastic + self._forces.potential_energy(q)
        return gravity + elastic

    @locked
    def elastic_energy(self, q):
        """1/2 sum q_f^T K_ff q_f (J) of the flexible links (0 for a rigid robot)."""
        q = A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        return self._tree.energies(q, _EMPTY)[2]

    @locked
    def highest_frequency(self, q=None):
        """Highest frequency (Hz) of the robot's elastic coordinates linearised at q (default
        neutral) with its joints free: sqrt of the largest eigenvalue of M^-1 K (K: the K_ff
        blocks), or with modal damping the largest |eigenvalue| / 2 pi of the damped system
        (docs/flexible.md, "Simulation step size"); 0 for a rigid robot. An explicit integrator
        needs 2 pi f dt below its stability limit (RK4: 2.8, semi-implicit Euler: 2); with free
        joints this is often several times the links' highest clamped frequency."""
        q = self.neutral() if q is None else A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        return self._tree.highest_frequency(q)

    # ------------------------------------------------------------------ frame kinematics
    # Conventions (docs/controllers.md, "Frame kinematics"): spatial vectors [linear; angular];
    # frame "world" (root axes, about the root origin: Pinocchio WORLD), "local" (link axes,
    # about the link origin: LOCAL), "local_world_aligned" (root axes, about the link origin:
    # LOCAL_WORLD_ALIGNED, the default). `link`: any of link_names, fixed-joint links included.
    # Rigid trees (fixed or floating base; codegen robots run the same generic kernels);
    # constrained robots give the open tree's quantities in tree coordinates; flexible robots
    # theirs with the elastic columns (frames.for_tree -> robot/flexible_frame_kinematics.py). One kernel call on the robot's own frame workspace per
    # call (atomic under the GIL, like the lock-free dynamics); odd inputs take _frame_general.
    # The q-only methods get a C-level entry (KernelCall) at their second fast call, as the
    # dynamics (_promote_frame_call); each (link method, link, frame) gets a KernelCall at its
    # second call with out=, and the link method itself becomes, on the instance, a LinkCall that
    # finds that KernelCall in C (_promote_link_call, fastcall.add_link_call): ~0.1 us less per
    # call than through the Python method below, which remains the fallback of every other form.
    _frame_kinematics = None

    def _frames(self, method):
        """The robot's FrameKinematics (robot/frames.py), built at the first call."""
        kinematics = self._frame_kinematics
        if kinematics is None:
            from . import frames
            with self._lock:
                if self._frame_kinematics is None:
                    self._frame_kinematics = frames.for_tree(self._tree, method)
                kinematics = self._frame_kinematics
        return kinematics

    @locked
    def _frame_general(self, call, shape, q, v=None, qdd=None, out=None):
        """call(q, v, qdd, out) -> status on converted and checked arguments (ValueError naming
        the one at fault); out validated, and computed privately when it overlaps an input."""
        q = A.vector(q, self.nq, "q")
        v = _EMPTY if v is None else A.vector(v, self.nv, "v")
        qdd = _EMPTY if qdd is None else A.vector(qdd, self.nv, "qdd")
        self._check_state(q, v, qdd, "qdd")
        result = self._result(out, shape, q, v, qdd)
        status = call(q, v, qdd, result)
        if status:
            self._raise(status, q, v, qdd, result, "qdd")
        if out is not None and result is not out:
            out[:] = result
            return out
        return result

    def link_velocity(self, q, v, link, frame="local_world_aligned", out=None):
        """(6,) spatial velocity [linear; angular] of `link`'s frame in `frame`: J v with J =
        link_jacobian(q, link, frame) (Pinocchio getFrameVelocity; KDL ChainFkSolverVel).
        "local_world_aligned": velocity of the link origin and angular velocity, root axes."""
        kinematics = self._frame_kinematics or self._frames("link_velocity")
        if out is not None:
            try:
                call = kinematics.link_calls["link_velocity", link, frame]
            except (KeyError, TypeError):
                call = None
            if call is not None:
                return call(q, v, out=out)
        return self._link_velocity_numba(q, v, link, frame, out)

    def _link_velocity_numba(self, q, v, link, frame, out):
        kinematics = self._frame_kinematics
        try:
            index, code = kinematics.targets[link, frame]
        except (KeyError, TypeError):
            index, code = kinematics.target(link, frame)
        given = out is not None
        if out is None:
            out = np.empty(6)
        try:
            status = kinematics.velocity(q, v, index, code, out)
        except TypeError:
            status = -1
        if status:
            return self._frame_general(
                lambda q_, v_, _, o: kinematics.status_of(kinematics.velocity, q_, v_, index,
                                                          code, o), (6,), q, v, out=out)
        if given:
            self._promote_link_call(kinematics, "link_velocity", link, frame, index, code,
                                    self._link_velocity_numba)
        return out

    def link_acceleration(self, q, v, qdd, link, frame="local_world_aligned", out=None):
        """(6,) CLASSICAL acceleration of `link`'s frame in `frame` (gravity not included):
        [a_lin + w x v_lin; alpha] of the spatial acceleration and velocity there (Pinocchio
        getFrameClassicalAcceleration after forwardKinematics(q, v, qdd)). In
        "local_world_aligned" ("local"): the second time derivative of the link origin and the
        angular acceleration in root (link) axes; with qdd = 0 in "local_world_aligned" it is
        the drift d/dt(J) v of link_jacobian(q, link, "local_world_aligned"). In "world": that
        of the body point at the root origin (Pinocchio's convention)."""
        kinematics = self._frame_kinematics or self._frames("link_acceleration")
        if out is not None:
            try:
                call = kinematics.link_calls["link_acceleration", link, frame]
            except (KeyError, TypeError):
                call = None
            if call is not None:
                return call(q, v, qdd, out=out)
        return self._link_acceleration_numba(q, v, qdd, link, frame, out)

    def _link_acceleration_numba(self, q, v, qdd, link, frame, out):
        kinematics = self._frame_kinematics
        try:
            index, code = kinematics.targets[link, frame]
        except (KeyError, TypeError):
            index, code = kinematics.target(link, frame)
        given = out is not None
        if out is None:
            out = np.empty(6)
        try:
            status = kinematics.acceleration(q, v, qdd, index, code, out)
        except TypeError:
            status = -1
        if status:
            return self._frame_general(
                lambda q_, v_, a_, o: kinematics.status_of(kinematics.acceleration, q_, v_, a_,
                                                           index, code, o), (6,), q, v, qdd, out)
        if given:
            self._promote_link_call(kinematics, "link_acceleration", link, frame, index, code,
                                    self._link_acceleration_numba)
        return out

    def link_jacobian(self, q, link, frame="local_world_aligned", out=None):
        """(6, nv) Jacobian J of `link`'s frame: link_velocity(q, v, link, frame) = J v, rows
        [linear; angular] in `frame` (Pinocchio computeFrameJacobian; KDL ChainJntToJacSolver,
        whose Jacobian is "local_world_aligned"). Columns of joints not above the link are
        zero; a free joint's six columns act on its body-frame velocity. O(depth of the link).
        Flexible robots: (6, nv) with the elastic columns; a link welded to a flexible link is at
        its deformed attachment, as link_pose (docs/controllers.md, "Kinds of robot")."""
        kinematics = self._frame_kinematics or self._frames("link_jacobian")
        if out is not None:
            try:
                call = kinematics.link_calls["link_jacobian", link, frame]
            except (KeyError, TypeError):
                call = None
            if call is not None:
                return call(q, out=out)
        return self._link_jacobian_numba(q, link, frame, out)

    def _link_jacobian_numba(self, q, link, frame, out):
        kinematics = self._frame_kinematics
        try:
            index, code = kinematics.targets[link, frame]
        except (KeyError, TypeError):
            index, code = kinematics.target(link, frame)
        given = out is not None
        if out is None:
            out = np.empty((6, self.nv))
        try:
            status = kinematics.jacobian(q, index, code, out)
        except TypeError:
            status = -1
        if status:
            return self._frame_general(
                lambda q_, _, __, o: kinematics.status_of(kinematics.jacobian, q_, index, code,
                                                          o), (6, self.nv), q, out=out)
        if given:
            self._promote_link_call(kinematics, "link_jacobian", link, frame, index, code,
                                    self._link_jacobian_numba)
        return out

    def _promote_link_call(self, kinematics, method, link, frame, index, code, numba_path):
        """At the second fast call with out= of (method, link, frame): a KernelCall of its C
        entry (FrameKinematics.link_call) that the method calls from then on; its fallback is
        numba_path with link and frame bound (which raises or converts)."""
        key = (method, link, frame)
        with self._lock:
            if key in kinematics.link_calls:
                return
            calls = kinematics.link_counts.get(key, 0)
            if calls < 1:
                kinematics.link_counts[key] = calls + 1
                return
            try:
                call = kinematics.link_call(method, index, code,
                                            functools.partial(numba_path, link=link, frame=frame))
            except Exception as exc:   # keep numba's dispatcher: slower per call, same results
                warnings.warn(f"{method}: no C-level entry ({type(exc).__name__}: {exc}); calls "
                              "go through numba's dispatcher", RuntimeWarning, stacklevel=4)
                call = None
            if call is not None:
                kinematics.link_calls[key] = call
                # and reach it at C level: robot.<method> becomes a LinkCall (fastcall)
                fastcall.add_link_call(self, method, link, frame, call, "local_world_aligned")
            else:
                kinematics.link_counts[key] = -10 ** 18   # never again

    def _frame_matrix(self, method, name, shape, q, out):
        """The call `name` (one of FrameKinematics' q-only kernels) into out (or a new array)."""
        kinematics = self._frame_kinematics or self._frames(method)
        call = getattr(kinematics, name)
        if out is None:
            out = np.empty(shape)
        try:
            status = call(q, out)
        except TypeError:
            status = -1
        if status:
            if name in _CENTRE_OF_MASS_CALLS and self.flexible is None and \
                    not self.model.body_float[1:, L.MASS].sum() > 0.0:   # (flexible links: mass)
                raise ValueError(f"{method}: the moving bodies of '{self.model.name}' have no "
                                 "mass (0 kg in all): their centre of mass is undefined")
            return self._frame_general(
                lambda q_, _, __, o: kinematics.status_of(call, q_, o), shape, q, out=out)
        if method in kinematics.c_pending:
            self._promote_frame_call(kinematics, method)
        return out

    def _promote_frame_call(self, kinematics, method):
        """Install the C-level entry of a q-only frame method at its second fast call (as the
        dynamics' _promote_c_call; a failure leaves numba's dispatcher, with a warning)."""
        with self._lock:
            calls = kinematics.c_pending.get(method)
            if calls is None:
                return
            if calls < 1:
                kinematics.c_pending[method] = calls + 1
                return
            del kinematics.c_pending[method]
            try:
                kinematics.install_c_entry(self, method)
            except Exception as exc:   # keep numba's dispatcher: slower per call, same results
                warnings.warn(f"{method}: no C-level entry ({type(exc).__name__}: {exc}); calls "
                              "go through numba's dispatcher", RuntimeWarning, stacklevel=4)

    def center_of_mass(self, q, out=None):
        """(3,) centre of mass of the moving bodies in the root frame (Pinocchio centerOfMass:
        links welded to a fixed base's root do not move and are not counted); deformed for
        flexible links (their first moments S_0 + S_f q_f)."""
        return self._frame_matrix("center_of_mass", "center_of_mass", (3,), q, out)

    def com_jacobian(self, q, out=None):
        """(3, nv) Jacobian of center_of_mass(q), root axes: c' = J_c v (Pinocchio
        jacobianCenterOfMass). O(n)."""
        return self._frame_matrix("com_jacobian", "com_jacobian", (3, self.nv), q, out)

    def centroidal_momentum_matrix(self, q, out=None):
        """(6, nv) centroidal momentum matrix A_G (Orin, Goswami & Lee 2013): h_G = A_G v is
        [linear momentum; angular momentum about the centre of mass], root axes (Pinocchio
        computeCentroidalMap / ccrba's Ag). O(n)."""
        return self._frame_matrix("centroidal_momentum_matrix", "centroidal", (6, self.nv), q,
                                  out)

    def mass_matrix_inverse(self, q, out=None):
        """(nv, nv) M(q)^-1 of the tree by the recursive O(n^2) algorithm of Carpentier &
        Mansard 2018 (Pinocchio computeMinverse), not by inverting M; symmetric, both triangles.
        Flexible robots: the dense Cholesky inverse of their M (O(nv^3)). ValueError naming the
        joint when its articulated inertia (or M's pivot) is singular."""
        return self._frame_matrix("mass_matrix_inverse", "minverse", (self.nv, self.nv), q, out)

    @locked
    def operational_space_inertia(self, q, link, frame="local_world_aligned", damping=None):
        """(6, 6) operational-space inertia Lambda = (J M^-1 J^T)^-1 of `link` (J =
        link_jacobian(q, link, frame), M^-1 = mass_matrix_inverse(q); Khatib 1987). ValueError
        naming the link when J M^-1 J^T is singular (the link cannot accelerate in some
        direction: fewer than six joints above it, or a kinematic singularity), unless
        `damping` > 0 is given: then (J M^-1 J^T + damping 1)^-1 (Tikhonov)."""
        kinematics = self._frame_kinematics or self._frames("operational_space_inertia")
        index, code = kinematics.target(link, frame)
        if damping is None:
            damping = 0.0
        else:
            damping = A.real_scalar(damping, "damping")
            if not (np.isfinite(damping) and damping >= 0.0):
                raise ValueError(f"damping must be a finite number >= 0, got {damping}")
        q = A.vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        out = np.empty((6, 6))
        status, solved = kinematics.operational_space_inertia(q, index, code, damping, out)
        if not solved:
            self._raise(status, q, _EMPTY, _EMPTY, None, "")
        if status:
            raise ValueError(f"operational_space_inertia: J M^-1 J^T of link '{link}' is "
                             "singular (the link cannot accelerate in some direction: fewer "
                             "than six independent joints above it, or a singular "
                             "configuration); pass damping > 0 for (J M^-1 J^T + damping I)^-1")
        return out

    # ------------------------------------------------------------------ constraints
    @property
    def baumgarte(self):
        """(alpha, beta): Baumgarte gains of forward_dynamics, finite and >= 0 (docs/theory.md §6)."""
        return self._constraints.baumgarte

    @baumgarte.setter
    def baumgarte(self, gains):
        self._constraints.baumgarte = gains

    @property
    def last_rank(self):
        """Rank of the loops' constraint system in the last forward dynamics (any thread)."""
        return int(self._constraints.info[1])

    @property
    def last_step(self):
        """Residuals (and energy) after the last step() of a constrained robot, else None."""
        return self._constraints.last_step

    def apply_mimic(self, q, v=None):
        """q (and v) with every mimicking joint set from its leader: q_m = r q_l + o, v_m = r v_l
        (copies; unchanged without mimic couplings)."""
        if self._mimic is None:
            q = np.array(q, dtype=float)
            return q if v is None else (q, np.array(v, dtype=float))
        return self._mimic.apply(q, v)

    def couple_in_place(self, q=None, v=None, qdd=None):
        """Set the mimicking joints' entries of the given arrays from their leaders, in place."""
        if self._mimic is not None:
            self._mimic.couple_in_place(q, v, qdd)

    @locked
    def loop_state(self, q, v=None):
        """(g (n,), G (n, nv), G v (n,)) at (q, v): position residuals, constraint Jacobian and
        velocity residual (zeros when v is None) of the loops, then of the mimic couplings."""
        q, v = self._state_or_rest(q, v)
        return self._constraints.state(q, v)

    def loop_jacobian(self, q):
        """G (n, nv): the constraints on the velocities, G v + gamma_bar = 0."""
        return self.loop_state(q)[1]

    def constraint_jacobian(self, q):
        """G (n, nv): the rows of the loops' cut constraints, then of the mimic couplings (the
        matrix the loop formalism builds; empty (0, nv) for a tree)."""
        return self.loop_state(q)[1]

    def closure_residual(self, q, v=None):
        """(max |g|, max |G v|): position and velocity residuals of the constraints."""
        g, _, gv = self.loop_state(q, v)
        return float(np.abs(g).max(initial=0.0)), float(np.abs(gv).max(initial=0.0))

    @locked
    def _acceleration_bias(self, q, v):
        """gamma (n,) with G qdd + gamma = 0 (without the Baumgarte terms)."""
        q, v = self._state_or_rest(q, v)
        return self._constraints.bias(q, v)

    @locked
    def partition(self, q, refresh=False):
        """(independent, dependent) v indices of the coordinate partition (docs/theory.md §4)."""
        q = self._state_or_rest(q, None)[0]
        return self._constraints.partition(q, refresh)

    @locked
    def assemble(self, q, independent=None, max_iterations=50, elastic=False):
        """q with the dependent coordinates moved so that every loop closes (Newton with the
        independent joints held: default the closures file's `independent`, else a partition
        chosen at q; elastic coordinates held unless `elastic`). See Constraints.assemble.
        Raises ValueError naming the held coordinates and the worst closure when the
        configuration is out of the mechanism's reach. The closures file's `independent`
        joints are held or refused, never moved: a rocker angle out of the four-bar's reach
        returned a closed configuration with the rocker elsewhere (an outside audit); the
        projection after a step (Constraints.project_state) still falls back on any partition."""
        q = self._state_or_rest(q, None)[0]
        if independent is None and self._constraints.independent_names:
            independent = self._constraints.independent_names
        return self._constraints.assemble(q, independent, max_iterations, elastic)

    @locked
    def project_velocity(self, q, v):
        """v with its dependent components solved from G v = 0 (independent ones kept)."""
        q, v = self._state_or_rest(q, v)
        return self._constraints.project_velocity(q, v)

    @locked
    def project_acceleration(self, q, v, qdd):
        """qdd with its dependent components solved from G qdd + gamma = 0 (independent ones
        kept): the loop-consistent acceleration closest to a commanded one, e.g. for
        computed-torque control of a parallel robot."""
        q, v, qdd = self._checked(q, v, qdd, "qdd")
        return self._constraints.project_acceleration(q, v, qdd)

    @locked
    def project_state(self, q, v, max_iterations=20, fixed=None):
        """(q, v) moved back onto the constraint manifold (Constraints.project_state)."""
        q, v = self._state_or_rest(q, v)
        return self._constraints.project_state(q, v, max_iterations, fixed)

    @locked
    def analyze(self, q, samples=5, rng=0):
        """LoopAnalysis at q: DOF by Grübler-Kutzbach and by the rank of G, redundant
        constraints, singular configuration, static determinacy (docs/theory.md §4)."""
        q = self._state_or_rest(q, None)[0]
        return self._constraints.analyze(q, samples, rng)

    @locked
    def multipliers(self):
        """(b,) loop multipliers lambda_s of this thread's last forward_dynamics call."""
        return self._constraints.multipliers()

    def constraint_basis(self, q):
        """N (nv, m): orthonormal basis of the admissible velocities (G N = 0; identity for a
        robot without constraints): the last columns of the pivoted Householder QR of G^T
        (kernels/rollout_tangent.py: one algorithm for robot.step's implicit Euler, which
        differentiates along these columns, and the compiled rollout's, so that both take the
        same directions; an SVD's basis is LAPACK's choice)."""
        if self._constraints.empty:
            return np.eye(self.nv)
        from ..kernels.rollout_tangent import null_space_basis
        return null_space_basis(self.loop_state(q)[1])

    # ------------------------------------------------------------------ force elements
    @property
    def force_element_names(self):
        """Names of the force elements (forces: section), in file order."""
        return list(self._forces.names) if self._forces is not None else []

    @locked
    def add_force(self, fn):
        """Add a force callback fn(t, q, v) -> generalized forces (nv,) or {link: wrench (6,) in
        the link frame about its origin}. It acts in forward_dynamics (t = self.time), is
        subtracted by inverse_dynamics and loads joint_wrenches, like a force element, and is
        evaluated at every integrator stage (e.g. tyre forces)."""
        if not callable(fn):
            raise ValueError("a force must be a callable fn(t, q, v) -> (nv,) generalized forces "
                             f"or {{link: wrench}}, got {excerpt(fn, 80)}")
        if self._forces is None:
            from .forces import ForceElements
            self._forces = ForceElements(self._tree)
            self._update_paths()
            self.drop_c_calls()   # the C-level FD/ID entries do not evaluate callbacks
        self._forces.callbacks.append(fn)
        return fn

    @locked
    def force_element_values(self, q, v):
        """ForceElementValues at (q, v): names, tension/torque (`force`), length/deflection
        (`length`), their rate, and bushing wrenches and deflections (forces.py)."""
        q, v, _ = self._checked(q, v, _EMPTY, "")
        if self._forces is None:
            from .forces import ForceElements
            return ForceElements(self._tree).element_values(q, v)
        forces = self._forces
        return forces.element_values(q, v)

    # ------------------------------------------------------------------ simulation
    @locked
    def step(self, q, v, tau, dt, integrator=None, prescribed=None, project=True, **options):
        """One simulation step from (q, v) at t = self.time; returns (q, v) and advances
        self.time by dt (only when the step succeeds).

        tau: (nv,) held over the step or a callable tau(t). integrator: None (the default: rk4 in
        equal substeps of at most DEFAULT_MAX_STEP = 1 ms, and short enough for the highest
        elastic frequency of flexible links), "rk4" (one step of dt), "semi_implicit_euler",
        "implicit_euler" (stiff springs and dampers) or "symplectic_euler" (bounded energy
        error). prescribed: {joint: trajectory(t) -> (q, qd, qdd)} rheonomic joints. project:
        afterwards re-close the constraints and project v onto them (docs/theory.md §6).
        options: Simulator options (max_velocity, max_kinetic_energy). Raises
        SimulationDiverged naming the time, ValueError for bad arguments (dt: a finite positive
        number; at most MAX_DEFAULT_SUBSTEPS default substeps)."""
        from .integrators import step_robot
        q_next, v_next = step_robot(self, q, v, tau, dt, integrator, options, prescribed)
        constraints = self._constraints
        if not constraints.empty:
            q_next, v_next, position, velocity = self._closed_after_step(
                q_next, v_next, integrator, prescribed, project)
            constraints.last_step = StepReport(self, q_next, v_next, position, velocity)
        return q_next, v_next

    def close_loops_after_step(self, q, v, integrator=None, prescribed=None):
        """(q, v) re-closed as step() re-closes its result: when the closure residuals
        (closure_residual: position m or rad, velocity m/s or rad/s) pass PROJECTION_TOLERANCE
        (1e-10), the loops and couplings are closed again and v projected onto them (the
        Gauss-Newton of project_state stopped below 1e-12, or after a "semi_implicit_euler"
        step below 1e-10: constraints.py says why), holding the `prescribed` joints (names, or
        step()'s {joint: trajectory}); otherwise q, v unchanged. For simulators that integrate
        themselves (the Plant). q (nq,), v (nv,); new arrays when projected."""
        if self._constraints.empty:
            return q, v
        return self._closed_after_step(q, v, integrator, prescribed or None, True)[:2]

    def _closed_after_step(self, q_next, v_next, integrator, prescribed, project):
        """step()'s closing of its result: (q, v, position residual, velocity residual)."""
        constraints = self._constraints
        position, velocity = self.closure_residual(q_next, v_next)
        # project once the residuals pass PROJECTION_TOLERANCE (an RK4 step adds ~1e-13):
        # the loops stay closed to that tolerance at a fraction of the cost of projecting
        # every step
        if project and (position > PROJECTION_TOLERANCE or velocity > PROJECTION_TOLERANCE):
            fixed = constraints.dofs(list(prescribed)) if prescribed else None
            # after a semi-implicit Euler step (which opens the loops every step) closed to
            # PROJECTION_TOLERANCE, not ASSEMBLY_TOLERANCE: constraints.py says why
            closing = EULER_CLOSING_TOLERANCE if integrator == "semi_implicit_euler" \
                else ASSEMBLY_TOLERANCE
            q_next, v_next = constraints.project_state(q_next, v_next, fixed=fixed,
                                                       tolerance=closing)
            position, velocity = self.closure_residual(q_next, v_next)
        return q_next, v_next, position, velocity

    def rollout(self, q0, v0, tau, dt, integrator=None, substeps=1, drives=None, limits=False,
                max_speed=None, batch_threads=None, prescribed=None, t0=None,
                engine="auto"):
        """A whole trajectory in one call: the same numbers as repeated step() (robot/rollout.py,
        docs/rollouts.md).

        q0 (nq,), v0 (nv,), tau (T, nv) generalized forces (N m, N) held over each step of dt
        (s) -> Rollout (Q (T+1, nq), V (T+1, nv)), row 0 the initial state, a tuple with .status
        ("ok", "diverged", "error"), .steps, .message. Batch: q0 (N, nq), v0 (N, nv), tau
        (N, T, nv) -> RolloutBatch (Q (N, T+1, nq), V (N, T+1, nv)) with .status (N,) codes
        (0 ok, 1 diverged, 2 error), .steps (N,), .messages. integrator: as step() (None: rk4
        in substeps of at most default_max_step); substeps: integrator calls of dt / substeps per
        row. drives: {"joints", "kp", "kd", "position" (T, nd), "velocity", "model"} the Plant's
        drives in POSITION mode ("model": "ideal" or "pd", docs/rollouts.md); limits: the URDF position stops (and, with drives, the Plant's torque
        limits); max_speed: divergence bound on |v| (rad/s, m/s; None: the Plant's MAX_SPEED 1e3); batch_threads: threads of a
        batch (default self.batch_threads); prescribed: as step(); t0: start time (default
        self.time, which is left unchanged); engine: "auto" (compiled where the robot allows),
        "compiled" (ValueError saying why where it cannot) or "reference" (the loop of step()). A divergence returns the rows up to it and warns (RolloutDiverged); bad
        arguments raise ValueError naming the argument."""
        from .rollout import rollout
        return rollout(self, q0, v0, tau, dt, integrator, substeps, drives, limits, max_speed,
                       batch_threads, prescribed, t0, engine)

    def _prescribed_targets(self, trajectories, t):
        """{joint: trajectory(t)} -> ({joint: qdd}, [(iq, iv, q, qd)]) (prescribed.py)."""
        return P.trajectory_targets(self._prescribed, trajectories, t)

    # ------------------------------------------------------------------ description
    def summary(self):
        """Human-readable description of the model: sizes, mass, joints, bodies, parts."""
        m = self.model
        n_elastic = self.nv - m.nv
        sizes = (f"nq {self.nq}, nv {self.nv} (joints {m.nv} + elastic {n_elastic})"
                 if n_elastic else f"nq {m.nq}, nv {m.nv} (degrees of freedom)")
        lines = [
            f"robot '{m.name}' from {m.source}",
            f"  links {len(m.link_names)}, URDF joints {len(m.wrench_joint_names)}"
            f" ({len(m.wrench_joint_names) - len(m.joint_names)} fixed), bodies {m.n_bodies}",
            f"  {sizes}, total mass {self.total_mass:.4g} kg",
            f"  base: {'floating (root_joint)' if m.floating_base else 'fixed'}, gravity "
            f"{m.body_float[0, L.GRAVITY:L.GRAVITY + 3].tolist()} m/s^2",
            "  movable joints (order of v):",
        ]
        for name, kind, iq, iv in zip(m.joint_names, m.urdf_joint_types, m.idx_q, m.idx_v):
            extra = ""
            if m.lower[iv] > -np.inf or m.upper[iv] < np.inf:
                extra += f" limits [{m.lower[iv]:.4g}, {m.upper[iv]:.4g}]"
            if m.damping[iv] or m.friction[iv]:
                extra += f" damping {m.damping[iv]:.3g} friction {m.friction[iv]:.3g}"
            lines.append(f"    {name:<28} {kind:<10} q[{iq}] v[{iv}]{extra}")
        fixed = [n for n in m.wrench_joint_names if n not in set(m.joint_names)]
        if fixed:
            lines.append(f"  fixed joints (wrench sensors): {', '.join(fixed)}")
        for fb in (self.flexible.bodies if self.flexible else ()):
            freq = ", ".join(f"{f:.4g}" for f in fb.frequencies)
            lines.append(f"  flexible link {fb.link}: {fb.n_modes} modes q[{fb.iq}:{fb.iq + fb.n_modes}]"
                         f" v[{fb.iv}:{fb.iv + fb.n_modes}], mass {fb.mass:.4g} kg, clamped "
                         f"frequencies {freq} Hz")
        constraints = self._constraints
        if constraints.loops is not None:
            lines.append(f"  loop closures ({constraints.n_loop_rows} constraint rows) from "
                         f"{constraints.closure_set.source}:")
            for spec, rows in zip(constraints.loops.specs, constraints.loops.rows):
                lines.append(f"    {spec.name:<28} {spec.type:<11} {spec.parent} -> {spec.child} "
                             f"({rows.stop - rows.start} rows)")
            lines.append(f"  actuated joints: {', '.join(self.actuated_joints) or 'none'}")
        if self._mimic is not None:
            lines.append(f"  mimic joints (coupled): {', '.join(self.mimic_joints)}")
        if self._forces is not None and self._forces.names:
            lines.append(f"  force elements: {', '.join(self._forces.names)}")
        if self._tree.kind == "generated":
            lines.append(f"  kernels: generated for this robot ({self.codegen_path})"
                         + ("; closed-loop calls generic" if self.closure_names else ""))
            lines += [f"    {name:<24} {path}" for name, path in self.call_paths().items()]
        return "\n".join(lines)

    def __repr__(self):
        parts = [f"nq={self.nq}", f"nv={self.nv}", f"bodies={self.model.n_bodies}",
                 f"mass={self.total_mass:.3g} kg"]
        if self.closure_names:
            parts.append(f"loops={len(self.closure_names)}")
        if self.flexible_links:
            parts.append(f"flexible={self.flexible_links}")
        if self._tree.kind == "generated":
            parts.append("codegen")
        return f"<mbd_ros.Robot '{self.model.name}' {' '.join(parts)}>"

    # ------------------------------------------------------------------ identification
    _joint_torque_regressor = None   # identification.JointTorqueRegressor, built at first use

    @property
    def body_names(self):
        """Names of the moving bodies, in the order of the kernels (depth-first; parents first):
        each is named after its root link, the child link of its movable joint (a universal
        joint's massless cross is '<joint>/cross'); links welded to it by fixed joints are
        merged into it. The order of inertial_parameters() and of the regressor's columns."""
        return list(self.model.body_names[1:])

    def _rigid_parameters_only(self, method):
        """Raise ValueError for a flexible robot: its elastic bodies are not described by the
        ten rigid-body parameters (docs/identification.md)."""
        if self.flexible is not None:
            raise ValueError(f"{method}: not available for a robot with flexible links "
                             f"({', '.join(self.flexible_links)}): their inertia is not the ten "
                             "rigid-body parameters (docs/identification.md)")

    def inertial_parameters(self):
        """(10 * n_bodies,) the inertial parameters of the moving bodies (`body_names` order;
        links merged by fixed joints), per body [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz,
        I_yz, I_zz]: mass (kg), first moment (kg m, c the centre of mass) and rotational inertia
        about the body origin (kg m^2, I = I_c - m [c][c]), all in the body frame (the link
        frame of the body's root link) -- Pinocchio's Inertia.toDynamicParameters order.
        regressor(q, v, qdd) @ inertial_parameters() is the rigid inverse dynamics.
        Rigid robots (trees, closed loops, mimic, codegen); ValueError for flexible links."""
        self._rigid_parameters_only("inertial_parameters")
        from .identification import inertial_parameters
        return inertial_parameters(self.model)

    def regressor(self, q, v, qdd, out=None):
        """Joint-torque regressor Y (nv, 10 * n_bodies) at (q, v, qdd): Y @ inertial_parameters()
        = M(q) qdd + C(q, v) v + g(q), the rigid tree's inverse dynamics with gravity, linear in
        the parameters. Not included (not linear in them): URDF damping and friction, force
        elements and add_force callbacks, external wrenches; so Y p equals inverse_dynamics of a
        robot loaded with passive_forces=False and no force elements. Columns: 10 per body of
        `body_names` (inertial_parameters order); rows: v. q (nq,), v (nv,), qdd (nv,); free
        joints' v in the body frame, [linear; angular].

        Closed-loop and mimic robots: the regressor of the open tree in tree coordinates (all nv
        joints, loops cut; project it as the dynamics require, e.g. T^T Y for mimic couplings).
        Codegen robots: the generic kernel on the same model. Flexible robots: ValueError.
        Recursive (Atkeson et al. 1986; Pinocchio's computeJointTorqueRegressor), one numba
        kernel call (from the second fast call, regressor(q, v, qdd, out=out) is a C-level
        entry: mbd_ros.fastcall); out: a C-contiguous float64 (nv, 10 * n_bodies) array written
        without allocation (out sharing memory with q, v or qdd: computed privately, copied)."""
        regressor = self._joint_torque_regressor
        if regressor is not None:
            if out is None:
                out = np.empty((regressor.nv, regressor.n_columns))
                if regressor.c_call is not None:   # the C entry (it falls back to this method)
                    return regressor.c_call(q, v, qdd, out=out)
            try:
                status = regressor.call(q, v, qdd, out)
            except TypeError:
                status = -1
            if status == 0:
                if regressor.fast_calls < 2:   # the C entry at the second fast call
                    regressor.fast_calls += 1
                    if regressor.fast_calls == 2:
                        regressor.install_c_call(self)
                return out
        return self._regressor_general(q, v, qdd, out)

    @locked
    def _regressor_general(self, q, v, qdd, out):
        regressor = self._joint_torque_regressor
        if regressor is None:
            self._rigid_parameters_only("regressor")
            from .identification import JointTorqueRegressor
            regressor = self._joint_torque_regressor = JointTorqueRegressor(self._tree)
        q, v, qdd = self._checked(q, v, qdd, "qdd")
        result = self._result(out, (self.nv, regressor.n_columns), q, v, qdd)
        status = regressor.call(q, v, qdd, result)
        if status:
            self._raise(status, q, v, qdd, result, "qdd")
        if out is not None and result is not out:
            out[:] = result
            result = out
        return result

    def with_inertial_parameters(self, parameters, strict_inertia=True):
        """A new Robot, the same as this one (URDF, loops, mimic couplings, force elements and
        add_force callbacks, codegen, gravity, passive forces, Baumgarte gains) but with the
        moving bodies' inertial parameters `parameters` (10 * n_bodies,) in
        inertial_parameters() order. This robot is unchanged.

        Checked: a wrong size or NaN/inf is a ValueError naming `parameters`; a negative mass, a
        first moment without mass or a non-physical inertia (about the centre of mass: not
        positive semi-definite, or violating the triangle inequality I1 + I2 >= I3) is a
        ValueError naming the body, or a warning with strict_inertia=False (e.g. for a
        least-squares estimate before it is made physical). A merged body's welded links keep
        their URDF inertias (fixed-joint wrenches use them); its root link takes the rest.
        Rigid robots only: ValueError for flexible links. A codegen robot generates its kernels
        again for the new model."""
        self._rigid_parameters_only("with_inertial_parameters")
        from . import identification as I   # noqa: N812 -- short local alias
        p = I.checked_parameters(parameters, self.model, strict_inertia)
        model = I.model_with_parameters(self.model, p)
        tree = I.tree_like(self._tree, model)
        loops = I.loops_on(tree, self.closure_set) if self._constraints.loops is not None \
            else None
        mimic = I.mimic_on(self._mimic, model) if self._mimic is not None else None
        forces = self._forces
        robot = type(self)(model, tree, closure_set=self.closure_set, loops=loops, mimic=mimic,
                           forces=(forces.specs or None) if forces is not None else None,
                           force_source=forces.source if forces is not None else "")
        if forces is not None:
            for fn in forces.callbacks:
                robot.add_force(fn)
        if not self._constraints.empty:
            robot.baumgarte = self.baumgarte
        robot.batch_threads = self.batch_threads
        robot._check_regular()
        return robot

    # ------------------------------------------------------------------ test hooks
    @locked
    def _forward_dynamics_descriptor(self, q, v, tau, f_ext=None, out=None):
        """(qdd, joint wrenches of the movable joints (nb, 6), loop multipliers (b,)) of the
        descriptor formalism with the call's loads (descriptor.py): the independent formalism's
        intermediate results, which forward_dynamics(method="descriptor") does not return."""
        from .descriptor import descriptor_forward_dynamics
        q, v, tau = self._checked(q, v, tau, "tau")
        joint_force = self._apply_loads(q, v, f_ext)
        if joint_force is not None:
            tau = tau + joint_force
        qdd, wrenches, lam = descriptor_forward_dynamics(self, q, v, tau)
        if out is not None:
            out[:] = qdd
            qdd = out
        return qdd, wrenches, lam

    @locked
    def _cut_wrenches(self, lam, q=None):
        """The cut wrenches (n_cuts, 6) of multipliers lam (b,): at q, or with the cut rows of
        the last call (closure_wrenches without solving the dynamics)."""
        loops = self._constraints.loops
        lam = self._constraints.multiplier_vector(lam)
        if q is None:
            return loops.cut_wrenches(None, lam)
        q = self._state_or_rest(q, None)[0]
        loops.state(q, np.zeros(self.nv))
        return loops.cut_wrenches(q, lam)

    # ------------------------------------------------------------------ internals
    def _check_regular(self):
        """Warn (once, at load) if some joint moves no mass (singular articulated inertia) at a
        generic configuration: forward dynamics then raise ValueError naming it; inverse
        dynamics, mass matrix and kinematics still work."""
        q = self.random_configuration(np.random.default_rng(0))
        zero = np.zeros(self.nv)
        with self._lock:
            self._tree.set_loads(None)
            status = self._tree.forward_dynamics(q, zero, zero, self._scratch)
        if status >= L.STATUS_SINGULAR:
            joint = self._tree.singular_joint(status - L.STATUS_SINGULAR)
            if self._tree.kind == "flexible":   # the modes of the bodies below are undefined too
                raise ModelError(f"{self.model.source}: joint '{joint}' moves no mass or inertia "
                                 "(or a flexible link's modes move no mass): its acceleration is "
                                 "undefined")
            warnings.warn(f"{self.model.source}: joint '{joint}' moves no mass or inertia along "
                          "one of its axes (the links below it are massless): forward dynamics "
                          "will raise ValueError; inverse dynamics and kinematics work",
                          UserWarning, stacklevel=3)

    def _link(self, link):
        A.link_name(link, self.link_names)
        try:
            return self._tree.link_index[link]
        except (KeyError, TypeError):
            names = self.link_names
            raise ValueError(f"unknown link '{excerpt(str(link))}' (links: {', '.join(names[:8])}"
                             f"{', ...' if len(names) > 8 else ''})") from None

    def _checked(self, q, v, x, x_name):
        """q (nq,), v (nv,) and x (nv,; empty: not given) converted and checked (sizes, NaN/inf,
        unit quaternions); ValueError naming the argument."""
        q = A.vector(q, self.nq, "q")
        v = A.vector(v, self.nv, "v")
        if x is not _EMPTY:
            x = A.vector(x, self.nv, x_name)
        self._check_state(q, v, x, x_name)
        return q, v, x

    def _state_or_rest(self, q, v):
        """(q, v) checked; v None: zeros."""
        q = A.vector(q, self.nq, "q")
        v = np.zeros(self.nv) if v is None else A.vector(v, self.nv, "v")
        self._check_state(q, v, _EMPTY, "")
        return q, v

    def _result(self, out, shape, *inputs):
        """The array a general path computes into: out (validated), or a private one when out is
        None or overlaps an input (the kernels read their inputs after writing outputs)."""
        if out is None:
            return np.empty(shape)
        A.output(out, shape)
        return np.empty(shape) if A.shares_memory(out, *inputs) else out

    def _check_state(self, q, v, x, x_name):
        """Raise ValueError unless q (and v, x when not empty) have the right size, are finite
        and carry unit quaternions."""
        status = self._tree.check_state(q, v, x, v.shape[0] > 0, x.shape[0] > 0)
        if status:
            self._raise(status, q, v, x, None, x_name)

    def _raise(self, status, q, v, x, out, x_name):
        """Turn a kernel status code into a ValueError that names the argument at fault."""
        if status == L.STATUS_SHAPE_Q:
            raise ValueError(f"q must have shape ({self.nq},), got {np.shape(q)}")
        if status == L.STATUS_SHAPE_V:
            raise ValueError(f"v must have shape ({self.nv},), got {np.shape(v)}")
        if status == L.STATUS_SHAPE_INPUT:
            raise ValueError(f"{x_name} must have shape ({self.nv},), got {np.shape(x)}")
        if status == L.STATUS_SHAPE_OUT:
            raise ValueError(f"out has the wrong shape {np.shape(out)}")
        if status == L.STATUS_BAD_Q:
            raise ValueError("q contains NaN or inf")
        if status == L.STATUS_BAD_V:
            raise ValueError("v contains NaN or inf")
        if status == L.STATUS_BAD_INPUT:
            raise ValueError(f"{x_name} contains NaN or inf")
        if status == L.STATUS_BAD_QUATERNION:
            bad = [name for name, s in self._quaternion_slices
                   if abs(np.dot(q[s], q[s]) - 1.0) > 2 * L.QUATERNION_NORM_TOL]
            raise ValueError(f"q: the quaternion of joint(s) {', '.join(bad)} must have unit norm "
                             f"(tolerance {L.QUATERNION_NORM_TOL:g})")
        if status == STATUS_ALIASED:
            raise ValueError("out must not share memory with an input")
        if status in (L.STATUS_OK, STATUS_NOT_FINITE):
            raise ValueError("the result is not finite: an overflow inside the dynamics (absurd "
                             "velocities, forces or external wrenches?)")
        if status >= L.STATUS_SINGULAR:
            joint = self._tree.singular_joint(status - L.STATUS_SINGULAR)
            raise ValueError(f"joint '{joint}': the articulated inertia is singular (the joint "
                             "moves no mass or inertia in some direction)")
        raise ValueError(f"dynamics kernel failed with status {status}")
