"""The Robot facade: validation at the entry points, then one kernel call into the workspace.

On the hot path the wrapper does no Python-level checks: the kernels have explicit numba
signatures (wrong types raise TypeError, and only then are the inputs converted), and they check
sizes, NaN/inf and quaternion norms themselves, returning a status code that the wrapper turns
into a ValueError naming the argument. Kernels never raise.

Robot holds an immutable Model and its preallocated Data (the `work` array and a few buffers).

Threads: every public method may be called from several threads sharing one Robot.
forward_dynamics, inverse_dynamics (without f_ext) and mass_matrix are one kernel call on a
workspace only they use; numba kernels hold the GIL while they run, so such a call is atomic and
needs no lock (zero cost on the hot path; test/test_threads.py fails if a kernel ever releases
the GIL there). Every other method (f_ext, joint wrenches, poses, energies, batches, closed-loop
methods) runs under the robot's re-entrant lock, on the other workspace (except a closed-loop
robot's forward_dynamics(q, v, tau, out=out) through its C entry, atomic like the calls above,
on the lock-free workspace and a loop workspace of its own: mbd_ros/fastcall/closed_loop.py).
Per-call results are private; ClosedLoopRobot.multipliers() are those of the calling thread's
last forward dynamics (closure_wrenches / joint_wrenches with multipliers= recompute the cut
frames at their own q); last_rank and last_step are those of the last call from any thread.
Force elements and callbacks are added once per call, with a per-thread "already added" flag
(_applying) that nested calls read. FlexibleRobot follows the same rules (flexible/robot.py,
flexible/loops.py).
"""
from __future__ import annotations

import functools
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from . import fastcall as _fastcall
from . import layout as L
from .errors import ModelError, excerpt
from .kernels.checked import STATUS_ALIASED as _STATUS_ALIASED
from .kernels.checked import STATUS_NOT_FINITE as _STATUS_NOT_FINITE
from .kernels.checked import forward_dynamics as _forward_dynamics
from .kernels.checked import inverse_dynamics as _inverse_dynamics
from .kernels.batch import forward_dynamics_batch as _forward_dynamics_batch
from .kernels.batch import inverse_dynamics_batch as _inverse_dynamics_batch
from .kernels.configuration import integrate as _integrate
from .kernels.configuration import mechanical_energy as _mechanical_energy
from .kernels.crba import mass_matrix as _mass_matrix
from .kernels.kinematics import check_state as _check_state_kernel
from .kernels.kinematics import forward_kinematics as _forward_kinematics
from .kernels.wrenches import joint_wrenches as _joint_wrenches
from .kernels.wrenches import load_link_wrenches as _load_link_wrenches
from .finite import all_finite as _all_finite
from .model import Model

_FLOAT = np.dtype(np.float64)
_EMPTY = np.zeros(0)


@lru_cache(maxsize=None)
def _thread_pool(n_threads):
    """One shared pool per thread count for the batch forms (threads are reused across calls)."""
    return ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="mbd_ros_batch")


# numpy array kinds taken as numbers: float, signed and unsigned integers, and objects that
# convert to float; complex (numpy would drop the imaginary part), bool, strings (numpy would
# parse them), dates are refused
_REAL_KINDS = "fiuO"
_KIND_WORDS = {"c": "complex", "b": "boolean", "U": "string", "S": "bytes", "M": "datetime",
               "m": "timedelta", "V": "structured"}


