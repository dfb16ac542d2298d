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
from dataclasses import dataclass
from pathlib import Path

from . import fields
from ..errors import ModelError, missing_file
from .yaml_input import read_yaml

TOP_LEVEL_KEYS = ("flexible_links",)
OTHER_SECTIONS = ("closures", "actuated", "independent", "forces")
ENTRY_FIELDS = ("link", "beam", "modal_data", "modes", "damping_ratio")
BEAM_FIELDS = ("length", "density", "area", "E", "Iy", "Iz", "G", "J", "elements")
BEAM_REQUIRED = ("length", "density", "area", "E", "Iy", "Iz")

# The finite-element model of a beam costs O(elements^3) at load (its dense FE matrices and the
# shape integrals over 4 Gauss points per element): 100 elements take ~5-9 s on a loaded 2-core
# machine, 200 about a minute. The lowest modes converge with far fewer (the sample uses 10).
MAX_BEAM_ELEMENTS = 100
# Each term of the element matrices (E A / le, E I / le^3, G J / le, rho A le, ...) must lie in
# this range: beyond it the FE eigenproblem under- or overflows (a beam of length 1e-300 or
# density 1e-300); every real beam is many decades inside.
BEAM_TERM_RANGE = (1e-100, 1e100)
# Modes kept by a link: an absurd count is refused here (a beam or a modal file offering fewer
# than asked is refused later, naming both counts; neither offers more than 600).
MAX_MODES = 10_000
# Modal damping ratio: structures have 0.001-0.1, a mode damped out on purpose a few; beyond this
# the modal damping 2 zeta omega only makes the flexible dynamics stiff (an explicit step then
# needs dt < 1 / (zeta omega)), with nothing left to model.
MAX_DAMPING_RATIO = 1e3


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
        raise ModelError(f"{where}: expected a mapping with the key 'flexible_links', got {fields.kind(data)}")
    fields.check_keys(data, TOP_LEVEL_KEYS + OTHER_SECTIONS, f"{where}: unknown top-level key")
    if "flexible_links" not in data:
        raise ModelError(f"{where}: missing the 'flexible_links' list")
    entries = data["flexible_links"] or []
    if not isinstance(entries, (list, tuple)):
        raise ModelError(f"{where}: 'flexible_links' must be a list of entries, got {fields.kind(entries)}")
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
                         f"got {fields.kind(entry)}")
    link = entry.get("link")
    if not isinstance(link, str) or not link:
        raise ModelError(f"{label}: field 'link': missing or not a link name, got {fields.kind(link)}")
    label = f"{where}: flexible link {index} ('{fields.text(link)}')"
    fields.check_keys(entry, ENTRY_FIELDS, f"{label}: unknown field")
    if link not in links:
        close = difflib.get_close_matches(link, list(link_names), n=1) if len(link) < 200 else []
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ModelError(f"{label}: field 'link': no link '{fields.text(link)}' in the URDF{hint}")
    has_beam, has_modal = "beam" in entry, "modal_data" in entry
    if has_beam == has_modal:
        raise ModelError(f"{label}: give exactly one of the fields 'beam' and 'modal_data'")
    modes = entry.get("modes")
    if modes is not None:
        modes = fields.positive_int(modes, f"{label}: field 'modes'")
        if modes > MAX_MODES:
            raise ModelError(f"{label}: field 'modes': {fields.kind(modes)}, more than the {MAX_MODES} "
                             "a flexible link may keep")
    elif has_beam:
        raise ModelError(f"{label}: field 'modes': missing (how many lowest modes to keep)")
    damping = entry.get("damping_ratio", 0.0)
    damping = fields.number(damping, f"{label}: field 'damping_ratio'")
    if not 0.0 <= damping <= MAX_DAMPING_RATIO:
        raise ModelError(f"{label}: field 'damping_ratio': must be in [0, {MAX_DAMPING_RATIO:g}] "
                         f"(1 is critical damping), got {damping:.6g}")
    beam = modal = None
    if has_beam:
        beam = _read_beam(entry["beam"], label)
    else:
        path = entry["modal_data"]
        if not isinstance(path, (str, Path)):
            raise ModelError(f"{label}: field 'modal_data': must be a file path, got {fields.kind(path)}")
        path = str(path)
        if not os.path.isabs(path) and base_dir is not None:
            candidate = os.path.join(base_dir, path)
            path = candidate if os.path.isfile(candidate) or not os.path.isfile(path) else path
        if not os.path.isfile(path):
            raise ModelError(f"{label}: field 'modal_data': file {missing_file(path)}: "
                             f"{fields.text(path)}")
        modal = path
    return FlexibleLinkSpec(link=link, beam=beam, modal_data=modal, modes=modes,
                            damping_ratio=damping, label=label)


