"""Closed loops on a flexible tree in the compiled rollouts (kernels/rollout_flexible_loops.py):
the stages run the compiled dense solve (kernels/flexible_loop_dynamics.py, robot.forward_dynamics'
own), robot.step's projection runs in numba, and the rollout equals the reference engine
(robot.step repeated).

Bounds: RK4 rows that need no projection run the very kernel robot.step runs, in the same order:
equal bit for bit. A projection (every semi-implicit Euler step) solves G^+ g, M^-1 G^T and
(G M^-1 G^T)^+ G v by Cholesky and a pivoted QR where numpy uses LU, lstsq and pinv: round-off
amplified by cond(M) and cond(G M^-1 G^T) per projection, 64 eps (cond(M) + cond(K)) |v| each,
summed over the rows (the differences are not damped: the mechanism is undamped)."""
import warnings

import numpy as np
import pytest

import mbd_ros
from mbd_ros.kernels import rollout_flexible_loops as RFL
from mbd_ros.kernels.flexible_loop_part import FL_DRIVES, flexible_loops_forward_dynamics
from mbd_ros.kernels import rollout_loop_drives as D
from mbd_ros.robot import constraints as C
from mbd_ros.robot.rollout import RolloutDiverged, RolloutProblem
from mbd_ros.robot.rollout_compiled import unsupported
from mbd_ros.robot.rollout_flexible_loops import flexible_loop_arrays
from test_flexible_loop_dynamics import REPO, conditions, sample_fourbar, states
from test_flexible_loops import fourbar
from test_rollout_loop_prescribed import counted
from test_rollout_prescribed import sine

EPS = np.finfo(float).eps
DT = 1e-4
ROWS = 200


def problem_of(robot, integrator, steps=ROWS, seed=0):
    """From the assembled sample at rest, a smooth crank torque (N m) and a kick of the modes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", C.LoopResidualWarning)
        q0 = robot.assemble(robot.neutral())
    v0 = np.zeros(robot.nv)
    v0[robot.elastic_v_indices] = 1e-3 * np.random.default_rng(seed).standard_normal(
        len(robot.elastic_v_indices))
    v0 = robot.project_velocity(q0, v0)
    tau = np.zeros((steps, robot.nv))
    tau[:, 0] = 0.8 * np.sin(np.arange(steps) * 0.05)
    return q0, v0, tau


@pytest.mark.parametrize("make", [fourbar, sample_fourbar], ids=["test_fourbar", "sample"])
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler"])
def test_compiled_rollout_equals_robot_steps(make, integrator, monkeypatch):
    """The engine runs it (unsupported() is None; neither numpy's solve nor the Python projection
    is called) and equals the reference engine (RK4 bit for bit where no row projects, else
    within the module's bound); every row's loops closed to PROJECTION_TOLERANCE."""
    robot = make()
    q0, v0, tau = problem_of(robot, integrator)
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, None, False, 100.0, None,
                             None)
    assert unsupported(problem) is None
    projections = counted(monkeypatch, C.Constraints, "project_state")
    numpy_solves = counted(monkeypatch, C.Constraints, "_kkt")
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="reference")
    assert reference.status == "ok"
    python_projections = len(projections)
    if integrator == "semi_implicit_euler":
        assert python_projections >= ROWS // 2      # (it opens the loops every step)
    projections.clear()
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    assert projections == [] and numpy_solves == []
    for q, v in zip(result.Q, result.V):
        position, velocity = robot.closure_residual(q, v)
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    if python_projections == 0:
        np.testing.assert_array_equal(result.Q, reference.Q)
        np.testing.assert_array_equal(result.V, reference.V)
        return
    worst = max(sum(conditions(robot, q)) for q in reference.Q[::20])
    scale = max(1.0, np.abs(reference.V).max())
    bound = 64 * EPS * worst * scale * (len(tau) + 1)
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=bound)
    np.testing.assert_allclose(result.V, reference.V, rtol=0, atol=bound)
    print(f"{make.__name__} {integrator}: |dQ| {np.abs(result.Q - reference.Q).max():.2g}, "
          f"|dV| {np.abs(result.V - reference.V).max():.2g}, bound {bound:.2g}, "
          f"{python_projections} projections")


def test_projection_kernel_equals_project_state():
    """close_flexible_loops after a semi-implicit Euler step (loops open by ~1e-8) equals
    Constraints.project_state with robot.step's Euler stop, within 64 eps (cond(M) + cond(K))
    |v| (one projection); a closed state is left alone (0)."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, "semi_implicit_euler", steps=40)
    reference = robot.rollout(q0, v0, tau, DT, integrator="rk4", engine="reference")
    part = flexible_loop_arrays(robot)
    for q, v in zip(reference.Q[5::5], reference.V[5::5]):
        state = (q.copy(), v.copy())
        assert RFL.close_flexible_loops(part, state[0], state[1], C.PROJECTION_TOLERANCE,
                                        C.ASSEMBLY_TOLERANCE) == 0
        np.testing.assert_array_equal(state[0], q)
        qdd = robot.forward_dynamics(q, v, tau[0])
        v_open = v + 1e-3 * qdd
        q_open = robot.integrate(q, v_open, 1e-3)
        q_ref, v_ref = robot._constraints.project_state(q_open, v_open,
                                                        tolerance=C.EULER_CLOSING_TOLERANCE)
        q_new, v_new = q_open.copy(), v_open.copy()
        assert RFL.close_flexible_loops(part, q_new, v_new, C.PROJECTION_TOLERANCE,
                                        C.EULER_CLOSING_TOLERANCE) == 1
        cond_m, cond_k = conditions(robot, q_ref)
        bound = 64 * EPS * (cond_m + cond_k) * max(1.0, np.abs(v_open).max())
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=bound)
        np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=bound)


