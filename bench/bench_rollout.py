"""robot.rollout: cost per step as a multiple of one forward dynamics call, and batch scaling.

    PYTHONPATH=. python bench/bench_rollout.py [--steps 500] [--rounds 15] [--quick]
        [--robots NAME_PART] [--no-batch]

Per robot (the sample arm7, the four-bar closed loop, the delta3 parallel robot (held against
gravity, plus the noise), the double wishbone, the flexible arm;
the flexible arm's 1 ms rows take 6 integrator steps each, its default_max_step, and µs/step is
per integrator step):
one forward dynamics call (robot.forward_dynamics(q, v, tau, out=out) from Python, C entries
installed, at the states of the trajectory, timed as a loop of --steps calls interleaved with
the rest), then a rollout of --steps rows at dt = 1 ms per integrator (rk4: one RK4 step per row;
semi_implicit_euler; None: robot.step's default, RK4 substeps of default_max_step), and the
same steps as a Python loop of robot.step; per-step µs = call time / steps, ratio = per-step /
FD. Candidates are timed interleaved in one process (a new random order every round), by the
thread's CPU time (time.thread_time: the machine is shared, and wall-clock medians there moved by
2x between runs). Targets: RK4 <= 5.2 FD per step, semi-implicit Euler <= 1.3.

Batch scaling: N members of the arm7 (rk4), batch_threads 1 and 2, interleaved; speed-up =
time(1 thread) / time(2 threads).

Closed loops with drives= (the Plant's position drives, every 1-dof joint): the compiled rollout
(the loop-consistent compensation in numba) and the reference engine, rk4 and semi-implicit
Euler. Closed loops, semi-implicit Euler: also the rollout with robot.step's projection closing
the loops to ASSEMBLY_TOLERANCE (as before h19-euler; robot/constraints.py
EULER_CLOSING_TOLERANCE), interleaved.

Implicit integrators (implicit_euler, symplectic_euler; arm7, arm7 with a joint spring, the
flexible arm: implicit Euler only, the four-bar, the double wishbone with its strut, a force
element): per step µs of the compiled rollout and of the robot.step loop with the same
integrator, as multiples of one forward dynamics call.

Parts compiled since h19-trees (prescribed joints on the arm7, a mimic gripper, the flexible arm
with a spring-damper and a joint spring): per step µs of the compiled rollout (rk4 and
semi_implicit_euler; the flexible arm: RK4 in 6 substeps per 1 ms row), of the same robot
without the part (the part's own cost), and of the robot.step loop, as multiples of one forward
dynamics call from Python of that robot with the part (prescribed: with the accelerations
dict; these calls take robot.py's general path). The prescribed rollouts include sampling the
trajectories in Python (robot/rollout_prescribed.py), timed alone too.

Combinations (the parts together with drives, limits or the implicit integrators: the mimic
gripper with drives, with drives and limits, with implicit / symplectic Euler, with its
leading finger prescribed; the arm7 with two prescribed joints and
implicit / symplectic Euler; the flexible arm with a spring-damper and a joint spring with
drives and with implicit Euler): per step µs of the compiled rollout and of the reference engine
(robot.step repeated, with the Plant's drive terms in Python), as multiples of one forward
dynamics call of that robot from Python (prescribed: with the accelerations dict).

Prescribed joints on closed loops (h19-loopspre, kernels/rollout_loop_prescribed.py; select
them with --robots "closed loop:"): the four-bar with its crank prescribed, the four-bar and the
double wishbone on a shaker rig (a prismatic joint under the base prescribed to a road profile):
per step µs of the compiled rollout (rk4, semi_implicit_euler, symplectic_euler, and since
h19-loopimp implicit_euler; the trajectories' sampling included, and timed alone), of the same robot's compiled rollout without
prescribed joints (the four-bar on the rig: its rig joint free) and of the reference engine
(robot.step repeated), as multiples of one forward dynamics call from Python with the
accelerations dict (prescribed.solve's KKT).

Design check (kernels/rollout.py's docstring): a numba loop of 1000 ABA calls made directly
vs through the C entry's address (call_entry), per call.

Before timing, every compiled rollout is checked equal (bit for bit) to the reference engine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

C.add_repo_to_path()

import mbd_ros  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DT = 1e-3


def robots():
    """{name: a function loading the robot} (a closed loop is loaded twice: its twin runs the
    compiled rollout with robot.step's projections in Python, the "before")."""
    urdf, config = ROOT / "urdf", ROOT / "config"
    return {
        "arm7": lambda: mbd_ros.load(str(urdf / "arm7.urdf")),
        "fourbar (closed loop)": lambda: mbd_ros.load(
            str(urdf / "fourbar.urdf"), closures=str(config / "fourbar_closures.yaml")),
        "delta3 (closed loop, parallel robot)": lambda: mbd_ros.load(
            str(urdf / "delta3.urdf"), closures=str(config / "delta3_closures.yaml")),
        "double wishbone": lambda: mbd_ros.load(str(urdf / "double_wishbone.urdf"),
                                                closures=str(config / "double_wishbone.yaml"),
                                                forces=str(config / "double_wishbone.yaml")),
        "flexible arm": lambda: mbd_ros.load(str(urdf / "flexible_arm.urdf"),
                                             flexible=str(config / "flexible_arm.yaml")),
    }


def same_rollout(robot, a, b):
    """a equals b (the reference engine): bit for bit, or to round-off on closed loops (their
    projection in numba: kernels/rollout_projection.py, test/test_rollout_loops.py's bound)."""
    if not robot.closure_names:
        return np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    bound = 64 * np.finfo(float).eps * len(a[0])
    return all(np.abs(x - y).max() <= bound * max(1.0, np.abs(y).max()) for x, y in zip(a, b))


def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.CalledProcessError):
        return "unknown"


