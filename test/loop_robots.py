"""The package's closed-loop samples as the rollout tests load them: the four-bar (urdf/fourbar.urdf,
config/fourbar_closures.yaml) and the double wishbone (urdf/double_wishbone.urdf with its loop and
strut from config/double_wishbone.yaml)."""
from __future__ import annotations

from pathlib import Path

import mbd_ros

ROOT = Path(__file__).resolve().parent.parent
URDF, CONFIG = ROOT / "urdf", ROOT / "config"


def fourbar():
    return mbd_ros.load(str(URDF / "fourbar.urdf"), closures=str(CONFIG / "fourbar_closures.yaml"))


def double_wishbone():
    return mbd_ros.load(str(URDF / "double_wishbone.urdf"),
                        closures=str(CONFIG / "double_wishbone.yaml"),
                        forces=str(CONFIG / "double_wishbone.yaml"))


ROBOTS = {"fourbar": fourbar, "double_wishbone": double_wishbone}
