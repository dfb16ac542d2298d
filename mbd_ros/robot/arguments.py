"""Arguments of the Robot's public methods: conversion and checks at the entry points.

Every public method converts its inputs here, once, before any kernel runs; kernels never raise.
A wrong type, shape or a complex number is a ValueError naming the argument; the sizes, NaN/inf
and quaternion norms of states are checked by the tree's kernel (trees.py, `check_state`).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import excerpt

FLOAT = np.dtype(np.float64)
EMPTY = np.zeros(0)   # writable: the kernels' explicit signatures take writable arrays only


# numpy array kinds taken as numbers: float, signed and unsigned integers, and objects that
# convert to float; complex (numpy would drop the imaginary part), bool, strings (numpy would
# parse them), dates are refused
REAL_KINDS = "fiuO"
KIND_WORDS = {"c": "complex", "b": "boolean", "U": "string", "S": "bytes", "M": "datetime",
              "m": "timedelta", "V": "structured"}


def real_array(x, name, what):
    """x as a new C-contiguous float64 array. ValueError naming `name` (`what`: what it must be)
    for complex, boolean, string or other non-numeric values and for ragged sequences."""
    try:
        array = x if isinstance(x, np.ndarray) else np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be {what}: {excerpt(str(exc), 120)}") from None
    if array.dtype.kind not in REAL_KINDS:
        word = KIND_WORDS.get(array.dtype.kind, str(array.dtype))
        raise ValueError(f"{name} must be {what} (real numbers), got {word} values")
    try:
        return np.array(array, dtype=FLOAT, order="C", copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be {what}: {excerpt(str(exc), 120)}") from None


def real_scalar(x, name):
    """x as a float: a real number (int, float, numpy scalar or 0-d array); ValueError naming
    `name` for bools, complex numbers, strings, None, sequences and arrays of one or more
    dimensions (float() would parse a string or take a one-element array)."""
    if isinstance(x, np.ndarray):
        ok = x.ndim == 0 and x.dtype.kind in "fiu"
    else:
        ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
    if ok:
        try:
            return float(x)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError(f"{name} must be a real number, got {excerpt(x, 60)}")


def vector(x, n, name):
    """x as a C-contiguous, aligned, writable float64 (n,) array (no copy when it already is
    one; the kernels refuse misaligned arrays: kernels/typecode_guard.py)."""
    if type(x) is not np.ndarray or x.dtype != FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable or not x.flags.aligned:
        x = real_array(x, name, f"an array of {n} numbers")
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def batch(x, n, name, n_states=None):
    """x as a C-contiguous, aligned, writable float64 (N, n) array (N = n_states when given)."""
    if type(x) is not np.ndarray or x.dtype != FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable or not x.flags.aligned:
        x = real_array(x, name, f"an array of shape (N, {n})")
    if x.ndim != 2 or x.shape[1] != n or (n_states is not None and x.shape[0] != n_states):
        want = f"({n_states if n_states is not None else 'N'}, {n})"
        raise ValueError(f"{name} must have shape {want}, got {x.shape}")
    return x


def output(out, shape, name="out"):
    """A validated output array: a new one for None, else a writable, aligned, C-contiguous
    float64 array of exactly `shape` (native byte order: FLOAT)."""
    if out is None:
        return np.empty(shape)
    if type(out) is not np.ndarray or out.dtype != FLOAT or out.shape != shape \
            or not out.flags.c_contiguous or not out.flags.writeable or not out.flags.aligned:
        raise ValueError(f"{name} must be a writable, aligned, C-contiguous float64 array of "
                         f"shape {shape}")
    return out


def shares_memory(out, *inputs):
    """True when `out` is, or may overlap, one of the input arrays. Results are then computed
    into a private array and copied (the kernels read their inputs after writing outputs)."""
    for x in inputs:
        if x is out:
            return True
    if out.base is None and all(getattr(x, "base", None) is None for x in inputs):
        return False   # distinct base arrays never overlap
    return any(isinstance(x, np.ndarray) and np.may_share_memory(out, x) for x in inputs)


def time_step(dt, name="dt"):
    """dt as a positive finite float (s); ValueError naming `name` for anything else: None, a
    sequence or array of more than zero dimensions, a string, a bool, a complex number,
    NaN/inf, zero or a negative number."""
    if type(dt) is float:   # the common case, without the checks of real_scalar
        value = dt
    else:
        try:
            value = real_scalar(dt, name)
        except ValueError:
            raise ValueError(f"{name} must be a positive number of seconds, got "
                             f"{excerpt(dt, 60)}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a positive finite number of seconds, got {value}")
    return value


def link_name(link, link_names):
    """link as a str (a link is named, not given as a list or an index); ValueError listing
    a few of `link_names` otherwise."""
    if not isinstance(link, str):
        raise ValueError(f"link must be a link name (a string), got {excerpt(link, 60)} "
                         f"(links: {', '.join(link_names[:8])}"
                         f"{', ...' if len(link_names) > 8 else ''})")
    return link
