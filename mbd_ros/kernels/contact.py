"""Ground contact forces and their generalized forces (mbd_ros.contact; no allocation).

Per contact point k (a sphere of radius r_k centred at c_k, fixed in body b_k), ground plane
z = h of the root frame, n = e_z:
    d_k  = r_k - (c_k,z - h)                                 penetration (no force if <= 0)
    f_n  = max(0, k d_k - c v_z),  f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
at the sphere's lowest point p_k = c_k - r_k n, v = its velocity (world frame).
The wrench on body b_k (body frame, about its origin) is [R^T f; p_k x R^T f]; the generalized
force is J^T f = sum over bodies of S_i^T (wrenches of the subtree of i, in frame i): the
backward pass of Newton-Euler (docs/theory.md §2) with only the external wrenches.
"""
import math

from numba import njit

from ..model.layout import IDX_V, JOINT_NV_COL, PARENT, ROT, VEL, WORLD_POS, WORLD_ROT
from .kinematics import forward_kinematics, joint_force
from .spatial import add_force_to_parent

PARAM_STIFFNESS = 0
PARAM_DAMPING = 1
PARAM_FRICTION = 2
PARAM_SLIP_VELOCITY = 3
PARAM_GROUND_HEIGHT = 4


@njit(cache=True)
def ground_contact(body_int, body_float, work, q, v, point_body, point_pos, radius, params,
                   wrench, forces_out, penetration_out, tau_out):
    """Model: body_int, body_float; point_body (n,) body of each point, point_pos (n, 3) sphere
    centre in the body frame, radius (n,), params (5,) [k, c, mu, v_s, h].
    Data: work (kinematics), wrench (nb + 1, 6) scratch.
    Out: forces_out (n, 3) world-frame contact forces, penetration_out (n,), tau_out (nv,)."""
    nb = body_int.shape[0] - 1
    forward_kinematics(body_int, body_float, work, q, v)
    stiffness = params[PARAM_STIFFNESS]
    damping = params[PARAM_DAMPING]
    mu = params[PARAM_FRICTION]
    vs2 = params[PARAM_SLIP_VELOCITY] * params[PARAM_SLIP_VELOCITY]
    height = params[PARAM_GROUND_HEIGHT]
    for i in range(nb + 1):
        for r in range(6):
            wrench[i, r] = 0.0
    for j in range(tau_out.shape[0]):
        tau_out[j] = 0.0
    any_contact = False
    for k in range(point_body.shape[0]):
        b = point_body[k]
        # ---- penetration of the sphere: d = r - (c_z - h), c = R x + p
        x0, x1, x2 = point_pos[k, 0], point_pos[k, 1], point_pos[k, 2]
        cz = (work[b, WORLD_ROT + 6] * x0 + work[b, WORLD_ROT + 7] * x1
              + work[b, WORLD_ROT + 8] * x2 + work[b, WORLD_POS + 2])
        depth = radius[k] - (cz - height)
        penetration_out[k] = depth
        forces_out[k, 0] = 0.0
        forces_out[k, 1] = 0.0
        forces_out[k, 2] = 0.0
        if depth <= 0.0:
            continue
        # ---- lowest point in the body frame: p = x - r R^T e_z (R^T e_z = row 2 of R)
        px = x0 - radius[k] * work[b, WORLD_ROT + 6]
        py = x1 - radius[k] * work[b, WORLD_ROT + 7]
        pz = x2 - radius[k] * work[b, WORLD_ROT + 8]
        # ---- its velocity: body frame v_lin + w x p, then world R (.)
        wx, wy, wz = work[b, VEL + 3], work[b, VEL + 4], work[b, VEL + 5]
        ux = work[b, VEL + 0] + wy * pz - wz * py
        uy = work[b, VEL + 1] + wz * px - wx * pz
        uz = work[b, VEL + 2] + wx * py - wy * px
        vx = work[b, WORLD_ROT + 0] * ux + work[b, WORLD_ROT + 1] * uy + work[b, WORLD_ROT + 2] * uz
        vy = work[b, WORLD_ROT + 3] * ux + work[b, WORLD_ROT + 4] * uy + work[b, WORLD_ROT + 5] * uz
        vz = work[b, WORLD_ROT + 6] * ux + work[b, WORLD_ROT + 7] * uy + work[b, WORLD_ROT + 8] * uz
        # ---- f_n = max(0, k d - c v_z);  f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
        fn = stiffness * depth - damping * vz
        if fn <= 0.0:
            continue
        any_contact = True
        scale = -mu * fn / math.sqrt(vx * vx + vy * vy + vs2)
        fx, fy = scale * vx, scale * vy
        forces_out[k, 0] = fx
        forces_out[k, 1] = fy
        forces_out[k, 2] = fn
        # ---- body-frame wrench [R^T f; p x R^T f]
        gx = work[b, WORLD_ROT + 0] * fx + work[b, WORLD_ROT + 3] * fy + work[b, WORLD_ROT + 6] * fn
        gy = work[b, WORLD_ROT + 1] * fx + work[b, WORLD_ROT + 4] * fy + work[b, WORLD_ROT + 7] * fn
        gz = work[b, WORLD_ROT + 2] * fx + work[b, WORLD_ROT + 5] * fy + work[b, WORLD_ROT + 8] * fn
        wrench[b, 0] += gx
        wrench[b, 1] += gy
        wrench[b, 2] += gz
        wrench[b, 3] += py * gz - pz * gy
        wrench[b, 4] += pz * gx - px * gz
        wrench[b, 5] += px * gy - py * gx
    if not any_contact:
        return
    # ---- J^T f: tau_i = S_i^T f_i, f_parent += B^T f_i (backward pass, docs/theory.md §2)
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        joint_force(body_float, i, body_int[i, JOINT_NV_COL], wrench, i, 0, tau_out,
                    body_int[i, IDX_V])
        if parent > 0:   # the pose of body i: ROT then POS in its work row
            add_force_to_parent(work, i, ROT, wrench, i, 0, wrench, parent, 0)
