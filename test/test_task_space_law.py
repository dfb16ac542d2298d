"""The task-space control law (mbd_ros/nodes/task_space.py, the inverse dynamics node's
`mode: task_space`) in-process, without ROS, against independent references:

- a hand computation of tau = J^T (K e + D (twist - J v)) + b + (1 - J^T Lambda J M^-1) tau_0
  from Pinocchio's quantities (computeFrameJacobian LOCAL_WORLD_ALIGNED, computeMinverse, rnea,
  framesForwardKinematics, log3) on example-robot-data robots (ur5 and panda fixed, solo12
  floating), random states and targets, to 1e-10 relative (the issue's tolerance, widened by
  Lambda's condition number where the null-space term amplifies round-off);
- identities: J M^-1 N^T tau_0 = 0 to round-off (dynamically consistent projector), N^T = 0
  for a non-redundant arm (ur5), tau = g(q) at the held pose at rest, exp(e_rot) R = R_target;
- the integral term's sum and clip by hand;
- physics: the sample arm7 simulated in-process (robot.step) under the law reaches a pose
  10 cm away to 1 mm / 1 mrad;
- refusals: closed-loop and flexible robots, unknown link (close names), bad gain vectors.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import EPS, ROUNDOFF_SAFETY, assert_close
from mbd_ros.nodes.task_space import (CartesianImpedance, check_link, quaternion_matrix,
                                      six_vector)

import test_frame_kinematics as fk   # its Pair (our robot + Pinocchio's, permutations)

ROOT = Path(__file__).resolve().parent.parent
RTOL_PIN = 1e-10
LINKS = {"ur5": "tool0", "panda": "panda_hand", "solo12": "FL_FOOT"}
K = np.array([800.0, 900.0, 1000.0, 60.0, 70.0, 80.0])
D = np.array([60.0, 65.0, 70.0, 5.0, 6.0, 7.0])
KN = 15.0
# the sample config's gains (config/arm7_task_space.yaml)
STIFFNESS = [1500.0, 1500.0, 1500.0, 30.0, 30.0, 30.0]
DAMPING = [120.0, 120.0, 120.0, 0.2, 0.2, 0.2]


@pytest.fixture(scope="module", params=list(LINKS))
def pair(request, pin, erd_dir):
    return fk.Pair(pin, erd_dir, request.param)


def skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rodrigues(w):
    """exp([w]x), independent of the code under test."""
    angle = np.linalg.norm(w)
    if angle < 1e-300:
        return np.eye(3)
    S = skew(w / angle)
    return np.eye(3) + np.sin(angle) * S + (1.0 - np.cos(angle)) * S @ S


def pin_quantities(pair, q, v, link):
    """J (LOCAL_WORLD_ALIGNED), M^-1, b = rnea(q, v, 0), pose (p, R), all in our ordering."""
    pin, model, data = pair.pin, pair.model, pair.data
    qp, vp = pair.q_pin(q), pair.v_pin(v)
    fid = pair.frame_id(link)
    J = pin.computeFrameJacobian(model, data, qp, fid, pin.LOCAL_WORLD_ALIGNED)[:, pair.vperm]
    Minv = pin.computeMinverse(model, data, qp)
    Minv = np.triu(Minv) + np.triu(Minv, 1).T          # Pinocchio fills the upper triangle
    Minv = Minv[np.ix_(pair.vperm, pair.vperm)]
    b = pin.rnea(model, data, qp, vp, np.zeros(model.nv))[pair.vperm]
    pin.framesForwardKinematics(model, data, qp)
    pose = data.oMf[fid]
    return J, Minv, b, pose.translation.copy(), pose.rotation.copy()


def random_target(law, p, R, rng):
    """A target pose near (p, R), a target twist and a posture set on the law; returns the
    target position, rotation and twist."""
    p_t = p + rng.uniform(-0.05, 0.05, 3)
    R_t = rodrigues(rng.uniform(-0.3, 0.3, 3)) @ R
    twist = rng.standard_normal(6)
    law.set_target(p_t, R_t)
    law.set_twist(twist)
    law.set_posture(law.robot.random_configuration(rng))
    return p_t, R_t, twist


def posture_torque(law, q, v):
    tau0 = np.zeros(law.robot.nv)
    tau0[law.joint_iv] = KN * (law.posture[law.joint_iq] - q[law.joint_iq]) \
        - law.nullspace_damping * v[law.joint_iv]
    return tau0


def test_law_matches_a_hand_computation_from_pinocchio(pair):
    pin, robot = pair.pin, pair.robot
    link = LINKS[pair.key]
    law = CartesianImpedance(robot, link, K, D, nullspace_stiffness=KN)
    assert law.nullspace_damping == pytest.approx(2.0 * np.sqrt(KN), rel=1e-15)
    rng = np.random.default_rng(7)
    for k, (q, v, _) in enumerate(pair.states):
        J, Minv, b, p, R = pin_quantities(pair, q, v, link)
        p_t, R_t, twist = random_target(law, p, R, rng)
        tau = law.compute(q, v)
        e = np.concatenate([p_t - p, pin.log3(R_t @ R.T)])
        what = f"{pair.key} state {k}"
        assert_close(law.error, e, f"{what}: pose error vs p_t - p, log3(R_t R^T)", RTOL_PIN)
        S = J @ Minv @ J.T
        Lam = np.linalg.inv(S)
        tau0 = posture_torque(law, q, v)
        NT = np.eye(robot.nv) - J.T @ Lam @ J @ Minv
        expected = J.T @ (K * e + D * (twist - J @ v)) + b + NT @ tau0
        # the null-space term carries Lambda's round-off: cond(S) eps relative to it
        rtol = max(RTOL_PIN, ROUNDOFF_SAFETY * robot.nv * EPS * np.linalg.cond(S)
                   * np.linalg.norm(J.T @ Lam @ J @ Minv @ tau0) / max(1.0, np.abs(expected).max()))
        assert_close(tau, expected, f"{what}: tau vs the hand computation", rtol)


def test_nullspace_projector_is_dynamically_consistent(pair):
    robot = pair.robot
    link = LINKS[pair.key]
    law = CartesianImpedance(robot, link, K, D, nullspace_stiffness=KN)
    rng = np.random.default_rng(11)
    for k, (q, v, _) in enumerate(pair.states):
        law.set_posture(robot.random_configuration(rng))
        robot.link_jacobian(q, link, "local_world_aligned", out=law.J)
        tau0 = posture_torque(law, q, v)
        projected = law.nullspace_torque(q, v, np.zeros(robot.nv)).copy()
        Minv = robot.mass_matrix_inverse(q)
        J = law.J
        # J M^-1 N^T tau_0 = J M^-1 tau_0 - (J M^-1 J^T) Lambda (J M^-1 tau_0): round-off of
        # the solve, relative to |J M^-1 tau_0| times cond(J M^-1 J^T)
        S = J @ Minv @ J.T
        residual = J @ Minv @ projected
        bound = ROUNDOFF_SAFETY * 2 * 6 * robot.nv * EPS * np.linalg.cond(S) * \
            np.linalg.norm(J @ Minv @ tau0)
        assert np.abs(residual).max() <= bound, (pair.key, k, residual, bound)
        if pair.key == "ur5":   # six joints, J square and regular: no null space, N^T = 0
            assert np.abs(projected).max() <= bound * np.linalg.norm(J.T @ np.linalg.inv(S)), \
                projected
        else:                   # a redundant robot: the projection keeps a non-zero torque
            assert np.linalg.norm(projected) > 1e-3 * np.linalg.norm(tau0)


def test_at_the_held_pose_at_rest_tau_is_gravity_plus_the_nullspace_term(pair):
    pin, robot = pair.pin, pair.robot
    link = LINKS[pair.key]
    law = CartesianImpedance(robot, link, K, D, nullspace_stiffness=KN)
    q = pair.states[0][0]
    zero = np.zeros(robot.nv)
    gravity = pin.computeGeneralizedGravity(pair.model, pair.data, pair.q_pin(q))[pair.vperm]
    law.hold(q)
    tau = law.compute(q, zero)
    # the held pose itself: e = 0 up to the round-off of R R^T (a few eps)
    assert np.abs(law.error).max() <= 8 * EPS, law.error
    assert_close(tau, gravity, f"{pair.key}: tau at the held pose at rest vs g(q)", RTOL_PIN)
    # another posture: tau - g = N^T tau_0, which does not accelerate the link (J M^-1 . = 0)
    law.set_posture(robot.random_configuration(np.random.default_rng(3)))
    tau = law.compute(q, zero)
    J, Minv, _, _, _ = pin_quantities(pair, q, zero, link)
    tau0 = posture_torque(law, q, zero)
    Lam = np.linalg.inv(J @ Minv @ J.T)
    expected = gravity + (np.eye(robot.nv) - J.T @ Lam @ J @ Minv) @ tau0
    rtol = max(RTOL_PIN, ROUNDOFF_SAFETY * robot.nv * EPS * np.linalg.cond(J @ Minv @ J.T)
               * np.linalg.norm(tau0) / max(1.0, np.abs(expected).max()))
    assert_close(tau, expected, f"{pair.key}: tau = g + N^T tau_0 at the target", rtol)


def test_orientation_error_rotates_onto_the_target(pin):
    """exp(e_rot) R = R_target (e_rot = log(R_t R^T) in root axes), also near pi."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    law = CartesianImpedance(robot, "ee_link", K, D)
    q = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    R = robot.link_pose(q, "ee_link")[:3, :3]
    rng = np.random.default_rng(5)
    for angle in (1e-9, 1e-3, 0.5, 2.0, 3.1):
        axis = rng.standard_normal(3)
        R_t = rodrigues(angle * axis / np.linalg.norm(axis)) @ R
        law.set_target(np.zeros(3), R_t)
        e = law.pose_error(q).copy()
        assert_close(rodrigues(e[3:]) @ R, R_t, f"exp(e_rot) R vs R_target, angle {angle}",
                     1e-12)
        assert_close(np.linalg.norm(e[3:]), angle, f"|e_rot| vs the angle {angle}", 1e-12)


