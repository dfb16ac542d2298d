"""Ctrl-C (SIGINT) ends the `mbd-ros` command line at any point with exit code 130 and no
traceback: while it imports numpy / numba / mbd_ros (nodes/quiet_start.py's import-time handler,
installed first thing by mbd_ros/__init__.py), while its parser imports the subcommands' modules,
and while a command runs (main() turns KeyboardInterrupt into "interrupted"). Before, a SIGINT in
the first ~0.5-1 s printed a KeyboardInterrupt traceback from whatever module was importing."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BAD_LINES = ("Traceback", "KeyboardInterrupt")


def importing_mbd_ros(pid):
    """True once the process has loaded numpy's C core: mbd_ros's own code runs from then on
    (its __init__ imports numpy after installing the handlers). Before, the interpreter
    processes site-packages' .pth files: a signal there is outside any package's reach."""
    try:
        return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def cli_command():
    script = Path(sys.executable).with_name("mbd-ros")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mbd_ros.cli"]


@pytest.fixture(scope="module")
def warm_simulate():
    """The simulate command's kernels compiled (or loaded) once first: a SIGINT reaches Python
    only between bytecodes, so one arriving while LLVM compiles a kernel on a cold cache (the
    compiled rollout: minutes on a loaded 2-core machine) takes effect when that compile ends;
    that is not what these tests check (a fresh-clone run timed out waiting so)."""
    subprocess.run(cli_command() + ["simulate", str(REPO / "urdf" / "arm7.urdf"),
                                    "--duration", "0.01"], capture_output=True, timeout=1200)


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.5, 1.0, 3.0])
def test_ctrl_c_ends_the_cli_with_130_and_no_traceback(delay, warm_simulate):
    command = cli_command()
    child = subprocess.Popen(command + ["simulate", str(REPO / "urdf" / "arm7.urdf"),
                                        "--duration", "1000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + 60.0
        while not importing_mbd_ros(child.pid) and child.poll() is None and \
                time.monotonic() < end:
            time.sleep(0.002)
        assert child.poll() is None and importing_mbd_ros(child.pid)
        time.sleep(delay)   # the imports take ~0.5-2 s from here; the simulation 1000 s
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    bad = [line for line in out.splitlines() if any(b in line for b in BAD_LINES)]
    assert child.returncode == 130 and not bad, f"exit {child.returncode}:\n{out[-3000:]}"


def test_the_cli_handlers_are_for_the_cli_only():
    """A user's program that calls main() keeps its own SIGINT handler; the import-time handlers
    are installed in `mbd-ros` processes only."""
    from mbd_ros.nodes.quiet_start import is_cli_process, restore_cli_defaults
    assert is_cli_process(["/usr/bin/python3", "/venv/bin/mbd-ros", "info"])
    assert is_cli_process(["/venv/bin/mbd-ros", "info"])
    assert is_cli_process(["python", "-m", "mbd_ros.cli", "info"])
    assert not is_cli_process(["python", "-m", "pytest", "test"])
    assert not is_cli_process(["python", "my_script.py", "mbd-ros"])

    def mine(signum, frame):
        pass
    previous = signal.signal(signal.SIGINT, mine)
    try:
        restore_cli_defaults()
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
