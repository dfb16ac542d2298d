"""Force elements: point-to-point spring-dampers, joint springs and 6-dof bushings (docs/theory.md §6).

Springs and dampers are the seeds' potential V and Rayleigh function D [004]: each element's
force is -dV/d(deflection) - dD/d(rate), applied to the two links it joins as equal and opposite
wrenches (so it enters the recursions exactly like an external load f^t [002, eq. 14]), or, for a
joint spring, as a joint force added to tau.

Model (built by robot/force_loads.py from inputs/forces.py):
- element_int (n, ELEMENT_INT_WIDTH) int64: type, the two links (and their bodies), the joint's
  q and v index (joint springs).
- element_float (n, ELEMENT_FLOAT_WIDTH) float64: per type, the columns listed below.
Data in: work after forward_kinematics (WORLD_ROT, WORLD_POS, VEL of every body).
Data out: link_wrench_out (n_links, 6) += wrench on each link in its link frame about its origin;
tau_out (nv,) += joint-spring forces; values_out (n, VALUE_WIDTH) the reported values.

Kernels index the flat arrays with integer offsets (no slices/views in the loops).
"""
import math

from numba import njit, types

from . import signatures

from ..model.layout import LINK_BODY, LINK_POS, LINK_ROT, VEL, WORLD_POS, WORLD_ROT
from .kinematics import forward_kinematics

# ---- element types (element_int[:, ELEMENT_TYPE]) ---------------------------------------------------
SPRING_DAMPER = 0
JOINT_SPRING = 1
BUSHING = 2
TYPE_CODES = {"spring_damper": SPRING_DAMPER, "joint_spring": JOINT_SPRING, "bushing": BUSHING}

# ---- element_int columns ------------------------------------------------------------------------------
ELEMENT_TYPE = 0
LINK_A = 1             # parent-side link (spring_damper, bushing)
LINK_B = 2             # child-side link
JOINT_IQ = 3           # joint_spring: index of the joint in q
JOINT_IV = 4           # joint_spring: index of the joint in v
ELEMENT_INT_WIDTH = 5

# ---- element_float columns ----------------------------------------------------------------------------
# spring_damper
POINT_A = 0            # 3: parent_point, in link A's frame
POINT_B = 3            # 3: child_point, in link B's frame
STIFFNESS = 6          # k (N/m; joint_spring N m/rad or N/m)
DAMPING = 7            # c
REST = 8               # rest_length l0 / rest_position q0
PRELOAD = 9            # tension at l = l0, dl/dt = 0
# bushing
FRAME_A_ROT = 0        # 9: parent_origin rotation in link A's frame (row-major)
FRAME_A_POS = 9        # 3
FRAME_B_ROT = 12       # 9: child_origin rotation in link B's frame
FRAME_B_POS = 21       # 3
STIFFNESS6 = 24        # 6: [kx ky kz krx kry krz] in frame A
DAMPING6 = 30          # 6
ELEMENT_FLOAT_WIDTH = 36

# ---- values_out columns -------------------------------------------------------------------------------
VALUE_FORCE = 0        # tension (N; > 0 pulls the points together) / joint force / |bushing force|
VALUE_LENGTH = 1       # length l (m) / deflection q - q0 / |bushing translation|
VALUE_RATE = 2         # dl/dt / dq/dt / 0
VALUE_WRENCH = 3       # 6: bushing: wrench on the child-side frame B at its origin, in frame A
VALUE_DEFLECTION = 9   # 6: bushing: [d; theta] of frame B relative to frame A, in frame A
VALUE_WIDTH = 15

# below this rotation angle (rad) the series forms of log(R) and J_l^-1 are used
_SMALL_ANGLE = 1e-6