def test_quaternion_matrix_against_pinocchio(pin):
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = rng.standard_normal(4)
        x /= np.linalg.norm(x)
        expected = pin.Quaternion(x[3], x[0], x[1], x[2]).toRotationMatrix()
        assert_close(quaternion_matrix(*x), expected, "quaternion_matrix vs Pinocchio", 1e-15)
    with pytest.raises(ValueError, match="unit quaternion"):
        quaternion_matrix(0.0, 0.0, 0.0, 0.5)
    with pytest.raises(ValueError, match="unit quaternion"):
        quaternion_matrix(float("nan"), 0.0, 0.0, 1.0)


def test_integral_term_sums_and_clips():
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    gain = np.array([100.0, 200.0, 300.0, 10.0, 20.0, 30.0])
    limit = np.array([1.0, 1.0, 1.0, 0.05, 0.05, 0.05])
    law = CartesianImpedance(robot, "ee_link", np.zeros(6), np.zeros(6), integral_gain=gain,
                             integral_limit=limit)
    q = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    zero = np.zeros(7)
    law.hold(q)
    pose = robot.link_pose(q, "ee_link")
    offset = np.array([1e-3, -2e-3, 0.5e-3])
    law.set_target(pose[:3, 3] + offset, pose[:3, :3])
    g = robot.bias_forces(q, zero)
    J = robot.link_jacobian(q, "ee_link")
    dt = 2e-3
    for n in range(1, 4):
        tau = law.compute(q, zero, dt)
        w = np.concatenate([gain[:3] * offset * dt * n, np.zeros(3)])
        assert_close(law.integral, w, f"integral after {n} steps", 1e-12)
        assert_close(tau, J.T @ w + g, f"tau after {n} steps", 1e-12)
    law.compute(q, zero, 0.0)                          # dt 0: not advanced
    assert_close(law.integral[:3], gain[:3] * offset * dt * 3, "integral, dt 0", 1e-12)
    for _ in range(10000):
        law.compute(q, zero, dt)
    np.testing.assert_array_equal(law.integral, np.concatenate([np.sign(offset) * limit[:3],
                                                                np.zeros(3)]))


