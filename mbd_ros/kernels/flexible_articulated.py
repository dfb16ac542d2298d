"""Articulated inertia of a flexible body whose M_ff is constant, in one pass (forward dynamics).

A flexible body without movable children (its elastic mass matrix M_ff = m_ff does not depend on
the state; fixed children ride on it as lumped points) is condensed on its elastic rows as in
kernels/flexible_dynamics.py (seed 002 step 2 applied to the (6 + n_f) body system of seed 001):

    qdd_f = -(z + Y a),   Y = m_ff^-1 M_fr,   z = m_ff^-1 beta_f,
    I^A = M_rr - M_rf Y,  p^A = beta_r - M_rf z.

`articulated_constant_body` computes I^A (work ART_INERTIA), p^A (work FORCE, with -f_ext) and
Y, z (the body's FW block, read by the forward dynamics' last pass) straight from the shape
integrals and the state, without storing the mass blocks M_rr, M_rf or the velocity terms
beta_r: they stay in registers. Deviation from the two-step form (_flex_body_terms then the
condensation) for speed only: the same products in the same order, one pass, no 60-entry store
and reload of M.

Also the offsets of a FLEX block in fdata and of an FW block in fwork (flexible/layout.py).
"""
import numpy as np
from numba import njit

from ..model.flexible.layout import (ART_INERTIA, FEXT, FLEX, FLEX_JSUM, FLEX_MASS, FLEX_P0,
                                     FLEX_S0, FLEX_SF, FORCE, FWORK, IDX_QF, IDX_VF, MFF_INV, NF,
                                     SPARSE, VEL)


# unsigned offsets (articulated_constant_body, the last pass of flexible_dynamics.forward_dynamics):
# numba indexes with a uint64 without its negative-index wraparound. uint64 mixed with int64
# is typed float64 in numba, so offsets are converted once (UINT) and constants are uint64 too.
UINT = np.uint64
UINT1 = np.uint64(1)
UINT2 = np.uint64(2)
UINT3 = np.uint64(3)
UINT4 = np.uint64(4)
UINT5 = np.uint64(5)
UINT6 = np.uint64(6)


@njit(inline="always", cache=True)
def flex_offsets(o, n):
    """Offsets of S_f, I^kl, S^kl, J_Psi, m_ff, K_ff, D_ff in a FLEX block starting at o."""
    sf = o + FLEX_SF
    iu = sf + 3 * n
    skl = iu + 9 * n
    jpsi = skl + 9 * n * n
    mff = jpsi + 3 * n
    kff = mff + n * n
    dff = kff + n * n
    return sf, iu, skl, jpsi, mff, kff, dff


@njit(inline="always", cache=True)
def fwork_offsets(w, n):
    """Offsets of M, beta, Y, z, qdd_f, S^kl q, tmp, tmp2, L, W in an FW block starting at w."""
    mm = w
    bb = mm + (6 + n) * (6 + n)
    y = bb + 6 + n
    z = y + 6 * n
    qddf = z + n
    skq = qddf + n
    tmp = skq + 9 * n
    tmp2 = tmp + n
    chol = tmp2 + n
    wmat = chol + n * n
    return mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat


@njit(inline="always", cache=True)
def _set_symmetric(work, i, r, c, value):
    """ART_INERTIA[r, c] = ART_INERTIA[c, r] = value."""
    work[i, ART_INERTIA + 6 * r + c] = value
    work[i, ART_INERTIA + 6 * c + r] = value


