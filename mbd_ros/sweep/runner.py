"""The worker side of a sweep: a batch of runs in one task. Runs in the Dask worker processes
(and in-process for `run_batch` called directly); nothing here knows about Dask.

Each worker process keeps its robots in a module-level cache (at most MAX_CACHED_ROBOTS,
least recently used dropped) keyed by the sweep's fingerprint (the sha256 of the robot files'
texts and options, the variations, scenario and metrics: spec.SweepSpec.fingerprint) and, for
stiffness variations, the (element, stiffness) values: the URDF and YAML are parsed, and the
scenario's arrays built, once per worker and distinct key, not per run or per batch. A run then only changes inertial
parameters (robot.with_inertial_parameters: new arrays, no parsing), drive gains and the
initial state, and calls robot.rollout.

A run never raises: an invalid model (a negative mass after the change, a non-physical
inertia), a bad initial state, an exception in the rollout become status "error" with the
message; a divergence is status "diverged" (the rollout's own, with its message) and its
metrics are those of the rows up to the last sane state.
"""
from __future__ import annotations

import math
import time
import warnings
from collections import OrderedDict

import numpy as np

from ..errors import excerpt
from . import model_changes as C
from .metrics import TorqueRecorder, metric_columns, nan_metrics, run_metrics
from .scenario import scenario_arrays

MAX_CACHED_ROBOTS = 32      # per worker process: distinct robots (stiffness values) kept
MAX_ERROR_CHARACTERS = 500  # an error message in the results is an excerpt of this length

_robots = OrderedDict()     # key -> RobotContext (least recently used first)


class RobotContext:
    """What every run on one robot shares: the robot, the scenario's arrays (built with the
    nominal robot), where the inertial variations act, its inertial parameters (None when no
    variation changes them) and the metric columns."""

    def __init__(self, robot, spec, nominal=None):
        self.robot = robot
        nominal = nominal or self
        self.arrays = scenario_arrays(nominal.robot, spec.scenario) if nominal is self \
            else nominal.arrays
        self.targets = C.InertialTargets(robot, spec.variations)
        self.parameters = robot.inertial_parameters() if self.targets.body else None
        self.columns = metric_columns(spec.metrics, robot, self.arrays)
        self.recorder = None
        if "peak_torque" in spec.metrics and self.arrays.drive_joints is not None:
            self.recorder = TorqueRecorder(robot, self.arrays, spec.scenario.limits,
                                           spec.scenario.steps, spec.scenario.drive_model)


def load_robot(files, forces=None):
    """The Robot of spec.RobotFiles (texts: no file is read); `forces`: a parsed forces dict
    instead of files.forces_text (a stiffness variation)."""
    from ..robot.build import load
    robot = load(files.urdf_text, closures=files.closures_text,
                 forces=forces if forces is not None else files.forces_text,
                 floating_base=files.floating_base, passive_forces=files.passive_forces)
    robot.batch_threads = 1   # a worker is one process of one thread: no thread pool per call
    return robot


def robot_context(spec, stiffness=()):
    """The cached RobotContext of the spec's robot with these (element, stiffness) changes
    (loaded at the first call in this process)."""
    key = (spec.fingerprint, tuple(stiffness))
    context = _robots.get(key)
    if context is not None:
        _robots.move_to_end(key)
        return context
    if stiffness:
        nominal = robot_context(spec)
        from ..inputs.yaml_input import read_yaml
        data, where = read_yaml(spec.robot.forces_text, "forces")
        robot = load_robot(spec.robot, C.forces_with_stiffness(data, stiffness, where))
        context = RobotContext(robot, spec, nominal)
    else:
        context = RobotContext(load_robot(spec.robot), spec)
    _robots[key] = context
    while len(_robots) > MAX_CACHED_ROBOTS:
        _robots.popitem(last=False)
    return context


