"""Identification: Robot.inertial_parameters(), regressor(q, v, qdd) and with_inertial_parameters(p).

References:
- Pinocchio on example-robot-data robots (ur5, panda: fixed base; solo12: floating base), bodies
  matched by name (our body = the link its movable joint moves, Pinocchio's joint = the parent
  joint of that link's BODY frame): model.inertias[j].toDynamicParameters() for the parameters,
  pin.computeJointTorqueRegressor for the regressor, both at 1e-10 relative (exact up to
  round-off: sums of products over the tree, conftest's argument for RTOL with 10x margin);
- the identity regressor @ parameters == inverse_dynamics of the robot loaded with
  passive_forces=False, within conftest.roundoff_tol of its terms;
- a Pinocchio model whose inertias were changed the same way (1.5x the masses, centres of mass
  and rotational inertias about them kept) against our robot rebuilt with those parameters.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import EPS, assert_close, import_oracle, roundoff_tol

pin = import_oracle("pinocchio")

REPO = Path(__file__).resolve().parent.parent
PIN_RTOL = 1e-10   # the tolerance against Pinocchio (relative to max(1, max|expected|))
ROBOTS = {   # name: (path in example-robot-data, floating base)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
}
N_STATES = 4


class Pair:
    """Our robot (passive_forces=False) and Pinocchio's model of the same URDF text, with the
    q/v maps and the column map of the regressor (our body order -> Pinocchio's joints)."""

    def __init__(self, erd_dir, name, **load_options):
        rel, floating = ROBOTS[name]
        xml = (erd_dir / rel).read_text().replace('type="continuous"', 'type="revolute"')
        self.xml, self.floating = xml, floating
        self.robot = mbd_ros.load(xml, floating_base=floating, passive_forces=False,
                                  **load_options)
        self.model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating
                      else pin.buildModelFromXML(xml))
        self.data = self.model.createData()
        robot, model = self.robot, self.model
        self.q_map = np.zeros(model.nq, dtype=int)   # q_pin = q[q_map]
        self.v_map = np.zeros(model.nv, dtype=int)   # v_pin = v[v_map]
        for joint, iq, iv in zip(robot.joint_names, robot.idx_q, robot.idx_v):
            j = model.joints[model.getJointId(joint)]
            self.q_map[j.idx_q:j.idx_q + j.nq] = np.arange(iq, iq + j.nq)
            self.v_map[j.idx_v:j.idx_v + j.nv] = np.arange(iv, iv + j.nv)
        self.v_inv = np.argsort(self.v_map)
        # body b of ours is moved by Pinocchio's joint `joint_of[b]`
        self.joint_of = [model.frames[model.getFrameId(b, pin.FrameType.BODY)].parentJoint
                         for b in robot.body_names]
        assert sorted(self.joint_of) == list(range(1, model.njoints)), self.joint_of
        self.columns = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in self.joint_of])

    def pin_parameters(self, model=None):
        model = self.model if model is None else model
        return np.concatenate([model.inertias[j].toDynamicParameters() for j in self.joint_of])

    def state(self, rng):
        robot = self.robot
        return (robot.random_configuration(rng), rng.standard_normal(robot.nv),
                rng.standard_normal(robot.nv) * 3.0)

    def pin_regressor(self, q, v, qdd):
        Y = pin.computeJointTorqueRegressor(self.model, self.data, q[self.q_map], v[self.v_map],
                                            qdd[self.v_map])
        return np.asarray(Y)[self.v_inv][:, self.columns]


@pytest.fixture(scope="module", params=list(ROBOTS))
def pair(request, erd_dir):
    return Pair(erd_dir, request.param)


def test_body_names_are_the_moving_bodies(pair):
    robot, model = pair.robot, pair.model
    assert len(robot.body_names) == model.njoints - 1 == robot.model.n_bodies
    # each body is named after the child link of its movable joint: the Pinocchio joint
    # moving that link is our joint of that body (one body per joint here, in joint order)
    assert [model.names[j] for j in pair.joint_of] == robot.joint_names
    assert robot.inertial_parameters().shape == (10 * len(robot.body_names),)


def test_inertial_parameters_match_pinocchio(pair):
    assert_close(pair.robot.inertial_parameters(), pair.pin_parameters(),
                 "inertial parameters vs Inertia.toDynamicParameters", rtol=PIN_RTOL)


