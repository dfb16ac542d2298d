"""Force elements on robots with flexible links (docs/flexible.md, "Force elements").

The elements' laws are those of kernels/force_elements.py (spring_damper, joint_spring, bushing;
potential V and Rayleigh function D, seed [004]). What differs is where an element's end sits: on
a flexible body it is the DEFORMED point, with the same kinematics the child joints of a flexible
link use (kernels/flexible_dynamics.py): a point c of the body's reference frame (the joint frame,
where the beam is clamped) moves to u = c + Phi_t q_f, a frame there turns by the Cayley rotation
R_el(g) of g = Phi_r q_f (Phi_t, Phi_r (3, n_f): the mode shapes at c). In the reference frame:

    velocity  u'  = v + w x u + Phi_t qd_f,      angular velocity  w + G(g) Phi_r qd_f,
    G(g) = (1 + [g]/2) / (1 + g.g/4)              (the Cayley map's angular-velocity matrix)

so the virtual power of a force F (body components) at u and a couple T is
F.v + (u x F + T).w + (Phi_t^T F + (G Phi_r)^T T).qd_f: the end loads its body with the wrench
[F; u x F + T] at the reference origin, and the elastic coordinates with the generalized force
Q_f = Phi_t^T F + (G Phi_r)^T T (seed 001: Q_f = (T S)^T F, the elastic Jacobian of the point).
On a rigid body Phi = 0 and this is the rigid element.

Model (robot/flexible_force_loads.py):
- element_int, element_float: as kernels/force_elements.py (types, joint indices, laws).
- end_int (2 n, END_INT_WIDTH): per element its end A (row 2e) and end B (row 2e + 1): body, and
  on a flexible body the number of modes, the first elastic q and v indices and the offset of its
  shapes in end_data (-1: rigid).
- end_float (2 n, END_FLOAT_WIDTH): the end's point c (spring point / bushing frame origin) and
  frame rotation (bushing frame; identity for a spring) in the body's reference frame.
- end_data: Phi_t (3 x n_f) then Phi_r (3 x n_f), row-major, per flexible end.
Data: work, fwork (flexible kinematics, with velocities); end_state (2 n, END_STATE_WIDTH).
Out: body_wrench_out (nb + 1, 6) [F; M] per body in its reference frame about its origin;
end_wrench_out (2 n, 6) the same per end; tau_out (nv,) joint springs and elastic rows;
values_out (n, VALUE_WIDTH) as force_elements.py.
"""
import math

from numba import njit, types

from ..model.flexible.layout import VEL, WORLD_POS, WORLD_ROT
from .flexible_dynamics import body_kinematics, set_base
from .force_elements import (DAMPING, DAMPING6, ELEMENT_TYPE, JOINT_IQ, JOINT_IV, JOINT_SPRING,
                             PRELOAD, REST, SPRING_DAMPER, STIFFNESS, STIFFNESS6,
                             subtract_elastic_couple, VALUE_DEFLECTION, VALUE_FORCE, VALUE_LENGTH,
                             VALUE_RATE, VALUE_WRENCH, rotation_log)

# ---- end_int columns
END_BODY = 0
END_NF = 1             # modes of the end's flexible body (0: rigid end)
END_IQF = 2            # first elastic coordinate of that body in q
END_IVF = 3            # ... in v
END_SHAPE = 4          # offset of Phi_t, Phi_r in end_data (-1: rigid)
END_INT_WIDTH = 5
# ---- end_float columns
END_POINT = 0          # 3: c, reference frame of the body
END_ROT = 3            # 9: frame rotation in the reference frame (row-major)
END_FLOAT_WIDTH = 12
# ---- end_state columns (Data)
ES_X = 0               # 3: world position of the deformed point
ES_XD = 3              # 3: its world velocity
ES_R = 6               # 9: world rotation of the deformed frame (row-major)
ES_W = 15              # 3: its world angular velocity
ES_U = 18              # 3: the deformed point u in the body's reference frame
ES_G = 21              # 3: g = Phi_r q_f
ES_SCALE = 24          # 1 / (1 + g.g / 4)
END_STATE_WIDTH = 25


