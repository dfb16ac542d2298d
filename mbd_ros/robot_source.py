"""Where a robot description comes from: URDF paths, xacro files and launch arguments. No ROS
imports (the launch files and the process-level tests use it too).

- `expand_xacro(path, mappings)`: a ``.xacro`` file expanded to URDF XML with the ``xacro``
  package (PyPI ``xacro``, a declared dependency of mbd_ros); a clear ModelError naming xacro
  when it is not installed or the file does not expand. `mbd_ros.load` calls it for ``.xacro``
  paths, so such a path is never read as an (empty) URDF.
- `parse_xacro_args("name:=value other:=value")`: the ``xacro_args`` launch argument.
- `robot_parameters(robot_description, urdf, xacro_args, search_dirs)`: the node parameters
  that give a node its robot, from the launch arguments (docs/nodes.md, "Launch files").
"""
from __future__ import annotations

import os
import shlex

from .errors import ModelError

XACRO_SUFFIX = ".xacro"


def is_xacro_path(value):
    """True for a str/Path naming a .xacro file (not XML text)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    return isinstance(text, str) and not text.lstrip().startswith("<") and \
        text.strip().lower().endswith(XACRO_SUFFIX)


def parse_xacro_args(text):
    """'a:=1 b:="x y"' -> {'a': '1', 'b': 'x y'}. Raises ValueError naming a malformed entry."""
    mappings = {}
    for item in shlex.split(text or ""):
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise ValueError(f"xacro_args: {item!r} is not of the form name:=value")
        mappings[name] = value
    return mappings


def expand_xacro(path, mappings=None):
    """URDF XML text of the xacro file `path`, its <xacro:arg>s set from `mappings` (dict).
    Raises ModelError (naming the file and xacro) if xacro is missing or fails."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelError(f"xacro file not found: {path}")
    try:
        import xacro
    except ImportError:
        raise ModelError(f"{path} is a xacro file: install the xacro package (pip install "
                         "xacro) to expand it, or pass the expanded URDF") from None
    try:
        document = xacro.process_file(path, mappings=dict(mappings or {}))
        return document.toprettyxml(indent="  ")
    except Exception as exc:   # XacroException, XML errors, substitution failures
        raise ModelError(f"{path}: xacro could not expand it: {exc}") from exc


def resolve_path(path, search_dirs=()):
    """`path` if it exists, else the first search_dirs/path that does; else `path` unchanged
    (the loader then reports it as not found)."""
    if os.path.exists(path) or os.path.isabs(path):
        return path
    for directory in search_dirs:
        candidate = os.path.join(os.fspath(directory), path)
        if os.path.exists(candidate):
            return candidate
    return path


def robot_parameters(robot_description="", urdf="", xacro_args="", search_dirs=()):
    """Node parameters for the robot from launch arguments, first match wins:

    - robot_description (URDF XML text)      -> {'robot_description': xml}
    - urdf = a .xacro path (+ xacro_args)    -> {'robot_description': expanded xml}
    - urdf = a URDF path                     -> {'urdf_path': path}
    - none                                   -> {} (the node waits for the robot_description topic)

    A relative urdf path that does not exist is looked up in `search_dirs` (e.g. the package's
    urdf/ folder, so `urdf:=gantry.urdf` finds the sample)."""
    if robot_description and robot_description.strip():
        return {"robot_description": robot_description}
    mappings = parse_xacro_args(xacro_args)
    if urdf and urdf.strip():
        path = resolve_path(urdf.strip(), search_dirs)
        if is_xacro_path(path):
            return {"robot_description": expand_xacro(path, mappings)}
        if mappings:
            raise ValueError(f"xacro_args given, but urdf ({urdf}) is not a .xacro file")
        return {"urdf_path": path}
    if mappings:
        raise ValueError("xacro_args given without a xacro file in the urdf argument")
    return {}
