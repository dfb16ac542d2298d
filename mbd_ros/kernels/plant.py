"""Small dense kernels of the simulated plant (mbd_ros.plant, drives, limits): the inverse of
the joint-space mass matrix by Cholesky, without allocation. M is symmetric positive definite
(CRBA); n is small (the robot's nv), so the O(n^3) dense inverse costs microseconds in numba
where numpy.linalg.inv costs tens of microseconds of call overhead."""
import math

from numba import njit


@njit(cache=True)
def spd_inverse(m, lower, out):
    """out (n, n) = M^-1 for M (n, n) symmetric positive definite; lower (n, n) scratch holds
    the Cholesky factor L (M = L L^T). Returns 0, or 1 if M is not positive definite (out is
    then undefined)."""
    n = m.shape[0]
    # ---- M = L L^T
    for j in range(n):
        s = m[j, j]
        for k in range(j):
            s -= lower[j, k] * lower[j, k]
        if not s > 0.0:
            return 1
        d = math.sqrt(s)
        lower[j, j] = d
        for i in range(j + 1, n):
            s = m[i, j]
            for k in range(j):
                s -= lower[i, k] * lower[j, k]
            lower[i, j] = s / d
    # ---- out = L^-1 (lower triangular), written into out's lower triangle
    for j in range(n):
        out[j, j] = 1.0 / lower[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= lower[i, k] * out[k, j]
            out[i, j] = s / lower[i, i]
    # ---- M^-1 = L^-T L^-1: (i, j) = sum_k L^-1[k, i] L^-1[k, j], k >= max(i, j)
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, n):
                s += out[k, i] * out[k, j]
            lower[i, j] = s
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = lower[i, j]
            out[j, i] = lower[i, j]
    return 0


@njit(cache=True)
def inverse_diagonal(m, lower, scratch, out):
    """out (n,) = diag(M^-1) (scratch, lower: (n, n)); returns spd_inverse's status."""
    status = spd_inverse(m, lower, scratch)
    for i in range(m.shape[0]):
        out[i] = scratch[i, i]
    return status


EFFORT = 0
POSITION = 1
VELOCITY = 2

# drive laws of the position / velocity modes (row DRIVE_LAW; mbd_ros.drives)
IDEAL = 0   # inertia-normalised PD + the model's compensation b(q, v)
PD = 1      # a servo's PD in N m/rad, N m s/rad, without model compensation


# rows of the drives' packed arrays (mbd_ros.drives.Drives: its named per-joint arrays are
# views of these rows; one argument each instead of ten, for numba's per-argument dispatch cost)
DRIVE_MODE, DRIVE_IV, DRIVE_IQ, DRIVE_LAW = range(4)
DRIVE_INT_ROWS = 4
DRIVE_EFFORT_CMD, DRIVE_Q_REF, DRIVE_VELOCITY_CMD, DRIVE_KP, DRIVE_KD, DRIVE_LOWER, \
    DRIVE_UPPER, DRIVE_PD_KP, DRIVE_PD_KD, DRIVE_BANDWIDTH, DRIVE_TAU_LAG = range(11)
DRIVE_FLOAT_ROWS = 11


