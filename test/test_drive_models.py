"""Drives that behave like drives, as a library (no ROS): the "pd" drive model, the actuator's
first-order lag, the joint sensors (delay, encoder quantisation, seeded Gaussian noise) and the
plant's mass mismatch.

References: closed forms (a pendulum held by a PD servo settles where Kp (q_ref - q) equals its
gravity torque m g l sin q, solved by root finding; the lag's step response 1 - exp(-t / T));
exact shifts and bounds (a delay of N cycles, |Q(x) - x| <= r / 2); the chi-square and normal
distributions of the noise's sample variance and mean; Pinocchio's generalized gravity of the
URDF with the same bodies scaled (example-robot-data's model-building is not needed: the arm's
URDF is loaded by Pinocchio itself).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import mbd_ros
from conftest import EPS, assert_close
from mbd_ros.constants import STANDARD_GRAVITY
from mbd_ros.simulation.drives import JointDrives, pd_gains
from mbd_ros.simulation.mismatch import body_scales, scaled_mass_robot
from mbd_ros.simulation.plant import DivergenceError, Plant
from mbd_ros.simulation.sensors import JointSensors
from ros_harness import URDF

ARM7 = str(URDF / "arm7.urdf")
G = abs(STANDARD_GRAVITY[2])
MASS, LENGTH = 2.0, 0.5
# one bob of MASS at LENGTH below a revolute joint about y: potential -m g l cos q, so the
# torque holding it at q is dV/dq = m g l sin q; inertia about the joint m l^2 (+ the bob's 1e-9)
PENDULUM = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="bob">
    <inertial><origin xyz="0 0 {-LENGTH}"/><mass value="{MASS}"/>
      <inertia ixx="1e-9" iyy="1e-9" izz="1e-9" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="swing" type="continuous">
    <parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>
  </joint>
</robot>"""


@pytest.fixture(scope="module")
def pendulum():
    return mbd_ros.load(PENDULUM)


@pytest.fixture(scope="module")
def arm7():
    return mbd_ros.load(ARM7)


# ---------------------------------------------------------------------- pd drive model
def test_pd_default_gains_are_the_joint_inertia_times_the_bandwidth_squared(pendulum):
    """pd_gains: Kp = m_i w^2, Kd = 2 m_i w, w = 2 pi 10 Hz, m_i = 1 / (M^-1)_ii; for the
    one-joint pendulum m_i = M = m l^2."""
    drives = JointDrives(pendulum, ["swing"], model="pd")
    inertia = MASS * LENGTH ** 2 + 1e-9
    w = 2.0 * math.pi * 10.0
    assert_close(drives.pd_kp, [inertia * w * w], "default Kp", rtol=1e-12)
    assert_close(drives.pd_kd, [2.0 * inertia * w], "default Kd", rtol=1e-12)
    kp, kd = pd_gains(pendulum, pendulum.neutral(), [0], bandwidth_hz=3.0, damping_ratio=0.5)
    w = 2.0 * math.pi * 3.0
    assert_close(kp, [inertia * w * w], "Kp at 3 Hz", rtol=1e-12)
    assert_close(kd, [inertia * w], "Kd at 3 Hz, damping ratio 0.5", rtol=1e-12)
    for bad in (-0.5, float("nan"), 1e50):
        with pytest.raises(ValueError, match="damping_ratio must be in"):
            pd_gains(pendulum, pendulum.neutral(), [0], damping_ratio=bad)


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_pd_pendulum_settles_at_the_gravity_over_kp_error(pendulum, integrator):
    """No model compensation: at rest Kp (q_ref - q) = m g l sin q, so the steady-state error is
    g(q) / Kp. The root of that equation (brentq) is the reference. The settling transient decays
    like exp(-zeta w t) with w = sqrt((Kp + m g l cos q) / (m l^2)) ~ 7 rad/s and zeta ~ 0.7 here:
    after 8 s it is below 1e-17 rad; an explicit integrator's fixed point is the ODE's
    equilibrium, so what remains is the round-off of the torque sum (a few eps of Kp q)."""
    kp, kd = 50.0, 5.0
    q_ref = 0.8
    plant = Plant(pendulum, 1e-3, integrator, joints=["swing"], limits=False)
    plant.drives.set_model("pd", kp, kd)
    assert not plant.drives.needs_model_terms()
    plant.drives.command_position([q_ref])
    for _ in range(8000):
        plant.step()
    mgl = MASS * G * LENGTH
    q_ss = optimize.brentq(lambda q: kp * (q_ref - q) - mgl * math.sin(q), 0.0, q_ref,
                           xtol=1e-15)
    tol = 16 * EPS * kp * q_ref / kp + 1e-14
    assert abs(plant.q[0] - q_ss) <= tol, (plant.q[0], q_ss)
    error = q_ref - plant.q[0]
    assert error > 0.1   # the error a servo without compensation really has (~0.13 rad)
    assert abs(error - mgl * math.sin(plant.q[0]) / kp) <= tol
    assert abs(plant.v[0]) <= 1e-12


