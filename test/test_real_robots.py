"""Every example-robot-data URDF that Pinocchio loads loads with the default mbd_ros.load
(fixed and floating base), and its forward dynamics equal Pinocchio's where Pinocchio's are finite.

Published URDFs break physics in small ways (inertias violating the triangle inequality, a
slightly negative principal moment on a welded antenna, a massless foot with an inertia, massless
subtrees under a joint). The default load accepts them with one warning per problem naming the
link (strict_inertia=True refuses them); a joint that moves no mass makes forward dynamics raise
ValueError naming it, while inverse dynamics still work (compared with Pinocchio's rnea).
Joints are mapped by name (Pinocchio orders siblings alphabetically, the contract by document
order: oracle.PinOracle).
"""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import mbd_ros
from conftest import RTOL, assert_close, example_robot_data_dir
from oracle import PinOracle, layout, parse_urdf, pin_model_from_xml, random_state

N_STATES = 2
# A few published models are badly conditioned (mass matrices with cond ~1e10 from near-massless
# links): accelerations are compared through the equation of motion they must satisfy,
# |M qdd + b - tau| (Pinocchio's M and b), scaled by the size of the terms, at conftest.RTOL.


def _pinocchio_robots():
    root = example_robot_data_dir()
    if root is None:
        return []
    try:
        import pinocchio as pin
    except ImportError:
        return []
    found = []
    for path in sorted(root.rglob("*.urdf")):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pin.buildModelFromUrdf(str(path))
        except Exception:   # noqa: BLE001 - Pinocchio refuses it: not part of the contract
            continue
        found.append(str(path.relative_to(root)))
    return found


ROBOTS = _pinocchio_robots()


def test_the_robot_set_is_the_real_one(erd_dir, pin):
    """Guard: the parametrisation found example-robot-data's robots (about 68)."""
    assert len(ROBOTS) >= 60, ROBOTS


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("rel", ROBOTS)
def test_default_load_matches_pinocchio(rel, floating, erd_dir, pin):
    path = erd_dir / rel
    xml = path.read_text()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = mbd_ros.load(str(path), floating_base=floating, passive_forces=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    for message in messages:   # each warning names a link or joint of this robot
        assert "link '" in message or "joint '" in message, message
        assert path.name in message, message
    assert len(messages) == len(set(messages)), f"repeated warnings: {messages}"

    tree = parse_urdf(xml)
    model, link_frame = pin_model_from_xml(pin, xml, floating)
    oracle = PinOracle(pin, model, link_frame, tree, floating)
    slots, nq, nv = layout(tree, floating)
    assert (robot.nq, robot.nv) == (nq, nv)
    rng = np.random.default_rng(zlib.crc32(f"{rel}{floating}".encode()))
    compared = 0
    for _ in range(N_STATES):
        q, v = random_state(slots, nq, nv, rng)
        tau = rng.standard_normal(nv)
        qdd_ref = oracle.aba(q, v, tau)
        # inverse dynamics work whatever the masses
        a = rng.standard_normal(nv)
        assert_close(robot.inverse_dynamics(q, v, a), oracle.rnea(q, v, a), f"{rel}: ID vs pin.rnea")
        if not np.all(np.isfinite(qdd_ref)):
            # Pinocchio's ABA is undefined here (a joint moving no mass): ours must say so
            with pytest.raises(ValueError, match="joint '"):
                robot.forward_dynamics(q, v, tau)
            continue
        try:
            qdd = robot.forward_dynamics(q, v, tau)
        except ValueError as exc:
            mass = oracle.crba(q)
            pytest.fail(f"{rel}: FD raised {exc} where Pinocchio's is finite "
                        f"(cond(M) {np.linalg.cond(mass):.3g})")
        mass = oracle.crba(q)
        bias = oracle.rnea(q, v, np.zeros(nv))
        if nv and np.linalg.cond(mass) < 1e6:
            assert_close(qdd, qdd_ref, f"{rel}: FD vs pin.aba")
        residual = mass @ qdd + bias - tau
        scale = max(1.0, np.abs(mass).max(initial=0.0) * np.abs(qdd).max(initial=0.0),
                    np.abs(bias).max(initial=0.0))
        assert np.abs(residual).max(initial=0.0) <= RTOL * scale, (
            f"{rel}: |M qdd + b - tau| = {np.abs(residual).max():.3g} (scale {scale:.3g})")
        compared += 1
    if compared == 0:
        assert any("moves no mass" in m for m in messages), (
            f"{rel}: forward dynamics undefined but load did not warn: {messages}")


@pytest.mark.parametrize("rel, link, absorbed", [
    ("tiago_description/robots/tiago.urdf", "base_antenna_left_link", True),   # moment -3.5e-8
    ("bolt_description/robots/bolt.urdf", "FL_FOOT", True),          # massless foot with an inertia
    ("pr2_description/urdf/pr2.urdf", "sensor_mount_link", True),    # triangle inequality
    ("anymal_b_simple_description/robots/anymal.urdf", "base", True),
    ("romeo_description/urdf/romeo_small.urdf", "RShoulderYawLink", False),   # the body itself
    ("romeo_description/urdf/romeo_laas_small.urdf", "LShoulderYaw_link", False),  # the body
])
def test_inconsistent_inertias_warn_by_default_and_are_refused_when_strict(rel, link, absorbed, erd_dir):
    """strict_inertia=True keeps the refusal, naming the first offending link. By default one
    warning per problem names the link and what was assumed (used as written); whether the
    merged body (what the dynamics uses) absorbs the defect is said."""
    path = erd_dir / rel
    with pytest.raises(mbd_ros.ModelError, match=f"link '{link}'.*strict_inertia=False"):
        mbd_ros.load(str(path), floating_base=True, strict_inertia=True)
    with pytest.warns(UserWarning) as caught:
        mbd_ros.load(str(path), floating_base=True)
    mine = [str(w.message) for w in caught if f"link '{link}'" in str(w.message)]
    assert len(mine) == 1, mine
    assert "used as written" in mine[0]
    assert ("harmless" in mine[0]) == absorbed, mine[0]


def test_massless_subtree_is_reported_by_forward_dynamics(erd_dir):
    """romeo: a thumb joint moves no mass. Load warns naming it; forward dynamics raise
    ValueError naming it; inverse dynamics and kinematics work."""
    path = erd_dir / "romeo_description/urdf/romeo.urdf"
    with pytest.warns(UserWarning, match="joint '.*' moves no mass"):
        robot = mbd_ros.load(str(path), floating_base=True)
    q = robot.neutral()
    zero = np.zeros(robot.nv)
    with pytest.raises(ValueError, match="joint '.*articulated inertia is singular"):
        robot.forward_dynamics(q, zero, zero)
    assert np.all(np.isfinite(robot.inverse_dynamics(q, zero, zero)))
    assert np.all(np.isfinite(robot.link_pose(q, robot.link_names[-1])))