@njit(cache=True, inline="always")
def _link_world(link_float, work, link, body, rot_out, pos_out):
    """World pose of a link frame: R = R_b R_L, p = p_b + R_b p_L (rot_out 9, pos_out 3)."""
    for r in range(3):
        for c in range(3):
            s = 0.0
            for m in range(3):
                s += work[body, WORLD_ROT + 3 * r + m] * link_float[link, LINK_ROT + 3 * m + c]
            rot_out[3 * r + c] = s
        s = work[body, WORLD_POS + r]
        for m in range(3):
            s += work[body, WORLD_ROT + 3 * r + m] * link_float[link, LINK_POS + m]
        pos_out[r] = s


@njit(cache=True, inline="always")
def _point_world(link_float, work, link, body, point_src, point_col, x_out, xdot_out):
    """World position and velocity of a point given in a link frame (point_src[point_col:+3]).

    r = R_L p + p_L in the body frame; x = p_b + R_b r; xdot = R_b (v_b + w_b x r)."""
    rx = link_float[link, LINK_POS]
    ry = link_float[link, LINK_POS + 1]
    rz = link_float[link, LINK_POS + 2]
    px = point_src[point_col]
    py = point_src[point_col + 1]
    pz = point_src[point_col + 2]
    rx += link_float[link, LINK_ROT] * px + link_float[link, LINK_ROT + 1] * py + link_float[link, LINK_ROT + 2] * pz
    ry += link_float[link, LINK_ROT + 3] * px + link_float[link, LINK_ROT + 4] * py + link_float[link, LINK_ROT + 5] * pz
    rz += link_float[link, LINK_ROT + 6] * px + link_float[link, LINK_ROT + 7] * py + link_float[link, LINK_ROT + 8] * pz
    wx = work[body, VEL + 3]
    wy = work[body, VEL + 4]
    wz = work[body, VEL + 5]
    ux = work[body, VEL] + wy * rz - wz * ry
    uy = work[body, VEL + 1] + wz * rx - wx * rz
    uz = work[body, VEL + 2] + wx * ry - wy * rx
    for r in range(3):
        x_out[r] = (work[body, WORLD_POS + r] + work[body, WORLD_ROT + 3 * r] * rx
                    + work[body, WORLD_ROT + 3 * r + 1] * ry + work[body, WORLD_ROT + 3 * r + 2] * rz)
        xdot_out[r] = (work[body, WORLD_ROT + 3 * r] * ux + work[body, WORLD_ROT + 3 * r + 1] * uy
                       + work[body, WORLD_ROT + 3 * r + 2] * uz)


@njit(cache=True, inline="always")
def _add_point_force(link_float, work, link, body, point_src, point_col, fx, fy, fz, tx, ty, tz,
                     link_wrench_out):
    """link_wrench_out[link] += a world force f at a point p of the link (p in the link frame)
    plus a world couple t, as a wrench in the link frame about its origin: n = R^T f,
    m = R^T t + p x n, with R = R_b R_L the link's world rotation."""
    nx = 0.0
    ny = 0.0
    nz = 0.0
    mx = 0.0
    my = 0.0
    mz = 0.0
    for c in range(3):
        # column c of R = R_b R_L
        r0 = (work[body, WORLD_ROT] * link_float[link, LINK_ROT + c]
              + work[body, WORLD_ROT + 1] * link_float[link, LINK_ROT + 3 + c]
              + work[body, WORLD_ROT + 2] * link_float[link, LINK_ROT + 6 + c])
        r1 = (work[body, WORLD_ROT + 3] * link_float[link, LINK_ROT + c]
              + work[body, WORLD_ROT + 4] * link_float[link, LINK_ROT + 3 + c]
              + work[body, WORLD_ROT + 5] * link_float[link, LINK_ROT + 6 + c])
        r2 = (work[body, WORLD_ROT + 6] * link_float[link, LINK_ROT + c]
              + work[body, WORLD_ROT + 7] * link_float[link, LINK_ROT + 3 + c]
              + work[body, WORLD_ROT + 8] * link_float[link, LINK_ROT + 6 + c])
        n = r0 * fx + r1 * fy + r2 * fz
        m = r0 * tx + r1 * ty + r2 * tz
        if c == 0:
            nx = n
            mx = m
        elif c == 1:
            ny = n
            my = m
        else:
            nz = n
            mz = m
    px = point_src[point_col]
    py = point_src[point_col + 1]
    pz = point_src[point_col + 2]
    link_wrench_out[link, 0] += nx
    link_wrench_out[link, 1] += ny
    link_wrench_out[link, 2] += nz
    link_wrench_out[link, 3] += mx + py * nz - pz * ny
    link_wrench_out[link, 4] += my + pz * nx - px * nz
    link_wrench_out[link, 5] += mz + px * ny - py * nx