@njit(cache=True)
def drive_torques(drive_int, drive_float, q, v, m, m_stable, bias, dt, tau_out):
    """Drive torques of the commanded joints (mbd_ros.drives; zero on the other dofs).
    Model: drive_int rows DRIVE_IV, DRIVE_IQ (n,) indices in v and q, DRIVE_LAW (n,) IDEAL |
    PD; drive_float rows DRIVE_LOWER, DRIVE_UPPER (n,) position limits, DRIVE_BANDWIDTH (n,)
    actuator bandwidth f, Hz (0: no lag). Data in: drive_int[DRIVE_MODE] (n,)
    EFFORT | POSITION | VELOCITY; drive_float rows DRIVE_EFFORT_CMD, DRIVE_VELOCITY_CMD,
    DRIVE_KP, DRIVE_KD (IDEAL, 1/s^2 and 1/s), DRIVE_PD_KP, DRIVE_PD_KD (PD, N m/rad and
    N m s/rad) (n,); DRIVE_Q_REF (n,) (advanced by v_ref dt in VELOCITY mode); DRIVE_TAU_LAG
    (n,) the lagged torque of the previous call (advanced here: call once per step); q, v;
    m (nv, nv) = M(q), m_stable (nv,) = effective_inertias' coupled-stable inertias, bias (nv,)
    = b(q, v) (read only for IDEAL servo joints). Data out: tau_out (nv,)."""
    for i in range(tau_out.shape[0]):
        tau_out[i] = 0.0
    for j in range(drive_int.shape[1]):
        i = drive_int[DRIVE_IV, j]
        mode = drive_int[DRIVE_MODE, j]
        if mode == EFFORT:
            tau = drive_float[DRIVE_EFFORT_CMD, j]
        else:
            velocity_cmd = drive_float[DRIVE_VELOCITY_CMD, j]
            if mode == VELOCITY:   # q_ref += v_ref dt, inside the limits (no wind-up)
                r = drive_float[DRIVE_Q_REF, j] + velocity_cmd * dt
                if r < drive_float[DRIVE_LOWER, j]:
                    r = drive_float[DRIVE_LOWER, j]
                elif r > drive_float[DRIVE_UPPER, j]:
                    r = drive_float[DRIVE_UPPER, j]
                drive_float[DRIVE_Q_REF, j] = r
            error = drive_float[DRIVE_Q_REF, j] - q[drive_int[DRIVE_IQ, j]]
            if drive_int[DRIVE_LAW, j] == PD:
                # tau = Kp (q_ref - q) + Kd (v_ref - v): no model compensation
                tau = (drive_float[DRIVE_PD_KP, j] * error
                       + drive_float[DRIVE_PD_KD, j] * (velocity_cmd - v[i]))
            else:
                # K = min(kp M_ii, s_i / (4 dt^2)), D = min(kd M_ii, s_i / dt), s_i = m_i / r_i
                # (effective_inertias: the caps bound the coupled chain, not each joint alone)
                stiffness = min(drive_float[DRIVE_KP, j] * m[i, i], m_stable[i] / (4.0 * dt * dt))
                damping = min(drive_float[DRIVE_KD, j] * m[i, i], m_stable[i] / dt)
                # tau = b + K (q_ref - q) + D (v_ref - v)
                tau = bias[i] + stiffness * error + damping * (velocity_cmd - v[i])
        bandwidth = drive_float[DRIVE_BANDWIDTH, j]
        if bandwidth > 0.0:
            # actuator lag T dy/dt = u - y, T = 1 / (2 pi f), u held over the step: exact
            # discretisation y_k = a y_(k-1) + (1 - a) u_k, a = exp(-2 pi f dt)
            a = math.exp(-2.0 * math.pi * bandwidth * dt)
            tau = a * drive_float[DRIVE_TAU_LAG, j] + (1.0 - a) * tau
            drive_float[DRIVE_TAU_LAG, j] = tau
        tau_out[i] = tau


@njit(cache=True)
def limit_torques(vel_idx, velocity, effort, v, m_eff, bias, inv_time_constant, tau):
    """Velocity-limit envelope b + m (-vmax - v) / T <= tau <= b + m (vmax - v) / T on the dofs
    vel_idx (skipped when empty), then |tau| <= effort (inf: none), in place (mbd_ros.limits).
    Returns True if a torque was changed."""
    changed = False
    for k in range(vel_idx.shape[0]):
        i = vel_idx[k]
        scale = m_eff[i] * inv_time_constant
        hi = bias[i] + scale * (velocity[i] - v[i])
        lo = bias[i] - scale * (velocity[i] + v[i])
        if tau[i] > hi:
            tau[i] = hi
            changed = True
        elif tau[i] < lo:
            tau[i] = lo
            changed = True
    for i in range(tau.shape[0]):
        if tau[i] > effort[i]:
            tau[i] = effort[i]
            changed = True
        elif tau[i] < -effort[i]:
            tau[i] = -effort[i]
            changed = True
    return changed


