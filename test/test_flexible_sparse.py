"""The forward dynamics' load-time tables of a flexible body (mbd_ros/flexible/layout.py SPARSE and
CONDENSE blocks: sparse entry lists of S^kl, G_k, H_k = m_ff^-1 G_k and the constants Y0, A0)
against their dense definitions summed here directly from the lumped points and mode shapes
(mass m_j at u0_j, rotary inertia J_j, displacement N_j q_f, small rotation Psi_j q_f).
Tolerance: 1e-12 of each tensor's largest entry (entries below 1e-14 of it are dropped by design,
the rest is round-off of the summation order)."""
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from mbd_ros.model.flexible import layout as F
from flexible_models import beam_entry, lumped_modal_data, pendulum_urdf

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-12

CHAIN_URDF = """<?xml version="1.0"?>
<robot name="chain">
  <link name="base"/>
  <link name="beam"><inertial><origin xyz="0.35 0 0"/><mass value="0.378"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="0.015" iyz="0" izz="0.015"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0.25 0.05 0"/><mass value="0.4"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="beam"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="continuous"><parent link="beam"/><child link="link2"/>
    <origin xyz="0.7 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(*args, **kwargs)


def _arm(modes):
    data = yaml.safe_load((ROOT / "config" / "flexible_arm.yaml").read_text())
    data["flexible_links"][0]["modes"] = modes
    return _quiet(str(ROOT / "urdf" / "flexible_arm.urdf"), flexible=data)


def _modal(tmp_path):
    path = tmp_path / "strip.npz"
    lumped_modal_data(path, 0.5, 2e-4, 2e-9, 11, 3)
    return _quiet(pendulum_urdf(0.5), flexible={"flexible_links": [
        {"link": "beam", "modal_data": str(path)}]})


def _dense_definitions(points):
    """S^kl (3, 3, n, n), G_k (3, n, n), m_ff (n, n), M_fr(0) (n, 6) from the points."""
    m, u0, N, Psi, J = points.mass, points.position, points.N, points.Psi, points.inertia
    S = np.zeros((3, 3) + (N.shape[2],) * 2)
    mff = np.zeros((N.shape[2],) * 2)
    coupling = np.zeros((N.shape[2], 6))
    for j in range(len(m)):
        S += m[j] * np.einsum("ka,lb->klab", N[j], N[j])
        mff += m[j] * N[j].T @ N[j] + Psi[j].T @ J[j] @ Psi[j]
        coupling[:, :3] += m[j] * N[j].T
        # angular momentum about the origin of the mode's point motion: u0 x (m N) + J Psi
        coupling[:, 3:] += m[j] * np.cross(u0[j], N[j].T) + (J[j] @ Psi[j]).T
    G = np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])
    return S, G, mff, coupling


def _entries(fdata, start):
    """(count, entries (count, 3)) of a flat entry list at fdata[start]."""
    count = int(fdata[start])
    return count, fdata[start + 1:start + 1 + 3 * count].reshape(count, 3)


def _close(actual, expected):
    scale = np.abs(expected).max()
    assert np.abs(actual - expected).max() <= TOL * max(scale, 1e-300), \
        (np.abs(actual - expected).max(), scale)


@pytest.mark.parametrize("make", ["arm4", "arm8", "chain", "modal"])
def test_sparse_tables_equal_the_dense_shape_integrals(make, tmp_path):
    robot = {"arm4": lambda: _arm(4), "arm8": lambda: _arm(8),
             "chain": lambda: _quiet(CHAIN_URDF, flexible=beam_entry(
                 0.7, 2e-4, 2e-9, 1e-9, modes=6, torsion=True)),
             "modal": lambda: _modal(tmp_path)}[make]()
    fint, fdata = robot.tree.fint, robot.tree.fdata
    condensed = 0
    for fb in robot.flexible.bodies:
        n = fb.n_modes
        S, G, mff, coupling = _dense_definitions(fb.points)
        # S^kl from its entry list: out = (3 k + l) n + a, in = b
        count, ent = _entries(fdata, fint[fb.body, F.SPARSE])
        s_rows = np.zeros((9 * n, n))
        for out, b, value in ent:
            s_rows[int(out), int(b)] += value
        _close(s_rows.reshape(3, 3, n, n), S)
        assert count < S.size or make == "modal"      # the beams' tables are sparse
        # G_k: (a, 3 b + k)
        _, ent = _entries(fdata, fint[fb.body, F.SPARSE] + 1 + 3 * count)
        g = np.zeros((3, n, n))
        for a, bk, value in ent:
            g[int(bk) % 3, int(a), int(bk) // 3] += value
        _close(g, G)
        if fint[fb.body, F.MFF_INV] < 0:
            continue
        condensed += 1
        # CONDENSE block: m_ff^-1, Y0, A0, then H_k entries (6 a + 3 + k, b)
        o = fint[fb.body, F.MFF_INV]
        minv = np.linalg.inv(mff)
        _close(fdata[o:o + n * n].reshape(n, n), minv)
        y0 = minv @ coupling
        y = o + n * n
        _close(fdata[y:y + 6 * n].reshape(n, 6), y0)
        _close(fdata[y + 6 * n:y + 6 * n + 36].reshape(6, 6), coupling.T @ y0)
        _, ent = _entries(fdata, y + 6 * n + 36)
        h = np.zeros((3, n, n))
        for out, b, value in ent:
            a, k = divmod(int(out) - 3, 6)
            h[k, a, int(b)] += value
        _close(h, np.einsum("ab,kbc->kac", minv, G))
    # a flexible link without movable children has the constant-m_ff tables, the chain's not
    assert condensed == (0 if make == "chain" else 1)
