"""The task-space (Cartesian impedance) control law of the inverse dynamics node's
``mode: task_space``, as a plain class usable without ROS (docs/nodes.md, "task_space").

    law = CartesianImpedance(robot, "ee_link", stiffness=[...6], damping=[...6],
                             nullspace_stiffness=10.0)
    law.hold(q)                            # target = the link's pose at q, posture = q
    law.set_target(position, rotation)     # (3,), (3, 3) in the root frame
    tau = law.compute(q, v, dt)            # (nv,) drive torques; law.error (6,)

The law (Ott 2008, "Cartesian Impedance Control of Redundant and Flexible-Joint Robots", ch. 3;
Khatib 1987 for the dynamically consistent null space):

    tau = J^T (K e + D (twist_target - J v) + w_I) + b(q, v) + N^T tau_0
    tau_0 = k_n (q_posture - q) - d_n v                   (commanded joints only)
    D = diag(damping), or with damping_ratio z > 0 the modal design D = Q diag(2 z sqrt(k0)) Q^T
    for Lambda = Q Q^T, K = Q diag(k0) Q^T (Albu-Schaeffer et al. 2003), at every cycle
    N^T = 1 - J^T Lambda J M^-1,  Lambda = (J M^-1 J^T)^-1 (robot.operational_space_inertia)
    w_I = clip(sum K_I e dt, -w_I,max, w_I,max)           (optional integral term, default off)

Conventions: spatial vectors are [linear (3); angular (3)]; J = robot.link_jacobian(q, link,
"local_world_aligned") (root-frame axes, about the link origin), so J v is the link origin's
velocity and the angular velocity, root axes. The pose error e = [p_target - p;
log(R_target R^T)] is in the same frame (log: the rotation vector of SO(3), root axes), as is
`twist_target` (zero when not given). b(q, v) = robot.bias_forces: Coriolis, centrifugal and
gravity forces, force elements (the URDF passive joint damping and friction are not cancelled:
they only add damping). J^T Lambda J M^-1 tau_0 removes from tau_0 every component that would
accelerate the link (J M^-1 N^T = 0), so the posture term moves only the null space of a
redundant arm. Where J M^-1 J^T is singular (robot.operational_space_inertia refuses it: fewer
than six independent joints above the link, or a singular configuration) Lambda is the damped
(J M^-1 J^T + singular_damping 1)^-1 and `singular_count` counts those cycles.

Robots: rigid trees, fixed or floating base (the floating base's coordinates are part of J, M^-1
and b as the library gives them; the posture term acts on the commanded joints only). Closed
loops, mimic couplings and flexible links are refused by `check_robot` (one place), since the
law would then act on tree coordinates that are not independent.

Per cycle: J, M^-1 and b are computed into buffers allocated here once (out=), the law's
arithmetic by two allocation-free kernels (kernels/task_impedance.py); link_pose and
operational_space_inertia return new small arrays (4 x 4, 6 x 6). ~25-40 us a cycle on arm7
(2-core AMD EPYC under load 4), about the time of the same law written with Pinocchio and numpy.
Not thread safe: one law per thread (the node calls it from its executor only).
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.force_elements import rotation_log
from ..kernels.task_impedance import (add_nullspace_torque, damping_matrix, task_wrench_torque,
                                      task_wrench_torque_matrix)
from ..robot.frames import unknown_link_message

FRAME = "local_world_aligned"
SINGULAR_DAMPING = 1e-6     # default Tikhonov damping of J M^-1 J^T where it is singular
MAX_DAMPING_RATIO = 10.0    # task_damping_ratio's upper bound (overdamped far beyond use)
MAX_DT = 0.1                # s: the integral term ignores longer gaps between two states
# Caps of the targets a topic may set (rejected beyond them): the task error times the gains
# must stay finite (a finite target at 1e306 m overflowed K e and silenced the controller),
# and no robot's task link is asked to be a kilometre from its root or to move at 1 km/s
MAX_TARGET_DISTANCE = 1e3   # m, |target position| in the root frame
MAX_TARGET_SPEED = 1e3      # m/s and rad/s, each component of the feed-forward twist


def check_robot(robot, what="mode task_space"):
    """ValueError naming `what` and the kind for the robots the law does not support."""
    if getattr(robot, "flexible", None) is not None:
        raise ValueError(f"{what}: not supported for robots with flexible links (the frame "
                         "kinematics refuse them; docs/controllers.md)")
    if robot.closure_names:
        raise ValueError(f"{what}: not supported for closed-loop robots (closures "
                         f"{', '.join(robot.closure_names)}): J, M^-1 and Lambda are the open "
                         "tree's, in dependent coordinates")
    if robot.mimic_joints:
        raise ValueError(f"{what}: not supported for robots with coupled mimic joints "
                         f"({', '.join(robot.mimic_joints)}): J, M^-1 and Lambda are the open "
                         "tree's")


def check_link(robot, link, what="task_link"):
    """ValueError naming `what` and the closest link names unless `link` is a link of robot."""
    if not isinstance(link, str) or link not in robot.link_names:
        raise ValueError(f"{what}: {unknown_link_message(link, robot.link_names)}")
    return link


def six_vector(value, name):
    """(6,) float array of finite, non-negative numbers ([linear x y z; angular x y z]);
    ValueError naming `name` otherwise."""
    try:
        array = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be 6 numbers [linear x y z, angular x y z]") from None
    if array.shape != (6,):
        raise ValueError(f"{name} must be 6 numbers [linear x y z, angular x y z], got "
                         f"{array.size}")
    if not (np.isfinite(array).all() and (array >= 0.0).all()):
        raise ValueError(f"{name} must be finite and >= 0, got {array.tolist()}")
    return array


def quaternion_matrix(x, y, z, w, out=None):
    """(3, 3) rotation matrix of the quaternion (x, y, z, w) (normalized here); ValueError if
    it is not finite or its norm is not within 1e-3 of 1 (a ROS message's rounding is)."""
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(norm) or abs(norm - 1.0) > 1e-3:
        raise ValueError(f"orientation is not a unit quaternion (norm {norm:.6g})")
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    if out is None:
        out = np.empty((3, 3))
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - z * w)
    out[0, 2] = 2.0 * (x * z + y * w)
    out[1, 0] = 2.0 * (x * y + z * w)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - x * w)
    out[2, 0] = 2.0 * (x * z - y * w)
    out[2, 1] = 2.0 * (y * z + x * w)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return out


