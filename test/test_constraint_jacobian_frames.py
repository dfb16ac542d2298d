"""Closed-loop robots' constraint Jacobian against the frame kinematics of their cut links, and
their tree quantities against the same URDF loaded without the closures.

A revolute cut joint (config/fourbar_closures.yaml: the coupler's point B at parent_origin pinned
to the rocker's point B at child_origin, axis y of the cut frame; config/leg_fourbar_closures.yaml
on a floating leg) keeps the two cut points together and lets the links turn relative to each
other only about the axis. So for every v with G v = 0 (G = constraint_jacobian(q) at an
assembled q) the velocities of B computed from link_velocity of the two cut links are equal, and
their angular velocities differ only along the axis; a v outside the null space breaks that
(the test can fail). References: link_pose and link_velocity (tested against Pinocchio and
finite differences in test_frame_kinematics.py), scipy's null space of G.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import yaml

import mbd_ros
from conftest import EPS, ROUNDOFF_SAFETY, assert_close

ROOT = Path(__file__).resolve().parent.parent
CASES = {"fourbar": ("fourbar.urdf", "fourbar_closures.yaml", False),
         "leg_fourbar": ("leg_fourbar_floating.urdf", "leg_fourbar_closures.yaml", True)}
FRAMES = ("world", "local", "local_world_aligned")


def load(name, with_closures=True):
    urdf, closures, floating = CASES[name]
    spec = yaml.safe_load((ROOT / "config" / closures).read_text())
    return mbd_ros.load(str(ROOT / "urdf" / urdf), floating_base=floating,
                        closures=spec if with_closures else None), spec["closures"][0]


def cut_point_motion(robot, q, v, link, origin):
    """(position, velocity, angular velocity) of the point `origin` (3,) of `link`'s frame, root
    axes, from link_pose and link_velocity (local_world_aligned: about the link origin)."""
    pose = robot.link_pose(q, link)
    offset = pose[:3, :3] @ origin
    twist = robot.link_velocity(q, v, link)
    return pose[:3, 3] + offset, twist[:3] + np.cross(twist[3:], offset), twist[3:], pose[:3, :3]


def origin_of(cut, side):
    return np.asarray((cut.get(side) or {}).get("xyz", [0.0, 0.0, 0.0]), dtype=float)


@pytest.mark.parametrize("name", list(CASES))
def test_null_space_of_the_constraint_jacobian_moves_the_cut_frames_together(name):
    """At assembled configurations: the cut points coincide; for v in the null space of G the
    cut points' velocities are equal and the angular velocities differ only along the cut axis
    (round-off: 1e-12 relative); a random v (G v != 0) separates them."""
    robot, cut = load(name)
    parent_origin, child_origin = origin_of(cut, "parent_origin"), origin_of(cut, "child_origin")
    axis_local = np.asarray(cut["axis"], dtype=float)
    rng = np.random.default_rng(21)
    for k in range(3):
        q0 = robot.neutral()
        q0[robot.idx_q[robot.joint_names.index(cut_independent(robot, name))]] += 0.3 * (k - 1)
        q = robot.assemble(q0)
        G = robot.constraint_jacobian(q)
        null = scipy.linalg.null_space(G)
        assert null.shape[1] == robot.nv - np.linalg.matrix_rank(G) > 0
        v = null @ rng.standard_normal(null.shape[1])
        xa, va, wa, Ra = cut_point_motion(robot, q, v, cut["parent"], parent_origin)
        xb, vb, wb, _ = cut_point_motion(robot, q, v, cut["child"], child_origin)
        what = f"{name} configuration {k}"
        assert_close(xa, xb, f"{what}: the cut points coincide", 1e-9)
        tol = ROUNDOFF_SAFETY * robot.nv * EPS * 1e3
        assert_close(va, vb, f"{what}: cut points' velocities for G v = 0", tol)
        axis = Ra @ axis_local
        relative = wa - wb
        assert_close(relative - axis * (axis @ relative), np.zeros(3),
                     f"{what}: relative angular velocity off the cut axis", tol)
        free = rng.standard_normal(robot.nv)
        assert np.abs(G @ free).max() > 1e-3
        _, va, _, _ = cut_point_motion(robot, q, free, cut["parent"], parent_origin)
        _, vb, _, _ = cut_point_motion(robot, q, free, cut["child"], child_origin)
        wa, wb = (robot.link_velocity(q, free, link)[3:] for link in (cut["parent"], cut["child"]))
        off_axis = (wa - wb) - axis * (axis @ (wa - wb))
        assert max(np.abs(va - vb).max(), np.abs(off_axis).max()) > 1e-3, \
            f"{what}: a v outside the null space should separate the cut frames"


def cut_independent(robot, name):
    """A joint the closures file holds independent (the crank / the knee motor)."""
    return {"fourbar": "crank_joint", "leg_fourbar": "knee_motor"}[name]


@pytest.mark.parametrize("name", list(CASES))
def test_tree_quantities_equal_those_of_the_urdf_without_closures(name):
    """link_jacobian, link_velocity, link_acceleration (every link, the three frames), the
    centroidal quantities and M^-1 of the closed-loop robot are the open tree's: bit for bit
    those of the same URDF loaded without the closures file, at any q and v."""
    closed, _ = load(name)
    tree, _ = load(name, with_closures=False)
    assert closed.nv == tree.nv and list(closed.link_names) == list(tree.link_names)
    rng = np.random.default_rng(4)
    q = closed.random_configuration(rng)
    v, qdd = rng.standard_normal(closed.nv), rng.standard_normal(closed.nv)
    for link in closed.link_names:
        for frame in FRAMES:
            np.testing.assert_array_equal(closed.link_jacobian(q, link, frame),
                                          tree.link_jacobian(q, link, frame))
            np.testing.assert_array_equal(closed.link_velocity(q, v, link, frame),
                                          tree.link_velocity(q, v, link, frame))
            np.testing.assert_array_equal(closed.link_acceleration(q, v, qdd, link, frame),
                                          tree.link_acceleration(q, v, qdd, link, frame))
    for method in ("center_of_mass", "com_jacobian", "centroidal_momentum_matrix",
                   "mass_matrix_inverse"):
        np.testing.assert_array_equal(getattr(closed, method)(q), getattr(tree, method)(q))


def _tip_urdf():
    """urdf/flexible_fourbar.urdf with a massless link 'tip' welded at the beam's tip."""
    return (ROOT / "urdf" / "flexible_fourbar.urdf").read_text().replace(
        "</robot>", '<link name="tip"/><joint name="tip_mount" type="fixed"><parent link="beam"/>'
                    '<child link="tip"/><origin xyz="0.5 0 0"/></joint></robot>')


