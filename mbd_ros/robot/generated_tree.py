"""GeneratedTree: a RigidTree whose unloaded calls run robot-specific generated kernels
(codegen/, docs/codegen.md).

forward_dynamics, inverse_dynamics and mass_matrix on the lock-free path, and bias_forces,
gravity_forces and joint_wrenches of a robot without loads, call generated kernels with four
arguments at most (q, v, x, out), compiled on their first call. Everything with loads (external
wrenches, force elements, loop forces), the batch forms, kinematics and energies run the generic
kernels inherited from RigidTree: same results to round-off. inverse_dynamics_derivatives of a
robot without loads runs the generated rnea_derivatives, forward_dynamics_derivatives
aba_derivatives (up to codegen/derivative_generator.MAX_DOFS = 12 dofs; robot/fast_derivatives.py).
A non-zero status of a generated kernel sends the call to the generic path, which raises the
same ValueError as a generic robot.
"""
from __future__ import annotations

from ..codegen.generator import FUNCTIONS
from ..codegen.kernels import GeneratedKernels
from .rigid_tree import RigidTree

FREE_CALLS = ("forward_dynamics", "inverse_dynamics", "mass_matrix")
LOAD_FREE_CALLS = ("bias_forces", "gravity_forces", "joint_wrenches")
DERIVATIVE_CALLS = ("rnea_derivatives", "aba_derivatives")   # robot.inverse_dynamics_derivatives' C-level path


class _Lazy:
    """Stand-in for a generated kernel in a call table: compiles it on the first call and puts
    the numba dispatcher in its place (no check on the later calls)."""

    def __init__(self, tree, table, name):
        self.tree, self.table, self.name = tree, table, name

    def __call__(self, *args):
        kernel = self.tree.kernels.get(self.name)
        self.table[self.name] = kernel
        return kernel(*args)


class GeneratedTree(RigidTree):
    """Generated kernels on the unloaded path, the generic ones elsewhere (module docstring)."""

    kind = "generated"

    def __init__(self, model):
        super().__init__(model)
        self.kernels = GeneratedKernels(model)
        for table, names in ((self.free_calls, FREE_CALLS),
                             (self.generated_calls, LOAD_FREE_CALLS)):
            for name in names:
                table[name] = _Lazy(self, table, name)

    @property
    def codegen_path(self):
        """Path of the generated module (its numba cache lives beside it)."""
        return self.kernels.path

    def compile_all(self):
        """Compile (or load from the cache) every generated kernel now (the derivatives' too:
        robot/fast_derivatives.GeneratedFastDerivatives calls it through its C entry)."""
        for table in (self.free_calls, self.generated_calls):
            for name in table:
                table[name] = self.kernels.get(name)
        if self.kernels.module.RNEA_DERIVATIVES_GENERATED:
            for name in DERIVATIVE_CALLS:
                self.kernels.get(name)
        assert set(self.free_calls) | set(self.generated_calls) | set(DERIVATIVE_CALLS) == \
            set(FUNCTIONS)

    def c_entry(self, name):
        """The generated module's C entry of `name` (no bound arrays: the model is in the code)."""
        lengths = (self.nq, self.nv) if name == "mass_matrix" else (self.nq, self.nv, self.nv,
                                                                    self.nv)
        return (self.kernels.c_entry(name), (), (), lengths,
                self.nv if name == "mass_matrix" else 0)
