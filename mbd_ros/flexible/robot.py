"""FlexibleRobot: the Robot facade for robots with flexible links (floating frame of reference).

Same API as Robot; q and v carry the elastic coordinates after the rigid joints
(`elastic_names`, `elastic_q_indices`, `elastic_v_indices`). The dynamics run in
kernels/flexible_dynamics.py. Generalized forces tau (nv,): drive forces of the rigid joints,
then generalized forces on the elastic coordinates (normally zero: the structure is not actuated).
"""
from __future__ import annotations

import numpy as np

from .. import layout as L
from ..errors import ModelError
from ..kernels import flexible_dynamics as K
from ..kernels.output_checks import STATUS_ALIASED as _STATUS_ALIASED
from ..robot import Robot, _batch, _locked, _output, _shares, _vector
from . import layout as F
from .build import FlexibleModel

_EMPTY = np.zeros(0)


class FlexibleRobot(Robot):
    """A tree robot some of whose links are flexible bodies (see docs/flexible.md)."""

    default_integrator = "rk4"

    def __init__(self, model, flexible: FlexibleModel):
        super().__init__(model)
        self.flexible = flexible
        self.nq = flexible.nq
        self.nv = flexible.nv
        self.elastic_names = list(flexible.elastic_names)
        self.elastic_q_indices = flexible.elastic_q_indices.copy()
        self.elastic_v_indices = flexible.elastic_v_indices.copy()
        self.flexible_links = [fb.link for fb in flexible.bodies]
        n_el = self.nv - model.nv
        self.damping = np.concatenate([model.damping, np.zeros(n_el)])
        self.friction = np.concatenate([model.friction, np.zeros(n_el)])
        self.effort_limits = np.concatenate([model.effort, np.full(n_el, np.inf)])
        self.velocity_limits = np.concatenate([model.velocity_limit, np.full(n_el, np.inf)])
        self.position_limits = (np.concatenate([model.lower, np.full(n_el, -np.inf)]),
                                np.concatenate([model.upper, np.full(n_el, np.inf)]))
        self.total_mass = float(model.total_mass + sum(
            fb.mass - model_link_mass(model, fb.link) for fb in flexible.bodies))
        self._fint = np.array(flexible.fint)
        self._ffloat = np.array(flexible.ffloat)
        self._fdata = np.array(flexible.fdata)
        self._fwork = np.zeros(flexible.fwork_size)
        self._work = np.zeros((self._fint.shape[0], F.WORK_WIDTH))
        self._tau_scratch = np.zeros(self.nv)
        self._unit = np.zeros(self.nv)
        self._column = np.zeros(self.nv)
        self._energy3 = np.zeros(3)
        self._link_fext = np.zeros((len(self.link_names), 6))
        self._tree_links = flexible.tree_links
        self._flex_batch_works = None
        # lock-free workspace of the fast path (no f_ext, no force elements): its FEXT stays
        # zero, so calls without loads never see those of an earlier call (Robot._fast_work);
        # the C entries (mbd_ros/fastcall/flexible.py) run on it too
        self._free_work = np.zeros_like(self._work)
        self._free_fwork = np.zeros_like(self._fwork)

    # ------------------------------------------------------------------ C-level entries
    def _c_call_names(self):
        """FD, ID and M get KernelCalls of the flexible kernels (mbd_ros/fastcall), unless a
        subclass overrides them (FlexibleClosedLoopRobot keeps its FD and ID)."""
        from .. import fastcall
        return [name for name in fastcall.NAMES
                if getattr(type(self), name) is getattr(FlexibleRobot, name)]

    def _c_call_spec(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns) of method `name`."""
        from ..fastcall import flexible
        return flexible.spec(self, name)

    # ------------------------------------------------------------------ configuration
    def neutral(self):
        """(nq,) the rigid robot's neutral joint coordinates (identity quaternions) and zero
        elastic coordinates (undeformed)."""
        q = np.zeros(self.nq)
        q[:self.model.nq] = Robot.neutral(self)[:self.model.nq]
        return q

    def random_configuration(self, rng=None):
        """(nq,) random joint coordinates (as Robot.random_configuration: within limits, unit
        quaternions) and zero elastic coordinates."""
        rng = np.random.default_rng(rng)
        q = np.zeros(self.nq)
        q[:self.model.nq] = Robot.random_configuration(self, rng)[:self.model.nq]
        return q

    def integrate(self, q, v, dt, out=None):
        """(nq,) q (+) v dt: the joints as the rigid robot integrates them (quaternions on the
        sphere), the elastic coordinates (a vector space) q_f + v_f dt."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        out = _output(out, (self.nq,))
        self._check_state(q, v, _EMPTY, "")
        if _shares(out, (q, v)):   # q and v are read while out is written: compute privately
            out[:] = FlexibleRobot.integrate(self, q, v, dt)
            return out
        nq, nv = self.model.nq, self.model.nv
        if any(t not in ("revolute", "prismatic") for t in self.joint_types):
            out[:nq] = Robot.integrate(self._rigid_view(), q[:nq], v[:nv], dt)
        else:
            np.add(q[:nq], v[:nv] * float(dt), out=out[:nq])
        np.add(q[nq:], v[nv:] * float(dt), out=out[nq:])
        return out

    def _rigid_view(self):
        """A plain Robot of the rigid model (joint-space helpers: integrate, configurations)."""
        if getattr(self, "_rigid", None) is None:
            self._rigid = Robot(self.model)
        return self._rigid

    # ------------------------------------------------------------------ dynamics
    def forward_dynamics(self, q, v, tau, f_ext=None, out=None):
        """Accelerations (nv,) of the joints and elastic coordinates for generalized forces tau
        (nv,): recursive O(n) articulated-body algorithm with the elastic coordinates condensed
        inside each flexible body (docs/flexible.md). Force elements and add_force callbacks (at
        t = self.time) are added (flexible/forces.py)."""
        if self._applied is None and f_ext is None:   # no loads: the lock-free workspace
            return self._free_call("forward_dynamics", K.forward_dynamics, q, v, tau, out, "tau")
        with self._lock:   # loads: the locked workspace (FEXT) and the elements' buffers
            if self._applied is not None and not self._applying:   # force elements: FEXT, tau
                tau = self._applied.load(q, v, tau, f_ext, self.time)
            elif f_ext is not None or self._fext_dirty:
                self._set_external_wrenches(f_ext)
            return self._loaded_call(K.forward_dynamics, q, v, tau, out, "tau")

    def _loaded_call(self, kernel, q, v, x, out, x_name):
        """forward/inverse dynamics on the locked workspace with its loads (FEXT) in place; the
        caller holds the lock. out may overlap an input (computed privately, then copied)."""
        if out is None:
            out = np.empty(self.nv)
        try:
            status = kernel(self._fint, self._ffloat, self._fdata, self._work, self._fwork,
                            q, v, x, out)
        except TypeError:
            q, v, x, _ = self._state_arrays(q, v, x, None, x_name)
            out = _output(out, (self.nv,))
            status = kernel(self._fint, self._ffloat, self._fdata, self._work, self._fwork,
                            q, v, x, out)
        if status == _STATUS_ALIASED:   # out overlaps an input: compute privately, then copy
            out[:] = self._loaded_call(kernel, q.copy(), v.copy(), x.copy(), None, x_name)
            return out
        if status:
            self._raise(status, q, v, x, out, x_name)
        return out

    def inverse_dynamics(self, q, v, qdd, f_ext=None, out=None, _loaded=False):
        """tau (nv,) with M qdd + b + [K_ff q_f + D_ff qd_f] - tau_passive = tau: drive forces of
        the joints, and in the elastic rows the generalized forces the elastic coordinates need
        (zero when qdd is the free motion of the structure). Force elements and callbacks act as
        loads: their generalized forces are subtracted (the drives needed while they act)."""
        if self._applied is None and f_ext is None:   # no loads: the lock-free workspace
            return self._free_call("inverse_dynamics", K.inverse_dynamics, q, v, qdd, out, "qdd")
        with self._lock:   # loads: the locked workspace (FEXT) and the elements' buffers
            if self._applied is not None and not self._applying:   # force elements
                joint_force = self._applied.load(q, v, np.zeros(self.nv), f_ext, self.time).copy()
                self._applying = True
                try:
                    out = self._loaded_call(K.inverse_dynamics, q, v, qdd, out, "qdd")
                finally:
                    self._applying = False
                out -= joint_force
                return out
            if not _loaded and (f_ext is not None or self._fext_dirty):
                self._set_external_wrenches(f_ext)
            return self._loaded_call(K.inverse_dynamics, q, v, qdd, out, "qdd")

    def _free_call(self, name, kernel, q, v, x, out, x_name):
        """Fast path of forward/inverse dynamics without loads: one kernel call (its C entry once
        installed) on the lock-free workspace; other argument types are converted first.
        Installs the KernelCall of `name` at the second fast call (Robot._promote_c_call)."""
        if out is None:
            out = np.empty(self.nv)
        entry = getattr(self, "_c_" + name)
        try:
            if entry is not None:    # the same kernel through its C entry
                status = entry(q, v, x, out)
            else:
                status = kernel(self._fint, self._ffloat, self._fdata, self._free_work,
                                self._free_fwork, q, v, x, out)
        except TypeError:
            q, v, x, out = self._state_arrays(q, v, x, out, x_name)
            status = kernel(self._fint, self._ffloat, self._fdata, self._free_work,
                            self._free_fwork, q, v, x, out)
        if status == _STATUS_ALIASED:   # out overlaps an input: compute privately, then copy
            out[:] = self._free_call(name, kernel, q.copy(), v.copy(), x.copy(), None, x_name)
            return out
        if status:
            self._raise(status, q, v, x, out, x_name)
        if name in self._c_pending:
            self._promote_c_call(name)
        return out

    def mass_matrix(self, q, out=None):
        """M(q) (nv, nv) of joints and elastic coordinates, symmetric positive definite."""
        if out is None:
            out = np.empty((self.nv, self.nv))
        try:   # fast path: C-contiguous float64 q (nq,) and out (nv, nv)
            if self._c_mass_matrix is not None:   # the same kernel through its C entry
                status = self._c_mass_matrix(q, out)
            else:
                status = K.mass_matrix(self._fint, self._ffloat, self._fdata, self._free_work,
                                       self._free_fwork, q, self._unit, self._column, out)
        except TypeError:
            status = -1
        if status == 0:
            if "mass_matrix" in self._c_pending:
                self._promote_c_call("mass_matrix")
            return out
        # general path: convert and check (the ValueErrors name q / out), then the kernel
        q = _vector(q, self.nq, "q")
        out = _output(out, (self.nv, self.nv))
        status = K.mass_matrix(self._fint, self._ffloat, self._fdata, self._free_work,
                               self._free_fwork, q, self._unit, self._column, out)
        if status == _STATUS_ALIASED:   # out overlaps q: compute privately, then copy
            out[...] = FlexibleRobot.mass_matrix(self, q.copy())
            return out
        if status:
            self._raise(status, q, _EMPTY, _EMPTY, out, "")
        return out

    def bias_forces(self, q, v, out=None):
        """b (nv,): velocity terms, gravity and the elastic forces K_ff q_f + D_ff qd_f
        (M qdd + b = tau + tau_passive)."""
        passive = self.damping_forces(v) if self.model.passive_forces else 0.0   # before out
        out = FlexibleRobot.inverse_dynamics(self, q, v, np.zeros(self.nv), out=out)   # is written
        out -= passive
        return out

    def gravity_forces(self, q, out=None):
        """(nv,) generalized forces that hold the robot still at q: gravity on the joints, and
        K_ff q_f - Q_gravity on the elastic coordinates (zero at the static deflection)."""
        return self.inverse_dynamics(q, np.zeros(self.nv), np.zeros(self.nv), out=out)

    @_locked
    def joint_wrenches(self, q, v, qdd, f_ext=None, out=None):
        """Wrench each URDF joint transmits (len(wrench_joint_names), 6), in the child link
        frame (see Robot.joint_wrenches). Movable joints from the flexible RNEA; fixed joints of
        rigid bodies from the links' inertias; fixed joints on flexible links are not supported
        yet (ValueError)."""
        q, v, qdd, _ = self._state_arrays(q, v, qdd, self._tau_scratch, "qdd")
        out = _output(out, (len(self.wrench_joint_names), 6))
        if _shares(out, (q, v, qdd, f_ext)):   # the rows are written while q, v, qdd, f_ext are
            out[:] = FlexibleRobot.joint_wrenches(self, q, v, qdd, f_ext=f_ext)   # read: privately
            return out
        if self._applied is not None and not self._applying:   # force elements load the bodies
            self._applied.load(q, v, np.zeros(self.nv), f_ext, self.time)
            self._link_fext = self._link_fext + self._applied.link_loads()
        else:
            self._set_external_wrenches(f_ext)
        self._add_extra_loads(q, v)          # closed loops: the cut wrenches (flexible/loops.py)
        self._check_state(q, v, qdd, "qdd")
        K._rnea(self._fint, self._ffloat, self._fdata, self._work, self._fwork, q, v, qdd,
                self._tau_scratch, True, True)
        for row, (body, link) in enumerate(self.model.wrench_rows):
            if body >= 0:
                out[row] = self._work[body, F.FORCE:F.FORCE + 6]
            else:
                out[row] = self._fixed_joint_wrench(link, q, v, qdd)
        return out

    def _add_extra_loads(self, q, v):
        """Hook of joint_wrenches: loads added to FEXT after f_ext (none for a tree)."""

    @_locked
    def closure_wrenches(self, q, v, tau):
        self._check_state(*self._state_arrays(q, v, tau, None, "tau")[:3], "tau")
        return np.zeros((0, 6))

    @_locked
    def forward_dynamics_batch(self, q, v, tau, out=None):
        """(N, nv) accelerations for N states q (N, nq), v (N, nv), tau (N, nv), on
        `batch_threads` threads (external wrenches are not applied in batches; force elements
        and callbacks are, one state at a time on the calling thread)."""
        if self._applied is not None:   # force elements: per state
            from ..forces import batch_with_forces
            return batch_with_forces(self, self.forward_dynamics, q, v, tau, "tau", out)
        return self._batch_call(K.forward_dynamics_batch, q, v, tau, "tau", out)

    @_locked
    def inverse_dynamics_batch(self, q, v, qdd, out=None):
        """(N, nv) generalized forces for N states, on `batch_threads` threads."""
        if self._applied is not None:   # force elements: per state
            from ..forces import batch_with_forces
            return batch_with_forces(self, self.inverse_dynamics, q, v, qdd, "qdd", out)
        return self._batch_call(K.inverse_dynamics_batch, q, v, qdd, "qdd", out)

    def _batch_call(self, kernel, q, v, x, x_name, out):
        """One contiguous chunk of states per worker thread, each on its own workspace (the
        batch kernels release the GIL)."""
        from ..robot import _thread_pool
        q = _batch(q, self.nq, "q")
        v = _batch(v, self.nv, "v", q.shape[0])
        x = _batch(x, self.nv, x_name, q.shape[0])
        out = _output(out, (q.shape[0], self.nv))
        if _shares(out, (q, v, x)):   # the rows are computed in turn: compute privately
            out[:] = self._batch_call(kernel, q, v, x, x_name, None)
            return out
        status = np.zeros(q.shape[0], dtype=np.int64)
        n_threads = max(1, min(self.batch_threads, q.shape[0] // 64))
        if self._flex_batch_works is None or len(self._flex_batch_works) < n_threads:
            self._flex_batch_works = [(np.zeros_like(self._work), np.zeros_like(self._fwork))
                                      for _ in range(n_threads)]
        bounds = np.linspace(0, q.shape[0], n_threads + 1).astype(int)
        chunks = [(self._fint, self._ffloat, self._fdata, *self._flex_batch_works[t], q[a:b],
                   v[a:b], x[a:b], out[a:b], status[a:b])
                  for t, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
        if n_threads == 1:
            kernel(*chunks[0])
        else:
            list(_thread_pool(n_threads).map(lambda args: kernel(*args), chunks))
        self._raise_batch(status, q, v, x, x_name, out)
        return out

    @_locked
    def step(self, q, v, tau, dt, integrator=None, **options):
        """One simulation step from (q, v) at t = self.time -> (q, v), advancing self.time by dt
        (unchanged when the step fails), as Robot.step: integrator None = RK4 in substeps of at
        most 1 ms (the elastic modes are stiff: keep the step well below 1 / (2 pi
        highest_frequency())); options: Simulator options (max_velocity, max_kinetic_energy)."""
        from ..simulation import DEFAULT_INTEGRATOR, step_robot
        if integrator is None and self.default_integrator != DEFAULT_INTEGRATOR:
            integrator = self.default_integrator
        return step_robot(self, q, v, tau, dt, integrator, options)

    # ------------------------------------------------------------------ kinematics, energy
    @_locked
    def link_pose(self, q, link):
        """(4, 4) pose of `link` in the root frame at q, deformed: links beyond a flexible link
        follow its deformed joint origins; links welded to a flexible link sit at the deformed
        point of their origin."""
        q = _vector(q, self.nq, "q")
        index = self._link(link)
        self._check_state(q, _EMPTY, _EMPTY, "")
        K.forward_kinematics(self._fint, self._ffloat, self._fdata, self._work, self._fwork, q)
        body = self.model.link_int[index, L.LINK_BODY]
        body_rot = self._work[body, F.WORLD_ROT:F.WORLD_ROT + 9].reshape(3, 3)
        body_pos = self._work[body, F.WORLD_POS:F.WORLD_POS + 3]
        link_rot = self.model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        link_pos = self.model.link_float[index, L.LINK_POS:L.LINK_POS + 3].copy()
        if index in self.flexible.link_shapes:
            Phi_t, Phi_r, fb = self.flexible.link_shapes[index]
            qf = q[fb.iq:fb.iq + fb.n_modes]
            link_pos = link_pos + Phi_t @ qf
            link_rot = cayley(Phi_r @ qf) @ link_rot
        pose = np.eye(4)
        pose[:3, :3] = body_rot @ link_rot
        pose[:3, 3] = body_pos + body_rot @ link_pos
        return pose

    @_locked
    def kinetic_energy(self, q, v):
        """1/2 v^T M(q) v (J), elastic velocities included."""
        q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        self._check_state(q, v, _EMPTY, "")
        K.mechanical_energy(self._fint, self._ffloat, self._fdata, self._work, self._fwork, q, v,
                            True, self._energy3)
        return float(self._energy3[0])

    @_locked
    def potential_energy(self, q):
        """Gravitational (zero at the root origin) plus elastic 1/2 q_f^T K_ff q_f energy, plus the
        force elements' springs (J)."""
        q = _vector(q, self.nq, "q")
        self._check_state(q, _EMPTY, _EMPTY, "")
        K.mechanical_energy(self._fint, self._ffloat, self._fdata, self._work, self._fwork, q,
                            np.zeros(self.nv), False, self._energy3)
        if self._applied is not None:   # force elements' springs (at the deformed points)
            return float(self._energy3[1] + self._energy3[2]) + self._applied.potential_energy(q)
        return float(self._energy3[1] + self._energy3[2])

    @_locked
    def elastic_energy(self, q):
        """1/2 sum q_f^T K_ff q_f (J)."""
        self.potential_energy(q)
        return float(self._energy3[2])

    @_locked
    def add_force(self, fn):
        """Force callback fn(t, q, v) -> (nv,) generalized forces (elastic rows included) or
        {link: wrench}, as Robot.add_force (a wrench on a flexible link acts at its clamp)."""
        from .forces import add_force
        return add_force(self, fn)

    @_locked
    def force_element_values(self, q, v):
        """ForceElementValues at (q, v) with the ends at their deformed points (Robot's)."""
        from .forces import FlexibleAppliedForces
        applied = self._applied if self._applied is not None else FlexibleAppliedForces(self)
        return applied.element_values(q, v)

    def highest_frequency(self, q=None):
        """Highest natural frequency (Hz) of the robot linearised at q (default neutral) with its
        joints free: sqrt of the largest eigenvalue of M^-1 K (K: the K_ff blocks). An explicit
        integrator needs 2 pi f dt below its stability limit (RK4: 2.8, semi-implicit Euler: 2);
        with free joints this is often several times the links' highest clamped frequency."""
        import scipy.linalg
        q = self.neutral() if q is None else q
        M = self.mass_matrix(q)
        K = np.zeros((self.nv, self.nv))
        for fb in self.flexible.bodies:
            K[fb.iv:fb.iv + fb.n_modes, fb.iv:fb.iv + fb.n_modes] = fb.K
        w2 = scipy.linalg.eigh(K, M, eigvals_only=True)
        return float(np.sqrt(max(w2.max(), 0.0)) / (2 * np.pi))

    def summary(self):
        m = self.model
        lines = [super().summary().replace(
            f"nq {m.nq}, nv {m.nv} (degrees of freedom), total mass {m.total_mass:.4g} kg",
            f"nq {self.nq}, nv {self.nv} (joints {m.nv} + elastic {self.nv - m.nv}), total mass "
            f"{self.total_mass:.4g} kg")]
        for fb in self.flexible.bodies:
            freq = ", ".join(f"{f:.4g}" for f in fb.frequencies)
            lines.append(f"  flexible link {fb.link}: {fb.n_modes} modes q[{fb.iq}:{fb.iq + fb.n_modes}]"
                         f" v[{fb.iv}:{fb.iv + fb.n_modes}], mass {fb.mass:.4g} kg, clamped "
                         f"frequencies {freq} Hz")
        return "\n".join(lines)

    def __repr__(self):
        return (f"<mbd_ros.FlexibleRobot '{self.model.name}' nq={self.nq} nv={self.nv} "
                f"flexible={self.flexible_links}>")

    # ------------------------------------------------------------------ internals
    def _check_regular(self):
        q = self.random_configuration(np.random.default_rng(0))
        zero = np.zeros(self.nv)
        status = K.forward_dynamics(self._fint, self._ffloat, self._fdata, self._work, self._fwork,
                                    q, zero, zero, self._tau_scratch)
        if status >= L.STATUS_SINGULAR:
            body = status - L.STATUS_SINGULAR
            raise ModelError(f"{self.model.source}: joint '{self.joint_names[body - 1]}' moves no "
                             "mass or inertia (or a flexible link's modes move no mass): its "
                             "acceleration is undefined")

    def _check_fast(self, q, v):
        """Nonzero status when q (nq,) or v (nv,) float64 arrays are not finite or a quaternion
        is not of unit norm (no exception: the caller re-validates to name the problem)."""
        status = K.check_inputs(self.nq, self.nv, q, v, _EMPTY, True, False)
        return status or K.check_quaternions(self._fint, q)

    def _check_state(self, q, v, x, x_name):
        status = K.check_inputs(self.nq, self.nv, q, v, x, v.shape[0] > 0, x.shape[0] > 0)
        if status == 0:
            status = K.check_quaternions(self._fint, q)
        if status:
            self._raise(status, q, v, x, None, x_name)

    def _raise(self, status, q, v, x, out, x_name):
        if status >= L.STATUS_SINGULAR:
            body = status - L.STATUS_SINGULAR
            raise ValueError(f"joint '{self.joint_names[body - 1]}': the articulated inertia is "
                             "singular")
        super()._raise(status, q, v, x, out, x_name)

    def _set_external_wrenches(self, f_ext):
        """f_ext: None, (n_links, 6) or {link: (6,)}, each in its link frame about its origin.
        On a flexible link the wrench acts at its reference frame (the clamp), where the elastic
        field vanishes, so it does no elastic work; links welded to a flexible link are refused."""
        work = self._work
        if f_ext is None:
            if self._fext_dirty:          # clear only after a call with f_ext (hot path: no-op)
                work[:, F.FEXT:F.FEXT + 6] = 0.0
                self._link_fext[:] = 0.0
                self._fext_dirty = False
            return
        work[:, F.FEXT:F.FEXT + 6] = 0.0
        wrench = self._link_wrench_array(f_ext)
        for index in np.flatnonzero(np.any(wrench != 0.0, axis=1)):
            if index in self.flexible.link_shapes:
                raise ValueError(f"f_ext on '{self.link_names[index]}', welded to a flexible "
                                 "link, is not supported")
            rot = self.model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
            pos = self.model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
            force = rot @ wrench[index, :3]
            torque = rot @ wrench[index, 3:] + np.cross(pos, force)
            body = self.model.link_int[index, L.LINK_BODY]
            work[body, F.FEXT:F.FEXT + 3] += force
            work[body, F.FEXT + 3:F.FEXT + 6] += torque
        self._link_fext = wrench
        self._fext_dirty = True

    def _fixed_joint_wrench(self, link, q, v, qdd):
        """Wrench through the fixed joint above `link` (rigid bodies): the inertial wrenches of
        the links welded below it plus the wrenches of movable joints hanging from them, in the
        link frame (Newton-Euler of the welded sub-assembly)."""
        model, work = self.model, self._work
        body = model.link_int[link, L.LINK_BODY]
        below = {link}
        for index in range(link + 1, len(self.link_names)):
            if model.link_int[index, L.LINK_FIXED] and model.link_int[index, L.LINK_PARENT] in below:
                below.add(index)
        if self._fint[body, F.NF] > 0:
            return self._welded_on_flexible_wrench(link, below, q, v, qdd)
        vel = work[body, F.VEL:F.VEL + 6]
        acc = work[body, F.ACC:F.ACC + 6]
        total = np.zeros(6)
        for index in below:
            inertia = model.link_float[index, L.LINK_INERTIA:L.LINK_INERTIA + 36].reshape(6, 6)
            h = inertia @ vel
            total += inertia @ acc + _cross_force(vel, h)
            ext = self._link_fext[index]
            rot = model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
            pos = model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
            force = rot @ ext[:3]
            total -= np.concatenate([force, rot @ ext[3:] + np.cross(pos, force)])
        for child in range(1, self._fint.shape[0]):
            if self._fint[child, F.PARENT] == body and model.body_int[child, L.PARENT_LINK] in below:
                X = work[child, F.X_MAT:F.X_MAT + 36].reshape(6, 6)
                total += X.T @ work[child, F.FORCE:F.FORCE + 6]
        # body frame -> link frame: n_l = R^T n, t_l = R^T (t - p x n)
        rot = model.link_float[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        pos = model.link_float[link, L.LINK_POS:L.LINK_POS + 3]
        force = total[:3]
        return np.concatenate([rot.T @ force, rot.T @ (total[3:] - np.cross(pos, force))])


    def _welded_on_flexible_wrench(self, link, below, q, v, qdd):
        """Fixed joint above `link`, welded to a flexible link: Newton-Euler of the welded links as
        the model moves them (rigid attachments at the deformed points of their centres of mass,
        see build.py): f_j = m_j a_j (gravity in a_j), torque u_j x f_j + J_j (alpha + Psi_j
        qdd_f) + w x J_j (w + Psi_j qd_f), plus the movable joints hanging from them; about the
        deformed link origin, in the link's deformed axes."""
        model, work, tree_links = self.model, self._work, self._tree_links
        body = model.link_int[link, L.LINK_BODY]
        fb = next(f for f in self.flexible.bodies if f.body == body)
        sl = slice(fb.iq, fb.iq + fb.n_modes)
        qf, vf, af = q[sl], v[sl], qdd[sl]
        vel, acc = work[body, F.VEL:F.VEL + 6], work[body, F.ACC:F.ACC + 6]
        w, alpha = vel[3:], acc[3:]
        a_origin = acc[:3] + np.cross(w, vel[:3])      # classical, gravity included
        total = np.zeros(6)
        for index in below:
            spec = tree_links[self.link_names[index]]
            if spec.mass <= 0:
                continue
            rot = model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
            pos = model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
            com = rot @ spec.com + pos
            N, Psi = fb.shapes(com)
            u = com + N @ qf
            a = (a_origin + np.cross(alpha, u) + np.cross(w, np.cross(w, u))
                 + 2 * np.cross(w, N @ vf) + N @ af)
            J = rot @ spec.inertia @ rot.T
            f = spec.mass * a
            total[:3] += f
            total[3:] += (np.cross(u, f) + J @ (alpha + Psi @ af)
                          + np.cross(w, J @ (w + Psi @ vf)))
        for child in range(1, self._fint.shape[0]):
            if self._fint[child, F.PARENT] == body and model.body_int[child, L.PARENT_LINK] in below:
                X = work[child, F.X_MAT:F.X_MAT + 36].reshape(6, 6)
                total += X.T @ work[child, F.FORCE:F.FORCE + 6]
        Phi_t, Phi_r, _ = self.flexible.link_shapes[link]
        rot = cayley(Phi_r @ qf) @ model.link_float[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        pos = model.link_float[link, L.LINK_POS:L.LINK_POS + 3] + Phi_t @ qf
        force = total[:3]
        return np.concatenate([rot.T @ force, rot.T @ (total[3:] - np.cross(pos, force))])


def _cross_force(v, h):
    """v x* h for [lin; ang] motion v and force h."""
    return np.concatenate([np.cross(v[3:], h[:3]), np.cross(v[3:], h[3:]) + np.cross(v[:3], h[:3])])


def cayley(g):
    """(3, 3) Cayley rotation of the vector g (= exp([g]) to second order)."""
    g = np.asarray(g, dtype=float)
    skew = np.array([[0.0, -g[2], g[1]], [g[2], 0.0, -g[0]], [-g[1], g[0], 0.0]])
    return np.eye(3) + (skew + 0.5 * skew @ skew) / (1.0 + 0.25 * g @ g)


def model_link_mass(model, link):
    index = model.link_names.index(link)
    return float(model.link_float[index, L.LINK_INERTIA])
