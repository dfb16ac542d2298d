"""Numeric inputs at the library's entry points (issue 10): read-only arrays are accepted,
out= overlapping an input is handled (the result equals the one computed into a fresh array),
out= of the wrong dtype is refused, overflow inside the dynamics and non-finite dt / Baumgarte
gains are ValueErrors (never NaN results), NaN never reaches the dense closed-loop formalisms or
the projections, and multipliers= of the wrong length is refused. References are the same
library's results on ordinary inputs (the operations under test are input handling only)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbd_ros

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def arm():
    return mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))


@pytest.fixture(scope="module")
def floating():
    return mbd_ros.load(str(ROOT / "urdf" / "branching.urdf"), floating_base=True)


@pytest.fixture(scope="module")
def fourbar():
    return mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"),
                        closures=str(ROOT / "config" / "fourbar_closures.yaml"))


def state(robot, seed=0):
    rng = np.random.default_rng(seed)
    return robot.random_configuration(rng), rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)


def loop_state(robot, seed=0):
    rng = np.random.default_rng(seed)
    q = robot.assemble(np.array([rng.uniform(-3, 3), 0.0, 0.0]))
    return q, robot.project_velocity(q, rng.standard_normal(robot.nv)), rng.standard_normal(robot.nv)


def readonly(x):
    x = np.array(x)
    x.setflags(write=False)
    return x


# ---- read-only arrays ------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["arm", "floating"])
def test_read_only_arrays_are_accepted(which, request):
    robot = request.getfixturevalue(which)
    q, v, x = state(robot, 1)
    qr, vr, xr = readonly(q), readonly(v), readonly(x)
    np.testing.assert_array_equal(robot.forward_dynamics(qr, vr, xr), robot.forward_dynamics(q, v, x))
    np.testing.assert_array_equal(robot.inverse_dynamics(qr, vr, xr), robot.inverse_dynamics(q, v, x))
    np.testing.assert_array_equal(robot.mass_matrix(qr), robot.mass_matrix(q))
    np.testing.assert_array_equal(robot.joint_wrenches(qr, vr, xr), robot.joint_wrenches(q, v, x))
    np.testing.assert_array_equal(robot.integrate(qr, vr, 1e-3), robot.integrate(q, v, 1e-3))
    np.testing.assert_array_equal(robot.link_pose(qr, robot.link_names[-1]),
                                  robot.link_pose(q, robot.link_names[-1]))
    assert robot.kinetic_energy(qr, vr) == robot.kinetic_energy(q, v)
    assert robot.potential_energy(qr) == robot.potential_energy(q)
    batch_q, batch_v, batch_x = (readonly(np.tile(a, (3, 1))) for a in (q, v, x))
    np.testing.assert_array_equal(robot.forward_dynamics_batch(batch_q, batch_v, batch_x)[1],
                                  robot.forward_dynamics(q, v, x))


def test_read_only_arrays_closed_loop(fourbar):
    q, v, tau = loop_state(fourbar, 2)
    qdd = fourbar.forward_dynamics(q, v, tau)
    np.testing.assert_array_equal(fourbar.forward_dynamics(readonly(q), readonly(v), readonly(tau)), qdd)
    np.testing.assert_array_equal(fourbar.inverse_dynamics(readonly(q), readonly(v), readonly(qdd)),
                                  fourbar.inverse_dynamics(q, v, qdd))
    np.testing.assert_array_equal(fourbar.closure_wrenches(readonly(q), readonly(v), readonly(tau)),
                                  fourbar.closure_wrenches(q, v, tau))


# ---- out= aliasing and dtype --------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["arm", "floating"])
@pytest.mark.parametrize("alias", ["v", "x", "v_view"])
def test_out_aliasing_an_input_gives_the_right_result(which, alias, request):
    robot = request.getfixturevalue(which)
    q, v, x = state(robot, 3)
    for method in (robot.forward_dynamics, robot.inverse_dynamics):
        expected = method(q, v, x)
        vv, xx = v.copy(), x.copy()
        out = {"v": vv, "x": xx, "v_view": vv[:]}[alias]
        result = method(q, vv, xx, out=out)
        assert result is out
        np.testing.assert_array_equal(result, expected)


def test_integrate_out_aliasing_q(floating):
    q, v, _ = state(floating, 4)
    expected = floating.integrate(q, v, 0.1)
    qq = q.copy()
    assert floating.integrate(qq, v, 0.1, out=qq) is qq
    np.testing.assert_array_equal(qq, expected)


def test_closed_loop_out_aliasing_and_dtype(fourbar):
    q, v, tau = loop_state(fourbar, 5)
    expected = fourbar.forward_dynamics(q, v, tau)
    vv = v.copy()
    np.testing.assert_allclose(fourbar.forward_dynamics(q, vv, tau, out=vv), expected, rtol=0, atol=1e-12)
    tau_id = fourbar.inverse_dynamics(q, v, expected)
    qdd = expected.copy()
    np.testing.assert_array_equal(fourbar.inverse_dynamics(q, v, qdd, out=qdd), tau_id)
    for method in ("minimal", "descriptor"):
        with pytest.raises(ValueError, match="out"):
            fourbar.forward_dynamics(q, v, tau, out=np.zeros(fourbar.nv, dtype=np.int64), method=method)
    with pytest.raises(ValueError, match="out"):
        fourbar.inverse_dynamics(q, v, expected, out=np.zeros(fourbar.nv, dtype=np.int64))
    with pytest.raises(ValueError, match="out"):
        fourbar.forward_dynamics(q, v, tau, out=np.zeros(fourbar.nv, dtype=np.int64))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.complex128])
def test_out_of_another_dtype_is_refused(arm, dtype):
    q, v, x = state(arm, 6)
    for call in (lambda out: arm.forward_dynamics(q, v, x, out=out),
                 lambda out: arm.inverse_dynamics(q, v, x, out=out),
                 lambda out: arm.integrate(q, v, 1e-3, out=out)):
        with pytest.raises(ValueError, match="out"):
            call(np.zeros(arm.nv, dtype=dtype))
    with pytest.raises(ValueError, match="out"):
        arm.mass_matrix(q, out=np.zeros((arm.nv, arm.nv), dtype=dtype))


# ---- overflow and non-finite parameters ----------------------------------------------------------------

@pytest.mark.parametrize("which", ["arm", "floating", "fourbar"])
def test_overflowing_velocities_are_a_value_error(which, request):
    robot = request.getfixturevalue(which)
    q = robot.neutral() if which != "fourbar" else loop_state(robot)[0]
    v = np.full(robot.nv, 1e154)
    zero = np.zeros(robot.nv)
    with np.errstate(all="ignore"):
        with pytest.raises(ValueError, match="not finite"):
            robot.forward_dynamics(q, v, zero)
        if which != "fourbar":
            with pytest.raises(ValueError, match="not finite"):
                robot.inverse_dynamics(q, v, zero)
            with pytest.raises(ValueError, match="not finite"):
                robot.forward_dynamics(q, zero, np.full(robot.nv, 1e308), out=np.empty(robot.nv))
            with pytest.raises(ValueError, match="state 1.*not finite"):
                robot.forward_dynamics_batch(np.tile(q, (3, 1)), np.array([zero, v, zero]),
                                             np.zeros((3, robot.nv)))


@pytest.mark.parametrize("dt", [np.nan, np.inf, -np.inf, "x", None])
def test_integrate_non_finite_dt(arm, dt):
    q, v, _ = state(arm)
    with pytest.raises(ValueError, match="dt"):
        arm.integrate(q, v, dt)


def test_integrate_overflow(arm):
    q, _, _ = state(arm)
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="not finite"):
        arm.integrate(q, np.full(arm.nv, 1e308), 1e10)


@pytest.mark.parametrize("gains", [(np.nan, 0.0), (0.0, np.inf), (-1.0, 0.0), ("a", 1), (1.0,)])
def test_baumgarte_gains_are_validated(fourbar, gains):
    before = fourbar.baumgarte
    with pytest.raises(ValueError, match="baumgarte"):
        fourbar.baumgarte = gains
    assert fourbar.baumgarte == before
    fourbar.baumgarte = (5, 10)
    assert fourbar.baumgarte == (5.0, 10.0)
    fourbar.baumgarte = (0.0, 0.0)


# ---- NaN never reaches the dense formalisms and projections --------------------------------------------

@pytest.mark.parametrize("bad", ["q", "v", "x"])
def test_nan_is_refused_by_closed_loop_helpers(fourbar, bad):
    q, v, tau = loop_state(fourbar, 7)
    args = {"q": q.copy(), "v": v.copy(), "x": tau.copy()}
    args[bad][1] = np.nan
    name = {"q": "q", "v": "v", "x": "tau|qdd"}[bad]
    calls = [lambda: fourbar.forward_dynamics(args["q"], args["v"], args["x"], method="minimal"),
             lambda: fourbar.forward_dynamics(args["q"], args["v"], args["x"], method="descriptor"),
             lambda: fourbar.forward_dynamics(args["q"], args["v"], args["x"]),
             lambda: fourbar.project_acceleration(args["q"], args["v"], args["x"]),
             lambda: fourbar.inverse_dynamics(args["q"], args["v"], args["x"])]
    if bad != "x":
        calls += [lambda: fourbar.project_velocity(args["q"], args["v"]),
                  lambda: fourbar.loop_state(args["q"], args["v"]),
                  lambda: fourbar.closure_residual(args["q"], args["v"])]
    if bad == "q":
        calls += [lambda: fourbar.assemble(args["q"]), lambda: fourbar.partition(args["q"]),
                  lambda: fourbar.analyze(args["q"]), lambda: fourbar.loop_jacobian(args["q"])]
    for call in calls:
        with pytest.raises(ValueError, match=f"({name}).*(NaN|inf)") as exc:
            call()
        assert "SVD" not in str(exc.value)


# ---- multipliers= -------------------------------------------------------------------------------------

def test_multipliers_are_validated(fourbar):
    q, v, tau = loop_state(fourbar, 8)
    tau[1:] = 0.0    # drive on the actuated crank only: then ID's loop forces are FD's
    qdd = fourbar.forward_dynamics(q, v, tau)
    lam = fourbar.multipliers()
    assert lam.shape == (fourbar.n_constraints,)
    np.testing.assert_allclose(fourbar.closure_wrenches(q, v, tau, multipliers=lam),
                               fourbar.closure_wrenches(q, v, tau), rtol=0, atol=1e-9)
    np.testing.assert_allclose(fourbar.joint_wrenches(q, v, qdd, multipliers=lam),
                               fourbar.joint_wrenches(q, v, qdd), rtol=0, atol=1e-8)
    for bad in (lam[:-1], np.append(lam, 0.0), np.zeros(1), np.zeros((fourbar.n_constraints, 1)),
                np.full(fourbar.n_constraints, np.nan), "abc"):
        with pytest.raises(ValueError, match="multipliers"):
            fourbar.closure_wrenches(q, v, tau, multipliers=bad)
        with pytest.raises(ValueError, match="multipliers"):
            fourbar.joint_wrenches(q, v, qdd, multipliers=bad)


@pytest.mark.parametrize("gravity, match", [
    ((0.0, 0.0, float("nan")), "gravity must be 3 finite numbers"),
    ((0.0, 0.0), "gravity must be 3 finite numbers"),
    ((0.0, 0.0, 1e300), r"magnitude is above 1e\+06"),
    ((8e5, 0.0, -8e5), r"magnitude is above 1e\+06")])
def test_gravity_is_validated(gravity, match):
    """load(gravity=...): three finite numbers of magnitude at most MAX_GRAVITY (1e6 m/s^2); a
    finite 1e300 was taken and every result was 1e300-large. A centrifuge-like 1e5 is taken."""
    with pytest.raises(mbd_ros.ModelError, match=match):
        mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"), gravity=gravity)
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"), gravity=(0.0, 0.0, -1e5))
    assert np.isfinite(robot.forward_dynamics(robot.neutral(), np.zeros(7), np.zeros(7))).all()
