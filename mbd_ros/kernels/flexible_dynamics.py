"""Recursive dynamics of trees whose bodies may be flexible (floating frame of reference).

A flexible body i carries a reference frame (its joint frame, where the beam is clamped) and
n_f elastic coordinates q_f. Its points move as u = u0 + N q_f with small rotations Psi q_f
(seed 001, eq. 1; lumped points, seed 001 "Koncentralt tomegek"). Its equations, written with the
reference twist V = [v; w] and acceleration a of the reference frame (body components):

    [f]   [m_RR(q_f)  m_Rf(q_f)] [a    ]   [b_R(V, q_f, qd_f)]
    [Q] = [m_fR(q_f)  m_ff     ] [qdd_f] + [b_f(V, q_f, qd_f)] + [0; K_ff q_f + D_ff qd_f]

with the blocks from the shape integrals (seed 001 eqs. 2-7 and I_Rf; m_TT = m 1, m_TR from
S_t = S_0 + S_f q_f, the deformed inertia Theta = tr(P) 1 - P with
P_kl = Theta^kl + I^kl q_f + I^lk q_f + q_f^T S^kl q_f: note the signs, Theta_xy = -P_xy: the
expanded matrix after seed eq. 7 has them wrong) and quadratic velocity terms from the point
accelerations a_j = a_O + alpha x r_j + w x (w x r_j) + 2 w x N_j qd_f + N_j qdd_f. The seed
writes the blocks in global translation/rotation-parameter coordinates (T, H^-1); here they are in
the reference frame's body components, which is the same matrix with T = 1, H = 1 (quasi-
velocities), as the rigid recursion of seed 002 uses.

A child joint hangs from the deformed origin of its frame on the flexible body: translated by
Phi_t q_f and rotated by the Cayley rotation of g = Phi_r q_f (exact rotation, = the small
rotation to first order; its angular velocity G(g) gdot has a closed form, so the kinematics is
exactly consistent and energy is conserved). Its parent-side motion is
V_node = V_ref + Xi qd_f (Xi: 6 x n_f in the reference frame).

Forward dynamics is the articulated-body recursion (docs/theory.md §2, seed 002) with a flexible body's
elastic coordinates as extra degrees of freedom eliminated inside the body: the body plus its
articulated children give a (6+n_f)^2 system; its elastic rows are solved for qdd_f in terms of
a (a Cholesky of n_f x n_f), leaving a 6 x 6 articulated inertia that the joint recursion uses as
for a rigid body. O(n) in bodies, O(n_f^3) per flexible body with movable children.

Deviations for speed (same equations, fewer operations): S^kl q_f and the gyroscopic term are
sums over the nonzero entries of S^kl and G_k listed at load (flexible/build.py sparse_block);
for a body without movable children M_ff = m_ff is constant and m_ff^-1, m_ff^-1 M_fr(0) and the
constant blocks of the condensation are precomputed (condense_block), and the forward dynamics
of such a body computes its articulated inertia in one pass without storing M
(kernels/flexible_articulated.py, with unsigned offsets: no negative-index wraparound); revolute
joints on rigid parents and rigid bodies take the rigid kernel's inlined steps (kernels/aba.py).

Every joint type of the rigid kernels works here (revolute and prismatic inline; spherical, free,
planar, cylindrical, helical through kernels/kinematics.py joint_pose and a k-column articulated
step), above or below flexible bodies, and a floating base (a free root joint); a flexible link
welded to its parent is a body with a 0-dof JOINT_FIXED joint (flexible/split.py): its pose is the
node's, and the articulated step passes its I^A, p^A + I^A c to the parent unchanged.
Kernels never raise: they return a status (mbd_ros.layout STATUS_*).
"""
import math

from numba import njit, types

from ..model.flexible.layout import (ACC, ART_INERTIA, ATTACH, AXIS, BIAS, D_INV, DAMPING, FEXT,
                                     FLEX, FLEX_JSUM, FLEX_MASS, FLEX_P0, FLEX_S0, FLEX_SF, FORCE,
                                     FRICTION, FRICTION_SPEED, FWORK, GRAVITY, IDX_Q, IDX_QF,
                                     IDX_V, IDX_VF, INERTIA, JOINT_TYPE, MFF_INV, NF, NODE_POS,
                                     NODE_TWIST, PARENT, PLACEMENT_POS, PLACEMENT_ROT, POS, ROT,
                                     SCRATCH, SCRATCH2, U_TAU, U_VEC, VEL, WORLD_POS, WORLD_ROT,
                                     X_MAT, XI, NV_JOINT, MOTION_SUBSPACE, U_MULTI, D_MULTI,
                                     DINV_MULTI, UTAU_MULTI, SPARSE)
from ..model.layout import (JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE,
                            JOINT_SPHERICAL, QUATERNION_NORM_TOL, STATUS_BAD_INPUT, STATUS_BAD_Q,
                            STATUS_BAD_QUATERNION, STATUS_BAD_V, STATUS_OK, STATUS_SHAPE_INPUT,
                            STATUS_SHAPE_OUT, STATUS_SHAPE_Q, STATUS_SHAPE_V, STATUS_SINGULAR)
from .flexible_articulated import (UINT, UINT1, UINT2, UINT3, UINT4, UINT5, articulated_constant_body,
                                   flex_offsets as _flex_offsets, fwork_offsets as _fwork_offsets)
from .kinematics import joint_pose, revolute_pose
from .output_checks import STATUS_ALIASED, overlaps, overlaps_any
from .spatial import (add_cross_force, add_force_to_parent, add_inertia_to_parent, invert_spd,
                      motion_to_child, rigid_inertia_times)


# explicit signatures of the entry points (as kernels/signatures.py): other argument types raise
# TypeError instead of compiling a new specialisation, and dispatch is cheaper
_I2 = types.Array(types.int64, 2, "C")
_F2 = types.Array(types.float64, 2, "C")
_F1 = types.Array(types.float64, 1, "C")
STATE_KERNEL = types.int64(_I2, _F2, _F1, _F2, _F1, _F1, _F1, _F1, _F1)
MASS_KERNEL = types.int64(_I2, _F2, _F1, _F2, _F1, _F1, _F1, _F1, _F2)


# =============================================================================== small helpers
@njit(inline="always", cache=True)
def _cross_motion(work, i, a, b, out):
    """work[i, out:out+6] = m_a x m_b (motion cross product, [lin; ang]); out must not alias."""
    vx, vy, vz = work[i, a], work[i, a + 1], work[i, a + 2]
    wx, wy, wz = work[i, a + 3], work[i, a + 4], work[i, a + 5]
    lx, ly, lz = work[i, b], work[i, b + 1], work[i, b + 2]
    ax, ay, az = work[i, b + 3], work[i, b + 4], work[i, b + 5]
    work[i, out] = wy * lz - wz * ly + vy * az - vz * ay
    work[i, out + 1] = wz * lx - wx * lz + vz * ax - vx * az
    work[i, out + 2] = wx * ly - wy * lx + vx * ay - vy * ax
    work[i, out + 3] = wy * az - wz * ay
    work[i, out + 4] = wz * ax - wx * az
    work[i, out + 5] = wx * ay - wy * ax


@njit(inline="always", cache=True)
def _set_transform(work, i):
    """X_MAT (6x6) of body i from ROT, POS: motion parent -> body, [[R^T, -R^T [p]], [0, R^T]]."""
    px, py, pz = work[i, POS], work[i, POS + 1], work[i, POS + 2]
    for r in range(3):
        rx = work[i, ROT + r]          # column r of R = row r of R^T
        ry = work[i, ROT + 3 + r]
        rz = work[i, ROT + 6 + r]
        base = X_MAT + 6 * r
        work[i, base] = rx
        work[i, base + 1] = ry
        work[i, base + 2] = rz
        # -(R^T [p])_row r = -(row r of R^T) [p] = (p x rowR^T)... computed explicitly:
        # (R^T [p])_{r,c} = sum_k RT_rk [p]_kc ; [p] = [[0,-pz,py],[pz,0,-px],[-py,px,0]]
        work[i, base + 3] = -(ry * pz - rz * py)
        work[i, base + 4] = -(-rx * pz + rz * px)
        work[i, base + 5] = -(rx * py - ry * px)
        base2 = X_MAT + 6 * (r + 3)
        work[i, base2] = 0.0
        work[i, base2 + 1] = 0.0
        work[i, base2 + 2] = 0.0
        work[i, base2 + 3] = rx
        work[i, base2 + 4] = ry
        work[i, base2 + 5] = rz


