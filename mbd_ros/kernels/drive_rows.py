"""The Plant's drive torques along a recorded trajectory, all rows in one call (a sweep's
peak-torque metric: mbd_ros/sweep/metrics.py): per row k the drives' command is the reference
row, and the torque is exactly what kernels/plant.py gives the Plant at that state
(drive_torques, then limit_torques when the limits are on). No allocation: the caller owns
every array."""
from numba import njit

from .plant import DRIVE_Q_REF, DRIVE_VELOCITY_CMD, drive_torques, effective_inertias, \
    limit_torques


@njit(cache=True)
def drive_torque_rows(drive_int, drive_float, q_rows, v_rows, m_rows, bias_rows, targets,
                      velocities, dt, limited, vel_idx, velocity, effort, inv_time_constant,
                      lower, scratch, m_eff, m_stable, tau_rows):
    """tau_rows (K, nv): row k = the drive torques at (q_rows[k], v_rows[k]) commanded to
    targets[k] (positions, clipped by the caller as command_position clips them) and
    velocities[k] (nd,), with M = m_rows[k] (K, nv, nv) and b = bias_rows[k] = ID(q, v, 0):
        tau_i = b_i + K_i (q_ref_i - q_i) + D_i (v_ref_i - v_i),
        K_i = min(kp_i M_ii, s_i / (4 dt^2)), D_i = min(kd_i M_ii, s_i / dt), s_i = the
        coupled-stable inertia of effective_inertias (m_i = 1 / (M^-1)_ii over its row sum
        among the servo joints)
    (mbd_ros.drives), then, when `limited`, the velocity envelope and effort limits
    (mbd_ros.limits: b + m (+-vmax - v) / T, |tau| <= effort). lower, scratch (nv, nv) and
    m_eff, m_stable (nv,) are workspaces. Returns 0, or k + 1 when M of row k is not positive definite."""
    for k in range(tau_rows.shape[0]):
        for j in range(drive_int.shape[1]):
            drive_float[DRIVE_Q_REF, j] = targets[k, j]
            drive_float[DRIVE_VELOCITY_CMD, j] = velocities[k, j]
        if effective_inertias(m_rows[k], lower, scratch, drive_int, m_eff, m_stable):
            return k + 1
        drive_torques(drive_int, drive_float, q_rows[k], v_rows[k], m_rows[k], m_stable,
                      bias_rows[k], dt, tau_rows[k])
        if limited:
            limit_torques(vel_idx, velocity, effort, v_rows[k], m_eff, bias_rows[k],
                          inv_time_constant, tau_rows[k])
    return 0
