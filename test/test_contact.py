"""Ground contact of floating robots (no ROS): contact features from every URDF collision
primitive and mesh, the contact law, its generalized forces, its time stepping, static boxes,
legged robots collapsing and standing, the reachable speed and the impossible-state monitor.

References: closed-form static penetrations (a ball: m g / k; a box on its four lower
corners: m g / (4 k); a ball on a table); closed-form features of each primitive and trimesh's
bounds of solo12's STL meshes; the generalized contact force J^T f and the contact point
velocities from Pinocchio's frame Jacobians and velocities; Newton's balance at rest (the
normal forces carry the robot's weight); energy (kinetic + gravity + contact springs) never
rising in passive motions; Coulomb's stick / slide threshold and sliding acceleration on a
slope; the energy bound u sqrt(m / k) of an impact; solo12 and A1 of example-robot-data.
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
                            stiffness=5e3, damping=20.0, friction=0.7, slip_velocity=0.05,
                            damping_depth=0.0)   # explicit, constant damping: the plain law
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
    plant = Plant(solo, 1e-3, q=q0, joints=joints, forces=[contact],
                  substeps=contact.substeps_for(1e-3, "semi_implicit_euler", q0),
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
    with pytest.raises(ValueError, match="damping_depth"):
        GroundContact(solo, [ContactPoint("FL_FOOT")], damping_depth=-1.0)
    # (an outside audit): ContactPoints are checked as dicts are (a NaN radius reached the
    # substeps' eigenvalue solver), fields of the wrong type and a stiffness of 0 (a contact
    # that never pushes) are named, substeps_for checks its dt and integrator, and the
    # physical-state monitor its energy tolerance
    with pytest.raises(ValueError, match="FL_FOOT.*radius must be >= 0"):
        GroundContact(solo, [ContactPoint("FL_FOOT", (0.0, 0.0, 0.0), float("nan"))])
    with pytest.raises(ValueError, match="FL_FOOT.*position must be 3 finite"):
        GroundContact(solo, [ContactPoint("FL_FOOT", (0.0, float("nan"), 0.0), 0.0)])
    for field, bad in (("stiffness", "abc"), ("stiffness", 0.0), ("ground_height", "x"),
                       ("friction", None)):
        with pytest.raises(ValueError, match=f"contact {field} must be"):
            GroundContact(solo, [ContactPoint("FL_FOOT")], **{field: bad})
    contact = GroundContact(solo, [ContactPoint("FL_FOOT")])
    for dt, integrator in ((float("nan"), "rk4"), (-1e-3, "rk4"), (1e-3, "rk5")):
        with pytest.raises(ValueError, match="substeps_for: (dt|integrator) must be"):
            contact.substeps_for(dt, integrator)
    from mbd_ros.simulation.physical_state import PhysicalStateMonitor
    for tolerance in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="energy_tolerance must be a positive"):
            PhysicalStateMonitor(solo, contact, energy_tolerance=tolerance)


# ---------------------------------------------------------------------------- collision geometry
PRIMITIVES = """<robot name="shapes">
  <link name="body">
    <inertial><mass value="1.0"/><origin xyz="0 0 0"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.1 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>
    <collision><origin xyz="0 0 0" rpy="0 0 1.5707963267948966"/>
      <geometry><box size="0.2 0.1 0.04"/></geometry></collision>
    <collision><geometry><cylinder radius="0.03" length="0.4"/></geometry></collision>
    <collision><origin xyz="0 0.2 0"/><geometry><capsule radius="0.02" length="0.1"/></geometry></collision>
    <collision><geometry><mesh filename="package://shapes_pkg/meshes/part.stl" scale="2 1 1"/></geometry></collision>
    <collision><geometry><mesh filename="package://elsewhere/none.stl"/></geometry></collision>
  </link>
