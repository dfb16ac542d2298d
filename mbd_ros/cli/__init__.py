"""Command line of mbd_ros: ``mbd-ros info | bench | analyze | codegen | hil-demo | demo``.

- ``info ROBOT.urdf``: the model's summary (bodies, joints, sizes, mass).
- ``bench ROBOT.urdf``: per-call time of forward/inverse dynamics and the mass matrix on random
  states, side by side with Pinocchio (aba, rnea, crba) when ``pinocchio`` is importable.
- ``analyze ROBOT.urdf --closures FILE.yaml``: degrees of freedom (Grübler-Kutzbach and rank of
  the closure Jacobian), redundant constraints, singular configuration, static determinacy.
- ``codegen ROBOT.urdf [--floating-base]``: generate and compile the robot-specific kernels of
  ``load(..., codegen=True)`` into the on-disk cache (e.g. in a Docker build or colcon build step).
- ``hil-demo``: the README's main job: the forward dynamics node simulating arm7 at 1 kHz, the
  inverse dynamics node in computed-torque mode and a reference publisher, as ROS 2 processes
  (rclpy from the PyPI wheels or a ROS install), for a few seconds; prints achieved rate,
  compute p99 and tracking error.
- ``flex-demo``: the flexible arm's tip vibration after a torque step (--plot FILE.png).
- ``demo [ROBOT.urdf]``: the passive arm (tau = 0) falls from a bent configuration for 2 s,
  integrated with fixed-step RK4; prints the energy balance KE + PE + dissipated = const.
- ``build-interfaces [--only tf2_msgs|control_msgs] [--force]``: generate and compile the ROS 2
  interface packages without a PyPI wheel into this virtual environment (mbd_ros/interfaces).
- ``simulate ROBOT.urdf [--closures F] [--forces F] [--flexible F] [--floating-base]
  [--duration 2] [--plot out.png]``: the same passive simulation for any robot (closed loops,
  floating base, ...), with a PNG of joint trajectories, energy balance and constraint
  residuals (mbd_ros.sim_report; matplotlib from the ``plot`` extra).
- ``sweep SWEEP.yaml --out DIR [--scheduler ADDRESS] [--workers N]``: a parameter sweep on
  Dask (mbd_ros.sweep, docs/sweeps.md; extra ``sweep``).

Only the public library API is used (``mbd_ros.load`` and the Robot methods).
"""
import argparse
import math
import os
from pathlib import Path
import sys
import time

import numpy as np

from ..constants import FRICTION_VELOCITY, VECTOR_SPACE_JOINTS
from .samples import DEFAULT_ROBOT, sample_urdf

# bounded cost of a command: simulated steps (duration / dt: the recorded trajectory is kept in
# memory) and benchmark calls (n x repeats)
MAX_STEPS = 1e6
MAX_CALLS = 1e7



# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------
def _load(path, floating_base=False, **kwargs):
    from ..robot.build import load as build_robot
    return build_robot(str(path), floating_base=floating_base, **kwargs)


def _time_per_call(fn, states, repeats):
    """Median over `repeats` of the mean time (µs) of one call of fn(*state) over all states."""
    per_call = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for state in states:
            fn(*state)
        per_call.append((time.perf_counter() - t0) / len(states) * 1e6)
    return float(np.median(per_call))


# ------------------------------------------------------------------------------------------------
# info
# ------------------------------------------------------------------------------------------------
def cmd_info(args):
    robot = _load(args.urdf, floating_base=args.floating_base, closures=args.closures)
    print(robot.summary())
    return 0


# ------------------------------------------------------------------------------------------------
# bench
# ------------------------------------------------------------------------------------------------
def _pin_model(urdf_path, floating_base):
    """Pinocchio model of the URDF; continuous joints made revolute (one angle, not cos/sin)."""
    import pinocchio as pin
    from lxml import etree
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
    root = etree.fromstring(Path(urdf_path).read_bytes(), parser)
    for joint in root.iter('joint'):
        if joint.get('type') == 'continuous':
            joint.set('type', 'revolute')
            limit = joint.find('limit')
            if limit is None:
                limit = etree.SubElement(joint, 'limit', effort='0', velocity='0')
            limit.set('lower', str(-math.pi))
            limit.set('upper', str(math.pi))
    xml = etree.tostring(root, encoding='unicode')
    if floating_base:
        return pin.buildModelFromXML(xml, pin.JointModelFreeFlyer(), 'root_joint')
    return pin.buildModelFromXML(xml)


