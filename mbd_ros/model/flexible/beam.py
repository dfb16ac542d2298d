"""Finite elements of a straight Euler-Bernoulli beam along +x, clamped at x = 0.

Per node 6 degrees of freedom [u_x, u_y, u_z, theta_x, theta_y, theta_z] (link frame). Axial
u_x and torsion theta_x are linear between nodes; bending in the x-y plane (E Iz) and in the
x-z plane (E Iy) uses cubic Hermite functions with theta_z = du_y/dx and theta_y = -du_z/dx.
Stiffness is the exact element matrix; the mass is consistent: the kinetic energy is integrated
over each element with 4-point Gauss quadrature (exact for products of cubics), which also gives
the lumped points (points.py) the floating frame of reference uses, so the FE mass matrix and the
FFRF m_ff are the same matrix. Rotary inertia: the polar rho (Iy + Iz) of the cross-section
(torsion); the bending rotary inertia is neglected (Euler-Bernoulli). Without G and J the
torsion degrees of freedom are dropped.
"""
from __future__ import annotations

import numpy as np

from .points import MassPoints, rigid_offset
from ...inputs.flexible import BeamSpec

GAUSS_POINTS = 4


class BeamFE:
    """The discretised, clamped beam. Degrees of freedom `dofs` (c,) index the free nodal dofs
    (node k >= 1, component 0..5 as 6 (k - 1) + component)."""

    def __init__(self, beam: BeamSpec):
        self.beam = beam
        self.n_elements = ne = beam.elements
        self.element_length = le = beam.length / ne
        torsion = beam.G is not None
        full = 6 * ne                           # nodes 1..ne (node 0 clamped)
        keep = [d for d in range(full) if torsion or d % 6 != 3]
        self._column = -np.ones(full, dtype=int)
        self._column[keep] = np.arange(len(keep))
        self.n_dofs = len(keep)
        K = np.zeros((full + 6, full + 6))      # with the clamped node, dropped below
        E, G = beam.E, beam.G
        for e in range(ne):
            a = 6 * e
            b = a + 6
            # axial
            k = E * beam.area / le
            _add(K, [a, b], k * np.array([[1.0, -1.0], [-1.0, 1.0]]))
            if torsion:
                k = G * beam.J / le
                _add(K, [a + 3, b + 3], k * np.array([[1.0, -1.0], [-1.0, 1.0]]))
            hermite = np.array([[12.0, 6 * le, -12.0, 6 * le],
                                [6 * le, 4 * le ** 2, -6 * le, 2 * le ** 2],
                                [-12.0, -6 * le, 12.0, -6 * le],
                                [6 * le, 2 * le ** 2, -6 * le, 4 * le ** 2]]) / le ** 3
            # x-y plane: (u_y, theta_z) ; x-z plane: (u_z, -theta_y)
            _add(K, [a + 1, a + 5, b + 1, b + 5], E * beam.Iz * hermite)
            sign = np.diag([1.0, -1.0, 1.0, -1.0])
            _add(K, [a + 2, a + 4, b + 2, b + 4], E * beam.Iy * sign @ hermite @ sign)
        K = K[6:, 6:]
        self.K = K[np.ix_(keep, keep)]
        self.points = self._quadrature_points()

    # -------------------------------------------------------------------- shapes along the axis
    def axis_shapes(self, x):
        """(N (3, c), Psi (3, c)): displacement and small rotation of the axis point at x."""
        beam, le = self.beam, self.element_length
        x = min(max(float(x), 0.0), beam.length)
        e = min(int(x / le), self.n_elements - 1)
        xi = (x - e * le) / le
        N = np.zeros((3, 6 * self.n_elements + 6))
        Psi = np.zeros((3, 6 * self.n_elements + 6))
        a, b = 6 * e, 6 * e + 6
        lin = (1.0 - xi, xi)
        h = (1 - 3 * xi ** 2 + 2 * xi ** 3, le * (xi - 2 * xi ** 2 + xi ** 3),
             3 * xi ** 2 - 2 * xi ** 3, le * (-xi ** 2 + xi ** 3))
        dh = ((-6 * xi + 6 * xi ** 2) / le, 1 - 4 * xi + 3 * xi ** 2,
              (6 * xi - 6 * xi ** 2) / le, -2 * xi + 3 * xi ** 2)
        for node, w in ((a, lin[0]), (b, lin[1])):
            N[0, node] = w                       # u_x
            Psi[0, node + 3] = w                 # theta_x
        # u_y = h0 v_a + h1 thz_a + h2 v_b + h3 thz_b ; theta_z = u_y'
        for (dof, coef, dcoef) in ((a + 1, h[0], dh[0]), (a + 5, h[1], dh[1]),
                                   (b + 1, h[2], dh[2]), (b + 5, h[3], dh[3])):
            N[1, dof] = coef
            Psi[2, dof] = dcoef
        # u_z = h0 w_a - h1 thy_a + h2 w_b - h3 thy_b ; theta_y = -u_z'
        for (dof, coef, dcoef) in ((a + 2, h[0], dh[0]), (a + 4, -h[1], -dh[1]),
                                   (b + 2, h[2], dh[2]), (b + 4, -h[3], -dh[3])):
            N[2, dof] = coef
            Psi[1, dof] = -dcoef
        return self._reduce(N), self._reduce(Psi)

    def point_shapes(self, point):
        """Shapes (3, c) of a point of the link (3,): rigidly attached to the cross-section at
        x = clamp(point_x, 0, length)."""
        point = np.asarray(point, dtype=float)
        x = min(max(point[0], 0.0), self.beam.length)
        N, Psi = self.axis_shapes(x)
        return rigid_offset(N, Psi, point - np.array([x, 0.0, 0.0]))

    def _reduce(self, M):
        out = np.zeros((M.shape[0], self.n_dofs))
        cols = self._column
        full = M[:, 6:]
        mask = cols >= 0
        out[:, cols[mask]] = full[:, mask]
        return out

    def _quadrature_points(self):
        beam, le = self.beam, self.element_length
        xi_g, w_g = np.polynomial.legendre.leggauss(GAUSS_POINTS)
        mass, position, inertia, N, Psi = [], [], [], [], []
        polar = beam.density * (beam.Iy + beam.Iz)
        for e in range(self.n_elements):
            for xi, w in zip(xi_g, w_g):
                x = e * le + 0.5 * (xi + 1.0) * le
                dx = 0.5 * w * le
                n, psi = self.axis_shapes(x)
                mass.append(beam.density * beam.area * dx)
                position.append([x, 0.0, 0.0])
                inertia.append(np.diag([polar * dx, 0.0, 0.0]))
                N.append(n)
                Psi.append(psi)
        return MassPoints(np.array(mass), np.array(position), np.array(inertia), np.array(N),
                          np.array(Psi))


def _add(K, dofs, k):
    K[np.ix_(dofs, dofs)] += k