def test_simulated_arm_reaches_a_pose_10_cm_away():
    """arm7 under the law with the sample config's gains (config/arm7_task_space.yaml),
    integrated in-process at 1 kHz (the node test's plant rate and integrator), each torque
    applied one step late and held over the step as over topics: within 1 mm and 1 mrad of a
    pose 10 cm away in 3 s."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    law = CartesianImpedance(robot, "ee_link", STIFFNESS, DAMPING, nullspace_stiffness=1.0)
    q = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    v = np.zeros(7)
    law.hold(q)
    pose = robot.link_pose(q, "ee_link")
    offset = np.array([0.06, -0.05, 0.06])
    target = pose[:3, 3] + 0.1 * offset / np.linalg.norm(offset)
    law.set_target(target, pose[:3, :3])
    dt = 1e-3
    limits = np.asarray(robot.effort_limits)
    late = robot.gravity_forces(q)
    for _ in range(int(3.0 / dt)):
        tau = np.clip(law.compute(q, v, dt), -limits, limits)
        q, v = robot.step(q, v, late, dt, integrator="semi_implicit_euler")
        late = tau
    final = robot.link_pose(q, "ee_link")
    assert np.linalg.norm(final[:3, 3] - target) < 1e-3
    rot = final[:3, :3].T @ pose[:3, :3]
    assert np.arccos(np.clip((np.trace(rot) - 1.0) / 2.0, -1.0, 1.0)) < 1e-3


def test_unsupported_robots_and_bad_arguments_are_refused():
    arm = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    with pytest.raises(ValueError, match=r"unknown link 'ee_lnk'.*'ee_link'"):
        CartesianImpedance(arm, "ee_lnk", K, D)
    with pytest.raises(ValueError, match=r"task_link: unknown link 'tool1'.*'tool0'"):
        check_link(arm, "tool1", "task_link")
    with pytest.raises(ValueError, match="stiffness must be 6 numbers"):
        CartesianImpedance(arm, "ee_link", K[:5], D)
    with pytest.raises(ValueError, match="damping must be finite and >= 0"):
        CartesianImpedance(arm, "ee_link", K, -D)
    with pytest.raises(ValueError, match="must be finite"):
        six_vector([1, 2, 3, 4, 5, float("inf")], "x")
    fourbar = mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"),
                           closures=str(ROOT / "config" / "fourbar_closures.yaml"))
    with pytest.raises(ValueError, match="not supported for closed-loop robots"):
        CartesianImpedance(fourbar, fourbar.link_names[-1], K, D)
    flexible = mbd_ros.load(str(ROOT / "urdf" / "flexible_arm.urdf"),
                            flexible=str(ROOT / "config" / "flexible_arm.yaml"))
    with pytest.raises(ValueError, match="not supported for robots with flexible links"):
        CartesianImpedance(flexible, flexible.link_names[-1], K, D)


# ---------------------------------------------------------------- damping by ratio
def modal_check(lam, stiffness, ratio, damping):
    """(error, scale): the generalized eigenvectors X of K x = w Lambda x (scipy, X^T Lambda X
    = 1) diagonalize D to diag(2 ratio sqrt(w)) when every mode has that damping ratio."""
    from scipy.linalg import eigh
    w, X = eigh(np.diag(stiffness), lam)
    expected = np.diag(2.0 * ratio * np.sqrt(np.clip(w, 0.0, None)))
    return np.abs(X.T @ damping @ X - expected).max(), np.abs(expected).max()


def test_damping_design_gives_every_mode_the_ratio():
    """kernels/task_impedance.damping_matrix (Cholesky + cyclic Jacobi) against scipy's
    generalized eigen-decomposition: X^T D X = diag(2 z sqrt(w_i)), and D symmetric, on random
    positive definite Lambda (condition numbers to ~1e6) and stiffness. The tolerance: the
    eigenvectors' round-off, eps cond(Lambda) relative, amplified by sqrt(w_max / w_min) through
    the square roots (ROUNDOFF_SAFETY for the operation count)."""
    from mbd_ros.kernels.task_impedance import damping_matrix
    rng = np.random.default_rng(11)
    chol, modes, out = np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6))
    for trial in range(300):
        a = rng.standard_normal((6, 6))
        lam = a @ a.T + 10.0 ** rng.uniform(-4, 1) * np.eye(6)
        stiffness = 10.0 ** rng.uniform(-1, 4, 6)
        ratio = rng.uniform(0.05, 3.0)
        assert damping_matrix(lam, stiffness, ratio, chol, modes, out) == 0
        error, scale = modal_check(lam, stiffness, ratio, out)
        from scipy.linalg import eigh
        w = eigh(np.diag(stiffness), lam, eigvals_only=True)
        bound = ROUNDOFF_SAFETY * 36 * EPS * np.linalg.cond(lam) * np.sqrt(w.max() / w.min())
        assert error <= bound * scale, (trial, error / scale, bound)
        assert np.array_equal(out, out.T)
    # a zero stiffness: that mode gets no damping (sqrt at 0: sqrt(eps) relative round-off)
    stiffness[2] = 0.0
    assert damping_matrix(lam, stiffness, 0.7, chol, modes, out) == 0
    error, scale = modal_check(lam, stiffness, 0.7, out)
    assert error <= 64 * np.sqrt(EPS) * scale
    # Lambda not positive definite: refused (status 1), the law then keeps diag(damping)
    assert damping_matrix(-lam, stiffness, 0.7, chol, modes, out) == 1


def test_law_with_a_damping_ratio_matches_the_hand_computation(pair):
    """compute() with damping_ratio: tau = J^T (K e + D (twist - J v)) + b + N^T tau_0 with D
    from scipy's generalized eigenvectors (D = Lambda X diag(2 z sqrt(w)) X^T Lambda, the same
    design written independently) and Pinocchio's J, M^-1, b."""
    from scipy.linalg import eigh
    pin, robot = pair.pin, pair.robot
    link = LINKS[pair.key]
    ratio = 0.7
    law = CartesianImpedance(robot, link, K, D, nullspace_stiffness=KN, damping_ratio=ratio)
    rng = np.random.default_rng(8)
    checked = 0
    for k, (q, v, _) in enumerate(pair.states):   # (solo12 floating: its foot moves in 6 dofs)
        J, Minv, b, p, R = pin_quantities(pair, q, v, link)
        S = J @ Minv @ J.T
        p_t, R_t, twist = random_target(law, p, R, rng)
        tau = law.compute(q, v)
        Lam = np.linalg.inv(S)
        w, X = eigh(np.diag(K), Lam)
        designed = Lam @ X @ np.diag(2.0 * ratio * np.sqrt(w)) @ X.T @ Lam
        e = np.concatenate([p_t - p, pin.log3(R_t @ R.T)])
        tau0 = posture_torque(law, q, v)
        NT = np.eye(robot.nv) - J.T @ Lam @ J @ Minv
        expected = J.T @ (K * e + designed @ (twist - J @ v)) + b + NT @ tau0
        rtol = max(RTOL_PIN, ROUNDOFF_SAFETY * 36 * EPS * np.linalg.cond(S)
                   * np.sqrt(w.max() / w.min()) * np.abs(J.T @ designed @ (twist - J @ v)).max()
                   / max(1.0, np.abs(expected).max()))
        assert_close(tau, expected, f"{pair.key} state {k}: tau with damping_ratio", rtol)
        checked += 1
    assert checked == len(pair.states), checked
    with pytest.raises(ValueError, match="damping_ratio must be in"):
        law.set_damping_ratio(-0.1)


