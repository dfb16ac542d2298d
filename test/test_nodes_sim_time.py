"""Simulate plant and ROS time, as processes: every combination of use_sim_time and
publish_clock works, and use_sim_time can be switched at runtime.

- publish_clock (with or without use_sim_time): the plant is the time source; stamps and /clock
  carry the simulated time from 0.
- use_sim_time with an external /clock: the plant steps in lockstep with it. The state stamped T
  is exactly (T - T0) / dt semi-implicit Euler steps from the initial state (integrated here
  from robot.forward_dynamics), and without /clock the plant does not move.
- use_sim_time set at runtime: applied at once (lockstep with /clock), and switched back to the
  steady clock; the plant never freezes.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import mbd_ros  # noqa: E402
from conftest import assert_close  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, stamp_key, warm_numba_cache  # noqa: E402

ARM = str(URDF / "arm7.urdf")
Q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
RATE = 500.0
DT_NS = round(1e9 / RATE)
PLANT = {"urdf_path": ARM, "mode": "simulate", "rate_hz": RATE, "initial_positions": Q0.tolist(),
         "diagnostics_period": 0.2, "command_timeout": 0.2, "wrench_joints": ["none"],
         "executor": "single_threaded",
         "enforce_limits": False, "integrator": "semi_implicit_euler"}   # the states are compared with plain semi-implicit Euler steps


@pytest.fixture(scope="module")
def robot():
    r = mbd_ros.load(ARM)
    warm_numba_cache(r)
    return r


@pytest.fixture(scope="module")
def ros(robot):
    ros = Ros(salt=61)
    ros.subscribe(DiagnosticArray, "/diagnostics")
    yield ros
    ros.close()


def clock_msg(ns):
    return Clock(clock=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000))


def euler_states(robot, steps):
    """Semi-implicit Euler from (Q0, 0) with zero torque: {k: q_k} for k = 0..steps."""
    q, v, z = Q0.copy(), np.zeros(7), np.zeros(7)
    out = {0: q.copy()}
    for k in range(1, steps + 1):
        v = v + (DT_NS * 1e-9) * robot.forward_dynamics(q, v, z)
        q = q + (DT_NS * 1e-9) * v
        out[k] = q.copy()
    return out


def set_parameter(ros, node, name, value):
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter
    req = SetParameters.Request()
    req.parameters = [Parameter(name, value=value).to_parameter_msg()]
    return ros.call(SetParameters, f"/{node}/set_parameters", req).results[0]


def test_publish_clock_with_use_sim_time(ros, robot):
    """Both on (the old deadlock): the plant runs and stamps with the simulated time."""
    ns = "/both"
    clock = ros.subscribe(Clock, "/clock")
    child = ros.start("forward_dynamics", {**PLANT, "publish_clock": True,
                                           "use_sim_time": True}, remaps={"__ns": ns})
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    # the two subscriptions may match at different times on a slow machine: wait for both
    ros.spin_until(lambda: len(states) > 100 and len(clock) > 100, READY_TIMEOUT,
                   what=f"{ns}/joint_states and /clock")
    ros.wait_diagnostics("both/forward_dynamics", lambda d: float(d["cycles"]) > 0)
    ros.stop(child)
    stamps = np.array([stamp_key(m.header.stamp) for m in ros.messages(f"{ns}/joint_states")])
    # simulated time starts at 0: the first state this subscriber sees (discovery may take a few
    # seconds on a loaded machine) is seconds after 0, not at the system time (~1.8e9 s)
    assert stamps[0] < 60e9, "simulated time starts at 0"
    assert (np.diff(stamps) > 0).all() and (np.diff(stamps) % DT_NS == 0).all()
    clocks = {stamp_key(m.clock) for m in ros.messages("/clock")}
    heard = stamps[stamps + DT_NS >= min(clocks)]      # states sent after /clock matched
    assert len(heard) > 50
    assert sum(int(s + DT_NS) in clocks for s in heard) > 0.9 * len(heard)


def test_external_clock_drives_the_plant_in_lockstep(ros, robot):
    ns = "/ext"
    child = ros.start("forward_dynamics", {**PLANT, "use_sim_time": True}, remaps={"__ns": ns})
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    d = ros.wait_diagnostics("ext/forward_dynamics", lambda d: d["state"] == "active",
                             timeout=READY_TIMEOUT)
    ros.spin(0.5)
    assert not states, "no /clock yet: the plant must not step"
    assert "lockstep with /clock" in child.output()
    t0 = 1_000 * 1_000_000_000 + 7 * DT_NS
    pub = ros.matched_publisher(Clock, "/clock")
    ros.spin_until(lambda: len(states) > 0, 10.0, every=0.05,
                   action=lambda: pub.publish(clock_msg(t0)), what="the state at the first /clock")
    published = [t0]
    for k in list(range(1, 40)) + [120, 121, 300]:   # single steps, then jumps of 79 and 179
        published.append(t0 + k * DT_NS)
        pub.publish(clock_msg(published[-1]))
        ros.spin(0.01)
    ros.spin_until(lambda: stamp_key(ros.last(f"{ns}/joint_states").header.stamp)
                   == published[-1], 10.0, what="the state at the last /clock")
    ros.spin(0.5)                                    # no /clock: no step
    msgs = ros.messages(f"{ns}/joint_states")
    assert stamp_key(msgs[-1].header.stamp) == published[-1]
    reference = euler_states(robot, 300)
    received = {stamp_key(m.header.stamp): m for m in msgs}
    assert set(received) <= set(published), "every stamp is a /clock time"
    assert len(received) >= 10
    for stamp, msg in received.items():
        k = (stamp - t0) // DT_NS
        assert_close(np.array(msg.position), reference[k], f"state at clock step {k}")
    d = ros.wait_diagnostics("ext/forward_dynamics", lambda d: True)
    assert d["state"] == "active"
    ros.stop(child)


def test_use_sim_time_switched_at_runtime(ros, robot):
    ns = "/rt"
    node = "rt/forward_dynamics"
    child = ros.start("forward_dynamics", PLANT, remaps={"__ns": ns})
    topic = f"{ns}/joint_states"
    states = ros.subscribe(JointState, topic)
    ros.spin_until(lambda: len(states) > 10, READY_TIMEOUT, what=topic)
    assert abs(stamp_key(states[-1][1].header.stamp) - time.time_ns()) < 5e9   # system time
    result = set_parameter(ros, node, "use_sim_time", True)
    assert result.successful, result.reason
    t0 = 500 * 1_000_000_000
    pub = ros.matched_publisher(Clock, "/clock")
    ros.spin_until(lambda: stamp_key(ros.last(topic).header.stamp) == t0, 10.0,
                   every=0.05, action=lambda: pub.publish(clock_msg(t0)),
                   what="a state stamped with the external /clock")
    for k in range(1, 11):
        pub.publish(clock_msg(t0 + k * DT_NS))
        ros.spin(0.01)
    ros.spin_until(lambda: stamp_key(ros.last(topic).header.stamp) == t0 + 10 * DT_NS,
                   10.0, what="the plant to follow /clock")
    n = len(states)
    ros.spin(0.3)
    assert len(states) == n, "lockstep: no /clock, no state"
    assert ros.lifecycle_state(node) == "active"
    result = set_parameter(ros, node, "use_sim_time", False)
    assert result.successful, result.reason
    # paced again (not frozen): the states stamped (the node's clock, system time again) in
    # the second starting 0.3 s after the switch, whenever this process receives them, not
    # those received in a wall-clock second here (a busy machine delays the receiving)
    switched = time.time_ns()
    window = (switched + 300_000_000, switched + 1_300_000_000)
    ros.spin_until(lambda: stamp_key(ros.last(topic).header.stamp) >= window[1], 30.0,
                   what="a state stamped after the measured second")
    stamps = np.array([stamp_key(m.header.stamp) for _, m in states])
    rate = int(((stamps >= window[0]) & (stamps < window[1])).sum())
    # a frozen plant gives 0; the bound leaves room for a plant slowed by a busy machine
    assert rate > 0.2 * RATE, f"{rate} states stamped in 1 s after use_sim_time:=false"
    assert abs(stamp_key(states[-1][1].header.stamp) - time.time_ns()) < 5e9
    ros.stop(child)
    assert "Traceback" not in child.output()
