"""Frame kinematics and centroidal quantities of trees with flexible links (docs/controllers.md,
"Kinds of robot"; docs/flexible.md): link Jacobians, velocities and classical accelerations with
the elastic columns, centre of mass and centroidal momentum of the deformed bodies, and M^-1.

Conventions as kernels/frame_kinematics.py: spatial motions [linear (3); angular (3)], `frame`
FRAME_WORLD (root axes, about the root origin), FRAME_LOCAL (link axes, about the link origin),
FRAME_LOCAL_WORLD_ALIGNED (root axes, about the link origin).

A link is an "end" of kernels/flexible_forces.py (one end per link, end index = link index,
built by robot/flexible_frame_kinematics.py with flexible_force_loads.frame_ends): its origin c
and axes in its body's reference frame; on a flexible body (the flexible link itself or a link
welded to it) the origin moves to the deformed point u = c + Phi_t q_f and the axes turn by the
Cayley rotation of g = Phi_r q_f, exactly as link_pose places it (FlexibleTree.deformed_placement;
the flexible link's own frame is its reference frame, the clamp, where Phi = 0). Its world pose
and velocity (compute_end_state):

    x = p_b + R_b u,   xd = R_b (v + w x u + Phi_t qd_f),   w_e = R_b (w + G(g) Phi_r qd_f)

with (v, w) the body twist of the reference frame (body components) from the flexible
kinematics pass (kernels/flexible_dynamics.py body_kinematics: V_i = X_i (V_p + Xi_i qd_f,p) +
S_i qd_i, seed 002 eq. 3 with the parent's node motion). The link's twist in `frame`:

    local_world_aligned: [xd; w_e],   local: R_e^T [xd; w_e],   world: [xd - w_e x x; w_e].

Jacobian: the twist is linear in v, so column k is the twist of the unit velocity e_k: the poses
and node Jacobians once, then per column the velocity recursion down to the link's body,
O(nv depth) (columns of coordinates that do not move the link's body are zero; no recursive
Jacobian of the floating frame of reference here).

Classical acceleration: the body accelerations of the RNEA's forward pass without gravity
(a_i = X_i (a_p + Xi_i qdd_f,p) + c_i + S_i qdd_i; Featherstone RBDA eq. 5.7 with the node
motion, seed 002 eq. 4), then the point and frame of the link (body components, a the spatial
acceleration, so a + w x v is the reference origin's classical acceleration):

    xdd = R_b (a + w x v + alpha x u + w x (w x u) + 2 w x Phi_t qd_f + Phi_t qdd_f)
    w_e' = R_b (alpha + w x w_rel + Gdot gd + G gdd),  w_rel = G gd,  gd = Phi_r qd_f,
    G = s (1 + [g]/2), s = 1 / (1 + g.g/4),  Gdot gd = -w_rel s (g.gd) / 2

and [xdd; w_e'] in the frame: local_world_aligned as is, local R_e^T [xdd; w_e'], world (the
classical acceleration of the frame-fixed point at the root origin, Pinocchio's convention)
[xdd - w_e' x x - w_e x (w_e x x); w_e'].

Centroidal quantities: the moving bodies (rows >= 1) with their deformed mass distribution. The
first moment of a body is m p_w + R_w S_t with S_t = S_0 + S_f q_f (seed 001 eq. 4: the shape
integrals include the welded links' equivalent points, model/flexible/attachment.py), so the
centre of mass c = sum (m p_w + R_w S_t) / sum m. The spatial momentum of a body about its
reference origin, body components, is the first six rows of its generalized mass matrix times
[V; qd_f] (seed 001 eqs. 2-7: h = M_RR V + M_Rf qd_f; a rigid body: I V), moved to the root
(P = R p, L_0 = R l + p_w x P) and summed; h_G = [P; L_0 - c x P] (Orin, Goswami & Lee 2013,
eq. 11 and the centroidal transform eq. 14). A_G and J_c = A_G[:3] / m column by column (one
kinematics pass per column, O(n nv)).

M^-1: the dense Cholesky inverse of the flexible mass matrix (kernels/flexible_dynamics.py
mass_matrix, the RNEA column by column), O(nv^3): there is no recursive M^-1 (Carpentier &
Mansard 2018) for the floating frame of reference here.

Kernels never raise; they return a status (model/layout.py STATUS_*). No allocation: the
workspaces (work, fwork: copies of the tree's; end_state; unit, scratch vectors; factor) are
the robot's (robot/flexible_frame_kinematics.py).
"""
import math

