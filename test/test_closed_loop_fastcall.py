"""The C-level entry of a closed-loop Robot's forward_dynamics (mbd_ros/fastcall/entries.py).

After the second fast call, robot.forward_dynamics(q, v, tau, out=out) of a closed-loop robot is
a thread-affine KernelCall on the robot's own lock-free workspaces. Checked here:
- bit-identical accelerations, multipliers and rank to the Python method (the same kernel on the
  locked workspace) for every sample mechanism and every cut type, redundant loops included
  (minimum-norm multipliers), and agreement with pin.constraintDynamics (an independent oracle);
- every other form of call (list input, no out=, wrong lengths, NaN, aliasing, f_ext, another
  thread, open loops) takes the Python method: the same results, errors and warnings as before;
- the Baumgarte gains set after installation are honoured;
- attaching force callbacks drops the entry.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from mbd_ros import fastcall
from mbd_ros import Robot
from mbd_ros.robot.constraints import LoopResidualWarning

from conftest import assert_close, import_oracle, require_fastcall
from loop_oracle import LoopReference, pin_constraint_dynamics
from test_closed_loops import PIN_CASES, SAMPLES, case, cut_case_ids, loop_consistent_state

pinocchio = import_oracle("pinocchio")

CASES = list(SAMPLES) + cut_case_ids() + ["welded_4r"]


@pytest.fixture(scope="module", autouse=True)
def extension():
    require_fastcall()


def python_fd(robot, q, v, tau):
    """(qdd, multipliers, rank) of the Python method (what runs without the KernelCall)."""
    qdd = Robot.forward_dynamics(robot, q, v, tau, out=np.empty(robot.nv)).copy()
    return qdd, robot.multipliers(), robot.last_rank


def installed_robot(name):
    """A fresh robot of case `name` with its forward_dynamics KernelCall installed."""
    robot, xml, closures, q0, floating = case(name, pinocchio)
    assert "forward_dynamics" in robot.compile_c_calls()
    assert fastcall.installed(robot, "forward_dynamics")
    return robot, xml, closures, q0, floating


def fast_call(robot, q, v, tau):
    """robot.forward_dynamics(q, v, tau, out=out) asserting that it took the C path."""
    before = robot.forward_dynamics.counts()
    qdd = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
    after = robot.forward_dynamics.counts()
    assert after == (before[0] + 1, before[1]), f"not the C path: counts {before} -> {after}"
    return qdd


@pytest.mark.parametrize("name", CASES)
def test_c_entry_is_bit_identical_to_the_python_method(name):
    robot, _, _, q0, _ = installed_robot(name)
    for seed in (1, 2, 3):
        q, v, rng = loop_consistent_state(robot, q0, seed)
        tau = rng.uniform(-1.0, 1.0, robot.nv)
        qdd = fast_call(robot, q, v, tau)
        lam, rank = robot.multipliers(), robot.last_rank
        expected, lam_expected, rank_expected = python_fd(robot, q, v, tau)
        assert np.array_equal(qdd, expected), f"{name} seed {seed}: {qdd - expected}"
        assert np.array_equal(lam, lam_expected), f"{name} seed {seed}: multipliers"
        assert rank == rank_expected
        # the physics: M qdd + b = tau + G_l^T lambda, G_l qdd + gamma = 0 (exact identities)
        _, G, _ = robot.loop_state(q, v)
        M = robot.mass_matrix(q)
        b = robot.bias_forces(q, v) + (robot.damping_forces(v) if robot.model.passive_forces
                                       else 0.0)
        assert_close(M @ qdd + b, tau + G.T @ lam, f"{name} seed {seed}: M qdd + b vs tau + G^T lambda")
        assert_close(G @ qdd + robot._acceleration_bias(q, v), np.zeros(len(lam)),
                     f"{name} seed {seed}: G_l qdd + gamma")


def test_redundant_four_bar_takes_the_minimum_norm_multipliers():
    """The planar four-bar closed by a revolute cut in 3-D: rank 2 of 5 rows. The C path returns
    the same accelerations and the minimum-norm multipliers (lambda = G^+ (M qdd + b - tau) with
    G^T lambda the loop force, and lambda orthogonal to the null space of G^T)."""
    robot, _, _, q0, _ = installed_robot("fourbar")
    q, v, rng = loop_consistent_state(robot, q0, 5)
    tau = rng.uniform(-1.0, 1.0, robot.nv)
    qdd = fast_call(robot, q, v, tau)
    lam = robot.multipliers()
    assert robot.last_rank == 2 and robot.n_constraints == 5
    _, G, _ = robot.loop_state(q, v)
    loop_force = robot.mass_matrix(q) @ qdd + robot.bias_forces(q, v) + robot.damping_forces(v) - tau
    minimum_norm = np.linalg.lstsq(G.T, loop_force, rcond=1e-9)[0]
    assert_close(lam, minimum_norm, "minimum-norm multipliers of the C path")


@pytest.mark.parametrize("name", PIN_CASES)
def test_c_entry_agrees_with_pinocchio_constraint_dynamics(name):
    robot, xml, closures, q0, floating = installed_robot(name)
    ref = LoopReference(pinocchio, xml, closures, floating)
    kinds = {"spherical": pinocchio.ContactType.CONTACT_3D,
             "fixed": pinocchio.ContactType.CONTACT_6D}
    for seed in (31, 32):
        q, v, rng = loop_consistent_state(robot, q0, seed)
        tau = rng.uniform(-1.0, 1.0, robot.nv)
        qdd = fast_call(robot, q, v, tau)
        qdd_pin, *_ = pin_constraint_dynamics(ref, q, v, tau, kinds[ref.cuts[0]["type"]])
        assert_close(qdd, qdd_pin, f"{name} seed {seed}: C entry vs pin.constraintDynamics")


def test_other_forms_take_the_python_method_with_the_same_results_and_errors():
    robot, _, _, q0, _ = installed_robot("spatial_rssr")
    q, v, rng = loop_consistent_state(robot, q0, 7)
    tau = rng.uniform(-1.0, 1.0, robot.nv)
    expected = python_fd(robot, q, v, tau)[0]
    call = robot.forward_dynamics
    fast, fallback = call.counts()
    assert np.array_equal(robot.forward_dynamics(list(q), list(v), list(tau)), expected)
    assert np.array_equal(robot.forward_dynamics(q, v, tau), expected)               # no out=
    out = np.empty(robot.nv)
    assert robot.forward_dynamics(q, v, tau, out=out) is out and np.array_equal(out, expected)
    aliased = tau.copy()                                        # out is tau: computed privately
    assert np.array_equal(robot.forward_dynamics(q, v, aliased, out=aliased), expected)
    assert np.array_equal(robot.forward_dynamics(q, v, tau, f_ext=None, out=np.empty(robot.nv)),
                          expected)
    with pytest.raises(ValueError, match=r"q must have shape"):
        robot.forward_dynamics(q[:-1], v, tau, out=np.empty(robot.nv))
    with pytest.raises(ValueError, match=r"tau"):
        robot.forward_dynamics(q, v, np.append(tau, 0.0), out=np.empty(robot.nv))
    with pytest.raises(ValueError, match=r"v contains NaN or inf"):
        robot.forward_dynamics(q, np.full(robot.nv, np.nan), tau, out=np.empty(robot.nv))
    with pytest.raises(ValueError, match=r"out"):
        robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv + 1))
    with pytest.raises(ValueError, match=r"not finite"):
        robot.forward_dynamics(q, v * 1e200, tau, out=np.empty(robot.nv))
    # the one C call above (out=out) and the aliased one (C entry status -> fallback) counted
    fast_after, fallback_after = call.counts()
    assert fast_after == fast + 1
    assert fallback_after >= fallback + 7
    # the loops opened: the C entry hands over, the Python method warns (as before)
    open_q = q + 0.1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qdd = robot.forward_dynamics(open_q, v, tau, out=np.empty(robot.nv))
    assert any(issubclass(w.category, LoopResidualWarning) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopResidualWarning)
        assert np.array_equal(qdd, python_fd(robot, open_q, v, tau)[0])


def test_baumgarte_gains_set_after_installation_are_honoured():
    robot, _, _, q0, _ = installed_robot("spatial_rssr")
    q, v, rng = loop_consistent_state(robot, q0, 9)
    q_off = q + 1e-4          # slightly open (below the warning threshold): g != 0
    v_off = v + 1e-3          # G v != 0
    tau = rng.uniform(-1.0, 1.0, robot.nv)
    exact = fast_call(robot, q_off, v_off, tau).copy()
    robot.baumgarte = (5.0, 20.0)
    stabilized = fast_call(robot, q_off, v_off, tau)
    assert np.array_equal(stabilized, python_fd(robot, q_off, v_off, tau)[0])
    assert np.abs(stabilized - exact).max() > 1e-6        # the gains act
    g, G, gv = robot.loop_state(q_off, v_off)
    assert_close(G @ stabilized + robot._acceleration_bias(q_off, v_off) + 10.0 * gv + 400.0 * g,
                 np.zeros(len(g)), "G qdd + gamma + 2 alpha G v + beta^2 g")
    robot.baumgarte = (0.0, 0.0)
    assert np.array_equal(fast_call(robot, q_off, v_off, tau), exact)


def test_multipliers_stay_per_thread():
    """Only the first thread to make a fast call takes the C path; another thread's calls take
    the Python method and keep their own multipliers."""
    robot, _, _, q0, _ = installed_robot("spatial_rssr")
    states = []
    for seed in (11, 12):
        q, v, rng = loop_consistent_state(robot, q0, seed)
        states.append((q, v, rng.uniform(-1.0, 1.0, robot.nv)))
    expected = [python_fd(robot, *s)[1] for s in states]
    fast_call(robot, *states[0])
    assert robot.forward_dynamics.owner == threading.get_ident()
    seen = {}

    def other():
        robot.forward_dynamics(*states[1], out=np.empty(robot.nv))
        seen["lam"] = robot.multipliers()

    fast, fallback = robot.forward_dynamics.counts()
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert robot.forward_dynamics.counts() == (fast, fallback + 1)
    assert np.array_equal(seen["lam"], expected[1])
    assert np.array_equal(robot.multipliers(), expected[0])      # this thread's, untouched


def test_installed_at_the_second_fast_call_and_dropped_on_force_attach():
    robot, _, _, q0, _ = case("spatial_rssr", pinocchio)
    q, v, rng = loop_consistent_state(robot, q0, 13)
    tau = rng.uniform(-1.0, 1.0, robot.nv)
    for k in range(2):
        qdd = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv)).copy()
        assert fastcall.installed(robot, "forward_dynamics") == (k == 1)
    lam = robot.multipliers()
    assert np.array_equal(fast_call(robot, q, v, tau), qdd)
    push = rng.uniform(-1.0, 1.0, robot.nv)
    expected = python_fd(robot, q, v, tau + push)[0]
    fast_call(robot, q, v, tau)
    robot.add_force(lambda t, q, v: push)
    assert not fastcall.installed(robot, "forward_dynamics")
    assert np.array_equal(robot.multipliers(), lam)      # the last C call's, kept on drop
    pushed = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
    assert np.array_equal(pushed, expected), "the callback's force acts"
    assert not fastcall.installed(robot, "forward_dynamics")


# the sample RSSR with a pendulum hanging off the crank (moved by the loop forces, but off the
# loop path) and an arm on the base (not moved by them): the kernel then takes L lambda from one
# more pass over the moved subtrees instead of the unit passes' stored rows
_EXTRA_LINKS = """
  <joint name="pendulum_joint" type="continuous"><parent link="crank"/><child link="pendulum"/>
    <origin xyz="0.05 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/></joint>
  <link name="pendulum"><inertial><origin xyz="0 0 -0.05" rpy="0 0 0"/><mass value="0.2"/>
    <inertia ixx="2e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="1e-5"/></inertial></link>
  <joint name="side_joint" type="continuous"><parent link="base"/><child link="side_arm"/>
    <origin xyz="-0.1 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/></joint>
  <link name="side_arm"><inertial><origin xyz="0 0 0.05" rpy="0 0 0"/><mass value="0.3"/>
    <inertia ixx="3e-4" ixy="0" ixz="0" iyy="3e-4" iyz="0" izz="2e-5"/></inertial></link>
