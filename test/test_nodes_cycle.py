"""The simulate plant's `cycle_priority` (docs/nodes.md, "Cycle timing"), as a process: the
node's cycle thread (the executor's, the process's main thread) runs SCHED_FIFO at the
priority asked for while active, as the kernel reports it for that thread
(sched_getscheduler / sched_getparam on its id), and /diagnostics says the same; a runtime
change applies at once; 0 restores normal scheduling; a priority outside 0..98 is refused
naming the parameter. Where this test process may not use SCHED_FIFO (the probe below, in a
thread of its own), the node may not either: it then keeps normal scheduling and says so."""
from __future__ import annotations

import os
import threading

import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")
if not hasattr(os, "sched_getscheduler"):
    pytest.skip("Linux scheduling API", allow_module_level=True)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402

from mbd_ros.nodes import thread_priority  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros  # noqa: E402

NODE = "forward_dynamics"


def fifo_allowed():
    """May this process run a thread SCHED_FIFO (probed in a throwaway thread)?"""
    out = []

    def probe():
        out.append(thread_priority.set_current_thread_priority(3) is None)
        thread_priority.set_current_thread_priority(0)
    thread = threading.Thread(target=probe)
    thread.start()
    thread.join(10)
    return out[0]


def kernel_priority(pid):
    """(policy, priority) of the process's main thread as the kernel reports it."""
    return os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority


def set_int_parameter(ros, name, value):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    request = SetParameters.Request()
    request.parameters.append(Parameter(name=name, value=ParameterValue(
        type=ParameterType.PARAMETER_INTEGER, integer_value=value)))
    result = ros.call(SetParameters, f"/{NODE}/set_parameters", request)
    return result.results[0].successful, result.results[0].reason


def test_cycle_priority_runs_the_cycle_thread_sched_fifo():
    allowed = fifo_allowed()
    ros = Ros(salt=31)
    try:
        ros.subscribe(DiagnosticArray, "/diagnostics")
        child = ros.start(NODE, {"urdf_path": str(URDF / "arm7.urdf"), "mode": "simulate",
                                 "rate_hz": 200.0, "diagnostics_period": 0.2,
                                 "cycle_priority": 20})
        d = ros.wait_diagnostics(NODE, lambda d: "cycle priority" in d, READY_TIMEOUT)
        expected = 20 if allowed else 0
        assert int(d["cycle priority"]) == expected, d
        assert kernel_priority(child.pid) == ((os.SCHED_FIFO, 20) if allowed else
                                              (os.SCHED_OTHER, 0))
        if not allowed:
            assert "SCHED_FIFO at priority 20" in child.output(), child.output()[-2000:]
        # runtime: another priority, then normal scheduling, at once
        assert set_int_parameter(ros, "cycle_priority", 35)[0] is allowed
        if allowed:
            ros.wait_diagnostics(NODE, lambda d: d["cycle priority"] == "35")
            assert kernel_priority(child.pid) == (os.SCHED_FIFO, 35)
        assert set_int_parameter(ros, "cycle_priority", 0) == (True, "")
        ros.wait_diagnostics(NODE, lambda d: d["cycle priority"] == "0")
        assert kernel_priority(child.pid) == (os.SCHED_OTHER, 0)
        ok, reason = set_int_parameter(ros, "cycle_priority", 99)
        assert not ok and "cycle_priority" in reason, reason
        # back to FIFO, then deactivate: normal scheduling again while inactive
        set_int_parameter(ros, "cycle_priority", 20)
        assert ros.change_state(NODE, "deactivate")
        assert kernel_priority(child.pid) == (os.SCHED_OTHER, 0)
        assert ros.change_state(NODE, "activate")   # (answered after activate_node ran)
        assert kernel_priority(child.pid) == ((os.SCHED_FIFO, 20) if allowed else
                                              (os.SCHED_OTHER, 0))
    finally:
        ros.close()
