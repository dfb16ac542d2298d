"""One cut (secondary) joint: residual, Jacobians and acceleration bias (docs/theory.md §4).

A cut joint s between bodies a (parent side) and b (child side) imposes b_s constraints
g_s(pose_a, pose_b) = 0. For body-frame spatial velocities v = [v; w] and spatial accelerations
a = dv/dt (the kernels' VEL and ACC), this module computes, at ANY pair of poses (not only on
the constraint manifold),

    d/dt   g_s = G_a v_a + G_b v_b                  (scleronomic: gamma_bar_s = 0)
    d2/dt2 g_s = G_a a_a + G_b a_b + gamma2_s       (gamma2_s: velocity-product term)

exactly. Body 0 (the universe) has the identity pose and zero velocity. Every g_s is invariant
under a common translation of both bodies, so G_a [R_a^T c; 0] + G_b [R_b^T c; 0] = 0 for any
vector c: the kernels' gravity offset (the universe accelerating by -g, which adds the common
translational acceleration -g to every body) cancels, provided it is in both accelerations
(for a cut to the universe: use the universe row's ACC, [-g; 0], for body 0).

Frames. A body's world pose is (R, p), x_world = R x_body + p, with dR/dt = R [w]x and
dp/dt = R v. The cut frames A (parent_origin, on body a) and B (child_origin, on body b) are
used here in their ALIGNED form A' = A Q, B' = B Q, where Q is the constant rotation whose z
column is the joint `axis` (cut_row below; Q = 1 when axis = z). x, y, z_A and x, y, z_B are the
world axes of A' and B', d = p_B - p_A (world), the origins being those of A and B.

Residuals (all vanish when A' and B' coincide, or differ only by the joint's own motion):

    type         b_s  g_s
    revolute      5   d (3), z_A.x_B, z_A.y_B
    prismatic     5   d.x_A, d.y_A, r (3)
    cylindrical   4   d.x_A, d.y_A, z_A.x_B, z_A.y_B
    universal     4   d (3), a1.a2 - c      a1 = z_A (axis, fixed in A), a2 = axis2 fixed in B,
                                            c = axis . axis2 (their angle is kept)
    spherical     3   d (3)
    planar        3   d.z_A, z_A.x_B, z_A.y_B                 (z = the plane's normal)
    fixed         6   d (3), r (3)
    distance      1   |d| - length
    helical       5   the 4 cylindrical rows, h (x_B.y_A cos s - x_B.x_A sin s)
                                            h = pitch, s = d.z_A / h; = h sin(theta - s) when
                                            z_B = z_A, theta = the rotation of x_B about z_A

d is in world coordinates, so a cut's multipliers lambda_s on the rows d are a world force on
body b at p_B (and its opposite on a). The orientation lock r is the axial vector of the skew
part of the relative rotation A'^T B' = Rot(n, theta), in A' coordinates:

    r = 1/2 (z_A.y_B - y_A.z_B,  x_A.z_B - z_A.x_B,  y_A.x_B - x_A.y_B) = sin(theta) n,

the relative rotation vector to first order; it vanishes only at theta = 0 and theta = pi (a
far-away second branch: assembly starts near A' = B'). The tilt rows z_A.x_B, z_A.y_B vanish
for z_B = +-z_A. The Jacobian has full row rank b_s at coincidence (distance: length > 0).

Derivatives, with omega = R w (world angular velocity), rho = p_P - p (a point P of the body
relative to the body origin, world) and nu_P = R v + omega x rho (world velocity of P):

    e . d/dt p_P = (R^T e) . v + (R^T (rho x e)) . w           (row of a point P)
    d/dt u = omega x u              for a direction u fixed in the body: (u x e) terms below
    d2/dt2 p_P = R dv/dt + (R dw/dt) x rho + omega x nu_P      -> bias omega x nu_P
    d2/dt2 u = (R dw/dt) x u + omega x (omega x u)             -> bias omega x (omega x u)

so for the residual types (u fixed in A, w fixed in B, ddot = nu_B - nu_A,
bias_d = omega_b x nu_B - omega_a x nu_A):

    d.e (e constant):  rows of the points,                  bias e . bias_d
    d.u:        + (R_a^T (u x d)) . w_a,                    bias u.bias_d + 2 ddot.(omega_a x u)
                                                                 + d.(omega_a x (omega_a x u))
    u.w:        (R_a^T (u x w)) . w_a - (R_b^T (u x w)) . w_b,
                bias (omega_a x (omega_a x u)).w + 2 (omega_a x u).(omega_b x w)
                     + u.(omega_b x (omega_b x w))
    |d| - L:    rows of the points with e = d/|d|,
                bias e.bias_d + (|ddot|^2 - (e.ddot)^2) / |d|   (|d| = 0: rows and bias zero)

Helical pitch row: g = F(alpha, beta, delta) = h (alpha cos s - beta sin s) (= h sin(theta - s)),
alpha = y_A.x_B, beta = x_A.x_B, delta = d.z_A, s = delta / h; near assembly g = h theta - d.z_A
(translation = pitch * angle) and it stays smooth over any number of turns. Its row is
F_alpha (alpha row) + F_beta (beta row) + F_delta (delta row), and its bias adds the second-order
terms of the chain rule to the rows' own: 2 F_alpha,delta alpha' delta' + 2 F_beta,delta beta'
delta' + F_delta,delta delta'^2 with F_alpha = h cos s, F_beta = -h sin s,
F_delta = -(alpha sin s + beta cos s), F_alpha,delta = -sin s, F_beta,delta = -cos s,
F_delta,delta = (beta sin s - alpha cos s) / h (F_alpha,alpha = F_beta,beta = F_alpha,beta = 0).

Closure wrench: with the multipliers of docs/theory.md §5 (M a - G^T lambda = f), the cut exerts
G_b^T lambda_s on body b (a wrench in body b's frame about its origin) and G_a^T lambda_s on a. `wrench_in_cut_frame` moves it to
the child-side cut frame B (child_origin, not the aligned B'), as docs/design.md reports it.

Kernels never raise: an unknown type code writes nothing and returns 0.
"""
import math