from numba import njit

from ..model.flexible.layout import (ACC, ATTACH, BIAS, FLEX, FLEX_MASS, FLEX_S0, FLEX_SF,
                                     FWORK, IDX_Q, IDX_QF, IDX_V, IDX_VF, INERTIA,
                                     MOTION_SUBSPACE, NF, NQ_JOINT, NV_JOINT, PARENT, ROT,
                                     SCRATCH, VEL, WORLD_POS, WORLD_ROT, XI)
from ..model.layout import STATUS_OK, STATUS_SHAPE_OUT, STATUS_SINGULAR
from .flexible_dynamics import (body_kinematics, check_inputs, check_quaternions, mass_matrix,
                                mechanical_energy, set_base)
from .flexible_forces import (END_BODY, END_IVF, END_NF, END_SHAPE, ES_G, ES_R, ES_SCALE, ES_U,
                              ES_W, ES_X, ES_XD, compute_end_state)
from .frame_kinematics import FRAME_LOCAL, FRAME_WORLD
from .output_checks import STATUS_ALIASED, overlaps
from .spatial import motion_to_child

# relative Cholesky pivot below which M is taken as singular (as spatial.invert_spd)
PIVOT_TOL = 1e-13


@njit(cache=True)
def _state_status(fint, q, v, qdd, check_v, check_qdd):
    """Status of q (and v, qdd when checked) against the tree's sizes: nq, nv are the ends of
    the joints' and elastic coordinates' ranges in fint."""
    nq = 0
    nv = 0
    for i in range(1, fint.shape[0]):
        nq = max(nq, fint[i, IDX_Q] + fint[i, NQ_JOINT])
        nv = max(nv, fint[i, IDX_V] + fint[i, NV_JOINT])
        if fint[i, NF] > 0:
            nq = max(nq, fint[i, IDX_QF] + fint[i, NF])
            nv = max(nv, fint[i, IDX_VF] + fint[i, NF])
    status = check_inputs(nq, nv, q, v, qdd, check_v, check_qdd)
    return status or check_quaternions(fint, q)


@njit(cache=True)
def _chain_kinematics(fint, ffloat, fdata, work, fwork, last, q, v, velocities):
    """Poses (and twists with `velocities`) of bodies 1..last (the ancestors of `last` are among
    them: parents are numbered first), gravity off (ACC of the root 0)."""
    set_base(ffloat, work, False)
    for i in range(1, last + 1):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, velocities)


@njit(cache=True)
def _propagate_motion(fint, ffloat, fwork, work, i, x, column, with_bias):
    """work[i, column] = X_i (m_p + Xi_i x_f,p) [+ c_i] + S_i x_i, body components, for the
    motion m in `column` (VEL with x = v, or ACC with x = qdd and with_bias: c_i = BIAS from
    body_kinematics): seed 002 eq. 3 / RBDA eq. 5.7 with the parent's node motion; body i's pose
    (ROT, POS) and node Jacobian Xi already in work / fwork. One pass for the velocity and the
    acceleration recursions, which differ only in the column, the vector and the bias term."""
    p = fint[i, PARENT]
    for r in range(6):
        work[i, SCRATCH + r] = work[p, column + r]
    if fint[i, ATTACH] >= 0:
        n_p = fint[p, NF]
        xi = fint[i, XI]
        ivf = fint[p, IDX_VF]
        for r in range(6):
            s = 0.0
            for a in range(n_p):
                s += fwork[xi + r * n_p + a] * x[ivf + a]
            work[i, SCRATCH + r] += s
    motion_to_child(work, i, ROT, work, i, SCRATCH, work, i, column)
    iv = fint[i, IDX_V]
    for r in range(6):
        s = work[i, BIAS + r] if with_bias else 0.0
        for j in range(fint[i, NV_JOINT]):
            s += ffloat[i, MOTION_SUBSPACE + 6 * j + r] * x[iv + j]
        work[i, column + r] += s


