"""The compiled kernels of one model's generated module (generator.py writes it, cache.py stores
it): each generated function compiled with numba (explicit signature, on-disk cache) on its first
use. robot/generated_tree.py runs them behind the Robot API.
"""
from __future__ import annotations

from numba import njit, types

from .cache import load_module
from ..kernels.entry import load_cached
from ..kernels.fast_typing import memoized_call_types
from . import derivative_generator
from .generator import FUNCTIONS

_VECTOR = types.Array(types.float64, 1, "C")
_MATRIX = types.Array(types.float64, 2, "C")
_BLOCK = types.Array(types.float64, 3, "C")
_i8 = types.int64
SIGNATURES = {
    "forward_dynamics": _i8(_VECTOR, _VECTOR, _VECTOR, _VECTOR),
    "inverse_dynamics": _i8(_VECTOR, _VECTOR, _VECTOR, _VECTOR),
    "bias_forces": _i8(_VECTOR, _VECTOR, _VECTOR),
    "gravity_forces": _i8(_VECTOR, _VECTOR),
    "mass_matrix": _i8(_VECTOR, _MATRIX),
    "joint_wrenches": _i8(_VECTOR, _VECTOR, _VECTOR, _MATRIX),
    "rnea_derivatives": _i8(_VECTOR, _VECTOR, _VECTOR, _BLOCK),
    "aba_derivatives": _i8(_VECTOR, _VECTOR, _VECTOR, _BLOCK),
}
# fastmath flags per generated function (the others: none, IEEE order as written)
FASTMATH = {"rnea_derivatives": set(derivative_generator.FASTMATH),
            "aba_derivatives": set(derivative_generator.FASTMATH)}
# generated functions that call others: their `<name>_jit` globals are bound first
CALLS = {}   # none now: aba_derivatives holds the whole recursion (derivative_generator.py)
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
    dispatcher = njit(cache=True, error_model="numpy", fastmath=FASTMATH.get(name, False))(
        getattr(module, name))
    if not load_cached(dispatcher, SIGNATURES[name]):
        with memoized_call_types():
            dispatcher.compile(SIGNATURES[name])
    dispatcher.disable_compile()
    shared[name] = dispatcher
    return dispatcher


class GeneratedKernels:
    """The generated module of a model and its lazily compiled functions (compiled, or loaded
    from numba's cache, on first use; `compile_all` does all of them)."""

    def __init__(self, model):
        self.module, self.path, self.generated = load_module(model)
        self.compiled = {}

    def get(self, name):
        kernel = self.compiled.get(name)
        if kernel is None:
            for callee in CALLS.get(name, ()):
                setattr(self.module, callee + "_jit", self.get(callee))
            kernel = self.compiled[name] = compile_kernel(self.module, name)
        return kernel

    def compile_all(self):
        for name in FUNCTIONS:
            self.get(name)

    def c_entry(self, name):
        """The generated module's C entry of `name` (forward_dynamics, inverse_dynamics,
        mass_matrix), its `<name>_jit` bound to the compiled kernel first (the entry calls it)."""
        setattr(self.module, name + "_jit", self.get(name))
        return getattr(self.module, name + "_c")
