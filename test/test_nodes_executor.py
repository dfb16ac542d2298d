"""nodes/executor.LeanExecutor (the nodes' default `single_threaded` executor) against rclpy's own
SingleThreadedExecutor: the same callbacks run with the same arguments, in one process, for
subscriptions (message, raw, with MessageInfo), timers (with and without TimerInfo), services,
guard conditions, coroutine callbacks awaiting futures, entities created and destroyed while
spinning, exceptions raised by callbacks, spin_until_future_complete timeouts and shutdown."""
# (no `from __future__ import annotations`: rclpy finds TimerInfo / MessageInfo parameters by
# comparing annotations with the classes, not with strings)
import os
import time

import pytest

pytest.importorskip("rclpy")   # ROS is an optional dependency of the library (the nodes' tests)

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from rclpy.subscription import MessageInfo  # noqa: E402
from rclpy.task import Future  # noqa: E402
from rclpy.timer import TimerInfo  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from mbd_ros.nodes import processes  # noqa: E402
from mbd_ros.nodes.executor import LeanExecutor  # noqa: E402
from ros_harness import reserve_domain_id  # noqa: E402

EXECUTORS = {"lean": LeanExecutor, "rclpy": SingleThreadedExecutor}


@pytest.fixture
def context():
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    domain, lock = reserve_domain_id(31)     # no other test run's nodes on this domain
    rclpy.init(context=ctx, domain_id=domain)
    yield ctx
    rclpy.try_shutdown(context=ctx)
    lock.close()


def spin_until(executor, done, timeout=10.0):
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    return done()


def scenario(context, kind):
    """A node with every kind of entity, driven by a second node on the same executor; returns
    the log of what the callbacks received."""
    ex = EXECUTORS[kind](context=context)
    node = rclpy.create_node(f"lean_{kind}", context=context)
    peer = rclpy.create_node(f"peer_{kind}", context=context)
    ex.add_node(node)
    ex.add_node(peer)
    log = {"msg": [], "raw": [], "info": [], "timer": 0, "timer_info": [], "service": 0,
           "guard": 0, "coroutine": []}
    node.create_subscription(Float64, "x", lambda m: log["msg"].append(m.data), 10)
    node.create_subscription(Float64, "x", lambda b: log["raw"].append(
        deserialize_message(b, Float64).data), 10, raw=True)

    def with_info(msg, info: MessageInfo):
        log["info"].append((msg.data, info["source_timestamp"] > 0))
    node.create_subscription(Float64, "x", with_info, 10)

    def on_timer():
        log["timer"] += 1
    node.create_timer(0.01, on_timer)

    def on_timer_info(info: TimerInfo):
        log["timer_info"].append(info.expected_call_time <= info.actual_call_time)
    node.create_timer(0.01, on_timer_info)

    def on_trigger(request, response):
        log["service"] += 1
        response.success = True
        response.message = "ok"
        return response
    node.create_service(Trigger, "trigger", on_trigger)
    guard = node.create_guard_condition(lambda: log.__setitem__("guard", log["guard"] + 1))

    later = Future()

    async def on_coroutine(msg):   # awaits a future set by another callback: a pending task
        value = await later
        log["coroutine"].append((msg.data, value))
    node.create_subscription(Float64, "y", on_coroutine, 10)

    pub = peer.create_publisher(Float64, "x", 10)
    pub_y = peer.create_publisher(Float64, "y", 10)
    client = peer.create_client(Trigger, "trigger")
    assert spin_until(ex, lambda: pub.get_subscription_count() == 3 and
                      pub_y.get_subscription_count() == 1 and client.service_is_ready())
    for k in range(5):
        pub.publish(Float64(data=float(k)))
        assert spin_until(ex, lambda: len(log["msg"]) == k + 1 and len(log["raw"]) == k + 1
                          and len(log["info"]) == k + 1)
    response = client.call_async(Trigger.Request())
    assert spin_until(ex, response.done)
    assert response.result().success and response.result().message == "ok"
    guard.trigger()
    assert spin_until(ex, lambda: log["guard"] == 1)
    pub_y.publish(Float64(data=7.0))
    assert spin_until(ex, lambda: ex._tasks != [] or log["coroutine"], timeout=5)
    later.set_result("set")
    assert spin_until(ex, lambda: log["coroutine"] == [(7.0, "set")])
    assert spin_until(ex, lambda: log["timer"] >= 5 and len(log["timer_info"]) >= 5)

    # an entity created while spinning is waited on; a destroyed one is never called again
    late = []
    sub = node.create_subscription(Float64, "z", lambda m: late.append(m.data), 10)
    pub_z = peer.create_publisher(Float64, "z", 10)
    assert spin_until(ex, lambda: pub_z.get_subscription_count() == 1)
    pub_z.publish(Float64(data=1.5))
    assert spin_until(ex, lambda: late == [1.5])
    node.destroy_subscription(sub)
    pub_z.publish(Float64(data=2.5))
    spin_until(ex, lambda: False, timeout=0.3)
    assert late == [1.5]

    # a callback's exception leaves spin_once, as with rclpy's executor
    def failing(msg):
        raise RuntimeError(f"failed on {msg.data}")
    node.create_subscription(Float64, "w", failing, 10)
    pub_w = peer.create_publisher(Float64, "w", 10)
    assert spin_until(ex, lambda: pub_w.get_subscription_count() == 1)
    pub_w.publish(Float64(data=3.0))
    with pytest.raises(RuntimeError, match="failed on 3.0"):
        spin_until(ex, lambda: False, timeout=5)

    # spin_until_future_complete returns at its timeout; shutdown ends the spinning
    never = Future()
    t0 = time.monotonic()
    ex.spin_until_future_complete(never, timeout_sec=0.2)
    # not before its timeout (less the clocks' granularity), and it does return: the upper
    # bound only tells "returned" from "hung" and is far above any scheduling delay under load
    assert 0.15 < time.monotonic() - t0 < 10.0 and not never.done()
    assert ex.shutdown(timeout_sec=1.0)
    node.destroy_node()
    peer.destroy_node()
    log["timer"] = log["timer"] >= 5
    log["timer_info"] = all(log["timer_info"])
    return log


