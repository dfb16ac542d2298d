"""The package's closed-loop samples as the rollout tests load them: the four-bar (urdf/fourbar.urdf,
config/fourbar_closures.yaml) and the double wishbone (urdf/double_wishbone.urdf with its loop and
strut from config/double_wishbone.yaml), and the four-bar driven by its rocker with its two
dead points."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.optimize
import yaml

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


def fourbar_rocker_driven():
    """The sample four-bar with its rocker as the actuated joint (the crank stays independent)."""
    closures = yaml.safe_load((CONFIG / "fourbar_closures.yaml").read_text())
    closures["actuated"] = ["rocker_joint"]
    return mbd_ros.load(str(URDF / "fourbar.urdf"), closures=closures)


def rocker_transmission(robot, q):
    """(d rocker / d crank, n): n (nv,) spanning null(G) at q (the four-bar has one dof)."""
    names = robot.joint_names
    n = scipy.linalg.null_space(robot.loop_jacobian(q))[:, 0]
    return n[names.index("rocker_joint")] / n[names.index("crank_joint")], n


def rocker_dead_points(robot):
    """The two configurations of one assembly branch where the rocker is at an extreme angle
    (d rocker / d crank = 0: the rocker cannot move the crank), by root-finding that ratio
    (brentq to 1e-15 rad of crank) between crank angles 2 degrees apart that bracket it."""
    crank = robot.joint_names.index("crank_joint")

    def assembled(c, guess):
        g = guess.copy()
        g[crank] = c
        return robot.assemble(g, independent=["crank_joint"])

    q, branch = robot.assemble(robot.neutral()), []
    for c in np.linspace(0.0, 2.0 * np.pi, 181):
        q = assembled(c, q)
        branch.append((c, q, rocker_transmission(robot, q)[0]))
    dead = []
    for (c0, qa, r0), (c1, _, r1) in zip(branch, branch[1:]):
        if r0 * r1 < 0.0:
            c = scipy.optimize.brentq(lambda c: rocker_transmission(robot, assembled(c, qa))[0],
                                      c0, c1, xtol=1e-15)
            dead.append(assembled(c, qa))
    assert len(dead) == 2, "a crank-rocker has two rocker extremes per turn"
    return dead, assembled
