"""The simulate plant as a simulator and as a real robot's stand-in, as processes (rclpy):

- starting real robots: the Panda of example-robot-data (panda_joint4's limits exclude 0)
  starts with the defaults (joint 4 at its nearest limit, said at INFO); an explicit
  initial_positions outside the limits, or of the wrong length, fails configure with a message
  naming the parameter, how many values it needs and their order (`joints`);
- the simulator services ~/pause, ~/unpause, ~/step (step_cycles) and ~/set_state, lockstep-safe
  with the /clock the plant publishes: paused, neither joint_states nor /clock move; a step of
  N cycles advances /clock by exactly N periods and publishes the N states in between; the
  state set is the one the next joint_states carries; bad set_state requests are refused,
  naming the joint, nothing applied; unpause resumes.

References: the URDF limits, the step period 1 / rate_hz (integer nanoseconds), the values
sent. Every wait is on what is needed, bounded in time.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from builtin_interfaces.msg import Time  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, stamp_key, warm_numba_cache  # noqa: E402

ARM = str(URDF / "arm7.urdf")
NAMES = [f"joint_{i}" for i in range(1, 8)]
Q0 = [0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]
RATE = 500.0
PERIOD_NS = 2_000_000
PANDA = "panda_description/urdf/panda.urdf"
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1",
                                                          "panda_finger_joint2"]


@pytest.fixture(scope="module")
def ros():
    warm_numba_cache(mbd_ros.load(ARM))
    ros = Ros(salt=131)
    yield ros
    ros.close()


def value(x):
    pv = ParameterValue()
    if isinstance(x, int):
        pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, x
    elif isinstance(x, float):
        pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, x
    else:
        pv.type = ParameterType.PARAMETER_DOUBLE_ARRAY
        pv.double_array_value = [float(v) for v in x]
    return pv


def set_values(ros, service, **values):
    """SetParameters on `service`; [(successful, reason)] in the order given."""
    request = SetParameters.Request()
    request.parameters = [Parameter(name=n, value=value(x)) for n, x in values.items()]
    return [(r.successful, r.reason) for r in ros.call(SetParameters, service, request).results]


def trigger(ros, service):
    r = ros.call(Trigger, service, Trigger.Request())
    return r.success, r.message


# ---------------------------------------------------------------------- real robots
def test_panda_starts_with_the_defaults(ros, erd_dir):
    """No initial_positions: panda_joint4 (limits [-3.0718, -0.0698]) starts at its nearest
    limit, logged at INFO naming it; the drives hold that start (hold_initial_positions)."""
    panda = mbd_ros.load(str(erd_dir / PANDA))
    warm_numba_cache(panda)
    lower, upper = (np.asarray(x) for x in panda.position_limits)
    j4 = panda.joint_names.index("panda_joint4")
    assert not lower[j4] <= 0.0 <= upper[j4]
    ns = "/panda"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    child = ros.start("forward_dynamics", {"urdf_path": str(erd_dir / PANDA), "mode": "simulate",
                                           "hold_initial_positions": True,
                                           "wrench_joints": ["none"]}, remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 10, READY_TIMEOUT, what="the Panda's joint_states")
    msg = states[-1][1]
    assert list(msg.name) == PANDA_JOINTS
    q = np.array(msg.position)
    assert abs(q[j4] - upper[j4]) < 1e-3, q          # the nearest limit: upper, -0.0698
    assert (q >= lower - 1e-9).all() and (q <= upper + 1e-9).all(), q
    assert np.abs(np.delete(q, j4)).max() < 1e-3, q   # the other joints at zero
    log = child.output()
    assert re.search(r"INFO.*nearest limit: panda_joint4 = -0\.0698", log), log[-3000:]


@pytest.mark.parametrize("positions, needle", [
    ([0.0] * 9, r"initial_positions: 'panda_joint4' = 0 outside \[-3\.0718, -0\.0698\]"),
    ([0.0] * 3, r"initial_positions has 3 values; it needs 9"),
])
def test_a_wrong_explicit_start_is_refused_with_what_it_needs(ros, erd_dir, positions, needle):
    child = ros.start("forward_dynamics", {"urdf_path": str(erd_dir / PANDA), "mode": "simulate",
                                           "initial_positions": positions,
                                           "wrench_joints": ["none"]},
                      remaps={"__ns": "/panda_bad"})
    child.must_live = False
    code = child.wait(READY_TIMEOUT)
    log = child.output()
    assert code == 1, log[-3000:]
    assert re.search(needle, log), log[-3000:]
    # how many values, in which order
    assert "9" in log and "`joints`" in log and str(PANDA_JOINTS) in log, log[-3000:]


# ---------------------------------------------------------------------- simulator services
def clock_ns(ros):
    m = ros.last("/clock")
    return None if m is None else stamp_key(m.clock)


def test_pause_step_set_state_unpause(ros):
    ns = "/svc"
    node = "svc/forward_dynamics"
    clock = ros.subscribe(Clock, "/clock")
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    ros.start("forward_dynamics", {"urdf_path": ARM, "mode": "simulate", "rate_hz": RATE,
                                   "publish_clock": True, "initial_positions": Q0,
                                   "hold_initial_positions": True, "wrench_joints": ["none"]},
              remaps={"__ns": ns})
    ros.spin_until(lambda: len(clock) > 20 and len(states) > 20, READY_TIMEOUT,
                   what="/clock and joint_states")
    # a step while running is refused
    ok, message = trigger(ros, f"/{node}/step")
    assert not ok and "pause" in message, message
    # ---- pause: nothing moves
    ok, message = trigger(ros, f"/{node}/pause")
    assert ok, message
    paused_ns = round(float(re.search(r"t = ([0-9.]+) s", message).group(1)) * 1e9)
    # every /clock published before the pause arrives (reliable): the last is the paused time
    # (and the state before the last step: topics are not ordered with each other)
    ros.spin_until(lambda: clock_ns(ros) == paused_ns and stamp_key(
        ros.last(f"{ns}/joint_states").header.stamp) == paused_ns - PERIOD_NS, 30.0,
        what="/clock at the paused time and the state before it")
    n_clock, n_states = len(clock), len(states)
    ros.spin(1.0)
    assert len(clock) == n_clock and len(states) == n_states, "paused, yet publishing"
    # ---- step N: /clock advances by exactly N periods, N states in between
    n = 25
    assert set_values(ros, f"/{node}/set_parameters", step_cycles=n) == [(True, "")]
    ok, message = trigger(ros, f"/{node}/step")
    assert ok and f"stepped {n} of {n}" in message, message
    ros.spin_until(lambda: clock_ns(ros) == paused_ns + n * PERIOD_NS, 30.0,
                   what=f"/clock {n} steps later")
    last_stepped = paused_ns + (n - 1) * PERIOD_NS    # the state before the last step
    ros.spin_until(lambda: stamp_key(ros.last(f"{ns}/joint_states").header.stamp)
                   == last_stepped, 30.0, what=f"the last of the {n} stepped states")
    ros.spin(0.5)
    assert clock_ns(ros) == paused_ns + n * PERIOD_NS       # and no further
    # the N cycles ran at once: the publishers (/clock keeps 1, joint_states 10) may replace
    # some of the burst before this process takes it; what arrives is on the grid, in order
    clocks = [stamp_key(m.clock) for _, m in clock[n_clock:]]
    stamps = [stamp_key(m.header.stamp) for _, m in states[n_states:]]
    assert 1 <= len(clocks) <= n and 1 <= len(stamps) <= n, (len(clocks), len(stamps))
    assert set(clocks) <= {paused_ns + k * PERIOD_NS for k in range(1, n + 1)}, clocks
    assert set(stamps) <= {paused_ns + k * PERIOD_NS for k in range(n)}, stamps
    assert stamps == sorted(set(stamps)) and clocks == sorted(set(clocks))
    # ---- set_state: refused entries name the joint, nothing applied
    service = f"/{node}/set_state"
    for values, needle in (({"nope": 0.1}, "unknown joint 'nope'"),
                           ({"joint_1": [float("nan"), 0.0]}, "NaN"),
                           ({"joint_1": [0.1, 0.2, 0.3]}, "3 values"),
                           ({"joint_4": -3.0}, "outside its URDF limits"),
                           ({"joint_2": 0.0, "joint_1": 1.0, "joint_1 ": 0.0}, "unknown joint")):
        results = set_values(ros, service, **values)
        assert len(results) == len(values)
        assert not any(ok for ok, _ in results), results
        assert any(needle in reason and ("joint" in reason) for _, reason in results), results
    # a good one: the next joint_states carries it (joints not named keep their state)
    target = {"joint_1": [0.5, 0.1], "joint_3": -0.2, "joint_6": [1.0]}
    assert all(ok for ok, _ in set_values(ros, service, **target))
    assert set_values(ros, f"/{node}/set_parameters", step_cycles=1) == [(True, "")]
    ok, message = trigger(ros, f"/{node}/step")
    assert ok, message
    ros.spin_until(lambda: stamp_key(ros.last(f"{ns}/joint_states").header.stamp)
                   == paused_ns + n * PERIOD_NS, 30.0, what="the state set")
    msg = ros.last(f"{ns}/joint_states")
    q, v = np.array(msg.position), np.array(msg.velocity)
    assert (q[0], v[0]) == (0.5, 0.1)
    assert (q[2], v[2]) == (-0.2, 0.0)
    assert (q[5], v[5]) == (1.0, 0.0)
    # ---- unpause: it runs again
    ok, message = trigger(ros, f"/{node}/unpause")
    assert ok and "resumed" in message, message
    resumed = clock_ns(ros)
    ros.spin_until(lambda: clock_ns(ros) >= resumed + 100 * PERIOD_NS and stamp_key(
        ros.last(f"{ns}/joint_states").header.stamp) >= resumed + 100 * PERIOD_NS, 30.0,
        what="/clock and joint_states after unpause")
    d = ros.wait_diagnostics(node, lambda d: d.get("paused") == "no")
    assert d["paused"] == "no"


@pytest.fixture
def own_domain(ros):
    """A domain of its own: the plants of the other tests publish /clock on the module's."""
    other = Ros(salt=151)
    yield other
    other.close()