class CartesianImpedance:
    """Cartesian impedance law of one link with a dynamically consistent null-space posture
    term (module docstring for the law, frames and supported robots).

    robot: an mbd_ros.Robot (rigid tree). link: any of robot.link_names.
    stiffness, damping: K, D (6,) [linear x y z (N/m, N s/m); angular x y z (N m/rad,
        N m s/rad)], diagonal, finite, >= 0.
    nullspace_stiffness: k_n (N m/rad), >= 0. nullspace_damping: d_n (N m s/rad); None:
        2 sqrt(k_n) (critical for a unit joint inertia).
    integral_gain: K_I (6,) (N/(m s), N m/(rad s)); None: zeros (no integral term).
    integral_limit: (6,) bound of |w_I| per component (N, N m); None: unbounded.
    joint_iq, joint_iv: q and v indices of the joints the posture term acts on (default: every
        1-dof joint).
    singular_damping: the Tikhonov damping of J M^-1 J^T where it is singular.
    damping_ratio: 0 (default): D = diag(damping). > 0: D is designed at every cycle from K and
        Lambda(q) so that every mode of the task-space dynamics Lambda e'' + D e' + K e = 0 has
        this damping ratio ("double diagonalization", kernels/task_impedance.damping_matrix);
        `damping` is then unused. A diagonal D damps the heavy directions of Lambda far less
        than the light ones (the sample arm's wrist: a slowest orientation mode decaying at
        ~0.5 /s with the 0.2 N m s/rad its lightest axis allows under a one-cycle delay);
        modes of zero stiffness get no damping from the design.
    """

    def __init__(self, robot, link, stiffness, damping, nullspace_stiffness=0.0,
                 nullspace_damping=None, integral_gain=None, integral_limit=None,
                 joint_iq=None, joint_iv=None, singular_damping=SINGULAR_DAMPING,
                 damping_ratio=0.0):
        check_robot(robot, "CartesianImpedance")
        self.robot = robot
        self.link = check_link(robot, link, "link")
        nv = robot.nv
        self.stiffness = six_vector(stiffness, "stiffness")
        self.damping = six_vector(damping, "damping")
        self.integral_gain = np.zeros(6) if integral_gain is None else \
            six_vector(integral_gain, "integral_gain")
        self.integral_limit = np.full(6, np.inf) if integral_limit is None else \
            six_vector(integral_limit, "integral_limit")
        self.set_nullspace(nullspace_stiffness, nullspace_damping)
        if not (math.isfinite(singular_damping) and singular_damping > 0.0):
            raise ValueError(f"singular_damping must be finite and > 0, got {singular_damping}")
        self.singular_damping = float(singular_damping)
        self.set_damping_ratio(damping_ratio)
        self.damping_design = np.zeros((6, 6))   # D of the last cycle (damping_ratio > 0)
        self._chol, self._modes = np.zeros((6, 6)), np.zeros((6, 6))
        if joint_iq is None or joint_iv is None:
            one_dof = [k for k, t in enumerate(robot.joint_types)
                       if t in ("revolute", "continuous", "prismatic")]
            joint_iq = [robot.idx_q[k] for k in one_dof]
            joint_iv = [robot.idx_v[k] for k in one_dof]
        self.joint_iq = np.asarray(joint_iq, dtype=np.int64)
        self.joint_iv = np.asarray(joint_iv, dtype=np.int64)
        # target and posture
        self.position = np.zeros(3)
        self.rotation = np.eye(3)
        self.twist = np.zeros(6)
        self.posture = robot.neutral()
        # results
        self.error = np.zeros(6)           # [p_target - p; log(R_target R^T)], root axes
        self.integral = np.zeros(6)        # w_I
        self.wrench = np.zeros(6)          # K e + D (twist_target - J v) + w_I
        self.singular_count = 0
        # buffers (allocated once)
        self.J = np.zeros((6, nv))
        self.Minv = np.zeros((nv, nv))
        self.bias = np.zeros(nv)
        self.tau0 = np.zeros(nv)
        self.y = np.zeros(nv)
        self.z = np.zeros(6)
        self.u = np.zeros(6)
        self.tmp6 = np.zeros(6)
        self.r_err = np.zeros((3, 3))
        self.log = np.zeros(3)

    # ------------------------------------------------------------------ settings
    def set_nullspace(self, stiffness, damping=None):
        """k_n, d_n (numbers >= 0); damping None: 2 sqrt(k_n)."""
        k = float(stiffness)
        d = 2.0 * math.sqrt(k) if damping is None or (k >= 0 and damping < 0) else float(damping)
        if not (math.isfinite(k) and k >= 0.0 and math.isfinite(d) and d >= 0.0):
            raise ValueError(f"nullspace stiffness and damping must be finite and >= 0, got "
                             f"{stiffness}, {damping}")
        self.nullspace_stiffness, self.nullspace_damping = k, d

    def set_damping_ratio(self, ratio):
        """The modal damping ratio of the designed D (0: D = diag(damping)); finite, in
        [0, MAX_DAMPING_RATIO]."""
        ratio = float(ratio)
        if not (math.isfinite(ratio) and 0.0 <= ratio <= MAX_DAMPING_RATIO):
            raise ValueError(f"damping_ratio must be in [0, {MAX_DAMPING_RATIO:g}], got {ratio}")
        self.damping_ratio = ratio

    def set_target(self, position, rotation):
        """Target pose of the link: position (3,) and rotation matrix (3, 3), root frame."""
        self.position[:] = position
        self.rotation[:] = rotation

    def set_twist(self, twist=None):
        """Target twist (6,) [linear; angular] of the link origin, root axes; None: zero."""
        if twist is None:
            self.twist[:] = 0.0
        else:
            self.twist[:] = twist

    def set_posture(self, q):
        """Null-space posture (nq,): the commanded joints are pulled towards it."""
        self.posture[:] = q

    def hold(self, q):
        """Target = the link's pose at q, zero target twist, posture = q, integral cleared."""
        pose = self.robot.link_pose(q, self.link)
        self.set_target(pose[:3, 3], pose[:3, :3])
        self.set_twist(None)
        self.set_posture(q)
        self.integral[:] = 0.0

    # ------------------------------------------------------------------ the law
    def pose_error(self, q, out=None):
        """(6,) e = [p_target - p; log(R_target R^T)] at q (root axes)."""
        out = self.error if out is None else out
        pose = self.robot.link_pose(q, self.link)
        np.subtract(self.position, pose[:3, 3], out=out[:3])
        np.matmul(self.rotation, pose[:3, :3].T, out=self.r_err)
        rotation_log(self.r_err.reshape(9), self.log)    # r_err is C-contiguous: a view
        out[3:] = self.log
        return out

    def _inertia(self, q):
        """Lambda at q (6, 6): robot.operational_space_inertia, damped where singular."""
        try:
            return self.robot.operational_space_inertia(q, self.link, FRAME)
        except ValueError:   # J M^-1 J^T singular: damped (documented)
            self.singular_count += 1
            return self.robot.operational_space_inertia(q, self.link, FRAME,
                                                        damping=self.singular_damping)

    def nullspace_torque(self, q, v, out):
        """out (nv,) = N^T tau_0 = tau_0 - J^T Lambda J M^-1 tau_0 (Khatib 1987, eq. 41), with
        J = self.J at q already computed (kernels/task_impedance.py)."""
        out[:] = 0.0
        self.robot.mass_matrix_inverse(q, out=self.Minv)
        add_nullspace_torque(self.J, self.Minv, self._inertia(q), self.posture, q, v,
                             self.joint_iq, self.joint_iv, self.nullspace_stiffness,
                             self.nullspace_damping, self.tau0, self.y, self.z, self.u, out)
        return out

    def compute(self, q, v, dt=0.0, out=None):
        """(nv,) tau = J^T (K e + D (twist_target - J v) + w_I) + b(q, v) + N^T tau_0 at the
        state q (nq,), v (nv,); dt (s) advances the integral term (0: not advanced). Fills
        self.error (6,), self.wrench (6,), self.integral (6,)."""
        robot = self.robot
        if out is None:
            out = np.empty(robot.nv)
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        e = self.pose_error(q)
        J = robot.link_jacobian(q, self.link, FRAME, out=self.J)
        if 0.0 < dt <= MAX_DT and self.integral_gain.any():
            np.multiply(self.integral_gain, e, out=self.tmp6)
            self.tmp6 *= dt
            self.integral += self.tmp6
            np.clip(self.integral, -self.integral_limit, self.integral_limit,
                    out=self.integral)
        robot.bias_forces(q, v, out=self.bias)
        nullspace = self.nullspace_stiffness > 0.0 or self.nullspace_damping > 0.0
        lam = self._inertia(q) if nullspace or self.damping_ratio > 0.0 else None
        # w = K e + D (twist_target - J v) + w_I; out = J^T w + b(q, v)
        if self.damping_ratio > 0.0 and damping_matrix(lam, self.stiffness, self.damping_ratio,
                                                       self._chol, self._modes,
                                                       self.damping_design) == 0:
            task_wrench_torque_matrix(J, v, e, self.twist, self.stiffness, self.damping_design,
                                      self.integral, self.bias, self.tmp6, self.wrench, out)
        else:
            task_wrench_torque(J, v, e, self.twist, self.stiffness, self.damping, self.integral,
                               self.bias, self.wrench, out)
        if nullspace:
            robot.mass_matrix_inverse(q, out=self.Minv)    # out += N^T tau_0
            add_nullspace_torque(J, self.Minv, lam, self.posture, q, v,
                                 self.joint_iq, self.joint_iv, self.nullspace_stiffness,
                                 self.nullspace_damping, self.tau0, self.y, self.z, self.u,
                                 out)
        return out


def six_gains(value):
    """Parameter check of task_stiffness & co.: error text, or None for 6 finite numbers >= 0."""
    try:
        six_vector(value, "the value")
    except ValueError as exc:
        return str(exc).replace("the value ", "")
    return None
