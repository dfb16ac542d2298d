"""Centre of mass, its Jacobian and the centroidal momentum matrix of a rigid tree.

All in root-frame axes. The bodies counted are those that move (rows 1..nb): links welded to
the fixed root of a fixed-base robot are part of the universe row and, as in Pinocchio's
centerOfMass / jacobianCenterOfMass / ccrba, are not counted.

- center_of_mass: c = sum_i m_i c_i / m, c_i = p_i + R_i c_i^body (one pass down the tree).
- com_jacobian: J_c = dc/dq, column block of joint j
      J_c[:, j] = (m_j^sub v^0_S + w^0_S x h_j^sub) / m,      h^sub = sum over j's subtree of m_i c_i
  with S^0_j = [v^0_S; w^0_S] the joint's motion subspace at the root origin (root axes): a
  subtree moving with twist S^0_j moves its mass-weighted centre by exactly that. One pass down
  (poses), one pass up (subtree sums), O(n).
- centroidal_momentum_matrix: A_G (6, nv) with h_G = A_G v = [linear momentum; angular momentum
  about the centre of mass], root axes (Orin, Goswami & Lee 2013, eq. 20-22). Column block of
  joint j: the momentum of its subtree moving with S_j, I^c_j S_j (composite rigid-body inertia,
  as in the CRBA, RBDA §6.2), carried to the root origin and root axes by the force transform
  ^0X_j^*, then the angular part moved to the centre of mass: n_G = n_0 - c x f.
"""
from numba import njit, types

from .entry import entry_point
from .kinematics import joint_pose, revolute_pose, set_world_root, state_status
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, overlaps
from .spatial import (add_rigid_inertia_to_parent, compose_pose, rigid_parameters,
                      rigid_parameters_times)

from ..model.layout import (ACC, ART_INERTIA, COM, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_REVOLUTE,
                            JOINT_TYPE, MASS, MOTION_SUBSPACE, PARENT, ROT, SCRATCH,
                            SPATIAL_INERTIA, STATUS_OK, STATUS_SHAPE_OUT, TRANSFORM_SCRATCH,
                            WORLD_POS, WORLD_ROT)

COMPOSITE = ART_INERTIA   # 10: composite rigid-body inertia (m, h, I_o) in the body frame
SUBTREE = ACC             # 4: subtree mass and first moment sum m_i c_i (root frame)

_f8 = types.float64
_i8 = types.int64
_INT2 = types.Array(_i8, 2, "C")
_FLOAT2 = types.Array(_f8, 2, "C")
_VECTOR = types.Array(_f8, 1, "C")
VECTOR_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _VECTOR)
MATRIX_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _FLOAT2)


@njit(inline="always")
def poses_and_mass(body_int, body_float, work, q):
    """Pass down: every body's pose in its parent (ROT) and root frame (WORLD_ROT), and its mass
    and first moment m_i c_i in the root frame at SUBTREE (starting the subtree sums)."""
    nb = body_int.shape[0] - 1
    set_world_root(work)
    for k in range(4):
        work[0, SUBTREE + k] = 0.0
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        compose_pose(work, body_int[i, PARENT], WORLD_ROT, work, i, ROT, work, i, WORLD_ROT)
        m = body_float[i, MASS]
        work[i, SUBTREE] = m
        for r in range(3):
            c = (work[i, WORLD_POS + r] + work[i, WORLD_ROT + 3 * r] * body_float[i, COM]
                 + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, COM + 1]
                 + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, COM + 2])
            work[i, SUBTREE + 1 + r] = m * c


@njit(inline="always")
def subspace_at_root(body_float, work, i, j, oc):
    """work[0, oc:+6] = S^0 = ^0X_i S_i[:, j], column j of joint i at the root origin, root axes."""
    s = MOTION_SUBSPACE + 6 * j
    for r in range(3):
        work[0, oc + 3 + r] = (work[i, WORLD_ROT + 3 * r] * body_float[i, s + 3]
                               + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, s + 4]
                               + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, s + 5])
        work[0, oc + r] = (work[i, WORLD_ROT + 3 * r] * body_float[i, s]
                           + work[i, WORLD_ROT + 3 * r + 1] * body_float[i, s + 1]
                           + work[i, WORLD_ROT + 3 * r + 2] * body_float[i, s + 2])
    px = work[i, WORLD_POS]
    py = work[i, WORLD_POS + 1]
    pz = work[i, WORLD_POS + 2]
    wx = work[0, oc + 3]
    wy = work[0, oc + 4]
    wz = work[0, oc + 5]
    work[0, oc] += py * wz - pz * wy
    work[0, oc + 1] += pz * wx - px * wz
    work[0, oc + 2] += px * wy - py * wx


@njit(inline="always")
def total_centre(body_int, work):
    """Sum the bodies' masses and first moments into row 0 (no subtree sums). -> total mass."""
    nb = body_int.shape[0] - 1
    for k in range(4):
        work[0, SUBTREE + k] = 0.0
    for i in range(1, nb + 1):
        for k in range(4):
            work[0, SUBTREE + k] += work[i, SUBTREE + k]
    return work[0, SUBTREE]


