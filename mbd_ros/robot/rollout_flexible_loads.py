"""Force elements on flexible trees in the compiled rollouts: the arrays
kernels/rollout_flexible_loads.py reads (the flexible tree's model arrays and the elements'
(robot/flexible_force_loads.py), per-thread copies of what the kernels write) and what the
compiled engine leaves to the reference loop."""
from __future__ import annotations

import numpy as np

# integrators whose compiled steps evaluate the loads at every stage (the implicit ones at every
# Jacobian column and fixed-point iteration, kernels/rollout_implicit.py)
FLEXIBLE_LOAD_INTEGRATORS = (None, "rk4", "semi_implicit_euler", "implicit_euler",
                             "symplectic_euler")


def has_flexible_loads(robot):
    """True for a flexible tree with force elements."""
    forces = robot._forces
    return robot.tree.kind == "flexible" and forces is not None and forces.elements is not None


def flexible_loads_unsupported(problem):
    """Why the compiled engine cannot run the force elements of a flexible tree in `problem`,
    or None."""
    if problem.integrator not in FLEXIBLE_LOAD_INTEGRATORS:
        return (f"force elements on a flexible tree with the {problem.integrator} integrator run "
                "in Python")
    # (drives: their compensation ID(q, v, 0) with the loads, kernels/rollout_flexible_loads.py
    # flexible_loaded_inverse_dynamics)
    if problem.robot.mimic_joints:
        return "force elements on a flexible tree with mimic couplings run in Python"
    return None


def flexible_load_arrays(robot):
    """kernels/rollout_flexible_loads.py's tuple for one thread (fint, ffloat, fdata, work, fwork,
    element_int, element_float, end_int, end_float, end_data, end_state, body_wrench,
    end_wrench, joint_force, values, scratch, tau_loaded), or placeholders of the same types
    (no element rows) for a robot without such elements."""
    if not has_flexible_loads(robot):
        i2, f2, f1 = np.zeros((1, 1), dtype=np.int64), np.zeros((1, 1)), np.zeros(1)
        return (i2, f2, f1, f2.copy(), f1.copy(), np.zeros((0, 1), dtype=np.int64), f2.copy(),
                i2.copy(), f2.copy(), f1.copy(), f2.copy(), f2.copy(), f2.copy(), f1.copy(),
                f2.copy(), f1.copy(), f1.copy())
    tree, elements = robot.tree, robot._forces.elements
    return (tree.fint, tree.ffloat, tree.fdata, np.zeros_like(tree.work), np.zeros_like(tree.fwork),
            elements.element_int, elements.element_float, elements.end_int, elements.end_float,
            elements.end_data, np.zeros_like(elements.end_state),
            np.zeros_like(elements.body_wrench), np.zeros_like(elements.end_wrench),
            np.zeros(robot.nv), np.zeros_like(elements.values), np.zeros_like(elements._scratch),
            np.zeros(robot.nv))
