"""Python source of robot-specific dynamics kernels, generated from a Model.

Each function is the generic kernel's recursion unrolled over this robot's bodies: joint axes,
placements and inertias become literals, products by structural zeros and ones are dropped
(expr.py), cos/sin are computed once per revolute joint, and every intermediate is a local float
(no arrays besides the inputs and the output). The steps are those of the generic kernels and
cite the same equations (kernels/rnea.py, aba.py, crba.py, wrenches.py).

Generated functions (all return a status: 0 ok, 1 invalid input (shape, NaN/inf, quaternion
norm), 2 singular articulated inertia; the Python wrapper asks the generic kernels for the exact
error on a non-zero status):

    forward_dynamics(q, v, tau, out)   out (nv,) = qdd            ABA, passive forces included
    inverse_dynamics(q, v, qdd, out)   out (nv,) = tau            RNEA, passive forces included
    bias_forces(q, v, out)             out (nv,) = b(q, v)        RNEA at qdd = 0, no passive forces
    gravity_forces(q, out)             out (nv,) = g(q)           RNEA at v = qdd = 0
    mass_matrix(q, out)                out (nv, nv) = M(q)        CRBA
    joint_wrenches(q, v, qdd, out)     out (n_rows, 6)            RNEA + fixed-joint sums
    rnea_derivatives(q, v, qdd, out)   out (3, nv, nv) = (dtau/dq, dtau/dv, M)
                                                                  RSS 2018 (derivative_generator.py)
    aba_derivatives(q, v, tau, out)    out (3, nv, nv) = (dqdd/dq, dqdd/dv, M^-1)
                                                                  -M^-1 dtau/dx (idem)
"""
from __future__ import annotations

import numpy as np

from ..model import layout as L
from . import derivative_generator
from .expr import ZERO, Emitter, add, const, const_value, fmt_float, is_const, neg, scale, sub, text, var
from .spatial_sym import (add_symmetric, const_matrix, cross_force, cross_motion, force_to_parent,
                          inertia_to_parent, matrix_times, motion_to_child, symmetric_values)

GENERATOR_VERSION = "1"
SNAP = 1e-14          # |x| below this in rotations and axes is an exact 0 (and |x| +- 1 a unit)
SINGULAR_RTOL = 1e-13  # as the generic kernels: joint inertia pivot > 1e-13 * scale
FUNCTIONS = ("forward_dynamics", "inverse_dynamics", "bias_forces", "gravity_forces",
             "mass_matrix", "joint_wrenches", "rnea_derivatives", "aba_derivatives")


def _snap(values):
    out = np.array(values, dtype=float)
    out[np.abs(out) < SNAP] = 0.0
    unit = np.abs(np.abs(out) - 1.0) < SNAP
    out[unit] = np.sign(out[unit])
    return out


class _Body:
    """Constants of one body, read from the model arrays (rotations and axes snapped)."""

    def __init__(self, model, i):
        bi = model.body_int[i]
        bf = model.body_float[i]
        self.index = i
        self.parent = int(bi[L.PARENT])
        self.type = int(bi[L.JOINT_TYPE])
        self.iq = int(bi[L.IDX_Q])
        self.iv = int(bi[L.IDX_V])
        self.k = int(bi[L.JOINT_NV_COL])
        self.parent_link = int(bi[L.PARENT_LINK])
        self.rot = _snap(bf[L.PLACEMENT_ROT:L.PLACEMENT_ROT + 9])
        self.pos = np.array(bf[L.PLACEMENT_POS:L.PLACEMENT_POS + 3])
        self.axis = _snap(bf[L.AXIS:L.AXIS + 3])
        self.axis2 = _snap(bf[L.AXIS2:L.AXIS2 + 3])
        self.axis3 = _snap(bf[L.AXIS3:L.AXIS3 + 3])
        self.inertia = np.array(bf[L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36])
        self.subspace = _snap(bf[L.MOTION_SUBSPACE:L.MOTION_SUBSPACE + 6 * self.k]).reshape(self.k, 6).T
        self.damping = np.array(bf[L.DAMPING:L.DAMPING + self.k])
        self.friction = np.array(bf[L.FRICTION:L.FRICTION + self.k])
        self.friction_speed = float(bf[L.FRICTION_SPEED])
        rt = self.rot.reshape(3, 3)
        a = self.axis
        skew = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
        self.rot_axis_skew = _snap((rt @ skew).ravel())   # R_T [a]
        self.rot_axis = _snap(rt @ a)                     # R_T a
        self.children = []
        self.name = model.joint_names[i - 1]