</robot>"""


def write_binary_stl(path, triangles):
    import struct
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(triangles)))
        for tri in triangles:
            f.write(struct.pack("<12fH", 0, 0, 0, *np.ravel(tri), 0))


def test_collision_primitives_give_their_closed_form_features(tmp_path):
    """Sphere: its centre and radius; box: its 8 corners (rotated by the origin); cylinder: 8
    points on each rim; capsule: its two end spheres; mesh: the corners of its bounding box
    (a binary STL, scaled); a mesh that cannot be found: skipped with a note naming the link."""
    from mbd_ros.simulation.collision import collision_points
    package = tmp_path / "shapes_pkg"
    (package / "meshes").mkdir(parents=True)
    (package / "urdf").mkdir()
    write_binary_stl(package / "meshes" / "part.stl",
                     [[(0, 0, 0), (0.1, 0, 0), (0, 0.2, 0.3)], [(-0.1, -0.05, 0), (0, 0, -0.1), (0, 0, 0)]])
    urdf = package / "urdf" / "shapes.urdf"
    urdf.write_text(PRIMITIVES)
    robot = mbd_ros.load(str(urdf), floating_base=True)
    points, notes = collision_points(robot, str(urdf))
    assert len(points) == 1 + 8 + 16 + 2 + 8
    assert points[0] == ContactPoint("body", (0.1, 0.0, 0.0), 0.05)
    corners = np.array([p.position for p in points[1:9]])
    # rotated a quarter turn about z: x extent 0.1, y extent 0.2
    assert_close(np.abs(corners).max(axis=0), [0.05, 0.1, 0.02], "box half extents", rtol=1e-12)
    rims = np.array([p.position for p in points[9:25]])
    assert_close(np.hypot(rims[:, 0], rims[:, 1]), np.full(16, 0.03), "rim radius", rtol=1e-12)
    assert_close(np.sort(np.unique(rims[:, 2])), [-0.2, 0.2], "rim heights", rtol=1e-12)
    assert [p.radius for p in points[25:27]] == [0.02, 0.02]
    assert_close(np.array([p.position for p in points[25:27]]), [[0, 0.2, 0.05], [0, 0.2, -0.05]],
                 "capsule caps", rtol=1e-12)
    mesh = np.array([p.position for p in points[27:]])
    assert_close(mesh.min(axis=0), [-0.2, -0.05, -0.1], "mesh box lower (x scaled by 2)", rtol=1e-7)
    assert_close(mesh.max(axis=0), [0.2, 0.2, 0.3], "mesh box upper", rtol=1e-7)
    assert len(notes) == 1 and "body" in notes[0] and "none.stl" in notes[0]
    # the same URDF as text: no file is read, the meshes are skipped with a note
    points, notes = collision_points(robot, PRIMITIVES)
    assert len(points) == 27 and len(notes) == 2 and all("not read" in n for n in notes)


def test_solo12_every_link_collides_with_its_mesh_bounding_box(solo, erd_dir):
    """solo12's URDF has only meshes: every one of its 17 links gets the 8 corners of its
    mesh's bounding box, which equals trimesh's bounds of the same STL."""
    import trimesh   # an independent STL reader (a dependency of the test extra)
    from lxml import etree
    from mbd_ros.simulation.collision import collision_points, resolve_mesh
    urdf = str(erd_dir / SOLO)
    points, notes = collision_points(solo, urdf)
    assert notes == []
    links = sorted({p.link for p in points})
    assert len(points) == 8 * len(links) and len(links) == 17
    for link in etree.parse(urdf).getroot().findall("link"):
        mesh = link.find("collision/geometry/mesh")
        if mesh is None:
            continue
        origin = np.array([float(x) for x in link.find("collision/origin").get("xyz").split()])
        lower, upper = trimesh.load(resolve_mesh(mesh.get("filename"), str(erd_dir / SOLO.rsplit("/", 1)[0])), force="mesh").bounds
        ours = np.array([p.position for p in points if p.link == link.get("name")])
        assert_close(ours.min(axis=0), lower + origin, f"{link.get('name')} lower", rtol=1e-6)
        assert_close(ours.max(axis=0), upper + origin, f"{link.get('name')} upper", rtol=1e-6)


# ---------------------------------------------------------------------------- the contact law
def total_energy(robot, contact, q, v):
    """Kinetic + gravity + contact spring energy (J): what a passive robot never gains."""
    contact(0.0, q, v)
    return robot.kinetic_energy(q, v) + robot.potential_energy(q) + contact.spring_energy()


def passive_drop(robot, contact, q, v, seconds, dt=1e-3):
    """Energy after every plant step of a passive robot (drives off, no limits) with the
    contact's automatic substeps; also the deepest penetration and the lowest base height."""
    substeps = contact.substeps_for(dt, "rk4", q)
    plant = Plant(robot, dt, "rk4", q=q, v=v, forces=[contact], substeps=substeps,
                  limits=False)
    energies, depth, base = [total_energy(robot, contact, plant.q, plant.v)], 0.0, np.inf
    for _ in range(int(round(seconds / dt))):
        plant.step()
        energies.append(total_energy(robot, contact, plant.q, plant.v))
        depth, base = max(depth, contact.max_penetration()), min(base, plant.q[2])
    return np.array(energies), depth, base, plant