import numpy as np
from numba import njit

# ---- cut types (codes) and their number of constraints b_s --------------------------------------
CUT_REVOLUTE = 1
CUT_PRISMATIC = 2
CUT_CYLINDRICAL = 3
CUT_UNIVERSAL = 4
CUT_SPHERICAL = 5
CUT_PLANAR = 6
CUT_FIXED = 7
CUT_DISTANCE = 8
CUT_HELICAL = 9

CUT_TYPE_CODES = {
    "revolute": CUT_REVOLUTE,
    "prismatic": CUT_PRISMATIC,
    "cylindrical": CUT_CYLINDRICAL,
    "universal": CUT_UNIVERSAL,
    "spherical": CUT_SPHERICAL,
    "planar": CUT_PLANAR,
    "fixed": CUT_FIXED,
    "distance": CUT_DISTANCE,
    "helical": CUT_HELICAL,
}
CUT_TYPE_NAMES = {code: name for name, code in CUT_TYPE_CODES.items()}
CUT_ROWS = {CUT_REVOLUTE: 5, CUT_PRISMATIC: 5, CUT_CYLINDRICAL: 4, CUT_UNIVERSAL: 4,
            CUT_SPHERICAL: 3, CUT_PLANAR: 3, CUT_FIXED: 6, CUT_DISTANCE: 1, CUT_HELICAL: 5}
MAX_CUT_ROWS = 6

# ---- cut_row layout (float64, CUT_ROW_WIDTH): constants of one cut joint ------------------------
CUT_A_ROT = 0          # 9: aligned frame A' = A Q in body a (row-major; columns x_A, y_A, z_A)
CUT_A_POS = 9          # 3: origin of frame A in body a
CUT_B_ROT = 12         # 9: aligned frame B' = B Q in body b
CUT_B_POS = 21         # 3: origin of frame B in body b
CUT_CHILD_ROT = 24     # 9: frame B itself (child_origin, unaligned) in body b: the wrench frame
CUT_ALIGN = 33         # 9: Q, the aligned frame in the joint frame (z column = axis)
CUT_AXIS2 = 42         # 3: universal: second axis in the aligned frame (Q^T axis2), fixed in B
CUT_LENGTH = 45        # 1: distance: length (> 0)
CUT_REFERENCE = 46     # 1: universal: c = axis . axis2
CUT_PITCH = 47         # 1: helical: pitch h (m/rad, != 0)
CUT_ROW_WIDTH = 48


