"""The force-element part of a Robot: the `forces:` section's elements and the add_force
callbacks, turned into the loads every dynamics call and simulation stage adds (docs/forces.md).

One front end for every tree: the elements are evaluated by the tree's evaluator
(force_loads.py), the callbacks here; the Robot puts the loads into its tree's loaded workspace
and adds the joint forces to tau (robot.py, `_apply_loads`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import excerpt
from ..kernels import force_elements as fk
from .arguments import real_array
from .force_loads import RigidForceLoads


@dataclass(frozen=True)
class ForceElementValues:
    """What each force element does at one state (robot.force_element_values(q, v)).

    names, types: one per element, in file order.
    force (n,): spring_damper tension (N, > 0 pulls the points together); joint_spring joint
        force tau (N m or N); bushing |force| (N).
    length (n,): spring_damper length l (m); joint_spring deflection q - q0; bushing |d| (m).
    rate (n,): dl/dt; dq/dt; 0 for a bushing.
    wrench (n, 6): bushing wrench on the child-side frame B at its origin, in frame A [f; t]
        (zeros for the other types).
    deflection (n, 6): bushing [d; theta] of frame B relative to frame A, in frame A.
    """
    names: tuple
    types: tuple
    force: np.ndarray
    length: np.ndarray
    rate: np.ndarray
    wrench: np.ndarray
    deflection: np.ndarray

    def as_dict(self):
        """{name: (force, length)} for quick inspection."""
        return {n: (float(f), float(x)) for n, f, x in zip(self.names, self.force, self.length)}


def force_loads(tree, specs, source):
    """The evaluator of `specs` (a ForceSpec tuple) on `tree` (force_loads.py)."""
    if tree.kind == "flexible":
        from .flexible_force_loads import FlexibleForceLoads   # the flexible kernels on demand
        return FlexibleForceLoads(tree, specs, source)
    return RigidForceLoads(tree, specs, source)


def callback_name(fn):
    return excerpt(getattr(fn, "__name__", None) or repr(fn), 80)


class ForceElements:
    """The force elements (ForceSpec tuple from `source`) and callbacks of one Robot.

    evaluate(q, v, t, user_wrench) -> (link_wrench, body_wrench, joint_force): what the tree's
    loaded workspace takes (link_wrench (n_links, 6) in link frames or None, body_wrench or
    None) and the generalized forces (nv,) to add to tau. Buffers are reused: callers hold the
    Robot's lock."""

    def __init__(self, tree, specs=(), source=""):
        self.tree = tree
        self.specs = tuple(specs)
        self.names = tuple(s.name for s in self.specs)
        self.source = source
        self.callbacks = []
        self.elements = force_loads(tree, self.specs, source) if self.specs else None
        self.link_wrench = np.zeros((tree.n_links, 6))
        self.joint_force = np.zeros(tree.nv)

    def evaluate(self, q, v, t, user_wrench=None):
        """Loads of every element and callback at (q, v, t) (validated float64 arrays), plus
        `user_wrench` (n_links, 6) (f_ext) when given."""
        elements = self.elements
        body_wrench = None
        if elements is not None:
            elements.evaluate(q, v)
            self.joint_force[:] = elements.joint_force
            body_wrench = elements.body_wrench
            if elements.link_wrench is not None:
                self.link_wrench[:] = elements.link_wrench
            else:
                self.link_wrench[:] = 0.0
        else:
            self.joint_force[:] = 0.0
            self.link_wrench[:] = 0.0
        self._add_callback_loads(t, q, v)
        if user_wrench is not None:
            self.link_wrench += user_wrench
        link_wrench = self.link_wrench
        if body_wrench is not None and not (self.callbacks or user_wrench is not None):
            link_wrench = None          # flexible elements only: the body loads say it all
        return link_wrench, body_wrench, self.joint_force

    def fixed_joint_link_loads(self):
        """Loads already in the body loads, to record on their links for the fixed-joint wrench
        pass (flexible trees), or None."""
        return None if self.elements is None else self.elements.fixed_joint_link_loads()

    def _add_callback_loads(self, t, q, v):
        """Add the callbacks' loads at (q, v, t): a {link: wrench} result into link_wrench, a
        generalized-force result into joint_force. ValueError naming the callback for a wrong
        shape or a non-finite value (the value quoted in an excerpt)."""
        tree = self.tree
        for fn in self.callbacks:
            result = fn(t, q, v)
            if isinstance(result, dict):
                for link, wrench in result.items():
                    index = link_index(tree, link)
                    name = (f"force callback {callback_name(fn)}: the wrench on link "
                            f"'{excerpt(str(link), 80)}'")
                    wrench = real_array(wrench, name, "6 numbers") if _small(wrench) else None
                    if wrench is None or wrench.shape != (6,) or not np.isfinite(wrench).all():
                        raise ValueError(f"force callback {callback_name(fn)}: the wrench on link "
                                         f"'{excerpt(str(link), 80)}' must be 6 finite numbers, "
                                         f"got {_quote(result[link])}")
                    self.link_wrench[index] += wrench
            else:
                value = real_array(result, f"force callback {callback_name(fn)}",
                                   f"{tree.nv} generalized forces or a dict {{link: wrench}}") \
                    if _small(result, tree.nv) else None
                if value is None or value.shape != (tree.nv,) or not np.isfinite(value).all():
                    raise ValueError(f"force callback {callback_name(fn)} must return {tree.nv} "
                                     "finite generalized forces or a dict {link: wrench}, got "
                                     f"{_quote(result)}")
                self.joint_force += value

    # ------------------------------------------------------------------ reporting
    def element_values(self, q, v):
        """ForceElementValues at (q, v) (validated arrays)."""
        if self.elements is not None:
            self.elements.evaluate(q, v)
            val = self.elements.values
        else:
            val = np.zeros((0, fk.VALUE_WIDTH))
        return ForceElementValues(
            names=self.names, types=tuple(s.type for s in self.specs),
            force=val[:, fk.VALUE_FORCE].copy(), length=val[:, fk.VALUE_LENGTH].copy(),
            rate=val[:, fk.VALUE_RATE].copy(),
            wrench=val[:, fk.VALUE_WRENCH:fk.VALUE_WRENCH + 6].copy(),
            deflection=val[:, fk.VALUE_DEFLECTION:fk.VALUE_DEFLECTION + 6].copy())

    def potential_energy(self, q):
        """Elastic energy stored in the springs (J): k (l - l0)^2 / 2 + preload l per
        spring_damper, k (q - q0)^2 / 2 per joint_spring, (d^T K_t d + theta^T K_r theta) / 2 per
        bushing. Callbacks have no potential."""
        if not self.specs:
            return 0.0
        values = self.element_values(q, np.zeros(self.tree.nv))
        energy = 0.0
        for e, s in enumerate(self.specs):
            if s.type == "spring_damper":
                energy += 0.5 * s.stiffness * (values.length[e] - s.rest) ** 2 \
                    + s.preload * values.length[e]
            elif s.type == "joint_spring":
                energy += 0.5 * s.stiffness * values.length[e] ** 2
            else:
                energy += 0.5 * float(values.deflection[e] @ (s.stiffness * values.deflection[e]))
        return energy


def _small(value, n=6):
    """False for a sized value far longer than the (n,) vector it should be: refused before
    numpy converts it (a 10^7-entry list costs seconds)."""
    try:
        return len(value) <= 4 * max(n, 6)
    except TypeError:
        return True


def _quote(value):
    """A short excerpt of a callback's result (never the whole of a huge value)."""
    try:
        size = len(value)
    except TypeError:
        return excerpt(value, 80)
    if size > 16:
        return f"a {type(value).__name__} of {size} entries"
    return excerpt(value, 80)


def link_index(tree, link):
    """Index of link name `link`, or ValueError naming it."""
    try:
        return tree.link_index[link]
    except (KeyError, TypeError):
        raise ValueError(f"unknown link '{excerpt(str(link), 80)}'") from None
