"""Helical and cylindrical tree joints (URDF extensions, docs/formats.md) against independent
references: Pinocchio models built by hand (JointModelHelicalUnaligned; a cylindrical joint as
a revolute + prismatic pair about the same axis with a massless link between), the
mbd_ros equivalent chain of one-dof joints, FD(ID) round trips and RK4 energy conservation."""
import warnings

import numpy as np
import pytest

import mbd_ros
from mbd_ros.errors import ModelError
from mbd_ros.robot.joint_map import JointMap, dof_names

from conftest import import_oracle  # noqa: E402
pin = import_oracle("pinocchio")

# (name, type, origin xyz, origin rpy, axis, pitch) for a chain; each child link carries LINKS[k]
LINKS = [  # mass, com, (ixx, iyy, izz, ixy, ixz, iyz)
    (1.3, (0.05, -0.02, 0.21), (0.031, 0.027, 0.012, 0.002, -0.001, 0.0015)),
    (0.9, (0.12, 0.03, -0.04), (0.011, 0.019, 0.016, -0.001, 0.0008, 0.0)),
    (0.7, (-0.03, 0.08, 0.05), (0.008, 0.006, 0.009, 0.0005, 0.0, -0.0007)),
    (0.5, (0.02, 0.01, 0.10), (0.004, 0.005, 0.003, 0.0, 0.0002, 0.0003)),
]
HELICAL_CHAIN = [
    ("screw0", "helical", (0.0, 0.1, 0.2), (0.3, -0.2, 0.1), (0.0, 0.6, 0.8), 0.05),
    ("elbow", "revolute", (0.3, 0.0, 0.1), (0.0, 0.4, 0.0), (1.0, 0.0, 0.0), 0.0),
    ("screw2", "helical", (0.0, 0.25, 0.0), (-0.5, 0.1, 0.7), (0.48, 0.0, 0.64), -0.12),
    ("slide", "prismatic", (0.1, 0.0, 0.2), (0.2, 0.0, -0.3), (0.0, 0.0, 1.0), 0.0),
]
# universal: the last field is axis2 (in the joint frame; skew to the first axis in uni2)
UNIVERSAL_CHAIN = [
    ("uni0", "universal", (0.0, 0.1, 0.2), (0.3, -0.2, 0.1), (0.0, 0.6, 0.8), (1.0, 0.0, 0.0)),
    ("elbow", "revolute", (0.3, 0.0, 0.1), (0.0, 0.4, 0.0), (1.0, 0.0, 0.0), 0.0),
    ("uni2", "universal", (0.0, 0.25, 0.0), (-0.5, 0.1, 0.7), (0.0, 0.0, 1.0), (0.6, 0.8, 0.3)),
    ("screw", "helical", (0.1, 0.0, 0.2), (0.2, 0.0, -0.3), (0.0, 0.0, 1.0), 0.2),
]
CYLINDRICAL_CHAIN = [
    ("cyl0", "cylindrical", (0.0, 0.1, 0.2), (0.3, -0.2, 0.1), (0.0, 0.6, 0.8), 0.0),
    ("elbow", "revolute", (0.3, 0.0, 0.1), (0.0, 0.4, 0.0), (1.0, 0.0, 0.0), 0.0),
    ("cyl2", "cylindrical", (0.0, 0.25, 0.0), (-0.5, 0.1, 0.7), (0.48, 0.0, 0.64), 0.0),
    ("screw", "helical", (0.1, 0.0, 0.2), (0.2, 0.0, -0.3), (0.0, 0.0, 1.0), 0.2),
]


def _rpy(r, p, y):
    return pin.rpy.rpyToMatrix(r, p, y)


def _inertial(k):
    mass, com, (ixx, iyy, izz, ixy, ixz, iyz) = LINKS[k]
    return (f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="{ixz}" iyz="{iyz}"/>'
            f'</inertial>')