def result_columns(spec):
    """(names, metric columns) of a result row: run_id, the variations, status, error, steps,
    the metrics, seconds (the run's compute time in its worker)."""
    context = robot_context(spec)
    names = ["run_id"] + [v.name for v in spec.variations] + ["status", "error", "steps"]
    return names + context.columns + ["seconds"], context.columns


def run_one(spec, values):
    """{column: value} of one run with the variations' `values` (one per variation, in order),
    without run_id. Never raises (module docstring)."""
    t0 = time.perf_counter()
    row = {v.name: float(x) for v, x in zip(spec.variations, values)}
    scenario = spec.scenario
    nominal = robot_context(spec)
    try:
        stiffness = tuple((v.target, float(x)) for v, x in zip(spec.variations, values)
                          if v.quantity == "stiffness")
        context = robot_context(spec, stiffness) if stiffness else nominal
        robot, arrays = context.robot, context.arrays
        if context.parameters is not None:
            p = C.changed_parameters(context.parameters, context.targets, spec.variations,
                                     values)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                robot = robot.with_inertial_parameters(p)
            robot.batch_threads = 1
        q0, v0 = arrays.q0.copy(), arrays.v0.copy()
        kp = None if arrays.kp is None else arrays.kp.copy()
        kd = None if arrays.kd is None else arrays.kd.copy()
        for variation, value in zip(spec.variations, values):
            _apply_argument(robot, arrays, variation, float(value), q0, v0, kp, kd)
        kwargs = {"integrator": scenario.integrator, "substeps": scenario.substeps,
                  "limits": scenario.limits, "max_speed": scenario.max_speed}
        if arrays.drive_joints is not None:
            kwargs["drives"] = {"joints": list(arrays.drive_joints), "kp": kp, "kd": kd,
                                "model": scenario.drive_model,
                                "position": arrays.ref_position[:-1],
                                "velocity": arrays.ref_velocity[:-1]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # a divergence is in the status
            result = robot.rollout(q0, v0, arrays.tau, scenario.dt, **kwargs)
        status = str(result.status)
        Q, V = (np.asarray(x) for x in result)
        keep = int(result.steps) + 1
        Q, V = Q[:keep], V[:keep]
        row.update(status=status, error="" if status == "ok" else
                   excerpt(str(result.message or status), MAX_ERROR_CHARACTERS),
                   steps=int(result.steps))
        row.update(run_metrics(spec.metrics, robot, arrays, scenario, Q, V, status, kp, kd,
                               context.recorder))
    except Exception as exc:   # noqa: BLE001 -- a failing run is a row with its error
        row.update(status="error", steps=0,
                   error=excerpt(f"{type(exc).__name__}: {exc}", MAX_ERROR_CHARACTERS))
        row.update(nan_metrics(nominal.columns))
    row["seconds"] = time.perf_counter() - t0
    return row


def _apply_argument(robot, arrays, variation, value, q0, v0, kp, kd):
    """A variation that is a rollout argument, into q0, v0, kp or kd (in place)."""
    quantity = variation.quantity
    if quantity in ("kp", "kd"):
        gains = kp if quantity == "kp" else kd
        if variation.target:
            if variation.target not in arrays.drive_joints:
                raise C.VariationError(f"variation '{variation.name}': joint "
                                       f"'{variation.target}' has no drive")
            gains[arrays.drive_joints.index(variation.target)] = value
        else:
            gains[:] = value
    elif quantity in ("initial_position", "initial_velocity"):
        from ..robot.joint_map import scalar_dofs
        dofs = scalar_dofs(robot)
        if variation.target not in dofs:
            raise C.VariationError(f"variation '{variation.name}': '{variation.target}' is not "
                                   "a 1-dof joint of the robot")
        iq, iv = dofs[variation.target]
        if quantity == "initial_position":
            q0[iq] = value
        else:
            v0[iv] = value


# variations that leave the robot and the drive gains alone: runs that differ only in them
# share one robot.rollout call of the whole batch (its batch form: N members)
BATCHED_QUANTITIES = ("initial_position", "initial_velocity")


def run_batch(spec, run_ids, values):
    """{column: list} of the runs run_ids (list of int) with values (len(run_ids),
    n_variations): the task each Dask worker runs (results.py writes it as one Parquet file).
    When every variation is an initial state, the batch is one batch rollout (the same
    numbers as single rollouts, robot/rollout.py); else, or if that call refuses the batch
    (e.g. one member starts beyond a limit), one rollout per run."""
    names, _ = result_columns(spec)
    values = np.asarray(values, dtype=float)
    rows = None
    if len(run_ids) > 1 and all(v.quantity in BATCHED_QUANTITIES for v in spec.variations):
        rows = _batch_rows(spec, values)
    if rows is None:
        rows = [run_one(spec, row_values) for row_values in values]
    columns = {name: [] for name in names}
    for run_id, row in zip(run_ids, rows):
        row["run_id"] = int(run_id)
        for name in names:
            columns[name].append(row.get(name, math.nan))
    return columns


def _batch_rows(spec, values):
    """The rows of runs that differ only in their initial state, from one batch rollout
    (batch_threads=1: the worker is one thread); None when the batch call raises (the caller
    then runs them one by one, each with its own error)."""
    from ..robot.rollout import STATUS_NAMES
    t0 = time.perf_counter()
    scenario = spec.scenario
    context = robot_context(spec)
    robot, arrays = context.robot, context.arrays
    n = len(values)
    q0 = np.tile(arrays.q0, (n, 1))
    v0 = np.tile(arrays.v0, (n, 1))
    kp = None if arrays.kp is None else arrays.kp.copy()
    kd = None if arrays.kd is None else arrays.kd.copy()
    try:
        for i, row_values in enumerate(values):
            for variation, value in zip(spec.variations, row_values):
                _apply_argument(robot, arrays, variation, float(value), q0[i], v0[i], kp, kd)
        kwargs = {"integrator": scenario.integrator, "substeps": scenario.substeps,
                  "limits": scenario.limits, "max_speed": scenario.max_speed,
                  "batch_threads": 1}
        if arrays.drive_joints is not None:
            kwargs["drives"] = {"joints": list(arrays.drive_joints), "kp": kp, "kd": kd,
                                "model": scenario.drive_model,
                                "position": np.repeat(arrays.ref_position[None, :-1], n, 0),
                                "velocity": np.repeat(arrays.ref_velocity[None, :-1], n, 0)}
        tau = np.repeat(arrays.tau[None], n, axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # a divergence is in the status
            result = robot.rollout(q0, v0, tau, scenario.dt, **kwargs)
    except (ValueError, C.VariationError):
        return None
    share = (time.perf_counter() - t0) / n      # the batch call's time, per member
    Q_all, V_all = result
    rows = []
    for i, row_values in enumerate(values):
        t1 = time.perf_counter()
        row = {v.name: float(x) for v, x in zip(spec.variations, row_values)}
        steps = int(result.steps[i])
        status = STATUS_NAMES[int(result.status[i])]
        Q, V = Q_all[i, :steps + 1], V_all[i, :steps + 1]
        row.update(status=status, steps=steps, error="" if status == "ok" else
                   excerpt(str(result.messages[i] or status), MAX_ERROR_CHARACTERS))
        try:
            row.update(run_metrics(spec.metrics, robot, arrays, scenario, Q, V, status, kp, kd,
                                   context.recorder))
        except Exception as exc:   # noqa: BLE001 -- a failing run is a row with its error
            row.update(status="error", error=excerpt(f"{type(exc).__name__}: {exc}",
                                                     MAX_ERROR_CHARACTERS))
            row.update(nan_metrics(context.columns))
        row["seconds"] = share + time.perf_counter() - t1
        rows.append(row)
    return rows
