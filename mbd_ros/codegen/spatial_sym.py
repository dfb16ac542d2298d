"""Spatial algebra on Exprs (symbolic, constant-folded): the generator's version of
kernels/spatial.py, same conventions.

Motion m = [v; w], force f = [n; t]. A body pose in its parent frame is R (9, row-major) and p (3),
x_parent = R x_body + p. The motion transform parent -> body (B_pi in the seeds, ^iX_p) is
w_i = R^T w_p, v_i = R^T (v_p - p x w_p); its dual moves a wrench to the parent frame,
n_p = R n_i, t_p = R t_i + p x n_p. Vectors are lists of Exprs; 6x6 matrices lists of 6 rows.
"""
from __future__ import annotations

from .expr import ZERO, add, const, scale, sub


def motion_to_child(em, rot, pos, m):
    """B_pi m (6 Exprs): a parent-frame motion vector in the body frame."""
    wx, wy, wz = (em.value(x) for x in m[3:6])
    px, py, pz = pos
    lx = em.value(sub(m[0], sub(em.mul(py, wz), em.mul(pz, wy))))
    ly = em.value(sub(m[1], sub(em.mul(pz, wx), em.mul(px, wz))))
    lz = em.value(sub(m[2], sub(em.mul(px, wy), em.mul(py, wx))))
    r = rot
    return [em.dot([(r[0], lx), (r[3], ly), (r[6], lz)]),
            em.dot([(r[1], lx), (r[4], ly), (r[7], lz)]),
            em.dot([(r[2], lx), (r[5], ly), (r[8], lz)]),
            em.dot([(r[0], wx), (r[3], wy), (r[6], wz)]),
            em.dot([(r[1], wx), (r[4], wy), (r[7], wz)]),
            em.dot([(r[2], wx), (r[5], wy), (r[8], wz)])]


def force_to_parent(em, rot, pos, f):
    """B_pi^T f (6 Exprs): a body-frame wrench in the parent frame."""
    f = [em.value(x) for x in f]
    r = rot
    nx = em.value(em.dot([(r[0], f[0]), (r[1], f[1]), (r[2], f[2])]))
    ny = em.value(em.dot([(r[3], f[0]), (r[4], f[1]), (r[5], f[2])]))
    nz = em.value(em.dot([(r[6], f[0]), (r[7], f[1]), (r[8], f[2])]))
    px, py, pz = pos
    return [nx, ny, nz,
            add(em.dot([(r[0], f[3]), (r[1], f[4]), (r[2], f[5])]), em.mul(py, nz), scale(em.mul(pz, ny), -1.0)),
            add(em.dot([(r[3], f[3]), (r[4], f[4]), (r[5], f[5])]), em.mul(pz, nx), scale(em.mul(px, nz), -1.0)),
            add(em.dot([(r[6], f[3]), (r[7], f[4]), (r[8], f[5])]), em.mul(px, ny), scale(em.mul(py, nx), -1.0))]


def cross_motion(em, m, x):
    """m x x (6 Exprs), Featherstone's crm(m) x."""
    vx, vy, vz, wx, wy, wz = m
    mul = em.mul
    return [add(mul(wy, x[2]), scale(mul(wz, x[1]), -1.0), mul(vy, x[5]), scale(mul(vz, x[4]), -1.0)),
            add(mul(wz, x[0]), scale(mul(wx, x[2]), -1.0), mul(vz, x[3]), scale(mul(vx, x[5]), -1.0)),
            add(mul(wx, x[1]), scale(mul(wy, x[0]), -1.0), mul(vx, x[4]), scale(mul(vy, x[3]), -1.0)),
            sub(mul(wy, x[5]), mul(wz, x[4])),
            sub(mul(wz, x[3]), mul(wx, x[5])),
            sub(mul(wx, x[4]), mul(wy, x[3]))]


def cross_force(em, m, f):
    """m x* f (6 Exprs), Featherstone's crf(m) f."""
    vx, vy, vz, wx, wy, wz = m
    mul = em.mul
    return [sub(mul(wy, f[2]), mul(wz, f[1])),
            sub(mul(wz, f[0]), mul(wx, f[2])),
            sub(mul(wx, f[1]), mul(wy, f[0])),
            add(mul(wy, f[5]), scale(mul(wz, f[4]), -1.0), mul(vy, f[2]), scale(mul(vz, f[1]), -1.0)),
            add(mul(wz, f[3]), scale(mul(wx, f[5]), -1.0), mul(vz, f[0]), scale(mul(vx, f[2]), -1.0)),
            add(mul(wx, f[4]), scale(mul(wy, f[3]), -1.0), mul(vx, f[1]), scale(mul(vy, f[0]), -1.0))]