def test_energy_never_rises_in_a_passive_drop_of_a_spinning_box():
    """A 4 kg box dropped tilted and spinning from 0.3 m bounces and settles on its corners:
    kinetic + gravity + spring energy never rises between steps beyond RK4's truncation (a
    dissipative law: the damping ramps in with the penetration and never pulls)."""
    xml = BODY.format(name="box", mass=4.0, i=0.02, geometry='<box size="0.4 0.2 0.1"/>')
    robot = mbd_ros.load(xml, floating_base=True)
    contact = GroundContact(robot, contact_points_from_urdf(robot, xml))
    q = robot.neutral()
    q[2] = 0.3
    q[3:7] = [np.sin(0.2), 0.0, 0.0, np.cos(0.2)]
    v = np.zeros(robot.nv)
    v[3:6] = [1.0, 2.0, 3.0]
    energies, depth, base, plant = passive_drop(robot, contact, q, v, 1.5)
    scale = energies[0] - energies[-1]          # what the contact dissipated
    assert scale > 0.5 * 4.0 * 9.81 * 0.2       # it did dissipate: the fall's energy is gone
    assert np.diff(energies).max() < 1e-6 * scale, np.diff(energies).max()
    # at rest on 4 corners at the static penetration m g / (4 k)
    assert_close(contact.max_penetration(), 4.0 * 9.81 / (4 * contact.stiffness),
                 "static penetration", rtol=1e-3)


def test_solo12_collapses_onto_the_ground_without_passing_through_it(solo, erd_dir):
    """solo12 with its drives off (the node's default before a command), every link's mesh
    bounding box colliding: it folds onto the ground, its energy never rises, no point sinks
    more than a few mm and its base stays above the ground (the issue: 0.31 m below)."""
    contact = GroundContact(solo, contact_points_from_urdf(solo, str(erd_dir / SOLO)))
    q = standing_configuration(solo)
    contact(0.0, q, np.zeros(solo.nv))
    q[2] += contact.max_penetration() + 0.02
    energies, depth, base, plant = passive_drop(solo, contact, q, np.zeros(solo.nv), 1.5)
    scale = energies[0] - energies[-1]
    assert scale > 0.0
    assert np.diff(energies).max() < 1e-6 * scale, np.diff(energies).max()
    assert base > 0.0 and depth < 0.005, (base, depth)
    assert np.abs(plant.v).max() < 0.05   # at rest on the ground


