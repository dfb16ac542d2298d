"""Contact forces of spheres fixed in the bodies against the ground plane and static boxes,
and their generalized forces (mbd_ros.contact; no allocation).

Per contact point k (a sphere of radius r_k centred at c_k, fixed in body b_k) and obstacle
(the ground plane z = h of the root frame, n = e_z; a static box, n the outward normal of
box_penetration), d the penetration and v the velocity of the sphere's deepest point
p = c - r n (world frame), v_n = v . n, v_t = v - v_n n:
    f_n  = max(0, k d - c min(1, d / d_w) v_n)            (d_w = 0: the constant c)
    f_t  = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)
each damper made linearly implicit on the point's mass m over the integrator step h: the
normal c_eff = c min(1, d / d_w) -> c_eff / (1 + c_eff h / m); the friction divided by
(1 + s h / m) with s its tangent slope mu f_n v_s^2 / (|v_t|^2 + v_s^2)^(3/2).
The damping ramps in over the first d_w of penetration (Hunt-Crossley-like: no damping force
at touch-down, so the normal force is continuous and never pulls at separation); with the
max(0, .) the law is dissipative: d/dt (kinetic + potential + sum k d^2 / 2) =
-sum c_eff v_n^2 (unclamped) or k d (-v_n) <= 0 (clamped: v_n > 0 then) per pair.
The wrench on body b_k (body frame, about its origin) is [R^T f; p x R^T f]; the generalized
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


# static boxes: one row per box [centre x y z, half extents x y z, cos yaw, sin yaw]
BOX_CENTRE = 0
BOX_HALF = 3
BOX_COS = 6
BOX_SIN = 7
BOX_COLUMNS = 8


@njit(cache=True)
def box_penetration(box, cx, cy, cz, r, out):
    """Penetration of a sphere (centre c, radius r; world frame) into a static box (a row of
    BOX_COLUMNS), with the outward normal n (world) along which it is pushed out:
    out[0] = d (> 0 in contact), out[1:4] = n. Outside the box: d = r - |c - p|, p the closest
    point of the box, n = (c - p) / |c - p|; centre inside: d = r + the distance to the nearest
    face, n its normal (the least push that gets it out)."""
    cs, sn = box[BOX_COS], box[BOX_SIN]
    dx, dy, dz = cx - box[BOX_CENTRE], cy - box[BOX_CENTRE + 1], cz - box[BOX_CENTRE + 2]
    lx = cs * dx + sn * dy                 # box frame (yaw about z)
    ly = -sn * dx + cs * dy
    lz = dz
    hx, hy, hz = box[BOX_HALF], box[BOX_HALF + 1], box[BOX_HALF + 2]
    inside = abs(lx) <= hx and abs(ly) <= hy and abs(lz) <= hz
    if not inside:
        px = min(max(lx, -hx), hx)
        py = min(max(ly, -hy), hy)
        pz = min(max(lz, -hz), hz)
        ex, ey, ez = lx - px, ly - py, lz - pz
        dist = math.sqrt(ex * ex + ey * ey + ez * ez)
        out[0] = r - dist
        if out[0] <= 0.0 or dist == 0.0:
            out[0] = min(out[0], 0.0)
            return
        nx, ny, nz = ex / dist, ey / dist, ez / dist
    else:   # the face of least depth
        depth = hx - abs(lx)
        nx, ny, nz = math.copysign(1.0, lx), 0.0, 0.0
        if hy - abs(ly) < depth:
            depth = hy - abs(ly)
            nx, ny, nz = 0.0, math.copysign(1.0, ly), 0.0
        if hz - abs(lz) < depth:
            depth = hz - abs(lz)
            nx, ny, nz = 0.0, 0.0, math.copysign(1.0, lz)
        out[0] = r + depth
    out[1] = cs * nx - sn * ny             # back to the world frame
    out[2] = sn * nx + cs * ny
    out[3] = nz


@njit(cache=True)
def _pair_force(work, b, x0, x1, x2, rad, depth, nx, ny, nz, params, mass, wrench, force):
    """The law of one contact pair (feature k of body b at depth d along the world normal n),
    accumulated into wrench[b] (body frame) and force (3,) (world); False when the law gives
    no force (f_n <= 0)."""
    stiffness = params[PARAM_STIFFNESS]
    mu = params[PARAM_FRICTION]
    vs2 = params[PARAM_SLIP_VELOCITY] * params[PARAM_SLIP_VELOCITY]
    ramp_depth = params[PARAM_DAMPING_DEPTH]
    step = params[PARAM_STEP]
    # ---- the contact point p = x - r R^T n in the body frame (the sphere's deepest point)
    tx = work[b, WORLD_ROT + 0] * nx + work[b, WORLD_ROT + 3] * ny + work[b, WORLD_ROT + 6] * nz
    ty = work[b, WORLD_ROT + 1] * nx + work[b, WORLD_ROT + 4] * ny + work[b, WORLD_ROT + 7] * nz
    tz = work[b, WORLD_ROT + 2] * nx + work[b, WORLD_ROT + 5] * ny + work[b, WORLD_ROT + 8] * nz
    px, py, pz = x0 - rad * tx, x1 - rad * ty, x2 - rad * tz
    # ---- its velocity: body frame v_lin + w x p, then world R (.)
    wx, wy, wz = work[b, VEL + 3], work[b, VEL + 4], work[b, VEL + 5]
    ux = work[b, VEL + 0] + wy * pz - wz * py
    uy = work[b, VEL + 1] + wz * px - wx * pz
    uz = work[b, VEL + 2] + wx * py - wy * px
    vx = work[b, WORLD_ROT + 0] * ux + work[b, WORLD_ROT + 1] * uy + work[b, WORLD_ROT + 2] * uz
    vy = work[b, WORLD_ROT + 3] * ux + work[b, WORLD_ROT + 4] * uy + work[b, WORLD_ROT + 5] * uz
    vz = work[b, WORLD_ROT + 6] * ux + work[b, WORLD_ROT + 7] * uy + work[b, WORLD_ROT + 8] * uz
    vn = vx * nx + vy * ny + vz * nz
    sx, sy, sz = vx - vn * nx, vy - vn * ny, vz - vn * nz     # tangential (slip) velocity
    # ---- f_n = max(0, k d - c min(1, d / d_w) v_n), damper linearly implicit on the mass m
    # (backward Euler of m u' = -b u over the step h: b_eff = b / (1 + b h / m), so
    # b_eff h / m < 1 whatever b): as MuJoCo's soft constraints regularised with the diagonal
    # of J M^-1 J^T
    ramp = 1.0
    if ramp_depth > 0.0 and depth < ramp_depth:
        ramp = depth / ramp_depth
    c_eff = params[PARAM_DAMPING] * ramp
    if step > 0.0:
        c_eff = c_eff / (1.0 + c_eff * step / mass)
    fn = stiffness * depth - c_eff * vn
    if fn <= 0.0:
        return False
    # ---- friction f = -mu f_n u / sqrt(|u|^2 + v_s^2): linearly implicit with its tangent
    # slope mu f_n v_s^2 / (|u|^2 + v_s^2)^(3/2) (the full viscous mu f_n / v_s while it
    # sticks, ~0 while it slides: Coulomb's force untouched at sliding speeds)
    root = math.sqrt(sx * sx + sy * sy + sz * sz + vs2)
    viscous = mu * fn / root
    if step > 0.0:
        slope = viscous * vs2 / (root * root)
        viscous = viscous / (1.0 + slope * step / mass)
    fx = fn * nx - viscous * sx
    fy = fn * ny - viscous * sy
    fz = fn * nz - viscous * sz
    force[0] += fx
    force[1] += fy
    force[2] += fz
    # ---- body-frame wrench [R^T f; p x R^T f]
    gx = work[b, WORLD_ROT + 0] * fx + work[b, WORLD_ROT + 3] * fy + work[b, WORLD_ROT + 6] * fz
    gy = work[b, WORLD_ROT + 1] * fx + work[b, WORLD_ROT + 4] * fy + work[b, WORLD_ROT + 7] * fz
    gz = work[b, WORLD_ROT + 2] * fx + work[b, WORLD_ROT + 5] * fy + work[b, WORLD_ROT + 8] * fz
    wrench[b, 0] += gx
    wrench[b, 1] += gy
    wrench[b, 2] += gz
    wrench[b, 3] += py * gz - pz * gy
    wrench[b, 4] += pz * gx - px * gz
    wrench[b, 5] += px * gy - py * gx
    return True


@njit(cache=True)
def ground_contact(body_int, body_float, work, q, v, point_body, point_pos, radius, point_mass,
                   params, boxes, pair, wrench, forces_out, penetration_out, where_out,
                   energy_out, tau_out):
    """Model: body_int, body_float; point_body (n,) body of each point, point_pos (n, 3) sphere
    centre in the body frame, radius (n,), point_mass (n,) the mass each point's dampers are
    made implicit on (kg), params (7,) [k, c, mu, v_s, h, d_w, step] (step 0: explicit),
    boxes (m, BOX_COLUMNS) static boxes (world frame).
    Data: work (kinematics), wrench (nb + 1, 6), pair (4,) scratch.
    Out: forces_out (n, 3) world-frame contact forces (sum over the ground and the boxes),
    penetration_out (n,) the deepest penetration of each point, where_out (n,) into what
    (-1 the ground, k box k), energy_out (1,) the springs' energy sum k d^2 / 2 (J),
    tau_out (nv,) J^T f."""
    nb = body_int.shape[0] - 1
    forward_kinematics(body_int, body_float, work, q, v)
    height = params[PARAM_GROUND_HEIGHT]
    for i in range(nb + 1):
        for r in range(6):
            wrench[i, r] = 0.0
    for j in range(tau_out.shape[0]):
        tau_out[j] = 0.0
    energy_out[0] = 0.0
    any_contact = False
    for k in range(point_body.shape[0]):
        b = point_body[k]
        x0, x1, x2 = point_pos[k, 0], point_pos[k, 1], point_pos[k, 2]
        rad = radius[k]
        forces_out[k, 0] = 0.0
        forces_out[k, 1] = 0.0
        forces_out[k, 2] = 0.0
        # ---- the sphere's centre in the world: c = R x + p
        cz = (work[b, WORLD_ROT + 6] * x0 + work[b, WORLD_ROT + 7] * x1
              + work[b, WORLD_ROT + 8] * x2 + work[b, WORLD_POS + 2])
        # ---- the ground: d = r - (c_z - h), n = e_z
        depth = rad - (cz - height)
        penetration_out[k] = depth
        where_out[k] = -1
        if depth > 0.0:
            energy_out[0] += 0.5 * params[PARAM_STIFFNESS] * depth * depth
            if _pair_force(work, b, x0, x1, x2, rad, depth, 0.0, 0.0, 1.0, params,
                           point_mass[k], wrench, forces_out[k]):
                any_contact = True
        if boxes.shape[0] == 0:
            continue
        cx = (work[b, WORLD_ROT + 0] * x0 + work[b, WORLD_ROT + 1] * x1
              + work[b, WORLD_ROT + 2] * x2 + work[b, WORLD_POS + 0])
        cy = (work[b, WORLD_ROT + 3] * x0 + work[b, WORLD_ROT + 4] * x1
              + work[b, WORLD_ROT + 5] * x2 + work[b, WORLD_POS + 1])
        for o in range(boxes.shape[0]):
            box_penetration(boxes[o], cx, cy, cz, rad, pair)
            if pair[0] > penetration_out[k]:
                penetration_out[k] = pair[0]
                where_out[k] = o
            if pair[0] > 0.0:
                energy_out[0] += 0.5 * params[PARAM_STIFFNESS] * pair[0] * pair[0]
                if _pair_force(work, b, x0, x1, x2, rad, pair[0], pair[1], pair[2], pair[3],
                               params, point_mass[k], wrench, forces_out[k]):
                    any_contact = True
    if not any_contact:
        return
    # ---- J^T f: tau_i = S_i^T f_i, f_parent += B^T f_i (backward pass, docs/theory.md §2)
    for i in range(nb, 0, -1):
        parent = body_int[i, PARENT]
        joint_force(body_float, i, body_int[i, JOINT_NV_COL], wrench, i, 0, tau_out,
                    body_int[i, IDX_V])
        if parent > 0:   # the pose of body i: ROT then POS in its work row
            add_force_to_parent(work, i, ROT, wrench, i, 0, wrench, parent, 0)
