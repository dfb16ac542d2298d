"""Spatial algebra on rows of the flat model/workspace arrays, allocation-free (docs/theory.md §1).

Motion vectors m = [v; w] (linear; angular), force vectors f = [n; t] (force; torque). A body pose in
its parent frame is a rotation R (3x3, row-major, 9 floats) and a translation p, with
x_parent = R x_body + p. Transforms use the 3x3 blocks directly instead of 6x6 matrices: the
motion transform parent -> body (B_pi in the seeds, ^iX_p in Featherstone) is

    w_i = R^T w_p,        v_i = R^T (v_p - p x w_p),

and its dual, the force transform body -> parent (B_pi^T), is

    n_p = R n_i,          t_p = R t_i + p x (R n_i).

Calling convention (kernel style of the package): every operand is addressed as
(array, row, column) into a 2-D float64 array, never as a slice or row view. A view costs numba an
atomic reference-count increment/decrement pair (~5-8 ns) each time it is made; with the flat
arrays plus integer offsets the hot loops touch no reference counts at all. A pose is 12
consecutive floats: R (9, row-major) then p (3) (layout: ROT/POS, PLACEMENT_ROT/POS, LINK_ROT/POS,
WORLD_ROT/POS are all laid out this way). The helpers are `inline='always'` (numba inlines them
into the kernels, so they cost nothing over hand-written code) except `invert_spd`, used only by
multi-axis joints, which stays out of line to save compile time. Each reads all its inputs before
writing, unless said otherwise outputs must not overlap inputs.
"""
import math

from numba import njit


@njit(inline="always")
def rotation_about_axis(axis, ai, ac, angle, out, oi, oc):
    """Rodrigues' formula: out[oi, oc:oc+9] = rotation by `angle` about the unit axis[ai, ac:ac+3]."""
    x = axis[ai, ac]
    y = axis[ai, ac + 1]
    z = axis[ai, ac + 2]
    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    out[oi, oc] = t * x * x + c
    out[oi, oc + 1] = t * x * y - s * z
    out[oi, oc + 2] = t * x * z + s * y
    out[oi, oc + 3] = t * x * y + s * z
    out[oi, oc + 4] = t * y * y + c
    out[oi, oc + 5] = t * y * z - s * x
    out[oi, oc + 6] = t * x * z - s * y
    out[oi, oc + 7] = t * y * z + s * x
    out[oi, oc + 8] = t * z * z + c


@njit(inline="always")
def rotation_from_quaternion(qx, qy, qz, qw, out, oi, oc):
    """out[oi, oc:oc+9] = rotation of the unit quaternion (x, y, z, w) (Hamilton, as Pinocchio
    and ROS)."""
    out[oi, oc] = 1.0 - 2.0 * (qy * qy + qz * qz)
    out[oi, oc + 1] = 2.0 * (qx * qy - qz * qw)
    out[oi, oc + 2] = 2.0 * (qx * qz + qy * qw)
    out[oi, oc + 3] = 2.0 * (qx * qy + qz * qw)
    out[oi, oc + 4] = 1.0 - 2.0 * (qx * qx + qz * qz)
    out[oi, oc + 5] = 2.0 * (qy * qz - qx * qw)
    out[oi, oc + 6] = 2.0 * (qx * qz - qy * qw)
    out[oi, oc + 7] = 2.0 * (qy * qz + qx * qw)
    out[oi, oc + 8] = 1.0 - 2.0 * (qx * qx + qy * qy)


@njit(inline="always")
def compose_rotation(a, ai, ac, b, bi, bc, out, oi, oc):
    """out = A B for row-major 3x3 rotations A = a[ai, ac:ac+9], B = b[bi, bc:bc+9]."""
    for r in range(3):
        a0 = a[ai, ac + 3 * r]
        a1 = a[ai, ac + 3 * r + 1]
        a2 = a[ai, ac + 3 * r + 2]
        for c in range(3):
            out[oi, oc + 3 * r + c] = a0 * b[bi, bc + c] + a1 * b[bi, bc + 3 + c] + a2 * b[bi, bc + 6 + c]


@njit(inline="always")
def compose_pose(a, ai, ac, b, bi, bc, out, oi, oc):
    """out = A B for poses (12 floats each): R = R_a R_b, p = p_a + R_a p_b."""
    compose_rotation(a, ai, ac, b, bi, bc, out, oi, oc)
    px = b[bi, bc + 9]
    py = b[bi, bc + 10]
    pz = b[bi, bc + 11]
    for r in range(3):
        out[oi, oc + 9 + r] = (a[ai, ac + 9 + r] + a[ai, ac + 3 * r] * px
                               + a[ai, ac + 3 * r + 1] * py + a[ai, ac + 3 * r + 2] * pz)


