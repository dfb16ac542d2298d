"""Running a sweep on a dask.distributed cluster: the runs cut into batches, one task per batch
(runner.run_batch), each finished batch written as a Parquet part as soon as it arrives
(results.py), so that an interrupted sweep resumes with the runs it has not finished.

The client: one given by the caller; or `scheduler` ("tcp://host:8786"), any running Dask
cluster (its workers need mbd_ros installed; nothing else: the robot files travel inside the
spec as text); or by default a LocalCluster on this machine (`workers` processes of one thread:
the rollouts hold the GIL, so processes, not threads, run in parallel), closed at the end.

A batch whose task fails as a whole (its worker died, KilledWorker, an exception outside a
run) becomes rows with that error: a sweep never loses its other runs.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import excerpt
from . import results as R
from .runner import MAX_ERROR_CHARACTERS, result_columns, robot_context
from .spec import QUANTITIES, SweepSpec, SweepSpecError, load_sweep
from .summary import plot_summary, table_text
from .variations import batches, run_table

DEFAULT_TIMEOUT = 60.0     # s: to connect to a scheduler, or for a LocalCluster to start


@dataclass
class SweepResult:
    """A finished sweep: out (directory), results (results.parquet path), summary (PNG path or
    None), runs (rows in results), ran (runs computed by this call), resumed (runs found done in
    out), seconds (wall time of this call), table (the printed text)."""
    out: Path
    results: Path
    summary: Path | None
    runs: int
    ran: int
    resumed: int
    seconds: float
    table: str


class ProgressBar:
    """A one-line text progress bar on a stream (stderr): redrawn in place on a terminal, a
    line every 10 % otherwise (logs)."""

    def __init__(self, total, stream=None, width=30):
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self.next_line = 0.1

    def update(self, n):
        self.done += n
        fraction = self.done / self.total if self.total else 1.0
        if not self.tty and fraction < self.next_line and self.done < self.total:
            return
        self.next_line = math.floor(fraction * 10 + 1) / 10
        bar = "#" * int(self.width * fraction)
        text = (f"[{bar:<{self.width}}] {self.done}/{self.total} runs "
                f"{time.perf_counter() - self.t0:.1f} s")
        self.stream.write(("\r" + text) if self.tty else text + "\n")
        if self.tty and self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def check_targets(spec):
    """Build the nominal robot here (not only on the workers) so that a sweep whose names do
    not fit its robot (an unknown link, joint or force element, a scenario of the wrong size)
    fails before any task: SweepSpecError naming the file and the key, as the spec's other
    errors ("sweep.yaml: variations[0].link: variation 'm3' (mass): link 'x' is not ...")."""
    from . import model_changes as C
    from .scenario import ScenarioError
    try:
        return _check_targets(spec)
    except ScenarioError as exc:   # names its scenario key itself
        raise SweepSpecError(f"{spec.source}: {exc}") from None
    except C.VariationError as exc:
        text = str(exc)
        # every VariationError of a variation starts with "variation '<its name>'" (names
        # are unique: spec.py); the others (a scenario size) name their key themselves
        for index, variation in enumerate(spec.variations):
            if text.startswith(f"variation '{variation.name}'"):
                key = QUANTITIES[variation.quantity][0]
                raise SweepSpecError(f"{spec.source}: variations[{index}].{key}: {text}") \
                    from None
        raise SweepSpecError(f"{spec.source}: {text}") from None


def _check_targets(spec):
    """check_targets' checks; VariationError naming the variation."""
    from . import model_changes as C
    from ..robot.joint_map import scalar_dofs
    context = robot_context(spec)    # scenario arrays and inertial targets are checked here
    dofs = scalar_dofs(context.robot)
    for variation in spec.variations:
        if variation.quantity in ("kp", "kd") and variation.target and \
                variation.target not in context.arrays.drive_joints:
            raise C.VariationError(f"variation '{variation.name}': joint '{variation.target}' "
                                   f"has no drive (drives: {context.arrays.drive_joints})")
        if variation.quantity in ("initial_position", "initial_velocity") and \
                variation.target not in dofs:
            raise C.VariationError(f"variation '{variation.name}': '{variation.target}' is not "
                                   f"a 1-dof joint of the robot ({', '.join(list(dofs)[:8])})")
        if variation.quantity == "stiffness":
            from ..inputs.yaml_input import read_yaml
            data, where = read_yaml(spec.robot.forces_text, "forces")
            C.forces_with_stiffness(data, [(variation.target, 1.0)], "robot.forces")
    return context