@njit(inline="always", cache=True)
def _rigid_bias(ffloat, work, i, dst):
    """work[i, dst:dst+6] = V x* (I V) for a rigid body (seed 002: -f^c)."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += ffloat[i, INERTIA + 6 * r + c] * work[i, VEL + c]
        work[i, SCRATCH + r] = s
    vx, vy, vz = work[i, VEL], work[i, VEL + 1], work[i, VEL + 2]
    wx, wy, wz = work[i, VEL + 3], work[i, VEL + 4], work[i, VEL + 5]
    hx, hy, hz = work[i, SCRATCH], work[i, SCRATCH + 1], work[i, SCRATCH + 2]
    kx, ky, kz = work[i, SCRATCH + 3], work[i, SCRATCH + 4], work[i, SCRATCH + 5]
    work[i, dst] = wy * hz - wz * hy
    work[i, dst + 1] = wz * hx - wx * hz
    work[i, dst + 2] = wx * hy - wy * hx
    work[i, dst + 3] = wy * kz - wz * ky + vy * hz - vz * hy
    work[i, dst + 4] = wz * kx - wx * kz + vz * hx - vx * hz
    work[i, dst + 5] = wx * ky - wy * kx + vx * hy - vy * hx


@njit(inline="always", cache=True)
def add_joint_motion(fint, ffloat, work, i, x, col):
    """work[i, col:col+6] += S_i x[iv:iv+k] (the joint's motion subspace is constant in the body
    frame for every joint type: docs/theory.md §3)."""
    iv = fint[i, IDX_V]
    jt = fint[i, JOINT_TYPE]
    if jt == JOINT_REVOLUTE:
        xi = x[iv]
        work[i, col + 3] += ffloat[i, AXIS] * xi
        work[i, col + 4] += ffloat[i, AXIS + 1] * xi
        work[i, col + 5] += ffloat[i, AXIS + 2] * xi
    elif jt == JOINT_PRISMATIC:
        xi = x[iv]
        work[i, col] += ffloat[i, AXIS] * xi
        work[i, col + 1] += ffloat[i, AXIS + 1] * xi
        work[i, col + 2] += ffloat[i, AXIS + 2] * xi
    else:
        for j in range(fint[i, NV_JOINT]):
            xj = x[iv + j]
            for r in range(6):
                work[i, col + r] += ffloat[i, MOTION_SUBSPACE + 6 * j + r] * xj


@njit(inline="always", cache=True)
def _multi_passive(ffloat, i, j, vj):
    """Passive force of dof j of a multi-dof joint: -damping v - friction tanh(v / speed)."""
    f = -ffloat[i, DAMPING + j] * vj
    if ffloat[i, FRICTION + j] != 0.0:
        f -= ffloat[i, FRICTION + j] * math.tanh(vj / ffloat[i, FRICTION_SPEED])
    return f


@njit(cache=True)
def _multi_dof_articulated(fint, ffloat, work, i, v, tau):
    """Articulated step of a multi-dof joint (seed 002 step 2, k columns of S): U = I^A S,
    D = S^T U, u = tau + tau_passive - S^T p^A; then (parent > 0) I^a = I^A - U D^-1 U^T and
    p^a = p^A + I^a c + U D^-1 u in place. Returns False if D is not positive definite."""
    k = fint[i, NV_JOINT]
    iv = fint[i, IDX_V]
    for j in range(k):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += work[i, ART_INERTIA + 6 * r + c] * ffloat[i, MOTION_SUBSPACE + 6 * j + c]
            work[i, U_MULTI + 6 * j + r] = s
    for a in range(k):
        for b in range(k):
            s = 0.0
            for r in range(6):
                s += ffloat[i, MOTION_SUBSPACE + 6 * a + r] * work[i, U_MULTI + 6 * b + r]
            work[i, D_MULTI + a * k + b] = s
        u = tau[iv + a] + _multi_passive(ffloat, i, a, v[iv + a])
        for r in range(6):
            u -= ffloat[i, MOTION_SUBSPACE + 6 * a + r] * work[i, FORCE + r]
        work[i, UTAU_MULTI + a] = u
    if not invert_spd(work, i, D_MULTI, k, work, i, DINV_MULTI):
        return False
    if fint[i, PARENT] == 0:
        return True
    # SCRATCH[0:6k] = U D^-1 (column j at 6 j)
    for j in range(k):
        for r in range(6):
            s = 0.0
            for b in range(k):
                s += work[i, U_MULTI + 6 * b + r] * work[i, DINV_MULTI + b * k + j]
            work[i, SCRATCH + 6 * j + r] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for j in range(k):
                s += work[i, SCRATCH + 6 * j + r] * work[i, U_MULTI + 6 * j + c]
            work[i, ART_INERTIA + 6 * r + c] -= s
    for r in range(6):
        s = work[i, FORCE + r]
        for j in range(k):
            s += work[i, SCRATCH + 6 * j + r] * work[i, UTAU_MULTI + j]
        for c in range(6):
            s += work[i, ART_INERTIA + 6 * r + c] * work[i, BIAS + c]
        work[i, SCRATCH2 + r] = s
    for r in range(6):
        work[i, FORCE + r] = work[i, SCRATCH2 + r]
    return True


@njit(cache=True)
def _multi_dof_acceleration(fint, ffloat, work, i, qdd_out):
    """qdd = D^-1 (u - U^T a') and a = a' + S qdd for a multi-dof joint (seed 002 step 3)."""
    k = fint[i, NV_JOINT]
    iv = fint[i, IDX_V]
    for j in range(k):
        s = work[i, UTAU_MULTI + j]
        for r in range(6):
            s -= work[i, U_MULTI + 6 * j + r] * work[i, ACC + r]
        work[i, SCRATCH + j] = s
    for j in range(k):
        s = 0.0
        for b in range(k):
            s += work[i, DINV_MULTI + j * k + b] * work[i, SCRATCH + b]
        qdd_out[iv + j] = s
    add_joint_motion(fint, ffloat, work, i, qdd_out, ACC)


# =============================================================================== kinematics
@njit(cache=True)
def body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, velocities):
    """Pose (ROT, POS, X_MAT, WORLD_*) of body i in its parent's reference frame, twist VEL, bias
    acceleration BIAS and, on a flexible parent, the node Jacobian Xi (seed 002 eqs. 3-4 with the
    parent-side node motion added; see the module docstring)."""
    _body_motion(fint, ffloat, fdata, work, fwork, i, q, v, velocities, True)


@njit(cache=True)
def _body_motion(fint, ffloat, fdata, work, fwork, i, q, v, velocities, poses):
    """body_kinematics; poses=False leaves out X_MAT and the world pose WORLD_* (the forward
    dynamics reads neither: transforms use ROT/POS, gravity is a base acceleration)."""
    p = fint[i, PARENT]
    qi = q[fint[i, IDX_Q]]
    ax, ay, az = ffloat[i, AXIS], ffloat[i, AXIS + 1], ffloat[i, AXIS + 2]
    revolute = fint[i, JOINT_TYPE] == JOINT_REVOLUTE
    # ---- node frame N on the parent: R_N = R_el(g) R_pl, p_N = p_pl + Phi_t q_f
    att = fint[i, ATTACH]
    n_p = fint[p, NF] if att >= 0 else 0
    g0 = g1 = g2 = 0.0
    for r in range(3):
        work[i, NODE_POS + r] = ffloat[i, PLACEMENT_POS + r]
    if att >= 0:
        iqf = fint[p, IDX_QF]
        for k in range(n_p):
            qk = q[iqf + k]
            work[i, NODE_POS] += fdata[att + k] * qk
            work[i, NODE_POS + 1] += fdata[att + n_p + k] * qk
            work[i, NODE_POS + 2] += fdata[att + 2 * n_p + k] * qk
            g0 += fdata[att + 3 * n_p + k] * qk
            g1 += fdata[att + 4 * n_p + k] * qk
            g2 += fdata[att + 5 * n_p + k] * qk
    gg = g0 * g0 + g1 * g1 + g2 * g2
    scale = 1.0 / (1.0 + 0.25 * gg)
    # Cayley rotation R_el = 1 + s ([g] + [g]^2 / 2) with s = 1 / (1 + g.g / 4)
    e00 = 1.0 + scale * 0.5 * (-g1 * g1 - g2 * g2)
    e11 = 1.0 + scale * 0.5 * (-g0 * g0 - g2 * g2)
    e22 = 1.0 + scale * 0.5 * (-g0 * g0 - g1 * g1)
    e01 = scale * (-g2 + 0.5 * g0 * g1)
    e10 = scale * (g2 + 0.5 * g0 * g1)
    e02 = scale * (g1 + 0.5 * g0 * g2)
    e20 = scale * (-g1 + 0.5 * g0 * g2)
    e12 = scale * (-g0 + 0.5 * g1 * g2)
    e21 = scale * (g0 + 0.5 * g1 * g2)
    # R_N = R_el R_pl into SCRATCH2[0:9] (R_el = 1 on a rigid parent)
    if att < 0:
        for k in range(9):
            work[i, SCRATCH2 + k] = ffloat[i, PLACEMENT_ROT + k]
    for c in range(3 if att >= 0 else 0):
        a0 = ffloat[i, PLACEMENT_ROT + c]
        a1 = ffloat[i, PLACEMENT_ROT + 3 + c]
        a2 = ffloat[i, PLACEMENT_ROT + 6 + c]
        work[i, SCRATCH2 + c] = e00 * a0 + e01 * a1 + e02 * a2
        work[i, SCRATCH2 + 3 + c] = e10 * a0 + e11 * a1 + e12 * a2
        work[i, SCRATCH2 + 6 + c] = e20 * a0 + e21 * a1 + e22 * a2
    # ---- joint: R = R_N R_j, p = p_N (+ R_N a q for a prismatic joint)
    if revolute:
        cq = math.cos(qi)
        sq = math.sin(qi)
        tq = 1.0 - cq
        j00 = tq * ax * ax + cq
        j01 = tq * ax * ay - sq * az
        j02 = tq * ax * az + sq * ay
        j10 = tq * ax * ay + sq * az
        j11 = tq * ay * ay + cq
        j12 = tq * ay * az - sq * ax
        j20 = tq * ax * az - sq * ay
        j21 = tq * ay * az + sq * ax
        j22 = tq * az * az + cq
        for r in range(3):
            n0 = work[i, SCRATCH2 + 3 * r]
            n1 = work[i, SCRATCH2 + 3 * r + 1]
            n2 = work[i, SCRATCH2 + 3 * r + 2]
            work[i, ROT + 3 * r] = n0 * j00 + n1 * j10 + n2 * j20
            work[i, ROT + 3 * r + 1] = n0 * j01 + n1 * j11 + n2 * j21
            work[i, ROT + 3 * r + 2] = n0 * j02 + n1 * j12 + n2 * j22
            work[i, POS + r] = work[i, NODE_POS + r]
    elif fint[i, JOINT_TYPE] == JOINT_PRISMATIC:
        for r in range(3):
            n0 = work[i, SCRATCH2 + 3 * r]
            n1 = work[i, SCRATCH2 + 3 * r + 1]
            n2 = work[i, SCRATCH2 + 3 * r + 2]
            work[i, ROT + 3 * r] = n0
            work[i, ROT + 3 * r + 1] = n1
            work[i, ROT + 3 * r + 2] = n2
            work[i, POS + r] = work[i, NODE_POS + r] + (n0 * ax + n1 * ay + n2 * az) * qi
    elif fint[i, JOINT_TYPE] == JOINT_FIXED:
        # a flexible link welded to its parent (flexible/split.py): the body frame is the node
        for k in range(9):
            work[i, ROT + k] = work[i, SCRATCH2 + k]
        for r in range(3):
            work[i, POS + r] = work[i, NODE_POS + r]
    else:
        # multi-dof joint (spherical, free, planar, cylindrical, helical): the rigid joint pose
        # (R_pl R_J, p_pl + R_pl p_J) into SCRATCH[0:12], then R = R_el R_pl R_J,
        # p = p_N + R_el R_pl p_J  (the joint frame hangs from the deformed node)
        joint_pose(fint[i, JOINT_TYPE], ffloat, i, q, fint[i, IDX_Q], work, i, SCRATCH,
                   SCRATCH + 12)
        d0 = work[i, SCRATCH + 9] - ffloat[i, PLACEMENT_POS]
        d1 = work[i, SCRATCH + 10] - ffloat[i, PLACEMENT_POS + 1]
        d2 = work[i, SCRATCH + 11] - ffloat[i, PLACEMENT_POS + 2]
        for c in range(3):
            m0 = work[i, SCRATCH + c]
            m1 = work[i, SCRATCH + 3 + c]
            m2 = work[i, SCRATCH + 6 + c]
            work[i, ROT + c] = e00 * m0 + e01 * m1 + e02 * m2
            work[i, ROT + 3 + c] = e10 * m0 + e11 * m1 + e12 * m2
            work[i, ROT + 6 + c] = e20 * m0 + e21 * m1 + e22 * m2
        work[i, POS] = work[i, NODE_POS] + e00 * d0 + e01 * d1 + e02 * d2
        work[i, POS + 1] = work[i, NODE_POS + 1] + e10 * d0 + e11 * d1 + e12 * d2
        work[i, POS + 2] = work[i, NODE_POS + 2] + e20 * d0 + e21 * d1 + e22 * d2
    if poses:
        _set_transform(work, i)
        # world pose: R_w = R_w,p R, p_w = p_w,p + R_w,p p
        for r in range(3):
            for c in range(3):
                s = 0.0
                for k in range(3):
                    s += work[p, WORLD_ROT + 3 * r + k] * work[i, ROT + 3 * k + c]
                work[i, WORLD_ROT + 3 * r + c] = s
            s = work[p, WORLD_POS + r]
            for k in range(3):
                s += work[p, WORLD_ROT + 3 * r + k] * work[i, POS + k]
            work[i, WORLD_POS + r] = s
    # ---- node Jacobian Xi (6 x n_p, parent frame): [Phi_t + [p_N] G Phi_r; G Phi_r]
    if att >= 0:
        xi = fint[i, XI]
        px, py, pz = work[i, NODE_POS], work[i, NODE_POS + 1], work[i, NODE_POS + 2]
        for k in range(n_p):
            r0 = fdata[att + 3 * n_p + k]
            r1 = fdata[att + 4 * n_p + k]
            r2 = fdata[att + 5 * n_p + k]
            # G = (1 + [g]/2) s
            w0 = scale * (r0 + 0.5 * (g1 * r2 - g2 * r1))
            w1 = scale * (r1 + 0.5 * (g2 * r0 - g0 * r2))
            w2 = scale * (r2 + 0.5 * (g0 * r1 - g1 * r0))
            fwork[xi + k] = fdata[att + k] + py * w2 - pz * w1
            fwork[xi + n_p + k] = fdata[att + n_p + k] + pz * w0 - px * w2
            fwork[xi + 2 * n_p + k] = fdata[att + 2 * n_p + k] + px * w1 - py * w0
            fwork[xi + 3 * n_p + k] = w0
            fwork[xi + 4 * n_p + k] = w1
            fwork[xi + 5 * n_p + k] = w2
    if not velocities:
        return
    body_twist(fint, ffloat, work, fwork, i, v)
    # ---- bias acceleration c = V x w - w x (X nu) + X [p_N x Gdot gdot - w_s x pdot; Gdot gdot],
    # w = X nu + S qd (relative twist of the body w.r.t. the parent reference frame)
    if att >= 0:
        motion_to_child(work, i, ROT, work, i, NODE_TWIST, work, i, SCRATCH)   # SCRATCH = X nu
        for r in range(6):
            work[i, SCRATCH + 6 + r] = work[i, SCRATCH + r]
    else:
        for r in range(6):
            work[i, SCRATCH + r] = 0.0
            work[i, SCRATCH + 6 + r] = 0.0
    add_joint_motion(fint, ffloat, work, i, v, SCRATCH + 6)
    _cross_motion(work, i, VEL, SCRATCH + 6, BIAS)     # V x w
    if att >= 0:
        _cross_motion(work, i, SCRATCH + 6, SCRATCH, SCRATCH + 12)   # w x (X nu)
        # node-motion terms in the parent frame: gdot = Phi_r qd_f, w_s = G gdot,
        # Gdot gdot = -w_s (g . gdot / 2) s, pdot = Phi_t qd_f
        iqf = fint[p, IDX_QF]
        ivf = fint[p, IDX_VF]
        d0 = d1 = d2 = 0.0
        t0 = t1 = t2 = 0.0
        for k in range(n_p):
            vk = v[ivf + k]
            t0 += fdata[att + k] * vk
            t1 += fdata[att + n_p + k] * vk
            t2 += fdata[att + 2 * n_p + k] * vk
            d0 += fdata[att + 3 * n_p + k] * vk
            d1 += fdata[att + 4 * n_p + k] * vk
            d2 += fdata[att + 5 * n_p + k] * vk
        ws0 = work[i, NODE_TWIST + 3]
        ws1 = work[i, NODE_TWIST + 4]
        ws2 = work[i, NODE_TWIST + 5]
        f = -0.5 * (g0 * d0 + g1 * d1 + g2 * d2) * scale
        h0, h1, h2 = ws0 * f, ws1 * f, ws2 * f
        px, py, pz = work[i, NODE_POS], work[i, NODE_POS + 1], work[i, NODE_POS + 2]
        work[i, SCRATCH + 18] = py * h2 - pz * h1 - (ws1 * t2 - ws2 * t1)
        work[i, SCRATCH + 19] = pz * h0 - px * h2 - (ws2 * t0 - ws0 * t2)
        work[i, SCRATCH + 20] = px * h1 - py * h0 - (ws0 * t1 - ws1 * t0)
        work[i, SCRATCH + 21] = h0
        work[i, SCRATCH + 22] = h1
        work[i, SCRATCH + 23] = h2
        motion_to_child(work, i, ROT, work, i, SCRATCH + 18, work, i, SCRATCH + 24)
        for r in range(6):
            work[i, BIAS + r] += work[i, SCRATCH + 24 + r] - work[i, SCRATCH + 12 + r]


@njit(inline="always", cache=True)
def body_twist(fint, ffloat, work, fwork, i, v):
    """Body i's twist VEL from its parent's and v, on the poses (ROT, POS) and the node Jacobian
    Xi of the last kinematics pass: V_i = X (V_p + nu) + S qd, nu = Xi qd_f of the parent
    = [pdot - w_s x p_N; w_s] into NODE_TWIST (0 on a rigid parent)   (seed 002 eq. 3).
    (_body_motion's velocity part; flexible_frames.py's Jacobian columns run it alone.)"""
    p = fint[i, PARENT]
    if fint[i, ATTACH] >= 0:
        xi = fint[i, XI]
        n_p = fint[p, NF]
        ivf = fint[p, IDX_VF]
        for r in range(6):
            s = 0.0
            for k in range(n_p):
                s += fwork[xi + r * n_p + k] * v[ivf + k]
            work[i, NODE_TWIST + r] = s
            work[i, SCRATCH + r] = work[p, VEL + r] + s
        motion_to_child(work, i, ROT, work, i, SCRATCH, work, i, VEL)
    else:                                   # rigid parent: nu = 0
        for r in range(6):
            work[i, NODE_TWIST + r] = 0.0
        motion_to_child(work, i, ROT, work, p, VEL, work, i, VEL)
    add_joint_motion(fint, ffloat, work, i, v, VEL)


# =============================================================================== flexible body
@njit(cache=True)
def _flex_body_terms(fint, fdata, work, fwork, i, q, v, velocities, full):
    """Generalized mass M (6+n)^2 and velocity terms beta (6+n) of flexible body i into its FW
    block (seed 001: m_TT..m_ff from S_0, S_f, Theta^kl, I^kl, S^kl; quadratic velocity terms
    from the point accelerations). beta holds no elastic/external forces yet. full=False leaves
    out M_fr and M_ff (the forward dynamics of a body with a constant M_ff reads neither)."""
    n = fint[i, NF]
    o = fint[i, FLEX]
    sf, iu, skl, jpsi, mff, kff, dff = _flex_offsets(o, n)
    mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = _fwork_offsets(fint[i, FWORK], n)
    iqf = fint[i, IDX_QF]
    ivf = fint[i, IDX_VF]
    w6 = 6 + n
    mass = fdata[o + FLEX_MASS]
    # s_kl = S^kl q_f (9 vectors of n) from the nonzero entries of S^kl listed at load time
    # (build.py sparse_block: (out, b, value), consecutive entries into different outputs): a
    # straight beam's modes bend in one plane, stretch or twist, so most S^kl[a, b] =
    # sum m_j N_jk,a N_jl,b vanish (the sample arm's 4 modes: 48 of 144)
    for t in range(9 * n):
        fwork[skq + t] = 0.0
    sp = fint[i, SPARSE]
    n_s = int(fdata[sp])
    for e in range(sp + 1, sp + 1 + 3 * n_s, 3):
        fwork[skq + int(fdata[e])] += fdata[e + 2] * q[iqf + int(fdata[e + 1])]
    # S_t = S_0 + S_f q_f (seed eqs. 2-4) and P_kl = Theta^kl + (I^kl + I^lk) q_f + q_f^T S^kl q_f
    # (seed eq. 7; P symmetric, q_f^T S^kl q_f = q_f . s_kl): one pass over b, the nine sums in
    # registers (independent accumulators instead of nine short dependent loops)
    st0 = fdata[o + FLEX_S0]
    st1 = fdata[o + FLEX_S0 + 1]
    st2 = fdata[o + FLEX_S0 + 2]
    p00 = fdata[o + FLEX_P0]
    p01 = fdata[o + FLEX_P0 + 1]
    p02 = fdata[o + FLEX_P0 + 2]
    p11 = fdata[o + FLEX_P0 + 4]
    p12 = fdata[o + FLEX_P0 + 5]
    p22 = fdata[o + FLEX_P0 + 8]
    for b in range(n):
        qb = q[iqf + b]
        st0 += fdata[sf + b] * qb
        st1 += fdata[sf + n + b] * qb
        st2 += fdata[sf + 2 * n + b] * qb
        p00 += (2.0 * fdata[iu + b] + fwork[skq + b]) * qb
        p11 += (2.0 * fdata[iu + 4 * n + b] + fwork[skq + 4 * n + b]) * qb
        p22 += (2.0 * fdata[iu + 8 * n + b] + fwork[skq + 8 * n + b]) * qb
        p01 += (fdata[iu + n + b] + fdata[iu + 3 * n + b] + fwork[skq + n + b]) * qb
        p02 += (fdata[iu + 2 * n + b] + fdata[iu + 6 * n + b] + fwork[skq + 2 * n + b]) * qb
        p12 += (fdata[iu + 5 * n + b] + fdata[iu + 7 * n + b] + fwork[skq + 5 * n + b]) * qb
    trace = p00 + p11 + p22
    # M_rr = [[m 1, -[S_t]], [[S_t], Theta + J]] with Theta = tr(P) 1 - P   (seed eqs. 5-6)
    js = o + FLEX_JSUM
    fwork[mm] = mass
    fwork[mm + 1] = 0.0
    fwork[mm + 2] = 0.0
    fwork[mm + 3] = 0.0
    fwork[mm + 4] = st2
    fwork[mm + 5] = -st1
    fwork[mm + w6] = 0.0
    fwork[mm + w6 + 1] = mass
    fwork[mm + w6 + 2] = 0.0
    fwork[mm + w6 + 3] = -st2
    fwork[mm + w6 + 4] = 0.0
    fwork[mm + w6 + 5] = st0
    fwork[mm + 2 * w6] = 0.0
    fwork[mm + 2 * w6 + 1] = 0.0
    fwork[mm + 2 * w6 + 2] = mass
    fwork[mm + 2 * w6 + 3] = st1
    fwork[mm + 2 * w6 + 4] = -st0
    fwork[mm + 2 * w6 + 5] = 0.0
    fwork[mm + 3 * w6] = 0.0
    fwork[mm + 3 * w6 + 1] = -st2
    fwork[mm + 3 * w6 + 2] = st1
    fwork[mm + 3 * w6 + 3] = trace - p00 + fdata[js]
    fwork[mm + 3 * w6 + 4] = -p01 + fdata[js + 1]
    fwork[mm + 3 * w6 + 5] = -p02 + fdata[js + 2]
    fwork[mm + 4 * w6] = st2
    fwork[mm + 4 * w6 + 1] = 0.0
    fwork[mm + 4 * w6 + 2] = -st0
    fwork[mm + 4 * w6 + 3] = -p01 + fdata[js + 3]
    fwork[mm + 4 * w6 + 4] = trace - p11 + fdata[js + 4]
    fwork[mm + 4 * w6 + 5] = -p12 + fdata[js + 5]
    fwork[mm + 5 * w6] = -st1
    fwork[mm + 5 * w6 + 1] = st0
    fwork[mm + 5 * w6 + 2] = 0.0
    fwork[mm + 5 * w6 + 3] = -p02 + fdata[js + 6]
    fwork[mm + 5 * w6 + 4] = -p12 + fdata[js + 7]
    fwork[mm + 5 * w6 + 5] = trace - p22 + fdata[js + 8]
    # M_rf: linear rows S_f; angular rows I_Rf (seed "I_Rf" with S^kl - S^kl^T) + J_Psi
    for a in range(n):
        for r in range(3):
            fwork[mm + r * w6 + 6 + a] = fdata[sf + r * n + a]
        # row x: I^yz - I^zy + s_zy - s_yz ; row y: I^zx - I^xz + s_xz - s_zx ; row z: I^xy - I^yx + s_yx - s_xy
        fwork[mm + 3 * w6 + 6 + a] = (fdata[iu + 5 * n + a] - fdata[iu + 7 * n + a]
                                      + fwork[skq + 7 * n + a] - fwork[skq + 5 * n + a]
                                      + fdata[jpsi + a])
        fwork[mm + 4 * w6 + 6 + a] = (fdata[iu + 6 * n + a] - fdata[iu + 2 * n + a]
                                      + fwork[skq + 2 * n + a] - fwork[skq + 6 * n + a]
                                      + fdata[jpsi + n + a])
        fwork[mm + 5 * w6 + 6 + a] = (fdata[iu + 1 * n + a] - fdata[iu + 3 * n + a]
                                      + fwork[skq + 3 * n + a] - fwork[skq + 1 * n + a]
                                      + fdata[jpsi + 2 * n + a])
        if full:                      # M_fr = M_rf^T and M_ff = m_ff
            for r in range(6):
                fwork[mm + (6 + a) * w6 + r] = fwork[mm + r * w6 + 6 + a]
            for b in range(n):
                fwork[mm + (6 + a) * w6 + 6 + b] = fdata[mff + a * n + b]
    for r in range(w6):
        fwork[bb + r] = 0.0
    if not velocities:
        return
    # ---- quadratic velocity terms
    vx, vy, vz = work[i, VEL], work[i, VEL + 1], work[i, VEL + 2]
    wx, wy, wz = work[i, VEL + 3], work[i, VEL + 4], work[i, VEL + 5]
    cx = wy * vz - wz * vy            # w x v (origin acceleration part)
    cy = wz * vx - wx * vz
    cz = wx * vy - wy * vx
    sfq0 = sfq1 = sfq2 = 0.0          # S_f qd_f
    jq0 = jq1 = jq2 = 0.0             # J_Psi qd_f
    for b in range(n):
        vb = v[ivf + b]
        sfq0 += fdata[sf + b] * vb
        sfq1 += fdata[sf + n + b] * vb
        sfq2 += fdata[sf + 2 * n + b] * vb
        jq0 += fdata[jpsi + b] * vb
        jq1 += fdata[jpsi + n + b] * vb
        jq2 += fdata[jpsi + 2 * n + b] * vb
    # w x (w x S_t)
    u0 = wy * st2 - wz * st1
    u1 = wz * st0 - wx * st2
    u2 = wx * st1 - wy * st0
    fwork[bb] = mass * cx + (wy * u2 - wz * u1) + 2.0 * (wy * sfq2 - wz * sfq1)
    fwork[bb + 1] = mass * cy + (wz * u0 - wx * u2) + 2.0 * (wz * sfq0 - wx * sfq2)
    fwork[bb + 2] = mass * cz + (wx * u1 - wy * u0) + 2.0 * (wx * sfq1 - wy * sfq0)
    # angular: S_t x (w x v) + w x ((Theta + J) w + J_Psi qd) + 2 (w tr C - C^T w),
    # C_kl = sum m r_k rdot_l = I^kl qd + s_lk . qd
    c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = 0.0
    for b in range(n):                # nine sums in one pass (independent accumulators)
        vb = v[ivf + b]
        c00 += (fdata[iu + b] + fwork[skq + b]) * vb
        c01 += (fdata[iu + n + b] + fwork[skq + 3 * n + b]) * vb
        c02 += (fdata[iu + 2 * n + b] + fwork[skq + 6 * n + b]) * vb
        c10 += (fdata[iu + 3 * n + b] + fwork[skq + n + b]) * vb
        c11 += (fdata[iu + 4 * n + b] + fwork[skq + 4 * n + b]) * vb
        c12 += (fdata[iu + 5 * n + b] + fwork[skq + 7 * n + b]) * vb
        c20 += (fdata[iu + 6 * n + b] + fwork[skq + 2 * n + b]) * vb
        c21 += (fdata[iu + 7 * n + b] + fwork[skq + 5 * n + b]) * vb
        c22 += (fdata[iu + 8 * n + b] + fwork[skq + 8 * n + b]) * vb
    h0 = jq0
    h1 = jq1
    h2 = jq2
    for c in range(3):
        h0 += fwork[mm + 3 * w6 + 3 + c] * work[i, VEL + 3 + c]
        h1 += fwork[mm + 4 * w6 + 3 + c] * work[i, VEL + 3 + c]
        h2 += fwork[mm + 5 * w6 + 3 + c] * work[i, VEL + 3 + c]
    trc = c00 + c11 + c22
    ctw0 = c00 * wx + c10 * wy + c20 * wz
    ctw1 = c01 * wx + c11 * wy + c21 * wz
    ctw2 = c02 * wx + c12 * wy + c22 * wz
    fwork[bb + 3] = (st1 * cz - st2 * cy) + (wy * h2 - wz * h1) + 2.0 * (wx * trc - ctw0)
    fwork[bb + 4] = (st2 * cx - st0 * cz) + (wz * h0 - wx * h2) + 2.0 * (wy * trc - ctw1)
    fwork[bb + 5] = (st0 * cy - st1 * cx) + (wx * h1 - wy * h0) + 2.0 * (wz * trc - ctw2)
    # elastic: S_f^T (w x v) + sum_kl w_k w_l (I^lk + s_kl) - |w|^2 sum_k (I^kk + s_kk)
    #          + 2 sum_kl [w]_kl S^kl qd
    # with W = w w^T - |w|^2 1 (symmetric): sum_kl W_kl (I^lk + s_kl)
    wsq = wx * wx + wy * wy + wz * wz
    d0, d1, d2 = wx * wx - wsq, wy * wy - wsq, wz * wz - wsq
    w01, w02, w12 = wx * wy, wx * wz, wy * wz
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
        fwork[bb + 6 + a] = s
    # gyroscopic 2 sum_k w_k G_k qd_f from the nonzero entries (a, 3 b + k, G_k[a, b]) of G_k
    # (build.py sparse_block)
    gl = sp + 1 + 3 * n_s
    for e in range(gl + 1, gl + 1 + 3 * int(fdata[gl]), 3):
        bk = int(fdata[e + 1])
        b3 = bk // 3
        fwork[bb + 6 + int(fdata[e])] += (2.0 * fdata[e + 2] * work[i, VEL + 3 + bk - 3 * b3]
                                          * v[ivf + b3])


@njit(inline="always", cache=True)
def _elastic_forces(fint, fdata, fwork, i, q, v, sign):
    """beta_f += sign (K_ff q_f + D_ff qd_f) (seed 001: delta W = -q_f^T K_ff delta q_f)."""
    n = fint[i, NF]
    sf, iu, skl, jpsi, mff, kff, dff = _flex_offsets(fint[i, FLEX], n)
    bb = fint[i, FWORK] + (6 + n) * (6 + n)
    iqf = fint[i, IDX_QF]
    ivf = fint[i, IDX_VF]
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += fdata[kff + a * n + b] * q[iqf + b] + fdata[dff + a * n + b] * v[ivf + b]
        fwork[bb + 6 + a] += sign * s


@njit(cache=True)
def _add_child_to_flexible(fint, work, fwork, child, p):
    """Add an articulated child (inertia in SCRATCH2 of `child`, already in the parent's frame,
    and load in FORCE scratch SCRATCH[0:6] of child, parent frame) to the (6+n) system of the
    flexible parent p through the node Jacobian Xi: M += [I, I Xi; Xi^T I, Xi^T I Xi],
    beta += [p; Xi^T p]."""
    n = fint[p, NF]
    w6 = 6 + n
    mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = _fwork_offsets(fint[p, FWORK], n)
    xi = fint[child, XI]
    for r in range(6):
        for c in range(6):
            fwork[mm + r * w6 + c] += work[child, SCRATCH2 + 6 * r + c]
        fwork[bb + r] += work[child, SCRATCH + r]
    for r in range(6):                        # W = I Xi (6 x n)
        for a in range(n):
            s = 0.0
            for k in range(6):
                s += work[child, SCRATCH2 + 6 * r + k] * fwork[xi + k * n + a]
            fwork[wmat + r * n + a] = s
    for a in range(n):
        s = 0.0
        for k in range(6):
            s += fwork[xi + k * n + a] * work[child, SCRATCH + k]
        fwork[bb + 6 + a] += s
        for r in range(6):
            fwork[mm + r * w6 + 6 + a] += fwork[wmat + r * n + a]
            fwork[mm + (6 + a) * w6 + r] += fwork[wmat + r * n + a]
        for b in range(n):
            s = 0.0
            for k in range(6):
                s += fwork[xi + k * n + a] * fwork[wmat + k * n + b]
            fwork[mm + (6 + a) * w6 + 6 + b] += s


@njit(cache=True)
def _condense_flexible(fint, work, fwork, i):
    """Eliminate qdd_f of flexible body i (seed 002 articulated step applied to the elastic rows):
    qdd_f = -M_ff^-1 (beta_f + M_fr a); I^A = M_rr - M_rf Y, p^A = beta_r - M_rf z with
    Y = M_ff^-1 M_fr, z = M_ff^-1 beta_f. Returns False if M_ff is not positive definite."""
    n = fint[i, NF]
    w6 = 6 + n
    mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = _fwork_offsets(fint[i, FWORK], n)
    # Cholesky M_ff = L L^T
    for a in range(n):
        for b in range(a + 1):
            s = fwork[mm + (6 + a) * w6 + 6 + b]
            for k in range(b):
                s -= fwork[chol + a * n + k] * fwork[chol + b * n + k]
            if a == b:
                if not s > 0.0:
                    return False
                fwork[chol + a * n + a] = math.sqrt(s)
            else:
                fwork[chol + a * n + b] = s / fwork[chol + b * n + b]
    # Y columns (6 right-hand sides) and z
    for c in range(7):
        for a in range(n):             # forward: L t = rhs
            s = fwork[mm + (6 + a) * w6 + c] if c < 6 else fwork[bb + 6 + a]
            for k in range(a):
                s -= fwork[chol + a * n + k] * fwork[tmp + k]
            fwork[tmp + a] = s / fwork[chol + a * n + a]
        for a in range(n - 1, -1, -1):  # backward: L^T x = t
            s = fwork[tmp + a]
            for k in range(a + 1, n):
                s -= fwork[chol + k * n + a] * fwork[tmp2 + k]
            fwork[tmp2 + a] = s / fwork[chol + a * n + a]
        for a in range(n):
            if c < 6:
                fwork[y + a * 6 + c] = fwork[tmp2 + a]
            else:
                fwork[z + a] = fwork[tmp2 + a]
    for r in range(6):
        for c in range(6):
            s = fwork[mm + r * w6 + c]
            for a in range(n):
                s -= fwork[mm + r * w6 + 6 + a] * fwork[y + a * 6 + c]
            work[i, ART_INERTIA + 6 * r + c] = s
        s = fwork[bb + r]
        for a in range(n):
            s -= fwork[mm + r * w6 + 6 + a] * fwork[z + a]
        work[i, FORCE + r] = s
    return True


# =============================================================================== checks
@njit(inline="always", cache=True)
def check_inputs(nq, nv, q, v, x, check_v, check_x):
    """Status of the shapes and finiteness of q (nq,), v (nv,), x (nv,)."""
    if q.shape[0] != nq:
        return STATUS_SHAPE_Q
    for k in range(nq):
        if not math.isfinite(q[k]):
            return STATUS_BAD_Q
    if check_v:
        if v.shape[0] != nv:
            return STATUS_SHAPE_V
        for k in range(nv):
            if not math.isfinite(v[k]):
                return STATUS_BAD_V
    if check_x:
        if x.shape[0] != nv:
            return STATUS_SHAPE_INPUT
        for k in range(nv):
            if not math.isfinite(x[k]):
                return STATUS_BAD_INPUT
    return STATUS_OK


@njit(inline="always", cache=True)
def check_quaternions(fint, q):
    """STATUS_BAD_QUATERNION if a spherical or free joint's quaternion is not of unit norm."""
    for i in range(1, fint.shape[0]):
        jt = fint[i, JOINT_TYPE]
        if jt == JOINT_SPHERICAL or jt == JOINT_FREE:
            iq = fint[i, IDX_Q] + (3 if jt == JOINT_FREE else 0)
            norm2 = q[iq] ** 2 + q[iq + 1] ** 2 + q[iq + 2] ** 2 + q[iq + 3] ** 2
            if abs(math.sqrt(norm2) - 1.0) > QUATERNION_NORM_TOL:
                return STATUS_BAD_QUATERNION
    return STATUS_OK


@njit(inline="always", cache=True)
def set_base(ffloat, work, gravity_on):
    """Body 0: identity pose, zero twist, acceleration -g (gravity as a base acceleration)."""
    for k in range(9):
        work[0, WORLD_ROT + k] = 1.0 if k % 4 == 0 else 0.0
    for k in range(3):
        work[0, WORLD_POS + k] = 0.0
        work[0, ACC + k] = -ffloat[0, GRAVITY + k] if gravity_on else 0.0
        work[0, ACC + 3 + k] = 0.0
    for k in range(6):
        work[0, VEL + k] = 0.0


@njit(inline="always", cache=True)
def _passive(ffloat, i, vi):
    """Joint passive force -damping v - friction tanh(v / friction_speed) (no tanh without
    friction)."""
    if ffloat[i, FRICTION] == 0.0:
        return -ffloat[i, DAMPING] * vi
    return -ffloat[i, DAMPING] * vi - ffloat[i, FRICTION] * math.tanh(vi / ffloat[i, FRICTION_SPEED])


# =============================================================================== forward dynamics
@njit(STATE_KERNEL, cache=True)
def forward_dynamics(fint, ffloat, fdata, work, fwork, q, v, tau, qdd_out):
    """Accelerations qdd_out (nv,) (joint and elastic) for generalized forces tau (nv,) at (q, v).

    Model: fint (nq, nv in row 0), ffloat, fdata. Data: work, fwork (FEXT read). Returns a status.
    qdd_out may overlap q, v or tau: they are read in passes 1-2 only, qdd_out written in pass 3
    (test/test_out_overlap.py), so no overlap check here (it cost ~10% of this call).
    """
    nq = fint[0, IDX_Q]
    nv = fint[0, IDX_V]
    status = check_inputs(nq, nv, q, v, tau, True, True)
    if status == STATUS_OK:
        status = check_quaternions(fint, q)
    if status != STATUS_OK:
        return status
    if qdd_out.shape[0] != nv:
        return STATUS_SHAPE_OUT
    nb = fint.shape[0] - 1
    set_base(ffloat, work, True)
    # ---- pass 1, base -> tips: kinematics, body inertia and velocity terms    [seed 002 step 1]
    for i in range(1, nb + 1):
        p = fint[i, PARENT]
        if fint[i, ATTACH] < 0 and fint[i, JOINT_TYPE] == JOINT_REVOLUTE:
            # revolute joint on a rigid parent: the rigid kernel's steps (kernels/aba.py):
            # pose, V = X V_p + S qd, c = V x (S qd)                         [seed 002 eqs. 3-4]
            revolute_pose(ffloat, i, q[fint[i, IDX_Q]], work, i, ROT)
            motion_to_child(work, i, ROT, work, p, VEL, work, i, VEL)
            qd = v[fint[i, IDX_V]]
            sx = ffloat[i, AXIS] * qd
            sy = ffloat[i, AXIS + 1] * qd
            sz = ffloat[i, AXIS + 2] * qd
            wx = work[i, VEL + 3] + sx
            wy = work[i, VEL + 4] + sy
            wz = work[i, VEL + 5] + sz
            work[i, VEL + 3] = wx
            work[i, VEL + 4] = wy
            work[i, VEL + 5] = wz
            vx, vy, vz = work[i, VEL], work[i, VEL + 1], work[i, VEL + 2]
            work[i, BIAS] = vy * sz - vz * sy
            work[i, BIAS + 1] = vz * sx - vx * sz
            work[i, BIAS + 2] = vx * sy - vy * sx
            work[i, BIAS + 3] = wy * sz - wz * sy
            work[i, BIAS + 4] = wz * sx - wx * sz
            work[i, BIAS + 5] = wx * sy - wy * sx
        else:
            _body_motion(fint, ffloat, fdata, work, fwork, i, q, v, True, False)
        if fint[i, NF] == 0:
            # I^A = I, p^A = V x* I V - f_ext (the rigid kernel's structured product)
            for k in range(36):
                work[i, ART_INERTIA + k] = ffloat[i, INERTIA + k]
            rigid_inertia_times(ffloat, i, INERTIA, work, i, VEL, work, i, SCRATCH)
            for r in range(6):
                work[i, FORCE + r] = -work[i, FEXT + r]
            add_cross_force(work, i, VEL, work, i, SCRATCH, work, i, FORCE)
        elif fint[i, MFF_INV] >= 0:
            # constant M_ff (no movable children): I^A, p^A, Y, z in one pass
            # (kernels/flexible_articulated.py); pass 2 only adds its joint step
            articulated_constant_body(fint, fdata, work, fwork, i, q, v, tau)
        else:
            _flex_body_terms(fint, fdata, work, fwork, i, q, v, True, True)
            _elastic_forces(fint, fdata, fwork, i, q, v, 1.0)
            n = fint[i, NF]
            bb = fint[i, FWORK] + (6 + n) * (6 + n)
            ivf = fint[i, IDX_VF]
            for a in range(n):
                fwork[bb + 6 + a] -= tau[ivf + a]
            for r in range(6):
                fwork[bb + r] -= work[i, FEXT + r]
    # ---- pass 2, tips -> base: articulated inertias                            [seed 002 step 2]
    for i in range(nb, 0, -1):
        if fint[i, NF] > 0 and fint[i, MFF_INV] < 0:
            if not _condense_flexible(fint, work, fwork, i):
                return STATUS_SINGULAR + i
        jt = fint[i, JOINT_TYPE]
        if jt != JOINT_REVOLUTE and jt != JOINT_PRISMATIC:     # multi-dof or fixed joint
            p = fint[i, PARENT]
            if jt == JOINT_FIXED:
                # no joint coordinate (a welded flexible link, flexible/split.py): nothing to
                # condense; I^a = I^A and p^a = p^A + I^A c go to the parent as they are
                if p == 0:
                    continue
                for r in range(6):
                    s = work[i, FORCE + r]
                    for c in range(6):
                        s += work[i, ART_INERTIA + 6 * r + c] * work[i, BIAS + c]
                    work[i, FORCE + r] = s
            else:
                if not _multi_dof_articulated(fint, ffloat, work, i, v, tau):
                    return STATUS_SINGULAR + i
                if p == 0:
                    continue
        else:
            revolute = fint[i, JOINT_TYPE] == JOINT_REVOLUTE
            off = 3 if revolute else 0
            iv = fint[i, IDX_V]
            d = 0.0
            for r in range(6):
                s = 0.0
                for k in range(3):
                    s += work[i, ART_INERTIA + 6 * r + off + k] * ffloat[i, AXIS + k]
                work[i, U_VEC + r] = s
            for k in range(3):
                d += ffloat[i, AXIS + k] * work[i, U_VEC + off + k]
            if not d > 0.0:
                return STATUS_SINGULAR + i
            work[i, D_INV] = 1.0 / d
            u = tau[iv] + _passive(ffloat, i, v[iv])
            for k in range(3):
                u -= ffloat[i, AXIS + k] * work[i, FORCE + off + k]
            work[i, U_TAU] = u
            p = fint[i, PARENT]
            if p == 0:
                continue
            # I^a = I^A - U U^T / D ; p^a = p^A + I^a c + U u / D  (in place), then to the parent
            dinv = work[i, D_INV]
            u0, u1, u2 = work[i, U_VEC], work[i, U_VEC + 1], work[i, U_VEC + 2]
            u3, u4, u5 = work[i, U_VEC + 3], work[i, U_VEC + 4], work[i, U_VEC + 5]
            c0, c1, c2 = work[i, BIAS], work[i, BIAS + 1], work[i, BIAS + 2]
            c3, c4, c5 = work[i, BIAS + 3], work[i, BIAS + 4], work[i, BIAS + 5]
            for r in range(6):
                ur = work[i, U_VEC + r]
                row = ART_INERTIA + 6 * r
                a0 = work[i, row] - ur * u0 * dinv
                a1 = work[i, row + 1] - ur * u1 * dinv
                a2 = work[i, row + 2] - ur * u2 * dinv
                a3 = work[i, row + 3] - ur * u3 * dinv
                a4 = work[i, row + 4] - ur * u4 * dinv
                a5 = work[i, row + 5] - ur * u5 * dinv
                work[i, row] = a0
                work[i, row + 1] = a1
                work[i, row + 2] = a2
                work[i, row + 3] = a3
                work[i, row + 4] = a4
                work[i, row + 5] = a5
                work[i, FORCE + r] += (ur * u * dinv + (a0 * c0 + a1 * c1 + a2 * c2)
                                       + (a3 * c3 + a4 * c4 + a5 * c5))
        # I^A_p += X^T I^a X, p^A_p += X^T p^a: the 3x3-block transforms of kernels/spatial.py
        # (rotate, then shift by p) instead of 6x6 products with X
        if fint[p, NF] == 0:
            add_inertia_to_parent(work, i, ROT, work, i, ART_INERTIA, work, i, SCRATCH,
                                  work, p, ART_INERTIA)
            add_force_to_parent(work, i, ROT, work, i, FORCE, work, p, FORCE)
        else:
            for k in range(36):
                work[i, SCRATCH2 + k] = 0.0
            add_inertia_to_parent(work, i, ROT, work, i, ART_INERTIA, work, i, SCRATCH,
                                  work, i, SCRATCH2)   # SCRATCH2 = X^T I^a X
            for r in range(6):
                work[i, SCRATCH + r] = 0.0
            add_force_to_parent(work, i, ROT, work, i, FORCE, work, i, SCRATCH)   # X^T p^a
            _add_child_to_flexible(fint, work, fwork, i, p)
    # ---- pass 3, base -> tips: accelerations                                    [seed 002 step 3]
    for i in range(1, nb + 1):
        p = fint[i, PARENT]
        for r in range(6):
            work[i, SCRATCH + r] = work[p, ACC + r]
        if fint[i, ATTACH] >= 0:
            n_p = fint[p, NF]
            xi = fint[i, XI]
            qddf = _fwork_offsets(fint[p, FWORK], n_p)[4]
            for r in range(6):
                s = 0.0
                for a in range(n_p):
                    s += fwork[xi + r * n_p + a] * fwork[qddf + a]
                work[i, SCRATCH + r] += s
        motion_to_child(work, i, ROT, work, i, SCRATCH, work, i, ACC)
        for r in range(6):
            work[i, ACC + r] += work[i, BIAS + r]
        jt = fint[i, JOINT_TYPE]
        if jt != JOINT_REVOLUTE and jt != JOINT_PRISMATIC:
            _multi_dof_acceleration(fint, ffloat, work, i, qdd_out)
        else:
            off = 3 if jt == JOINT_REVOLUTE else 0
            s = work[i, U_TAU]
            for r in range(6):
                s -= work[i, U_VEC + r] * work[i, ACC + r]
            qdd = s * work[i, D_INV]
            qdd_out[fint[i, IDX_V]] = qdd
            for k in range(3):
                work[i, ACC + off + k] += ffloat[i, AXIS + k] * qdd
        n = fint[i, NF]
        if n > 0:
            mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = _fwork_offsets(fint[i, FWORK], n)
            ivf = fint[i, IDX_VF]
            # qdd_f = -(z + Y a) (seed 002 step 3 on the elastic rows); unsigned offsets into Y
            # (no negative-index wraparound, see kernels/flexible_articulated.py)
            acc0, acc1, acc2 = work[i, ACC], work[i, ACC + 1], work[i, ACC + 2]
            acc3, acc4, acc5 = work[i, ACC + 3], work[i, ACC + 4], work[i, ACC + 5]
            for a in range(n):
                row = UINT(y + 6 * a)
                s = -fwork[z + a]
                s -= fwork[row] * acc0
                s -= fwork[row + UINT1] * acc1
                s -= fwork[row + UINT2] * acc2
                s -= fwork[row + UINT3] * acc3
                s -= fwork[row + UINT4] * acc4
                s -= fwork[row + UINT5] * acc5
                fwork[qddf + a] = s
                qdd_out[ivf + a] = s
    return STATUS_OK


# =============================================================================== inverse dynamics
@njit(cache=True)
def _rnea(fint, ffloat, fdata, work, fwork, q, v, qdd, tau_out, velocities, forces):
    """Recursive Newton-Euler (seed 002 / docs/theory.md §2) with flexible bodies: tau_out (nv,) such that
    M qdd + b(q, v) + [K q_f + D qd_f] - tau_passive - Q_ext = tau_out. With forces=False the
    gravity, elastic, passive and external forces are left out (and with velocities=False the
    velocity terms): then tau_out = M qdd (one column of the mass matrix per unit qdd)."""
    nb = fint.shape[0] - 1
    set_base(ffloat, work, forces)
    for i in range(1, nb + 1):
        _rnea_body_state(fint, ffloat, fdata, work, fwork, i, q, v, velocities)
        _rnea_body_force(fint, ffloat, fdata, work, fwork, i, q, v, qdd, velocities, forces)
    _rnea_backward(fint, ffloat, work, fwork, v, tau_out, forces)


@njit(inline="always", cache=True)
def _rnea_body_state(fint, ffloat, fdata, work, fwork, i, q, v, velocities):
    """What _rnea needs of body i that depends on q (and v) only: its kinematics and, for a
    flexible body, its generalized mass M and velocity terms beta (seed 001). Computed once per
    state: the mass matrix reuses them for all its columns."""
    body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, velocities)
    if fint[i, NF] > 0:
        _flex_body_terms(fint, fdata, work, fwork, i, q, v, velocities, True)


