"""The HIL soak's memory growth (10 minutes: both nodes +0.5 MB, ~3 MB/h, monotonic) came from
the nodes' spin loop: run() called executor.spin_until_future_complete(node.done, 0.2) in a
loop, and each call adds a wake-up callback to node.done that stays until shutdown (5 a second;
tracemalloc over 6 minutes of the HIL loop: +412 kB, all from rclpy's executors.py line
`future.add_done_callback(lambda x: self.wake())` and the list holding them). The node's own
run() is run here in this process for a few seconds: node.done must not collect callbacks."""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                    "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

import mbd_ros  # noqa: E402
from mbd_ros.nodes import base, processes, stopping  # noqa: E402
from ros_harness import URDF, warm_numba_cache  # noqa: E402

ARM = str(URDF / "arm7.urdf")


def test_spin_loop_keeps_no_callbacks(monkeypatch):
    warm_numba_cache(mbd_ros.load(ARM))
    monkeypatch.setenv("ROS_DOMAIN_ID", str(processes.unique_domain_id(91)))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    from mbd_ros.nodes.forward_dynamics import ForwardDynamicsNode
    made, counts, errors = [], [], []

    class Recorded(ForwardDynamicsNode):
        def __init__(self):
            super().__init__()
            made.append(self)

    def watch():
        try:
            end = time.monotonic() + 120.0
            while not (made and made[0].active) and time.monotonic() < end:
                time.sleep(0.1)
            assert made and made[0].active, "the node did not become active"
            for _ in range(7):    # 3 s of the spin loop (0.2 s timeouts: ~15 calls)
                counts.append(len(made[0].done._callbacks))
                time.sleep(0.5)
        except Exception as exc:   # reported by the test body
            errors.append(exc)
        finally:
            while stopping.StopRequest.current is None:
                time.sleep(0.05)
            stopping.StopRequest.current.requested = True
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    code = base.run(Recorded, ["--ros-args", "-p", f"urdf_path:={ARM}", "-p",
                               "wrench_joints:=[none]"])
    thread.join(10.0)
    assert not errors, errors
    assert code == 0
    # before the fix: one more callback every 0.2 s (counts rose by ~15 over 3 s)
    assert counts and max(counts) - counts[0] == 0, counts