def _urdf(chain, split_cylindrical=False):
    """URDF text of the chain; split_cylindrical: each cylindrical joint as revolute + prismatic
    about the same axis with a massless link between (the equivalent chain)."""
    parts = ['<robot name="joints"><link name="base"/>']
    parent = "base"
    for k, (name, kind, xyz, rpy, axis, pitch) in enumerate(chain):
        origin = f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
        ax = f'{axis[0]} {axis[1]} {axis[2]}'
        child = f"link{k}"
        if kind == "cylindrical" and split_cylindrical:
            mid = f"{name}_mid"
            parts.append(f'<link name="{mid}"/>')
            parts.append(f'<joint name="{name}_rot" type="continuous"><parent link="{parent}"/>'
                         f'<child link="{mid}"/>{origin}<axis xyz="{ax}"/></joint>')
            parts.append(f'<joint name="{name}_slide" type="prismatic"><parent link="{mid}"/>'
                         f'<child link="{child}"/><axis xyz="{ax}"/></joint>')
        else:
            pitch_attr = f' pitch="{pitch}"' if kind == "helical" else ""
            axis2 = (f'<axis2 xyz="{pitch[0]} {pitch[1]} {pitch[2]}"/>' if kind == "universal" else "")
            parts.append(f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
                         f'<child link="{child}"/>{origin}<axis xyz="{ax}"{pitch_attr}/>{axis2}</joint>')
        parts.append(f'<link name="{child}">{_inertial(k)}</link>')
        parent = child
    parts.append("</robot>")
    return "".join(parts)


def _pin_model(chain):
    """The chain built by hand in Pinocchio (cylindrical: revolute + prismatic, massless between)."""
    model = pin.Model()
    parent = 0
    for k, (name, kind, xyz, rpy, axis, pitch) in enumerate(chain):
        placement = pin.SE3(_rpy(*rpy), np.array(xyz, dtype=float))
        a = np.array(axis, dtype=float)
        a /= np.linalg.norm(a)
        if kind == "helical":
            parent = model.addJoint(parent, pin.JointModelHelicalUnaligned(a, pitch), placement, name)
        elif kind == "revolute":
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(a), placement, name)
        elif kind == "prismatic":
            parent = model.addJoint(parent, pin.JointModelPrismaticUnaligned(a), placement, name)
        elif kind == "universal":   # two revolute joints, a body of zero inertia between
            a2 = np.array(pitch, dtype=float)
            a2 /= np.linalg.norm(a2)
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(a), placement, name + "_1")
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(a2), pin.SE3.Identity(),
                                    name + "_2")
        else:  # cylindrical
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(a), placement, name + "_rot")
            parent = model.addJoint(parent, pin.JointModelPrismaticUnaligned(a), pin.SE3.Identity(),
                                    name + "_slide")
        mass, com, (ixx, iyy, izz, ixy, ixz, iyz) = LINKS[k]
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        model.appendBodyToJoint(parent, pin.Inertia(mass, np.array(com), inertia), pin.SE3.Identity())
    return model


def _axis_rotation(axis, angle):
    return pin.AngleAxis(angle, np.asarray(axis, dtype=float)).matrix()


def _state(robot, seed):
    rng = np.random.default_rng(seed)
    return (robot.random_configuration(rng), rng.uniform(-2, 2, robot.nv),
            rng.uniform(-3, 3, robot.nv))


@pytest.mark.parametrize("chain", [HELICAL_CHAIN, CYLINDRICAL_CHAIN, UNIVERSAL_CHAIN],
                         ids=["helical", "cylindrical", "universal"])
def test_dynamics_match_pinocchio(chain):
    robot = mbd_ros.load(_urdf(chain))
    model = _pin_model(chain)
    data = model.createData()
    assert robot.nq == model.nq and robot.nv == model.nv
    for seed in range(5):
        q, v, tau = _state(robot, seed)
        np.testing.assert_allclose(robot.mass_matrix(q), pin.crba(model, data, q), atol=1e-10)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, tau), pin.rnea(model, data, q, v, tau),
                                   atol=1e-9)
        np.testing.assert_allclose(robot.forward_dynamics(q, v, tau), pin.aba(model, data, q, v, tau),
                                   atol=1e-8)
        pin.forwardKinematics(model, data, q)
        np.testing.assert_allclose(robot.link_pose(q, "link3"), data.oMi[model.njoints - 1].homogeneous,
                                   atol=1e-12)
        # the batch kernels take the same paths
        qb, vb, tb = np.tile(q, (3, 1)), np.tile(v, (3, 1)), np.tile(tau, (3, 1))
        np.testing.assert_allclose(robot.forward_dynamics_batch(qb, vb, tb)[1],
                                   pin.aba(model, data, q, v, tau), atol=1e-8)


