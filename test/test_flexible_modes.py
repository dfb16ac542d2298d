"""Beam modes made exactly block-pure (mbd_ros/flexible/mode_blocks.py) against scipy's dense
generalized eigen-solver on the same finite-element matrices.

References: scipy.linalg.eigh(K, M) (frequencies and the eigen-residual it achieves itself), the
beam's own decoupling (stretch, torsion and the two bending planes share no stiffness or mass
entry), and the Euler-Bernoulli closed form of the first bending frequency of each plane.
Tolerances: frequencies 1e-12 relative to eigh's (they are not recomputed); eigen-residual no
worse than 2x eigh's own (both are ~1e-9 of |K phi| for this stiff beam); M-orthonormality 1e-12.
"""
import numpy as np
import scipy.linalg

from mbd_ros.model.flexible.beam import BeamFE
from mbd_ros.model.flexible.mode_blocks import block_pure_modes, coupled_blocks
from mbd_ros.inputs.flexible import BeamSpec

ALUMINIUM_BAR = dict(length=0.6, density=2700.0, area=2.0e-4, E=7.0e10, Iy=6.667e-9,
                     Iz=1.667e-9, G=2.6e10, J=4.58e-9, elements=10)


def _fe(**change):
    spec = BeamSpec(**{**ALUMINIUM_BAR, **change})
    fe = BeamFE(spec)
    return fe.K, fe.points.mass_matrix(), spec


def _residual(K, M, w2, phi):
    return (np.abs(K @ phi - (M @ phi) * w2).max(axis=0) / np.abs(K @ phi).max(axis=0)).max()


def test_beam_families_are_four_decoupled_blocks():
    K, M, _ = _fe()
    labels = coupled_blocks(K, M)
    assert labels.max() + 1 == 4                       # stretch, torsion, x-y and x-z bending
    for b in range(4):
        inside = labels == b
        assert np.all(K[np.ix_(inside, ~inside)] == 0.0)
        assert np.all(M[np.ix_(inside, ~inside)] == 0.0)


def test_pure_modes_are_eigenmodes_with_exact_zeros_outside_their_block():
    K, M, spec = _fe()
    labels = coupled_blocks(K, M)
    n = 10
    w2_ref, phi_ref = scipy.linalg.eigh(K, M, subset_by_index=[0, n - 1])
    w2, phi = block_pure_modes(K, M, n)
    np.testing.assert_allclose(w2, w2_ref, rtol=1e-12)
    assert np.abs(phi.T @ M @ phi - np.eye(n)).max() < 1e-12
    assert _residual(K, M, w2, phi) <= 2.0 * _residual(K, M, w2_ref, phi_ref)
    for j in range(n):
        assert len(np.unique(labels[phi[:, j] != 0.0])) == 1, f"mode {j} is not block-pure"
        # same mode as eigh's (same sign, changed by the solver's round-off only)
        assert np.abs(phi[:, j] - phi_ref[:, j]).max() < 1e-8 * np.abs(phi_ref[:, j]).max()
    # the lowest mode of each bending plane: Euler-Bernoulli 1.8751^2 sqrt(E I / (rho A L^4))
    for inertia in (spec.Iz, spec.Iy):
        exact = 1.8751 ** 2 * np.sqrt(spec.E * inertia / (spec.density * spec.area
                                                          * spec.length ** 4))
        assert np.min(np.abs(np.sqrt(w2) / exact - 1.0)) < 1e-3


def test_modes_of_equal_frequency_in_two_blocks_are_left_as_solved():
    # a square section: both bending planes have the same frequencies, eigh may mix them
    K, M, _ = _fe(Iy=2.0e-9, Iz=2.0e-9)
    w2_ref, phi_ref = scipy.linalg.eigh(K, M, subset_by_index=[0, 5])
    w2, phi = block_pure_modes(K, M, 6)
    labels = coupled_blocks(K, M)
    for j in range(6):
        blocks = np.unique(labels[np.abs(phi_ref[:, j]) > 1e-6 * np.abs(phi_ref[:, j]).max()])
        if len(blocks) > 1:                            # a mixture: kept unchanged
            np.testing.assert_array_equal(phi[:, j], phi_ref[:, j])
    assert np.abs(phi.T @ M @ phi - np.eye(6)).max() < 1e-12
    assert _residual(K, M, w2, phi) <= 2.0 * _residual(K, M, w2_ref, phi_ref)
