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
from numba import njit

from ..flexible.layout import (ART_INERTIA, FEXT, FLEX, FLEX_JSUM, FLEX_MASS, FLEX_P0, FLEX_S0,
                               FLEX_SF, FORCE, FWORK, IDX_QF, IDX_VF, MFF_INV, NF, SPARSE, VEL)


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


@njit(cache=True)
def articulated_constant_body(fint, fdata, work, fwork, i, q, v, tau):
    """Flexible body i with constant M_ff (fint MFF_INV >= 0), twist VEL already set: its
    articulated inertia I^A (6x6, reference frame) into work ART_INERTIA, its articulated bias
    p^A = beta_r - f_ext - M_rf z (6) into work FORCE, and Y (n x 6), z (n) into its FW block.
    beta_f (n) is left in the FW block's beta_f slots. q (nq,), v (nv,), tau (nv,)."""
    n = fint[i, NF]
    o = fint[i, FLEX]
    sf, iu, skl, jpsi, mff, kff, dff = flex_offsets(o, n)
    mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = fwork_offsets(fint[i, FWORK], n)
    iqf = fint[i, IDX_QF]
    ivf = fint[i, IDX_VF]
    mass = fdata[o + FLEX_MASS]
    # s_kl = S^kl q_f (9 vectors of n) from the nonzero entries of S^kl listed at load time
    # (flexible/build.py sparse_block; seed 001 eq. 7: S^kl = sum m_j N_jk^T N_jl)
    for t in range(9 * n):
        fwork[skq + t] = 0.0
    sp = fint[i, SPARSE]
    n_s = int(fdata[sp])
    for e in range(sp + 1, sp + 1 + 3 * n_s, 3):
        fwork[skq + int(fdata[e])] += fdata[e + 2] * q[iqf + int(fdata[e + 1])]
    # one pass over the modes b, every sum in registers:
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
    for b in range(n):
        qb = q[iqf + b]
        vb = v[ivf + b]
        st0 += fdata[sf + b] * qb
        st1 += fdata[sf + n + b] * qb
        st2 += fdata[sf + 2 * n + b] * qb
        p00 += (2.0 * fdata[iu + b] + fwork[skq + b]) * qb
        p11 += (2.0 * fdata[iu + 4 * n + b] + fwork[skq + 4 * n + b]) * qb
        p22 += (2.0 * fdata[iu + 8 * n + b] + fwork[skq + 8 * n + b]) * qb
        p01 += (fdata[iu + n + b] + fdata[iu + 3 * n + b] + fwork[skq + n + b]) * qb
        p02 += (fdata[iu + 2 * n + b] + fdata[iu + 6 * n + b] + fwork[skq + 2 * n + b]) * qb
        p12 += (fdata[iu + 5 * n + b] + fdata[iu + 7 * n + b] + fwork[skq + 5 * n + b]) * qb
        sfq0 += fdata[sf + b] * vb
        sfq1 += fdata[sf + n + b] * vb
        sfq2 += fdata[sf + 2 * n + b] * vb
        jq0 += fdata[jpsi + b] * vb
        jq1 += fdata[jpsi + n + b] * vb
        jq2 += fdata[jpsi + 2 * n + b] * vb
        c00 += (fdata[iu + b] + fwork[skq + b]) * vb
        c01 += (fdata[iu + n + b] + fwork[skq + 3 * n + b]) * vb
        c02 += (fdata[iu + 2 * n + b] + fwork[skq + 6 * n + b]) * vb
        c10 += (fdata[iu + 3 * n + b] + fwork[skq + n + b]) * vb
        c11 += (fdata[iu + 4 * n + b] + fwork[skq + 4 * n + b]) * vb
        c12 += (fdata[iu + 5 * n + b] + fwork[skq + 7 * n + b]) * vb
        c20 += (fdata[iu + 6 * n + b] + fwork[skq + 2 * n + b]) * vb
        c21 += (fdata[iu + 7 * n + b] + fwork[skq + 5 * n + b]) * vb
        c22 += (fdata[iu + 8 * n + b] + fwork[skq + 8 * n + b]) * vb
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
    bf = bb + 6
    for a in range(n):
        s = fdata[sf + a] * cx + fdata[sf + n + a] * cy + fdata[sf + 2 * n + a] * cz
        s += d0 * (fdata[iu + a] + fwork[skq + a])
        s += d1 * (fdata[iu + 4 * n + a] + fwork[skq + 4 * n + a])
        s += d2 * (fdata[iu + 8 * n + a] + fwork[skq + 8 * n + a])
        s += w01 * (fdata[iu + n + a] + fdata[iu + 3 * n + a] + fwork[skq + n + a]
                    + fwork[skq + 3 * n + a])
        s += w02 * (fdata[iu + 2 * n + a] + fdata[iu + 6 * n + a] + fwork[skq + 2 * n + a]
                    + fwork[skq + 6 * n + a])
        s += w12 * (fdata[iu + 5 * n + a] + fdata[iu + 7 * n + a] + fwork[skq + 5 * n + a]
                    + fwork[skq + 7 * n + a])
        fwork[bf + a] = s
    # gyroscopic term from the nonzero entries (a, 3 b + k, G_k[a, b]) of G_k (sparse_block)
    gl = sp + 1 + 3 * n_s
    for e in range(gl + 1, gl + 1 + 3 * int(fdata[gl]), 3):
        bk = int(fdata[e + 1])
        b3 = bk // 3
        fwork[bf + int(fdata[e])] += (2.0 * fdata[e + 2] * work[i, VEL + 3 + bk - 3 * b3]
                                      * v[ivf + b3])
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += fdata[kff + a * n + b] * q[iqf + b] + fdata[dff + a * n + b] * v[ivf + b]
        fwork[bf + a] = (fwork[bf + a] + s) - tau[ivf + a]
    # ---- condensation (seed 002 step 2 on the elastic rows), m_ff^-1 precomputed at load
    # (build.py condense_block): Y = Y0 + [0 | H_k q_f] (M_fr's angular column k is
    # M_fr(0) + G_k q_f), z = m_ff^-1 beta_f
    inv = fint[i, MFF_INV]
    y0 = inv + n * n
    a0 = y0 + 6 * n
    hl = a0 + 36
    for t in range(6 * n):
        fwork[y + t] = fdata[y0 + t]
    for e in range(hl + 1, hl + 1 + 3 * int(fdata[hl]), 3):   # Y[a, 3 + k] += H_k[a, b] q_f[b]
        fwork[y + int(fdata[e])] += fdata[e + 2] * q[iqf + int(fdata[e + 1])]
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += fdata[inv + a * n + b] * fwork[bf + b]
        fwork[z + a] = s
    # I^A = M_rr - M_rf Y and p^A = beta_r - M_rf z: M_rf's linear rows are S_f, its angular
    # rows I_Rf + J_Psi (seed "I_Rf" with S^kl - S^lk); every sum in registers, one pass
    l03 = l04 = l05 = l13 = l14 = l15 = l23 = l24 = l25 = 0.0
    f0 = f1 = f2 = 0.0
    a33 = a34 = a35 = a44 = a45 = a55 = 0.0
    f3 = f4 = f5 = 0.0
    for a in range(n):
        s0 = fdata[sf + a]
        s1 = fdata[sf + n + a]
        s2 = fdata[sf + 2 * n + a]
        # angular rows of M_rf: x: I^yz - I^zy + s_zy - s_yz; y: I^zx - I^xz + s_xz - s_zx;
        # z: I^xy - I^yx + s_yx - s_xy; plus J_Psi
        m3 = (fdata[iu + 5 * n + a] - fdata[iu + 7 * n + a]
              + fwork[skq + 7 * n + a] - fwork[skq + 5 * n + a] + fdata[jpsi + a])
        m4 = (fdata[iu + 6 * n + a] - fdata[iu + 2 * n + a]
              + fwork[skq + 2 * n + a] - fwork[skq + 6 * n + a] + fdata[jpsi + n + a])
        m5 = (fdata[iu + 1 * n + a] - fdata[iu + 3 * n + a]
              + fwork[skq + 3 * n + a] - fwork[skq + 1 * n + a] + fdata[jpsi + 2 * n + a])
        y3 = fwork[y + 6 * a + 3]
        y4 = fwork[y + 6 * a + 4]
        y5 = fwork[y + 6 * a + 5]
        za = fwork[z + a]
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
