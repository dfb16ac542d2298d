"""Composite rigid body algorithm: the joint-space mass matrix M^(q) = J^T M J (docs/theory.md §2 end)."""
from . import signatures
from .entry import entry_point

from ..model.layout import (JOINT_PRISMATIC, AXIS, JOINT_REVOLUTE, STATUS_SHAPE_OUT, ART_INERTIA,
                            IDX_Q, IDX_V, JOINT_NV_COL, JOINT_TYPE, MOTION_SUBSPACE, PARENT, ROT,
                            SCRATCH, SPATIAL_INERTIA, STATUS_OK, TRANSFORM_SCRATCH)
from .kinematics import revolute_pose, joint_pose, state_status
from .output_checks import STATUS_ALIASED, overlaps
from .spatial import (add_rigid_inertia_to_parent, force_to_parent, rigid_parameters,
                      rigid_parameters_times)

# composite rigid-body inertia Ic_i as 10 parameters (m, m c, I_o; spatial.rigid_parameters) in
# the first 10 columns of the ABA's articulated-inertia slot, which the CRBA does not otherwise use
COMPOSITE = ART_INERTIA


@entry_point(signatures.MASS_MATRIX)
def mass_matrix(body_int, body_float, work, q, mass_out):
    """Joint-space mass matrix mass_out (nv, nv), symmetric, both triangles filled.
    output_checks.STATUS_ALIASED when mass_out overlaps q, before anything is written (the
    forward pass reads q after mass_out is cleared)."""
    if overlaps(mass_out, q):
        return STATUS_ALIASED
    status = state_status(body_int, q, q, q, False, False)
    if status != STATUS_OK:
        return status
    nv = body_int[-1, IDX_V] + body_int[-1, JOINT_NV_COL] if body_int.shape[0] > 1 else 0
    if mass_out.shape[0] != nv or mass_out.shape[1] != nv:
        return STATUS_SHAPE_OUT
    nb = body_int.shape[0] - 1
    # joints on different branches share no body: their blocks stay zero
    for r in range(nv):
        for c in range(nv):
            mass_out[r, c] = 0.0
    # ---- forward pass: poses; composite inertia starts as the body's own   [docs/theory.md §2 end]
    for i in range(1, nb + 1):
        joint_type = body_int[i, JOINT_TYPE]
        if joint_type == JOINT_REVOLUTE:
            revolute_pose(body_float, i, q[body_int[i, IDX_Q]], work, i, ROT)
        else:
            joint_pose(joint_type, body_float, i, q, body_int[i, IDX_Q], work, i, ROT,
                       TRANSFORM_SCRATCH)
        rigid_parameters(body_float, i, SPATIAL_INERTIA, work, i, COMPOSITE)
    # ---- backward pass: F = Ic_i S_i, walked up the ancestors to fill row block i
    for i in range(nb, 0, -1):
        k = body_int[i, JOINT_NV_COL]
        iv = body_int[i, IDX_V]
        joint_type = body_int[i, JOINT_TYPE]
        one_axis = joint_type == JOINT_REVOLUTE or joint_type == JOINT_PRISMATIC
        if one_axis:
            # one axis a (revolute/prismatic; helical takes the general path):
            # F = Ic S = [a x h; I_o a] (revolute) or [m a; h x a] (prismatic)
            ax = body_float[i, AXIS]
            ay = body_float[i, AXIS + 1]
            az = body_float[i, AXIS + 2]
            m = work[i, COMPOSITE]
            hx = work[i, COMPOSITE + 1]
            hy = work[i, COMPOSITE + 2]
            hz = work[i, COMPOSITE + 3]
            if joint_type == JOINT_REVOLUTE:
                work[i, SCRATCH] = ay * hz - az * hy
                work[i, SCRATCH + 1] = az * hx - ax * hz
                work[i, SCRATCH + 2] = ax * hy - ay * hx
                work[i, SCRATCH + 3] = (work[i, COMPOSITE + 4] * ax + work[i, COMPOSITE + 5] * ay
                                        + work[i, COMPOSITE + 6] * az)
                work[i, SCRATCH + 4] = (work[i, COMPOSITE + 5] * ax + work[i, COMPOSITE + 7] * ay
                                        + work[i, COMPOSITE + 8] * az)
                work[i, SCRATCH + 5] = (work[i, COMPOSITE + 6] * ax + work[i, COMPOSITE + 8] * ay
                                        + work[i, COMPOSITE + 9] * az)
            else:
                work[i, SCRATCH] = m * ax
                work[i, SCRATCH + 1] = m * ay
                work[i, SCRATCH + 2] = m * az
                work[i, SCRATCH + 3] = hy * az - hz * ay
                work[i, SCRATCH + 4] = hz * ax - hx * az
                work[i, SCRATCH + 5] = hx * ay - hy * ax
        else:
            for j in range(k):
                rigid_parameters_times(work, i, COMPOSITE, body_float, i, MOTION_SUBSPACE + 6 * j,
                                       work, i, SCRATCH + 6 * j)
        ancestor = i
        while True:
            ka = body_int[ancestor, JOINT_NV_COL]
            ia = body_int[ancestor, IDX_V]
            # M_ij = S_j^T F for the ancestor j (F carried into j's frame)     [docs/theory.md §2 end]
            ancestor_type = body_int[ancestor, JOINT_TYPE]
            if k == 1 and (ancestor_type == JOINT_REVOLUTE or ancestor_type == JOINT_PRISMATIC):
                # F is one column (any 1-dof joint i); one-axis ancestor:
                # S_j = [0; a] (revolute) or [a; 0] (prismatic)
                f = SCRATCH + (3 if ancestor_type == JOINT_REVOLUTE else 0)
                s = (work[i, f] * body_float[ancestor, AXIS] + work[i, f + 1] * body_float[ancestor, AXIS + 1]
                     + work[i, f + 2] * body_float[ancestor, AXIS + 2])
                mass_out[iv, ia] = s
                mass_out[ia, iv] = s
            else:
                for j in range(k):
                    for m in range(ka):
                        s = 0.0
                        for r in range(6):
                            s += work[i, SCRATCH + 6 * j + r] * body_float[ancestor, MOTION_SUBSPACE + 6 * m + r]
                        mass_out[iv + j, ia + m] = s
                        mass_out[ia + m, iv + j] = s
            parent = body_int[ancestor, PARENT]
            if parent == 0:
                break
            for j in range(k):
                force_to_parent(work, ancestor, ROT, work, i, SCRATCH + 6 * j)
            ancestor = parent
        parent = body_int[i, PARENT]
        if parent > 0:
            # Ic_p += B_pi^T Ic_i B_pi
            add_rigid_inertia_to_parent(work, i, ROT, work, i, COMPOSITE, work, parent, COMPOSITE)
    return STATUS_OK