def cut_type_code(name):
    """Code of a cut type name ('revolute', ...)."""
    return CUT_TYPE_CODES[name]


def aligned_frame(axis):
    """Q (3, 3): a rotation with Q[:, 2] = axis (unit). Q = 1 for axis = z; otherwise
    x = the unit projection of x (or of y when axis is near x) on the plane normal to axis,
    y = axis x x (the in-plane axes of model.py's planar joint)."""
    axis = np.asarray(axis, dtype=float)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - helper.dot(axis) * axis
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def cut_row(spec, placement_a=None, placement_b=None):
    """The constant data of one cut (CUT_ROW_WIDTH,) float64.

    spec: a closures.ClosureSpec. placement_a = (R, p): pose of the parent link's frame in the
    frame of the body it belongs to (model.link_float LINK_ROT/LINK_POS; identity when the link
    is the body's root link, or for None); placement_b likewise for the child link.
    """
    row = np.zeros(CUT_ROW_WIDTH)
    q = aligned_frame(spec.axis)
    for side, placement, origin, rot_col, pos_col in (
            ("a", placement_a, spec.parent_origin, CUT_A_ROT, CUT_A_POS),
            ("b", placement_b, spec.child_origin, CUT_B_ROT, CUT_B_POS)):
        link_rot, link_pos = ((np.eye(3), np.zeros(3)) if placement is None else
                              (np.asarray(placement[0], float).reshape(3, 3),
                               np.asarray(placement[1], float).reshape(3)))
        origin = np.asarray(origin, dtype=float)
        frame_rot = link_rot @ origin[:3, :3]
        row[rot_col:rot_col + 9] = (frame_rot @ q).ravel()
        row[pos_col:pos_col + 3] = link_pos + link_rot @ origin[:3, 3]
        if side == "b":
            row[CUT_CHILD_ROT:CUT_CHILD_ROT + 9] = frame_rot.ravel()
    row[CUT_ALIGN:CUT_ALIGN + 9] = q.ravel()
    if spec.axis2 is not None:
        row[CUT_AXIS2:CUT_AXIS2 + 3] = q.T @ np.asarray(spec.axis2, dtype=float)
        row[CUT_REFERENCE] = float(np.dot(spec.axis, spec.axis2))
    if spec.length is not None:
        row[CUT_LENGTH] = spec.length
    if getattr(spec, "pitch", None) is not None:
        row[CUT_PITCH] = spec.pitch
    return row


# ---- small 3-vector helpers (tuples: no allocation) --------------------------------------------

@njit(cache=True, inline="always")
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always")
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True, inline="always")
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True, inline="always")
def _rot(r, x0, x1, x2):
    """R x for a row-major 3x3 rotation r (9-tuple)."""
    return (r[0] * x0 + r[1] * x1 + r[2] * x2,
            r[3] * x0 + r[4] * x1 + r[5] * x2,
            r[6] * x0 + r[7] * x1 + r[8] * x2)


@njit(cache=True, inline="always")
def _rot_t(r, x):
    """R^T x."""
    return (r[0] * x[0] + r[3] * x[1] + r[6] * x[2],
            r[1] * x[0] + r[4] * x[1] + r[7] * x[2],
            r[2] * x[0] + r[5] * x[1] + r[8] * x[2])


@njit(cache=True, inline="always")
def _frame_axis(rot_body, frame, k):
    """World direction of column k of a frame (9-tuple, in the body) on a body of rotation
    rot_body."""
    return _rot(rot_body, frame[k], frame[3 + k], frame[6 + k])


@njit(cache=True, inline="always")
def _read9(x, i, c):
    """x[i, c:c+9] as a tuple (no view)."""
    return (x[i, c], x[i, c + 1], x[i, c + 2], x[i, c + 3], x[i, c + 4], x[i, c + 5],
            x[i, c + 6], x[i, c + 7], x[i, c + 8])


