"""The compiled forward dynamics of closed loops on flexible trees (kernels/flexible_loop_dynamics.py,
robot.forward_dynamics' default there) against the same formalism in numpy (method="kkt",
robot/constraints.py `_kkt`: Cholesky and LAPACK's lstsq), and the constraint it must satisfy.
Independent references for the mechanism itself (a point-mass Lagrange oracle, energy, finite
differences) are in test/test_flexible_loops.py, which now runs the compiled path.

Bound for compiled vs numpy: both solve M qdd0 = tau - h and (G W) lambda = rhs, W = M^-1 G^T,
from the same g, G and gamma (the same kernels: the twists' central difference is bit for bit
the same stage), by different factorizations, so they differ by round-off amplified by the
conditioning: |dqdd| <= 64 eps (cond(M) + cond(G W)) max(|qdd|, |M^-1 (tau - h)|) (and the
multipliers by 64 eps cond(M) cond(G W) |lambda|: lambda = (G W)^-1 (...) carries both)."""
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.kernels.linalg import RANK_TOLERANCE
from mbd_ros.robot.constraints import LoopResidualWarning
from test_flexible_loops import assembled, fourbar

EPS = np.finfo(float).eps
REPO = Path(__file__).resolve().parents[1]


def sample_fourbar():
    """The shipped sample (urdf/flexible_fourbar.urdf, config/flexible_fourbar.yaml)."""
    config = REPO / "config" / "flexible_fourbar.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(REPO / "urdf" / "flexible_fourbar.urdf", closures=config,
                            flexible=config)


def states(robot, n, seed):
    """n closed states: crank angles across the mechanism's range, elastic deflections of a few
    mm, the loops closed by assemble(elastic=True); random v (not on the constraint: the
    Baumgarte terms then act; the modes' rates 1 % of the joints'), a random crank torque."""
    rng = np.random.default_rng(seed)
    base = assembled(robot, crank=0.7)
    for _ in range(n):
        q = base.copy()
        dq = np.zeros(robot.nv)
        dq[0] = 0.4 * rng.standard_normal()
        dq[robot.elastic_v_indices] = 2e-3 * rng.standard_normal(len(robot.elastic_v_indices))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoopResidualWarning)
            q = robot.assemble(robot.integrate(q, dq, 1.0), elastic=True)
        v = rng.standard_normal(robot.nv)
        v[robot.elastic_v_indices] *= 1e-2
        tau = np.zeros(robot.nv)
        tau[0] = 2.0 * rng.standard_normal()             # the crank's drive
        yield q, v, tau


def conditions(robot, q):
    """cond(M), cond(G M^-1 G^T) at q (G W's nonzero singular values: the rank the solve keeps)."""
    mass = robot.mass_matrix(q)
    _, jacobian, _ = robot.loop_state(q)
    k = jacobian @ np.linalg.solve(mass, jacobian.T)
    s = np.linalg.svd(k, compute_uv=False)
    kept = s[s > RANK_TOLERANCE * s[0]]     # (the rank the solve keeps: kernels/linalg.py)
    return np.linalg.cond(mass), kept[0] / kept[-1]


def terms_scale(robot, q, qdd, lam):
    """max(|qdd|, |W lambda|): the size of the two terms that qdd = M^-1 (tau - h) + W lambda
    adds (their cancellation is where the round-off shows)."""
    _, jacobian, _ = robot.loop_state(q)
    loop_term = np.linalg.solve(robot.mass_matrix(q), jacobian.T @ lam)
    return max(np.abs(qdd).max(), np.abs(loop_term).max())


@pytest.mark.parametrize("make", [fourbar, sample_fourbar], ids=["test_fourbar", "sample"])
def test_compiled_equals_numpy_kkt(make, monkeypatch):
    """12 states each: qdd, the multipliers and the rank of G W equal method="kkt"'s within the
    module's bound; the compiled path is the default (robot.forward_dynamics without method:
    one kernel call each) and method="kkt" is numpy's (none)."""
    robot = make()
    robot.baumgarte = (5.0, 10.0)
    loops = robot._constraints.loops
    calls = []
    compiled = loops.forward_dynamics
    monkeypatch.setattr(loops, "forward_dynamics",
                        lambda *args: calls.append(1) or compiled(*args))
    worst = 0.0
    for q, v, tau in states(robot, 12, seed=5):
        calls.clear()
        qdd = robot.forward_dynamics(q, v, tau)
        assert calls == [1]
        lam = robot.multipliers()
        rank = int(robot._constraints.info[1])
        qdd_ref = robot.forward_dynamics(q, v, tau, method="kkt")
        assert calls == [1]
        lam_ref = robot.multipliers()
        assert rank == int(robot._constraints.info[1]) == robot.n_constraints
        cond_m, cond_k = conditions(robot, q)
        scale = terms_scale(robot, q, qdd_ref, lam_ref)
        bound = 64 * EPS * (cond_m + cond_k) * scale
        np.testing.assert_allclose(qdd, qdd_ref, rtol=0, atol=bound)
        np.testing.assert_allclose(lam, lam_ref, rtol=0,
                                   atol=64 * EPS * cond_m * cond_k * np.abs(lam_ref).max())
        worst = max(worst, np.abs(qdd - qdd_ref).max() / bound)
    print(f"{make.__name__}: worst |dqdd| {worst:.2g} of the bound")