@njit(cache=True)
def compute_end_state(work, end_int, end_float, end_data, q, v, e, end_state):
    """World pose and velocity of end e's deformed point and frame (module docstring)."""
    body = end_int[e, END_BODY]
    n = end_int[e, END_NF]
    sh = end_int[e, END_SHAPE]
    u0 = end_float[e, END_POINT]
    u1 = end_float[e, END_POINT + 1]
    u2 = end_float[e, END_POINT + 2]
    g0 = g1 = g2 = 0.0
    if sh >= 0:
        iqf = end_int[e, END_IQF]
        for k in range(n):
            qk = q[iqf + k]
            u0 += end_data[sh + k] * qk
            u1 += end_data[sh + n + k] * qk
            u2 += end_data[sh + 2 * n + k] * qk
            g0 += end_data[sh + 3 * n + k] * qk
            g1 += end_data[sh + 4 * n + k] * qk
            g2 += end_data[sh + 5 * n + k] * qk
    scale = 1.0 / (1.0 + 0.25 * (g0 * g0 + g1 * g1 + g2 * g2))
    end_state[e, ES_U] = u0
    end_state[e, ES_U + 1] = u1
    end_state[e, ES_U + 2] = u2
    end_state[e, ES_G] = g0
    end_state[e, ES_G + 1] = g1
    end_state[e, ES_G + 2] = g2
    end_state[e, ES_SCALE] = scale
    # Cayley rotation R_el = 1 + s ([g] + [g]^2 / 2)  (as the child-joint nodes)
    e00 = 1.0 + scale * 0.5 * (-g1 * g1 - g2 * g2)
    e11 = 1.0 + scale * 0.5 * (-g0 * g0 - g2 * g2)
    e22 = 1.0 + scale * 0.5 * (-g0 * g0 - g1 * g1)
    e01 = scale * (-g2 + 0.5 * g0 * g1)
    e10 = scale * (g2 + 0.5 * g0 * g1)
    e02 = scale * (g1 + 0.5 * g0 * g2)
    e20 = scale * (-g1 + 0.5 * g0 * g2)
    e12 = scale * (-g0 + 0.5 * g1 * g2)
    e21 = scale * (g0 + 0.5 * g1 * g2)
    for r in range(3):
        b0 = work[body, WORLD_ROT + 3 * r]
        b1 = work[body, WORLD_ROT + 3 * r + 1]
        b2 = work[body, WORLD_ROT + 3 * r + 2]
        end_state[e, ES_X + r] = work[body, WORLD_POS + r] + b0 * u0 + b1 * u1 + b2 * u2
        # row r of R_body R_el
        m0 = b0 * e00 + b1 * e10 + b2 * e20
        m1 = b0 * e01 + b1 * e11 + b2 * e21
        m2 = b0 * e02 + b1 * e12 + b2 * e22
        for c in range(3):
            end_state[e, ES_R + 3 * r + c] = (m0 * end_float[e, END_ROT + c]
                                              + m1 * end_float[e, END_ROT + 3 + c]
                                              + m2 * end_float[e, END_ROT + 6 + c])
    end_velocity(work, end_int, end_data, v, e, end_state)


@njit(inline="always", cache=True)
def end_velocity(work, end_int, end_data, v, e, end_state):
    """World velocity ES_XD of end e's deformed point and world angular velocity ES_W of its
    frame, from its body's twist VEL, the elastic rates in v and the pose terms (u, g, scale)
    compute_end_state left in end_state (flexible_frames.py's Jacobian columns call it alone)."""
    body = end_int[e, END_BODY]
    n = end_int[e, END_NF]
    sh = end_int[e, END_SHAPE]
    t0 = t1 = t2 = 0.0          # Phi_t qd_f
    s0 = s1 = s2 = 0.0          # Phi_r qd_f
    if sh >= 0:
        ivf = end_int[e, END_IVF]
        for k in range(n):
            vk = v[ivf + k]
            t0 += end_data[sh + k] * vk
            t1 += end_data[sh + n + k] * vk
            t2 += end_data[sh + 2 * n + k] * vk
            s0 += end_data[sh + 3 * n + k] * vk
            s1 += end_data[sh + 4 * n + k] * vk
            s2 += end_data[sh + 5 * n + k] * vk
    u0, u1, u2 = end_state[e, ES_U], end_state[e, ES_U + 1], end_state[e, ES_U + 2]
    g0, g1, g2 = end_state[e, ES_G], end_state[e, ES_G + 1], end_state[e, ES_G + 2]
    scale = end_state[e, ES_SCALE]
    # angular velocity of the deformed frame in the reference frame: w + G(g) Phi_r qd_f
    wx = work[body, VEL + 3] + scale * (s0 + 0.5 * (g1 * s2 - g2 * s1))
    wy = work[body, VEL + 4] + scale * (s1 + 0.5 * (g2 * s0 - g0 * s2))
    wz = work[body, VEL + 5] + scale * (s2 + 0.5 * (g0 * s1 - g1 * s0))
    # velocity of u in the reference frame: v + w_ref x u + Phi_t qd_f
    ox = work[body, VEL + 3]
    oy = work[body, VEL + 4]
    oz = work[body, VEL + 5]
    vx = work[body, VEL] + oy * u2 - oz * u1 + t0
    vy = work[body, VEL + 1] + oz * u0 - ox * u2 + t1
    vz = work[body, VEL + 2] + ox * u1 - oy * u0 + t2
    for r in range(3):
        b0 = work[body, WORLD_ROT + 3 * r]
        b1 = work[body, WORLD_ROT + 3 * r + 1]
        b2 = work[body, WORLD_ROT + 3 * r + 2]
        end_state[e, ES_XD + r] = b0 * vx + b1 * vy + b2 * vz
        end_state[e, ES_W + r] = b0 * wx + b1 * wy + b2 * wz


