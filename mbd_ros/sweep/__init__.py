"""Parameter sweeps on Dask (docs/sweeps.md): a YAML file names a robot, the quantities to vary
(masses, inertias, centres of mass, payloads, force-element stiffnesses, drive gains, the
initial state), a scenario and metrics; every run is a compiled rollout (robot.rollout) in a
dask.distributed task; the rows (varied values and metrics, one per run) go to Parquet, with a
summary PNG and a printed table. `mbd-ros sweep SWEEP.yaml --out DIR` on the command line.

    import mbd_ros.sweep
    result = mbd_ros.sweep.run_sweep("sweep.yaml", out="out/")   # or mbd_ros.sweep(...)

Modules, one job each: spec.py (the file, checked), variations.py (the runs), scenario.py (a
run's arrays), model_changes.py (a run's changes to the robot), runner.py (a batch of runs in
a worker, robots cached per worker), metrics.py, results.py (Parquet, resume), summary.py
(table, PNG), orchestrate.py (the Dask client and the tasks), command.py (the CLI).
Needs the extra `sweep` (dask[distributed], pyarrow, matplotlib).
"""
import sys
import types

from .orchestrate import SweepResult, run_sweep
from .runner import run_batch, run_one
from .spec import SweepSpec, SweepSpecError, load_sweep
from .variations import run_table

__all__ = ["run_sweep", "load_sweep", "run_table", "run_batch", "run_one", "SweepSpec",
           "SweepSpecError", "SweepResult"]


class _CallableModule(types.ModuleType):
    """`mbd_ros.sweep(...)` is run_sweep(...): the issue's name for the feature is both the
    module and the call."""

    def __call__(self, *args, **kwargs):
        return run_sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
