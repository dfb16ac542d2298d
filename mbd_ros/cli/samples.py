"""The sample robots shipped with the package (urdf/), found wherever it is installed."""
from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = "mbd_ros"
DEFAULT_ROBOT = "arm7.urdf"


def sample_urdf(name=DEFAULT_ROBOT):
    """Path of a sample robot shipped with the package: ament index, source tree, sys.prefix."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory(PACKAGE)) / "urdf" / name)
    except Exception:  # not importable, or the package is not in AMENT_PREFIX_PATH
        pass
    candidates.append(Path(__file__).resolve().parents[2] / "urdf" / name)   # the source tree
    candidates.append(Path(sys.prefix) / "share" / PACKAGE / "urdf" / name)
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"sample robot {name} not found; looked in: " + ", ".join(str(p) for p in candidates))
