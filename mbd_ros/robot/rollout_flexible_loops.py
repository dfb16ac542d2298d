"""The compiled rollouts' part for closed loops on flexible trees (kernels/rollout_flexible_loops.py):
which calls the engine runs with them, and one thread's arrays."""
from __future__ import annotations

import numpy as np

from ..kernels import flexible_loop_dynamics as fld
from ..kernels.rollout_loop_drives import drive_workspace
from .rollout_flexible_loads import flexible_load_arrays, has_flexible_loads


def has_flexible_loops(robot):
    """Whether the robot's closed loops are on a flexible tree."""
    return bool(robot.closure_names) and robot.tree.kind == "flexible"


def flexible_loops_unsupported(problem):
    """Why the compiled engine cannot run the flexible tree's closed loops of `problem`, or
    None."""
    robot = problem.robot   # (every integrator, force elements, drives and limits: compiled)
    if robot.mimic_joints:
        return "closed loops on a flexible tree with mimic couplings run in Python"
    if problem.prescribed:
        return "prescribed joints on closed loops of a flexible tree run in Python"
    return None


def flexible_loop_arrays(robot):
    """One thread's part (kernels/rollout_flexible_loops.py) for a robot with closed loops on a
    flexible tree: the model arrays shared, private copies of every workspace the kernels write
    (the tree's kinematics, the cut frames' states and Jacobians, the solve's). The Baumgarte
    gains are robot.baumgarte at the call (refreshed by the caller); the drives' workspace's
    partition flags are written by the caller (robot.partition at the row); the force elements'
    tuple (kernels/rollout_flexible_loads.py) shares the tree's workspace."""
    loops = robot._constraints.loops
    fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork = loops.tree_args
    work, fwork = np.zeros_like(work), np.zeros_like(fwork)
    tree = (fint, ffloat, fdata, body_int, joint_nq, joint_nv, work, fwork)
    loads = flexible_load_arrays(robot)
    if has_flexible_loads(robot):   # their loaded workspace is the tree's
        loads = loads[:3] + (work, fwork) + loads[5:]
    end_int, end_float, end_data, end_state, frame_jac, unit = loops.end_args
    ends = (end_int, end_float, end_data, np.zeros_like(end_state), np.zeros_like(frame_jac),
            np.zeros_like(unit))
    n_rows = loops.n_constraints
    return (tree, ends, loops.cut_int, loops.cut_data,
            fld.flexible_loop_workspace(robot.nq, robot.nv, n_rows, len(loops.specs)),
            np.zeros(n_rows), np.zeros((n_rows, robot.nv)), np.zeros(n_rows),
            np.zeros(2, dtype=np.int64), np.array(robot._constraints.baumgarte, dtype=float),
            drive_workspace(robot.nv, n_rows, robot._constraints.actuated_dofs), loads)
