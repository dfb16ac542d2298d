"""Frame kinematics and centroidal quantities (robot/frames.py, kernels/frame_kinematics.py,
centroidal.py, minverse.py, operational_space.py) against independent references:

- Pinocchio on example-robot-data robots (fixed: ur5, panda; floating: solo12, talos_reduced),
  every link (welded ones such as tool0, panda_hand, the feet included), the three frames,
  random states: computeFrameJacobian, getFrameVelocity, getFrameClassicalAcceleration,
  centerOfMass, jacobianCenterOfMass, computeCentroidalMap, computeMinverse, to 1e-10 relative
  (the issue's tolerance; both sides are sums of products over the tree, ~n eps apart);
- identities: M^-1 M = I and Lambda against the dense (J M^-1 J^T)^-1, with round-off bounds
  from the test's own condition numbers (conftest.solve_tol's reasoning);
- central finite differences of link_pose and link_velocity along q(t) = integrate(q, v t)
  where no Pinocchio counterpart applies (closed-loop robots' trees; the J-dot-v drift).
"""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from mbd_ros.model import layout as L
from conftest import EPS, ROUNDOFF_SAFETY, assert_close
from oracle import pin_model_from_xml

ROOT = Path(__file__).resolve().parent.parent
RTOL_PIN = 1e-10          # the tolerance against Pinocchio
N_STATES = 4
FRAMES = ("world", "local", "local_world_aligned")

ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
}
# welded (fixed-joint) end-effector frames that must be among the links compared
WELDED = {"ur5": "tool0", "panda": "panda_hand", "solo12": "FL_FOOT",
          "talos_reduced": "left_sole_link"}


class Pair:
    """Our robot and Pinocchio's model of the same URDF, with the v permutation by joint name
    (v_pin[vperm] = v_ours, so J_ours = J_pin[:, vperm])."""

    def __init__(self, pin, erd_dir, key):
        rel, floating = ROBOTS[key]
        path = erd_dir / rel
        xml = path.read_text()
        self.key, self.pin = key, pin
        self.robot = mbd_ros.load(str(path), floating_base=floating, passive_forces=False)
        self.model, _ = pin_model_from_xml(pin, xml, floating)
        self.data = self.model.createData()
        robot, model = self.robot, self.model
        self.qperm = np.zeros(robot.nq, dtype=int)
        self.vperm = np.zeros(robot.nv, dtype=int)
        for name, iq, iv in zip(robot.joint_names, robot.idx_q, robot.idx_v):
            assert model.getJointId(name) < model.njoints, f"{key}: no Pinocchio joint {name!r}"
            joint = model.joints[model.getJointId(name)]
            self.qperm[iq:iq + joint.nq] = np.arange(joint.idx_q, joint.idx_q + joint.nq)
            self.vperm[iv:iv + joint.nv] = np.arange(joint.idx_v, joint.idx_v + joint.nv)
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        self.states = [(robot.random_configuration(rng), rng.standard_normal(robot.nv),
                        rng.standard_normal(robot.nv)) for _ in range(N_STATES)]

    def q_pin(self, q):
        qp = np.zeros(self.model.nq)
        qp[self.qperm] = q
        return qp

    def v_pin(self, v):
        vp = np.zeros(self.model.nv)
        vp[self.vperm] = v
        return vp

    def frame_id(self, link):
        fid = self.model.getFrameId(link, self.pin.FrameType.BODY)
        assert fid < len(self.model.frames), f"{self.key}: no Pinocchio frame {link!r}"
        return fid

    def reference(self, frame):
        return {"world": self.pin.WORLD, "local": self.pin.LOCAL,
                "local_world_aligned": self.pin.LOCAL_WORLD_ALIGNED}[frame]


@pytest.fixture(scope="module", params=list(ROBOTS))
def pair(request, pin, erd_dir):
    return Pair(pin, erd_dir, request.param)


# ==== against Pinocchio ==========================================================================