def test_regressor_matches_pinocchio(pair):
    rng = np.random.default_rng(1)
    robot = pair.robot
    for k in range(N_STATES):
        q, v, qdd = pair.state(rng)
        assert_close(robot.regressor(q, v, qdd), pair.pin_regressor(q, v, qdd),
                     f"regressor vs computeJointTorqueRegressor, state {k}", rtol=PIN_RTOL)


def test_regressor_times_parameters_is_inverse_dynamics(pair):
    rng = np.random.default_rng(2)
    robot = pair.robot
    p = robot.inertial_parameters()
    for k in range(N_STATES):
        q, v, qdd = pair.state(rng)
        Y = robot.regressor(q, v, qdd)
        tau = robot.inverse_dynamics(q, v, qdd)
        error = np.abs(Y @ p - tau).max()
        assert error <= roundoff_tol(robot.nv, (Y, p), tau), (k, error)
    # gravity alone: Y(q, 0, 0) p = g(q)
    assert np.abs(robot.regressor(q, 0 * v, 0 * v) @ p - robot.gravity_forces(q)).max() <= \
        roundoff_tol(robot.nv, (robot.regressor(q, 0 * v, 0 * v), p), robot.gravity_forces(q))


def test_regressor_out_is_written_in_place(pair):
    rng = np.random.default_rng(3)
    robot = pair.robot
    q, v, qdd = pair.state(rng)
    expected = robot.regressor(q, v, qdd)
    out = np.full((robot.nv, 10 * len(robot.body_names)), np.nan)
    for _ in range(2):   # the first call and the fast path
        result = robot.regressor(q, v, qdd, out=out)
        assert result is out
        np.testing.assert_array_equal(out, expected)
    # lists convert; an out of the wrong shape is named
    np.testing.assert_array_equal(robot.regressor(list(q), list(v), list(qdd)), expected)
    with pytest.raises(ValueError, match="out must be"):
        robot.regressor(q, v, qdd, out=np.zeros((robot.nv, 3)))


def test_scaled_masses_match_a_pinocchio_model_with_the_same_change(pair):
    """1.5x every body's mass, its centre of mass and rotational inertia about it kept: our
    robot rebuilt from Pinocchio's changed parameters has Pinocchio's dynamics."""
    robot = pair.robot
    changed = pin.Model(pair.model)
    for j in range(1, changed.njoints):
        inertia = changed.inertias[j]
        changed.inertias[j] = pin.Inertia(1.5 * inertia.mass, inertia.lever, inertia.inertia)
    data = changed.createData()
    p = pair.pin_parameters(changed)
    heavier = robot.with_inertial_parameters(p)
    assert_close(heavier.inertial_parameters(), p, "parameters out == parameters in",
                 rtol=PIN_RTOL)
    moving = robot.inertial_parameters()[::10].sum()   # a fixed base's links do not move
    assert heavier.total_mass == pytest.approx(robot.total_mass + 0.5 * moving, rel=1e-12)
    rng = np.random.default_rng(4)
    for k in range(N_STATES):
        q, v, qdd = pair.state(rng)
        qp, vp, ap = q[pair.q_map], v[pair.v_map], qdd[pair.v_map]
        assert_close(heavier.inverse_dynamics(q, v, qdd),
                     np.asarray(pin.rnea(changed, data, qp, vp, ap))[pair.v_inv],
                     f"ID of the heavier robot vs rnea, state {k}", rtol=PIN_RTOL)
        M = np.asarray(pin.crba(changed, data, qp))
        M = np.triu(M) + np.triu(M, 1).T
        assert_close(heavier.mass_matrix(q), M[np.ix_(pair.v_inv, pair.v_inv)],
                     f"M of the heavier robot vs crba, state {k}", rtol=PIN_RTOL)
        tau = heavier.inverse_dynamics(q, v, qdd)
        assert_close(heavier.forward_dynamics(q, v, tau),
                     np.asarray(pin.aba(changed, data, qp, vp, tau[pair.v_map]))[pair.v_inv],
                     f"FD of the heavier robot vs aba, state {k}")
        Y = pin.computeJointTorqueRegressor(changed, data, qp, vp, ap)
        assert_close(heavier.regressor(q, v, qdd),
                     np.asarray(Y)[pair.v_inv][:, pair.columns],
                     "the regressor does not depend on the parameters", rtol=PIN_RTOL)


