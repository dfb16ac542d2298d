"""QoS profiles of the mbd_ros topics (explicit, as the ROS 2 examples recommend).

- Subscriptions to states, commands and references: best effort, keep last 10 (sensor data).
  A best-effort subscription receives from reliable and best-effort publishers alike.
- Publications: reliable, keep last 10 (the ROS default), which every subscriber can match.
- ``robot_description``: reliable, transient local, depth 1, as robot_state_publisher offers it.
- ``/clock``: reliable, keep last 1 (matches rclpy's and rclcpp's best-effort clock subscriptions).
  The simulate plant following an external /clock subscribes best effort, keep last 10 (it
  catches up on any skipped time, so a lost message only merges two steps).

- Commands of the simulate plant: reliable (a one-shot command is never lost), keep last 1 for
  the full-vector topics (``~/position_commands``, ``~/velocity_commands``,
  ``~/effort_commands``: the latest supersedes the others), keep last 10 for ``joint_commands``
  (by-name commands of joint subsets must not replace each other). A reliable subscription does
  not match a best-effort publisher. Transient local where the publisher offers it: the plant
  watches the publishers of its held-command topics and, for a transient-local one, takes its
  last held command with a transient-local subscription (LATCHED_COMMAND_QOS; a volatile
  subscription never receives what was published before it matched).

Every subscription is keep-last with a small depth: a flood of messages can only replace
queued ones, never grow a queue (docs/nodes.md, "Executor and floods").
"""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy)

SUBSCRIBE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                           reliability=ReliabilityPolicy.BEST_EFFORT,
                           durability=DurabilityPolicy.VOLATILE)
PUBLISH_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
DESCRIPTION_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
CLOCK_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.VOLATILE)
CLOCK_SUBSCRIBE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                                 reliability=ReliabilityPolicy.BEST_EFFORT,
                                 durability=DurabilityPolicy.VOLATILE)
DIAGNOSTICS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
JOINT_COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                               reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.VOLATILE)
LATCHED_COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                                 reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