def test_batch_equals_single_rollouts():
    """Two members on two threads (each its own part: private workspaces) equal the single
    rollouts bit for bit."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, "semi_implicit_euler", steps=60)
    tau2 = tau.copy()
    tau2[:, 0] *= -1.5
    single = [robot.rollout(q0, v0, t, DT, integrator="semi_implicit_euler") for t in (tau, tau2)]
    batch = robot.rollout(np.stack([q0, q0]), np.stack([v0, v0]), np.stack([tau, tau2]), DT,
                          integrator="semi_implicit_euler", batch_threads=2)
    for i, one in enumerate(single):
        np.testing.assert_array_equal(batch.Q[i], one.Q)
        np.testing.assert_array_equal(batch.V[i], one.V)


def test_a_batch_with_drives_equals_single_rollouts():
    """Two members with different drive references on two threads (each thread its own part:
    the partition flags and the compensation's workspace are private) equal the single
    rollouts bit for bit."""
    robot = sprung_sample()
    q0, v0, tau, drives = drives_problem(robot, 60)
    other = dict(drives, position=drives["position"][::-1].copy(),
                 velocity=-drives["velocity"][::-1].copy())
    single = [robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", drives=d)
              for d in (drives, other)]
    both = dict(drives, position=np.stack([drives["position"], other["position"]]),
                velocity=np.stack([drives["velocity"], other["velocity"]]))
    batch = robot.rollout(np.stack([q0, q0]), np.stack([v0, v0]), np.stack([tau, tau]), DT,
                          integrator="semi_implicit_euler", drives=both, batch_threads=2)
    assert list(batch.status) == [0, 0]
    for i, one in enumerate(single):
        assert one.status == "ok"
        np.testing.assert_array_equal(batch.Q[i], one.Q)
        np.testing.assert_array_equal(batch.V[i], one.V)
    assert np.abs(single[0].Q - single[1].Q).max() > 1e-3


def test_what_stays_in_python_says_why():
    """The combinations the engine does not compile (here a prescribed crank on the flexible
    loops) fall back to the reference engine, which still runs them, and say why when
    engine="compiled" is asked for."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, "rk4", steps=5)
    prescribed = {"crank_joint": sine(0.05, 3.0, float(q0[0]))}
    reason = "prescribed joints on closed loops of a flexible tree"
    result = robot.rollout(q0, v0, tau, DT, integrator="rk4", prescribed=prescribed)
    assert result.status == "ok"
    with pytest.raises(ValueError, match=reason):
        robot.rollout(q0, v0, tau, DT, integrator="rk4", prescribed=prescribed,
                      engine="compiled")


# ---- the plant's parts: drives (their loop-consistent compensation) and position stops

CRANK_UPPER = 0.5   # rad: the limited sample's crank stop (assembled from neutral at ~0.42)


def limited_sample():
    """The sample with its crank a revolute joint with position limits [-0.2, CRANK_UPPER]."""
    config = REPO / "config" / "flexible_fourbar.yaml"
    text = (REPO / "urdf" / "flexible_fourbar.urdf").read_text()
    continuous = '<joint name="crank_joint" type="continuous">'
    assert continuous in text
    text = text.replace(continuous, '<joint name="crank_joint" type="revolute">').replace(
        '<axis xyz="0 1 0"/></joint>',
        f'<axis xyz="0 1 0"/><limit lower="-0.2" upper="{CRANK_UPPER}" effort="50" '
        'velocity="20"/></joint>', 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(text, closures=config, flexible=config)


def python_compensation(robot, q, v):
    """Plant._compensation: project_acceleration(q, v, 0), then robot.inverse_dynamics' actuated
    forces (0 where it refuses)."""
    try:
        return robot.inverse_dynamics(q, v, robot.project_acceleration(q, v, np.zeros(robot.nv)))
    except ValueError:
        return np.zeros(robot.nv)


def test_drive_compensation_equals_the_plants():
    """flexible_loop_drive_bias at closed states with deflected modes and random v against the
    Plant's compensation in numpy. Both take g, G and gamma from the same kernels; qdd0 solves
    G_dep x = gamma (pivoted QR vs lstsq's SVD: round-off times cond(G_dep), at most the
    partition limit), tau_tree is the RNEA at qdd0 and b its least-squares actuation (N by QR vs
    SVD, the result independent of the basis): 64 eps cond(G_dep) (|M| |qdd0| + |tau_tree|)."""
    robot = sample_fourbar()
    part = flexible_loop_arrays(robot)
    flags = part[FL_DRIVES][0]
    checked = 0
    for q, v, _ in states(robot, 8, seed=4):
        v = robot.project_velocity(q, v)
        dependent = robot.partition(q)[1]
        flags[:] = 0
        flags[dependent] = 1
        out = np.full(robot.nv, np.nan)
        assert RFL.flexible_loop_drive_bias(part, q, v, out) == D.DONE
        reference = python_compensation(robot, q, v)
        qdd0 = robot.project_acceleration(q, v, np.zeros(robot.nv))
        _, jacobian, _ = robot.loop_state(q)
        cond_dep = np.linalg.cond(jacobian[:, dependent])
        scale = np.abs(robot.mass_matrix(q)).max() * np.abs(qdd0).max() + \
            np.abs(reference).max() + 1.0
        np.testing.assert_allclose(out, reference, rtol=0, atol=64 * EPS * cond_dep * scale)
        assert np.abs(reference).max() > 1e-2          # gravity and velocity terms: not 0
        assert np.count_nonzero(out) == 1 and out[0] != 0.0   # the actuated crank only
        checked += 1
    assert checked == 8


def drives_problem(robot, steps):
    """From the assembled rest with kicked modes (problem_of), the crank driven along a sine
    of 0.15 rad about its start (its velocity reference the derivative)."""
    q0, v0, tau = problem_of(robot, "rk4", steps=steps)
    tau[:] = 0.0
    t = np.arange(steps) * DT
    position = q0[0] + 0.15 * np.sin(2 * np.pi * 5.0 * t)[:, None]
    velocity = 0.15 * 2 * np.pi * 5.0 * np.cos(2 * np.pi * 5.0 * t)[:, None]
    return q0, v0, tau, {"joints": ["crank_joint"], "position": position, "velocity": velocity}


def assert_close_to_reference(robot, result, reference):
    """The module's bound: 64 eps (cond(M) + cond(K)) |V| per row, summed over the rows."""
    worst = max(sum(conditions(robot, q)) for q in reference.Q[::25])
    scale = max(1.0, np.abs(reference.V).max())
    bound = 64 * EPS * worst * scale * len(reference.Q)
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=bound)
    np.testing.assert_allclose(result.V, reference.V, rtol=0, atol=bound)


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_drives_on_flexible_loops_run_compiled_and_equal_the_reference(integrator, monkeypatch):
    """300 rows with the Plant's position drive on the crank: engine="compiled" runs them
    (no Python compensation, no numpy solve) and equals the reference engine (repeated
    robot.step, the drive terms in Python); the drive tracks (the crank within 0.02 rad of the
    reference after the first 20 ms) and changes the motion."""
    robot = sample_fourbar()
    steps = 300
    q0, v0, tau, drives = drives_problem(robot, steps)
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, drives, False, 100.0, None,
                             None)
    assert unsupported(problem) is None
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                              engine="reference")
    compensations = counted(monkeypatch, C.Constraints, "project_acceleration")
    numpy_solves = counted(monkeypatch, C.Constraints, "_kkt")
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                           engine="compiled")
    assert result.status == reference.status == "ok", result.message
    assert compensations == [] and numpy_solves == []
    assert_close_to_reference(robot, result, reference)
    error = np.abs(result.Q[201:, 0] - drives["position"][200:, 0]).max()
    assert error < 0.02, error
    free = robot.rollout(q0, v0, tau, DT, integrator=integrator)
    assert np.abs(free.Q[:, 0] - result.Q[:, 0]).max() > 0.05


