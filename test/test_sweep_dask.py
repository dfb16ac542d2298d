"""Sweeps on a real dask.distributed LocalCluster (2 worker processes), small and short:

- the Parquet rows equal the same runs done one by one with an independent formalism: the
  varied robot written as a URDF (the payload a welded link, the mass edited) and simulated
  step by step by a Plant with its position drives commanded at every step (the Plant's own
  torques give the peak torque); to RTOL (both are the same arithmetic up to the round-off of
  the inertial parameters, ~1e-16 relative, over 40 steps of a well-damped motion);
- a run that fails is a row with its error: a negative mass (an invalid model) is "error"
  naming the body, a start faster than max_speed is "diverged" at step 0;
- resume: with one part deleted, running again computes only that part's runs and leaves the
  other parts untouched; another sweep into the same directory is refused;
- the command line `mbd-ros sweep` on its own LocalCluster writes results, PNG and table.
"""
from __future__ import annotations

import copy
import math
import shutil
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from dask import distributed
from lxml import etree

from conftest import RTOL
import mbd_ros
from mbd_ros.cli.samples import sample_urdf
from mbd_ros.plant import DivergenceError, Plant
from mbd_ros.sweep import run_sweep, run_table, load_sweep
from mbd_ros.sweep.runner import run_one
from mbd_ros.sweep import results as R


CENTER = [0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2]
AMPLITUDE = [0.3, 0.2, 0.3, 0.2, 0.4, 0.3, 0.5]
FREQUENCY = [0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55]
STEPS, DT = 40, 1e-3
# 2 x 2 x 2 = 8 runs: payload, link_3's mass (-1 kg: an invalid model), joint_4's start speed
# (2000 rad/s > max_speed: diverged)
SWEEP = {
    "name": "small",
    "robot": {"urdf": str(sample_urdf())},
    "variations": [
        {"name": "payload", "quantity": "payload", "link": "ee_link", "offset": [0.0, 0.01, 0.03],
         "values": [0.0, 2.5]},
        {"name": "m3", "quantity": "mass", "link": "link_3", "values": [3.0, -1.0]},
        {"name": "v4", "quantity": "initial_velocity", "joint": "joint_4",
         "values": [0.1, 2000.0]},
    ],
    "scenario": {"duration": STEPS * DT, "dt": DT, "integrator": "rk4", "limits": True,
                 "drives": {"kp": 400.0, "kd": 40.0},
                 "reference": {"center": CENTER, "amplitude": AMPLITUDE,
                               "frequency_hz": FREQUENCY}},
    "batch_size": 2,
}
CLUSTER_TIMEOUT = 300   # s: starting 2 worker processes on a loaded 2-core machine


