"""The arrays a compiled simulation step passes to the robot's own kernels, for the robots whose
forward dynamics is a fixed composition of numba kernels: a rigid tree (RigidTree, the generic
kernels), optionally with rigid force elements (kernels/force_elements.py) and closed loops
solved by the recursive formalism (kernels/closed_loop.py), without mimic couplings, Python
force callbacks or flexible links. The compiled plant step (kernels/plant_step.py, used by
mbd_ros.simulation.plant.Plant) calls exactly the kernels robot.forward_dynamics /
inverse_dynamics / mass_matrix call on these arrays, in the same order: the same bits.

A GeneratedTree (codegen=True) is a RigidTree whose unloaded calls (forward and inverse
dynamics, mass matrix without loads) run generated kernels; its loaded calls (force elements,
loop forces) run the generic ones. The compiled step runs the generic kernels on its arrays for
all of them: the same results to round-off (generated and generic kernels differ in the order of
their operations), the same bits where the robot's own call is loaded.

This module belongs to the robot layer because it reads the Robot's parts; the simulation layer
gets them through step_parts(robot) only.
"""
from __future__ import annotations

import numpy as np

from ..constants import VECTOR_SPACE_JOINTS
from .constraints import LOOP_RESIDUAL_WARNING
from .force_loads import RigidForceLoads
from .rigid_tree import RigidTree

_EMPTY_INT2 = np.zeros((0, 0), dtype=np.int64)
_EMPTY_FLOAT2 = np.zeros((0, 0))
_EMPTY = np.zeros(0)


class StepParts:
    """The kernel arrays of one robot (see the module docstring).

    tree: body_int, body_float, link_int, link_float, link_fext; work: the workspace the
    dynamics run on (the loaded one with force elements or loops, else the lock-free one, as
    the Robot's methods choose); free_work (its mass matrix and inverse dynamics without loads).
    elements (has_elements): element_int, element_float, link_wrench, joint_force, values,
    scratch (RigidForceLoads' buffers). loops (has_loops): cut_int, cut_float, loop_float, gains
    (3,) = (alpha, beta, residual warning threshold), info (2,), multipliers (b,).
    actuated_none: a closed-loop robot without actuated joints (its drive compensation
    ID(q, v, qdd) on the actuated joints is identically zero)."""

    def __init__(self, robot):
        tree = robot._tree
        self.robot = robot
        self.lock = robot._lock   # the loaded workspace is used under the robot's lock
        self.tree = tree
        self._forces = robot._forces
        constraints = robot._constraints
        self.body_int, self.body_float = tree.body_int, tree.body_float
        self.link_int, self.link_float = tree.link_int, tree.link_float
        self.link_fext = tree.link_fext
        self.free_work = tree.free_work
        self.has_elements = self._forces is not None
        self.has_loops = not constraints.empty
        self.work = tree.work if (self.has_elements or self.has_loops) else tree.free_work
        if self.has_elements:
            elements = self._forces.elements
            self.element_int, self.element_float = elements.element_int, elements.element_float
            self.link_wrench, self.joint_force = elements.link_wrench, elements.joint_force
            self.values, self.scratch = elements.values, elements._scratch
        else:
            self.element_int, self.element_float = _EMPTY_INT2, _EMPTY_FLOAT2
            self.link_wrench, self.joint_force = _EMPTY_FLOAT2, np.zeros(robot.nv)
            self.values, self.scratch = _EMPTY_FLOAT2, _EMPTY
        if self.has_loops:
            loops = constraints.loops
            self._constraints = constraints
            self.cut_int, self.cut_float, self.loop_float = \
                loops.cut_int, loops.cut_float, loops.loop_float
            self.info = constraints.info
            self.multipliers = constraints.multiplier_buffer()
            self.actuated_none = len(constraints.actuated_dofs) == 0
        else:
            self.cut_int, self.cut_float, self.loop_float = \
                _EMPTY_INT2, _EMPTY_FLOAT2, _EMPTY_FLOAT2
            self.info = np.zeros(2, dtype=np.int64)
            self.multipliers = _EMPTY
            self.actuated_none = False
        self.gains = np.zeros(3)
        self.gains[2] = LOOP_RESIDUAL_WARNING

    def after_step(self):
        """After a compiled step that used the loaded workspace: its loads are the step's (the
        next Python call with other loads clears them first, as after its own calls)."""
        if self.work is not self.free_work:
            self.tree.loads_dirty = True

    def current(self):
        """True while the robot is still made of these parts (no force element or callback
        added since); refreshes the Baumgarte gains (robot.baumgarte may change)."""
        robot = self.robot
        if robot._forces is not self._forces:
            return False
        if self._forces is not None and (self._forces.callbacks or
                                         not isinstance(self._forces.elements, RigidForceLoads)):
            return False
        if self.has_loops:
            self.multipliers = self._constraints.multiplier_buffer()   # this thread's
            alpha, beta = self._constraints._baumgarte
            self.gains[0] = alpha
            self.gains[1] = beta
        return True


def step_parts(robot):
    """(StepParts, "") for a robot the compiled step handles, or (None, reason)."""
    tree = getattr(robot, "_tree", None)
    if not isinstance(tree, RigidTree):   # (a GeneratedTree is one: module docstring)
        return None, "not a rigid tree (flexible links)"
    if robot.nq != robot.nv or any(t not in VECTOR_SPACE_JOINTS for t in robot.joint_types):
        return None, "a configuration that is not a vector space (quaternion or planar joints)"
    forces = robot._forces
    if forces is not None and (forces.callbacks or
                               not isinstance(forces.elements, RigidForceLoads)):
        return None, "Python force callbacks (robot.add_force)"
    constraints = robot._constraints
    if not constraints.empty and (constraints.mimic is not None or constraints.loops is None
                                  or not constraints.loops.recursive):
        return None, "mimic couplings or loops outside the recursive formalism"
    return StepParts(robot), ""
