"""Ground contact of floating robots (no ROS): contact points from URDF collisions, the contact
law, its generalized forces, and a quadruped standing.

References: closed-form static penetrations (a ball: m g / k; a box on its four lower
corners: m g / (4 k)); the generalized contact force J^T f and the contact point velocities
from Pinocchio's frame Jacobians and velocities; Newton's balance at rest (the normal forces
carry the robot's weight); solo12 from example-robot-data standing for 5 s under a PD
controller.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.simulation.contact import ContactPoint, GroundContact, contact_points_from_urdf
from mbd_ros.simulation.plant import Plant

SOLO = "solo_description/robots/solo12.urdf"
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
FOOT_RADIUS = 0.016
STANDING = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6, "HL_HAA": 0.1, "HL_HFE": -0.8,
            "HL_KFE": 1.6, "FR_HAA": -0.1, "FR_HFE": 0.8, "FR_KFE": -1.6, "HR_HAA": -0.1,
            "HR_HFE": -0.8, "HR_KFE": 1.6}   # example-robot-data's solo.srdf "standing"

BODY = """<robot name="{name}">
  <link name="body">
    <inertial><mass value="{mass}"/><origin xyz="0 0 0"/>
      <inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0" rpy="0 0 0"/><geometry>{geometry}</geometry></collision>
  </link>
</robot>"""


def settle(plant, seconds):
    for _ in range(int(round(seconds / plant.dt))):
        plant.step()


def test_ball_rests_at_its_static_penetration():
    """A 2 kg ball of radius 0.1 m (URDF <sphere>): at rest its centre is at r - m g / k."""
    xml = BODY.format(name="ball", mass=2.0, i=0.008, geometry='<sphere radius="0.1"/>')
    robot = mbd_ros.load(xml, floating_base=True)
    points = contact_points_from_urdf(robot, xml)
    assert points == [ContactPoint("body", (0.0, 0.0, 0.0), 0.1)]
    contact = GroundContact(robot, points, stiffness=2e4, damping=100.0)
    q = robot.neutral()
    q[2] = 0.12
    plant = Plant(robot, 1e-3, q=q, forces=[contact])
    settle(plant, 2.0)
    assert_close(plant.q[2], 0.1 - 2.0 * 9.81 / 2e4, "ball height", rtol=1e-6)
    assert_close(contact.total_normal_force(), 2.0 * 9.81, "weight carried", rtol=1e-6)


def test_box_rests_on_its_four_lower_corners():
    xml = BODY.format(name="box", mass=4.0, i=0.02,
                      geometry='<box size="0.4 0.2 0.1"/>')
    robot = mbd_ros.load(xml, floating_base=True)
    points = contact_points_from_urdf(robot, xml)
    assert len(points) == 8 and all(p.radius == 0.0 for p in points)
    k = 1e4
    contact = GroundContact(robot, points, stiffness=k, damping=50.0)
    q = robot.neutral()
    q[2] = 0.06
    plant = Plant(robot, 1e-3, q=q, forces=[contact])
    settle(plant, 2.0)
    assert_close(plant.q[2], 0.05 - 4.0 * 9.81 / (4 * k), "box height", rtol=1e-6)
    assert contact.in_contact.sum() == 4
    assert_close(contact.forces[contact.in_contact, 2], np.full(4, 9.81), "corner loads",
                 rtol=1e-6)


@pytest.fixture(scope="module")
def solo(erd_dir):
    return mbd_ros.load(str(erd_dir / SOLO), floating_base=True)


def standing_configuration(robot, sink=0.0):
    q = robot.neutral()
    for name, value in STANDING.items():
        q[robot.idx_q[robot.joint_names.index(name)]] = value
    q[2] = FOOT_RADIUS - min(robot.link_pose(q, f)[2, 3] for f in FEET) - sink
    return q


def test_contact_forces_match_pinocchio_jacobians(solo, erd_dir, pin):
    """tau_c == sum_k J_k^T f_k with J_k the Jacobian of contact point k (foot frame origin
    offset by -radius z, world-aligned) from Pinocchio; the normal force follows the law with
    the point velocity from Pinocchio's frame velocity."""
    model = pin.buildModelFromUrdf(str(erd_dir / SOLO), pin.JointModelFreeFlyer())
    data = model.createData()
    # map Pinocchio's v order to ours by joint name
    perm = np.zeros(solo.nv, dtype=int)
    for j in range(1, model.njoints):
        name = model.names[j]
        ours = solo.idx_v[solo.joint_names.index(name)]
        nv_j = model.joints[j].nv
        perm[model.joints[j].idx_v:model.joints[j].idx_v + nv_j] = np.arange(ours, ours + nv_j)
    qperm = np.zeros(solo.nq, dtype=int)
    for j in range(1, model.njoints):
        ours = solo.idx_q[solo.joint_names.index(model.names[j])]
        nq_j = model.joints[j].nq
        qperm[model.joints[j].idx_q:model.joints[j].idx_q + nq_j] = np.arange(ours, ours + nq_j)
    contact = GroundContact(solo, [ContactPoint(f, (0, 0, 0), FOOT_RADIUS) for f in FEET],
                            stiffness=5e3, damping=20.0, friction=0.7, slip_velocity=0.05)
    rng = np.random.default_rng(7)
    for trial in range(5):
        q = standing_configuration(solo, sink=0.004)
        legs = [solo.idx_q[solo.joint_names.index(n)] for n in STANDING]
        q[legs] += rng.uniform(-0.1, 0.1, len(legs))
        axis = rng.normal(size=3)
        axis *= 0.05 / np.linalg.norm(axis)
        q[3:7] = np.r_[np.sin(0.5 * np.linalg.norm(axis)) * axis / np.linalg.norm(axis),
                       np.cos(0.5 * np.linalg.norm(axis))]
        v = rng.uniform(-0.3, 0.3, solo.nv)
        tau = contact(0.0, q, v).copy()
        assert contact.in_contact.any()
        q_pin, v_pin = q[qperm], v[perm]
        pin.computeJointJacobians(model, data, q_pin)
        pin.forwardKinematics(model, data, q_pin, v_pin)
        pin.updateFramePlacements(model, data)
        expected = np.zeros(model.nv)
        for k, foot in enumerate(FEET):
            fid = model.getFrameId(foot)
            J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
            offset = np.array([0.0, 0.0, -FOOT_RADIUS])
            skew = np.array([[0, -offset[2], offset[1]], [offset[2], 0, -offset[0]],
                             [-offset[1], offset[0], 0]])
            J_point = J[:3] - skew @ J[3:]
            expected += J_point.T @ contact.forces[k]
            # the law: f_n = max(0, k d - c v_z) with v_z of the point from Pinocchio
            depth = FOOT_RADIUS - data.oMf[fid].translation[2]
            v_point = J_point @ v_pin
            if depth > 0:
                f_n = max(0.0, 5e3 * depth - 20.0 * v_point[2])
                assert_close(contact.forces[k, 2], f_n, f"normal force {foot}")
                v_t = v_point[:2]
                assert_close(contact.forces[k, :2],
                             -0.7 * f_n * v_t / np.sqrt(v_t @ v_t + 0.05 ** 2),
                             f"friction {foot}")
            else:
                assert_close(contact.forces[k], np.zeros(3), f"no force {foot}")
        assert_close(tau[perm], expected, "J^T f")


