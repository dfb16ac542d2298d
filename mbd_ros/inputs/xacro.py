"""xacro robot descriptions for `mbd_ros.load` (no ROS imports).

A xacro file is code: its ``${...}`` expressions are Python that can reach ``os.system``, so
expanding one runs the file's code with the user's rights. It is done only for a path ending in
``.xacro`` (an explicit choice: XML text is never expanded), and always in a child process bounded
in time and memory (inputs/xacro_process.py: TIMEOUT_S, MAX_MEMORY_BYTES), killed if the caller
is interrupted or dies. That bounds an accident (a runaway expression, an include loop); it is no
sandbox for a file one does not trust.

`expand_xacro(path, mappings)`: the URDF XML text of a ``.xacro`` file, exactly what
``xacro.process_file(path, mappings).toprettyxml(indent="  ")`` gives; a ModelError naming the
file when xacro is not installed, the file does not expand or a limit is exceeded. Used by
`mbd_ros.load` (so the nodes' ``urdf_path`` too) and, through xacro_process loaded by its path, by
launch/robot_args.py.
"""
from __future__ import annotations

import os

from . import xacro_process
from ..errors import ModelError

XACRO_SUFFIX = ".xacro"


def is_xacro_path(value):
    """True for a str/Path naming a .xacro file (not XML text)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    # exactly the suffix ".xacro" (case and all), as docs/formats.md and the sweep's check say:
    # expanding runs the file's code, so "evil.XACRO" or "robot.xacro " is not taken for one
    return isinstance(text, str) and not text.lstrip().lstrip("\ufeff").startswith("<") and \
        "\n" not in text and text.endswith(XACRO_SUFFIX)


def expand_xacro(path, mappings=None, timeout=None, max_memory=None):
    """URDF XML text of the xacro file `path`, its <xacro:arg>s set from `mappings` (dict), in a
    bounded child process (timeout in s, max_memory in bytes; defaults
    xacro_process.TIMEOUT_S and MAX_MEMORY_BYTES). Runs the file's code (module docstring).
    Raises ModelError naming the file if xacro is missing, fails or exceeds a limit."""
    try:
        return xacro_process.expand(path, mappings, timeout=timeout, max_memory=max_memory)
    except xacro_process.XacroError as exc:
        raise ModelError(str(exc)) from None
