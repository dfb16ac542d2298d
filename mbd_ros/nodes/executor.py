"""LeanExecutor: rclpy's SingleThreadedExecutor without its per-spin bookkeeping.

rclpy's executors gather every entity of every node on every spin: each subscription, timer,
service, client, guard condition and QoS event handler is filtered through its callback group,
entered as a context, sized and added to a freshly built wait set, then searched for in the
ready lists. For a lifecycle node with ~20 publishers and subscriptions (each with two QoS event
handlers) and ~20 services, that bookkeeping measured ~80 % of the forward-dynamics node's CPU at
1 kHz (~500 µs per received message on a 2-core AMD EPYC) and ~110 µs of its joint_states ->
accelerations latency (bench/node_latency.py). rclpy's EventsExecutor avoids it, but queues one
event per received message without bound and freezes under a topic flood (docs/nodes.md).

This executor keeps the SingleThreadedExecutor's semantics (the same handlers, tasks, callback
groups and keep-last queues, so a flood costs nothing more than a busy topic) and changes only
how it waits:

- the lists of entities to wait on are gathered once and reused while the nodes' entity lists
  are unchanged (compared by identity on every spin: a C-level list comparison);
- ready entities are found through dicts keyed by handle pointer, not list scans;
- the waits' cost grows with the entities in the wait set: rmw_fastrtps attaches to and
  detaches from each one around every wait (~65 µs per wait(0) for a lifecycle node with 13
  services, 4 subscriptions and a timer, measured), and the detaching happens after a message
  woke the wait, on its latency path. So the rarely used entities join the wait set only now
  and then: the services (lifecycle, parameters, ~/reset ...) at most every
  `service_poll_period` s (default 10 ms), QoS event handlers (incompatible QoS, ... warnings)
  at most every `event_poll_period` s (default 50 ms). rmw keeps a request or an event until
  it is taken, so a service answers at most that much later, and nothing is lost; action
  servers and clients (waitables made of services and clients) are polled with the services,
  and their own entities are counted in the wait set's sizes;
- a subscription or timer whose callback is a plain function runs through a light handler
  (_DirectCall: callback group, work tracker and exceptions as rclpy's Task handler does) instead
  of a Task wrapping a coroutine: ~20 µs less per message, and no wake-up of the executor by its
  own guard condition after each callback (rclpy's handler triggers it for other threads);
  coroutine callbacks keep rclpy's Task;
- whenever a task is still pending (a coroutine callback awaiting a future), or the caller asks
  for a subset of nodes, the spin is rclpy's own: those are the cases where callback groups can
  exclude entities, which the cached lists do not track.
"""
from __future__ import annotations

import inspect
import time

from rclpy.event_handler import EventHandler
from rclpy.exceptions import InvalidHandle, TimerCancelledError
from rclpy.executors import (ConditionReachedException, ExternalShutdownException,
                             ShutdownException, SingleThreadedExecutor, TimeoutException)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.timer import TimerInfo
from rclpy.utilities import timeout_sec_to_nsec

EVENT_POLL_PERIOD = 0.05   # s
SERVICE_POLL_PERIOD = 0.01   # s


class _Plan:
    """The entities of the executor's nodes, gathered once (see LeanExecutor)."""

    def __init__(self, nodes, executor):
        # rclpy's Node keeps its entities in these lists (rclpy 9, ROS 2 Kilted); an rclpy
        # without them raises AttributeError here and the executor falls back to rclpy's spin
        self.lists = [(node._subscriptions[:], node._timers[:], node._clients[:],
                       node._services[:], node._guards[:], node._Node__waitables[:])
                      for node in nodes]
        self.nodes = nodes

        def live(k):
            """(node, entity, handle pointer) of kind k: the entities with a callback group
            whose handle is valid (the pointer, fixed for the handle's life, is looked up once
            here instead of after every wait)."""
            out = []
            for node, lists in zip(nodes, self.lists):
                for entity in lists[k]:
                    if entity.callback_group is not None:
                        try:
                            out.append((node, entity, entity.handle.pointer))
                        except InvalidHandle:
                            pass
            return out
        self.subscriptions, self.timers, self.clients, self.services = (live(k)
                                                                         for k in range(4))
        self.guards = live(4)
        waitables = [(n, w) for n, lists in zip(nodes, self.lists) for w in lists[5]
                     if w.callback_group is not None]
        self.events = [(n, w) for n, w in waitables if isinstance(w, EventHandler)]
        self.waitables = [(n, w) for n, w in waitables if not isinstance(w, EventHandler)]
        self.executor_guard_objects = [g for g in (executor._guard, executor._sigint_gc) if g]
        self.executor_guards = [(None, g, g.handle.pointer) for g in self.executor_guard_objects]

    def current(self, nodes, executor):
        """Still the nodes' entities (same nodes, same entity lists, same executor guards)?"""
        if nodes != self.nodes:
            return False
        for node, (subs, timers, clients, services, guards, waitables) in zip(nodes, self.lists):
            if node._subscriptions != subs or node._timers != timers or \
                    node._clients != clients or node._services != services or \
                    node._guards != guards or node._Node__waitables != waitables:
                return False
        return self.executor_guard_objects == [g for g in (executor._guard, executor._sigint_gc)
                                               if g]