def start(robot, rng):
    if robot.closure_names:
        q = robot.assemble(robot.neutral())
        return q, np.zeros(robot.nv)
    return robot.random_configuration(rng), 0.1 * rng.standard_normal(robot.nv)


def cpu_interleaved(funcs, rounds, seed=0):
    """As common.time_calls_interleaved (one call per sample, a new random order every round),
    timed by this thread's CPU time (time.thread_time) rather than the wall clock: on a machine
    shared with other jobs the wall clock also counts the time the thread waited for a core.
    Returns {label: {"min": µs, "median": µs}}."""
    import random
    order = random.Random(seed)
    for f in funcs.values():
        f()
    labels = list(funcs)
    samples = {k: [] for k in labels}
    for _ in range(rounds):
        order.shuffle(labels)
        for k in labels:
            t0 = time.thread_time()
            funcs[k]()
            samples[k].append(time.thread_time() - t0)
    return {k: {"min": 1e6 * min(s), "median": 1e6 * float(np.median(s))}
            for k, s in samples.items()}


def timed_with_forward_dynamics(robot, funcs, rows_q, rows_v, tau, rounds, **options):
    """(fd, timings): `funcs` and one robot.forward_dynamics(q, v, tau, out=, **options) call
    from Python at each row's state (rows_q, rows_v, tau[k]), interleaved; fd the forward
    dynamics' median µs per call, timings the others' (cpu_interleaved)."""
    out = np.empty(robot.nv)
    steps = len(tau)

    def fd_loop():
        for k in range(steps):
            robot.forward_dynamics(rows_q[k], rows_v[k], tau[k], out=out, **options)
    funcs["forward dynamics"] = fd_loop
    timings = cpu_interleaved(funcs, rounds)
    return timings.pop("forward dynamics")["median"] / steps, timings