def test_helical_pose_is_a_screw_motion():
    """Closed form: the child frame turns by q about the axis and advances pitch * q along it."""
    chain = [("screw", "helical", (0.1, -0.2, 0.3), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.07)]
    robot = mbd_ros.load(_urdf(chain))
    for angle in (0.0, 0.4, -2.5, 7.0):
        pose = robot.link_pose(np.array([angle]), "link0")
        np.testing.assert_allclose(pose[:3, 3], [0.1, -0.2, 0.3 + 0.07 * angle], atol=1e-14)
        np.testing.assert_allclose(pose[:3, :3], _rpy(0.0, 0.0, angle), atol=1e-14)


def test_cylindrical_matches_revolute_prismatic_chain():
    """Our cylindrical joint against our own revolute + prismatic pair (massless link between):
    the same q, v and every generic algorithm, joint wrenches included."""
    robot = mbd_ros.load(_urdf(CYLINDRICAL_CHAIN))
    chain = mbd_ros.load(_urdf(CYLINDRICAL_CHAIN, split_cylindrical=True))
    assert chain.joint_types == ["revolute", "prismatic", "revolute", "revolute", "prismatic", "helical"]
    for seed in range(3):
        q, v, tau = _state(robot, seed)
        np.testing.assert_allclose(robot.forward_dynamics(q, v, tau), chain.forward_dynamics(q, v, tau),
                                   atol=1e-9)
        np.testing.assert_allclose(robot.kinetic_energy(q, v), chain.kinetic_energy(q, v), rtol=1e-12)
        np.testing.assert_allclose(robot.potential_energy(q), chain.potential_energy(q), rtol=1e-12)
        w_robot = robot.joint_wrenches(q, v, tau)
        w_chain = chain.joint_wrenches(q, v, tau)
        # the cylindrical joint's wrench is the prismatic half's (child link frame = link0)
        np.testing.assert_allclose(w_robot[0], w_chain[1], atol=1e-9)
        np.testing.assert_allclose(w_robot[1], w_chain[2], atol=1e-9)
        np.testing.assert_allclose(w_robot[3], w_chain[5], atol=1e-9)
        np.testing.assert_allclose(robot.integrate(q, v, 0.3), chain.integrate(q, v, 0.3), atol=1e-15)


@pytest.mark.parametrize("chain", [HELICAL_CHAIN, CYLINDRICAL_CHAIN, UNIVERSAL_CHAIN],
                         ids=["helical", "cylindrical", "universal"])
def test_round_trip_and_integrate(chain):
    robot = mbd_ros.load(_urdf(chain))
    model = _pin_model(chain)
    for seed in range(3):
        q, v, qdd = _state(robot, 10 + seed)
        tau = robot.inverse_dynamics(q, v, qdd)
        np.testing.assert_allclose(robot.forward_dynamics(q, v, tau), qdd, atol=1e-9)
        np.testing.assert_allclose(robot.integrate(q, v, 0.2), pin.integrate(model, q, 0.2 * v), atol=1e-14)
        # joint torque balance: S^T of each movable joint's wrench is its drive force
        wrenches = robot.joint_wrenches(q, v, qdd)
        for row, (name, kind, xyz, rpy, axis, pitch) in zip(wrenches, chain):
            a = np.array(axis) / np.linalg.norm(axis)
            iv = robot.idx_v[robot.joint_names.index(name)]
            if kind == "helical":
                assert row[:3] @ (pitch * a) + row[3:] @ a == pytest.approx(tau[iv], abs=1e-9)
            elif kind == "cylindrical":
                assert row[3:] @ a == pytest.approx(tau[iv], abs=1e-9)
                assert row[:3] @ a == pytest.approx(tau[iv + 1], abs=1e-9)
            elif kind == "universal":
                # child-frame S(q) = [0, R2^T a1; 0, a2] (R2: rotation by q2 about a2)
                a2 = np.array(pitch) / np.linalg.norm(pitch)
                r2 = _axis_rotation(a2, q[robot.idx_q[robot.joint_names.index(name)] + 1])
                assert row[3:] @ (r2.T @ a) == pytest.approx(tau[iv], abs=1e-9)
                assert row[3:] @ a2 == pytest.approx(tau[iv + 1], abs=1e-9)