@njit(cache=True, inline="always")
def _read3(x, i, c):
    """x[i, c:c+3] as a tuple (no view)."""
    return (x[i, c], x[i, c + 1], x[i, c + 2])


# ---- rows of one cut, written as (rows array, row r, column offsets): no views ------------------
# `out` holds the cut's constraint rows; res / bias are the columns of g_s and gamma2_s, ja / jb
# the first of the 6 columns of G_a and G_b (the closed-loop kernels pass loop_float and the
# LOOP_* columns, so the rows land in place). Out of line (whole arrays, no views, so a call
# costs no reference counts): inlining them into the nine cut types took numba ~20 s of
# compilation (measured), for a few ns per call saved.

@njit(cache=True)
def _add_point_row(out, r, ja, jb, rot_a, rot_b, rho_a, rho_b, e, scale):
    """Row r += scale * d/dt (e . d) through the points: e . (nu_B - nu_A), e held constant."""
    lin = _rot_t(rot_b, e)
    ang = _rot_t(rot_b, _cross(rho_b, e))
    for k in range(3):
        out[r, jb + k] += scale * lin[k]
        out[r, jb + 3 + k] += scale * ang[k]
    lin = _rot_t(rot_a, e)
    ang = _rot_t(rot_a, _cross(rho_a, e))
    for k in range(3):
        out[r, ja + k] -= scale * lin[k]
        out[r, ja + 3 + k] -= scale * ang[k]


@njit(cache=True)
def _position_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, bias_d):
    """Rows r0..r0+2: the three world components of d."""
    for k in range(3):
        e = (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0)
        _add_point_row(out, r0 + k, ja, jb, rot_a, rot_b, rho_a, rho_b, e, 1.0)
        out[r0 + k, res] = d[k]
        out[r0 + k, bias] = bias_d[k]


@njit(cache=True)
def _offset_row(out, r, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                omega_a, u):
    """Row r: g = d . u with u fixed in A."""
    _add_point_row(out, r, ja, jb, rot_a, rot_b, rho_a, rho_b, u, 1.0)
    ang = _rot_t(rot_a, _cross(u, d))          # angular columns of a += (R_a^T (u x d))^T
    for k in range(3):
        out[r, ja + 3 + k] += ang[k]
    u_dot = _cross(omega_a, u)
    out[r, res] = _dot(d, u)
    out[r, bias] = _dot(u, bias_d) + 2.0 * _dot(d_dot, u_dot) + _dot(d, _cross(omega_a, u_dot))


@njit(cache=True)
def _angle_row(out, r, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, u, w, scale):
    """Row r += scale * (u . w) with u fixed in A, w fixed in B (rows start at zero)."""
    uw = _cross(u, w)
    ang_a = _rot_t(rot_a, uw)
    ang_b = _rot_t(rot_b, uw)
    for k in range(3):
        out[r, ja + 3 + k] += scale * ang_a[k]
        out[r, jb + 3 + k] -= scale * ang_b[k]
    u_dot = _cross(omega_a, u)
    w_dot = _cross(omega_b, w)
    out[r, res] += scale * _dot(u, w)
    out[r, bias] += scale * (_dot(_cross(omega_a, u_dot), w) + 2.0 * _dot(u_dot, w_dot)
                             + _dot(u, _cross(omega_b, w_dot)))


@njit(cache=True)
def _lock_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b,
               x_a, y_a, z_a, x_b, y_b, z_b):
    """Rows r0..r0+2: r = 1/2 (z_A.y_B - y_A.z_B, x_A.z_B - z_A.x_B, y_A.x_B - x_A.y_B)."""
    _angle_row(out, r0, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, y_b, 0.5)
    _angle_row(out, r0, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, y_a, z_b, -0.5)
    _angle_row(out, r0 + 1, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, x_a, z_b, 0.5)
    _angle_row(out, r0 + 1, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, x_b, -0.5)
    _angle_row(out, r0 + 2, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, y_a, x_b, 0.5)
    _angle_row(out, r0 + 2, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, x_a, y_b, -0.5)