def test_link_jacobian_velocity_acceleration_vs_pinocchio(pair):
    pin, model, data, robot = pair.pin, pair.model, pair.data, pair.robot
    links = robot.link_names
    assert WELDED[pair.key] in links
    link_int = robot.model.link_int
    welded = [n for i, n in enumerate(links) if link_int[i, L.LINK_FIXED] and link_int[i, L.LINK_BODY] > 0]
    assert welded, f"{pair.key}: no welded link moved by a joint among the compared links"
    for k, (q, v, a) in enumerate(pair.states):
        qp, vp, ap = pair.q_pin(q), pair.v_pin(v), pair.v_pin(a)
        for link in links:
            fid = pair.frame_id(link)
            for frame in FRAMES:
                rf = pair.reference(frame)
                what = f"{pair.key} state {k} {link!r} {frame}"
                J_ref = pin.computeFrameJacobian(model, data, qp, fid, rf)[:, pair.vperm]
                assert_close(robot.link_jacobian(q, link, frame), J_ref,
                             f"{what}: link_jacobian vs computeFrameJacobian", RTOL_PIN)
                pin.forwardKinematics(model, data, qp, vp, ap)
                assert_close(robot.link_velocity(q, v, link, frame),
                             pin.getFrameVelocity(model, data, fid, rf).vector,
                             f"{what}: link_velocity vs getFrameVelocity", RTOL_PIN)
                assert_close(robot.link_acceleration(q, v, a, link, frame),
                             pin.getFrameClassicalAcceleration(model, data, fid, rf).vector,
                             f"{what}: link_acceleration vs getFrameClassicalAcceleration",
                             RTOL_PIN)


def test_velocity_is_jacobian_times_v_and_out_is_filled(pair):
    robot = pair.robot
    link = WELDED[pair.key]
    q, v, a = pair.states[0]
    for frame in FRAMES:
        J = np.empty((6, robot.nv))
        assert robot.link_jacobian(q, link, frame, out=J) is J
        vel = np.empty(6)
        assert robot.link_velocity(q, v, link, frame, out=vel) is vel
        assert_close(vel, J @ v, f"{pair.key} {frame}: link_velocity vs J v")


def test_centroidal_quantities_vs_pinocchio(pair):
    pin, model, data, robot = pair.pin, pair.model, pair.data, pair.robot
    for k, (q, v, _) in enumerate(pair.states):
        qp, vp = pair.q_pin(q), pair.v_pin(v)
        what = f"{pair.key} state {k}"
        assert_close(robot.center_of_mass(q), pin.centerOfMass(model, data, qp),
                     f"{what}: center_of_mass vs centerOfMass", RTOL_PIN)
        assert_close(robot.com_jacobian(q),
                     pin.jacobianCenterOfMass(model, data, qp)[:, pair.vperm],
                     f"{what}: com_jacobian vs jacobianCenterOfMass", RTOL_PIN)
        A_G = robot.centroidal_momentum_matrix(q)
        assert_close(A_G, pin.computeCentroidalMap(model, data, qp)[:, pair.vperm],
                     f"{what}: centroidal_momentum_matrix vs computeCentroidalMap", RTOL_PIN)
        pin.computeCentroidalMomentum(model, data, qp, vp)
        assert_close(A_G @ v, data.hg.vector, f"{what}: A_G v vs computeCentroidalMomentum",
                     RTOL_PIN)


def test_mass_matrix_inverse_vs_pinocchio_and_identity(pair):
    pin, model, data, robot = pair.pin, pair.model, pair.data, pair.robot
    for k, (q, _, _) in enumerate(pair.states):
        what = f"{pair.key} state {k}"
        Minv = robot.mass_matrix_inverse(q)
        ref = pin.computeMinverse(model, data, pair.q_pin(q))
        ref = np.triu(ref) + np.triu(ref, 1).T
        # both are O(n^2) recursions whose results carry ~n eps cond(M) |M^-1| of round-off
        M = robot.mass_matrix(q)
        cond = np.linalg.cond(M)
        bound = ROUNDOFF_SAFETY * 2 * robot.nv * EPS * cond
        assert_close(Minv, ref[np.ix_(pair.vperm, pair.vperm)],
                     f"{what}: mass_matrix_inverse vs computeMinverse",
                     max(RTOL_PIN, bound))
        assert_close(Minv, Minv.T, f"{what}: M^-1 symmetric", 0.0)
        assert_close(Minv @ M, np.eye(robot.nv), f"{what}: M^-1 M = I", bound)


# ==== operational-space inertia ==================================================================

