"""Generated (unrolled) analytic derivatives of the inverse dynamics of one robot.

The same recursion as the generic kernel kernels/derivatives.rnea_derivatives (Carpentier and
Mansard, "Analytical Derivatives of Rigid Body Dynamics Algorithms", RSS 2018 [RSS18]; its
equations (D1)-(D7), restated in kernels/derivatives.py and docs/derivatives.md), written as
straight-line code for this robot's structure: the joint axes, placements and inertias are
literals (expr.py folds their zeros and ones), the dof structure (which dof is above which) is
unrolled, so the structurally zero entries of the matrices are plain `= 0.0` stores and every
intermediate is a local float.

    rnea_derivatives(q, v, qdd, out)   out (3, nv, nv) = (dtau/dq, dtau/dv, M)
    aba_derivatives(q, v, tau, out)    out (3, nv, nv) = (dqdd/dq, dqdd/dv, M^-1)
                                       at qdd = FD(q, v, tau) (D8; its docstring)

at (q, v, qdd), no external loads, the tree's passive forces (damping, smoothed friction)
included as in inverse_dynamics. Status: 0 ok, 1 invalid input (shape, NaN/inf, quaternion norm)
or a non-finite result (the caller then runs the generic kernel, which reports the exact error).
"""
from __future__ import annotations

from .expr import ZERO, Emitter, add, const, scale, sub, text, var
from .spatial_sym import cross_force, cross_motion

FUNCTION = "rnea_derivatives"
# numba fastmath flags of the two derivative kernels (codegen/kernels.compile_kernel): LLVM may
# reassociate and contract (FMA) the unrolled sums and products, which lets it share more common
# products (measured ur5 rnea_derivatives, dispatcher call: 0.96 -> 0.88 us; results within
# ~1e-15 of the matrix norm of the plain build). Without nnan / ninf: the kernels' finiteness
# checks (`x - x == 0.0`, `x * 0.0`) must not be folded away. Part of the generator's text, so a
# change of the flags changes the generated module's cache key
FASTMATH = frozenset({"contract", "reassoc", "arcp", "nsz"})
PIVOT_RTOL = 1e-13   # kernels/derivatives.PIVOT_RTOL: the ABA's singular joint-inertia test
# above this many dofs the unrolled kernels are not generated (stubs returning 1 are, and the
# module says so in RNEA_DERIVATIVES_GENERATED): the source grows as nv * depth and numba's
# (LLVM's) compile time superlinearly with it. Measured cold, CPU time of compiling
# forward_dynamics + rnea_derivatives + aba_derivatives on a shared 2-core AMD EPYC VM: nv 6
# (ur5) 5 s, nv 9 (panda) 10 s, nv 12 14 s, nv 15 18 s, nv 18 (solo12) 105 s (rnea_derivatives
# alone 96 s), measured with the first forward kernel (ABA + the recursion); the forward kernel
# now holds the whole recursion and compiles ~2x the inverse one (nv 12: 7 + 16 s): the limit
# stays well below the jump (docs/derivatives.md's tables). Larger robots
# keep the generic kernels (robot/fast_derivatives.py; call_paths says "generic"), compiled once
# for all robots
MAX_DOFS = 12


def generated(model):
    """True when the unrolled rnea_derivatives is generated for this model (nv <= MAX_DOFS)."""
    return 0 < model.nv <= MAX_DOFS


def _motion_to_world(em, rot, pos, column):
    """oX_i s (6 Exprs) for a body-frame motion s with the body's world pose (R, p):
    w_o = R w, v_o = R v + p x w_o (kernels/derivatives.motion_to_world)."""
    w = [em.value(em.dot([(rot[3 * r + k], column[3 + k]) for k in range(3)])) for r in range(3)]
    px, py, pz = pos
    mul = em.mul
    lin = [em.dot([(rot[3 * r + k], column[k]) for k in range(3)]) for r in range(3)]
    return [em.value(add(lin[0], mul(py, w[2]), scale(mul(pz, w[1]), -1.0))),
            em.value(add(lin[1], mul(pz, w[0]), scale(mul(px, w[2]), -1.0))),
            em.value(add(lin[2], mul(px, w[1]), scale(mul(py, w[0]), -1.0))),
            w[0], w[1], w[2]]


