"""Configuration-space operations: integration on the joint manifolds and mechanical energy."""
import math

from numba import njit

from . import signatures
from .entry import entry_point

from ..model.layout import (COM, GRAVITY, IDX_Q, IDX_V, JOINT_FREE, JOINT_NV_COL, JOINT_PLANAR,
                            JOINT_SPHERICAL, JOINT_TYPE, MASS, SPATIAL_INERTIA, VEL, WORLD_POS,
                            WORLD_ROT)
from .kinematics import forward_kinematics
from .spatial import inertia_times


@njit(cache=True)
def _quaternion_step(q, iq, wx, wy, wz, q_out):
    """q_out[iq:iq+4] = q[iq:iq+4] (x) exp(w / 2): rotate by the body-frame rotation vector w."""
    angle = math.sqrt(wx * wx + wy * wy + wz * wz)
    half = 0.5 * angle
    # sin(angle/2)/angle, with its series near zero
    s = 0.5 - angle * angle / 48.0 if angle < 1e-4 else math.sin(half) / angle
    dx, dy, dz, dw = s * wx, s * wy, s * wz, math.cos(half)
    x, y, z, w = q[iq], q[iq + 1], q[iq + 2], q[iq + 3]
    rx = w * dx + x * dw + y * dz - z * dy
    ry = w * dy - x * dz + y * dw + z * dx
    rz = w * dz + x * dy - y * dx + z * dw
    rw = w * dw - x * dx - y * dy - z * dz
    norm = math.sqrt(rx * rx + ry * ry + rz * rz + rw * rw)
    q_out[iq] = rx / norm
    q_out[iq + 1] = ry / norm
    q_out[iq + 2] = rz / norm
    q_out[iq + 3] = rw / norm


@entry_point(signatures.INTEGRATE)
def integrate(body_int, q, v, dt, q_out):
    """q_out = q (+) v dt on each joint's manifold (exact exponential map, as pinocchio.integrate):
    R^n for revolute/prismatic, SO(3) for spherical, SE(3) for free and SE(2) for planar joints."""
    for i in range(1, body_int.shape[0]):
        joint_type = body_int[i, JOINT_TYPE]
        iq = body_int[i, IDX_Q]
        iv = body_int[i, IDX_V]
        if joint_type == JOINT_SPHERICAL:
            _quaternion_step(q, iq, v[iv] * dt, v[iv + 1] * dt, v[iv + 2] * dt, q_out)
        elif joint_type == JOINT_FREE:
            # translation of exp6: V(w) nu, V = 1 + (1 - cos t)/t^2 [w] + (t - sin t)/t^3 [w]^2
            nx, ny, nz = v[iv] * dt, v[iv + 1] * dt, v[iv + 2] * dt
            wx, wy, wz = v[iv + 3] * dt, v[iv + 4] * dt, v[iv + 5] * dt
            t2 = wx * wx + wy * wy + wz * wz
            t = math.sqrt(t2)
            if t < 1e-4:
                a = 0.5 - t2 / 24.0
                b = 1.0 / 6.0 - t2 / 120.0
            else:
                a = (1.0 - math.cos(t)) / t2
                b = (t - math.sin(t)) / (t2 * t)
            cx, cy, cz = wy * nz - wz * ny, wz * nx - wx * nz, wx * ny - wy * nx      # w x nu
            ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx   # w x (w x nu)
            dx = nx + a * cx + b * ccx
            dy = ny + a * cy + b * ccy
            dz = nz + a * cz + b * ccz
            # body-frame displacement -> root frame with the current orientation
            x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
            r00 = 1.0 - 2.0 * (y * y + z * z)
            r01 = 2.0 * (x * y - z * w)
            r02 = 2.0 * (x * z + y * w)
            r10 = 2.0 * (x * y + z * w)
            r11 = 1.0 - 2.0 * (x * x + z * z)
            r12 = 2.0 * (y * z - x * w)
            r20 = 2.0 * (x * z - y * w)
            r21 = 2.0 * (y * z + x * w)
            r22 = 1.0 - 2.0 * (x * x + y * y)
            q_out[iq] = q[iq] + r00 * dx + r01 * dy + r02 * dz
            q_out[iq + 1] = q[iq + 1] + r10 * dx + r11 * dy + r12 * dz
            q_out[iq + 2] = q[iq + 2] + r20 * dx + r21 * dy + r22 * dz
            _quaternion_step(q, iq + 3, wx, wy, wz, q_out)
        elif joint_type == JOINT_PLANAR:
            vx, vy, phi = v[iv] * dt, v[iv + 1] * dt, v[iv + 2] * dt
            if abs(phi) < 1e-4:
                sa = 1.0 - phi * phi / 6.0
                ca = 0.5 * phi
            else:
                sa = math.sin(phi) / phi
                ca = (1.0 - math.cos(phi)) / phi
            dx = sa * vx - ca * vy
            dy = ca * vx + sa * vy
            theta = q[iq + 2]
            c = math.cos(theta)
            s = math.sin(theta)
            q_out[iq] = q[iq] + c * dx - s * dy
            q_out[iq + 1] = q[iq + 1] + s * dx + c * dy
            q_out[iq + 2] = theta + phi
        else:
            for j in range(body_int[i, JOINT_NV_COL]):
                q_out[iq + j] = q[iq + j] + v[iv + j] * dt


@entry_point(signatures.ENERGY)
def mechanical_energy(body_int, body_float, work, q, v, out):
    """out[0] = kinetic energy 1/2 sum v_i^T M_i v_i, out[1] = potential energy -sum m_i g . c_i
    (zero at the root frame's origin). Pass an empty v for the potential energy alone."""
    forward_kinematics(body_int, body_float, work, q, v)
    kinetic = 0.0
    potential = 0.0
    # the universe row's VEL is zero and unused below: it holds M_i v_i
    for i in range(1, body_int.shape[0]):
        if v.shape[0] > 0:
            inertia_times(body_float, i, SPATIAL_INERTIA, work, i, VEL, work, 0, VEL)
            for r in range(6):
                kinetic += 0.5 * work[i, VEL + r] * work[0, VEL + r]
        for r in range(3):
            com = (work[i, WORLD_POS + r] + work[i, WORLD_ROT + 3 * r] * body_float[i, COM]
                   + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, COM + 1]
                   + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, COM + 2])
            potential -= body_float[i, MASS] * body_float[0, GRAVITY + r] * com
    for r in range(6):
        work[0, VEL + r] = 0.0
    out[0] = kinetic
    out[1] = potential