def test_a_partition_change_falls_back_to_python_for_that_row(monkeypatch):
    """A partition the kernel finds ill-conditioned (every coordinate dependent, handed over at
    the start): that row's compensation comes from Python (which re-chooses it), the kernel
    resumes, and the rollout equals the reference engine's."""
    robot = sample_fourbar()
    steps = 40
    q0, v0, tau, drives = drives_problem(robot, steps)
    reference = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", drives=drives,
                              engine="reference")
    real_partition = C.Constraints.partition
    handed = []

    def bad_first(self, q, refresh=False):
        if not handed:
            handed.append(1)
            return np.zeros(0, dtype=np.int64), np.arange(self.nv)
        return real_partition(self, q, refresh)

    monkeypatch.setattr(C.Constraints, "partition", bad_first)
    compensations = counted(monkeypatch, C.Constraints, "project_acceleration")
    result = robot.rollout(q0, v0, tau, DT, integrator="semi_implicit_euler", drives=drives,
                           engine="compiled")
    assert handed and len(compensations) == 1
    assert result.status == "ok"
    assert_close_to_reference(robot, result, reference)


@pytest.mark.parametrize("integrator", [None, "semi_implicit_euler"])
@pytest.mark.parametrize("with_drives", [False, True])
def test_position_stops_on_flexible_loops_equal_the_reference(integrator, with_drives):
    """The crank pushed (torque, or a drive reference) past its upper stop: the compiled rollout
    puts it back on the stop as JointLimits.enforce does in the reference engine (the stop
    engaged: the crank rests at the limit for many rows, and the run without limits passes
    it), the loops closed again by the next step's projection."""
    robot = limited_sample()
    steps = 600
    q0, v0, tau, drives = drives_problem(robot, steps)
    if with_drives:
        drives["position"] = np.linspace(q0[0], CRANK_UPPER + 0.2, steps)[:, None]
        drives["velocity"] = np.gradient(drives["position"], DT, axis=0)
        options = {"drives": drives}
    else:
        tau[:, 0] = 1.5
        options = {}
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, limits=True,
                              engine="reference", **options)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, limits=True,
                           engine="compiled", **options)
    assert result.status == reference.status == "ok", result.message
    assert_close_to_reference(robot, result, reference)
    on_stop = np.abs(result.Q[:, 0] - CRANK_UPPER) < 1e-12
    assert on_stop.sum() > 50
    assert result.Q[:, 0].max() <= CRANK_UPPER + 1e-12
    unlimited = robot.rollout(q0, v0, tau, DT, integrator=integrator, **options)
    assert unlimited.Q[:, 0].max() > CRANK_UPPER + 0.02



