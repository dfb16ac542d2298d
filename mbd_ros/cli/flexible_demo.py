"""``mbd-ros flex-demo``: the tip vibration of the flexible arm after a step in joint torque.

The sample arm (urdf/flexible_arm.urdf, config/flexible_arm.yaml: an aluminium forearm with 4
modes, 1 % modal damping) starts at rest, horizontal, at its static deflection under gravity. Its
joints are held by stiff PD servos (kp 100 N m/rad, kd 0.5 N m s/rad, on the rigid joint angles)
plus their gravity torques at the start. At t = 0 the elbow torque steps up by --step N m: the
arm moves to a new equilibrium and the forearm rings. RK4 integrates the motion; the tip's
elastic deflection in the forearm frame (Phi_t q_f at the tool) is printed and, with
--plot FILE.png (matplotlib, the `plot` extra), drawn. At the end: the deflection's strongest
frequency (its spectrum's peak) next to the modes of the arm with its servos linearised at the
final state (the lowest, a servo-and-arm mode near 2.8 Hz, is what rings; the forearm's clamped
17.8 Hz is not the arm's).
"""
from __future__ import annotations

import numpy as np

from ..inputs.cli_arguments import png_path


def add_arguments(parser):
    parser.add_argument('--step', type=float, default=2.0,
                        help='elbow torque step in N m (default 2)')
    parser.add_argument('--duration', type=float, default=1.0, help='simulated time in s (default 1)')
    parser.add_argument('--dt', type=float, default=1e-4, help='RK4 step in s (default 1e-4)')
    parser.add_argument('--plot', type=png_path, default=None, metavar='FILE.png',
                        help='write a plot of the tip deflection (needs matplotlib)')


def static_equilibrium(robot, q):
    """q with the elastic coordinates at their static deflection (the elastic rows of
    gravity_forces are affine in q_f: one linear solve)."""
    e, ev = robot.elastic_q_indices, robot.elastic_v_indices
    q = np.array(q, dtype=float)
    q[e] = 0.0
    r0 = robot.gravity_forces(q)[ev]
    J = np.column_stack([robot.gravity_forces(q + np.eye(robot.nq)[k])[ev] - r0 for k in e])
    q[e] = np.linalg.solve(J, -r0)
    return q


def tip_deflection(robot, q, link):
    """(3,) deformed minus undeformed position of `link`, in the frame of its flexible link."""
    rigid = np.array(q)
    rigid[robot.elastic_q_indices] = 0.0
    fb = robot.flexible.bodies[0]
    frame = robot.link_pose(q, fb.link)[:3, :3]
    return frame.T @ (robot.link_pose(q, link)[:3, 3] - robot.link_pose(rigid, link)[:3, 3])


def linearised_modes(robot, q, tau, dtau_dq, dtau_dv):
    """[(frequency Hz, damping ratio)] of the oscillatory eigenvalues of x' = (v, FD(q, v,
    tau(q, v))) linearised at (q, 0) with the library's analytic derivatives
    (robot.forward_dynamics_derivatives), by frequency. q (nq,): a state near the equilibrium;
    tau (nv,) the torque there, dtau_dq, dtau_dv (nv, nv) the control law's derivatives."""
    nv = robot.nv
    dqdd_dq, dqdd_dv, dqdd_dtau = robot.forward_dynamics_derivatives(q, np.zeros(nv), tau)
    jacobian = np.zeros((2 * nv, 2 * nv))
    jacobian[:nv, nv:] = np.eye(nv)
    jacobian[nv:, :nv] = dqdd_dq + dqdd_dtau @ dtau_dq
    jacobian[nv:, nv:] = dqdd_dv + dqdd_dtau @ dtau_dv
    values = [lam for lam in np.linalg.eigvals(jacobian) if lam.imag > 1e-6]
    return sorted((lam.imag / (2 * np.pi), -lam.real / abs(lam)) for lam in values)


