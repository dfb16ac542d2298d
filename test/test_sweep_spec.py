"""The sweep file (mbd_ros/sweep/spec.py, variations.py): what it accepts, the runs it makes
(grid / zip, distributions drawn from their seed, the same on every call), and errors that
name the YAML key, for bad values, unknown keys, a .xacro robot and the size caps."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from mbd_ros.cli.samples import sample_urdf
from mbd_ros.sweep import SweepSpecError, load_sweep, run_table
from mbd_ros.sweep import spec as S

SAMPLE = Path(__file__).resolve().parent.parent / "config" / "arm7_payload_sweep.yaml"


def _base():
    return {
        "name": "t",
        "robot": {"urdf": str(sample_urdf())},
        "variations": [{"name": "m", "quantity": "payload", "link": "ee_link",
                        "values": [0.0, 1.0, 2.0]}],
        "scenario": {"duration": 0.01, "dt": 0.001, "drives": {"kp": 400.0, "kd": 40.0},
                     "reference": {"center": [0.0], "amplitude": [0.1],
                                   "frequency_hz": [1.0]}},
    }


def _with(path, value):
    data = copy.deepcopy(_base())
    *keys, last = path
    node = data
    for key in keys:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return data


def test_the_sample_sweep_is_the_documented_one():
    """config/arm7_payload_sweep.yaml: the arm7, a payload of 0-3 kg at ee_link, 200 runs,
    1 s at 1 kHz, the computed-torque demo's reference, a computed-torque controller with the
    nominal model (its inverse dynamics as feed-forward plus PD servos)."""
    spec = load_sweep(SAMPLE)
    names, values = run_table(spec)
    assert names == ["payload_kg"] and values.shape == (200, 1)
    assert values[0, 0] == 0.0 and values[-1, 0] == 3.0
    assert spec.scenario.steps == 1000 and spec.scenario.dt == 1e-3
    assert spec.scenario.drive_model == "pd" and spec.scenario.torque["type"] == \
        "inverse_dynamics"
    assert spec.robot.urdf_text == sample_urdf().read_text()


def test_grid_and_zip_runs():
    data = _base()
    data["variations"].append({"name": "k", "quantity": "kp", "values": [100.0, 400.0]})
    names, values = run_table(load_sweep(data))
    assert names == ["m", "k"] and values.shape == (6, 2)
    # grid: the last variation fastest, every combination once
    np.testing.assert_array_equal(values, [[0, 100], [0, 400], [1, 100], [1, 400],
                                           [2, 100], [2, 400]])
    data["combine"] = "zip"
    with pytest.raises(SweepSpecError, match="zip needs the same number of values.*m: 3, k: 2"):
        run_table(load_sweep(data))
    data["variations"][1]["values"].append(900.0)
    np.testing.assert_array_equal(run_table(load_sweep(data))[1],
                                  [[0, 100], [1, 400], [2, 900]])


def test_distributions_come_from_their_seed():
    """uniform / normal: numpy's default_rng(seed) draws (the same on every call and machine);
    linspace: evenly spaced, ends included."""
    data = _base()
    data["variations"][0] = {"name": "m", "quantity": "payload", "link": "ee_link",
                             "distribution": {"type": "uniform", "low": 0.5, "high": 1.5,
                                              "count": 50, "seed": 11}}
    values = run_table(load_sweep(data))[1][:, 0]
    np.testing.assert_array_equal(values, np.random.default_rng(11).uniform(0.5, 1.5, 50))
    np.testing.assert_array_equal(values, run_table(load_sweep(data))[1][:, 0])
    data["variations"][0]["distribution"] = {"type": "normal", "mean": 1.0, "std": 0.1,
                                             "count": 7, "seed": 2}
    np.testing.assert_array_equal(run_table(load_sweep(data))[1][:, 0],
                                  np.random.default_rng(2).normal(1.0, 0.1, 7))


@pytest.mark.parametrize("path, value, message", [
    (("variations", 0, "quantity"), "massage", r"variations\[0\]\.quantity: must be one of"),
    (("variations", 0, "values", 1), "heavy", r"variations\[0\]\.values\[1\].*number"),
    (("variations", 0, "valuez"), [1.0], r"variations\[0\]: unknown key 'valuez'.*'values'"),
    (("variations", 0, "axis"), "x", r"variations\[0\]\.axis: only a com_offset"),
    (("scenario", "dt"), -1.0, r"scenario: duration and dt must be > 0"),
    (("scenario", "dt"), 0.003, r"whole number of steps"),
    (("scenario", "duration"), KeyError, r"scenario: missing key 'duration'"),
    (("scenario", "integrator"), "euler", r"scenario\.integrator: must be one of"),
    (("scenario", "drives", "kp"), -3.0, r"scenario\.drives\.kp: gains must be >= 0"),
    (("scenario", "duration"), 2000.0, r"more than the 1000000 a run may take"),
    (("scenario", "torque"), {"type": "inverse_dynamics"}, r"count gravity twice"),
    (("scenario", "drives"), {"model": "pd", "kp": 100.0}, r"scenario\.drives: missing key 'kd'"),
    (("scenario", "drives"), {"model": "servo"}, r"scenario\.drives\.model: must be one of"),
    (("metrics",), ["tracking_rms", "fun"], r"metrics\[1\]: unknown metric"),
    (("robot", "urdf"), "missing.urdf", r"robot\.urdf: file not found"),
    (("robot", "urdf"), "arm.urdf.xacro", r"\.xacro file: xacro is code"),
    (("color",), "red", r"unknown key 'color'"),
    (("variations", 0, "name"), "tracking_rms", r"'tracking_rms' is the name of a result column"),
    (("variations", 0, "name"), "peak_torque:joint_1", r"is the name of a result column"),
    # a drive gain below 0, as scenario.drives.kp's own check (it made error rows)
    (("variations", 0), {"quantity": "kp", "values": [400.0, -1.0]},
     r"variations\[0\]\.values: gains must be >= 0, got -1 \(value 1\)"),
    (("variations", 0), {"quantity": "kd", "distribution": {"type": "normal", "mean": 1.0,
                                                            "std": 2.0, "count": 20, "seed": 3}},
     r"variations\[0\]\.distribution: gains must be >= 0"),
])
def test_errors_name_the_key(path, value, message):
    with pytest.raises(SweepSpecError, match=message):
        load_sweep(_with(path, value))


def test_caps_on_runs_and_total_steps():
    data = _base()
    data["variations"] = [{"name": f"v{i}", "quantity": "kp", "values": list(range(1, 12))}
                          for i in range(5)]          # 11^5 = 161 051 runs
    with pytest.raises(SweepSpecError, match="161051 runs, more than the 100000"):
        load_sweep(data)
    data["variations"] = [{"name": "v", "quantity": "kp",
                           "distribution": {"type": "linspace", "low": 1, "high": 2,
                                            "count": 100_000}}]
    data["scenario"]["duration"] = 100.0
    with pytest.raises(SweepSpecError, match="steps a sweep may take"):
        load_sweep(data)


def test_robot_files_are_relative_to_the_sweep_file(tmp_path):
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "arm.urdf").write_text(sample_urdf().read_text())
    text = SAMPLE.read_text().replace("../urdf/arm7.urdf", "robots/arm.urdf")
    (tmp_path / "s.yaml").write_text(text)
    assert load_sweep(tmp_path / "s.yaml").robot.urdf_text == sample_urdf().read_text()
    # a different URDF is a different sweep: its results are not resumed into the same out
    (tmp_path / "robots" / "arm.urdf").write_text(sample_urdf().read_text() + "\n")
    assert load_sweep(tmp_path / "s.yaml").fingerprint != load_sweep(SAMPLE).fingerprint


def test_a_sweep_file_is_read_with_the_safe_yaml_reader(tmp_path):
    """No Python objects from a tag, duplicate keys refused (inputs/yaml_input.py)."""
    path = tmp_path / "s.yaml"
    path.write_text("name: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(SweepSpecError.__mro__[1], match="malformed YAML|could not determine"):
        load_sweep(path)
    path.write_text("name: a\nname: b\n")
    with pytest.raises(ValueError, match="duplicate key 'name'"):
        load_sweep(path)


def test_quantities_documented():
    """Every quantity, distribution and metric the code knows is in docs/sweeps.md."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "sweeps.md").read_text()
    for name in (*S.QUANTITIES, *S.DISTRIBUTIONS, *S.METRICS, *S.SCENARIO_KEYS):
        assert f"`{name}`" in doc, name