def _read_beam(beam, label):
    if not isinstance(beam, dict):
        raise ModelError(f"{label}: field 'beam': expected a mapping with {', '.join(BEAM_FIELDS)}, "
                         f"got {fields.kind(beam)}")
    fields.check_keys(beam, BEAM_FIELDS, f"{label}: field 'beam': unknown key")
    values = {}
    for key in BEAM_REQUIRED:
        if key not in beam:
            raise ModelError(f"{label}: field 'beam.{key}': missing")
    for key in BEAM_FIELDS[:-1]:
        if key in beam:
            value = fields.number(beam[key], f"{label}: field 'beam.{key}'")
            if value <= 0.0:
                raise ModelError(f"{label}: field 'beam.{key}': must be positive, got {value}")
            values[key] = value
    if ("G" in values) != ("J" in values):
        raise ModelError(f"{label}: field 'beam.{'J' if 'G' in values else 'G'}': torsion needs "
                         "both G and J")
    elements = fields.positive_int(beam.get("elements", 10), f"{label}: field 'beam.elements'")
    if elements > MAX_BEAM_ELEMENTS:
        raise ModelError(f"{label}: field 'beam.elements': {fields.kind(elements)}, more than the "
                         f"{MAX_BEAM_ELEMENTS} a beam may have (the FE model costs O(elements^3) "
                         "at load; the lowest modes converge with far fewer)")
    _check_scales(values, elements, label)
    return BeamSpec(length=values["length"], density=values["density"], area=values["area"],
                    E=values["E"], Iy=values["Iy"], Iz=values["Iz"], G=values.get("G"),
                    J=values.get("J"), elements=elements)


def _check_scales(values, elements, label):
    """Every term of the beam's element matrices within BEAM_TERM_RANGE, else a ModelError
    naming the fields it comes from."""
    le = values["length"] / elements
    terms = [("E * area / (length / elements)", ("E", "area", "length"),
              lambda: values["E"] * values["area"] / le)]
    for inertia in ("Iy", "Iz"):
        terms.append((f"E * {inertia} / (length / elements)^3", ("E", inertia, "length"),
                      lambda i=inertia: values["E"] * values[i] / le ** 3))
    terms.append(("density * area * length / elements", ("density", "area", "length"),
                  lambda: values["density"] * values["area"] * le))
    if "G" in values:
        terms.append(("G * J / (length / elements)", ("G", "J", "length"),
                      lambda: values["G"] * values["J"] / le))
        terms.append(("density * (Iy + Iz) * length / elements", ("density", "Iy", "Iz", "length"),
                      lambda: values["density"] * (values["Iy"] + values["Iz"]) * le))
    low, high = BEAM_TERM_RANGE
    for what, involved, term in terms:
        try:
            value = term()
        except (OverflowError, ZeroDivisionError):
            value = math.inf
        if not low <= value <= high:
            names = ", ".join(f"'beam.{f}'" for f in involved)
            raise ModelError(f"{label}: fields {names}: {what} = {value:.3g} is outside "
                             f"[{low:g}, {high:g}]: the finite-element model would under- or "
                             "overflow (check the units)")


# ---- helpers -----------------------------------------------------------------------------------

def _load(source):
    """(parsed data, source name for messages, directory for relative modal_data paths):
    yaml_input.read_yaml (safe loading, duplicate keys refused, sizes and aliases capped)."""
    data, where = read_yaml(source, "flexible", "flexible-link file")
    base_dir = None
    if isinstance(source, (str, Path)) and where == str(source):
        base_dir = os.path.dirname(os.path.abspath(where))   # read from that file
    return data, where, base_dir


