"""The inverse of the joint-space mass matrix, M(q)^-1, never by a dense inversion: M by the
composite rigid body algorithm (crba.py), factorised as M = L^T D L along the tree's sparsity
(Featherstone's RBDA, Table 6.3: derivatives.tree_ltdl), then M^-1 = L^-1 D^-1 L^-T by the tree
solves applied to the identity (RBDA Table 6.4: derivatives.ltdl_solve, IDENTITY: the upper
triangle, then mirrored). Cost after the CRBA: O(sum of depths^2) for the factor and
O(nv sum of depths) for the solves, on contiguous row segments (vectorised from
derivatives.WIDE_ROWS_FROM dofs on); the same factor and solves as the forward dynamics'
derivatives (dqdd/dtau = M^-1).

For shallow trees it is faster than Carpentier & Mansard's recursive O(n^2) algorithm
("Analytical derivatives of rigid body dynamics algorithms", RSS 2018, §IV-B; Pinocchio's
computeMinverse), whose per-column loops run as scalar code here: per call in a numba loop
(bench/RESULTS.md, AMD EPYC Zen 5) talos_reduced 11.0 -> 6.4 µs, panda 1.73 -> 0.95 µs, ur5
1.02 -> 0.55 µs. On a serial chain the solves are O(nv^3), so deep trees (mean dof depth above
RECURSION_FROM_MEAN_DEPTH) keep that recursion (minverse_recursive.py): O(nv^2) as the
controller interface promises (docs/controllers.md).

Scratch: `blocks` ((nb + 1) * 6, nv): its first nv rows hold the factor, the next DOF_ROWS rows
the dof tree (derivatives' dof_int layout, as int64: for each dof its body, the previous dof on
its path to the root, one past its subtree's last dof). Every joint has at most 6 dofs, so
nv <= 6 nb and nv + DOF_ROWS + 1 rows fit (the last one: the dofs' depths).
"""
import numpy as np
from numba import njit

from .crba import mass_matrix
from .derivatives import (DOF_BODY, DOF_INT_WIDTH, DOF_PARENT, IDENTITY, fill_dof_int,
                          ltdl_solve, tree_ltdl)
from .entry import entry_point
from .minverse_recursive import MINVERSE_SIGNATURE, recursive_mass_matrix_inverse

from ..model.layout import IDX_V, JOINT_NV_COL, STATUS_OK, STATUS_SHAPE_OUT, STATUS_SINGULAR

# rows of `blocks` after the factor that hold the dof tree: (nv, DOF_INT_WIDTH) int64 in
# DOF_INT_WIDTH rows of nv float64 (same item size)
DOF_ROWS = DOF_INT_WIDTH
# Above this mean depth of a dof (the dofs on its path to the root, itself included) the
# factor's solves (O(nv x sum of depths): O(nv^3) on a serial chain) cost more than Carpentier &
# Mansard's recursion (O(nv^2)), which minverse_recursive.py then runs. Measured per call on
# serial chains (AMD EPYC Zen 5; factor path vs recursion): 20 links (mean depth 10.5) 4.1 vs
# 4.7 us, 25 (13) 6.9 vs 6.7, 30 (15.5) 10.6 vs 9.2, 50 (25.5) 42 vs 22; talos_reduced (38
# dofs on five branches) takes the factor path. Re-measured after the recursion's column loops
# were vectorised: 16 links 2.8 vs 3.7, 20 4.5 vs 5.3, 22 5.5 vs 6.2 (the crossing still
# between 22 and 24 links).
RECURSION_FROM_MEAN_DEPTH = 12.0


@njit(inline="always")
def mean_dof_depth(dof_int, depth):
    """The mean over the dofs of their depth (dofs on the path to the root, itself included);
    depth (>= nv,) is scratch. Dofs are depth-first, so a dof's parent comes before it."""
    nv = dof_int.shape[0]
    total = 0.0
    for d in range(nv):
        parent = dof_int[d, DOF_PARENT]
        depth[d] = 1.0 if parent < 0 else depth[parent] + 1.0
        total += depth[d]
    return total / nv


@entry_point(MINVERSE_SIGNATURE)
def mass_matrix_inverse(body_int, body_float, work, blocks, q, out):
    """out (nv, nv) = M(q)^-1 (module docstring); blocks ((nb + 1) * 6, nv) is scratch.
    Returns a status: crba.mass_matrix's (out aliasing q, a bad state, out's shape), or
    STATUS_SINGULAR + i when the pivot of joint i's dof is not positive (the ABA's joint-space
    articulated inertia, by the ABA's relative test). Deep trees go to the recursion
    (RECURSION_FROM_MEAN_DEPTH), which returns the same statuses."""
    nb = body_int.shape[0] - 1
    model_nv = body_int[nb, IDX_V] + body_int[nb, JOINT_NV_COL] if nb > 0 else 0
    if (model_nv > 0 and blocks.shape[1] == model_nv
            and blocks.shape[0] >= model_nv + DOF_ROWS + 1):
        # the tree's shape decides (the same every call): the dof tree is filled here once
        dof_int = blocks[model_nv:model_nv + DOF_ROWS].view(np.int64).reshape(
            (model_nv, DOF_INT_WIDTH))
        fill_dof_int(body_int, dof_int)
        if mean_dof_depth(dof_int, blocks[model_nv + DOF_ROWS]) > RECURSION_FROM_MEAN_DEPTH:
            return recursive_mass_matrix_inverse(body_int, body_float, work, blocks, q, out)
    status = mass_matrix(body_int, body_float, work, q, out)
    if status != STATUS_OK:
        return status
    nv = out.shape[0]
    if nv == 0:
        return STATUS_OK
    if blocks.shape[0] < nv + DOF_ROWS + 1 or blocks.shape[1] != nv:
        return STATUS_SHAPE_OUT
    # the shapes above are the ones the dof tree was filled under, at the top
    factor = blocks[:nv]
    dof_int = blocks[nv:nv + DOF_ROWS].view(np.int64).reshape((nv, DOF_INT_WIDTH))
    bad = tree_ltdl(dof_int, out, factor)
    if bad >= 0:
        return STATUS_SINGULAR + dof_int[bad, DOF_BODY]
    for r in range(nv):
        for c in range(nv):
            out[r, c] = 1.0 if r == c else 0.0
    ltdl_solve(dof_int, factor, out, 1.0, IDENTITY)
    return STATUS_OK
