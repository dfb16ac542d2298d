"""Flexible links welded by a fixed joint become bodies of their own, with a 0-dof joint.

The rigid Model (model.py) merges a link welded by a fixed joint into its parent's body. A
flexible link deforms relative to whatever it is clamped to, so it cannot be merged:
`split_welded` returns a copy of the Model in which each such link, together with the links welded
below it, forms a body of its own that hangs from its parent's body by a joint of type
JOINT_FIXED with no coordinates (JOINT_NQ_COL = JOINT_NV_COL = 0). Its reference frame is the
link frame, where the link is clamped; the fixed joint's wrench row (wrench_rows) becomes the
body's joint wrench, which is what a force sensor at the clamp reads.

q, v, the joint names and their indices do not change; only the bodies are renumbered (the new
body is inserted where the depth-first numbering puts it, so parent[i] < i and the subtrees stay
index ranges [i, SUBTREE_END)), and the link arrays are re-expressed in the new body's frame.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import layout as L
from ..model import spatial_inertia


def split_welded(model, tree, link_indices):
    """Copy of `model` (built from `tree`) in which every link of `link_indices` that its parent
    welds by a fixed joint is a body of its own (module docstring). Links already hanging from a
    movable joint are left as they are."""
    for index in sorted(link_indices):
        if model.link_int[index, L.LINK_FIXED] and model.link_int[index, L.LINK_PARENT] >= 0:
            model = _split_one(model, tree, int(index))
    return model


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def _split_one(model, tree, flex):
    body_int = np.array(model.body_int)
    body_float = np.array(model.body_float)
    link_int = np.array(model.link_int)
    link_float = np.array(model.link_float)
    rows = np.array(model.wrench_rows)
    n_links = link_int.shape[0]
    old_body = int(link_int[flex, L.LINK_BODY])
    # the links that move with the flexible link: itself and those welded below it (links are
    # numbered depth-first, so one pass in index order finds them)
    moved = [flex]
    for index in range(flex + 1, n_links):
        if link_int[index, L.LINK_FIXED] and link_int[index, L.LINK_PARENT] in moved:
            moved.append(index)
    # depth-first position of the new body: after every body created before the link
    new = 1 + int(max(link_int[:flex, L.LINK_BODY].max(initial=0), old_body))
    rot_f = link_float[flex, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3).copy()
    pos_f = link_float[flex, L.LINK_POS:L.LINK_POS + 3].copy()

    def renumber(b):
        return b + 1 if b >= new else b

    # ---- bodies: insert row `new`, renumber the others
    body_int = np.insert(body_int, new, 0, axis=0)
    body_float = np.insert(body_float, new, 0.0, axis=0)
    for i in range(body_int.shape[0]):
        if i != new and body_int[i, L.PARENT] >= 0:
            body_int[i, L.PARENT] = renumber(int(body_int[i, L.PARENT]))
    body_int[new, L.PARENT] = old_body
    body_int[new, L.JOINT_TYPE] = L.JOINT_FIXED
    body_int[new, L.IDX_Q] = 0          # no coordinates (0: a valid index, never read)
    body_int[new, L.IDX_V] = 0
    body_int[new, L.JOINT_NQ_COL] = 0
    body_int[new, L.JOINT_NV_COL] = 0
    body_int[new, L.PARENT_LINK] = link_int[flex, L.LINK_PARENT]
    body_float[new, L.PLACEMENT_ROT:L.PLACEMENT_ROT + 9] = rot_f.ravel()
    body_float[new, L.PLACEMENT_POS:L.PLACEMENT_POS + 3] = pos_f
    body_float[new, L.FRICTION_SPEED] = model.friction_velocity
    # bodies whose joint hangs from a moved link: their placement in the new body's frame
    for i in range(1, body_int.shape[0]):
        if i != new and body_int[i, L.PARENT_LINK] in moved and body_int[i, L.PARENT] == old_body:
            body_int[i, L.PARENT] = new
            rot = rot_f.T @ body_float[i, L.PLACEMENT_ROT:L.PLACEMENT_ROT + 9].reshape(3, 3)
            pos = rot_f.T @ (body_float[i, L.PLACEMENT_POS:L.PLACEMENT_POS + 3] - pos_f)
            body_float[i, L.PLACEMENT_ROT:L.PLACEMENT_ROT + 9] = rot.ravel()
            body_float[i, L.PLACEMENT_POS:L.PLACEMENT_POS + 3] = pos
            if body_int[i, L.JOINT_TYPE] == L.JOINT_REVOLUTE:   # constant factors (model.py)
                axis = body_float[i, L.AXIS:L.AXIS + 3]
                body_float[i, L.ROT_AXIS_SKEW:L.ROT_AXIS_SKEW + 9] = (rot @ _skew(axis)).ravel()
                body_float[i, L.ROT_AXIS:L.ROT_AXIS + 3] = rot @ axis
    # ---- links: the moved ones in the new body's frame, with their inertias
    inertia_new = np.zeros((6, 6))
    mass_new, moment_new = 0.0, np.zeros(3)
    inertia_old = np.zeros((6, 6))
    mass_old, moment_old = 0.0, np.zeros(3)
    for index in range(n_links):
        body = int(link_int[index, L.LINK_BODY])
        if index not in moved:
            link_int[index, L.LINK_BODY] = renumber(body)
            continue
        spec = tree.links[model.link_names[index]]
        old_rot = link_float[index, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
        old_pos = link_float[index, L.LINK_POS:L.LINK_POS + 3]
        inertia_old += link_float[index, L.LINK_INERTIA:L.LINK_INERTIA + 36].reshape(6, 6)
        mass_old += spec.mass
        moment_old += spec.mass * (old_rot @ spec.com + old_pos)
        rot = rot_f.T @ old_rot
        pos = rot_f.T @ (old_pos - pos_f)
        com = rot @ spec.com + pos
        inertia = spatial_inertia(spec.mass, com, rot @ spec.inertia @ rot.T)
        link_int[index, L.LINK_BODY] = new
        link_float[index, L.LINK_ROT:L.LINK_ROT + 9] = rot.ravel()
        link_float[index, L.LINK_POS:L.LINK_POS + 3] = pos
        link_float[index, L.LINK_INERTIA:L.LINK_INERTIA + 36] = inertia.ravel()
        inertia_new += inertia
        mass_new += spec.mass
        moment_new += spec.mass * com
    body_float[new, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36] = inertia_new.ravel()
    body_float[new, L.MASS] = mass_new
    if mass_new > 0:
        body_float[new, L.COM:L.COM + 3] = moment_new / mass_new
    if old_body > 0:   # the universe (body 0) carries no inertia
        inertia = body_float[old_body, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36].reshape(6, 6)
        mass = body_float[old_body, L.MASS]
        moment = mass * body_float[old_body, L.COM:L.COM + 3] - moment_old
        mass -= mass_old
        body_float[old_body, L.SPATIAL_INERTIA:L.SPATIAL_INERTIA + 36] = \
            (inertia - inertia_old).ravel()
        body_float[old_body, L.MASS] = mass
        body_float[old_body, L.COM:L.COM + 3] = moment / mass if mass > 0 else 0.0
    # ---- joint wrench rows: the fixed joint above the link is now the new body's joint
    for row in range(rows.shape[0]):
        body, link = int(rows[row, 0]), int(rows[row, 1])
        if body >= 0:
            rows[row, 0] = renumber(body)
        elif link == flex:
            rows[row] = (new, -1)
    # ---- subtrees (depth-first ranges), from the leaves up
    nb = body_int.shape[0] - 1
    body_int[:, L.SUBTREE_END] = np.arange(nb + 1) + 1
    for i in range(nb, 0, -1):
        parent = body_int[i, L.PARENT]
        body_int[parent, L.SUBTREE_END] = max(body_int[parent, L.SUBTREE_END],
                                              body_int[i, L.SUBTREE_END])
    names = list(model.body_names)
    names.insert(new, model.link_names[flex])
    for array in (body_int, body_float, link_int, link_float, rows):
        array.setflags(write=False)
    return dataclasses.replace(model, body_int=body_int, body_float=body_float, link_int=link_int,
                               link_float=link_float, wrench_rows=rows, body_names=tuple(names))
