"""Drive emulation of a simulated plant: effort, position and velocity command interfaces, as a
robot's joint drivers offer them. No ROS imports.

    drives = JointDrives(robot, joints=["joint_1", ...], kp=400.0, kd=40.0)
    drives.command_position([0.1, ...])            # all joints, or some by index: idx=[0, 2]
    drives.command_velocity([0.2, ...])
    drives.command_effort([1.0, ...])
    tau = drives.torques(q, v, dt)                  # (nv,) drive torques for this step

Each commanded joint i (of `joints`) is in one of three modes, set by its latest command:

- EFFORT:   tau_i = the commanded effort.
- POSITION: tau_i = b_i(q, v) + K_i (q_ref_i - q_i) + D_i (v_ref_i - v_i)
- VELOCITY: the same law with q_ref_i advancing by v_ref_i dt every step from the position the
            joint had when the velocity command arrived (a velocity loop that holds its position
            when the command is 0 and has no steady-state error).

b(q, v) = ID(q, v, 0) is the model's gravity, Coriolis and passive-force compensation (the
feed-forward a model-based driver adds). The gains are inertia-normalised (kp in 1/s^2, kd in
1/s), so one pair behaves alike on every joint of every robot: K_i = kp_i M_ii(q),
D_i = kd_i M_ii(q) with M_ii the joint's inertia (kd = 2 sqrt(kp) is critically damped for a
joint whose neighbours are held). An explicit integrator is stable only while the torque gains
are small for the inertia the joint shows when its neighbours are free, m_i = 1 / (M^-1)_ii
<= M_ii (tiny for a light leg on a floating base), and for the chain as a whole: the drive
therefore caps them at D_i <= s_i / dt and K_i <= s_i / (4 dt^2) with s_i = m_i / r_i,
r_i = sum_j sqrt(m_i m_j) |M^-1_ij| >= 1 over the servo joints j (kernels/plant.py
effective_inertias: the eigenvalues of dt M^-1 D stay <= 1 for the coupled chain; capping by
m_i alone let the arm7 at kp 10000 / kd 200 reach 2.05 and oscillate; a digital drive's gains
are bounded by its sample rate as well). With the exact model compensation the steady-state
error is zero.

Drive models (`model`, per JointDrives; `set_model`): "ideal" is the law above; "pd" is a
servo's PD without model compensation,

    tau_i = Kp_i (q_ref_i - q_i) + Kd_i (v_ref_i - v_i)      (Kp N m/rad, Kd N m s/rad)

so a joint held against gravity settles at q_ref - g_i(q) / Kp_i (its steady-state error; no
stability cap: the gains are the servo's, see pd_gains for the defaults). Actuator bandwidth
(`set_actuator_bandwidth`, f Hz, 0: none): every drive torque (any mode) passes a first-order
lag T dy/dt = u - y, T = 1 / (2 pi f), discretised exactly for u held over the step:
y_k = a y_(k-1) + (1 - a) u_k, a = exp(-2 pi f dt): the torque applied over step k after a step
of u at step 0 is u (1 - exp(-(k + 1) dt / T)), the continuous lag's value at the step's end.
The lag starts from zero torque (reset() too). Position targets are clipped to the URDF
position limits (`limits`), and the torques are clipped by the plant's JointLimits afterwards
(effort-limited drives). Commands are held until the next one (as a real driver holds them);
timing out effort commands is the caller's business.
"""
from __future__ import annotations

import numpy as np

from ..robot.joint_map import scalar_dofs

from ..kernels.plant import (DRIVE_BANDWIDTH, DRIVE_EFFORT_CMD, DRIVE_FLOAT_ROWS,
                             DRIVE_INT_ROWS, DRIVE_IQ, DRIVE_IV, DRIVE_KD, DRIVE_KP, DRIVE_LAW,
                             DRIVE_LOWER, DRIVE_MODE, DRIVE_PD_KD, DRIVE_PD_KP, DRIVE_Q_REF,
                             DRIVE_TAU_LAG, DRIVE_UPPER, DRIVE_VELOCITY_CMD, IDEAL, PD)
