"""Lumped-mass modal data from an FE code (`modal_data:` an .npz file).

Arrays (names; the alternatives in brackets are accepted too):
- ``node_positions`` [positions]  (n, 3) undeformed node positions in the link frame (m)
- ``node_masses``    [masses]     (n,)  node masses (kg), >= 0, total > 0
- ``node_inertias``  [inertias]   optional (n, 3, 3) or (n, 3) (diagonal) rotary inertias (kg m^2)
- ``mode_shapes``    [modes]      (n_modes, n, 6) per mode and node [ux uy uz rx ry rz]
  (translation and small rotation, link frame), the link clamped at its joint frame
- ``K_ff`` [stiffness]  (n_modes, n_modes) symmetric positive definite modal stiffness, or
  ``frequencies`` (n_modes,) natural frequencies in Hz (then K_ff = diag((2 pi f)^2 m_kk), the
  modes assumed orthogonal with respect to the lumped masses)
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .points import MassPoints, rigid_offset

_NAMES = {
    "node_positions": ("node_positions", "positions"),
    "node_masses": ("node_masses", "masses"),
    "node_inertias": ("node_inertias", "inertias"),
    "mode_shapes": ("mode_shapes", "modes"),
    "K_ff": ("K_ff", "stiffness"),
    "frequencies": ("frequencies",),
}


class ModalData:
    """Modal points (shapes in modal coordinates) and the modal stiffness of the kept modes."""

    def __init__(self, path, n_modes, label):
        where = f"{label}: field 'modal_data' ({path})"
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {key: np.asarray(npz[key]) for key in npz.files}
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a model error
            raise ModelError(f"{where}: cannot read the .npz file: {exc}") from None

        def get(name, required=True):
            for key in _NAMES[name]:
                if key in arrays:
                    value = arrays[key]
                    if value.dtype.kind not in "fiu":
                        raise ModelError(f"{where}: array '{key}': must be numeric")
                    value = value.astype(float)
                    if not np.all(np.isfinite(value)):
                        raise ModelError(f"{where}: array '{key}': contains NaN or inf")
                    return value
            if required:
                raise ModelError(f"{where}: missing the array '{name}'")
            return None

        position = get("node_positions")
        if position.ndim != 2 or position.shape[1] != 3:
            raise ModelError(f"{where}: array 'node_positions': must have shape (n, 3), "
                             f"got {position.shape}")
        n = position.shape[0]
        mass = get("node_masses")
        if mass.shape != (n,):
            raise ModelError(f"{where}: array 'node_masses': must have shape ({n},), got {mass.shape}")
        if np.any(mass < 0) or mass.sum() <= 0:
            raise ModelError(f"{where}: array 'node_masses': must be >= 0 with a positive total")
        inertia = get("node_inertias", required=False)
        if inertia is None:
            inertia = np.zeros((n, 3, 3))
        elif inertia.shape == (n, 3):
            inertia = np.einsum("pk,kl->pkl", inertia, np.eye(3))
        elif inertia.shape != (n, 3, 3):
            raise ModelError(f"{where}: array 'node_inertias': must have shape ({n}, 3, 3) or "
                             f"({n}, 3), got {inertia.shape}")
        if not np.allclose(inertia, np.swapaxes(inertia, 1, 2)) or \
                np.any(np.linalg.eigvalsh(inertia) < -1e-12):
            raise ModelError(f"{where}: array 'node_inertias': must be symmetric positive "
                             "semi-definite")
        shapes = get("mode_shapes")
        if shapes.ndim != 3 or shapes.shape[1:] != (n, 6):
            raise ModelError(f"{where}: array 'mode_shapes': must have shape (n_modes, {n}, 6), "
                             f"got {shapes.shape}")
        available = shapes.shape[0]
        if n_modes is None:
            n_modes = available
        if n_modes > available:
            raise ModelError(f"{label}: field 'modes': {n_modes} modes requested, the modal data "
                             f"has {available}")
        shapes = shapes[:n_modes]
        N = np.transpose(shapes[:, :, :3], (1, 2, 0))          # (n, 3, n_modes)
        Psi = np.transpose(shapes[:, :, 3:], (1, 2, 0))
        self.points = MassPoints(mass, position, inertia, N, Psi)
        Mff = self.points.mass_matrix()
        if np.linalg.eigvalsh(Mff)[0] <= 1e-12 * max(np.abs(Mff).max(), 1e-300):
            raise ModelError(f"{where}: array 'mode_shapes': the modes are linearly dependent or "
                             "move no mass (singular modal mass matrix)")
        K = get("K_ff", required=False)
        if K is not None:
            if K.shape != (available, available):
                raise ModelError(f"{where}: array 'K_ff': must have shape ({available}, "
                                 f"{available}), got {K.shape}")
            K = K[:n_modes, :n_modes]
            if not np.allclose(K, K.T, rtol=1e-9, atol=1e-12 * np.abs(K).max()):
                raise ModelError(f"{where}: array 'K_ff': must be symmetric")
            if np.linalg.eigvalsh(K)[0] <= 0:
                raise ModelError(f"{where}: array 'K_ff': must be positive definite")
        else:
            freq = get("frequencies", required=False)
            if freq is None:
                raise ModelError(f"{where}: needs the array 'K_ff' or 'frequencies'")
            if freq.shape != (available,):
                raise ModelError(f"{where}: array 'frequencies': must have shape ({available},), "
                                 f"got {freq.shape}")
            if np.any(freq <= 0):
                raise ModelError(f"{where}: array 'frequencies': must be positive (Hz)")
            K = np.diag((2 * np.pi * freq[:n_modes]) ** 2 * np.diag(Mff))
        self.K = 0.5 * (K + K.T)
        self.n_modes = n_modes

    def point_shapes(self, point):
        """Shapes (3, n_modes) of a point rigidly attached to the nearest node."""
        point = np.asarray(point, dtype=float)
        j = int(np.argmin(np.linalg.norm(self.points.position - point, axis=1)))
        return rigid_offset(self.points.N[j], self.points.Psi[j], point - self.points.position[j])
