"""Joint and closure names as topic tokens: valid, and never shared by two names (issue: two
joints 'arm-1' and 'arm_1' used to publish their wrenches on the same topic)."""
import re

import pytest

pytest.importorskip("rclpy", reason="ROS 2 rclpy is not installed (pip install '.[ros]')")

from mbd_ros.nodes.messages import topic_token, unique_topic_tokens  # noqa: E402

VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def test_tokens_are_valid_topic_names():
    for name in ["joint_1", "arm-1", "1st", "ünïcode", "a b/c", "", "_"]:
        assert VALID.match(topic_token(name)), (name, topic_token(name))


def test_colliding_names_get_distinct_tokens_in_order():
    names = ["arm-1", "arm_1", "arm.1", "arm_1_2", "ü", "_", "joint"]
    tokens = unique_topic_tokens(names)
    assert len(set(tokens)) == len(names)
    assert tokens[:3] == ["arm_1", "arm_1_2", "arm_1_3"]
    assert tokens[3] == "arm_1_2_2"        # its own token was taken by the second name
    assert tokens[4:] == ["_", "__2", "joint"]
    assert all(VALID.match(t) for t in tokens)


def test_distinct_tokens_stay_unchanged():
    names = ["shoulder", "elbow", "wrist_1"]
    assert unique_topic_tokens(names) == names
