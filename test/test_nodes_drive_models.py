"""Drives that behave like drives, as a process: the simulate node with `drive_model: pd`,
Gaussian measurement noise and a measurement delay, held at a position by a controller-like
test publisher (it streams the same position command, as a controller holding a pose).

Check (the issue's): "a drive with noise and delay gives a tracking error in the range the
parameters predict". Predictions, none taken from the node's output:

- holding: the servo settles where Kp (q_ref - q) = g(q) (no model compensation), solved here
  with Pinocchio's gravity of the same URDF and Kp = m_i (2 pi 10 Hz)^2, m_i = 1 / (M(q0)^-1)_ii
  (the documented default, M from Pinocchio's CRBA); the tracking error the controller sees,
  q_ref - q_seen, then has mean g(q)/Kp and standard deviation sigma_q: its sample mean must
  lie within the normal 1e-6 quantile of sigma_q / sqrt(N) of the prediction and
  (N - 1) s^2 / sigma_q^2 within the chi-square(N - 1) 1e-6 quantiles (the velocity alike,
  mean 0, sigma_v);
- delay: while the arm moves to a new target, q_seen of the cycle stamped t minus the true
  position of the cycle stamped t - D period (from ~/accelerations, which carries the true
  state of each cycle) is noise of sigma_q alone (chi-square bound on its mean square), while
  the shifts D - 1 and D + 1 leave the motion of a cycle in it (mean square far above the bound):
  the delay is exactly D cycles.

Bounded in time: every wait has a deadline; nothing asserts on timing (loaded 2-core machines).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import import_oracle  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402
from mbd_ros.simulation.sensors import JointSensors  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, set_parameters, warm_numba_cache  # noqa: E402

pin = import_oracle("pinocchio")

ARM = str(URDF / "arm7.urdf")
NAMES = [f"joint_{i}" for i in range(1, 8)]
Q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
STEP = np.array([0.15, -0.1, 0.1, 0.15, -0.2, 0.2, -0.25])   # the move that shows the delay
RATE = 500.0
PERIOD_NS = int(round(1e9 / RATE))
SIGMA_Q, SIGMA_V, DELAY = 2e-4, 2e-3, 5
PD_BANDWIDTH = 2.0 * math.pi * 10.0   # rad/s: the documented default drive_pd_bandwidth_hz
P = 1e-6                              # each statistical check fails a correct node w.p. ~P
HOLD_SAMPLES = 400
NS = "/drm"


def stamp_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def chi2_bounds(dof):
    return stats.chi2.ppf(P / 2, dof), stats.chi2.ppf(1 - P / 2, dof)


@pytest.fixture(scope="module")
def ros():
    robot = mbd_ros.load(ARM)
    warm_numba_cache(robot)
    # the kernels of this feature too (the node would compile them at configure)
    plant = Plant(robot, 1.0 / RATE, "rk4", q=Q0, limits=True)
    plant.drives.set_model("pd", q=Q0)
    plant.drives.set_actuator_bandwidth(100.0)
    plant.drives.command_position(Q0)
    plant.step()
    JointSensors(7, 1.0 / RATE, SIGMA_Q, SIGMA_V, DELAY).measure(Q0, np.zeros(7))
    ros = Ros(salt=83)
    from diagnostic_msgs.msg import DiagnosticArray
    ros.subscribe(DiagnosticArray, "/diagnostics")
    yield ros
    ros.close()


def diag_values(ros, name):
    """{key: value} of the latest /diagnostics status of node `name` ('ns/node'), or None."""
    from mbd_ros.nodes.diagnostics import values_of
    found = None
    for msg in ros.messages("/diagnostics"):
        for status in msg.status:
            if status.name == f"{name}: dynamics":
                found = status
    return values_of(found) if found is not None else None


def predicted_hold(q_ref):
    """(q_ss, Kp): the pose where Kp (q_ref - q) = g(q) (Pinocchio's gravity), and Kp."""
    model = pin.buildModelFromUrdf(ARM)
    data = model.createData()
    m = pin.crba(model, data, Q0.copy())
    m = np.triu(m) + np.triu(m, 1).T   # Pinocchio fills the upper triangle
    inertia = 1.0 / np.diagonal(np.linalg.inv(m))
    kp = inertia * PD_BANDWIDTH ** 2

    def residual(q):
        return kp * (q_ref - q) - pin.computeGeneralizedGravity(model, data, np.asarray(q))
    solution = optimize.root(residual, q_ref, tol=1e-14)
    assert solution.success and np.max(np.abs(residual(solution.x))) < 1e-9
    return solution.x, kp


def test_noise_and_delay_give_the_predicted_tracking_error(ros):
    ros.start("forward_dynamics", {
        "urdf_path": ARM, "mode": "simulate", "joints": NAMES, "initial_positions": Q0.tolist(),
        "hold_initial_positions": True, "rate_hz": RATE, "wrench_joints": ["none"],
        # stamps in simulated time: one period per cycle, whatever the load (wall-clock stamps
        # jump when a loaded plant gives up late cycles, and the pairing by stamp would break)
        "publish_clock": True, "use_sim_time": False, "diagnostics_period": 0.5,
        "drive_model": "pd", "measurement_noise_position": SIGMA_Q,
        "measurement_noise_velocity": SIGMA_V, "noise_seed": 11,
        "measurement_delay_cycles": DELAY}, remaps={"__ns": NS})
    states = ros.subscribe(JointState, f"{NS}/joint_states")
    truth = ros.subscribe(JointTrajectory, f"{NS}/forward_dynamics/accelerations")
    ros.spin_until(lambda: len(states) > 0 and len(truth) > 0, READY_TIMEOUT,
                   what=f"{NS}/joint_states and ~/accelerations")
    target = Q0 + STEP
    command = Float64MultiArray(data=target.tolist())
    pub = ros.matched_publisher(Float64MultiArray, f"{NS}/forward_dynamics/position_commands")

    # ---- the controller-like publisher streams the target; wait for the move and the rest
    q_ss, kp = predicted_hold(target)

    def settled():
        last = ros.last(f"{NS}/forward_dynamics/accelerations")
        point = last.points[0]
        return (np.max(np.abs(np.array(point.positions) - q_ss)) < 1e-6
                and np.max(np.abs(point.velocities)) < 1e-6)
    pub.publish(command)
    ros.spin_until(settled, 120.0, every=0.02, action=lambda: pub.publish(command),
                   what="the pd servos to settle at the predicted pose (1e-6 rad)")
    settled_ns = stamp_ns(ros.last(f"{NS}/joint_states"))
    ros.spin_until(lambda: sum(stamp_ns(m) > settled_ns for _, m in states) >= HOLD_SAMPLES,
                   120.0, every=0.02, action=lambda: pub.publish(command),
                   what=f"{HOLD_SAMPLES} joint_states while holding")

    # ---- holding: the tracking error the controller sees
    seen = {stamp_ns(m): m for _, m in states}
    true = {stamp_ns(m): m.points[0] for _, m in truth}
    hold = [m for t, m in sorted(seen.items()) if t > settled_ns]
    assert all(list(m.name) == NAMES for m in hold)
    error = target - np.array([m.position for m in hold])
    velocity = np.array([m.velocity for m in hold])
    n = len(hold)
    lo, hi = chi2_bounds(n - 1)
    z = stats.norm.ppf(1 - P / 2)
    predicted_error = target - q_ss   # = g(q_ss) / Kp
    assert np.max(np.abs(predicted_error)) > 1e-3   # joint_1 (vertical axis) has no gravity
    for j, name in enumerate(NAMES):
        # the true state is within 1e-6 rad of q_ss and at rest (settled), hence the 1e-6
        assert abs(error[:, j].mean() - predicted_error[j]) <= z * SIGMA_Q / math.sqrt(n) + \
            1e-6, f"{name}: mean tracking error {error[:, j].mean():.6g}, predicted " \
            f"g/Kp = {predicted_error[j]:.6g}"
        statistic = (n - 1) * error[:, j].var(ddof=1) / SIGMA_Q ** 2
        assert lo <= statistic <= hi, f"{name}: position noise statistic {statistic:.1f} " \
            f"outside [{lo:.1f}, {hi:.1f}] (sigma {SIGMA_Q})"
        assert abs(velocity[:, j].mean()) <= z * SIGMA_V / math.sqrt(n) + 1e-6
        statistic = (n - 1) * velocity[:, j].var(ddof=1) / SIGMA_V ** 2
        assert lo <= statistic <= hi, f"{name}: velocity noise statistic {statistic:.1f}"

    # ---- the move: the delay is exactly DELAY cycles
    def mean_square(shift):
        """Mean square of q_seen(t) - q_true(t - shift period) over the cycles of the move
        (true speed above 0.5 rad/s on some joint), and the number of terms."""
        terms = []
        for t, m in seen.items():
            before = true.get(t - shift * PERIOD_NS)
            if before is None or t > settled_ns:
                continue
            if np.max(np.abs(before.velocities)) < 0.5:
                continue
            terms.append(np.array(m.position) - np.array(before.positions))
        terms = np.array(terms)
        return float(np.mean(terms ** 2)) if len(terms) else math.nan, terms.size
    at_delay, count = mean_square(DELAY)
    assert count >= 70, f"only {count} samples of the move were received with their truth"
    lo, hi = chi2_bounds(count)
    assert lo <= count * at_delay / SIGMA_Q ** 2 <= hi, \
        f"q_seen(t) - q(t - {DELAY} cycles): mean square {at_delay:.3g}, expected sigma^2 = " \
        f"{SIGMA_Q ** 2:.3g} (chi-square bounds [{lo / count:.3f}, {hi / count:.3f}] of it)"
    for shift in (DELAY - 1, DELAY + 1, 0):
        other, other_count = mean_square(shift)
        assert other_count and other_count * other / SIGMA_Q ** 2 > hi * other_count / count, \
            f"a shift of {shift} cycles fits the measurements as well as {DELAY}"


def test_the_plant_simulates_the_mismatched_model(ros):
    """plant_mass_scale 1.2, plant_link_mass_scales ["link_3=2.0"] and plant_friction_scale 3:
    every ~/accelerations message (the true state q, v, the applied torque tau and the
    accelerations of the cycle) satisfies qdd = ABA of Pinocchio's model of the same URDF with
    every body's inertia x 1.2 and link_3's x 2.4, under tau minus 3 times the URDF's passive
    joint force d v + F tanh(v / v_f) (d, F read from the file). The controller's URDF is not
    what is simulated: Pinocchio's unscaled model gives other accelerations."""
    import xml.etree.ElementTree as ET
    from mbd_ros.constants import FRICTION_VELOCITY
    ns = "/mis"
    plant = ros.start("forward_dynamics", {
        "urdf_path": ARM, "mode": "simulate", "joints": NAMES, "initial_positions": Q0.tolist(),
        "initial_velocities": [0.3, -0.2, 0.4, 0.1, -0.5, 0.6, 0.2], "rate_hz": RATE,
        "wrench_joints": ["none"], "publish_clock": False, "use_sim_time": False,
        "plant_mass_scale": 1.2, "plant_link_mass_scales": ["link_3=2.0"],
        "plant_friction_scale": 3.0, "diagnostics_period": 0.2}, remaps={"__ns": ns})
    truth = ros.subscribe(JointTrajectory, f"{ns}/forward_dynamics/accelerations")
    ros.spin_until(lambda: len(truth) >= 20, READY_TIMEOUT, what=f"{ns} ~/accelerations")
    model = pin.buildModelFromUrdf(ARM)
    for name, factor in (("joint_1", 1.2), ("joint_2", 1.2), ("joint_3", 2.4),
                         ("joint_4", 1.2), ("joint_5", 1.2), ("joint_6", 1.2), ("joint_7", 1.2)):
        joint = model.getJointId(name)   # each joint's child body is one link of arm7
        inertia = model.inertias[joint]
        model.inertias[joint] = pin.Inertia(factor * inertia.mass, inertia.lever,
                                            factor * inertia.inertia)
    plain = pin.buildModelFromUrdf(ARM)
    dynamics = {j.get("name"): j.find("dynamics") for j in ET.parse(ARM).getroot().iter("joint")}
    d = np.array([float(dynamics[n].get("damping")) for n in NAMES])
    f = np.array([float(dynamics[n].get("friction")) for n in NAMES])
    checked = 0
    for _, msg in truth[:40]:
        assert list(msg.joint_names) == NAMES
        point = msg.points[0]
        q, v = np.array(point.positions), np.array(point.velocities)
        tau = np.array(point.effort) - 3.0 * (d * v + f * np.tanh(v / FRICTION_VELOCITY))
        expected = pin.aba(model, model.createData(), q, v, tau)
        scale = max(1.0, np.max(np.abs(expected)))
        assert np.max(np.abs(np.array(point.accelerations) - expected)) <= 1e-8 * scale, \
            (np.array(point.accelerations), expected)
        unscaled = pin.aba(plain, plain.createData(), q, v, tau)
        assert np.max(np.abs(unscaled - expected)) > 1e-3 * scale
        checked += 1
    assert checked >= 20
    # runtime: the drive model and the actuator lag apply at once, the sensors and the
    # mismatch are read at configure (refused with the reason)
    results = set_parameters(ros, f"{ns[1:]}/forward_dynamics", drive_model="pd",
                             actuator_bandwidth_hz=100.0, drive_pd_kp=[50.0])
    assert all(ok for ok, _ in results), results
    ros.spin_until(lambda: (diag_values(ros, f"{ns[1:]}/forward_dynamics") or {}).get(
        "drive model") == "pd", 30.0, what="/diagnostics reporting drive model pd")
    values = diag_values(ros, f"{ns[1:]}/forward_dynamics")
    assert values["actuator bandwidth [Hz]"] == "100"
    assert "pd gains unstable at this rate" not in values, values
    # servo gains no plant step keeps stable (Kd dt >= 2 m_i on every joint of the arm: its
    # largest 1 / (M^-1)_ii is below 5 kg m^2) are accepted, said and shown
    node = f"{ns[1:]}/forward_dynamics"
    [(ok, reason)] = set_parameters(ros, node, drive_pd_kd=[1e4 * RATE])
    assert ok, reason
    ros.spin_until(lambda: (diag_values(ros, node) or {}).get(
        "pd gains unstable at this rate") == ", ".join(NAMES), 30.0,
        what="/diagnostics naming the joints whose pd gains the step cannot keep stable")
    assert "drive_model pd: gains no" in plant.output()
    [(ok, reason)] = set_parameters(ros, node, drive_pd_kd=[0.0])     # derived again
    assert ok, reason
    ros.spin_until(lambda: "pd gains unstable at this rate" not in (
        diag_values(ros, node) or {"pd gains unstable at this rate": 1}), 30.0,
        what="/diagnostics without the unstable pd gains")
    [(ok, reason)] = set_parameters(ros, f"{ns[1:]}/forward_dynamics", drive_model="servo")
    assert not ok and "must be one of" in reason
    [(ok, reason)] = set_parameters(ros, f"{ns[1:]}/forward_dynamics", drive_pd_kp=[1.0, 2.0])
    assert not ok and "drive_pd_kp has 2 values" in reason, reason
    [(ok, reason)] = set_parameters(ros, f"{ns[1:]}/forward_dynamics",
                                    measurement_noise_position=0.1)
    assert not ok and "read at configure only" in reason


def test_plant_urdf_is_simulated_and_must_have_the_same_joints(ros, tmp_path):
    """plant_urdf: a copy of the arm's URDF with link_4 2.5 kg heavier (mass only, same centre
    of mass and inertia tensor) is what the plant simulates: every ~/accelerations message
    matches Pinocchio's ABA of that file, at the message's own state and applied torque minus
    the URDF's passive joint force (read from the file). A URDF with other joints fails the
    configure (the process exits with 1) naming the joints that are missing."""
    import xml.etree.ElementTree as ET
    from mbd_ros.constants import FRICTION_VELOCITY
    tree = ET.parse(ARM)
    mass = next(link for link in tree.getroot().iter("link")
                if link.get("name") == "link_4").find("inertial").find("mass")
    mass.set("value", repr(float(mass.get("value")) + 2.5))
    heavier = tmp_path / "arm7_heavier.urdf"
    tree.write(heavier)
    ns = "/pu"
    ros.start("forward_dynamics", {
        "urdf_path": ARM, "mode": "simulate", "joints": NAMES, "initial_positions": Q0.tolist(),
        "initial_velocities": [0.2, 0.1, -0.3, 0.2, 0.1, -0.2, 0.3], "rate_hz": RATE,
        "wrench_joints": ["none"], "publish_clock": False, "use_sim_time": False,
        "plant_urdf": str(heavier)}, remaps={"__ns": ns})
    truth = ros.subscribe(JointTrajectory, f"{ns}/forward_dynamics/accelerations")
    ros.spin_until(lambda: len(truth) >= 20, READY_TIMEOUT, what=f"{ns} ~/accelerations")
    model = pin.buildModelFromUrdf(str(heavier))
    plain = pin.buildModelFromUrdf(ARM)
    dynamics = {j.get("name"): j.find("dynamics") for j in tree.getroot().iter("joint")}
    d = np.array([float(dynamics[n].get("damping")) for n in NAMES])
    f = np.array([float(dynamics[n].get("friction")) for n in NAMES])
    for _, msg in truth[:20]:
        point = msg.points[0]
        q, v = np.array(point.positions), np.array(point.velocities)
        tau = np.array(point.effort) - (d * v + f * np.tanh(v / FRICTION_VELOCITY))
        expected = pin.aba(model, model.createData(), q, v, tau)
        scale = max(1.0, np.max(np.abs(expected)))
        assert np.max(np.abs(np.array(point.accelerations) - expected)) <= 1e-8 * scale
        assert np.max(np.abs(pin.aba(plain, plain.createData(), q, v, tau) - expected)) > \
            1e-3 * scale   # the controller's URDF is not the one simulated
    child = ros.start("forward_dynamics", {
        "urdf_path": ARM, "mode": "simulate", "joints": NAMES,
        "plant_urdf": str(URDF / "gantry.urdf")}, name="fd_bad_plant")
    child.must_live = False
    code = child.wait(READY_TIMEOUT)
    out = child.output()
    assert code == 1, out[-3000:]
    assert "configure failed" in out and "plant_urdf" in out and "missing ['joint_1'" in out, \
        out[-3000:]