@njit(inline="always")
def motion_to_child(pose, pi, pc, m, mi, mc, out, oi, oc):
    """out (6) = B_pi m: a motion vector of the parent frame expressed in the body frame, with
    the body's pose (R, p) in its parent frame at pose[pi, pc:pc+12]."""
    wx = m[mi, mc + 3]
    wy = m[mi, mc + 4]
    wz = m[mi, mc + 5]
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    # v_p - p x w_p
    lx = m[mi, mc] - (py * wz - pz * wy)
    ly = m[mi, mc + 1] - (pz * wx - px * wz)
    lz = m[mi, mc + 2] - (px * wy - py * wx)
    r0 = pose[pi, pc]
    r1 = pose[pi, pc + 1]
    r2 = pose[pi, pc + 2]
    r3 = pose[pi, pc + 3]
    r4 = pose[pi, pc + 4]
    r5 = pose[pi, pc + 5]
    r6 = pose[pi, pc + 6]
    r7 = pose[pi, pc + 7]
    r8 = pose[pi, pc + 8]
    out[oi, oc] = r0 * lx + r3 * ly + r6 * lz
    out[oi, oc + 1] = r1 * lx + r4 * ly + r7 * lz
    out[oi, oc + 2] = r2 * lx + r5 * ly + r8 * lz
    out[oi, oc + 3] = r0 * wx + r3 * wy + r6 * wz
    out[oi, oc + 4] = r1 * wx + r4 * wy + r7 * wz
    out[oi, oc + 5] = r2 * wx + r5 * wy + r8 * wz


@njit(inline="always")
def add_force_to_parent(pose, pi, pc, f, fi, fc, out, oi, oc):
    """out (6) += B_pi^T f: a wrench on the body expressed in (and about the origin of) the
    parent frame. out may be f itself only when it is not accumulated (see force_to_parent)."""
    r0 = pose[pi, pc]
    r1 = pose[pi, pc + 1]
    r2 = pose[pi, pc + 2]
    r3 = pose[pi, pc + 3]
    r4 = pose[pi, pc + 4]
    r5 = pose[pi, pc + 5]
    r6 = pose[pi, pc + 6]
    r7 = pose[pi, pc + 7]
    r8 = pose[pi, pc + 8]
    f0 = f[fi, fc]
    f1 = f[fi, fc + 1]
    f2 = f[fi, fc + 2]
    f3 = f[fi, fc + 3]
    f4 = f[fi, fc + 4]
    f5 = f[fi, fc + 5]
    nx = r0 * f0 + r1 * f1 + r2 * f2
    ny = r3 * f0 + r4 * f1 + r5 * f2
    nz = r6 * f0 + r7 * f1 + r8 * f2
    tx = r0 * f3 + r1 * f4 + r2 * f5
    ty = r3 * f3 + r4 * f4 + r5 * f5
    tz = r6 * f3 + r7 * f4 + r8 * f5
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    out[oi, oc] += nx
    out[oi, oc + 1] += ny
    out[oi, oc + 2] += nz
    out[oi, oc + 3] += tx + py * nz - pz * ny
    out[oi, oc + 4] += ty + pz * nx - px * nz
    out[oi, oc + 5] += tz + px * ny - py * nx


@njit(inline="always")
def force_to_parent(pose, pi, pc, f, fi, fc):
    """f (6) <- B_pi^T f, in place: a wrench moved from the body frame into its parent frame."""
    r0 = pose[pi, pc]
    r1 = pose[pi, pc + 1]
    r2 = pose[pi, pc + 2]
    r3 = pose[pi, pc + 3]
    r4 = pose[pi, pc + 4]
    r5 = pose[pi, pc + 5]
    r6 = pose[pi, pc + 6]
    r7 = pose[pi, pc + 7]
    r8 = pose[pi, pc + 8]
    f0 = f[fi, fc]
    f1 = f[fi, fc + 1]
    f2 = f[fi, fc + 2]
    f3 = f[fi, fc + 3]
    f4 = f[fi, fc + 4]
    f5 = f[fi, fc + 5]
    nx = r0 * f0 + r1 * f1 + r2 * f2
    ny = r3 * f0 + r4 * f1 + r5 * f2
    nz = r6 * f0 + r7 * f1 + r8 * f2
    tx = r0 * f3 + r1 * f4 + r2 * f5
    ty = r3 * f3 + r4 * f4 + r5 * f5
    tz = r6 * f3 + r7 * f4 + r8 * f5
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    f[fi, fc] = nx
    f[fi, fc + 1] = ny
    f[fi, fc + 2] = nz
    f[fi, fc + 3] = tx + py * nz - pz * ny
    f[fi, fc + 4] = ty + pz * nx - px * nz
    f[fi, fc + 5] = tz + px * ny - py * nx