def _pin_index_maps(robot, model):
    """Index arrays so that q_pin = q[iq], v_pin = v[iv]; None when the layouts do not match."""
    nq_of = np.diff(np.append(np.asarray(robot.idx_q), robot.nq))
    nv_of = np.diff(np.append(np.asarray(robot.idx_v), robot.nv))
    iq = np.full(model.nq, -1)
    iv = np.full(model.nv, -1)
    for j, name in enumerate(robot.joint_names):
        if not model.existJointName(name):
            return None
        pj = model.getJointId(name)
        if model.nqs[pj] != nq_of[j] or model.nvs[pj] != nv_of[j]:
            return None  # e.g. a planar joint: Pinocchio stores cos/sin of the angle
        pq, pv, oq, ov = model.idx_qs[pj], model.idx_vs[pj], robot.idx_q[j], robot.idx_v[j]
        iq[pq:pq + nq_of[j]] = np.arange(oq, oq + nq_of[j])
        iv[pv:pv + nv_of[j]] = np.arange(ov, ov + nv_of[j])
    if model.nq != robot.nq or model.nv != robot.nv or (iq < 0).any() or (iv < 0).any():
        return None
    return iq, iv


def cmd_bench(args):
    from ..robot.build import load as build_robot
    t0 = time.perf_counter()
    robot = _load(args.urdf, floating_base=args.floating_base)
    t_load = time.perf_counter() - t0
    nq, nv, n = robot.nq, robot.nv, args.n
    rng = np.random.default_rng(args.seed)
    Q = [np.ascontiguousarray(robot.random_configuration(rng), dtype=float) for _ in range(n)]
    V = [rng.standard_normal(nv) for _ in range(n)]
    U = [rng.standard_normal(nv) * 10.0 for _ in range(n)]   # torques for FD, accelerations for ID
    qdd_out, tau_out, M_out = np.empty(nv), np.empty(nv), np.empty((nv, nv))

    def fd(q, v, u):
        robot.forward_dynamics(q, v, u, out=qdd_out)

    def rnea(q, v, u):
        robot.inverse_dynamics(q, v, u, out=tau_out)

    def crba(q, v, u):
        robot.mass_matrix(q, out=M_out)

    states = list(zip(Q, V, U))
    for f in (fd, rnea, crba):   # warm-up
        for s in states[:min(n, 200)]:
            f(*s)
    ours = [('forward_dynamics', _time_per_call(fd, states, args.repeats)),
            ('inverse_dynamics', _time_per_call(rnea, states, args.repeats)),
            ('mass_matrix', _time_per_call(crba, states, args.repeats))]

    print(f'{args.urdf}: nq = {nq}, nv = {nv}, {n} random states, median of {args.repeats} repeats'
          f' (load incl. kernel compile or cache load: {t_load:.2f} s)')
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    maps = None
    if pin is not None:
        try:
            model = _pin_model(args.urdf, args.floating_base)
            maps = _pin_index_maps(robot, model)
            if maps is None:
                print('pinocchio: joint layout differs from mbd_ros (e.g. planar joints); '
                      'not compared')
        except Exception as exc:  # e.g. URDF extensions (spherical joints) Pinocchio cannot read
            print(f'pinocchio: cannot build the model ({type(exc).__name__}: {exc}); not compared')
    if maps is None:
        print(f'{"algorithm":<18}{"mbd_ros µs/call":>17}')
        for name, t in ours:
            print(f'{name:<18}{t:>17.2f}')
        return 0

    iq, iv = maps
    data = model.createData()
    pstates = [(q[iq].copy(), v[iv].copy(), u[iv].copy()) for q, v, u in states]
    reps = args.repeats
    theirs = [('aba', _time_per_call(lambda q, v, u: pin.aba(model, data, q, v, u), pstates, reps)),
              ('rnea', _time_per_call(lambda q, v, u: pin.rnea(model, data, q, v, u), pstates, reps)),
              ('crba', _time_per_call(lambda q, v, u: pin.crba(model, data, q), pstates, reps))]

    # Agreement on a few states. mbd_ros applies URDF damping/friction as passive joint forces
    # (tau_passive); Pinocchio does not, so add them on its side.
    errs = [0.0, 0.0, 0.0]
    for (q, v, u), (pq, pv, pu) in list(zip(states, pstates))[:20]:
        tau_p = (-np.asarray(robot.damping) * v
                 - np.asarray(robot.friction) * np.tanh(v / FRICTION_VELOCITY))[iv]
        errs[0] = max(errs[0], np.abs(robot.forward_dynamics(q, v, u)[iv]
                                      - pin.aba(model, data, pq, pv, pu + tau_p)).max())
        errs[1] = max(errs[1], np.abs(robot.inverse_dynamics(q, v, u)[iv]
                                      - (pin.rnea(model, data, pq, pv, pu) - tau_p)).max())
        M = pin.crba(model, data, pq)
        M = np.triu(M) + np.triu(M, 1).T   # Pinocchio fills the upper triangle
        errs[2] = max(errs[2], np.abs(robot.mass_matrix(q)[np.ix_(iv, iv)] - M).max())

    print(f'{"algorithm":<18}{"mbd_ros µs/call":>17}{"pinocchio":>11}{"µs/call":>9}'
          f'{"ratio":>8}{"max |diff|":>12}')
    for (name, t), (pname, tp), err in zip(ours, theirs, errs):
        print(f'{name:<18}{t:>17.2f}{pname:>11}{tp:>9.2f}{t / tp:>8.2f}{err:>12.2e}')
    print('ratio = mbd_ros time / pinocchio time (both called from Python, one state per call)')
    return 0