def _compose(em, rot_a, pos_a, rot_b, pos_b):
    """A B for poses (R, p): R = R_a R_b, p = p_a + R_a p_b (kernels/spatial.compose_pose)."""
    rot = [em.value(em.dot([(rot_a[3 * r + k], rot_b[3 * k + c]) for k in range(3)]), "oR")
           for r in range(3) for c in range(3)]
    pos = [em.value(add(pos_a[r], em.dot([(rot_a[3 * r + k], pos_b[k]) for k in range(3)])), "op")
           for r in range(3)]
    return rot, pos


def _world_inertia(em, rot, pos, inertia):
    """The rigid-body parameters (m, h, I_o: 10 Exprs) of a body's constant spatial inertia
    (36 floats, body frame) moved to the root frame by the body's world pose (R, p):
    m' = m, h' = R h + m p, I'_o = R I_o R^T - (p g^T + g p^T + m p p^T) + (2 g.p + m p.p) 1,
    g = R h (parallel axis theorem; kernels/spatial.add_rigid_inertia_to_parent)."""
    m = inertia[0]
    h = [inertia[11], inertia[15], inertia[4]]
    i_o = [[inertia[21], inertia[22], inertia[23]], [inertia[22], inertia[28], inertia[29]],
           [inertia[23], inertia[29], inertia[35]]]
    g = [em.value(add(*(scale(rot[3 * r + k], h[k]) for k in range(3))), "g") for r in range(3)]
    t = [[em.value(add(*(scale(rot[3 * r + k], i_o[k][c]) for k in range(3))), "T")
          for c in range(3)] for r in range(3)]
    p = pos
    mul = em.mul
    mp = [scale(x, m) for x in p]
    d = em.value(add(scale(add(mul(g[0], p[0]), mul(g[1], p[1]), mul(g[2], p[2])), 2.0),
                     mul(mp[0], p[0]), mul(mp[1], p[1]), mul(mp[2], p[2])), "d")
    out = [const(m)] + [em.value(add(g[r], mp[r]), "Y") for r in range(3)]
    for r, c in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)):
        e = add(em.dot([(t[r][k], rot[3 * c + k]) for k in range(3)]),
                scale(add(mul(p[r], g[c]), mul(g[r], p[c]), mul(mp[r], p[c])), -1.0))
        if r == c:
            e = add(e, d)
        out.append(em.value(e, "Y"))
    return out


def _inertia_times(em, y, x):
    """I x for rigid-body parameters y = (m, h, I_o): [m v - h x w; h x v + I_o w]
    (kernels/spatial.rigid_parameters_times)."""
    m, hx, hy, hz, i00, i01, i02, i11, i12, i22 = y
    vx, vy, vz, wx, wy, wz = x
    mul = em.mul
    return [sub(em.mul(m, vx), sub(mul(hy, wz), mul(hz, wy))),
            sub(em.mul(m, vy), sub(mul(hz, wx), mul(hx, wz))),
            sub(em.mul(m, vz), sub(mul(hx, wy), mul(hy, wx))),
            add(mul(hy, vz), scale(mul(hz, vy), -1.0), mul(i00, wx), mul(i01, wy), mul(i02, wz)),
            add(mul(hz, vx), scale(mul(hx, vz), -1.0), mul(i01, wx), mul(i11, wy), mul(i12, wz)),
            add(mul(hx, vy), scale(mul(hy, vx), -1.0), mul(i02, wx), mul(i12, wy), mul(i22, wz))]


