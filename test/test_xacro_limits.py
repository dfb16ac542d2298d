"""xacro files are code: their expansion (mbd_ros.robot_source.expand_xacro, used by load, the
nodes' urdf_path and launch/robot_args.py) runs in a child process bounded in time and memory,
killed with its caller, and gives the same XML as xacro in the caller's process; XML text is
never expanded.

Cases that could hang or exhaust memory with an unbounded expansion run in a child Python with
an outer time limit (and an address-space limit), so a regression fails instead of taking the
test run down."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import mbd_ros
from mbd_ros.inputs.xacro import expand_xacro

REPO = Path(__file__).resolve().parent.parent
PENDULUM = REPO / "urdf" / "pendulum.urdf.xacro"
sys.path.insert(0, str(REPO / "launch"))
import robot_args  # noqa: E402

XACRO_HEAD = '<?xml version="1.0"?>\n<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
# ${9**9**9}: a 1.2e9-bit integer, minutes of CPU inside one C call (no signal handler runs)
RUNAWAY = XACRO_HEAD + '  <link name="a${9**9**9}"/>\n</robot>\n'
# a 1.5 GB string: more than the child's memory limit (1 GiB)
MEMORY_BOMB = XACRO_HEAD + "  <link name=\"a${len('x' * 1500000000)}\"/>\n</robot>\n"


def side_effect_xacro(marker):
    """A xacro whose ${...} reaches os.system (through python.vars / python.type) and touches
    `marker`: xacro's name filter does not stop it."""
    module = ("[c for c in python.vars(python.type)['__subclasses__'](python.type.mro(python.type)[1]) "
              "if c.__name__ == 'catch_warnings'][0]()._module")
    system = f"python.vars(m)['__builtins__']['__import__']('os').system('touch {marker}')"
    return (XACRO_HEAD + f'  <xacro:property name="m" value="${{{module}}}"/>\n'
            f'  <xacro:property name="y" value="${{{system}}}"/>\n'
            '  <link name="a${y}"/>\n</robot>\n')


def run_python(script, timeout, memory=4 << 30):
    """(exit code, stdout, stderr) of `script` in a child Python limited to `memory` bytes of
    address space; a child still running after `timeout` s is killed and fails the test."""
    prelude = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    try:
        proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                              capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the expansion did not end within {timeout} s (unbounded)")
    return proc.returncode, proc.stdout, proc.stderr


# ---- same results --------------------------------------------------------------------------------

@pytest.mark.parametrize("mappings", [{}, {"length": "0.7", "mass": "2.0"}])
def test_expansion_is_what_xacro_gives_in_process(mappings):
    """The child's XML is byte for byte xacro's own in this process (the reference)."""
    import xacro
    reference = xacro.process_file(str(PENDULUM), mappings=dict(mappings)).toprettyxml(indent="  ")
    assert expand_xacro(PENDULUM, mappings) == reference
    assert robot_args.expand_xacro(str(PENDULUM), mappings) == reference


# ---- limits --------------------------------------------------------------------------------------

def test_a_runaway_expression_ends_in_a_model_error_naming_the_file(tmp_path):
    path = tmp_path / "runaway.urdf.xacro"
    path.write_text(RUNAWAY)
    limit = 3.0
    code, out, err = run_python(f"""
        import time
        import mbd_ros
        try:
            import mbd_ros.inputs.xacro_process as limits
            limits.TIMEOUT_S = {limit}
        except ImportError:
            pass
        t0 = time.monotonic()
        try:
            mbd_ros.load({str(path)!r})
        except mbd_ros.ModelError as exc:
            print("MODEL_ERROR", round(time.monotonic() - t0, 3), str(exc)[:300])
        else:
            print("LOADED")
    """, timeout=120)
    assert code == 0, err[-2000:]
    assert out.startswith("MODEL_ERROR"), out
    elapsed = float(out.split()[1])
    assert str(path) in out and "time limit" in out, out
    # the limit, plus the child's start on a loaded machine (generous)
    assert limit <= elapsed < limit + 60.0, elapsed


def test_a_memory_bomb_ends_in_a_model_error_naming_the_file(tmp_path):
    path = tmp_path / "memory.urdf.xacro"
    path.write_text(MEMORY_BOMB)
    code, out, err = run_python(f"""
        import mbd_ros
        try:
            robot = mbd_ros.load({str(path)!r})
        except mbd_ros.ModelError as exc:
            print("MODEL_ERROR", str(exc)[:300])
        else:
            print("LOADED", robot.link_names)
    """, timeout=120)
    assert code == 0, err[-2000:]
    assert out.startswith("MODEL_ERROR") and str(path) in out and "memory limit" in out, out


def test_launch_arguments_expand_with_the_same_limits(tmp_path):
    path = tmp_path / "runaway.urdf.xacro"
    path.write_text(RUNAWAY)
    code, out, err = run_python(f"""
        import sys
        sys.path.insert(0, {str(REPO / "launch")!r})
        import robot_args
        try:
            robot_args.expand_xacro({str(path)!r}, {{}}, timeout=2.0)
        except ValueError as exc:
            print("VALUE_ERROR", str(exc)[:300])
        print("numba imported:", "numba" in sys.modules)
    """, timeout=120)
    assert code == 0, err[-2000:]
    assert out.startswith("VALUE_ERROR") and str(path) in out and "time limit" in out, out
    assert "numba imported: False" in out        # the launch process stays light


