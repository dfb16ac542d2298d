"""Expanding a .xacro file in a child process bounded in time and memory (standard library only).

A xacro file is code: its ``${...}`` expressions are Python, and they reach ``os.system``
(through ``python.vars`` / ``python.type``), so expanding one runs whatever it says, with the
user's rights. This module does not make that safe (it is no sandbox); it bounds the accident:
``expand(path, mappings)`` runs xacro in a fresh Python child with

- a memory limit (RLIMIT_AS, MAX_MEMORY_BYTES, set before xacro is imported),
- a time limit (TIMEOUT_S of wall-clock time, killed after it; RLIMIT_CPU as a second net),
- an output limit (MAX_OUTPUT_BYTES of XML),
- no orphan: the child is killed when the caller is interrupted (KeyboardInterrupt, any
  exception) and, on Linux, when the thread that started it dies (PR_SET_PDEATHSIG, so that a
  node ended by SIGINT/SIGTERM while a load runs in its worker thread leaves nothing behind).

It returns the same text as ``xacro.process_file(path, mappings).toprettyxml(indent="  ")`` in
the caller's process, and raises XacroError (a ValueError) naming the file otherwise.

No imports from mbd_ros: launch/robot_args.py loads this file by its path, so that a launch file
does not import the package (numba) to expand a robot description.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time

# A robot description expands in well under a second (xacro's import included); these are far
# above any real one and bound a runaway expression (`${9**9**9}`) or an include loop.
TIMEOUT_S = 60.0
MAX_MEMORY_BYTES = 1 << 30          # address space of the child (Python + xacro need ~40 MB)
MAX_OUTPUT_BYTES = 32 << 20         # the largest URDF accepted (mbd_ros.urdf.MAX_URDF_BYTES)
_STDERR_EXCERPT = 600
_STDERR_KEEP = 64 << 10             # what is kept of the child's stderr (xacro's warnings)


class XacroError(ValueError):
    """A xacro file that could not be expanded (the message names the file)."""


# The child: limits first, then xacro. Its own stdout is redirected to stderr so that nothing
# the file prints can be mistaken for the result, which goes to the saved stdout as one JSON
# header line ({"ok": true} or the failure) followed, on success, by the XML in UTF-8.
_CHILD = r"""
import json, os, resource, signal, sys
if sys.path and sys.path[0] == "":
    del sys.path[0]                      # not the working directory's modules
job = json.loads(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (job["memory"], job["memory"]))
cpu = int(job["cpu"])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
try:                                     # die with the thread that started us (Linux)
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != job["parent"]:        # the parent died before prctl
    os._exit(3)
result = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr

def finish(header, payload=b""):
    result.write(json.dumps(header).encode("ascii") + b"\n" + payload)
    result.flush()
    os._exit(0 if header.get("ok") else 2)

try:
    import xacro
except ImportError:
    finish({"missing": "xacro"})
try:
    xml = xacro.process_file(job["path"], mappings=job["mappings"]).toprettyxml(indent="  ")
    if len(xml) > job["output"]:
        finish({"limit": "output", "size": len(xml)})
    data = xml.encode("utf-8")
except BaseException as exc:             # XacroException, XML and substitution errors, exit()
    cause, seen = exc, []                # xacro wraps MemoryError in its own exception
    while cause is not None and len(seen) < 50:
        seen.append(cause)
        cause = getattr(cause, "exc", None) or cause.__cause__ or cause.__context__
    if any(isinstance(e, MemoryError) for e in seen):
        finish({"limit": "memory"})
    if any(isinstance(e, RecursionError) for e in seen):
        finish({"error": "recursion too deep (an include or macro loop?)"})
    finish({"error": (str(exc).strip() or type(exc).__name__)[:2000]})
