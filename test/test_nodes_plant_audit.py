"""The simulate plant's fixes from an outside audit, as processes (rclpy):

- a rate change in lockstep with an external /clock keeps the simulated time on /clock (it
  re-simulated the time since activation in one callback: the cycle count restarted from 0
  against the old clock base);
- a velocity command beyond max_speed is refused and counted, the plant keeps running (a
  finite huge one overflowed the drive's integrated target: every cycle NaN, no joint_states);
- /diagnostics is WARN for a report period that dropped messages, OK again afterwards (it
  stayed WARN for ever after one);
- ~/set_state of a closed loop's dependent joint holds it and solves the others (the loop
  moved it back while the reply said "set");
- a continuous joint's <limit effort> clips its effort commands (the loader dropped the limits
  of continuous joints).

References: the /clock time sent, the values sent, the URDF's limits.
"""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import (CONFIG, READY_TIMEOUT, URDF, Ros, set_parameters,  # noqa: E402
                         stamp_key, warm_numba_cache)
from test_nodes_sim_services import set_values  # noqa: E402

ARM = str(URDF / "arm7.urdf")
FOURBAR = str(URDF / "fourbar.urdf")
CLOSURES = str(CONFIG / "fourbar_closures.yaml")


@pytest.fixture(scope="module")
def ros():
    warm_numba_cache(mbd_ros.load(ARM))
    warm_numba_cache(mbd_ros.load(FOURBAR, closures=CLOSURES))
    ros = Ros(salt=157)
    yield ros
    ros.close()


def clock_msg(ns):
    return Clock(clock=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000))


def latest_status(ros, name):
    """The latest /diagnostics status of node `name` (None if none yet)."""
    for _, msg in reversed(ros.received["/diagnostics"]):
        for status in msg.status:
            if status.name == f"{name}: dynamics":
                return status
    return None


def test_a_rate_change_in_lockstep_keeps_the_simulated_time_on_the_clock(ros):
    ns = "/lockrate"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    name = f"{ns.strip('/')}/forward_dynamics"
    ros.subscribe(DiagnosticArray, "/diagnostics")
    ros.start("forward_dynamics", {"urdf_path": ARM, "mode": "simulate", "rate_hz": 1000.0,
                                   "use_sim_time": True, "publish_clock": False,
                                   "diagnostics_period": 0.2, "hold_initial_positions": True,
                                   "wrench_joints": ["none"]},
              remaps={"__ns": ns})
    clock = ros.matched_publisher(Clock, "/clock", timeout=READY_TIMEOUT)
    now = [100 * 1_000_000_000]

    def tick(seconds):   # /clock in 10 ms steps, each answered before the next
        for _ in range(int(round(seconds / 0.01))):
            now[0] += 10_000_000
            clock.publish(clock_msg(now[0]))
            ros.spin_until(lambda: states and stamp_key(states[-1][1].header.stamp) >= now[0]
                           - 1_000_000, 20.0, what="the plant's state at the /clock time")

    ros.spin_until(lambda: len(states) > 0, READY_TIMEOUT, every=0.1,
                   action=lambda: clock.publish(clock_msg(now[0])), what="the first state")
    start = stamp_key(states[-1][1].header.stamp)    # the /clock time of simulated time 0
    tick(1.0)
    assert set_parameters(ros, name, rate_hz=500.0) == [(True, "")]
    tick(0.5)
    # the simulated time (the plant's clock since activation) is the /clock time elapsed, to
    # a period (it was ~1 s ahead: the time since activation simulated again at the change;
    # the stamps hid it, being the clock base plus the cycle count)
    elapsed = (now[0] - start) * 1e-9
    first = len(ros.received["/diagnostics"])
    ros.spin_until(lambda: len(ros.received["/diagnostics"]) > first + 1 and
                   latest_status(ros, name) is not None, 20.0, what="a new report")
    from mbd_ros.nodes.diagnostics import values_of
    simulated = float(values_of(latest_status(ros, name))["simulated time [s]"])
    assert abs(simulated - elapsed) <= 0.0021, (simulated, elapsed)