# ------------------------------------------------------------------------------------------------
# demo
# ------------------------------------------------------------------------------------------------
DEMO_Q0 = np.array([0.3, 0.9, -0.4, -1.2, 0.6, 0.8, 0.2])


def cmd_demo(args):
    from ..robot.build import load as build_robot
    from ..nodes.hil_demo import compiled_since, kernels_note, numba_cache_entries   # no rclpy
    path = Path(args.urdf) if args.urdf else sample_urdf()
    cache_before = numba_cache_entries()
    if not cache_before:   # a fresh clone: say so before the silent compilation
        print('first run: compiling the numba kernels (about 10 s on an idle 2-core machine; '
              'cached on disk for later runs) ...')
    t0 = time.perf_counter()
    robot = _load(path)
    t_load = time.perf_counter() - t0
    nv = robot.nv
    damping = np.asarray(robot.damping, dtype=float)
    friction = np.asarray(robot.friction, dtype=float)
    v0 = FRICTION_VELOCITY

    if robot.nq == len(DEMO_Q0):
        q = DEMO_Q0.copy()
    else:   # another robot: a reproducible random bent configuration
        q = np.asarray(robot.random_configuration(np.random.default_rng(1)), dtype=float)
    v = np.zeros(nv)
    tau = np.zeros(nv)   # passive: no drive torques; damping and friction come from passive_forces
    dt, t_end = args.dt, args.duration
    steps = int(round(t_end / dt))
    report_every = max(1, int(round(0.25 / dt)))

    body_int = _lie_joint_tree(robot)   # RK4's stage corrections, None on vector spaces

    def fd(q, v):
        return robot.forward_dynamics(q, v, tau)

    def dissipation(v):
        # power dissipated by the passive joint forces: -tau_passive . v
        return float(np.sum(damping * v * v + friction * v * np.tanh(v / v0)))

    # compile (or load from numba's cache) everything the loop calls, so the loop times steady state
    t0 = time.perf_counter()
    ke, pe = robot.kinetic_energy(q, v), robot.potential_energy(q)
    robot.integrate(q, v, dt)
    fd(q, v)
    t_load += time.perf_counter() - t0
    e0 = ke + pe
    dissipated = 0.0
    scale = 0.0        # largest energy moved around: max(KE), or the dissipated energy
    print(f'mbd_ros demo: {path.name}, nq = {robot.nq}, nv = {nv}, mass {robot.total_mass:.2f} kg; '
          f'passive fall (tau = 0) with joint damping and friction')
    print(f'RK4, dt = {dt * 1e3:g} ms, {t_end:g} s; joint limits are not modelled; '
          f'load and warm-up {t_load:.2f} s ({kernels_note(compiled_since(cache_before))})')
    header = (f'{"t [s]":>6} {"KE [J]":>10} {"PE [J]":>10} {"dissip. [J]":>12} '
              f'{"KE+PE+dis [J]":>14} {"drift [J]":>11}')
    print(header)
    print('-' * len(header))

    def row(t):
        print(f'{t:6.2f} {ke:10.5f} {pe:10.5f} {dissipated:12.5f} {ke + pe + dissipated:14.7f} '
              f'{ke + pe + dissipated - e0:11.3e}')

    row(0.0)
    n_fd = 0
    t_loop = time.perf_counter()
    for k in range(1, steps + 1):
        try:
            q, v, dissipated = _demo_rk4_step(robot, fd, dissipation, q, v, dissipated, dt,
                                              body_int)
        except ValueError as exc:   # a state grown until the dynamics overflow: a divergence
            if 'not finite' not in str(exc):
                raise
            print(f'mbd-ros demo: the simulation diverged at t = {k * dt:.3f} s: --dt {dt:g} s '
                  f'is too long a step for RK4 on this robot ({exc})', file=sys.stderr)
            return 1
        n_fd += 4
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            print(f'state became non-finite at t = {k * dt:.3f} s')
            return 1
        ke, pe = robot.kinetic_energy(q, v), robot.potential_energy(q)
        scale = max(scale, ke, dissipated)
        if k % report_every == 0 or k == steps:
            row(k * dt)
    elapsed = time.perf_counter() - t_loop

    drift = ke + pe + dissipated - e0
    rel = abs(drift) / scale if scale > 0 else abs(drift)
    print(f'energy balance: |KE + PE + dissipated - E0| / max(KE, dissipated) = {rel:.2e}')
    print(f'{n_fd} forward_dynamics calls in {elapsed:.2f} s of simulation loop '
          f'(incl. integrate and energies): '
          f'{n_fd / elapsed:,.0f} FD calls/s, {steps / elapsed:,.0f} RK4 steps/s '
          f'({steps * dt / elapsed:.1f}x real time)')
    return 0