@njit(cache=True)
def _body_velocity(fint, ffloat, fwork, work, i, v):
    """V_i = X_i (V_p + Xi_i v_f,p) + S_i v_i (_propagate_motion on VEL)."""
    _propagate_motion(fint, ffloat, fwork, work, i, v, VEL, False)


@njit(inline="always")
def _moves(fint, dof_body, k, b):
    """Whether velocity coordinate k (of body dof_body[k]: its joint or its modes) moves body b:
    that body is b or one of b's ancestors (parents are numbered first)."""
    d = dof_body[k]
    j = b
    while j > d:
        j = fint[j, PARENT]
    return j == d


@njit(inline="always")
def _motion_in_frame(frame, end_state, e, lx, ly, lz, ax, ay, az):
    """A motion [l; a] of link e given in root axes about its origin (local_world_aligned), with
    its world pose in end_state, in `frame` (world: the linear part moved to the root origin,
    l - a x x; the caller adds any other term). Returns the six components."""
    if frame == FRAME_WORLD:
        x0 = end_state[e, ES_X]
        x1 = end_state[e, ES_X + 1]
        x2 = end_state[e, ES_X + 2]
        lx -= ay * x2 - az * x1
        ly -= az * x0 - ax * x2
        lz -= ax * x1 - ay * x0
    elif frame == FRAME_LOCAL:
        r = ES_R   # R_e row-major: (R_e^T m)_c = sum_r R_rc m_r
        bx = end_state[e, r] * lx + end_state[e, r + 3] * ly + end_state[e, r + 6] * lz
        by = end_state[e, r + 1] * lx + end_state[e, r + 4] * ly + end_state[e, r + 7] * lz
        bz = end_state[e, r + 2] * lx + end_state[e, r + 5] * ly + end_state[e, r + 8] * lz
        cx = end_state[e, r] * ax + end_state[e, r + 3] * ay + end_state[e, r + 6] * az
        cy = end_state[e, r + 1] * ax + end_state[e, r + 4] * ay + end_state[e, r + 7] * az
        cz = end_state[e, r + 2] * ax + end_state[e, r + 5] * ay + end_state[e, r + 8] * az
        return bx, by, bz, cx, cy, cz
    return lx, ly, lz, ax, ay, az


@njit(inline="always")
def _twist_in_frame(frame, end_state, e):
    """The twist of link e (end_state after compute_end_state) in `frame`."""
    return _motion_in_frame(frame, end_state, e, end_state[e, ES_XD], end_state[e, ES_XD + 1],
                            end_state[e, ES_XD + 2], end_state[e, ES_W], end_state[e, ES_W + 1],
                            end_state[e, ES_W + 2])


