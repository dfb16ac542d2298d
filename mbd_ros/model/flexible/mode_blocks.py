"""Lowest modes of a finite-element model whose degrees of freedom fall into decoupled blocks.

A straight beam's stiffness and mass matrices couple its degrees of freedom only within four
families: stretching, torsion, bending in the x-y plane and bending in the x-z plane (points on
the axis, rotary inertia about the axis; flexible/beam.py). Each exact mode then lives in one
family, but a dense eigen-solver returns it with round-off (~1e-12 relative) in the others. Those
specks make every shape integral that couples two families (most of S^kl, G_k, the off-plane rows
of S_f) nonzero at round-off level, and the forward dynamics' sparse tables (flexible/build.py
sparse_block) then carry three times the entries they need. `block_pure_modes` sets each mode's
components outside its own block to exact zeros and re-normalises it; the modes change by the
round-off only. A mode that is not pure (two blocks with the same frequency, e.g. a square
cross-section's two bending planes, mix in any combination) is left as the solver returned it.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

# a mode is taken as living in one block when the kinetic energy of its other components is
# below this fraction of the total (round-off gives ~1e-24; a real mixture gives O(1))
IMPURITY_TOL = 1e-12


def coupled_blocks(K, M):
    """Labels (c,) of the blocks of degrees of freedom that K (c, c) and M (c, c) couple (the
    connected components of their combined nonzero pattern; exact zeros decouple)."""
    pattern = csr_matrix((K != 0.0) | (M != 0.0))
    _, labels = connected_components(pattern, directed=False)
    return labels


def block_pure_modes(K, M, n_modes):
    """(w2 (n_modes,), phi (c, n_modes)): the lowest eigenpairs of K phi = w2 M phi, M-normalised,
    each mode's components outside its own block of `coupled_blocks` set to exact zeros."""
    w2, phi = scipy.linalg.eigh(K, M, subset_by_index=[0, n_modes - 1])
    labels = coupled_blocks(K, M)
    if labels.max() == 0:
        return w2, phi
    phi = phi.copy()
    for j in range(phi.shape[1]):
        mode = phi[:, j]
        energy = np.array([mode[labels == b] @ M[np.ix_(labels == b, labels == b)]
                           @ mode[labels == b] for b in range(labels.max() + 1)])
        own = int(np.argmax(energy))
        if energy.sum() - energy[own] > IMPURITY_TOL * energy.sum():
            continue
        pure = np.where(labels == own, mode, 0.0)
        phi[:, j] = pure / np.sqrt(pure @ M @ pure)
    return w2, phi