@njit(inline="always", cache=True)
def articulated_constant_body(fint, fdata, work, fwork, i, q, v, tau):
    """Flexible body i with constant M_ff (fint MFF_INV >= 0), twist VEL already set: its
    articulated inertia I^A (6x6, reference frame) into work ART_INERTIA, its articulated bias
    p^A = beta_r - f_ext - M_rf z (6) into work FORCE, and Y (n x 6), z (n) into its FW block.
    beta_f (n) is left in the FW block's beta_f slots. q (nq,), v (nv,), tau (nv,).

    Indices are unsigned (UINT): numba then reads arrays without its negative-index wraparound
    (about three instructions per access, ~0.1 us of this function's ~0.5 us for 4 modes)."""
    n = fint[i, NF]
    o = fint[i, FLEX]
    sf, iu, skl, jpsi, mff, kff, dff = flex_offsets(o, n)
    mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = fwork_offsets(fint[i, FWORK], n)
    un = UINT(n)
    uq = UINT(fint[i, IDX_QF])                  # q_f, qd_f, tau_f in q, v, tau
    uv = UINT(fint[i, IDX_VF])
    # row starts: S_f rows x, y, z; I^kl and s_kl = S^kl q_f rows kl; J_Psi rows
    sf_x, sf_y, sf_z = UINT(sf), UINT(sf + n), UINT(sf + 2 * n)
    i_xx, i_xy, i_xz = UINT(iu), UINT(iu + n), UINT(iu + 2 * n)
    i_yx, i_yy, i_yz = UINT(iu + 3 * n), UINT(iu + 4 * n), UINT(iu + 5 * n)
    i_zx, i_zy, i_zz = UINT(iu + 6 * n), UINT(iu + 7 * n), UINT(iu + 8 * n)
    s_xx, s_xy, s_xz = UINT(skq), UINT(skq + n), UINT(skq + 2 * n)
    s_yx, s_yy, s_yz = UINT(skq + 3 * n), UINT(skq + 4 * n), UINT(skq + 5 * n)
    s_zx, s_zy, s_zz = UINT(skq + 6 * n), UINT(skq + 7 * n), UINT(skq + 8 * n)
    jp_x, jp_y, jp_z = UINT(jpsi), UINT(jpsi + n), UINT(jpsi + 2 * n)
    mass = fdata[o + FLEX_MASS]
    # s_kl = S^kl q_f (9 vectors of n) from the nonzero entries of S^kl listed at load time
    # (flexible/build.py sparse_block; seed 001 eq. 7: S^kl = sum m_j N_jk^T N_jl)
    for t in range(UINT(9) * un):
        fwork[s_xx + t] = 0.0
    sp = fint[i, SPARSE]
    n_s = int(fdata[sp])
    for e in range(UINT(sp + 1), UINT(sp + 1 + 3 * n_s), UINT3):
        fwork[s_xx + UINT(fdata[e])] += fdata[e + UINT2] * q[uq + UINT(fdata[e + UINT1])]
    # sums over the modes b in registers, one pass:
    # S_t = S_0 + S_f q_f (seed eqs. 2-4); P_kl = Theta^kl + (I^kl + I^lk) q_f + q_f^T S^kl q_f
    # (seed eq. 7, symmetric); S_f qd_f; J_Psi qd_f; C_kl = sum m r_k rdot_l = I^kl qd + s_lk . qd
    st0 = fdata[o + FLEX_S0]
    st1 = fdata[o + FLEX_S0 + 1]
    st2 = fdata[o + FLEX_S0 + 2]
    p00 = fdata[o + FLEX_P0]
    p01 = fdata[o + FLEX_P0 + 1]
    p02 = fdata[o + FLEX_P0 + 2]
    p11 = fdata[o + FLEX_P0 + 4]
    p12 = fdata[o + FLEX_P0 + 5]
    p22 = fdata[o + FLEX_P0 + 8]
    sfq0 = sfq1 = sfq2 = 0.0
    jq0 = jq1 = jq2 = 0.0
    c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = 0.0
    for b in range(un):
        qb = q[uq + b]
        vb = v[uv + b]
        st0 += fdata[sf_x + b] * qb
        st1 += fdata[sf_y + b] * qb
        st2 += fdata[sf_z + b] * qb
        p00 += (2.0 * fdata[i_xx + b] + fwork[s_xx + b]) * qb
        p11 += (2.0 * fdata[i_yy + b] + fwork[s_yy + b]) * qb
        p22 += (2.0 * fdata[i_zz + b] + fwork[s_zz + b]) * qb
        p01 += (fdata[i_xy + b] + fdata[i_yx + b] + fwork[s_xy + b]) * qb
        p02 += (fdata[i_xz + b] + fdata[i_zx + b] + fwork[s_xz + b]) * qb
        p12 += (fdata[i_yz + b] + fdata[i_zy + b] + fwork[s_yz + b]) * qb
        sfq0 += fdata[sf_x + b] * vb
        sfq1 += fdata[sf_y + b] * vb
        sfq2 += fdata[sf_z + b] * vb
        jq0 += fdata[jp_x + b] * vb
        jq1 += fdata[jp_y + b] * vb
        jq2 += fdata[jp_z + b] * vb
        c00 += (fdata[i_xx + b] + fwork[s_xx + b]) * vb
        c01 += (fdata[i_xy + b] + fwork[s_yx + b]) * vb
        c02 += (fdata[i_xz + b] + fwork[s_zx + b]) * vb
        c10 += (fdata[i_yx + b] + fwork[s_xy + b]) * vb
        c11 += (fdata[i_yy + b] + fwork[s_yy + b]) * vb
        c12 += (fdata[i_yz + b] + fwork[s_zy + b]) * vb
        c20 += (fdata[i_zx + b] + fwork[s_xz + b]) * vb
        c21 += (fdata[i_zy + b] + fwork[s_yz + b]) * vb
        c22 += (fdata[i_zz + b] + fwork[s_zz + b]) * vb
    # angular block of M_rr: Theta + J with Theta = tr(P) 1 - P (seed eqs. 5-6; the seed's
    # expanded matrix has the off-diagonal signs wrong)
    trace = p00 + p11 + p22
    js = o + FLEX_JSUM
    t33 = trace - p00 + fdata[js]
    t34 = -p01 + fdata[js + 1]
    t35 = -p02 + fdata[js + 2]
    t43 = -p01 + fdata[js + 3]
    t44 = trace - p11 + fdata[js + 4]
    t45 = -p12 + fdata[js + 5]
    t53 = -p02 + fdata[js + 6]
    t54 = -p12 + fdata[js + 7]
    t55 = trace - p22 + fdata[js + 8]
    # ---- quadratic velocity terms beta (seed 001, from the point accelerations)
    vx, vy, vz = work[i, VEL], work[i, VEL + 1], work[i, VEL + 2]
    wx, wy, wz = work[i, VEL + 3], work[i, VEL + 4], work[i, VEL + 5]
    cx = wy * vz - wz * vy            # w x v (origin acceleration part)
    cy = wz * vx - wx * vz
    cz = wx * vy - wy * vx
    u0 = wy * st2 - wz * st1          # w x S_t
    u1 = wz * st0 - wx * st2
    u2 = wx * st1 - wy * st0
    # linear: m w x v + w x (w x S_t) + 2 w x S_f qd_f, minus f_ext
    br0 = (mass * cx + (wy * u2 - wz * u1) + 2.0 * (wy * sfq2 - wz * sfq1)) - work[i, FEXT]
    br1 = (mass * cy + (wz * u0 - wx * u2) + 2.0 * (wz * sfq0 - wx * sfq2)) - work[i, FEXT + 1]
    br2 = (mass * cz + (wx * u1 - wy * u0) + 2.0 * (wx * sfq1 - wy * sfq0)) - work[i, FEXT + 2]
    # angular: S_t x (w x v) + w x ((Theta + J) w + J_Psi qd) + 2 (w tr C - C^T w), minus f_ext
    h0 = jq0 + t33 * wx + t34 * wy + t35 * wz
    h1 = jq1 + t43 * wx + t44 * wy + t45 * wz
    h2 = jq2 + t53 * wx + t54 * wy + t55 * wz
    trc = c00 + c11 + c22
    ctw0 = c00 * wx + c10 * wy + c20 * wz
    ctw1 = c01 * wx + c11 * wy + c21 * wz
    ctw2 = c02 * wx + c12 * wy + c22 * wz
    br3 = (((st1 * cz - st2 * cy) + (wy * h2 - wz * h1) + 2.0 * (wx * trc - ctw0))
           - work[i, FEXT + 3])
    br4 = (((st2 * cx - st0 * cz) + (wz * h0 - wx * h2) + 2.0 * (wy * trc - ctw1))
           - work[i, FEXT + 4])
    br5 = (((st0 * cy - st1 * cx) + (wx * h1 - wy * h0) + 2.0 * (wz * trc - ctw2))
           - work[i, FEXT + 5])
    # elastic rows beta_f: S_f^T (w x v) + sum_kl W_kl (I^lk + s_kl) with the symmetric
    # W = w w^T - |w|^2 1, the gyroscopic 2 sum_k w_k G_k qd_f (below), K_ff q_f + D_ff qd_f
    # (seed 001: delta W = -q_f^T K_ff delta q_f) and the force on the modes -tau_f
    wsq = wx * wx + wy * wy + wz * wz
    d0, d1, d2 = wx * wx - wsq, wy * wy - wsq, wz * wz - wsq
    w01, w02, w12 = wx * wy, wx * wz, wy * wz
    bf = UINT(bb + 6)
    for a in range(un):
        s = fdata[sf_x + a] * cx + fdata[sf_y + a] * cy + fdata[sf_z + a] * cz
        s += d0 * (fdata[i_xx + a] + fwork[s_xx + a])
        s += d1 * (fdata[i_yy + a] + fwork[s_yy + a])
        s += d2 * (fdata[i_zz + a] + fwork[s_zz + a])
        s += w01 * (fdata[i_xy + a] + fdata[i_yx + a] + fwork[s_xy + a] + fwork[s_yx + a])
        s += w02 * (fdata[i_xz + a] + fdata[i_zx + a] + fwork[s_xz + a] + fwork[s_zx + a])
        s += w12 * (fdata[i_yz + a] + fdata[i_zy + a] + fwork[s_yz + a] + fwork[s_zy + a])
        fwork[bf + a] = s
    # gyroscopic term from the nonzero entries (a, 3 b + k, G_k[a, b]) of G_k (sparse_block)
    gl = sp + 1 + 3 * n_s
    for e in range(UINT(gl + 1), UINT(gl + 1 + 3 * int(fdata[gl])), UINT3):
        bk = UINT(fdata[e + UINT1])
        b3 = bk // UINT3
        fwork[bf + UINT(fdata[e])] += (2.0 * fdata[e + UINT2] * work[i, UINT(VEL + 3) + bk - UINT3 * b3]
                                     * v[uv + b3])
    uk = UINT(kff)
    ud = UINT(dff)
    for a in range(un):
        s = 0.0
        row = a * un
        for b in range(un):
            s += fdata[uk + row + b] * q[uq + b] + fdata[ud + row + b] * v[uv + b]
        fwork[bf + a] = (fwork[bf + a] + s) - tau[uv + a]
    # ---- condensation (seed 002 step 2 on the elastic rows), m_ff^-1 precomputed at load
    # (build.py condense_block): Y = Y0 + [0 | H_k q_f] (M_fr's angular column k is
    # M_fr(0) + G_k q_f), z = m_ff^-1 beta_f
    inv = fint[i, MFF_INV]
    y0 = inv + n * n
    a0 = y0 + 6 * n
    hl = a0 + 36
    uy = UINT(y)
    uy0 = UINT(y0)
    for t in range(UINT(6) * un):
        fwork[uy + t] = fdata[uy0 + t]
    for e in range(UINT(hl + 1), UINT(hl + 1 + 3 * int(fdata[hl])), UINT3):   # Y[a, 3 + k] += H_k[a, b] q_f[b]
        fwork[uy + UINT(fdata[e])] += fdata[e + UINT2] * q[uq + UINT(fdata[e + UINT1])]
    uz = UINT(z)
    uinv = UINT(inv)
    for a in range(un):
        s = 0.0
        row = uinv + a * un
        for b in range(un):
            s += fdata[row + b] * fwork[bf + b]
        fwork[uz + a] = s
    # I^A = M_rr - M_rf Y and p^A = beta_r - M_rf z: M_rf's linear rows are S_f, its angular
    # rows I_Rf + J_Psi (seed "I_Rf" with S^kl - S^lk); every sum in registers, one pass
    l03 = l04 = l05 = l13 = l14 = l15 = l23 = l24 = l25 = 0.0
    f0 = f1 = f2 = 0.0
    a33 = a34 = a35 = a44 = a45 = a55 = 0.0
    f3 = f4 = f5 = 0.0
    for a in range(un):
        s0 = fdata[sf_x + a]
        s1 = fdata[sf_y + a]
        s2 = fdata[sf_z + a]
        # angular rows of M_rf: x: I^yz - I^zy + s_zy - s_yz; y: I^zx - I^xz + s_xz - s_zx;
        # z: I^xy - I^yx + s_yx - s_xy; plus J_Psi
        m3 = (fdata[i_yz + a] - fdata[i_zy + a] + fwork[s_zy + a] - fwork[s_yz + a]
              + fdata[jp_x + a])
        m4 = (fdata[i_zx + a] - fdata[i_xz + a] + fwork[s_xz + a] - fwork[s_zx + a]
              + fdata[jp_y + a])
        m5 = (fdata[i_xy + a] - fdata[i_yx + a] + fwork[s_yx + a] - fwork[s_xy + a]
              + fdata[jp_z + a])
        ya = uy + UINT6 * a
        y3 = fwork[ya + UINT3]
        y4 = fwork[ya + UINT4]
        y5 = fwork[ya + UINT5]
        za = fwork[uz + a]
        l03 += s0 * y3
        l04 += s0 * y4
        l05 += s0 * y5
        l13 += s1 * y3
        l14 += s1 * y4
        l15 += s1 * y5
        l23 += s2 * y3
        l24 += s2 * y4
        l25 += s2 * y5
        f0 += s0 * za
        f1 += s1 * za
        f2 += s2 * za
        a33 += m3 * y3
        a34 += m3 * y4
        a35 += m3 * y5
        a44 += m4 * y4
        a45 += m4 * y5
        a55 += m5 * y5
        f3 += m3 * za
        f4 += m4 * za
        f5 += m5 * za
    # linear-linear block m 1 - A0 (A0 = S_f m_ff^-1 S_f^T, constant); linear-angular block
    # -[S_t] - S_f Y_ang; angular block Theta + J - M_rf,ang Y_ang (symmetric: upper entries)
    _set_symmetric(work, i, 0, 0, mass - fdata[a0])
    _set_symmetric(work, i, 0, 1, 0.0 - fdata[a0 + 1])
    _set_symmetric(work, i, 0, 2, 0.0 - fdata[a0 + 2])
    _set_symmetric(work, i, 1, 1, mass - fdata[a0 + 7])
    _set_symmetric(work, i, 1, 2, 0.0 - fdata[a0 + 8])
    _set_symmetric(work, i, 2, 2, mass - fdata[a0 + 14])
    _set_symmetric(work, i, 0, 3, 0.0 - l03)
    _set_symmetric(work, i, 0, 4, st2 - l04)
    _set_symmetric(work, i, 0, 5, -st1 - l05)
    _set_symmetric(work, i, 1, 3, -st2 - l13)
    _set_symmetric(work, i, 1, 4, 0.0 - l14)
    _set_symmetric(work, i, 1, 5, st0 - l15)
    _set_symmetric(work, i, 2, 3, st1 - l23)
    _set_symmetric(work, i, 2, 4, -st0 - l24)
    _set_symmetric(work, i, 2, 5, 0.0 - l25)
    _set_symmetric(work, i, 3, 3, t33 - a33)
    _set_symmetric(work, i, 3, 4, t34 - a34)
    _set_symmetric(work, i, 3, 5, t35 - a35)
    _set_symmetric(work, i, 4, 4, t44 - a44)
    _set_symmetric(work, i, 4, 5, t45 - a45)
    _set_symmetric(work, i, 5, 5, t55 - a55)
    work[i, FORCE] = br0 - f0
    work[i, FORCE + 1] = br1 - f1
    work[i, FORCE + 2] = br2 - f2
    work[i, FORCE + 3] = br3 - f3
    work[i, FORCE + 4] = br4 - f4
    work[i, FORCE + 5] = br5 - f5
