"""A run's changes to the robot, applied to the worker's cached robot without parsing anything:

- mass, inertia_scale, com_offset, payload: the moving bodies' inertial parameters
  (robot.inertial_parameters(), per body [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz,
  I_zz] about the body origin, body frame; docs/identification.md), changed and handed to
  robot.with_inertial_parameters(...) (checked: a negative mass or a non-physical inertia is a
  ValueError naming the body, so that run becomes a row with its error);
- stiffness: the force elements are built into the robot at load (robot/forces.py has no
  setter), so a run with another stiffness needs another robot: the runner rebuilds it once
  per distinct value on each worker (from the cached texts, with the element's `stiffness`
  replaced) and keeps it (runner.py);
- kp, kd, initial_position, initial_velocity: the rollout's arguments (drives=, q0, v0).

Changes apply in the order of the sweep file's variations (a payload after a mass change is
not scaled by it; before it, it is).

Rigid-body relations used (I_o about the body origin, I_c about the centre of mass c, with
I_o = I_c + m (|c|^2 1 - c c^T), the parallel-axis theorem; docs/theory.md):
  mass m -> m':         every parameter times m'/m (same centre of mass, same shape);
  inertia_scale s:      I_c -> s I_c (m and c unchanged);
  com_offset d (axis):  c -> c + d e_axis (m and I_c unchanged);
  payload m_p at p:     m -> m + m_p, m c -> m c + m_p p, I_o -> I_o + m_p (|p|^2 1 - p p^T)
                        (a point mass; p in the body frame, from the link frame by the link's
                        fixed pose in its body).
"""
from __future__ import annotations

import numpy as np

from ..robot.identification import spatial_inertia_of

N_PARAMETERS = 10
INERTIAL = ("mass", "inertia_scale", "com_offset", "payload")
AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


class VariationError(ValueError):
    """A variation that does not fit the robot (names the variation and the link / joint)."""


def _parallel_axis(m, c):
    """m (|c|^2 1 - c c^T) (3, 3): a point mass m at c about the origin."""
    return m * (float(c @ c) * np.eye(3) - np.outer(c, c))


def _set_rotational(block, inertia):
    """Write a symmetric (3, 3) inertia into a ten-parameter block, Pinocchio's order."""
    block[4:10] = (inertia[0, 0], inertia[0, 1], inertia[1, 1], inertia[0, 2], inertia[1, 2],
                   inertia[2, 2])


class InertialTargets:
    """Where each inertial variation of a spec acts on a robot, resolved once per robot:
    the body index (into body_names) and, for a payload, its point in the body frame."""

    def __init__(self, robot, variations):
        self.body = {}
        self.point = {}
        inertial = [v for v in variations if v.quantity in INERTIAL]
        if not inertial:
            return
        if getattr(robot, "flexible", None) is not None:
            raise VariationError("variations: inertial variations need a rigid robot (the "
                                 "flexible links' inertia is not ten rigid-body parameters)")
        bodies = robot.body_names
        q = np.asarray(robot.neutral(), dtype=float)
        for variation in inertial:
            link = variation.target
            what = f"variation '{variation.name}' ({variation.quantity}): link"
            if link not in robot.link_names:
                raise VariationError(f"{what} '{link}' is not a link of the robot (links: "
                                     f"{', '.join(robot.link_names[:8])}, ...)")
            body = robot.tree.link_body(robot.link_names.index(link))
            if body == 0:
                raise VariationError(f"{what} '{link}' is welded to the fixed base: it does "
                                     "not move, so its inertia plays no part")
            if variation.quantity != "payload" and link not in bodies:
                raise VariationError(f"{what} '{link}' is welded to the body "
                                     f"'{bodies[body - 1]}': vary that body (its mass, inertia "
                                     "and centre of mass include its welded links), or put a "
                                     "payload at this link")
            self.body[variation.name] = body - 1
            if variation.quantity == "payload":
                # the link's pose in its body's frame: fixed (welded), read at any q
                root = bodies[body - 1]
                if root not in robot.link_names:
                    raise VariationError(f"{what} '{link}': its body '{root}' has no link frame")
                t_body = robot.link_pose(q, root)
                t_link = robot.link_pose(q, link)
                relative = np.linalg.solve(t_body, t_link)
                self.point[variation.name] = relative[:3, :3] @ np.asarray(variation.offset) \
                    + relative[:3, 3]


def changed_parameters(parameters, targets, variations, values):
    """The inertial parameters (10 nb,) after the inertial variations with these values (one
    per variation, in order); the others are skipped. A new array. VariationError for a
    mass change of a massless body."""
    p = np.array(parameters, dtype=float)
    for variation, value in zip(variations, values):
        if variation.quantity not in INERTIAL:
            continue
        i = targets.body[variation.name]
        block = p[N_PARAMETERS * i:N_PARAMETERS * (i + 1)]
        m = block[0]
        if variation.quantity == "payload":
            point = targets.point[variation.name]
            inertia = spatial_inertia_of(block)[3:, 3:] + _parallel_axis(value, point)
            block[0] = m + value
            block[1:4] += value * point
            _set_rotational(block, inertia)
            continue
        if not m > 0.0:
            raise VariationError(f"variation '{variation.name}' ({variation.quantity}): the "
                                 f"body of link '{variation.target}' has no mass to change")
        if variation.quantity == "mass":
            block *= value / m
            continue
        c = block[1:4] / m
        inertia_c = spatial_inertia_of(block)[3:, 3:] - _parallel_axis(m, c)
        if variation.quantity == "inertia_scale":
            inertia_c = value * inertia_c
        else:   # com_offset
            c = c.copy()
            c[AXIS_INDEX[variation.axis]] += value
            block[1:4] = m * c
        _set_rotational(block, inertia_c + _parallel_axis(m, c))
    return p


def forces_with_stiffness(forces_data, changes, where="robot.forces"):
    """A copy of the parsed forces YAML (dict with a `forces:` list) with each (element name,
    stiffness) of `changes` written into that element. VariationError naming the element
    when it is missing or has no stiffness."""
    if not isinstance(forces_data, dict) or not isinstance(forces_data.get("forces"), list):
        raise VariationError(f"{where}: has no 'forces:' list")
    entries = [dict(entry) if isinstance(entry, dict) else entry
               for entry in forces_data["forces"]]
    by_name = {entry.get("name"): entry for entry in entries if isinstance(entry, dict)}
    for name, stiffness in changes:
        entry = by_name.get(name)
        if entry is None:
            raise VariationError(f"variation of stiffness: element '{name}' is not in {where} "
                                 f"(elements: {', '.join(str(n) for n in by_name)})")
        if "stiffness" not in entry:
            raise VariationError(f"variation of stiffness: element '{name}' "
                                 f"({entry.get('type')}) has no 'stiffness'")
        if isinstance(entry["stiffness"], list):   # a bushing's six stiffnesses
            raise VariationError(f"variation of stiffness: element '{name}' has one stiffness "
                                 "per axis; a sweep varies a single stiffness")
        entry["stiffness"] = float(stiffness)
    return {**forces_data, "forces": entries}