def dominant_frequency(times, signal):
    """Hz of the largest peak of the signal's spectrum (linear trend removed, Hann window, 16 x
    zero padding, parabolic interpolation of the peak), or None when the peak is below two
    periods of the record or the signal is too short."""
    n = len(signal)
    if n < 16:
        return None
    dt = (times[-1] - times[0]) / (n - 1)
    detrended = signal - np.polyval(np.polyfit(times, signal, 1), times)
    spectrum = np.abs(np.fft.rfft(detrended * np.hanning(n), 16 * n))
    freqs = np.fft.rfftfreq(16 * n, dt)
    k = int(np.argmax(spectrum[1:])) + 1
    if freqs[k] < 2.0 / (times[-1] - times[0]) or k + 1 >= len(spectrum):
        return None
    a, b, c = spectrum[k - 1], spectrum[k], spectrum[k + 1]
    shift = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c != 0 else 0.0
    return float(freqs[k] + shift * (freqs[1] - freqs[0]))


def run(args):
    from ..robot.build import load as build_robot
    from .samples import sample_urdf
    from ..robot.integrators import Simulator
    urdf = sample_urdf('flexible_arm.urdf')
    config = urdf.parent.parent / 'config' / 'flexible_arm.yaml'
    if not config.is_file():
        from pathlib import Path
        import sys
        config = Path(sys.prefix) / 'share' / 'mbd_ros' / 'config' / 'flexible_arm.yaml'
    robot = build_robot(str(urdf), flexible=str(config))
    print(robot.summary())
    q = static_equilibrium(robot, robot.neutral())
    hold = robot.gravity_forces(q)
    hold[robot.elastic_v_indices] = 0.0
    q0 = q.copy()
    kp, kd = 100.0, 0.5         # kd / (the joint's inertia against the forearm's modes) must stay within RK4's stability
    tau = np.zeros(robot.nv)

    def servo(q, v):
        """The joints' PD about q0 plus their gravity torques at the start, the elbow's step."""
        tau[:2] = hold[:2] - kp * (q[:2] - q0[:2]) - kd * v[:2]
        tau[1] += args.step
        return tau

    sim = Simulator(robot, args.dt, 'rk4', q=q, v=np.zeros(robot.nv))
    n_steps = int(round(args.duration / args.dt))
    every = max(1, int(round(1e-3 / args.dt)))
    sag = tip_deflection(robot, q, 'tool')
    print(f"\nstatic tip sag under gravity: {sag[2] * 1e3:.3f} mm; elbow torque step "
          f"{args.step:g} N m at t = 0 (RK4, dt = {args.dt:g} s)")
    print(f"{'t [s]':>7} {'shoulder':>9} {'elbow':>8} {'tip dz [mm]':>12} {'elastic [mJ]':>13}")
    times, dz = [], []
    for k in range(n_steps + 1):
        if k % every == 0:
            times.append(sim.time)
            dz.append(tip_deflection(robot, sim.q, 'tool')[2] * 1e3)
            if k % (50 * every) == 0:
                print(f"{sim.time:7.3f} {sim.q[0]:9.4f} {sim.q[1]:8.4f} {dz[-1]:12.4f} "
                      f"{robot.elastic_energy(sim.q) * 1e3:13.4f}")
        if k < n_steps:
            sim.step(servo(sim.q, sim.v))
    times, dz = np.array(times), np.array(dz)
    gains = np.zeros((robot.nv, robot.nv))   # the servo's -d tau / d(q, v) on the two joints
    gains[[0, 1], [0, 1]] = 1.0
    modes = linearised_modes(robot, sim.q, servo(sim.q, np.zeros(robot.nv)).copy(),
                             -kp * gains, -kd * gains)
    peak = dominant_frequency(times, dz)
    print(f"\ntip deflection peak-to-peak {dz.max() - dz.min():.3f} mm; its strongest frequency "
          + (f"{peak:.2f} Hz (spectrum, resolution {1.0 / times[-1]:.2g} Hz)" if peak else
             "not measurable in so short a run"))
    print("modes of the arm with its servos, linearised at the final state: "
          + ", ".join(f"{f:.2f} Hz (damping {z:.3f})" for f, z in modes[:4])
          + f"; the forearm clamped alone: {robot.flexible.bodies[0].frequencies[0]:.2f} Hz")
    if args.plot:
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
        except ImportError:
            print("--plot needs matplotlib (pip install 'mbd_ros[plot]')")
            return 1
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.plot(times, dz, lw=1.0)
        ax.set_xlabel('time [s]')
        ax.set_ylabel('tip deflection z [mm]')
        ax.set_title(f'flexible_arm: tip vibration after a {args.step:g} N m elbow torque step')
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot written to {args.plot}")
    return 0
