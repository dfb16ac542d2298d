"""Helpers of the process-level ROS tests (a helper module, not a test).

`Ros` is this test process's side: an rclpy context on its own ROS_DOMAIN_ID (reserved on the
machine: reserve_domain_id) with localhost
discovery, one node, a SingleThreadedExecutor always spun with timeouts, publishers,
collecting subscriptions and service calls. `Ros.start()` launches an mbd_ros node as a child
process on the same domain (mbd_ros.nodes.processes) and `Ros.close()` stops every child it
started (SIGINT, then SIGKILL after a timeout), so no process outlives the tests.
"""
from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from mbd_ros.nodes import processes

REPO = Path(__file__).resolve().parent.parent
URDF = REPO / "urdf"
CONFIG = REPO / "config"
# s: a node's first output. Generous: with a cold numba cache (a fresh clone) a node compiles
# its kernels first, and on a loaded 2-core machine the flexible plant once took > 90 s
READY_TIMEOUT = 300.0


def reserve_domain_id(salt=0):
    """(domain id, lock file): a ROS_DOMAIN_ID that no other process using this function on the
    machine holds, kept until the file is closed (or the process ends). A second test run
    beside this one (another checkout, CI job) otherwise shares a domain whenever its pid-derived
    id collides (1 in 100 per module pair), and its nodes of the same names answer this test.
    The lock file lists the node processes started on the domain (Ros.start): a domain whose
    nodes outlived their test process (a run killed by a timeout) stays taken while they run."""
    start = processes.unique_domain_id(salt)
    for k in range(100):
        domain = 1 + (start - 1 + k) % 100
        lock = open(Path(tempfile.gettempdir()) / f"mbd_ros_test_domain_{domain}.lock", "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        lock.seek(0)
        if any(_node_alive(line) for line in lock.read().split()):
            lock.close()
            continue
        lock.truncate(0)
        return domain, lock
    raise RuntimeError("every ROS_DOMAIN_ID 1-100 is held by another test process")


def _node_alive(pid):
    """True if process `pid` runs and is an mbd_ros node."""
    try:
        return b"mbd_ros.nodes." in Path(f"/proc/{int(pid)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False


class Ros:
    def __init__(self, salt=0):
        # rclpy must be imported after the environment is set (rmw reads it at context init)
        self.domain_id, self._domain_lock = reserve_domain_id(salt)
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.node = rclpy.create_node(f"mbd_ros_test_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.children = []
        self._pubs = {}
        self._subs = {}
        self.received = defaultdict(list)

    # ------------------------------------------------------------------ processes
    def start(self, node, params=None, remaps=None, params_files=(), name=None):
        args = processes.ros_arguments(params, remaps, params_files, name)
        child = processes.NodeProcess(node, args, processes.ros_environment(self.domain_id),
                                      label=name or node)
        self.children.append(child)
        self._domain_lock.write(f"{child.pid}\n")     # see reserve_domain_id
        self._domain_lock.flush()
        return child

    def stop(self, child):
        """Stop one child now (it stays in self.children for its output)."""
        child.must_live = False
        return child.stop(timeout=10.0)

    def close(self):
        codes = [child.stop(timeout=10.0) for child in self.children]
        self.children = []
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)
        self._domain_lock.close()          # the domain id is free for other test processes
        return codes

    # ------------------------------------------------------------------ topics
    def publisher(self, msg_type, topic, qos=None):
        key = (msg_type, topic)
        if key not in self._pubs:
            self._pubs[key] = self.node.create_publisher(msg_type, topic, qos or self.qos)
        return self._pubs[key]

    def matched_publisher(self, msg_type, topic, timeout=20.0):
        """The publisher of `topic`, once discovery has matched it with a subscriber (messages
        published before that are lost)."""
        pub = self.publisher(msg_type, topic)
        self.spin_until(lambda: pub.get_subscription_count() > 0, timeout,
                        what=f"a subscriber of {topic}")
        return pub

    def publish(self, msg_type, topic, msg):
        self.publisher(msg_type, topic).publish(msg)

    def subscribe(self, msg_type, topic):
        """Collect every message of `topic` in self.received[topic] (with its arrival time)."""
        if topic not in self._subs:
            def store(msg, topic=topic):
                self.received[topic].append((time.monotonic(), msg))
            self._subs[topic] = self.node.create_subscription(msg_type, topic, store, self.qos)
        return self.received[topic]

    def messages(self, topic):
        return [m for _, m in self.received[topic]]

    def last(self, topic):
        """The latest message of `topic` (None if none yet), without copying the list: a
        spin_until condition runs after every callback, and messages() is O(all received),
        which at 1-2 kHz of messages and a loaded CPU made this process fall behind its
        subscriptions' queues (depth 1000) until they dropped states."""
        received = self.received[topic]
        return received[-1][1] if received else None

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))

    def spin_until(self, condition, timeout, every=None, action=None, what="condition"):
        """Spin until condition() is true; call action() every `every` s meanwhile (e.g. to
        publish an input until the node answers). Raises AssertionError on timeout, with the
        children's output."""
        end = time.monotonic() + timeout
        next_action = time.monotonic()
        while True:
            if condition():
                return
            now = time.monotonic()
            if now > end:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n"
                                     + self.children_output())
            for child in self.children:
                if child.poll() is not None and getattr(child, "must_live", True):
                    raise AssertionError(f"{child.label} exited with {child.poll()} while "
                                         f"waiting for {what}\n" + self.children_output())
            if action is not None and every is not None and now >= next_action:
                action()
                next_action = now + every
            self.executor.spin_once(timeout_sec=0.02)

    def children_output(self, stacks=True):
        """Every child's output (its last 4000 characters). `stacks`: first ask the children
        still running to print their threads' Python stacks (SIGUSR1: node processes register
        faulthandler for it, mbd_ros/nodes/quiet_start.py), so a report shows where a child
        that did not answer is stuck."""
        if stacks and any(c.poll() is None for c in self.children):
            for c in self.children:
                if c.poll() is None:
                    try:
                        os.kill(c.pid, signal.SIGUSR1)
                    except OSError:
                        pass
            time.sleep(1.0)
        return "\n".join(f"--- output of {c.label} (pid {c.pid}, exit {c.poll()}):\n"
                         f"{c.output()[-4000:]}" for c in self.children)

    # ------------------------------------------------------------------ services
    def call(self, srv_type, name, request, timeout=10.0, attempts=1):
        """The response of service `name` to `request`. `attempts` > 1 re-sends an unanswered
        request (only for queries that change nothing): DDS can report a service as available
        before the server has matched this client's response reader, and a response sent then
        is lost (seen under load on get_state)."""
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise AssertionError(f"service {name} not available\n" + self.children_output())
            for _ in range(attempts):
                future = client.call_async(request)
                self.executor.spin_until_future_complete(future, timeout_sec=timeout)
                if future.done():
                    return future.result()
                client.remove_pending_request(future)
            raise AssertionError(f"no answer from {name} ({attempts} x {timeout} s)\n"
                                 + self.children_output())
        finally:
            self.node.destroy_client(client)

    def lifecycle_state(self, node_name):
        from lifecycle_msgs.srv import GetState
        return self.call(GetState, f"/{node_name}/get_state", GetState.Request(),
                         attempts=3).current_state.label

    def change_state(self, node_name, transition_label):
        from lifecycle_msgs.srv import ChangeState
        req = ChangeState.Request()
        req.transition.label = transition_label
        return self.call(ChangeState, f"/{node_name}/change_state", req).success

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self, node_name):
        """Latest /diagnostics values {key: str} of node `node_name` (None if none yet)."""
        from mbd_ros.nodes.diagnostics import values_of
        latest = None
        for msg in self.messages("/diagnostics"):
            for status in msg.status:
                if status.name == f"{node_name}: dynamics":
                    latest = values_of(status)
        return latest

    def wait_diagnostics(self, node_name, predicate, timeout=20.0, what=None):
        from diagnostic_msgs.msg import DiagnosticArray
        self.subscribe(DiagnosticArray, "/diagnostics")
        box = {}

        def check():
            d = self.diagnostics(node_name)
            if d is not None and predicate(d):
                box["d"] = d
                return True
            return False
        self.spin_until(check, timeout, what=what or f"diagnostics of {node_name}")
        return box["d"]


