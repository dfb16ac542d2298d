"""mbd_ros.simulation.limits.onto_position_limits / outside_position_limits (the plant's start
of a robot whose zero configuration is outside its URDF position limits): references are the
URDF limits of the Panda (example-robot-data) and of a hand-written one-joint URDF."""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from mbd_ros.simulation.limits import onto_position_limits, outside_position_limits

SLIDER = """<robot name="slider">
  <link name="base"/><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"
    ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0"
    iyz="0"/></inertial></link>
  <joint name="lift" type="prismatic"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="0.2" upper="0.5" effort="10" velocity="1"/></joint>
  <joint name="turn" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-2.0" upper="-1.5" effort="10" velocity="1"/></joint>
</robot>"""


def test_each_joint_goes_to_its_nearest_limit(tmp_path):
    path = tmp_path / "slider.urdf"
    path.write_text(SLIDER)
    robot = mbd_ros.load(str(path))
    q = robot.neutral()
    assert [n for n, *_ in outside_position_limits(robot, q)] == ["lift", "turn"]
    moved = onto_position_limits(robot, q)
    assert moved == [("lift", 0.0, 0.2), ("turn", 0.0, -1.5)]
    assert q.tolist() == [0.2, -1.5]
    assert outside_position_limits(robot, q) == []
    assert onto_position_limits(robot, q) == []          # inside: untouched
    q2 = np.array([0.35, -1.6])
    assert onto_position_limits(robot, q2) == [] and q2.tolist() == [0.35, -1.6]


def test_panda_joint4(erd_dir):
    panda = mbd_ros.load(str(erd_dir / "panda_description/urdf/panda.urdf"))
    q = panda.neutral()
    bad = outside_position_limits(panda, q)
    assert [(n, x) for n, x, _, _ in bad] == [("panda_joint4", 0.0)]
    lower, upper = bad[0][2:]
    assert lower == pytest.approx(-3.0718) and upper == pytest.approx(-0.0698)
    assert onto_position_limits(panda, q) == [("panda_joint4", 0.0, upper)]
    assert q[panda.idx_q[panda.joint_names.index("panda_joint4")]] == upper
    assert np.count_nonzero(q) == 1