def bench_robot(name, make, steps, rounds, rng):
    """(FD µs, rows): per integrator step µs and its ratio to FD. A flexible robot's rows of
    1 ms take `sub` integrator steps (its default_max_step: the stiff elastic modes), counted as
    `sub` steps."""
    from mbd_ros.robot.integrators import default_max_step
    from mbd_ros.robot.rollout import RolloutProblem
    from mbd_ros.robot.rollout_compiled import engine_of, unsupported
    robot = make()
    robot.compile_c_calls()
    sub = int(np.ceil(DT / default_max_step(robot) - 1e-9))
    q, v = start(robot, rng)
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    if "delta3" in name:
        # the delta falls through singular configurations under noise alone (cond(G) 2e4 at
        # 0.27 s), where round-off times cond decides a projection and the engines part by
        # ~1e-7: held at its start against gravity, it stays at cond(G) < 9
        tau += robot.inverse_dynamics(q, v, np.zeros(robot.nv))
    out = np.empty(robot.nv)
    fd_call = robot.forward_dynamics
    # the states the rollouts pass through (the FD's cost depends on them: +12 % on the arm7's
    # fall against its start state, by the friction terms' and the trigonometry's arguments)
    rows_q, rows_v = robot.rollout(q, v, tau, DT, integrator="rk4", substeps=sub)
    rows_q, rows_v = np.ascontiguousarray(rows_q[:-1]), np.ascontiguousarray(rows_v[:-1])

    def fd_loop():   # `steps` forward dynamics calls from Python at the trajectory's states
        for k in range(steps):
            fd_call(rows_q[k], rows_v[k], tau[k], out=out)

    funcs, engines = {}, {}
    for integrator in ("rk4", "semi_implicit_euler", None):
        label = integrator or "None (default)"
        k = 1 if integrator is None else sub
        problem = RolloutProblem(robot, q, v, tau, DT, integrator, k, None, False, 1e3, None, None)
        engines[label] = "compiled" if unsupported(problem) is None else "reference"
        a = robot.rollout(q, v, tau, DT, integrator=integrator, substeps=k)
        b = robot.rollout(q, v, tau, DT, integrator=integrator, substeps=k, engine="reference")
        assert a.status == "ok" and same_rollout(robot, a, b), \
            f"{name} {label}: rollout differs from the reference engine"
        funcs[f"rollout {label}"] = (lambda i=integrator, k=k: robot.rollout(
            q, v, tau, DT, integrator=i, substeps=k))
        if robot.closure_names and integrator is not None:   # before: Python projections
            twin = make()
            twin.compile_c_calls()
            engine_of(twin).python_projection = True
            c = twin.rollout(q, v, tau, DT, integrator=integrator, substeps=k)
            assert c.status == "ok" and np.array_equal(c[0], b[0]) and np.array_equal(c[1], b[1])
            funcs[f"rollout {label} (Python projections)"] = (
                lambda i=integrator, k=k, twin=twin: twin.rollout(q, v, tau, DT, integrator=i,
                                                                  substeps=k))

    if robot.closure_names:   # semi-implicit Euler with robot.step's projection closing the
        # loops to ASSEMBLY_TOLERANCE, as before h19-euler (EULER_CLOSING_TOLERANCE: the same
        # engine and rollout, only the Gauss-Newton stop differs), interleaved with the rest
        import mbd_ros.robot.rollout_compiled as RC
        from mbd_ros.robot.constraints import ASSEMBLY_TOLERANCE

        def strict_euler():
            RC.closing_tolerance = lambda integrator: ASSEMBLY_TOLERANCE
            try:
                return robot.rollout(q, v, tau, DT, integrator="semi_implicit_euler",
                                     substeps=sub)
            finally:
                RC.closing_tolerance = closing_tolerance

        closing_tolerance = RC.closing_tolerance
        label = "semi_implicit_euler (closed to ASSEMBLY_TOLERANCE: before h19-euler)"
        engines[label] = "compiled"
        funcs[f"rollout {label}"] = strict_euler

    if robot.closure_names:   # drives on closed loops: compiled (kernels/rollout_loop_drives.py)
        # against the reference engine, which computed them in Python before
        from mbd_ros.robot.joint_map import scalar_dofs
        joints = list(scalar_dofs(robot))
        iq = [int(robot.idx_q[robot.joint_names.index(j)]) for j in joints]
        drives = {"joints": joints,
                  "position": q[iq] + 0.2 * np.sin(np.linspace(0.0, 3.0, steps))[:, None]}
        for integrator in ("rk4", "semi_implicit_euler"):
            a = robot.rollout(q, v, tau, DT, integrator=integrator, drives=drives,
                              engine="compiled")
            b = robot.rollout(q, v, tau, DT, integrator=integrator, drives=drives,
                              engine="reference")
            assert a.status == "ok" and same_rollout(robot, a, b), \
                f"{name} {integrator} drives: rollout differs from the reference engine"
            engines[f"{integrator} + drives"] = "compiled"
            engines[f"{integrator} + drives (reference engine)"] = "reference"
            funcs[f"rollout {integrator} + drives"] = (
                lambda i=integrator: robot.rollout(q, v, tau, DT, integrator=i, drives=drives,
                                                   engine="compiled"))
            funcs[f"rollout {integrator} + drives (reference engine)"] = (
                lambda i=integrator: robot.rollout(q, v, tau, DT, integrator=i, drives=drives,
                                                   engine="reference"))

    def step_loop():
        qq, vv = q, v
        for k in range(steps):
            for _ in range(sub):
                qq, vv = robot.step(qq, vv, tau[k], DT / sub, "rk4")
        robot.time = 0.0

    funcs["robot.step loop rk4"] = step_loop
    funcs["forward dynamics"] = fd_loop
    timings = cpu_interleaved(funcs, rounds)
    fd = timings.pop("forward dynamics")
    fd_median, fd_min = fd["median"] / steps, fd["min"] / steps
    rows = []
    for label, t in timings.items():
        per_step = t["median"] / (steps * sub)
        engine = engines.get(label.replace("rollout ", ""),
                             engines.get(label.replace("rollout ", "").replace(
                                 " (Python projections)", ""), "python loop"))
        rows.append((name, robot.nv, label, engine, per_step, per_step / fd_median,
                     t["min"] / (steps * sub) / fd_min))
    return (fd_median, fd_min), rows


IMPLICIT = ("implicit_euler", "symplectic_euler")


def implicit_robots():
    urdf, config = ROOT / "urdf", ROOT / "config"
    sprung = {"forces": [{"type": "joint_spring", "name": "elbow_spring", "joint": "joint_4",
                          "stiffness": 20.0, "damping": 0.5}]}
    return {
        "arm7": mbd_ros.load(str(urdf / "arm7.urdf")),
        "sprung arm7 (force element)": mbd_ros.load(str(urdf / "arm7.urdf"), forces=sprung),
        "flexible arm": mbd_ros.load(str(urdf / "flexible_arm.urdf"),
                                     flexible=str(config / "flexible_arm.yaml")),
        "fourbar (closed loop)": mbd_ros.load(str(urdf / "fourbar.urdf"),
                                              closures=str(config / "fourbar_closures.yaml")),
        "double wishbone": mbd_ros.load(str(urdf / "double_wishbone.urdf"),
                                        closures=str(config / "double_wishbone.yaml"),
                                        forces=str(config / "double_wishbone.yaml")),
    }