def test_operational_space_inertia_vs_dense_formula(pair):
    robot = pair.robot
    link = WELDED[pair.key]
    for k, (q, _, _) in enumerate(pair.states):
        for frame in FRAMES:
            J = robot.link_jacobian(q, link, frame)
            M = robot.mass_matrix(q)
            G = J @ np.linalg.solve(M, J.T)
            if np.linalg.matrix_rank(G) < 6:
                with pytest.raises(ValueError, match=link):
                    robot.operational_space_inertia(q, link, frame)
                continue
            expected = np.linalg.inv(G)
            # Lambda's relative error: cond(G) times G's, which is ~n eps cond(M)
            rtol = ROUNDOFF_SAFETY * 2 * robot.nv * EPS * np.linalg.cond(M) * np.linalg.cond(G)
            assert_close(robot.operational_space_inertia(q, link, frame) / np.abs(expected).max(),
                         expected / np.abs(expected).max(),
                         f"{pair.key} state {k} {link} {frame}: Lambda vs (J M^-1 J^T)^-1",
                         max(rtol, RTOL_PIN))


def test_operational_space_inertia_singular_and_damped(mbd, erd_dir):
    robot = mbd.load(str(erd_dir / ROBOTS["ur5"][0]), passive_forces=False)
    q = robot.random_configuration(3)
    # one joint above shoulder_link: J M^-1 J^T has rank 1
    with pytest.raises(ValueError, match="shoulder_link.*singular.*damping"):
        robot.operational_space_inertia(q, "shoulder_link")
    damping = 1e-3
    J = robot.link_jacobian(q, "shoulder_link")
    G = J @ np.linalg.solve(robot.mass_matrix(q), J.T) + damping * np.eye(6)
    expected = np.linalg.inv(G)
    rtol = ROUNDOFF_SAFETY * 2 * robot.nv * EPS * np.linalg.cond(robot.mass_matrix(q)) \
        * np.linalg.cond(G)
    assert_close(robot.operational_space_inertia(q, "shoulder_link", damping=damping)
                 / np.abs(expected).max(), expected / np.abs(expected).max(),
                 "ur5 shoulder_link: damped Lambda vs (J M^-1 J^T + d I)^-1", max(rtol, RTOL_PIN))
    for bad in (-1.0, float("nan"), "0.1", [0.1]):
        with pytest.raises(ValueError, match="damping"):
            robot.operational_space_inertia(q, "tool0", damping=bad)


# ==== finite differences (no Pinocchio counterpart: constrained trees, the drift) ================

H = 1e-5
# central differences: truncation h^2 |x'''| / 6 plus round-off ~eps |x| / h; the constant
# bounds the third time derivative of these unit-speed motions of ~1 m links (|v| ~ 1 rad/s)
FD_TOL = 1e3 * (H ** 2 + EPS / H)


def vee_log(R):
    """Axis-angle vector of a small rotation R (its skew part; error O(angle^3))."""
    S = 0.5 * (R - R.T)
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


def fd_twist(robot, q, v, link):
    """Central difference of link_pose along q(t) = integrate(q, v t): [origin velocity;
    angular velocity], root axes (the local_world_aligned twist)."""
    plus = robot.link_pose(robot.integrate(q, v, H), link)
    minus = robot.link_pose(robot.integrate(q, v, -H), link)
    return np.concatenate([(plus[:3, 3] - minus[:3, 3]) / (2 * H),
                           vee_log(plus[:3, :3] @ minus[:3, :3].T) / (2 * H)])


def test_drift_is_time_derivative_of_the_twist(pair):
    """link_acceleration(q, v, 0, 'local_world_aligned') = d/dt (J v) along q(t) =
    integrate(q, v t) (constant v: that curve's acceleration is zero)."""
    robot = pair.robot
    link = WELDED[pair.key]
    for k, (q, v, _) in enumerate(pair.states):
        twist = [robot.link_velocity(robot.integrate(q, v, s * H), v, link) for s in (1, -1)]
        fd = (twist[0] - twist[1]) / (2 * H)
        assert_close(robot.link_acceleration(q, v, np.zeros(robot.nv), link), fd,
                     f"{pair.key} state {k}: drift vs d/dt link_velocity", FD_TOL)
        assert_close(robot.link_velocity(q, v, link), fd_twist(robot, q, v, link),
                     f"{pair.key} state {k}: link_velocity vs d/dt link_pose", FD_TOL)


def closed_loop_robot(name):
    urdf, closures = {"fourbar": ("fourbar.urdf", "fourbar_closures.yaml"),
                      "leg_fourbar": ("leg_fourbar_floating.urdf", "leg_fourbar_closures.yaml")}[name]
    return mbd_ros.load(str(ROOT / "urdf" / urdf), floating_base=name == "leg_fourbar",
                        closures=yaml.safe_load((ROOT / "config" / closures).read_text()))


