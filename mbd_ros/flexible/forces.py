"""Force elements and force callbacks on a FlexibleRobot (kernels/flexible_forces.py).

Same YAML (`forces:` section, mbd_ros/forces.py) and the same laws as on rigid robots; an end of
a spring_damper or bushing on a flexible link (or on a link welded to one) acts at the DEFORMED
point c + Phi_t(c) q_f with the frame turned by the Cayley rotation of Phi_r(c) q_f, exactly as a
child joint hangs there, so its generalized force has elastic rows Phi_t^T F + (G Phi_r)^T T.
FlexibleAppliedForces evaluates them into body wrenches (the flexible workspace's FEXT) and
generalized forces (joint springs and elastic rows) that FlexibleRobot adds to tau.
"""
from __future__ import annotations

import numpy as np

from .. import layout as L
from ..forces import AppliedForces, ForceElementValues, _checked, add_callback_loads
from ..robot import _vector
from ..kernels import flexible_forces as ff
from ..kernels import force_elements as fk
from . import layout as F

_FLOAT = np.dtype(np.float64)


class FlexibleAppliedForces(AppliedForces):
    """The force elements and callbacks of one FlexibleRobot.

    After evaluate(q, v, t): body_wrench (nb + 1, 6) the elements' wrenches on each body, in its
    reference frame about its origin; joint_force (nv,) joint springs, the elements' elastic
    generalized forces and the callbacks' generalized forces; link_wrench (n_links, 6) the
    callbacks' link wrenches (link frames); end_wrench (2 n, 6) per element end (body frame)."""

    def __init__(self, robot, specs=(), source=""):
        super().__init__(robot, specs, source)
        n = len(self.specs)
        fint = robot._fint
        ends = []
        for s in self.specs:
            if s.type == "joint_spring":
                ends += [None, None]
                continue
            for link_name, point, frame in ((s.parent, s.parent_point, s.parent_origin),
                                            (s.child, s.child_point, s.child_origin)):
                if frame is None:           # spring_damper: a point, the link's axes
                    frame = np.eye(4)
                    frame[:3, 3] = point
                ends.append((robot._link_index[link_name], frame))
        self.end_int, self.end_float, self.end_data, self.end_link = frame_ends(robot, ends)
        self.end_state = np.zeros((2 * n, ff.END_STATE_WIDTH))
        self.end_wrench = np.zeros((2 * n, 6))
        self.body_wrench = np.zeros((fint.shape[0], 6))

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, q, v, t):
        """Fill body_wrench, end_wrench, joint_force (nv,) and link_wrench (callbacks) at (q, v, t).
        q, v must be validated float64 arrays."""
        robot = self.robot
        if self.specs:
            ff.flexible_force_loads(robot._fint, robot._ffloat, robot._fdata, robot._work,
                                    robot._fwork, self.element_int, self.element_float,
                                    self.end_int, self.end_float, self.end_data, q, v,
                                    self.end_state, self.body_wrench, self.end_wrench,
                                    self.joint_force, self.values, self._scratch)
        else:
            self.body_wrench[:] = 0.0
            self.joint_force[:] = 0.0
        self.link_wrench[:] = 0.0
        add_callback_loads(robot, self.callbacks, t, q, v, self.link_wrench, self.joint_force)

    def load(self, q, v, tau, f_ext, t):
        """Evaluate at (q, v, t), put the user's f_ext and the callbacks' link wrenches into the
        workspace (FEXT) through robot._set_external_wrenches, add the elements' body wrenches,
        and return tau + the generalized forces (a buffer)."""
        robot = self.robot
        if not (type(q) is np.ndarray and q.dtype == _FLOAT and q.shape == (robot.nq,)
                and q.flags.c_contiguous and type(v) is np.ndarray and v.dtype == _FLOAT
                and v.shape == (robot.nv,) and v.flags.c_contiguous):
            q, v = _checked(robot, q, v)
        elif robot._check_fast(q, v):            # finite, unit quaternions (one kernel call)
            q, v = _checked(robot, q, v)         # raises the ValueError naming the problem
        if not (type(tau) is np.ndarray and tau.shape == (robot.nv,)):
            tau = _vector(tau, robot.nv, "tau")
        self.evaluate(q, v, t)
        user = None
        if self.callbacks:
            user = self._add_user_wrenches(f_ext) if f_ext is not None else self.link_wrench
        elif f_ext is not None:
            user = f_ext
        robot._set_external_wrenches(user)
        robot._work[:, F.FEXT:F.FEXT + 6] += self.body_wrench
        robot._fext_dirty = True
        np.add(tau, self.joint_force, out=self._total_tau)
        return self._total_tau

    def link_loads(self):
        """(n_links, 6) the last evaluation's element loads on rigid-body ends as link wrenches
        (link frame about its origin): what the fixed-joint wrenches of welded links need."""
        model = self.robot.model
        out = np.zeros((len(self.robot.link_names), 6))
        for row, link in enumerate(self.end_link):
            if link < 0 or self.end_int[row, ff.END_SHAPE] >= 0:
                continue
            rot = model.link_float[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
            pos = model.link_float[link, L.LINK_POS:L.LINK_POS + 3]
            force, torque = self.end_wrench[row, :3], self.end_wrench[row, 3:]
            out[link, :3] += rot.T @ force
            out[link, 3:] += rot.T @ (torque - np.cross(pos, force))
        return out

    def element_values(self, q, v):
        q, v = _checked(self.robot, q, v)
        robot = self.robot
        if self.specs:
            ff.flexible_force_loads(robot._fint, robot._ffloat, robot._fdata, robot._work,
                                    robot._fwork, self.element_int, self.element_float,
                                    self.end_int, self.end_float, self.end_data, q, v,
                                    self.end_state, self.body_wrench, self.end_wrench,
                                    self.joint_force, self.values, self._scratch)
        val = self.values
        return ForceElementValues(
            names=self.names, types=tuple(s.type for s in self.specs),
            force=val[:, fk.VALUE_FORCE].copy(), length=val[:, fk.VALUE_LENGTH].copy(),
            rate=val[:, fk.VALUE_RATE].copy(),
            wrench=val[:, fk.VALUE_WRENCH:fk.VALUE_WRENCH + 6].copy(),
            deflection=val[:, fk.VALUE_DEFLECTION:fk.VALUE_DEFLECTION + 6].copy())


def frame_ends(robot, ends):
    """Flat end arrays (kernels/flexible_forces.py) of frames on a FlexibleRobot's links.

    ends: list of (link index, (4, 4) frame in the link) or None (an unused row). Returns
    (end_int, end_float, end_data, end_link): each frame's body, its origin c and axes in the
    body's reference frame, and on a flexible body the mode shapes Phi_t(c), Phi_r(c)."""
    model, fint = robot.model, robot._fint
    by_body = {fb.body: fb for fb in robot.flexible.bodies}
    end_int = -np.ones((len(ends), ff.END_INT_WIDTH), dtype=np.int64)
    end_float = np.zeros((len(ends), ff.END_FLOAT_WIDTH))
    end_link = np.full(len(ends), -1, dtype=np.int64)
    blocks, offset = [], 0
    for row, end in enumerate(ends):
        if end is None:
            continue
        link, frame = end
        body = int(model.link_int[link, L.LINK_BODY])
        rot = model.link_float[link, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        pos = model.link_float[link, L.LINK_POS:L.LINK_POS + 3]
        c, frame_rot = rot @ frame[:3, 3] + pos, rot @ frame[:3, :3]
        end_link[row] = link
        end_int[row, ff.END_BODY] = body
        end_int[row, ff.END_NF] = 0
        end_float[row, ff.END_POINT:ff.END_POINT + 3] = c
        end_float[row, ff.END_ROT:ff.END_ROT + 9] = frame_rot.ravel()
        if body > 0 and fint[body, F.NF] > 0:
            fb = by_body[body]
            Phi_t, Phi_r = fb.frame_shapes(link, c)   # welded links: at their attachment
            end_int[row, ff.END_NF] = fb.n_modes
            end_int[row, ff.END_IQF] = fb.iq
            end_int[row, ff.END_IVF] = fb.iv
            end_int[row, ff.END_SHAPE] = offset
            blocks.append(np.concatenate([np.ravel(Phi_t), np.ravel(Phi_r)]))
            offset += 6 * fb.n_modes
    end_data = np.concatenate(blocks) if blocks else np.zeros(1)
    return end_int, end_float, end_data, end_link


def attach(robot, source):
    """Give the FlexibleRobot the force elements of `source` (path, YAML text or dict with a
    `forces:` section)."""
    from ..errors import ModelError
    from ..forces import read_forces
    joints = dict(zip(robot.joint_names, robot.joint_types))
    try:
        specs, where = read_forces(source, robot.link_names, joints)
    except ModelError as exc:
        raise ModelError(str(exc).replace("closure file", "forces file")) from None
    robot._applied = FlexibleAppliedForces(robot, specs, where)
    robot.drop_c_calls()     # the C-level FD/ID/M entries do not evaluate force elements
    return robot


def add_force(robot, fn):
    """robot.add_force on a FlexibleRobot: register fn(t, q, v) -> (nv,) or {link: wrench}."""
    if not callable(fn):
        raise ValueError(f"a force must be a callable fn(t, q, v) -> (nv,) generalized forces or "
                         f"{{link: wrench}}, got {fn!r}")
    if robot._applied is None:
        robot._applied = FlexibleAppliedForces(robot)
        robot.drop_c_calls()     # the C-level FD/ID/M entries do not evaluate callbacks
    robot._applied.callbacks.append(fn)
    return fn
