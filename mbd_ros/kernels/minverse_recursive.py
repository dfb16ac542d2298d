"""The inverse of the joint-space mass matrix, M(q)^-1, by the recursive O(n^2) algorithm of
Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms" (RSS 2018,
§IV-B / Algorithm 3; Pinocchio's computeMinverse), never by inverting M. minverse.py calls it
for deep trees (long chains), where it costs less than the tree factor's solves.

Idea: column c of M^-1 is the ABA's qdd for tau = e_c at v = 0 without gravity; the algorithm
runs the ABA for all nv unit forces at once, carrying per body a 6 x nv block of forces (pass up)
and then of accelerations (pass down), in the body frames as the package's ABA (aba.py):

pass 1 (down): joint poses; M*_i = I_i; F_i = 0.
pass 2 (up), body i with joint dofs [iv, iv + k) and subtree dofs [iv, e):
    U_i = M*_i S_i, D_i = S_i^T U_i
    Minv[iv:iv+k, c] = D_i^-1 (E_i - S_i^T F_i)[:, c]     for c in [iv, e)   (E_i: the unit rows)
    F_i[:, iv:e] += U_i Minv[iv:iv+k, iv:e];  F_p[:, iv:e] += ^iX_p^T F_i[:, iv:e]
    M*_p += ^iX_p^T (M*_i - U_i D_i^-1 U_i^T) ^iX_p                     [RBDA eqs. 7.43-7.44]
pass 3 (down), for the columns c >= iv only (the upper triangle: M^-1 is symmetric):
    A_i[:, c] = ^iX_p A_p[:, c]   (0 below the root)
    Minv[iv:iv+k, c] -= D_i^-1 U_i^T A_i[:, c];   A_i[:, c] += S_i Minv[iv:iv+k, c]
then the lower triangle is mirrored. F_i and A_i share the storage `blocks` ((nb+1) * 6, nv).
Bodies are numbered depth first, so a subtree's dofs are the contiguous range [iv, e).

The one-dof joints' column loops run over unsigned indices: numba's test for a negative index
(the wraparound) in every iteration kept LLVM from vectorising a loop that does not start at 0
(as derivatives.py's solves); serial chains of 30 / 50 links 11.0 -> 9.8 / 25.1 -> 18.2 us per
call (bench/RESULTS.md, "M^-1 on deep chains").
"""
from numba import njit, types, uint64

from .entry import entry_point
from .kinematics import joint_pose, revolute_pose, state_status
from .output_checks import STATUS_ALIASED, overlaps
from .spatial import add_inertia_to_parent, invert_spd

from ..model.layout import (ART_INERTIA, D_INV, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_REVOLUTE,
                            JOINT_TYPE, MOTION_SUBSPACE, PARENT, ROT, SCRATCH, SPATIAL_INERTIA,
                            STATUS_OK, STATUS_SHAPE_OUT, STATUS_SINGULAR, SUBTREE_END,
                            TRANSFORM_SCRATCH, U_MAT)

_f8 = types.float64
_i8 = types.int64
_INT2 = types.Array(_i8, 2, "C")
_FLOAT2 = types.Array(_f8, 2, "C")
_VECTOR = types.Array(_f8, 1, "C")
MINVERSE_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _FLOAT2, _VECTOR, _FLOAT2)


@njit(cache=True, inline="always")
def six(array, i, start):
    """array[i, start:start + 6] as six scalars: held in registers by the column loops below
    (a row view would cost a reference count per body)."""
    return (array[i, start], array[i, start + 1], array[i, start + 2], array[i, start + 3],
            array[i, start + 4], array[i, start + 5])


@njit(cache=True, inline="always")
def pose_registers(work, i):
    """Body i's joint pose in work[i, ROT:] (R row-major (9), then p (3)) as twelve scalars."""
    return (work[i, ROT], work[i, ROT + 1], work[i, ROT + 2], work[i, ROT + 3],
            work[i, ROT + 4], work[i, ROT + 5], work[i, ROT + 6], work[i, ROT + 7],
            work[i, ROT + 8], work[i, ROT + 9], work[i, ROT + 10], work[i, ROT + 11])