@njit(cache=True)
def _spring_damper(link_int, link_float, work, element_int, element_float, e, link_wrench_out,
                   values_out, scratch):
    """Point-to-point spring-damper: tension f = k (l - l0) + c dl/dt + preload, pulling the two
    points together when f > 0 (V = k (l - l0)^2 / 2 + preload l, D = c (dl/dt)^2 / 2 [004])."""
    link_a = element_int[e, LINK_A]
    link_b = element_int[e, LINK_B]
    body_a = link_int[link_a, LINK_BODY]
    body_b = link_int[link_b, LINK_BODY]
    xa = scratch[0:3]
    va = scratch[3:6]
    xb = scratch[6:9]
    vb = scratch[9:12]
    _point_world(link_float, work, link_a, body_a, element_float[e], POINT_A, xa, va)
    _point_world(link_float, work, link_b, body_b, element_float[e], POINT_B, xb, vb)
    dx = xb[0] - xa[0]
    dy = xb[1] - xa[1]
    dz = xb[2] - xa[2]
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    if length > 0.0:
        ux = dx / length
        uy = dy / length
        uz = dz / length
    else:  # coincident points: no direction, no force
        ux = 0.0
        uy = 0.0
        uz = 0.0
    rate = ux * (vb[0] - va[0]) + uy * (vb[1] - va[1]) + uz * (vb[2] - va[2])
    tension = (element_float[e, STIFFNESS] * (length - element_float[e, REST])
               + element_float[e, DAMPING] * rate + element_float[e, PRELOAD])
    # force on B: -f u (towards A), on A: +f u
    fx = tension * ux
    fy = tension * uy
    fz = tension * uz
    _add_point_force(link_float, work, link_a, body_a, element_float[e], POINT_A, fx, fy, fz,
                     0.0, 0.0, 0.0, link_wrench_out)
    _add_point_force(link_float, work, link_b, body_b, element_float[e], POINT_B, -fx, -fy, -fz,
                     0.0, 0.0, 0.0, link_wrench_out)
    values_out[e, VALUE_FORCE] = tension
    values_out[e, VALUE_LENGTH] = length
    values_out[e, VALUE_RATE] = rate


