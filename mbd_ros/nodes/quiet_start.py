"""SIGINT / SIGTERM while a node process is still importing: exit at once, quietly.

A node process (and the `mbd-ros` command line) spends its first second or more importing numpy,
numba, rclpy and mbd_ros.
Python's default SIGINT handler raises KeyboardInterrupt wherever the import happens to be and
prints a traceback (launch sends SIGINT to every node at Ctrl-C, often right after starting
them). `install_if_node_process` (called first thing by mbd_ros/__init__.py, so before any heavy
import) sets handlers that end the process with code 0 and no output, in processes that run an
mbd_ros node only; base.run() replaces them with its own once the node exists. The command line
gets handlers that exit with 128 + the signal (130 for Ctrl-C), until its main() runs. Standard
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
CLI = "mbd-ros"


def is_node_process(argv=None):
    """True when this process runs an mbd_ros node: `python -m mbd_ros.nodes.<node>` or the
    node's console script / launch_ros wrapper (`.../forward_dynamics ...`)."""
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    for k, arg in enumerate(argv[:-1]):
        if arg == "-m" and argv[k + 1].startswith("mbd_ros.nodes.") and \
                argv[k + 1].rsplit(".", 1)[-1] in NODES:
            return True
    return any(os.path.basename(arg) in NODES for arg in argv[:2])


def is_cli_process(argv=None):
    """True when this process runs the `mbd-ros` command line (its console script or
    `python -m mbd_ros.cli`)."""
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    for k, arg in enumerate(argv[:-1]):
        if arg == "-m" and argv[k + 1] == "mbd_ros.cli":
            return True
    return any(os.path.basename(arg) == CLI for arg in argv[:2])


def _exit_quietly(signum, frame):
    os._exit(0)   # nothing to clean up yet: no node, no ROS context


def _cli_exit_quietly(signum, frame):
    # the shell's code for a command ended by the signal (130 for Ctrl-C), as the CLI's own
    # handling returns once it runs
    os._exit(128 + signum)


def install_if_node_process():
    """Quiet SIGINT / SIGTERM handlers for the imports of a node process or of the `mbd-ros`
    command line (see the module docstring; the CLI's main() puts the defaults back with
    restore_cli_defaults); nothing in any other process (a test run, a user's script)."""
    try:
        node, cli = is_node_process(), is_cli_process()
        if node or cli:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, _exit_quietly if node else _cli_exit_quietly)
        if node:
            try:   # (RuntimeError: sys.stderr is None, fd 2 closed: no stacks to print)
                faulthandler.register(signal.SIGUSR1, all_threads=True)
            except RuntimeError:
                pass
    except (ValueError, OSError):   # not the main thread: leave the handlers alone
        pass


def restore_cli_defaults():
    """Python's default SIGINT (KeyboardInterrupt) and SIGTERM handling, where the import-time
    handlers of install_if_node_process are set (the CLI's commands handle KeyboardInterrupt
    themselves); any other handler (a caller's) is left alone."""
    try:
        if signal.getsignal(signal.SIGINT) is _cli_exit_quietly:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if signal.getsignal(signal.SIGTERM) is _cli_exit_quietly:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):   # not the main thread
        pass
