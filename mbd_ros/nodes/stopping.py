"""Stopping a node process on SIGINT / SIGTERM, promptly at any point (docs/nodes.md,
"Shutdown"): `StopRequest` (run()'s handlers, the watchdog), `busy` (a lifecycle transition in
the main thread: a signal ends the process at once) and `finish_process`. Standard library only.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time


class StopRequest:
    """SIGINT / SIGTERM handler for run(): it only records the request; run() sees it within
    its spin timeout (0.2 s), leaves its loop and shuts down in order.

    rclpy's own handlers shut the context down asynchronously from a signal-handling thread
    and then raise KeyboardInterrupt wherever the main thread happens to be: under load that
    lands inside rclpy's executor, task or wait-set code and gave the intermittent FATAL
    tracebacks at shutdown ('Task' object has no attribute '_exception', context-invalid
    errors, and pybind11's 'Unable to convert call argument' from a callback into objects
    already being torn down).

    While a lifecycle transition runs in the main thread (`busy`: configuring a 3000-link robot
    took 24 s, during which the spin loop never saw the flag) a signal ends the process at
    once: nothing is published or held yet that an orderly shutdown would save. And with
    `watchdog` (a node process), a thread woken by the signal itself (signal.set_wakeup_fd:
    written by the C-level handler, even while the main thread is in a long C call that
    defers Python handlers) ends the process if it is still alive WATCHDOG_SECONDS later."""

    WATCHDOG_SECONDS = 3.0
    current = None   # the StopRequest of the node running in this process (start / restore)

    @classmethod
    def start(cls, watchdog=False):
        """A StopRequest with its handlers installed, as StopRequest.current."""
        stop = cls.current = cls()
        stop.install(watchdog)
        if watchdog:   # a node process: the C handler ready now, not in a callback later
            try:
                _exit_zero_address()
            except Exception as exc:   # immediate_exit reports it when it is needed
                _say(f"no C-level stop handler ({type(exc).__name__}: {exc})")
        return stop

    def __init__(self):
        self.requested = False
        self.busy = 0
        self._previous = {}
        self._wakeup = None
        self._previous_wakeup_fd = -1

    def install(self, watchdog=False):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        if watchdog:
            import socket
            reader, writer = socket.socketpair()
            writer.setblocking(False)
            self._wakeup = (reader, writer)
            self._previous_wakeup_fd = signal.set_wakeup_fd(writer.fileno(),
                                                            warn_on_full_buffer=False)
            threading.Thread(target=self._watch, args=(reader,), name="mbd_ros stop watchdog",
                             daemon=True).start()

    def restore(self):
        if StopRequest.current is self:
            StopRequest.current = None
        _IMMEDIATE["depth"] = 0
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if self._wakeup is not None:
            signal.set_wakeup_fd(self._previous_wakeup_fd)

    def _handle(self, signum, frame):
        self.requested = True
        if self.busy:
            _say("stop requested during a lifecycle transition: exiting now")
            finish_process(0)

    def _watch(self, reader):
        # the wakeup fd gets the number of every signal that has a Python handler: wait for
        # SIGINT or SIGTERM
        while True:
            try:
                received = reader.recv(64)
            except OSError:
                return
            if not received:
                return
            if signal.SIGINT in received or signal.SIGTERM in received:
                break
        time.sleep(self.WATCHDOG_SECONDS)
        _say(f"stop requested {self.WATCHDOG_SECONDS:g} s ago and the node has not ended: "
             "exiting now")
        finish_process(0)


def _say(text):
    """One line on stderr without the logging machinery (from a signal handler or thread)."""
    try:
        sys.stderr.write(f"[mbd_ros] {text}\n")
    except Exception:   # stderr closed: nothing to say it on
        pass


def finish_process(code):
    """End the node process now with `code`, after its orderly ROS shutdown: flush the output
    and skip the interpreter's finalization (numba's and LLVM's teardown took ~2 s on a busy
    machine, longer than launch's 5 s SIGINT grace when several nodes stop at once, which then
    killed them with SIGTERM)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:   # closed or broken: nothing more to write
            pass
    os._exit(code)


class busy:
    """A lifecycle transition runs in the main thread: a stop request ends the process at once
    (see StopRequest and immediate_exit)."""

    def __enter__(self):
        stop = StopRequest.current
        if stop is not None:
            stop.busy += 1
            if stop.requested:   # asked before the transition started
                stop._handle(signal.SIGINT, None)
            immediate_exit(True)

    def __exit__(self, *exc):
        stop = StopRequest.current
        if stop is not None:
            stop.busy -= 1
            immediate_exit(False)


# ---------------------------------------------------------------------- immediate exit
# A Python signal handler runs only between bytecodes of the main thread, and the watchdog
# thread needs the GIL: a numba kernel or a numpy call holding the GIL for seconds (the warm-up
# of a 3000-link robot: O(n^3) mass-matrix work, 15-28 s under load) deferred both. While a
# transition or a robot load runs, SIGINT / SIGTERM are therefore handled in C: the handler is
# a numba cfunc calling _exit(0), which ends the process at once wherever it is (nothing is
# published or held yet that an orderly shutdown would save).
_IMMEDIATE = {"depth": 0, "handler": None}


def _exit_zero_address():
    """Address of a C function void(int) that calls _exit(0) (a numba cfunc, compiled once and
    cached on disk; ~0.5 s the first time)."""
    if _IMMEDIATE["handler"] is None:
        import ctypes

        from ._exit_now import exit_zero
        _IMMEDIATE["handler"] = exit_zero
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        _IMMEDIATE["libc"] = libc
    return _IMMEDIATE["handler"].address


def immediate_exit(on):
    """Nested on / off: while on (at least one holder), SIGINT and SIGTERM end the process at
    once with code 0 from C; when the last holder lets go, run()'s Python handlers are back.
    Only in a node process run by run() (StopRequest.current set, main thread)."""
    stop = StopRequest.current
    if stop is None or threading.current_thread() is not threading.main_thread():
        return
    _IMMEDIATE["depth"] += 1 if on else -1
    depth = _IMMEDIATE["depth"]
    try:
        if on and depth == 1:
            address = _exit_zero_address()
            for sig in (signal.SIGINT, signal.SIGTERM):
                _IMMEDIATE["libc"].signal(sig, address)
        elif not on and depth == 0:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, stop._handle)   # (re-installs Python's C-level handler)
    except Exception as exc:   # no cfunc / libc here: the Python handlers stay
        _say(f"immediate exit on SIGINT unavailable ({type(exc).__name__}: {exc})")