@njit(cache=True)
def flexible_link_jacobian(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data,
                           end_state, unit, dof_body, q, link, frame, out):
    """out (6, nv) = J with the link's twist J v in `frame`, elastic columns included (module
    docstring): the poses and node Jacobians once, then column k is the twist of the unit
    velocity e_k (the velocity recursion down to the link's body), zero for a coordinate that
    does not move the link's body (dof_body: the body of each coordinate). Returns a status."""
    nv = unit.shape[0]
    if overlaps(out, q):
        return STATUS_ALIASED
    status = _state_status(fint, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    if out.ndim != 2 or out.shape[0] != 6 or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    b = end_int[link, END_BODY]
    _chain_kinematics(fint, ffloat, fdata, work, fwork, b, q, q, False)
    for j in range(nv):
        unit[j] = 0.0
    for k in range(nv):
        if b == 0 or not _moves(fint, dof_body, k, b):
            for r in range(6):
                out[r, k] = 0.0
            continue
        unit[k] = 1.0
        for i in range(1, b + 1):
            _body_velocity(fint, ffloat, fwork, work, i, unit)
        compute_end_state(work, end_int, end_float, end_data, q, unit, link, end_state)
        unit[k] = 0.0
        m = _twist_in_frame(frame, end_state, link)
        for r in range(6):
            out[r, k] = m[r]
    return STATUS_OK


@njit(cache=True)
def flexible_link_velocity(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data,
                           end_state, q, v, link, frame, out):
    """out (6,) = the link's twist J v in `frame` (one kinematics pass). Returns a status."""
    if overlaps(out, q) or overlaps(out, v):
        return STATUS_ALIASED
    status = _state_status(fint, q, v, v, True, False)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 6:
        return STATUS_SHAPE_OUT
    _chain_kinematics(fint, ffloat, fdata, work, fwork, end_int[link, END_BODY], q, v, True)
    compute_end_state(work, end_int, end_float, end_data, q, v, link, end_state)
    m = _twist_in_frame(frame, end_state, link)
    for r in range(6):
        out[r] = m[r]
    return STATUS_OK


@njit(cache=True)
def _body_acceleration(fint, ffloat, fwork, work, i, qdd):
    """a_i = X_i (a_p + Xi_i qdd_f,p) + c_i + S_i qdd_i (_propagate_motion on ACC, with the
    bias c_i)."""
    _propagate_motion(fint, ffloat, fwork, work, i, qdd, ACC, True)


@njit(cache=True)
def flexible_link_acceleration(fint, ffloat, fdata, work, fwork, end_int, end_float, end_data,
                               end_state, q, v, qdd, link, frame, out):
    """out (6,) = the link's classical acceleration in `frame` (module docstring; gravity not
    included). Returns a status."""
    if overlaps(out, q) or overlaps(out, v) or overlaps(out, qdd):
        return STATUS_ALIASED
    status = _state_status(fint, q, v, qdd, True, True)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 6:
        return STATUS_SHAPE_OUT
    b = end_int[link, END_BODY]
    set_base(ffloat, work, False)
    for i in range(1, b + 1):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, True)
        _body_acceleration(fint, ffloat, fwork, work, i, qdd)
    compute_end_state(work, end_int, end_float, end_data, q, v, link, end_state)
    u0 = end_state[link, ES_U]
    u1 = end_state[link, ES_U + 1]
    u2 = end_state[link, ES_U + 2]
    g0 = end_state[link, ES_G]
    g1 = end_state[link, ES_G + 1]
    g2 = end_state[link, ES_G + 2]
    s = end_state[link, ES_SCALE]
    # Phi_t qd_f, Phi_t qdd_f, gd = Phi_r qd_f, gdd = Phi_r qdd_f
    t0 = t1 = t2 = h0 = h1 = h2 = d0 = d1 = d2 = e0 = e1 = e2 = 0.0
    sh = end_int[link, END_SHAPE]
    if sh >= 0:
        n = end_int[link, END_NF]
        ivf = end_int[link, END_IVF]
        for k in range(n):
            vk = v[ivf + k]
            ak = qdd[ivf + k]
            t0 += end_data[sh + k] * vk
            t1 += end_data[sh + n + k] * vk
            t2 += end_data[sh + 2 * n + k] * vk
            h0 += end_data[sh + k] * ak
            h1 += end_data[sh + n + k] * ak
            h2 += end_data[sh + 2 * n + k] * ak
            d0 += end_data[sh + 3 * n + k] * vk
            d1 += end_data[sh + 4 * n + k] * vk
            d2 += end_data[sh + 5 * n + k] * vk
            e0 += end_data[sh + 3 * n + k] * ak
            e1 += end_data[sh + 4 * n + k] * ak
            e2 += end_data[sh + 5 * n + k] * ak
    vx, vy, vz = work[b, VEL], work[b, VEL + 1], work[b, VEL + 2]
    wx, wy, wz = work[b, VEL + 3], work[b, VEL + 4], work[b, VEL + 5]
    ax, ay, az = work[b, ACC], work[b, ACC + 1], work[b, ACC + 2]
    bx, by, bz = work[b, ACC + 3], work[b, ACC + 4], work[b, ACC + 5]
    # w x u, then the point's classical acceleration in body components
    cx = wy * u2 - wz * u1
    cy = wz * u0 - wx * u2
    cz = wx * u1 - wy * u0
    px = (ax + wy * vz - wz * vy + by * u2 - bz * u1 + wy * cz - wz * cy
          + 2.0 * (wy * t2 - wz * t1) + h0)
    py = (ay + wz * vx - wx * vz + bz * u0 - bx * u2 + wz * cx - wx * cz
          + 2.0 * (wz * t0 - wx * t2) + h1)
    pz = (az + wx * vy - wy * vx + bx * u1 - by * u0 + wx * cy - wy * cx
          + 2.0 * (wx * t1 - wy * t0) + h2)
    # w_rel = G gd, its derivative Gdot gd + G gdd, then w_e' = alpha + w x w_rel + w_rel'
    rx = s * (d0 + 0.5 * (g1 * d2 - g2 * d1))
    ry = s * (d1 + 0.5 * (g2 * d0 - g0 * d2))
    rz = s * (d2 + 0.5 * (g0 * d1 - g1 * d0))
    f = -0.5 * s * (g0 * d0 + g1 * d1 + g2 * d2)
    qx = bx + wy * rz - wz * ry + f * rx + s * (e0 + 0.5 * (g1 * e2 - g2 * e1))
    qy = by + wz * rx - wx * rz + f * ry + s * (e1 + 0.5 * (g2 * e0 - g0 * e2))
    qz = bz + wx * ry - wy * rx + f * rz + s * (e2 + 0.5 * (g0 * e1 - g1 * e0))
    # to root axes with R_b
    lx = work[b, WORLD_ROT] * px + work[b, WORLD_ROT + 1] * py + work[b, WORLD_ROT + 2] * pz
    ly = work[b, WORLD_ROT + 3] * px + work[b, WORLD_ROT + 4] * py + work[b, WORLD_ROT + 5] * pz
    lz = work[b, WORLD_ROT + 6] * px + work[b, WORLD_ROT + 7] * py + work[b, WORLD_ROT + 8] * pz
    kx = work[b, WORLD_ROT] * qx + work[b, WORLD_ROT + 1] * qy + work[b, WORLD_ROT + 2] * qz
    ky = work[b, WORLD_ROT + 3] * qx + work[b, WORLD_ROT + 4] * qy + work[b, WORLD_ROT + 5] * qz
    kz = work[b, WORLD_ROT + 6] * qx + work[b, WORLD_ROT + 7] * qy + work[b, WORLD_ROT + 8] * qz
    if frame == FRAME_WORLD:
        # the frame-fixed point at the root origin: - w_e x (w_e x x) besides - w_e' x x
        x0 = end_state[link, ES_X]
        x1 = end_state[link, ES_X + 1]
        x2 = end_state[link, ES_X + 2]
        ox = end_state[link, ES_W]
        oy = end_state[link, ES_W + 1]
        oz = end_state[link, ES_W + 2]
        mx = oy * x2 - oz * x1
        my = oz * x0 - ox * x2
        mz = ox * x1 - oy * x0
        lx -= oy * mz - oz * my
        ly -= oz * mx - ox * mz
        lz -= ox * my - oy * mx
    m = _motion_in_frame(frame, end_state, link, lx, ly, lz, kx, ky, kz)
    for r in range(6):
        out[r] = m[r]
    return STATUS_OK