@pytest.mark.parametrize("controller", ["torque_pd", "drives"])
def test_solo12_stands_for_five_seconds_under_pd(solo, controller):
    """solo12 (floating base) on the ground, legs held in the "standing" posture by a PD
    controller for 5 s: it settles upright at a constant height, its normal forces carry its
    weight (Newton), and it does not slide away."""
    q0 = standing_configuration(solo)
    contact = GroundContact(solo, [ContactPoint(f, (0, 0, 0), FOOT_RADIUS) for f in FEET])
    joints = list(STANDING)
    plant = Plant(solo, 1e-3, q=q0, joints=joints, forces=[contact], substeps=2,
                  kp=1e4, kd=200.0)
    iq, iv = plant.drives.iq, plant.drives.iv
    q_ref = q0[iq].copy()
    if controller == "drives":
        plant.drives.command_position(q_ref)
    heights, tilts = [], []
    for k in range(5000):
        if controller == "torque_pd":   # solo's usual joint gains: 5 N m/rad, 0.1 N m s/rad
            plant.drives.command_effort(5.0 * (q_ref - plant.q[iq]) - 0.1 * plant.v[iv])
        plant.step()
        heights.append(plant.q[2])
        x, y = plant.q[3], plant.q[4]
        tilts.append(2.0 * np.arcsin(min(1.0, np.hypot(x, y))))   # roll/pitch magnitude
    heights = np.array(heights)
    assert np.isfinite(plant.q).all()
    assert 0.15 < heights.min() and heights.max() < q0[2] + 1e-3, (heights.min(), heights.max())
    assert max(tilts) < 0.02
    last = heights[-2000:]
    # settled; the soft torque PD lets the feet creep a little (regularised friction: a loaded
    # foot slides at a speed that grows with its tangential load): < 0.5 mm in the last 2 s
    assert last.max() - last.min() < 5e-4
    assert np.abs(plant.v).max() < 1e-3
    assert np.hypot(plant.q[0] - q0[0], plant.q[1] - q0[1]) < 0.01
    weight = solo.total_mass * 9.81
    assert_close(contact.total_normal_force(), weight, "normal forces carry the weight",
                 rtol=1e-3 / weight)
    assert contact.in_contact.all()


def test_bad_contact_declarations_name_the_entry(solo, erd_dir):
    from mbd_ros.simulation.contact import parse_contact_points
    with pytest.raises(ValueError, match="contact point 1.*link"):
        parse_contact_points([{"link": "FL_FOOT"}, {"position": [0, 0, 0]}])
    with pytest.raises(ValueError, match="FR_FOOT.*position"):
        parse_contact_points([{"link": "FR_FOOT", "position": [0, 0]}])
    with pytest.raises(ValueError, match="radius"):
        parse_contact_points([{"link": "FR_FOOT", "radius": -1}])
    with pytest.raises(ValueError, match="unknown links.*nope"):
        GroundContact(solo, [ContactPoint("nope")])
    with pytest.raises(ValueError, match="stiffness"):
        GroundContact(solo, [ContactPoint("FL_FOOT")], stiffness=float("nan"))
    assert contact_points_from_urdf(solo, str(erd_dir / SOLO)) == []   # meshes only