@pytest.mark.parametrize("kp, kd, stable", [
    (2000.0, 900.0, True), (2000.0, 1100.0, False),        # b = Kd dt / m = 1.8 | 2.2
    (0.8e5, 50.0, True), (1.2e5, 50.0, False)])            # Kp dt = 80 | 120 against 2 Kd = 100
def test_pd_gains_the_plants_step_cannot_keep_stable_are_named(kp, kd, stable):
    """JointDrives.pd_sampling_problems names a joint whose servo gains no step of the plant's
    dt keeps stable (the sampled PD's Jury conditions, Kd dt < 2 m, Kp dt < 2 Kd), and the
    plant shows it: the pendulum without gravity (a double integrator of inertia m l^2) held at
    0 from 0.01 rad stays within 2 x that and ends below a tenth of it after 2 s where they hold
    (the slowest, overdamped case decays as exp(-t Kp / Kd)), and grows 100 x where they fail
    (RK4 integrates a held torque on it exactly)."""
    free = mbd_ros.load(PENDULUM, gravity=(0.0, 0.0, 0.0))
    dt = 1e-3
    plant = Plant(free, dt, "rk4", q=[0.01], joints=["swing"], limits=False)
    plant.drives.set_model("pd", kp, kd)
    plant.drives.command_position([0.0])
    problems = plant.drives.pd_sampling_problems(free.mass_matrix(plant.q), dt)
    assert (problems == []) == stable, problems
    if not stable:
        assert problems[0][0] == "swing"
    peak = 0.0
    for _ in range(2000):
        try:
            plant.step()
        except DivergenceError:      # past max_speed: grown, and halted
            peak = math.inf
        peak = max(peak, abs(plant.q[0]))
        if peak > 1.0:
            break
    if stable:
        assert abs(plant.q[0]) < 1e-3 and peak < 0.02, (plant.q[0], peak)
    else:
        assert peak > 1.0, peak


def test_pd_arm_holding_a_pose_matches_pinocchio_gravity_over_kp(arm7, pin):
    """The 7-DoF arm held by "pd" servos: at rest Kp_i (q_ref_i - q_i) = g_i(q) with g the
    generalized gravity of Pinocchio's model of the same URDF, at the plant's final q. The
    default gains (10 Hz bandwidth on each joint's effective inertia at the pose) settle in
    ~2 s; after 6 s the residual velocity is checked to be tiny, and it bounds what is left of
    the transient in the torque balance."""
    target = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
    plant = Plant(arm7, 1e-3, "rk4", q=target, limits=False)
    plant.drives.set_model("pd", q=target)   # the default gains tuned at the pose held
    plant.drives.command_position(target)
    for _ in range(6000):
        plant.step()
    assert np.max(np.abs(plant.v)) <= 1e-10
    model = pin.buildModelFromUrdf(ARM7)
    data = model.createData()
    g = pin.computeGeneralizedGravity(model, data, plant.q.copy())
    error = target - plant.q
    assert np.max(np.abs(error)) > 1e-4   # uncompensated: a real error
    # Kp e - g(q) = M qdd + (Kd v) at rest; |v| <= 1e-10 rad/s bounds Kd v; qdd is ~Kp |v| dt
    kd_v = np.max(plant.drives.pd_kd) * 1e-10
    assert_close(plant.drives.pd_kp * error, g, "Kp (q_ref - q) vs Pinocchio g(q)",
                 rtol=1e-8 + kd_v / np.max(np.abs(g)))


