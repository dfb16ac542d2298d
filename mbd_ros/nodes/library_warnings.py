"""Python warnings in a node process go to the node's ROS logger, throttled and counted.

The library reports recoverable problems as Python warnings (robot/constraints.py
LoopResidualWarning: dynamics asked at a configuration whose loops are open; a URDF's imperfect
inertias while loading; kernels/cache_trust.py CacheWarning). Python's default shows each on
stderr once per source location: in a node that meant one line outside the ROS log (no node
name, not on /rosout, so not in rqt_console or a launch's log files), and a state with open
loops at every cycle was reported once and never again. `route(node)` (base.run: node processes
only; a node built inside another program keeps that program's warning handling) sends every
warning to `node`'s logger instead, as "<Category>: <message>", at most once per
WARNING_PERIOD s per category, each occurrence counted (`node.warning_counts`, published on
/diagnostics as "warnings <Category>"). The library's own categories are shown at every
occurrence (filter "always") so that they are counted; other warnings keep the process's filters.
"""
from __future__ import annotations

import warnings

# the library's categories, seen at every occurrence (not once per location) so that the
# diagnostics count them
_LIBRARY_CATEGORIES = (
    ("mbd_ros.robot.constraints", "LoopResidualWarning"),
    ("mbd_ros.robot.rollout", "RolloutWarning"),
    ("mbd_ros.kernels.cache_trust", "CacheWarning"),
)


def _library_categories():
    import importlib
    out = []
    for module, name in _LIBRARY_CATEGORIES:
        out.append(getattr(importlib.import_module(module), name))
    return out


def route(node):
    """Send this process's Python warnings to node's logger (see the module docstring) until
    the returned function is called, which restores the previous handling."""
    saved_show = warnings.showwarning
    saved_filters = list(warnings.filters)
    for category in _library_categories():
        warnings.filterwarnings("always", category=category)

    def show(message, category, filename, lineno, file=None, line=None):
        name = getattr(category, "__name__", "Warning")
        node.warning_counts[name] = node.warning_counts.get(name, 0) + 1
        count = node.warning_counts[name]
        suffix = f" ({count} so far)" if count > 1 else ""
        node.warn_throttled(f"python warning {name}", f"{name}: {message}{suffix}")

    warnings.showwarning = show

    def restore():
        warnings.showwarning = saved_show
        warnings.filters[:] = saved_filters
        getattr(warnings, "_filters_mutated", lambda: None)()   # drop cached decisions
    return restore
