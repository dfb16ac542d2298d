"""SIGINT / SIGTERM while a node process is still importing: exit at once, quietly.

A node process spends its first second or more importing numpy, numba, rclpy and mbd_ros.
Python's default SIGINT handler raises KeyboardInterrupt wherever the import happens to be and
prints a traceback (launch sends SIGINT to every node at Ctrl-C, often right after starting
them). `install_if_node_process` (called first thing by mbd_ros/__init__.py, so before any heavy
import) sets handlers that end the process with code 0 and no output, in processes that run an
mbd_ros node only; base.run() replaces them with its own once the node exists. Standard
library only: this module must import in microseconds.

It also lets SIGUSR1 print the Python stack of every thread of a node process to its stderr
(`kill -USR1 PID`: faulthandler, no effect on the node otherwise), to see where a node that
hangs is stuck.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys

NODES = ("forward_dynamics", "inverse_dynamics", "reference_publisher")


def is_node_process(argv=None):
    """True when this process runs an mbd_ros node: `python -m mbd_ros.nodes.<node>` or the
    node's console script / launch_ros wrapper (`.../forward_dynamics ...`)."""
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    for k, arg in enumerate(argv[:-1]):
        if arg == "-m" and argv[k + 1].startswith("mbd_ros.nodes.") and \
                argv[k + 1].rsplit(".", 1)[-1] in NODES:
            return True
    return any(os.path.basename(arg) in NODES for arg in argv[:2])


def _exit_quietly(signum, frame):
    os._exit(0)   # nothing to clean up yet: no node, no ROS context


def install_if_node_process():
    """Quiet SIGINT / SIGTERM handlers for the imports of a node process (see the module
    docstring); nothing in any other process (a test run, a user's script)."""
    try:
        if is_node_process():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, _exit_quietly)
            try:   # (RuntimeError: sys.stderr is None, fd 2 closed: no stacks to print)
                faulthandler.register(signal.SIGUSR1, all_threads=True)
            except RuntimeError:
                pass
    except (ValueError, OSError):   # not the main thread: leave the handlers alone
        pass