def _lie_joint_tree(robot):
    """The joint tree's body_int for _demo_rk4_step's stage corrections, or None when every
    joint is a vector space (no correction to make)."""
    if all(t in VECTOR_SPACE_JOINTS for t in robot.joint_types):
        return None
    return np.array(robot.tree.body_int)


def _demo_rk4_step(robot, fd, dissipation, q, v, dissipated, dt, body_int=None):
    """One RK4 step of the demo on (q, v, dissipated energy); configurations advance with
    robot.integrate. With body_int (_lie_joint_tree: the robot has free, spherical or planar
    joints) each stage's velocity becomes the Lie algebra's k_i before it moves a
    configuration (Runge-Kutta-Munthe-Kaas, as robot.step does: kernels/lie_rk4.py; without it
    the step is second order there); the dissipation is evaluated at the stages' physical
    velocities. Returns the new (q, v, dissipated)."""
    accelerations, powers, algebra = [fd(q, v)], [dissipation(v)], [v]
    # stages 2, 3, 4: v_i = v + c a_(i-1), q_i = q (+) c k_(i-1); k_i from v_i with u = c k_(i-1)
    for c in (0.5 * dt, 0.5 * dt, dt):
        v_stage = v + c * accelerations[-1]
        accelerations.append(fd(robot.integrate(q, algebra[-1], c), v_stage))
        powers.append(dissipation(v_stage))
        if body_int is not None:   # (on vector-space joints k_i = v_i)
            from ..kernels.lie_rk4 import correct_stage_velocity
            v_stage = v_stage.copy()
            correct_stage_velocity(body_int, algebra[-1], c, v_stage)
        algebra.append(v_stage)
    return (robot.integrate(q, _rk4_mean(algebra), dt), v + dt * _rk4_mean(accelerations),
            dissipated + dt * _rk4_mean(powers))