# ---- no orphan -----------------------------------------------------------------------------------

def children_of(pid):
    """Process ids whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stream:
                    stat = stream.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid):
    """True if `pid` exists and is not a zombie (a dead child not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def stop_and_check(process, sig, what):
    """Wait until `process` runs the expansion (its child appears, up to 90 s for the node's
    start on a loaded machine), send `sig`, and check that it ends within 30 s and leaves no
    living child."""
    children = []
    wait_for(lambda: bool(children.extend(children_of(process.pid)) or children), 90.0)
    assert process.poll() is None, f"{what} ended before the signal: {process.communicate()}"
    time.sleep(0.5)          # inside the expansion (or, unbounded, inside 9**9**9)
    process.send_signal(sig)
    try:
        process.wait(timeout=30.0)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} ignored {sig.name} during a xacro expansion")
    assert children, f"{what}: the expansion ran in-process (no child process)"
    assert wait_for(lambda: not any(alive(pid) for pid in children), 10.0), \
        f"{what}: the xacro child outlived it ({children})"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_node_stops_during_an_expansion_and_leaves_no_orphan(tmp_path, sig):
    """The forward dynamics node loads urdf_path in a worker thread; SIGINT/SIGTERM during a
    runaway expansion end the node (its stop handler runs: the GIL is free) and the xacro child
    dies with it."""
    from mbd_ros.nodes import processes
    path = tmp_path / "runaway.urdf.xacro"
    path.write_text(RUNAWAY)
    node = subprocess.Popen(
        [sys.executable, "-m", "mbd_ros.nodes.forward_dynamics"]
        + processes.ros_arguments({"urdf_path": str(path)}, name=f"xacro_stop_{sig.name.lower()}"),
        env=processes.ros_environment(processes.unique_domain_id(17)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        stop_and_check(node, sig, "the node")
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()


def test_ctrl_c_during_a_load_kills_the_expansion(tmp_path):
    """mbd_ros.load in a script's main thread: SIGINT raises KeyboardInterrupt at once and the
    child is gone."""
    path = tmp_path / "runaway.urdf.xacro"
    path.write_text(RUNAWAY)
    script = f"import mbd_ros\nmbd_ros.load({str(path)!r})\n"
    process = subprocess.Popen([sys.executable, "-c", script], cwd=str(REPO),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        stop_and_check(process, signal.SIGINT, "the script")
        assert "KeyboardInterrupt" in process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


# ---- only .xacro paths are expanded --------------------------------------------------------------

def test_xacro_code_runs_only_for_a_xacro_path(tmp_path):
    """The same xacro text given as XML text (str, bytes, with a BOM, ending in '.xacro') is
    read as plain URDF: its ${...} is a literal link name, never evaluated. Given as a .xacro
    path, it is expanded: the file's code runs (that is what load documents)."""
    marker = tmp_path / "ran"
    text = side_effect_xacro(marker)
    for source in (text, text.encode(), "\ufeff" + text, text + "<!-- x.urdf.xacro -->",
                   text.rstrip() + " robot.xacro"):
        try:
            robot = mbd_ros.load(source)
        except mbd_ros.ModelError:
            pass                  # refusing it is fine too (the last one is not well-formed)
        else:
            assert robot.link_names == ["a${y}"]
        assert not marker.exists(), f"XML text was expanded as xacro: {source[:40]!r}"
    # only the exact suffix ".xacro" is the explicit choice (docs/formats.md): another case or
    # a trailing blank is not (read as plain URDF, or refused: nothing runs)
    for name in ("code.XACRO", "code.Xacro", "code.xacro "):
        other = tmp_path / name
        other.write_text(text)
        try:
            mbd_ros.load(str(other))
        except mbd_ros.ModelError:
            pass
        assert not marker.exists(), f"{name!r} was expanded as xacro"
    path = tmp_path / "code.urdf.xacro"
    path.write_text(text)
    assert mbd_ros.load(str(path)).link_names == ["a0"]     # os.system's exit status
    assert marker.exists()


# ---- the launch files' other readers -------------------------------------------------------------

def test_commanded_joints_never_expand_an_alias_bomb_or_entities(tmp_path):
    """launch/robot_args.commanded_joints reads `actuated:` from the node graph (an alias bomb
    elsewhere in the closures file is never expanded) and refuses a DOCTYPE."""
    bomb = ["x0: &x0 [" + ", ".join(["lol"] * 10) + "]"]
    bomb += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]" for i in range(1, 9)]
    closures = tmp_path / "closures.yaml"
    closures.write_text("\n".join(bomb) + "\nactuated: [crank_joint]\n")
    code, out, err = run_python(f"""
        import sys
        sys.path.insert(0, {str(REPO / "launch")!r})
        import robot_args
        print(robot_args.commanded_joints({{"urdf_path": "unused"}}, {str(closures)!r}))
    """, timeout=60, memory=2 << 30)
    assert code == 0 and out.strip() == "['crank_joint']", (out, err[-1000:])
    xml = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]><robot name="r">'
           '<joint name="&a;" type="revolute"/></robot>')
    with pytest.raises(ValueError, match="DOCTYPE"):
        robot_args.commanded_joints({"robot_description": xml})
