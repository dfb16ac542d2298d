"""Operational-space inertia of a link, Lambda = (J M^-1 J^T)^-1 (Khatib 1987, eq. 51), from the
link Jacobian J (6, nv) and M^-1 (minverse.py), with optional Tikhonov damping
(J M^-1 J^T + damping 1)^-1.

Singularity test: J M^-1 J^T is symmetric positive semi-definite; it is taken as singular when a
pivot of its Cholesky factorization falls below SINGULAR_PIVOT times its largest diagonal entry
(a 6 x 6 matrix whose condition number exceeds ~1e12: Lambda would carry no correct digit in the
weak direction). The link then cannot be accelerated in some direction (fewer than six
independent joints above it, or a kinematic singularity).
"""
import math

from numba import types

from .entry import entry_point

SINGULAR_PIVOT = 1e-12
STATUS_OK = 0
STATUS_SINGULAR = 1

_f8 = types.float64
_FLOAT2 = types.Array(_f8, 2, "C")
SIGNATURE = types.int64(_FLOAT2, _FLOAT2, _f8, _FLOAT2, _FLOAT2)


@entry_point(SIGNATURE)
def operational_space_inertia(jac, minv, damping, scratch, out):
    """out (6, 6) = (J M^-1 J^T + damping 1)^-1 for jac = J (6, nv), minv = M^-1 (nv, nv);
    scratch (6, nv + 6). Returns STATUS_SINGULAR (out undefined) when the matrix is singular
    (module docstring). Only J's non-zero columns are visited."""
    nv = jac.shape[1]
    # scratch[:, :nv] = J M^-1 over J's non-zero columns
    for r in range(6):
        for c in range(nv):
            scratch[r, c] = 0.0
    for m in range(nv):
        nonzero = False
        for r in range(6):
            if jac[r, m] != 0.0:
                nonzero = True
        if not nonzero:
            continue
        for r in range(6):
            jr = jac[r, m]
            if jr != 0.0:
                for c in range(nv):
                    scratch[r, c] += jr * minv[m, c]
    # G = (J M^-1) J^T + damping 1 into scratch[:, nv:nv+6]
    for r in range(6):
        for c in range(r, 6):
            s = 0.0
            for m in range(nv):
                s += scratch[r, m] * jac[c, m]
            scratch[r, nv + c] = s
            scratch[c, nv + r] = s
        scratch[r, nv + r] += damping
    scale = 0.0
    for r in range(6):
        scale = max(scale, abs(scratch[r, nv + r]))
    if not scale > 0.0:
        return STATUS_SINGULAR
    # Cholesky G = L L^T into out's lower triangle
    for j in range(6):
        d = scratch[j, nv + j]
        for m in range(j):
            d -= out[j, m] * out[j, m]
        if not d > SINGULAR_PIVOT * scale:
            return STATUS_SINGULAR
        d = math.sqrt(d)
        out[j, j] = d
        for i in range(j + 1, 6):
            s = scratch[i, nv + j]
            for m in range(j):
                s -= out[i, m] * out[j, m]
            out[i, j] = s / d
    # L^-1 in place (lower triangle), then G^-1 = L^-T L^-1 into the upper triangle, mirrored
    for j in range(6):
        out[j, j] = 1.0 / out[j, j]
    for j in range(6):
        for i in range(j + 1, 6):
            s = 0.0
            for m in range(j, i):
                s -= out[i, m] * out[m, j]
            out[i, j] = s * out[i, i]
    for i in range(6):
        for j in range(i, 6):
            s = 0.0
            for m in range(j, 6):
                s += out[m, i] * out[m, j]
            out[i, j] = s
    for i in range(6):
        for j in range(i + 1, 6):
            out[j, i] = out[i, j]
    return STATUS_OK
