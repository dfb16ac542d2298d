"""Position stops of the plant (JointLimits.enforce, kernels/stops.py) with several joints beyond
their limits at once, checked against the conditions that define the result, with the mass
matrix from Pinocchio (an independent CRBA):

- positions: every limited joint within its limits; the joints of the active set A exactly on
  theirs; the correction is M^-1 S_A^T mu (M dq vanishes off A): the smallest in the kinetic
  metric;
- velocities (the impulse, a small complementarity problem): M dv = S_A^T lambda (momentum
  changes only on stopped joints); no joint of A moves outward afterwards; every impulse pushes
  inward; a joint that received an impulse is at rest (complementarity).
"""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.simulation.limits import JointLimits

UR5 = "ur_description/urdf/ur5_robot.urdf"
ROUND_OFF = 1e-12   # rad, rad/s: on the limit / at rest up to round-off
SLACK = 1e-9        # complementarity sign conditions, relative to the velocities (~1)


@pytest.fixture(scope="module")
def setup(erd_dir, pin):
    path = str(erd_dir / UR5)
    robot = mbd_ros.load(path)
    model = pin.buildModelFromUrdf(path)
    assert [model.names[i] for i in range(1, model.njoints)] == robot.joint_names
    return robot, model, model.createData()


def mass_matrix(pin, model, data, q):
    m = pin.crba(model, data, q)
    return np.triu(m) + np.triu(m, 1).T


@pytest.mark.parametrize("n_beyond", [2, 3, 4])
def test_several_joints_beyond_their_limits(setup, pin, n_beyond):
    robot, model, data = setup
    # narrow limits (+-0.3 rad) so that corrections push other joints onto their stops too
    # (the active set grows)
    limits = JointLimits(robot)
    limits.lower[:] = -0.3
    limits.upper[:] = 0.3
    limits._lower_l[:] = -0.3
    limits._upper_l[:] = 0.3
    rng = np.random.default_rng(n_beyond)
    checked = 0
    for trial in range(40):
        # the other joints close to a limit, so that a correction can push them onto it
        q = rng.choice([-1.0, 1.0], size=robot.nq) * rng.uniform(0.29, 0.2999, robot.nq)
        v = rng.uniform(-1.0, 1.0, robot.nv)
        beyond = rng.choice(robot.nv, size=n_beyond, replace=False)
        side = rng.choice([-1.0, 1.0], size=n_beyond)
        q[beyond] = 0.3 * side + side * rng.uniform(1e-3, 1e-1, n_beyond)
        q0, v0 = q.copy(), v.copy()
        limits.enforce(q, v)
        on_stop = np.isclose(np.abs(q), 0.3, rtol=0.0, atol=ROUND_OFF)
        assert np.all(np.abs(q) <= 0.3 + ROUND_OFF), q
        assert on_stop[beyond].all(), (q, beyond)
        free = ~on_stop
        # positions: M(q0) dq = S_A^T mu (the projection is computed at the original q)
        m0 = mass_matrix(pin, model, data, q0)
        assert_close((m0 @ (q - q0))[free], np.zeros(free.sum()), "M dq off the stops",
                     rtol=1e-7)
        # velocities at the corrected q: M dv = S_A^T lambda
        m = mass_matrix(pin, model, data, q)
        impulse = m @ (v - v0)
        assert_close(impulse[free], np.zeros(free.sum()), "momentum of the free joints",
                     rtol=1e-7)
        outward = np.sign(q) * on_stop           # +1 upper stop, -1 lower stop, 0 free
        assert np.all(outward * v <= SLACK), "a stopped joint still moves outward"
        assert np.all(outward * impulse <= SLACK), "an impulse pulls its joint outward"
        pushed = np.abs(impulse) > SLACK
        assert_close(v[pushed], np.zeros(pushed.sum()), "joints that took an impulse at rest",
                     rtol=ROUND_OFF)
        checked += int(on_stop.sum() > n_beyond)
    assert checked > 0, "no trial grew the active set beyond the joints placed past a limit"