@njit(cache=True)
def _first_moment(fint, ffloat, fdata, work, q, out, o):
    """out[o:o+3] = sum over the moving bodies of m p_w + R_w S_t (S_t = S_0 + S_f q_f on a
    flexible body; m c from the rigid inertia's lower-left block m [c] otherwise), poses in
    work. Returns the total moving mass."""
    total = 0.0
    for r in range(3):
        out[o + r] = 0.0
    for i in range(1, fint.shape[0]):
        n = fint[i, NF]
        if n == 0:
            mass = ffloat[i, INERTIA]
            s0 = ffloat[i, INERTIA + 6 * 5 + 1]
            s1 = ffloat[i, INERTIA + 6 * 3 + 2]
            s2 = ffloat[i, INERTIA + 6 * 4 + 0]
        else:
            flex = fint[i, FLEX]
            sf = flex + FLEX_SF
            iqf = fint[i, IDX_QF]
            mass = fdata[flex + FLEX_MASS]
            s0 = fdata[flex + FLEX_S0]
            s1 = fdata[flex + FLEX_S0 + 1]
            s2 = fdata[flex + FLEX_S0 + 2]
            for k in range(n):
                qk = q[iqf + k]
                s0 += fdata[sf + k] * qk
                s1 += fdata[sf + n + k] * qk
                s2 += fdata[sf + 2 * n + k] * qk
        total += mass
        for r in range(3):
            out[o + r] += mass * work[i, WORLD_POS + r] + (work[i, WORLD_ROT + 3 * r] * s0
                                                      + work[i, WORLD_ROT + 3 * r + 1] * s1
                                                      + work[i, WORLD_ROT + 3 * r + 2] * s2)
    return total