def _rk4_mean(stages):
    """RK4's weighted mean (k1 + 2 k2 + 2 k3 + k4) / 6 of four stage values."""
    return (stages[0] + 2.0 * stages[1] + 2.0 * stages[2] + stages[3]) / 6.0


def cmd_analyze(args):
    """Grübler-Kutzbach and rank-based mobility, redundancy and singularity at one configuration."""
    robot = _load(args.urdf, floating_base=args.floating_base, closures=args.closures)
    print(robot.summary())
    q = robot.neutral() if args.q is None else np.array(args.q, dtype=float)
    if q.shape != (robot.nq,):
        raise ValueError(f'--q needs {robot.nq} numbers, got {q.shape[0]}')
    position, _ = robot.closure_residual(q)
    if position > 1e-9:
        print(f'closure residual {position:.3g} at the given q: assembling the loops first')
        q = robot.assemble(q)
    print(f'q = {np.array2string(q, precision=6)}')
    print(robot.analyze(q))
    return 0


# ------------------------------------------------------------------------------------------------
# codegen
# ------------------------------------------------------------------------------------------------
def cmd_codegen(args):
    """Generate and compile the robot-specific kernels into the on-disk cache (docs/codegen.md)."""
    t0 = time.perf_counter()
    robot = _load(args.urdf, floating_base=args.floating_base,
                  passive_forces=not args.no_passive_forces, codegen=True)
    t1 = time.perf_counter()
    robot.compile_all()
    t2 = time.perf_counter()
    print(f'{robot.model.name}: nq {robot.nq}, nv {robot.nv}; kernels in {robot.codegen_path}')
    print(f'  generated/loaded in {t1 - t0:.2f} s, compiled/loaded in {t2 - t1:.2f} s')
    return 0


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------
def build_parser():
    parser = argparse.ArgumentParser(
        prog='mbd-ros', description='Multibody dynamics of URDF robots (mbd_ros library).')
    sub = parser.add_subparsers(dest='command', required=True)

    p = sub.add_parser('info', help='print the model summary of a URDF robot')
    p.add_argument('urdf', help='URDF file')
    p.add_argument('--floating-base', action='store_true', help="add a free joint 'root_joint'")
    p.add_argument('--closures', default=None, help='closure YAML file of a closed-loop robot')
    p.set_defaults(func=cmd_info)

    p = sub.add_parser('bench', help='time FD, ID and the mass matrix (and Pinocchio if installed)')
    p.add_argument('urdf', help='URDF file')
    p.add_argument('--floating-base', action='store_true', help="add a free joint 'root_joint'")
    p.add_argument('--n', type=int, default=1000, help='calls per repeat (default 1000)')
    p.add_argument('--repeats', type=int, default=5,
                   help='repeats; the median is reported (default 5)')
    p.add_argument('--seed', type=int, default=0, help='seed of the random states')
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser('analyze', help='degrees of freedom and loop constraints of a closed-loop robot')
    p.add_argument('urdf', help='URDF file (the tree)')
    p.add_argument('--closures', required=True, help='closure YAML file (docs/formats.md)')
    p.add_argument('--floating-base', action='store_true', help="add a free joint 'root_joint'")
    p.add_argument('--q', type=float, nargs='+', default=None,
                   help='configuration to analyse (default: the neutral one, assembled)')
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser('codegen', help='generate and compile the robot-specific kernels into '
                                       'the cache (e.g. in a Docker or colcon build step)')
    p.add_argument('urdf', help='URDF file')
    p.add_argument('--floating-base', action='store_true', help="add a free joint 'root_joint'")
    p.add_argument('--no-passive-forces', action='store_true',
                   help='without the URDF joint damping and friction (load(passive_forces=False))')
    p.set_defaults(func=cmd_codegen)

    from ..nodes import hil_demo   # imports no rclpy; run() checks for it
    p = sub.add_parser('hil-demo', help='simulated arm + computed-torque controller over ROS 2 '
                                        'topics (both nodes and a reference publisher)')
    hil_demo.add_arguments(p)
    p.set_defaults(func=hil_demo.run)

    p = sub.add_parser('demo', help='drop the passive arm and check the energy balance')
    p.add_argument('urdf', nargs='?', default=None,
                   help=f'URDF file (default: the sample {DEFAULT_ROBOT} shipped with mbd_ros)')
    p.add_argument('--duration', type=float, default=2.0, help='simulated time in s (default 2)')
    p.add_argument('--dt', type=float, default=1e-3, help='RK4 step in s (default 0.001)')
    p.set_defaults(func=cmd_demo)

    # ---- flexible links (cli/flexible_demo.py) -----------------------------------------------
    from . import flexible_demo as flex_demo
    p = sub.add_parser('flex-demo', help='tip vibration of the flexible arm after a torque step '
                                         '(printed, and as a PNG with --plot)')
    flex_demo.add_arguments(p)
    p.set_defaults(func=flex_demo.run)
    # ---- end flexible links -----------------------------------------------------------------

    from ..simulation import report as sim_report   # [simulate] mbd-ros simulate ... --plot out.png
    p = sub.add_parser('simulate', help='passive simulation of any robot; --plot writes joint '
                                        'trajectories, energy balance, constraint residuals')
    sim_report.add_arguments(p)
    p.set_defaults(func=sim_report.cmd_simulate)

    # ---- ROS 2 interfaces without a PyPI wheel (mbd_ros/interfaces/build.py) ------------------
    from ..interfaces import build as interfaces_build
    p = sub.add_parser('build-interfaces', help='generate and compile tf2_msgs and control_msgs '
                                                '(no PyPI wheel) into this virtual environment')
    interfaces_build.add_arguments(p)
    p.set_defaults(func=interfaces_build.run)
    # [sweep] mbd-ros sweep SWEEP.yaml --out DIR (mbd_ros/sweep, docs/sweeps.md)
    from ..sweep import command as sweep_command
    p = sub.add_parser('sweep', help='parameter sweep on Dask: a YAML file of varied quantities '
                                     '-> Parquet rows, summary PNG, table')
    sweep_command.add_arguments(p)
    p.set_defaults(func=sweep_command.run)
    return parser