</robot>"""


def test_loop_in_a_branch_of_a_larger_tree():
    """Bodies moved by the loop forces off the loop paths (the pendulum) and bodies they do not
    move (the side arm): C entry = Python method bit for bit, = pin.constraintDynamics."""
    import mbd_ros
    import yaml
    from test_closed_loops import ROOT
    xml = (ROOT / "urdf" / "spatial_rssr.urdf").read_text().replace("</robot>", _EXTRA_LINKS)
    closures = yaml.safe_load((ROOT / "config" / "spatial_rssr_closures.yaml").read_text())
    robot = mbd_ros.load(xml, closures=closures)
    open_tree = mbd_ros.load(xml)             # the same tree without its loop
    assert "forward_dynamics" in robot.compile_c_calls()
    ref = LoopReference(pinocchio, xml, closures, False)
    pendulum = robot.idx_v[robot.joint_names.index("pendulum_joint")]
    side = robot.idx_v[robot.joint_names.index("side_joint")]
    for seed in (41, 42):
        q, v, rng = loop_consistent_state(robot, robot.neutral(), seed)
        tau = rng.uniform(-1.0, 1.0, robot.nv)
        qdd = fast_call(robot, q, v, tau)
        lam = robot.multipliers()
        expected, lam_expected, _ = python_fd(robot, q, v, tau)
        assert np.array_equal(qdd, expected) and np.array_equal(lam, lam_expected)
        qdd_pin, *_ = pin_constraint_dynamics(ref, q, v, tau, pinocchio.ContactType.CONTACT_3D)
        assert_close(qdd, qdd_pin, f"seed {seed}: branched RSSR vs pin.constraintDynamics")
        # the loop forces move the pendulum but not the side arm: against the open tree
        free = open_tree.forward_dynamics(q, v, tau)
        assert abs(qdd[pendulum] - free[pendulum]) > 1e-6
        assert_close(qdd[side], free[side], "the side arm does not feel the loop")


def test_threads_sharing_the_c_entry():
    """Four threads calling forward_dynamics(q, v, tau, out=out) and multipliers() on one robot
    at once, each with its own state: every result and every thread's multipliers equal the
    Python method's for that state (the owner thread through the C entry, the others through
    the Python method on the locked workspace)."""
    robot, _, _, q0, _ = installed_robot("spatial_rssr")
    cases = []
    for seed in range(4):
        q, v, rng = loop_consistent_state(robot, q0, 50 + seed)
        tau = rng.uniform(-1.0, 1.0, robot.nv)
        qdd, lam, _ = python_fd(robot, q, v, tau)
        cases.append((q, v, tau, qdd, lam))
    failures = []
    start = threading.Barrier(4)

    def work(index):
        q, v, tau, qdd, lam = cases[index]
        out = np.empty(robot.nv)
        start.wait()
        for _ in range(60):
            robot.forward_dynamics(q, v, tau, out=out)
            if not (np.array_equal(out, qdd) and np.array_equal(robot.multipliers(), lam)):
                failures.append(index)
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, f"threads {failures} saw another thread's results"
    fast, fallback = robot.forward_dynamics.counts()
    assert fast >= 60 and fallback >= 180      # one owner on the C path, three on the method


def test_batches_respect_the_loops():
    """forward_dynamics_batch / inverse_dynamics_batch of a closed-loop robot give, state by
    state, forward_dynamics / inverse_dynamics (they used to run the open tree's batch kernels)."""
    robot, _, _, q0, _ = installed_robot("spatial_rssr")
    states = [loop_consistent_state(robot, q0, 60 + k) for k in range(3)]
    q = np.array([s[0] for s in states])
    v = np.array([s[1] for s in states])
    tau = np.array([s[2].uniform(-1.0, 1.0, robot.nv) for s in states])
    qdd = robot.forward_dynamics_batch(q, v, tau)
    for k in range(3):
        assert np.array_equal(qdd[k], python_fd(robot, q[k], v[k], tau[k])[0])
    back = robot.inverse_dynamics_batch(q, v, qdd)
    for k in range(3):
        assert np.array_equal(back[k], robot.inverse_dynamics(q[k], v[k], qdd[k]))
        # the loop-consistent qdd needs only the actuated crank's torque
        assert_close(robot.forward_dynamics(q[k], v[k], back[k]), qdd[k], f"state {k}: FD(ID)")
