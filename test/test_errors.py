"""Invalid robot descriptions and invalid inputs give a clear ValueError (mbd_ros.ModelError for
descriptions) whose message names what is at fault; untrusted XML is never expanded."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close

INERTIAL = ('<inertial><mass value="{m}"/><origin xyz="{c}" rpy="0 0 0"/>'
            '<inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def link(name, m=1.0, c="0.1 0 0", ixx=0.1, iyy=0.1, izz=0.1, ixy=0.0, inertial=True):
    body = INERTIAL.format(m=m, c=c, ixx=ixx, iyy=iyy, izz=izz, ixy=ixy) if inertial else ""
    return f'<link name="{name}">{body}</link>'


def joint(name, parent, child, jtype="revolute", axis="0 0 1", parent_elem=True, child_elem=True):
    return (f'<joint name="{name}" type="{jtype}">'
            + (f'<parent link="{parent}"/>' if parent_elem else "")
            + (f'<child link="{child}"/>' if child_elem else "")
            + f'<origin xyz="0 0 0.2" rpy="0 0 0"/><axis xyz="{axis}"/>'
            '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')


def robot(*elements):
    return '<?xml version="1.0"?>\n<robot name="test">' + "".join(elements) + "</robot>"


VALID = robot(link("base"), link("upper"), link("lower"),
              joint("shoulder", "base", "upper"), joint("elbow", "upper", "lower", axis="0 1 0"))


def test_the_valid_baseline_loads():
    """Each invalid case below is this valid robot with one thing broken."""
    r = mbd_ros.load(VALID)
    assert (r.nq, r.nv) == (2, 2)
    assert list(r.joint_names) == ["shoulder", "elbow"]


# ---- invalid descriptions ---------------------------------------------------------------------------

MODEL_ERRORS = {
    # id: (URDF text, names that the message must contain)
    "truncated XML": (VALID[: len(VALID) // 2], []),
    "root element not <robot>": ('<?xml version="1.0"?><model name="x"><link name="a"/></model>', []),
    "unknown joint type": (robot(link("base"), link("upper"), joint("j_weird", "base", "upper", jtype="screwy")),
                           ["j_weird"]),
    "joint without <parent>": (robot(link("base"), link("upper"), joint("j_noparent", "base", "upper", parent_elem=False)),
                               ["j_noparent"]),
    "joint without <child>": (robot(link("base"), link("upper"), joint("j_nochild", "base", "upper", child_elem=False)),
                              ["j_nochild"]),
    "child link not defined": (robot(link("base"), link("upper"), joint("shoulder", "base", "upper"),
                                     joint("j_ghost", "upper", "ghost_link")), ["ghost_link"]),
    "parent link not defined": (robot(link("base"), link("upper"), joint("shoulder", "base", "upper"),
                                      joint("j_ghost", "ghost_parent", "base")), ["ghost_parent"]),
    "link child of two joints": (robot(link("base"), link("upper"), link("twice_child"),
                                       joint("shoulder", "base", "upper"), joint("j_a", "base", "twice_child"),
                                       joint("j_b", "upper", "twice_child")), ["twice_child"]),
    "cycle detached from the root": (robot(link("base"), link("loop_x"), link("loop_y"),
                                           joint("loop_jx", "loop_x", "loop_y"), joint("loop_jy", "loop_y", "loop_x")),
                                     ["loop_"]),
    "every link has a parent (cycle)": (robot(link("ring_a"), link("ring_b"),
                                              joint("ring_j1", "ring_a", "ring_b"), joint("ring_j2", "ring_b", "ring_a")),
                                        ["ring_"]),
    "two roots": (robot(link("base"), link("upper"), link("orphan_link"), joint("shoulder", "base", "upper")),
                  ["base", "orphan_link"]),
    "duplicate link name": (robot(link("base"), link("dup_link"), link("dup_link"), joint("shoulder", "base", "dup_link")),
                            ["dup_link"]),
    "duplicate joint name": (robot(link("base"), link("upper"), link("lower"), joint("dup_joint", "base", "upper"),
                                   joint("dup_joint", "upper", "lower")), ["dup_joint"]),
    "negative mass": (robot(link("base"), link("neg_mass_link", m=-1.0), joint("shoulder", "base", "neg_mass_link")),
                      ["neg_mass_link"]),
    "non-finite mass": (robot(link("base"), link("nan_link", m="nan"), joint("shoulder", "base", "nan_link")),
                        ["nan_link"]),
}

# physically inconsistent inertias: refused with strict_inertia=True, a warning naming the link by
# default (published URDFs have them; the inertia is used as written, as Pinocchio does)
INCONSISTENT_INERTIA = {
    "negative principal moment": (robot(link("base"), link("nonpsd_link", ixx=-0.1), joint("shoulder", "base", "nonpsd_link")),
                                  ["nonpsd_link"]),
    "indefinite tensor (products)": (robot(link("base"), link("offdiag_link", ixy=0.2), joint("shoulder", "base", "offdiag_link")),
                                     ["offdiag_link"]),
    "triangle inequality violated": (robot(link("base"), link("triangle_link", ixx=0.1, iyy=0.1, izz=0.3),
                                           joint("shoulder", "base", "triangle_link")), ["triangle_link"]),
    "zero mass with an inertia": (robot(link("base"), link("massless_rotor", m=0.0),
                                        joint("shoulder", "base", "massless_rotor")), ["massless_rotor"]),
}

SINGULAR = {
    # a movable joint that moves no mass: forward dynamics undefined. Either the joint or the link.
    "massless link at the end of a chain": (robot(link("base"), link("upper"), link("massless_tip", inertial=False),
                                                  joint("shoulder", "base", "upper"), joint("j_tip", "upper", "massless_tip")),
                                            ["j_tip", "massless_tip"]),
    "massless prismatic tip": (robot(link("base"), link("upper"), link("massless_slider", inertial=False),
                                     joint("shoulder", "base", "upper"),
                                     joint("j_slide", "upper", "massless_slider", jtype="prismatic")),
                               ["j_slide", "massless_slider"]),
    "point mass on the joint axis": (robot(link("base"), link("upper"),
                                           link("point_on_axis", c="0 0 0.3", ixx=0, iyy=0, izz=0),
                                           joint("shoulder", "base", "upper", axis="1 0 0"),
                                           joint("j_spin", "upper", "point_on_axis", axis="0 0 1")),
                                     ["j_spin", "point_on_axis"]),
}


@pytest.mark.parametrize("case", list(MODEL_ERRORS))
def test_invalid_urdf_text(case):
    xml, names = MODEL_ERRORS[case]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(xml)
    assert isinstance(exc.value, ValueError)
    for name in names:
        assert name in str(exc.value), f"{case}: the message does not name {name!r}: {exc.value}"


@pytest.mark.parametrize("case", list(INCONSISTENT_INERTIA))
def test_inconsistent_inertia(case):
    xml, names = INCONSISTENT_INERTIA[case]
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(xml, strict_inertia=True)
    for name in names:
        assert name in str(exc.value), f"{case}: the message does not name {name!r}: {exc.value}"
    with pytest.warns(UserWarning) as caught:
        mbd_ros.load(xml)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and all(n in messages[0] for n in names), messages
    assert "used as written" in messages[0], messages


@pytest.mark.parametrize("case", list(SINGULAR))
def test_singular_robot(case):
    """A joint that moves no mass: load warns naming it, forward dynamics raise ValueError naming
    it, inverse dynamics still work."""
    xml, names = SINGULAR[case]
    with pytest.warns(UserWarning) as caught:
        r = mbd_ros.load(xml)
    message = " ".join(str(w.message) for w in caught)
    assert any(n in message for n in names), f"{case}: the warning names none of {names}: {message}"
    q = r.random_configuration(np.random.default_rng(1))
    with pytest.raises(ValueError) as exc:
        r.forward_dynamics(q, np.zeros(r.nv), np.zeros(r.nv))
    assert any(n in str(exc.value) for n in names), f"{case}: the error names none of {names}: {exc.value}"
    assert np.all(np.isfinite(r.inverse_dynamics(q, np.zeros(r.nv), np.ones(r.nv))))


def test_massless_leaf_on_a_fixed_joint_is_fine():
    """A massless sensor frame welded to a body is not singular."""
    xml = robot(link("base"), link("upper"), link("sensor_frame", inertial=False),
                joint("shoulder", "base", "upper"), joint("j_sensor", "upper", "sensor_frame", jtype="fixed"))
    r = mbd_ros.load(xml)
    assert r.nv == 1 and np.all(np.isfinite(r.forward_dynamics([0.3], [0.1], [0.2])))


def test_errors_in_a_file_name_the_file(tmp_path):
    path = tmp_path / "broken_robot.urdf"
    path.write_text(INCONSISTENT_INERTIA["triangle inequality violated"][0])
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(str(path), strict_inertia=True)
    assert "broken_robot.urdf" in str(exc.value) and "triangle_link" in str(exc.value), str(exc.value)
    path.write_text(VALID[: len(VALID) // 2])
    with pytest.raises(mbd_ros.ModelError) as exc:
        mbd_ros.load(path)                       # a pathlib.Path works too
    assert "broken_robot.urdf" in str(exc.value), str(exc.value)


def test_missing_file():
    for p in ("/nonexistent_dir_mbd_ros/robot_that_is_not_there.urdf",
              Path("/nonexistent_dir_mbd_ros/robot_that_is_not_there.urdf")):
        with pytest.raises(mbd_ros.ModelError) as exc:
            mbd_ros.load(p)
        assert "robot_that_is_not_there.urdf" in str(exc.value), str(exc.value)


# ---- untrusted XML ----------------------------------------------------------------------------------

def _xxe_documents(secret_path):
    body = (f'{link("base")}{link("upper")}<link name="leak">{INERTIAL.format(m=1, c="0 0 0", ixx=0.1, iyy=0.1, izz=0.1, ixy=0)}'
            '<visual><material name="&xxe;"/></visual></link>'
            f'{joint("shoulder", "base", "upper")}{joint("&xxe;", "upper", "leak")}')
    yield ("general external entity",
           f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY xxe SYSTEM "file://{secret_path}">]>\n'
           f'<robot name="x">{body}</robot>')
    yield ("parameter entity",
           f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY % p SYSTEM "file://{secret_path}"> %p; '
           f'<!ENTITY xxe "x">]>\n<robot name="x">{body}</robot>')
    yield ("external DTD",
           f'<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "file://{secret_path}">\n'
           f'<robot name="x">{body.replace("&xxe;", "plain")}</robot>')


def test_external_entities_are_not_resolved(tmp_path):
    secret = "MBD_ROS_SECRET_7f3a9"
    secret_path = tmp_path / "secret.txt"
    secret_path.write_text(secret)
    for what, xml in _xxe_documents(secret_path):
        try:
            r = mbd_ros.load(xml)
        except mbd_ros.ModelError as exc:       # refusing the DOCTYPE is fine ...
            assert secret not in str(exc), f"{what}: the error message leaks the file content"
            continue
        # ... and so is loading without resolving anything
        everything = " ".join(list(r.joint_names) + list(r.link_names) + list(r.wrench_joint_names)) + r.summary()
        assert secret not in everything, f"{what}: the external entity was resolved"


def test_entity_bomb_is_not_expanded(tmp_path):
    """A billion-laughs document must fail fast (or load unexpanded), in a child process with a
    time limit so that a vulnerable parser cannot take the test run down."""
    levels = ['<!ENTITY lol0 "lollollollollollollollollollol">']
    levels += [f'<!ENTITY lol{i} "{("&lol%d;" % (i - 1)) * 10}">' for i in range(1, 10)]
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE robot [{"".join(levels)}]>\n<robot name="bomb">'
           f'{link("base")}{link("&lol9;")}{joint("shoulder", "base", "&lol9;")}</robot>')
    path = tmp_path / "bomb.urdf"
    path.write_text(xml)
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import mbd_ros
        try:
            r = mbd_ros.load(open({str(path)!r}).read())
        except mbd_ros.ModelError as exc:
            print("MODEL_ERROR", str(exc)[:200])
        else:
            print("LOADED", max(len(n) for n in r.link_names))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=str(Path(__file__).resolve().parent.parent))
    out = proc.stdout.strip()
    assert proc.returncode == 0, f"the entity bomb crashed the loader: {proc.stderr[-2000:]}"
    if out.startswith("LOADED"):
        assert int(out.split()[1]) < 1000, "the entity bomb was expanded"
    else:
        assert out.startswith("MODEL_ERROR"), out


# ---- invalid inputs ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def qrobot():
    """Floating base + a spherical joint + a revolute joint: nq = 12, nv = 10."""
    xml = robot(link("body"), link("ball_link"), link("arm"),
                joint("ball", "body", "ball_link", jtype="spherical"), joint("hinge", "ball_link", "arm"))
    r = mbd_ros.load(xml, floating_base=True)
    assert (r.nq, r.nv) == (12, 10)
    return r


def _state(r):
    rng = np.random.default_rng(5)
    return r.random_configuration(rng), rng.standard_normal(r.nv), rng.standard_normal(r.nv)


def _raises_naming(fn, name, *args, **kw):
    with pytest.raises(ValueError) as exc:
        fn(*args, **kw)
    assert re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", str(exc.value)), \
        f"{getattr(fn, '__name__', fn)}: the message does not name {name!r}: {exc.value}"


def test_wrong_shapes(qrobot):
    r = qrobot
    q, v, tau = _state(r)
    _raises_naming(r.forward_dynamics, "q", np.append(q, 0.0), v, tau)
    _raises_naming(r.forward_dynamics, "q", q[:-1], v, tau)
    _raises_naming(r.forward_dynamics, "v", q, v[None, :], tau)
    _raises_naming(r.forward_dynamics, "v", q, np.append(v, 1.0), tau)
    _raises_naming(r.forward_dynamics, "tau", q, v, tau[:-1])
    _raises_naming(r.inverse_dynamics, "q", np.append(q, 0.0), v, tau)
    _raises_naming(r.inverse_dynamics, "qdd", q, v, np.append(tau, 0.0))
    _raises_naming(r.mass_matrix, "q", q[None, :])
    _raises_naming(r.joint_wrenches, "v", q, v[:3], tau)
    _raises_naming(r.bias_forces, "q", np.append(q, 1.0), v)
    _raises_naming(r.integrate, "v", q, np.append(v, 1.0), 0.1)
    _raises_naming(r.forward_dynamics, "out", q, v, tau, out=np.zeros(r.nv + 1))


def test_non_finite_inputs(qrobot):
    r = qrobot
    q, v, tau = _state(r)
    for bad in (np.nan, np.inf, -np.inf):
        qb = q.copy()
        qb[0] = bad                       # the base position, not a quaternion entry
        vb, tb = v.copy(), tau.copy()
        vb[7] = bad
        tb[9] = bad
        _raises_naming(r.forward_dynamics, "q", qb, v, tau)
        _raises_naming(r.forward_dynamics, "v", q, vb, tau)
        _raises_naming(r.forward_dynamics, "tau", q, v, tb)
        _raises_naming(r.inverse_dynamics, "qdd", q, v, tb)
        _raises_naming(r.mass_matrix, "q", qb)
        _raises_naming(r.joint_wrenches, "v", q, vb, tau)
        _raises_naming(r.kinetic_energy, "v", q, vb)
        with pytest.raises(ValueError):
            r.forward_dynamics_batch(np.array([q, q]), np.array([v, v]), np.array([tau, tb]))
        with pytest.raises(ValueError):
            r.inverse_dynamics_batch(np.array([q, qb]), np.array([v, v]), np.array([tau, tau]))


def test_non_unit_quaternions(qrobot):
    r = qrobot
    q, v, tau = _state(r)
    free_quat, ball_quat = slice(3, 7), slice(7, 11)
    for sl in (free_quat, ball_quat):
        for scale in (2.0, 1.0 + 1e-3, 0.0):
            qb = q.copy()
            qb[sl] *= scale
            with pytest.raises(ValueError) as exc:
                r.forward_dynamics(qb, v, tau)
            msg = str(exc.value)
            assert re.search(r"(?<![A-Za-z_])q(?![A-Za-z_])|quaternion", msg), msg
            _raises_naming(r.inverse_dynamics, "q", qb, v, tau)
            _raises_naming(r.mass_matrix, "q", qb)
    # the quaternion of the joint at fault is named
    qb = q.copy()
    qb[ball_quat] *= 2
    with pytest.raises(ValueError) as exc:
        r.forward_dynamics(qb, v, tau)
    assert "ball" in str(exc.value), str(exc.value)


def test_external_force_errors(qrobot):
    r = qrobot
    q, v, tau = _state(r)
    _raises_naming(r.forward_dynamics, "no_such_link", q, v, tau, f_ext={"no_such_link": np.ones(6)})
    _raises_naming(r.joint_wrenches, "no_such_link", q, v, tau, f_ext={"no_such_link": np.ones(6)})
    _raises_naming(r.inverse_dynamics, "f_ext", q, v, tau, f_ext=np.zeros((len(r.link_names) + 1, 6)))
    _raises_naming(r.forward_dynamics, "f_ext", q, v, tau, f_ext={"arm": np.ones(5)})
    _raises_naming(r.forward_dynamics, "f_ext", q, v, tau, f_ext={"arm": [np.nan] * 6})


def test_unknown_link_in_link_pose(qrobot):
    q, _, _ = _state(qrobot)
    with pytest.raises((ValueError, KeyError)) as exc:
        qrobot.link_pose(q, "no_such_link")
    assert "no_such_link" in str(exc.value)


def test_batch_shape_errors(qrobot):
    r = qrobot
    q, v, tau = _state(r)
    Q, V, T = np.array([q] * 3), np.array([v] * 3), np.array([tau] * 3)
    with pytest.raises(ValueError):
        r.forward_dynamics_batch(Q, V[:2], T)
    with pytest.raises(ValueError):
        r.forward_dynamics_batch(Q[:, :-1], V, T)
    with pytest.raises(ValueError):
        r.inverse_dynamics_batch(Q, V, T[:, :-1])


def test_robot_still_correct_after_errors(qrobot):
    """An error leaves no trace in the workspace: the next valid call gives the same result."""
    r = qrobot
    q, v, tau = _state(r)
    before = r.forward_dynamics(q, v, tau).copy()
    wrenches = r.joint_wrenches(q, v, before).copy()
    for call in (lambda: r.forward_dynamics(q, v, tau, f_ext={"arm": np.ones(6), "nope": np.ones(6)}),
                 lambda: r.forward_dynamics(np.full(r.nq, np.nan), v, tau),
                 lambda: r.joint_wrenches(q, v, np.full(r.nv, np.inf))):
        with pytest.raises(ValueError):
            call()
    assert_close(r.forward_dynamics(q, v, tau), before, "forward_dynamics after rejected calls")
    assert_close(r.joint_wrenches(q, v, before), wrenches, "joint_wrenches after rejected calls")


def test_rigid_robots_have_no_elastic_coordinates():
    """The contract's elastic_* attributes exist on every robot: empty for rigid links."""
    import mbd_ros
    from pathlib import Path
    robot = mbd_ros.load(str(Path(__file__).resolve().parent.parent / "urdf" / "arm7.urdf"))
    assert robot.elastic_names == []
    assert robot.elastic_q_indices.shape == (0,) and robot.elastic_v_indices.shape == (0,)