def bench_implicit(name, robot, steps, rounds, rng):
    """The implicit integrators (kernels/rollout_implicit.py): per step µs of the compiled
    rollout and of the robot.step loop with the same integrator, and FD µs from Python. (The
    flexible arm's symplectic Euler iteration does not converge at 1 ms: implicit Euler only.)
    Before timing, the compiled rollout's first row is checked against robot.step (round-off:
    not bit for bit, test/test_rollout_implicit.py)."""
    robot.compile_c_calls()
    q, v = start(robot, rng)
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    rows_q, rows_v = robot.rollout(q, v, tau, DT)   # the states passed (FD cost depends on q)
    funcs = {}
    integrators = IMPLICIT if not robot.elastic_names else ("implicit_euler",)
    for integrator in integrators:
        result = robot.rollout(q, v, tau, DT, integrator=integrator, engine="compiled")
        assert result.status == "ok", f"{name} {integrator}: {result.message}"
        q1, v1 = robot.step(q, v, tau[0], DT, integrator)
        robot.time = 0.0
        assert np.abs(result[1][1] - v1).max() <= 1e-12 * max(1.0, np.abs(v1).max()), \
            f"{name} {integrator}: the first row differs from robot.step"
        funcs[f"rollout {integrator}"] = (lambda i=integrator: robot.rollout(
            q, v, tau, DT, integrator=i, engine="compiled"))

        def step_loop(i=integrator):
            qq, vv = q, v
            for k in range(steps):
                qq, vv = robot.step(qq, vv, tau[k], DT, i)
            robot.time = 0.0
        funcs[f"robot.step loop {integrator}"] = step_loop

    fd, timings = timed_with_forward_dynamics(robot, funcs, rows_q, rows_v, tau, rounds)
    rows = [(name, robot.nv, label, t["median"] / steps, t["median"] / steps / fd)
            for label, t in timings.items()]
    return fd, rows


GRIPPER = str(ROOT / "urdf" / "gripper_mimic.urdf")   # a gripper, finger_b mimics finger_a


def sine(amplitude, omega):
    def trajectory(t):
        s, c = np.sin(omega * t), np.cos(omega * t)
        return amplitude * s, amplitude * omega * c, -amplitude * omega * omega * s
    return trajectory


def part_robots():
    """{name: (robot with the part, the same robot without it, prescribed or None,
    substeps per 1 ms row)}."""
    urdf, config = ROOT / "urdf", ROOT / "config"
    arm7 = str(urdf / "arm7.urdf")
    flexible = dict(flexible=str(config / "flexible_arm.yaml"))
    return {
        "arm7, 2 prescribed joints": (mbd_ros.load(arm7), mbd_ros.load(arm7),
                                      {"joint_2": sine(0.4, 3.0), "joint_5": sine(-0.3, 5.0)}, 1),
        "gripper, 1 mimic joint": (mbd_ros.load(GRIPPER, mimic=True), mbd_ros.load(GRIPPER), None,
                                   1),
        "flexible arm, spring-damper + joint spring": (
            mbd_ros.load(str(urdf / "flexible_arm.urdf"), forces=str(
                config / "flexible_arm_forces.yaml"), **flexible),
            mbd_ros.load(str(urdf / "flexible_arm.urdf"), **flexible), None, 6),
    }


