"""The simulated plant as a library (no ROS): joint limits, drives, divergence.

References: the URDF limits themselves (positions never beyond them, to round-off, whatever the
torque); physical invariants (no energy gain at inelastic stops; an impulse at a stop changes
the generalized momentum M v only on the stopped joints, checked with Pinocchio's mass matrix);
closed-form steady states (a position drive with exact model compensation settles on its
target; a velocity drive on a joint without gravity runs at the commanded speed).
"""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.simulation.drives import POSITION, VELOCITY
from mbd_ros.simulation.limits import JointLimits
from mbd_ros.simulation.plant import DivergenceError, Plant
from mbd_ros.robot.integrators import INTEGRATORS
from ros_harness import URDF

ARM7 = str(URDF / "arm7.urdf")
UR5 = "ur_description/urdf/ur5_robot.urdf"
ROUND_OFF = 1e-12     # rad: a position stop is exact up to round-off


@pytest.fixture(scope="module")
def arm7():
    return mbd_ros.load(ARM7)


@pytest.fixture(scope="module")
def ur5(erd_dir):
    return mbd_ros.load(str(erd_dir / UR5))


def run(plant, seconds, record=None):
    qs, vs = [], []
    for _ in range(int(round(seconds / plant.dt))):
        plant.step()
        qs.append(plant.q.copy())
        vs.append(plant.v.copy())
    return np.array(qs), np.array(vs)


def assert_within_limits(plant, qs, what):
    lo, hi = plant.limits.lower, plant.limits.upper
    assert np.isfinite(qs).all(), f"{what}: non-finite positions"
    over = np.max(qs - hi)
    under = np.max(lo - qs)
    assert over <= ROUND_OFF and under <= ROUND_OFF, \
        f"{what}: a joint went {max(over, under):.3e} rad beyond its limit"


# ---------------------------------------------------------------------- position stops
@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("which", ["ur5", "arm7"])
def test_saturating_torque_never_tunnels_through_a_limit(which, sign, integrator, request):
    """50 N m on every joint for 2 s (the issue's measurement: positions reached 1e283 rad):
    every state stays within the URDF limits, speeds stay physical, the efforts are clipped."""
    robot = request.getfixturevalue(which)
    plant = Plant(robot, 1e-3, integrator)
    plant.drives.command_effort(np.full(len(plant.drives.joints), sign * 50.0))
    qs, vs = run(plant, 2.0)
    assert_within_limits(plant, qs, f"{which} {integrator} {sign * 50} N m")
    assert np.abs(vs).max() < 20.0, np.abs(vs).max()
    assert (np.abs(plant.tau) <= plant.limits.effort + 1e-12).all()
    assert plant.limits.stops > 0          # the limits were reached and held
    # joints pushed by 50 N m against a stop rest on it (the wrist joints of both arms)
    on_stop = np.isclose(qs[-1], plant.limits.upper if sign > 0 else plant.limits.lower,
                         atol=ROUND_OFF)
    assert on_stop.sum() >= 3, qs[-1]


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_arm_falling_with_zero_torque_stays_within_limits(arm7, integrator):
    """The issue's second measurement: with zero torque the arm fell through joint_2's +-2.09
    limit. Here it falls onto its stops and rests there."""
    plant = Plant(arm7, 1e-3, integrator)
    qs, vs = run(plant, 3.0)
    assert_within_limits(plant, qs, f"zero-torque fall ({integrator})")
    assert plant.limits.stops > 0
    resting = np.isclose(qs[-1], plant.limits.lower, atol=ROUND_OFF) | \
        np.isclose(qs[-1], plant.limits.upper, atol=ROUND_OFF)
    assert resting.any(), qs[-1]


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_stops_never_create_energy(integrator):
    """No passive forces, zero torque: the mechanical energy KE + PE never rises above its
    initial value, and the inelastic stops take energy out. (A position correction at a stop
    moves the potential energy by at most |g(q)| |dq|, dq <= |v| dt: a small bounded
    exchange per stop, never a drift.)"""
    robot = mbd_ros.load(ARM7, passive_forces=False)
    plant = Plant(robot, 1e-3, integrator,
                  limits=JointLimits(robot, velocity=False, effort=False))
    energy = [robot.kinetic_energy(plant.q, plant.v) + robot.potential_energy(plant.q)]
    stops = [0]
    for _ in range(2000):
        plant.step()
        energy.append(robot.kinetic_energy(plant.q, plant.v) + robot.potential_energy(plant.q))
        stops.append(plant.limits.stops)
    energy, stops = np.array(energy), np.array(stops)
    assert stops[-1] > 0
    assert (energy - energy[0]).max() <= 1e-9 * abs(energy[0]), (energy - energy[0]).max()
    assert energy[-1] < energy[0] - 10.0          # the stops took energy out (J)
    if integrator == "rk4":                        # between stops: conserved (RK4 accuracy)
        free = np.diff(stops) == 0
        assert np.abs(np.diff(energy)[free]).max() < 1e-6


