"""tools/build_tf2_msgs.py, the set-up step that builds tf2_msgs (no PyPI wheel) into the venv:
idempotent (a second run builds nothing) and, when it cannot build, a non-zero exit with the
reason (the missing compiler named), without touching the environment.

The build itself is exercised by the set-up (`make test` runs it before pytest) and checked by
test_nodes_tf.py, which publishes and receives /tf with the result.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import _missing_oracle
from ros_harness import REPO

TOOL = REPO / "tools" / "build_tf2_msgs.py"


def run_tool(*args, **env):
    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_second_run_builds_nothing():
    try:
        import rclpy  # noqa: F401
    except ImportError:
        pytest.skip("ROS 2 rclpy is not installed (pip install 'mbd_ros[ros]', or source ROS 2)")
    try:
        from tf2_msgs.msg import TFMessage  # noqa: F401
    except ImportError:
        _missing_oracle("tf2_msgs is not installed: `make test` builds it")
    result = run_tool()
    assert result.returncode == 0, result.stderr
    assert "nothing to build" in result.stdout, result.stdout


def test_missing_compiler_fails_with_the_reason(tmp_path):
    """--force with no C compiler: exit 1 before installing or building anything (the build
    log it names goes to TMPDIR)."""
    result = run_tool("--force", CC="/nonexistent/cc", TMPDIR=str(tmp_path))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "building tf2_msgs (needed for /tf) failed" in result.stderr, result.stderr
    assert "/nonexistent/cc" in result.stderr and "gcc" in result.stderr, result.stderr
    assert str(tmp_path) in result.stderr     # "Full log: <TMPDIR>/mbd_ros_build_tf2_msgs_*.log"
