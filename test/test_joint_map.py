"""mbd_ros.joint_map: named joint values of ROS messages <-> q, v, tau (no ROS needed)."""

from __future__ import annotations

import array
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot.joint_map import JointMap, JointMapError, dof_names

URDF = Path(__file__).resolve().parent.parent / "urdf"


@pytest.fixture(scope="module")
def arm():
    return mbd_ros.load(str(URDF / "arm7.urdf"))


@pytest.fixture(scope="module")
def floating():
    return mbd_ros.load(str(URDF / "branching.urdf"), floating_base=True)


def shuffled(names, seed=0):
    perm = np.random.default_rng(seed).permutation(len(names))
    return [names[i] for i in perm], perm


def test_state_in_any_order(arm):
    jm = JointMap(arm)
    assert jm.state_names == arm.joint_names and jm.joints == arm.joint_names
    names, perm = shuffled(jm.state_names)
    q_true = np.linspace(-1, 1, 7)
    v_true = np.linspace(2, 3, 7)
    t_true = np.linspace(-5, 5, 7)
    q, v, tau = np.zeros(7), np.zeros(7), np.zeros(7)
    jm.read_state(names, array.array("d", q_true[perm]), list(v_true[perm]), t_true[perm], q, v, tau,
                  need_effort=True)
    np.testing.assert_array_equal(q, q_true)
    np.testing.assert_array_equal(v, v_true)
    np.testing.assert_array_equal(tau, t_true)
    out = np.empty(7)
    jm.state_positions(q, out)
    np.testing.assert_array_equal(out, q_true)


def test_optional_fields_give_zeros(arm):
    jm = JointMap(arm)
    q, v, tau = np.zeros(7), np.ones(7), np.ones(7)
    jm.read_state(jm.state_names, np.ones(7), [], [], q, v, tau, need_velocity=False)
    np.testing.assert_array_equal(v, 0.0)
    np.testing.assert_array_equal(tau, 0.0)


@pytest.mark.parametrize("case, match", [
    ("unknown", "unknown joint names"),
    ("missing", "missing joints"),
    ("duplicate", "duplicate joint names"),
    ("short position", "position has 6 values for 7"),
    ("long velocity", "velocity has 8 values"),
    ("nan position", "position contains NaN or inf"),
    ("inf velocity", "velocity contains NaN or inf"),
    ("nan effort", "effort contains NaN or inf"),
    ("huge position", r"position\[2\] = 1e\+300: beyond 1e\+09"),
    ("huge velocity", r"velocity\[5\] = -2e\+09: beyond 1e\+09"),
    ("empty velocity", "velocity is empty"),
    ("empty effort", "effort is empty"),
    ("text", "not numbers"),
])
def test_bad_states_are_rejected_without_writing(arm, case, match):
    jm = JointMap(arm)
    names = list(jm.state_names)
    pos, vel, eff = [0.1] * 7, [0.2] * 7, [0.3] * 7
    if case == "unknown":
        names[3] = "elbow_of_someone_else"
    elif case == "missing":
        names, pos, vel, eff = names[:6], pos[:6], vel[:6], eff[:6]
    elif case == "duplicate":
        names[1] = names[0]
    elif case == "short position":
        pos = pos[:6]
    elif case == "long velocity":
        vel = vel + [0.0]
    elif case == "nan position":
        pos[2] = float("nan")
    elif case == "inf velocity":
        vel[2] = float("inf")
    elif case == "nan effort":
        eff[6] = float("nan")
    elif case == "huge position":   # finite, but no joint state (a finite 1e300 overflowed)
        pos[2] = 1e300
    elif case == "huge velocity":
        vel[5] = -2e9
    elif case == "empty velocity":
        vel = []
    elif case == "empty effort":
        eff = []
    elif case == "text":
        pos[0] = "zero"
    q, v, tau = np.full(7, 9.0), np.full(7, 9.0), np.full(7, 9.0)
    with pytest.raises(JointMapError, match=match):
        jm.read_state(names, pos, vel, eff, q, v, tau, need_velocity=True, need_effort=True)
    assert (q == 9.0).all() and (v == 9.0).all() and (tau == 9.0).all()
    if case != "text":   # float64 arrays, as the nodes' reader gives them: the one-call kernel
        with pytest.raises(JointMapError, match=match):
            jm.read_state(names, *(np.array(x, dtype=np.float64) for x in (pos, vel, eff)), q,
                          v, tau, need_velocity=True, need_effort=True)
        assert (q == 9.0).all() and (v == 9.0).all() and (tau == 9.0).all()