from ..kernels.plant import drive_torques as _drive_torques
from ..kernels.plant import effective_inertias as _effective_inertias
from ..kernels.plant import spd_inverse as _spd_inverse

EFFORT, POSITION, VELOCITY = 0, 1, 2
MODE_NAMES = ("effort", "position", "velocity")
DRIVE_MODELS = {"ideal": IDEAL, "pd": PD}
PD_BANDWIDTH_HZ = 10.0   # default position-loop bandwidth of a "pd" servo (pd_gains)
MAX_DAMPING_RATIO = 1e3  # pd_gains: beyond it Kd = 2 zeta m w is no servo's (and overflows)


def pd_gains(robot, q, iv, bandwidth_hz=PD_BANDWIDTH_HZ, damping_ratio=1.0):
    """(Kp, Kd) (n,) N m/rad and N m s/rad of servos with position-loop bandwidth
    `bandwidth_hz` (Hz) on the dofs iv (n,) of `robot` at the configuration q (nq,):
    Kp = m_i w^2, Kd = 2 zeta m_i w, w = 2 pi bandwidth_hz, m_i = 1 / (M(q)^-1)_ii the inertia
    the joint shows with its neighbours free: the gains a servo tuned on its joint alone would
    have (a second-order loop of natural frequency w and damping ratio zeta = damping_ratio).
    With these gains the coupled loop's eigenvalues stay bounded, lambda(M^-1 Kp) <=
    trace(M^-1 Kp) = n w^2 (tuning on M_ii instead gave a light wrist behind heavy links gains
    its inertia could not carry: an explicit integrator at 500 Hz went unstable)."""
    bandwidth_hz = float(bandwidth_hz)
    if not (np.isfinite(bandwidth_hz) and bandwidth_hz > 0.0):
        raise ValueError(f"bandwidth_hz must be a finite number > 0, got {bandwidth_hz}")
    damping_ratio = float(damping_ratio)
    if not 0.0 <= damping_ratio <= MAX_DAMPING_RATIO:
        raise ValueError(f"damping_ratio must be in [0, {MAX_DAMPING_RATIO:g}] (1: critically "
                         f"damped), got {damping_ratio}")
    w = 2.0 * np.pi * bandwidth_hz
    m = robot.mass_matrix(np.asarray(q, dtype=float))
    inertia = effective_inertia(m)[np.asarray(iv)]
    return inertia * w * w, 2.0 * damping_ratio * inertia * w


def effective_inertia(m, minv=None, lower=None):
    """(nv,) 1 / diag(M^-1): the inertia each dof shows to a force on it alone, the others free.
    minv (nv, nv): receives M^-1; lower (nv, nv): scratch (both allocated when not given)."""
    n = m.shape[0]
    lower = np.empty((n, n)) if lower is None else lower
    minv = np.empty((n, n)) if minv is None else minv
    if _spd_inverse(np.ascontiguousarray(m), lower, minv):
        raise ValueError("the mass matrix is not positive definite")
    return 1.0 / np.diagonal(minv)


def gain_vector(value, n, name):
    """A gain given as one number or one per joint -> (n,) array; ValueError otherwise."""
    values = np.atleast_1d(np.asarray(value, dtype=float))
    if values.ndim != 1:
        raise ValueError(f"{name} must be a number or a list of numbers")
    if len(values) == 1:
        values = np.full(n, values[0])
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values; give one, or one per commanded "
                         f"joint ({n})")
    if not (np.isfinite(values).all() and (values >= 0.0).all()):
        raise ValueError(f"{name} must be finite and >= 0, got {values.tolist()}")
    return values


