"""The simulate plant's schedule (mbd_ros/nodes/cycle_schedule.py), its cycle statistics
(nodes/diagnostics.CycleStats) and the real-time priority of its thread
(nodes/thread_priority.py), without ROS.

The schedule is driven by synthetic timer wake-ups on a known tick grid, as rcl's steady timer
delivers them (never before its tick; after a wake-up later than a period the timer skips to
the next tick after it). The reference count of missed cycles comes from the grid alone, by
the definition (a tick is missed when its step was not done by the next tick), not from the
schedule's anchor: the schedule must agree with it, and take one step per tick."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from mbd_ros.nodes import cycle_schedule as schedule
from mbd_ros.nodes import thread_priority
from mbd_ros.nodes.diagnostics import CycleStats

P = 1_000_000   # period, ns (1 kHz)


def drive(wakes, work_ns, max_catch_up=10):
    """Run the node's use of the schedule (forward_dynamics._on_cycle: anchor at the first
    wake-up, ticks_due, catch-up, finished_late) over timer wake-ups `wakes` (monotonic ns),
    each taking work_ns (an int, or one per wake-up). Returns (steps, missed)."""
    work = np.broadcast_to(np.asarray(work_ns, dtype=np.int64), (len(wakes),))
    start, cycles, missed = None, 0, 0
    for now, w in zip(wakes, work):
        now = int(now)
        if start is None:
            start = schedule.anchor(now, cycles, P)
        start, due = schedule.ticks_due(now, start, cycles, P)
        late = due - 1
        missed += late
        catch_up = min(late, max_catch_up)
        if late > catch_up:
            start += (late - catch_up) * P
        cycles += catch_up + 1
        if schedule.finished_late(now + int(w), start, cycles, P):
            missed += 1
    return cycles, missed


def timer_wakes(ticks, latency):
    """Wake-ups of a steady timer with ticks at `ticks` (ns) and these latencies (ns), as rcl
    fires them: a tick already passed when the previous callback returned is skipped.
    Returns (wake times, the tick each wake-up is for)."""
    wakes, served = [], []
    free = -1
    for t, d in zip(ticks, latency):
        if t < free:   # rcl: next call time moved past the ticks it missed
            continue
        wakes.append(t + d)
        served.append(t)
        free = t + d
    return np.array(wakes), np.array(served)


def reference_missed(ticks, wakes, done):
    """Ticks whose step was done (at done[i], the end of the first wake-up at or after the
    tick) after the next tick: the definition of a missed cycle."""
    j = np.searchsorted(wakes, ticks, side="left")   # the wake-up that steps this tick
    return int(np.sum(done[j] > ticks + P))


def test_jittered_wakeups_on_time_count_no_missed_cycle():
    """Wake-ups 20-400 µs after their tick (the first one 150 µs: the anchor) and 60 µs of
    work: every step is done before the next tick, so none is missed, and one step is taken
    per tick. (The schedule before cycle_schedule.py took a wake-up less late than the first
    for an early one and skipped it: the schedule then lagged the timer by a period, and each
    later wake-up more late than the first counted a missed tick and a catch-up step, then
    the next skipped again: 1130 of the 5000 ticks here.)"""
    rng = np.random.default_rng(0)
    n = 5000
    latency = rng.integers(20_000, 400_000, n)
    latency[0] = 150_000
    ticks = 10**9 + P * np.arange(n)
    wakes, served = timer_wakes(ticks, latency)
    assert len(wakes) == n
    steps, missed = drive(wakes, 60_000)
    assert reference_missed(ticks, wakes, wakes + 60_000) == 0
    assert (steps, missed) == (n, 0)


@pytest.mark.parametrize("delay_periods", [1.5, 3.5, 7.25])
def test_a_stalled_wakeup_misses_the_ticks_whose_deadline_passed(delay_periods):
    """One wake-up comes delay_periods after its tick (a stall): the ticks whose next tick
    passed meanwhile are missed (floor(delay) of them), caught up by extra steps, and the
    count of steps still equals the count of ticks."""
    n = 200
    latency = np.full(n, 50_000)
    latency[100] = int(delay_periods * P)
    ticks = 5 * 10**9 + P * np.arange(n)
    wakes, served = timer_wakes(ticks, latency)
    done = wakes + 60_000
    expected = reference_missed(ticks, wakes, done)
    assert expected == int(delay_periods)
    steps, missed = drive(wakes, 60_000)
    assert missed == expected
    assert steps == n - (ticks[-1] > wakes[-1])   # every tick up to the last wake-up stepped


def test_a_step_ending_after_the_next_tick_is_missed_once():
    """A cycle whose work runs past the next tick (1.3 periods) is missed; the next wake-up,
    after it, finds its own tick on time: one missed cycle, not two."""
    n = 100
    ticks = 10**9 + P * np.arange(n)
    latency = np.full(n, 50_000)
    work = np.full(n, 60_000)
    work[40] = int(1.3 * P)
    wakes, served = [], []
    free = -1
    for k, t in enumerate(ticks):   # the timer waits for the callback to return
        if t + latency[k] < free:
            if ticks[k] < free - P:
                continue   # skipped by the timer
            wakes.append(free)
        else:
            wakes.append(t + latency[k])
        served.append(k)
        free = wakes[-1] + work[k]
    wakes = np.array(wakes)
    done = wakes + work[np.array(served)]
    assert reference_missed(ticks, wakes, done) == 1
    steps, missed = drive(wakes, work[np.array(served)])
    assert (steps, missed) == (n, 1)


def test_a_wakeup_before_the_anchor_moves_it_and_steps():
    """ticks_due at a wake-up earlier in phase than the anchor: due 1, anchor moved so that
    the step is due now; a wake-up after it keeps the anchor."""
    start = schedule.anchor(10 * P + 300_000, 0, P)   # first wake-up 300 µs after its tick
    new_start, due = schedule.ticks_due(11 * P + 100_000, start, 1, P)
    assert due == 1 and new_start == schedule.anchor(11 * P + 100_000, 1, P)
    assert new_start < start
    same, due = schedule.ticks_due(12 * P + 200_000, new_start, 2, P)
    assert (same, due) == (new_start, 1)


def test_cycle_stats_percentiles_equal_numpy():
    """CycleStats.percentiles_us (a partial sort) equals np.percentile (linear interpolation)
    for windows of 1 to 10 000 samples and a ring buffer that wrapped: the same ranks, and the
    interpolation a + (b - a) t against numpy's (it interpolates from b when t >= 0.5): a few
    ulps (the values are < 2^53 ns, exact in doubles)."""
    tol = {"rtol": 4 * np.finfo(float).eps, "atol": 0.0}
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 7, 100, 101, 9999):
        stats = CycleStats(window=10000)
        compute = rng.integers(1000, 10**6, n)
        cycle = rng.integers(1000, 10**7, n)
        for c, w in zip(compute, cycle):
            stats.record(int(c), int(w))
        expected = np.concatenate((np.percentile(compute, (50, 99)),
                                   np.percentile(cycle, (50, 99)))) / 1e3
        np.testing.assert_allclose(stats.percentiles_us(), expected, **tol, err_msg=str(n))
    stats = CycleStats(window=100)
    values = rng.integers(0, 10**6, 250)
    for v in values:
        stats.record(int(v), int(v))
    expected = np.percentile(values[-100:], (50, 99)) / 1e3
    np.testing.assert_allclose(stats.percentiles_us()[:2], expected, **tol)


def _in_thread(call):
    out = []
    thread = threading.Thread(target=lambda: out.append(call()))
    thread.start()
    thread.join(10)
    return out[0]


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux scheduling API")
def test_thread_priority_sets_and_restores_the_calling_thread_only():
    """In a thread of its own (not pytest's): SCHED_FIFO 7 when the OS allows it (then the
    thread reports 7, and 0 after going back), else a reason naming the priority and the
    thread stays normal; the main thread is untouched either way; out of range: refused."""
    def run():
        error = thread_priority.set_current_thread_priority(7)
        during = thread_priority.current_thread_priority()
        back = thread_priority.set_current_thread_priority(0)
        return error, during, back, thread_priority.current_thread_priority()
    error, during, back, after = _in_thread(run)
    if error is None:
        assert during == 7 and back is None and after == 0
    else:
        assert "priority 7" in error and during == 0
    assert thread_priority.current_thread_priority() == 0
    assert "outside 0..98" in thread_priority.set_current_thread_priority(99)


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux scheduling API")
def test_a_refused_priority_change_reports_the_scheduling_kept(monkeypatch):
    """forward_dynamics._set_cycle_priority when the OS refuses a change (a runtime raise above
    an rtprio limit): the warning names the scheduling the thread really keeps, as the kernel
    reports it (SCHED_FIFO 4 here when this process may use it, else normal), and
    cycle_priority (/diagnostics) says the same."""
    pytest.importorskip("rclpy", reason="the node module imports rclpy")
    from mbd_ros.nodes.forward_dynamics import ForwardDynamicsNode

    class Logger:
        def __init__(self):
            self.lines = []

        def warning(self, text):
            self.lines.append(text)

    class Node:
        cycle_priority = 0
        logger = Logger()

        def get_logger(self):
            return self.logger

    def run():
        node = Node()
        start = thread_priority.set_current_thread_priority(4)   # None: now SCHED_FIFO 4
        real = thread_priority.set_current_thread_priority
        monkeypatch.setattr(thread_priority, "set_current_thread_priority",
                            lambda p: f"cannot run the cycle's thread SCHED_FIFO at priority {p}")
        try:
            error = ForwardDynamicsNode._set_cycle_priority(node, 35)
        finally:
            monkeypatch.setattr(thread_priority, "set_current_thread_priority", real)
            kernel = thread_priority.current_thread_priority()
            real(0)
        return start, error, kernel, node.cycle_priority, node.logger.lines
    start, error, kernel, reported, lines = _in_thread(run)
    assert "priority 35" in error and len(lines) == 1
    assert reported == kernel == (4 if start is None else 0)
    kept = "SCHED_FIFO priority 4" if start is None else "normal scheduling"
    assert lines[0].endswith(f"the cycle keeps {kept}"), lines[0]


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux scheduling API")
def test_cleanup_after_an_error_while_active_stops_the_cycle():
    """rclpy's lifecycle runs on_error after an exception in a transition, and base.on_error
    cleans up (cleanup_node) without deactivate_node: ForwardDynamicsNode.cleanup_node must
    still destroy the plant's timer and give the cycle's thread its normal scheduling back
    (checked with the kernel's report for the thread, when this process may use SCHED_FIFO;
    else the timer only)."""
    pytest.importorskip("rclpy", reason="the node module imports rclpy")
    from mbd_ros.nodes.forward_dynamics import ForwardDynamicsNode

    class Node:   # what cleanup_node touches of an active simulate node, recorded
        _stop_cycle = ForwardDynamicsNode._stop_cycle
        _set_cycle_priority = ForwardDynamicsNode._set_cycle_priority

        def __init__(self):
            self.timer, self.destroyed, self.cycle_priority = "the plant's timer", [], 0

        def destroy_timer(self, timer):
            self.destroyed.append(timer)

        def cleanup_plant_interface(self):
            pass

        def get_logger(self):
            return self

        def warning(self, text):   # (activate's refusal where SCHED_FIFO is not allowed)
            pass

    def run():
        node = Node()
        allowed = node._set_cycle_priority(9) is None   # as activate_node
        during = thread_priority.current_thread_priority()
        try:
            ForwardDynamicsNode.cleanup_node(node)
        finally:
            after = thread_priority.current_thread_priority()
            thread_priority.set_current_thread_priority(0)
        return allowed, during, after, node
    allowed, during, after, node = _in_thread(run)
    assert node.destroyed == ["the plant's timer"] and node.timer is None
    assert during == (9 if allowed else 0)
    assert after == 0 and node.cycle_priority == 0


def test_a_priority_given_at_launch_is_kept_and_given_back():
    """cycle_priority 0 leaves the executor thread's scheduling as the process was started (e.g.
    `chrt -f 7`), and a cycle_priority > 0 while active is undone at deactivate back to that
    launch scheduling (checked with the kernel's report for the thread, when this process may
    use SCHED_FIFO; else the thread stays at normal scheduling throughout)."""
    pytest.importorskip("rclpy", reason="the node module imports rclpy")
    from mbd_ros.nodes.forward_dynamics import ForwardDynamicsNode

    class Node:   # what activation and deactivation touch of a simulate node
        _claim_cycle_priority = ForwardDynamicsNode._claim_cycle_priority
        _stop_cycle = ForwardDynamicsNode._stop_cycle
        _set_cycle_priority = ForwardDynamicsNode._set_cycle_priority

        def __init__(self, priority):
            self.priority, self.timer, self.cycle_priority = priority, None, 0

        def param(self, name):
            assert name == "cycle_priority"
            return self.priority

        def get_logger(self):
            return self

        def warning(self, text):
            pass

    def run():
        launch = 7 if thread_priority.set_current_thread_priority(7) is None else 0
        seen = []
        try:
            for priority in (0, 12):
                node = Node(priority)
                node._claim_cycle_priority()
                seen.append((thread_priority.current_thread_priority(), node.cycle_priority))
                node._stop_cycle()
                seen.append((thread_priority.current_thread_priority(), node.cycle_priority))
        finally:
            thread_priority.set_current_thread_priority(0)
        return launch, seen
    launch, seen = _in_thread(run)
    active = 12 if launch else 0
    assert seen == [(launch, launch), (launch, launch), (active, active), (launch, launch)]