class LeanExecutor(SingleThreadedExecutor):
    """A SingleThreadedExecutor (same API and callback semantics) that gathers its wait set
    once per change of its nodes' entities; see the module docstring.

    event_poll_period: s between waits that include the QoS event handlers;
    service_poll_period: s between waits that include the services."""

    def __init__(self, *, context=None, event_poll_period=EVENT_POLL_PERIOD,
                 service_poll_period=SERVICE_POLL_PERIOD):
        super().__init__(context=context)
        self._service_poll_ns = int(service_poll_period * 1e9)
        self._next_service_poll = 0
        self._plan = None
        self._lean = True   # False: rclpy's own spin (see _wait_for_ready_callbacks)
        self._event_poll_ns = int(event_poll_period * 1e9)
        self._next_event_poll = 0
        self._plain_callbacks = {}
        self._timer_arguments = {}

    def _pending_tasks(self):
        with self._tasks_lock:
            if self._tasks:
                self._tasks = [t for t in self._tasks if not t[0].done()]
            return bool(self._tasks)

    def _wait_for_ready_callbacks(self, timeout_sec=None, nodes=None, condition=lambda: False):
        if nodes is not None or not self._lean or self._pending_tasks():
            yield from super()._wait_for_ready_callbacks(timeout_sec, nodes, condition)
            return
        timeout_nsec = timeout_sec_to_nsec(
            timeout_sec.timeout if hasattr(timeout_sec, "timeout") else timeout_sec)
        deadline = time.monotonic_ns() + timeout_nsec if timeout_nsec > 0 else None
        wait_nsec = timeout_nsec
        while not self._is_shutdown and not condition():
            nodes_to_use = self.get_nodes()
            plan = self._plan
            try:
                if plan is None or not plan.current(nodes_to_use, self):
                    plan = self._plan = _Plan(nodes_to_use, self)
            except AttributeError:   # an rclpy whose Node keeps its entities elsewhere
                self._lean = False
                yield from super()._wait_for_ready_callbacks(timeout_sec, nodes, condition)
                return
            yielded = False
            for work in self._wait_once(plan, wait_nsec):
                yielded = True
                yield work
            if yielded:
                return
            if timeout_nsec == 0:
                raise TimeoutException()
            if deadline is not None:   # woken without work (a guard): wait out the rest
                wait_nsec = deadline - time.monotonic_ns()
                if wait_nsec <= 0:
                    raise TimeoutException()
            if self._pending_tasks():   # a handler left a task: rclpy's own spin from here
                yield from super()._wait_for_ready_callbacks(
                    max(wait_nsec, 0) * 1e-9 if deadline is not None else timeout_sec,
                    None, condition)
                return
        if self._is_shutdown:
            raise ShutdownException()
        raise ConditionReachedException()

    def _wait_once(self, plan, timeout_nsec):
        """One wait on the plan's entities; yields (handler, entity, node) of the ready ones in
        rclpy's order (waitables, timers, subscriptions, guards, clients, services; rclpy takes
        them node by node, this executor kind by kind across its nodes)."""
        now = time.monotonic_ns()
        # action servers and clients (waitables made of services, clients, publishers) are
        # polled with the services: at most service_poll_period late, as a service answer
        waitables = []
        if plan.events and now >= self._next_event_poll:
            self._next_event_poll = now + self._event_poll_ns
            waitables = plan.events
        polled_services = ()
        if (plan.services or plan.waitables) and now >= self._next_service_poll:
            self._next_service_poll = now + self._service_poll_ns
            polled_services = plan.services
            waitables = plan.waitables + waitables
        if timeout_nsec != 0:   # wake up for the next poll
            for pending, due in ((plan.events, self._next_event_poll),
                                 (plan.services or plan.waitables, self._next_service_poll)):
                if pending:
                    until_poll = max(due - now, 0)
                    timeout_nsec = until_poll if timeout_nsec < 0 else \
                        min(timeout_nsec, until_poll)
        entered = []
        try:
            subs = self._enter(plan.subscriptions, entered)
            timers = self._enter(plan.timers, entered)
            clients = self._enter(plan.clients, entered)
            services = self._enter(polled_services, entered)
            for _, gc, _ in plan.guards:   # re-trigger a guard condition triggered, not handled
                if gc._executor_triggered:
                    gc.trigger()
            guards = self._enter(plan.guards, entered) + \
                self._enter(plan.executor_guards, entered)
            in_set = []
            # a waitable's own entities (an action server's services, ...) take room in the
            # wait set too, as rclpy's executor counts them
            extra = [0, 0, 0, 0, 0, 0]
            for node, waitable in waitables:
                try:
                    waitable.__enter__()
                except InvalidHandle:
                    continue
                entered.append(waitable)
                in_set.append((node, waitable))
                n = waitable.get_num_entities()
                for k, count in enumerate((n.num_subscriptions, n.num_guard_conditions,
                                           n.num_timers, n.num_clients, n.num_services,
                                           n.num_events)):
                    extra[k] += count
            context = self._context.handle
            if context is None:
                raise RuntimeError("Cannot enter context if context is None")
            context.__enter__()
            entered.append(context)
            wait_set = _rclpy.WaitSet(len(subs) + extra[0], len(guards) + extra[1],
                                      len(timers) + extra[2], len(clients) + extra[3],
                                      len(services) + extra[4], extra[5], context)
            wait_set.clear_entities()
            for _, _, handle, _ in subs:
                wait_set.add_subscription(handle)
            for _, _, handle, _ in clients:
                wait_set.add_client(handle)
            for _, _, handle, _ in services:
                wait_set.add_service(handle)
            for _, _, handle, _ in timers:
                wait_set.add_timer(handle)
            for _, _, handle, _ in guards:
                wait_set.add_guard_condition(handle)
            for _, waitable in in_set:
                waitable.add_to_wait_set(wait_set)
            wait_set.wait(timeout_nsec)
            if self._is_shutdown:
                raise ShutdownException()
            # Context.ok() without its lock and enter/exit: the handle is entered (above)
            # (~1 µs against ~5 µs on the latency path, measured in the node)
            if not context.ok():
                raise ExternalShutdownException()
            # (only the kinds in this wait set are asked for: one call each)
            ready = wait_set.get_ready_entities
            subs_ready = ready("subscription") if subs else ()
            guards_ready = ready("guard_condition") if guards else ()
            timers_ready = ready("timer") if timers else ()
            clients_ready = ready("client") if clients else ()
            services_ready = ready("service") if services else ()
            for _, gc, _, pointer in guards:   # auto-taken: mark them before yielding
                if pointer in guards_ready:
                    gc._executor_triggered = True
            for node, waitable in in_set:   # while the wait set still exists
                if waitable.is_ready(wait_set) and waitable.callback_group.can_execute(waitable):
                    yield self._make_handler(waitable, node, self._take_waitable), waitable, node
            # timers and subscriptions, the hot path, before the handles are let go: their
            # ~10 __exit__ calls come after the callback, not between a message and its
            # callback (a handle destroyed meanwhile is destroyed when let go, as in rclpy)
            for node, tmr, handle, pointer in timers:
                if pointer in timers_ready and handle.is_timer_ready() and \
                        tmr.callback_group.can_execute(tmr):
                    if self._plain(tmr.callback):
                        yield _DirectCall(self, tmr, self._call_timer), tmr, node
                    else:
                        yield self._make_handler(tmr, node, self._take_timer), tmr, node
            for node, sub, _, pointer in subs:
                if pointer in subs_ready and sub.callback_group.can_execute(sub):
                    if self._plain(sub.callback):
                        yield _DirectCall(self, sub, self._call_subscription), sub, node
                    else:
                        yield self._make_handler(sub, node, self._take_subscription), sub, node
        finally:
            for item in reversed(entered):
                item.__exit__(None, None, None)
        take = self._take_guard_condition
        for node, gc, _ in plan.guards:
            if gc._executor_triggered and gc.callback_group.can_execute(gc):
                yield self._make_handler(gc, node, take), gc, node
        take = self._take_client
        for node, client, _, pointer in clients:
            if pointer in clients_ready and client.callback_group.can_execute(client):
                yield self._make_handler(client, node, take), client, node
        take = self._take_service
        for node, srv, _, pointer in services:
            if pointer in services_ready and srv.callback_group.can_execute(srv):
                yield self._make_handler(srv, node, take), srv, node

    # ------------------------------------------------------------------ direct calls
    def _plain(self, callback):
        """Is `callback` a plain function (not a coroutine function)? Memoized per callback
        object (rclpy asks inspect on every call)."""
        plain = self._plain_callbacks.get(callback)
        if plain is None:
            plain = self._plain_callbacks[callback] = \
                callback is not None and not inspect.iscoroutinefunction(callback)
        return plain

    def _run_direct(self, entity, call):
        """What rclpy's Task handler (Executor._make_handler) does around a callback, for a
        plain one: inside the entity's callback group and the work tracker, `call(entity)`."""
        group = entity.callback_group
        if self._is_shutdown or not group.beginning_execution(entity):
            return
        try:
            with self._work_tracker:
                call(entity)
        finally:
            group.ending_execution(entity)

    @staticmethod
    def _call_subscription(sub):
        """rclpy's _take_subscription for a plain callback: take one message and call back."""
        try:
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
        except InvalidHandle:   # destroyed meanwhile
            return
        if taken is None:
            return
        if sub._callback_type is Subscription.CallbackType.MessageOnly:
            sub.callback(taken[0])
        else:
            sub.callback(*taken)

    def _call_timer(self, tmr):
        """rclpy's _take_timer for a plain callback; a callback with a parameter annotated
        TimerInfo gets the call's TimerInfo there, as in rclpy."""
        try:
            with tmr.handle:
                info = tmr.handle.call_timer_with_info()
        except (InvalidHandle, TimerCancelledError):
            return
        callback = tmr.callback
        if callback is None:
            return
        name = self._timer_info_argument(callback)
        if name is None:
            callback()
        else:
            callback(**{name: TimerInfo(expected_call_time=info["expected_call_time"],
                                        actual_call_time=info["actual_call_time"],
                                        clock_type=tmr.clock.clock_type)})

    def _timer_info_argument(self, callback):
        """The name of the callback's first parameter annotated TimerInfo, or None (memoized
        per callback object; rclpy inspects the signature on every call)."""
        try:
            return self._timer_arguments[callback]
        except KeyError:
            name = next((p.name for p in inspect.signature(callback).parameters.values()
                         if p.annotation == TimerInfo), None)
            self._timer_arguments[callback] = name
            return name

    @staticmethod
    def _enter(entities, entered):
        """[(node, entity, handle, pointer)] of the plan's (node, entity, pointer) whose handle
        could be entered (a destroyed one raises InvalidHandle and is left out, as rclpy
        does)."""
        out = []
        for node, entity, pointer in entities:
            handle = entity.handle
            try:
                handle.__enter__()
            except InvalidHandle:
                continue
            entered.append(handle)
            out.append((node, entity, handle, pointer))
        return out


class _DirectCall:
    """The handler yielded for a plain callback: the same interface as the rclpy Task that
    SingleThreadedExecutor.spin_once runs (call it, then exception() / result())."""

    __slots__ = ("_executor", "_entity", "_call", "_exception", "_done")

    def __init__(self, executor, entity, call):
        self._executor = executor
        self._entity = entity
        self._call = call
        self._exception = None
        self._done = False

    def __call__(self):
        try:
            self._executor._run_direct(self._entity, self._call)
        except Exception as exc:   # raised by spin_once, as rclpy's Task does
            self._exception = exc
        finally:
            self._done = True

    def exception(self):
        return self._exception

    def result(self):
        if self._exception is not None:
            raise self._exception

    def done(self):
        return self._done

    def executing(self):
        return False

    def cancelled(self):
        return False
