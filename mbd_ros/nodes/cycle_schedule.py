"""The simulate plant's schedule on the monotonic clock, and its honest count of missed cycles.

The forward dynamics node in simulate mode (wall-clock pacing) runs one cycle per tick of a
steady-clock timer of period p. The schedule is the grid of ticks: step j (j = 0, 1, ..., the
node's count of steps since the anchor) is due at start + (j + 1) p and must be done by its
deadline start + (j + 2) p, the next tick's time. A cycle is **missed** when its step was not
done by that deadline:

- a wake-up at `now` finds `due` = (now - start) // p - cycles ticks at or before now not yet
  stepped; all but the last already passed their deadline: they are missed (and caught up, at
  most max_catch_up of them, by the node);
- the step taken at this wake-up is missed too when it ends after its deadline
  (`finished_late`); the next wake-up then finds its own tick on time, so no tick is counted
  twice.

Why the anchor follows the timer (docs/nodes.md, "Cycle timing"): the schedule is anchored at
the first wake-up, which comes some 50-300 µs after the timer's tick (the executor's wake-up
latency; more under load). The timer itself never fires before its tick, but a later wake-up
with less latency than the first one lands before the anchor's phase: the node took it for
an early wake-up and skipped it, so its schedule lagged the timer by a period; from then on
every wake-up with more latency than the first one counted a tick as missed and took a
catch-up step, and the next one less late was skipped again (1127 spurious missed cycles of
31 000, 3.6 %, in a measured 31 s run of the double wishbone at 1 kHz). A wake-up of the
timer proves that its tick has come, so here it moves the anchor back to that wake-up
instead: the schedule's phase converges to the least-late wake-up, the deadlines only get
earlier (stricter), and simulated time still advances one step per tick.
"""
from __future__ import annotations


def anchor(now_ns, cycles, period_ns):
    """The schedule's start (ns, monotonic) that makes step `cycles` due at `now_ns`."""
    return now_ns - (cycles + 1) * period_ns


def ticks_due(now_ns, start_ns, cycles, period_ns):
    """(start_ns, due) at a timer wake-up at `now_ns` (monotonic ns) with `cycles` steps done:
    `due` >= 1 ticks at or before now not yet stepped (the first due - 1 are past their
    deadline: missed); a wake-up before the schedule's next tick (the anchor was taken at a
    later phase of the timer than this wake-up's) moves the anchor to it (see the module
    docstring) and returns due = 1. All arguments are integers (ns, counts)."""
    due = (now_ns - start_ns) // period_ns - cycles
    if due <= 0:
        return anchor(now_ns, cycles, period_ns), 1
    return start_ns, due


def finished_late(end_ns, start_ns, cycles, period_ns):
    """Did the step that brought the count of steps to `cycles` end (at `end_ns`, monotonic
    ns) after its deadline start + (cycles + 1) p, the time of the next tick?"""
    return end_ns > start_ns + (cycles + 1) * period_ns
