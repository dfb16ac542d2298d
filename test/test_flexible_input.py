"""Bad flexible-link declarations and inputs: a ModelError naming the source, the entry and the
field (model files), a ValueError naming the argument (numeric inputs); nothing crashes."""
import copy
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from mbd_ros import ModelError
from conftest import RTOL, assert_close
from flexible_models import beam_entry, lumped_modal_data, pendulum_urdf

ROOT = Path(__file__).resolve().parents[1]
ARM_URDF = str(ROOT / "urdf" / "flexible_arm.urdf")
ARM_YAML = ROOT / "config" / "flexible_arm.yaml"

WELDED_URDF = """<?xml version="1.0"?>
<robot name="welded">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="plate"><inertial><mass value="0.2"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="weld" type="fixed"><parent link="arm"/><child link="plate"/><origin xyz="0.5 0 0"/></joint>
</robot>
"""


def arm_data():
    return yaml.safe_load(ARM_YAML.read_text())


def mutate(path, value):
    """The sample's flexible section with one field set (path: keys into the first entry)."""
    data = arm_data()
    node = data["flexible_links"][0]
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize("path, value, words", [
    (("beam", "length"), 0.0, ["flexible link 0 ('forearm')", "beam.length", "positive"]),
    (("beam", "E"), -7e10, ["beam.E", "positive"]),
    (("beam", "density"), float("nan"), ["beam.density", "finite"]),
    (("beam", "area"), float("inf"), ["beam.area", "finite"]),
    (("beam", "Iy"), "stiff", ["beam.Iy", "number"]),
    (("beam", "Iz"), KeyError, ["beam.Iz", "missing"]),
    (("beam", "G"), KeyError, ["beam.G", "torsion needs both G and J"]),
    (("beam", "elements"), 0, ["beam.elements", "positive integer"]),
    (("beam", "elements"), 2.5, ["beam.elements", "positive integer"]),
    (("beam", "thickness"), 1.0, ["unknown key 'thickness'"]),
    (("modes",), 0, ["field 'modes'", "positive integer"]),
    (("modes",), 1000, ["field 'modes'", "1000 modes requested", "has 60"]),
    (("modes",), KeyError, ["field 'modes'", "missing"]),
    (("damping_ratio",), -0.1, ["damping_ratio", "must be in [0, 1000]", "-0.1"]),
    (("damping_ratio",), 1e50, ["damping_ratio", "must be in [0, 1000]", "1e+50"]),
    (("link",), "elbow_link", ["field 'link'", "no link 'elbow_link'"]),
    (("stiffness",), 1.0, ["unknown field 'stiffness'"]),
])
def test_bad_beam_fields(path, value, words):
    with pytest.raises(ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=mutate(path, value))
    for word in words:
        assert word in str(info.value)
    assert "<flexible dict>" in str(info.value)


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(mutate(("beam", "length"), -1.0)))
    with pytest.raises(ModelError, match=f"{path}: flexible link 0 \\('forearm'\\): field 'beam.length'"):
        mbd_ros.load(ARM_URDF, flexible=str(path))


@pytest.mark.parametrize("text, words", [
    ("flexible_links: 3\n", ["must be a list"]),
    ("flexible:\n  - link: forearm\n", ["unknown top-level key 'flexible'", "flexible_links"]),
    ("closures: []\n", ["missing the 'flexible_links' list"]),
    ("flexible_links:\n  - link: forearm\n    modes: 2\n", ["exactly one of the fields 'beam' and 'modal_data'"]),
    ("flexible_links:\n  - [1, 2]\n", ["flexible link 0", "expected a mapping"]),
    ("flexible_links: [\n", ["malformed YAML"]),
])
def test_bad_yaml_text(text, words):
    with pytest.raises(ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=text)
    for word in words:
        assert word in str(info.value)