def implicit_bound(robot, q, v, tau, h, q_next, v_next):
    from test_rollout_loop_integrators import implicit_loop_bound
    return implicit_loop_bound(robot, q, v, tau, h, q_next, v_next)


def symplectic_step_bound(robot, q, v, tau, h, q_next, v_next):
    from test_rollout_implicit import symplectic_bound
    return symplectic_bound(robot, q, v, tau, h, q_next, v_next)


def assert_rows_follow_step(robot, result, tau, dt, integrator, bound_of):
    """Each row of the compiled rollout equals robot.step from the row before within
    bound_of's round-off bound of one step (or 0: the same kernels in the same order) plus one
    projection's, and keeps the loops closed."""
    Q, V = result
    start = robot.time
    for k in range(result.steps):
        q_ref, v_ref = robot.step(Q[k], V[k], tau[k], dt, integrator)
        d_q = d_v = 0.0
        if bound_of is not None:
            q_open, v_open = robot.step(Q[k], V[k], tau[k], dt, integrator, project=False)
            d_q, d_v = bound_of(robot, Q[k], V[k], tau[k], dt, q_open, v_open)
        projection = 64 * EPS * sum(conditions(robot, q_ref))
        d_q += projection * max(1.0, np.abs(q_ref).max())
        d_v += projection * max(1.0, np.abs(v_ref).max())
        assert np.abs(Q[k + 1] - q_ref).max() <= d_q, k
        assert np.abs(V[k + 1] - v_ref).max() <= d_v, k
        position, velocity = robot.closure_residual(Q[k + 1], V[k + 1])
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    robot.time = start


