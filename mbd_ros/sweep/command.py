"""`mbd-ros sweep SWEEP.yaml [--scheduler ADDRESS] [--workers N] --out DIR` (docs/sweeps.md)."""
from __future__ import annotations

import sys

from .orchestrate import DEFAULT_TIMEOUT, run_sweep

MAX_TIMEOUT = 3600.0   # s: --timeout to connect to a scheduler or start a cluster


def add_arguments(parser):
    parser.add_argument("sweep", help="sweep file (YAML, docs/sweeps.md); robot files are "
                                      "relative to it")
    parser.add_argument("--out", required=True,
                        help="output directory: results.parquet, summary.png, parts/ (an "
                             "interrupted sweep resumes from it with the same command)")
    parser.add_argument("--scheduler", default=None,
                        help="address of a running Dask scheduler (tcp://host:8786); default: "
                             "a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the LocalCluster (default: one per CPU)")
    parser.add_argument("--no-plot", action="store_true", help="do not write summary.png")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"s to connect to the scheduler / start the cluster (default "
                             f"{DEFAULT_TIMEOUT:g})")


def run(args):
    if args.workers is not None and args.workers < 1:
        raise ValueError("--workers must be at least 1")
    if not 0.0 < args.timeout <= MAX_TIMEOUT:   # NaN fails too
        raise ValueError(f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], got "
                         f"{args.timeout}")
    if args.scheduler and args.workers:
        raise ValueError("--workers sizes the LocalCluster; with --scheduler the cluster's "
                         "own workers run the sweep")
    try:
        result = run_sweep(args.sweep, args.out, scheduler=args.scheduler,
                           workers=args.workers, plot=not args.no_plot, timeout=args.timeout)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished batches are in {args.out}/parts; run the same "
              "command again to resume", file=sys.stderr)
        return 130
    print(f"{result.runs} runs in {result.results}"
          + (f" ({result.resumed} resumed from {result.out})" if result.resumed else "")
          + (f"; summary: {result.summary}" if result.summary else "")
          + f"; {result.seconds:.1f} s")
    return 0
