"""Spatial algebra on flat float64 views, allocation-free (docs/theory.md §1).

Motion vectors m = [v; w] (linear; angular), force vectors f = [n; t] (force; torque). A body pose in
its parent frame is a rotation R (3x3, row-major, 9 floats) and a translation p, with
x_parent = R x_body + p. Transforms use the 3x3 blocks directly instead of 6x6 matrices: the
motion transform parent -> body (B_pi in the seeds, ^iX_p in Featherstone) is

    w_i = R^T w_p,        v_i = R^T (v_p - p x w_p),

and its dual, the force transform body -> parent (B_pi^T), is

    n_p = R n_i,          t_p = R t_i + p x (R n_i).
"""
import math

from numba import njit


@njit(cache=True)
def rotation_about_axis(axis, angle, out):
    """Rodrigues' formula: out (9) = rotation by `angle` about the unit `axis` (3)."""
    x, y, z = axis[0], axis[1], axis[2]
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    out[0] = t * x * x + c
    out[1] = t * x * y - s * z
    out[2] = t * x * z + s * y
    out[3] = t * x * y + s * z
    out[4] = t * y * y + c
    out[5] = t * y * z - s * x
    out[6] = t * x * z - s * y
    out[7] = t * y * z + s * x
    out[8] = t * z * z + c


@njit(cache=True)
def rotation_from_quaternion(qx, qy, qz, qw, out):
    """out (9) = rotation of the unit quaternion (x, y, z, w) (Hamilton, as Pinocchio and ROS)."""
    out[0] = 1.0 - 2.0 * (qy * qy + qz * qz)
    out[1] = 2.0 * (qx * qy - qz * qw)
    out[2] = 2.0 * (qx * qz + qy * qw)
    out[3] = 2.0 * (qx * qy + qz * qw)
    out[4] = 1.0 - 2.0 * (qx * qx + qz * qz)
    out[5] = 2.0 * (qy * qz - qx * qw)
    out[6] = 2.0 * (qx * qz - qy * qw)
    out[7] = 2.0 * (qy * qz + qx * qw)
    out[8] = 1.0 - 2.0 * (qx * qx + qy * qy)


@njit(cache=True)
def compose_rotation(a, b, out):
    """out = a b for row-major 3x3 rotations (out must not alias a or b)."""
    for r in range(3):
        for c in range(3):
            out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c]


@njit(cache=True)
def motion_to_child(rot, pos, m_parent, out):
    """out (6) = B_pi m_parent: a motion vector of the parent frame expressed in the body frame."""
    wx, wy, wz = m_parent[3], m_parent[4], m_parent[5]
    # v_p - p x w_p
    lx = m_parent[0] - (pos[1] * wz - pos[2] * wy)
    ly = m_parent[1] - (pos[2] * wx - pos[0] * wz)
    lz = m_parent[2] - (pos[0] * wy - pos[1] * wx)
    out[0] = rot[0] * lx + rot[3] * ly + rot[6] * lz
    out[1] = rot[1] * lx + rot[4] * ly + rot[7] * lz
    out[2] = rot[2] * lx + rot[5] * ly + rot[8] * lz
    out[3] = rot[0] * wx + rot[3] * wy + rot[6] * wz
    out[4] = rot[1] * wx + rot[4] * wy + rot[7] * wz
    out[5] = rot[2] * wx + rot[5] * wy + rot[8] * wz


@njit(cache=True)
def add_force_to_parent(rot, pos, f_body, out):
    """out (6) += B_pi^T f_body: a wrench on the body expressed in the parent frame."""
    nx = rot[0] * f_body[0] + rot[1] * f_body[1] + rot[2] * f_body[2]
    ny = rot[3] * f_body[0] + rot[4] * f_body[1] + rot[5] * f_body[2]
    nz = rot[6] * f_body[0] + rot[7] * f_body[1] + rot[8] * f_body[2]
    tx = rot[0] * f_body[3] + rot[1] * f_body[4] + rot[2] * f_body[5]
    ty = rot[3] * f_body[3] + rot[4] * f_body[4] + rot[5] * f_body[5]
    tz = rot[6] * f_body[3] + rot[7] * f_body[4] + rot[8] * f_body[5]
    out[0] += nx
    out[1] += ny
    out[2] += nz
    out[3] += tx + pos[1] * nz - pos[2] * ny
    out[4] += ty + pos[2] * nx - pos[0] * nz
    out[5] += tz + pos[0] * ny - pos[1] * nx


