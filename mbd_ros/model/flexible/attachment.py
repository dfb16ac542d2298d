"""Links welded to a flexible link: rigid bodies attached at their joint origin on it.

A link welded (by fixed joints, directly or through other welded links) to a flexible link F is
attached where its welded chain meets F: at the origin a of the fixed joint on F (the
"attachment", in F's reference frame). The attachment frame moves with the deformed point
a + Phi_t(a) q_f and turns by the elastic rotation g = Phi_r(a) q_f there. To the order that the
floating frame of reference keeps for F's own points (a displacement field linear in q_f whose
kinetic energy is kept exactly; docs/flexible.md, "Links welded to a flexible link"), every point
x of a welded link moves by the rigid motion of the attachment frame, linearised in q_f:

    u(x) = Phi_t(a) q_f + g x (x - a) = (Phi_t(a) - [x - a] Phi_r(a)) q_f.

Every shape integral of seed 001 (S_0, Theta^kl, S_f, I^kl, S^kl, m_ff) is an integral of a
polynomial of degree <= 2 in x over the link's mass, so it depends only on the link's mass m, centre
of mass c and second moment E = sum m rho rho^T = tr(J_c)/2 1 - J_c (rho = x - c, J_c its inertia
about c). `equivalent_points` gives point masses with these three moments (on the principal axes
of E, no rotary inertia): the FE mass matrix, the shape integrals, the forward and inverse
dynamics, the energies and the fixed-joint wrenches (robot/flexible_tree.py) then include the welded link
with its centre of mass and its inertia following the attachment frame (mass-matrix couplings and
velocity-product terms) exactly for that field.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import layout as L
from . import layout as F
from .points import MassPoints, rigid_offset


def attachment_points(model, flexible_index):
    """{link index: attachment point a (3,) in the flexible link's frame} of the links welded to
    the flexible link `flexible_index` (those sharing its body), each through its welded chain."""
    body = model.link_int[flexible_index, L.LINK_BODY]
    out = {}
    for index in range(len(model.link_names)):
        if index == flexible_index or model.link_int[index, L.LINK_BODY] != body:
            continue
        root = index
        while model.link_int[root, L.LINK_PARENT] != flexible_index:
            root = int(model.link_int[root, L.LINK_PARENT])
        out[index] = np.array(model.link_float[root, L.LINK_POS:L.LINK_POS + 3])
    return out


def welded_rigid_bodies(tree, model, attachments):
    """[(link index, mass, com (3,), inertia about the com (3, 3), attachment a (3,))] of the
    welded links with mass, in the flexible link's frame. A welded link of zero mass but
    non-zero inertia (an unphysical URDF inertial, which the rigid model keeps as given) has
    no point-mass equivalent here: it is left out, with a warning naming it."""
    out = []
    for index, a in attachments.items():
        spec = tree.links[model.link_names[index]]
        if spec.mass <= 0:
            if np.abs(spec.inertia).max() > 1e-12:
                warnings.warn(
                    f"link '{model.link_names[index]}' (welded to a flexible link) has zero mass "
                    f"but a non-zero inertia tensor: the flexible model represents a welded "
                    f"link by point masses, so its inertia is left out (give it its mass)",
                    stacklevel=5)
            continue
        rot = model.link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        pos = model.link_float[index, L.LINK_POS:L.LINK_POS + 3]
        out.append((index, spec.mass, rot @ spec.com + pos, rot @ spec.inertia @ rot.T, a))
    return out


def equivalent_points(mass, com, inertia, attach, shapes):
    """MassPoints of a rigid body (mass, com (3,), inertia about the com (3, 3)) attached at
    `attach` (3,) to the body whose point shapes are `shapes` (point -> (N (3, c), Psi (3, c))):
    point masses with the body's mass, centre of mass and second moment E = tr(J)/2 1 - J (on the
    principal axes of E, at distance s = sqrt(tr E / m) from the com, weights m lambda_k /
    (2 tr E); a weight is negative only for an inertia that violates the triangle inequality),
    each moving by (Phi_t(a) - [x - a] Phi_r(a)) q_f, without rotary inertia."""
    inertia = 0.5 * (np.asarray(inertia, float) + np.asarray(inertia, float).T)
    second = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    trace = float(np.trace(second))
    if not trace > 0.0:
        offsets, weights = [np.zeros(3)], [float(mass)]
    else:
        if np.count_nonzero(second - np.diag(np.diag(second))) == 0:
            lam, axes = np.diag(second).copy(), np.eye(3)   # exact axes: no round-off couplings
        else:
            lam, axes = np.linalg.eigh(second)
        s = np.sqrt(trace / mass)
        offsets, weights = [], []
        for k in range(3):
            if lam[k] == 0.0:
                continue
            for sign in (1.0, -1.0):
                offsets.append(sign * s * axes[:, k])
                weights.append(mass * lam[k] / (2.0 * trace))
    T, R = shapes(np.asarray(attach, float))
    positions = np.array([com + d for d in offsets])
    N, Psi = zip(*(rigid_offset(T, R, x - attach) for x in positions))
    n = len(weights)
    return MassPoints(np.array(weights), positions, np.zeros((n, 3, 3)), np.array(N), np.array(Psi))


def cayley(g):
    """(3, 3) Cayley rotation of the vector g (= exp([g]) to second order): the elastic rotation
    of a frame on a flexible link."""
    g = np.asarray(g, dtype=float)
    skew = np.array([[0.0, -g[2], g[1]], [g[2], 0.0, -g[0]], [-g[1], g[0], 0.0]])
    return np.eye(3) + (skew + 0.5 * skew @ skew) / (1.0 + 0.25 * g @ g)
