"""RigidTree: the generic numba kernels (kernels/) on the rigid Model's flat arrays (tree.py).

Model arrays: private writable copies of body_int, body_float, link_int, link_float and
wrench_rows (numba types read-only arrays on a slow path, kernels/signatures.py). Data: `work`,
the loaded workspace (FEXT = the loads, used under the Robot's lock) and `free_work` (FEXT stays
zero: the lock-free calls and their C entries).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..model import layout as L
from ..kernels.batch import forward_dynamics_batch, inverse_dynamics_batch
from ..kernels.checked import forward_dynamics as _forward_dynamics
from ..kernels.checked import inverse_dynamics as _inverse_dynamics
from ..kernels.configuration import integrate as _integrate
from ..kernels.configuration import mechanical_energy as _mechanical_energy
from ..kernels.crba import mass_matrix as _mass_matrix
from ..kernels.kinematics import check_state as _check_state
from ..kernels.kinematics import forward_kinematics as _forward_kinematics
from ..kernels.link_pose import link_pose as _link_pose
from ..kernels.wrenches import joint_wrenches as _joint_wrenches
from ..kernels.wrenches import load_link_wrenches as _load_link_wrenches
from .tree import Tree

_EMPTY = np.zeros(0)


class RigidTree(Tree):
    """Generic kernels of a rigid tree (see the module docstring)."""

    kind = "rigid"

    def __init__(self, model):
        super().__init__(model)
        self.body_int = np.array(model.body_int)
        self.body_float = np.array(model.body_float)
        self.wrench_rows = np.array(model.wrench_rows)
        rows = model.body_int.shape[0]
        self.work = np.zeros((rows, L.WORK_WIDTH))        # loaded (locked)
        self.free_work = np.zeros((rows, L.WORK_WIDTH))   # lock-free, FEXT = 0
        self.link_wrench = np.zeros((self.n_links, 6))    # scratch of the wrench pass
        self.scratch = np.zeros(model.nv)
        self._energy = np.zeros(2)
        self.free_calls = {
            "forward_dynamics": partial(_forward_dynamics, self.body_int, self.body_float,
                                        self.free_work),
            "inverse_dynamics": partial(_inverse_dynamics, self.body_int, self.body_float,
                                        self.free_work),
            "mass_matrix": partial(_mass_matrix, self.body_int, self.body_float, self.free_work),
        }

    # ------------------------------------------------------------------ checks
    def check_state(self, q, v, x, check_v, check_x):
        """Status of q (nq,) and, when checked, v and x (nv,): sizes, NaN/inf, unit quaternions."""
        return _check_state(self.body_int, q, v, x, check_v, check_x)

    def singular_joint(self, body):
        """Name of the joint of the body whose articulated inertia was singular."""
        return self.joint_name_of_dof(int(self.model.body_int[body, L.IDX_V]))

    # ------------------------------------------------------------------ dynamics (loaded)
    def forward_dynamics(self, q, v, tau, out):
        """ABA on the loaded workspace (its loads act). -> status"""
        return _forward_dynamics(self.body_int, self.body_float, self.work, q, v, tau, out)

    def inverse_dynamics(self, q, v, qdd, out):
        """RNEA on the loaded workspace; the workspace keeps its kinematics, accelerations and
        joint forces for the caller to read. -> status"""
        return _inverse_dynamics(self.body_int, self.body_float, self.work, q, v, qdd, out)

    def mass_matrix(self, q, out):
        """CRBA (on the loaded workspace: callers hold the Robot's lock). -> status"""
        return _mass_matrix(self.body_int, self.body_float, self.work, q, out)

    def joint_wrenches(self, q, v, qdd, out):
        """Wrench of every URDF joint (len(wrench_rows), 6) with the loads in the workspace."""
        status = self.inverse_dynamics(q, v, qdd, self.scratch)
        if status == 0:
            _joint_wrenches(self.body_int, self.link_int, self.link_float, self.work,
                            self.link_fext, self.wrench_rows, self.link_wrench, out)
        return status

    # ------------------------------------------------------------------ batches
    def batch_kernel(self, name):
        return {"forward_dynamics": forward_dynamics_batch,
                "inverse_dynamics": inverse_dynamics_batch}[name]

    def new_batch_workspace(self):
        return (self.body_int, self.body_float, np.zeros_like(self.work))

    # ------------------------------------------------------------------ loads
    def set_loads(self, link_wrench, body_wrench=None):
        """Loads of the loaded workspace: link_wrench (n_links, 6), on each link in its frame
        about its origin (or None); body_wrench (nb + 1, 6) added on the bodies (body frames),
        or None. Both None: no loads."""
        if link_wrench is None and body_wrench is None:
            self.clear_loads()
            return
        if link_wrench is None:
            self.zero_loads()
        else:
            _load_link_wrenches(self.link_int, self.link_float, link_wrench, self.link_fext,
                                self.work)
        if body_wrench is not None:
            self.work[:, L.FEXT:L.FEXT + 6] += body_wrench
        self.loads_dirty = True

    def add_body_loads(self, body, link, wrench):
        """Add a wrench (6,) on `body` (body frame, about its origin) that acts on `link`
        (for the fixed-joint wrench pass)."""
        self.work[body, L.FEXT:L.FEXT + 6] += wrench
        self.link_fext[link] += wrench
        self.loads_dirty = True

    def zero_loads(self):
        self.work[:, L.FEXT:L.FEXT + 6] = 0.0
        self.link_fext[:] = 0.0

    # ------------------------------------------------------------------ kinematics, energy
    def kinematics(self, q, v=_EMPTY):
        """Poses (and velocities when v is given) of every body into the loaded workspace."""
        _forward_kinematics(self.body_int, self.body_float, self.work, q, v)

    def body_pose(self, body):
        """(R (3, 3), p (3,)) of `body` in the root frame, after kinematics()."""
        return (self.work[body, L.WORLD_ROT:L.WORLD_ROT + 9].reshape(3, 3),
                self.work[body, L.WORLD_POS:L.WORLD_POS + 3])

    def link_pose(self, q, link):
        """(4, 4) pose of link index `link` in the root frame at q (validated)."""
        pose = np.empty((4, 4))
        _link_pose(self.body_int, self.body_float, self.work, self.link_int, self.link_float, q,
                   _EMPTY, link, pose)
        return pose

    def energies(self, q, v):
        """(kinetic, gravitational potential, elastic) energies (J); v empty: kinetic 0."""
        _mechanical_energy(self.body_int, self.body_float, self.work, q, v, self._energy)
        return float(self._energy[0]), float(self._energy[1]), 0.0

    def integrate(self, q, v, dt, out):
        """out = q (+) v dt (the exponential map of every joint)."""
        _integrate(self.body_int, q, v, dt, out)

    # ------------------------------------------------------------------ C entries
    def c_entry(self, name):
        """(C entry function, bound arrays, dims, lengths, out columns) of the free call `name`
        (mbd_ros.fastcall.install's arguments)."""
        from ..fastcall import dims_of
        from ..fastcall.entries import entry
        bound = (self.body_int, self.body_float, self.free_work)
        dims = dims_of(*bound) + (self.nq, self.nv)
        lengths = (self.nq, self.nv) if name == "mass_matrix" else (self.nq, self.nv, self.nv,
                                                                    self.nv)
        return entry("rigid", name), bound, dims, lengths, self.nv if name == "mass_matrix" else 0
