"""`mbd-ros simulate ... --plot out.png`: the passive simulation conserves KE + PE + dissipated
energy and keeps the loops closed (physical invariants), and the PNG is written. The plot needs
matplotlib (the optional `plot` extra): only the PNG part skips without it."""
from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros import cli
from mbd_ros.simulation.report import initial_state, simulate

REPO = Path(__file__).resolve().parent.parent
FOURBAR = (str(REPO / "urdf" / "fourbar.urdf"), str(REPO / "config" / "fourbar_closures.yaml"))


def test_passive_simulation_invariants():
    robot = mbd_ros.load(FOURBAR[0], closures=FOURBAR[1])
    q, v = initial_state(robot)
    record = simulate(robot, q, v, duration=1.0, dt=1e-3, integrator="rk4")
    assert record["diverged_at"] is None
    moved = np.max(record["ke"])
    assert moved > 0.05, "the mechanism must actually move"
    assert np.max(np.abs(record["balance"])) < 1e-6 * moved
    assert np.max(record["residual_position"]) < 1e-9
    assert np.max(record["residual_velocity"]) < 1e-9
    arm = mbd_ros.load(str(REPO / "urdf" / "arm7.urdf"))     # damped: D grows, balance holds
    q, v = initial_state(arm)
    record = simulate(arm, q, v, duration=0.5, dt=1e-3, integrator="rk4")
    assert record["dissipated"][-1] > 0
    assert np.max(np.abs(record["balance"])) < 1e-3 * max(np.max(record["ke"]),
                                                          record["dissipated"][-1])


def test_simulate_command_writes_the_png(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (optional extra "
                        "'plot')")
    out = tmp_path / "fourbar.png"
    code = cli.main(["simulate", FOURBAR[0], "--closures", FOURBAR[1], "--duration", "0.5",
                     "--plot", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "energy balance" in text and "constraint residual" in text
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_options_not_yet_supported_by_load_are_refused(tmp_path, capsys):
    for option in ("forces", "flexible"):
        if option in inspect.signature(mbd_ros.load).parameters:
            continue   # supported: nothing to refuse
        code = cli.main(["simulate", FOURBAR[0], f"--{option}", str(tmp_path / "x.yaml")])
        assert code == 2
        assert f"--{option}" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["demo", "--dt", "nan"], "--dt and --duration must be positive finite"),
    (["simulate", FOURBAR[0], "--duration", "1e12", "--dt", "1e-9"], "at most 1e+06"),
    (["demo", "--duration", "1e12"], "at most 1e+06"),
    (["bench", FOURBAR[0], "--n", "1000000000000", "--repeats", "1"], "at most 1e+07 calls"),
])
def test_numbers_that_are_not_a_bounded_run_are_refused(argv, message, capsys):
    """NaN, or a run of more than MAX_STEPS steps / MAX_CALLS calls: argparse's error (exit 2)
    naming the arguments, before any work (they crashed with numpy's message or ran unbounded)."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("timeout", ["nan", "-1", "1e9"])
def test_a_sweep_timeout_that_is_no_duration_is_refused_before_any_output(timeout, tmp_path,
                                                                          capsys):
    sample = Path(__file__).resolve().parent.parent / "config" / "arm7_payload_sweep.yaml"
    code = cli.main(["sweep", str(sample), "--out", str(tmp_path / "out"), "--timeout", timeout])
    assert code == 2
    assert "--timeout must be a number of seconds" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_simulate_splits_the_step_for_stiff_elastic_modes(capsys):
    """The flexible arm's 835 Hz mode needs RK4 steps of at most 1 / omega (robot.step's
    default substep, default_max_step: 6 per ms); `mbd-ros simulate --flexible` ran one RK4 step
    per 1 ms dt and diverged at t = 5 ms (the README's command). Now, without --integrator (the
    library's default integrator), each recorded step is that many RK4 substeps: no divergence,
    the same states as robot.step's default integrator; --integrator rk4 is one step per dt,
    as asked (and diverges there)."""
    urdf, flexible = str(REPO / "urdf" / "flexible_arm.urdf"), str(REPO / "config" /
                                                                   "flexible_arm.yaml")
    robot = mbd_ros.load(urdf, flexible=flexible)
    q, v = initial_state(robot)
    from mbd_ros.simulation.report import substeps_for
    assert substeps_for(robot, 1e-3) == 6
    record = simulate(robot, q, v, duration=0.3, dt=1e-3, integrator="rk4", substeps=6)
    assert record["diverged_at"] is None and record["substeps"] == 6
    # against robot.step's default integrator (RK4 in those same substeps)
    q_step, v_step = q.copy(), v.copy()
    for _ in range(300):
        q_step, v_step = robot.step(q_step, v_step, np.zeros(robot.nv), 1e-3)
    np.testing.assert_allclose(record["q"][-1], q_step, rtol=0, atol=1e-12)
    code = cli.main(["simulate", urdf, "--flexible", flexible, "--duration", "0.3"])
    text = capsys.readouterr().out
    assert code == 0 and "6 substeps each" in text and "failed" not in text, text
    code = cli.main(["simulate", urdf, "--flexible", flexible, "--duration", "0.3",
                     "--integrator", "rk4"])
    text = capsys.readouterr().out
    assert code == 1 and "substeps" not in text and "failed at t = 0.005 s" in text, text
    # and why: the rollout's message (the step and the speed past the divergence bound)
    assert "failed at t = 0.005 s: " in text and "step" in text.split("failed at t")[1], text


@pytest.mark.parametrize("plot, message", [
    ("out", "the plot is a PNG: give a file name ending in .png"),
    ("missing_dir/out.png", "no directory"),
    ("a_directory.png", "is a directory"),
])
def test_a_bad_plot_path_is_refused_before_the_run(tmp_path, capsys, plot, message):
    """--plot is checked when the command line is parsed (exit 2, naming it): an unusable path
    failed only after the whole run, and a name without .png was written as NAME.png while the
    command printed NAME (an outside audit)."""
    (tmp_path / "a_directory.png").mkdir()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["simulate", FOURBAR[0], "--closures", FOURBAR[1], "--duration", "0.01",
                  "--plot", str(tmp_path / plot)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --plot" in err and message in err, err
    assert not (tmp_path / "out.png").exists() and not (tmp_path / "out").exists()


def test_run_lengths_and_divergence_are_said_not_hidden(capsys):
    """--duration shorter than one --dt: refused (it ran no step and exited 0); a diverging
    flex-demo: exit 1 with the reason, no traceback (SimulationDiverged escaped); a
    ROS_DOMAIN_ID out of range: refused at parsing (rclpy raised at start)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["demo", "--dt", "10"])
    assert exit_.value.code == 2
    assert "shorter than one --dt step" in capsys.readouterr().err
    code = cli.main(["demo", "--dt", "0.05", "--duration", "0.5"])   # RK4 unstable on arm7
    err = capsys.readouterr().err
    assert code == 1 and "--dt 0.05 s is too long a step" in err, err
    code = cli.main(["flex-demo", "--dt", "0.01", "--duration", "0.05"])
    err = capsys.readouterr().err
    assert code == 1 and "diverged at t = 0.010000 s" in err and "Traceback" not in err, err
    import argparse
    from mbd_ros.nodes import hil_demo
    parser = hil_demo.add_arguments(argparse.ArgumentParser())
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--domain-id", "-1"])
    assert exit_.value.code == 2
    assert "is not a ROS_DOMAIN_ID" in capsys.readouterr().err
    # --rate, --duration and --urdf are checked when parsed (a bad one started the three nodes
    # and failed in the plant's configure)
    for argv, message in ((["--rate", "-5"], "-5 is outside 1 to 20000 Hz"),
                          (["--rate", "nan"], "nan is outside"),
                          (["--duration", "0"], "0 is outside 0.1 to 1e+06 s"),
                          (["--urdf", "/nonexistent.urdf"], "does not exist: give a file"),
                          (["--urdf", str(REPO)], "is a directory")):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err, argv