@njit(cache=True)
def _pitch_row(out, r, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
               omega_a, omega_b, x_a, y_a, z_a, x_b, pitch):
    """Row r (zero on entry): g = h sin(theta - s) of a helical cut (module docstring)."""
    alpha = _dot(y_a, x_b)
    beta = _dot(x_a, x_b)
    delta = _dot(d, z_a)
    s = delta / pitch
    sin_s = math.sin(s)
    cos_s = math.cos(s)
    f_alpha = pitch * cos_s
    f_beta = -pitch * sin_s
    f_delta = -(alpha * sin_s + beta * cos_s)
    # rates of alpha, beta, delta (u fixed in A, w fixed in B: (omega_a x u).w + u.(omega_b x w))
    x_b_dot = _cross(omega_b, x_b)
    alpha_dot = _dot(_cross(omega_a, y_a), x_b) + _dot(y_a, x_b_dot)
    beta_dot = _dot(_cross(omega_a, x_a), x_b) + _dot(x_a, x_b_dot)
    delta_dot = _dot(d_dot, z_a) + _dot(d, _cross(omega_a, z_a))
    # the delta row scaled by F_delta (its helper sets residual and bias)
    _offset_row(out, r, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                omega_a, z_a)
    for c in range(6):
        out[r, ja + c] *= f_delta
        out[r, jb + c] *= f_delta
    out[r, bias] *= f_delta
    _angle_row(out, r, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, y_a, x_b, f_alpha)
    _angle_row(out, r, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, x_a, x_b, f_beta)
    out[r, res] = pitch * (alpha * cos_s - beta * sin_s)
    out[r, bias] += (-2.0 * sin_s * alpha_dot * delta_dot - 2.0 * cos_s * beta_dot * delta_dot
                     + (beta * sin_s - alpha * cos_s) / pitch * delta_dot * delta_dot)


@njit(cache=True, inline="always")
def constraint_count(cut_type):
    """b_s of a cut type code (0 for an unknown code)."""
    if cut_type == CUT_FIXED:
        return 6
    if cut_type == CUT_REVOLUTE or cut_type == CUT_PRISMATIC or cut_type == CUT_HELICAL:
        return 5
    if cut_type == CUT_CYLINDRICAL or cut_type == CUT_UNIVERSAL:
        return 4
    if cut_type == CUT_SPHERICAL or cut_type == CUT_PLANAR:
        return 3
    if cut_type == CUT_DISTANCE:
        return 1
    return 0


