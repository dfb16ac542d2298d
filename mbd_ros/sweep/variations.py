"""The runs of a sweep: each variation's values (a list, or drawn from its distribution with its
own seed: deterministic), combined into one row per run, {variation name: value}, numbered by
run_id 0, 1, ... in a fixed order (so that a resumed sweep finds the same run under the same id).

grid: every combination, the last variation varying fastest (numpy.meshgrid 'ij' order);
zip: run i takes the i-th value of every variation.
"""
from __future__ import annotations

import numpy as np

from .spec import run_count, variation_values


def run_table(spec):
    """(names, values): the variations' names and a (n_runs, n_variations) float64 array, row
    r = the values of run_id r."""
    n_runs = run_count(spec)
    names = [v.name for v in spec.variations]
    columns = [variation_values(v) for v in spec.variations]
    if spec.combine == "zip":
        values = np.column_stack(columns)
    else:
        grids = np.meshgrid(*columns, indexing="ij")
        values = np.column_stack([g.ravel() for g in grids])
    assert values.shape == (n_runs, len(names))
    return names, values


def batches(run_ids, batch_size):
    """The run ids cut into lists of at most batch_size (in order)."""
    run_ids = list(run_ids)
    return [run_ids[k:k + batch_size] for k in range(0, len(run_ids), batch_size)]
