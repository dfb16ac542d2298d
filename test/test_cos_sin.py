"""kernels/cos_sin.py, the vectorized cos/sin of the centroidal pose pass, against libm (Python's
math.cos / math.sin): within a few ulp wherever the argument reduction is exact, libm's own
values beyond REDUCTION_LIMIT, and the layout that cos_sin_of reads back (more coordinates
than one workspace row too)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from mbd_ros.kernels import cos_sin as CS

EPS = np.finfo(float).eps


@njit(cache=False)
def _table(q, width):
    """cos_sin_rows on a (rows_needed, width) workspace, read back with cos_sin_of."""
    work = np.full((CS.rows_needed(q.shape[0], width), width), np.nan)
    CS.cos_sin_rows(q, q.shape[0], work, 0)
    out = np.empty((2, q.shape[0]))
    for k in range(q.shape[0]):
        out[0, k], out[1, k] = CS.cos_sin_of(work, 0, k)
    return out


def libm(q):
    return np.array([[math.cos(x) for x in q], [math.sin(x) for x in q]])


def test_cos_sin_matches_libm_to_a_few_ulp():
    rng = np.random.default_rng(3)
    quarter = np.pi / 4 * np.arange(-16, 17)
    q = np.concatenate([rng.uniform(-4.0, 4.0, 4000), rng.uniform(-1e3, 1e3, 2000),
                        rng.uniform(-9e7, 9e7, 2000), quarter, np.nextafter(quarter, 10.0),
                        np.nextafter(quarter, -10.0), [0.0, -0.0, 1e-300, -1e-12, 1e-8]])
    ours, reference = _table(q, 272), libm(q)
    # |cos|, |sin| <= 1: an absolute bound of a few ulp of 1 (the polynomial's and the reduction's
    # rounding, Cephes' documented ~1-2 ulp peak), as the poses' 1e-10 comparisons need
    np.testing.assert_allclose(ours, reference, rtol=0.0, atol=4 * EPS)
    assert ours[0, -5] == 1.0 and ours[1, -5] == 0.0       # cos 0, sin 0 exactly


def test_beyond_the_reduction_limit_libm_values_and_blocks_of_rows():
    rng = np.random.default_rng(4)
    q = rng.uniform(-3.0, 3.0, 700)                        # 3 blocks of a 272-wide workspace
    q[[5, 300, 650]] = [CS.REDUCTION_LIMIT, -3.0e9, 1.0e15]
    ours = _table(q, 272)
    reference = libm(q)
    np.testing.assert_allclose(ours, reference, rtol=0.0, atol=4 * EPS)
    for k in (5, 300, 650):                                 # recomputed by libm: the same bits
        assert ours[0, k] == reference[0, k] and ours[1, k] == reference[1, k]


def test_centroidal_kernels_without_the_rows_take_libm_with_the_same_results(erd_dir):
    """A frame workspace without the cos/sin rows (frame_workspace(..., nq=0)) takes the libm
    loop: center_of_mass and com_jacobian agree with the vectorized path to a few ulp of the
    result's scale (the two cos/sin differ by <= 4 ulp, composed along chains of ~7 poses
    and summed over 33 bodies: 64 eps)."""
    import mbd_ros
    from mbd_ros.kernels import centroidal as CE
    from mbd_ros.kernels import frame_kinematics as K
    robot = mbd_ros.load(str(erd_dir / "talos_data/robots/talos_reduced.urdf"),
                         floating_base=True, passive_forces=False)
    kinematics = robot._frames("center_of_mass")
    plain = K.frame_workspace(kinematics.body_int, kinematics.link_int, kinematics.link_float)
    assert plain.shape[0] < kinematics.work.shape[0]     # no cos/sin rows: the libm path
    q = robot.random_configuration(np.random.default_rng(5))
    for kernel, shape in ((CE.center_of_mass, (3,)), (CE.com_jacobian, (3, robot.nv))):
        with_rows, without = np.empty(shape), np.empty(shape)
        assert kernel(kinematics.body_int, kinematics.body_float, kinematics.work, q,
                      with_rows) == 0
        assert kernel(kinematics.body_int, kinematics.body_float, plain, q, without) == 0
        scale = np.abs(without).max()
        np.testing.assert_allclose(with_rows, without, rtol=0.0, atol=64 * EPS * scale)