class _Generator:
    def __init__(self, model):
        self.model = model
        self.bodies = [None] + [_Body(model, i) for i in range(1, model.n_bodies + 1)]
        for b in self.bodies[1:]:
            if b.parent > 0:
                self.bodies[b.parent].children.append(b.index)
        self.gravity = np.array(model.body_float[0, L.GRAVITY:L.GRAVITY + 3])
        self.quaternions = []   # first q index of each unit quaternion
        for b in self.bodies[1:]:
            if b.type == L.JOINT_SPHERICAL:
                self.quaternions.append(b.iq)
            elif b.type == L.JOINT_FREE:
                self.quaternions.append(b.iq + 3)

    # ------------------------------------------------------------------ function frame
    def _header(self, em, name, vectors, out_shape):
        """Signature, shape checks, inputs loaded into scalars, NaN/inf and quaternion checks.

        vectors: (argument name, size, scalar prefix) of the inputs."""
        args = ", ".join([a for a, _, _ in vectors] + ["out"])
        em.emit(f"def {name}({args}):")
        checks = [f"{a}.shape[0] != {n}" for a, n, _ in vectors]
        checks += [f"out.shape[{d}] != {n}" for d, n in enumerate(out_shape)]
        em.emit(f"    if {' or '.join(checks)}:")
        em.emit("        return 1")
        names = []
        for a, n, prefix in vectors:
            for k in range(n):
                em.emit(f"    {prefix}{k} = {a}[{k}]")
                names.append(f"{prefix}{k}")
        bad = []
        if names:
            em.emit(f"    finite = {' + '.join(names)}")
            bad.append("not (finite - finite == 0.0)")
        for iq in self.quaternions:
            x, y, z, w = (f"q{iq + j}" for j in range(4))
            bad.append(f"abs({x}*{x} + {y}*{y} + {z}*{z} + {w}*{w} - 1.0) > "
                       f"{2.0 * L.QUATERNION_NORM_TOL!r}")
        if bad:
            em.emit(f"    if {' or '.join(bad)}:")
            em.emit("        return 1")
        em.emit("    ok = True")

    @staticmethod
    def _body_comment(em, b):
        em.emit(f"# body {b.index}: joint '{b.name}' ({L.JOINT_TYPE_NAMES[b.type]}), parent {b.parent}")

    # ------------------------------------------------------------------ kinematics
    def joint_pose(self, em, b):
        """R (9), p (3) of body b in its parent frame: placement * joint motion, R = R_T R_J,
        p = p_T + R_T p_J (kernels/kinematics.joint_pose)."""
        q = lambda k: var(f"q{k}")  # noqa: E731
        rt = b.rot
        pt = [const(x) for x in b.pos]
        unit_axis = np.flatnonzero(b.axis)
        if b.type == L.JOINT_REVOLUTE and len(unit_axis) == 1:
            # about a coordinate axis n (sign sigma): R_J = c 1 + s [a] + (1 - c) a a^T has
            # R_J[n, n] = 1 and zeros in row and column n; then R = R_T R_J
            n = int(unit_axis[0])
            c = em.call("math.cos", q(b.iq), "c")
            s = scale(em.call("math.sin", q(b.iq), "s"), b.axis[n])
            skew = [[ZERO, neg(s) if n == 2 else ZERO, s if n == 1 else ZERO],
                    [s if n == 2 else ZERO, ZERO, neg(s) if n == 0 else ZERO],
                    [neg(s) if n == 1 else ZERO, s if n == 0 else ZERO, ZERO]]
            joint_rot = [const(1.0) if r == k == n else ZERO if n in (r, k)
                         else add(c if r == k else ZERO, skew[r][k])
                         for r in range(3) for k in range(3)]
            rot = [em.value(add(*(em.mul(const(rt[3 * r + m]), joint_rot[3 * m + k]) for m in range(3))), "R")
                   for r in range(3) for k in range(3)]
            return rot, pt
        if b.type == L.JOINT_REVOLUTE:
            # R_T Rodrigues(a, q) = c R_T + s R_T[a] + (1 - c)(R_T a) a^T
            c = em.call("math.cos", q(b.iq), "c")
            s = em.call("math.sin", q(b.iq), "s")
            t = em.named(sub(const(1.0), c), "u")
            rot = [em.value(add(scale(c, rt[3 * r + k]), scale(s, b.rot_axis_skew[3 * r + k]),
                                scale(t, b.rot_axis[r] * b.axis[k])), "R")
                   for r in range(3) for k in range(3)]
            return rot, pt
        if b.type == L.JOINT_PRISMATIC:
            d = q(b.iq)
            return ([const(x) for x in rt],
                    [em.value(add(pt[r], scale(d, b.rot_axis[r])), "p") for r in range(3)])
        mul = em.mul
        if b.type in (L.JOINT_SPHERICAL, L.JOINT_FREE):
            iq = b.iq + (3 if b.type == L.JOINT_FREE else 0)
            x, y, z, w = (q(iq + j) for j in range(4))
            two = lambda e: scale(e, 2.0)  # noqa: E731
            joint_rot = [sub(const(1.0), two(add(mul(y, y), mul(z, z)))), two(sub(mul(x, y), mul(z, w))),
                         two(add(mul(x, z), mul(y, w))), two(add(mul(x, y), mul(z, w))),
                         sub(const(1.0), two(add(mul(x, x), mul(z, z)))), two(sub(mul(y, z), mul(x, w))),
                         two(sub(mul(x, z), mul(y, w))), two(add(mul(y, z), mul(x, w))),
                         sub(const(1.0), two(add(mul(x, x), mul(y, y))))]
            joint_pos = [q(b.iq + j) for j in range(3)] if b.type == L.JOINT_FREE else [ZERO] * 3
        else:  # planar: rotation theta about the normal, translation x t1 + y t2
            ax, ay, az = b.axis
            c = em.call("math.cos", q(b.iq + 2), "c")
            s = em.call("math.sin", q(b.iq + 2), "s")
            t = em.named(sub(const(1.0), c), "u")
            joint_rot = [add(scale(t, ax * ax), c), sub(scale(t, ax * ay), scale(s, az)),
                         add(scale(t, ax * az), scale(s, ay)), add(scale(t, ax * ay), scale(s, az)),
                         add(scale(t, ay * ay), c), sub(scale(t, ay * az), scale(s, ax)),
                         sub(scale(t, ax * az), scale(s, ay)), add(scale(t, ay * az), scale(s, ax)),
                         add(scale(t, az * az), c)]
            joint_pos = [add(scale(q(b.iq), b.axis2[r]), scale(q(b.iq + 1), b.axis3[r]))
                         for r in range(3)]
        joint_rot = [em.value(e, "J") for e in joint_rot]
        joint_pos = [em.value(e, "J") for e in joint_pos]
        rot = [em.value(add(*(scale(joint_rot[3 * k + cc], rt[3 * r + k]) for k in range(3))), "R")
               for r in range(3) for cc in range(3)]
        pos = [em.value(add(pt[r], *(scale(joint_pos[k], rt[3 * r + k]) for k in range(3))), "p")
               for r in range(3)]
        return rot, pos

    @staticmethod
    def joint_motion(b, x_prefix):
        """S_i x[iv:iv+k] (6 Exprs) for the scalars named x_prefix + index."""
        return [add(*(scale(var(f"{x_prefix}{b.iv + j}"), b.subspace[r, j]) for j in range(b.k)))
                for r in range(6)]

    def _passive(self, b, j):
        """Damping and smoothed Coulomb friction force of dof j of b's joint (what the drive adds)."""
        rate = f"v{b.iv + j}"
        terms = []
        if b.damping[j] != 0.0:
            terms.append(f"{rate}*{fmt_float(b.damping[j])}")
        if b.friction[j] != 0.0:
            terms.append(f"math.tanh({rate} / {fmt_float(b.friction_speed)})*{fmt_float(b.friction[j])}")
        return " + ".join(terms)

    def _base_acceleration(self):
        """Universe at rest accelerating by -g (gravity as a base acceleration)."""
        return [const(-g) for g in self.gravity] + [ZERO] * 3

    # ------------------------------------------------------------------ RNEA
    def rnea(self, name, with_v, with_qdd, passive, wrenches=False):
        """Inverse dynamics (kernels/rnea.py): forward pass of velocities, accelerations and the
        net wrench of each body, backward pass of joint wrenches and their projections."""
        nq, nv = self.model.nq, self.model.nv
        em = Emitter()
        vectors = [("q", nq, "q")]
        if with_v:
            vectors.append(("v", nv, "v"))
        if with_qdd:
            vectors.append(("qdd", nv, "a"))
        out_shape = (len(self.model.wrench_joint_names), 6) if wrenches else (nv,)
        self._header(em, name, vectors, out_shape)
        body = Emitter()
        rot, pos, vel, acc, force = {}, {}, {0: [ZERO] * 6}, {0: self._base_acceleration()}, {}
        bodies = self.bodies[1:]
        for b in bodies:
            self._body_comment(body, b)
            rot[b.index], pos[b.index] = self.joint_pose(body, b)
            r, p = rot[b.index], pos[b.index]
            # v_i = B_pi v_p + C_i eta_i                                      [002 eq. 6]
            vj = self.joint_motion(b, "v") if with_v else [ZERO] * 6
            vp = motion_to_child(body, r, p, vel[b.parent])
            v_i = [body.value(add(vp[k], vj[k]), "v_") for k in range(6)]
            vel[b.index] = v_i
            # a_i = B_pi a_p + C_i eta'_i + v_i x (C_i eta_i)                 [002 eq. 7]
            ap = motion_to_child(body, r, p, acc[b.parent])
            aj = self.joint_motion(b, "a") if with_qdd else [ZERO] * 6
            bias = cross_motion(body, v_i, vj)
            a_i = [body.value(add(ap[k], aj[k], bias[k]), "a_") for k in range(6)]
            acc[b.index] = a_i
            # f_net = M_i a_i + v_i x* M_i v_i                                [002 eqs. 3-4]
            inertia = const_matrix(b.inertia)
            momentum = [body.value(e, "h") for e in matrix_times(body, inertia, v_i)]
            force[b.index] = list(add(x, y) for x, y in
                                  zip(matrix_times(body, inertia, a_i), cross_force(body, v_i, momentum)))
        # backward pass: f^p_i = f_net,i + sum_c B_ci^T f^p_c; tau_i = C_i^T f^p_i   [002 eqs. 3-4, 12]
        for b in reversed(bodies):
            f = [body.value(e, "f") for e in force[b.index]]
            force[b.index] = f
            if not wrenches:
                for j in range(b.k):
                    tau = body.dot([(const(b.subspace[r, j]), f[r]) for r in range(6)])
                    extra = self._passive(b, j) if passive else ""
                    line = text(tau) + (f" + {extra}" if extra else "")
                    body.emit(f"out[{b.iv + j}] = {line}")
            if b.parent > 0:
                up = force_to_parent(body, rot[b.index], pos[b.index], f)
                force[b.parent] = [add(x, y) for x, y in zip(force[b.parent], up)]
        if wrenches:
            self._fixed_joint_wrenches(body, rot, pos, vel, acc, force)
        return self._finish(em, body)

    def _fixed_joint_wrenches(self, em, rot, pos, vel, acc, force):
        """Rows of joint_wrenches (kernels/wrenches.py): a movable joint's row is f^p of its
        body; a fixed joint's is the Newton-Euler sum below it, F_c = h_c + sum fixed children
        F_c' + sum movable children B^T f^p_b, h_L = I_L a_b + v_b x* I_L v_b, in its link frame."""
        m = self.model
        link_int, link_float = m.link_int, m.link_float
        n_links = link_int.shape[0]
        needed = [link_int[k, L.LINK_FIXED] == 1 for k in range(n_links)]
        wrench = {}
        for link in range(n_links):
            if not needed[link]:
                continue
            body = int(link_int[link, L.LINK_BODY])
            inertia = const_matrix(link_float[link, L.LINK_INERTIA:L.LINK_INERTIA + 36])
            momentum = [em.value(e, "h") for e in matrix_times(em, inertia, vel[body])]
            wrench[link] = [add(x, y) for x, y in zip(matrix_times(em, inertia, acc[body]),
                                                      cross_force(em, vel[body], momentum))]
        for b in self.bodies[1:]:
            if b.parent_link >= 0 and needed[b.parent_link]:
                up = force_to_parent(em, rot[b.index], pos[b.index], force[b.index])
                wrench[b.parent_link] = [add(x, y) for x, y in zip(wrench[b.parent_link], up)]
        for link in range(n_links - 1, 0, -1):
            if needed[link]:
                w = [em.value(e, "w") for e in wrench[link]]
                wrench[link] = w
                parent = int(link_int[link, L.LINK_PARENT])
                if needed[parent]:
                    wrench[parent] = [add(x, y) for x, y in zip(wrench[parent], w)]
        for row, (body, link) in enumerate(m.wrench_rows):
            if body >= 0:
                values = force[int(body)]
            else:
                rt = _snap(link_float[link, L.LINK_ROT:L.LINK_ROT + 9])
                px, py, pz = (const(x) for x in link_float[link, L.LINK_POS:L.LINK_POS + 3])
                w = wrench[int(link)]
                mul = em.mul
                # move the reference point to the link origin, then rotate into the link frame
                t = [em.value(sub(w[3], sub(mul(py, w[2]), mul(pz, w[1]))), "w"),
                     em.value(sub(w[4], sub(mul(pz, w[0]), mul(px, w[2]))), "w"),
                     em.value(sub(w[5], sub(mul(px, w[1]), mul(py, w[0]))), "w")]
                values = [add(*(scale(w[k], rt[3 * k + r]) for k in range(3))) for r in range(3)]
                values += [add(*(scale(t[k], rt[3 * k + r]) for k in range(3))) for r in range(3)]
            for r in range(6):
                em.emit(f"out[{row}, {r}] = {text(values[r])}")

    # ------------------------------------------------------------------ ABA
    def aba(self, name="forward_dynamics"):
        """Forward dynamics (kernels/aba.py, docs/theory.md §2): three passes over the bodies."""
        nq, nv = self.model.nq, self.model.nv
        em = Emitter()
        self._header(em, name, [("q", nq, "q"), ("v", nv, "v"), ("tau", nv, "x")], (nv,))
        body = Emitter()
        bodies = self.bodies[1:]
        rot, pos, vel, bias, art, load = {}, {}, {0: [ZERO] * 6}, {}, {}, {}
        # ---- pass 1, base -> tips: kinematics, M*_i = M_i, p^A_i = v_i x* M_i v_i  [docs/theory.md §2 step 1]
        for b in bodies:
            self._body_comment(body, b)
            r, p = self.joint_pose(body, b)
            rot[b.index], pos[b.index] = r, p
            vj = self.joint_motion(b, "v")
            vp = motion_to_child(body, r, p, vel[b.parent])
            v_i = [body.value(add(vp[k], vj[k]), "v_") for k in range(6)]
            vel[b.index] = v_i
            # a_rel,i = v_i x (C_i eta_i)
            bias[b.index] = [body.value(e, "c") for e in cross_motion(body, v_i, vj)]
            inertia = const_matrix(b.inertia)
            art[b.index] = inertia
            momentum = [body.value(e, "h") for e in matrix_times(body, inertia, v_i)]
            load[b.index] = cross_force(body, v_i, momentum)
        # ---- pass 2, tips -> base: articulated inertias and bias forces       [docs/theory.md §2 step 2]
        joint = {}
        for b in reversed(bodies):
            body.emit(f"# body {b.index}: articulated inertia")
            ia = symmetric_values(body, art[b.index])
            pa = [body.value(e, "pA") for e in load[b.index]]
            s = b.subspace
            # U = M*_i C_i; N_i = C_i^T M*_i C_i; u = tau_i - tau_passive - C_i^T p^A_i
            u_mat = [[body.value(body.dot([(ia[r][c], const(s[c, j])) for c in range(6)]), "U")
                      for j in range(b.k)] for r in range(6)]
            n_mat = [[None] * b.k for _ in range(b.k)]
            for j in range(b.k):
                for m in range(j, b.k):
                    n_mat[j][m] = n_mat[m][j] = body.value(
                        body.dot([(const(s[r, j]), u_mat[r][m]) for r in range(6)]), "N")
            if b.k == 1:
                self._check_pivot(body, n_mat[0][0], add(body.call("abs", ia[0][0]),
                                                         body.call("abs", ia[3][3])))
                d_inv = [[body.call("1.0 /", n_mat[0][0], "D")]]
            else:
                d_inv = self._spd_inverse(body, n_mat, b.k)
            u = []
            for j in range(b.k):
                e = sub(var(f"x{b.iv + j}"), body.dot([(const(s[r, j]), pa[r]) for r in range(6)]))
                extra = self._passive(b, j)
                if extra:
                    name = body.fresh("u")
                    body.emit(f"{name} = {text(e)} - ({extra})")
                    e = var(name)
                u.append(body.named(e, "u"))
            joint[b.index] = (u_mat, d_inv, u)
            if b.parent == 0:
                continue
            # U N^-1
            ud = [[body.value(body.dot([(u_mat[r][m], d_inv[m][j]) for m in range(b.k)]), "W")
                   for j in range(b.k)] for r in range(6)]
            # M*_i (1 - P_i) = M*_i - U N^-1 U^T                           [002 eq. 18]
            reduced = [[None] * 6 for _ in range(6)]
            for r in range(6):
                for c in range(r, 6):
                    reduced[r][c] = reduced[c][r] = body.value(
                        sub(ia[r][c], body.dot([(ud[r][j], u_mat[c][j]) for j in range(b.k)])), "I")
            # p^a = p^A + (M*_i - U N^-1 U^T) a_rel,i + U N^-1 u
            c_i = bias[b.index]
            pa_up = [add(pa[r], body.dot([(reduced[r][c], c_i[c]) for c in range(6)]),
                         body.dot([(ud[r][j], u[j]) for j in range(b.k)])) for r in range(6)]
            # M*_p += B_pi^T (...) B_pi ; p^A_p += B_pi^T p^a
            add_symmetric(art[b.parent], inertia_to_parent(body, rot[b.index], pos[b.index], reduced))
            up = force_to_parent(body, rot[b.index], pos[b.index], pa_up)
            load[b.parent] = [add(x, y) for x, y in zip(load[b.parent], up)]
        body.emit("if not ok:")
        body.emit("    return 2")
        # ---- pass 3, base -> tips: eta'_i = N_i^-1 (u_i - U_i^T (B_pi a_p + a_rel,i))  [docs/theory.md §2 step 3]
        acc = {0: self._base_acceleration()}
        for b in bodies:
            body.emit(f"# body {b.index}: acceleration")
            u_mat, d_inv, u = joint[b.index]
            ap = motion_to_child(body, rot[b.index], pos[b.index], acc[b.parent])
            a_prime = [body.value(add(ap[k], bias[b.index][k]), "a_") for k in range(6)]
            rhs = [body.value(sub(u[j], body.dot([(u_mat[r][j], a_prime[r]) for r in range(6)])), "y")
                   for j in range(b.k)]
            qdd = []
            for j in range(b.k):
                e = body.named(body.dot([(d_inv[j][m], rhs[m]) for m in range(b.k)]), "qdd")
                body.emit(f"out[{b.iv + j}] = {text(e)}")
                qdd.append(e)
            if b.children:
                acc[b.index] = [body.value(add(a_prime[r], *(scale(qdd[j], b.subspace[r, j])
                                                             for j in range(b.k))), "a_")
                                for r in range(6)]
        return self._finish(em, body)

    def _check_pivot(self, em, pivot, scale_expr):
        """ok &= pivot > SINGULAR_RTOL * scale (folded when both are constants)."""
        if is_const(pivot) and is_const(scale_expr):
            if not const_value(pivot) > SINGULAR_RTOL * const_value(scale_expr):
                em.emit("ok = False")
            return
        em.emit(f"ok = ok & ({text(pivot)} > {SINGULAR_RTOL!r}*({text(scale_expr)}))")

    def _spd_inverse(self, em, n_mat, k):
        """N^-1 (k x k Exprs) of a symmetric positive definite N by Cholesky, N = L L^T,
        N^-1 = L^-T L^-1 (as kernels/spatial.invert_spd), pivots checked."""
        diag = [n_mat[j][j] for j in range(k)]
        scale_expr = var(em.fresh("scale"))
        em.emit(f"{text(scale_expr)} = max({', '.join('abs(' + text(d) + ')' for d in diag)})")
        low = [[ZERO] * k for _ in range(k)]
        inv_diag = [None] * k
        for j in range(k):
            d = em.value(sub(n_mat[j][j], em.dot([(low[j][m], low[j][m]) for m in range(j)])), "d")
            self._check_pivot(em, d, scale_expr)
            root = em.call("math.sqrt", d, "d")
            inv_diag[j] = em.call("1.0 /", root, "d")
            low[j][j] = root
            for i in range(j + 1, k):
                low[i][j] = em.value(em.mul(sub(n_mat[i][j], em.dot([(low[i][m], low[j][m])
                                                                       for m in range(j)])),
                                            inv_diag[j]), "l")
        inv = [[ZERO] * k for _ in range(k)]
        for j in range(k):
            inv[j][j] = inv_diag[j]
            for i in range(j + 1, k):
                inv[i][j] = em.value(scale(em.mul(em.dot([(low[i][m], inv[m][j]) for m in range(j, i)]),
                                                  inv_diag[i]), -1.0), "l")
        out = [[None] * k for _ in range(k)]
        for i in range(k):
            for j in range(i, k):
                out[i][j] = out[j][i] = em.value(em.dot([(inv[m][i], inv[m][j]) for m in range(j, k)]), "D")
        return out

    # ------------------------------------------------------------------ CRBA
    def crba(self, name="mass_matrix"):
        """Joint-space mass matrix (kernels/crba.py): composite inertias tips -> base, F = Ic_i S_i
        carried up the ancestors to fill row block i."""
        nq, nv = self.model.nq, self.model.nv
        em = Emitter()
        self._header(em, name, [("q", nq, "q")], (nv, nv))
        body = Emitter()
        body.emit(f"for r in range({nv}):")
        body.emit(f"    for c in range({nv}):")
        body.emit("        out[r, c] = 0.0")
        bodies = self.bodies[1:]
        rot, pos, comp = {}, {}, {}
        for b in bodies:
            self._body_comment(body, b)
            rot[b.index], pos[b.index] = self.joint_pose(body, b)
            comp[b.index] = const_matrix(b.inertia)
        for b in reversed(bodies):
            body.emit(f"# body {b.index}: composite inertia")
            ic = symmetric_values(body, comp[b.index])
            f = [[body.value(body.dot([(ic[r][c], const(b.subspace[c, j])) for c in range(6)]), "F")
                  for r in range(6)] for j in range(b.k)]
            ancestor = b
            while True:
                for j in range(b.k):
                    for m in range(ancestor.k):
                        e = body.named(body.dot([(f[j][r], const(ancestor.subspace[r, m]))
                                                 for r in range(6)]), "M")
                        row, col = b.iv + j, ancestor.iv + m
                        body.emit(f"out[{row}, {col}] = {text(e)}")
                        if row != col:
                            body.emit(f"out[{col}, {row}] = {text(e)}")
                if ancestor.parent == 0:
                    break
                f = [[body.value(e, "F") for e in force_to_parent(body, rot[ancestor.index],
                                                                   pos[ancestor.index], f[j])]
                     for j in range(b.k)]
                ancestor = self.bodies[ancestor.parent]
            if b.parent > 0:
                add_symmetric(comp[b.parent], inertia_to_parent(body, rot[b.index], pos[b.index], ic))
        return self._finish(em, body)

    # ------------------------------------------------------------------ assembly
    @staticmethod
    def _finish(em, body):
        lines = em.lines + ["    " + line for line in body.lines] + ["    return 0"]
        return "\n".join(lines) + "\n"


