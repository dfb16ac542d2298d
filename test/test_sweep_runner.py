"""One run of a sweep in this process (mbd_ros/sweep/runner.py run_one), for the variations and
scenarios test_sweep_dask.py does not cover, against a Plant stepped by hand with the same
inputs (an independent loop: its drives, effort commands and stops, one step at a time):

- a drive gain of one joint and the initial position of another;
- the open-loop `inverse_dynamics` torque (no drives): the Plant takes the nominal robot's
  ID along the reference, computed here, as effort commands; with the nominal robot the arm
  follows the reference up to the zero-order hold of the torque, with a payload it does not.

Tolerance RTOL: the same arithmetic in another order of calls (round-off over 60 steps).
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import RTOL
import mbd_ros
from mbd_ros.cli.samples import sample_urdf
from mbd_ros.plant import Plant
from mbd_ros.sweep import load_sweep, run_one

CENTER = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])
AMPLITUDE = np.array([0.3, 0.2, 0.3, 0.2, 0.4, 0.3, 0.5])
FREQUENCY = np.array([0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55])
STEPS, DT = 60, 1e-3


def _reference():
    t = np.arange(STEPS + 1) * DT
    w = 2 * np.pi * FREQUENCY
    wt = np.outer(t, w)
    return (CENTER + AMPLITUDE * (1 - np.cos(wt)), AMPLITUDE * w * np.sin(wt),
            AMPLITUDE * w ** 2 * np.cos(wt))


def _sweep(variations, metrics=None, steps=STEPS, dt=DT, **scenario):
    extra = {"metrics": metrics} if metrics else {}
    return load_sweep({
        **extra, "name": "runner", "robot": {"urdf": str(sample_urdf())},
        "variations": variations,
        "scenario": {"duration": steps * dt, "dt": dt, "integrator": "rk4",
                     "reference": {"center": CENTER.tolist(), "amplitude": AMPLITUDE.tolist(),
                                   "frequency_hz": FREQUENCY.tolist()}, **scenario}})


@pytest.fixture(scope="module")
def arm():
    return mbd_ros.load(str(sample_urdf()))


def _assert_row_matches(row, Q, q_ref, peak=None):
    assert row["status"] == "ok", row["error"]
    assert row["steps"] == STEPS
    error = Q - q_ref
    assert abs(row["tracking_rms"] - np.sqrt(np.mean(error ** 2))) <= RTOL
    assert abs(row["tracking_max"] - np.abs(error).max()) <= RTOL
    for j in range(7):
        assert abs(row[f"q_final:joint_{j + 1}"] - Q[-1, j]) <= RTOL * max(1, abs(Q[-1, j]))
    if peak is not None:
        assert abs(row["peak_torque"] - peak) <= RTOL * max(1.0, peak)


def test_a_drive_gain_and_an_initial_position(arm):
    spec = _sweep([{"quantity": "kp", "joint": "joint_2", "values": [900.0]},
                   {"quantity": "initial_position", "joint": "joint_5", "values": [0.75]}],
                  limits=True, drives={"kp": 400.0, "kd": 40.0})
    row = run_one(spec, [900.0, 0.75])
    q_ref, qd_ref, _ = _reference()
    q0 = q_ref[0].copy()
    q0[4] = 0.75
    kp = np.full(7, 400.0)
    kp[1] = 900.0
    plant = Plant(arm, DT, "rk4", q=q0, kp=kp, kd=40.0, limits=True)
    rows, peak = [plant.q.copy()], 0.0
    for k in range(STEPS):
        plant.drives.command_position(q_ref[k], velocities=qd_ref[k])
        plant.step()
        peak = max(peak, np.abs(plant.tau).max())
        rows.append(plant.q.copy())
    _assert_row_matches(row, np.array(rows), q_ref, peak)



def test_computed_torque_with_pd_drives_and_the_nominal_feed_forward(arm):
    """drives `model: pd` (a servo's PD in N m/rad, no model compensation; a kp variation sets
    those gains) plus `torque: inverse_dynamics` (the nominal arm's feed-forward), the sample
    sweep's controller, with 3 kg the model does not know: the row equals a Plant whose drives
    are set_model("pd", ...) tracking the reference, the feed-forward added as a force held
    over each step, on the arm carrying the payload."""
    payload, kp2 = 3.0, 2500.0
    kp = np.array([960.0, 2270.0, 190.0, 480.0, 20.0, 31.0, 2.1])
    kd = np.array([31.0, 72.0, 6.0, 15.0, 0.64, 1.0, 0.07])
    spec = _sweep([{"quantity": "payload", "link": "ee_link", "values": [payload]},
                   {"quantity": "kp", "joint": "joint_2", "values": [kp2]}],
                  torque={"type": "inverse_dynamics"},
                  drives={"model": "pd", "kp": kp.tolist(), "kd": kd.tolist()},
                  metrics=["tracking_rms", "tracking_max", "peak_torque", "final_state"])
    row = run_one(spec, [payload, kp2])
    q_ref, qd_ref, qdd_ref = _reference()
    tau = np.array([arm.inverse_dynamics(q_ref[k], qd_ref[k], qdd_ref[k]) for k in range(STEPS)])
    body = arm.body_names.index("link_7")
    p = arm.inertial_parameters()
    p[10 * body] += payload          # at ee_link's origin, 0.14 m along link_7's z
    p[10 * body + 3] += payload * 0.14
    p[10 * body + 4] += payload * 0.14 ** 2
    p[10 * body + 6] += payload * 0.14 ** 2
    plant = Plant(arm.with_inertial_parameters(p), DT, "rk4", q=q_ref[0], limits=False)
    kp[1] = kp2
    plant.drives.set_model("pd", pd_kp=kp, pd_kd=kd)
    held = [np.zeros(7)]
    plant.add_force(lambda t, q, v: held[0])
    rows, peak = [plant.q.copy()], 0.0
    for k in range(STEPS):
        held[0] = tau[k]
        plant.drives.command_position(q_ref[k], velocities=qd_ref[k])
        plant.step()
        peak = max(peak, np.abs(plant.tau + tau[k]).max())
        rows.append(plant.q.copy())
    _assert_row_matches(row, np.array(rows), q_ref, peak)
    assert row["tracking_max"] > 1e-3     # the unknown payload shows as tracking error

@pytest.mark.parametrize("payload", [0.0, 3.0])
def test_the_open_loop_inverse_dynamics_torque(arm, payload):
    spec = _sweep([{"quantity": "payload", "link": "ee_link", "values": [payload]}],
                  torque={"type": "inverse_dynamics"},
                  metrics=["tracking_rms", "tracking_max", "peak_torque", "final_state"])
    row = run_one(spec, [payload])
    q_ref, qd_ref, qdd_ref = _reference()
    tau = np.array([arm.inverse_dynamics(q_ref[k], qd_ref[k], qdd_ref[k]) for k in range(STEPS)])
    body = arm.body_names.index("link_7")
    p = arm.inertial_parameters()
    # the payload at ee_link's origin: 0.14 m along link_7's z (flange 0.04 + ee 0.1, no rotation)
    p[10 * body] += payload
    p[10 * body + 3] += payload * 0.14
    p[10 * body + 4] += payload * 0.14 ** 2
    p[10 * body + 6] += payload * 0.14 ** 2
    plant = Plant(arm.with_inertial_parameters(p), DT, "rk4", q=q_ref[0], limits=False)
    rows = [plant.q.copy()]
    for k in range(STEPS):
        plant.drives.command_effort(tau[k])
        plant.step()
        rows.append(plant.q.copy())
    Q = np.array(rows)
    _assert_row_matches(row, Q, q_ref, np.abs(tau).max())


def test_open_loop_tracking_error_is_the_hold_or_the_model_error():
    """Physics of the open-loop computed torque: with the nominal robot the only error is the
    zero-order hold of tau (tau_k held over [t_k, t_k + dt): an O(dt) force error), so the
    tracking error halves with dt (first order; RK4's own O(dt^4) is far below); with 3 kg
    of payload it is the model's error and does not shrink with dt."""
    def tracking_max(payload, steps):
        spec = _sweep([{"quantity": "payload", "link": "ee_link", "values": [payload]}],
                      metrics=["tracking_max"], steps=steps, dt=0.06 / steps,
                      torque={"type": "inverse_dynamics"})
        return run_one(spec, [payload])["tracking_max"]

    nominal = [tracking_max(0.0, n) for n in (60, 120, 240)]
    for coarse, fine in zip(nominal, nominal[1:]):
        assert coarse / fine == pytest.approx(2.0, rel=0.02)
    loaded = [tracking_max(3.0, n) for n in (60, 120)]
    assert loaded[0] > 100 * nominal[0] and loaded[1] == pytest.approx(loaded[0], rel=0.01)


def test_initial_state_sweeps_are_one_batch_rollout_with_the_single_runs_numbers(monkeypatch):
    """Runs that differ only in their initial state share one batch robot.rollout in
    run_batch: every column equals the runs done one by one with run_one (single rollouts),
    bit for bit, a diverged member included (its rows end where it diverged)."""
    from mbd_ros.sweep import run_batch, run_table
    from mbd_ros.sweep import runner
    spec = _sweep([{"quantity": "initial_position", "joint": "joint_2",
                    "values": [0.7, 0.9, 1.1]},
                   {"quantity": "initial_velocity", "joint": "joint_6",
                    "values": [0.0, 5000.0]}],
                  limits=True, drives={"kp": 400.0, "kd": 40.0})
    _, values = run_table(spec)
    calls, original = [], runner._batch_rows
    monkeypatch.setattr(runner, "_batch_rows", lambda *a: calls.append(1) or original(*a))
    batch = run_batch(spec, list(range(len(values))), values)
    assert calls == [1]
    assert sorted(set(batch["status"])) == ["diverged", "ok"]
    for i, row_values in enumerate(values):
        single = run_one(spec, row_values)
        for name, column in batch.items():
            if name not in ("run_id", "seconds"):
                assert column[i] == single[name] or (column[i] != column[i] and
                                                     single[name] != single[name]), (i, name)