@njit(inline="always")
def cross_motion(m, mi, mc, x, xi, xc, out, oi, oc):
    """out (6) = m x x (motion cross product; Featherstone crm(m) x)."""
    vx = m[mi, mc]
    vy = m[mi, mc + 1]
    vz = m[mi, mc + 2]
    wx = m[mi, mc + 3]
    wy = m[mi, mc + 4]
    wz = m[mi, mc + 5]
    x0 = x[xi, xc]
    x1 = x[xi, xc + 1]
    x2 = x[xi, xc + 2]
    x3 = x[xi, xc + 3]
    x4 = x[xi, xc + 4]
    x5 = x[xi, xc + 5]
    out[oi, oc] = wy * x2 - wz * x1 + vy * x5 - vz * x4
    out[oi, oc + 1] = wz * x0 - wx * x2 + vz * x3 - vx * x5
    out[oi, oc + 2] = wx * x1 - wy * x0 + vx * x4 - vy * x3
    out[oi, oc + 3] = wy * x5 - wz * x4
    out[oi, oc + 4] = wz * x3 - wx * x5
    out[oi, oc + 5] = wx * x4 - wy * x3


@njit(inline="always")
def add_cross_force(m, mi, mc, f, fi, fc, out, oi, oc):
    """out (6) += m x* f (force cross product; Featherstone crf(m) f)."""
    vx = m[mi, mc]
    vy = m[mi, mc + 1]
    vz = m[mi, mc + 2]
    wx = m[mi, mc + 3]
    wy = m[mi, mc + 4]
    wz = m[mi, mc + 5]
    f0 = f[fi, fc]
    f1 = f[fi, fc + 1]
    f2 = f[fi, fc + 2]
    f3 = f[fi, fc + 3]
    f4 = f[fi, fc + 4]
    f5 = f[fi, fc + 5]
    out[oi, oc] += wy * f2 - wz * f1
    out[oi, oc + 1] += wz * f0 - wx * f2
    out[oi, oc + 2] += wx * f1 - wy * f0
    out[oi, oc + 3] += wy * f5 - wz * f4 + vy * f2 - vz * f1
    out[oi, oc + 4] += wz * f3 - wx * f5 + vz * f0 - vx * f2
    out[oi, oc + 5] += wx * f4 - wy * f3 + vx * f1 - vy * f0