@njit(cache=True)
def _apply(work, end_int, end_data, end_state, e, fx, fy, fz, tx, ty, tz, body_wrench_out,
           end_wrench_out, tau_out):
    """End e receives the world force (fx, fy, fz) at its deformed point and the world couple
    (tx, ty, tz): the wrench [F; u x F + T] on its body (reference frame, about its origin) and
    Q_f = Phi_t^T F + (G Phi_r)^T T on the body's elastic coordinates (module docstring)."""
    body = end_int[e, END_BODY]
    # body components F = R_b^T f, T = R_b^T t
    f0 = (work[body, WORLD_ROT] * fx + work[body, WORLD_ROT + 3] * fy
          + work[body, WORLD_ROT + 6] * fz)
    f1 = (work[body, WORLD_ROT + 1] * fx + work[body, WORLD_ROT + 4] * fy
          + work[body, WORLD_ROT + 7] * fz)
    f2 = (work[body, WORLD_ROT + 2] * fx + work[body, WORLD_ROT + 5] * fy
          + work[body, WORLD_ROT + 8] * fz)
    c0 = (work[body, WORLD_ROT] * tx + work[body, WORLD_ROT + 3] * ty
          + work[body, WORLD_ROT + 6] * tz)
    c1 = (work[body, WORLD_ROT + 1] * tx + work[body, WORLD_ROT + 4] * ty
          + work[body, WORLD_ROT + 7] * tz)
    c2 = (work[body, WORLD_ROT + 2] * tx + work[body, WORLD_ROT + 5] * ty
          + work[body, WORLD_ROT + 8] * tz)
    u0 = end_state[e, ES_U]
    u1 = end_state[e, ES_U + 1]
    u2 = end_state[e, ES_U + 2]
    w0 = f0
    w1 = f1
    w2 = f2
    w3 = u1 * f2 - u2 * f1 + c0
    w4 = u2 * f0 - u0 * f2 + c1
    w5 = u0 * f1 - u1 * f0 + c2
    end_wrench_out[e, 0] += w0
    end_wrench_out[e, 1] += w1
    end_wrench_out[e, 2] += w2
    end_wrench_out[e, 3] += w3
    end_wrench_out[e, 4] += w4
    end_wrench_out[e, 5] += w5
    body_wrench_out[body, 0] += w0
    body_wrench_out[body, 1] += w1
    body_wrench_out[body, 2] += w2
    body_wrench_out[body, 3] += w3
    body_wrench_out[body, 4] += w4
    body_wrench_out[body, 5] += w5
    sh = end_int[e, END_SHAPE]
    if sh < 0:
        return
    n = end_int[e, END_NF]
    ivf = end_int[e, END_IVF]
    g0 = end_state[e, ES_G]
    g1 = end_state[e, ES_G + 1]
    g2 = end_state[e, ES_G + 2]
    scale = end_state[e, ES_SCALE]
    # (G^T T) = s (T - [g] T / 2)   (G^T = (1 - [g]/2) s)
    h0 = scale * (c0 - 0.5 * (g1 * c2 - g2 * c1))
    h1 = scale * (c1 - 0.5 * (g2 * c0 - g0 * c2))
    h2 = scale * (c2 - 0.5 * (g0 * c1 - g1 * c0))
    for k in range(n):
        tau_out[ivf + k] += (end_data[sh + k] * f0 + end_data[sh + n + k] * f1
                             + end_data[sh + 2 * n + k] * f2 + end_data[sh + 3 * n + k] * h0
                             + end_data[sh + 4 * n + k] * h1 + end_data[sh + 5 * n + k] * h2)


