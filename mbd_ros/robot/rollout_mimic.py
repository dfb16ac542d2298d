"""Mimic couplings in the compiled rollouts: the arrays kernels/rollout_mimic.py reads (the
coupling matrix T, the pairs (mimicking joint, leader, ratio, offset) of robot/mimic.py, the
Baumgarte gains, the tangent basis N of implicit Euler, kernels/rollout_mimic_implicit.py) and
what the compiled engine leaves to the reference loop."""
from __future__ import annotations

import numpy as np

# integrators whose compiled steps run the couplings (implicit_euler on the tangent basis,
# kernels/rollout_mimic_implicit.py; symplectic_euler through kernels/rollout_implicit.py)
MIMIC_INTEGRATORS = (None, "rk4", "semi_implicit_euler", "implicit_euler", "symplectic_euler")


def mimic_unsupported(problem):
    """Why the compiled engine cannot run the mimic couplings of `problem`, or None."""
    robot = problem.robot
    if robot.closure_names:
        return "mimic couplings on closed loops (their superposed solve) run in Python"
    if problem.integrator not in MIMIC_INTEGRATORS:
        return f"mimic couplings with the {problem.integrator} integrator run in Python"
    # (drives: their compensation S T^T h in kernels/rollout_mimic.py mimic_drive_bias; limits:
    # the tree's stops, as JointLimits.enforce, then robot.step's projection in Python)
    return None


def mimic_arrays(robot):
    """The shared part of kernels/rollout_mimic.py's tuple: (T (nv, nz), pair_int (m, 4),
    pair_float (m, 2), gains (2,), N (nv, k)), or placeholders without couplings. N is
    robot.constraint_basis, the Simulator's implicit Euler directions: the couplings are linear,
    so G and N do not depend on q (computed at the neutral configuration)."""
    mimic = robot._mimic
    if mimic is None:
        return (np.zeros((robot.nv, 0)), np.zeros((0, 4), dtype=np.int64), np.zeros((0, 2)),
                np.zeros(2), np.zeros((robot.nv, 0)))
    pair_int = np.array([pair[:4] for pair in mimic.pairs], dtype=np.int64).reshape(-1, 4)
    pair_float = np.array([pair[4:] for pair in mimic.pairs], dtype=float).reshape(-1, 2)
    gains = np.array(robot._constraints.baumgarte, dtype=float)
    basis = robot.__dict__.get("_mimic_rollout_basis")
    if basis is None:
        basis = robot.__dict__["_mimic_rollout_basis"] = np.ascontiguousarray(
            robot.constraint_basis(robot.neutral()), dtype=float)
    return (np.ascontiguousarray(mimic.coupling, dtype=float), pair_int, pair_float, gains,
            basis)


def thread_mimic(shared, nv):
    """kernels/rollout_mimic.py's tuple for one thread: the shared arrays and private scratch
    (mass (nv, nv), mass_t (nv, nz), reduced (nz, nz), rhs, bias (nv,), rhs_z (nz,), eta, zero
    (nv,)), then N (shared, kernels/rollout_mimic.py M_BASIS)."""
    nz = shared[0].shape[1]
    return shared[:4] + (np.zeros((nv, nv)), np.zeros((nv, nz)), np.zeros((nz, nz)),
                         np.zeros(nv), np.zeros(nv), np.zeros(nz), np.zeros(nv),
                         np.zeros(nv)) + shared[4:]
