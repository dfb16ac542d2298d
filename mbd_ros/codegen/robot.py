"""Robots whose dynamics calls run generated, robot-specific kernels.

``GeneratedRobot`` is a Robot with the same methods, signatures, validation and results (to
round-off); forward_dynamics, inverse_dynamics, mass_matrix, bias_forces, gravity_forces and
joint_wrenches call the generated kernels with four arguments at most (q, v, x, out). What is not
generated takes the generic path: external wrenches (f_ext), the batch forms, kinematics and
energies. A non-zero status of a generated kernel (bad input, singular inertia) re-runs the call on
the generic path, which raises the same ValueError as a generic Robot.

``GeneratedClosedLoopRobot`` generates only the tree quantities of a closed-loop robot (mass
matrix, bias forces); its loop-respecting forward/inverse dynamics stay generic.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from ..loops import ClosedLoopRobot
from ..robot import Robot
from ..robot import _output as _as_output_checked
from ..robot import _vector as _as_vector
from .cache import load_module
from ..kernels.entry import load_cached
from .fast_typing import memoized_call_types
from .generator import FUNCTIONS

_VECTOR = types.Array(types.float64, 1, "C")
_MATRIX = types.Array(types.float64, 2, "C")
_i8 = types.int64
SIGNATURES = {
    "forward_dynamics": _i8(_VECTOR, _VECTOR, _VECTOR, _VECTOR),
    "inverse_dynamics": _i8(_VECTOR, _VECTOR, _VECTOR, _VECTOR),
    "bias_forces": _i8(_VECTOR, _VECTOR, _VECTOR),
    "gravity_forces": _i8(_VECTOR, _VECTOR),
    "mass_matrix": _i8(_VECTOR, _MATRIX),
    "joint_wrenches": _i8(_VECTOR, _VECTOR, _VECTOR, _MATRIX),
}
assert set(SIGNATURES) == set(FUNCTIONS)


def compile_kernel(module, name):
    """numba dispatcher of generated function `name` (explicit signature, on-disk cache).

    As `njit(signature, cache=True)` (one compiled variant, then no more compilation), but a
    warm start loads it with kernels/entry.load_cached (without numba's target refresh, ~0.25 s
    of CPU in a process whose kernels are all cached). One dispatcher per module and name,
    shared by every robot of that model: a new one per load kept ~0.27 MB of compiled code per
    load (a node's configure / cleanup cycles grew without bound)."""
    shared = module.__dict__.setdefault("_mbd_ros_dispatchers", {})
    if name in shared:
        return shared[name]
    dispatcher = njit(cache=True, error_model="numpy")(getattr(module, name))
    if not load_cached(dispatcher, SIGNATURES[name]):
        with memoized_call_types():
            dispatcher.compile(SIGNATURES[name])
    dispatcher.disable_compile()
    shared[name] = dispatcher
    return dispatcher


class _Kernels:
    """The generated module of a model and its lazily compiled functions (compiled, or loaded
    from numba's cache, on first use; `compile_all` does all of them)."""

    def __init__(self, model):
        self.module, self.path, self.generated = load_module(model)
        self.compiled = {}

    def get(self, name):
        kernel = self.compiled.get(name)
        if kernel is None:
            kernel = self.compiled[name] = compile_kernel(self.module, name)
        return kernel

    def compile_all(self):
        for name in FUNCTIONS:
            self.get(name)


def _lazy(robot, name):
    """A stand-in for robot._gen_<name> that compiles the kernel on the first call and replaces
    itself with the numba dispatcher (no check on the hot path)."""
    def first_call(*args):
        kernel = robot._kernels.get(name)
        setattr(robot, "_gen_" + name, kernel)
        return kernel(*args)
    return first_call


def _attach(robot, names):
    robot._kernels = _Kernels(robot.model)
    robot._generated_names = tuple(names)
    for name in names:
        setattr(robot, "_gen_" + name, _lazy(robot, name))


class GeneratedRobot(Robot):
    """A Robot running generated kernels (see the module docstring). Same API as Robot."""

    GENERATED = FUNCTIONS

    def __init__(self, model):
        super().__init__(model)
        _attach(self, self.GENERATED)

    def compile_all(self):
        """Compile (or load from the cache) every generated kernel now, e.g. before a node goes
        active, instead of on each one's first call."""
        for name in self._generated_names:
            setattr(self, "_gen_" + name, self._kernels.get(name))

    def _c_call_names(self):
        """FD and ID get KernelCalls of their generated kernels (mbd_ros/fastcall)."""
        return [name for name in ("forward_dynamics", "inverse_dynamics", "mass_matrix")
                if getattr(type(self), name) is getattr(GeneratedRobot, name)]

    def _set_c_entry(self, name, entry):
        """The Python method's kernel: the C entry (same (q, v, x, out) -> status contract and
        TypeError as the numba dispatcher), or back to the dispatcher for None."""
        setattr(self, "_gen_" + name, entry if entry is not None else self._kernels.get(name))

    def _c_call_spec(self, name):
        """The generated module's C entry of `name`, its `<name>_jit` bound to the compiled
        kernel first (the entry calls it); no bound arrays: the model is in the code."""
        module = self._kernels.module
        setattr(module, name + "_jit", self._kernels.get(name))
        if name == "mass_matrix":
            return getattr(module, name + "_c"), (), (), (self.nq, self.nv), self.nv
        return getattr(module, name + "_c"), (), (), (self.nq, self.nv, self.nv, self.nv), 0

    @property
    def codegen_path(self):
        """Path of the generated module (its numba cache lives in __pycache__ beside it)."""
        return self._kernels.path

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, prescribed=None,
                         return_torques=False):
        """As Robot.forward_dynamics; generated kernel unless f_ext, force elements / add_force
        callbacks or prescribed joints are involved (then the generic path)."""
        if out is not None and f_ext is None and self._applied is None and prescribed is None:
            try:   # hot path: one kernel call; anything unusual goes to _state_call
                if not self._gen_forward_dynamics(q, v, tau, out):
                    if self._c_pending:
                        self._promote_c_call("forward_dynamics")
                    return out
            except TypeError:
                pass
        if prescribed is not None or (self._applied is not None and not self._applying):
            return Robot.forward_dynamics(self, q, v, tau, f_ext=f_ext, out=out,
                                          prescribed=prescribed, return_torques=return_torques)
        return self._state_call(Robot.forward_dynamics, self._gen_forward_dynamics, q, v, tau,
                                f_ext, out, "tau")

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """As Robot.inverse_dynamics; generated kernel unless f_ext is given."""
        if out is not None and f_ext is None and self._applied is None:
            try:
                if not self._gen_inverse_dynamics(q, v, qdd, out):
                    if self._c_pending:
                        self._promote_c_call("inverse_dynamics")
                    return out
            except TypeError:
                pass
        if self._applied is not None and not self._applying:   # force elements: generic path
            return Robot.inverse_dynamics(self, q, v, qdd, f_ext=f_ext, out=out)
        return self._state_call(Robot.inverse_dynamics, self._gen_inverse_dynamics, q, v, qdd,
                                f_ext, out, "qdd")

    def _state_call(self, generic, kernel, q, v, x, f_ext, out, x_name):
        """The general case of forward/inverse dynamics: f_ext (generic path), no `out`, inputs to
        convert, or a non-zero status (re-run on the generic path, which raises its ValueError)."""
        if f_ext is not None:   # external wrenches are per call (Robot's locked path)
            return generic(self, q, v, x, f_ext=f_ext, out=out)
        if out is None:
            out = np.empty(self.nv)
        try:
            status = kernel(q, v, x, out)
        except TypeError:
            q, v, x, out = self._state_arrays(q, v, x, out, x_name)
            status = kernel(q, v, x, out)
        if status:
            return generic(self, q, v, x, out=out)
        return out

    def mass_matrix(self, q, out=None):
        """As Robot.mass_matrix (CRBA), generated kernel."""
        if out is None:
            out = np.empty((self.nv, self.nv))
        try:
            status = self._gen_mass_matrix(q, out)
        except TypeError:
            q = _as_vector(q, self.nq, "q")
            out = _as_output(out, (self.nv, self.nv))
            status = self._gen_mass_matrix(q, out)
        if status:
            return Robot.mass_matrix(self, q, out=out)
        if self._c_pending:
            self._promote_c_call("mass_matrix")
        return out

    def bias_forces(self, q, v, out=None):
        """As Robot.bias_forces: b(q, v) (nv,), generated RNEA at qdd = 0 without passive forces."""
        if self._applied is not None:   # force elements / callbacks: the generic path
            return Robot.bias_forces(self, q, v, out=out)
        if out is None:
            out = np.empty(self.nv)
        try:
            status = self._gen_bias_forces(q, v, out)
        except TypeError:
            q, v, _, out = self._state_arrays(q, v, np.zeros(self.nv), out, "v")
            status = self._gen_bias_forces(q, v, out)
        if status:
            return Robot.bias_forces(self, q, v, out=out)
        return out

    def gravity_forces(self, q, out=None):
        """As Robot.gravity_forces: g(q) (nv,), generated RNEA at v = qdd = 0."""
        if self._applied is not None:   # force elements / callbacks: the generic path
            return Robot.gravity_forces(self, q, out=out)
        if out is None:
            out = np.empty(self.nv)
        try:
            status = self._gen_gravity_forces(q, out)
        except TypeError:
            q = _as_vector(q, self.nq, "q")
            out = _as_output(out, (self.nv,))
            status = self._gen_gravity_forces(q, out)
        if status:
            return Robot.gravity_forces(self, q, out=out)
        return out

    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None):
        """As Robot.joint_wrenches; generated kernel unless f_ext is given."""
        if f_ext is not None or self._applied is not None:   # loads: the generic path
            return Robot.joint_wrenches(self, q, v, qdd, f_ext=f_ext, out=out)
        shape = (len(self.wrench_joint_names), 6)
        if out is None:
            out = np.empty(shape)
        try:
            status = self._gen_joint_wrenches(q, v, qdd, out)
        except TypeError:
            q, v, qdd, _ = self._state_arrays(q, v, qdd, None, "qdd")
            out = _as_output(out, shape)
            status = self._gen_joint_wrenches(q, v, qdd, out)
        if status:
            return Robot.joint_wrenches(self, q, v, qdd, out=out)
        return out

    # ------------------------------------------------------------------ description
    def call_paths(self):
        """{method: 'generated' | 'generic' | description}: which kernels each call runs."""
        generated = set(self._generated_names)
        paths = {}
        for name in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces",
                     "gravity_forces", "joint_wrenches"):
            if name not in generated:
                paths[name] = "generic"
            elif self._applied is not None:
                paths[name] = "generic (force elements / add_force callbacks)"
            elif name in ("forward_dynamics", "inverse_dynamics", "joint_wrenches"):
                paths[name] = "generated (generic with f_ext)"
            else:
                paths[name] = "generated"
        for name in ("forward_dynamics_batch", "inverse_dynamics_batch", "link_pose",
                     "kinetic_energy", "potential_energy", "integrate", "step"):
            paths[name] = "generic"
        return paths

    def summary(self):
        lines = [super().summary(), f"  kernels: generated for this robot ({self._kernels.path})"]
        lines += [f"    {name:<24} {path}" for name, path in self.call_paths().items()]
        return "\n".join(lines)

    def __repr__(self):
        return super().__repr__()[:-1] + " codegen>"


class GeneratedClosedLoopRobot(ClosedLoopRobot):
    """A ClosedLoopRobot whose tree quantities (mass matrix, bias forces) run generated kernels;
    forward/inverse dynamics, joint and closure wrenches respect the loops on the generic path."""

    GENERATED = ("mass_matrix", "bias_forces")

    def __init__(self, model, closure_set):
        super().__init__(model, closure_set)
        _attach(self, self.GENERATED)

    mass_matrix = GeneratedRobot.mass_matrix
    bias_forces = GeneratedRobot.bias_forces
    compile_all = GeneratedRobot.compile_all
    codegen_path = GeneratedRobot.codegen_path
    call_paths = GeneratedRobot.call_paths

    def summary(self):
        lines = [super().summary(), f"  kernels: generated for this robot's tree "
                 f"({self._kernels.path}); closed-loop calls generic"]
        lines += [f"    {name:<24} {path}" for name, path in self.call_paths().items()]
        return "\n".join(lines)


def _as_output(out, shape):
    return _as_output_checked(out, shape)