@pytest.mark.parametrize("chain", [HELICAL_CHAIN, CYLINDRICAL_CHAIN, UNIVERSAL_CHAIN],
                         ids=["helical", "cylindrical", "universal"])
def test_energy_conserved_rk4(chain):
    robot = mbd_ros.load(_urdf(chain))
    q, v, _ = _state(robot, 3)
    v *= 0.5
    zero = np.zeros(robot.nv)
    energy0 = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    scale = robot.kinetic_energy(q, v) + 10.0
    for _ in range(2000):   # 2 s at 1 ms
        q, v = robot.step(q, v, zero, 1e-3, integrator="rk4")
    energy = robot.kinetic_energy(q, v) + robot.potential_energy(q)
    assert abs(energy - energy0) < 1e-6 * scale
    assert np.all(np.isfinite(q))


def test_names_and_codegen_fallback():
    robot = mbd_ros.load(_urdf(CYLINDRICAL_CHAIN))
    assert robot.joint_types == ["cylindrical", "revolute", "cylindrical", "helical"]
    assert dof_names(robot) == ["cyl0/angle", "cyl0/displacement", "elbow", "cyl2/angle",
                                "cyl2/displacement", "screw"]
    np.testing.assert_array_equal(robot.neutral(), np.zeros(6))
    # JointState: one entry per dof, '<joint>/<component>' for cylindrical joints (a helical
    # joint's value is its angle)
    assert JointMap(robot).state_names == dof_names(robot)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generated = mbd_ros.load(_urdf(CYLINDRICAL_CHAIN), codegen=True)
    assert any("codegen does not support cylindrical, helical" in str(w.message) for w in caught)
    q, v, tau = _state(robot, 1)
    np.testing.assert_allclose(generated.forward_dynamics(q, v, tau), robot.forward_dynamics(q, v, tau),
                               atol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generated = mbd_ros.load(_urdf(UNIVERSAL_CHAIN[:3]), codegen=True)
    assert any("codegen does not support universal" in str(w.message) for w in caught)


def test_helical_needs_a_finite_pitch():
    chain = [("screw", "helical", (0, 0, 0), (0, 0, 0), (0, 0, 1), 0.1)]
    text = _urdf(chain)
    with pytest.raises(ModelError, match="joint 'screw'.*pitch"):
        mbd_ros.load(text.replace(' pitch="0.1"', ""))
    with pytest.raises(ModelError, match="joint 'screw'"):
        mbd_ros.load(text.replace('pitch="0.1"', 'pitch="nan"'))
    with pytest.raises(ModelError, match="joint 'screw'"):
        mbd_ros.load(text.replace('pitch="0.1"', 'pitch="abc"'))


def test_helical_cut_closes_a_cylindrical_joint_into_a_screw():
    """A nut on a cylindrical joint, closed to the base by a helical cut of the same axis and
    pitch, moves exactly as the same nut on a helical tree joint (tilted axis, gravity drives it)."""
    pitch = 0.08
    nut = [("nut_joint", "cylindrical", (0.1, 0.0, 0.3), (0.4, -0.3, 0.2), (0.0, 0.0, 1.0), 0.0)]
    screw = [("nut_joint", "helical", (0.1, 0.0, 0.3), (0.4, -0.3, 0.2), (0.0, 0.0, 1.0), pitch)]
    closures = {"closures": [{"name": "thread", "type": "helical", "parent": "base",
                              "child": "link0", "axis": [0.0, 0.0, 1.0], "pitch": pitch,
                              "parent_origin": {"xyz": [0.1, 0.0, 0.3], "rpy": [0.4, -0.3, 0.2]}}]}
    loop = mbd_ros.load(_urdf(nut), closures=closures)
    tree = mbd_ros.load(_urdf(screw))
    for angle, rate in ((0.3, 0.0), (-1.2, 2.0), (9.0, -1.5)):   # 9 rad: beyond one turn
        q_loop = np.array([angle, pitch * angle])
        v_loop = np.array([rate, pitch * rate])
        assert max(loop.closure_residual(q_loop, v_loop)) < 1e-12
        qdd_loop = loop.forward_dynamics(q_loop, v_loop, np.zeros(2))
        qdd_tree = tree.forward_dynamics(np.array([angle]), np.array([rate]), np.zeros(1))
        np.testing.assert_allclose(qdd_loop, [qdd_tree[0], pitch * qdd_tree[0]], rtol=1e-9, atol=1e-12)


def test_universal_velocity_product_term():
    """The derived S'(q) qdot of a universal joint on a fixed base, in the child frame:
    omega = R2^T a1 q1' + a2 q2', so d omega/dt at qdd = 0 is q1' q2' (R2^T a1 x a2) and the
    origin (on both axes) does not move. Checked against the Pinocchio chain's classical
    acceleration and against the mbd_ros robot's inverse dynamics at qdd = 0 (the wrench the
    joint must transmit is I a + v x* I v with that a)."""
    chain = [("uni", "universal", (0.0, 0.0, 0.0), (0.2, 0.1, -0.4), (0.0, 0.6, 0.8), (1.0, 0.0, 0.0))]
    robot = mbd_ros.load(_urdf(chain), gravity=(0.0, 0.0, 0.0))
    model = _pin_model(chain)
    model.gravity = pin.Motion.Zero()
    data = model.createData()
    a1 = np.array([0.0, 0.6, 0.8])
    a2 = np.array([1.0, 0.0, 0.0])
    q = np.array([0.7, -1.1])
    v = np.array([1.3, -0.8])
    r2 = _axis_rotation(a2, q[1])
    derived = v[0] * v[1] * np.cross(r2.T @ a1, a2)
    pin.forwardKinematics(model, data, q, v, np.zeros(2))
    np.testing.assert_allclose(data.a[2].angular, derived, atol=1e-12)
    np.testing.assert_allclose(data.a[2].linear, np.zeros(3), atol=1e-12)
    # the robot: joint wrench at qdd = 0 = I a + v x* I v for the body velocity and that a
    mass, com, (ixx, iyy, izz, ixy, ixz, iyz) = LINKS[0]
    inertia = pin.Inertia(mass, np.array(com), np.array([[ixx, ixy, ixz], [ixy, iyy, iyz],
                                                         [ixz, iyz, izz]]))
    twist = pin.Motion(np.zeros(3), r2.T @ a1 * v[0] + a2 * v[1])
    expected = inertia * pin.Motion(np.zeros(3), derived) + twist.cross(inertia * twist)
    np.testing.assert_allclose(robot.joint_wrenches(q, v, np.zeros(2))[0], expected.vector, atol=1e-12)


def test_universal_urdf_errors():
    chain = [("uj", "universal", (0, 0, 0), (0, 0, 0), (0, 0, 1), (1, 0, 0))]
    text = _urdf(chain)
    with pytest.raises(ModelError, match="joint 'uj'.*axis2"):
        mbd_ros.load(text.replace('<axis2 xyz="1 0 0"/>', ""))
    with pytest.raises(ModelError, match="joint 'uj'.*parallel"):
        mbd_ros.load(text.replace('<axis2 xyz="1 0 0"/>', '<axis2 xyz="0 0 2"/>'))
    with pytest.raises(ModelError, match="joint 'uj'"):
        mbd_ros.load(text.replace('<axis2 xyz="1 0 0"/>', '<axis2 xyz="1 0"/>'))
    robot = mbd_ros.load(text)
    assert robot.joint_types == ["universal"] and robot.nq == robot.nv == 2
    assert dof_names(robot) == ["uj/angle1", "uj/angle2"]


def _rssr_variants():
    """The spatial R-U-S-R sample with its U written as two revolute joints around a massless
    cross link, and the same with one universal joint."""
    import pathlib
    import xml.etree.ElementTree as ET
    root = pathlib.Path(__file__).resolve().parents[1]
    tree = ET.parse(root / "urdf" / "spatial_rssr.urdf").getroot()
    cross = tree.find("link[@name='coupler_cross']")
    cross.remove(cross.find("inertial"))
    chain = ET.tostring(tree, encoding="unicode")
    tree.remove(cross)
    second = tree.find("joint[@name='coupler_joint']")
    tree.remove(second)
    joint = tree.find("joint[@name='coupler_cross_joint']")
    joint.set("type", "universal")
    joint.find("child").set("link", "coupler")
    ET.SubElement(joint, "axis2", xyz=second.find("axis").get("xyz"))
    return chain, ET.tostring(tree, encoding="unicode"), root / "config" / "spatial_rssr_closures.yaml"


def test_universal_joint_in_a_closed_loop():
    """R-U-S-R loop: the universal joint gives the same closed-loop dynamics as the revolute pair
    around a massless cross (same q and v: [crank, angle1, angle2, rocker])."""
    chain_text, universal_text, closures = _rssr_variants()
    chain = mbd_ros.load(chain_text, closures=str(closures))
    robot = mbd_ros.load(universal_text, closures=str(closures))
    assert robot.joint_types == ["revolute", "universal", "revolute"] and robot.nv == chain.nv == 4
    for crank in (0.3, 1.4):
        q = chain.assemble(np.array([crank, 0.0, 0.0, 0.0]))
        assert max(robot.closure_residual(q)) < 1e-10
        v = np.linalg.svd(chain.loop_jacobian(q))[2][-1] * 1.5     # a velocity the loop allows
        tau = np.array([0.4, 0.0, 0.0, 0.0])
        np.testing.assert_allclose(robot.forward_dynamics(q, v, tau), chain.forward_dynamics(q, v, tau),
                                   rtol=1e-8, atol=1e-9)
        qdd = chain.forward_dynamics(q, v, tau)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), chain.inverse_dynamics(q, v, qdd),
                                   rtol=1e-8, atol=1e-9)


