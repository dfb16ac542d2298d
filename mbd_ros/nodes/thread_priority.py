"""Real-time scheduling of the thread that runs a node's cycle (the executor's thread).

On a machine shared with other busy processes, the plant's 1 kHz timer wakes up late because
the kernel runs the others first: in a measured 31 s run of the double wishbone at load ~3 on
2 cores, 4 % of the wake-ups came more than 1 ms after their tick (up to 9.5 ms), though the
cycle's work is ~6 % of its period (docs/nodes.md, "Cycle timing"). A SCHED_FIFO thread runs
as soon as it is woken, before every normal process. ros2_control's controller manager does
the same for its update loop (its `thread_priority`, SCHED_FIFO 50 by default).

It needs the right to (root, CAP_SYS_NICE, or an rtprio limit in /etc/security/limits.conf);
without it the thread keeps normal scheduling and the caller gets the reason. The kernel's
real-time throttling (/proc/sys/kernel/sched_rt_runtime_us, 95 % by default) keeps a runaway
real-time thread from freezing the machine.
"""
from __future__ import annotations

import os

MAX_PRIORITY = 98   # 99 is left to the kernel's own watchdogs


def set_current_thread_priority(priority):
    """priority > 0: run the calling thread SCHED_FIFO at that priority (1..MAX_PRIORITY);
    0: back to normal scheduling (SCHED_OTHER). Returns None when done, else the reason it
    could not be done (a text naming the priority and the OS error). Linux only (elsewhere:
    the reason)."""
    priority = int(priority)
    if not 0 <= priority <= MAX_PRIORITY:
        return f"cycle_priority {priority} outside 0..{MAX_PRIORITY}"
    if not hasattr(os, "sched_setscheduler"):
        return "this OS has no sched_setscheduler (real-time priorities need Linux)"
    policy = os.SCHED_FIFO if priority else os.SCHED_OTHER
    try:   # pid 0: the calling thread (Linux schedules threads, not processes)
        os.sched_setscheduler(0, policy, os.sched_param(priority))
    except OSError as exc:
        return (f"cannot run the cycle's thread SCHED_FIFO at priority {priority} "
                f"({exc.strerror}): needs root, CAP_SYS_NICE or an rtprio limit")
    return None


def current_thread_priority():
    """The calling thread's SCHED_FIFO priority, 0 when it is not SCHED_FIFO."""
    if not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(0) != os.SCHED_FIFO:
        return 0
    return os.sched_getparam(0).sched_priority


def current_scheduling():
    """The calling thread's (policy, priority) (os.SCHED_* and its sched_priority), None where
    the OS has no sched_getscheduler."""
    if not hasattr(os, "sched_getscheduler"):
        return None
    return os.sched_getscheduler(0), os.sched_getparam(0).sched_priority


def restore_scheduling(saved):
    """Give the calling thread the scheduling `saved` (current_scheduling()'s) back. Returns
    None when done (or nothing to do), else the reason."""
    if saved is None or current_scheduling() == saved:
        return None
    policy, priority = saved
    try:
        os.sched_setscheduler(0, policy, os.sched_param(priority))
    except OSError as exc:
        return f"cannot restore the cycle thread's scheduling {saved} ({exc.strerror})"
    return None
