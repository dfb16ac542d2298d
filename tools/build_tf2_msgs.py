"""Build tf2_msgs/msg/TFMessage into this Python environment (PyPI ROS 2 wheels), for the
floating-base plant's /tf: the tf2_msgs-only form of ``mbd-ros build-interfaces`` (the builder
is mbd_ros/interfaces/build.py, shipped in the package; docs there).

Usage::

    .venv/bin/python tools/build_tf2_msgs.py [--force]

Does nothing when tf2_msgs already imports, unless --force; on failure exits 1 with the reason.
"""
from __future__ import annotations

from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # a source tree, not installed

from mbd_ros.interfaces.build import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--only", "tf2_msgs", *sys.argv[1:]]))