def _variation(em, y, ov, oh):
    """The inertia variation B = ov x* oI - oI (ov x) + (. x* oI ov) of (D5), stored as
    (g, C) (12 Exprs): B = [[0, -2 [g]], [0, C]], g = oh's linear part,
    C = 2 (v.h) 1 - (h v^T + v h^T) + [w] I_o - I_o [w] - [n]
    (kernels/derivatives.inertia_variation)."""
    _, hx, hy, hz, i00, i01, i02, i11, i12, i22 = y
    vx, vy, vz, wx, wy, wz = ov
    mul = em.mul
    p = [[sub(mul(wy, i02), mul(wz, i01)), sub(mul(wy, i12), mul(wz, i11)),
          sub(mul(wy, i22), mul(wz, i12))],
         [sub(mul(wz, i00), mul(wx, i02)), sub(mul(wz, i01), mul(wx, i12)),
          sub(mul(wz, i02), mul(wx, i22))],
         [sub(mul(wx, i01), mul(wy, i00)), sub(mul(wx, i11), mul(wy, i01)),
          sub(mul(wx, i12), mul(wy, i02))]]
    p = [[em.value(e, "P") for e in row] for row in p]
    vh = em.value(scale(add(mul(vx, hx), mul(vy, hy), mul(vz, hz)), 2.0), "vh")
    h = (hx, hy, hz)
    v = (vx, vy, vz)
    n = oh[3:6]
    skew_n = [[ZERO, scale(n[2], -1.0), n[1]], [n[2], ZERO, scale(n[0], -1.0)],
              [scale(n[1], -1.0), n[0], ZERO]]
    c = []
    for r in range(3):
        for k in range(3):
            e = add(scale(add(mul(h[r], v[k]), mul(v[r], h[k])), -1.0), p[r][k], p[k][r],
                    scale(skew_n[r][k], -1.0))
            if r == k:
                e = add(e, vh)
            c.append(em.value(e, "C"))
    return list(oh[0:3]) + c


def _variation_times(em, b, x):
    """B x = [-2 g x x_ang; C x_ang] for the variation (g, C) (kernels/derivatives.variation_times)."""
    gx, gy, gz = b[0:3]
    c = b[3:12]
    ax, ay, az = x[3:6]
    mul = em.mul
    return [scale(sub(mul(gy, az), mul(gz, ay)), -2.0),
            scale(sub(mul(gz, ax), mul(gx, az)), -2.0),
            scale(sub(mul(gx, ay), mul(gy, ax)), -2.0),
            em.dot([(c[0], ax), (c[1], ay), (c[2], az)]),
            em.dot([(c[3], ax), (c[4], ay), (c[5], az)]),
            em.dot([(c[6], ax), (c[7], ay), (c[8], az)])]


def _variation_transpose_angular(em, b, s):
    """The angular part of B^T s (its linear part is 0): 2 g x s_lin + C^T s_ang
    (kernels/derivatives.dyt_column)."""
    gx, gy, gz = b[0:3]
    c = b[3:12]
    sx, sy, sz = s[0:3]
    mul = em.mul
    lin = [scale(sub(mul(gy, sz), mul(gz, sy)), 2.0), scale(sub(mul(gz, sx), mul(gx, sz)), 2.0),
           scale(sub(mul(gx, sy), mul(gy, sx)), 2.0)]
    return [em.value(add(lin[r], em.dot([(c[r], s[3]), (c[3 + r], s[4]), (c[6 + r], s[5])])), "dyt")
            for r in range(3)]


def _values(em, exprs, prefix):
    return [em.value(e, prefix) for e in exprs]


def _dot(em, a, b):
    return em.dot(list(zip(a, b)))


class _Passes:
    """The Exprs of a robot's qdd-free forward pass (_forward_free), which the later passes of
    both kernels read (a plain namespace)."""


