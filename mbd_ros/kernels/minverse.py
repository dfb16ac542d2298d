"""The inverse of the joint-space mass matrix, M(q)^-1, never by a dense inversion: M by the
composite rigid body algorithm (crba.py), factorised as M = L^T D L along the tree's sparsity
(Featherstone's RBDA, Table 6.3: derivatives.tree_ltdl), then M^-1 = L^-1 D^-1 L^-T by the tree
solves applied to the identity (RBDA Table 6.4: derivatives.ltdl_solve, IDENTITY: the upper
triangle, then mirrored). Cost after the CRBA: O(sum of depths^2) for the factor and
O(nv sum of depths) for the solves, on contiguous row segments (vectorised from
derivatives.WIDE_ROWS_FROM dofs on); the same factor and solves as the forward dynamics'
derivatives (dqdd/dtau = M^-1).

It replaced Carpentier & Mansard's recursive O(n^2) algorithm ("Analytical derivatives of rigid
body dynamics algorithms", RSS 2018, §IV-B; Pinocchio's computeMinverse), whose per-column loops
ran as scalar code here: per call in a numba loop (bench/RESULTS.md, AMD EPYC Zen 5) talos_reduced
11.0 -> 6.4 µs, panda 1.73 -> 0.95 µs, ur5 1.02 -> 0.55 µs.

Scratch: `blocks` ((nb + 1) * 6, nv): its first nv rows hold the factor, the next DOF_ROWS rows
the dof tree (derivatives' dof_int layout, as int64: for each dof its body, the previous dof on
its path to the root, one past its subtree's last dof). Every joint has at most 6 dofs, so
nv <= 6 nb and nv + DOF_ROWS rows fit.
"""
import numpy as np
from numba import types

from .crba import mass_matrix
from .derivatives import DOF_BODY, DOF_INT_WIDTH, IDENTITY, fill_dof_int, ltdl_solve, tree_ltdl
from .entry import entry_point

from ..model.layout import STATUS_OK, STATUS_SHAPE_OUT, STATUS_SINGULAR

_f8 = types.float64
_i8 = types.int64
_INT2 = types.Array(_i8, 2, "C")
_FLOAT2 = types.Array(_f8, 2, "C")
_VECTOR = types.Array(_f8, 1, "C")
MINVERSE_SIGNATURE = _i8(_INT2, _FLOAT2, _FLOAT2, _FLOAT2, _VECTOR, _FLOAT2)
# rows of `blocks` after the factor that hold the dof tree: (nv, DOF_INT_WIDTH) int64 in
# DOF_INT_WIDTH rows of nv float64 (same item size)
DOF_ROWS = DOF_INT_WIDTH


@entry_point(MINVERSE_SIGNATURE)
def mass_matrix_inverse(body_int, body_float, work, blocks, q, out):
    """out (nv, nv) = M(q)^-1 (module docstring); blocks ((nb + 1) * 6, nv) is scratch.
    Returns a status: crba.mass_matrix's (out aliasing q, a bad state, out's shape), or
    STATUS_SINGULAR + i when the pivot of joint i's dof is not positive (the ABA's joint-space
    articulated inertia, by the ABA's relative test)."""
    status = mass_matrix(body_int, body_float, work, q, out)
    if status != STATUS_OK:
        return status
    nv = out.shape[0]
    if nv == 0:
        return STATUS_OK
    if blocks.shape[0] < nv + DOF_ROWS or blocks.shape[1] != nv:
        return STATUS_SHAPE_OUT
    factor = blocks[:nv]
    dof_int = blocks[nv:nv + DOF_ROWS].view(np.int64).reshape((nv, DOF_INT_WIDTH))
    fill_dof_int(body_int, dof_int)
    bad = tree_ltdl(dof_int, out, factor)
    if bad >= 0:
        return STATUS_SINGULAR + dof_int[bad, DOF_BODY]
    for r in range(nv):
        for c in range(nv):
            out[r, c] = 1.0 if r == c else 0.0
    ltdl_solve(dof_int, factor, out, 1.0, IDENTITY)
    return STATUS_OK