def test_a_standing_robot_sinks_less_than_two_millimetres(solo, erd_dir):
    """solo12 standing on its drives (position mode, the posture of example-robot-data's
    SRDF) with every link colliding and the default contact parameters: its deepest contact
    point sinks < 2 mm (the issue's bound; 1 mm is the design value on 3 support points) and
    the normal forces carry its weight."""
    contact = GroundContact(solo, contact_points_from_urdf(solo, str(erd_dir / SOLO)))
    q = standing_configuration(solo)
    contact(0.0, q, np.zeros(solo.nv))
    q[2] += contact.max_penetration()
    substeps = contact.substeps_for(1e-3, "rk4", q)
    plant = Plant(solo, 1e-3, "rk4", q=q, joints=list(STANDING), forces=[contact],
                  substeps=substeps, kp=1e4, kd=200.0)
    plant.drives.command_position(q[plant.drives.iq])
    depths = []
    for _ in range(1500):
        plant.step()
        depths.append(contact.max_penetration())
    assert max(depths[-500:]) < 2e-3, max(depths[-500:])
    assert_close(contact.total_normal_force(), solo.total_mass * 9.81, "weight", rtol=1e-3)


@pytest.mark.parametrize("ratio", [0.98, 1.02])
def test_block_on_a_slope_sticks_or_slides_as_coulomb_says(ratio):
    """A block on a slope of tan(theta) = ratio mu (gravity tilted by theta): at 0.98 mu it
    sticks (regularised: it creeps at a constant speed, no acceleration), at 1.02 mu it slides
    with Coulomb's acceleration g (sin theta - mu cos theta) (within 5 % of that small
    difference, the regularisation's share at the speeds reached)."""
    mu = 0.5
    theta = np.arctan(ratio * mu)
    g = 9.81
    xml = BODY.format(name="block", mass=1.0, i=0.004, geometry='<box size="0.2 0.2 0.1"/>')
    robot = mbd_ros.load(xml, floating_base=True,
                         gravity=(g * np.sin(theta), 0.0, -g * np.cos(theta)))
    contact = GroundContact(robot, contact_points_from_urdf(robot, xml), friction=mu,
                            slip_velocity=1e-4)
    q = robot.neutral()
    q[2] = 0.05 - g * np.cos(theta) / (4 * contact.stiffness)   # at its static penetration
    substeps = contact.substeps_for(1e-3, "rk4", q)
    plant = Plant(robot, 1e-3, "rk4", q=q, forces=[contact], substeps=substeps, limits=False)
    speeds = []
    for _ in range(3000):
        plant.step()
        speeds.append(plant.v[0])
    speeds = np.array(speeds)
    late = np.polyfit(np.arange(1000) * 1e-3, speeds[-1000:], 1)[0]   # acceleration, m/s^2
    coulomb = g * (np.sin(theta) - mu * np.cos(theta))
    if ratio < 1.0:
        assert abs(late) < 0.05 * abs(coulomb), (late, coulomb)   # no acceleration: stuck
        assert abs(speeds[-1]) < 0.01
    else:
        assert abs(late - coulomb) < 0.05 * coulomb, (late, coulomb)


# ---------------------------------------------------------------------------- reachable speed
A1 = "a1_description/urdf/a1.urdf"
A1_STANDING = {"hip": 0.0, "thigh": 0.8, "calf": -1.81}   # example-robot-data's a1.srdf


@pytest.fixture(scope="module")
def a1(erd_dir):
    return mbd_ros.load(str(erd_dir / A1), floating_base=True)


def a1_standing(robot, contact):
    q = robot.neutral()
    for leg in ("FL", "FR", "RL", "RR"):
        for joint, value in A1_STANDING.items():
            q[robot.idx_q[robot.joint_names.index(f"{leg}_{joint}_joint")]] = value
    contact(0.0, q, np.zeros(robot.nv))
    q[2] += contact.max_penetration()
    return q


def test_reachable_speed_is_the_fall_plus_the_drives_limits(a1, erd_dir):
    """reachable_speed of a foot: sqrt(2 g h) of its height plus sum over its leg's joints of
    the URDF velocity limit (21 rad/s; the effort bound sqrt(2 tau range / M_jj) is larger on
    a1) times the lever arm from Pinocchio's point Jacobian."""
    from mbd_ros.simulation.contact import reachable_speed
    contact = GroundContact(a1, [ContactPoint("FL_foot", (0, 0, 0), 0.02)])
    q = a1_standing(a1, contact)
    q[2] += 0.3
    (speed,) = reachable_speed(a1, contact, q)
    jac = a1.link_jacobian(q, "FL_foot")
    legs = [a1.idx_v[a1.joint_names.index(f"FL_{j}_joint")] for j in A1_STANDING]
    lever = np.linalg.norm(jac[:3, legs], axis=0)   # the point is the link origin
    expected = np.sqrt(2 * 9.81 * 0.3) + 21.0 * lever.sum()   # the sphere's bottom 0.3 m up
    assert_close(speed, expected, "reachable speed", rtol=1e-9)


