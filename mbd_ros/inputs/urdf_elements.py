"""Readers of URDF <link> and <joint> elements (lxml elements), for mbd_ros.urdf.

They read what the dynamics need (inertial, origin, axis, limit, dynamics) with the defaults of
yourdfpy's element parsers, which mbd_ros used before, so that every URDF gives the same numbers.
Importing yourdfpy pulls in trimesh and cost ~0.5 s of every process start, more than the rest of
a warm start together. Errors are plain ValueError/KeyError; mbd_ros.urdf turns them into
ModelErrors naming the file and the element.

Poses: <origin xyz="x y z" rpy="r p y"/> is the 4x4 matrix [R p; 0 1] with
R = Rz(y) Ry(p) Rx(r) (URDF's fixed-axis roll-pitch-yaw).
"""
from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np

from .fields import FLOAT_TEXT


# An XML Schema double (URDF's numbers): the decimal syntax of fields.FLOAT_TEXT (ASCII digits,
# an optional exponent) or INF / NaN; not Python's wider float() syntax ("1_000", non-ASCII
# digits), which no other URDF reader takes. Infinite and NaN values are read here and refused,
# naming the field, by mbd_ros.urdf.
NON_FINITE_TEXT = re.compile(r"[-+]?(inf|infinity|nan)", re.IGNORECASE)


def xml_float(text):
    """float of an XML number attribute (surrounding whitespace allowed); ValueError naming the
    text for anything else."""
    stripped = text.strip() if isinstance(text, str) else text
    if not isinstance(stripped, str) or (FLOAT_TEXT.match(stripped) is None and
                                         NON_FINITE_TEXT.fullmatch(stripped) is None):
        raise ValueError(f"not a number: {text!r}")
    return float(stripped)


def _floats(text, count, what):
    values = [xml_float(s) for s in text.split()]
    if len(values) != count:
        raise ValueError(f"{what} needs {count} numbers, got {text!r}")
    return values


def _optional_float(value):
    return xml_float(value) if value is not None else None


def rpy_matrix(roll, pitch, yaw):
    """(3, 3) R = Rz(yaw) Ry(pitch) Rx(roll)."""
    si, sj, sk = math.sin(roll), math.sin(pitch), math.sin(yaw)
    ci, cj, ck = math.cos(roll), math.cos(pitch), math.cos(yaw)
    cc, cs = ci * ck, ci * sk
    sc, ss = si * ck, si * sk
    return np.array([[cj * ck, sj * sc - cs, sj * cc + ss],
                     [cj * sk, sj * ss + cc, sj * cs - sc],
                     [-sj, cj * si, cj * ci]])


def parse_origin(element):
    """(4, 4) pose of an <origin> element, None if the element is absent."""
    if element is None:
        return None
    xyz = _floats(element.get("xyz", "0 0 0"), 3, "<origin xyz>")
    rpy = _floats(element.get("rpy", "0 0 0"), 3, "<origin rpy>")
    pose = np.eye(4)
    pose[:3, :3] = rpy_matrix(*rpy)
    pose[:3, 3] = xyz
    return pose


def parse_inertial(element):
    """SimpleNamespace(origin, mass, inertia) of an <inertial> element (None if absent). As in
    yourdfpy, a missing <mass> gives None, a <mass> without value 0, an <inertia> attribute left
    out 1 (diagonal) or 0 (products)."""
    if element is None:
        return None
    mass_element = element.find("mass")
    inertia_element = element.find("inertia")
    inertia = None
    if inertia_element is not None:
        x = inertia_element
        ixx, iyy, izz = (xml_float(x.get(k, "1")) for k in ("ixx", "iyy", "izz"))
        ixy, ixz, iyz = (xml_float(x.get(k, "0")) for k in ("ixy", "ixz", "iyz"))
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return SimpleNamespace(
        origin=parse_origin(element.find("origin")),
        mass=xml_float(mass_element.get("value", "0")) if mass_element is not None else None,
        inertia=inertia)


def parse_link(element):
    """SimpleNamespace(name, inertial) of a <link> element (visuals and collisions are ignored)."""
    return SimpleNamespace(name=element.attrib["name"], inertial=parse_inertial(element.find("inertial")))


def parse_joint(element):
    """SimpleNamespace(name, type, parent, child, origin, axis, pitch, axis2, limit,
    dynamics) of a <joint>.

    axis defaults to (1, 0, 0); limit (lower, upper, effort, velocity: float or None) and
    dynamics (damping, friction: the attribute strings or None) are None when absent.
    """
    axis_element = element.find("axis")
    limit_element = element.find("limit")
    dynamics_element = element.find("dynamics")
    limit = None
    if limit_element is not None:
        limit = SimpleNamespace(**{k: _optional_float(limit_element.get(k))
                                   for k in ("lower", "upper", "effort", "velocity")})
    dynamics = None
    if dynamics_element is not None:
        dynamics = SimpleNamespace(damping=dynamics_element.get("damping"),
                                   friction=dynamics_element.get("friction"))
    return SimpleNamespace(
        name=element.attrib["name"],
        type=element.get("type"),
        parent=element.find("parent").get("link"),
        child=element.find("child").get("link"),
        origin=parse_origin(element.find("origin")),
        axis=(np.array([1.0, 0.0, 0.0]) if axis_element is None
              else np.array(_floats(axis_element.get("xyz", "1 0 0"), 3, "<axis xyz>"))),
        # helical joints (mbd_ros extension): <axis xyz="..." pitch="..."/>, m per radian
        pitch=(None if axis_element is None else _optional_float(axis_element.get("pitch"))),
        # universal joints (mbd_ros extension): <axis2 xyz="..."/>, the second axis
        axis2=(None if element.find("axis2") is None
               else np.array(_floats(element.find("axis2").get("xyz", ""), 3, "<axis2 xyz>"))),
        limit=limit,
        dynamics=dynamics)