def bench_part(name, robot, bare, prescribed, sub, steps, rounds, rng):
    """(FD µs, rows (label, µs/step, FD per step)) of one part (module docstring). Every
    compiled rollout is checked against the reference engine first (bit for bit; the mimic
    couplings to round-off: test/test_rollout_mimic.py)."""
    from mbd_ros.robot.rollout import RolloutProblem
    from mbd_ros.robot.rollout_prescribed import prescribed_table
    for r in (robot, bare):
        r.compile_c_calls()
    q, v = robot.random_configuration(rng), 0.1 * rng.standard_normal(robot.nv)
    if robot.mimic_joints:
        q, v = robot.apply_mimic(q, v)
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    funcs = {}
    for integrator in ("rk4", "semi_implicit_euler"):
        h = DT / sub
        a = robot.rollout(q, v, tau, DT, integrator=integrator, substeps=sub,
                          prescribed=prescribed, engine="compiled")
        b = robot.rollout(q, v, tau, DT, integrator=integrator, substeps=sub,
                          prescribed=prescribed, engine="reference")
        assert a.status == b.status == "ok", (name, integrator, a.message, b.message)
        bound = 0.0 if not robot.mimic_joints else 1e-12 * max(1.0, np.abs(b[1]).max())
        assert all(np.abs(x - y).max() <= bound for x, y in zip(a, b)), (name, integrator)
        funcs[f"rollout {integrator}"] = (lambda i=integrator: robot.rollout(
            q, v, tau, DT, integrator=i, substeps=sub, prescribed=prescribed, engine="compiled"))
        funcs[f"without the part: rollout {integrator}"] = (lambda i=integrator: bare.rollout(
            q, v, tau, DT, integrator=i, substeps=sub, engine="compiled"))
    if prescribed:
        problem = RolloutProblem(robot, q, v, tau, DT, "rk4", sub, None, False, 1e3, prescribed,
                                 0.0)
        funcs["sampling the trajectories (rk4)"] = lambda: prescribed_table(problem, 1)

    def step_loop():
        qq, vv = q, v
        for k in range(steps):
            for _ in range(sub):
                qq, vv = robot.step(qq, vv, tau[k], h, "rk4", prescribed=prescribed)
        robot.time = 0.0
    funcs["robot.step loop rk4"] = step_loop
    rows_q, rows_v = robot.rollout(q, v, tau, DT, integrator="rk4", substeps=sub,
                                   prescribed=prescribed)
    accelerations = {name: 0.0 for name in prescribed} if prescribed else None
    fd, timings = timed_with_forward_dynamics(robot, funcs, rows_q, rows_v, tau, rounds,
                                              prescribed=accelerations)
    rows = [(label, t["median"] / (steps * sub), t["median"] / (steps * sub) / fd)
            for label, t in timings.items()]
    return fd, rows


def rig_robot(urdf, root, closures, forces=None):
    """The sample `urdf` on a shaker rig: a prismatic joint `rig` (z, +-1 m) between a new root
    link and its root link `root` (as test/test_rollout_loop_prescribed.py builds it)."""
    import tempfile
    text = (ROOT / "urdf" / urdf).read_text()
    head = text.index(">", text.index("<robot")) + 1
    rig = ('<link name="rig_frame"/><joint name="rig" type="prismatic"><parent link="rig_frame"/>'
           f'<child link="{root}"/><axis xyz="0 0 1"/>'
           '<limit effort="1000" velocity="10" lower="-1" upper="1"/></joint>')
    config = ROOT / "config"
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / urdf
        path.write_text(text[:head] + rig + text[head:])
        return mbd_ros.load(str(path), closures=str(config / closures),
                            forces=str(config / forces) if forces else None)


def loop_prescribed_cases():
    """{name: (robot, prescribed)}: prescribed joints on closed loops (module docstring)."""
    config = ROOT / "config"
    fourbar = mbd_ros.load(str(ROOT / "urdf" / "fourbar.urdf"),
                           closures=str(config / "fourbar_closures.yaml"))
    return {
        "closed loop: four-bar, crank prescribed": (fourbar, {"crank_joint": sine(0.4, 3.0)}),
        "closed loop: four-bar on a shaker rig": (
            rig_robot("fourbar.urdf", "ground", "fourbar_closures.yaml"),
            {"rig": sine(0.02, 12.0)}),
        "closed loop: double wishbone on a shaker rig": (
            rig_robot("double_wishbone.urdf", "chassis", "double_wishbone.yaml",
                      "double_wishbone.yaml"), {"rig": sine(0.01, 25.0)}),
    }