def test_lean_executor_runs_every_callback_as_rclpys_executor(context):
    expected = {"msg": [0.0, 1.0, 2.0, 3.0, 4.0], "coroutine": [(7.0, "set")], "service": 1,
                "guard": 1, "timer": True, "timer_info": True}
    logs = {kind: scenario(context, kind) for kind in EXECUTORS}
    for kind, log in logs.items():
        assert log["raw"] == expected["msg"], kind
        assert log["info"] == [(x, True) for x in expected["msg"]], kind
        for key, value in expected.items():
            assert log[key] == value, (kind, key)
    assert logs["lean"] == logs["rclpy"]


def test_lean_executor_takes_qos_events_at_its_poll_period(context):
    """QoS event handlers join the wait set at most every event_poll_period: an incompatible QoS
    pair is still reported (the warning callback runs) within a few periods."""
    from rclpy.event_handler import SubscriptionEventCallbacks
    from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
    ex = LeanExecutor(context=context, event_poll_period=0.05)
    node = rclpy.create_node("lean_events", context=context)
    ex.add_node(node)
    seen = []
    node.create_subscription(
        Float64, "q", lambda m: None,
        QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                   durability=QoSDurabilityPolicy.TRANSIENT_LOCAL),
        event_callbacks=SubscriptionEventCallbacks(incompatible_qos=seen.append))
    node.create_publisher(Float64, "q", QoSProfile(
        depth=1, reliability=QoSReliabilityPolicy.BEST_EFFORT))
    assert spin_until(ex, lambda: bool(seen), timeout=10)
    ex.shutdown(timeout_sec=1.0)
    node.destroy_node()


def test_lean_executor_is_the_nodes_single_threaded_executor():
    from mbd_ros.nodes.base import make_executor
    mine = not rclpy.ok()   # make_executor uses the default context, as the nodes' run() does
    if mine:
        rclpy.init(domain_id=processes.unique_domain_id(32))
    try:
        for kind, cls in [("single_threaded", LeanExecutor),
                          ("rclpy_single_threaded", SingleThreadedExecutor)]:
            executor = make_executor(kind)
            assert type(executor) is cls
            executor.shutdown(timeout_sec=1.0)
    finally:
        if mine:
            rclpy.try_shutdown()
