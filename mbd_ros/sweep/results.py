"""A sweep's output directory (--out), written so that an interrupted sweep can be resumed:

    OUT/sweep.json          the sweep's name, fingerprint (spec.SweepSpec.fingerprint), run
                            count and columns: a resume refuses a directory of another sweep
    OUT/parts/runs-<first run id>-<last run id>.parquet
                            one file per finished batch, written atomically (a temporary name,
                            then os.replace), so a file that exists is whole
    OUT/results.parquet     all rows, sorted by run_id (merged at the end)

finished_run_ids(OUT) reads the run ids back from the parts: a resumed sweep runs only the
others. pyarrow (extra `sweep`) writes and reads the files.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

MANIFEST = "sweep.json"
PARTS = "parts"
RESULTS = "results.parquet"


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("sweeps write Parquet with pyarrow: pip install 'mbd_ros[sweep]'") \
            from None
    return pa, pq


def prepare_directory(out, spec, n_runs, columns):
    """Create OUT (and OUT/parts), or check that it holds this sweep (same fingerprint);
    ValueError naming the directory otherwise."""
    out = Path(out)
    manifest = {"name": spec.name, "fingerprint": spec.fingerprint, "runs": int(n_runs),
                "columns": list(columns)}
    path = out / MANIFEST
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable ({exc}); use another --out") from None
        if old.get("fingerprint") != spec.fingerprint:
            raise ValueError(f"{out} holds the results of another sweep "
                             f"('{old.get('name')}', a different robot, variations, scenario "
                             "or metrics): use another --out, or delete it")
    elif out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty and holds no sweep ({MANIFEST} missing): use an "
                         "empty or new directory")
    (out / PARTS).mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        _write_atomic(path, json.dumps(manifest, indent=1).encode())


def _write_atomic(path, data):
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _table(columns):
    pa, _ = _pyarrow()
    arrays = {}
    for name, values in columns.items():
        if name in ("status", "error"):
            arrays[name] = pa.array([str(v) for v in values], type=pa.string())
        elif name in ("run_id", "steps", "limit_hits"):
            # counts; a run without them (an error) has a null there, which pyarrow's numpy
            # and pandas conversions read as NaN, as the other metrics of such a run
            arrays[name] = pa.array([int(v) if v == v else None for v in values],
                                    type=pa.int64())
        elif name == "diverged":
            arrays[name] = pa.array([bool(v) for v in values], type=pa.bool_())
        else:
            arrays[name] = pa.array(np.asarray(values, dtype=float), type=pa.float64())
    return pa.table(arrays)


def write_part(out, columns):
    """Write one batch's rows ({column: list}) as OUT/parts/runs-<first>-<last>.parquet
    (atomically). Returns the path."""
    _, pq = _pyarrow()
    ids = columns["run_id"]
    path = Path(out) / PARTS / f"runs-{min(ids):07d}-{max(ids):07d}.parquet"
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(_table(columns), tmp)
    os.replace(tmp, path)
    return path


def part_files(out):
    return sorted((Path(out) / PARTS).glob("runs-*.parquet"))


def finished_run_ids(out):
    """The set of run ids with a row in OUT/parts (a resumed sweep skips them)."""
    _, pq = _pyarrow()
    done = set()
    for path in part_files(out):
        done.update(pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist())
    return done


def merge(out):
    """OUT/results.parquet: every part's rows, sorted by run_id. Returns the pyarrow Table."""
    pa, pq = _pyarrow()
    files = part_files(out)
    if not files:
        raise ValueError(f"{out}: no finished runs to merge")
    table = pa.concat_tables([pq.read_table(path) for path in files])
    table = table.sort_by("run_id")
    tmp = Path(out) / f".{RESULTS}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, Path(out) / RESULTS)
    return table


def read_results(out):
    """{column: numpy array} of OUT/results.parquet."""
    _, pq = _pyarrow()
    table = pq.read_table(Path(out) / RESULTS)
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