@njit(cache=True)
def _spring_damper(work, element_float, end_int, end_data, end_state, e, body_wrench_out,
                   end_wrench_out, tau_out, values_out):
    """Tension f = k (l - l0) + c dl/dt + preload between the deformed points A and B; +f u on A,
    -f u on B (u = (x_B - x_A) / l). V = k (l - l0)^2 / 2 + preload l, D = c (dl/dt)^2 / 2."""
    a = 2 * e
    b = 2 * e + 1
    dx = end_state[b, ES_X] - end_state[a, ES_X]
    dy = end_state[b, ES_X + 1] - end_state[a, ES_X + 1]
    dz = end_state[b, ES_X + 2] - end_state[a, ES_X + 2]
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    ux = uy = uz = 0.0
    if length > 0.0:    # coincident points: no direction, no force
        ux = dx / length
        uy = dy / length
        uz = dz / length
    rate = (ux * (end_state[b, ES_XD] - end_state[a, ES_XD])
            + uy * (end_state[b, ES_XD + 1] - end_state[a, ES_XD + 1])
            + uz * (end_state[b, ES_XD + 2] - end_state[a, ES_XD + 2]))
    tension = (element_float[e, STIFFNESS] * (length - element_float[e, REST])
               + element_float[e, DAMPING] * rate + element_float[e, PRELOAD])
    fx = tension * ux
    fy = tension * uy
    fz = tension * uz
    _apply(work, end_int, end_data, end_state, a, fx, fy, fz, 0.0, 0.0, 0.0, body_wrench_out,
           end_wrench_out, tau_out)
    _apply(work, end_int, end_data, end_state, b, -fx, -fy, -fz, 0.0, 0.0, 0.0, body_wrench_out,
           end_wrench_out, tau_out)
    values_out[e, VALUE_FORCE] = tension
    values_out[e, VALUE_LENGTH] = length
    values_out[e, VALUE_RATE] = rate


@njit(cache=True)
def _bushing(work, element_float, end_int, end_data, end_state, e, body_wrench_out,
             end_wrench_out, tau_out, values_out, scratch):
    """6-dof spring-damper between the deformed frames A and B (law of force_elements._bushing):
    d = R_A^T (x_B - x_A), theta = log(R_A^T R_B); on B the force R_A f at x_B, f = -(K_t d +
    C_t d'), and the couple R_A t, t = -(J_l(theta)^-T K_r theta + C_r w_rel); on A the opposite
    force at x_B (= at x_A plus the couple -(r x F)) and the opposite couple."""
    a = 2 * e
    b = 2 * e + 1
    rel = scratch[0:9]
    theta = scratch[9:12]
    f = scratch[12:18]
    for r in range(3):          # R_A^T R_B
        for c in range(3):
            s = 0.0
            for m in range(3):
                s += end_state[a, ES_R + 3 * m + r] * end_state[b, ES_R + 3 * m + c]
            rel[3 * r + c] = s
    rotation_log(rel, theta)
    rx = end_state[b, ES_X] - end_state[a, ES_X]
    ry = end_state[b, ES_X + 1] - end_state[a, ES_X + 1]
    rz = end_state[b, ES_X + 2] - end_state[a, ES_X + 2]
    wax = end_state[a, ES_W]
    way = end_state[a, ES_W + 1]
    waz = end_state[a, ES_W + 2]
    gx = end_state[b, ES_XD] - end_state[a, ES_XD] - (way * rz - waz * ry)
    gy = end_state[b, ES_XD + 1] - end_state[a, ES_XD + 1] - (waz * rx - wax * rz)
    gz = end_state[b, ES_XD + 2] - end_state[a, ES_XD + 2] - (wax * ry - way * rx)
    hx = end_state[b, ES_W] - wax
    hy = end_state[b, ES_W + 1] - way
    hz = end_state[b, ES_W + 2] - waz
    for r in range(3):
        ra0 = end_state[a, ES_R + r]
        ra1 = end_state[a, ES_R + 3 + r]
        ra2 = end_state[a, ES_R + 6 + r]
        d = ra0 * rx + ra1 * ry + ra2 * rz
        d_rate = ra0 * gx + ra1 * gy + ra2 * gz
        w_rel = ra0 * hx + ra1 * hy + ra2 * hz
        values_out[e, VALUE_DEFLECTION + r] = d
        values_out[e, VALUE_DEFLECTION + 3 + r] = theta[r]
        f[r] = -(element_float[e, STIFFNESS6 + r] * d + element_float[e, DAMPING6 + r] * d_rate)
        f[3 + r] = -element_float[e, DAMPING6 + 3 + r] * w_rel
    # elastic couple -J_l^-T K_r theta (as the rigid bushing)
    subtract_elastic_couple(element_float[e, STIFFNESS6 + 3], element_float[e, STIFFNESS6 + 4],
                            element_float[e, STIFFNESS6 + 5], theta, f)
    fx = fy = fz = tx = ty = tz = 0.0
    for m in range(3):          # world: F = R_A f, T = R_A t
        fx += end_state[a, ES_R + m] * f[m]
        fy += end_state[a, ES_R + 3 + m] * f[m]
        fz += end_state[a, ES_R + 6 + m] * f[m]
        tx += end_state[a, ES_R + m] * f[3 + m]
        ty += end_state[a, ES_R + 3 + m] * f[3 + m]
        tz += end_state[a, ES_R + 6 + m] * f[3 + m]
    _apply(work, end_int, end_data, end_state, b, fx, fy, fz, tx, ty, tz, body_wrench_out,
           end_wrench_out, tau_out)
    _apply(work, end_int, end_data, end_state, a, -fx, -fy, -fz, -tx - (ry * fz - rz * fy),
           -ty - (rz * fx - rx * fz), -tz - (rx * fy - ry * fx), body_wrench_out,
           end_wrench_out, tau_out)
    for r in range(6):
        values_out[e, VALUE_WRENCH + r] = f[r]
    values_out[e, VALUE_FORCE] = math.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
    values_out[e, VALUE_LENGTH] = math.sqrt(values_out[e, VALUE_DEFLECTION] ** 2
                                            + values_out[e, VALUE_DEFLECTION + 1] ** 2
                                            + values_out[e, VALUE_DEFLECTION + 2] ** 2)
    values_out[e, VALUE_RATE] = 0.0