@njit(cache=True)
def limited_drive_torques(drive_int, drive_float, q, v, m, m_eff, m_stable, bias, dt, vel_idx,
                          velocity, effort, inv_time_constant, tau_out):
    """drive_torques (caps from m_stable), then limit_torques on them (the envelope from m_eff):
    the plant's torques in one call. Returns True if a torque was changed by the limits."""
    drive_torques(drive_int, drive_float, q, v, m, m_stable, bias, dt, tau_out)
    return limit_torques(vel_idx, velocity, effort, v, m_eff, bias, inv_time_constant, tau_out)


@njit(cache=True)
def effective_inertias(m, lower, scratch, drive_int, m_eff, m_stable):
    """m_eff (n,) = 1 / diag(M^-1) (the inertia each dof sees with the others free) and
    m_stable (n,) the drives' coupled-stable inertias, by spd_inverse (lower, scratch: (n, n);
    scratch = M^-1 after, lower's diagonal the r_i below). drive_int: the drives' int rows
    (drive_torques). Returns spd_inverse's status.

    m_stable is the servo drives' stability cap (drive_torques: D_i <= m_stable_i / dt): on the
    dofs S of the IDEAL drives not in EFFORT mode (the only damping the cap acts on),
    m_stable_i = m_eff_i / r_i, r_i = sum_(j in S) sqrt(m_eff_i m_eff_j) |M^-1_ij| (>= 1);
    elsewhere m_eff_i. The eigenvalues of dt M^-1 D, D zero off S, are those of its S block,
    and with D_i = m_stable_i / dt they are at most 1 (Gershgorin on that block, rows weighted
    by sqrt(r): each weighted row sums to 1). m_eff alone bounded each joint with the others
    held still, and a chain could reach 2 (the arm7 at kp 10000 / kd 200: 2.05, a 2-cycle
    oscillation that never decayed). Summing r_i over every dof (a free base's too) bounds
    dampings that do not exist and lowered the drives' damping needlessly (a sprung floating
    arm7 then diverged under semi-implicit Euler)."""
    status = spd_inverse(m, lower, scratch)
    n = m.shape[0]
    for i in range(n):
        m_eff[i] = 1.0 / scratch[i, i]
        m_stable[i] = math.sqrt(m_eff[i])   # sqrt(m_eff) until the last pass: n roots, not n^2
    drives = drive_int.shape[1]
    # r_i into lower's diagonal (spd_inverse's factor, scratch once M^-1 is formed)
    for a in range(drives):
        if drive_int[DRIVE_MODE, a] == EFFORT or drive_int[DRIVE_LAW, a] != IDEAL:
            continue
        i = drive_int[DRIVE_IV, a]
        row = 0.0
        for b in range(drives):
            if drive_int[DRIVE_MODE, b] == EFFORT or drive_int[DRIVE_LAW, b] != IDEAL:
                continue
            j = drive_int[DRIVE_IV, b]
            row += m_stable[j] * abs(scratch[i, j])
        lower[i, i] = row * m_stable[i]
    for i in range(n):
        m_stable[i] = m_eff[i]
    for a in range(drives):
        if drive_int[DRIVE_MODE, a] != EFFORT and drive_int[DRIVE_LAW, a] == IDEAL:
            i = drive_int[DRIVE_IV, a]
            m_stable[i] = m_eff[i] / lower[i, i]
    return status


@njit(cache=True)
def beyond_limits(q, limited_iq, lower, upper):
    """True if a joint (q index limited_iq[k]) is outside [lower[k], upper[k]]."""
    for k in range(limited_iq.shape[0]):
        x = q[limited_iq[k]]
        if x < lower[k] or x > upper[k]:
            return True
    return False


@njit(cache=True)
def max_abs(x):
    """max |x_i| (inf if an entry is NaN; 0 for an empty x)."""
    top = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        if not a <= top:
            if a != a:
                return math.inf
            top = a
    return top
