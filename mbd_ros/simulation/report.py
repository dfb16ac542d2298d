"""`mbd-ros simulate`: a passive (tau = 0) simulation of any robot, recorded and drawn as a PNG
(joint trajectories, energy balance, loop-constraint residuals), and the HIL demo's tracking
plot. No ROS imports; matplotlib (extra ``plot``) is imported only to draw.

Energy balance of the recording: E(t) = KE + PE + D(t) stays E(0), with D the energy dissipated
by the passive joint forces, D(t) = integral of (damping v + friction tanh(v / v_f)) . v dt
(trapezoidal rule over the steps, so its own error is O(dt^2)). Force elements (``forces``) do
work that is not in this balance; the plot says so when they are loaded.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..inputs.cli_arguments import png_path

MAX_LEGEND = 12    # joints named in a legend; more are drawn unlabelled


def load_robot(urdf, closures=None, forces=None, flexible=None, floating_base=False):
    """The robot of `mbd-ros simulate`: mbd_ros.load with the optional inputs."""
    from ..robot.build import load as build_robot
    return build_robot(str(urdf), closures=closures, floating_base=floating_base, forces=forces,
                       flexible=flexible)


def initial_state(robot, q0=None):
    """A bent, reproducible start: q0 if given, else a seeded random configuration (closed
    loops: assembled), at rest."""
    if q0 is not None:
        q = np.asarray(q0, dtype=float)
        if q.shape != (robot.nq,):
            raise ValueError(f"--q0 needs {robot.nq} numbers, got {q.size}")
    else:
        q = np.asarray(robot.random_configuration(np.random.default_rng(1)), dtype=float)
    if robot.closure_names:
        q = np.asarray(robot.assemble(q), dtype=float)
    return q, np.zeros(robot.nv)


def substeps_for(robot, dt):
    """Integrator calls per recorded step of dt: 1, or more when dt is longer than robot.step's
    default substep (default_max_step: 1 ms, or 1 / omega_max for stiff elastic modes: the
    sample flexible arm's 835 Hz mode needs 6 per ms; one RK4 step of 1 ms diverged there)."""
    from ..robot.integrators import default_substeps
    return default_substeps(robot, dt)


def simulate(robot, q, v, duration, dt, integrator="rk4", substeps=1):
    """Integrate tau = 0 for `duration` s, recorded every `dt` (each step `substeps` integrator
    calls of dt / substeps; `mbd-ros simulate` without --integrator: substeps_for); returns a
    dict of arrays: t (N,), q (N, nq), v (N, nv), ke, pe,
    dissipated, balance (= KE + PE + D - E0) (N,), residual_position, residual_velocity (N,)
    (zeros for a tree), 'diverged_at' (s or None), 'failure' (why it stopped there: the
    rollout's message or the step's error; "" when it did not) and 'substeps'. Closed loops
    use robot.step (projected back onto the loops); trees without force elements the whole
    trajectory in one robot.rollout call (compiled where its engine allows), trees with them a
    Plant without drives or limits (one compiled call per step, plant.py); both with the
    Simulator's divergence bound."""
    from ..robot.integrators import MAX_VELOCITY
    from .plant import Plant
    steps = int(round(duration / dt))
    substeps = int(substeps)
    tau = np.zeros(robot.nv)
    passive = bool(getattr(robot.model, "passive_forces", True))
    closed = bool(robot.closure_names)
    rows = None
    if not closed and not robot.force_element_names:
        rows = _rollout_rows(robot, q, v, steps, dt, integrator, MAX_VELOCITY, substeps)
    sim = None if closed or rows is not None else \
        Plant(robot, dt, integrator, q, v, joints=[], limits=False, max_speed=MAX_VELOCITY,
              substeps=substeps)
    rec = {key: [] for key in ("t", "q", "v", "ke", "pe", "dissipated",
                               "residual_position", "residual_velocity")}
    dissipated, power_prev = 0.0, None
    diverged_at, reason = None, ""
    for k in range(steps + 1):
        power = float(robot.damping_forces(v) @ v) if passive else 0.0
        if power_prev is not None:
            dissipated += 0.5 * dt * (power + power_prev)
        power_prev = power
        rec["t"].append(k * dt)
        rec["q"].append(q.copy())
        rec["v"].append(v.copy())
        rec["ke"].append(robot.kinetic_energy(q, v))
        rec["pe"].append(robot.potential_energy(q))
        rec["dissipated"].append(dissipated)
        if closed:
            position, velocity = robot.closure_residual(q, v)
        else:
            position, velocity = 0.0, 0.0
        rec["residual_position"].append(position)
        rec["residual_velocity"].append(velocity)
        if k == steps:
            break
        if rows is not None:   # the rollout's next row, or its end
            if k + 1 >= len(rows[0]):
                diverged_at, reason = (k + 1) * dt, rows[2]
                break
            q, v = rows[0][k + 1], rows[1][k + 1]
            continue
        try:
            if closed:
                for _ in range(substeps):
                    q, v = robot.step(q, v, tau, dt / substeps, integrator=integrator)
                q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
            else:
                sim.step()   # tau = 0: no drive
                q, v = sim.q.copy(), sim.v.copy()
        except (ValueError, FloatingPointError) as exc:
            diverged_at, reason = (k + 1) * dt, str(exc)
            break
    out = {key: np.array(value) for key, value in rec.items()}
    out["balance"] = out["ke"] + out["pe"] + out["dissipated"] - out["ke"][0] - out["pe"][0]
    out["diverged_at"] = diverged_at
    out["failure"] = reason
    out["substeps"] = substeps
    return out


def _rollout_rows(robot, q, v, steps, dt, integrator, max_speed, substeps=1):
    """(Q (n + 1, nq), V (n + 1, nv), message) of robot.rollout with tau = 0 from (q, v),
    `substeps` integrator calls per row: n = steps, or fewer when it diverged or failed (its
    warning is the caller's diverged_at, its message the failure's reason; "" when none)."""
    import warnings
    from ..robot.rollout import RolloutWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RolloutWarning)
        result = robot.rollout(q, v, np.zeros((steps, robot.nv)), dt, integrator=integrator,
                               max_speed=max_speed, substeps=substeps)
    return (np.asarray(result[0])[:result.steps + 1], np.asarray(result[1])[:result.steps + 1],
            result.message)


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'mbd_ros[plot]' (or "
                         "pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _legend(ax, count):
    if count <= MAX_LEGEND:
        ax.legend(fontsize=7, ncol=2 if count > 6 else 1, loc="upper right")


def plot_simulation(record, names, title, path, note=""):
    """PNG of a `simulate` record: joint positions, energies and balance, constraint residuals."""
    plt = _pyplot()
    t = record["t"]
    fig, axes = plt.subplots(4, 1, figsize=(9, 11), sharex=True,
                             gridspec_kw={"height_ratios": [3, 2, 1.4, 1.4]})
    ax = axes[0]
    q = record["q"]
    for j in range(q.shape[1]):
        ax.plot(t, q[:, j], lw=1.2, label=names[j] if j < len(names) else f"q[{j}]")
    ax.set_ylabel("q [rad or m]")
    ax.set_title(title, fontsize=11)
    _legend(ax, q.shape[1])
    ax.grid(alpha=0.3)
    ax = axes[1]
    ax.plot(t, record["ke"], label="kinetic KE")
    ax.plot(t, record["pe"], label="potential PE")
    ax.plot(t, record["dissipated"], label="dissipated D")
    ax.plot(t, record["ke"] + record["pe"] + record["dissipated"], "k--",
            label="KE + PE + D")
    ax.set_ylabel("energy [J]")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    ax = axes[2]
    ax.plot(t, record["balance"], color="tab:red")
    ax.set_ylabel("KE+PE+D - E0 [J]")
    scale = max(float(np.max(np.abs(record["ke"]))), float(record["dissipated"][-1]), 1e-12)
    drift = float(np.max(np.abs(record["balance"])))
    ax.set_title(f"energy balance error: max {drift:.2e} J ({drift / scale:.1e} of the energy "
                 "moved)" + (f"; {note}" if note else ""), fontsize=9)
    ax.grid(alpha=0.3)
    ax = axes[3]
    if np.any(record["residual_position"] > 0) or np.any(record["residual_velocity"] > 0):
        ax.semilogy(t, np.maximum(record["residual_position"], 1e-18),
                    label="position residual |g(q)|")
        ax.semilogy(t, np.maximum(record["residual_velocity"], 1e-18),
                    label="velocity residual |G v|")
        ax.legend(fontsize=8, loc="upper right")
    else:
        ax.text(0.5, 0.5, "no loop closures (a tree): no constraint residual",
                ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("constraint residual")
    ax.set_xlabel("t [s]")
    ax.grid(alpha=0.3)
    if record.get("diverged_at") is not None:
        for ax in axes:
            ax.axvline(record["diverged_at"], color="r", ls=":")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_tracking(path, names, t_state, q_state, t_ref, q_ref, title):
    """PNG of the HIL demo: measured q (solid) and reference (dashed) per joint, and the
    tracking error q_ref - q (reference sampled at the states' times)."""
    plt = _pyplot()
    t_state, q_state = np.asarray(t_state), np.asarray(q_state)
    t_ref, q_ref = np.asarray(t_ref), np.asarray(q_ref)
    fig, axes = plt.subplots(2, 1, figsize=(9, 8), sharex=True,
                             gridspec_kw={"height_ratios": [3, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, name in enumerate(names):
        c = colors[j % len(colors)]
        axes[0].plot(t_state, q_state[:, j], color=c, lw=1.2, label=name)
        if len(t_ref):
            axes[0].plot(t_ref, q_ref[:, j], color=c, lw=1.0, ls="--")
    axes[0].set_ylabel("q (solid), q_ref (dashed) [rad]")
    axes[0].set_title(title, fontsize=11)
    _legend(axes[0], len(names))
    axes[0].grid(alpha=0.3)
    if len(t_ref) > 1:
        for j, name in enumerate(names):
            err = np.interp(t_state, t_ref, q_ref[:, j]) - q_state[:, j]
            axes[1].plot(t_state, err * 1e3, color=colors[j % len(colors)], lw=1.0)
    axes[1].set_ylabel("q_ref - q [mrad]")
    axes[1].set_xlabel("t [s]")
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(parser):
    parser.add_argument("urdf", help="URDF (or .xacro) file of the robot")
    parser.add_argument("--closures", default=None, help="closure YAML file (loop closures)")
    parser.add_argument("--forces", default=None, help="force elements YAML file")
    parser.add_argument("--flexible", default=None, help="flexible links YAML file")
    parser.add_argument("--floating-base", action="store_true",
                        help="add a free joint 'root_joint' above the URDF root")
    parser.add_argument("--duration", type=float, default=2.0, help="simulated time, s")
    parser.add_argument("--dt", type=float, default=1e-3, help="step, s (default 0.001)")
    parser.add_argument("--integrator", default=None, choices=("rk4", "semi_implicit_euler"),
                        help="one step of this integrator per dt (default: robot.step's "
                             "default, RK4 in substeps of at most 1 ms, or 1 / omega for stiff "
                             "elastic modes)")
    parser.add_argument("--q0", type=float, nargs="+", default=None,
                        help="initial configuration (default: a seeded random one, at rest)")
    parser.add_argument("--plot", type=png_path, default=None, metavar="FILE.png",
                        help="write the plots to this PNG file (an existing one is overwritten)")
    return parser


def cmd_simulate(args):
    robot = load_robot(args.urdf, args.closures, args.forces, args.flexible,
                       args.floating_base)
    q, v = initial_state(robot, args.q0)
    integrator = args.integrator or "rk4"
    substeps = 1 if args.integrator else substeps_for(robot, args.dt)
    record = simulate(robot, q, v, args.duration, args.dt, integrator, substeps)
    steps = len(record["t"]) - 1
    scale = max(float(np.max(np.abs(record["ke"]))), float(record["dissipated"][-1]), 1e-12)
    drift = float(np.max(np.abs(record["balance"])))
    name = Path(args.urdf).name
    substeps = record["substeps"]
    split = (f" ({substeps} substeps each, robot.step's default longest substep "
             f"{args.dt / substeps * 1e3:.3g} ms)" if substeps > 1 else "")
    print(f"mbd-ros simulate: {name}, nq {robot.nq}, nv {robot.nv}, "
          f"{len(robot.closure_names)} closures; tau = 0, {integrator}, "
          f"dt {args.dt * 1e3:g} ms, {steps} steps{split}")
    print(f"energy balance |KE + PE + D - E0| max {drift:.3e} J = {drift / scale:.2e} of the "
          "energy moved" + (" (force elements' work not included: not a check of the "
                            "integration)" if robot.force_element_names else ""))
    if robot.closure_names:
        print(f"constraint residual max: position {record['residual_position'].max():.3e}, "
              f"velocity {record['residual_velocity'].max():.3e}")
    if record["diverged_at"] is not None:
        why = f": {record['failure']}" if record.get("failure") else ""
        print(f"the simulation failed at t = {record['diverged_at']:.3f} s{why}")
    if args.plot:
        note = "force elements' work not included" if args.forces else ""
        title = (f"{name}: passive motion (tau = 0), {integrator}, dt = "
                 f"{args.dt * 1e3:g} ms")
        plot_simulation(record, _dof_labels(robot), title, args.plot, note)
        print(f"wrote {args.plot}")
    return 0 if record["diverged_at"] is None and math.isfinite(drift) else 1


def _dof_labels(robot):
    """One label per entry of q (multi-dof joints: joint[k])."""
    labels = []
    for name, kind in zip(robot.joint_names, robot.joint_types):
        width = {"floating": 7, "spherical": 4, "planar": 3}.get(kind, 1)
        labels += [name] if width == 1 else [f"{name}[{k}]" for k in range(width)]
    return labels
