"""Mimic joints: the URDF <mimic joint="leader" multiplier="r" offset="o"/> tags, as read.

read_mimics returns them; with load(..., mimic=True) the Robot couples each mimicking joint to its
leader (robot/mimic.py: q_m = r q_l + o as a constraint row; docs/formats.md).
"""
from __future__ import annotations

import numpy as np
from lxml import etree

from .errors import ModelError


def read_mimics(urdf, source_name):
    """[(joint, leader, multiplier, offset)] of the <mimic> tags of a URDF (path or XML text)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        if isinstance(urdf, str) and "<" not in urdf:
            root = etree.parse(urdf, parser).getroot()
        else:
            text = urdf.encode() if isinstance(urdf, str) else urdf
            root = etree.fromstring(text, parser)
    except (OSError, etree.XMLSyntaxError) as exc:
        raise ModelError(f"{source_name}: cannot read the mimic tags: {exc}") from None
    mimics = []
    for joint in root.iter("joint"):
        tag = joint.find("mimic")
        if tag is None:
            continue
        name = joint.get("name")
        leader = tag.get("joint")
        if not leader:
            raise ModelError(f"{source_name}: joint '{name}': <mimic> needs a joint attribute")
        try:
            multiplier = float(tag.get("multiplier", "1"))
            offset = float(tag.get("offset", "0"))
        except ValueError:
            raise ModelError(f"{source_name}: joint '{name}': <mimic> multiplier and offset must "
                             "be numbers") from None
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"{source_name}: joint '{name}': <mimic> multiplier and offset must "
                             "be finite")
        mimics.append((name, leader, multiplier, offset))
    return mimics