def test_duplicate_missing_file_and_welded_link(tmp_path):
    data = arm_data()
    data["flexible_links"].append(copy.deepcopy(data["flexible_links"][0]))
    with pytest.raises(ModelError, match="flexible link 1 \\('forearm'\\): field 'link': 'forearm' is "
                                         "already declared flexible by entry 0"):
        mbd_ros.load(ARM_URDF, flexible=data)
    with pytest.raises(ModelError, match="flexible-link file not found"):
        mbd_ros.load(ARM_URDF, flexible=str(tmp_path / "none.yaml"))
    # a link welded by a fixed joint is a flexible body of its own (a 0-dof joint), no error:
    # test/test_flexible_welded.py checks its dynamics
    welded = {"flexible_links": [{"link": "plate", "modes": 2, "beam": arm_data()["flexible_links"][0]["beam"]}]}
    with pytest.warns(UserWarning, match="URDF mass of 'plate'"):
        robot = mbd_ros.load(WELDED_URDF, flexible=welded)
    assert robot.elastic_names == ["plate/mode_1", "plate/mode_2"] and robot.joint_names == ["j"]
    root = {"flexible_links": [{"link": "base", "modes": 2, "beam": arm_data()["flexible_links"][0]["beam"]}]}
    with pytest.raises(ModelError, match="'base' is the fixed root"):
        mbd_ros.load(WELDED_URDF, flexible=root)


def test_one_yaml_file_with_closures_section_is_read(tmp_path):
    data = arm_data()
    data["closures"] = []
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump(data))
    robot = mbd_ros.load(ARM_URDF, flexible=str(path))
    assert robot.elastic_names[0] == "forearm/mode_1"


def test_mass_mismatch_warns():
    """The URDF forearm is the 0.324 kg bar; a beam of twice the area is 0.648 kg: warn (> 5 %)."""
    data = mutate(("beam", "area"), 4e-4)
    with pytest.warns(UserWarning, match="URDF mass of 'forearm' \\(0.324 kg\\) differs"):
        mbd_ros.load(ARM_URDF, flexible=data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mbd_ros.load(ARM_URDF, flexible=arm_data())        # the sample matches: no warning


def _modal_file(tmp_path, **changes):
    path = tmp_path / "strip.npz"
    positions, masses, shapes, K = lumped_modal_data(path, 0.5, 2e-4, 2e-10, 6, 3)
    arrays = dict(node_positions=positions, node_masses=masses, mode_shapes=shapes, K_ff=K)
    for key, value in changes.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    np.savez(path, **arrays)
    return {"flexible_links": [{"link": "beam", "modal_data": str(path)}]}


@pytest.mark.parametrize("changes, words", [
    (dict(node_positions=np.zeros((6, 2))), ["node_positions", "shape (n, 3)"]),
    (dict(node_masses=np.ones(5)), ["node_masses", "shape (6,)"]),
    (dict(node_masses=-np.ones(6)), ["node_masses", ">= 0"]),
    (dict(mode_shapes=np.zeros((3, 6, 3))), ["mode_shapes", "(n_modes, 6, 6)"]),
    (dict(mode_shapes=np.zeros((3, 6, 6))), ["singular modal mass"]),
    (dict(K_ff=np.diag([1.0, -1.0, 1.0])), ["K_ff", "positive definite"]),
    (dict(K_ff=np.array([[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]])), ["K_ff", "symmetric"]),
    (dict(K_ff=np.eye(2)), ["K_ff", "shape (3, 3)"]),
    (dict(K_ff=None), ["needs the array 'K_ff' or 'frequencies'"]),
    (dict(K_ff=None, frequencies=np.array([1.0, 0.0, 2.0])), ["frequencies", "positive"]),
    (dict(node_masses=np.full(6, np.nan)), ["node_masses", "NaN"]),
])
def test_bad_modal_data(tmp_path, changes, words):
    flexible = _modal_file(tmp_path, **changes)
    with pytest.raises(ModelError) as info:
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible)
    message = str(info.value)
    assert "flexible link 0 ('beam')" in message
    for word in words:
        assert word in message


def test_modal_data_modes_and_missing_file(tmp_path):
    flexible = _modal_file(tmp_path)
    flexible["flexible_links"][0]["modes"] = 4
    with pytest.raises(ModelError, match="4 modes requested, the modal data has 3"):
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible)
    flexible["flexible_links"][0]["modal_data"] = str(tmp_path / "missing.npz")
    del flexible["flexible_links"][0]["modes"]
    with pytest.raises(ModelError, match="field 'modal_data': file not found"):
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible)
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    flexible["flexible_links"][0]["modal_data"] = str(tmp_path / "junk.npz")
    with pytest.raises(ModelError, match="cannot read the .npz file"):
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible)