@entry_point(VECTOR_SIGNATURE)
def center_of_mass(body_int, body_float, work, q, out):
    """out (3,) = the centre of mass of the moving bodies, root frame. Returns a status
    (STATUS_NOT_FINITE when they have no mass)."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    if out.shape[0] != 3:
        return STATUS_SHAPE_OUT
    poses_and_mass(body_int, body_float, work, q)
    m = total_centre(body_int, work)
    if not m > 0.0:
        return STATUS_NOT_FINITE
    for r in range(3):
        out[r] = work[0, SUBTREE + 1 + r] / m
    return STATUS_OK


@entry_point(MATRIX_SIGNATURE)
def com_jacobian(body_int, body_float, work, q, out):
    """out (3, nv) = dc/dq (c the centre of mass, root frame; module docstring)."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    nb = body_int.shape[0] - 1
    nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    if out.shape[0] != 3 or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    poses_and_mass(body_int, body_float, work, q)
    m_total = 0.0
    for i in range(1, nb + 1):
        m_total += work[i, SUBTREE]
    if not m_total > 0.0:
        return STATUS_NOT_FINITE
    inv_m = 1.0 / m_total
    # pass up: subtree sums complete at i (children have larger indices), then i's columns
    for i in range(nb, 0, -1):
        m = work[i, SUBTREE]
        hx = work[i, SUBTREE + 1]
        hy = work[i, SUBTREE + 2]
        hz = work[i, SUBTREE + 3]
        iv = body_int[i, IDX_V]
        for j in range(body_int[i, JOINT_NV_COL]):
            subspace_at_root(body_float, work, i, j, SCRATCH)
            wx = work[0, SCRATCH + 3]
            wy = work[0, SCRATCH + 4]
            wz = work[0, SCRATCH + 5]
            # (m v + w x h) / m_total
            out[0, iv + j] = (m * work[0, SCRATCH] + wy * hz - wz * hy) * inv_m
            out[1, iv + j] = (m * work[0, SCRATCH + 1] + wz * hx - wx * hz) * inv_m
            out[2, iv + j] = (m * work[0, SCRATCH + 2] + wx * hy - wy * hx) * inv_m
        parent = body_int[i, PARENT]
        for k in range(4):
            work[parent, SUBTREE + k] += work[i, SUBTREE + k]
    return STATUS_OK


@entry_point(MATRIX_SIGNATURE)
def centroidal_momentum_matrix(body_int, body_float, work, q, out):
    """out (6, nv) = A_G: h_G = A_G v, [linear; angular about the centre of mass], root axes
    (module docstring)."""
    if overlaps(out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    nb = body_int.shape[0] - 1
    nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    if out.shape[0] != 6 or out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    poses_and_mass(body_int, body_float, work, q)
    m = total_centre(body_int, work)
    if not m > 0.0:
        return STATUS_NOT_FINITE
    cx = work[0, SUBTREE + 1] / m
    cy = work[0, SUBTREE + 2] / m
    cz = work[0, SUBTREE + 3] / m
    for i in range(1, nb + 1):
        rigid_parameters(body_float, i, SPATIAL_INERTIA, work, i, COMPOSITE)
    # pass up: I^c_i complete at i; column block I^c_i S_i, to the root, about the centre
    for i in range(nb, 0, -1):
        iv = body_int[i, IDX_V]
        for j in range(body_int[i, JOINT_NV_COL]):
            rigid_parameters_times(work, i, COMPOSITE, body_float, i, MOTION_SUBSPACE + 6 * j,
                                   work, 0, SCRATCH)
            # ^0X_i^* f: f0 = R f, n0 = R n + p x f0                       [RBDA eq. 2.25]
            for r in range(3):
                work[0, SCRATCH + 6 + r] = (work[i, WORLD_ROT + 3 * r] * work[0, SCRATCH]
                                            + work[i, WORLD_ROT + 3 * r + 1] * work[0, SCRATCH + 1]
                                            + work[i, WORLD_ROT + 3 * r + 2] * work[0, SCRATCH + 2])
                work[0, SCRATCH + 9 + r] = (work[i, WORLD_ROT + 3 * r] * work[0, SCRATCH + 3]
                                            + work[i, WORLD_ROT + 3 * r + 1] * work[0, SCRATCH + 4]
                                            + work[i, WORLD_ROT + 3 * r + 2] * work[0, SCRATCH + 5])
            fx = work[0, SCRATCH + 6]
            fy = work[0, SCRATCH + 7]
            fz = work[0, SCRATCH + 8]
            # arm from the centre of mass to the body origin: n_G = R n + (p - c) x f0
            px = work[i, WORLD_POS] - cx
            py = work[i, WORLD_POS + 1] - cy
            pz = work[i, WORLD_POS + 2] - cz
            out[0, iv + j] = fx
            out[1, iv + j] = fy
            out[2, iv + j] = fz
            out[3, iv + j] = work[0, SCRATCH + 9] + py * fz - pz * fy
            out[4, iv + j] = work[0, SCRATCH + 10] + pz * fx - px * fz
            out[5, iv + j] = work[0, SCRATCH + 11] + px * fy - py * fx
        parent = body_int[i, PARENT]
        if parent > 0:
            # I^c_p += B_pi^T I^c_i B_pi                                     [RBDA eq. 6.20]
            add_rigid_inertia_to_parent(work, i, ROT, work, i, COMPOSITE, work, parent, COMPOSITE)
    return STATUS_OK