def bench_loop_prescribed(name, robot, prescribed, steps, rounds, rng):
    """(FD µs, rows (label, µs/step, FD per step)) of prescribed joints on a closed loop. Every
    compiled rollout is checked against the reference engine first (to 1e-9: the KKT solves
    differ by round-off times its condition, test/test_rollout_loop_prescribed.py)."""
    constraints = robot._constraints
    fixed = constraints.dofs(list(prescribed))
    q = robot.assemble(robot.neutral())
    v = 0.5 * rng.standard_normal(robot.nv)
    for joint, trajectory in prescribed.items():
        j = robot.joint_names.index(joint)
        q[int(robot.idx_q[j])], v[int(robot.idx_v[j])], _ = trajectory(0.0)
    q, v = constraints.project_state(q, v, fixed=fixed)
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    funcs = {}
    for integrator in ("rk4", "semi_implicit_euler", "symplectic_euler", "implicit_euler"):
        a = robot.rollout(q, v, tau, DT, integrator=integrator, prescribed=prescribed, t0=0.0,
                          engine="compiled")
        b = robot.rollout(q, v, tau, DT, integrator=integrator, prescribed=prescribed, t0=0.0,
                          engine="reference")
        assert a.status == b.status == "ok", (name, integrator, a.message, b.message)
        # (symplectic Euler: its iteration stop and the M(q+) solve, the test's bound; implicit
        # Euler: its forward differences of step 1e-7 amplify the KKT's round-off, the test
        # compares row by row)
        tolerance = {"symplectic_euler": 1e-7, "implicit_euler": 1e-5}.get(integrator, 1e-9)
        assert all(np.abs(x - y).max() <= tolerance * max(1.0, np.abs(y).max())
                   for x, y in zip(a, b)), (name, integrator)
        funcs[f"rollout {integrator}"] = (lambda i=integrator: robot.rollout(
            q, v, tau, DT, integrator=i, prescribed=prescribed, t0=0.0, engine="compiled"))
        funcs[f"without prescribed joints: rollout {integrator}"] = (
            lambda i=integrator: robot.rollout(q, v, tau, DT, integrator=i, engine="compiled"))
        funcs[f"reference engine {integrator}"] = (lambda i=integrator: robot.rollout(
            q, v, tau, DT, integrator=i, prescribed=prescribed, t0=0.0, engine="reference"))
    from mbd_ros.robot.rollout import RolloutProblem
    from mbd_ros.robot.rollout_prescribed import prescribed_table
    problem = RolloutProblem(robot, q, v, tau, DT, "rk4", 1, None, False, 1e3, prescribed, 0.0)
    funcs["sampling the trajectories (rk4)"] = lambda: prescribed_table(problem, 1)
    rows_q, rows_v = robot.rollout(q, v, tau, DT, integrator="rk4", prescribed=prescribed)
    fd, timings = timed_with_forward_dynamics(robot, funcs, rows_q, rows_v, tau, rounds,
                                              prescribed={joint: 0.0 for joint in prescribed})
    rows = [(label, t["median"] / steps, t["median"] / steps / fd)
            for label, t in timings.items()]
    return fd, rows


def combo_cases(steps):
    """{robot name: (robot, start adjustment or None, prescribed or None, substeps per row,
    {label: rollout options})}: the combinations of bench_combos (module docstring)."""
    urdf, config = ROOT / "urdf", ROOT / "config"
    line = np.sin(np.linspace(0.0, 1.5, steps))[:, None]

    def gripper_drives(q):
        robot = gripper
        iq = [int(robot.idx_q[robot.joint_names.index(j)]) for j in ("slide", "finger_a")]
        return {"joints": ["slide", "finger_a"], "position": q[iq] + 0.3 * line}

    def arm_drives(q):
        return {"joints": ["shoulder", "elbow"], "position": q[:2] + 0.5 * line}

    gripper = mbd_ros.load(GRIPPER, mimic=True)
    flexible = mbd_ros.load(str(urdf / "flexible_arm.urdf"),
                            flexible=str(config / "flexible_arm.yaml"),
                            forces=str(config / "flexible_arm_forces.yaml"))
    return {
        "gripper, 1 mimic joint": (gripper, None, 1, {
            "rk4 + drives": dict(integrator="rk4", drives=gripper_drives),
            "rk4 + drives + limits": dict(integrator="rk4", drives=gripper_drives, limits=True),
            "semi_implicit_euler + drives": dict(integrator="semi_implicit_euler",
                                                 drives=gripper_drives),
            "implicit_euler": dict(integrator="implicit_euler"),
            "symplectic_euler": dict(integrator="symplectic_euler")}),
        "gripper, finger_a prescribed (its follower coupled)": (
            mbd_ros.load(GRIPPER, mimic=True), {"finger_a": sine(0.3, 6.0)}, 1, {
                "rk4": dict(integrator="rk4"),
                "semi_implicit_euler": dict(integrator="semi_implicit_euler")}),
        "arm7, 2 prescribed joints": (
            mbd_ros.load(str(urdf / "arm7.urdf")),
            {"joint_2": sine(0.4, 3.0), "joint_5": sine(-0.3, 5.0)}, 1, {
                "implicit_euler": dict(integrator="implicit_euler"),
                "symplectic_euler": dict(integrator="symplectic_euler")}),
        "flexible arm, spring-damper + joint spring": (flexible, None, 6, {
            "rk4 + drives": dict(integrator="rk4", drives=arm_drives),
            "semi_implicit_euler + drives": dict(integrator="semi_implicit_euler",
                                                 drives=arm_drives),
            "implicit_euler": dict(integrator="implicit_euler")}),
    }