# ---------------------------------------------------------------------- messages
def now_stamp(ros, offset_ns=0):
    from builtin_interfaces.msg import Time
    ns = ros.node.get_clock().now().nanoseconds + offset_ns
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def stamp_key(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def joint_state(stamp, names, position, velocity=(), effort=()):
    from sensor_msgs.msg import JointState
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [float(x) for x in position]
    msg.velocity = [float(x) for x in velocity]
    msg.effort = [float(x) for x in effort]
    return msg


def trajectory_point(names, positions, velocities=(), accelerations=()):
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    msg = JointTrajectory()
    msg.joint_names = list(names)
    p = JointTrajectoryPoint()
    p.positions = [float(x) for x in positions]
    p.velocities = [float(x) for x in velocities]
    p.accelerations = [float(x) for x in accelerations]
    msg.points = [p]
    return msg


def wrench_array(msg):
    w = msg.wrench
    return np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])


def warm_numba_cache(robot):
    """Compile (or load) every kernel the nodes use in this process, so numba's on-disk cache is
    warm before node processes start (they would otherwise each compile, ~20 s on 2 cores)."""
    import warnings
    from mbd_ros.robot.constraints import LoopResidualWarning
    q, z = robot.neutral(), np.zeros(robot.nv)
    with warnings.catch_warnings():
        # only compiling: the results at neutral (off a closed-loop robot's loops, which the
        # dynamics rightly warn about) are not used
        warnings.simplefilter("ignore", LoopResidualWarning)
        robot.forward_dynamics(q, z, z)
        try:   # a closed loop's neutral q may be open: its inverse dynamics then refuse
            robot.inverse_dynamics(q, z, z)
            robot.joint_wrenches(q, z, z)
        except ValueError:
            pass
    robot.integrate(q, z, 1e-3)
    robot.compile_c_calls()   # the C entries (mbd_ros/fastcall) the nodes install at configure
    # the simulate node's plant step (one compiled call, kernels/plant_step.py: one signature
    # for every robot) and its Python path's kernels
    from mbd_ros.simulation.plant import Plant
    time = robot.time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopResidualWarning)
        try:
            Plant(robot, 1e-3, "rk4", limits=False).step()
        except (ValueError, FloatingPointError):   # compiled all the same
            pass
    robot.time = time   # the step moved the robot's clock


def set_parameters(ros, node, **values):
    """SetParameters on /<node>; returns [(successful, reason)] in the order given (bools,
    doubles, strings, double arrays)."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    request = SetParameters.Request()
    for name, value in values.items():
        pv = ParameterValue()
        if isinstance(value, bool):
            pv.type, pv.bool_value = ParameterType.PARAMETER_BOOL, value
        elif isinstance(value, float):
            pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, value
        elif isinstance(value, str):
            pv.type, pv.string_value = ParameterType.PARAMETER_STRING, value
        else:
            pv.type = ParameterType.PARAMETER_DOUBLE_ARRAY
            pv.double_array_value = [float(x) for x in value]
        request.parameters.append(Parameter(name=name, value=pv))
    result = ros.call(SetParameters, f"/{node}/set_parameters", request)
    return [(r.successful, r.reason) for r in result.results]