@njit(inline="always", cache=True)
def _rnea_body_force(fint, ffloat, fdata, work, fwork, i, q, v, qdd, velocities, forces):
    """The forward step of _rnea for body i (its state terms computed, its parent's done): the
    acceleration a_i and the force f_i (rigid) or [f_i; Q_i] (flexible, in beta's place)."""
    p = fint[i, PARENT]
    # a_i = X (a_p + Xi qdd_f,p) + c_i + S qdd_i
    for r in range(6):
        work[i, SCRATCH + r] = work[p, ACC + r]
    if fint[i, ATTACH] >= 0:
        n_p = fint[p, NF]
        xi = fint[i, XI]
        ivf = fint[p, IDX_VF]
        for r in range(6):
            s = 0.0
            for a in range(n_p):
                s += fwork[xi + r * n_p + a] * qdd[ivf + a]
            work[i, SCRATCH + r] += s
    motion_to_child(work, i, ROT, work, i, SCRATCH, work, i, ACC)
    if velocities:
        for r in range(6):
            work[i, ACC + r] += work[i, BIAS + r]
    add_joint_motion(fint, ffloat, work, i, qdd, ACC)
    n = fint[i, NF]
    if n == 0:
        # f = I a + V x* I V - f_ext
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += ffloat[i, INERTIA + 6 * r + c] * work[i, ACC + c]
            work[i, FORCE + r] = s
        if velocities:
            _rigid_bias(ffloat, work, i, SCRATCH2)
            for r in range(6):
                work[i, FORCE + r] += work[i, SCRATCH2 + r]
    else:
        if forces:
            _elastic_forces(fint, fdata, fwork, i, q, v, 1.0)
        mm, bb, y, z, qddf, skq, tmp, tmp2, chol, wmat = _fwork_offsets(fint[i, FWORK], n)
        w6 = 6 + n
        ivf = fint[i, IDX_VF]
        # [f; Q] = M [a; qdd_f] + beta, kept in beta
        for r in range(w6):
            s = fwork[bb + r]
            for c in range(6):
                s += fwork[mm + r * w6 + c] * work[i, ACC + c]
            for a in range(n):
                s += fwork[mm + r * w6 + 6 + a] * qdd[ivf + a]
            fwork[bb + r] = s
        for r in range(6):
            work[i, FORCE + r] = fwork[bb + r]
    if forces:
        for r in range(6):
            work[i, FORCE + r] -= work[i, FEXT + r]