def test_round_trip_and_the_original_is_unchanged(pair):
    robot = pair.robot
    p = robot.inertial_parameters()
    rng = np.random.default_rng(5)
    q, v, qdd = pair.state(rng)
    tau = robot.inverse_dynamics(q, v, qdd)
    same = robot.with_inertial_parameters(p)
    assert same is not robot
    np.testing.assert_array_equal(same.inertial_parameters(), p)
    # the bodies' 6x6 inertias (rebuilt symmetric from the ten numbers: the URDF's differ from
    # symmetric by round-off), masses and centres of mass agree to a few ulps, and so do the
    # dynamics (n eps relative)
    assert_close(same.model.body_float, robot.model.body_float, "model arrays", rtol=4 * EPS)
    assert_close(same.inverse_dynamics(q, v, qdd), tau, "ID with the same parameters",
                 rtol=4 * robot.nv * EPS)
    scaled = robot.with_inertial_parameters(2.0 * p)   # a uniformly denser robot: tau doubles
    assert_close(scaled.inverse_dynamics(q, v, qdd), 2.0 * tau, "ID with 2x the parameters")
    np.testing.assert_array_equal(robot.inertial_parameters(), p)
    np.testing.assert_array_equal(robot.inverse_dynamics(q, v, qdd), tau)


# ---- errors ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ur5(erd_dir):
    return Pair(erd_dir, "ur5").robot


def _body_slice(robot, body):
    b = robot.body_names.index(body)
    return slice(10 * b, 10 * b + 10)


def test_negative_mass_names_the_body(ur5):
    p = ur5.inertial_parameters()
    p[_body_slice(ur5, "forearm_link")][0] = -1.0
    with pytest.raises(ValueError, match="body 'forearm_link'.*negative mass"):
        ur5.with_inertial_parameters(p)
    with pytest.warns(UserWarning, match="forearm_link"):
        robot = ur5.with_inertial_parameters(p, strict_inertia=False)
    assert robot.inertial_parameters()[_body_slice(ur5, "forearm_link")][0] == -1.0


def test_non_physical_inertia_names_the_body(ur5):
    p = ur5.inertial_parameters()
    block = p[_body_slice(ur5, "wrist_2_link")]
    m = block[0]
    c = block[1:4] / m
    # about the centre of mass: principal moments (1, 1, 3) break I1 + I2 >= I3
    inertia_c = np.diag([1.0, 1.0, 3.0])
    skew = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    inertia_o = inertia_c - m * skew @ skew
    block[4:] = [inertia_o[0, 0], inertia_o[0, 1], inertia_o[1, 1], inertia_o[0, 2],
                 inertia_o[1, 2], inertia_o[2, 2]]
    with pytest.raises(ValueError, match="body 'wrist_2_link'.*triangle inequality"):
        ur5.with_inertial_parameters(p)
    block[4:] = ur5.inertial_parameters()[_body_slice(ur5, "wrist_2_link")][4:]
    block[4] = -1.0   # I_xx about the origin < 0: not positive semi-definite about the com
    with pytest.raises(ValueError, match="body 'wrist_2_link'.*positive semi-definite"):
        ur5.with_inertial_parameters(p)
    p = ur5.inertial_parameters()
    p[_body_slice(ur5, "wrist_1_link")][0] = 0.0   # a first moment without mass
    with pytest.raises(ValueError, match="body 'wrist_1_link'.*zero mass"):
        ur5.with_inertial_parameters(p)


def test_wrong_size_or_values_name_the_argument(ur5):
    p = ur5.inertial_parameters()
    with pytest.raises(ValueError, match=r"parameters must have shape \(60,\)"):
        ur5.with_inertial_parameters(p[:-1])
    with pytest.raises(ValueError, match="parameters"):
        ur5.with_inertial_parameters(p.reshape(6, 10))
    bad = p.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="parameters contains NaN"):
        ur5.with_inertial_parameters(bad)
    q, v = ur5.neutral(), np.zeros(ur5.nv)
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        ur5.regressor(q[:-1], v, v)
    with pytest.raises(ValueError, match=r"qdd must have shape \(6,\)"):
        ur5.regressor(q, v, v[:-1])
    with pytest.raises(ValueError, match="v contains NaN"):
        ur5.regressor(q, v + np.nan, v)