def flexible_fourbar_with_tip_link():
    """config/flexible_fourbar.yaml's mechanism with a massless link 'tip' welded at the
    flexible rocker's tip (0.5 m) and the spherical cut moved onto that link's origin (the same
    deformed point: a welded link's frame rides on the beam's deformed tip)."""
    import warnings
    urdf = _tip_urdf()
    spec = yaml.safe_load((ROOT / "config" / "flexible_fourbar.yaml").read_text())
    cut = dict(spec["closures"][0], child="tip", child_origin={"xyz": [0.0, 0.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(urdf, closures={"closures": [cut], "actuated": spec["actuated"]},
                             flexible={"flexible_links": spec["flexible_links"]})
    return robot, cut


def test_flexible_loop_null_space_moves_the_deformed_cut_point_with_the_coupler():
    """A flexible four-bar (spherical cut at the beam's deformed tip, here the origin of a link
    welded there), assembled deformed: for v in the null space of G (whose elastic columns come
    from the loops' own frame kernels, kernels/flexible_frames.py) the coupler's cut point and
    the tip link move with the same velocity by link_velocity (elastic columns included; 1e-12
    relative); a v outside the null space separates them."""
    from test_flexible_loops import assembled
    robot, cut = flexible_fourbar_with_tip_link()
    parent_origin = origin_of(cut, "parent_origin")
    rng = np.random.default_rng(8)
    for crank in (0.4, 0.7, 1.3):
        q = assembled(robot, crank)
        q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * 1e-3
        q = robot.assemble(q, elastic=True)
        assert np.abs(q[robot.elastic_q_indices]).max() > 1e-5     # deformed
        G = robot.constraint_jacobian(q)
        null = scipy.linalg.null_space(G)
        v = null @ rng.standard_normal(null.shape[1])
        assert np.abs(v[robot.elastic_v_indices]).max() > 1e-2      # elastic motion too
        xa, va, _, _ = cut_point_motion(robot, q, v, "coupler", parent_origin)
        xb, vb, _, _ = cut_point_motion(robot, q, v, "tip", np.zeros(3))
        assert_close(xa, xb, f"crank {crank}: the cut points coincide", 1e-9)
        assert_close(va, vb, f"crank {crank}: cut points' velocities for G v = 0",
                     ROUNDOFF_SAFETY * robot.nv * EPS * 1e3)
        free = rng.standard_normal(robot.nv)
        _, va, _, _ = cut_point_motion(robot, q, free, "coupler", parent_origin)
        _, vb, _, _ = cut_point_motion(robot, q, free, "tip", np.zeros(3))
        assert np.abs(va - vb).max() > 1e-3


def test_flexible_closed_loop_tree_quantities_equal_the_flexible_tree():
    """The flexible four-bar with its closure gives, bit for bit, the frame and centroidal
    quantities of the same flexible URDF loaded without the closure (tree coordinates, elastic
    columns included)."""
    import warnings
    closed, _ = flexible_fourbar_with_tip_link()
    spec = yaml.safe_load((ROOT / "config" / "flexible_fourbar.yaml").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tree = mbd_ros.load(_tip_urdf(), flexible={"flexible_links": spec["flexible_links"]})
    assert tree.nv == closed.nv and list(tree.link_names) == list(closed.link_names)
    rng = np.random.default_rng(6)
    q = closed.random_configuration(rng)
    q[closed.elastic_q_indices] = rng.normal(size=len(closed.elastic_q_indices)) * 1e-3
    v, qdd = rng.standard_normal(closed.nv), rng.standard_normal(closed.nv)
    for link in closed.link_names:
        for frame in FRAMES:
            np.testing.assert_array_equal(closed.link_jacobian(q, link, frame),
                                          tree.link_jacobian(q, link, frame))
            np.testing.assert_array_equal(closed.link_acceleration(q, v, qdd, link, frame),
                                          tree.link_acceleration(q, v, qdd, link, frame))
    for method in ("center_of_mass", "com_jacobian", "centroidal_momentum_matrix",
                   "mass_matrix_inverse"):
        np.testing.assert_array_equal(getattr(closed, method)(q), getattr(tree, method)(q))
