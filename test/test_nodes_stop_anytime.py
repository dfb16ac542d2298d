"""SIGINT / SIGTERM end a node promptly at any point (process-level):

- while it imports (numba, rclpy, mbd_ros: the first second or more, from the moment mbd_ros's
  own code runs): exit code 0 and no traceback (Python's default handler printed a
  KeyboardInterrupt traceback from whatever module was importing);
- while a 3000-link robot is configured in the executor (a lifecycle configure request: the
  load and the node's set-up run in the main thread; 24-60 s on 2 cores): the signal waited for
  the end of the configure before; now the process ends within seconds.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install "
                            "'mbd_ros[ros]' for the PyPI wheels, or source a ROS 2 install)")

from lifecycle_msgs.srv import ChangeState  # noqa: E402

import mbd_ros  # noqa: E402
from ros_harness import READY_TIMEOUT, URDF, Ros, warm_numba_cache  # noqa: E402

BAD_LINES = ("Traceback", "KeyboardInterrupt", "FATAL")
PROMPT = 8.0   # s: generous for a loaded 2-core machine; before the fix: the configure's 24+ s


def chain_urdf(path, n):
    """A serial chain of n revolute joints (a robot whose configure takes tens of seconds)."""
    inertia = 'ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"'
    parts = ['<robot name="chain">',
             f'<link name="l0"><inertial><mass value="1"/><inertia {inertia}/></inertial></link>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0 0 0.05"/><mass value="0.1"/>'
                     f'<inertia {inertia}/></inertial></link>')
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0 0 0.1"/><axis xyz="{i % 2} '
                     f'{(i + 1) % 2} 0"/><limit lower="-3" upper="3" effort="100" '
                     'velocity="10"/></joint>')
    parts.append("</robot>")
    path.write_text("\n".join(parts))
    return str(path)


@pytest.fixture(scope="module")
def ros():
    warm_numba_cache(mbd_ros.load(str(URDF / "arm7.urdf")))
    ros = Ros(salt=89)
    yield ros
    ros.close()


def stopped(child, sig, timeout=30.0):
    """(seconds to exit, exit code, output) after sending `sig`."""
    child.must_live = False
    t = time.monotonic()
    child.popen.send_signal(sig)
    try:
        code = child.wait(timeout)
    except Exception:
        code = None
    return time.monotonic() - t, code, child.output()


def importing_mbd_ros(pid):
    """True once the process has loaded numba's compiler (llvmlite), which mbd_ros imports:
    its own code runs from then on. (Before it, the interpreter processes site-packages' .pth
    files: a signal there is outside any package's reach.)"""
    try:
        return "llvmlite" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8])
def test_stop_while_importing(ros, delay):
    child = ros.start("forward_dynamics", {"urdf_path": str(URDF / "arm7.urdf")},
                      name=f"importing_{int(delay * 10)}")
    end = time.monotonic() + 60.0
    while not importing_mbd_ros(child.pid) and time.monotonic() < end:
        time.sleep(0.005)
    assert importing_mbd_ros(child.pid), child.output()
    assert "configured" not in child.output()
    time.sleep(delay)   # numba, rclpy and the node modules import for ~1-3 s after this
    seconds, code, out = stopped(child, signal.SIGINT)
    bad = [line for line in out.splitlines() if any(b in line for b in BAD_LINES)]
    assert code == 0 and not bad, f"exit {code} after {seconds:.1f} s:\n{out[-3000:]}"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stop_while_configuring_a_large_robot(ros, tmp_path, sig):
    urdf = chain_urdf(tmp_path / "chain.urdf", 3000)
    name = f"large_{sig.name.lower()}"
    child = ros.start("forward_dynamics", {"urdf_path": urdf, "mode": "simulate",
                                           "autostart": False}, name=name)
    ros.spin_until(lambda: name in ros.node.get_node_names(), READY_TIMEOUT,
                   what=f"{name} in the graph")
    client = ros.node.create_client(ChangeState, f"/{name}/change_state")
    assert client.wait_for_service(timeout_sec=30.0)
    request = ChangeState.Request()
    request.transition.label = "configure"
    client.call_async(request)   # the configure runs in the node's executor (main thread)
    ros.spin(3.0)
    assert child.poll() is None and "configured" not in child.output(), \
        "the configure ended before the signal: the test proves nothing\n" + child.output()
    seconds, code, out = stopped(child, sig)
    ros.node.destroy_client(client)
    bad = [line for line in out.splitlines() if any(b in line for b in BAD_LINES)]
    assert code == 0 and not bad and seconds < PROMPT, \
        f"exit {code} after {seconds:.1f} s:\n{out[-3000:]}"


def test_stop_while_loading_a_large_robot_with_autostart(ros, tmp_path):
    """autostart: the robot loads in a worker thread, then configures in the executor; a
    signal at either moment ends the node within seconds."""
    urdf = chain_urdf(tmp_path / "chain.urdf", 3000)
    for delay in (2.0, 6.0):
        name = f"large_autostart_{int(delay)}"
        child = ros.start("forward_dynamics", {"urdf_path": urdf, "mode": "simulate"},
                          name=name)
        ros.spin_until(lambda: name in ros.node.get_node_names(), READY_TIMEOUT,
                       what=f"{name} in the graph")
        ros.spin(delay)
        assert child.poll() is None and "configured" not in child.output(), child.output()
        seconds, code, out = stopped(child, signal.SIGINT)
        bad = [line for line in out.splitlines() if any(b in line for b in BAD_LINES)]
        assert code == 0 and not bad and seconds < PROMPT, \
            f"exit {code} after {seconds:.1f} s:\n{out[-3000:]}"


def test_sigusr1_prints_the_stacks_and_the_node_goes_on(ros):
    """SIGUSR1 is the hang diagnostic (faulthandler, mbd_ros/nodes/quiet_start.py): the node
    prints every thread's Python stack and keeps running."""
    child = ros.start("forward_dynamics", {"urdf_path": str(URDF / "arm7.urdf")},
                      name="stacks")
    ros.spin_until(lambda: "configured" in child.output(), READY_TIMEOUT,
                   what="the node configured")
    child.popen.send_signal(signal.SIGUSR1)
    ros.spin_until(lambda: "most recent call first" in child.output(), 30.0,
                   what="the stacks printed")
    assert child.poll() is None, child.output()
    assert ros.lifecycle_state("stacks") == "active"


def test_a_node_process_without_stderr_still_imports_with_its_quiet_handlers():
    """A node started with file descriptor 2 closed (some service managers and launchers do):
    Python's sys.stderr is None, where faulthandler.register raises RuntimeError; the import of
    mbd_ros in a node process (quiet_start.install_if_node_process) must still succeed, with its
    quiet SIGINT / SIGTERM handlers installed (the SIGUSR1 stacks need a stderr: none then)."""
    import os
    import subprocess
    import sys
    code = ("import signal, sys\n"
            "sys.orig_argv = [sys.executable, '-m', 'mbd_ros.nodes.forward_dynamics']\n"
            "import mbd_ros\n"
            "print(sys.stderr is None, signal.getsignal(signal.SIGINT).__name__,\n"
            "      signal.getsignal(signal.SIGTERM).__name__, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(2), timeout=300)
    assert done.returncode == 0 and done.stdout.split() == ["True", "_exit_quietly",
                                                            "_exit_quietly"], done