def test_drive_model_errors_name_the_argument(pendulum):
    with pytest.raises(ValueError, match="drive model must be one of"):
        JointDrives(pendulum, ["swing"], model="servo")
    with pytest.raises(ValueError, match="pd_kp"):
        JointDrives(pendulum, ["swing"], model="pd", pd_kp=[1.0, 2.0])
    with pytest.raises(ValueError, match="pd_kd"):
        JointDrives(pendulum, ["swing"], model="pd", pd_kd=-1.0)
    with pytest.raises(ValueError, match="actuator_bandwidth_hz"):
        JointDrives(pendulum, ["swing"], actuator_bandwidth_hz=float("nan"))


# ---------------------------------------------------------------------- actuator bandwidth
@pytest.mark.parametrize("mode", ["effort", "position"])
def test_actuator_lag_step_response_is_one_minus_exp(pendulum, mode):
    """A step of the commanded torque u at step 0 through a lag of bandwidth f: the torque
    applied over step k is u (1 - exp(-t_k / T)), t_k = (k + 1) dt, T = 1 / (2 pi f) (the exact
    discretisation's value at the step's end). Round-off: each recursion step adds a few eps of
    |u|, so k steps at most 4 k eps |u|. Position mode: the "pd" law's torque at a fixed state
    is the same constant u, lagged alike."""
    f, dt, steps = 25.0, 1e-3, 200
    drives = JointDrives(pendulum, ["swing"], model="pd", pd_kp=40.0, pd_kd=0.0,
                         actuator_bandwidth_hz=f)
    q, v = np.array([0.0]), np.array([0.0])
    if mode == "effort":
        u = 3.0
        drives.command_effort([u])
    else:
        drives.command_position([0.075])
        u = 40.0 * 0.075
    T = 1.0 / (2.0 * math.pi * f)
    for k in range(steps):
        tau = drives.torques(q, v, dt)[0]
        expected = u * (1.0 - math.exp(-(k + 1) * dt / T))
        assert abs(tau - expected) <= 4 * (k + 1) * EPS * abs(u), (k, tau, expected)
    drives.reset()
    assert drives.tau_lag[0] == 0.0


def test_actuator_lag_acts_inside_the_plant(pendulum):
    """Plant.tau (the torques applied) follows the same step response with the lag on, and is
    the command itself with it off."""
    f, dt = 40.0, 1e-3
    plant = Plant(pendulum, dt, "rk4", joints=["swing"], limits=False)
    plant.drives.set_actuator_bandwidth(f)
    plant.drives.command_effort([1.5])
    T = 1.0 / (2.0 * math.pi * f)
    for k in range(50):
        plant.step()
        assert abs(plant.tau[0] - 1.5 * (1.0 - math.exp(-(k + 1) * dt / T))) <= 4 * (k + 1) * EPS
    plant.drives.set_actuator_bandwidth(0.0)
    plant.step()
    assert plant.tau[0] == 1.5


# ---------------------------------------------------------------------- sensors
def test_delay_shifts_the_measured_signal_by_exactly_n_cycles():
    """Without noise or encoder the output of cycle k is the input of cycle k - N, bit for bit;
    before N cycles have passed, the state given to reset()."""
    n_joints, delay = 3, 7
    sensors = JointSensors(n_joints, 1e-3, delay_cycles=delay)
    k = np.arange(200)[:, None]
    signal_q = np.sin(0.05 * k + np.arange(n_joints))
    signal_v = np.cos(0.03 * k * (1 + np.arange(n_joints)))
    sensors.reset(signal_q[0] - 1.0, signal_v[0] + 1.0)
    for i in range(len(k)):
        q_seen, v_seen = sensors.measure(signal_q[i], signal_v[i])
        if i >= delay:
            assert np.array_equal(q_seen, signal_q[i - delay])
            assert np.array_equal(v_seen, signal_v[i - delay])
        else:
            assert np.array_equal(q_seen, signal_q[0] - 1.0)
            assert np.array_equal(v_seen, signal_v[0] + 1.0)


def test_quantisation_error_is_at_most_half_a_count():
    """|Q(q) - q| <= r / 2 (plus the round-off of r round(q / r): a few eps of |q|), Q(q) / r an
    integer, and the velocity the backward difference of the quantised positions over dt."""
    r, dt = 2.0 * math.pi / 2 ** 14, 1e-3
    sensors = JointSensors(4, dt, resolution=r)
    rng = np.random.default_rng(1)
    q = rng.uniform(-3.0, 3.0, 4)
    sensors.reset(q, np.zeros(4))
    previous = sensors.quantise(q)
    worst = 0.0
    for _ in range(2000):
        q = q + rng.normal(0.0, 0.01, 4)
        q_seen, v_seen = sensors.measure(q, np.zeros(4))
        err = np.abs(q_seen - q)
        assert np.all(err <= r / 2 + 4 * EPS * np.abs(q)), err.max()
        counts = q_seen / r
        assert np.all(np.abs(counts - np.round(counts)) <= 4 * EPS * np.abs(counts))
        assert np.array_equal(v_seen, (q_seen - previous) / dt)
        previous = q_seen.copy()
        worst = max(worst, err.max())
    assert worst > 0.4 * r   # the error really spans the half count