@njit(inline="always", cache=True)
def _rnea_backward(fint, ffloat, work, fwork, v, tau_out, forces):
    """The backward pass of _rnea: tau_out from the bodies' forces, each added to its parent
    (and, on a flexible parent, to its elastic rows through the node Jacobian Xi)."""
    nb = fint.shape[0] - 1
    for i in range(nb, 0, -1):
        jt = fint[i, JOINT_TYPE]
        iv = fint[i, IDX_V]
        if jt == JOINT_REVOLUTE or jt == JOINT_PRISMATIC:
            off = 3 if jt == JOINT_REVOLUTE else 0
            s = 0.0
            for k in range(3):
                s += ffloat[i, AXIS + k] * work[i, FORCE + off + k]
            tau_out[iv] = s - (_passive(ffloat, i, v[iv]) if forces else 0.0)
        else:       # tau = S^T f - tau_passive, k columns
            for j in range(fint[i, NV_JOINT]):
                s = 0.0
                for r in range(6):
                    s += ffloat[i, MOTION_SUBSPACE + 6 * j + r] * work[i, FORCE + r]
                tau_out[iv + j] = s - (_multi_passive(ffloat, i, j, v[iv + j]) if forces else 0.0)
        n = fint[i, NF]
        if n > 0:
            bb = fint[i, FWORK] + (6 + n) * (6 + n)
            ivf = fint[i, IDX_VF]
            for a in range(n):
                tau_out[ivf + a] = fwork[bb + 6 + a]
        p = fint[i, PARENT]
        if p == 0:
            continue
        for r in range(6):
            work[i, SCRATCH + r] = 0.0
        add_force_to_parent(work, i, ROT, work, i, FORCE, work, i, SCRATCH)   # X^T f
        for r in range(6):
            work[p, FORCE + r] += work[i, SCRATCH + r]
        if fint[i, ATTACH] >= 0:
            n_p = fint[p, NF]
            xi = fint[i, XI]
            bbp = fint[p, FWORK] + (6 + n_p) * (6 + n_p)
            for a in range(n_p):
                s = 0.0
                for k in range(6):
                    s += fwork[xi + k * n_p + a] * work[i, SCRATCH + k]
                fwork[bbp + 6 + a] += s