@njit(cache=True)
def rotation_log(rot, out):
    """out (3) = theta, the rotation vector of the rotation matrix rot (9, row-major): rot =
    exp([theta]x). Accurate near 0 (series) and near pi (from the symmetric part)."""
    wx = 0.5 * (rot[7] - rot[5])
    wy = 0.5 * (rot[2] - rot[6])
    wz = 0.5 * (rot[3] - rot[1])
    sine = math.sqrt(wx * wx + wy * wy + wz * wz)
    cosine = 0.5 * (rot[0] + rot[4] + rot[8] - 1.0)
    angle = math.atan2(sine, cosine)
    if cosine > -0.5:
        scale = angle / sine if sine > _SMALL_ANGLE else 1.0 + sine * sine / 6.0
        out[0] = scale * wx
        out[1] = scale * wy
        out[2] = scale * wz
        return
    # angle > 2 pi / 3: the axis from R + R^T = 2 cos I + 2 (1 - cos) a a^T (largest diagonal)
    k = 0
    if rot[4] > rot[0] and rot[4] >= rot[8]:
        k = 1
    elif rot[8] > rot[0] and rot[8] > rot[4]:
        k = 2
    akk = math.sqrt(max((rot[4 * k] - cosine) / (1.0 - cosine), 0.0))
    ax = 0.0
    ay = 0.0
    az = 0.0
    if k == 0:
        ax = akk
        ay = 0.5 * (rot[1] + rot[3]) / ((1.0 - cosine) * akk)
        az = 0.5 * (rot[2] + rot[6]) / ((1.0 - cosine) * akk)
    elif k == 1:
        ay = akk
        ax = 0.5 * (rot[1] + rot[3]) / ((1.0 - cosine) * akk)
        az = 0.5 * (rot[5] + rot[7]) / ((1.0 - cosine) * akk)
    else:
        az = akk
        ax = 0.5 * (rot[2] + rot[6]) / ((1.0 - cosine) * akk)
        ay = 0.5 * (rot[5] + rot[7]) / ((1.0 - cosine) * akk)
    if ax * wx + ay * wy + az * wz < 0.0:  # the sign of the axis from the skew part
        ax = -ax
        ay = -ay
        az = -az
    out[0] = angle * ax
    out[1] = angle * ay
    out[2] = angle * az



@njit(cache=True, inline="always")
def subtract_elastic_couple(krx, kry, krz, theta, f):
    """f[3:6] -= J_l^-T K_r theta: the bushing's elastic couple for the rotation vector theta (3,)
    and rotational stiffnesses (krx, kry, krz), J_l^-T = 1 + [theta]/2 + beta [theta]^2
    (J_l^-1 = 1 - [theta]/2 + beta [theta]^2)."""
    kx = krx * theta[0]
    ky = kry * theta[1]
    kz = krz * theta[2]
    angle2 = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]
    angle = math.sqrt(angle2)
    if angle > _SMALL_ANGLE:
        beta = 1.0 / angle2 - (1.0 + math.cos(angle)) / (2.0 * angle * math.sin(angle))
    else:
        beta = 1.0 / 12.0 + angle2 / 720.0
    # [theta] k and [theta]^2 k = theta (theta.k) - angle^2 k
    cx = theta[1] * kz - theta[2] * ky
    cy = theta[2] * kx - theta[0] * kz
    cz = theta[0] * ky - theta[1] * kx
    dot = theta[0] * kx + theta[1] * ky + theta[2] * kz
    f[3] -= kx + 0.5 * cx + beta * (theta[0] * dot - angle2 * kx)
    f[4] -= ky + 0.5 * cy + beta * (theta[1] * dot - angle2 * ky)
    f[5] -= kz + 0.5 * cz + beta * (theta[2] * dot - angle2 * kz)


