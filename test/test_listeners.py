"""messages.Listeners: which output publishers have subscribers, each checked once per period,
the checks spread over the cycles; a subscriber that appears is seen within one period.
(Publishers are stand-ins counting their get_subscription_count calls; the node-level behaviour,
outputs published to real subscribers, is in test_nodes_forward.py / test_nodes_simulate.py.)"""
from __future__ import annotations

import time

import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install 'mbd_ros[ros]')")

from mbd_ros.nodes import messages  # noqa: E402


class FakePublisher:
    def __init__(self, count=0):
        self.count = count
        self.calls = 0

    def get_subscription_count(self):
        self.calls += 1
        return self.count


class FakeClock:
    def __init__(self):
        self.ns = 1_000_000_000

    def monotonic_ns(self):
        return self.ns


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(messages, "time", fake)
    return fake


def test_checks_spread_over_the_period_and_new_subscribers_seen_within_it(clock):
    period_ns = 20_000_000
    listeners = messages.Listeners(period=period_ns * 1e-9)
    pubs = [listeners.track(FakePublisher(count=1 if k == 0 else 0)) for k in range(10)]
    assert all(listeners.heard[p] for p in pubs)          # heard until checked
    heard = listeners.refresh()                           # first call: everything checked
    assert heard[pubs[0]] and not any(heard[p] for p in pubs[1:])
    assert [p.calls for p in pubs] == [1] * 10
    # 1 kHz for 200 ms: each publisher checked once per period (10 times, give or take the
    # first period's stagger), never more than two checks in one cycle
    per_cycle = []
    for _ in range(200):
        clock.ns += 1_000_000
        before = sum(p.calls for p in pubs)
        listeners.refresh()
        per_cycle.append(sum(p.calls for p in pubs) - before)
    assert max(per_cycle) <= 2, per_cycle
    assert all(9 <= p.calls - 1 <= 11 for p in pubs), [p.calls for p in pubs]
    # a subscriber appears: seen within one period
    pubs[5].count = 1
    for cycle in range(1, 100):
        clock.ns += 1_000_000
        if listeners.refresh()[pubs[5]]:
            break
    assert cycle * 1_000_000 <= period_ns
    assert listeners.any(pubs[4:6]) and not listeners.any(pubs[6:])


def test_slow_messages_check_every_due_publisher_each_time(clock):
    listeners = messages.Listeners(period=0.02)
    pubs = [listeners.track(FakePublisher()) for _ in range(5)]
    listeners.refresh()
    pubs[3].count = 2
    clock.ns += 200_000_000   # the next message 0.2 s later: all due, the new subscriber seen
    assert listeners.refresh()[pubs[3]]
    assert [p.calls for p in pubs] == [2] * 5


def test_real_clock_smoke():
    """With time.monotonic_ns: not due again within the period, due once it has passed. The
    "not yet" half holds only if the two calls really were less than a period apart, which a
    loaded machine can break (a 20 ms descheduling): it is asserted when the measured time
    between them says so, and the period is 0.2 s so that it almost always does."""
    period = 0.2
    listeners = messages.Listeners(period=period)
    pub = listeners.track(FakePublisher(count=1))
    before = time.monotonic()
    assert listeners.refresh()[pub] and pub.calls == 1
    assert listeners.refresh()[pub]
    if time.monotonic() - before < period:
        assert pub.calls == 1                          # not due again yet
    time.sleep(period * 1.5)                           # sleeps at least this long
    calls = pub.calls
    listeners.refresh()
    assert pub.calls == calls + 1
