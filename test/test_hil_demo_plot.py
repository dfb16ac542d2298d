"""`mbd-ros hil-demo --plot out.png` (process-level, bounded): the three nodes run, the report is
printed and the tracking plot is written as a PNG. (Tracking accuracy itself is tested by
test_nodes_simulate.py's computed-torque test.) Needs rclpy and matplotlib (optional extras
'ros' and 'plot')."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (extra 'ros')")
pytest.importorskip("matplotlib", reason="matplotlib is not installed (extra 'plot')")

from mbd_ros.nodes import processes  # noqa: E402
from ros_harness import reserve_domain_id  # noqa: E402


def test_hil_demo_writes_the_tracking_plot(tmp_path):
    out = tmp_path / "hil.png"
    domain, lock = reserve_domain_id(97)     # no other test run's nodes on the demo's domain
    env = processes.ros_environment(domain)
    with lock:
        result = subprocess.run(
            [sys.executable, "-m", "mbd_ros.cli", "hil-demo", "--duration", "2", "--rate", "500",
             "--domain-id", str(domain), "--plot", str(out)], env=env, capture_output=True,
            text=True, timeout=240)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-4000:]
    assert "tracking error" in text and f"wrote {out}" in text, text[-4000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