def test_stop_impulse_acts_on_the_stopped_joints_only(ur5, erd_dir, pin):
    """An impulse at a stop is S_A^T lambda: the generalized momentum M(q) v changes only on the
    stopped joints (M from Pinocchio's CRBA), and their velocities become 0."""
    limits = JointLimits(ur5)
    model = pin.buildModelFromUrdf(str(erd_dir / UR5))
    data = model.createData()
    rng = np.random.default_rng(3)
    # mbd_ros and Pinocchio order the ur5's joints alike; check by name
    assert [model.names[i] for i in range(1, model.njoints)] == ur5.joint_names
    for trial in range(10):
        q = rng.uniform(-2.0, 2.0, ur5.nq)
        v = rng.uniform(-1.0, 1.0, ur5.nv)
        stopped = rng.choice(ur5.nv, size=1 + trial % 2, replace=False)
        for i in stopped:           # just beyond a limit, moving outward
            side = rng.choice([-1.0, 1.0])
            q[i] = (limits.upper[i] if side > 0 else limits.lower[i]) + side * 1e-4
            v[i] = side * abs(v[i])
        q_before, v_before = q.copy(), v.copy()
        limits.enforce(q, v)
        assert_within_limits(type("P", (), {"limits": limits})(), q[None], "enforce")
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        dp = M @ (v - v_before)
        others = np.setdiff1d(np.arange(ur5.nv), stopped)
        assert_close(dp[others], np.zeros(len(others)), "momentum of the free joints")
        assert_close(v[stopped], np.zeros(len(stopped)), "stopped joints at rest")
        # the position correction is the smallest in the kinetic-energy metric: M dq is zero
        # on the free joints too
        assert_close((M @ (q - q_before))[others], np.zeros(len(others)), "M dq on free joints",
                     rtol=1e-7)


# ---------------------------------------------------------------------- velocity / effort
def test_velocity_limit_caps_the_drive(arm7):
    """joint_1 of arm7 turns about the vertical (gravity does no work on it): a 50 N m effort
    command accelerates it up to its 1.71 rad/s limit and no further, while position drives
    hold the other joints."""
    q0 = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0])
    plant = Plant(arm7, 1e-3, q=q0)
    plant.drives.command_position(q0)
    plant.drives.command_effort([50.0], idx=[0])
    qs, vs = run(plant, 1.0)
    vmax = plant.limits.velocity[0]
    assert vs[:, 0].max() <= vmax * 1.01, vs[:, 0].max()
    assert vs[-1, 0] > vmax * 0.99, vs[-1, 0]           # it does reach the limit
    assert (np.abs(vs).max(axis=0) <= plant.limits.velocity * 1.01).all(), np.abs(vs).max(axis=0)


def test_effort_commands_are_clipped(arm7):
    plant = Plant(arm7, 1e-3, q=np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0]),
                  limits=JointLimits(arm7, velocity=False))
    plant.drives.command_effort(np.full(7, 1e4))
    plant.step()
    assert_close(plant.tau, plant.limits.effort, "clipped to <limit effort>")
    with pytest.raises(ValueError, match="NaN"):
        plant.drives.command_effort(np.full(7, np.nan))