@pytest.fixture(scope="module")
def client():
    # one run in this process first: it compiles the rollout and metric kernels into numba's
    # on-disk cache, so the two worker processes load them instead of both compiling them
    # (a fresh clone's cold cache: ~100 s of worker compiling measured under load)
    spec = load_sweep(SWEEP)
    assert run_one(spec, run_table(spec)[1][0])["status"] == "ok"
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", timeout=CLUSTER_TIMEOUT)
    client = distributed.Client(cluster, timeout=CLUSTER_TIMEOUT)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def swept(client, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "out"
    result = run_sweep(SWEEP, out, client=client, progress=False, stream=False)
    return result, R.read_results(out)


def _varied_urdf(payload, m3):
    """The arm7 with a payload link welded at ee_link (offset as SWEEP) and link_3's mass m3
    (its inertia scaled alike): the model the sweep builds from parameters, written as URDF."""
    root = etree.fromstring(sample_urdf().read_bytes(), etree.XMLParser(remove_comments=True))
    inertial = root.find("link[@name='link_3']/inertial")
    old = float(inertial.find("mass").get("value"))
    inertial.find("mass").set("value", repr(float(m3)))
    inertia = inertial.find("inertia")
    for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        inertia.set(key, repr(float(inertia.get(key)) * float(m3) / old))
    link = etree.SubElement(root, "link", name="payload")
    el = etree.SubElement(link, "inertial")
    etree.SubElement(el, "mass", value=repr(float(payload)))
    etree.SubElement(el, "inertia", ixx="0", ixy="0", ixz="0", iyy="0", iyz="0", izz="0")
    joint = etree.SubElement(root, "joint", name="payload_joint", type="fixed")
    etree.SubElement(joint, "parent", link="ee_link")
    etree.SubElement(joint, "child", link="payload")
    etree.SubElement(joint, "origin", xyz="0.0 0.01 0.03", rpy="0 0 0")
    return mbd_ros.load(etree.tostring(root, encoding="unicode"))


def _one_by_one(payload, m3, v4):
    """(status, rows Q, peak |tau| per joint, tracking errors) of one run with a Plant."""
    robot = _varied_urdf(payload, m3)
    t = np.arange(STEPS + 1) * DT
    w = 2 * np.pi * np.asarray(FREQUENCY)
    q_ref = np.asarray(CENTER) + np.asarray(AMPLITUDE) * (1 - np.cos(np.outer(t, w)))
    qd_ref = np.asarray(AMPLITUDE) * w * np.sin(np.outer(t, w))
    v0 = np.zeros(7)
    v0[3] = v4
    plant = Plant(robot, DT, "rk4", q=q_ref[0], v=v0, kp=400.0, kd=40.0, limits=True)
    rows, peak = [plant.q.copy()], np.zeros(7)
    for k in range(STEPS):
        plant.drives.command_position(q_ref[k], velocities=qd_ref[k])
        try:
            plant.step()
        except DivergenceError:
            return "diverged", np.array(rows), peak, q_ref
        peak = np.maximum(peak, np.abs(plant.tau))
        rows.append(plant.q.copy())
    return "ok", np.array(rows), peak, q_ref


def test_rows_equal_the_runs_done_one_by_one(swept):
    result, rows = swept
    assert result.runs == 8 and result.ran == 8 and result.resumed == 0
    np.testing.assert_array_equal(rows["run_id"], np.arange(8))
    names, values = run_table(load_sweep(SWEEP))
    np.testing.assert_array_equal(np.column_stack([rows[n] for n in names]), values)
    checked = 0
    for i, (payload, m3, v4) in enumerate(values):
        if m3 < 0:
            continue
        status, Q, peak, q_ref = _one_by_one(payload, m3, v4)
        assert rows["status"][i] == status, (i, rows["error"][i])
        assert rows["steps"][i] == len(Q) - 1
        assert rows["diverged"][i] == (status != "ok")
        if status != "ok":
            continue
        error = Q - q_ref
        scale = max(1.0, np.abs(Q).max())
        assert abs(rows["tracking_rms"][i] - np.sqrt(np.mean(error ** 2))) <= RTOL * scale
        assert abs(rows["tracking_max"][i] - np.abs(error).max()) <= RTOL * scale
        tau_scale = max(1.0, peak.max())
        assert abs(rows["peak_torque"][i] - peak.max()) <= RTOL * tau_scale
        for j in range(7):
            assert abs(rows[f"peak_torque:joint_{j + 1}"][i] - peak[j]) <= RTOL * tau_scale
            assert abs(rows[f"q_final:joint_{j + 1}"][i] - Q[-1, j]) <= RTOL * scale
        assert rows["limit_hits"][i] == 0
        checked += 1
    assert checked == 2     # the two valid runs that start slowly


def test_a_failing_run_is_a_row_with_its_error(swept):
    _, rows = swept
    status, error = rows["status"].astype(str), rows["error"].astype(str)
    invalid = rows["m3"] < 0
    assert (status[invalid] == "error").all()
    assert all("link_3" in e and "negative mass" in e for e in error[invalid])
    assert np.isnan(rows["tracking_rms"][invalid]).all()
    # the count metric too: null in its int64 column, NaN when read (not a count of -1)
    assert np.isnan(rows["limit_hits"][invalid]).all() and (rows["steps"][invalid] == 0).all()
    fast = (rows["v4"] > 1000) & ~invalid
    assert (status[fast] == "diverged").all() and (rows["steps"][fast] == 0).all()
    assert all("step 0" in e for e in error[fast])     # the rollout's message: where
    assert (status[~invalid & ~fast] == "ok").all() and (error[~invalid & ~fast] == "").all()


def test_resume_runs_only_what_is_missing(swept, client, tmp_path):
    result, first = swept
    out = tmp_path / "out"
    shutil.copytree(result.out, out)
    parts = R.part_files(out)
    assert len(parts) == 4                     # 8 runs in batches of 2
    removed = parts[1]
    lost = set(pq.read_table(removed).column("run_id").to_pylist())
    removed.unlink()
    (out / R.RESULTS).unlink()
    kept = {p: p.stat().st_mtime_ns for p in R.part_files(out)}
    again = run_sweep(SWEEP, out, client=client, progress=False, stream=False)
    assert again.ran == len(lost) == 2 and again.resumed == 6
    assert {p: p.stat().st_mtime_ns for p in kept} == kept
    rows = R.read_results(out)
    for name in first:
        if name == "seconds":
            continue
        a, b = first[name], rows[name]
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
        else:
            np.testing.assert_array_equal(a, b)
    other = copy.deepcopy(SWEEP)
    other["scenario"]["duration"] = 2 * STEPS * DT
    with pytest.raises(ValueError, match="holds the results of another sweep"):
        run_sweep(other, out, client=client, progress=False, stream=False)


def test_summary_png_and_table(swept):
    result, _ = swept
    assert result.summary.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    height, width = matplotlib.image.imread(result.summary).shape[:2]
    assert height > 300 and width > 600       # 4 metrics x 3 variations of panels
    assert "8 runs: 2 ok, 2 diverged, 4 with an error" in result.table


def test_a_task_that_fails_as_a_whole_gives_error_rows(client, tmp_path):
    """A batch whose task raises on the worker (here: the robot cannot be built there, while
    this process holds a good one for the same sweep) becomes rows with the task's error; the
    sweep finishes and every run has its row."""
    import dataclasses
    from mbd_ros.sweep import runner
    spec = load_sweep(SWEEP)
    broken = dataclasses.replace(spec, robot=dataclasses.replace(
        spec.robot, urdf_text="<robot name='broken'><link name='a'/>"))
    runner._robots[(broken.fingerprint, ())] = runner.robot_context(spec)   # this process only
    try:
        result = run_sweep(broken, tmp_path / "out", client=client, progress=False,
                           stream=False, plot=False)
    finally:
        del runner._robots[(broken.fingerprint, ())]
    rows = R.read_results(result.out)
    assert result.runs == 8 and list(rows["run_id"]) == list(range(8))
    assert (rows["status"].astype(str) == "error").all()
    errors = rows["error"].astype(str)
    assert all(e.startswith("task failed (") and "ModelError" in e and "<urdf text>" in e
               for e in errors), errors
    assert rows["diverged"].all() and np.isnan(rows["tracking_rms"]).all()


def test_a_running_cluster_by_its_scheduler_address(client, tmp_path):
    """run_sweep(scheduler=address): a client of its own on an existing cluster (the
    fixture's), closed at the end; the cluster lives on. One run, the same row as before."""
    data = copy.deepcopy(SWEEP)
    for variation in data["variations"]:
        variation["values"] = variation["values"][:1]
    result = run_sweep(data, tmp_path / "out", scheduler=client.scheduler.address,
                       progress=False, stream=False)
    rows = R.read_results(result.out)
    assert list(rows["status"]) == ["ok"] and result.ran == 1
    assert len(client.scheduler_info()["workers"]) == 2         # the cluster is still there


def test_command_line_on_its_own_local_cluster(tmp_path):
    """`mbd-ros sweep FILE --workers 2 --out DIR`, the sweep file naming its URDF relatively."""
    (tmp_path / "arm.urdf").write_text(sample_urdf().read_text())
    import yaml
    data = copy.deepcopy(SWEEP)
    data["robot"]["urdf"] = "arm.urdf"
    data["variations"] = data["variations"][:1]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "mbd_ros.cli", "sweep", str(tmp_path / "s.yaml"),
               "--workers", "2", "--out", str(out), "--timeout", str(CLUSTER_TIMEOUT)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 runs: 2 ok, 0 diverged, 0 with an error" in done.stdout
    rows = R.read_results(out)
    assert list(rows["status"]) == ["ok", "ok"] and (out / "summary.png").is_file()
    assert "2/2 runs" in done.stderr                   # the progress bar
    again = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "(2 resumed from" in again.stdout, again.stderr[-3000:]
    assert not math.isnan(rows["tracking_rms"][1])
