"""The per-cycle arithmetic of the Cartesian impedance law (mbd_ros/nodes/task_space.py) in two
allocation-free kernels, so a control cycle is a few kernel calls instead of ~20 small numpy
operations (measured on arm7: ~24 us of numpy for the null-space term alone).

    task_wrench_torque:   w = K e + D (twist - J v) + w_I,   out = J^T w + b
    add_nullspace_torque: out += N^T tau_0 = tau_0 - J^T Lambda J M^-1 tau_0,
                          tau_0 = k_n (q_posture - q) - d_n v   on the commanded joints

(Ott 2008, "Cartesian Impedance Control of Redundant and Flexible-Joint Robots", eq. 3.16;
the dynamically consistent projector of Khatib 1987, eq. 41.) Spatial vectors [linear;
angular]; J, e, twist, K, D in the same frame (local_world_aligned in the node).
"""
from numba import njit


@njit(cache=True)
def task_wrench_torque(jac, v, error, twist, stiffness, damping, integral, bias, wrench, out):
    """wrench (6) = K e + D (twist - J v) + w_I (diagonal K = stiffness, D = damping);
    out (nv) = J^T wrench + bias. jac (6, nv)."""
    nv = jac.shape[1]
    for r in range(6):
        xdot = 0.0
        for c in range(nv):
            xdot += jac[r, c] * v[c]
        wrench[r] = stiffness[r] * error[r] + damping[r] * (twist[r] - xdot) + integral[r]
    for c in range(nv):
        s = bias[c]
        for r in range(6):
            s += jac[r, c] * wrench[r]
        out[c] = s


@njit(cache=True)
def add_nullspace_torque(jac, minv, lam, posture, q, v, joint_iq, joint_iv, kn, dn, tau0, y,
                         z, u, out):
    """out (nv) += N^T tau_0 with N^T = 1 - J^T Lambda J M^-1 (jac (6, nv), minv (nv, nv),
    lam (6, 6)); tau_0 (nv) = k_n (posture - q) - d_n v on the joints (joint_iq[k] in q,
    joint_iv[k] in v), zero elsewhere. Scratch: tau0, y (nv), z, u (6)."""
    nv = jac.shape[1]
    for c in range(nv):
        tau0[c] = 0.0
    for k in range(joint_iv.shape[0]):
        i = joint_iv[k]
        tau0[i] = kn * (posture[joint_iq[k]] - q[joint_iq[k]]) - dn * v[i]
    for a in range(nv):                 # y = M^-1 tau_0
        s = 0.0
        for c in range(nv):
            s += minv[a, c] * tau0[c]
        y[a] = s
    for r in range(6):                  # z = J M^-1 tau_0
        s = 0.0
        for c in range(nv):
            s += jac[r, c] * y[c]
        z[r] = s
    for r in range(6):                  # u = Lambda J M^-1 tau_0
        s = 0.0
        for k in range(6):
            s += lam[r, k] * z[k]
        u[r] = s
    for c in range(nv):                 # out += tau_0 - J^T u
        s = tau0[c]
        for r in range(6):
            s -= jac[r, c] * u[r]
        out[c] += s