def test_invalid_effort_limit_is_refused():
    """A negative effort limit never reaches the plant: the URDF reader refuses it, naming the
    joint and the field (a plant built on it would apply -5 N m whatever the command)."""
    xml = (URDF / "arm7.urdf").read_text().replace('effort="40"', 'effort="-5"', 1)
    with pytest.raises(mbd_ros.ModelError, match="joint_6.*effort"):
        mbd_ros.load(xml)


# ---------------------------------------------------------------------- drives
@pytest.mark.parametrize("which", ["arm7", "ur5"])
def test_position_drive_settles_within_a_milliradian(which, request):
    robot = request.getfixturevalue(which)
    q0 = np.array([0.3, -0.9, 0.4, -1.2, 0.6, 0.8, 0.2])[:robot.nv]
    target = q0 + np.array([0.4, 0.3, -0.5, 0.4, -0.6, 0.5, -0.7])[:robot.nv]
    plant = Plant(robot, 1e-3, q=q0)
    plant.drives.command_position(target)
    qs, vs = run(plant, 2.0)
    err = np.abs(qs - target).max(axis=1)
    settled = np.flatnonzero(err > 1e-3)
    assert err[-1] < 1e-3 and np.abs(vs[-1]).max() < 1e-3, (err[-1], vs[-1])
    assert settled[-1] < 1500, f"settled only after {settled[-1]} ms"
    assert (plant.drives.mode == POSITION).all()


def test_position_target_beyond_a_limit_stops_on_it(arm7):
    plant = Plant(arm7, 1e-3)
    target = np.zeros(7)
    target[1] = 3.0                                 # joint_2's limit is 2.0944
    plant.drives.command_position(target)
    qs, _ = run(plant, 3.0)
    assert_within_limits(plant, qs, "target beyond a limit")
    assert abs(qs[-1, 1] - plant.limits.upper[1]) < 1e-3


def test_velocity_drive_tracks_and_holds(arm7):
    q0 = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0])
    plant = Plant(arm7, 1e-3, q=q0)
    cmd = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])   # joint_1 turns, the others hold
    plant.drives.command_velocity(cmd, q=plant.q)
    qs, vs = run(plant, 1.5)
    assert (plant.drives.mode == VELOCITY).all()
    assert abs(vs[-1, 0] - 0.5) < 1e-3, vs[-1]
    # the reference advances by v dt from q0: after the transient, q_1 = q0_1 + 0.5 t (lag 0)
    assert abs(qs[-1, 0] - (q0[0] + 0.5 * 1.5)) < 1e-3
    assert np.abs(qs[-1, 1:] - q0[1:]).max() < 1e-3      # held against gravity
    # velocity 0: holds where it is
    plant.drives.command_velocity(np.zeros(7))
    here = plant.q.copy()
    qs, vs = run(plant, 1.0)
    assert np.abs(qs[-1] - here).max() < 2e-3 and np.abs(vs[-1]).max() < 1e-3


def test_gains_are_validated(arm7):
    plant = Plant(arm7, 1e-3)
    with pytest.raises(ValueError, match="kp"):
        plant.drives.set_gains(kp=[1.0, 2.0])
    with pytest.raises(ValueError, match="kd"):
        plant.drives.set_gains(kd=-1.0)
    plant.drives.set_gains(kp=list(range(7)))
    assert_close(plant.drives.kp, np.arange(7.0), "per-joint kp")


# ---------------------------------------------------------------------- divergence
def test_divergence_is_detected_and_the_state_kept_sane(arm7):
    plant = Plant(arm7, 1e-3, max_speed=0.5, limits=False)
    before = None
    with pytest.raises(DivergenceError, match="max_speed"):
        for _ in range(5000):
            before = (plant.q.copy(), plant.v.copy())
            plant.step()
    assert_close(plant.q, before[0], "state restored (q)")
    assert_close(plant.v, before[1], "state restored (v)")
    assert plant.divergences == 1
    plant.reset()
    plant.step()                     # usable again after a reset


def test_initial_state_beyond_a_limit_is_refused(arm7):
    q = np.zeros(7)
    q[3] = -2.5
    with pytest.raises(ValueError, match="joint_4"):
        Plant(arm7, 1e-3, q=q)


