"""Lumped description of a flexible body: points with mass, rotary inertia and shape matrices.

Every flexible link, whether from `beam:` data or from `modal_data`, is reduced to points j of
the link (seed 001, "Koncentralt tomegek"): mass m_j at u0_j (link frame), rotary inertia J_j
(3x3 about the point, link axes), and linear maps from the body's coordinates c (FE degrees of
freedom of the clamped beam, or modal coordinates) to the point's displacement N_j c (3) and
small rotation Psi_j c (3). From the modal basis Phi (c = Phi q_f) the shape integrals of the
floating frame of reference formulation are sums over the points (shape_integrals below).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MassPoints:
    """mass (p,), position (p, 3), inertia (p, 3, 3), N (p, 3, c), Psi (p, 3, c)."""
    mass: np.ndarray
    position: np.ndarray
    inertia: np.ndarray
    N: np.ndarray
    Psi: np.ndarray

    def extend(self, other):
        return MassPoints(*(np.concatenate([a, b]) for a, b in
                            zip((self.mass, self.position, self.inertia, self.N, self.Psi),
                                (other.mass, other.position, other.inertia, other.N, other.Psi))))

    def mass_matrix(self):
        """(c, c) sum m_j N_j^T N_j + Psi_j^T J_j Psi_j: the kinetic energy of the deformation."""
        return (np.einsum("p,pka,pkb->ab", self.mass, self.N, self.N)
                + np.einsum("pka,pkl,plb->ab", self.Psi, self.inertia, self.Psi))

    def in_basis(self, phi):
        """The same points with shapes in the coordinates q_f (c = phi q_f, phi (c, n))."""
        return MassPoints(self.mass, self.position, self.inertia, self.N @ phi, self.Psi @ phi)


def rigid_offset(N_axis, Psi_axis, offset):
    """Shapes of a point rigidly attached at `offset` (3,) from a point with shapes N_axis,
    Psi_axis (3, c): u = u_axis + theta x offset = u_axis - [offset] theta (small rotation)."""
    skew = np.array([[0.0, -offset[2], offset[1]], [offset[2], 0.0, -offset[0]],
                     [-offset[1], offset[0], 0.0]])
    return N_axis - skew @ Psi_axis, Psi_axis.copy()


def shape_integrals(points: MassPoints):
    """The invariants of seed 001 (eqs. 2-7, I_Rf, m_ff) as sums over the points, for shapes
    already in the coordinates q_f (n of them):

    mass m, S0 (3) = sum m u0, P0 (3,3) = Theta^kl = sum m u0_k u0_l, Jsum (3,3) = sum J,
    Sf (3, n) = sum m N, Iu (3, 3, n) = I^kl = sum m u0_k N_l, Skl (3, 3, n, n) = S^kl =
    sum m N_k^T N_l, JPsi (3, n) = sum J Psi, Mff (n, n) = S^xx + S^yy + S^zz + sum Psi^T J Psi.
    """
    m, u0, N = points.mass, points.position, points.N
    return dict(
        mass=float(m.sum()),
        S0=np.einsum("p,pk->k", m, u0),
        P0=np.einsum("p,pk,pl->kl", m, u0, u0),
        Jsum=points.inertia.sum(axis=0),
        Sf=np.einsum("p,pka->ka", m, N),
        Iu=np.einsum("p,pk,pla->kla", m, u0, N),
        Skl=np.einsum("p,pka,plb->klab", m, N, N),
        JPsi=np.einsum("pkl,pla->ka", points.inertia, points.Psi),
        Mff=points.mass_matrix(),
    )


def rigid_properties(points: MassPoints):
    """(mass, com (3,), inertia about the com (3, 3)) of the undeformed body."""
    m = points.mass.sum()
    com = (points.mass @ points.position) / m
    d = points.position - com
    inertia = points.inertia.sum(axis=0) + np.einsum("p,pk,pl->kl", points.mass, d, d) * -1.0
    inertia += np.eye(3) * np.einsum("p,pk,pk->", points.mass, d, d)
    return float(m), com, inertia