# explicit signature: the dispatcher skips typing 18 arguments on every call
_I2 = types.Array(types.int64, 2, "C")
_F2 = types.Array(types.float64, 2, "C")
_F1 = types.Array(types.float64, 1, "C")
FLEXIBLE_FORCE_LOADS = types.void(_I2, _F2, _F1, _F2, _F1, _I2, _F2, _I2, _F2, _F1, _F1, _F1,
                                  _F2, _F2, _F2, _F1, _F2, _F1)


@njit(FLEXIBLE_FORCE_LOADS, cache=True)
def flexible_force_loads(fint, ffloat, fdata, work, fwork, element_int, element_float, end_int,
                         end_float, end_data, q, v, end_state, body_wrench_out, end_wrench_out,
                         tau_out, values_out, scratch):
    """Loads of every force element at (q, v) on a robot with flexible links.

    Model: fint, ffloat, fdata (kernels/flexible_dynamics.py), element_int, element_float,
    end_int, end_float, end_data (module docstring). Data in: q (nq,), v (nv,) (validated).
    Scratch: work, fwork (kinematics with velocities), end_state, scratch (>= 18,).
    Data out (overwritten): body_wrench_out (nb + 1, 6), end_wrench_out (2 n, 6), tau_out (nv,)
    joint springs and elastic generalized forces, values_out (n, VALUE_WIDTH).
    """
    set_base(ffloat, work, True)
    for i in range(1, fint.shape[0]):
        body_kinematics(fint, ffloat, fdata, work, fwork, i, q, v, True)
    for i in range(body_wrench_out.shape[0]):
        for r in range(6):
            body_wrench_out[i, r] = 0.0
    for e in range(end_wrench_out.shape[0]):
        for r in range(6):
            end_wrench_out[e, r] = 0.0
    for k in range(tau_out.shape[0]):
        tau_out[k] = 0.0
    for e in range(element_int.shape[0]):
        kind = element_int[e, ELEMENT_TYPE]
        if kind == JOINT_SPRING:
            # tau = -k (q - q0) - c q'    (V = k (q - q0)^2 / 2, D = c q'^2 / 2)
            iq = element_int[e, JOINT_IQ]
            iv = element_int[e, JOINT_IV]
            deflection = q[iq] - element_float[e, REST]
            force = -element_float[e, STIFFNESS] * deflection - element_float[e, DAMPING] * v[iv]
            tau_out[iv] += force
            values_out[e, VALUE_FORCE] = force
            values_out[e, VALUE_LENGTH] = deflection
            values_out[e, VALUE_RATE] = v[iv]
            continue
        compute_end_state(work, end_int, end_float, end_data, q, v, 2 * e, end_state)
        compute_end_state(work, end_int, end_float, end_data, q, v, 2 * e + 1, end_state)
        if kind == SPRING_DAMPER:
            _spring_damper(work, element_float, end_int, end_data, end_state, e,
                           body_wrench_out, end_wrench_out, tau_out, values_out)
        else:
            _bushing(work, element_float, end_int, end_data, end_state, e, body_wrench_out,
                     end_wrench_out, tau_out, values_out, scratch)