def bench_combos(name, robot, prescribed, sub, cases, steps, rounds, rng):
    """(FD µs, rows (label, engine, µs/step, FD per step)) of one robot's combinations: the
    auto engine's rollout (which engine `unsupported` picks) and the reference engine, per
    integrator step. Before timing both must finish ("ok") and their first rows agree to 1e-12
    relative (the mimic solve differs from robot.step by round-off: the tests bound it), 1e-7
    with the implicit integrators (their forward-difference Jacobians amplify a one-ulp
    difference by ~1/1e-7 from the second step on; a flexible arm's row is 6 steps)."""
    from mbd_ros.robot.rollout import RolloutProblem
    from mbd_ros.robot.rollout_compiled import unsupported
    robot.compile_c_calls()
    from mbd_ros.robot.rollout_plant import PlantLimits
    limits = PlantLimits(robot)
    for _ in range(1000):
        # the cases with limits=True refuse a q0 beyond them; a follower r q_l + o of a
        # random leader can be beyond its own limits: draw again
        q, v = robot.random_configuration(rng), 0.1 * rng.standard_normal(robot.nv)
        if robot.mimic_joints:
            q, v = robot.apply_mimic(q, v)
        if not limits.violations(q).any():
            break
    else:
        raise RuntimeError(f"{name}: no random configuration within the position limits")
    if robot.elastic_names:
        q[:2] = [0.3, -0.5]
    tau = 0.1 * rng.standard_normal((steps, robot.nv))
    funcs, engines = {}, {}
    for label, options in cases.items():
        options = dict(options, substeps=sub, prescribed=prescribed)
        if callable(options.get("drives")):
            options["drives"] = options["drives"](q)
        problem = RolloutProblem(robot, q, v, tau, DT, options["integrator"], sub,
                                 options.get("drives"), options.get("limits", False), 1e3,
                                 prescribed, 0.0)
        engines[label] = "compiled" if unsupported(problem) is None else "reference"
        a = robot.rollout(q, v, tau, DT, **options)
        b = robot.rollout(q, v, tau, DT, engine="reference", **options)
        assert a.status == b.status == "ok", (name, label, a.message, b.message)
        tolerance = 1e-7 if options["integrator"] in IMPLICIT else 1e-12
        for x, y in zip(a, b):
            assert np.abs(x[1] - y[1]).max() <= tolerance * max(1.0, np.abs(y[1]).max()), \
                (name, label, "the first row differs from the reference engine")
        funcs[label] = (lambda o=options: robot.rollout(q, v, tau, DT, **o))
        funcs[f"{label} (reference engine)"] = (
            lambda o=options: robot.rollout(q, v, tau, DT, engine="reference", **o))
    rows_q, rows_v = robot.rollout(q, v, tau, DT, integrator="rk4", substeps=sub,
                                   prescribed=prescribed)
    accelerations = {joint: 0.0 for joint in prescribed} if prescribed else None
    fd, timings = timed_with_forward_dynamics(robot, funcs, rows_q, rows_v, tau, rounds,
                                              prescribed=accelerations)
    rows = [(label, engines.get(label, "reference"), t["median"] / (steps * sub),
             t["median"] / (steps * sub) / fd) for label, t in timings.items()]
    return fd, rows


def bench_batch(n, steps, rounds, rng):
    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    q0 = np.stack([robot.random_configuration(rng) for _ in range(n)])
    v0 = 0.1 * rng.standard_normal((n, robot.nv))
    tau = 0.1 * rng.standard_normal((n, steps, robot.nv))
    one = robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=1)
    two = robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=2)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])
    t = C.time_calls_interleaved(
        {"1 thread": lambda: robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=1),
         "2 threads": lambda: robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=2)},
        rounds=rounds)
    # process CPU time over wall time of 2-thread calls: ~2 when both threads compute at once
    # (GIL-free), ~1 when they take turns; a loaded machine lowers it (other processes' CPU)
    wall = cpu = 0.0
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        robot.rollout(q0, v0, tau, DT, integrator="rk4", batch_threads=2)
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
    return t["1 thread"]["median"], t["2 threads"]["median"], cpu / wall


