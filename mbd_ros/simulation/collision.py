"""Contact points of a robot's URDF ``<collision>`` geometry, read with the package's hardened
URDF reader (mbd_ros.inputs.urdf.read_xml: size caps, no entities, no network). No ROS imports.

    points, notes = collision_points(robot, "robot.urdf")    # list of ContactPoint, warnings

Each primitive becomes contact features the ground law of mbd_ros.simulation.contact evaluates
(a feature is a sphere of radius r >= 0 fixed in a link: its lowest point touches the plane):

- ``<sphere radius>``: its centre, radius r: exact against a plane in every orientation.
- ``<box size>``: its 8 corners (radius 0): exact for a box against a plane (the lowest point
  of a convex polyhedron on a plane is a vertex).
- ``<cylinder radius length>`` (axis = z of the collision frame): 8 samples on each rim
  (radius 0): a cylinder lying on its side rests on rim points; the lowest rim point is
  missed by at most r (1 - cos(pi / 8)) = 0.076 r (a thin sliver of penetration).
- ``<capsule radius length>`` (not URDF 1.0, but written by some tools; axis z): the spheres
  of its two end caps: exact against a plane.
- ``<mesh filename scale>``: its axis-aligned bounding box in the collision frame, 8 corners
  (a mesh is a convex-hull approximation at best; the box contains the mesh, so the robot
  never sinks through the ground, and rests at most the box's slack above it). The mesh is read
  only when the URDF is a file and the mesh resolves to a file under the URDF's own directory
  tree (``package://pkg/rest`` -> ``<ancestor named pkg>/rest`` or ``<ancestor>/rest``;
  a relative path from the URDF's directory; ``file://`` under the same ancestors), is an STL
  (binary or ASCII) or OBJ of at most MAX_MESH_BYTES. Otherwise the mesh is skipped and a note
  names the link and why (a URDF from a topic never makes the reader open a file).

Features of links the robot merged into a body (fixed joints) stay on their link; GroundContact
maps them onto the body.
"""
from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

import numpy as np

from ..inputs.urdf import read_xml
from ..inputs.urdf_elements import parse_origin

MAX_MESH_BYTES = 64 << 20       # a collision mesh larger than this is not read (bounded cost)
MAX_FEATURES = 20_000           # contact features of one robot (bounded per-step cost)
CYLINDER_RIM_SAMPLES = 8        # per rim; the lowest rim point is missed by r (1 - cos(pi/8))
MESH_SUFFIXES = (".stl", ".obj")


@dataclass(frozen=True)
class ContactPoint:
    """A sphere of `radius` (m; 0: a point) centred at `position` (m) in `link`'s frame."""
    link: str
    position: tuple = (0.0, 0.0, 0.0)
    radius: float = 0.0


def _numbers(text, count, what):
    try:
        values = [float(s) for s in (text or "").split()]
    except ValueError:
        raise ValueError(f"{what}: not numbers: {text!r}") from None
    if len(values) != count or not all(math.isfinite(x) for x in values):
        raise ValueError(f"{what}: needs {count} finite numbers, got {text!r}")
    return values


def _positive(element, attribute, what):
    (value,) = _numbers(element.get(attribute), 1, f"{what} {attribute}")
    if value < 0.0:
        raise ValueError(f"{what} {attribute} must be >= 0, got {value}")
    return value


def box_corners(half):
    """(8, 3) corners of a box of half extents `half` (3,), centred at the origin."""
    half = np.asarray(half, dtype=float)
    return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                    dtype=float) * half


def cylinder_rims(radius, length, samples=CYLINDER_RIM_SAMPLES):
    """(2 samples, 3) points on the two rims of a cylinder of axis z, centred at the origin."""
    angles = 2.0 * np.pi * np.arange(samples) / samples
    ring = np.stack([radius * np.cos(angles), radius * np.sin(angles), np.zeros(samples)], 1)
    top, bottom = ring.copy(), ring.copy()
    top[:, 2], bottom[:, 2] = 0.5 * length, -0.5 * length
    return np.vstack([top, bottom])


# ---------------------------------------------------------------------------- meshes
def mesh_bounds(path):
    """(lower (3,), upper (3,)) of the vertices of an STL (binary or ASCII) or OBJ file, in its
    own units. ValueError saying why when it cannot be read (size, format, no vertices)."""
    size = os.path.getsize(path)
    if size > MAX_MESH_BYTES:
        raise ValueError(f"{size} bytes, more than MAX_MESH_BYTES = {MAX_MESH_BYTES}")
    suffix = os.path.splitext(path)[1].lower()
    with open(path, "rb") as f:
        data = f.read()
    if suffix == ".stl":
        vertices = _stl_vertices(data)
    elif suffix == ".obj":
        vertices = _obj_vertices(data)
    else:
        raise ValueError(f"mesh format {suffix or '(none)'} is not read (STL and OBJ are)")
    if vertices.shape[0] == 0 or not np.isfinite(vertices).all():
        raise ValueError("no (finite) vertices")
    return vertices.min(axis=0), vertices.max(axis=0)