def test_pause_in_lockstep_with_an_external_clock(own_domain):
    """use_sim_time, an external /clock: paused, the plant takes no step for the /clock
    messages that keep coming; ~/step runs its cycles on the plant's grid; after ~/unpause the
    next /clock anchors it again (its states stamped with that /clock's time)."""
    ros = own_domain
    ns = "/lock"
    node = "lock/forward_dynamics"
    topic = f"{ns}/joint_states"
    states = ros.subscribe(JointState, topic)
    ros.start("forward_dynamics", {"urdf_path": ARM, "mode": "simulate", "rate_hz": RATE,
                                   "use_sim_time": True, "initial_positions": Q0,
                                   "hold_initial_positions": True, "wrench_joints": ["none"]},
              remaps={"__ns": ns})
    now = {"ns": 1_000_000_000}

    def tick():   # the external clock: 10 ms of simulated time per message
        now["ns"] += 10_000_000
        ros.publish(Clock, "/clock", Clock(clock=Time(sec=now["ns"] // 10**9,
                                                      nanosec=now["ns"] % 10**9)))
    ros.spin_until(lambda: len(states) > 20, READY_TIMEOUT, every=0.02, action=tick,
                   what="states in lockstep with /clock")
    ok, message = trigger(ros, f"/{node}/pause")
    assert ok, message
    # /clock keeps coming; once what was published before the pause has arrived, no state
    end = now["ns"] + 500_000_000
    ros.spin_until(lambda: now["ns"] >= end, 30.0, every=0.02, action=tick,
                   what="0.5 s of /clock while paused")
    n_states = len(states)
    last = stamp_key(states[-1][1].header.stamp)
    end = now["ns"] + 1_000_000_000
    ros.spin_until(lambda: now["ns"] >= end, 30.0, every=0.02, action=tick,
                   what="1 s more of /clock while paused")
    assert len(states) == n_states, "paused, yet stepping with /clock"
    # step 3: three states on the plant's grid, right after the last one
    assert set_values(ros, f"/{node}/set_parameters", step_cycles=3) == [(True, "")]
    ok, message = trigger(ros, f"/{node}/step")
    assert ok, message
    ros.spin_until(lambda: len(states) >= n_states + 3, 30.0, what="3 stepped states")
    ros.spin(0.3)
    stamps = [stamp_key(m.header.stamp) for _, m in states[n_states:]]
    assert stamps == [last + k * PERIOD_NS for k in (1, 2, 3)], (last, stamps)
    # unpause: the next /clock anchors the plant, its states follow that clock again
    ok, message = trigger(ros, f"/{node}/unpause")
    assert ok, message
    resumed_at = now["ns"]
    ros.spin_until(lambda: stamp_key(ros.last(topic).header.stamp) > resumed_at, 30.0,
                   every=0.02, action=tick, what="states after unpause, on the /clock time")
    newest = stamp_key(ros.last(topic).header.stamp)
    assert newest <= now["ns"]