@njit(cache=True)
def cut_kinematics(cut_type, cut_float, s, poses, ia, ib, rot_col, pos_col, vel_col,
                   out, r0, res, bias, ja, jb):
    """g_s, G_a, G_b and gamma2_s of cut s (see the module docstring) into rows r0.. of `out`;
    returns b_s. Flat arrays plus offsets (no views): one call per cut, the row helpers inlined.

    # Model:    cut_type (int code), cut_float[s] (CUT_ROW_WIDTH columns)
    # Data in:  poses[ia] and poses[ib]: world rotation of body a / b (9, row-major) at rot_col,
    #           origin (3) at pos_col, body-frame twist [v; w] (6) at vel_col (the universe:
    #           identity, zeros; the closed-loop kernels pass work, WORLD_ROT, WORLD_POS, VEL)
    # Data out: out[r0:r0 + b_s] columns res (g_s), bias (gamma2_s), ja:ja+6 (G_a), jb:jb+6
    #           (G_b); other rows are not touched, nothing for an unknown code
    """
    n_rows = constraint_count(cut_type)
    for r in range(r0, r0 + n_rows):
        out[r, res] = 0.0
        out[r, bias] = 0.0
        for c in range(6):
            out[r, ja + c] = 0.0
            out[r, jb + c] = 0.0
    if n_rows == 0:
        return 0
    rot_a = _read9(poses, ia, rot_col)
    rot_b = _read9(poses, ib, rot_col)
    frame_a = _read9(cut_float, s, CUT_A_ROT)
    frame_b = _read9(cut_float, s, CUT_B_ROT)

    # ---- cut frame origins and their world velocities -------------------------------------------
    # rho = R p_frame, p_A = p_a + rho_A;  omega = R w;  nu = R v + omega x rho
    rho_a = _rot(rot_a, cut_float[s, CUT_A_POS], cut_float[s, CUT_A_POS + 1],
                 cut_float[s, CUT_A_POS + 2])
    rho_b = _rot(rot_b, cut_float[s, CUT_B_POS], cut_float[s, CUT_B_POS + 1],
                 cut_float[s, CUT_B_POS + 2])
    omega_a = _rot(rot_a, poses[ia, vel_col + 3], poses[ia, vel_col + 4], poses[ia, vel_col + 5])
    omega_b = _rot(rot_b, poses[ib, vel_col + 3], poses[ib, vel_col + 4], poses[ib, vel_col + 5])
    nu_a = _add(_rot(rot_a, poses[ia, vel_col], poses[ia, vel_col + 1], poses[ia, vel_col + 2]),
                _cross(omega_a, rho_a))
    nu_b = _add(_rot(rot_b, poses[ib, vel_col], poses[ib, vel_col + 1], poses[ib, vel_col + 2]),
                _cross(omega_b, rho_b))
    # d = p_B - p_A, its rate, and the velocity-product part of its second derivative
    pos_a = _read3(poses, ia, pos_col)
    pos_b = _read3(poses, ib, pos_col)
    d = (pos_b[0] + rho_b[0] - pos_a[0] - rho_a[0],
         pos_b[1] + rho_b[1] - pos_a[1] - rho_a[1],
         pos_b[2] + rho_b[2] - pos_a[2] - rho_a[2])
    d_dot = _sub(nu_b, nu_a)
    bias_d = _sub(_cross(omega_b, nu_b), _cross(omega_a, nu_a))

    # ---- world axes of the aligned cut frames ---------------------------------------------------
    x_a = _frame_axis(rot_a, frame_a, 0)
    y_a = _frame_axis(rot_a, frame_a, 1)
    z_a = _frame_axis(rot_a, frame_a, 2)
    x_b = _frame_axis(rot_b, frame_b, 0)
    y_b = _frame_axis(rot_b, frame_b, 1)
    z_b = _frame_axis(rot_b, frame_b, 2)

    if cut_type == CUT_SPHERICAL:
        _position_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, bias_d)
    elif cut_type == CUT_REVOLUTE:
        _position_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, bias_d)
        _angle_row(out, r0 + 3, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, x_b, 1.0)
        _angle_row(out, r0 + 4, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, y_b, 1.0)
    elif cut_type == CUT_FIXED:
        _position_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, bias_d)
        _lock_rows(out, r0 + 3, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b,
                   x_a, y_a, z_a, x_b, y_b, z_b)
    elif cut_type == CUT_PRISMATIC:
        _offset_row(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                    omega_a, x_a)
        _offset_row(out, r0 + 1, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                    omega_a, y_a)
        _lock_rows(out, r0 + 2, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b,
                   x_a, y_a, z_a, x_b, y_b, z_b)
    elif cut_type == CUT_CYLINDRICAL or cut_type == CUT_HELICAL:
        _offset_row(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                    omega_a, x_a)
        _offset_row(out, r0 + 1, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                    omega_a, y_a)
        _angle_row(out, r0 + 2, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, x_b, 1.0)
        _angle_row(out, r0 + 3, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, y_b, 1.0)
        if cut_type == CUT_HELICAL:
            _pitch_row(out, r0 + 4, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot,
                       bias_d, omega_a, omega_b, x_a, y_a, z_a, x_b, cut_float[s, CUT_PITCH])
    elif cut_type == CUT_PLANAR:
        _offset_row(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, d_dot, bias_d,
                    omega_a, z_a)
        _angle_row(out, r0 + 1, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, x_b, 1.0)
        _angle_row(out, r0 + 2, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, y_b, 1.0)
    elif cut_type == CUT_UNIVERSAL:
        _position_rows(out, r0, res, bias, ja, jb, rot_a, rot_b, rho_a, rho_b, d, bias_d)
        # a2 = frame_b axis2 (aligned coordinates), fixed in B
        a2 = _rot(frame_b, cut_float[s, CUT_AXIS2], cut_float[s, CUT_AXIS2 + 1],
                  cut_float[s, CUT_AXIS2 + 2])
        a2 = _rot(rot_b, a2[0], a2[1], a2[2])
        _angle_row(out, r0 + 3, res, bias, ja, jb, rot_a, rot_b, omega_a, omega_b, z_a, a2, 1.0)
        out[r0 + 3, res] -= cut_float[s, CUT_REFERENCE]
    else:  # CUT_DISTANCE: |d| - L
        norm = math.sqrt(_dot(d, d))
        out[r0, res] = norm - cut_float[s, CUT_LENGTH]
        if norm > 0.0:
            e = (d[0] / norm, d[1] / norm, d[2] / norm)
            _add_point_row(out, r0, ja, jb, rot_a, rot_b, rho_a, rho_b, e, 1.0)
            along = _dot(e, d_dot)
            out[r0, bias] = _dot(e, bias_d) + (_dot(d_dot, d_dot) - along * along) / norm
    return n_rows


