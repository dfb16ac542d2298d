"""Force elements (spring_damper, joint_spring, bushing) and force callbacks.

References, none of them our own force code:
- Pinocchio's link poses and joint Jacobians: each element's force is recomputed here from the
  element's definition (points and frames placed with Pinocchio's kinematics, velocities from
  Pinocchio's Jacobians), mapped to generalized forces Q = sum J_p^T F, and the accelerations
  come from a dense solve M^-1 (tau - nle + Q) with Pinocchio's M and nle;
- the potential: with no damping, Q = -dV/dq by central differences of the elastic energy V
  computed here from the element's closed-form potential;
- round trips: inverse_dynamics(forward_dynamics(tau)) = tau with the elements acting, on a tree
  and on a closed loop, and the closed-loop formalisms agree with each other.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close
from oracle import PinOracle, parse_urdf, pin_model_from_xml, rpy_matrix

import mbd_ros
from mbd_ros.errors import ModelError

ROOT = Path(__file__).resolve().parent.parent
ARM = ROOT / "urdf" / "arm7.urdf"
FOURBAR = ROOT / "urdf" / "fourbar.urdf"
FOURBAR_CLOSURES = ROOT / "config" / "fourbar_closures.yaml"

SPRING = dict(name="s1", type="spring_damper", parent="base_link", parent_point=[0.1, 0.2, 0.3],
              child="link_5", child_point=[0.05, -0.02, 0.1], stiffness=300.0, damping=2.0,
              rest_length=0.3, preload=5.0)
JOINT_SPRING = dict(name="js", type="joint_spring", joint="joint_2", stiffness=35.0, damping=0.8,
                    rest_position=0.4)
BUSHING = dict(name="b", type="bushing", parent="link_2",
               parent_origin={"xyz": [0.1, 0.0, 0.2], "rpy": [0.1, 0.2, 0.3]},
               child="link_6", child_origin={"xyz": [0.0, 0.1, 0.0], "rpy": [0.3, -0.2, 0.1]},
               stiffness=[100.0, 200.0, 300.0, 10.0, 20.0, 30.0],
               damping=[1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
ELEMENTS = [SPRING, JOINT_SPRING, BUSHING]


def arm_with(elements, passive=False):
    return mbd_ros.load(str(ARM), passive_forces=passive, forces={"forces": elements})


def origin(d):
    T = np.eye(4)
    T[:3, :3] = rpy_matrix(d.get("rpy", [0, 0, 0]))
    T[:3, 3] = d.get("xyz", [0, 0, 0])
    return T


def skew(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def log_so3(R):
    angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    return w if angle < 1e-12 else w * angle / np.sin(angle)


class Reference:
    """Pinocchio kinematics of arm7 and the elements' forces recomputed from their definitions."""

    def __init__(self, pin):
        xml = ARM.read_text()
        model, link_frame = pin_model_from_xml(pin, xml, False)
        self.pin = pin
        self.o = PinOracle(pin, model, link_frame, parse_urdf(xml), False)

    def frame(self, q, link, T_local):
        """World pose (4x4) of a frame given in a link, and its point Jacobian (3, nv) and
        angular Jacobian (3, nv) in the world, in our v order."""
        pin, o = self.pin, self.o
        qp = o.q_pin(q)
        pin.computeJointJacobians(o.model, o.data, qp)
        pin.updateFramePlacements(o.model, o.data)
        jid, P = o.link_frame[link]
        T = (o.data.oMi[jid] * P).homogeneous @ T_local
        J = pin.getJointJacobian(o.model, o.data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        J = J[:, o.vperm]
        r = T[:3, 3] - o.data.oMi[jid].translation
        return T, J[:3] - skew(r) @ J[3:], J[3:]

    def generalized(self, spec, q, v):
        """Q (nv,) of one element at (q, v), = sum of J^T F over the element's two ends."""
        nv = len(v)
        if spec["type"] == "joint_spring":
            Q = np.zeros(nv)
            j = ["joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6", "joint_7"].index(spec["joint"])
            Q[j] = -spec["stiffness"] * (q[j] - spec["rest_position"]) - spec["damping"] * v[j]
            return Q
        if spec["type"] == "spring_damper":
            Ta = np.eye(4)
            Ta[:3, 3] = spec["parent_point"]
            Tb = np.eye(4)
            Tb[:3, 3] = spec["child_point"]
            A, Ja, _ = self.frame(q, spec["parent"], Ta)
            B, Jb, _ = self.frame(q, spec["child"], Tb)
            d = B[:3, 3] - A[:3, 3]
            length = np.linalg.norm(d)
            u = d / length
            rate = u @ ((Jb - Ja) @ v)
            f = spec["stiffness"] * (length - spec["rest_length"]) + spec["damping"] * rate + spec["preload"]
            return Ja.T @ (f * u) + Jb.T @ (-f * u)
        A, Ja, Wa = self.frame(q, spec["parent"], origin(spec["parent_origin"]))
        B, Jb, Wb = self.frame(q, spec["child"], origin(spec["child_origin"]))
        Ra = A[:3, :3]
        r = B[:3, 3] - A[:3, 3]
        d = Ra.T @ r
        theta = log_so3(Ra.T @ B[:3, :3])
        K, C = np.array(spec["stiffness"]), np.array(spec["damping"])
        wa, wb = Wa @ v, Wb @ v
        d_rate = Ra.T @ ((Jb - Ja) @ v - np.cross(wa, r))
        w_rel = Ra.T @ (wb - wa)
        # couple -J_l^-T K theta, J_l^-1 from its closed form (Chirikjian; Sola et al. eq. 146)
        a = np.linalg.norm(theta)
        S = skew(theta)
        Jl_inv = np.eye(3) - S / 2 + (1 / a**2 - (1 + np.cos(a)) / (2 * a * np.sin(a))) * S @ S
        force = Ra @ -(K[:3] * d + C[:3] * d_rate)
        couple = Ra @ -(Jl_inv.T @ (K[3:] * theta) + C[3:] * w_rel)
        # on B: force at x_B and the couple; on A: the opposite force at x_B and opposite couple
        Ja_at_b = Ja - skew(r) @ Wa
        return Jb.T @ force + Wb.T @ couple - Ja_at_b.T @ force - Wa.T @ couple


@pytest.fixture(scope="module")
def reference(pin):
    return Reference(pin)


def state(seed):
    rng = np.random.default_rng(seed)
    robot = mbd_ros.load(str(ARM))
    return robot.random_configuration(rng), rng.normal(size=7), rng.normal(size=7)


@pytest.mark.parametrize("spec", ELEMENTS, ids=lambda s: s["type"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forward_dynamics_matches_point_jacobians_and_a_dense_solve(reference, spec, seed):
    """qdd with one element = M^-1 (tau - nle + J^T F) with Pinocchio's M, nle and Jacobians."""
    robot = arm_with([spec])
    q, v, tau = state(seed)
    o = reference.o
    expected = np.linalg.solve(o.crba(q), tau - o.nle(q, v) + reference.generalized(spec, q, v))
    assert_close(robot.forward_dynamics(q, v, tau), expected, f"{spec['type']} qdd", rtol=1e-8)


def test_all_elements_together_and_inverse_dynamics_round_trip(reference):
    robot = arm_with(ELEMENTS)
    q, v, tau = state(5)
    o = reference.o
    Q = sum(reference.generalized(s, q, v) for s in ELEMENTS)
    qdd = robot.forward_dynamics(q, v, tau)
    assert_close(qdd, np.linalg.solve(o.crba(q), tau - o.nle(q, v) + Q), "qdd", rtol=1e-8)
    assert_close(robot.inverse_dynamics(q, v, qdd), tau, "tau round trip")
    # inverse dynamics returns the drive torques: Newton-Euler torque minus the elements' Q
    assert_close(robot.inverse_dynamics(q, v, qdd), o.rnea(q, v, qdd) - Q, "tau = rnea - Q",
                 rtol=1e-8)


def elastic_energy(spec, reference, q):
    """The element's potential from its closed form, with Pinocchio's kinematics."""
    if spec["type"] == "joint_spring":
        j = int(spec["joint"][-1]) - 1
        return 0.5 * spec["stiffness"] * (q[j] - spec["rest_position"]) ** 2
    if spec["type"] == "spring_damper":
        Ta, Tb = np.eye(4), np.eye(4)
        Ta[:3, 3], Tb[:3, 3] = spec["parent_point"], spec["child_point"]
        length = np.linalg.norm(reference.frame(q, spec["child"], Tb)[0][:3, 3]
                                - reference.frame(q, spec["parent"], Ta)[0][:3, 3])
        return 0.5 * spec["stiffness"] * (length - spec["rest_length"]) ** 2 + spec["preload"] * length
    A = reference.frame(q, spec["parent"], origin(spec["parent_origin"]))[0]
    B = reference.frame(q, spec["child"], origin(spec["child_origin"]))[0]
    d = A[:3, :3].T @ (B[:3, 3] - A[:3, 3])
    theta = log_so3(A[:3, :3].T @ B[:3, :3])
    K = np.array(spec["stiffness"])
    return 0.5 * (d @ (K[:3] * d) + theta @ (K[3:] * theta))


@pytest.mark.parametrize("spec", ELEMENTS, ids=lambda s: s["type"])
def test_conservative_forces_are_minus_the_gradient_of_the_potential(reference, spec):
    """With damping 0: Q = -dV/dq (central differences, h = 1e-6: error ~1e-9 relative), and the
    robot's potential_energy adds exactly this V to gravity's."""
    spec = dict(spec, damping=[0.0] * 6 if spec["type"] == "bushing" else 0.0)
    robot = arm_with([spec])
    plain = mbd_ros.load(str(ARM), passive_forces=False)
    q, _, _ = state(7)
    zero = np.zeros(7)
    Q = plain.inverse_dynamics(q, zero, zero) - robot.inverse_dynamics(q, zero, zero)
    h = 1e-6
    grad = np.array([(elastic_energy(spec, reference, q + h * e) - elastic_energy(spec, reference, q - h * e)) / (2 * h)
                     for e in np.eye(7)])
    assert np.abs(grad).max() > 0.1          # the configuration loads the element
    assert_close(Q, -grad, f"{spec['type']}: Q vs -dV/dq", rtol=1e-7)
    assert_close(robot.potential_energy(q) - plain.potential_energy(q),
                 elastic_energy(spec, reference, q), "elastic energy")


def test_force_element_values():
    robot = arm_with(ELEMENTS)
    q, v, _ = state(3)
    values = robot.force_element_values(q, v)
    assert values.names == ("s1", "js", "b") and robot.force_element_names == ["s1", "js", "b"]
    # joint spring: torque and deflection from the definition
    assert values.length[1] == pytest.approx(q[1] - 0.4, abs=1e-15)
    assert values.force[1] == pytest.approx(-35.0 * (q[1] - 0.4) - 0.8 * v[1], abs=1e-12)
    # spring-damper: tension from length and rate as reported; rate = d length / dt
    assert values.force[0] == pytest.approx(300.0 * (values.length[0] - 0.3) + 2.0 * values.rate[0] + 5.0)
    dt = 1e-7
    ahead = robot.force_element_values(q + v * dt, v)
    behind = robot.force_element_values(q - v * dt, v)
    assert values.rate[0] == pytest.approx((ahead.length[0] - behind.length[0]) / (2 * dt), rel=1e-6)
    assert set(values.as_dict()) == {"s1", "js", "b"}


def test_joint_wrenches_include_the_element_loads(pin, reference):
    """Joint wrenches with a spring-damper = Pinocchio's joint forces under the same link loads."""
    robot = arm_with([SPRING])
    q, v, tau = state(4)
    qdd = robot.forward_dynamics(q, v, tau)
    values = robot.force_element_values(q, v)
    # the spring's two point forces as link wrenches (link frame, about its origin)
    o = reference.o
    f_ext = {}
    for link, point, sign in ((SPRING["parent"], SPRING["parent_point"], 1.0),
                              (SPRING["child"], SPRING["child_point"], -1.0)):
        Ta = np.eye(4)
        Ta[:3, 3] = point
        other = SPRING["child"] if sign > 0 else SPRING["parent"]
        other_point = SPRING["child_point"] if sign > 0 else SPRING["parent_point"]
        To = np.eye(4)
        To[:3, 3] = other_point
        T = reference.frame(q, link, Ta)[0]
        u = reference.frame(q, other, To)[0][:3, 3] - T[:3, 3]
        F = values.force[0] * u / np.linalg.norm(u)       # pulls towards the other point
        n = T[:3, :3].T @ F
        f_ext[link] = np.concatenate([n, np.cross(point, n)])
    expected = o.joint_forces(q, v, qdd, f_ext)
    wrenches = robot.joint_wrenches(q, v, qdd)
    for name in robot.joint_names:
        assert_close(wrenches[robot.wrench_joint_names.index(name)], expected[name],
                     f"wrench {name}", rtol=1e-8)


def test_callbacks_generalized_and_link_wrenches(pin, reference):
    """robot.add_force: (nv,) generalized forces and {link: wrench} act like tau and f_ext."""
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    q, v, tau = state(6)
    wrench = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    seen = []
    robot.add_force(lambda t, q_, v_: seen.append(t) or 0.1 * np.arange(7))
    robot.add_force(lambda t, q_, v_: {"tool0": wrench})
    robot.time = 2.5
    qdd = robot.forward_dynamics(q, v, tau)
    assert seen == [2.5]
    expected = reference.o.aba(q, v, tau + 0.1 * np.arange(7), {"tool0": wrench})
    assert_close(qdd, expected, "qdd with callbacks")
    assert_close(robot.inverse_dynamics(q, v, qdd), tau, "ID with callbacks")
    with pytest.raises(ValueError, match="callback"):
        robot.add_force(lambda t, q_, v_: np.zeros(3))
        robot.forward_dynamics(q, v, tau)


def fourbar_with_spring(damping=0.0):
    spring = {"forces": [dict(name="crank_spring", type="joint_spring", joint="crank_joint",
                              stiffness=2.0, damping=damping, rest_position=0.2),
                         dict(name="diag", type="spring_damper", parent="ground", parent_point=[0.0, 0.0, 0.0],
                              child="rocker", child_point=[0.0, 0.0, 0.3], stiffness=40.0,
                              damping=damping, rest_length=0.2)]}
    return mbd_ros.load(str(FOURBAR), closures=str(FOURBAR_CLOSURES), forces=spring,
                        passive_forces=False)


def test_closed_loop_formalisms_agree_with_force_elements():
    robot = fourbar_with_spring(damping=0.3)
    plain = mbd_ros.load(str(FOURBAR), closures=str(FOURBAR_CLOSURES), passive_forces=False)
    q = robot.assemble(np.array([0.7, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([1.3, 0.0, 0.0]))
    tau = np.array([0.2, 0.0, 0.0])
    qdd = robot.forward_dynamics(q, v, tau)
    assert np.abs(qdd - plain.forward_dynamics(q, v, tau)).max() > 1e-2   # the springs act
    assert_close(robot.forward_dynamics(q, v, tau, method="minimal"), qdd, "minimal vs recursive")
    assert_close(robot.forward_dynamics(q, v, tau, method="descriptor"), qdd, "descriptor vs recursive")
    assert_close(robot.inverse_dynamics(q, v, qdd), tau, "closed-loop ID round trip")
    # the same accelerations with the springs' generalized forces passed as a tau callback
    Q = plain.inverse_dynamics(q, v, qdd) - robot.inverse_dynamics(q, v, qdd)
    assert_close(plain.forward_dynamics(q, v, tau + Q), qdd, "springs = their generalized forces")


def test_closures_and_forces_in_one_file(tmp_path):
    text = FOURBAR_CLOSURES.read_text() + """
forces:
  - {name: crank_spring, type: joint_spring, joint: crank_joint, stiffness: 2.0}
"""
    path = tmp_path / "both.yaml"
    path.write_text(text)
    robot = mbd_ros.load(str(FOURBAR), closures=str(path), forces=str(path))
    assert robot.force_element_names == ["crank_spring"]


@pytest.mark.parametrize("entry, message", [
    (dict(SPRING, type="spring"), r"force 0 \('s1'\): field 'type': unknown type 'spring'"),
    (dict(SPRING, child="link_55"), r"force 0 \('s1'\): field 'child': unknown link 'link_55'"),
    (dict(SPRING, stiffness=-1.0), r"force 0 \('s1'\): field 'stiffness': must be >= 0"),
    ({k: v for k, v in SPRING.items() if k != "rest_length"}, r"force 0 \('s1'\): field 'rest_length': missing"),
    (dict(SPRING, parent_point=[0, 0]), r"force 0 \('s1'\): field 'parent_point': must be a list of 3 numbers"),
    (dict(SPRING, stifness=1.0), r"force 0 \('s1'\): unknown field 'stifness' \(did you mean 'stiffness'"),
    (dict(JOINT_SPRING, joint="joint_9"), r"force 0 \('js'\): field 'joint': unknown movable joint"),
    (dict(BUSHING, stiffness=[1, 2, 3]), r"force 0 \('b'\): field 'stiffness': must be a list of 6 numbers"),
    (dict(SPRING, name=None), r"force 0 \(unnamed\): field 'name': missing"),
])
def test_errors_name_the_source_entry_and_field(entry, message, tmp_path):
    with pytest.raises(ModelError, match="<forces dict>: " + message):
        arm_with([entry])
    import yaml
    path = tmp_path / "forces.yaml"
    path.write_text(yaml.safe_dump({"forces": [entry]}))
    with pytest.raises(ModelError, match=str(path)):
        mbd_ros.load(str(ARM), forces=str(path))


def test_duplicate_names_and_missing_file():
    with pytest.raises(ModelError, match="duplicate name"):
        arm_with([SPRING, SPRING])
    with pytest.raises(ModelError, match="forces file not found"):
        mbd_ros.load(str(ARM), forces="no/such/forces.yaml")
    with pytest.raises(ModelError, match="one-dof"):
        mbd_ros.load(str(ARM), floating_base=True,
                     forces={"forces": [dict(JOINT_SPRING, joint="root_joint")]})


def test_batches_apply_the_force_elements():
    robot = arm_with(ELEMENTS)
    rng = np.random.default_rng(9)
    Q = np.array([robot.random_configuration(rng) for _ in range(4)])
    V, TAU = rng.normal(size=(4, 7)), rng.normal(size=(4, 7))
    QDD = robot.forward_dynamics_batch(Q, V, TAU)
    for i in range(4):
        assert_close(QDD[i], robot.forward_dynamics(Q[i], V[i], TAU[i]), f"batch FD {i}")
    assert_close(robot.inverse_dynamics_batch(Q, V, QDD), TAU, "batch ID round trip")