def _forward_free(g, body):
    """The forward pass's terms that do not depend on qdd, tips last: world poses, the world
    columns oS, ov (D1), the bias ov_i x oS_i v_i of (D2), dV/dq and dA/dv (D4), oI_i, oh and the
    variation B_i (D3), (D5)."""
    st = _Passes()
    st.bodies = g.bodies[1:]
    identity = [const(1.0 if k % 4 == 0 else 0.0) for k in range(9)]
    rot, pos = {0: identity}, {0: [ZERO] * 3}
    st.ov, st.bias = {0: [ZERO] * 6}, {}
    st.y, st.variation, st.oh = {}, {}, {}
    st.s, st.dvdq, st.dadv = {}, {}, {}
    st.dofs_above = {0: []}
    for b in st.bodies:
        g._body_comment(body, b)
        # world pose: oT_i = oT_p pT_i
        r_local, p_local = g.joint_pose(body, b)
        rot[b.index], pos[b.index] = _compose(body, rot[b.parent], pos[b.parent], r_local, p_local)
        r, p = rot[b.index], pos[b.index]
        dofs = list(range(b.iv, b.iv + b.k))
        st.dofs_above[b.index] = st.dofs_above[b.parent] + dofs
        for j, jc in enumerate(dofs):
            column = [const(x) for x in b.subspace[:, j]]
            st.s[jc] = _motion_to_world(body, r, p, column)
        # the joint's own velocity oS_i v_i; ov_i = ov_p + oS_i v_i                          (D1)
        vj = _values(body, [add(*(body.mul(st.s[jc][k], var(f"v{jc}"))
                                  for jc in dofs)) for k in range(6)], "vj")
        ov = st.ov[b.index] = _values(body, [add(st.ov[b.parent][k], vj[k]) for k in range(6)],
                                      "ov")
        st.bias[b.index] = _values(body, cross_motion(body, ov, vj), "ab")
        # dV/dq = ov_p x oS, dA/dv = dV/dq + ov_i x oS                                       (D4)
        for jc in dofs:
            st.dvdq[jc] = _values(body, cross_motion(body, st.ov[b.parent], st.s[jc]), "dV")
            st.dadv[jc] = _values(body, [add(x, z) for x, z in zip(
                st.dvdq[jc], cross_motion(body, ov, st.s[jc]))], "dAv")
        # oI_i (root frame); oh = oI ov; the variation B_i                                (D3), (D5)
        st.y[b.index] = _world_inertia(body, r, p, b.inertia)
        st.oh[b.index] = _values(body, _inertia_times(body, st.y[b.index], ov), "oh")
        st.variation[b.index] = _variation(body, st.y[b.index], ov, st.oh[b.index])
    return st


def _body_force(body, st, i, acc):
    """of_i = oI_i oa_i + ov_i x* oI_i ov_i                                                (D3)"""
    return [add(x, z) for x, z in zip(_inertia_times(body, st.y[i], acc),
                                      cross_force(body, st.ov[i], st.oh[i]))]


def _passive(b, j, jc, derivative):
    """Source text of the passive joint force b v + f tanh(v / v_s) of dof jc (the j-th of body
    b), or of its derivative d/dv, or None when the joint has none."""
    if b.damping[j] == 0.0 and b.friction[j] == 0.0:
        return None
    parts = []
    speed = repr(float(b.friction_speed))
    if b.damping[j] != 0.0:
        parts.append(repr(float(b.damping[j])) if derivative
                     else f"{float(b.damping[j])!r} * v{jc}")
    if b.friction[j] != 0.0:
        parts.append(f"{float(b.friction[j])!r} * (1.0 - math.tanh(v{jc} / {speed}) ** 2) / {speed}"
                     if derivative else f"{float(b.friction[j])!r} * math.tanh(v{jc} / {speed})")
    return " + ".join(parts)