@njit(cache=True)
def flexible_center_of_mass(fint, ffloat, fdata, work, fwork, q, out):
    """out (3,) = the centre of mass of the moving bodies, deformed, root frame (module
    docstring; zeros without moving mass). Returns a status."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = _state_status(fint, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 3:
        return STATUS_SHAPE_OUT
    _chain_kinematics(fint, ffloat, fdata, work, fwork, fint.shape[0] - 1, q, q, False)
    total = _first_moment(fint, ffloat, fdata, work, q, out, 0)
    for r in range(3):
        out[r] = out[r] / total if total > 0.0 else 0.0
    return STATUS_OK


@njit(cache=True)
def flexible_centroidal(fint, ffloat, fdata, work, fwork, unit, scratch, q, rows, out):
    """rows 6: out (6, nv) = A_G, h_G = A_G v = [linear momentum; angular momentum about the
    centre of mass], root axes; rows 3: out (3, nv) = J_c, c' = J_c v (module docstring).
    scratch (>= 6,). Returns a status."""
    nv = unit.shape[0]
    if overlaps(out, q):
        return STATUS_ALIASED
    status = _state_status(fint, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    if out.ndim != 2 or out.shape[0] != rows or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    nb = fint.shape[0] - 1
    for j in range(nv):
        unit[j] = 0.0
    # poses and every flexible body's generalized mass matrix (fwork's M blocks: q only)
    mechanical_energy(fint, ffloat, fdata, work, fwork, q, unit, False, scratch)
    total = _first_moment(fint, ffloat, fdata, work, q, scratch, 3)
    inv_mass = 1.0 / total if total > 0.0 else 0.0
    c0 = scratch[3] * inv_mass
    c1 = scratch[4] * inv_mass
    c2 = scratch[5] * inv_mass
    for k in range(nv):
        unit[k] = 1.0
        for i in range(1, nb + 1):      # poses and node Jacobians from mechanical_energy
            _body_velocity(fint, ffloat, fwork, work, i, unit)
        unit[k] = 0.0
        p0 = p1 = p2 = l0 = l1 = l2 = 0.0
        for i in range(1, nb + 1):
            # the body's spatial momentum about its reference origin, body components, in
            # SCRATCH: I V (rigid) or the first six rows of M [V; qd_f] (seed 001)
            n = fint[i, NF]
            if n == 0:
                for r in range(6):
                    h = 0.0
                    for c in range(6):
                        h += ffloat[i, INERTIA + 6 * r + c] * work[i, VEL + c]
                    work[i, SCRATCH + r] = h
            else:
                mm = fint[i, FWORK]
                w6 = 6 + n
                ivf = fint[i, IDX_VF]
                for r in range(6):
                    h = 0.0
                    for c in range(6):
                        h += fwork[mm + r * w6 + c] * work[i, VEL + c]
                    if k >= ivf and k < ivf + n:     # qd_f = e_k on this body's modes
                        h += fwork[mm + r * w6 + 6 + k - ivf]
                    work[i, SCRATCH + r] = h
            # to the root: P = R p, L_0 = R l + p_w x P
            for r in range(3):
                f = 0.0
                t = 0.0
                for c in range(3):
                    f += work[i, WORLD_ROT + 3 * r + c] * work[i, SCRATCH + c]
                    t += work[i, WORLD_ROT + 3 * r + c] * work[i, SCRATCH + 3 + c]
                work[i, SCRATCH + 6 + r] = f
                work[i, SCRATCH + 9 + r] = t
            f0 = work[i, SCRATCH + 6]
            f1 = work[i, SCRATCH + 7]
            f2 = work[i, SCRATCH + 8]
            x0 = work[i, WORLD_POS]
            x1 = work[i, WORLD_POS + 1]
            x2 = work[i, WORLD_POS + 2]
            p0 += f0
            p1 += f1
            p2 += f2
            l0 += work[i, SCRATCH + 9] + x1 * f2 - x2 * f1
            l1 += work[i, SCRATCH + 10] + x2 * f0 - x0 * f2
            l2 += work[i, SCRATCH + 11] + x0 * f1 - x1 * f0
        if rows == 3:
            out[0, k] = p0 * inv_mass
            out[1, k] = p1 * inv_mass
            out[2, k] = p2 * inv_mass
        else:
            # about the centre of mass: L_G = L_0 - c x P        [Orin et al. 2013, eq. 14]
            out[0, k] = p0
            out[1, k] = p1
            out[2, k] = p2
            out[3, k] = l0 - (c1 * p2 - c2 * p1)
            out[4, k] = l1 - (c2 * p0 - c0 * p2)
            out[5, k] = l2 - (c0 * p1 - c1 * p0)
    return STATUS_OK


@njit(cache=True)
def flexible_mass_matrix_inverse(fint, ffloat, fdata, work, fwork, unit, column, factor,
                                 dof_body, q, out):
    """out (nv, nv) = M(q)^-1, dense: M by the flexible RNEA (mass_matrix) into `factor`, its
    Cholesky factor L in place (lower triangle), L^-1 in place, then M^-1 = L^-T L^-1 (both
    triangles). A pivot below PIVOT_TOL times the largest diagonal entry: STATUS_SINGULAR plus
    the body of that coordinate (dof_body). Returns a status."""
    nv = unit.shape[0]
    if overlaps(out, q):
        return STATUS_ALIASED
    status = mass_matrix(fint, ffloat, fdata, work, fwork, q, unit, column, factor)
    if status != STATUS_OK:
        return status
    if out.ndim != 2 or out.shape[0] != nv or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    scale = 0.0
    for j in range(nv):
        scale = max(scale, abs(factor[j, j]))
    # Cholesky M = L L^T, column by column (Golub & Van Loan, Alg. 4.2.1)
    for j in range(nv):
        d = factor[j, j]
        for k in range(j):
            d -= factor[j, k] * factor[j, k]
        if not d > PIVOT_TOL * scale:
            return STATUS_SINGULAR + dof_body[j]
        d = math.sqrt(d)
        factor[j, j] = d
        for i in range(j + 1, nv):
            s = factor[i, j]
            for k in range(j):
                s -= factor[i, k] * factor[j, k]
            factor[i, j] = s / d
    # L^-1 in place: column j, rows in increasing order (entries right of column j are still L)
    for j in range(nv):
        factor[j, j] = 1.0 / factor[j, j]
        for i in range(j + 1, nv):
            s = 0.0
            for k in range(j, i):
                s += factor[i, k] * factor[k, j]
            factor[i, j] = -s / factor[i, i]
    # M^-1 = L^-T L^-1: (i, j) = sum_{k >= max(i, j)} Linv[k, i] Linv[k, j]
    for i in range(nv):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, nv):
                s += factor[k, i] * factor[k, j]
            out[i, j] = s
            out[j, i] = s
    return STATUS_OK
