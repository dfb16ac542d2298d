"""Mimic joints: the URDF <mimic joint="leader" multiplier="r" offset="o"/> tags, as read.

read_mimics returns them; with load(..., mimic=True) the Robot couples each mimicking joint to its
leader (robot/mimic.py: q_m = r q_l + o as a constraint row; docs/formats.md).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError, excerpt

# |multiplier| and |offset| (rad or m) of a <mimic>: no transmission couples joints by a larger
# ratio, and the coupled dynamics multiply by r^2 (a multiplier of 1e200 overflowed them)
MAX_MIMIC_VALUE = 1e6


def read_mimics(urdf, source_name):
    """[(joint, leader, multiplier, offset)] of the <mimic> tags of a URDF (path, XML text, a
    .xacro path: expanded, or the TreeSpec mbd_ros.urdf.read_urdf made of it)."""
    from .urdf import TreeSpec, mimic_tags, read_xml
    from .urdf_elements import xml_float
    if isinstance(urdf, TreeSpec):
        tags = urdf.mimics
    else:
        tags = mimic_tags(read_xml(urdf)[0])
    mimics = []
    for name, leader, multiplier, offset in tags:
        where = f"{source_name}: joint '{excerpt(str(name), 80)}'"
        if not leader:
            raise ModelError(f"{where}: <mimic> needs a joint attribute")
        try:
            multiplier = xml_float("1" if multiplier is None else multiplier)
            offset = xml_float("0" if offset is None else offset)
        except ValueError:
            raise ModelError(f"{where}: <mimic> multiplier and offset must be numbers") from None
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"{where}: <mimic> multiplier and offset must be finite")
        if abs(multiplier) > MAX_MIMIC_VALUE or abs(offset) > MAX_MIMIC_VALUE:
            raise ModelError(f"{where}: <mimic> multiplier {multiplier:.3g} or offset "
                             f"{offset:.3g} beyond {MAX_MIMIC_VALUE:g} (MAX_MIMIC_VALUE)")
        mimics.append((name, leader, multiplier, offset))
    return mimics