# ---- other kinds of robots -------------------------------------------------------------------

def _tree_inverse_dynamics(robot, q, v, qdd):
    """M qdd + b of the open tree (robot loaded with passive_forces=False, no force elements)."""
    return robot.mass_matrix(q) @ qdd + robot.bias_forces(q, v)


def _same_parts(robot, other):
    assert other.closure_names == robot.closure_names
    assert other.n_constraints == robot.n_constraints
    assert other.mimic_joints == robot.mimic_joints
    assert other.force_element_names == robot.force_element_names
    assert other.tree.kind == robot.tree.kind


def test_closed_loop_robot_gives_the_tree_regressor():
    robot = mbd_ros.load(str(REPO / "urdf" / "fourbar.urdf"),
                         closures=str(REPO / "config" / "fourbar_closures.yaml"),
                         passive_forces=False)
    rng = np.random.default_rng(6)
    p = robot.inertial_parameters()
    q = robot.assemble(robot.random_configuration(rng))
    v = robot.project_velocity(q, rng.standard_normal(robot.nv))
    qdd = rng.standard_normal(robot.nv)
    Y = robot.regressor(q, v, qdd)
    tau_tree = _tree_inverse_dynamics(robot, q, v, qdd)
    assert np.abs(Y @ p - tau_tree).max() <= roundoff_tol(robot.nv, (Y, p), tau_tree)
    same = robot.with_inertial_parameters(p)
    _same_parts(robot, same)
    tau = rng.standard_normal(robot.nv)
    np.testing.assert_array_equal(same.forward_dynamics(q, v, tau),
                                  robot.forward_dynamics(q, v, tau))


def test_loops_and_force_elements_are_kept():
    wishbone = str(REPO / "config" / "double_wishbone.yaml")
    robot = mbd_ros.load(str(REPO / "urdf" / "double_wishbone.urdf"), closures=wishbone,
                         forces=wishbone)
    calls = []
    robot.add_force(lambda t, q, v: calls.append(t) or np.zeros(robot.nv))
    same = robot.with_inertial_parameters(robot.inertial_parameters())
    _same_parts(robot, same)
    q = robot.assemble(robot.neutral())
    v = np.zeros(robot.nv)
    tau = np.zeros(robot.nv)
    np.testing.assert_array_equal(same.forward_dynamics(q, v, tau),
                                  robot.forward_dynamics(q, v, tau))
    assert len(calls) == 2   # the callback came along
    heavier = robot.with_inertial_parameters(1.5 * robot.inertial_parameters())
    assert heavier.force_element_names == ["strut"]
    assert not np.allclose(heavier.forward_dynamics(q, v, tau), robot.forward_dynamics(q, v, tau))


def test_mimic_robot_gives_the_tree_regressor(erd_dir):
    pair = Pair(erd_dir, "panda", mimic=True)
    robot = pair.robot
    assert robot.mimic_joints
    rng = np.random.default_rng(7)
    q, v, qdd = pair.state(rng)
    q, v = robot.apply_mimic(q, v)
    robot.couple_in_place(qdd=qdd)
    assert_close(robot.regressor(q, v, qdd), pair.pin_regressor(q, v, qdd),
                 "mimic robot: the tree's regressor", rtol=PIN_RTOL)
    p = robot.inertial_parameters()
    T = robot.mimic_coupling
    tau = robot.inverse_dynamics(q, v, qdd)   # drive forces of the independent joints
    assert_close(T.T @ robot.regressor(q, v, qdd) @ p, tau[robot.mimic_independent],
                 "T^T Y p: the independent joints' forces")
    same = robot.with_inertial_parameters(p)
    _same_parts(robot, same)
    np.testing.assert_array_equal(same.inverse_dynamics(q, v, qdd),
                                  robot.inverse_dynamics(q, v, qdd))