def generate_source(model, key=""):
    """Python source of a module with this model's generated kernels (see module docstring)."""
    g = _Generator(model)
    parts = [
        f'"""Generated by mbd_ros.codegen (generator {GENERATOR_VERSION}) for robot '
        f"'{model.name}' ({model.nq} q, {model.nv} v, {model.n_bodies} bodies). Do not edit.\n\n"
        f'Model key: {key}\n"""',
        "import math",
        "",
        f"NQ = {model.nq}",
        f"NV = {model.nv}",
        f"N_WRENCH_ROWS = {len(model.wrench_joint_names)}",
        "",
        g.aba("forward_dynamics"),
        g.rnea("inverse_dynamics", with_v=True, with_qdd=True, passive=True),
        g.rnea("bias_forces", with_v=True, with_qdd=False, passive=False),
        g.rnea("gravity_forces", with_v=False, with_qdd=False, passive=False),
        g.crba("mass_matrix"),
        g.rnea("joint_wrenches", with_v=True, with_qdd=True, passive=False, wrenches=True),
        derivative_generator.rnea_derivatives(g),
        derivative_generator.aba_derivatives(g),
        C_ENTRIES,
    ]
    return "\n\n".join(parts)


# C entries (mbd_ros.fastcall.C_SIGNATURE) of the two hottest kernels, compiled only when a robot
# installs its KernelCalls; before that, mbd_ros.codegen.robot binds `<name>_jit` to the numba
# dispatcher of <name> (a plain function here).
C_ENTRIES = '''from numba import carray


def forward_dynamics_c(bound, dims, q, v, tau, out):
    return forward_dynamics_jit(carray(q, (NQ,)), carray(v, (NV,)), carray(tau, (NV,)),
                                carray(out, (NV,)))


def inverse_dynamics_c(bound, dims, q, v, qdd, out):
    return inverse_dynamics_jit(carray(q, (NQ,)), carray(v, (NV,)), carray(qdd, (NV,)),
                                carray(out, (NV,)))


def mass_matrix_c(bound, dims, q, unused_b, unused_c, out):
    return mass_matrix_jit(carray(q, (NQ,)), carray(out, (NV, NV)))


def rnea_derivatives_c(bound, dims, q, v, qdd, out):
    return rnea_derivatives_jit(carray(q, (NQ,)), carray(v, (NV,)), carray(qdd, (NV,)),
                                carray(out, (3, NV, NV)))


def aba_derivatives_c(bound, dims, q, v, tau, out):
    return aba_derivatives_jit(carray(q, (NQ,)), carray(v, (NV,)), carray(tau, (NV,)),
                               carray(out, (3, NV, NV)))
'''
