"""The lock-free C-level path of the analytic derivatives of a plain rigid tree
(robot.inverse_dynamics_derivatives / forward_dynamics_derivatives without f_ext).

Why: from Python, numba's dispatcher types each of the derivative kernels' 13-15 array arguments
(~1 µs per call), and the facade's locked path adds ~0.5 µs more: together as much as the
derivatives of a 6-dof arm themselves. Here the kernels get C entries
(fastcall/derivative_entries.py), called through KernelCall.blocks (which allocates one new
(3, nv, nv) block per call and returns its three matrices, in C): ~0.3 µs above the kernel.

With out (a tuple of three writable C-contiguous float64 (nv, nv) arrays overlapping neither
each other nor the inputs), KernelCall.blocks runs the kernel into its private block and copies
the three matrices into them: no allocation, and ~8 µs less than the general path's checks.

`FastDerivatives` owns its own workspace (work with FEXT = 0, dwork, dof_work, factor, scratch),
so that a call needs neither the Robot's lock nor its loaded workspace: each call is one
GIL-holding kernel call (atomic), as the trees' lock-free calls (robot.py's module docstring).
The entries are installed at the second call that could take this path (the first result is not
delayed by compiling them; a program calling once never compiles them). Any unfitting argument
or non-zero status returns None and the caller takes its general (locked) path, which converts
or raises the documented error: results and errors are those of the general path.

At the same time the two KernelCalls (made with blocks=True) replace the robot's methods on the
instance (`METHODS`), as the dynamics' KernelCalls do (mbd_ros/fastcall): robot.<method>(q, v, x)
and robot.<method>(q, v, x, out=out) then enter no Python frame (the method's Python call and
this class's cost ~0.13 us, as much as the allocation of the result); any other form (f_ext,
other keywords), unfitting argument or non-zero status calls the class's method, which takes
its paths as before. Robot.drop_c_calls removes them (force elements or callbacks attached).

Codegen robots (`GeneratedFastDerivatives`): the derivatives run the robot's generated kernels
(codegen/derivative_generator.py: rnea_derivatives, aba_derivatives) through the generated
module's C entries (no bound arrays: the model is in the code).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import fastcall
from ..kernels import derivatives as K
from ..model import layout as L

# tree kinds whose derivatives the rigid kernels compute on the tree's model arrays
RIGID_KINDS = ("rigid", "generated")
# the Robot methods replaced on the instance by the inverse's, then the forward's KernelCall
METHODS = ("inverse_dynamics_derivatives", "forward_dynamics_derivatives")


class FastDerivatives:
    """C entries of the derivative kernels on one rigid tree's model arrays and a private
    workspace (module docstring). inverse(q, v, qdd) / forward(q, v, tau) -> the three (nv, nv)
    matrices (views of one new (3, nv, nv) block), or None: take the general path."""

    INSTALL_AT = 2   # the call (counted from 1) that installs the entries

    def __init__(self, tree, dof_int, robot=None):
        self.robot = robot    # the Robot whose METHODS the KernelCalls replace (None: none)
        self.nq = tree.nq
        self.nv = nv = tree.nv
        rows = tree.body_int.shape[0]
        self.bound = (tree.body_int, tree.body_float, np.zeros((rows, L.WORK_WIDTH)),
                      np.zeros((rows, K.DWORK_WIDTH)), np.zeros((nv, K.DOF_WIDTH)),
                      np.ascontiguousarray(dof_int), np.zeros((nv, nv)), np.zeros((2, nv)))
        self.calls = 0        # calls that could have taken this path, until installed
        self.rnea_c = None    # KernelCall of the inverse dynamics' derivatives
        self.aba_c = None     # KernelCall of the forward dynamics' derivatives
        # (an extension built before KernelCall.blocks existed, or took out: the general path)
        self.failed = (nv == 0 or not fastcall.AVAILABLE
                       or not hasattr(fastcall.KernelCall, "blocks"))

    @staticmethod
    def entries():
        """(rnea entry, aba entry): module-level functions of C_SIGNATURE."""
        from ..fastcall.derivative_entries import aba_derivatives_c, rnea_derivatives_c
        return rnea_derivatives_c, aba_derivatives_c

    def entry_specs(self):
        """[(entry, bound arrays, dims)] of the inverse, then the forward derivatives."""
        dims = fastcall.dims_of(*self.bound) + (self.nq, self.nv)
        return [(entry, self.bound, dims) for entry in self.entries()]

    def _ready(self):
        """True when the entries are installed; installs them at the INSTALL_AT-th call."""
        if self.rnea_c is not None:
            return True
        if self.failed:
            return False
        self.calls += 1
        if self.calls < self.INSTALL_AT:
            return False
        return self.install()

    def install(self):
        """Build the two KernelCalls now (compile the C entries, or load them from numba's
        cache). Returns True, or False (with a RuntimeWarning) when they cannot be built: the
        general path then serves every call."""
        if self.rnea_c is not None:
            return True
        if self.failed:
            return False
        robot = self.robot
        try:
            lengths = (self.nq, self.nv, self.nv, 3 * self.nv)
            if robot is None:
                fallbacks = (_no_fallback, _no_fallback)
            else:   # the class's methods bound to the robot, as fastcall.install's
                fallbacks = tuple(getattr(type(robot), name).__get__(robot) for name in METHODS)
            specs = [(fastcall.c_entry(entry).address, bound, dims, lengths, fallback, self.nv)
                     for (entry, bound, dims), fallback in zip(self.entry_specs(), fallbacks)]
            try:
                calls = [fastcall.KernelCall(*spec, blocks=True) for spec in specs]
                replace = robot is not None
            except TypeError:   # an extension built before blocks=: .blocks from here only
                calls = [fastcall.KernelCall(*spec) for spec in specs]
                replace = False
        except Exception as exc:   # noqa: BLE001 -- the locked path: slower, same results
            self.failed = True
            warnings.warn(f"derivatives: no C-level entry ({type(exc).__name__}: {exc}); calls "
                          "go through numba's dispatcher", RuntimeWarning, stacklevel=4)
            return False
        self.rnea_c, self.aba_c = calls
        if replace:
            # under the robot's lock, and only while it is still plain: this runs on the
            # lock-free path, after the caller's `_plain` test; an add_force in another thread
            # meanwhile (locked: it sets the forces, then drop_c_calls) must not be followed by
            # installing KernelCalls that do not evaluate its callback
            with robot._lock:
                if robot._plain:
                    for name, call in zip(METHODS, calls):
                        setattr(robot, name, call)
        return True

    def inverse(self, q, v, qdd, out=None):
        """(dtau_dq, dtau_dv, M) at (q, v, qdd) without loads, or None (general path). out: None
        (a new (3, nv, nv) block) or a tuple of three (nv, nv) arrays to fill."""
        call = self.rnea_c
        if call is None:
            if not self._ready():
                return None
            call = self.rnea_c
        if out is None:
            return call.blocks(q, v, qdd)
        return call.blocks(q, v, qdd, out)

    def forward(self, q, v, tau, out=None):
        """(dqdd_dq, dqdd_dv, M^-1) at (q, v, tau) without loads, or None (general path); out as
        inverse's."""
        call = self.aba_c
        if call is None:
            if not self._ready():
                return None
            call = self.aba_c
        if out is None:
            return call.blocks(q, v, tau)
        return call.blocks(q, v, tau, out)