@pytest.mark.parametrize("name", ["fourbar", "leg_fourbar"])
def test_closed_loop_robot_gives_the_tree_quantities(name):
    """Tree coordinates: J v is the FD of link_pose along integrate(q, v t) for any v (not only
    loop-consistent ones), M^-1 inverts the tree's M, and the centre of mass moves with J_c."""
    robot = closed_loop_robot(name)
    rng = np.random.default_rng(7)
    q = robot.random_configuration(rng)
    v = rng.standard_normal(robot.nv)
    for link in robot.link_names:
        assert_close(robot.link_velocity(q, v, link), fd_twist(robot, q, v, link),
                     f"{name} {link}: link_velocity vs d/dt link_pose", FD_TOL)
        assert_close(robot.link_jacobian(q, link) @ v, robot.link_velocity(q, v, link),
                     f"{name} {link}: J v")
    M = robot.mass_matrix(q)
    assert_close(robot.mass_matrix_inverse(q) @ M, np.eye(robot.nv), f"{name}: M^-1 M = I",
                 ROUNDOFF_SAFETY * 2 * robot.nv * EPS * np.linalg.cond(M))
    fd_com = (robot.center_of_mass(robot.integrate(q, v, H))
              - robot.center_of_mass(robot.integrate(q, v, -H))) / (2 * H)
    assert_close(robot.com_jacobian(q) @ v, fd_com, f"{name}: J_c v vs d/dt com", FD_TOL)


# ==== kinds of robot and bad input ===============================================================

def test_codegen_robot_matches_the_generic_one(erd_dir):
    path = str(erd_dir / ROBOTS["ur5"][0])
    generic = mbd_ros.load(path, passive_forces=False)
    generated = mbd_ros.load(path, passive_forces=False, codegen=True)
    assert generated.tree.kind == "generated"
    q = generic.random_configuration(5)
    v = np.linspace(-1, 1, generic.nv)
    for frame in FRAMES:
        np.testing.assert_array_equal(generated.link_jacobian(q, "tool0", frame),
                                      generic.link_jacobian(q, "tool0", frame))
        np.testing.assert_array_equal(generated.link_acceleration(q, v, v, "tool0", frame),
                                      generic.link_acceleration(q, v, v, "tool0", frame))
    np.testing.assert_array_equal(generated.mass_matrix_inverse(q), generic.mass_matrix_inverse(q))
    np.testing.assert_array_equal(generated.centroidal_momentum_matrix(q),
                                  generic.centroidal_momentum_matrix(q))


def test_bad_arguments_name_what_is_wrong(erd_dir):
    robot = mbd_ros.load(str(erd_dir / ROBOTS["ur5"][0]), passive_forces=False)
    q = robot.neutral()
    v = np.zeros(robot.nv)
    with pytest.raises(ValueError, match="unknown link 'tool1'.*tool0"):
        robot.link_jacobian(q, "tool1")
    with pytest.raises(ValueError, match="link must be a link name"):
        robot.link_jacobian(q, 3)
    with pytest.raises(ValueError, match="frame must be one of"):
        robot.link_jacobian(q, "tool0", "LOCAL")
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        robot.link_jacobian(q[:5], "tool0")
    with pytest.raises(ValueError, match="q contains NaN"):
        robot.center_of_mass(np.full(robot.nq, np.nan))
    with pytest.raises(ValueError, match=r"v must have shape \(6,\)"):
        robot.link_velocity(q, v[:3], "tool0")
    with pytest.raises(ValueError, match="qdd contains NaN"):
        robot.link_acceleration(q, v, np.full(robot.nv, np.inf), "tool0")
    with pytest.raises(ValueError, match="out must be"):
        robot.link_jacobian(q, "tool0", out=np.empty((6, 5)))
    with pytest.raises(ValueError, match="out must be"):
        robot.mass_matrix_inverse(q, out=np.empty((6, 6), dtype=np.float32))
    # lists and integer arrays take the general path, same results
    qr = robot.random_configuration(1)
    assert_close(robot.link_jacobian(list(qr), "tool0"), robot.link_jacobian(qr, "tool0"),
                 "list q", 0.0)
    assert_close(robot.link_velocity(qr, [1, 0, 0, 0, 0, 0], "tool0"),
                 robot.link_jacobian(qr, "tool0")[:, 0], "integer-list v", 0.0)
    # out overlapping q: computed privately, then copied
    buffer = np.zeros(6 * robot.nv)
    buffer[:robot.nq] = qr
    out = buffer.reshape(6, robot.nv)
    expected = robot.link_jacobian(qr, "tool0")
    assert robot.link_jacobian(buffer[:robot.nq], "tool0", out=out) is out
    assert_close(out, expected, "out overlapping q", 0.0)


