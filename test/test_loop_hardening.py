"""Closed-loop hardening (issue 10): assembly from a poor guess over the whole crank circle,
configurations out of reach, a URDF floating root joint in closed-loop inverse dynamics, and
warnings for dynamics off the loop.

References: the four-bar's closed-form position relation (Freudenstein, urdf/fourbar.urdf), the
same mechanism loaded with floating_base=True (the URDF floating root must give the same
inverse dynamics), and forward dynamics (inverse dynamics must return its drive torques)."""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.robot.constraints import LoopResidualWarning

ROOT = Path(__file__).resolve().parents[1]
FOURBAR = str(ROOT / "urdf" / "fourbar.urdf")
FOURBAR_CLOSURES = str(ROOT / "config" / "fourbar_closures.yaml")
LEG = ROOT / "urdf" / "leg_fourbar_floating.urdf"
LEG_CLOSURES = str(ROOT / "config" / "leg_fourbar_closures.yaml")

# urdf/fourbar.urdf: theta2 = C2 - q_crank, theta4 = C4 - q_rocker, and
# K1 cos(theta4) - K2 cos(theta2) + K3 = cos(theta2 - theta4)
C2, C4 = math.atan2(0.06, -0.08), math.atan2(0.24, 0.16 - 0.34)   # crank A, rocker B - O4
K1, K2, K3 = 3.4, 17.0 / 15.0, 157.0 / 75.0


def freudenstein(q):
    theta2, theta4 = C2 - q[0], C4 - q[2]
    return K1 * math.cos(theta4) - K2 * math.cos(theta2) + K3 - math.cos(theta2 - theta4)


@pytest.fixture(scope="module")
def fourbar():
    return mbd_ros.load(FOURBAR, closures=FOURBAR_CLOSURES)


def test_every_crank_angle_assembles_from_the_neutral_guess(fourbar):
    """3601 crank angles over the full circle (a Grashof crank turns fully), each from the
    neutral guess (the previous solution is not passed): the crank is held, the loop closes, and
    the position relation holds in closed form."""
    worst = 0.0
    for angle in np.linspace(-math.pi, math.pi, 3601):
        guess = fourbar.neutral()
        guess[0] = angle
        q = fourbar.assemble(guess)
        assert q[0] == angle
        assert fourbar.closure_residual(q)[0] < 1e-10, angle
        worst = max(worst, abs(freudenstein(q)))
    assert worst < 1e-9, worst


def rocker_reachable(q_rocker):
    """The rocker tip B = O4 + l4 e(theta4) is reachable iff l3 - l2 <= |B - O2| <= l3 + l2."""
    theta4 = C4 - q_rocker
    distance_sq = 0.34 ** 2 + 0.30 ** 2 + 2 * 0.34 * 0.30 * math.cos(theta4)
    return 0.20 ** 2 <= distance_sq <= 0.40 ** 2


@pytest.mark.parametrize("q_rocker", [0.0, 0.3, -0.25, -2.0, 1.5, -1.0, 3.0, 0.6])
def test_held_rocker_assembles_or_is_out_of_reach(fourbar, q_rocker):
    """Holding the rocker (which swings over two arcs of the circle, one per assembly mode):
    inside its reach the loop closes with the rocker held; outside, the error says the
    configuration is out of reach and names the held coordinate and the closure."""
    guess = np.array([0.0, 0.0, q_rocker])
    if rocker_reachable(q_rocker):
        q = fourbar.assemble(guess, independent=["rocker_joint"])
        assert q[2] == q_rocker
        assert fourbar.closure_residual(q)[0] < 1e-10 and abs(freudenstein(q)) < 1e-9
    else:
        with pytest.raises(ValueError, match="out of the mechanism's reach") as exc:
            fourbar.assemble(guess, independent=["rocker_joint"])
        assert "rocker_joint" in str(exc.value) and "coupler_rocker" in str(exc.value)


def test_the_reach_cases_cover_both_outcomes():
    cases = [0.0, 0.3, -0.25, -2.0, 1.5, -1.0, 3.0, 0.6]
    assert sum(map(rocker_reachable, cases)) == 4


def _leg_with_urdf_floating_root():
    """urdf/leg_fourbar_floating.urdf with a world link and a type="floating" joint above the
    torso (instead of load(floating_base=True))."""
    xml = LEG.read_text()
    xml = re.sub(r"(<robot name=\"[^\"]*\">)", r'\1<link name="world"/>'
                 r'<joint name="torso_free" type="floating"><parent link="world"/>'
                 r'<child link="torso"/></joint>', xml, count=1)
    return mbd_ros.load(xml, closures=LEG_CLOSURES)


def test_urdf_floating_root_joint_is_a_floating_base_in_inverse_dynamics():
    urdf_root = _leg_with_urdf_floating_root()
    added_root = mbd_ros.load(str(LEG), closures=LEG_CLOSURES, floating_base=True)
    assert urdf_root.joint_names[0] == "torso_free" and urdf_root.joint_types[0] == "floating"
    assert (urdf_root.nq, urdf_root.nv) == (added_root.nq, added_root.nv)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = added_root.assemble(added_root.integrate(added_root.neutral(),
                                                     0.1 * rng.standard_normal(added_root.nv), 1.0))
        v = added_root.project_velocity(q, rng.standard_normal(added_root.nv))
        tau = np.zeros(added_root.nv)
        tau[:6] = rng.standard_normal(6)                  # a wrench on the torso (body frame)
        for name in ("hip", "knee_motor"):
            tau[added_root.idx_v[added_root.joint_names.index(name)]] = rng.standard_normal()
        qdd = added_root.forward_dynamics(q, v, tau)
        assert_close(urdf_root.forward_dynamics(q, v, tau), qdd, "FD, URDF floating root")
        expected = added_root.inverse_dynamics(q, v, qdd)
        assert_close(expected, tau, "ID (floating_base=True) returns the drives of FD", rtol=1e-7)
        assert_close(urdf_root.inverse_dynamics(q, v, qdd), expected,
                     "ID, URDF floating root vs floating_base=True", rtol=1e-7)


def test_dynamics_off_the_loop_warn(fourbar):
    q = fourbar.assemble(np.array([0.4, 0.0, 0.0]))
    v = fourbar.project_velocity(q, np.array([1.0, 0.0, 0.0]))
    tau = np.array([0.3, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # on the loop: silent
        qdd = fourbar.forward_dynamics(q, v, tau)
        fourbar.inverse_dynamics(q, v, qdd)
    off = q.copy()
    off[2] += 0.5                             # the rocker tip moves 0.135 m off the coupler
    assert fourbar.closure_residual(off)[0] > 0.1
    for method in ("recursive", "minimal", "descriptor"):
        with pytest.warns(LoopResidualWarning, match="open by"):
            fourbar.forward_dynamics(off, v, tau, method=method)
    with pytest.warns(LoopResidualWarning, match="open by"):
        try:
            fourbar.inverse_dynamics(off, v, qdd)
        except ValueError:
            pass   # qdd is not consistent there either; the warning came first