def _stl_vertices(data):
    if len(data) >= 84:
        (count,) = struct.unpack_from("<I", data, 80)
        if len(data) == 84 + 50 * count:   # binary STL: 50-byte triangles after the header
            record = np.dtype([("normal", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
            triangles = np.frombuffer(data, dtype=record, count=count, offset=84)
            return triangles["v"].reshape(-1, 3).astype(float)
    text = data.decode("ascii", errors="replace")
    if not text.lstrip().startswith("solid"):
        raise ValueError("neither a binary STL (size mismatch) nor an ASCII STL")
    rows = [line.split()[1:4] for line in text.splitlines() if line.lstrip().startswith("vertex")]
    try:
        return np.array(rows, dtype=float).reshape(-1, 3)
    except ValueError:
        raise ValueError("malformed ASCII STL vertex") from None


def _obj_vertices(data):
    rows = [line.split()[1:4] for line in data.decode("ascii", errors="replace").splitlines()
            if line.startswith("v ")]
    try:
        return np.array(rows, dtype=float).reshape(-1, 3)
    except ValueError:
        raise ValueError("malformed OBJ vertex") from None


def resolve_mesh(filename, urdf_dir):
    """The file a mesh `filename` names, searched only under the ancestors of `urdf_dir` (the
    directory of the URDF file), or None. package://pkg/rest: <ancestor named pkg>/rest, else
    <ancestor>/rest; file:///abs and relative paths: only when inside an ancestor."""
    if urdf_dir is None:
        return None
    urdf_dir = os.path.realpath(urdf_dir)
    ancestors = []
    d = urdf_dir
    while True:
        ancestors.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    candidates = []
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        candidates += [os.path.join(a, rest) for a in ancestors if os.path.basename(a) == package]
        candidates += [os.path.join(a, rest) for a in ancestors]
    elif filename.startswith("file://"):
        candidates.append(filename[len("file://"):])
    elif "://" not in filename:
        candidates.append(os.path.join(urdf_dir, filename))
    for candidate in candidates:
        path = os.path.realpath(candidate)
        # under one of the URDF's ancestor directories (not the filesystem root)
        inside = any(path.startswith(a + os.sep) for a in ancestors[:-1])
        if inside and os.path.isfile(path) and path.lower().endswith(MESH_SUFFIXES):
            return path
    return None


# ---------------------------------------------------------------------------- URDF
def collision_points(robot, urdf, read_meshes=True):
    """Contact features of the ``<collision>`` elements of the links of `robot` (see the module
    docstring), from `urdf` (file path or XML text, as mbd_ros.load takes).

    Returns (points, notes): points a list of ContactPoint (link frame, m), notes a list of
    str naming the links whose geometry was skipped and why. ValueError naming the link for a
    malformed primitive; more than MAX_FEATURES features is refused."""
    root, source = read_xml(urdf)
    urdf_dir = None
    if read_meshes and not str(urdf).lstrip().startswith("<") and os.path.isfile(str(source)):
        urdf_dir = os.path.dirname(os.path.abspath(str(source)))
    known = set(robot.link_names)
    points, notes = [], []
    for link in root.findall("link"):
        name = link.get("name")
        if name not in known:
            continue
        for k, collision in enumerate(link.findall("collision")):
            what = f"link '{name}' <collision> {k}"
            origin = parse_origin(collision.find("origin"))
            origin = np.eye(4) if origin is None else origin
            geometry = collision.find("geometry")
            shape = None if geometry is None else next(iter(geometry), None)
            if shape is None:
                notes.append(f"{what}: no geometry")
                continue
            tag = shape.tag
            radius = 0.0
            if tag == "sphere":
                local, radius = np.zeros((1, 3)), _positive(shape, "radius", f"{what} <sphere>")
            elif tag == "box":
                size = _numbers(shape.get("size"), 3, f"{what} <box> size")
                local = box_corners(0.5 * np.abs(size))
            elif tag == "cylinder":
                local = cylinder_rims(_positive(shape, "radius", f"{what} <cylinder>"),
                                      _positive(shape, "length", f"{what} <cylinder>"))
            elif tag == "capsule":
                length = _positive(shape, "length", f"{what} <capsule>")
                radius = _positive(shape, "radius", f"{what} <capsule>")
                local = np.array([[0.0, 0.0, 0.5 * length], [0.0, 0.0, -0.5 * length]])
            elif tag == "mesh":
                local = _mesh_corners(shape, urdf_dir, what, notes)
                if local is None:
                    continue
            else:
                notes.append(f"{what}: <{tag}> is not a collision primitive; skipped")
                continue
            world = local @ origin[:3, :3].T + origin[:3, 3]
            points += [ContactPoint(name, tuple(float(x) for x in p), float(radius))
                       for p in world]
            if len(points) > MAX_FEATURES:
                raise ValueError(f"{source}: more than MAX_FEATURES = {MAX_FEATURES} contact "
                                 "features in the <collision> geometry")
    return points, notes


def _mesh_corners(shape, urdf_dir, what, notes):
    filename = shape.get("filename") or ""
    scale = _numbers(shape.get("scale", "1 1 1"), 3, f"{what} <mesh> scale")
    if urdf_dir is None:
        notes.append(f"{what}: mesh {filename!r} not read (the URDF is not a file); skipped")
        return None
    path = resolve_mesh(filename, urdf_dir)
    if path is None:
        notes.append(f"{what}: mesh {filename!r} not found under the URDF's directories (or "
                     f"not {'/'.join(MESH_SUFFIXES)}); skipped")
        return None
    try:
        lower, upper = mesh_bounds(path)
    except (ValueError, OSError) as exc:
        notes.append(f"{what}: mesh {path} not read ({exc}); skipped")
        return None
    lower, upper = lower * scale, upper * scale
    lower, upper = np.minimum(lower, upper), np.maximum(lower, upper)
    return box_corners(0.5 * (upper - lower)) + 0.5 * (upper + lower)