def test_floating_base_free_joint_columns_act_on_the_body_velocity(mbd, erd_dir):
    """For a floating base, J of the base link in "local" is the identity on the free joint's
    body-frame velocity (the package's convention for v of a free joint)."""
    robot = mbd.load(str(erd_dir / ROBOTS["solo12"][0]), floating_base=True,
                     passive_forces=False)
    q = robot.random_configuration(2)
    J = robot.link_jacobian(q, "base_link", "local")
    iv = robot.idx_v[robot.joint_names.index("root_joint")]
    assert_close(J[:, iv:iv + 6], np.eye(6), "solo12 base_link local Jacobian of the free joint")
    assert_close(np.delete(J, np.s_[iv:iv + 6], axis=1), np.zeros((6, robot.nv - 6)),
                 "solo12 base_link: no other joint moves it", 0.0)


def test_threads_sharing_one_robot_get_their_own_results(erd_dir):
    """Calls from several threads on one Robot (each one kernel call on the shared frame
    workspace, atomic under the GIL) return what the same calls return serially."""
    from concurrent.futures import ThreadPoolExecutor
    robot = mbd_ros.load(str(erd_dir / ROBOTS["panda"][0]), passive_forces=False)
    rng = np.random.default_rng(11)
    states = [(robot.random_configuration(rng), rng.standard_normal(robot.nv)) for _ in range(8)]
    links = ["panda_hand", "panda_link4", "panda_leftfinger", "panda_link8"]

    def work(k):
        q, v = states[k % len(states)]
        link = links[k % len(links)]
        return (robot.link_jacobian(q, link), robot.link_velocity(q, v, link, "local"),
                robot.link_jacobian(q, link, out=np.empty((6, robot.nv))),      # C entries
                robot.link_velocity(q, v, link, "world", out=np.empty(6)),
                robot.centroidal_momentum_matrix(q), robot.mass_matrix_inverse(q),
                robot.operational_space_inertia(q, link, damping=1e-6))

    serial = [work(k) for k in range(64)]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(work, range(64)))
    for k, (a, b) in enumerate(zip(serial, parallel)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"call {k}")


def test_c_level_entries_give_the_same_results_and_errors(erd_dir):
    """center_of_mass, com_jacobian, centroidal_momentum_matrix and mass_matrix_inverse
    (q, out=out) get a C-level entry (mbd_ros/fastcall) at their second fast call: the same
    bits as the numba path, and bad input still raises the documented ValueError."""
    from conftest import require_fastcall
    require_fastcall()
    robot = mbd_ros.load(str(erd_dir / ROBOTS["solo12"][0]), floating_base=True,
                         passive_forces=False)
    q = robot.random_configuration(4)
    nv = robot.nv
    shapes = {"center_of_mass": (3,), "com_jacobian": (3, nv),
              "centroidal_momentum_matrix": (6, nv), "mass_matrix_inverse": (nv, nv)}
    for method, shape in shapes.items():
        expected = getattr(robot, method)(q)          # numba's dispatcher
        out = np.empty(shape)
        for _ in range(3):
            getattr(robot, method)(q, out=out)
        assert type(robot.__dict__.get(method)).__name__ == "KernelCall", method
        out[:] = 0.0
        assert getattr(robot, method)(q, out=out) is out
        np.testing.assert_array_equal(out, expected, err_msg=method)
        bad = q.copy()
        bad[3:7] = [1.0, 1.0, 0.0, 0.0]              # not a unit quaternion
        with pytest.raises(ValueError, match="unit norm"):
            getattr(robot, method)(bad, out=out)
        with pytest.raises(ValueError, match="out must be"):
            getattr(robot, method)(q, out=np.empty((2, 2)))