def test_a_damping_ratio_settles_what_a_diagonal_damping_leaves_ringing():
    """The sample arm (no joint friction, so the settling is the law's), 1 kHz, each torque one
    step late: from a 10 cm, 0.1 rad step the sample's diagonal damping still rings after 2 s
    (its heavy orientation modes barely damped), damping_ratio 0.7 is within 0.1 mm and 1 mrad
    (measured: diagonal 7.8 mm / 0.11 rad, ratio 0.01 mm / 0.1 mrad)."""
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"), passive_forces=False)
    q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    pose = robot.link_pose(q0, "ee_link")
    target = pose[:3, 3] + [0.1, 0.0, 0.0]
    turned = rodrigues(np.array([0.0, 0.0, 0.1])) @ pose[:3, :3]
    limits = np.asarray(robot.effort_limits)
    final = {}
    for ratio in (0.0, 0.7):
        law = CartesianImpedance(robot, "ee_link", STIFFNESS, DAMPING, nullspace_stiffness=1.0,
                                 damping_ratio=ratio)
        law.hold(q0)
        law.set_target(target, turned)
        q, v = q0.copy(), np.zeros(7)
        late = robot.gravity_forces(q)
        for _ in range(2000):
            tau = law.compute(q, v)
            q, v = robot.step(q, v, np.clip(late, -limits, limits), 1e-3,
                              integrator="semi_implicit_euler")
            late = tau.copy()
        final[ratio] = (np.linalg.norm(law.error[:3]), np.linalg.norm(law.error[3:]))
    assert final[0.7][0] < 1e-4 and final[0.7][1] < 1e-3, final
    assert final[0.0][0] > 1e-3 and final[0.0][1] > 1e-2, final