def test_a1_dropped_at_its_reachable_speed_does_not_pass_the_ground(a1, erd_dir):
    """a1 (boxes, cylinders, spheres of its URDF) thrown at the ground at the highest speed a
    point of it can reach under the effort limits (reachable_speed, 17.7 m/s), belly first
    with its drives off: no point goes deeper than the monitor's MAX_DEPTH, the base stays
    above the ground, the energy never rises (the monitor sees nothing impossible), and it
    comes to rest above the ground."""
    from mbd_ros.simulation.contact import reachable_speed
    from mbd_ros.simulation.physical_state import MAX_DEPTH, PhysicalStateMonitor
    contact = GroundContact(a1, contact_points_from_urdf(a1, str(erd_dir / A1)))
    q = a1_standing(a1, contact)
    u = float(reachable_speed(a1, contact, q).max())
    assert u > 15.0
    v = np.zeros(a1.nv)
    v[2] = -u                                   # identity orientation: body frame = world
    plant = Plant(a1, 1e-3, "rk4", q=q, v=v, forces=[contact],
                  substeps=contact.substeps_for(1e-3, "rk4", q))
    monitor = PhysicalStateMonitor(a1, contact)
    depth, base = 0.0, np.inf
    for _ in range(1500):
        plant.step()
        problem = monitor.check(plant.q, plant.v, plant.q_before_step, plant.v_before_step,
                                plant.tau, plant.dt)
        assert problem is None, problem
        depth, base = max(depth, contact.max_penetration()), min(base, plant.q[2])
    assert depth < MAX_DEPTH and base > 0.0, (depth, base)
    assert np.abs(plant.v[:3]).max() < 0.05 and contact.max_penetration() < 2e-3   # landed
    # (its undamped, undriven legs still swing)


def test_a_ball_at_that_speed_stops_within_its_energy_bound():
    """A 2 kg point-like ball hitting the ground at 17.7 m/s: its deepest penetration is below
    the undamped energy bound u sqrt(m / k) (the damping only shortens it) and it comes back
    above the ground, at rest on its static penetration m g / k."""
    xml = BODY.format(name="ball", mass=2.0, i=0.008, geometry='<sphere radius="0.01"/>')
    robot = mbd_ros.load(xml, floating_base=True)
    contact = GroundContact(robot, contact_points_from_urdf(robot, xml))
    q = robot.neutral()
    q[2] = 0.01
    v = np.zeros(robot.nv)
    v[2] = -17.7
    energies, depth, base, plant = passive_drop(robot, contact, q, v, 2.0)
    assert depth < 17.7 * np.sqrt(2.0 / contact.stiffness), depth
    assert np.diff(energies).max() < 1e-6 * energies[0]
    assert_close(plant.q[2], 0.01 - 2.0 * 9.81 / contact.stiffness, "resting height", rtol=1e-6)