def test_frequencies_instead_of_stiffness(tmp_path):
    """K_ff from natural frequencies (Hz) and the lumped modal masses: the clamped frequencies the
    robot reports are those of the pencil (K_ff = diag((2 pi f)^2 m_kk), M_ff) solved here with
    scipy (relative RTOL), and they lie within the bound the modes' coupling through the lumped
    masses allows around the given ones."""
    given = np.array([10.0, 60.0, 170.0])
    flexible = _modal_file(tmp_path, K_ff=None, frequencies=given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(pendulum_urdf(0.5), flexible=flexible)
    freq = np.sort(robot.flexible.bodies[0].frequencies)
    with np.load(tmp_path / "strip.npz") as data:     # the file the robot read
        masses, shapes = data["node_masses"], data["mode_shapes"][:, :, :3]
    M = np.einsum("j,kjc,ljc->kl", masses, shapes, shapes)   # modal mass of the lumped nodes
    import scipy.linalg
    K = np.diag((2 * np.pi * given) ** 2 * np.diag(M))
    expected = np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True)) / (2 * np.pi)
    assert_close(freq, expected, "clamped frequencies vs the (K_ff, M_ff) pencil",
                 rtol=RTOL)
    # the sampled modes are nearly (not exactly) orthogonal for the lumped masses: with M_ff =
    # D^1/2 C D^1/2 (D its diagonal), the Rayleigh quotients give the i-th frequency within
    # [1/sqrt(lambda_max(C)), 1/sqrt(lambda_min(C))] times the i-th given one
    d = np.sqrt(np.diag(M))
    coupling = np.linalg.eigvalsh(M / np.outer(d, d))
    ratio = freq / given
    assert np.all(ratio >= 1 / np.sqrt(coupling[-1]) - RTOL), (ratio, coupling)
    assert np.all(ratio <= 1 / np.sqrt(coupling[0]) + RTOL), (ratio, coupling)


def test_bad_numeric_inputs():
    robot = mbd_ros.load(ARM_URDF, flexible=arm_data())
    q, v, tau = robot.neutral(), np.zeros(robot.nv), np.zeros(robot.nv)
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        robot.forward_dynamics(q[:2], v, tau)
    with pytest.raises(ValueError, match="v contains NaN"):
        robot.forward_dynamics(q, np.full(6, np.nan), tau)
    with pytest.raises(ValueError, match=r"tau must have shape \(6,\)"):
        robot.forward_dynamics(q, v, tau[:2])
    with pytest.raises(ValueError, match="qdd contains NaN"):
        robot.inverse_dynamics(q, v, np.full(6, np.inf))
    with pytest.raises(ValueError, match="q contains NaN"):
        robot.mass_matrix(np.full(6, np.nan))
    with pytest.raises(ValueError, match="unknown link"):
        robot.link_pose(q, "nope")
    with pytest.raises(ValueError, match="welded to a flexible link"):
        robot.forward_dynamics(q, v, tau, f_ext={"tool": np.ones(6)})
    with pytest.raises(ValueError, match=r"state 1: q contains NaN"):
        robot.forward_dynamics_batch(np.vstack([q, np.full(6, np.nan)]), np.zeros((2, 6)),
                                     np.zeros((2, 6)))


def test_beam_data_from_yaml_text_and_torsion_free():
    text = yaml.safe_dump(beam_entry(0.6, 2e-4, 2e-9, 1e-9, modes=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(pendulum_urdf(0.6), flexible=text)
    assert robot.elastic_names == ["beam/mode_1", "beam/mode_2", "beam/mode_3"]


def test_singular_floating_base_and_bad_closure_link_are_refused():
    """A floating base above a massless root link and a revolute joint leaves the root's
    articulated inertia singular (the base could spin about the joint's axis): a ModelError
    naming the root joint (the rigid robot warns at load). A closure naming an unknown link beside
    flexible links: the closures reader's ModelError naming the field. (Floating bases, multi-dof
    joints and closures with flexible links: test_flexible_floating.py, test_flexible_loops.py.)"""
    with pytest.raises(ModelError, match="joint 'root_joint' moves no mass"):
        mbd_ros.load(ARM_URDF, flexible=arm_data(), floating_base=True)
    bad = {"closures": [{"name": "c", "type": "spherical", "parent": "forearm", "child": "nowhere"}]}
    with pytest.raises(ModelError, match="nowhere"):
        mbd_ros.load(ARM_URDF, flexible=arm_data(), closures=bad)