def test_link_calls_with_out_get_c_level_entries_with_the_same_results_and_errors(erd_dir):
    """link_jacobian / link_velocity / link_acceleration(..., out=out) call a KernelCall per
    (method, link, frame) from their second such call: the same bits as numba's path, and bad
    input still raises the documented ValueError (through the KernelCall's fallback)."""
    from conftest import require_fastcall
    require_fastcall()
    robot = mbd_ros.load(str(erd_dir / ROBOTS["solo12"][0]), floating_base=True,
                         passive_forces=False)
    rng = np.random.default_rng(9)
    q = robot.random_configuration(rng)
    v, a = rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)
    bad_q = q.copy()
    bad_q[3:7] = [1.0, 1.0, 0.0, 0.0]
    for frame in FRAMES:
        calls = {"link_jacobian": (lambda o, qq=q: robot.link_jacobian(qq, "FL_FOOT", frame, o),
                                   (6, robot.nv)),
                 "link_velocity": (lambda o, qq=q: robot.link_velocity(qq, v, "FL_FOOT", frame,
                                                                       o), (6,)),
                 "link_acceleration": (lambda o, qq=q: robot.link_acceleration(
                     qq, v, a, "FL_FOOT", frame, o), (6,))}
        for method, (call, shape) in calls.items():
            expected = call(None)
            out = np.empty(shape)
            for _ in range(3):
                call(out)
            kernel_call = robot._frame_kinematics.link_calls[method, "FL_FOOT", frame]
            fast_before = kernel_call.counts()[0]
            out[:] = 0.0
            assert call(out) is out
            assert kernel_call.counts()[0] == fast_before + 1, f"{method}: not the C entry"
            np.testing.assert_array_equal(out, expected, err_msg=f"{method} {frame}")
            with pytest.raises(ValueError, match="unit norm"):
                call(out, bad_q)
            with pytest.raises(ValueError, match="out must be"):
                call(np.empty((2, 2)))


def chain_urdf(n):
    """A serial chain of n revolute joints about x, y, z in turn (n + 1 links), as XML text."""
    parts = ['<?xml version="1.0"?><robot name="chain">']
    for i in range(n + 1):
        parts.append(f'<link name="l{i}"><inertial><mass value="{1.0 + 0.1 * (i % 3)}"/>'
                     '<origin xyz="0.01 0 0.05"/><inertia ixx="0.01" iyy="0.012" izz="0.008" '
                     'ixy="0.001" ixz="0" iyz="0"/></inertial></link>')
    for i in range(n):
        axis = ("1 0 0", "0 1 0", "0 0 1")[i % 3]
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/><origin xyz="0 0.02 0.1"/><axis xyz="{axis}"/>'
                     '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')
    parts.append("</robot>")
    return "".join(parts)


@pytest.mark.parametrize("links", [10, 30])
def test_mass_matrix_inverse_of_shallow_and_deep_chains_vs_pinocchio(pin, tmp_path, links):
    """A serial chain of `links` joints: mean dof depth (links + 1) / 2, so 10 links take the
    tree factor's path and 30 links Carpentier & Mansard's recursion (kernels/minverse.py's
    RECURSION_FROM_MEAN_DEPTH); both against computeMinverse and M^-1 M = I."""
    from mbd_ros.kernels.minverse import RECURSION_FROM_MEAN_DEPTH
    deep = (links + 1) / 2 > RECURSION_FROM_MEAN_DEPTH
    assert deep == (links == 30), "the chains no longer straddle the threshold"
    xml = chain_urdf(links)
    path = tmp_path / "chain.urdf"
    path.write_text(xml)
    robot = mbd_ros.load(str(path))
    model, _ = pin_model_from_xml(pin, xml, False)
    data = model.createData()
    rng = np.random.default_rng(links)
    for k in range(3):
        q = rng.uniform(-1.0, 1.0, robot.nq)
        Minv = robot.mass_matrix_inverse(q)
        ref = pin.computeMinverse(model, data, q)
        ref = np.triu(ref) + np.triu(ref, 1).T
        M = robot.mass_matrix(q)
        bound = ROUNDOFF_SAFETY * 2 * robot.nv * EPS * np.linalg.cond(M)
        assert_close(Minv, ref, f"chain {links} state {k}: mass_matrix_inverse vs computeMinverse",
                     max(RTOL_PIN, bound))
        assert_close(Minv @ M, np.eye(robot.nv), f"chain {links} state {k}: M^-1 M = I", bound)