@njit(STATE_KERNEL, cache=True)
def inverse_dynamics(fint, ffloat, fdata, work, fwork, q, v, qdd, tau_out):
    """Generalized forces tau_out (nv,) for accelerations qdd (nv,) at (q, v): the rigid rows are
    the drive forces, the elastic rows the generalized forces on the elastic coordinates (zero
    for a free motion). Returns a status code (output_checks.STATUS_ALIASED when tau_out overlaps
    q, v or qdd, before anything is written: the backward pass reads v and q after writing it)."""
    if overlaps_any(tau_out, q, v, qdd):
        return STATUS_ALIASED
    nq = fint[0, IDX_Q]
    nv = fint[0, IDX_V]
    status = check_inputs(nq, nv, q, v, qdd, True, True)
    if status == STATUS_OK:
        status = check_quaternions(fint, q)
    if status != STATUS_OK:
        return status
    if tau_out.shape[0] != nv:
        return STATUS_SHAPE_OUT
    _rnea(fint, ffloat, fdata, work, fwork, q, v, qdd, tau_out, True, True)
    return STATUS_OK


@njit(MASS_KERNEL, cache=True)
def mass_matrix(fint, ffloat, fdata, work, fwork, q, unit, column, out):
    """M(q) (nv, nv), column by column from the RNEA with unit accelerations (O(n nv)), the
    position terms computed once. unit, column: (nv,) scratch. output_checks.STATUS_ALIASED when
    out overlaps q (read column by column while out is written)."""
    if overlaps(out, q):
        return STATUS_ALIASED
    nq = fint[0, IDX_Q]
    nv = fint[0, IDX_V]
    if out.shape[0] != nv:
        return STATUS_SHAPE_OUT
    status = check_inputs(nq, nv, q, q, q, False, False)
    if status == STATUS_OK:
        status = check_quaternions(fint, q)
    if status != STATUS_OK:
        return status
    if out.shape[1] != nv or unit.shape[0] != nv or column.shape[0] != nv:
        return STATUS_SHAPE_OUT
    # the bodies' kinematics and generalized masses once (they depend on q only), then one
    # acceleration / force sweep per column: the flexible bodies' M blocks (seed 001) were most
    # of the cost when each column ran the whole RNEA
    nb = fint.shape[0] - 1
    set_base(ffloat, work, False)
    for k in range(nv):
        unit[k] = 0.0
    for i in range(1, nb + 1):
        _rnea_body_state(fint, ffloat, fdata, work, fwork, i, q, unit, False)
    for j in range(nv):
        for k in range(nv):
            unit[k] = 0.0
        unit[j] = 1.0
        for i in range(1, nb + 1):
            n = fint[i, NF]
            if n > 0:   # beta: zero without velocities (as _flex_body_terms leaves it)
                bb = fint[i, FWORK] + (6 + n) * (6 + n)
                for r in range(6 + n):
                    fwork[bb + r] = 0.0
            _rnea_body_force(fint, ffloat, fdata, work, fwork, i, q, unit, unit, False, False)
        _rnea_backward(fint, ffloat, work, fwork, unit, column, False)
        for k in range(nv):
            out[k, j] = column[k]
    return STATUS_OK


