"""Field checks shared by the YAML readers (closures.py, forces.py, flexible.py): numbers, lists
of numbers, origins, unknown keys with suggestions, and the bounded quoting of values in messages.
Every failure is a ModelError whose text the caller prefixed with the file, entry and field.
"""
from __future__ import annotations

import difflib
import math
import re

import numpy as np

from ..errors import ModelError, excerpt

EXCERPT_QUOTE = 120     # characters of a string value quoted in a message
# Every number of a model file (lengths, stiffnesses, ...) lies within this magnitude: products
# of a few of them must not overflow inside the dynamics (as urdf.MAX_MAGNITUDE).
MAX_MAGNITUDE = 1e100
ORIGIN_KEYS = ("xyz", "rpy")

# PyYAML implements YAML 1.1, which reads an exponent without a decimal point (1e-3) as a string;
# YAML 1.2 and every user read it as a number, so such strings are accepted as numbers.
FLOAT_TEXT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def number(value, what):
    if isinstance(value, bool) or value is None:
        raise ModelError(f"{what}: must be a number, got {kind(value)}")
    if isinstance(value, str):
        if not FLOAT_TEXT.match(value.strip()):
            raise ModelError(f"{what}: must be a number, got the string {quoted(value)}")
        value = float(value)
    try:
        number = float(value)
    except OverflowError:
        raise ModelError(f"{what}: must be a finite number, got an integer of "
                         f"~{digits(value)} digits") from None
    except (TypeError, ValueError):
        raise ModelError(f"{what}: must be a number, got {kind(value)}") from None
    if not math.isfinite(number):
        raise ModelError(f"{what}: must be finite, got {number}")
    if abs(number) > MAX_MAGNITUDE:
        raise ModelError(f"{what}: {number:.3g} is beyond {MAX_MAGNITUDE:g}: no model has such a "
                         "value (check the units)")
    return number


def numbers(value, n, what):
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else kind(value)
        raise ModelError(f"{what}: must be a list of {n} numbers, got {got}")
    return np.array([number(x, item(what, i)) for i, x in enumerate(value)])


def item(what, i):
    """"...: field 'axis'" -> "...: field 'axis[1]'"."""
    return f"{what[:-1]}[{i}]'" if what.endswith("'") else f"{what}[{i}]"


def origin(entry, key, label):
    """{xyz: [3], rpy: [3]} -> (4, 4) pose, R = Rz(yaw) Ry(pitch) Rx(roll) as URDF <origin>."""
    pose = np.eye(4)
    if key in entry:
        origin = entry[key]
        if not isinstance(origin, dict):
            raise ModelError(f"{label}: field '{key}': must be a mapping {{xyz: [x, y, z], "
                             f"rpy: [roll, pitch, yaw]}}, got {kind(origin)}")
        check_keys(origin, ORIGIN_KEYS, f"{label}: field '{key}': unknown key", "expected")
        xyz = numbers(origin.get("xyz", (0.0, 0.0, 0.0)), 3, f"{label}: field '{key}.xyz'")
        rpy = numbers(origin.get("rpy", (0.0, 0.0, 0.0)), 3, f"{label}: field '{key}.rpy'")
        pose[:3, :3] = rpy_to_matrix(rpy)
        pose[:3, 3] = xyz
    pose.setflags(write=False)
    return pose


def rpy_to_matrix(rpy):
    """URDF convention: fixed-axis roll about x, then pitch about y, then yaw about z."""
    roll, pitch, yaw = rpy
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    return rz @ ry @ rx


def check_keys(mapping, allowed, prefix, word="expected"):
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1) \
                if isinstance(key, str) and len(key) < 200 else []
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ModelError(f"{prefix} '{text(key, 80)}' ({hint}{word} {', '.join(allowed)})")


def text(value, limit=80):
    """A key or name for a message: a str as an excerpt, anything else (a huge int, a list) by
    a bounded repr (never str(value): that may be a 10^9-item alias structure)."""
    return excerpt(value, limit)


def suggest(name, names):
    close = difflib.get_close_matches(name, names, n=3) if len(name) < 200 else []
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return f"links are {shown}"


def digits(value):
    """Decimal digits of an int, without converting it to text (huge ints cannot be)."""
    return int(abs(value).bit_length() * 0.30103) + 1 if isinstance(value, int) else 0


def kind(value):
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 30:
        return f"an integer of ~{digits(value)} digits"
    if isinstance(value, (bool, int, float)):
        return f"{type(value).__name__} {value!r}"
    return f"a {type(value).__name__}"


def quoted(text, limit=EXCERPT_QUOTE):
    """repr of a string's first `limit` characters, with its length when it is longer."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        if isinstance(value, float) and value.is_integer() and value >= 1:
            return int(value)
        raise ModelError(f"{what}: must be a positive integer, got {kind(value)}")
    return value


def named_entries(entries, where, section, word, limit, read_entry):
    """The specs read_entry(entry, index) makes of a YAML list `section` (closures, forces):
    at most `limit` entries, names unique. `word` names one entry in messages ('closure')."""
    if len(entries) > limit:
        raise ModelError(f"{where}: '{section}' has {len(entries)} entries, more than the "
                         f"{limit} a model may have")
    specs, first = [], {}
    for index, entry in enumerate(entries):
        spec = read_entry(entry, index)
        if spec.name in first:
            raise ModelError(f"{where}: {word} {index} ('{spec.name}'): field 'name': duplicate "
                             f"name, already used by {word} {first[spec.name]}")
        first[spec.name] = index
        specs.append(spec)
    return tuple(specs)