def test_codegen_robot_uses_the_generic_kernel_and_rebuilds_generated():
    path = str(REPO / "urdf" / "arm7.urdf")
    generic = mbd_ros.load(path, passive_forces=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a machine without a C compiler falls back, warned
        generated = mbd_ros.load(path, passive_forces=False, codegen=True)
    rng = np.random.default_rng(8)
    q, v, qdd = (generic.random_configuration(rng), rng.standard_normal(generic.nv),
                 rng.standard_normal(generic.nv))
    np.testing.assert_array_equal(generated.regressor(q, v, qdd), generic.regressor(q, v, qdd))
    p = 1.5 * generic.inertial_parameters()
    heavier = generated.with_inertial_parameters(p)
    _same_parts(generated, heavier)
    tau = heavier.inverse_dynamics(q, v, qdd)   # the generated kernels of the new model
    assert_close(tau, generic.with_inertial_parameters(p).inverse_dynamics(q, v, qdd),
                 "codegen robot with new parameters vs the generic one")
    assert_close(tau, 1.5 * generic.inverse_dynamics(q, v, qdd), "1.5x the parameters")


def test_flexible_robot_raises_naming_the_method():
    robot = mbd_ros.load(str(REPO / "urdf" / "flexible_arm.urdf"),
                         flexible=str(REPO / "config" / "flexible_arm.yaml"))
    q, v = robot.neutral(), np.zeros(robot.nv)
    for method, call in (("inertial_parameters", robot.inertial_parameters),
                         ("regressor", lambda: robot.regressor(q, v, v)),
                         ("with_inertial_parameters",
                          lambda: robot.with_inertial_parameters(np.zeros(10)))):
        with pytest.raises(ValueError, match=f"^{method}: not available for a robot with "
                                             "flexible links"):
            call()


# ---- every joint type, aliasing, threads, the documented example ------------------------------

EXTENSION_JOINTS_URDF = """<robot name="joints"><link name="base"><inertial><mass value="2.0"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="uni" type="universal"><parent link="base"/><child link="l0"/>
    <origin xyz="0 0.1 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="0 0.6 0.8"/><axis2 xyz="1 0 0"/></joint>
  <link name="l0"><inertial><origin xyz="0.05 -0.02 0.21"/><mass value="1.3"/>
    <inertia ixx="0.031" iyy="0.027" izz="0.012" ixy="0.002" ixz="-0.001" iyz="0.0015"/></inertial></link>
  <joint name="screw" type="helical"><parent link="l0"/><child link="l1"/>
    <origin xyz="0.3 0 0.1" rpy="0 0.4 0"/><axis xyz="0.48 0 0.64" pitch="-0.12"/></joint>
  <link name="l1"><inertial><origin xyz="0.12 0.03 -0.04"/><mass value="0.9"/>
    <inertia ixx="0.011" iyy="0.019" izz="0.016" ixy="-0.001" ixz="0.0008" iyz="0"/></inertial></link>
  <joint name="cyl" type="cylindrical"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.25 0" rpy="-0.5 0.1 0.7"/><axis xyz="1 0 0"/></joint>
  <link name="l2"><inertial><origin xyz="-0.03 0.08 0.05"/><mass value="0.7"/>
    <inertia ixx="0.008" iyy="0.006" izz="0.009" ixy="0.0005" ixz="0" iyz="-0.0007"/></inertial></link>
  <joint name="tip" type="fixed"><parent link="l2"/><child link="l3"/><origin xyz="0.1 0 0.2"/></joint>
  <link name="l3"><inertial><origin xyz="0.02 0.01 0.1"/><mass value="0.5"/>
    <inertia ixx="0.004" iyy="0.005" izz="0.003" ixy="0" ixz="0.0002" iyz="0.0003"/></inertial></link>
</robot>"""


def _random_robots():
    from random_trees import random_tree_xml
    for seed in range(6):   # revolute, prismatic, fixed, spherical, planar, free mid-tree
        with warnings.catch_warnings():
            # some floating random trees have a massless root link: load warns that forward
            # dynamics will refuse them (irrelevant to the regressor and the inverse dynamics)
            warnings.filterwarnings("ignore", "<urdf text>: joint 'root_joint' moves no mass")
            robot = mbd_ros.load(random_tree_xml(seed), floating_base=seed % 2 == 1,
                                 passive_forces=False)
        yield f"random tree {seed}", robot
    yield "universal, helical, cylindrical", mbd_ros.load(EXTENSION_JOINTS_URDF,
                                                          floating_base=True,
                                                          passive_forces=False)


def test_every_joint_type_regressor_times_parameters_is_inverse_dynamics():
    """Y p = ID (our RNEA, checked against Pinocchio for these joint types in test_pinocchio.py
    and test_joint_types.py) on random trees and on the extension joints."""
    rng = np.random.default_rng(9)
    for what, robot in _random_robots():
        p = robot.inertial_parameters()
        for _ in range(3):
            q = robot.random_configuration(rng)
            v = rng.standard_normal(robot.nv)
            qdd = rng.standard_normal(robot.nv)
            Y = robot.regressor(q, v, qdd)
            tau = robot.inverse_dynamics(q, v, qdd)
            assert np.abs(Y @ p - tau).max() <= roundoff_tol(robot.nv, (Y, p), tau), what
        with warnings.catch_warnings():   # the same massless-root warning as at load
            warnings.filterwarnings("ignore", "<urdf text>: joint 'root_joint' moves no mass")
            same = robot.with_inertial_parameters(p)
        np.testing.assert_array_equal(same.inertial_parameters(), p)
    names = robot.body_names
    assert "uni/cross" in names and "l3" not in names   # the cross is a body; l3 is welded
    cross = names.index("uni/cross")
    np.testing.assert_array_equal(p[10 * cross:10 * cross + 10], 0.0)


def test_out_sharing_memory_with_an_input_is_computed_privately(ur5):
    rng = np.random.default_rng(10)
    q, v, qdd = ur5.random_configuration(rng), rng.standard_normal(6), rng.standard_normal(6)
    expected = ur5.regressor(q, v, qdd)
    out = np.zeros((6, 60))
    view = out.reshape(-1)[:6]   # q lives in out's first row
    view[:] = q
    result = ur5.regressor(view, v, qdd, out=out)
    assert result is out
    np.testing.assert_array_equal(out, expected)


def test_threads_share_one_robot(ur5):
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(11)
    states = [(ur5.random_configuration(rng), rng.standard_normal(6), rng.standard_normal(6))
              for _ in range(40)]
    expected = [ur5.regressor(*s).copy() for s in states]

    def run(k):
        out = np.empty((6, 60))
        for _ in range(50):
            ur5.regressor(*states[k], out=out)
            if not np.array_equal(out, expected[k]):
                return k
        return None

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(run, range(len(states)))) == [None] * len(states)