def main(argv=None):
    """The `mbd-ros` command: returns its exit code (130 when interrupted by Ctrl-C, with no
    traceback, whenever it comes: the import-time handler of nodes/quiet_start.py before this
    runs, KeyboardInterrupt after)."""
    from ..nodes.quiet_start import restore_cli_defaults
    restore_cli_defaults()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print('mbd-ros: interrupted', file=sys.stderr)
        return 130


def _main(argv):
    args = build_parser().parse_args(argv)
    if getattr(args, 'n', 1) < 1 or getattr(args, 'repeats', 1) < 1:
        build_parser().error('--n and --repeats must be at least 1')
    if getattr(args, 'n', 1) * getattr(args, 'repeats', 1) > MAX_CALLS:
        build_parser().error(f'--n x --repeats must be at most {MAX_CALLS:g} calls')
    has_dt = hasattr(args, 'dt')
    dt, duration = getattr(args, 'dt', 1.0), getattr(args, 'duration', 1.0)
    if not (0.0 < dt < math.inf and 0.0 < duration < math.inf):   # NaN fails too
        build_parser().error('--dt and --duration must be positive finite numbers of seconds')
    if duration / dt > MAX_STEPS:
        build_parser().error(f'--duration / --dt is {duration / dt:.3g} steps: at most '
                             f'{MAX_STEPS:g}' if has_dt else
                             f'--duration {duration:g} s: at most {MAX_STEPS:g} s')
    if has_dt and duration < dt * (1.0 - 1e-9):
        # (it ran no step and reported success; an outside audit)
        build_parser().error(f'--duration {duration:g} s is shorter than one --dt step '
                             f'({dt:g} s): nothing would be simulated')
    try:
        return args.func(args)
    except BrokenPipeError:   # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except FloatingPointError as exc:   # a simulation diverged (SimulationDiverged): a
        # runtime failure, said without a traceback
        print(f'mbd-ros {args.command}: {exc}', file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f'mbd-ros {args.command}: error: {exc}', file=sys.stderr)
        return 2