# ---------------------------------------------------------------------------- impossible states
def test_the_monitor_names_what_is_impossible(solo, erd_dir):
    """Below the ground, a quaternion flip or jump, energy from nowhere: each is reported with
    the link / joint and the numbers; the collapse of a passive solo12 (a real, dissipative
    motion) is reported as nothing."""
    from mbd_ros.simulation.physical_state import PhysicalStateMonitor
    contact = GroundContact(solo, contact_points_from_urdf(solo, str(erd_dir / SOLO)))
    monitor = PhysicalStateMonitor(solo, contact)
    q = standing_configuration(solo)
    contact(0.0, q, np.zeros(solo.nv))
    q[2] += contact.max_penetration() + 0.02
    plant = Plant(solo, 1e-3, "rk4", q=q, forces=[contact],
                  substeps=contact.substeps_for(1e-3, "rk4", q))
    zero = np.zeros(solo.nv)
    for _ in range(1000):
        plant.step()
        assert monitor.check(plant.q, plant.v, plant.q_before_step, plant.v_before_step,
                             plant.tau, plant.dt) is None
    rest, v = plant.q.copy(), plant.v.copy()
    sunk = rest.copy()
    sunk[2] = -0.31                                  # the solo12
    assert "below the ground" in monitor.check(sunk, v, rest, v, zero, 1e-3)
    flipped = rest.copy()
    flipped[3:7] *= -1.0
    assert "flipped sign" in monitor.check(flipped, v, rest, v, zero, 1e-3)
    turned = rest.copy()
    turned[3:7] = [0.0, 0.0, np.sin(0.25), np.cos(0.25)]   # 0.5 rad of yaw in a step, at rest
    assert "turned" in monitor.check(turned, zero, rest, zero, zero, 1e-3)
    fast = v.copy()
    fast[0] = 1.0                                    # 1 m/s from nowhere: 1.25 J
    message = monitor.check(rest, fast, rest, v, zero, 1e-3)
    assert message and "energy rose" in message
    fast_driven = monitor.check(rest, fast, rest, v, np.r_[2.5e3, np.zeros(solo.nv - 1)], 1e-3)
    assert fast_driven is None                       # the same gain with the work of a force


def test_a_monitored_plant_halts_on_an_impossible_state_at_the_state_before(solo, erd_dir):
    """MonitoredPlant: a step that leaves the base 0.31 m under the floor (the state is
    overwritten between steps, as a bad ~/set_state or a bug would) raises ImpossibleStateError
    (a DivergenceError, so the node halts as on a divergence) saying what is below the ground,
    puts the plant back at the state before the step and counts one divergence."""
    from mbd_ros.simulation.physical_state import (ImpossibleStateError, MonitoredPlant,
                                                   PhysicalStateMonitor)
    from mbd_ros.simulation.plant import DivergenceError
    contact = GroundContact(solo, contact_points_from_urdf(solo, str(erd_dir / SOLO)))
    q = standing_configuration(solo)
    contact(0.0, q, np.zeros(solo.nv))
    q[2] += contact.max_penetration()
    plant = MonitoredPlant(solo, 1e-3, "rk4", q=q, forces=[contact],
                           substeps=contact.substeps_for(1e-3, "rk4", q),
                           monitor=PhysicalStateMonitor(solo, contact))
    for _ in range(10):
        plant.step()
    plant.sim.q[2] = -0.31
    before = plant.q.copy()
    with pytest.raises(ImpossibleStateError, match="below the ground") as err:
        plant.step()
    assert isinstance(err.value, DivergenceError)
    assert_close(plant.q, before, "state restored", rtol=0.0)
    assert plant.divergences == 1
    plant.sim.q[:] = q
    plant.sim.v[:] = 0.0
    plant.step()                              # back on the ground: steps on