@pytest.mark.parametrize("integrator, dt, bound_of, turned", [
    ("implicit_euler", 1e-3, implicit_bound, 0.01),
    ("symplectic_euler", DT, symplectic_step_bound, 1e-4)])
def test_implicit_integrators_run_compiled_row_by_row_equal_to_step(integrator, dt, bound_of,
                                                                    turned, monkeypatch):
    """implicit_euler at dt = 1 ms (where RK4 diverges on the sample's stiff beam and the
    reference engine takes ~0.5 ms per step in Python: tangent basis of the deformed cut rows,
    forward-difference Jacobians through the dense solve) and symplectic_euler at 1e-4 s (its
    fixed-point iteration through the dense solve, dM/dq u from the flexible mass matrix's C
    entry; explicit in the stiffness, it diverges at 1 ms as robot.step does), then robot.step's
    projection in numba: the compiled rollout equals robot.step from the same state row by row,
    within the round-off bound of one step (test_rollout_loop_integrators.py implicit_loop_bound,
    test_rollout_implicit.py symplectic_bound: the same Jacobians / iterations in both) plus one
    projection's (module docstring). Row by row because the beam's stiffness turns a position
    difference dq into h omega^2 dq of velocity at the next step (omega up to ~1e3 rad/s here):
    whole trajectories drift apart by more than one row's round-off, as on rigid trees
    (test_rollout_implicit.py)."""
    robot = sample_fourbar()
    steps = 60
    q0, v0, tau = problem_of(robot, integrator, steps=steps)
    problem = RolloutProblem(robot, q0, v0, tau, dt, integrator, 1, None, False, 100.0, None,
                             None)
    assert unsupported(problem) is None
    projections = counted(monkeypatch, C.Constraints, "project_state")
    result = robot.rollout(q0, v0, tau, dt, integrator=integrator, engine="compiled")
    assert result.status == "ok", result.message
    assert projections == []
    assert_rows_follow_step(robot, result, tau, dt, integrator, bound_of)
    assert len(projections) > 0          # robot.step projected: the loop was opened and closed
    assert np.abs(result.Q[-1, 0] - result.Q[0, 0]) > turned   # the crank turned


# ---- force elements on the flexible loops (their loads in the dense solve's workspace)