def test_noise_std_and_mean_within_their_sampling_bounds():
    """n samples of a constant state with noise std sigma: (n - 1) s^2 / sigma^2 follows
    chi-square(n - 1) and the mean N(0, sigma^2 / n). The bounds are those distributions'
    1e-6 two-sided quantiles (scipy.stats), so a correct generator fails with probability
    ~1e-6 per check; the seed makes the outcome deterministic. Same seed, same noise; another
    seed, other noise; position and velocity noise uncorrelated (|r| within its 1e-6 bound)."""
    sigma_q, sigma_v, n = 2e-4, 3e-3, 20000
    sensors = JointSensors(2, 1e-3, noise_position=sigma_q, noise_velocity=sigma_v, seed=42)
    q0, v0 = np.array([0.5, -1.0]), np.array([0.0, 0.2])
    sensors.reset(q0, v0)
    samples_q, samples_v = np.empty((n, 2)), np.empty((n, 2))
    for i in range(n):
        q_seen, v_seen = sensors.measure(q0, v0)
        samples_q[i], samples_v[i] = q_seen - q0, v_seen - v0
    p = 1e-6
    lo, hi = stats.chi2.ppf(p / 2, n - 1), stats.chi2.ppf(1 - p / 2, n - 1)
    z = stats.norm.ppf(1 - p / 2)
    for samples, sigma, what in ((samples_q, sigma_q, "position"), (samples_v, sigma_v,
                                                                    "velocity")):
        for j in range(2):
            x = samples[:, j]
            statistic = (n - 1) * x.var(ddof=1) / sigma ** 2
            assert lo <= statistic <= hi, f"{what} {j}: variance statistic {statistic:.1f} " \
                f"outside [{lo:.1f}, {hi:.1f}]"
            assert abs(x.mean()) <= z * sigma / math.sqrt(n), f"{what} {j}: mean {x.mean()}"
    r = np.corrcoef(samples_q[:, 0], samples_v[:, 0])[0, 1]
    assert abs(r) <= z / math.sqrt(n)
    again = JointSensors(2, 1e-3, noise_position=sigma_q, noise_velocity=sigma_v, seed=42)
    again.reset(q0, v0)
    assert np.array_equal(again.measure(q0, v0)[0] - q0, samples_q[0])
    other = JointSensors(2, 1e-3, noise_position=sigma_q, noise_velocity=sigma_v, seed=43)
    other.reset(q0, v0)
    assert not np.array_equal(other.measure(q0, v0)[0] - q0, samples_q[0])


def test_sensors_off_by_default_and_bad_options_named():
    sensors = JointSensors(2, 1e-3)
    assert not sensors.active
    q, v = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    q_seen, v_seen = sensors.measure(q, v)
    assert np.array_equal(q_seen, q) and np.array_equal(v_seen, v)
    for kwargs, name in (({"noise_position": -1.0}, "noise_position"),
                         ({"noise_velocity": float("inf")}, "noise_velocity"),
                         ({"delay_cycles": 1.5}, "delay_cycles"),
                         ({"delay_cycles": 10 ** 6}, "delay_cycles"),
                         ({"resolution": -0.1}, "resolution"), ({"seed": -3}, "seed")):
        with pytest.raises(ValueError, match=name):
            JointSensors(2, 1e-3, **kwargs)
    with pytest.raises(ValueError, match="dt"):
        JointSensors(2, 0.0)