def _client(scheduler, workers, timeout):
    """(client, cluster or None): connected to `scheduler`, or a new LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("sweeps run on dask.distributed: pip install 'mbd_ros[sweep]'") \
            from None
    if scheduler:
        return Client(scheduler, timeout=timeout), None
    n = int(workers) if workers else max(1, os.cpu_count() or 1)
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=":0", timeout=timeout)
    return Client(cluster, timeout=timeout), cluster


def _failed_rows(names, run_ids, values, variation_names, error):
    """{column: list} rows of runs lost with their task, status 'error'."""
    columns = {name: [] for name in names}
    for run_id, row_values in zip(run_ids, values):
        row = dict(zip(variation_names, map(float, row_values)))
        row.update(run_id=int(run_id), status="error", error=error, steps=0, diverged=True)
        for name in names:
            columns[name].append(row.get(name, math.nan))
    return columns


def run_sweep(sweep, out, scheduler=None, workers=None, client=None, progress=True,
              plot=True, stream=None, timeout=DEFAULT_TIMEOUT):
    """Run (or resume) a sweep. sweep: a sweep file path, a dict or a SweepSpec; out: the
    output directory (results.py); scheduler: a Dask scheduler address, else a LocalCluster of
    `workers` processes (default: one per CPU); client: a dask.distributed Client to use
    instead (not closed). progress: a text progress bar on stderr; plot: write
    OUT/summary.png; stream: where the table is printed (default stdout; None-like False:
    not printed). Returns a SweepResult."""
    t0 = time.perf_counter()
    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep)
    out = Path(out)
    variation_names, values = run_table(spec)
    check_targets(spec)
    names, _ = result_columns(spec)
    R.prepare_directory(out, spec, len(values), names)
    done = R.finished_run_ids(out)
    todo = [i for i in range(len(values)) if i not in done]
    if todo:
        _run_batches(spec, out, names, variation_names, values, todo, scheduler, workers,
                     client, progress, timeout)
    table = R.merge(out)
    results = {name: table.column(name).to_numpy(zero_copy_only=False)
               for name in table.column_names}
    text = table_text(results, variation_names)
    if stream is not False:
        print(text, file=stream or sys.stdout)
    png = plot_summary(results, variation_names, out / "summary.png", spec.name) if plot \
        else None
    return SweepResult(out, out / R.RESULTS, png, table.num_rows, len(todo), len(done),
                       time.perf_counter() - t0, text)


def _run_batches(spec, out, names, variation_names, values, todo, scheduler, workers, client,
                 progress, timeout):
    from dask.distributed import as_completed
    own_cluster = None
    if client is None:
        client, own_cluster = _client(scheduler, workers, timeout)
        own_client = client
    else:
        own_client = None
    bar = ProgressBar(len(todo)) if progress else None
    try:
        # the spec (robot texts included) once to every worker, not once per task
        spec_future = client.scatter(spec, broadcast=True, hash=False)
        pending, futures = {}, []
        for ids in batches(todo, spec.batch_size):
            future = client.submit(_run_batch_task, spec_future, ids, values[ids], pure=False,
                                   key=f"mbd-sweep-{spec.fingerprint[:12]}-{ids[0]}")
            pending[future.key] = ids
            futures.append(future)
        for future in as_completed(futures):
            ids = pending.pop(future.key)
            try:
                columns = future.result()
            except Exception as exc:   # noqa: BLE001 -- the batch's runs become error rows
                error = excerpt(f"task failed ({type(exc).__name__}: {exc})", MAX_ERROR_CHARACTERS)
                columns = _failed_rows(names, ids, values[ids], variation_names, error)
            R.write_part(out, columns)
            future.release()
            if bar is not None:
                bar.update(len(ids))
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()


def _run_batch_task(spec, ids, values):
    """The task: runner.run_batch (a module-level function, so workers import it by name)."""
    from .runner import run_batch
    return run_batch(spec, ids, np.asarray(values))
