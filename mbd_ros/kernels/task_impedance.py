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
    joint_torque(jac, wrench, bias, out)


@njit(cache=True, inline="always")
def joint_torque(jac, wrench, bias, out):
    """out (nv) = J^T wrench + bias."""
    for c in range(jac.shape[1]):
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


@njit(cache=True)
def task_wrench_torque_matrix(jac, v, error, twist, stiffness, damping, integral, bias,
                              twist_error, wrench, out):
    """task_wrench_torque with a full damping matrix: wrench (6) = K e + D (twist - J v) + w_I
    with K = diag(stiffness), D = damping (6, 6) (damping_matrix's); out (nv) = J^T wrench +
    bias. twist_error (6): scratch (twist - J v)."""
    nv = jac.shape[1]
    for r in range(6):
        xdot = 0.0
        for c in range(nv):
            xdot += jac[r, c] * v[c]
        twist_error[r] = twist[r] - xdot
    for r in range(6):
        s = stiffness[r] * error[r] + integral[r]
        for k in range(6):
            s += damping[r, k] * twist_error[k]
        wrench[r] = s
    joint_torque(jac, wrench, bias, out)


@njit(cache=True)
def damping_matrix(lam, stiffness, ratio, chol, modes, out):
    """out (6, 6) = D of modal damping ratio `ratio` for the task stiffness K = diag(stiffness)
    and the operational-space inertia Lambda = lam (6, 6, positive definite): the "double
    diagonalization" design (Albu-Schaeffer, Ott, Frese, Hirzinger, ICRA 2003, eq. 15): with
    Lambda = Q Q^T and K = Q K0 Q^T (K0 diagonal), D = Q diag(2 ratio sqrt(K0_i)) Q^T, so each
    mode of the task-space dynamics Lambda e'' + D e' + K e = 0 has the damping ratio `ratio`
    (its frequency sqrt(K0_i)). Computed as Lambda = L L^T (Cholesky), S = L^-1 K L^-T =
    V K0 V^T (cyclic Jacobi: no allocation), Q = L V. chol, modes: (6, 6) scratch (L, then V;
    S is built in out). Returns 0, or 1 when Lambda is not positive definite (out not set)."""
    for j in range(6):                     # Lambda = L L^T, L lower in chol
        d = lam[j, j]
        for k in range(j):
            d -= chol[j, k] * chol[j, k]
        if not d > 0.0:
            return 1
        d = d ** 0.5
        chol[j, j] = d
        for i in range(j + 1, 6):
            s = lam[i, j]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / d
        for i in range(j):
            chol[i, j] = 0.0
    # S = L^-1 K L^-T: columns of X = L^-1 diag(sqrt(K)) (forward substitution), S = X X^T
    for c in range(6):
        root = max(stiffness[c], 0.0) ** 0.5
        for i in range(6):
            s = root if i == c else 0.0
            for k in range(i):
                s -= chol[i, k] * modes[k, c]
            modes[i, c] = s / chol[i, i]
    for i in range(6):
        for j in range(i, 6):
            s = 0.0
            for k in range(6):
                s += modes[i, k] * modes[j, k]
            out[i, j] = s
            out[j, i] = s
    # cyclic Jacobi on S (in out): S = V diag(s) V^T, V in modes
    for i in range(6):
        for j in range(6):
            modes[i, j] = 1.0 if i == j else 0.0
    for sweep in range(50):
        off = 0.0
        scale = 0.0
        for i in range(6):
            scale += out[i, i] * out[i, i]
            for j in range(i + 1, 6):
                off += out[i, j] * out[i, j]
        if off <= 1e-32 * scale:
            break
        for p in range(5):
            for q in range(p + 1, 6):
                apq = out[p, q]
                if apq == 0.0:
                    continue
                theta = (out[q, q] - out[p, p]) / (2.0 * apq)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + (theta * theta + 1.0) ** 0.5)
                c = 1.0 / (t * t + 1.0) ** 0.5
                s = t * c
                for k in range(6):         # rotate columns p, q of S, then rows
                    akp, akq = out[k, p], out[k, q]
                    out[k, p] = c * akp - s * akq
                    out[k, q] = s * akp + c * akq
                for k in range(6):
                    apk, aqk = out[p, k], out[q, k]
                    out[p, k] = c * apk - s * aqk
                    out[q, k] = s * apk + c * aqk
                for k in range(6):
                    vkp, vkq = modes[k, p], modes[k, q]
                    modes[k, p] = c * vkp - s * vkq
                    modes[k, q] = s * vkp + c * vkq
    # Q = L V into modes (row i of L V needs rows k <= i of V: from the last row up)
    for c in range(6):
        for i in range(5, -1, -1):
            s = 0.0
            for k in range(i + 1):
                s += chol[i, k] * modes[k, c]
            modes[i, c] = s
    # the modes' dampings d_i = 2 ratio sqrt(s_i), s_i on out's diagonal, into chol's first
    # row (L is no longer needed); then D = Q diag(d) Q^T
    for i in range(6):
        chol[0, i] = 2.0 * ratio * max(out[i, i], 0.0) ** 0.5
    for i in range(6):
        for j in range(i, 6):
            s = 0.0
            for k in range(6):
                s += modes[i, k] * chol[0, k] * modes[j, k]
            out[i, j] = s
            out[j, i] = s
    return 0