def test_huge_velocity_command_is_refused_and_the_warning_clears(ros):
    ns = "/fastcmd"
    name = f"{ns.strip('/')}/forward_dynamics"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    ros.subscribe(DiagnosticArray, "/diagnostics")
    ros.start("forward_dynamics", {"urdf_path": FOURBAR, "closures_path": CLOSURES,
                                   "mode": "simulate", "rate_hz": 500.0,
                                   "diagnostics_period": 0.2, "wrench_joints": ["none"],
                                   "joints": ["crank_joint"]},
              remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 5, READY_TIMEOUT, what="the four-bar plant's states")
    commands = ros.matched_publisher(JointState, f"{ns}/joint_commands")
    huge = JointState(name=["crank_joint"], velocity=[1e308])
    commands.publish(huge)
    d = ros.wait_diagnostics(name, lambda d: int(d.get("rejected joint_commands", 0)) >= 1,
                             what="the huge velocity command counted")
    assert int(d["rejected joint_commands"]) == 1
    status = latest_status(ros, name)
    first_warn = len(ros.received["/diagnostics"])
    # a period without dropped messages: OK again (the totals stay in the values)
    ros.spin_until(lambda: (lambda s: s is not None and s.level == DiagnosticStatus.OK)(
        latest_status(ros, name)), 20.0, what="/diagnostics OK again")
    assert len(ros.received["/diagnostics"]) > first_warn and status is not None
    # and the plant kept running on the crank's previous command (no command: effort 0)
    count = len(states)
    ros.spin(0.5)
    assert len(states) > count + 100, (count, len(states))
    assert np.isfinite(np.array(states[-1][1].position)).all()


def test_set_state_of_a_loops_dependent_joint_holds_it(ros):
    ns = "/loopset"
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    ros.start("forward_dynamics", {"urdf_path": FOURBAR, "closures_path": CLOSURES,
                                   "mode": "simulate", "rate_hz": 500.0,
                                   "wrench_joints": ["none"], "joints": ["crank_joint"],
                                   "hold_initial_positions": True}, remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 5, READY_TIMEOUT, what="the four-bar plant's states")
    assert ros.call(Trigger, f"{ns}/forward_dynamics/pause", Trigger.Request()).success
    robot = mbd_ros.load(FOURBAR, closures=CLOSURES)
    coupler = robot.joint_names.index("coupler_joint")
    current = np.array(states[-1][1].position)
    target = float(current[coupler] + 0.2)     # reachable: the crank and rocker follow
    assert set_values(ros, f"{ns}/forward_dynamics/set_state", coupler_joint=target) == \
        [(True, "set")]
    count = len(states)
    assert ros.call(Trigger, f"{ns}/forward_dynamics/step", Trigger.Request()).success
    ros.spin_until(lambda: len(states) > count, 20.0, what="the state after one step")
    q = np.array(states[-1][1].position)
    # one 2 ms step from rest moves it by ~1e-4 rad; the loop had put it back 0.2 rad away
    assert abs(q[coupler] - target) < 1e-3, (q, target)
    assert robot.closure_residual(q)[0] < 1e-8


def test_a_continuous_joints_effort_limit_clips_its_commands(ros):
    """urdf/fourbar.urdf's crank is continuous with <limit effort="5">: an effort command of 50
    is applied as 5 (saturated cycles counted); the loader dropped that limit."""
    ns = "/wheel"
    name = f"{ns.strip('/')}/forward_dynamics"
    ros.subscribe(DiagnosticArray, "/diagnostics")
    states = ros.subscribe(JointState, f"{ns}/joint_states")
    ros.start("forward_dynamics", {"urdf_path": FOURBAR, "closures_path": CLOSURES,
                                   "mode": "simulate", "rate_hz": 500.0,
                                   "diagnostics_period": 0.2, "wrench_joints": ["none"],
                                   "joints": ["crank_joint"], "command_timeout": 0.0},
              remaps={"__ns": ns})
    ros.spin_until(lambda: len(states) > 5, READY_TIMEOUT, what="the four-bar plant's states")
    efforts = ros.matched_publisher(Float64MultiArray, f"{ns}/forward_dynamics/effort_commands")
    efforts.publish(Float64MultiArray(data=[50.0]))
    d = ros.wait_diagnostics(name, lambda d: int(d.get("saturated cycles", 0)) > 10,
                             what="saturated cycles of the clipped crank command")
    assert int(d["saturated cycles"]) > 10