class JointDrives:
    """Drives of the commanded joints of `robot` (1-dof joints, by name).

    joints: the commanded joints (their order is that of command arrays);
    kp, kd: inertia-normalised gains of the "ideal" model, 1/s^2 and 1/s (one number or one
    per joint); lower, upper: (nv,) position limits for the targets (default: none);
    model: "ideal" (default) or "pd"; pd_kp, pd_kd: the "pd" gains, N m/rad and N m s/rad (one
    number or one per joint; default pd_gains at the neutral configuration);
    actuator_bandwidth_hz: first-order torque lag, Hz (0: none; see the module docstring).
    Attributes (n,) in `joints` order: mode, effort_cmd, position_cmd, velocity_cmd, and
    q_ref (the position tracked, = position_cmd in POSITION mode), pd_kp, pd_kd, bandwidth,
    tau_lag (the lag's state), law (IDEAL | PD per joint).
    """

    def __init__(self, robot, joints, kp=400.0, kd=40.0, lower=None, upper=None,
                 model="ideal", pd_kp=None, pd_kd=None, actuator_bandwidth_hz=0.0):
        # 1-dof joints (helical: its angle) and cylindrical / universal dofs '<joint>/<component>'
        dofs = scalar_dofs(robot)
        iv_of = {n: iv for n, (_, iv) in dofs.items()}
        iq_of = {n: iq for n, (iq, _) in dofs.items()}
        unknown = [j for j in joints if j not in dofs]
        if unknown:
            raise ValueError(f"drives: {unknown} are not 1-dof joints of the robot (nor "
                             "cylindrical / universal dofs '<joint>/<component>')")
        self.robot = robot
        self.joints = list(joints)
        n = len(self.joints)
        # the kernel's packed arrays (kernels/plant.py DRIVE_* rows); the named per-joint
        # arrays are views of their rows, changed in place only
        self._int = np.zeros((DRIVE_INT_ROWS, n), dtype=np.int64)
        self._float = np.zeros((DRIVE_FLOAT_ROWS, n))
        self.iv = self._int[DRIVE_IV]
        self.iv[:] = [iv_of[j] for j in joints]
        self.iq = self._int[DRIVE_IQ]
        self.iq[:] = [iq_of[j] for j in joints]
        self.kp = self._float[DRIVE_KP]
        self.kd = self._float[DRIVE_KD]
        self.set_gains(kp, kd)
        nv = robot.nv
        lo = np.full(nv, -np.inf) if lower is None else np.asarray(lower, dtype=float)
        hi = np.full(nv, np.inf) if upper is None else np.asarray(upper, dtype=float)
        self.lower = self._float[DRIVE_LOWER]
        self.lower[:] = lo[self.iv]
        self.upper = self._float[DRIVE_UPPER]
        self.upper[:] = hi[self.iv]
        self.mode = self._int[DRIVE_MODE]
        self.mode[:] = EFFORT
        self.effort_cmd = self._float[DRIVE_EFFORT_CMD]
        self.position_cmd = np.zeros(n)
        self.velocity_cmd = self._float[DRIVE_VELOCITY_CMD]
        self.q_ref = self._float[DRIVE_Q_REF]
        self.law = self._int[DRIVE_LAW]
        self.pd_kp = self._float[DRIVE_PD_KP]
        self.pd_kd = self._float[DRIVE_PD_KD]
        self.bandwidth = self._float[DRIVE_BANDWIDTH]
        self.tau_lag = self._float[DRIVE_TAU_LAG]
        self._servo = False
        self.set_model(model, pd_kp, pd_kd)
        self.set_actuator_bandwidth(actuator_bandwidth_hz)
        # Data
        self._zero = np.zeros(nv)
        self._bias = np.zeros(nv)
        self._m = np.zeros((nv, nv))
        self._tau = np.zeros(nv)
        self._e = np.zeros(n)

    def set_gains(self, kp=None, kd=None):
        """Change the gains at once (one number or one per joint); ValueError if invalid."""
        n = len(self.joints)
        kp = self.kp if kp is None else gain_vector(kp, n, "kp")
        kd = self.kd if kd is None else gain_vector(kd, n, "kd")
        self.kp[:] = kp
        self.kd[:] = kd

    def set_model(self, model, pd_kp=None, pd_kd=None, q=None):
        """The drive model of every joint: "ideal" or "pd" (see the module docstring), with the
        "pd" gains pd_kp (N m/rad), pd_kd (N m s/rad): one number or one per joint; None keeps
        the current ones, or, if there are none, takes pd_gains (10 Hz) at the configuration q
        (nq,; default neutral: pass the configuration the robot works around, since the
        inertias vary with it). ValueError naming the argument if invalid."""
        if model not in DRIVE_MODELS:
            raise ValueError(f"drive model must be one of {sorted(DRIVE_MODELS)}, got "
                             f"{model!r}")
        n = len(self.joints)
        kp = None if pd_kp is None else gain_vector(pd_kp, n, "pd_kp")
        kd = None if pd_kd is None else gain_vector(pd_kd, n, "pd_kd")
        if model == "pd" and (kp is None or kd is None) and \
                not (self.pd_kp.any() or self.pd_kd.any()):
            default_kp, default_kd = pd_gains(self.robot, self.robot.neutral() if q is None
                                              else q, self.iv)
            kp = default_kp if kp is None else kp
            kd = default_kd if kd is None else kd
        if kp is not None:
            self.pd_kp[:] = kp
        if kd is not None:
            self.pd_kd[:] = kd
        self.model = model
        self.law[:] = DRIVE_MODELS[model]
        self._mode_changed()

    def set_actuator_bandwidth(self, bandwidth_hz):
        """First-order lag of the drive torques, Hz: one number or one per joint (0: none)."""
        self.bandwidth[:] = gain_vector(bandwidth_hz, len(self.joints), "actuator_bandwidth_hz")

    def reset(self):
        """Every joint back to EFFORT mode with zero commands (and zero lagged torque)."""
        self.tau_lag[:] = 0.0
        self.mode[:] = EFFORT
        self.effort_cmd[:] = 0.0
        self.position_cmd[:] = 0.0
        self.velocity_cmd[:] = 0.0
        self._mode_changed()

    def _index(self, values, idx):
        values = np.asarray(values, dtype=float)
        idx = np.arange(len(self.joints)) if idx is None else np.asarray(idx, dtype=np.int64)
        if values.shape != idx.shape:
            raise ValueError(f"{values.size} command values for {idx.size} joints")
        if not np.isfinite(values).all():
            raise ValueError("command contains NaN or inf")
        return values, idx

    # ------------------------------------------------------------------ commands
    def command_effort(self, values, idx=None):
        """EFFORT mode with these efforts for the joints idx (default all, in `joints` order)."""
        values, idx = self._index(values, idx)
        self.mode[idx] = EFFORT
        self.effort_cmd[idx] = values
        self._mode_changed()

    def command_position(self, values, idx=None, velocities=None):
        """POSITION mode towards these positions (clipped to the limits); optional velocity
        feed-forward (default 0)."""
        values, idx = self._index(values, idx)
        vel = np.zeros(len(idx)) if velocities is None else self._index(velocities, idx)[0]
        self.mode[idx] = POSITION
        self.position_cmd[idx] = np.clip(values, self.lower[idx], self.upper[idx])
        self.q_ref[idx] = self.position_cmd[idx]
        self.velocity_cmd[idx] = vel
        self._mode_changed()

    def command_velocity(self, values, idx=None, q=None):
        """VELOCITY mode with these velocities; q (nq,): the current configuration, where the
        velocity loop starts from for joints not already in VELOCITY mode."""
        values, idx = self._index(values, idx)
        starting = idx[self.mode[idx] != VELOCITY]
        if len(starting):
            if q is None:
                raise ValueError("command_velocity needs q for joints entering velocity mode")
            self.q_ref[starting] = np.clip(np.asarray(q, dtype=float)[self.iq[starting]],
                                           self.lower[starting], self.upper[starting])
        self.mode[idx] = VELOCITY
        self.velocity_cmd[idx] = values
        self._mode_changed()

    def zero_efforts(self):
        """The effort commands become 0 (an effort command timed out); other modes are held."""
        self.effort_cmd[:] = 0.0

    def pd_sampling_problems(self, m, dt):
        """[(joint, text)] of the "pd" gains that no step of dt (s: the plant's step, over which
        the torque is held) keeps stable at M = m (nv, nv), empty when all can be stable.

        A servo's PD sampled every dt with the torque held, on a joint of inertia m_i (here
        1 / (M^-1)_ii, its inertia with its neighbours free, the smallest it shows): with
        a = Kp dt^2 / m_i, b = Kd dt / m_i the exact step of m_i x'' = -Kp x_k - Kd v_k is
        z^2 - (2 - a/2 - b) z + (1 - b + a/2) = 0, and Jury's test gives |z| < 1 iff
        a/2 < b < 2, i.e. Kd < 2 m_i / dt and Kp dt < 2 Kd. A necessary condition (the
        coupled chain, an actuator lag and gravity's stiffness can only narrow it)."""
        if self.model != "pd":
            return []
        m_eff = self.drive_inertias(np.asarray(m, dtype=float))[0]
        problems = []
        for k, joint in enumerate(self.joints):
            inertia = m_eff[self.iv[k]]
            kp, kd = float(self.pd_kp[k]), float(self.pd_kd[k])
            if kd * dt >= 2.0 * inertia:
                problems.append((joint, f"Kd {kd:g} N m s/rad >= 2 m / dt = "
                                        f"{2.0 * inertia / dt:.4g} (m = {inertia:.3g})"))
            elif kp > 0.0 and kp * dt >= 2.0 * kd:
                problems.append((joint, f"Kp dt = {kp * dt:.4g} >= 2 Kd = {2.0 * kd:.4g} "
                                        "(too little damping for this step)"))
        return problems

    # ------------------------------------------------------------------ torques
    def needs_model_terms(self):
        """True when torques() uses M(q) and b(q, v) (an "ideal" joint in position or velocity
        mode; a "pd" servo uses neither)."""
        return self._servo

    def _mode_changed(self):
        self._servo = bool(((self.mode != EFFORT) & (self.law == IDEAL)).any())

    def torques(self, q, v, dt, out=None, m=None, m_eff=None, bias=None, m_stable=None):
        """(nv,) drive torques at (q, v) for a step of dt (zero on dofs without a drive).
        Advances the velocity-mode references by v_ref dt. m = M(q), bias (nv,) = ID(q, v, 0)
        and m_stable (nv,), the coupled-stable inertias of the gains' cap (kernels/plant.py
        effective_inertias), if the caller has them (else computed here when needed; m_eff,
        1 / diag(M^-1), is not read: kept for the callers that pass it)."""
        tau = self._tau if out is None else out
        if self._servo:
            robot = self.robot
            if bias is None:
                bias = robot.inverse_dynamics(q, v, self._zero, out=self._bias)
            if m is None:
                m = robot.mass_matrix(q, out=self._m)
            if m_stable is None:
                m_stable = self.drive_inertias(m)[1]
        else:   # every joint in effort mode: the model terms are not read
            m, m_stable, bias = self._m, self._zero, self._zero
        _drive_torques(*self.kernel_arrays(), q, v, m, m_stable, bias, float(dt), tau)
        return tau

    def drive_inertias(self, m):
        """(m_eff, m_stable) (nv,) of M = m (nv, nv) for these drives in their present modes:
        1 / diag(M^-1) and the coupled-stable inertias of the servo gains' cap
        (kernels/plant.py effective_inertias); new arrays. ValueError if M is not positive
        definite."""
        n = m.shape[0]
        m_eff, m_stable = np.empty(n), np.empty(n)
        if _effective_inertias(np.ascontiguousarray(m), np.empty((n, n)), np.empty((n, n)),
                               self._int, m_eff, m_stable):
            raise ValueError("the mass matrix is not positive definite")
        return m_eff, m_stable

    def kernel_arrays(self):
        """(int (4, n), float (11, n)): the packed per-joint arrays of kernels/plant.py
        drive_torques (DRIVE_* rows; the named arrays are views of them)."""
        return self._int, self._float

    def model_terms_or_zeros(self, m, m_eff, bias, m_stable=None):
        """(m, m_eff, bias, m_stable) as the kernel reads them: those given (m_stable computed
        from m when not), or placeholders when no joint is a servo (the kernel then reads none
        of them)."""
        if m is None:
            return self._m, self._zero, self._zero, self._zero
        if m_stable is None:
            m_stable = self.drive_inertias(m)[1]
        return m, m_eff, bias, m_stable

    def modes(self):
        """{joint: 'effort' | 'position' | 'velocity'}."""
        return {j: MODE_NAMES[m] for j, m in zip(self.joints, self.mode)}
