"""`mbd-ros build-interfaces` (mbd_ros/interfaces/build.py), the set-up step that builds the ROS 2
interface packages without a PyPI wheel (tf2_msgs, control_msgs) into the venv: idempotent (a
second run builds nothing), a failure is an exit 1 with the reason before anything is changed
(the missing compiler named; a Python outside a virtual environment refused), and the
definitions it compiles are shipped inside the package (a pip install can run it).

The build itself is exercised by the set-up (`make test` runs it before pytest) and checked by
the tests that use its result: test_nodes_tf.py (/tf) and test_nodes_follow_joint_trajectory.py
(the action server, with a client of the built types).
"""
from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from conftest import _missing_oracle
import mbd_ros.interfaces.build as build

CLI = [sys.executable, "-m", "mbd_ros.cli", "build-interfaces"]


def run(args, executable=None, **env):
    environment = dict(os.environ, **env)
    command = [executable, build.__file__, *args] if executable else [*CLI, *args]
    return subprocess.run(command, capture_output=True, text=True, env=environment,
                          timeout=120)


def test_the_definitions_are_in_the_package():
    """Upstream files, unchanged (the type hashes of a ROS 2 installation's packages), under
    mbd_ros/interfaces/ and named in setup.py's package_data so that a wheel carries them."""
    root = Path(build.__file__).parent
    action = (root / "control_msgs" / "action" / "FollowJointTrajectory.action").read_text()
    assert "int32 PATH_TOLERANCE_VIOLATED = -4" in action
    assert "JointTolerance[] path_tolerance" in action
    for package in build.INTERFACES:
        assert (root / package / "CMakeLists.txt").is_file()
        assert (root / package / "package.xml").is_file()
    # control_msgs' licence (BSD-3-Clause) travels with its files
    assert "Redistribution and use in source and binary forms" in \
        (root / "control_msgs" / "LICENSE").read_text()
    setup = (Path(build.__file__).parents[2] / "setup.py").read_text()
    assert "'mbd_ros.interfaces'" in setup and "'*/action/*.action'" in setup


def test_second_run_builds_nothing():
    try:
        import rclpy  # noqa: F401
    except ImportError:
        pytest.skip("ROS 2 rclpy is not installed (pip install 'mbd_ros[ros]', or source ROS 2)")
    for package in build.INTERFACES:
        if build.location(package) is None:
            _missing_oracle(f"{package} is not installed: `make test` builds it")
    result = run([])
    assert result.returncode == 0, result.stderr
    for package in build.INTERFACES:
        assert f"{package}: already available" in result.stdout, result.stdout
    assert result.stdout.count("nothing to build") == len(build.INTERFACES), result.stdout


def test_missing_compiler_fails_with_the_reason(tmp_path):
    """--force with no C compiler: exit 1 before installing or building anything (the build
    log it names goes to TMPDIR)."""
    result = run(["--only", "control_msgs", "--force"], CC="/nonexistent/cc",
                 TMPDIR=str(tmp_path))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "building control_msgs (needed for the ~/follow_joint_trajectory action) failed" \
        in result.stderr, result.stderr
    assert "/nonexistent/cc" in result.stderr and "gcc" in result.stderr, result.stderr
    assert str(tmp_path) in result.stderr


def test_a_python_outside_a_virtual_environment_is_refused(tmp_path):
    """The builder writes into the running Python's prefix only when it is a virtual
    environment: the system Python (build.py needs only the standard library) is refused with
    the reason, nothing written."""
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None or sys.prefix == sys.base_prefix:
        pytest.skip("needs a system python3 besides this venv's")
    check = subprocess.run([system, "-c", "import sys; print(sys.prefix == sys.base_prefix)"],
                           capture_output=True, text=True)
    if check.stdout.strip() != "True":
        pytest.skip(f"{system} is itself in a virtual environment")
    result = run(["--only", "control_msgs", "--force"], executable=system,
                 TMPDIR=str(tmp_path))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "not in a virtual environment" in result.stderr, result.stderr