def _derivative_passes(g, body, st, written):
    """The qdd-dependent forward terms (oa (D2), dA/dq (D4), of (D3)) with qdd in the scalars
    a0.., then the backward pass, tips -> base: subtree sums and the matrices' entries
    (D6)-(D7) stored into out (their (d, row, col) added to `written`)."""
    oa, dadq, of = {0: g._base_acceleration()}, {}, {}
    for b in st.bodies:
        dofs = list(range(b.iv, b.iv + b.k))
        # oa_i = oa_p + oS_i qdd_i + ov_i x oS_i v_i                                         (D2)
        oa[b.index] = _values(body, [add(oa[b.parent][k], st.bias[b.index][k],
                                         *(body.mul(st.s[jc][k], var(f"a{jc}")) for jc in dofs))
                                     for k in range(6)], "oa")
        # dA/dq = oa_p x oS + ov_p x dV/dq                                                   (D4)
        for jc in dofs:
            dadq[jc] = _values(body, [add(x, z) for x, z in zip(
                cross_motion(body, oa[b.parent], st.s[jc]),
                cross_motion(body, st.ov[b.parent], st.dvdq[jc]))], "dAq")
        of[b.index] = _body_force(body, st, b.index, oa[b.index])
    s, dvdq, dadv = st.s, st.dvdq, st.dadv
    y, variation = dict(st.y), dict(st.variation)

    def store(d, row, col, e):
        body.emit(f"out[{d}, {row}, {col}] = {text(e)}")
        written.add((d, row, col))

    for b in reversed(st.bodies):
        i = b.index
        body.emit(f"# body {i}: subtree sums, rows and columns of its dofs")
        y[i] = _values(body, y[i], "Yc")
        variation[i] = _values(body, variation[i], "Bc")
        of[i] = _values(body, of[i], "F")
        dofs = list(range(b.iv, b.iv + b.k))
        above = st.dofs_above[b.parent]
        ys, dfdq, dfdv, dyt, below = {}, {}, {}, {}, {}
        for jc in dofs:
            # dF/dqdd = Ycrb oS, dF/dq = Ycrb dA/dq + dYcrb dV/dq, dF/dv = Ycrb dA/dv + dYcrb oS
            ys[jc] = _values(body, _inertia_times(body, y[i], s[jc]), "YS")
            dfdq[jc] = _values(body, [add(x, z) for x, z in zip(
                _inertia_times(body, y[i], dadq[jc]), _variation_times(body, variation[i], dvdq[jc]))],
                "Fq")
            dfdv[jc] = _values(body, [add(x, z) for x, z in zip(
                _inertia_times(body, y[i], dadv[jc]), _variation_times(body, variation[i], s[jc]))],
                "Fv")
            dyt[jc] = _variation_transpose_angular(body, variation[i], s[jc])
            # the column as the ancestors' rows see it: + oS x* F_i                           (D7)
            below[jc] = [add(x, z) for x, z in zip(dfdq[jc], cross_force(body, s[jc], of[i]))]
        for j, jc in enumerate(dofs):
            for jm in dofs:
                store(0, jm, jc, _dot(body, s[jm], dfdq[jc]))
                dv = _dot(body, s[jm], dfdv[jc])
                passive = _passive(b, j, jc, derivative=True) if jm == jc else None
                if passive is not None:
                    # passive joint forces: d/dv (b v + f tanh(v / v_s))
                    body.emit(f"out[1, {jm}, {jc}] = {text(dv)} + {passive}")
                    written.add((1, jm, jc))
                else:
                    store(1, jm, jc, dv)
                store(2, jm, jc, _dot(body, s[jm], ys[jc]))
            below_c = _values(body, below[jc], "Fb")
            for k in above:
                # rows k above (column jc), and row jc's entries in the columns k above (D6)-(D7)
                store(0, k, jc, _dot(body, s[k], below_c))
                store(1, k, jc, _dot(body, s[k], dfdv[jc]))
                mass = body.value(_dot(body, s[k], ys[jc]), "M")
                store(2, k, jc, mass)
                store(2, jc, k, mass)
                store(0, jc, k, add(_dot(body, ys[jc], dadq[k]), _dot(body, dyt[jc], dvdq[k][3:6])))
                store(1, jc, k, add(_dot(body, ys[jc], dadv[k]), _dot(body, dyt[jc], s[k][3:6])))
        if b.parent > 0:
            p = b.parent
            y[p] = [add(x, z) for x, z in zip(y[p], y[i])]
            variation[p] = [add(x, z) for x, z in zip(variation[p], variation[i])]
            of[p] = [add(x, z) for x, z in zip(of[p], of[i])]


def _zero_stores(body, nv, written):
    """Zero stores of the structurally zero entries (not in `written`)."""
    for d in range(3):
        for r in range(nv):
            for c in range(nv):
                if (d, r, c) not in written:
                    body.emit(f"out[{d}, {r}, {c}] = 0.0")


def rnea_derivatives(g):
    """Source of the generated rnea_derivatives(q, v, qdd, out): out = (dtau/dq, dtau/dv, M) at
    the given qdd (_derivatives; a stub returning 1 above MAX_DOFS)."""
    nv = g.model.nv
    if not generated(g.model):
        return (f"RNEA_DERIVATIVES_GENERATED = False\n\n\ndef {FUNCTION}(q, v, qdd, out):\n"
                f"    return 1   # nv {nv} > {MAX_DOFS}: the generic kernel serves (module docstring)\n")
    return "RNEA_DERIVATIVES_GENERATED = True\n\n\n" + _derivatives(g, forward=False)


