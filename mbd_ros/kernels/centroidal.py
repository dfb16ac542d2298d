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

The pose pass (`poses_and_mass`) takes cos and sin of q from one vectorized loop (cos_sin.py)
into the frame workspace's last rows and carries each body's poses in registers
(pose_tuples.py). center_of_mass and com_jacobian are compiled with fastmath={"contract"} only
(multiply-adds fused; no other IEEE relaxation).
"""
import math

from numba import njit, types

from .cos_sin import cos_sin_of, cos_sin_rows, rows_needed
from .entry import entry_point
from .kinematics import joint_pose, set_world_root, state_status
from .output_checks import STATUS_ALIASED, STATUS_NOT_FINITE, overlaps
from .pose_tuples import (compose, pose_at, revolute_relative_pose, store_pose,
                          subspace_column)
from .spatial import add_rigid_inertia_to_parent, rigid_parameters, rigid_parameters_times

from ..model.layout import (ACC, ART_INERTIA, COM, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_REVOLUTE,
                            JOINT_TYPE, MASS, MOTION_SUBSPACE, PARENT, ROT, SCRATCH,
                            SPATIAL_INERTIA, STATUS_OK, STATUS_SHAPE_OUT, TRANSFORM_SCRATCH,
                            WORLD_POS, WORLD_ROT)

COMPOSITE = ART_INERTIA   # 10: composite rigid-body inertia (m, h, I_o) in the body frame
SUBTREE = ACC             # 4: subtree mass and first moment sum m_i c_i (root frame)
COS_SIN = TRANSFORM_SCRATCH   # 2: cos and sin of a revolute joint's angle (its pose scratch,
                              # unused for revolute joints)

_f8 = types.float64
_i8 = types.int64
_INT2 = types.Array(_i8, 2, "C")
_FLOAT2 = types.Array(_f8, 2, "C")
_VECTOR = types.Array(_f8, 1, "C")
VECTOR_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _VECTOR)
MATRIX_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _VECTOR, _FLOAT2)


@njit(inline="always")
def poses_and_mass(body_int, body_float, work, q, store_relative):
    """Pass down: every body's pose in its root frame (WORLD_ROT) and, when store_relative (a
    constant of the caller), in its parent (ROT), and its mass and first moment m_i c_i in the
    root frame at SUBTREE (starting the subtree sums). Returns their sums over the bodies, the
    total mass and first moment (m, hx, hy, hz).

    The cos and sin of q first, in a loop of their own (cos_sin.py: vectorized, into the
    frame workspace's last rows; libm calls at COS_SIN on a workspace without them);
    then ^0T_i = ^0T_p ^pT_i with ^pT_i and ^0T_i in registers
    (pose_tuples.py), each stored once."""
    nb = body_int.shape[0] - 1
    row = work.shape[0] - rows_needed(q.shape[0], work.shape[1])
    vectorized = row > nb       # the frame workspace has the rows (frame_workspace)
    if vectorized:
        cos_sin_rows(q, q.shape[0], work, row)
    else:
        for i in range(1, nb + 1):
            if body_int[i, JOINT_TYPE] == JOINT_REVOLUTE:
                angle = q[body_int[i, IDX_Q]]
                work[i, COS_SIN] = math.cos(angle)
                work[i, COS_SIN + 1] = math.sin(angle)
    set_world_root(work)
    for k in range(4):
        work[0, SUBTREE + k] = 0.0
    m_total = hx = hy = hz = 0.0
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            if vectorized:
                c, s = cos_sin_of(work, row, body_int[i, IDX_Q])
            else:
                c = work[i, COS_SIN]
                s = work[i, COS_SIN + 1]
            relative = revolute_relative_pose(body_float, i, c, s)
            if store_relative:
                store_pose(relative, work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
            relative = pose_at(work, i, ROT)
        pose = compose(pose_at(work, body_int[i, PARENT], WORLD_ROT), relative)
        store_pose(pose, work, i, WORLD_ROT)
        m = body_float[i, MASS]
        cx = body_float[i, COM]
        cy = body_float[i, COM + 1]
        cz = body_float[i, COM + 2]
        # m c_i = m (p_i + R_i c_i^body)
        mx = m * (pose[9] + pose[0] * cx + pose[1] * cy + pose[2] * cz)
        my = m * (pose[10] + pose[3] * cx + pose[4] * cy + pose[5] * cz)
        mz = m * (pose[11] + pose[6] * cx + pose[7] * cy + pose[8] * cz)
        work[i, SUBTREE] = m
        work[i, SUBTREE + 1] = mx
        work[i, SUBTREE + 2] = my
        work[i, SUBTREE + 3] = mz
        m_total += m
        hx += mx
        hy += my
        hz += mz
    return m_total, hx, hy, hz


@entry_point(VECTOR_SIGNATURE, fastmath={"contract"})
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
    m, hx, hy, hz = poses_and_mass(body_int, body_float, work, q, False)
    if not m > 0.0:
        return STATUS_NOT_FINITE
    out[0] = hx / m
    out[1] = hy / m
    out[2] = hz / m
    return STATUS_OK


@entry_point(MATRIX_SIGNATURE, fastmath={"contract"})
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
    m_total = poses_and_mass(body_int, body_float, work, q, False)[0]
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
        pose = pose_at(work, i, WORLD_ROT)
        for j in range(body_int[i, JOINT_NV_COL]):
            vx, vy, vz, wx, wy, wz = subspace_column(body_float, i, j, pose)
            # (m v + w x h) / m_total
            out[0, iv + j] = (m * vx + wy * hz - wz * hy) * inv_m
            out[1, iv + j] = (m * vy + wz * hx - wx * hz) * inv_m
            out[2, iv + j] = (m * vz + wx * hy - wy * hx) * inv_m
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
    m, hx, hy, hz = poses_and_mass(body_int, body_float, work, q, True)
    if not m > 0.0:
        return STATUS_NOT_FINITE
    cx = hx / m
    cy = hy / m
    cz = hz / m
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