def test_ignore_unknown(arm):
    jm = JointMap(arm, ignore_unknown=True)
    names = ["gripper_finger"] + list(jm.state_names)
    q, v = np.zeros(7), np.zeros(7)
    jm.read_state(names, [5.0] + [1.0] * 7, [6.0] + [2.0] * 7, [], q, v)
    assert (q == 1.0).all() and (v == 2.0).all()


def test_commands(arm):
    jm = JointMap(arm, joints=["joint_3", "joint_1"])
    tau = np.full(7, 7.0)
    jm.read_command(array.array("d", [3.0, 1.0]), tau)
    np.testing.assert_array_equal(tau, [1, 0, 3, 0, 0, 0, 0])
    jm.read_named_command(["joint_1", "joint_3"], [10.0, 30.0], tau)
    np.testing.assert_array_equal(tau, [10, 0, 30, 0, 0, 0, 0])
    out = np.empty(2)
    jm.joint_values(np.arange(7.0), out)
    np.testing.assert_array_equal(out, [2.0, 0.0])
    with pytest.raises(JointMapError, match="3 values, expected 2"):
        jm.read_command([1.0, 2.0, 3.0], tau)
    with pytest.raises(JointMapError, match="NaN"):
        jm.read_command([1.0, float("nan")], tau)
    with pytest.raises(JointMapError, match="missing joints"):
        jm.read_named_command(["joint_1"], [1.0], tau)


def test_reference_point_requires_the_commanded_joints(arm):
    jm = JointMap(arm, joints=["joint_1", "joint_2"])
    q, v, a = np.zeros(7), np.ones(7), np.ones(7)
    jm.read_point(["joint_2", "joint_1"], [2.0, 1.0], [], [0.5, 0.25], q, v, a, jm.joints)
    np.testing.assert_array_equal(q[:2], [1, 2])
    np.testing.assert_array_equal(v[:2], 0.0)
    np.testing.assert_array_equal(a[:2], [0.25, 0.5])
    with pytest.raises(JointMapError, match="missing joints"):
        jm.read_point(["joint_2"], [2.0], [], [], q, v, a, jm.joints)


def test_invalid_joints_parameter(arm, floating):
    with pytest.raises(ValueError, match="unknown joint names"):
        JointMap(arm, joints=["joint_1", "wrist"])
    with pytest.raises(ValueError, match="duplicate"):
        JointMap(arm, joints=["joint_1", "joint_1"])
    with pytest.raises(ValueError, match="multi-dof"):
        JointMap(floating, joints=["root_joint"])