def test_spd_inverse_kernel_matches_numpy():
    """The plant's Cholesky inverse (numba) against numpy.linalg.inv on random SPD matrices
    and on the arm's mass matrix; a non-positive-definite matrix is reported."""
    from mbd_ros.kernels.plant import spd_inverse
    rng = np.random.default_rng(5)
    arm = mbd_ros.load(ARM7)
    mats = [arm.mass_matrix(arm.random_configuration(rng))]
    for n in (1, 2, 6, 18):
        a = rng.normal(size=(n, n))
        mats.append(a @ a.T + 0.1 * np.eye(n))
    for m in mats:
        n = m.shape[0]
        out = np.zeros((n, n))
        assert spd_inverse(m, np.zeros((n, n)), out) == 0
        assert_close(out, np.linalg.inv(m), f"inverse of a {n}x{n} SPD matrix", rtol=1e-9)
    assert spd_inverse(np.diag([1.0, -1.0]), np.zeros((2, 2)), np.zeros((2, 2))) == 1


SLIDER = """<robot name="slider">
  <link name="base"/>
  <link name="cart">
    <inertial><mass value="2.0"/><origin xyz="0 0 0"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="cart"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="100" velocity="10"/>
  </joint>
</robot>"""


def test_force_hook_acts_at_every_integrator_stage():
    """A spring hook fn(t, q, v) = -k q on a 2 kg cart: x(t) = x0 cos(w t), w = sqrt(k / m).
    RK4 reproduces it to fourth order only if the hook is evaluated at every stage (evaluated
    once per step the error would be first order, ~1e3 times larger here)."""
    from mbd_ros.robot.integrators import Simulator
    robot = mbd_ros.load(SLIDER, gravity=(0.0, 0.0, 0.0))
    k, m, x0 = 50.0, 2.0, 0.3
    omega = np.sqrt(k / m)
    calls = []

    def spring(t, q, v):
        calls.append(t)
        return -k * q
    sim = Simulator(robot, 1e-3, "rk4", q=np.array([x0]), forces=[spring])
    for _ in range(1000):
        sim.step(np.zeros(1))
    exact = x0 * np.cos(omega * sim.time)
    assert abs(sim.q[0] - exact) < 1e-9, sim.q[0] - exact
    assert len(calls) == 4000                          # four stages per step
    assert_close(calls[:4], [0.0, 5e-4, 5e-4, 1e-3], "stage times of the first step")


def test_state_before_step_is_the_evaluated_state(arm7):
    """plant.q_before_step / v_before_step (what the simulate node publishes after the step)
    are the state advance() started from, and after a diverged step the restored state."""
    plant = Plant(arm7, 1e-3, "rk4", q=np.full(7, 0.2), joints=arm7.joint_names)
    plant.drives.command_effort(np.linspace(-3.0, 3.0, 7))
    for _ in range(5):
        q0, v0 = plant.q.copy(), plant.v.copy()
        plant.step()
        np.testing.assert_array_equal(plant.q_before_step, q0)
        np.testing.assert_array_equal(plant.v_before_step, v0)
        assert not np.array_equal(plant.q, q0)
    plant.max_speed = 1e-9   # the next step "diverges": the state goes back
    q0 = plant.q.copy()
    with pytest.raises(DivergenceError):
        plant.step()
    np.testing.assert_array_equal(plant.q, q0)
    np.testing.assert_array_equal(plant.q_before_step, q0)