def test_compiled_satisfies_the_acceleration_constraint():
    """G qdd + gamma + 2 alpha G v + beta^2 g = 0 (the rows the solve imposes, Baumgarte terms
    included) at states off the velocity constraint, within 64 eps cond(G W) of its terms."""
    robot = fourbar()
    robot.baumgarte = (5.0, 10.0)
    alpha, beta = robot.baumgarte
    for q, v, tau in states(robot, 6, seed=9):
        qdd = robot.forward_dynamics(q, v, tau)
        g, jacobian, gv = robot.loop_state(q, v)
        gamma = robot._acceleration_bias(q, v)
        rows = jacobian @ qdd + gamma + 2 * alpha * gv + beta * beta * g
        terms = np.abs(jacobian).max() * np.abs(qdd).max() + np.abs(gamma).max()
        _, cond_k = conditions(robot, q)
        assert np.abs(rows).max() <= 64 * EPS * cond_k * terms


def test_compiled_with_external_wrench_equals_numpy_kkt():
    """f_ext on the coupler (a rigid link of the loop): the loads reach the compiled solve through
    the tree's loaded workspace as they reach numpy's (same bound as above)."""
    robot = fourbar()
    f_ext = np.zeros((len(robot.link_names), 6))
    f_ext[robot.link_names.index("coupler")] = [3.0, -1.0, 2.0, 0.1, 0.4, -0.2]
    for q, v, tau in states(robot, 4, seed=11):
        qdd = robot.forward_dynamics(q, v, tau, f_ext=f_ext)
        qdd_ref = robot.forward_dynamics(q, v, tau, f_ext=f_ext, method="kkt")
        scale = terms_scale(robot, q, qdd_ref, robot.multipliers())
        plain = robot.forward_dynamics(q, v, tau)
        cond_m, cond_k = conditions(robot, q)
        bound = 64 * EPS * (cond_m + cond_k) * scale
        np.testing.assert_allclose(qdd, qdd_ref, rtol=0, atol=bound)
        assert np.abs(qdd - plain).max() > 1e3 * bound      # the wrench acts


@pytest.mark.parametrize("which, value, message", [
    ("q", np.nan, "q contains NaN"), ("v", np.inf, "v contains NaN"),
    ("tau", np.nan, "tau contains NaN|not finite")])
def test_bad_input_is_a_clear_error(which, value, message):
    """A non-finite q, v or tau is a ValueError naming it (or the non-finite result), and the
    robot still computes afterwards."""
    robot = fourbar()
    q, v, tau = next(states(robot, 1, seed=3))
    expected = robot.forward_dynamics(q, v, tau)
    bad = {"q": q.copy(), "v": v.copy(), "tau": tau.copy()}
    bad[which][1] = value
    with pytest.raises(ValueError, match=message):
        robot.forward_dynamics(bad["q"], bad["v"], bad["tau"])
    np.testing.assert_array_equal(robot.forward_dynamics(q, v, tau), expected)


CHAIN = """<?xml version="1.0"?>
<robot name="flexible_chain">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0.1 0 0"/><mass value="1.0"/>
    <inertia ixx="1e-3" ixy="0" ixz="0" iyy="4e-3" iyz="0" izz="4e-3"/></inertial></link>
  <link name="beam"><inertial><origin xyz="0.25 0 0"/><mass value="0.27"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="5.6e-3" iyz="0" izz="5.6e-3"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0.05 0.01 0"/><mass value="0.3"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="2e-4"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="9" velocity="9"/></joint>
  <joint name="elbow" type="revolute"><parent link="arm"/><child link="beam"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="9" velocity="9"/></joint>
  <joint name="wrist" type="revolute"><parent link="beam"/><child link="hand"/>
    <origin xyz="0.5 0 0" rpy="0.1 0 0.2"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="9" velocity="9"/></joint>
</robot>"""


def test_frame_jacobian_columns_equal_full_kinematics_passes():
    """kernels/flexible_frames.py frame_jacobians (one kinematics pass, then the velocity part
    per column) equals one full kinematics pass per unit velocity (its form before) bit for
    bit: on the flexible four-bar's cut frames and on frames of a chain whose hand hangs from
    the flexible beam's deformed tip (the node Jacobian Xi enters), at deflected states."""
    from flexible_models import beam_entry
    from mbd_ros.kernels import flexible_frames as fr
    from mbd_ros.robot.flexible_force_loads import frame_ends
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        chain = mbd_ros.load(CHAIN, flexible=beam_entry(0.5, 2e-4, 2e-9, 1e-9, modes=4,
                                                        torsion=True))
    rng = np.random.default_rng(4)
    frame = np.eye(4)
    frame[:3, :3] = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    frame[:3, 3] = [0.05, -0.02, 0.03]
    for robot in (fourbar(), chain):
        tree = robot.tree
        ends = [(link, frame) for link in range(len(robot.link_names))]
        end_int, end_float, end_data, _ = frame_ends(tree, ends)
        n_ends = len(ends)
        for _ in range(3):
            q = robot.neutral()
            q[:tree.model.nq] = rng.uniform(-1, 1, tree.model.nq)
            q[robot.elastic_q_indices] = 3e-3 * rng.standard_normal(len(robot.elastic_q_indices))
            fast = np.zeros((n_ends, 6, robot.nv))
            state = np.zeros((n_ends, 25))
            fr.frame_jacobians(tree.fint, tree.ffloat, tree.fdata, tree.work, tree.fwork, end_int,
                               end_float, end_data, q, np.zeros(robot.nv), state, fast)
            full = np.zeros_like(fast)
            for k in range(robot.nv):
                unit = np.zeros(robot.nv)
                unit[k] = 1.0
                column = np.zeros((n_ends, 6, 1))
                fr.frame_states(tree.fint, tree.ffloat, tree.fdata, tree.work, tree.fwork,
                                end_int, end_float, end_data, q, unit, state, column)
                full[:, :, k] = column[:, :, 0]
            np.testing.assert_array_equal(fast, full)
            assert np.abs(full[:, :, robot.elastic_v_indices]).max() > 0.1   # elastic columns