@njit(cache=True)
def cross_motion(m, x, out):
    """out (6) = m x x (motion cross product; Featherstone crm(m) x)."""
    vx, vy, vz, wx, wy, wz = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = wy * x[2] - wz * x[1] + vy * x[5] - vz * x[4]
    out[1] = wz * x[0] - wx * x[2] + vz * x[3] - vx * x[5]
    out[2] = wx * x[1] - wy * x[0] + vx * x[4] - vy * x[3]
    out[3] = wy * x[5] - wz * x[4]
    out[4] = wz * x[3] - wx * x[5]
    out[5] = wx * x[4] - wy * x[3]


@njit(cache=True)
def add_cross_force(m, f, out):
    """out (6) += m x* f (force cross product; Featherstone crf(m) f)."""
    vx, vy, vz, wx, wy, wz = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] += wy * f[2] - wz * f[1]
    out[1] += wz * f[0] - wx * f[2]
    out[2] += wx * f[1] - wy * f[0]
    out[3] += wy * f[5] - wz * f[4] + vy * f[2] - vz * f[1]
    out[4] += wz * f[3] - wx * f[5] + vz * f[0] - vx * f[2]
    out[5] += wx * f[4] - wy * f[3] + vx * f[1] - vy * f[0]


@njit(cache=True)
def inertia_times(inertia, x, out):
    """out (6) = I x for a 6x6 row-major inertia (36)."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += inertia[6 * r + c] * x[c]
        out[r] = s


@njit(cache=True)
def rigid_inertia_times(inertia, x, out):
    """out (6) = I x for a RIGID-body inertia I (36) = [[m 1, -m[c]], [m[c], I_o]] (I_o about the
    origin): m x_lin - (m c) x x_ang and (m c) x x_lin + I_o x_ang, 24 products instead of 36."""
    m = inertia[0]
    # m c from the off-diagonal block -m[c]
    hx = inertia[11]
    hy = inertia[15]
    hz = inertia[4]
    vx, vy, vz, wx, wy, wz = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = m * vx - (hy * wz - hz * wy)
    out[1] = m * vy - (hz * wx - hx * wz)
    out[2] = m * vz - (hx * wy - hy * wx)
    out[3] = hy * vz - hz * vy + inertia[21] * wx + inertia[22] * wy + inertia[23] * wz
    out[4] = hz * vx - hx * vz + inertia[27] * wx + inertia[28] * wy + inertia[29] * wz
    out[5] = hx * vy - hy * vx + inertia[33] * wx + inertia[34] * wy + inertia[35] * wz


@njit(cache=True)
def add_inertia_to_parent(rot, pos, inertia, scratch, out):
    """out (36) += B_pi^T I B_pi: a 6x6 symmetric inertia of the body in the parent frame.

    Written on the 3x3 blocks I = [[A, B], [B^T, C]]: rotate each block into `scratch` (36)
    (A' = R A R^T, ...), then shift the reference point by p, with [p] the cross-product matrix:
        A_p = A',  B_p = B' - A'[p],  C_p = C' - B'^T [p] + [p] B_p   (= ... - [p] A' [p] + [p] B').
    """
    # scratch[0:9] = A', [9:18] = B', [18:27] = C', [27:36] = block R^T, then B_p
    for blk in range(3):
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        for r in range(3):
            for c in range(3):
                scratch[27 + 3 * r + c] = (inertia[6 * (r0 + r) + c0] * rot[3 * c]
                                           + inertia[6 * (r0 + r) + c0 + 1] * rot[3 * c + 1]
                                           + inertia[6 * (r0 + r) + c0 + 2] * rot[3 * c + 2])
        for r in range(3):
            for c in range(3):
                scratch[9 * blk + 3 * r + c] = (rot[3 * r] * scratch[27 + c]
                                                + rot[3 * r + 1] * scratch[30 + c]
                                                + rot[3 * r + 2] * scratch[33 + c])
    px, py, pz = pos[0], pos[1], pos[2]
    for r in range(3):
        # row r of A'[p] is (row r of A') x p
        a0, a1, a2 = scratch[3 * r], scratch[3 * r + 1], scratch[3 * r + 2]
        scratch[27 + 3 * r] = scratch[9 + 3 * r] - (a1 * pz - a2 * py)
        scratch[27 + 3 * r + 1] = scratch[9 + 3 * r + 1] - (a2 * px - a0 * pz)
        scratch[27 + 3 * r + 2] = scratch[9 + 3 * r + 2] - (a0 * py - a1 * px)
    for r in range(3):
        for c in range(3):
            out[6 * r + c] += scratch[3 * r + c]
            out[6 * r + 3 + c] += scratch[27 + 3 * r + c]
            out[6 * (3 + r) + c] += scratch[27 + 3 * c + r]
    for c in range(3):
        # column c of B_p and column c of B' (row c of B'^T)
        b0, b1, b2 = scratch[27 + c], scratch[30 + c], scratch[33 + c]
        e0, e1, e2 = scratch[9 + c], scratch[12 + c], scratch[15 + c]
        # ([p] B_p)[:, c] = p x B_p[:, c];  (B'^T [p])[c, :] = B'[:, c] x p
        pb0 = py * b2 - pz * b1
        pb1 = pz * b0 - px * b2
        pb2 = px * b1 - py * b0
        bp0 = e1 * pz - e2 * py
        bp1 = e2 * px - e0 * pz
        bp2 = e0 * py - e1 * px
        out[6 * 3 + 3 + c] += scratch[18 + c] + pb0
        out[6 * 4 + 3 + c] += scratch[21 + c] + pb1
        out[6 * 5 + 3 + c] += scratch[24 + c] + pb2
        out[6 * (3 + c) + 3] -= bp0
        out[6 * (3 + c) + 4] -= bp1
        out[6 * (3 + c) + 5] -= bp2


@njit(cache=True)
def invert_spd(matrix, k, out):
    """out (k x k row-major) = matrix^-1 for a symmetric positive definite k x k matrix, k <= 6.

    Cholesky factor L in place, then L^-1 in place, then (L L^T)^-1 = L^-T L^-1 written into the
    upper triangle (which L^-1 does not use) and mirrored. Returns False when the matrix is not
    positive definite (relative pivot < 1e-13); `out` is then undefined.
    """
    scale = 0.0
    for i in range(k):
        scale = max(scale, abs(matrix[i * k + i]))
    if not scale > 0.0:
        return False
    for i in range(k * k):
        out[i] = matrix[i]
    for j in range(k):
        d = out[j * k + j]
        for m in range(j):
            d -= out[j * k + m] * out[j * k + m]
        if not d > 1e-13 * scale:
            return False
        d = math.sqrt(d)
        out[j * k + j] = d
        for i in range(j + 1, k):
            s = out[i * k + j]
            for m in range(j):
                s -= out[i * k + m] * out[j * k + m]
            out[i * k + j] = s / d
    for j in range(k):
        out[j * k + j] = 1.0 / out[j * k + j]
        for i in range(j + 1, k):
            s = 0.0
            for m in range(j, i):
                s -= out[i * k + m] * out[m * k + j]
            out[i * k + j] = s / out[i * k + i]
    for i in range(k):
        for j in range(i, k):
            s = 0.0
            for m in range(j, k):
                s += out[m * k + i] * out[m * k + j]
            out[i * k + j] = s
    for i in range(k):
        for j in range(i + 1, k):
            out[j * k + i] = out[i * k + j]
    return True