ROOT = Path(__file__).resolve().parent.parent


def _forces_sweep(values):
    return {"name": "spring",
            "robot": {"urdf": str(ROOT / "urdf" / "flexible_arm.urdf"),
                      "forces": str(ROOT / "config" / "flexible_arm_forces.yaml")},
            "variations": [{"name": "k", "quantity": "stiffness", "element": "elbow_spring",
                            "values": values}],
            "scenario": {"duration": 0.01, "dt": 0.001},
            "metrics": ["diverged", "final_state"]}


def test_a_stiffness_variation_rebuilds_the_robot_with_that_spring():
    """The rebuilt robot's joint spring acts as tau = -k (q - q0) on the elbow (q0 = 0.2 rad,
    config/flexible_arm_forces.yaml): M (qdd(k2) - qdd(k1)) = -(k2 - k1) (q_elbow - q0) e_elbow,
    the other elements unchanged. To round-off of the two forward dynamics (solve_tol)."""
    from conftest import solve_tol
    from mbd_ros.sweep import runner
    spec = load_sweep(_forces_sweep([5.0, 50.0]))
    soft = runner.robot_context(spec, (("elbow_spring", 5.0),)).robot
    stiff = runner.robot_context(spec, (("elbow_spring", 50.0),)).robot
    assert runner.robot_context(spec, (("elbow_spring", 50.0),)).robot is stiff   # cached
    rng = np.random.default_rng(5)
    q, v, tau = np.array([0.4, -0.7]), rng.standard_normal(2), rng.standard_normal(2)
    m = soft.mass_matrix(q)
    difference = stiff.forward_dynamics(q, v, tau) - soft.forward_dynamics(q, v, tau)
    expected = np.array([0.0, -(50.0 - 5.0) * (q[1] - 0.2)])
    np.testing.assert_allclose(m @ difference, expected, rtol=0,
                               atol=solve_tol(m, difference) * np.linalg.norm(m, 2) + 1e-12)
    row = runner.run_one(spec, [50.0])
    assert row["status"] == "ok", row["error"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["variations"][0].update(element="nope"), r"element 'nope' is not in"),
    (lambda d: d["robot"].pop("forces"), r"stiffness variation needs robot\.forces"),
    (lambda d: d["variations"].append({"quantity": "initial_position", "joint": "knee",
                                       "values": [0.1]}),
     r"^<sweep dict>: variations\[1\]\.joint: .*'knee' is not a 1-dof joint"),
    (lambda d: d["variations"].append({"quantity": "mass", "link": "tool",
                                       "values": [1.0]}),
     r"^<sweep dict>: variations\[1\]\.link: .*welded to the body 'forearm'"),
    (lambda d: d["variations"].append({"quantity": "payload", "link": "link_99",
                                       "values": [1.0]}),
     r"^<sweep dict>: variations\[1\]\.link: .*'link_99' is not a link of the robot"),
    # a scenario of the wrong size names the file too (it did not: an outside audit)
    (lambda d: d["scenario"].update(initial_positions=[0.0, 0.0, 0.0, 0.0, 0.0]),
     r"^<sweep dict>: scenario\.initial_positions: 5 values, the robot has"),
])
def test_names_that_are_not_in_the_robot_fail_before_any_run(change, message):
    """Names the robot does not have fail in check_targets, naming the file and the key as
    the spec's own errors do."""
    from mbd_ros.sweep.orchestrate import check_targets
    data = _forces_sweep([5.0])
    change(data)
    with pytest.raises(ValueError, match=message):
        check_targets(load_sweep(data))


