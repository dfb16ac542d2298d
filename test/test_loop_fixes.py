"""Kinematics fixes of the closed-loop analysis: the planar Grübler-Kutzbach count uses the
joints' planar freedoms (a spherical cut of a planar four-bar keeps one), and the coordinate
partition is re-chosen before it loses accuracy (see also test_integrators.py's crank turn
through the rocker's dead point)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from mbd_ros.robot.constraints import PARTITION_CONDITION_LIMIT

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("closures, spatial", [("fourbar_closures.yaml", -2),
                                               ("fourbar_spherical_cut.yaml", 0)])
def test_planar_gruebler_kutzbach_of_the_fourbar(closures, spatial):
    """3 revolute tree joints + 1 cut, one loop: planar f = 3 + 1 - 3 = 1 whatever the cut type
    (a spherical cut in a planar mechanism only turns about the normal); the spatial count
    3 + (6 - b_s) - 6 is -2 (revolute cut) and 0 (spherical)."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"), closures=str(ROOT / "config" / closures))
    info = robot.analyze(np.zeros(3))
    assert info.gruebler_kutzbach_planar == 1 == info.dof, str(info)
    assert info.gruebler_kutzbach == spatial, str(info)


def test_partition_is_rechosen_when_its_condition_passes_the_limit():
    """Rocker preferred as independent coordinate: near the rocker's dead point cond(G_ld) grows
    without bound; partition() never returns a partition worse than the limit (the QR-pivoted
    choice replaces it)."""
    data = yaml.safe_load((ROOT / "config" / "fourbar_closures.yaml").read_text())
    data["independent"] = ["rocker_joint"]
    robot = mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"), closures=data)
    seen = set()
    worst_rocker = 0.0
    q = np.zeros(3)
    for crank in np.linspace(0.0, 2 * np.pi, 181):    # continuation around a full crank turn
        q[0] = crank
        q = robot.assemble(q, independent=["crank_joint"])
        ind, dep = robot.partition(q)
        jac = robot.loop_jacobian(q)
        sigma = np.linalg.svd(jac[:, dep], compute_uv=False)
        assert sigma[0] / sigma[-1] <= PARTITION_CONDITION_LIMIT
        seen.add(tuple(int(i) for i in ind))
        rocker_dep = [0, 1]
        s = np.linalg.svd(jac[:, rocker_dep], compute_uv=False)
        worst_rocker = max(worst_rocker, s[0] / s[-1])
    assert worst_rocker > 1e4          # the preferred partition is singular somewhere on the turn
    assert (2,) in seen and len(seen) > 1