# ---------------------------------------------------------------------- mass mismatch
def test_mass_scale_multiplies_the_gravity_torque(arm7, pin):
    """One factor s for every body: the plant's gravity torque is s g(q) (the torques are linear
    in the inertial parameters), g from Pinocchio. One body's factor: Pinocchio's model with that
    body's inertia scaled (mass and rotational inertia, same centre of mass) is the reference.
    The URDF the controller uses (arm7) is unchanged."""
    model = pin.buildModelFromUrdf(ARM7)
    data = model.createData()
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, arm7.nq)
    zero = np.zeros(arm7.nv)
    g = pin.computeGeneralizedGravity(model, data, q)
    heavier = scaled_mass_robot(arm7, 1.25)
    assert_close(heavier.inverse_dynamics(q, zero, zero), 1.25 * g, "gravity of the 1.25 plant")
    assert_close(arm7.inverse_dynamics(q, zero, zero), g, "the controller's URDF is unchanged")
    assert scaled_mass_robot(arm7, 1.0) is arm7
    one = scaled_mass_robot(arm7, {"link_3": 1.7})
    joint = model.getJointId("joint_3")
    inertia = model.inertias[joint]
    model.inertias[joint] = pin.Inertia(1.7 * inertia.mass, inertia.lever, 1.7 * inertia.inertia)
    g_one = pin.computeGeneralizedGravity(model, model.createData(), q)
    assert_close(one.inverse_dynamics(q, zero, zero), g_one, "gravity with link_3 x 1.7")
    assert np.max(np.abs(g_one - g)) > 1e-3   # the scaled body matters at this q


def test_mass_scale_errors_name_the_link_or_value(arm7):
    with pytest.raises(ValueError, match="'no_such_link' is not a moving body"):
        body_scales(arm7, {"no_such_link": 1.1})
    with pytest.raises(ValueError, match="mass scale of 'link_2' must be a finite number > 0"):
        body_scales(arm7, {"link_2": 0.0})
    with pytest.raises(ValueError, match="mass scale must be a number"):
        body_scales(arm7, "heavy")


# ---------------------------------------------------------------------- friction mismatch
def _urdf_dynamics(path):
    """{joint: (damping, friction)} read from the URDF file with the standard library."""
    import xml.etree.ElementTree as ET
    out = {}
    for joint in ET.parse(path).getroot().iter("joint"):
        dynamics = joint.find("dynamics")
        if dynamics is not None:
            out[joint.get("name")] = (float(dynamics.get("damping", 0.0)),
                                      float(dynamics.get("friction", 0.0)))
    return out


def test_friction_scale_multiplies_the_passive_joint_forces(arm7):
    """The passive joint force of the URDF is -(d v + F tanh(v / v_f)) per joint (d, F its
    <dynamics damping friction>, v_f the model's friction velocity); with every joint's <dynamics>
    scaled by s, ID(q, v, 0) grows by (s - 1)(d v + F tanh(v / v_f)), d and F read from the
    file itself; one joint's factor changes that joint's term only."""
    from mbd_ros.simulation.mismatch import scaled_friction_urdf
    dynamics = _urdf_dynamics(ARM7)
    d = np.array([dynamics[n][0] for n in arm7.joint_names])
    f = np.array([dynamics[n][1] for n in arm7.joint_names])
    assert d.any() and f.any()
    rng = np.random.default_rng(5)
    q, v, zero = rng.uniform(-1, 1, 7), rng.uniform(-0.5, 0.5, 7), np.zeros(7)
    v_f = arm7.model.friction_velocity
    passive = d * v + f * np.tanh(v / v_f)
    doubled = mbd_ros.load(scaled_friction_urdf(ARM7, 2.0))
    assert_close(doubled.inverse_dynamics(q, v, zero) - arm7.inverse_dynamics(q, v, zero),
                 passive, "ID difference with friction x 2")
    one = mbd_ros.load(scaled_friction_urdf(ARM7, {"joint_2": 3.0}))
    expected = np.zeros(7)
    expected[1] = 2.0 * passive[1]
    assert_close(one.inverse_dynamics(q, v, zero) - arm7.inverse_dynamics(q, v, zero),
                 expected, "ID difference with joint_2's friction x 3")
    with pytest.raises(ValueError, match="not joints of the URDF"):
        scaled_friction_urdf(ARM7, {"joint_9": 2.0})
    with pytest.raises(ValueError, match="friction scale must be a finite number >= 0"):
        scaled_friction_urdf(ARM7, -1.0)


def test_a_second_urdf_must_have_the_same_joints(arm7):
    from mbd_ros.simulation.mismatch import check_same_joints
    check_same_joints(arm7, mbd_ros.load(ARM7))   # the same joints: accepted
    gantry = mbd_ros.load(str(URDF / "gantry.urdf"))
    with pytest.raises(ValueError, match=r"plant_urdf: .*missing \['joint_1'"):
        check_same_joints(arm7, gantry)
