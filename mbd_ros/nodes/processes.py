"""Start mbd_ros nodes as child processes (HIL demo, integration tests, benchmarks).

Each child runs ``python -m mbd_ros.nodes.<name> --ros-args ...`` with this interpreter, in a
clean copy of the environment: discovery restricted to this machine
(ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST), the caller's ROS_DOMAIN_ID, this mbd_ros first on
PYTHONPATH, and without the ROS wheels' bootstrap marker (a child that inherits
_ROS_WHEELS_BOOTSTRAP_COMPLETE without the library path cannot import rclpy). No ROS imports
here, so the parent can prepare everything before it initializes rclpy itself.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent   # the directory holding mbd_ros/


def unique_domain_id(salt=0):
    """A ROS_DOMAIN_ID in 1..100 derived from the process id (0 is everybody's default)."""
    return 1 + (os.getpid() + salt) % 100


def ros_environment(domain_id, extra=None):
    """A clean environment for a ROS child process (see the module docstring)."""
    env = dict(os.environ)
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    env.pop("ROS_LOCALHOST_ONLY", None)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["PYTHONUNBUFFERED"] = "1"
    paths = [str(PACKAGE_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def ros_arguments(params=None, remaps=None, params_files=(), name=None, log_level=None):
    """--ros-args list: params {name: value} as -p (lists as YAML), remaps {from: to} as -r."""
    args = ["--ros-args"]
    if name:
        args += ["-r", f"__node:={name}"]
    for path in params_files:
        args += ["--params-file", str(path)]
    for key, value in (params or {}).items():
        args += ["-p", f"{key}:={_yaml(value)}"]
    for src, dst in (remaps or {}).items():
        args += ["-r", f"{src}:={dst}"]
    if log_level:
        args += ["--log-level", log_level]
    return args


def _yaml(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return str(value)


class NodeProcess:
    """A node running as a child process, its output in a log file."""

    def __init__(self, node, ros_args, env, log_dir=None, label=None):
        self.label = label or node
        self.log_path = Path(tempfile.mkstemp(prefix=f"mbd_ros_{self.label}_", suffix=".log",
                                              dir=log_dir)[1])
        self._log = open(self.log_path, "wb")
        self.command = [sys.executable, "-m", f"mbd_ros.nodes.{node}"] + list(ros_args)
        self.popen = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env)

    @property
    def pid(self):
        return self.popen.pid

    def poll(self):
        return self.popen.poll()

    def output(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout):
        return self.popen.wait(timeout)

    def stop(self, timeout=10.0):
        """SIGINT (a clean rclpy shutdown), then SIGKILL if it has not exited after timeout.
        Returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout)
        self._log.close()
        return self.popen.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