@njit(inline="always")
def inertia_times(inertia, ii, ic, x, xi, xc, out, oi, oc):
    """out (6) = I x for a 6x6 row-major inertia I = inertia[ii, ic:ic+36]."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += inertia[ii, ic + 6 * r + c] * x[xi, xc + c]
        out[oi, oc + r] = s


@njit(inline="always")
def rigid_inertia_times(inertia, ii, ic, x, xi, xc, out, oi, oc):
    """out (6) = I x for a RIGID-body inertia I (36) = [[m 1, -m[c]], [m[c], I_o]] (I_o about the
    origin): m x_lin - (m c) x x_ang and (m c) x x_lin + I_o x_ang, 24 products instead of 36."""
    m = inertia[ii, ic]
    # m c from the off-diagonal block -m[c]
    hx = inertia[ii, ic + 11]
    hy = inertia[ii, ic + 15]
    hz = inertia[ii, ic + 4]
    vx = x[xi, xc]
    vy = x[xi, xc + 1]
    vz = x[xi, xc + 2]
    wx = x[xi, xc + 3]
    wy = x[xi, xc + 4]
    wz = x[xi, xc + 5]
    out[oi, oc] = m * vx - (hy * wz - hz * wy)
    out[oi, oc + 1] = m * vy - (hz * wx - hx * wz)
    out[oi, oc + 2] = m * vz - (hx * wy - hy * wx)
    out[oi, oc + 3] = (hy * vz - hz * vy + inertia[ii, ic + 21] * wx + inertia[ii, ic + 22] * wy
                       + inertia[ii, ic + 23] * wz)
    out[oi, oc + 4] = (hz * vx - hx * vz + inertia[ii, ic + 27] * wx + inertia[ii, ic + 28] * wy
                       + inertia[ii, ic + 29] * wz)
    out[oi, oc + 5] = (hx * vy - hy * vx + inertia[ii, ic + 33] * wx + inertia[ii, ic + 34] * wy
                       + inertia[ii, ic + 35] * wz)


@njit(inline="always")
def add_inertia_to_parent(pose, pi, pc, inertia, ii, ic, scratch, si, sc, out, oi, oc):
    """out (36) += B_pi^T I B_pi: a 6x6 symmetric inertia I = inertia[ii, ic:ic+36] of the body
    in the parent frame; scratch[si, sc:sc+36] is overwritten.

    Written on the 3x3 blocks I = [[A, B], [B^T, C]]: rotate each block into `scratch`
    (A' = R A R^T, ...), then shift the reference point by p, with [p] the cross-product matrix:
        A_p = A',  B_p = B' - A'[p],  C_p = C' - B'^T [p] + [p] B_p   (= ... - [p] A' [p] + [p] B').
    """
    # scratch[0:9] = A', [9:18] = B', [18:27] = C', [27:36] = block R^T, then B_p
    for blk in range(3):
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        for r in range(3):
            i0 = inertia[ii, ic + 6 * (r0 + r) + c0]
            i1 = inertia[ii, ic + 6 * (r0 + r) + c0 + 1]
            i2 = inertia[ii, ic + 6 * (r0 + r) + c0 + 2]
            for c in range(3):
                scratch[si, sc + 27 + 3 * r + c] = (i0 * pose[pi, pc + 3 * c]
                                                    + i1 * pose[pi, pc + 3 * c + 1]
                                                    + i2 * pose[pi, pc + 3 * c + 2])
        for r in range(3):
            q0 = pose[pi, pc + 3 * r]
            q1 = pose[pi, pc + 3 * r + 1]
            q2 = pose[pi, pc + 3 * r + 2]
            for c in range(3):
                scratch[si, sc + 9 * blk + 3 * r + c] = (q0 * scratch[si, sc + 27 + c]
                                                         + q1 * scratch[si, sc + 30 + c]
                                                         + q2 * scratch[si, sc + 33 + c])
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    for r in range(3):
        # row r of A'[p] is (row r of A') x p
        a0 = scratch[si, sc + 3 * r]
        a1 = scratch[si, sc + 3 * r + 1]
        a2 = scratch[si, sc + 3 * r + 2]
        scratch[si, sc + 27 + 3 * r] = scratch[si, sc + 9 + 3 * r] - (a1 * pz - a2 * py)
        scratch[si, sc + 27 + 3 * r + 1] = scratch[si, sc + 9 + 3 * r + 1] - (a2 * px - a0 * pz)
        scratch[si, sc + 27 + 3 * r + 2] = scratch[si, sc + 9 + 3 * r + 2] - (a0 * py - a1 * px)
    for r in range(3):
        for c in range(3):
            out[oi, oc + 6 * r + c] += scratch[si, sc + 3 * r + c]
            out[oi, oc + 6 * r + 3 + c] += scratch[si, sc + 27 + 3 * r + c]
            out[oi, oc + 6 * (3 + r) + c] += scratch[si, sc + 27 + 3 * c + r]
    for c in range(3):
        # column c of B_p and column c of B' (row c of B'^T)
        b0 = scratch[si, sc + 27 + c]
        b1 = scratch[si, sc + 30 + c]
        b2 = scratch[si, sc + 33 + c]
        e0 = scratch[si, sc + 9 + c]
        e1 = scratch[si, sc + 12 + c]
        e2 = scratch[si, sc + 15 + c]
        # ([p] B_p)[:, c] = p x B_p[:, c];  (B'^T [p])[c, :] = B'[:, c] x p
        out[oi, oc + 6 * 3 + 3 + c] += scratch[si, sc + 18 + c] + (py * b2 - pz * b1)
        out[oi, oc + 6 * 4 + 3 + c] += scratch[si, sc + 21 + c] + (pz * b0 - px * b2)
        out[oi, oc + 6 * 5 + 3 + c] += scratch[si, sc + 24 + c] + (px * b1 - py * b0)
        out[oi, oc + 6 * (3 + c) + 3] -= e1 * pz - e2 * py
        out[oi, oc + 6 * (3 + c) + 4] -= e2 * px - e0 * pz
        out[oi, oc + 6 * (3 + c) + 5] -= e0 * py - e1 * px


@njit(cache=True)
def invert_spd(matrix, mi, mc, k, out, oi, oc):
    """out[oi, oc:oc+k*k] (row-major) = the inverse of the symmetric positive definite k x k
    matrix[mi, mc:mc+k*k], k <= 6.

    Cholesky factor L in place, then L^-1 in place, then (L L^T)^-1 = L^-T L^-1 written into the
    upper triangle (which L^-1 does not use) and mirrored. Returns False when the matrix is not
    positive definite (relative pivot < 1e-13); `out` is then undefined.
    """
    scale = 0.0
    for i in range(k):
        scale = max(scale, abs(matrix[mi, mc + i * k + i]))
    if not scale > 0.0:
        return False
    for i in range(k * k):
        out[oi, oc + i] = matrix[mi, mc + i]
    for j in range(k):
        d = out[oi, oc + j * k + j]
        for m in range(j):
            d -= out[oi, oc + j * k + m] * out[oi, oc + j * k + m]
        if not d > 1e-13 * scale:
            return False
        d = math.sqrt(d)
        out[oi, oc + j * k + j] = d
        inv_d = 1.0 / d
        for i in range(j + 1, k):
            s = out[oi, oc + i * k + j]
            for m in range(j):
                s -= out[oi, oc + i * k + m] * out[oi, oc + j * k + m]
            out[oi, oc + i * k + j] = s * inv_d
    # L^-1: the reciprocal diagonal first, so that every other entry needs no division
    for j in range(k):
        out[oi, oc + j * k + j] = 1.0 / out[oi, oc + j * k + j]
    for j in range(k):
        for i in range(j + 1, k):
            s = 0.0
            for m in range(j, i):
                s -= out[oi, oc + i * k + m] * out[oi, oc + m * k + j]
            out[oi, oc + i * k + j] = s * out[oi, oc + i * k + i]
    for i in range(k):
        for j in range(i, k):
            s = 0.0
            for m in range(j, k):
                s += out[oi, oc + m * k + i] * out[oi, oc + m * k + j]
            out[oi, oc + i * k + j] = s
    for i in range(k):
        for j in range(i + 1, k):
            out[oi, oc + j * k + i] = out[oi, oc + i * k + j]
    return True


# ---- rigid-body inertias as 10 parameters: m, h = m c (3), I_o (6: xx xy xz yy yz zz) about the
#      frame origin. A sum of rigid-body inertias is one (the CRBA's composite inertias), and
#      moving one to another frame costs ~70 flops instead of the ~250 of a general 6x6.

@njit(inline="always")
def rigid_parameters(inertia, ii, ic, out, oi, oc):
    """out (10) = the parameters (m, h, I_o) of the rigid-body 6x6 inertia[ii, ic:ic+36]
    = [[m 1, -[h]], [[h], I_o]]."""
    out[oi, oc] = inertia[ii, ic]
    out[oi, oc + 1] = inertia[ii, ic + 11]
    out[oi, oc + 2] = inertia[ii, ic + 15]
    out[oi, oc + 3] = inertia[ii, ic + 4]
    out[oi, oc + 4] = inertia[ii, ic + 21]
    out[oi, oc + 5] = inertia[ii, ic + 22]
    out[oi, oc + 6] = inertia[ii, ic + 23]
    out[oi, oc + 7] = inertia[ii, ic + 28]
    out[oi, oc + 8] = inertia[ii, ic + 29]
    out[oi, oc + 9] = inertia[ii, ic + 35]


@njit(inline="always")
def rigid_parameters_times(inertia, ii, ic, x, xi, xc, out, oi, oc):
    """out (6) = I x for the rigid-body inertia of parameters inertia[ii, ic:ic+10]:
    [m v - h x w; h x v + I_o w] for x = [v; w]."""
    m = inertia[ii, ic]
    hx = inertia[ii, ic + 1]
    hy = inertia[ii, ic + 2]
    hz = inertia[ii, ic + 3]
    vx = x[xi, xc]
    vy = x[xi, xc + 1]
    vz = x[xi, xc + 2]
    wx = x[xi, xc + 3]
    wy = x[xi, xc + 4]
    wz = x[xi, xc + 5]
    out[oi, oc] = m * vx - (hy * wz - hz * wy)
    out[oi, oc + 1] = m * vy - (hz * wx - hx * wz)
    out[oi, oc + 2] = m * vz - (hx * wy - hy * wx)
    out[oi, oc + 3] = (hy * vz - hz * vy + inertia[ii, ic + 4] * wx + inertia[ii, ic + 5] * wy
                       + inertia[ii, ic + 6] * wz)
    out[oi, oc + 4] = (hz * vx - hx * vz + inertia[ii, ic + 5] * wx + inertia[ii, ic + 7] * wy
                       + inertia[ii, ic + 8] * wz)
    out[oi, oc + 5] = (hx * vy - hy * vx + inertia[ii, ic + 6] * wx + inertia[ii, ic + 8] * wy
                       + inertia[ii, ic + 9] * wz)


@njit(inline="always")
def add_rigid_inertia_to_parent(pose, pi, pc, inertia, ii, ic, out, oi, oc):
    """out (10) += B_pi^T I B_pi for the rigid-body inertia of parameters inertia[ii, ic:ic+10]
    (body frame, about the body origin), i.e. the same body about the parent origin, parent frame:

        m' = m,   h' = R h + m p,
        I'_o = R I_o R^T - (p g^T + g p^T + m p p^T) + (2 g.p + m p.p) 1,   g = R h
    (parallel axis theorem: I_o = I_c - m [c][c], and [a][b] = b a^T - (a.b) 1).
    """
    m = inertia[ii, ic]
    h0 = inertia[ii, ic + 1]
    h1 = inertia[ii, ic + 2]
    h2 = inertia[ii, ic + 3]
    ixx = inertia[ii, ic + 4]
    ixy = inertia[ii, ic + 5]
    ixz = inertia[ii, ic + 6]
    iyy = inertia[ii, ic + 7]
    iyz = inertia[ii, ic + 8]
    izz = inertia[ii, ic + 9]
    r0 = pose[pi, pc]
    r1 = pose[pi, pc + 1]
    r2 = pose[pi, pc + 2]
    r3 = pose[pi, pc + 3]
    r4 = pose[pi, pc + 4]
    r5 = pose[pi, pc + 5]
    r6 = pose[pi, pc + 6]
    r7 = pose[pi, pc + 7]
    r8 = pose[pi, pc + 8]
    px = pose[pi, pc + 9]
    py = pose[pi, pc + 10]
    pz = pose[pi, pc + 11]
    gx = r0 * h0 + r1 * h1 + r2 * h2
    gy = r3 * h0 + r4 * h1 + r5 * h2
    gz = r6 * h0 + r7 * h1 + r8 * h2
    # T = R I_o, then R I_o R^T (symmetric: six entries)
    t00 = r0 * ixx + r1 * ixy + r2 * ixz
    t01 = r0 * ixy + r1 * iyy + r2 * iyz
    t02 = r0 * ixz + r1 * iyz + r2 * izz
    t10 = r3 * ixx + r4 * ixy + r5 * ixz
    t11 = r3 * ixy + r4 * iyy + r5 * iyz
    t12 = r3 * ixz + r4 * iyz + r5 * izz
    t20 = r6 * ixx + r7 * ixy + r8 * ixz
    t21 = r6 * ixy + r7 * iyy + r8 * iyz
    t22 = r6 * ixz + r7 * iyz + r8 * izz
    mpx = m * px
    mpy = m * py
    mpz = m * pz
    d = 2.0 * (gx * px + gy * py + gz * pz) + mpx * px + mpy * py + mpz * pz
    out[oi, oc] += m
    out[oi, oc + 1] += gx + mpx
    out[oi, oc + 2] += gy + mpy
    out[oi, oc + 3] += gz + mpz
    out[oi, oc + 4] += t00 * r0 + t01 * r1 + t02 * r2 - (2.0 * px * gx + mpx * px) + d
    out[oi, oc + 5] += t00 * r3 + t01 * r4 + t02 * r5 - (px * gy + gx * py + mpx * py)
    out[oi, oc + 6] += t00 * r6 + t01 * r7 + t02 * r8 - (px * gz + gx * pz + mpx * pz)
    out[oi, oc + 7] += t10 * r3 + t11 * r4 + t12 * r5 - (2.0 * py * gy + mpy * py) + d
    out[oi, oc + 8] += t10 * r6 + t11 * r7 + t12 * r8 - (py * gz + gy * pz + mpy * pz)
    out[oi, oc + 9] += t20 * r6 + t21 * r7 + t22 * r8 - (2.0 * pz * gz + mpz * pz) + d
