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
    (see StopRequest)."""

    def __enter__(self):
        stop = StopRequest.current
        if stop is not None:
            stop.busy += 1
            if stop.requested:   # asked before the transition started
                stop._handle(signal.SIGINT, None)

    def __exit__(self, *exc):
        stop = StopRequest.current
        if stop is not None:
            stop.busy -= 1