def test_the_command_line_names_the_key_and_exits_2(tmp_path, capsys):
    """`mbd-ros sweep` with a bad file: exit status 2, the message names file and key, before
    any cluster is started."""
    from mbd_ros.cli import main
    path = tmp_path / "s.yaml"
    path.write_text(SAMPLE.read_text().replace("duration: 1.0", "duration: -1.0")
                    .replace("../urdf/arm7.urdf", str(sample_urdf())))
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "mbd-ros sweep: error:" in err and f"{path}: scenario: duration and dt" in err
    assert not (tmp_path / "out").exists()


def test_a_swing_value_may_be_one_number_for_every_joint():
    """scenario.reference center / amplitude / frequency_hz: one value or one per joint
    (docs/sweeps.md), as the drives' gains."""
    scalar = _with(("scenario", "reference"), {"center": 0.2, "amplitude": 0.1,
                                               "frequency_hz": 1.0})
    listed = _with(("scenario", "reference"), {"center": [0.2], "amplitude": [0.1],
                                               "frequency_hz": [1.0]})
    assert load_sweep(scalar).scenario == load_sweep(listed).scenario
    with pytest.raises(SweepSpecError, match=r"scenario\.reference\.center\[0\]"):
        load_sweep(_with(("scenario", "reference"), {"center": "up", "amplitude": 0.1,
                                                     "frequency_hz": 1.0}))
