"""A finished sweep at a glance: the printed table and the summary PNG (each scalar metric
against each varied quantity). matplotlib (extra `sweep`) only for the PNG.
"""
from __future__ import annotations

import numpy as np

PLOTTED = ("tracking_rms", "tracking_max", "peak_torque", "limit_hits")
MAX_PRINTED_ROWS = 30     # more runs: the statistics, then the first and the worst rows


def _cell(value):
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return "nan" if value != value else f"{float(value):.4g}"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _rows_text(results, names, rows):
    widths = [max(len(n), *(len(_cell(results[n][r])) for r in rows)) if len(rows) else len(n)
              for n in names]
    lines = ["  ".join(n.rjust(w) for n, w in zip(names, widths))]
    for r in rows:
        lines.append("  ".join(_cell(results[n][r]).rjust(w) for n, w in zip(names, widths)))
    return lines


def table_text(results, variation_names):
    """The printed table of results ({column: array}): status counts, then every run (up to
    MAX_PRINTED_ROWS), or per-metric statistics of the finished runs and the first and the
    worst runs."""
    status = np.asarray(results["status"]).astype(str)
    n = len(status)
    counts = {s: int((status == s).sum()) for s in ("ok", "diverged", "error")}
    lines = [f"{n} runs: {counts['ok']} ok, {counts['diverged']} diverged, "
             f"{counts['error']} with an error"]
    metrics = [m for m in PLOTTED if m in results]
    names = ["run_id"] + list(variation_names) + ["status"] + metrics
    if n <= MAX_PRINTED_ROWS:
        return "\n".join(lines + _rows_text(results, names, range(n)))
    ok = status == "ok"
    lines.append(f"{'metric (ok runs)':<18}{'min':>12}{'median':>12}{'max':>12}")
    for metric in metrics:
        values = np.asarray(results[metric], dtype=float)[ok]
        if values.size:
            lines.append(f"{metric:<18}{np.min(values):>12.4g}{np.median(values):>12.4g}"
                         f"{np.max(values):>12.4g}")
    lines.append("first runs:")
    lines += _rows_text(results, names, range(5))
    key = metrics[0] if metrics else None
    if key is not None:
        values = np.where(ok, np.asarray(results[key], dtype=float), -np.inf)
        worst = [int(i) for i in np.argsort(values)[::-1][:5] if values[i] > -np.inf]
        lines.append(f"largest {key}:")
        lines += _rows_text(results, names, worst)
    bad = np.flatnonzero(~ok)[:5]
    if bad.size:
        lines.append("runs that failed (first 5):")
        lines += _rows_text(results, ["run_id"] + list(variation_names) + ["status", "error"],
                            bad)
    return "\n".join(lines)


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display); ValueError if not installed."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("the sweep's summary PNG needs matplotlib: pip install "
                         "'mbd_ros[sweep]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_summary(results, variation_names, path, title):
    """PNG at `path`: one panel per (scalar metric, varied quantity): the metric of each run
    that finished (dots), the diverged runs marked at their metric (crosses); runs with an
    error are counted in the panel's title."""
    plt = pyplot()
    metrics = [m for m in PLOTTED if m in results]
    if not metrics:
        metrics = ["steps"]
    status = np.asarray(results["status"]).astype(str)
    ok, diverged = status == "ok", status == "diverged"
    n_err = int((status == "error").sum())
    rows, cols = len(metrics), len(variation_names)
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols + 1, 2.6 * rows + 0.8),
                             squeeze=False)
    for i, metric in enumerate(metrics):
        y = np.asarray(results[metric], dtype=float)
        for j, name in enumerate(variation_names):
            ax = axes[i, j]
            x = np.asarray(results[name], dtype=float)
            ax.plot(x[ok], y[ok], ".", ms=4, color="tab:blue", label="ok")
            if diverged.any():
                ax.plot(x[diverged], y[diverged], "x", ms=5, color="tab:red", label="diverged")
                ax.legend(fontsize=7)
            if i == rows - 1:
                ax.set_xlabel(name)
            if j == 0:
                ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
    fig.suptitle(f"{title}: {len(status)} runs" +
                 (f" ({n_err} with an error, not drawn)" if n_err else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