def test_the_drives_stability_cap_bounds_the_coupled_chain():
    """kernels/plant.py effective_inertias: on the servo dofs S (IDEAL drives not in EFFORT
    mode) s_i = m_i / r_i, r_i = sum_(j in S) sqrt(m_i m_j) |M^-1_ij|; elsewhere s_i = m_i.
    With D = diag(s) / dt on S (every gain at its cap, zero elsewhere) the eigenvalues of
    dt M^-1 D are at most 1 (Gershgorin on the S block, rows weighted by sqrt(r)) for any SPD
    M, where the cap m_i alone allowed up to |S|; random SPD matrices of strong coupling and
    the arm7's, with every dof a servo, and with some dofs undriven, in effort mode or PD."""
    from mbd_ros.kernels.plant import (DRIVE_IV, DRIVE_LAW, DRIVE_MODE, EFFORT, IDEAL, PD,
                                       effective_inertias)
    rng = np.random.default_rng(7)
    matrices = []
    for n in (2, 3, 7, 12):
        for _ in range(20):
            a = rng.standard_normal((n, n))
            matrices.append(a @ a.T + 1e-3 * np.eye(n))    # ill-conditioned, strongly coupled
    arm = mbd_ros.load(str(URDF / "arm7.urdf"))
    matrices.append(arm.mass_matrix(np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])))
    worst_before = 0.0
    for case, m in enumerate(matrices):
        n = m.shape[0]
        minv = np.linalg.inv(m)
        for subset in ("all", "some"):
            if subset == "all":
                dofs, modes, laws = np.arange(n), np.full(n, POSITION), np.full(n, IDEAL)
            else:   # a free base's dofs are undriven; other joints in effort mode or PD
                dofs = np.sort(rng.choice(n, size=rng.integers(1, n + 1), replace=False))
                modes = rng.choice([POSITION, VELOCITY, EFFORT], size=len(dofs))
                laws = rng.choice([IDEAL, PD], size=len(dofs), p=[0.7, 0.3])
            drive_int = np.zeros((4, len(dofs)), dtype=np.int64)
            drive_int[DRIVE_IV], drive_int[DRIVE_MODE], drive_int[DRIVE_LAW] = dofs, modes, laws
            servo = dofs[(modes != EFFORT) & (laws == IDEAL)]
            m_eff, m_stable = np.zeros(n), np.zeros(n)
            assert effective_inertias(m, np.zeros((n, n)), np.zeros((n, n)), drive_int, m_eff,
                                      m_stable) == 0
            np.testing.assert_allclose(m_eff, 1.0 / np.diag(minv), rtol=1e-10)
            assert (m_stable <= m_eff * (1 + 1e-12)).all()
            others = np.setdiff1d(np.arange(n), servo)
            np.testing.assert_array_equal(m_stable[others], m_eff[others])
            if len(servo) == 0:
                continue
            # the eigenvalues of M^-1 D, D = diag(s) on S, are those of the symmetric
            # diag(s_S)^1/2 (M^-1)_SS diag(s_S)^1/2
            block = minv[np.ix_(servo, servo)]
            sym = np.sqrt(np.outer(m_stable[servo], m_stable[servo])) * block
            assert np.linalg.eigvalsh(sym).max() <= 1.0 + 1e-9 * n, (case, subset)
            # and the bound is the S block's: one servo alone keeps its own cap m_i
            if len(servo) == 1:
                assert m_stable[servo[0]] == pytest.approx(m_eff[servo[0]], rel=1e-12)
            worst_before = max(worst_before, np.linalg.eigvalsh(
                np.sqrt(np.outer(m_eff[servo], m_eff[servo])) * block).max())
    assert worst_before > 1.5      # the per-joint cap alone: far beyond 1 on these


def test_stiff_drives_settle_on_a_held_target_at_their_cap(arm7):
    """The arm7 with drive_kp 10000, drive_kd 200 (several joints at the cap) stepped to a held
    target: the motion decays. With the per-joint cap m_i the coupled chain's eigenvalue was
    2.05 and joint_5 kept a +-0.3 rad/s 2-cycle oscillation (semi-implicit Euler and RK4)."""
    q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    for integrator in ("semi_implicit_euler", "rk4"):
        plant = Plant(arm7, 1e-3, integrator, q=q0, kp=10000.0, kd=200.0, limits=True)
        plant.drives.command_position(q0 + 0.2, velocities=np.zeros(7))
        for _ in range(3000):
            plant.step()
        assert np.abs(plant.v).max() < 1e-6, (integrator, plant.v)
        assert np.abs(plant.q - (q0 + 0.2)).max() < 1e-6, (integrator, plant.q - q0 - 0.2)