def bench_design(rounds):
    """µs per ABA call in a numba loop: direct kernel call vs the C entry by address."""
    from numba import njit

    from mbd_ros import fastcall
    from mbd_ros.kernels.aba import forward_dynamics
    from mbd_ros.kernels.entry_call import call_entry

    @njit(nogil=True)
    def direct(body_int, body_float, work, q, v, tau, out, n):
        s = 0
        for _ in range(n):
            s += forward_dynamics(body_int, body_float, work, q, v, tau, out)
        return s

    @njit(nogil=True)
    def by_address(address, bound, dims, q, v, tau, out, n):
        s = 0
        for _ in range(n):
            s += call_entry(address, bound, dims, q, v, tau, out)
        return s

    robot = mbd_ros.load(str(ROOT / "urdf" / "arm7.urdf"))
    tree = robot.tree
    function, bound, dims, _, _ = tree.c_entry("forward_dynamics")
    work = np.array(bound[2])
    bound = (bound[0], bound[1], work)
    pointers = np.array([x.ctypes.data for x in bound], dtype=np.int64)
    dims = np.array(dims, dtype=np.int64)
    address = fastcall.c_entry(function).address
    rng = np.random.default_rng(0)
    q, v, tau, out = robot.random_configuration(rng), rng.standard_normal(7), \
        rng.standard_normal(7), np.empty(7)
    n = 1000
    direct(tree.body_int, tree.body_float, work, q, v, tau, out, 1)
    by_address(address, pointers, dims, q, v, tau, out, 1)
    t = C.time_calls_interleaved(
        {"direct": lambda: direct(tree.body_int, tree.body_float, work, q, v, tau, out, n),
         "address": lambda: by_address(address, pointers, dims, q, v, tau, out, n)},
        rounds=rounds, pause=0.0)
    return t["direct"]["median"] / n, t["address"]["median"] / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--robots", default="", help="only robots whose name contains this")
    parser.add_argument("--no-batch", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds, args.batch = 200, 5, 16
    rng = np.random.default_rng(1)
    print(f"load average before: {os.getloadavg()}")
    print(f"CPU (lscpu): {lscpu_model()}; {C.cpu_model()}")
    print(f"steps {args.steps}, dt {DT} s, rounds {args.rounds} (medians)\n")
    direct, address = bench_design(args.rounds)
    print(f"design: ABA in a numba loop, direct {direct:.3f} µs/call, by C-entry address "
          f"{address:.3f} µs/call\n")
    print("| robot | nv | call | engine | µs/step (median) | FD per step (median) | "
          "FD per step (min) |")
    print("|---|---:|---|---|---:|---:|---:|")
    for name, make in robots().items():
        if args.robots not in name:
            continue
        (fd, fd_min), rows = bench_robot(name, make, args.steps, args.rounds, rng)
        print(f"| {name} | {rows[0][1]} | forward dynamics (Python call) | | {fd:.3f} | 1 | 1 |")
        for row in rows:
            print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]:.3f} | {row[5]:.2f} | "
                  f"{row[6]:.2f} |")
    print("\nimplicit integrators (implicit_euler: 1 + 2 nv forward dynamics per step; "
          "symplectic_euler: per fixed-point iteration one forward dynamics and two mass "
          "matrices, plus two mass matrices and a solve)\n")
    print("| robot | nv | call | µs/step (median) | FD per step (median) |")
    print("|---|---:|---|---:|---:|")
    for name, robot in implicit_robots().items():
        if args.robots not in name:
            continue
        fd, rows = bench_implicit(name, robot, args.steps, args.rounds, rng)
        print(f"| {name} | {robot.nv} | forward dynamics (Python call) | {fd:.3f} | 1 |")
        for row in rows:
            print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]:.3f} | {row[4]:.2f} |")
    print("\nparts compiled since h19-trees (µs per integrator step; FD: that robot's "
          "forward dynamics from Python with the part)\n")
    print("| robot | call | µs/step (median) | FD per step (median) |")
    print("|---|---|---:|---:|")
    for name, (robot, bare, prescribed, sub) in part_robots().items():
        if args.robots not in name:
            continue
        fd, rows = bench_part(name, robot, bare, prescribed, sub, args.steps, args.rounds, rng)
        print(f"| {name} | forward dynamics (Python call) | {fd:.3f} | 1 |")
        for label, per_step, ratio in rows:
            print(f"| {name} | {label} | {per_step:.3f} | {ratio:.2f} |")
    print("\nprescribed joints on closed loops (µs per step; FD: that robot's forward dynamics "
          "from Python with the prescribed accelerations)\n")
    print("| robot | call | µs/step (median) | FD per step (median) |")
    print("|---|---|---:|---:|")
    for name, (robot, prescribed) in loop_prescribed_cases().items():
        if args.robots not in name:
            continue
        fd, rows = bench_loop_prescribed(name, robot, prescribed, args.steps, args.rounds, rng)
        print(f"| {name} | forward dynamics (Python call) | {fd:.3f} | 1 |")
        for label, per_step, ratio in rows:
            print(f"| {name} | {label} | {per_step:.3f} | {ratio:.2f} |")
    print("\ncombinations (µs per integrator step; FD: that robot's forward dynamics from "
          "Python with the part; engine: what robot.rollout's auto engine runs)\n")
    print("| robot | call | engine | µs/step (median) | FD per step (median) |")
    print("|---|---|---|---:|---:|")
    for name, (robot, prescribed, sub, cases) in combo_cases(args.steps).items():
        if args.robots not in name:
            continue
        fd, rows = bench_combos(name, robot, prescribed, sub, cases, args.steps, args.rounds,
                                rng)
        print(f"| {name} | forward dynamics (Python call) | | {fd:.3f} | 1 |")
        for label, engine, per_step, ratio in rows:
            print(f"| {name} | {label} | {engine} | {per_step:.3f} | {ratio:.2f} |")
    if args.no_batch:
        print(f"load average after: {os.getloadavg()}")
        return
    one, two, busy = bench_batch(args.batch, args.steps, args.rounds, rng)
    print(f"\nbatch arm7 rk4, N = {args.batch}, {args.steps} steps: 1 thread {one / 1e3:.2f} ms, "
          f"2 threads {two / 1e3:.2f} ms, speed-up {one / two:.2f}x; 2 threads: process CPU / "
          f"wall = {busy:.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
