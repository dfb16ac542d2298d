"""The `flexible_links:` section: which URDF links deform, and their beam or modal data.

    flexible_links:
      - link: forearm            # a URDF link hanging from a movable joint
        beam:                    # Euler-Bernoulli beam along the link's +x axis from its origin
          length: 0.8            # m
          density: 2700.0        # kg/m^3
          area: 2.0e-4           # m^2
          E: 7.0e10              # Pa
          Iy: 1.0e-9             # m^4, bending in the x-z plane
          Iz: 1.0e-9             # m^4, bending in the x-y plane
          G: 2.6e10              # Pa, optional (with J): torsion about x
          J: 2.0e-9              # m^4
          elements: 10           # finite elements
        modes: 4                 # lowest clamped modes kept as elastic coordinates
        damping_ratio: 0.01      # modal damping ratio, optional (default 0)
      - link: boom
        modal_data: boom.npz     # lumped-mass modal data (see modal.py for the arrays)

`read_flexible` accepts a file path, YAML text or a dict (the same conventions as `closures=`;
one YAML file may also hold `closures:`, `actuated:`, `independent:` and `forces:`, which are
ignored here). Every error is a ModelError naming the source, the entry and the field.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError

TOP_LEVEL_KEYS = ("flexible_links",)
OTHER_SECTIONS = ("closures", "actuated", "independent", "forces")
ENTRY_FIELDS = ("link", "beam", "modal_data", "modes", "damping_ratio")
BEAM_FIELDS = ("length", "density", "area", "E", "Iy", "Iz", "G", "J", "elements")
BEAM_REQUIRED = ("length", "density", "area", "E", "Iy", "Iz")

# PyYAML reads 1e-3 (no decimal point) as a string (YAML 1.1); accept such strings as numbers.
_FLOAT_TEXT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


@dataclass(frozen=True)
class BeamSpec:
    """Euler-Bernoulli beam data (SI units). G and J are None when torsion is not modelled."""
    length: float
    density: float
    area: float
    E: float
    Iy: float
    Iz: float
    G: float | None
    J: float | None
    elements: int


@dataclass(frozen=True)
class FlexibleLinkSpec:
    """One flexible link: exactly one of `beam` / `modal_data` (a resolved file path) is set."""
    link: str
    beam: BeamSpec | None
    modal_data: str | None
    modes: int | None            # None: all modes of the modal data (required with a beam)
    damping_ratio: float
    label: str                   # '<source>: flexible link 0 (forearm)' for messages


def read_flexible(source, link_names):
    """Parse and validate the flexible_links section: a tuple of FlexibleLinkSpec.

    source: file path (str or Path), YAML text or a dict. link_names: the URDF's links.
    Raises ModelError naming the source, the entry and the field.
    """
    data, where, base_dir = _load(source)
    if not isinstance(data, dict):
        raise ModelError(f"{where}: expected a mapping with the key 'flexible_links', got {_kind(data)}")
    for key in data:
        if key not in TOP_LEVEL_KEYS + OTHER_SECTIONS:
            close = difflib.get_close_matches(str(key), TOP_LEVEL_KEYS + OTHER_SECTIONS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ModelError(f"{where}: unknown top-level key '{key}' ({hint}expected "
                             f"{', '.join(TOP_LEVEL_KEYS + OTHER_SECTIONS)})")
    if "flexible_links" not in data:
        raise ModelError(f"{where}: missing the 'flexible_links' list")
    entries = data["flexible_links"] or []
    if not isinstance(entries, (list, tuple)):
        raise ModelError(f"{where}: 'flexible_links' must be a list of entries, got {_kind(entries)}")
    links = set(link_names)
    specs, seen = [], {}
    for index, entry in enumerate(entries):
        spec = _read_entry(entry, index, where, base_dir, links, link_names)
        if spec.link in seen:
            raise ModelError(f"{spec.label}: field 'link': '{spec.link}' is already declared "
                             f"flexible by entry {seen[spec.link]}")
        seen[spec.link] = index
        specs.append(spec)
    return tuple(specs)


def _read_entry(entry, index, where, base_dir, links, link_names):
    label = f"{where}: flexible link {index}"
    if not isinstance(entry, dict):
        raise ModelError(f"{label}: expected a mapping with the fields {', '.join(ENTRY_FIELDS)}, "
                         f"got {_kind(entry)}")
    link = entry.get("link")
    if not isinstance(link, str) or not link:
        raise ModelError(f"{label}: field 'link': missing or not a link name, got {_kind(link)}")
    label = f"{where}: flexible link {index} ('{link}')"
    _check_keys(entry, ENTRY_FIELDS, f"{label}: unknown field")
    if link not in links:
        close = difflib.get_close_matches(link, list(link_names), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ModelError(f"{label}: field 'link': no link '{link}' in the URDF{hint}")
    has_beam, has_modal = "beam" in entry, "modal_data" in entry
    if has_beam == has_modal:
        raise ModelError(f"{label}: give exactly one of the fields 'beam' and 'modal_data'")
    modes = entry.get("modes")
    if modes is not None:
        modes = _positive_int(modes, f"{label}: field 'modes'")
    elif has_beam:
        raise ModelError(f"{label}: field 'modes': missing (how many lowest modes to keep)")
    damping = entry.get("damping_ratio", 0.0)
    damping = _number(damping, f"{label}: field 'damping_ratio'")
    if damping < 0.0:
        raise ModelError(f"{label}: field 'damping_ratio': must be >= 0, got {damping}")
    beam = modal = None
    if has_beam:
        beam = _read_beam(entry["beam"], label)
    else:
        path = entry["modal_data"]
        if not isinstance(path, (str, Path)):
            raise ModelError(f"{label}: field 'modal_data': must be a file path, got {_kind(path)}")
        path = str(path)
        if not os.path.isabs(path) and base_dir is not None:
            candidate = os.path.join(base_dir, path)
            path = candidate if os.path.isfile(candidate) or not os.path.isfile(path) else path
        if not os.path.isfile(path):
            raise ModelError(f"{label}: field 'modal_data': file not found: {path}")
        modal = path
    return FlexibleLinkSpec(link=link, beam=beam, modal_data=modal, modes=modes,
                            damping_ratio=damping, label=label)


def _read_beam(beam, label):
    if not isinstance(beam, dict):
        raise ModelError(f"{label}: field 'beam': expected a mapping with {', '.join(BEAM_FIELDS)}, "
                         f"got {_kind(beam)}")
    _check_keys(beam, BEAM_FIELDS, f"{label}: field 'beam': unknown key")
    values = {}
    for key in BEAM_REQUIRED:
        if key not in beam:
            raise ModelError(f"{label}: field 'beam.{key}': missing")
    for key in BEAM_FIELDS[:-1]:
        if key in beam:
            value = _number(beam[key], f"{label}: field 'beam.{key}'")
            if value <= 0.0:
                raise ModelError(f"{label}: field 'beam.{key}': must be positive, got {value}")
            values[key] = value
    if ("G" in values) != ("J" in values):
        raise ModelError(f"{label}: field 'beam.{'J' if 'G' in values else 'G'}': torsion needs "
                         "both G and J")
    elements = _positive_int(beam.get("elements", 10), f"{label}: field 'beam.elements'")
    return BeamSpec(length=values["length"], density=values["density"], area=values["area"],
                    E=values["E"], Iy=values["Iy"], Iz=values["Iz"], G=values.get("G"),
                    J=values.get("J"), elements=elements)


# ---- helpers -----------------------------------------------------------------------------------

def _load(source):
    """(parsed data, source name for messages, directory for relative modal_data paths)."""
    import yaml  # PyYAML, safe loading only

    if isinstance(source, dict):
        return source, "<flexible dict>", None
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, Path):
        source = str(source)
    if not isinstance(source, str):
        raise ModelError("flexible must be a file path, YAML text or a dict, "
                         f"got {type(source).__name__}")
    if "\n" not in source and os.path.isfile(source):
        try:
            with open(source, encoding="utf-8") as stream:
                return yaml.safe_load(stream), source, os.path.dirname(os.path.abspath(source))
        except yaml.YAMLError as exc:
            raise ModelError(f"{source}: malformed YAML: {exc}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"{source}: cannot read the flexible-link file: {exc}") from exc
    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        raise ModelError(f"<flexible text>: malformed YAML: {exc}") from exc
    if (data is None or isinstance(data, str)) and "\n" not in source:
        raise ModelError(f"flexible-link file not found: {source}")
    return data, "<flexible text>", None


def _check_keys(mapping, allowed, prefix):
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ModelError(f"{prefix} '{key}' ({hint}expected {', '.join(allowed)})")


def _number(value, what):
    if isinstance(value, str) and _FLOAT_TEXT.match(value.strip()):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{what}: must be a number, got {_kind(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ModelError(f"{what}: must be finite, got {value}")
    return value


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        if isinstance(value, float) and value.is_integer() and value >= 1:
            return int(value)
        raise ModelError(f"{what}: must be a positive integer, got {_kind(value)}")
    return value


def _kind(value):
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (bool, int, float)):
        return f"{type(value).__name__} {value!r}"
    return f"a {type(value).__name__}"