def test_multi_dof_joints_are_left_to_the_caller(floating):
    """JointState carries only the 1-dof joints; the free joint's q and v are not touched."""
    jm = JointMap(floating)
    assert "root_joint" not in jm.state_names
    names = dof_names(floating)
    assert names[:6] == [f"root_joint/{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz")]
    assert len(names) == floating.nv
    q = floating.neutral()
    v = np.zeros(floating.nv)
    n = len(jm.state_names)
    jm.read_state(jm.state_names, np.full(n, 0.1), np.full(n, 0.2), [], q, v)
    np.testing.assert_array_equal(q[:7], [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(v[:6], 0.0)
    assert np.count_nonzero(v == 0.2) == n


def test_lookup_is_cached(arm):
    jm = JointMap(arm)
    a = jm.lookup(list(jm.state_names))
    assert jm.lookup(list(jm.state_names)) is a
    assert jm.lookup(list(jm.state_names), required=jm.joints) is not a


def test_cylindrical_and_universal_dofs_by_name():
    """Each dof of a cylindrical / universal joint is a message entry '<joint>/<component>'
    (q and v one entry per dof): scattered into q, v, tau at the right indices, commandable, and
    the plant's drives track a position command on them."""
    from test_joint_types import CYLINDRICAL_CHAIN, UNIVERSAL_CHAIN, _urdf

    from mbd_ros.simulation.plant import Plant
    robot = mbd_ros.load(_urdf([CYLINDRICAL_CHAIN[0], UNIVERSAL_CHAIN[2], UNIVERSAL_CHAIN[1]]))
    jm = JointMap(robot)
    names = ["cyl0/angle", "cyl0/displacement", "uni2/angle1", "uni2/angle2", "elbow"]
    assert jm.state_names == names == dof_names(robot) and jm.joints == names
    order, perm = shuffled(names, 3)
    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    q, v, tau = np.zeros(5), np.zeros(5), np.zeros(5)
    jm.read_state(order, values[perm], 2 * values[perm], 3 * values[perm], q, v, tau)
    np.testing.assert_array_equal(q, values)     # the joints' q order: angle, displacement, ...
    np.testing.assert_array_equal(v, 2 * values)
    np.testing.assert_array_equal(tau, 3 * values)
    with pytest.raises(ValueError, match="cylindrical / universal dofs"):
        JointMap(robot, ["cyl0"])
    plant = Plant(robot, 1e-3, "rk4", limits=False)     # default drives: every named dof
    assert plant.drives.joints == names
    target = np.array([0.3, 0.05, 0.2, -0.1, 0.4])
    plant.drives.command_position(target)
    for _ in range(3000):
        plant.step()
    np.testing.assert_allclose(plant.q, target, atol=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_float64_arrays_take_the_one_call_kernel_with_the_same_results(arm, seed):
    """read_state with float64 arrays (what the nodes' serialized joint_states reader gives)
    runs one numba kernel; with the same values as Python lists it runs the numpy path. Both
    must write the same q, v, tau and raise the same errors, over random messages: extra
    unknown names (ignore_unknown), missing fields, wrong counts, NaN/inf, tau or none."""
    rng = np.random.default_rng(seed)
    ignore = bool(seed % 2)
    jm = JointMap(arm, ignore_unknown=ignore)
    names = list(jm.state_names) + (["unknown_a", "unknown_b"] if ignore else [])
    perm = rng.permutation(len(names))
    names = [names[i] for i in perm]
    n = len(names)

    def field():
        kind = rng.integers(0, 6)
        if kind == 0:
            return np.zeros(0)
        if kind == 1:
            return rng.normal(size=n + rng.choice([-1, 1]))
        x = rng.normal(size=n)
        if kind == 2:
            x[rng.integers(0, n)] = rng.choice([np.nan, np.inf, -np.inf])
        return x
    fields = [field() for _ in range(3)]
    need_velocity, need_effort, with_tau = (bool(b) for b in rng.integers(0, 2, size=3))
    results = []
    for as_arrays in (True, False):
        q, v, tau = np.full(7, 7.0), np.full(7, 8.0), np.full(7, 9.0)
        values = [f.copy() if as_arrays else f.tolist() for f in fields]
        try:
            jm.read_state(names, *values, q, v, tau if with_tau else None,
                          need_velocity=need_velocity, need_effort=need_effort, required=())
            results.append(("ok", q, v, tau))
        except JointMapError as exc:
            results.append((str(exc), q, v, tau))
    (msg_a, *arrays_a), (msg_b, *arrays_b) = results
    assert msg_a == msg_b
    for a, b in zip(arrays_a, arrays_b):
        np.testing.assert_array_equal(a, b)
