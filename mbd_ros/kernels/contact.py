"""Ground contact forces and their generalized forces (mbd_ros.contact; no allocation).

Per contact point k (a sphere of radius r_k centred at c_k, fixed in body b_k), ground plane
z = h of the root frame, n = e_z:
    d_k  = r_k - (c_k,z - h)                                 penetration (no force if <= 0)
    f_n  = max(0, k d_k - c min(1, d_k / d_w) v_z)            (d_w = 0: the constant c)
    f_t  = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
each damper made linearly implicit on the point's mass m over the integrator step h: the
normal c_eff = c min(1, d / d_w) -> c_eff / (1 + c_eff h / m); the friction divided by
(1 + s h / m) with s its tangent slope mu f_n v_s^2 / (|v_t|^2 + v_s^2)^(3/2).
The damping ramps in over the first d_w of penetration (Hunt-Crossley-like: no damping force
at touch-down, so the normal force is continuous and never pulls at separation); with the
max(0, .) the law is dissipative: d/dt (kinetic + potential + sum k d^2 / 2) =
-sum c min(1, d/d_w) v_z^2 (unclamped) or k d v_z <= 0 (clamped: v_z > 0 then) per point.
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
PARAM_DAMPING_DEPTH = 5
PARAM_STEP = 6
N_PARAMS = 7


@njit(cache=True)
def ground_contact(body_int, body_float, work, q, v, point_body, point_pos, radius, point_mass,
                   params, wrench, forces_out, penetration_out, tau_out):
    """Model: body_int, body_float; point_body (n,) body of each point, point_pos (n, 3) sphere
    centre in the body frame, radius (n,), point_mass (n,) the mass each point's dampers are
    made implicit on (kg), params (7,) [k, c, mu, v_s, h, d_w, step] (step 0: explicit).
    Data: work (kinematics), wrench (nb + 1, 6) scratch.
    Out: forces_out (n, 3) world-frame contact forces, penetration_out (n,), tau_out (nv,)."""
    nb = body_int.shape[0] - 1
    forward_kinematics(body_int, body_float, work, q, v)
    stiffness = params[PARAM_STIFFNESS]
    damping = params[PARAM_DAMPING]
    mu = params[PARAM_FRICTION]
    vs2 = params[PARAM_SLIP_VELOCITY] * params[PARAM_SLIP_VELOCITY]
    height = params[PARAM_GROUND_HEIGHT]
    ramp_depth = params[PARAM_DAMPING_DEPTH]
    step = params[PARAM_STEP]
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
        # ---- f_n = max(0, k d - c min(1, d / d_w) v_z);  f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
        ramp = 1.0
        if ramp_depth > 0.0 and depth < ramp_depth:
            ramp = depth / ramp_depth
        # linearly implicit dampers on the point's mass m (backward Euler of m u' = -b u over
        # the step h: b_eff = b / (1 + b h / m), so b_eff h / m < 1 whatever b): as MuJoCo's
        # soft constraints regularised with the diagonal of J M^-1 J^T
        c_eff = damping * ramp
        if step > 0.0:
            c_eff = c_eff / (1.0 + c_eff * step / point_mass[k])
        fn = stiffness * depth - c_eff * vz
        if fn <= 0.0:
            continue
        any_contact = True
        # friction f = -mu f_n u / sqrt(|u|^2 + v_s^2): linearly implicit with its tangent
        # slope mu f_n v_s^2 / (|u|^2 + v_s^2)^(3/2) (the full viscous mu f_n / v_s while it
        # sticks, ~0 while it slides: Coulomb's force untouched at sliding speeds)
        root = math.sqrt(vx * vx + vy * vy + vs2)
        viscous = mu * fn / root
        if step > 0.0:
            slope = viscous * vs2 / (root * root)
            viscous = viscous / (1.0 + slope * step / point_mass[k])
        fx, fy = -viscous * vx, -viscous * vy
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
