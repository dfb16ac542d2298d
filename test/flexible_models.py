"""Models shared by the flexible-link tests: URDF text of a flexible pendulum/arm and lumped
modal data (translational nodes) that both mbd_ros and Exudyn can read."""
import numpy as np

from mbd_ros.model.flexible.beam import BeamFE
from mbd_ros.inputs.flexible import BeamSpec

ALUMINIUM = dict(density=2700.0, E=7.0e10, G=2.6e10)


def pendulum_urdf(length, axis="0 1 0", tip_mass=0.0, name="pendulum"):
    """base -> revolute 'joint' (axis, at the origin) -> 'beam' (the flexible link, along +x)
    -> fixed 'tip_mount' at x = length -> 'tip' (a point mass tip_mass, or massless)."""
    inertial = ""
    if tip_mass > 0:
        inertial = (f'<inertial><origin xyz="0 0 0"/><mass value="{tip_mass}"/><inertia ixx="0" '
                    'ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>')
    return f"""<?xml version="1.0"?>
<robot name="{name}">
  <link name="base"/>
  <link name="beam"><inertial><origin xyz="{length / 2} 0 0"/><mass value="1.0"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="tip">{inertial}</link>
  <joint name="joint" type="continuous"><parent link="base"/><child link="beam"/>
    <origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="{axis}"/></joint>
  <joint name="tip_mount" type="fixed"><parent link="beam"/><child link="tip"/>
    <origin xyz="{length} 0 0" rpy="0 0 0"/></joint>
</robot>
"""


def beam_entry(length, area, Iy, Iz, modes, elements=10, torsion=False, damping_ratio=0.0):
    beam = dict(length=length, density=ALUMINIUM["density"], area=area, E=ALUMINIUM["E"],
                Iy=Iy, Iz=Iz, elements=elements)
    if torsion:
        beam.update(G=ALUMINIUM["G"], J=Iy + Iz)
    return {"flexible_links": [{"link": "beam", "beam": beam, "modes": modes,
                                "damping_ratio": damping_ratio}]}


def lumped_modal_data(path, length, area, Iy, n_nodes, n_modes):
    """Write an .npz of a beam in the x-z plane as lumped translational nodes (the kind of data an
    FE code exports): node positions, lumped masses, the lowest x-z bending modes of the Hermite
    FE model sampled at the nodes (translations only) and K_ff = Phi^T K Phi.
    Returns (positions (n,3), masses (n,), shapes (n_modes, n, 6), K_ff)."""
    spec = BeamSpec(length=length, density=ALUMINIUM["density"], area=area, E=ALUMINIUM["E"],
                    Iy=Iy, Iz=1e4 * Iy, G=None, J=None, elements=n_nodes - 1)
    fe = BeamFE(spec)
    import scipy.linalg
    M = fe.points.mass_matrix()
    _, phi = scipy.linalg.eigh(fe.K, M, subset_by_index=[0, n_modes - 1])
    x = np.linspace(0.0, length, n_nodes)
    positions = np.column_stack([x, np.zeros(n_nodes), np.zeros(n_nodes)])
    masses = np.full(n_nodes, ALUMINIUM["density"] * area * length / (n_nodes - 1))
    masses[[0, -1]] *= 0.5
    shapes = np.zeros((n_modes, n_nodes, 6))
    for j, xj in enumerate(x):
        N, _ = fe.axis_shapes(xj)
        shapes[:, j, :3] = (N @ phi).T
    K = phi.T @ fe.K @ phi
    K = 0.5 * (K + K.T)
    np.savez(path, node_positions=positions, node_masses=masses, mode_shapes=shapes, K_ff=K)
    return positions, masses, shapes, K
