"""FlexibleTree: the floating-frame kernels (kernels/flexible_dynamics.py) of a tree some of
whose bodies carry modal coordinates (docs/flexible.md); the shared contract is tree.py's.

q and v hold the rigid joints' coordinates first (as the rigid Model orders them), then the
elastic coordinates (`elastic_q_indices`, `elastic_v_indices`). Generalized forces tau (nv,):
the joints' drive forces, then generalized forces on the elastic coordinates (normally zero).
Model arrays: fint, ffloat, fdata (flexible/build.py); Data: `work`/`fwork` (loaded, under the
Robot's lock) and `free_work`/`free_fwork` (no loads: the lock-free calls and their C entries).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..model import layout as L
from ..model.flexible import layout as F
from ..model.flexible.attachment import cayley
from ..kernels import flexible_dynamics as K
from ..kernels.configuration import integrate as _integrate_joints
from .tree import Tree

_EMPTY = np.zeros(0)


def cross_force(v, h):
    """v x* h for a [lin; ang] motion v and a force h."""
    return np.concatenate([np.cross(v[3:], h[:3]), np.cross(v[3:], h[3:]) + np.cross(v[:3], h[:3])])


class FlexibleTree(Tree):
    """Flexible-body kernels (see the module docstring). `flexible`: flexible/build.py's
    FlexibleModel of `model`."""

    kind = "flexible"

    def __init__(self, model, flexible):
        super().__init__(model)
        self.flexible = flexible
        self.nq = flexible.nq
        self.nv = flexible.nv
        self.elastic_names = tuple(flexible.elastic_names)
        self.elastic_q_indices = flexible.elastic_q_indices.copy()
        self.elastic_v_indices = flexible.elastic_v_indices.copy()
        self.body_int = np.array(model.body_int)   # the joints' integration (configuration.py)
        self.fint = np.array(flexible.fint)
        self.ffloat = np.array(flexible.ffloat)
        self.fdata = np.array(flexible.fdata)
        rows = self.fint.shape[0]
        self.work = np.zeros((rows, F.WORK_WIDTH))
        self.fwork = np.zeros(flexible.fwork_size)
        self.free_work = np.zeros_like(self.work)
        self.free_fwork = np.zeros_like(self.fwork)
        self.unit = np.zeros(self.nv)
        self.column = np.zeros(self.nv)
        self.scratch = np.zeros(self.nv)
        self._energy = np.zeros(3)
        self.link_wrench_in = np.zeros((self.n_links, 6))   # the links' loads (link frames)
        self._vector_joints = all(t in ("revolute", "prismatic") for t in model.joint_types)
        self._highest_frequency = {}
        free = (self.fint, self.ffloat, self.fdata, self.free_work, self.free_fwork)
        self.free_calls = {
            "forward_dynamics": partial(K.forward_dynamics, *free),
            "inverse_dynamics": partial(K.inverse_dynamics, *free),
            "mass_matrix": self._free_mass_matrix,
        }

    def _free_mass_matrix(self, q, out):
        return K.mass_matrix(self.fint, self.ffloat, self.fdata, self.free_work, self.free_fwork,
                             q, self.unit, self.column, out)

    # ------------------------------------------------------------------ checks
    def check_state(self, q, v, x, check_v, check_x):
        """Status of q (nq,) and, when checked, v and x (nv,): sizes, NaN/inf, unit quaternions."""
        status = K.check_inputs(self.nq, self.nv, q, v, x, check_v, check_x)
        return status or K.check_quaternions(self.fint, q)

    def singular_joint(self, body):
        """Name of the joint above the body whose articulated inertia was singular: its movable
        joint, or the fixed joint of a flexible link welded to its parent (a body of its own,
        flexible/split.py)."""
        model = self.model
        if model.body_int[body, L.JOINT_TYPE] == L.JOINT_FIXED:
            row = int(np.flatnonzero(model.wrench_rows[:, 0] == body)[0])
            return model.wrench_joint_names[row]
        return self.joint_name_of_dof(int(model.body_int[body, L.IDX_V]))

    # ------------------------------------------------------------------ dynamics (loaded)
    def _loaded(self):
        return self.fint, self.ffloat, self.fdata, self.work, self.fwork

    def forward_dynamics(self, q, v, tau, out):
        """Recursive forward dynamics with the elastic coordinates condensed in each flexible
        body, on the loaded workspace. -> status"""
        return K.forward_dynamics(*self._loaded(), q, v, tau, out)

    def inverse_dynamics(self, q, v, qdd, out):
        """M qdd + b + [K_ff q_f + D_ff qd_f] - tau_passive on the loaded workspace. -> status"""
        return K.inverse_dynamics(*self._loaded(), q, v, qdd, out)

    def mass_matrix(self, q, out):
        return K.mass_matrix(*self._loaded(), q, self.unit, self.column, out)

    def joint_wrenches(self, q, v, qdd, out):
        """Movable joints from the flexible RNEA's body forces; fixed joints by Newton-Euler of
        the links welded below them."""
        K._rnea(*self._loaded(), q, v, qdd, self.scratch, True, True)
        for row, (body, link) in enumerate(self.model.wrench_rows):
            if body >= 0:
                out[row] = self.work[body, F.FORCE:F.FORCE + 6]
            else:
                out[row] = self._fixed_joint_wrench(link, q, v, qdd)
        return 0

    # ------------------------------------------------------------------ batches
    def batch_kernel(self, name):
        return {"forward_dynamics": K.forward_dynamics_batch,
                "inverse_dynamics": K.inverse_dynamics_batch}[name]

    def new_batch_workspace(self):
        return (self.fint, self.ffloat, self.fdata, np.zeros_like(self.work),
                np.zeros_like(self.fwork))

    # ------------------------------------------------------------------ loads
    def set_loads(self, link_wrench, body_wrench=None):
        """link_wrench (n_links, 6) on links (link frames, about their origins) or None;
        body_wrench (rows, 6) on the bodies' reference frames, or None. On a flexible link a
        wrench acts at its reference frame (the clamp), where the elastic field vanishes, so it
        does no elastic work; on links welded to a flexible link it is refused."""
        if link_wrench is None and body_wrench is None:
            self.clear_loads()
            return
        self.zero_loads()
        if link_wrench is not None:
            model = self.model
            for index in np.flatnonzero(np.any(link_wrench != 0.0, axis=1)):
                if index in self.flexible.link_shapes:
                    raise ValueError(f"a wrench on '{model.link_names[index]}', welded to a "
                                     "flexible link, is not supported")
                rot, pos = self.link_placement(index)
                force = rot @ link_wrench[index, :3]
                torque = rot @ link_wrench[index, 3:] + np.cross(pos, force)
                body = self.link_body(index)
                self.work[body, F.FEXT:F.FEXT + 3] += force
                self.work[body, F.FEXT + 3:F.FEXT + 6] += torque
            self.link_wrench_in[:] = link_wrench
        if body_wrench is not None:
            self.work[:, F.FEXT:F.FEXT + 6] += body_wrench
        self.loads_dirty = True

    def add_body_loads(self, body, link, wrench):
        """Add a wrench (6,) on `body` (its reference frame, about its origin)."""
        self.work[body, F.FEXT:F.FEXT + 6] += wrench
        self.loads_dirty = True

    def record_link_loads(self, link_wrench):
        """Record loads (n_links, 6, link frames) that are already in the body loads on their
        links, for the fixed-joint wrench pass (force elements' rigid-body ends)."""
        self.link_wrench_in += link_wrench

    def zero_loads(self):
        self.work[:, F.FEXT:F.FEXT + 6] = 0.0
        self.link_wrench_in[:] = 0.0

    # ------------------------------------------------------------------ kinematics, energy
    def kinematics(self, q, v=_EMPTY):
        """Deformed poses of every body into the loaded workspace (v unused: positions only)."""
        K.forward_kinematics(*self._loaded(), q)

    def body_pose(self, body):
        """(R (3, 3), p (3,)) of `body`'s reference frame in the root frame, after kinematics()."""
        return (self.work[body, F.WORLD_ROT:F.WORLD_ROT + 9].reshape(3, 3),
                self.work[body, F.WORLD_POS:F.WORLD_POS + 3])

    def deformed_placement(self, link, q):
        """(R, p) of link `link` in its body's reference frame at q: links welded to a flexible
        link sit at the deformed point of their origin, turned by the elastic rotation there."""
        link_rot, link_pos = self.link_placement(link)
        if link in self.flexible.link_shapes:
            phi_t, phi_r, fb = self.flexible.link_shapes[link]
            qf = q[fb.iq:fb.iq + fb.n_modes]
            return cayley(phi_r @ qf) @ link_rot, link_pos + phi_t @ qf
        return link_rot, link_pos

    def link_pose(self, q, link):
        """(4, 4) pose of link index `link` in the root frame at q, deformed."""
        self.kinematics(q)
        body_rot, body_pos = self.body_pose(self.link_body(link))
        link_rot, link_pos = self.deformed_placement(link, q)
        pose = np.eye(4)
        pose[:3, :3] = body_rot @ link_rot
        pose[:3, 3] = body_pos + body_rot @ link_pos
        return pose

    def energies(self, q, v):
        """(kinetic, gravitational potential, elastic 1/2 q_f^T K_ff q_f) energies (J)."""
        with_kinetic = v.shape[0] > 0
        K.mechanical_energy(*self._loaded(), q, v if with_kinetic else self.scratch, with_kinetic,
                            self._energy)
        return float(self._energy[0]), float(self._energy[1]), float(self._energy[2])

    def integrate(self, q, v, dt, out):
        """The joints as the rigid tree integrates them (quaternions on the sphere); the elastic
        coordinates (a vector space) q_f + v_f dt."""
        nq, nv = self.model.nq, self.model.nv
        if self._vector_joints:
            np.multiply(v[:nv], dt, out=out[:nq])
            out[:nq] += q[:nq]
        else:
            _integrate_joints(self.body_int, q[:nq], v[:nv], dt, out[:nq])
        np.multiply(v[nv:], dt, out=out[nq:])
        out[nq:] += q[nq:]

    def highest_frequency(self, q):
        """Largest |eigenvalue| / 2 pi (Hz) of the elastic dynamics linearised at q with the
        joints free: undamped, the highest natural frequency (sqrt of the largest eigenvalue of
        M^-1 K, K the K_ff blocks); with modal damping (the D_ff blocks), of the first-order
        system [[0, 1], [-M^-1 K, -M^-1 D]]. The damping matters: acting where the free joints
        leave little inertia it adds real eigenvalues beyond the undamped ones (the sample arm
        at damping_ratio 0.2: -2.6e4 /s against omega_max 5195 rad/s), and robot.step's
        default RK4 substep, sized from the undamped frequency, went unstable there and
        returned wrong states silently (an outside audit)."""
        import scipy.linalg
        mass = np.empty((self.nv, self.nv))
        self.mass_matrix(q, mass)
        stiffness = np.zeros((self.nv, self.nv))
        damping = np.zeros((self.nv, self.nv))
        for fb in self.flexible.bodies:
            block = slice(fb.iv, fb.iv + fb.n_modes)
            stiffness[block, block] = fb.K
            damping[block, block] = fb.D
        if not damping.any():
            w2 = scipy.linalg.eigh(stiffness, mass, eigvals_only=True)
            return float(np.sqrt(max(w2.max(), 0.0)) / (2 * np.pi))
        n = self.nv
        system = np.zeros((2 * n, 2 * n))
        system[:n, n:] = np.eye(n)
        system[n:, :n] = -np.linalg.solve(mass, stiffness)
        system[n:, n:] = -np.linalg.solve(mass, damping)
        return float(np.abs(scipy.linalg.eigvals(system)).max() / (2 * np.pi))

    def frame_kinematics(self):
        """A new FlexibleFrameKinematics of this tree (robot/flexible_frame_kinematics.py): the
        Robot's link Jacobians, velocities, accelerations and centroidal quantities."""
        from .flexible_frame_kinematics import FlexibleFrameKinematics
        return FlexibleFrameKinematics(self)

    # ------------------------------------------------------------------ C entries
    def c_entry(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns) of the free call `name`
        (mbd_ros.fastcall.install's arguments)."""
        from ..fastcall.entries import entry
        bound = (self.fint, self.ffloat, self.fdata, self.free_work, self.free_fwork, self.unit,
                 self.column)
        dims = (self.fint.shape + self.ffloat.shape + self.fdata.shape + self.free_work.shape
                + self.free_fwork.shape + (self.nq, self.nv))
        lengths = (self.nq, self.nv) if name == "mass_matrix" else (self.nq, self.nv, self.nv,
                                                                    self.nv)
        out_cols = self.nv if name == "mass_matrix" else 0
        return entry("flexible", name), bound, dims, lengths, out_cols

    # ------------------------------------------------------------------ fixed joints
    def _welded_below(self, link):
        """The link indices welded (fixed joints) at or below `link`."""
        model = self.model
        below = {link}
        for index in range(link + 1, self.n_links):
            if model.link_int[index, L.LINK_FIXED] and model.link_int[index, L.LINK_PARENT] in below:
                below.add(index)
        return below

    def _child_joint_forces(self, body, below):
        """Sum of the wrenches of the movable joints hanging from the links `below` of `body`,
        in the body's frame."""
        total = np.zeros(6)
        for child in range(1, self.fint.shape[0]):
            if self.fint[child, F.PARENT] == body and self.model.body_int[child, L.PARENT_LINK] in below:
                X = self.work[child, F.X_MAT:F.X_MAT + 36].reshape(6, 6)
                total += X.T @ self.work[child, F.FORCE:F.FORCE + 6]
        return total

    def _fixed_joint_wrench(self, link, q, v, qdd):
        """Wrench through the fixed joint above `link`: the inertial wrenches of the links welded
        below it plus the wrenches of movable joints hanging from them, in the link frame
        (Newton-Euler of the welded sub-assembly)."""
        model, work = self.model, self.work
        body = self.link_body(link)
        below = self._welded_below(link)
        if self.fint[body, F.NF] > 0:
            total = self._welded_on_flexible_wrench(body, below, q, v, qdd)
            rot, pos = self.deformed_placement(link, q)
        else:
            vel = work[body, F.VEL:F.VEL + 6]
            acc = work[body, F.ACC:F.ACC + 6]
            total = np.zeros(6)
            for index in below:
                inertia = model.link_float[index, L.LINK_INERTIA:L.LINK_INERTIA + 36].reshape(6, 6)
                total += inertia @ acc + cross_force(vel, inertia @ vel)
                ext = self.link_wrench_in[index]
                l_rot, l_pos = self.link_placement(index)
                force = l_rot @ ext[:3]
                total -= np.concatenate([force, l_rot @ ext[3:] + np.cross(l_pos, force)])
            rot, pos = self.link_placement(link)
        total += self._child_joint_forces(body, below)
        # body frame -> link frame: n_l = R^T n, t_l = R^T (t - p x n)
        force = total[:3]
        return np.concatenate([rot.T @ force, rot.T @ (total[3:] - np.cross(pos, force))])

    def _welded_on_flexible_wrench(self, body, below, q, v, qdd):
        """Newton-Euler of the links `below`, welded to a flexible link, as the model moves them
        (their equivalent points, flexible/attachment.py: f_j = m_j a_j with gravity in a_j),
        about the body's reference origin, in its axes. Needs the RNEA's work rows."""
        work = self.work
        fb = next(f for f in self.flexible.bodies if f.body == body)
        qf = q[fb.iq:fb.iq + fb.n_modes]
        vf, af = v[fb.iv:fb.iv + fb.n_modes], qdd[fb.iv:fb.iv + fb.n_modes]
        vel, acc = work[body, F.VEL:F.VEL + 6], work[body, F.ACC:F.ACC + 6]
        w, alpha = vel[3:], acc[3:]
        a_origin = acc[:3] + np.cross(w, vel[:3])            # classical, gravity included
        total = np.zeros(6)
        for index in below:
            pts = fb.welded.get(index)
            if pts is None:
                continue
            r = pts.position + pts.N @ qf
            a = (a_origin + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
                 + 2 * np.cross(w, pts.N @ vf) + pts.N @ af)
            f = pts.mass[:, None] * a
            total[:3] += f.sum(axis=0)
            total[3:] += np.cross(r, f).sum(axis=0)
        return total
