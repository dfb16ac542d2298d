"""Build the flat arrays of a robot with flexible links (layout.py) from the rigid Model.

Coordinates: the rigid joints keep their places in q and v (those of the rigid robot, depth-first
over the URDF), and the elastic coordinates of the flexible links are appended after them, link
by link in body order (`elastic_names` 'forearm/mode_1', ...). The recursion does not care where
they sit (it addresses them by offsets), and every rigid-joint index stays what it is for the
same URDF without flexible links.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from .. import layout as L
from ...errors import ModelError, excerpt
from . import layout as F
from .beam import BeamFE
from .modal import ModalData
from .mode_blocks import block_pure_modes
from .attachment import attachment_points, equivalent_points, welded_rigid_bodies
from .points import rigid_offset, rigid_properties, shape_integrals
from .split import split_welded

MASS_WARNING_RATIO = 0.05


@dataclass
class FlexibleBody:
    """What the builder knows of one flexible link (for summaries, tests and docs)."""
    link: str
    body: int
    n_modes: int
    frequencies: np.ndarray        # (n_modes,) Hz, of the link clamped at its joint frame
    mass: float
    com: np.ndarray                # (3,) link frame
    inertia: np.ndarray            # (3, 3) about the com
    K: np.ndarray                  # (n, n) modal stiffness
    D: np.ndarray                  # (n, n) modal damping
    Mff: np.ndarray                # (n, n) modal mass
    iq: int                        # first elastic coordinate in q
    iv: int                        # first elastic velocity in v
    shapes: object = field(repr=False, default=None)   # callable point (3,) -> (Phi_t, Phi_r)
    link_index: int = -1           # the flexible link
    attachments: dict = field(repr=False, default_factory=dict)   # welded link -> attachment a
    welded: dict = field(repr=False, default_factory=dict)   # welded link -> its MassPoints (q_f)

    def frame_shapes(self, link, point):
        """(Phi_t, Phi_r) (3, n_modes) of a point (3,) of the body frame rigidly fixed to `link`:
        the flexible link itself (its shapes there), or a link welded to it (the rigid motion of
        its attachment frame, linearised: Phi_t(a) - [point - a] Phi_r(a), Phi_r(a);
        attachment.py)."""
        a = self.attachments.get(link)
        if a is None:
            return self.shapes(point)
        Phi_t, Phi_r = self.shapes(a)
        return rigid_offset(Phi_t, Phi_r, np.asarray(point, dtype=float) - a)


@dataclass
class FlexibleModel:
    fint: np.ndarray
    ffloat: np.ndarray
    fdata: np.ndarray
    fwork_size: int
    nq: int
    nv: int
    elastic_names: list
    elastic_q_indices: np.ndarray
    elastic_v_indices: np.ndarray
    bodies: list                   # FlexibleBody per flexible link
    link_shapes: dict              # link index -> (Phi_t (3, n), Phi_r (3, n), FlexibleBody)
    tree_links: dict               # link name -> urdf LinkSpec (mass properties of welded links)
    model: object = None           # the rigid Model with welded flexible links split (split.py)


def build_flexible(tree, model, specs):
    """FlexibleModel for the rigid `model` of `tree` with the FlexibleLinkSpec tuple `specs`.

    A flexible link welded to its parent by a fixed joint becomes a body of its own with a 0-dof
    joint (split.py): FlexibleModel.model is then the rigid model with those bodies split out,
    the one the robot facade must use (link poses, wrench rows, loads)."""
    link_index = {name: i for i, name in enumerate(model.link_names)}
    for spec in specs:
        index = link_index[spec.link]
        if index == 0 and model.link_int[index, L.LINK_BODY] == 0:
            raise ModelError(f"{spec.label}: field 'link': '{spec.link}' is the fixed root of the "
                             "robot; a flexible link must hang from a joint (movable or fixed)")
    model = split_welded(model, tree, [link_index[spec.link] for spec in specs])
    nb = model.n_bodies
    flexible = {}                                    # body -> (spec, link index)
    for spec in specs:
        index = link_index[spec.link]
        flexible[int(model.link_int[index, L.LINK_BODY])] = (spec, index)

    # ---- per flexible body: points, modes, shape integrals
    bodies = {}
    nq, nv = model.nq, model.nv
    for body in sorted(flexible):
        spec, index = flexible[body]
        try:
            bodies[body] = _flexible_body(tree, model, body, spec, index, nq, nv)
        except ModelError:
            raise
        except (ArithmeticError, ValueError, np.linalg.LinAlgError, IndexError) as exc:
            # a net under the input checks (spec.py, modal.py): degenerate data whose FE or
            # modal eigenproblem fails
            field = "'beam'" if spec.beam is not None else "'modal_data'"
            raise ModelError(f"{spec.label}: field {field}: the data give no usable modal model "
                             f"({type(exc).__name__}: {excerpt(str(exc), 160)})") from None
        nq += bodies[body].n_modes
        nv += bodies[body].n_modes

    # ---- flat arrays
    fint = -np.ones((nb + 1, F.FINT_WIDTH), dtype=np.int64)
    fint[:, F.NF] = 0
    fint[0, F.IDX_Q] = nq          # row 0 (the universe) carries the sizes of q and v
    fint[0, F.IDX_V] = nv
    ffloat = np.zeros((nb + 1, F.FFLOAT_WIDTH))
    ffloat[:, :L.BODY_FLOAT_WIDTH] = model.body_float     # the rigid rows (joints, inertias)
    blocks, fwork_size = [], 0
    offset = 0
    for i in range(1, nb + 1):
        bi = model.body_int[i]
        fint[i, F.PARENT] = bi[L.PARENT]
        fint[i, F.JOINT_TYPE] = bi[L.JOINT_TYPE]
        fint[i, F.IDX_Q] = bi[L.IDX_Q]
        fint[i, F.IDX_V] = bi[L.IDX_V]
        fint[i, F.NV_JOINT] = bi[L.JOINT_NV_COL]
        fint[i, F.NQ_JOINT] = bi[L.JOINT_NQ_COL]
        if i in bodies:
            fb = bodies[i]
            n = fb.n_modes
            fint[i, F.NF] = n
            fint[i, F.IDX_QF] = fb.iq
            fint[i, F.IDX_VF] = fb.iv
            fint[i, F.FLEX] = offset
            block = _flex_block(fb.invariants, fb.K, fb.D)
            assert block.size == F.flex_block_size(n)
            blocks.append(block)
            offset += block.size
            fint[i, F.FWORK] = fwork_size
            fwork_size += F.fwork_block_size(n)
            ffloat[i, F.INERTIA:F.INERTIA + 36] = 0.0     # the FLEX block holds its inertia
    parents = {int(fint[i, F.PARENT]) for i in range(1, nb + 1)}
    for body, fb in bodies.items():
        fint[body, F.SPARSE] = offset
        block = sparse_block(fb.invariants)
        blocks.append(block)
        offset += block.size
        if body not in parents:      # no movable child: M_ff = m_ff is constant, invert it once
            fint[body, F.MFF_INV] = offset
            block = condense_block(fb.invariants)
            blocks.append(block)
            offset += block.size
    link_shapes = {}
    for i in range(1, nb + 1):
        parent = int(fint[i, F.PARENT])
        if parent in bodies:
            fb = bodies[parent]
            Phi_t, Phi_r = fb.frame_shapes(int(model.body_int[i, L.PARENT_LINK]),
                                           ffloat[i, F.PLACEMENT_POS:F.PLACEMENT_POS + 3])
            fint[i, F.ATTACH] = offset
            blocks.append(np.concatenate([Phi_t.ravel(), Phi_r.ravel()]))
            offset += 6 * fb.n_modes
            fint[i, F.XI] = fwork_size
            fwork_size += 6 * fb.n_modes
    for index in range(len(model.link_names)):
        body = int(model.link_int[index, L.LINK_BODY])
        if body in bodies and not (index == link_index[bodies[body].link]):
            fb = bodies[body]
            pos = model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
            link_shapes[index] = (*fb.frame_shapes(index, pos), fb)
    fdata = np.concatenate(blocks) if blocks else np.zeros(1)
    names, iq_list, iv_list = [], [], []
    for body in sorted(bodies):
        fb = bodies[body]
        names += [f"{fb.link}/mode_{k + 1}" for k in range(fb.n_modes)]
        iq_list += list(range(fb.iq, fb.iq + fb.n_modes))
        iv_list += list(range(fb.iv, fb.iv + fb.n_modes))
    for array in (fint, ffloat, fdata):
        array.setflags(write=False)
    return FlexibleModel(fint=fint, ffloat=ffloat, fdata=fdata, fwork_size=max(fwork_size, 1),
                         nq=nq, nv=nv, elastic_names=names,
                         elastic_q_indices=np.array(iq_list, dtype=np.int64),
                         elastic_v_indices=np.array(iv_list, dtype=np.int64),
                         bodies=[bodies[b] for b in sorted(bodies)], link_shapes=link_shapes,
                         tree_links=dict(tree.links), model=model)


def _flexible_body(tree, model, body, spec, index, nq, nv):
    """FlexibleBody of the flexible link `spec` (link `index`, body `body`), its elastic
    coordinates from q[nq], v[nv]."""
    attachments = attachment_points(model, index)
    welded = welded_rigid_bodies(tree, model, attachments)
    if spec.beam is not None:
        fe = BeamFE(spec.beam)
        points_full = fe.points
        own = rigid_properties(points_full)
        for _, *rigid in welded:     # rigid bodies at their attachments (attachment.py)
            points_full = points_full.extend(equivalent_points(*rigid, fe.point_shapes))
        if spec.modes > fe.n_dofs:
            raise ModelError(f"{spec.label}: field 'modes': {spec.modes} modes requested, the "
                             f"beam of {spec.beam.elements} elements has {fe.n_dofs}")
        M = points_full.mass_matrix()
        # modes exactly in one family (stretch, torsion, bending per plane): no round-off
        # couplings in the shape integrals (mode_blocks.py)
        w2, phi = block_pure_modes(fe.K, M, spec.modes)
        points = points_full.in_basis(phi)
        K = phi.T @ fe.K @ phi

        def shapes(point, fe=fe, phi=phi):
            N, Psi = fe.point_shapes(point)
            return N @ phi, Psi @ phi
    else:
        data = ModalData(spec.modal_data, spec.modes, spec.label)
        points = data.points
        own = rigid_properties(points)
        for _, *rigid in welded:
            points = points.extend(equivalent_points(*rigid, data.point_shapes))
        K = data.K
        shapes = data.point_shapes
    n = K.shape[0]
    invariants = shape_integrals(points)
    Mff = 0.5 * (invariants["Mff"] + invariants["Mff"].T)
    try:
        w2, modes = scipy.linalg.eigh(K, Mff)
    except np.linalg.LinAlgError:
        raise ModelError(f"{spec.label}: the modal mass matrix is not positive definite "
                         "(the modes move no mass)") from None
    if np.any(w2 <= 0):
        raise ModelError(f"{spec.label}: the modal stiffness K_ff is not positive definite")
    omega = np.sqrt(w2)
    D = Mff @ modes @ np.diag(2.0 * spec.damping_ratio * omega) @ modes.T @ Mff
    urdf_mass = tree.links[spec.link].mass
    if urdf_mass > 0 and abs(own[0] - urdf_mass) > MASS_WARNING_RATIO * urdf_mass:
        warnings.warn(f"{spec.label}: the URDF mass of '{spec.link}' ({urdf_mass:.4g} kg) "
                      f"differs from its flexible model's ({own[0]:.4g} kg) by more than "
                      f"{MASS_WARNING_RATIO:.0%}; the flexible model's mass properties are used",
                      stacklevel=4)
    fb = FlexibleBody(
        link=spec.link, body=body, n_modes=n, frequencies=omega / (2 * np.pi), mass=own[0],
        com=own[1], inertia=own[2], K=0.5 * (K + K.T), D=0.5 * (D + D.T), Mff=Mff, iq=nq,
        iv=nv, shapes=shapes, link_index=index, attachments=attachments,
        welded={link: equivalent_points(*rigid, shapes) for link, *rigid in welded})
    fb.invariants = invariants
    fb.points = points           # MassPoints in the modal coordinates q_f
    return fb


def gyroscopic_matrices(inv):
    """G_k (3, n, n): G_x = S^zy - S^yz, G_y = S^xz - S^zx, G_z = S^yx - S^xy (the q_f-linear part of
    the angular rows of M_rf, seed 001 I_Rf, and the gyroscopic matrix sum_k w_k G_k)."""
    S = inv["Skl"]
    return np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def coupling_at_rest(inv):
    """M_fr at q_f = 0 (n, 6): linear columns S_f^T, angular columns I_Rf(0) + J_Psi^T."""
    Iu, n = inv["Iu"], inv["Sf"].shape[1]
    out = np.empty((n, 6))
    out[:, :3] = inv["Sf"].T
    out[:, 3] = Iu[1, 2] - Iu[2, 1] + inv["JPsi"][0]
    out[:, 4] = Iu[2, 0] - Iu[0, 2] + inv["JPsi"][1]
    out[:, 5] = Iu[0, 1] - Iu[1, 0] + inv["JPsi"][2]
    return out


def _entries(tensor, out_index, in_index):
    """The entries of `tensor` above SPARSE_TOL times its largest |entry| as a flat list
    [count, (out, in, value) * count] (out_index, in_index: functions of the entry's indices).
    Ordered by rank within their output, then by output, so that consecutive entries accumulate
    into different outputs (no store-to-load chain in the kernel's loop)."""
    scale = np.abs(tensor).max() if tensor.size else 0.0
    found = [] if not scale > 0 else [
        (out_index(*idx), in_index(*idx), tensor[tuple(idx)])
        for idx in np.argwhere(np.abs(tensor) > F.SPARSE_TOL * scale)]
    rank, seen = [], {}
    for out, _, _ in found:
        rank.append(seen.get(out, 0))
        seen[out] = rank[-1] + 1
    order = sorted(range(len(found)), key=lambda e: (rank[e], found[e][0], found[e][1]))
    return [len(found)] + [x for e in order for x in found[e]]


def sparse_block(inv):
    """The SPARSE block (layout.py) of a flexible body: the nonzero entries of S^kl and G_k."""
    S, n = inv["Skl"], inv["Sf"].shape[1]
    s_list = _entries(S, lambda k, l, a, b: (3 * k + l) * n + a, lambda k, l, a, b: b)
    G = gyroscopic_matrices(inv)                       # (k, a, b)
    g_list = _entries(G, lambda k, a, b: a, lambda k, a, b: 3 * b + k)
    return np.array(s_list + g_list, dtype=float)


def condense_block(inv):
    """The CONDENSE block (layout.py) of a flexible body whose M_ff = m_ff is constant."""
    minv = np.linalg.inv(0.5 * (inv["Mff"] + inv["Mff"].T))
    minv = 0.5 * (minv + minv.T)
    M0 = coupling_at_rest(inv)
    Y0 = minv @ M0
    A0 = M0.T @ Y0
    H = np.einsum("ab,kbc->kac", minv, gyroscopic_matrices(inv))     # (k, a, b)
    h_list = _entries(H, lambda k, a, b: 6 * a + 3 + k, lambda k, a, b: b)
    return np.concatenate([minv.ravel(), Y0.ravel(), (0.5 * (A0 + A0.T)).ravel(),
                           np.array(h_list, dtype=float)])


def _flex_block(inv, K, D):
    S = inv["Skl"]
    return np.concatenate([[inv["mass"]], inv["S0"], inv["P0"].ravel(), inv["Jsum"].ravel(),
                           inv["Sf"].ravel(), inv["Iu"].ravel(), inv["Skl"].ravel(),
                           inv["JPsi"].ravel(), inv["Mff"].ravel(), K.ravel(), D.ravel(),
                           (S[2, 1] - S[1, 2]).ravel(), (S[0, 2] - S[2, 0]).ravel(),
                           (S[1, 0] - S[0, 1]).ravel()])
