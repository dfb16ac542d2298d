"""bias_forces and link_pose take one-kernel paths on plain robots (robot.py, rigid_tree.py):
b(q, v) = ID(q, v, 0) minus the URDF's passive joint forces, and the link pose composed inside
a kernel. Checked against Pinocchio (which has no joint damping or friction: its nle is our b)
on the sample arm, whose URDF has both, and against the general path they replaced (a robot
with an add_force callback that applies nothing takes it)."""
import numpy as np
import pytest

from conftest import RTOL, assert_close

import mbd_ros
from mbd_ros.cli.samples import sample_urdf


@pytest.fixture(scope="module")
def arm(pin):
    path = sample_urdf("arm7.urdf")
    robot = mbd_ros.load(path)
    model = pin.buildModelFromUrdf(str(path))
    model.gravity.linear[:] = [0.0, 0.0, -9.81]
    return robot, model, model.createData()


def test_bias_forces_leave_out_damping_and_friction(arm, pin):
    robot, model, data = arm
    assert np.any(robot.damping) and np.any(robot.friction), "the sample arm must have both"
    rng = np.random.default_rng(3)
    out = np.empty(robot.nv)
    for k in range(20):
        q = robot.random_configuration(rng)
        v = rng.standard_normal(robot.nv)
        expected = pin.nonLinearEffects(model, data, q, v)
        assert_close(robot.bias_forces(q, v), expected, f"state {k}: b vs pin.nonLinearEffects")
        assert robot.bias_forces(q, v, out=out) is out
        assert_close(out, expected, f"state {k}: b with out=")
        assert_close(robot.bias_forces(list(q), list(v)), expected, f"state {k}: b from lists")
        # M qdd + b = tau + tau_passive with tau_passive = -damping_forces(v)
        tau = rng.standard_normal(robot.nv)
        qdd = robot.forward_dynamics(q, v, tau)
        residual = robot.mass_matrix(q) @ qdd + robot.bias_forces(q, v) - tau \
            + robot.damping_forces(v)
        assert np.abs(residual).max() <= RTOL * max(1.0, np.abs(tau).max(),
                                                     np.abs(robot.mass_matrix(q) @ qdd).max())


def test_fast_paths_equal_the_general_path(arm):
    robot = arm[0]
    general = mbd_ros.load(sample_urdf("arm7.urdf"))
    general.add_force(lambda t, q, v: np.zeros(general.nv))   # takes the general path
    rng = np.random.default_rng(4)
    for k in range(10):
        q = robot.random_configuration(rng)
        v = rng.standard_normal(robot.nv)
        assert_close(robot.bias_forces(q, v), general.bias_forces(q, v), f"state {k}: b")
        for link in robot.link_names:
            pose = robot.link_pose(q, link)
            assert_close(pose, general.link_pose(q, link), f"state {k}: pose of {link}")
            assert_close(pose[:3, :3] @ pose[:3, :3].T, np.eye(3), f"{link}: rotation")
            assert np.array_equal(pose[3], [0.0, 0.0, 0.0, 1.0])


def test_bad_inputs_still_name_the_argument(arm):
    robot = arm[0]
    q = np.zeros(robot.nv)
    with pytest.raises(ValueError, match="v"):
        robot.bias_forces(q, np.full(robot.nv, np.nan))
    with pytest.raises(ValueError, match="shape"):
        robot.bias_forces(q, np.zeros(robot.nv + 1))