@njit(cache=True)
def _bushing(link_int, link_float, work, element_int, element_float, e, link_wrench_out,
             values_out, scratch):
    """6-dof linear spring-damper between frame A (on link A) and frame B (on link B), in frame A:
    d = R_A^T (x_B - x_A), theta = log(R_A^T R_B); V = (d^T K_t d + theta^T K_r theta) / 2.
    On B: force R_A f at x_B with f = -(K_t d + C_t d'), couple R_A t with
    t = -(J_l(theta)^-T K_r theta + C_r w_rel) (J_l: left Jacobian of SO(3), so that the couple is
    exactly -dV/d(rotation)); on A the opposite force at x_B and the opposite couple."""
    link_a = element_int[e, LINK_A]
    link_b = element_int[e, LINK_B]
    body_a = link_int[link_a, LINK_BODY]
    body_b = link_int[link_b, LINK_BODY]
    ef = element_float[e]
    xa = scratch[0:3]
    va = scratch[3:6]
    xb = scratch[6:9]
    vb = scratch[9:12]
    rot_la = scratch[12:21]
    pos_la = scratch[21:24]
    rot_lb = scratch[24:33]
    pos_lb = scratch[33:36]
    rot_a = scratch[36:45]
    rot_b = scratch[45:54]
    rel = scratch[54:63]
    theta = scratch[63:66]
    _point_world(link_float, work, link_a, body_a, ef, FRAME_A_POS, xa, va)
    _point_world(link_float, work, link_b, body_b, ef, FRAME_B_POS, xb, vb)
    _link_world(link_float, work, link_a, body_a, rot_la, pos_la)
    _link_world(link_float, work, link_b, body_b, rot_lb, pos_lb)
    for r in range(3):
        for c in range(3):
            sa = 0.0
            sb = 0.0
            for m in range(3):
                sa += rot_la[3 * r + m] * ef[FRAME_A_ROT + 3 * m + c]
                sb += rot_lb[3 * r + m] * ef[FRAME_B_ROT + 3 * m + c]
            rot_a[3 * r + c] = sa
            rot_b[3 * r + c] = sb
    for r in range(3):
        for c in range(3):
            s = 0.0
            for m in range(3):
                s += rot_a[3 * m + r] * rot_b[3 * m + c]
            rel[3 * r + c] = s
    rotation_log(rel, theta)
    # world angular velocities of the two bodies
    wax = 0.0
    way = 0.0
    waz = 0.0
    wbx = 0.0
    wby = 0.0
    wbz = 0.0
    for m in range(3):
        wax += work[body_a, WORLD_ROT + m] * work[body_a, VEL + 3 + m]
        way += work[body_a, WORLD_ROT + 3 + m] * work[body_a, VEL + 3 + m]
        waz += work[body_a, WORLD_ROT + 6 + m] * work[body_a, VEL + 3 + m]
        wbx += work[body_b, WORLD_ROT + m] * work[body_b, VEL + 3 + m]
        wby += work[body_b, WORLD_ROT + 3 + m] * work[body_b, VEL + 3 + m]
        wbz += work[body_b, WORLD_ROT + 6 + m] * work[body_b, VEL + 3 + m]
    rx = xb[0] - xa[0]
    ry = xb[1] - xa[1]
    rz = xb[2] - xa[2]
    # relative translation rate seen in frame A: x_B' - x_A' - w_A x r (world), then R_A^T
    gx = vb[0] - va[0] - (way * rz - waz * ry)
    gy = vb[1] - va[1] - (waz * rx - wax * rz)
    gz = vb[2] - va[2] - (wax * ry - way * rx)
    hx = wbx - wax
    hy = wby - way
    hz = wbz - waz
    f = scratch[66:72]      # [force; couple] on B, frame A
    for r in range(3):
        d = rot_a[r] * rx + rot_a[3 + r] * ry + rot_a[6 + r] * rz
        d_rate = rot_a[r] * gx + rot_a[3 + r] * gy + rot_a[6 + r] * gz
        w_rel = rot_a[r] * hx + rot_a[3 + r] * hy + rot_a[6 + r] * hz
        values_out[e, VALUE_DEFLECTION + r] = d
        values_out[e, VALUE_DEFLECTION + 3 + r] = theta[r]
        f[r] = -(ef[STIFFNESS6 + r] * d + ef[DAMPING6 + r] * d_rate)
        f[3 + r] = -ef[DAMPING6 + 3 + r] * w_rel
    subtract_elastic_couple(ef[STIFFNESS6 + 3], ef[STIFFNESS6 + 4], ef[STIFFNESS6 + 5], theta, f)
    # to the world: F = R_A f, T = R_A t
    fx = rot_a[0] * f[0] + rot_a[1] * f[1] + rot_a[2] * f[2]
    fy = rot_a[3] * f[0] + rot_a[4] * f[1] + rot_a[5] * f[2]
    fz = rot_a[6] * f[0] + rot_a[7] * f[1] + rot_a[8] * f[2]
    tx = rot_a[0] * f[3] + rot_a[1] * f[4] + rot_a[2] * f[5]
    ty = rot_a[3] * f[3] + rot_a[4] * f[4] + rot_a[5] * f[5]
    tz = rot_a[6] * f[3] + rot_a[7] * f[4] + rot_a[8] * f[5]
    _add_point_force(link_float, work, link_b, body_b, ef, FRAME_B_POS, fx, fy, fz, tx, ty, tz,
                     link_wrench_out)
    # on A: -F at x_B = -F at x_A plus the couple -(r x F); point x_A is frame A's origin
    _add_point_force(link_float, work, link_a, body_a, ef, FRAME_A_POS, -fx, -fy, -fz,
                     -tx - (ry * fz - rz * fy), -ty - (rz * fx - rx * fz),
                     -tz - (rx * fy - ry * fx), link_wrench_out)
    for r in range(6):
        values_out[e, VALUE_WRENCH + r] = f[r]
    values_out[e, VALUE_FORCE] = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
    values_out[e, VALUE_LENGTH] = math.sqrt(values_out[e, VALUE_DEFLECTION] ** 2
                                            + values_out[e, VALUE_DEFLECTION + 1] ** 2
                                            + values_out[e, VALUE_DEFLECTION + 2] ** 2)
    values_out[e, VALUE_RATE] = 0.0