def test_singular_universal_joint_is_named():
    """A point mass on the universal joint's centre: no inertia about either axis. The error
    names the universal joint (it moves two bodies), not a neighbour."""
    text = ('<robot name="r"><link name="base"/>'
            '<joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>'
            '<axis xyz="1 0 0"/></joint>'
            '<link name="carriage"><inertial><mass value="1"/>'
            '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="uj" type="universal"><parent link="carriage"/><child link="bob"/>'
            '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/></joint>'
            '<link name="bob"><inertial><mass value="1"/>'
            '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>')
    with pytest.warns(UserWarning, match="joint 'uj'"):
        robot = mbd_ros.load(text)
    with pytest.raises(ValueError, match="joint 'uj'"):
        robot.forward_dynamics(np.zeros(3), np.zeros(3), np.zeros(3))


def test_prescribed_helical_joint():
    """Rheonomic helical joint: its acceleration is the given one and the returned drive force
    closes the inverse dynamics, tau + torques = ID(q, v, qdd)."""
    robot = mbd_ros.load(_urdf(HELICAL_CHAIN))
    q, v, tau = _state(robot, 6)
    qdd, torques = robot.forward_dynamics(q, v, tau, prescribed={"screw2": 0.7}, return_torques=True)
    iv = robot.idx_v[robot.joint_names.index("screw2")]
    assert qdd[iv] == pytest.approx(0.7, abs=1e-12)
    np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), tau + torques, atol=1e-9)
    assert np.count_nonzero(torques) == 1 and torques[iv] != 0.0