def _no_fallback(*args, **kwargs):
    """Without a robot the KernelCalls are used through .blocks only; calling one directly is a
    mistake."""
    raise TypeError("derivatives' KernelCall: use .blocks(a, b, c)")


class GeneratedFastDerivatives(FastDerivatives):
    """A codegen robot's: the entries are its generated module's rnea_derivatives_c and
    aba_derivatives_c (codegen/derivative_generator.py, bound to the compiled kernels: no bound
    arrays)."""

    def __init__(self, tree, dof_int, robot=None):
        super().__init__(tree, dof_int, robot)
        self.kernels = tree.kernels

    def entry_specs(self):
        return [(self.kernels.c_entry(name), (), ()) for name in ("rnea_derivatives",
                                                                 "aba_derivatives")]


def fast_derivatives(tree, dof_int, robot=None):
    """A FastDerivatives for a rigid tree (generic or generated), else None. robot: the Robot
    whose METHODS its KernelCalls replace once installed (None: only .inverse / .forward)."""
    if tree.kind == "generated" and tree.kernels.module.RNEA_DERIVATIVES_GENERATED:
        return GeneratedFastDerivatives(tree, dof_int, robot)
    if tree.kind not in RIGID_KINDS:
        return None
    return FastDerivatives(tree, dof_int, robot)