@njit(cache=True, inline="always")
def one_dof_up(body_int, body_float, work, blocks, out, i, iv, e, parent):
    """Pass 2 for a one-dof joint, straight-line code per column (module docstring):
    U = M* S, d = S^T U; Minv[iv, c] = (delta - S^T F_i[:, c]) / d; then, below a moving parent,
    F_p += ^iX_p^T (F_i + U Minv[iv, :]) and M*_p += ^iX_p^T (M* - U U^T / d) ^iX_p.
    Returns False when d is not positive (singular articulated inertia)."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += work[i, ART_INERTIA + 6 * r + c] * body_float[i, MOTION_SUBSPACE + c]
        work[i, U_MAT + r] = s
    d = 0.0
    for r in range(6):
        d += body_float[i, MOTION_SUBSPACE + r] * work[i, U_MAT + r]
    if not d > 1e-13 * (abs(work[i, ART_INERTIA]) + abs(work[i, ART_INERTIA + 21])):
        return False
    d_inv = 1.0 / d
    work[i, D_INV] = d_inv
    s0, s1, s2, s3, s4, s5 = six(body_float, i, MOTION_SUBSPACE)
    i6 = 6 * i
    out[iv, iv] = d_inv       # F_i has no entries on the joint's own column
    for c in range(uint64(iv + 1), uint64(e)):
        out[iv, c] = -d_inv * (s0 * blocks[i6, c] + s1 * blocks[i6 + 1, c]
                               + s2 * blocks[i6 + 2, c] + s3 * blocks[i6 + 3, c]
                               + s4 * blocks[i6 + 4, c] + s5 * blocks[i6 + 5, c])
    if parent == 0:
        return True
    u0, u1, u2, u3, u4, u5 = six(work, i, U_MAT)
    r0, r1, r2, r3, r4, r5, r6, r7, r8, px, py, pz = pose_registers(work, i)
    p6 = 6 * parent
    for c in range(uint64(iv), uint64(e)):
        m = out[iv, c]
        f0 = blocks[i6, c] + u0 * m
        f1 = blocks[i6 + 1, c] + u1 * m
        f2 = blocks[i6 + 2, c] + u2 * m
        f3 = blocks[i6 + 3, c] + u3 * m
        f4 = blocks[i6 + 4, c] + u4 * m
        f5 = blocks[i6 + 5, c] + u5 * m
        # n_p = R n, t_p = R t + p x (R n)                                   [RBDA eq. 2.25]
        nx = r0 * f0 + r1 * f1 + r2 * f2
        ny = r3 * f0 + r4 * f1 + r5 * f2
        nz = r6 * f0 + r7 * f1 + r8 * f2
        blocks[p6, c] += nx
        blocks[p6 + 1, c] += ny
        blocks[p6 + 2, c] += nz
        blocks[p6 + 3, c] += r0 * f3 + r1 * f4 + r2 * f5 + py * nz - pz * ny
        blocks[p6 + 4, c] += r3 * f3 + r4 * f4 + r5 * f5 + pz * nx - px * nz
        blocks[p6 + 5, c] += r6 * f3 + r7 * f4 + r8 * f5 + px * ny - py * nx
    # M*_i - U U^T / d (rank one), then to the parent                      [RBDA eq. 7.43]
    for r in range(6):
        ur = work[i, U_MAT + r] * d_inv
        for c in range(6):
            work[i, ART_INERTIA + 6 * r + c] -= ur * work[i, U_MAT + c]
    add_inertia_to_parent(work, i, ROT, work, i, ART_INERTIA, work, i, TRANSFORM_SCRATCH,
                          work, parent, ART_INERTIA)
    return True


@entry_point(MINVERSE_SIGNATURE)
def recursive_mass_matrix_inverse(body_int, body_float, work, blocks, q, out):
    """out (nv, nv) = M(q)^-1 (module docstring); blocks ((nb + 1) * 6, nv) is scratch.
    Returns a status (STATUS_SINGULAR + i when joint i's articulated inertia is singular)."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    nb = body_int.shape[0] - 1
    nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    if out.shape[0] != nv or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    for r in range(nv):
        for c in range(nv):
            out[r, c] = 0.0
    # ---- pass 1, down: poses, M*_i = I_i, F_i = 0 on the subtree's columns
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        for m in range(36):
            work[i, ART_INERTIA + m] = body_float[i, SPATIAL_INERTIA + m]
        end = body_int[i, SUBTREE_END]
        e = body_int[end, IDX_V] if end <= nb else nv
        for r in range(6):
            for c in range(body_int[i, IDX_V], e):
                blocks[6 * i + r, c] = 0.0
    # ---- pass 2, up
    for i in range(nb, 0, -1):
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        end = body_int[i, SUBTREE_END]
        e = body_int[end, IDX_V] if end <= nb else nv
        parent = body_int[i, PARENT]
        if k == 1 and not one_dof_up(body_int, body_float, work, blocks, out, i, iv, e, parent):
            return STATUS_SINGULAR + i
        if k == 1:
            continue
        # U = M*_i S_i (6 x k, column-major), D = S^T U into SCRATCH, D^-1 into D_INV
        for j in range(k):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += work[i, ART_INERTIA + 6 * r + c] * body_float[i, MOTION_SUBSPACE + 6 * j + c]
                work[i, U_MAT + 6 * j + r] = s
        for a in range(k):
            for b in range(k):
                s = 0.0
                for r in range(6):
                    s += body_float[i, MOTION_SUBSPACE + 6 * a + r] * work[i, U_MAT + 6 * b + r]
                work[i, SCRATCH + a * k + b] = s
        if k == 1:
            d = work[i, SCRATCH]
            if not d > 1e-13 * (abs(work[i, ART_INERTIA]) + abs(work[i, ART_INERTIA + 21])):
                return STATUS_SINGULAR + i
            work[i, D_INV] = 1.0 / d
        elif not invert_spd(work, i, SCRATCH, k, work, i, D_INV):
            return STATUS_SINGULAR + i
        # Minv[iv:iv+k, c] = D^-1 (E - S^T F_i[:, c]), c in [iv, e)
        for c in range(iv, e):
            for a in range(k):
                s = 1.0 if c == iv + a else 0.0
                for r in range(6):
                    s -= body_float[i, MOTION_SUBSPACE + 6 * a + r] * blocks[6 * i + r, c]
                work[i, SCRATCH + a] = s
            for a in range(k):
                s = 0.0
                for b in range(k):
                    s += work[i, D_INV + a * k + b] * work[i, SCRATCH + b]
                out[iv + a, c] = s
        if parent == 0:
            continue
        # F_i += U Minv_rows;  F_p += ^iX_p^T F_i (column by column)
        for c in range(iv, e):
            for r in range(6):
                s = blocks[6 * i + r, c]
                for a in range(k):
                    s += work[i, U_MAT + 6 * a + r] * out[iv + a, c]
                work[i, SCRATCH + r] = s
            # n_p = R n, t_p = R t + p x (R n)
            nx = (work[i, ROT] * work[i, SCRATCH] + work[i, ROT + 1] * work[i, SCRATCH + 1]
                  + work[i, ROT + 2] * work[i, SCRATCH + 2])
            ny = (work[i, ROT + 3] * work[i, SCRATCH] + work[i, ROT + 4] * work[i, SCRATCH + 1]
                  + work[i, ROT + 5] * work[i, SCRATCH + 2])
            nz = (work[i, ROT + 6] * work[i, SCRATCH] + work[i, ROT + 7] * work[i, SCRATCH + 1]
                  + work[i, ROT + 8] * work[i, SCRATCH + 2])
            tx = (work[i, ROT] * work[i, SCRATCH + 3] + work[i, ROT + 1] * work[i, SCRATCH + 4]
                  + work[i, ROT + 2] * work[i, SCRATCH + 5])
            ty = (work[i, ROT + 3] * work[i, SCRATCH + 3] + work[i, ROT + 4] * work[i, SCRATCH + 4]
                  + work[i, ROT + 5] * work[i, SCRATCH + 5])
            tz = (work[i, ROT + 6] * work[i, SCRATCH + 3] + work[i, ROT + 7] * work[i, SCRATCH + 4]
                  + work[i, ROT + 8] * work[i, SCRATCH + 5])
            px = work[i, ROT + 9]
            py = work[i, ROT + 10]
            pz = work[i, ROT + 11]
            p6 = 6 * parent
            blocks[p6, c] += nx
            blocks[p6 + 1, c] += ny
            blocks[p6 + 2, c] += nz
            blocks[p6 + 3, c] += tx + py * nz - pz * ny
            blocks[p6 + 4, c] += ty + pz * nx - px * nz
            blocks[p6 + 5, c] += tz + px * ny - py * nx
        # M*_i - U D^-1 U^T, then to the parent
        for r in range(6):
            for c in range(6):
                s = 0.0
                for a in range(k):
                    for b in range(k):
                        s += work[i, U_MAT + 6 * a + r] * work[i, D_INV + a * k + b] * \
                            work[i, U_MAT + 6 * b + c]
                work[i, ART_INERTIA + 6 * r + c] -= s
        add_inertia_to_parent(work, i, ROT, work, i, ART_INERTIA, work, i, TRANSFORM_SCRATCH,
                              work, parent, ART_INERTIA)
    # ---- pass 3, down: columns c >= iv
    for i in range(1, nb + 1):
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        parent = body_int[i, PARENT]
        i6 = 6 * i
        if k == 1 and parent > 0:
            # one dof: straight-line code per column (no inner loops over k)
            p6 = 6 * parent
            d_inv = work[i, D_INV]
            r0, r1, r2, r3, r4, r5, r6, r7, r8, px, py, pz = pose_registers(work, i)
            u0, u1, u2, u3, u4, u5 = six(work, i, U_MAT)
            s0, s1, s2, s3, s4, s5 = six(body_float, i, MOTION_SUBSPACE)
            for c in range(uint64(iv), uint64(nv)):
                wx = blocks[p6 + 3, c]
                wy = blocks[p6 + 4, c]
                wz = blocks[p6 + 5, c]
                lx = blocks[p6, c] - (py * wz - pz * wy)
                ly = blocks[p6 + 1, c] - (pz * wx - px * wz)
                lz = blocks[p6 + 2, c] - (px * wy - py * wx)
                a0 = r0 * lx + r3 * ly + r6 * lz
                a1 = r1 * lx + r4 * ly + r7 * lz
                a2 = r2 * lx + r5 * ly + r8 * lz
                a3 = r0 * wx + r3 * wy + r6 * wz
                a4 = r1 * wx + r4 * wy + r7 * wz
                a5 = r2 * wx + r5 * wy + r8 * wz
                m = out[iv, c] - d_inv * (u0 * a0 + u1 * a1 + u2 * a2 + u3 * a3 + u4 * a4
                                          + u5 * a5)
                out[iv, c] = m
                blocks[i6, c] = a0 + s0 * m
                blocks[i6 + 1, c] = a1 + s1 * m
                blocks[i6 + 2, c] = a2 + s2 * m
                blocks[i6 + 3, c] = a3 + s3 * m
                blocks[i6 + 4, c] = a4 + s4 * m
                blocks[i6 + 5, c] = a5 + s5 * m
            continue
        for c in range(iv, nv):
            if parent > 0:
                p6 = 6 * parent
                # A_i = ^iX_p A_p: w = R^T w_p, v = R^T (v_p - p x w_p)
                wx = blocks[p6 + 3, c]
                wy = blocks[p6 + 4, c]
                wz = blocks[p6 + 5, c]
                px = work[i, ROT + 9]
                py = work[i, ROT + 10]
                pz = work[i, ROT + 11]
                lx = blocks[p6, c] - (py * wz - pz * wy)
                ly = blocks[p6 + 1, c] - (pz * wx - px * wz)
                lz = blocks[p6 + 2, c] - (px * wy - py * wx)
                for r in range(3):
                    blocks[i6 + r, c] = (work[i, ROT + r] * lx + work[i, ROT + 3 + r] * ly
                                         + work[i, ROT + 6 + r] * lz)
                    blocks[i6 + 3 + r, c] = (work[i, ROT + r] * wx + work[i, ROT + 3 + r] * wy
                                             + work[i, ROT + 6 + r] * wz)
                # Minv[iv:iv+k, c] -= D^-1 U^T A_i[:, c]
                for a in range(k):
                    s = 0.0
                    for r in range(6):
                        s += work[i, U_MAT + 6 * a + r] * blocks[i6 + r, c]
                    work[i, SCRATCH + a] = s
                for a in range(k):
                    s = 0.0
                    for b in range(k):
                        s += work[i, D_INV + a * k + b] * work[i, SCRATCH + b]
                    out[iv + a, c] -= s
            else:
                for r in range(6):
                    blocks[i6 + r, c] = 0.0
            # A_i += S_i Minv[iv:iv+k, c]
            for r in range(6):
                s = 0.0
                for a in range(k):
                    s += body_float[i, MOTION_SUBSPACE + 6 * a + r] * out[iv + a, c]
                blocks[i6 + r, c] += s
    for r in range(nv):
        for c in range(r + 1, nv):
            out[c, r] = out[r, c]
    return STATUS_OK

