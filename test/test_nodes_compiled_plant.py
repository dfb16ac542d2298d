"""The simulate node's cycle through the plant's one compiled call, as a process: the double
wishbone (closed loop + strut) at 200 Hz reports its cycles as compiled steps in /diagnostics,
and every published state is one step of the library's Python-path Plant (compiled=False, the
node's parameters) from the state published one period before, to round-off."""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import mbd_ros  # noqa: E402
from mbd_ros.simulation.limits import JointLimits  # noqa: E402
from mbd_ros.simulation.plant import Plant  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, stamp_key, warm_numba_cache  # noqa: E402

CONFIG = str(URDF.parent / "config" / "double_wishbone.yaml")
SUSPENSION = str(URDF / "double_wishbone.urdf")
RATE = 200.0
ROUND_OFF = 1e-12


@pytest.fixture(scope="module")
def robot():
    r = mbd_ros.load(SUSPENSION, closures=CONFIG, forces=CONFIG)
    warm_numba_cache(r)
    return r


def test_the_simulate_cycle_is_the_compiled_plant_step(robot):
    ros = Ros(salt=83)
    try:
        ns = "/compiled"
        ros.subscribe(DiagnosticArray, "/diagnostics")
        ros.start("forward_dynamics", {"urdf_path": SUSPENSION, "closures_path": CONFIG,
                                       "forces_path": CONFIG, "mode": "simulate",
                                       "rate_hz": RATE, "integrator": "rk4",
                                       "initial_positions": [0.1, 0.0, 0.0],
                                       "wrench_joints": ["none"], "diagnostics_period": 0.2},
                  remaps={"__ns": ns})
        states = ros.subscribe(JointState, f"{ns}/joint_states")
        ros.spin_until(lambda: len(states) > 60, READY_TIMEOUT, what=f"{ns}/joint_states")
        d = ros.wait_diagnostics(f"{ns.strip('/')}/forward_dynamics",
                                 lambda d: d.get("compiled steps", "0").isdigit()
                                 and int(d["compiled steps"]) > 20, timeout=60.0,
                                 what="compiled steps in /diagnostics")
        # every plant step went through the compiled call: the steps of the simulated time
        # (catch-up steps of late cycles included) and the configure's warm-up step
        steps = round(float(d["simulated time [s]"]) * RATE)
        assert abs(int(d["compiled steps"]) - (steps + 1)) <= 1, d
        messages = ros.messages(f"{ns}/joint_states")
    finally:
        ros.close()
    # the node's plant with its defaults: no commanded joint (a passive mechanism), the URDF
    # limits, Baumgarte gains (kd / 2, sqrt(kp)) of baumgarte_kp 100, baumgarte_kd 20
    robot.baumgarte = (10.0, 10.0)
    reference = Plant(robot, 1.0 / RATE, "rk4", joints=[], limits=JointLimits(robot),
                      compiled=False)
    period = round(1e9 / RATE)
    by_stamp = {stamp_key(m.header.stamp): m for m in messages}
    checked = 0
    for key, msg in by_stamp.items():
        after = by_stamp.get(key + period)
        if after is None:   # a missed cycle in between (catch-up steps are not published)
            continue
        reference.reset(np.array(msg.position), np.array(msg.velocity))
        reference.step()
        for got, want in ((after.position, reference.q), (after.velocity, reference.v)):
            assert np.abs(np.array(got) - want).max() <= ROUND_OFF * max(1.0, np.abs(want).max())
        checked += 1
    assert checked > 20
    last = messages[-1]
    position, velocity = robot.closure_residual(np.array(last.position), np.array(last.velocity))
    assert position < 1e-6 and velocity < 1e-6