def test_demo_rk4_step_is_robot_steps_rk4_on_a_floating_base():
    """`mbd-ros demo`'s own RK4 step (it also integrates the dissipated power) on a free root
    joint: the same Runge-Kutta-Munthe-Kaas step as robot.step (its stage velocities were
    averaged as in a vector space: second order on SE(3)), to round-off; and its dissipation
    is the power of the passive forces at the stages (zero without them)."""
    robot = mbd_ros.load(str(REPO / "urdf" / "arm7.urdf"), floating_base=True,
                         passive_forces=False)
    rng = np.random.default_rng(3)
    q = robot.random_configuration(rng)
    v = rng.uniform(-2.0, 2.0, robot.nv)      # a tumbling base: the stage corrections matter
    zero = np.zeros(robot.nv)
    dt = 2e-3
    q1, v1, dissipated = cli._demo_rk4_step(robot, lambda q, v: robot.forward_dynamics(
        q, v, zero), lambda v: 0.0, q, v, 0.0, dt, cli._lie_joint_tree(robot))
    q_ref, v_ref = robot.step(q, v, zero, dt, integrator="rk4")
    scale = 1.0 + np.abs(v).max()
    np.testing.assert_allclose(q1, q_ref, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(v1, v_ref, rtol=0, atol=1e-11 * scale)
    assert dissipated == 0.0


def test_dominant_frequency_of_a_known_signal():
    """flex-demo's spectrum peak: two damped sines (3.1 Hz strong, 13 Hz weak) on a linear
    trend, 1 s at 1 kHz: the peak is the 3.1 Hz one within a tenth of the 1 Hz resolution;
    below two periods in the record it declines."""
    from mbd_ros.cli.flexible_demo import dominant_frequency
    t = np.linspace(0.0, 1.0, 1001)
    signal = (0.4 * np.exp(-0.8 * t) * np.sin(2 * np.pi * 3.1 * t + 0.3)
              + 0.1 * np.exp(-16 * t) * np.sin(2 * np.pi * 13.0 * t) + 0.2 * t - 0.05)
    assert abs(dominant_frequency(t, signal) - 3.1) < 0.1
    assert dominant_frequency(t, np.sin(2 * np.pi * 1.5 * t)) is None


def test_flex_demo_measures_a_mode_of_its_linearised_arm(capsys):
    """`mbd-ros flex-demo`: the tip's strongest frequency in the simulated ring equals the
    lowest mode of the arm with its servos linearised at the final state (the library's analytic
    derivatives of the dynamics: an independent route to the frequency) within the
    spectrum's resolution; the clamped forearm's 17.76 Hz is reported apart (the demo printed
    a zero-crossing mix of modes as 'tip vibration', 4.6 Hz)."""
    import re
    assert cli.main(["flex-demo", "--dt", "2e-4"]) == 0
    text = capsys.readouterr().out
    measured = float(re.search(r"strongest frequency ([0-9.]+) Hz", text).group(1))
    modes = [float(f) for f in re.findall(r"([0-9.]+) Hz \(damping", text)]
    assert len(modes) >= 2 and abs(measured - modes[0]) < 0.25, text