# ---------------------------------------------------------------------------- static boxes
def test_a_ball_rests_on_a_table_and_is_pushed_out_of_a_yawed_wall():
    """A static box as a table: a 2 kg ball of radius 0.1 m dropped onto its top rests at
    top + r - m g / k (closed form), its energy never rising on the way; against the side of a
    box yawed by 0.3 rad the force of a penetration d at rest is k d along that face's normal
    (cos 0.3, sin 0.3, 0); malformed boxes are refused naming the box."""
    from mbd_ros.simulation.contact import parse_static_boxes
    xml = BODY.format(name="ball", mass=2.0, i=0.008, geometry='<sphere radius="0.1"/>')
    robot = mbd_ros.load(xml, floating_base=True)
    points = contact_points_from_urdf(robot, xml)
    table = {"center": [0.0, 0.0, 0.35], "size": [1.0, 1.0, 0.1]}     # top at 0.4 m
    contact = GroundContact(robot, points, boxes=[table])
    q = robot.neutral()
    q[2] = 0.7
    energies, depth, base, plant = passive_drop(robot, contact, q, np.zeros(robot.nv), 2.0)
    assert np.diff(energies).max() < 1e-6 * energies[0], np.diff(energies).max()
    assert_close(plant.q[2], 0.4 + 0.1 - 2.0 * 9.81 / contact.stiffness, "on the table",
                 rtol=1e-6)
    assert contact.obstacle_name(0) == "static box 0"

    wall = [0.0, 0.0, 0.5, 0.2, 2.0, 1.0, 0.3]      # flat form: x y z sx sy sz yaw
    contact = GroundContact(robot, points, stiffness=1e4, boxes=wall)
    n = np.array([np.cos(0.3), np.sin(0.3), 0.0])
    q = robot.neutral()
    q[:3] = [0.0, 0.0, 0.5] + (0.1 + 0.1 - 0.004) * n   # 4 mm into the face at x' = 0.1
    tau = contact(0.0, q, np.zeros(robot.nv))
    assert_close(contact.forces[0], 1e4 * 0.004 * n, "wall force", rtol=1e-9)
    assert_close(contact.max_penetration(), 0.004, "depth", rtol=1e-12)
    # the free joint's linear force is in the body frame (identity orientation: the world)
    assert_close(tau[:3], 1e4 * 0.004 * n, "J^T f", rtol=1e-9)
    with pytest.raises(ValueError, match="static box 1.*size"):
        parse_static_boxes([table, {"center": [0, 0, 0], "size": [1, 0, 1]}])
    with pytest.raises(ValueError, match="7 per box"):
        parse_static_boxes([0.0] * 8)


def test_bad_collision_geometry_names_the_link_and_bad_meshes_are_skipped(tmp_path):
    """A malformed primitive is refused naming the link and the attribute; an ASCII STL is
    read (its bounding box); a mesh that is not a mesh (garbage bytes, another format) is
    skipped with a note naming the link and why."""
    from mbd_ros.simulation.collision import collision_points

    def robot_with(geometry, name="r"):
        xml = BODY.format(name=name, mass=1.0, i=0.01, geometry=geometry)
        path = tmp_path / f"{name}.urdf"
        path.write_text(xml)
        return mbd_ros.load(str(path), floating_base=True), str(path)
    robot, path = robot_with('<sphere radius="-1"/>', "negative")
    with pytest.raises(ValueError, match="link 'body'.*sphere.*radius"):
        collision_points(robot, path)
    robot, path = robot_with('<box size="1 2"/>', "short")
    with pytest.raises(ValueError, match="link 'body'.*box.*size"):
        collision_points(robot, path)
    (tmp_path / "ascii.stl").write_text(
        "solid x\nfacet normal 0 0 1\nouter loop\nvertex -1 0 0\nvertex 2 1 0\nvertex 0 0 3\n"
        "endloop\nendfacet\nendsolid x\n")
    robot, path = robot_with('<mesh filename="ascii.stl"/>', "ascii")
    points, notes = collision_points(robot, path)
    corners = np.array([p.position for p in points])
    assert notes == [] and len(points) == 8
    assert_close(corners.min(axis=0), [-1, 0, 0], "ascii lower", rtol=1e-12)
    assert_close(corners.max(axis=0), [2, 1, 3], "ascii upper", rtol=1e-12)
    (tmp_path / "garbage.stl").write_bytes(b"\x01\x02" * 100)
    (tmp_path / "model.dae").write_text("<COLLADA/>")
    for mesh, why in (("garbage.stl", "neither a binary STL"), ("model.dae", "not found")):
        robot, path = robot_with(f'<mesh filename="{mesh}"/>', mesh.replace(".", "_"))
        points, notes = collision_points(robot, path)
        assert points == [] and len(notes) == 1 and "'body'" in notes[0] and why in notes[0], \
            notes
