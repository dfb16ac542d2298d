"""Composite rigid body algorithm: the joint-space mass matrix M^(q) = J^T M J (docs/theory.md §2 end)."""
from numba import njit

from . import signatures

from ..layout import (AXIS, JOINT_REVOLUTE, STATUS_SHAPE_OUT, ART_INERTIA, IDX_Q, IDX_V, JOINT_NV_COL, JOINT_TYPE, MOTION_SUBSPACE, PARENT,
                      POS, ROT, SCRATCH, SPATIAL_INERTIA, STATUS_OK, TRANSFORM_SCRATCH)
from .kinematics import check_state, joint_pose
from .spatial import add_inertia_to_parent


@njit(cache=True)
def _force_to_parent_in_place(rot, pos, f):
    """f (6) <- B_pi^T f (a wrench moved from the body frame into its parent frame)."""
    nx = rot[0] * f[0] + rot[1] * f[1] + rot[2] * f[2]
    ny = rot[3] * f[0] + rot[4] * f[1] + rot[5] * f[2]
    nz = rot[6] * f[0] + rot[7] * f[1] + rot[8] * f[2]
    tx = rot[0] * f[3] + rot[1] * f[4] + rot[2] * f[5]
    ty = rot[3] * f[3] + rot[4] * f[4] + rot[5] * f[5]
    tz = rot[6] * f[3] + rot[7] * f[4] + rot[8] * f[5]
    f[0] = nx
    f[1] = ny
    f[2] = nz
    f[3] = tx + pos[1] * nz - pos[2] * ny
    f[4] = ty + pos[2] * nx - pos[0] * nz
    f[5] = tz + pos[0] * ny - pos[1] * nx


@njit(signatures.MASS_MATRIX, cache=True)
def mass_matrix(body_int, body_float, work, q, mass_out):
    """Joint-space mass matrix mass_out (nv, nv), symmetric, both triangles filled."""
    status = check_state(body_int, q, q[:0], q[:0], False, False)
    if status != STATUS_OK:
        return status
    nv = body_int[-1, IDX_V] + body_int[-1, JOINT_NV_COL] if body_int.shape[0] > 1 else 0
    if mass_out.shape[0] != nv or mass_out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    # joints on different branches share no body: their blocks stay zero
    for r in range(mass_out.shape[0]):
        for c in range(mass_out.shape[1]):
            mass_out[r, c] = 0.0
    # ---- forward pass: poses; composite inertia starts as the body's own
    for i in range(1, nb + 1):
        row = work[i]
        joint_pose(body_int[i, JOINT_TYPE], body_float[i], q, body_int[i, IDX_Q], row[ROT:ROT + 9],
                   row[POS:POS + 3], row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 12])
        for k in range(36):
            row[ART_INERTIA + k] = body_float[i, SPATIAL_INERTIA + k]
    # ---- backward pass: F = Ic_i S_i, walked up the ancestors to fill row block i
    for i in range(nb, 0, -1):
        row = work[i]
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        composite = row[ART_INERTIA:ART_INERTIA + 36]
        force = row[SCRATCH:SCRATCH + 36]
        joint_type = body_int[i, JOINT_TYPE]
        if k == 1:
            # one axis: F = Ic S reads three columns of Ic (revolute: angular, prismatic: linear)
            offset = 3 if joint_type == JOINT_REVOLUTE else 0
            ax = body_float[i, AXIS]
            ay = body_float[i, AXIS + 1]
            az = body_float[i, AXIS + 2]
            for r in range(6):
                force[r] = (composite[6 * r + offset] * ax + composite[6 * r + offset + 1] * ay
                            + composite[6 * r + offset + 2] * az)
        else:
            for j in range(k):
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += composite[6 * r + c] * body_float[i, MOTION_SUBSPACE + 6 * j + c]
                    force[6 * j + r] = s
        ancestor = i
        while True:
            ka = body_int[ancestor, JOINT_NV_COL]
            ia = body_int[ancestor, IDX_V]
            for j in range(k):
                for m in range(ka):
                    s = 0.0
                    for r in range(6):
                        s += force[6 * j + r] * body_float[ancestor, MOTION_SUBSPACE + 6 * m + r]
                    mass_out[iv + j, ia + m] = s
                    mass_out[ia + m, iv + j] = s
            parent = body_int[ancestor, PARENT]
            if parent == 0:
                break
            for j in range(k):
                _force_to_parent_in_place(work[ancestor, ROT:ROT + 9], work[ancestor, POS:POS + 3],
                                          force[6 * j:6 * j + 6])
            ancestor = parent
        parent = body_int[i, PARENT]
        if parent > 0:
            add_inertia_to_parent(row[ROT:ROT + 9], row[POS:POS + 3], composite,
                                  row[TRANSFORM_SCRATCH:TRANSFORM_SCRATCH + 36],
                                  work[parent, ART_INERTIA:ART_INERTIA + 36])
    return STATUS_OK
