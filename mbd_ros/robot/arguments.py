"""Arguments of the Robot's public methods: conversion and checks at the entry points.

Every public method converts its inputs here, once, before any kernel runs; kernels never raise.
A wrong type, shape or a complex number is a ValueError naming the argument; the sizes, NaN/inf
and quaternion norms of states are checked by the tree's kernel (trees.py, `check_state`).
"""
from __future__ import annotations

import math

import numpy as np

FLOAT = np.dtype(np.float64)
EMPTY = np.zeros(0)   # writable: the kernels' explicit signatures take writable arrays only


def _as_float_array(x, name, what):
    """x as a float64 ndarray (a copy when it is not one); complex input is refused."""
    if isinstance(x, np.ndarray) and np.iscomplexobj(x):
        raise ValueError(f"{name} must be real numbers, got a complex array")
    try:
        array = np.array(x, dtype=FLOAT, order="C", copy=True) if isinstance(x, np.ndarray) \
            else np.ascontiguousarray(x, dtype=FLOAT)
    except (TypeError, ValueError, OverflowError) as exc:
        if "complex" in str(exc):
            raise ValueError(f"{name} must be real numbers, got complex values") from None
        raise ValueError(f"{name} must be {what}: {exc}") from None
    return array


def vector(x, n, name):
    """x as a C-contiguous, writable float64 (n,) array (no copy when it already is one)."""
    if type(x) is not np.ndarray or x.dtype != FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable:
        x = _as_float_array(x, name, f"an array of {n} numbers")
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def batch(x, n, name, n_states=None):
    """x as a C-contiguous, writable float64 (N, n) array (N = n_states when given)."""
    if type(x) is not np.ndarray or x.dtype != FLOAT or not x.flags.c_contiguous \
            or not x.flags.writeable:
        x = _as_float_array(x, name, f"an array of shape (N, {n})")
    if x.ndim != 2 or x.shape[1] != n or (n_states is not None and x.shape[0] != n_states):
        want = f"({n_states if n_states is not None else 'N'}, {n})"
        raise ValueError(f"{name} must have shape {want}, got {x.shape}")
    return x


def output(out, shape, name="out"):
    """A validated output array: a new one for None, else a writable C-contiguous float64 array
    of exactly `shape`."""
    if out is None:
        return np.empty(shape)
    if type(out) is not np.ndarray or out.dtype != FLOAT or out.shape != shape \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{name} must be a writable C-contiguous float64 array of shape {shape}")
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


def time_step(dt):
    """dt as a finite positive float; ValueError naming dt otherwise (None, a list, a string,
    nan, inf, zero or negative)."""
    if isinstance(dt, (bool, np.bool_)) or not isinstance(dt, (int, float, np.integer,
                                                               np.floating)):
        raise ValueError(f"dt must be a number of seconds, got {type(dt).__name__}")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a finite positive number of seconds, got {dt}")
    return dt


def link_name(link):
    """link as a str (a link is named, not given as a list or an index)."""
    if not isinstance(link, str):
        raise ValueError(f"link must be a link name (str), got {type(link).__name__}")
    return link