def test_the_documented_example_runs(monkeypatch, capsys):
    text = (REPO / "docs" / "identification.md").read_text()
    code = text.split("## Example: identification by least squares")[1].split("```python")[1] \
        .split("```")[0]
    monkeypatch.chdir(REPO)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the estimate's non-physical bodies are warned about
        exec(compile(code, "docs/identification.md", "exec"), {})
    printed = capsys.readouterr().out
    residual = float(printed.split("torque residual (rms):")[1].split()[0])
    error = float(printed.split("prediction error:")[1].split()[0])
    assert residual < 0.02 and error < 0.05, printed   # the noise is 0.01 N m


def test_the_c_level_entry_gives_the_same_results_and_errors(erd_dir):
    from conftest import require_fastcall
    require_fastcall()
    robot = Pair(erd_dir, "ur5").robot   # a robot of its own: the entry is installed on it
    rng = np.random.default_rng(12)
    states = [(robot.random_configuration(rng), rng.standard_normal(6), rng.standard_normal(6))
              for _ in range(3)]
    expected = [robot.regressor(*s) for s in states]   # numba's dispatcher
    out = np.empty((6, 60))
    for s, y in zip(states, expected):
        assert robot.regressor(*s, out=out) is out
        np.testing.assert_array_equal(out, y)
    assert type(robot.__dict__["regressor"]).__name__ == "KernelCall"
    fast_before = robot.regressor.counts()[0]
    robot.regressor(*states[0], out=out)
    assert robot.regressor.counts()[0] == fast_before + 1   # that call took the C entry
    np.testing.assert_array_equal(out, expected[0])
    q, v, qdd = states[0]
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        robot.regressor(q[:5], v, qdd, out=out)
    with pytest.raises(ValueError, match="qdd contains NaN"):
        robot.regressor(q, v, qdd * np.nan, out=out)
    with pytest.raises(ValueError, match="out must be"):
        robot.regressor(q, v, qdd, out=np.empty((60, 6)))
    np.testing.assert_array_equal(robot.regressor(q, v, qdd), expected[0])   # allocating form
    with pytest.raises(ValueError, match=r"v must have shape \(6,\)"):           # through it too
        robot.regressor(q, v[:5], qdd)