def _real_array(x, name, what):
    """x as a new C-contiguous float64 array. ValueError naming `name` (`what`: what it must be)
    for complex, boolean, string or other non-numeric values and for ragged sequences."""
    try:
        array = x if isinstance(x, np.ndarray) else np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be {what}: {exc}") from None
    if array.dtype.kind not in _REAL_KINDS:
        word = _KIND_WORDS.get(array.dtype.kind, str(array.dtype))
        raise ValueError(f"{name} must be {what} (real numbers), got {word} values")
    try:
        return np.array(array, dtype=_FLOAT, order="C", copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be {what}: {exc}") from None


def _real_scalar(x, name):
    """x as a float: a real number (int, float, numpy scalar or 0-d array); ValueError naming
    `name` for bools, complex numbers, strings, None, sequences and arrays of one or more
    dimensions (float() would parse a string or take a one-element array)."""
    if isinstance(x, np.ndarray):
        ok = x.ndim == 0 and x.dtype.kind in "fiu"
    else:
        ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
    if ok:
        try:
            return float(x)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError(f"{name} must be a real number, got {excerpt(repr(x), 60)}")


def _vector(x, n, name):
    """x as a C-contiguous float64 (n,) array (no copy when it already is one)."""
    if type(x) is not np.ndarray or x.dtype != _FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable:
        x = _real_array(x, name, f"an array of {n} numbers")
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def _batch(x, n, name, n_states=None):
    if type(x) is not np.ndarray or x.dtype != _FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable:
        x = _real_array(x, name, f"an array of shape (N, {n})")
    if x.ndim != 2 or x.shape[1] != n or (n_states is not None and x.shape[0] != n_states):
        want = f"({n_states if n_states is not None else 'N'}, {n})"
        raise ValueError(f"{name} must have shape {want}, got {x.shape}")
    return x


def _output(out, shape, name="out", inputs=()):
    """A validated output array (a new one for None). `inputs`: arrays out must not share memory
    with (ValueError); the methods that take out= instead compute privately when it does
    (_shares), since the kernels read inputs after writing outputs."""
    if out is None:
        return np.empty(shape)
    if type(out) is not np.ndarray or out.dtype != _FLOAT or out.shape != shape \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{name} must be a writable C-contiguous float64 array of shape {shape}")
    for x in inputs:
        if x is out or (isinstance(x, np.ndarray) and np.may_share_memory(out, x)):
            raise ValueError(f"{name} must not share memory with an input")
    return out


def _shares(out, inputs):
    """True when the array out may share memory with one of `inputs` (arrays; other objects are
    ignored): the caller then computes into a private array and copies (out= may overlap any
    input, README "Threads and numeric inputs")."""
    if out is None:
        return False
    owners = out.base is None   # arrays that own their memory never overlap: skip
    for x in inputs:            # np.may_share_memory (~1 us each) when all of them do
        if x is out:
            return True
        if owners and isinstance(x, np.ndarray) and x.base is not None:
            owners = False
    if owners:
        return False
    for x in inputs:
        if isinstance(x, np.ndarray) and np.may_share_memory(out, x):
            return True
    return False


def _aliased(out, a, b, c):
    """True when `out` is (or, for views, may overlap) one of the input arrays a, b, c."""
    if out is a or out is b or out is c:
        return True
    if out.base is None and getattr(a, "base", None) is None and getattr(b, "base", None) is None \
            and getattr(c, "base", None) is None:
        return False   # distinct base arrays never overlap
    return any(isinstance(x, np.ndarray) and np.may_share_memory(out, x) for x in (a, b, c))


def _locked(method):
    """Run the method under the robot's re-entrant lock (see the module docstring)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


class Robot:
    """Dynamics of one robot (see docs/design.md, "Library contract").

    Vectors: q (nq,), v (nv,), tau and qdd (nv,), ordered as `joint_names` (depth-first over the
    URDF tree). Free joints: q = [x y z qx qy qz qw], v = [linear, angular] in the body frame.
    """

    def __init__(self, model: Model):
        self.model = model
        self.nq = model.nq
        self.nv = model.nv
        self.joint_names = list(model.joint_names)
        self.joint_types = list(model.joint_types)
        self.idx_q = model.idx_q
        self.idx_v = model.idx_v
        self.link_names = list(model.link_names)
        self.wrench_joint_names = list(model.wrench_joint_names)
        # child link of each row of joint_wrenches: the frame its wrench is expressed in
        self.wrench_frames = [model.body_names[b] if b >= 0 else model.link_names[link]
                              for b, link in model.wrench_rows]
        self.effort_limits = model.effort
        self.velocity_limits = model.velocity_limit
        self.position_limits = (model.lower, model.upper)
        self.closure_names = []
        # elastic coordinates of flexible links (none for a rigid robot; FlexibleRobot sets them)
        self.elastic_names = []
        self.elastic_q_indices = np.zeros(0, dtype=np.int64)
        self.elastic_v_indices = np.zeros(0, dtype=np.int64)
        self.total_mass = model.total_mass
        self.damping = model.damping
        self.friction = model.friction
        self._link_index = {name: i for i, name in enumerate(self.link_names)}
        # private writable copies of the model arrays for the kernels (see kernels/signatures.py)
        self._body_int = np.array(model.body_int)
        self._body_float = np.array(model.body_float)
        self._link_int = np.array(model.link_int)
        self._link_float = np.array(model.link_float)
        self._wrench_rows = np.array(model.wrench_rows)
        n_rows = model.body_int.shape[0]
        # Data: the workspace every kernel writes into, allocated once
        self._work = np.zeros((n_rows, L.WORK_WIDTH))        # locked methods (FEXT loads)
        self._fast_work = np.zeros((n_rows, L.WORK_WIDTH))   # lock-free FD / ID / M, FEXT = 0
        self._lock = threading.RLock()
        self._link_fext = np.zeros((len(self.link_names), 6))
        self._link_wrench = np.zeros((len(self.link_names), 6))
        self._tau_scratch = np.zeros(self.nv)
        self._energy = np.zeros(2)
        self._fext_dirty = False
        self._batch_works = None
        self.batch_threads = os.cpu_count() or 1
        self._quaternion_slices = [
            (name, slice(iq + (3 if t == "floating" else 0), iq + (7 if t == "floating" else 4)))
            for name, t, iq in zip(self.joint_names, self.joint_types, self.idx_q)
            if t in ("floating", "spherical")]
        # ---- force elements and user forces (mbd_ros/forces.py) ----
        self.time = 0.0          # clock of force callbacks fn(t, q, v); step() advances it
        self._applied = None     # AppliedForces, or None: no force elements or callbacks
        self._thread_flags = threading.local()   # per thread: _applying
        self._simulators = {}
        self.last_prescribed_torques = np.zeros(self.nv)   # mbd_ros/prescribed.py
        # ---- end force elements ----
        # ---- C-level entries of FD / ID (mbd_ros/fastcall): installed on first fast call ----
        # {method: fast calls so far} of the methods whose KernelCall is not installed yet
        self._c_pending = dict.fromkeys(self._c_call_names(), 0) if _fastcall.AVAILABLE else {}
        # KernelCall.entry once installed: the Python methods' fast path too (for callers that
        # hold the bound method from before)
        self._c_forward_dynamics = self._c_inverse_dynamics = self._c_mass_matrix = None

    @property
    def _applying(self):
        """True while this thread runs the dynamics with the force elements and callbacks
        already added (nested dynamics calls must not add them again). Per thread: another
        thread's call in that window must still add its own (mbd_ros/forces.py with_forces)."""
        return getattr(self._thread_flags, "applying", False)

    @_applying.setter
    def _applying(self, value):
        self._thread_flags.applying = value

    def _c_call_names(self):
        """Methods that get a KernelCall (mbd_ros/fastcall): the generic FD and ID, unless a
        subclass overrides them (closed loops, flexible links, mimic joints keep theirs)."""
        return [name for name in _fastcall.NAMES
                if getattr(type(self), name) is getattr(Robot, name)]

    def _c_call_spec(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns) of method `name`."""
        from .fastcall import generic
        bound = (self._body_int, self._body_float, self._fast_work)
        dims = _fastcall.dims_of(*bound) + (self.nq, self.nv)
        if name == "mass_matrix":
            return generic.mass_matrix_c, bound, dims, (self.nq, self.nv), self.nv
        function = {"forward_dynamics": generic.forward_dynamics_c,
                    "inverse_dynamics": generic.inverse_dynamics_c}[name]
        return function, bound, dims, (self.nq, self.nv, self.nv, self.nv), 0

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
        if self._c_pending.pop(name, None) is None:   # another thread is installing it
            return
        # the class may have changed since __init__ (mimic.attach swaps in a subclass whose
        # methods must not be shadowed), and force elements may have been attached
        if self._applied is not None or name not in self._c_call_names():
            return
        try:
            call = _fastcall.install(self, name, *self._c_call_spec(name))
        except Exception as exc:   # keep numba's dispatcher: slower per call, same results
            warnings.warn(f"{name}: no C-level entry ({type(exc).__name__}: {exc}); calls go "
                          "through numba's dispatcher", RuntimeWarning, stacklevel=3)
            return
        if call is not None:
            self._set_c_entry(name, call.entry)

    def _set_c_entry(self, name, entry):
        """Let the Python method `name` call `entry` (a KernelCall's entry, or None: numba)."""
        setattr(self, "_c_" + name, entry)

    def compile_c_calls(self):
        """Install the C-level entries of forward_dynamics, inverse_dynamics and mass_matrix now (compiling
        them, or loading them from numba's cache) instead of on their first calls; e.g. before a
        node goes active. Returns the names installed."""
        for name in sorted(self._c_pending):
            self._promote_c_call(name, now=True)
        return [name for name in _fastcall.NAMES if _fastcall.installed(self, name)]

    def drop_c_calls(self):
        """Remove the C-level entries (the Python methods apply again): called when force
        elements or add_force callbacks are attached, which the C entries do not evaluate."""
        self._c_pending = {}
        for name in _fastcall.NAMES:
            if _fastcall.installed(self, name):
                self._set_c_entry(name, None)
        _fastcall.uninstall(self)

    def _body_joint_name(self, body):
        """Name of the movable joint that moves `body` (a universal joint moves two bodies)."""
        iv = int(self.model.body_int[body, L.IDX_V])
        return self.joint_names[int(np.searchsorted(self.idx_v, iv, side="right")) - 1]

    # ------------------------------------------------------------------ configuration helpers
    def neutral(self):
        """(nq,) the zero configuration: zero angles/displacements, identity quaternions."""
        q = np.zeros(self.nq)
        for _, quaternion in self._quaternion_slices:
            q[quaternion.stop - 1] = 1.0
        return q

    def random_configuration(self, rng=None):
        """(nq,) a random valid q: within position limits (angles in [-pi, pi] and displacements
        in [-1, 1] where unlimited; helical: the angle), unit quaternions, free-joint positions
        in [-1, 1]^3."""
        rng = np.random.default_rng(rng)
        q = np.empty(self.nq)
        for t, iq, iv in zip(self.joint_types, self.idx_q, self.idx_v):
            if t in ("revolute", "prismatic", "helical"):
                span = 1.0 if t == "prismatic" else np.pi
                lo = max(self.model.lower[iv], -span)
                hi = min(self.model.upper[iv], span)
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
        """(nq,) q (+) v dt, the exact exponential map on every joint (as pinocchio.integrate)."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        dt = _real_scalar(dt, "dt")
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        self._check_state(q, v, _EMPTY, "")
        out = _output(out, (self.nq,))
        if _shares(out, (q, v)):   # q and v are read while out is written: compute privately
            out[:] = self.integrate(q, v, dt)
            return out
        _integrate(self._body_int, q, v, dt, out)
        if not _all_finite(out):
            raise ValueError("integrate: the result is not finite (v * dt overflows)")
        return out

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None, prescribed=None,
                         return_torques=False):
        """Joint accelerations qdd (nv,) for drive forces tau (nv,) at state (q, v).

        Includes gravity, the URDF joint damping and smoothed friction (if loaded with
        passive_forces) and f_ext (see `joint_wrenches`). Recursive O(n) (docs/theory.md §2).
        Raises ValueError for bad inputs and when the result is not finite (e.g. overflow for
        absurd velocities). out may overlap q, v or tau (the result is then computed privately).
        Force elements and add_force callbacks (at t = self.time) are added to tau and f_ext.
        prescribed: {joint: qdd} joints with given accelerations (rheonomic, mbd_ros/prescribed.py):
        the drive forces they need are in self.last_prescribed_torques (nv,), and returned as
        (qdd, torques) with return_torques=True.
        """
        if prescribed is not None:   # ---- prescribed motion ----
            from .prescribed import dispatch
            return dispatch(self, q, v, tau, f_ext, out, prescribed, return_torques)
        if self._applied is not None and not self._applying:   # force elements: load FEXT
            with self._lock:
                tau = self._applied.load(q, v, tau, f_ext, self.time)
                return self._dynamics(_forward_dynamics, self._work, q, v, tau, out, "tau")
        if f_ext is not None:
            with self._lock:
                self._set_external_wrenches(f_ext)
                return self._dynamics(_forward_dynamics, self._work, q, v, tau, out, "tau")
        # lock-free: one GIL-holding kernel call on a workspace with no external loads
        if out is None:
            out = np.empty(self.nv)
        try:  # fast path: numba accepts only C-contiguous float64 vectors (explicit signature)
            if self._c_forward_dynamics is not None:   # the same kernel through its C entry
                status = self._c_forward_dynamics(q, v, tau, out)
            else:
                status = _forward_dynamics(self._body_int, self._body_float, self._fast_work,
                                           q, v, tau, out)
        except TypeError:
            return self._dynamics(_forward_dynamics, self._fast_work, q, v, tau, out, "tau")
        if status:
            if status == _STATUS_ALIASED:
                return self._dynamics(_forward_dynamics, self._fast_work, q, v, tau, out, "tau")
            self._raise(status, q, v, tau, out, "tau")
        if "forward_dynamics" in self._c_pending:
            self._promote_c_call("forward_dynamics")
        return out

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """Drive forces tau (nv,) that produce qdd (nv,) at (q, v): M qdd + b - tau_passive (RNEA),
        minus the force elements' and add_force callbacks' generalized forces.
        Raises ValueError for bad inputs and non-finite results; out as in forward_dynamics."""
        if self._applied is not None and not self._applying:   # force elements
            from .forces import inverse_dynamics_with_forces
            with self._lock:
                return inverse_dynamics_with_forces(self, q, v, qdd, f_ext, out)
        if f_ext is not None:
            with self._lock:
                self._set_external_wrenches(f_ext)
                return self._dynamics(_inverse_dynamics, self._work, q, v, qdd, out, "qdd")
        if out is None:
            out = np.empty(self.nv)
        try:
            if self._c_inverse_dynamics is not None:   # the same kernel through its C entry
                status = self._c_inverse_dynamics(q, v, qdd, out)
            else:
                status = _inverse_dynamics(self._body_int, self._body_float, self._fast_work,
                                           q, v, qdd, out)
        except TypeError:
            return self._dynamics(_inverse_dynamics, self._fast_work, q, v, qdd, out, "qdd")
        if status:
            if status == _STATUS_ALIASED:
                return self._dynamics(_inverse_dynamics, self._fast_work, q, v, qdd, out, "qdd")
            self._raise(status, q, v, qdd, out, "qdd")
        if "inverse_dynamics" in self._c_pending:
            self._promote_c_call("inverse_dynamics")
        return out

    def _dynamics(self, kernel, work, q, v, x, out, x_name):
        """Slow path of forward/inverse dynamics: convert and check the inputs, compute into a
        private array when out overlaps an input, then one kernel call on `work` (the locked
        workspace, or the lock-free one: the call is atomic under the GIL)."""
        q, v, x, _ = self._state_arrays(q, v, x, None, x_name)
        target = _output(out, (self.nv,))
        if out is not None and _aliased(out, q, v, x):
            target = np.empty(self.nv)
        status = kernel(self._body_int, self._body_float, work, q, v, x, target)
        if status:
            self._raise(status, q, v, x, target, x_name)
        if target is not out and out is not None:
            out[:] = target
            return out
        return target

    def _tree_inverse_dynamics(self, q, v, qdd, f_ext=None, out=None):
        """The tree's RNEA on the locked workspace (which keeps the kinematics, accelerations and
        forces for the caller to read); caller holds the lock. f_ext None clears earlier loads."""
        if f_ext is not None or self._fext_dirty:
            self._set_external_wrenches(f_ext)
        return self._dynamics(_inverse_dynamics, self._work, q, v, qdd, out, "qdd")

    def mass_matrix(self, q, out=None):
        """Joint-space mass matrix M(q) (nv, nv), symmetric positive definite (CRBA)."""
        if out is None:
            out = np.empty((self.nv, self.nv))
        try:
            if self._c_mass_matrix is not None:   # the same kernel through its C entry
                status = self._c_mass_matrix(q, out)
            else:
                status = _mass_matrix(self._body_int, self._body_float, self._fast_work, q, out)
        except TypeError:
            q = _vector(q, self.nq, "q")
            out = _output(out, (self.nv, self.nv))
            status = _mass_matrix(self._body_int, self._body_float, self._fast_work, q, out)
        if status:
            if status == _STATUS_ALIASED:   # out overlaps q: compute privately, then copy
                out[...] = Robot.mass_matrix(self, np.array(q, dtype=_FLOAT))
                return out
            self._raise(status, q, _EMPTY, _EMPTY, out, "")
        if "mass_matrix" in self._c_pending:
            self._promote_c_call("mass_matrix")
        return out

    def bias_forces(self, q, v, out=None):
        """b(q, v) (nv,): Coriolis, centrifugal and gravity forces of the tree (M qdd + b = tau
        + tau_passive), = the tree's inverse dynamics at qdd = 0 without the passive forces.
        For a closed-loop robot this is still the open tree's bias (docs/theory.md §2: k^c + k^t)."""
        passive = self.damping_forces(v) if self.model.passive_forces else 0.0   # before out
        out = Robot.inverse_dynamics(self, q, v, np.zeros(self.nv), out=out)   # is written
        out -= passive
        return out

    def gravity_forces(self, q, out=None):
        """g(q) (nv,): joint forces that hold the robot still against gravity."""
        return self.inverse_dynamics(q, np.zeros(self.nv), np.zeros(self.nv), out=out)

    def damping_forces(self, v):
        """(nv,) damping v + friction tanh(v / friction_velocity): what the drives must add to
        overcome the URDF joint damping and friction (the negative of the passive joint force)."""
        v = _vector(v, self.nv, "v")
        return self.damping * v + self.friction * np.tanh(v / self.model.friction_velocity)

    @_locked
    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None):
        """Wrench each URDF joint transmits (len(wrench_joint_names), 6), [fx fy fz tx ty tz].

        Row j: what the parent link exerts on the child link through joint j, in the child link
        frame about its origin. For a movable joint, S^T row = M qdd + b (the total joint force,
        drive plus passive); for a fixed joint, what a force/torque sensor there would read.

        f_ext: None, an array (len(link_names), 6) or a dict {link name: (6,)}: wrenches applied
        to links, each in its link's frame about the link origin.
        """
        q, v, qdd, _ = self._state_arrays(q, v, qdd, self._tau_scratch, "qdd")
        out = _output(out, (len(self.wrench_joint_names), 6))
        if self._applied is not None and not self._applying:   # force elements load the links
            _, f_ext = self._applied.combine(q, v, None, f_ext, self.time)
        self._set_external_wrenches(f_ext)
        return self._joint_wrenches_loaded(q, v, qdd, out)

    def _joint_wrenches_loaded(self, q, v, qdd, out):
        """Joint wrenches with the external loads already in the workspace (FEXT, link_fext):
        the tree's RNEA fills the workspace the wrench pass reads."""
        status = _inverse_dynamics(self._body_int, self._body_float, self._work, q, v, qdd,
                                   self._tau_scratch)
        if status:
            self._raise(status, q, v, qdd, out, "qdd")
        _joint_wrenches(self._body_int, self._link_int, self._link_float, self._work,
                        self._link_fext, self._wrench_rows, self._link_wrench, out)
        return out

    def closure_wrenches(self, q, v, tau):
        """Wrench of each declared loop closure (len(closure_names), 6); empty for a tree."""
        self._check_state(*self._state_arrays(q, v, tau, None, "tau")[:3], "tau")
        return np.zeros((0, 6))

    # ------------------------------------------------------------------ batches
    def _run_batch(self, kernel, q, v, x, x_name, out):
        """Split the N states into one contiguous chunk per worker thread; each chunk runs the
        GIL-free kernel on its own workspace."""
        q = _batch(q, self.nq, "q")
        v = _batch(v, self.nv, "v", q.shape[0])
        x = _batch(x, self.nv, x_name, q.shape[0])
        out = _output(out, (q.shape[0], self.nv))
        if _shares(out, (q, v, x)):   # the rows are computed in turn: compute privately
            out[:] = self._run_batch(kernel, q, v, x, x_name, None)
            return out
        status = np.zeros(q.shape[0], dtype=np.int64)
        n_threads = max(1, min(self.batch_threads, q.shape[0] // 64))
        if self._batch_works is None or len(self._batch_works) < n_threads:
            self._batch_works = [np.zeros_like(self._work) for _ in range(n_threads)]
        bounds = np.linspace(0, q.shape[0], n_threads + 1).astype(int)
        chunks = [(self._body_int, self._body_float, self._batch_works[t], q[a:b], v[a:b], x[a:b],
                   out[a:b], status[a:b]) for t, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        if n_threads == 1:
            kernel(*chunks[0])
        else:
            list(_thread_pool(n_threads).map(lambda args: kernel(*args), chunks))
        self._raise_batch(status, q, v, x, x_name, out)
        return out

    @_locked
    def forward_dynamics_batch(self, q, v, tau, out=None):
        """qdd (N, nv) for N states q (N, nq), v (N, nv), tau (N, nv), on `batch_threads` threads
        (default: the number of CPUs). External wrenches are not applied in batches; force
        elements and callbacks are (one state at a time, on the calling thread)."""
        if self._applied is not None:   # force elements: per state
            from .forces import batch_with_forces
            return batch_with_forces(self, self.forward_dynamics, q, v, tau, "tau", out)
        return self._run_batch(_forward_dynamics_batch, q, v, tau, "tau", out)

    @_locked
    def inverse_dynamics_batch(self, q, v, qdd, out=None):
        """tau (N, nv) for N states q (N, nq), v (N, nv), qdd (N, nv), on `batch_threads` threads."""
        if self._applied is not None:   # force elements: per state
            from .forces import batch_with_forces
            return batch_with_forces(self, self.inverse_dynamics, q, v, qdd, "qdd", out)
        return self._run_batch(_inverse_dynamics_batch, q, v, qdd, "qdd", out)

    # ------------------------------------------------------------------ kinematics and energy
    @_locked
    def link_pose(self, q, link):
        """(4, 4) homogeneous pose of `link`'s frame in the root (world) frame at q."""
        q = _vector(q, self.nq, "q")
        index = self._link(link)
        self._check_state(q, _EMPTY, _EMPTY, "")
        _forward_kinematics(self._body_int, self._body_float, self._work, q, _EMPTY)
        body = self.model.link_int[index, L.LINK_BODY]
        body_rot = self._work[body, L.WORLD_ROT:L.WORLD_ROT + 9].reshape(3, 3)
        body_pos = self._work[body, L.WORLD_POS:L.WORLD_POS + 3]
        link_rot = self.model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        link_pos = self.model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
        pose = np.eye(4)
        pose[:3, :3] = body_rot @ link_rot
        pose[:3, 3] = body_pos + body_rot @ link_pos
        return pose

    @_locked
    def kinetic_energy(self, q, v):
        """1/2 v^T M(q) v (J)."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        self._check_state(q, v, _EMPTY, "")
        _mechanical_energy(self._body_int, self._body_float, self._work, q, v, self._energy)
        return float(self._energy[0])

    @_locked
    def potential_energy(self, q):
        """Gravitational potential energy -sum m_i g . c_i (J), zero at the root frame origin, plus
        the elastic energy of the force elements' springs (mbd_ros/forces.py)."""
        q = _vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        _mechanical_energy(self._body_int, self._body_float, self._work, q, _EMPTY, self._energy)
        if self._applied is not None:
            return float(self._energy[1]) + self._applied.potential_energy(q)
        return float(self._energy[1])

    # ------------------------------------------------------------------ force elements, simulation
    # (mbd_ros/forces.py, mbd_ros/simulation.py)
    @property
    def force_element_names(self):
        """Names of the force elements (forces: section), in file order."""
        return list(self._applied.names) if self._applied is not None else []

    @_locked
    def add_force(self, fn):
        """Add a force callback fn(t, q, v) -> generalized forces (nv,) or {link: wrench (6,) in
        the link frame about its origin}. It acts in forward_dynamics (t = self.time), is
        subtracted by inverse_dynamics and loads joint_wrenches, like a force element, and is
        evaluated at every integrator stage (e.g. tyre forces)."""
        from .forces import add_force
        return add_force(self, fn)

    @_locked
    def force_element_values(self, q, v):
        """ForceElementValues at (q, v): names, tension/torque (`force`), length/deflection
        (`length`), their rate, and bushing wrenches and deflections (mbd_ros/forces.py)."""
        from .forces import AppliedForces
        applied = self._applied if self._applied is not None else AppliedForces(self)
        return applied.element_values(q, v)

    @_locked
    def step(self, q, v, tau, dt, integrator=None, prescribed=None, **options):
        """One simulation step from (q, v) at t = self.time; returns (q, v) and advances
        self.time by dt (a failed step, ValueError or SimulationDiverged, leaves it unchanged).
        dt: a positive finite number of seconds (else ValueError naming dt). tau: (nv,) held
        over the step or a callable tau(t). integrator: None (the default: rk4 in substeps of at
        most mbd_ros.simulation.DEFAULT_MAX_STEP = 1 ms, at most MAX_DEFAULT_SUBSTEPS = 10 000 of
        them: a dt over 10 s is a ValueError),
        "rk4" (one step of dt), "semi_implicit_euler",
        "implicit_euler" (stiff springs and dampers) or "symplectic_euler" (trees; bounded energy
        error). prescribed: {joint: trajectory(t) -> (q, qd, qdd)} rheonomic joints. options:
        Simulator options (max_velocity, max_kinetic_energy). Raises SimulationDiverged naming
        the time."""
        from .simulation import step_robot
        return step_robot(self, q, v, tau, dt, integrator, options, prescribed)

    # ------------------------------------------------------------------ description
    def summary(self):
        """Human-readable description of the model: sizes, mass, joints, bodies."""
        m = self.model
        lines = [
            f"robot '{m.name}' from {m.source}",
            f"  links {len(m.link_names)}, URDF joints {len(m.wrench_joint_names)}"
            f" ({len(m.wrench_joint_names) - len(m.joint_names)} fixed), bodies {m.n_bodies}",
            f"  nq {m.nq}, nv {m.nv} (degrees of freedom), total mass {m.total_mass:.4g} kg",
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
        return "\n".join(lines)

    def __repr__(self):
        return (f"<mbd_ros.Robot '{self.model.name}' nq={self.nq} nv={self.nv} "
                f"bodies={self.model.n_bodies} mass={self.total_mass:.3g} kg>")

    # ------------------------------------------------------------------ internals
    def _check_regular(self):
        """Warn (once, at load) if some joint moves no mass (singular articulated inertia) at a
        generic configuration: forward dynamics then raise ValueError naming it; inverse
        dynamics, mass matrix and kinematics still work."""
        q = self.random_configuration(np.random.default_rng(0))
        zero = np.zeros(self.nv)
        status = _forward_dynamics(self._body_int, self._body_float, self._work, q, zero, zero,
                                   self._tau_scratch)
        if status >= L.STATUS_SINGULAR:
            import warnings
            joint = self._body_joint_name(status - L.STATUS_SINGULAR)
            warnings.warn(f"{self.model.source}: joint '{joint}' moves no mass or inertia along "
                          "one of its axes (the links below it are massless): forward dynamics "
                          "will raise ValueError; inverse dynamics and kinematics work",
                          UserWarning, stacklevel=3)

    def _link(self, link):
        if not isinstance(link, str):
            raise ValueError(f"link must be a link name (a string), got {excerpt(repr(link), 60)} "
                             f"(links: {', '.join(self.link_names[:8])}"
                             f"{', ...' if len(self.link_names) > 8 else ''})")
        try:
            return self._link_index[link]
        except KeyError:
            raise ValueError(f"unknown link '{excerpt(str(link))}' (links: {', '.join(self.link_names[:8])}"
                             f"{', ...' if len(self.link_names) > 8 else ''})") from None

    def _link_wrench_array(self, f_ext):
        """f_ext (a dict {link: (6,)} or an array (n_links, 6)) as a validated (n_links, 6) array
        of link wrenches, each in its link's frame about the link origin."""
        wrench = np.zeros((len(self.link_names), 6))
        if isinstance(f_ext, dict):
            for link, w in f_ext.items():
                w = _real_array(w, f"f_ext['{excerpt(str(link), 60)}']", "a wrench of 6 numbers")
                if w.shape != (6,):
                    raise ValueError(f"f_ext['{excerpt(str(link), 60)}'] must have shape (6,), "
                                     f"got {w.shape}")
                wrench[self._link(link)] = w
        else:
            wrench = _real_array(f_ext, "f_ext", f"an array ({len(self.link_names)}, 6) or a dict "
                                 "{link: wrench}")
            if wrench.shape != (len(self.link_names), 6):
                raise ValueError(f"f_ext must have shape ({len(self.link_names)}, 6) or be a dict "
                                 f"{{link: wrench}}, got {wrench.shape}")
        if not np.all(np.isfinite(wrench)):
            raise ValueError("f_ext contains NaN or inf")
        return wrench

    def _set_external_wrenches(self, f_ext):
        """Load link wrenches into the workspace (FEXT per body, and per link for fixed joints)."""
        if f_ext is None:
            if self._fext_dirty:
                self._work[:, L.FEXT:L.FEXT + 6] = 0.0
                self._link_fext[:] = 0.0
                self._fext_dirty = False
            return
        wrench = self._link_wrench_array(f_ext)
        _load_link_wrenches(self._link_int, self._link_float, np.ascontiguousarray(wrench),
                            self._link_fext, self._work)
        self._fext_dirty = True

    def _state_arrays(self, q, v, x, out, x_name):
        """Slow path: convert and check inputs the fast path's explicit signature refused."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        x = _vector(x, self.nv, x_name)
        if out is not None:
            out = _output(out, (self.nv,))
        return q, v, x, out

    def _check_state(self, q, v, x, x_name):
        """Raise ValueError unless q (and v, x when not empty) have the right size, are finite
        and carry unit quaternions."""
        status = _check_state_kernel(self._body_int, q, v, x, v.shape[0] > 0, x.shape[0] > 0)
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
        if status == _STATUS_ALIASED:   # batch and closed-loop kernels: no private retry
            raise ValueError("out must not share memory with an input")
        if status in (L.STATUS_OK, _STATUS_NOT_FINITE):
            raise ValueError("the result is not finite: an overflow inside the dynamics (absurd "
                             "velocities, forces or external wrenches?)")
        if status >= L.STATUS_SINGULAR:
            joint = self._body_joint_name(status - L.STATUS_SINGULAR)
            raise ValueError(f"joint '{joint}': the articulated inertia is singular (the joint "
                             "moves no mass or inertia in some direction)")
        raise ValueError(f"dynamics kernel failed with status {status}")

    def _raise_batch(self, status, q, v, x, x_name, out):
        bad = np.flatnonzero(status | ~np.isfinite(out).all(axis=1))
        if bad.size:
            s = bad[0]
            try:
                self._raise(int(status[s]), q[s], v[s], x[s], None, x_name)
            except ValueError as exc:
                raise ValueError(f"state {bad[0]}: {exc}") from None