@njit(cache=True, nogil=True)
def forward_dynamics_batch(fint, ffloat, fdata, work, fwork, q, v, tau, out, status):
    """forward_dynamics for each row of q (N, nq), v, tau (N, nv) into out (N, nv)."""
    for s in range(q.shape[0]):
        status[s] = forward_dynamics(fint, ffloat, fdata, work, fwork, q[s], v[s], tau[s], out[s])


@njit(cache=True, nogil=True)
def inverse_dynamics_batch(fint, ffloat, fdata, work, fwork, q, v, qdd, out, status):
    """inverse_dynamics for each row of q (N, nq), v, qdd (N, nv) into out (N, nv)."""
    for s in range(q.shape[0]):
        status[s] = inverse_dynamics(fint, ffloat, fdata, work, fwork, q[s], v[s], qdd[s], out[s])


# =============================================================================== kinematics, energy
@njit(cache=True)
def forward_kinematics(fint, ffloat, fdata, work, fwork, q):
    """Poses of every body (WORLD_ROT, WORLD_POS) at q, deformed by the elastic coordinates."""
    set_base(ffloat, work, True)
    for i in range(1, fint.shape[0]):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, q, False)


@njit(cache=True)
def mechanical_energy(fint, ffloat, fdata, work, fwork, q, v, with_kinetic, out):
    """out[0] = kinetic energy 1/2 sum [V; qd_f]^T M_body [V; qd_f]; out[1] = gravitational
    potential -sum g . (m p_w + R_w S_t); out[2] = elastic energy 1/2 sum q_f^T K_ff q_f."""
    set_base(ffloat, work, True)
    kinetic = 0.0
    gravity = 0.0
    elastic = 0.0
    g0, g1, g2 = ffloat[0, GRAVITY], ffloat[0, GRAVITY + 1], ffloat[0, GRAVITY + 2]
    for i in range(1, fint.shape[0]):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, with_kinetic)
        n = fint[i, NF]
        if n == 0:
            mass = ffloat[i, INERTIA]
            # first moment m c from the spatial inertia's lower-left block m [c]
            s0 = ffloat[i, INERTIA + 6 * 5 + 1]
            s1 = ffloat[i, INERTIA + 6 * 3 + 2]
            s2 = ffloat[i, INERTIA + 6 * 4 + 0]
            if with_kinetic:
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += ffloat[i, INERTIA + 6 * r + c] * work[i, VEL + c]
                    kinetic += 0.5 * work[i, VEL + r] * s
        else:
            _flex_body_terms(fint, fdata, work, fwork, i, q, v, False, True)
            o = fint[i, FLEX]
            sf = o + FLEX_SF
            mm = fint[i, FWORK]
            w6 = 6 + n
            iqf = fint[i, IDX_QF]
            ivf = fint[i, IDX_VF]
            mass = fdata[o + FLEX_MASS]
            s0 = fdata[o + FLEX_S0]
            s1 = fdata[o + FLEX_S0 + 1]
            s2 = fdata[o + FLEX_S0 + 2]
            for b in range(n):
                qb = q[iqf + b]
                s0 += fdata[sf + b] * qb
                s1 += fdata[sf + n + b] * qb
                s2 += fdata[sf + 2 * n + b] * qb
            kff = _flex_offsets(o, n)[5]
            for a in range(n):
                for b in range(n):
                    elastic += 0.5 * q[iqf + a] * fdata[kff + a * n + b] * q[iqf + b]
            if with_kinetic:
                for r in range(w6):
                    xr = work[i, VEL + r] if r < 6 else v[ivf + r - 6]
                    s = 0.0
                    for c in range(w6):
                        xc = work[i, VEL + c] if c < 6 else v[ivf + c - 6]
                        s += fwork[mm + r * w6 + c] * xc
                    kinetic += 0.5 * xr * s
        # world first moment m p_w + R_w S_t
        for r in range(3):
            gr = g0 if r == 0 else (g1 if r == 1 else g2)
            m_r = mass * work[i, WORLD_POS + r] + (work[i, WORLD_ROT + 3 * r] * s0
                                                  + work[i, WORLD_ROT + 3 * r + 1] * s1
                                                  + work[i, WORLD_ROT + 3 * r + 2] * s2)
            gravity -= gr * m_r
    out[0] = kinetic
    out[1] = gravity
    out[2] = elastic