finish({"ok": True}, data)
"""


def expand(path, mappings=None, timeout=None, max_memory=None, max_output=None):
    """URDF XML text of the xacro file `path` with its <xacro:arg>s set from `mappings`
    (dict of str), expanded in a bounded child process (module docstring). Raises XacroError
    naming the file when xacro is missing, the file does not expand or a limit is exceeded;
    KeyboardInterrupt and other exceptions of the caller kill the child before propagating."""
    path = os.fspath(path)
    timeout = TIMEOUT_S if timeout is None else float(timeout)
    memory = MAX_MEMORY_BYTES if max_memory is None else int(max_memory)
    output = MAX_OUTPUT_BYTES if max_output is None else int(max_output)
    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "not found"
        raise XacroError(f"xacro file {what}: {_short(path)}")
    if not sys.executable:
        raise XacroError(f"{path}: cannot expand it: no Python interpreter to run xacro in")
    job = {"path": path, "mappings": {str(k): str(v) for k, v in dict(mappings or {}).items()},
           "memory": memory, "cpu": max(1, int(timeout) + 1), "output": output,
           "parent": os.getpid()}
    deadline = time.monotonic() + timeout
    # its own process group: a kill reaches what the file's code may have started too
    process = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(job)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = _collect(process, deadline, 4 * output + 4096)
    except subprocess.TimeoutExpired:
        raise XacroError(f"{path}: xacro expansion exceeded the time limit of {timeout:g} s "
                         "(a runaway ${...} expression or an include loop?)") from None
    except _TooLong:
        raise XacroError(f"{path}: xacro wrote more than the {output} characters a URDF may "
                         "have") from None
    finally:   # KeyboardInterrupt, SystemExit, a limit: no orphan, no open pipe
        _kill(process)
    return _answer(path, process.returncode, out, err, timeout, memory, output)


class _TooLong(Exception):
    pass


def _collect(process, deadline, out_cap):
    """(stdout bytes, the first _STDERR_KEEP bytes of stderr) of `process` once it has closed
    both; TimeoutExpired past `deadline`, _TooLong past out_cap bytes of stdout."""
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, out)
        selector.register(process.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(process.args, 0)
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data is out:
                    out += chunk
                    if len(out) > out_cap:
                        raise _TooLong()
                elif len(err) < _STDERR_KEEP:
                    err += chunk[:_STDERR_KEEP - len(err)]
    try:
        process.wait(max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        raise subprocess.TimeoutExpired(process.args, 0) from None
    return bytes(out), bytes(err)


def _answer(path, code, out, err, timeout, memory, output):
    head, _, payload = out.partition(b"\n")
    try:
        answer = json.loads(head.decode("ascii")) if head else {}
    except ValueError:
        answer = {}
    if code == 0 and answer.get("ok"):
        return payload.decode("utf-8")
    stderr = err.decode("utf-8", "replace").strip()
    if answer.get("missing"):
        raise XacroError(f"{path} is a xacro file: install the xacro package (pip install "
                         "xacro) to expand it, or pass the expanded URDF")
    limit = answer.get("limit")
    if limit == "memory" or (not answer and _memory_failure(stderr)):
        raise XacroError(f"{path}: xacro expansion exceeded the memory limit of "
                         f"{memory >> 20} MiB")
    if limit == "output":
        raise XacroError(f"{path}: xacro expanded it to {answer.get('size')} characters, more "
                         f"than the {output} a URDF may have")
    if "error" in answer:
        raise XacroError(f"{path}: xacro could not expand it: {_short(answer['error'])}")
    if code in (-9, -24):   # SIGKILL / SIGXCPU: the CPU-time net
        raise XacroError(f"{path}: xacro expansion exceeded the time limit of {timeout:g} s")
    raise XacroError(f"{path}: xacro could not expand it (its process ended with code {code}"
                     f"{': ' + _short(stderr, _STDERR_EXCERPT) if stderr else ''})")


def _memory_failure(stderr):
    return "MemoryError" in stderr or "Cannot allocate memory" in stderr


def _kill(process):
    """Kill the child's process group (if still there), reap the child, close its pipes."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:   # already gone
            pass
        process.wait()
    for stream in (process.stdout, process.stderr):
        stream.close()


def _short(text, limit=300):
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
