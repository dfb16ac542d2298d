"""xacro robot descriptions for `mbd_ros.load` (no ROS imports).

`expand_xacro(path, mappings)`: a ``.xacro`` file expanded to URDF XML with the ``xacro``
package (PyPI ``xacro``, a declared dependency of mbd_ros); a clear ModelError naming xacro when
it is not installed or the file does not expand. `mbd_ros.load` calls it for ``.xacro`` paths,
so such a path is never read as an (empty) URDF. (The launch files' own argument handling,
with ``xacro_args``, is launch/robot_args.py.)
"""
from __future__ import annotations

import os

from .errors import ModelError

XACRO_SUFFIX = ".xacro"


def is_xacro_path(value):
    """True for a str/Path naming a .xacro file (not XML text)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    return isinstance(text, str) and not text.lstrip().startswith("<") and \
        text.strip().lower().endswith(XACRO_SUFFIX)


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