# columns of the one-cut scratch of closure_kinematics
_ROW_RES = 0
_ROW_BIAS = 1
_ROW_JAC_A = 2
_ROW_JAC_B = 8
_ROW_WIDTH = 14


@njit(cache=True)
def closure_kinematics(cut_type, cut_row, rot_a, pos_a, vel_a, rot_b, pos_b, vel_b,
                       residual_out, jac_a_out, jac_b_out, bias_out):
    """g_s, G_a, G_b and gamma2_s of one cut joint (see the module docstring); returns b_s.
    The vector form of `cut_kinematics` (it copies its inputs and rows through small scratch
    arrays: for the flexible loops and the tests, not for the closed-loop hot path).

    # Model:    cut_type (int code), cut_row (CUT_ROW_WIDTH)
    # Data in:  rot_a (9, world rotation of body a, row-major), pos_a (3), vel_a (6, body-frame
    #           [v; w]); the same for body b (universe: identity, zeros)
    # Data out: residual_out (>= b_s), jac_a_out, jac_b_out (>= b_s, 6), bias_out (>= b_s);
    #           rows b_s.. are not touched
    """
    constants = np.empty((1, CUT_ROW_WIDTH))
    for c in range(CUT_ROW_WIDTH):
        constants[0, c] = cut_row[c]
    poses = np.empty((2, 18))
    for k in range(9):
        poses[0, k] = rot_a[k]
        poses[1, k] = rot_b[k]
    for k in range(3):
        poses[0, 9 + k] = pos_a[k]
        poses[1, 9 + k] = pos_b[k]
    for k in range(6):
        poses[0, 12 + k] = vel_a[k]
        poses[1, 12 + k] = vel_b[k]
    rows = np.empty((MAX_CUT_ROWS, _ROW_WIDTH))
    n_rows = cut_kinematics(cut_type, constants, 0, poses, 0, 1, 0, 9, 12, rows, 0, _ROW_RES,
                            _ROW_BIAS, _ROW_JAC_A, _ROW_JAC_B)
    for r in range(n_rows):
        residual_out[r] = rows[r, _ROW_RES]
        bias_out[r] = rows[r, _ROW_BIAS]
        for c in range(6):
            jac_a_out[r, c] = rows[r, _ROW_JAC_A + c]
            jac_b_out[r, c] = rows[r, _ROW_JAC_B + c]
    return n_rows


@njit(cache=True)
def wrench_in_cut_frame(cut_row, body_wrench, out):
    """out (6) = body_wrench (6, [force; torque] in body b's frame about its origin) expressed
    in the child-side cut frame B (child_origin: its axes, about its origin):

        n_B = R^T n,   t_B = R^T (t - p x n),   (R, p) = frame B in body b.

    The power n.v + t.w is unchanged for the same rigid motion.
    """
    r = cut_row[CUT_CHILD_ROT:CUT_CHILD_ROT + 9]
    px = cut_row[CUT_B_POS]
    py = cut_row[CUT_B_POS + 1]
    pz = cut_row[CUT_B_POS + 2]
    n = (body_wrench[0], body_wrench[1], body_wrench[2])
    t = (body_wrench[3] - (py * n[2] - pz * n[1]),
         body_wrench[4] - (pz * n[0] - px * n[2]),
         body_wrench[5] - (px * n[1] - py * n[0]))
    n_b = _rot_t(r, n)
    t_b = _rot_t(r, t)
    for k in range(3):
        out[k] = n_b[k]
        out[3 + k] = t_b[k]
