"""Assembly of the sample flexible four-bar (urdf/flexible_fourbar.urdf + config/flexible_fourbar.yaml),
as the forward dynamics node does it from its initial positions: the loop is closed by the rigid
joint coordinates with the elastic coordinates held where q has them (at rest: zero), unless
assemble(q, elastic=True) is asked to move them too. Before the fix the Gauss-Newton steps bent
the beam instead (elastic energy 1.2e3-9e3 J from the guesses below: the node's plant started
pre-stressed and diverged).

References: the closure residual (ASSEMBLY_TOLERANCE), the elastic coordinates (exactly as given),
and the energy balance of an undamped simulation from the assembled state: kinetic + gravity +
elastic energy stays within the RK4 error (dt = 1e-4 s with 2 pi f_max dt < 1; the loop is
re-projected when its residual passes 1e-10: 1e-8 of m g x 1 m, as test_flexible_loops measures
4e-9 J of 15 J)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot.constraints import ASSEMBLY_TOLERANCE

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "config" / "flexible_fourbar.yaml")


@pytest.fixture(scope="module")
def fourbar():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(str(ROOT / "urdf" / "flexible_fourbar.urdf"), flexible=CONFIG,
                            closures=CONFIG)


# rough guesses of the three joint angles (crank, coupler, rocker), elastic coordinates at rest;
# the first is the fully stretched (singular) configuration robot.neutral()
GUESSES = [[0.0, 0.0, 0.0], [0.7, 0.3, -1.0], [0.7, 0.0, 0.0], [-0.4, -0.5, -1.0], [2.0, 1.0, 1.0]]


@pytest.mark.parametrize("guess", GUESSES)
def test_assembly_closes_the_loop_with_the_elastic_coordinates_at_rest(fourbar, guess):
    q0 = fourbar.neutral()
    q0[:3] = guess
    q = fourbar.assemble(q0)
    assert np.array_equal(q[fourbar.elastic_q_indices], np.zeros(len(fourbar.elastic_names)))
    assert fourbar.closure_residual(q)[0] < ASSEMBLY_TOLERANCE
    assert fourbar.elastic_energy(q) == 0.0


def test_assembly_holds_given_elastic_coordinates_or_moves_them_when_asked(fourbar):
    """A q bent in the mechanism's plane (modes 2 and 4 here) keeps its elastic coordinates (the
    joints close the loop); bent out of the plane (modes 1 and 3 move the tip along the joint
    axes, which no joint can undo) it cannot be closed with them held: ValueError naming
    elastic=True, which closes it by moving them too (minimum-norm steps: the old behaviour)."""
    q0 = fourbar.neutral()
    q0[:3] = [0.7, 0.3, -1.0]
    in_plane = np.array([0.0, 2e-3, 0.0, -1e-3])
    q0[fourbar.elastic_q_indices] = in_plane
    q = fourbar.assemble(q0)
    assert np.array_equal(q[fourbar.elastic_q_indices], in_plane)
    assert fourbar.closure_residual(q)[0] < ASSEMBLY_TOLERANCE
    q0[fourbar.elastic_q_indices] = [2e-3, 0.0, 1e-3, 0.0]
    with pytest.raises(ValueError, match="elastic=True"):
        fourbar.assemble(q0)
    moved = fourbar.assemble(q0, elastic=True)
    assert fourbar.closure_residual(moved)[0] < ASSEMBLY_TOLERANCE
    assert not np.array_equal(moved[fourbar.elastic_q_indices], q0[fourbar.elastic_q_indices])


def test_simulation_from_the_assembled_state_keeps_its_energy(fourbar):
    q0 = fourbar.neutral()
    q0[:3] = [0.7, 0.3, -1.0]
    q = fourbar.assemble(q0)
    v = np.zeros(fourbar.nv)
    tau = np.zeros(fourbar.nv)
    dt = 1e-4
    assert dt * 2 * np.pi * fourbar.highest_frequency(q) < 1.0
    e0 = fourbar.kinetic_energy(q, v) + fourbar.potential_energy(q)
    scale = fourbar.total_mass * 9.81    # m g x 1 m
    worst = 0.0
    fourbar.time = 0.0
    for k in range(2000):
        q, v = fourbar.step(q, v, tau, dt)
        if k % 100 == 99:
            worst = max(worst, abs(fourbar.kinetic_energy(q, v) + fourbar.potential_energy(q) - e0))
    assert abs(fourbar.time - 2000 * dt) < 1e-12
    assert abs(q[0] - 0.7) > 0.01                        # the mechanism moved
    assert fourbar.elastic_energy(q) > 0.0               # and the beam bends as it moves
    assert worst < 1e-8 * scale