def sprung_sample():
    """The sample with config/flexible_fourbar_forces.yaml: a spring-damper from the ground to
    the beam's deformed mid-point and a joint spring on the crank."""
    config = REPO / "config" / "flexible_fourbar.yaml"
    forces = REPO / "config" / "flexible_fourbar_forces.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(REPO / "urdf" / "flexible_fourbar.urdf", closures=config,
                            flexible=config, forces=forces)


def test_force_elements_load_the_dense_solve_as_forward_dynamics():
    """The part's stage dynamics with the elements' loads (flexible_loops_forward_dynamics)
    equal robot.forward_dynamics bit for bit at closed states (the same kernels on the same
    loaded workspace: the loads at (q, v), tau + their generalized forces, the dense solve),
    and the elements act (the sample without them differs)."""
    robot = sprung_sample()
    plain = sample_fourbar()
    part = flexible_loop_arrays(robot)
    for q, v, tau in states(robot, 6, seed=8):
        out = np.full(robot.nv, np.nan)
        assert flexible_loops_forward_dynamics(part, q, v, tau, out) == 0
        np.testing.assert_array_equal(out, robot.forward_dynamics(q, v, tau))
        assert np.abs(out - plain.forward_dynamics(q, v, tau)).max() > 1.0


@pytest.mark.parametrize("integrator, drives", [("rk4", False), ("semi_implicit_euler", True),
                                                ("implicit_euler", False)])
def test_force_elements_on_flexible_loops_run_compiled(integrator, drives, monkeypatch):
    """Rollouts of the sprung sample: compiled (no numpy solve, no Python projection or
    compensation) and equal to the reference engine within the module's bound; with the drive
    its compensation is robot.inverse_dynamics' with the loads (the RNEA on the loaded
    workspace minus the elements' generalized forces). 200 rows at 1e-4 s."""
    robot = sprung_sample()
    q0, v0, tau, drive = drives_problem(robot, 200)
    options = {"drives": drive} if drives else {}
    problem = RolloutProblem(robot, q0, v0, tau, DT, integrator, 1, options.get("drives"), False,
                             100.0, None, None)
    assert unsupported(problem) is None
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="reference",
                              **options)
    numpy_solves = counted(monkeypatch, C.Constraints, "_kkt")
    projections = counted(monkeypatch, C.Constraints, "project_state")
    compensations = counted(monkeypatch, C.Constraints, "project_acceleration")
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled", **options)
    assert result.status == reference.status == "ok", result.message
    assert numpy_solves == [] and projections == [] and compensations == []
    assert_close_to_reference(robot, result, reference)
    unsprung = sample_fourbar().rollout(q0, v0, tau, DT, integrator=integrator, **options)
    assert np.abs(unsprung.V - result.V).max() > 1e-2   # the elements act


@pytest.mark.filterwarnings("ignore::mbd_ros.robot.constraints.LoopResidualWarning")
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("integrator, reason, bound_of", [
    ("rk4", "exceeds max_speed", None),
    ("symplectic_euler", "the loop multipliers' solve failed", symplectic_step_bound)])
def test_a_divergence_stops_where_the_reference_engine_does(integrator, reason, bound_of):
    """At dt = 1 ms the explicit integrators blow up on the stiff beam: the compiled rollout
    stops at the reference engine's step, with a message that says what failed, and the rows up
    to it follow robot.step row by row (whole trajectories part by round-off times the
    instability's growth, ~4x per step here)."""
    robot = sample_fourbar()
    q0, v0, tau = problem_of(robot, integrator, steps=100)
    with pytest.warns(RolloutDiverged):
        reference = robot.rollout(q0, v0, tau, 1e-3, integrator=integrator,
                                  engine="reference")
    with pytest.warns(RolloutDiverged):
        result = robot.rollout(q0, v0, tau, 1e-3, integrator=integrator, engine="compiled")
    assert result.status == reference.status == "diverged"
    assert 0 < result.steps == reference.steps < 100
    assert len(result.Q) == result.steps + 1
    assert reason in result.message and f"at step {result.steps} " in result.message
    assert_rows_follow_step(robot, result, tau, 1e-3, integrator, bound_of)