def matrix_times(em, matrix, x):
    """matrix (6x6 Exprs) times x (6 Exprs)."""
    return [em.dot([(matrix[r][c], x[c]) for c in range(6)]) for r in range(6)]


def const_matrix(values):
    """6x6 Exprs of a constant row-major matrix (36 floats)."""
    return [[const(values[6 * r + c]) for c in range(6)] for r in range(6)]


def symmetric_values(em, matrix):
    """The symmetric matrix with its upper triangle written to variables, mirrored below."""
    out = [[ZERO] * 6 for _ in range(6)]
    for r in range(6):
        for c in range(r, 6):
            out[r][c] = out[c][r] = em.value(matrix[r][c])
    return out


def add_symmetric(target, increment):
    """target += increment (upper triangle computed, mirrored)."""
    for r in range(6):
        for c in range(r, 6):
            target[r][c] = target[c][r] = add(target[r][c], increment[r][c])


def _block(matrix, r0, c0):
    return [[matrix[r0 + r][c0 + c] for c in range(3)] for r in range(3)]


def _congruence(em, rot, block, symmetric):
    """R X R^T for a 3x3 block of Exprs (upper triangle only when symmetric)."""
    r = [[rot[3 * a + b] for b in range(3)] for a in range(3)]
    t = [[em.value(em.dot([(block[a][k], r[c][k]) for k in range(3)])) for c in range(3)]
         for a in range(3)]
    out = [[None] * 3 for _ in range(3)]
    for a in range(3):
        for c in range(3):
            if symmetric and c < a:
                continue
            out[a][c] = em.value(em.dot([(r[a][k], t[k][c]) for k in range(3)]))
            if symmetric:
                out[c][a] = out[a][c]
    return out


def inertia_to_parent(em, rot, pos, inertia):
    """B_pi^T I B_pi (6x6 Exprs, symmetric): a body-frame inertia in the parent frame.

    Blocks I = [[A, B], [B^T, C]]: A' = R A R^T, B' = R B R^T, C' = R C R^T, then
    A_p = A', B_p = B' - A'[p], C_p = C' - B'^T [p] + [p] B_p.
    """
    a = _congruence(em, rot, _block(inertia, 0, 0), True)
    b = _congruence(em, rot, _block(inertia, 0, 3), False)
    c = _congruence(em, rot, _block(inertia, 3, 3), True)
    px, py, pz = pos
    mul = em.mul
    # B_p = B' - A'[p]; row k of A'[p] = (row k of A') x p
    bp = [[None] * 3 for _ in range(3)]
    for k in range(3):
        a0, a1, a2 = a[k]
        cross = [sub(mul(a1, pz), mul(a2, py)), sub(mul(a2, px), mul(a0, pz)),
                 sub(mul(a0, py), mul(a1, px))]
        for m in range(3):
            bp[k][m] = em.value(sub(b[k][m], cross[m]))
    out = [[ZERO] * 6 for _ in range(6)]
    for r in range(3):
        for cc in range(3):
            out[r][cc] = a[r][cc]
            out[r][3 + cc] = out[3 + cc][r] = bp[r][cc]
    # C_p[k][m] = C'[k][m] - (B'^T [p])[k][m] + ([p] B_p)[k][m]
    for m in range(3):
        # ([p] B_p)[:, m] = p x B_p[:, m]
        b0, b1, b2 = bp[0][m], bp[1][m], bp[2][m]
        pb = [sub(mul(py, b2), mul(pz, b1)), sub(mul(pz, b0), mul(px, b2)),
              sub(mul(px, b1), mul(py, b0))]
        for k in range(m + 1):
            # (B'^T [p])[k, :] = B'[:, k] x p
            e0, e1, e2 = b[0][k], b[1][k], b[2][k]
            bpk = [sub(mul(e1, pz), mul(e2, py)), sub(mul(e2, px), mul(e0, pz)),
                   sub(mul(e0, py), mul(e1, px))]
            out[3 + k][3 + m] = out[3 + m][3 + k] = add(c[k][m], scale(bpk[m], -1.0), pb[k])
    return out