# explicit signature: a call with other types raises TypeError instead of compiling, and the
# dispatcher skips typing 13 arguments (~10 us measured without it)
FORCE_ELEMENT_LOADS = types.void(signatures.MODEL_INT, signatures.MODEL_FLOAT, signatures.MODEL_INT,
                                 signatures.MODEL_FLOAT, signatures.WORK, signatures.MODEL_INT,
                                 signatures.MODEL_FLOAT, signatures.VECTOR, signatures.VECTOR,
                                 signatures.MATRIX, signatures.VECTOR, signatures.MATRIX,
                                 signatures.VECTOR)


@njit(FORCE_ELEMENT_LOADS, cache=True)
def force_element_loads(body_int, body_float, link_int, link_float, work, element_int,
                        element_float, q, v, link_wrench_out, tau_out, values_out, scratch):
    """Loads of every force element at (q, v).

    Model: body_int, body_float, link_int, link_float, element_int, element_float.
    Data in: q (nq,), v (nv,) (validated by the caller). Scratch: scratch (>= 72,), work.
    Data out (overwritten): link_wrench_out (n_links, 6) wrench on each link in its frame about
    its origin; tau_out (nv,) joint-spring forces; values_out (n, VALUE_WIDTH).
    """
    forward_kinematics(body_int, body_float, work, q, v)
    for link in range(link_wrench_out.shape[0]):
        for r in range(6):
            link_wrench_out[link, r] = 0.0
    for k in range(tau_out.shape[0]):
        tau_out[k] = 0.0
    for e in range(element_int.shape[0]):
        kind = element_int[e, ELEMENT_TYPE]
        if kind == SPRING_DAMPER:
            _spring_damper(link_int, link_float, work, element_int, element_float, e,
                           link_wrench_out, values_out, scratch)
        elif kind == JOINT_SPRING:
            # tau = -k (q - q0) - c q'    (V = k (q - q0)^2 / 2, D = c q'^2 / 2)
            iq = element_int[e, JOINT_IQ]
            iv = element_int[e, JOINT_IV]
            deflection = q[iq] - element_float[e, REST]
            force = -element_float[e, STIFFNESS] * deflection - element_float[e, DAMPING] * v[iv]
            tau_out[iv] += force
            values_out[e, VALUE_FORCE] = force
            values_out[e, VALUE_LENGTH] = deflection
            values_out[e, VALUE_RATE] = v[iv]
        else:
            _bushing(link_int, link_float, work, element_int, element_float, e, link_wrench_out,
                     values_out, scratch)
