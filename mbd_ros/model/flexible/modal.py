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

import zipfile

import numpy as np

from ...errors import ModelError, excerpt
from .points import MassPoints, rigid_offset

_NAMES = {
    "node_positions": ("node_positions", "positions"),
    "node_masses": ("node_masses", "masses"),
    "node_inertias": ("node_inertias", "inertias"),
    "mode_shapes": ("mode_shapes", "modes"),
    "K_ff": ("K_ff", "stiffness"),
    "frequencies": ("frequencies",),
}


# Sizes a modal file may have (its arrays are checked against them, and against each other,
# from their .npy headers before anything is read): the shape integrals cost O(nodes * modes^2)
# and every flexible dynamics call O(modes^2); an FE export of a link is far below these.
MAX_MODAL_NODES = 100_000
MAX_MODAL_MODES = 200
MAX_MODE_SHAPE_ENTRIES = 12_000_000     # n_modes * nodes * 6 float64: 96 MB
MAX_NPZ_MEMBERS = 1000


class _NpzMembers:
    """The arrays of an .npz file, read lazily: only the members asked for, each after its
    .npy header (shape, dtype) has been checked, so an unused or oversized member costs
    nothing; no pickled objects (allow_pickle=False, object dtypes refused)."""

    def __init__(self, path, where):
        self.where = where
        try:
            self.zip = zipfile.ZipFile(path)
            infos = self.zip.infolist()
        except (OSError, zipfile.BadZipFile, ValueError, RuntimeError) as exc:
            raise ModelError(f"{where}: cannot read the .npz file: {exc}") from None
        if len(infos) > MAX_NPZ_MEMBERS:
            self.zip.close()
            raise ModelError(f"{where}: cannot read the .npz file: {len(infos)} members, more "
                             f"than {MAX_NPZ_MEMBERS}")
        self.members = {info.filename[:-4]: info for info in infos
                        if info.filename.endswith(".npy")}

    def close(self):
        self.zip.close()

    def header(self, key):
        """(shape, dtype) of member `key` from its .npy header, nothing else read."""
        try:
            with self.zip.open(self.members[key]) as stream:
                version = np.lib.format.read_magic(stream)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
                else:
                    raise ValueError(f"unsupported .npy format version {version}")
        except (OSError, ValueError, zipfile.BadZipFile, RuntimeError, EOFError) as exc:
            raise ModelError(f"{self.where}: array '{key}': unreadable header: {exc}") from None
        if dtype.hasobject or dtype.kind not in "fiu" or dtype.fields is not None:
            raise ModelError(f"{self.where}: array '{key}': must be numeric (int or float), "
                             f"got dtype {excerpt(str(dtype), 60)}")
        return tuple(shape), dtype

    def read(self, key):
        """The array `key` as float64 (its header checked by the caller), finite."""
        try:
            with self.zip.open(self.members[key]) as stream:
                value = np.lib.format.read_array(stream, allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile, RuntimeError, EOFError) as exc:
            raise ModelError(f"{self.where}: array '{key}': cannot read it: {exc}") from None
        value = value.astype(float)
        if not np.all(np.isfinite(value)):
            raise ModelError(f"{self.where}: array '{key}': contains NaN or inf")
        return value


class ModalData:
    """Modal points (shapes in modal coordinates) and the modal stiffness of the kept modes."""

    def __init__(self, path, n_modes, label):
        where = f"{label}: field 'modal_data' ({path})"
        npz = _NpzMembers(path, where)
        try:
            self._read(npz, where, n_modes, label)
        finally:
            npz.close()

    def _read(self, npz, where, n_modes, label):
        def get(name, shapes=None, required=True):
            """Member `name` (or an alternative name) if its header's shape is one of `shapes`
            (tuples, None = any; checked before reading); None if absent and not required."""
            for key in _NAMES[name]:
                if key in npz.members:
                    shape, _ = npz.header(key)
                    if shapes is not None and shape not in shapes:
                        expected = " or ".join(str(s) for s in shapes)
                        raise ModelError(f"{where}: array '{key}': must have shape {expected}, "
                                         f"got {shape}")
                    return npz.read(key)
            if required:
                raise ModelError(f"{where}: missing the array '{name}'")
            return None

        def shape_of(name):
            for key in _NAMES[name]:
                if key in npz.members:
                    return key, npz.header(key)[0]
            raise ModelError(f"{where}: missing the array '{name}'")

        key, shape = shape_of("node_positions")
        if len(shape) != 2 or shape[1] != 3:
            raise ModelError(f"{where}: array '{key}': must have shape (n, 3), got {shape}")
        n = shape[0]
        if not 1 <= n <= MAX_MODAL_NODES:
            raise ModelError(f"{where}: array '{key}': {n} nodes, must be 1 to {MAX_MODAL_NODES}")
        key, shape = shape_of("mode_shapes")
        if len(shape) != 3 or shape[1:] != (n, 6):
            raise ModelError(f"{where}: array '{key}': must have shape (n_modes, {n}, 6), "
                             f"got {shape}")
        available = shape[0]
        if available < 1:
            raise ModelError(f"{where}: array '{key}': has no modes (shape {shape})")
        if available > MAX_MODAL_MODES or available * n * 6 > MAX_MODE_SHAPE_ENTRIES:
            raise ModelError(f"{where}: array '{key}': {available} modes of {n} nodes, more than "
                             f"the {MAX_MODAL_MODES} modes and {MAX_MODE_SHAPE_ENTRIES} entries "
                             "a modal file may have")
        position = get("node_positions")
        mass = get("node_masses", [(n,)])
        if np.any(mass < 0) or mass.sum() <= 0:
            raise ModelError(f"{where}: array 'node_masses': must be >= 0 with a positive total")
        inertia = get("node_inertias", [(n, 3, 3), (n, 3)], required=False)
        if inertia is None:
            inertia = np.zeros((n, 3, 3))
        elif inertia.shape == (n, 3):
            inertia = np.einsum("pk,kl->pkl", inertia, np.eye(3))
        if not np.allclose(inertia, np.swapaxes(inertia, 1, 2)) or \
                np.any(np.linalg.eigvalsh(inertia) < -1e-12):
            raise ModelError(f"{where}: array 'node_inertias': must be symmetric positive "
                             "semi-definite")
        shapes = get("mode_shapes")
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
        K = get("K_ff", [(available, available)], required=False)
        if K is not None:
            K = K[:n_modes, :n_modes]
            if not np.allclose(K, K.T, rtol=1e-9, atol=1e-12 * np.abs(K).max()):
                raise ModelError(f"{where}: array 'K_ff': must be symmetric")
            if np.linalg.eigvalsh(K)[0] <= 0:
                raise ModelError(f"{where}: array 'K_ff': must be positive definite")
        else:
            freq = get("frequencies", [(available,)], required=False)
            if freq is None:
                raise ModelError(f"{where}: needs the array 'K_ff' or 'frequencies'")
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