FORWARD_FUNCTION = "aba_derivatives"


def dof_parents(g):
    """The previous dof on the path to the root of each dof (the joint's own previous axis, else
    the parent joint's last one; -1 at the root): robot/derivatives.dof_structure's."""
    parents = [-1] * g.model.nv
    for b in g.bodies[1:]:
        for c in range(b.k):
            if c > 0:
                parents[b.iv + c] = b.iv + c - 1
            elif b.parent > 0:
                p = g.bodies[b.parent]
                parents[b.iv] = p.iv + p.k - 1
    return parents


def _ancestors(parents, k):
    out = []
    j = parents[k]
    while j >= 0:
        out.append(j)
        j = parents[j]
    return out


def aba_derivatives(g):
    """Source of the generated aba_derivatives(q, v, tau, out): out = (dqdd/dq, dqdd/dv, M^-1) at
    qdd = FD(q, v, tau) (_derivatives; a stub returning 1 above MAX_DOFS)."""
    nv = g.model.nv
    if not generated(g.model):
        return (f"def {FORWARD_FUNCTION}(q, v, tau, out):\n"
                f"    return 1   # nv {nv} > {MAX_DOFS}: the generic kernel serves\n")
    return _derivatives(g, forward=True)


def _derivatives(g, forward):
    """One unrolled derivative kernel: rnea_derivatives (forward False: x = qdd; out = dtau/dq,
    dtau/dv, M) or aba_derivatives (forward True: x = tau; out = dqdd/dq, dqdd/dv, M^-1 at
    qdd = FD(q, v, tau)). The forward route is kernels/derivatives.aba_derivatives' (D8) with
    D9's split, in one function: the forward pass's qdd-free terms once (poses, oS, ov, oI, B),
    then M (the CRBA's Ycrb oS products) and the bias tau_b = ID(q, v, 0) + the passive forces
    from the same terms, M = L^T D L factorised with the tree's dof structure unrolled
    (Featherstone's RBDA Table 6.3), qdd = M^-1 (tau - tau_b) (Table 6.4), then the
    qdd-dependent terms and the backward pass at that qdd, and the solves -M^-1 dtau/dx and
    M^-1 with the same factors, one column at a time with the structure unrolled (no separate
    ABA: the kinematics are computed once). Status 0 ok, 1 bad input or a non-finite result, 2
    a singular M (pivot not above PIVOT_RTOL M_kk): the caller then runs the generic kernel,
    which reports the exact error. One function per mode rather than one with a mode flag:
    measured, the flagged one ran slower (panda ID 1.36 -> 1.99 us) for ~30 % less compile."""
    nq, nv = g.model.nq, g.model.nv
    parents = dof_parents(g)
    ancestors = [_ancestors(parents, k) for k in range(nv)]
    em = Emitter()
    name, x = (FORWARD_FUNCTION, "tau") if forward else (FUNCTION, "qdd")
    g._header(em, name, [("q", nq, "q"), ("v", nv, "v"), (x, nv, "x_")], (3, nv, nv))
    body = Emitter()
    st = _forward_free(g, body)
    written = set()
    if not forward:
        for k in range(nv):
            body.emit(f"a{k} = x_{k}")
        _derivative_passes(g, body, st, written)
        _zero_stores(body, nv, written)
        # a non-finite result (overflow): status 1, the generic kernel reports it
        body.emit("check = 0.0")
        body.emit(f"for r in range({nv}):")
        body.emit(f"    for c in range({nv}):")
        body.emit("        check += out[0, r, c] * 0.0 + out[1, r, c] * 0.0")
        body.emit("if not (check == 0.0):")
        body.emit("    return 1")
        return g._finish(em, body)
    # tau_b = ID(q, v, 0): oa0_i = oa0_p + ov_i x oS_i v_i, F0_i = oI oa0 + ov x* oh, summed
    # over the subtree, tau_b = oS^T F0 (+ passive); M_kc = oS_k^T Ycrb_i oS_c (CRBA)
    oa0, force, ycrb = {0: g._base_acceleration()}, {}, dict(st.y)
    for b in st.bodies:
        oa0[b.index] = _values(body, [add(oa0[b.parent][k], st.bias[b.index][k])
                                      for k in range(6)], "oz")
        force[b.index] = _body_force(body, st, b.index, oa0[b.index])
    body.emit("# M and tau_b: subtree sums, tips -> base")
    for b in reversed(st.bodies):
        i = b.index
        ycrb[i] = _values(body, ycrb[i], "Ym")
        force[i] = _values(body, force[i], "Fz")
        for j, jc in enumerate(range(b.iv, b.iv + b.k)):
            ys = _values(body, _inertia_times(body, ycrb[i], st.s[jc]), "YSm")
            tau_b = text(_dot(body, st.s[jc], force[i]))
            passive = _passive(b, j, jc, derivative=False)
            body.emit(f"x{jc} = x_{jc} - ({tau_b}" + (f" + {passive})" if passive else ")"))
            for k in [jc] + ancestors[jc]:
                body.emit(f"h_{jc}_{k} = {text(_dot(body, st.s[k], ys))}")
        if b.parent > 0:
            p = b.parent
            ycrb[p] = [add(x, z) for x, z in zip(ycrb[p], ycrb[i])]
            force[p] = [add(x, z) for x, z in zip(force[p], force[i])]
    body.emit("# M = L^T D L along the tree (RBDA Table 6.3): h_r_c for c = r or an ancestor of r")
    for k in range(nv):
        body.emit(f"m_{k} = h_{k}_{k}")
    for k in range(nv - 1, -1, -1):
        body.emit(f"if not (h_{k}_{k} > {PIVOT_RTOL!r} * m_{k}):")
        body.emit("    return 2")
        for i in ancestors[k]:
            body.emit(f"f = h_{k}_{i} / h_{k}_{k}")
            for j in [i] + ancestors[i]:
                body.emit(f"h_{i}_{j} = h_{i}_{j} - f * h_{k}_{j}")
            body.emit(f"h_{k}_{i} = f")
    for k in range(nv):
        body.emit(f"d_{k} = 1.0 / h_{k}_{k}")

    def solve(x, scale):
        """x <- scale M^-1 x for the scalars x0.. (RBDA Table 6.4)."""
        out = []
        for i in range(nv - 1, -1, -1):         # L^-T
            for j in ancestors[i]:
                out.append(f"{x}{j} = {x}{j} - h_{i}_{j} * {x}{i}")
        for i in range(nv):                      # D^-1
            factor = f"d_{i}" if scale == 1.0 else f"(-d_{i})"
            out.append(f"{x}{i} = {x}{i} * {factor}")
        for i in range(nv):                      # L^-1
            for j in ancestors[i]:
                out.append(f"{x}{i} = {x}{i} - h_{i}_{j} * {x}{j}")
        return out

    body.emit("# qdd = M^-1 (tau - tau_b)")
    for line in solve("x", 1.0):
        body.emit(line)
    for k in range(nv):
        body.emit(f"a{k} = x{k}")
    _derivative_passes(g, body, st, written)
    _zero_stores(body, nv, written)

    def solve_columns(target, scale, identity):
        """x <- scale M^-1 x for each column c of out[target] (identity: x = e_c)."""
        out = [f"for c in range({nv}):"]
        for r in range(nv):
            out.append(f"    x{r} = 1.0 if c == {r} else 0.0" if identity
                       else f"    x{r} = out[{target}, {r}, c]")
        out += ["    " + line for line in solve("x", scale)]
        out += [f"    out[{target}, {r}, c] = x{r}" for r in range(nv)]
        return out

    body.emit("# dqdd/dq = -M^-1 dtau/dq, dqdd/dv = -M^-1 dtau/dv, dqdd/dtau = M^-1 (D8)")
    for line in solve_columns(0, -1.0, False) + solve_columns(1, -1.0, False) + \
            solve_columns(2, 1.0, True):
        body.emit(line)
    # a non-finite result (overflow): status 1, the generic kernel reports it
    body.emit("check = 0.0")
    body.emit(f"for r in range({nv}):")
    body.emit(f"    for c in range({nv}):")
    body.emit("        check += out[0, r, c] * 0.0 + out[1, r, c] * 0.0 + out[2, r, c] * 0.0")
    body.emit("if not (check == 0.0):")
    body.emit("    return 1")
    return g._finish(em, body)
