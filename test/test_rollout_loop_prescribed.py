"""Prescribed joints on closed loops in the compiled rollouts (kernels/rollout_loop_prescribed.py):
the hybrid KKT solve of robot/prescribed.py `solve` and robot.step's projection holding the
prescribed dofs, in numba.

Robots: the four-bar with its crank prescribed (no dof left: the loop's kinematics move the
coupler and the rocker), the leg with a four-bar knee linkage with its hip prescribed (the
knee's dof free), and both loop samples on a shaker rig (a prismatic joint `rig` along
z under their base, prescribed to a road profile: the four-bar's crank and the double
wishbone's wheel travel stay free and respond to the base's acceleration through M_fp; the
wishbone's strut is a force element, so its loaded path runs too); the four-bar cases also on a
generated tree (codegen=True: robot.step's M and h, and the stops' M, from the generated kernels,
the compiled rollout's from the recursive ones: round-off apart, within the same bounds), and
position stops on a generated tree's closed loops without prescribed joints.

References: robot.forward_dynamics(prescribed=...) (numpy's lstsq of the dense KKT matrix) for
one evaluation, Constraints.project_state(fixed=...) for one projection, and repeated robot.step
(the reference engine) for whole rollouts; and invariants independent of both: the loop rows
G qdd + gamma = 0, the loops closed after a projection with the prescribed coordinates unchanged,
every returned row's loop residuals below PROJECTION_TOLERANCE and the prescribed joints on
their trajectories.

Tolerances: both solves of the KKT system are backward stable (numpy's lstsq, an SVD; the
kernel's pivoted QR and triangular solve, consistent_min_norm_solve), so each is within
~n EPS cond |x| of the exact solution and they differ by at most 32 EPS cond(KKT) max(1, |qdd|),
cond the KKT matrix's actual condition over its kept singular values (4 on the four-bar with
its crank prescribed, ~120 on the wishbone, ~300 on the leg and ~2e3 on the four-bar on the
rig: the blocks mix units). A rollout's rows then differ by at most that per stage, integrated
over the steps (each step's velocity error h times the acceleration error, the positions' h
times that) plus the projections' 64 EPS per row (test_rollout_loops.py's bound): 64 EPS rows
max(1, |x|) (1 + cond_max), cond_max the largest over every tenth reference row.

implicit_euler (kernels/rollout_tangent.py's step on the loops' tangent basis with this KKT at
every column) is compared row by row instead, as on trees and loops without prescribed joints:
its forward differences of step 1e-7 amplify each evaluation's round-off by ~1/1e-7, so robot.step
itself moves apart by far more than round-off from states one ulp apart. Two references: robot.step
(the whole path, bound: implicit_holding_bound) and robot.step's Simulator on the kernel's KKT
dynamics (the integrator alone, operation for operation, bound: the products' and the solve's
round-off only).
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import roundoff_tol, solve_tol
from loop_robots import CONFIG, URDF, fourbar
from mbd_ros.kernels import rollout_loop_prescribed as LP
from mbd_ros.kernels.linalg import RANK_TOLERANCE
from mbd_ros.kernels.rollout_implicit import FD_STEP
from mbd_ros.robot import constraints as C
from mbd_ros.robot import prescribed as prescribed_module
from mbd_ros.robot.integrators import SYMPLECTIC_TOLERANCE
from mbd_ros.robot.rollout import RolloutProblem
from mbd_ros.robot.rollout_compiled import engine_of, unsupported
from mbd_ros.robot.rollout_prescribed import prescribed_table, thread_prescribed
from test_rollout_prescribed import on_trajectories, sine

EPS = np.finfo(float).eps
DT = 1e-3
T0 = 0.3   # not 0: the table's samples are at t0 + k dt + c h


def on_rig(urdf, root, closures, forces=None, edit=None, codegen=False):
    """The sample `urdf` with a prismatic joint `rig` (z, +-1 m) between a new root link and
    its root link `root`: a shaker rig under the mechanism (edit: a further text edit; codegen:
    a generated tree)."""
    text = (URDF / urdf).read_text()
    if edit is not None:
        text = edit(text)
    head = text.index(">", text.index("<robot")) + 1
    rig = ('\n  <link name="rig_frame"/>\n  <joint name="rig" type="prismatic">\n'
           f'    <parent link="rig_frame"/>\n    <child link="{root}"/>\n'
           '    <axis xyz="0 0 1"/>\n'
           '    <limit effort="1000" velocity="10" lower="-1" upper="1"/>\n  </joint>')
    with tempfile.TemporaryDirectory(prefix="mbd_rig_") as directory:
        path = Path(directory) / f"rig_{urdf}"
        path.write_text(text[:head] + rig + text[head:])
        return mbd_ros.load(str(path), closures=str(CONFIG / closures),
                            forces=str(CONFIG / forces) if forces else None, codegen=codegen)


def rig_fourbar():
    return on_rig("fourbar.urdf", "ground", "fourbar_closures.yaml")


def generated_fourbar():
    """The four-bar on a generated tree (codegen=True: robot.step's M and h from the generated
    kernels, the compiled rollout's from the recursive ones on the same model: round-off)."""
    return mbd_ros.load(str(URDF / "fourbar.urdf"),
                        closures=str(CONFIG / "fourbar_closures.yaml"), codegen=True)


def generated_rig_fourbar():
    return on_rig("fourbar.urdf", "ground", "fourbar_closures.yaml", codegen=True)


def rig_wishbone():
    return on_rig("double_wishbone.urdf", "chassis", "double_wishbone.yaml",
                  "double_wishbone.yaml")


def leg():
    """The leg with a four-bar knee linkage (urdf/leg_fourbar_floating.urdf, fixed hip mount): 2
    dofs, the hip prescribed leaves the knee linkage's dof free."""
    return mbd_ros.load(str(URDF / "leg_fourbar_floating.urdf"),
                        closures=str(CONFIG / "leg_fourbar_closures.yaml"))


def road(amplitude=0.02, omega=12.0):
    """A road profile for the rig (m, m/s, m/s^2): a sine of `amplitude` m at omega rad/s."""
    return sine(amplitude, omega, 0.0)


# name: (robot factory, {joint: trajectory})
CASES = {
    "fourbar_crank": (fourbar, lambda: {"crank_joint": sine(0.4, 3.0, 0.2)}),
    "fourbar_rig": (rig_fourbar, lambda: {"rig": road()}),
    "wishbone_rig": (rig_wishbone, lambda: {"rig": road(0.01, 25.0)}),
    "leg_hip": (leg, lambda: {"hip": sine(0.2, 3.0, 0.1)}),
    # generated trees (codegen=True)
    "generated_fourbar_crank": (generated_fourbar, lambda: {"crank_joint": sine(0.4, 3.0, 0.2)}),
    "generated_fourbar_rig": (generated_rig_fourbar, lambda: {"rig": road()}),
}


def start_on_trajectories(robot, prescribed, t0, seed, speed):
    """(q0, v0) on the loops with the prescribed joints on their trajectories at t0: the joints
    set, the loops closed and v projected holding them (Constraints.project_state(fixed=)),
    the free dofs' velocities random (scale `speed`)."""
    rng = np.random.default_rng(seed)
    q0 = robot.assemble(robot.neutral())
    v0 = speed * rng.standard_normal(robot.nv)
    for name, trajectory in prescribed.items():
        j = robot.joint_names.index(name)
        q0[int(robot.idx_q[j])], v0[int(robot.idx_v[j])], _ = trajectory(t0)
    fixed = robot._constraints.dofs(list(prescribed))
    q0, v0 = robot._constraints.project_state(q0, v0, fixed=fixed)
    position, velocity = robot.closure_residual(q0, v0)
    assert position < C.ASSEMBLY_TOLERANCE and velocity < 1e-12
    return q0, v0


def kkt_condition(robot, q, v, names):
    """cond of prescribed.solve's KKT matrix at (q, v) over its kept singular values (those
    above RANK_TOLERANCE s_max: the exactly zero rows of a planar loop closed in 3-D dropped)."""
    mass, _ = robot._tree_mass_and_bias(q, v)
    jac, _ = robot._constraints.acceleration_rows(q, v)
    _, p, f, ix_ff, _, _, ix_pf = robot._prescribed.plan(names)
    nv, b, nf = robot.nv, jac.shape[0], len(f)
    kkt = np.zeros((nv + b, nv + b))
    kkt[:nf, :nf] = mass[ix_ff]
    kkt[:nf, nf:nf + b] = -jac[:, f].T
    kkt[nf:nv, :nf] = mass[ix_pf]
    kkt[nf:nv, nf:nf + b] = -jac[:, p].T
    kkt[nf:nv, nf + b:] = -np.eye(len(p))
    kkt[nv:, :nf] = jac[:, f]
    sigma = np.linalg.svd(kkt, compute_uv=False)
    kept = sigma[sigma > RANK_TOLERANCE * sigma[0]]
    return kept[0] / kept[-1]


def max_kkt_condition(robot, reference, names):
    """The largest kkt_condition over every tenth row of a reference rollout."""
    return max(kkt_condition(robot, q, v, names) for q, v in zip(reference.Q[::10],
                                                                  reference.V[::10]))


def assert_rows_within(result, reference, bound):
    """Every row of result equals the reference's within bound relative to the largest
    coordinate (at least 1: absolute near zero)."""
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0,
                               atol=bound * max(1.0, np.abs(reference.Q).max()))
    np.testing.assert_allclose(result.V, reference.V, rtol=0,
                               atol=bound * max(1.0, np.abs(reference.V).max()))


def evaluation_arrays(robot, prescribed, t0, integrator="rk4"):
    """(loops tuple, forces tuple, loaded, workspace, prescribed tuple) of one thread, the
    table sampled for one row from t0."""
    problem = RolloutProblem(robot, robot.neutral(), np.zeros(robot.nv), np.zeros((1, robot.nv)),
                             DT, integrator, 1, None, False, 100.0, prescribed, t0)
    engine = engine_of(robot)
    loops = engine.loop_arrays()
    forces = engine.force_arrays()
    loaded = robot._forces is not None
    return loops, forces, loaded, thread_prescribed(prescribed_table(problem, 1), robot.nv)


def test_consistent_min_norm_solve_equals_lapack_lstsq():
    """The KKT solver alone: square systems of rank r < n with b in their range (a planar loop's
    KKT: zero rows and the columns of their multipliers) equal numpy's lstsq to 32 EPS cond |x|
    (both backward stable: not cond^2) and return the rank; b off the range is reported (-1)."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        n, r = 8, 5
        a = rng.standard_normal((n, r)) @ rng.standard_normal((r, n))
        a[rng.permutation(n)[:2]] *= 1e3   # rows of mixed scale, as M and G blocks
        b = a @ rng.standard_normal(n)
        x = np.zeros(n)
        t = np.zeros((n, n))
        scratch = np.zeros((4, n))
        perm = np.zeros(n, dtype=np.int64)
        rank = LP.consistent_min_norm_solve(a, n, n, b, x, t, *scratch, perm)
        reference, _, lapack_rank, sigma = np.linalg.lstsq(a, b, rcond=RANK_TOLERANCE)
        assert rank == lapack_rank == r
        kept = sigma[sigma > RANK_TOLERANCE * sigma[0]]
        tolerance = 32 * EPS * (kept[0] / kept[-1]) * max(1.0, np.abs(reference).max())
        np.testing.assert_allclose(x, reference, rtol=0, atol=tolerance)
        off = b + 1e-6 * np.abs(b).max() * rng.standard_normal(n)   # not in the range
        assert LP.consistent_min_norm_solve(a, n, n, off, x, t, *scratch, perm) == -1


def test_contradicting_prescribed_joints_take_the_least_squares_solution():
    """The four-bar's crank and rocker both prescribed with accelerations the loop cannot take
    together: the KKT system is inconsistent, and the kernel gives lstsq's least-squares
    solution (robot.forward_dynamics(prescribed=)) through min_norm_solve, to its round-off
    32 EPS cond^2."""
    robot = fourbar()
    prescribed = {"crank_joint": sine(0.4, 3.0, 0.2), "rocker_joint": sine(0.5, 7.0, 0.0)}
    names = list(prescribed)
    loops, forces, loaded, table = evaluation_arrays(robot, prescribed, T0)
    workspace = LP.loop_prescribed_workspace(robot.nv, robot._constraints.n_loop_rows)
    rng = np.random.default_rng(3)
    q = robot.assemble(robot.neutral())
    for _ in range(5):
        v = robot.project_velocity(q, rng.standard_normal(robot.nv))
        tau = rng.standard_normal(robot.nv)
        accelerations = {name: prescribed[name](T0)[2] for name in names}
        reference = robot.forward_dynamics(q, v, tau, prescribed=accelerations)
        out = np.zeros(robot.nv)
        assert LP.loop_prescribed_forward_dynamics(loops[:10], forces, loaded, workspace, table,
                                                   0, 0, q, v, tau, out) == 0
        cond = kkt_condition(robot, q, v, names)
        tolerance = 32 * EPS * cond ** 2 * max(1.0, np.abs(reference).max())
        np.testing.assert_allclose(out, reference, rtol=0, atol=tolerance)
        jac, gamma = robot._constraints.acceleration_rows(q, v)
        assert np.abs(jac @ out + gamma).max() > 1e-6   # (the loop cannot follow both)


@pytest.mark.parametrize("case", list(CASES))
def test_kkt_dynamics_equal_robot_forward_dynamics(case):
    """One evaluation at random states near the loops: the kernel's accelerations equal
    robot.forward_dynamics(prescribed=) (lstsq of the dense KKT) to 32 EPS cond, satisfy
    the loop rows G qdd + gamma = 0 (Baumgarte gains set: their terms included) and carry the
    prescribed accelerations exactly."""
    make, trajectories = CASES[case]
    robot = make()
    robot.baumgarte = (3.0, 5.0)
    prescribed = trajectories()
    names = list(prescribed)
    loops, forces, loaded, table = evaluation_arrays(robot, prescribed, T0)
    assert loaded == (case == "wishbone_rig")
    workspace = LP.loop_prescribed_workspace(robot.nv, robot._constraints.n_loop_rows)
    loops[7][:] = robot._constraints.gains
    rng = np.random.default_rng(11)
    for trial in range(8):
        q, _ = start_on_trajectories(robot, prescribed, T0, trial, 2.0)
        # slightly off the loops, v not admissible: the Baumgarte terms 2 alpha G v + beta^2 g
        q = robot.integrate(q, 1e-6 * rng.standard_normal(robot.nv), 1.0)
        v = 2.0 * rng.standard_normal(robot.nv)
        tau = rng.standard_normal(robot.nv)
        for c, t in ((0, T0), (1, T0 + DT / 2), (2, T0 + DT)):
            accelerations = {name: prescribed[name](t)[2] for name in names}
            reference = robot.forward_dynamics(q, v, tau, prescribed=accelerations)
            out = np.zeros(robot.nv)
            status = LP.loop_prescribed_forward_dynamics(loops[:10], forces, loaded, workspace,
                                                         table, 0, c, q, v, tau, out)
            assert status == 0
            cond = kkt_condition(robot, q, v, names)
            tolerance = 32 * EPS * cond * max(1.0, np.abs(reference).max())
            np.testing.assert_allclose(out, reference, rtol=0, atol=tolerance)
            jac, gamma = robot._constraints.acceleration_rows(q, v)
            rows = jac @ out + gamma
            assert np.abs(rows).max() <= 8 * tolerance * max(1.0, np.abs(jac).max()) + \
                64 * EPS * np.abs(gamma).max()
            for name in names:
                iv = int(robot.idx_v[robot.joint_names.index(name)])
                assert out[iv] == accelerations[name]


@pytest.mark.parametrize("case", list(CASES))
def test_projection_holding_prescribed_equals_project_state(case):
    """States opened as a step opens them (and far more): the kernel's projection equals
    Constraints.project_state(fixed=) to 64 EPS, keeps the prescribed coordinates bit for bit,
    closes the loops below ASSEMBLY_TOLERANCE and leaves G v at round-off."""
    make, trajectories = CASES[case]
    robot = make()
    prescribed = trajectories()
    loops, _, _, table = evaluation_arrays(robot, prescribed, T0)
    fixed = robot._constraints.dofs(list(prescribed))
    fixed_q = [int(robot.idx_q[robot.joint_names.index(name)]) for name in prescribed]
    rng = np.random.default_rng(5)
    for trial in range(10):
        q_closed, _ = start_on_trajectories(robot, prescribed, T0, trial, 1.0)
        q = robot.integrate(q_closed, 10.0 ** -rng.uniform(3, 9) * rng.standard_normal(robot.nv),
                            1.0)
        v = rng.standard_normal(robot.nv)
        q_ref, v_ref = robot._constraints.project_state(q, v, fixed=fixed)
        q_new, v_new = q.copy(), v.copy()
        assert LP.close_loops_holding(loops[:10], loops[10], table, q_new, v_new,
                                      C.PROJECTION_TOLERANCE, C.ASSEMBLY_TOLERANCE) == 1
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=64 * EPS)
        np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=64 * EPS * np.abs(v).max())
        assert np.array_equal(q_new[fixed_q], q[fixed_q])
        assert np.array_equal(v_new[fixed], v[fixed])
        position, velocity = robot.closure_residual(q_new, v_new)
        assert position < C.ASSEMBLY_TOLERANCE
        assert velocity < 64 * EPS * np.abs(v).max()


def counted(monkeypatch, owner, name):
    """Count the calls of owner.name (still calling it)."""
    calls = []
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def rollout_problem(case, seed=3, steps=300):
    make, trajectories = CASES[case]
    robot = make()
    prescribed = trajectories()
    speed = 0.0 if case.endswith("fourbar_crank") else 1.0
    q0, v0 = start_on_trajectories(robot, prescribed, T0, seed, speed)
    scale = 50.0 if case == "wishbone_rig" else 0.3
    tau = scale * np.random.default_rng(seed).standard_normal((steps, robot.nv))
    return robot, prescribed, q0, v0, tau


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("integrator", [None, "rk4", "semi_implicit_euler", "symplectic_euler"])
def test_compiled_rollout_equals_robot_steps(case, integrator, monkeypatch):
    """300 rows: the compiled engine runs (unsupported() is None, engine="compiled" accepts it,
    and neither prescribed.solve nor the Python projection is called) and equals the reference
    engine (repeated robot.step) within the module's bound; every row's loops closed to
    PROJECTION_TOLERANCE, the prescribed joints on their trajectories. symplectic_euler: its
    fixed-point iteration stops once the update is below SYMPLECTIC_TOLERANCE max(1, |u|), so a
    round-off difference can stop the two engines one iteration apart: up to that much per step
    more, and v+ = M(q+)^-1 M(q) u solved by LU against LAPACK adds 64 EPS cond(M) per step."""
    robot, prescribed, q0, v0, tau = rollout_problem(case)
    dt = 3e-3 if integrator is None else DT   # (the default: three RK4 substeps per row)
    problem = RolloutProblem(robot, q0, v0, tau, dt, integrator, 1, None, False, 100.0,
                             prescribed, T0)
    assert unsupported(problem) is None
    solves = counted(monkeypatch, prescribed_module, "solve")
    projections = counted(monkeypatch, C.Constraints, "project_state")
    reference = robot.rollout(q0, v0, tau, dt, integrator=integrator, prescribed=prescribed,
                              t0=T0, engine="reference")
    assert reference.status == "ok"
    assert len(solves) >= len(tau)          # robot.step solved the KKT system in Python
    python_projections = len(projections)
    solves.clear()
    projections.clear()
    result = robot.rollout(q0, v0, tau, dt, integrator=integrator, prescribed=prescribed,
                           t0=T0, engine="compiled")
    assert result.status == "ok", result.message
    assert solves == [] and projections == []   # the KKT and the projections ran in numba
    if integrator == "semi_implicit_euler":   # (it opens the loops every step)
        assert python_projections >= len(tau) // 2
    names = list(prescribed)
    cond = max_kkt_condition(robot, reference, names)
    rows = len(tau) + 1
    bound = 64 * EPS * rows * (1.0 + cond)
    if integrator == "symplectic_euler":
        mass_cond = max(np.linalg.cond(robot.mass_matrix(q)) for q in reference.Q[::10])
        bound += rows * (SYMPLECTIC_TOLERANCE + 64 * EPS * mass_cond)
    assert_rows_within(result, reference, bound)
    for q, v in zip(result.Q, result.V):
        position, velocity = robot.closure_residual(q, v)
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    on_trajectories(robot, result.Q, result.V, prescribed, T0, dt)
    print(f"{case} {integrator}: cond {cond:.3g}, |dQ| {np.abs(result.Q - reference.Q).max():.3g}"
          f", |dV| {np.abs(result.V - reference.V).max():.3g}, Python projections "
          f"{python_projections}")


def test_declined_projection_resumes_after_python_projection():
    """When the kernel's projection declines (here: disabled, the engine's python_projection; in
    use: Gauss-Newton not converged), the row returns to Python for robot.step's projection
    holding the prescribed joints (project_state(fixed=)) and resumes: still equal to the
    reference engine within the module's bound, the prescribed joints on their trajectories."""
    robot, prescribed, q0, v0, tau = rollout_problem("wishbone_rig", steps=100)
    engine_of(robot).python_projection = True
    fixed = []
    python_projection = C.Constraints.project_state

    def recording(self, q, v, *args, **kwargs):
        fixed.append(kwargs.get("fixed"))
        return python_projection(self, q, v, *args, **kwargs)

    for integrator in ("rk4", "semi_implicit_euler"):
        reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed,
                                  t0=T0, engine="reference")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(C.Constraints, "project_state", recording)
            result = robot.rollout(q0, v0, tau, DT, integrator=integrator,
                                   prescribed=prescribed, t0=T0, engine="compiled")
        assert result.status == "ok"
        # (the wishbone opens past the tolerance every few RK4 steps, every Euler step)
        assert len(fixed) >= (1 if integrator == "rk4" else len(tau) // 2)
        assert all(list(f) == [0] for f in fixed)   # held: the rig, v index 0
        fixed.clear()
        cond = max_kkt_condition(robot, reference, ["rig"])
        bound = 64 * EPS * (len(tau) + 1) * (1.0 + cond)
        assert_rows_within(result, reference, bound)
        on_trajectories(robot, result.Q, result.V, prescribed, T0, DT)


def test_rig_motion_drives_the_free_dofs():
    """The shaker's motion reaches the free dof through M_fp (not a test that cannot fail: a
    dynamics that ignored the prescribed acceleration would leave the mechanism where the
    unshaken rollout leaves it)."""
    robot, prescribed, q0, v0, tau = rollout_problem("wishbone_rig", steps=200)
    rig = robot.joint_names.index("rig")
    height = q0[int(robot.idx_q[rig])]
    still = {"rig": lambda t: (height, 0.0, 0.0)}
    q0_still, v0_still = start_on_trajectories(robot, still, T0, 3, 1.0)
    shaken = robot.rollout(q0, v0, tau, DT, prescribed=prescribed, t0=T0, engine="compiled")
    held = robot.rollout(q0_still, v0_still, tau, DT, prescribed=still, t0=T0,
                         engine="compiled")
    assert shaken.status == held.status == "ok"
    free = [i for i in range(robot.nq) if i != int(robot.idx_q[rig])]
    assert np.abs(shaken.Q[:, free] - held.Q[:, free]).max() > 1e-4


def test_batch_threads_equal_single_rollouts():
    """A batch on two threads (per-thread workspaces) equals its members run alone, bit for bit."""
    robot, prescribed, _, _, tau = rollout_problem("fourbar_rig", steps=50)
    starts = [start_on_trajectories(robot, prescribed, T0, seed, 1.0) for seed in range(3)]
    q0s = np.array([q for q, _ in starts])
    v0s = np.array([v for _, v in starts])
    taus = np.array([tau, -tau, 0.5 * tau])
    batch = robot.rollout(q0s, v0s, taus, DT, prescribed=prescribed, t0=T0, batch_threads=2,
                          engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        single = robot.rollout(q0s[i], v0s[i], taus[i], DT, prescribed=prescribed, t0=T0,
                               engine="compiled")
        np.testing.assert_array_equal(batch.Q[i], single.Q)
        np.testing.assert_array_equal(batch.V[i], single.V)


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_drives_with_prescribed_rig_run_compiled(integrator, monkeypatch):
    """The Plant's position drive on the four-bar's crank while the rig shakes it: compiled (the
    loop compensation in numba, the KKT in numba) and equal to the reference engine within the
    module's bound; the drive acted."""
    robot, prescribed, q0, v0, tau = rollout_problem("fourbar_rig", steps=200)
    crank = robot.joint_names.index("crank_joint")
    position = q0[int(robot.idx_q[crank])] + 0.2 * np.sin(np.linspace(0.0, 3.0, len(tau)))
    drives = {"joints": ["crank_joint"], "position": position[:, None],
              "velocity": np.gradient(position, DT)[:, None]}
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                              prescribed=prescribed, t0=T0, engine="reference")
    solves = counted(monkeypatch, prescribed_module, "solve")
    compensations = counted(monkeypatch, C.Constraints, "project_acceleration")
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, drives=drives,
                           prescribed=prescribed, t0=T0, engine="compiled")
    assert result.status == reference.status == "ok"
    assert solves == [] and compensations == []
    cond = max_kkt_condition(robot, reference, ["rig"])
    bound = 64 * EPS * (len(tau) + 1) * (1.0 + cond)
    assert_rows_within(result, reference, bound)
    undriven = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed,
                             t0=T0, engine="compiled")
    assert np.abs(undriven.Q - result.Q).max() > 1e-3


def limited_crank(upper):
    """A URDF edit: the four-bar's crank a revolute joint limited to [-upper, upper] rad."""
    def edit(text):
        old = '<joint name="crank_joint" type="continuous">'
        assert old in text and '<limit effort="5" velocity="20"/>' in text
        return text.replace(old, '<joint name="crank_joint" type="revolute">').replace(
            '<limit effort="5" velocity="20"/>',
            f'<limit effort="5" velocity="20" lower="{-upper}" upper="{upper}"/>')
    return edit


@pytest.mark.parametrize("codegen", [False, True])
@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_stops_with_prescribed_rig_run_compiled(integrator, codegen, monkeypatch):
    """limits=True on the four-bar on the rig with its crank limited to +-0.05 rad and pushed out
    of that range: compiled (no Python KKT solve or projection) and equal to the reference engine
    (robot.step, then the Plant's stops in Python) within the module's bound; the stop held the
    crank (without it the crank leaves the range). codegen: on a generated tree (the reference's
    M and h from the generated kernels, the stops' M too: round-off from the recursive ones)."""
    upper = 0.05
    robot = on_rig("fourbar.urdf", "ground", "fourbar_closures.yaml", edit=limited_crank(upper),
                   codegen=codegen)
    assert robot.tree.kind == ("generated" if codegen else "rigid")
    prescribed = {"rig": road()}
    q0, v0 = start_on_trajectories(robot, prescribed, T0, 3, 0.0)
    crank_q = int(robot.idx_q[robot.joint_names.index("crank_joint")])
    crank_v = int(robot.idx_v[robot.joint_names.index("crank_joint")])
    steps = 300
    free = None
    for sign in (1.0, -1.0):   # the direction that drives the crank out of [-upper, upper]
        tau = np.zeros((steps, robot.nv))
        tau[:, crank_v] = sign * 0.05
        free = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed,
                             t0=T0, engine="reference")
        if np.abs(free.Q[:, crank_q]).max() > 2 * upper:
            break
    assert np.abs(free.Q[:, crank_q]).max() > 2 * upper
    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed,
                              t0=T0, limits=True, engine="reference")
    solves = counted(monkeypatch, prescribed_module, "solve")
    projections = counted(monkeypatch, C.Constraints, "project_state")
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, prescribed=prescribed, t0=T0,
                           limits=True, engine="compiled")
    assert result.status == reference.status == "ok"
    assert solves == [] and projections == []
    assert np.abs(result.Q[:, crank_q]).max() < 1.5 * upper
    cond = max_kkt_condition(robot, reference, ["rig"])
    bound = 64 * EPS * (steps + 1) * (1.0 + cond)
    assert_rows_within(result, reference, bound)


def implicit_holding_bound(robot, q, v, tau, prescribed, t, h, q_open, v_open):
    """(d_q, d_v): one implicit_euler step with the prescribed joints on the loops' tangent
    basis (kernels/rollout_tangent.py with the hybrid KKT dynamics) against robot.step's
    Simulator, before the projection: test_rollout_loop_integrators.py's implicit_loop_bound
    (the products and the k x k solve on N = robot.constraint_basis(q), B_q = A_q N, B_v = A_v N
    the Simulator's forward differences of step 1e-7, here of the hybrid dynamics at the step's
    start time t), plus what differs here and not there: each evaluation of the dynamics is a
    different backward-stable solve of the KKT system (numpy's lstsq against the kernel's
    pivoted QR), delta = 32 EPS cond(KKT) max(1, |qdd|) apart (the module's bound of one
    evaluation), so a1 differs by delta and each forward-difference column of B_q, B_v by
    2 delta / 1e-7 (|dB| <= 2 sqrt(k) delta / 1e-7): L = 1 - h N^T B_v - h^2 N^T B_q moves by
    (h + h^2) |dB|, the right side by h delta + h^2 |dB| |s|, z by |L^-1| times those, and v+
    by h (delta + h (|dB| |s + z| + |B_q| d_z) + |dB| |z| + |B_v| d_z); q+ by h times v+'s
    (q (+) v h: 1-Lipschitz in v h) plus 4 EPS |q+|. The prescribed joints' entries are placed
    from the same samples on both sides (Simulator.advance)."""
    n = robot.nv
    names = list(prescribed)
    accelerations = {name: prescribed[name](t)[2] for name in names}

    def f(q_, v_):
        return robot.forward_dynamics(q_, v_, tau, prescribed=accelerations)

    basis = robot.constraint_basis(q)
    k = basis.shape[1]
    a1 = f(q, v)
    b_q, b_v = np.empty((n, k)), np.empty((n, k))
    for j in range(k):
        d = np.ascontiguousarray(basis[:, j])
        b_v[:, j] = (f(q, d * FD_STEP + v) - a1) / FD_STEP
        b_q[:, j] = (f(robot.integrate(q, d, FD_STEP), v) - a1) / FD_STEP
    s = basis.T @ v
    lhs = np.eye(k) - h * (basis.T @ b_v) - h * h * (basis.T @ b_q)
    z = np.linalg.solve(lhs, h * (basis.T @ a1) + h * h * (basis.T @ (b_q @ s)))
    inverse = _norm(np.linalg.inv(lhs))
    # the products and the solve (implicit_loop_bound)
    d_s = roundoff_tol(n, (basis.T, v))
    d_lhs = h * roundoff_tol(n, (basis.T, b_v)) + h * h * roundoff_tol(n, (basis.T, b_q))
    d_rhs = h * roundoff_tol(n, (basis.T, a1)) + h * h * (
        roundoff_tol(n, (b_q, s)) + _norm(b_q) * d_s + roundoff_tol(n, (basis.T, b_q @ s)))
    # ... and the KKT solves' own round-off, amplified by the forward differences
    delta = 32 * EPS * kkt_condition(robot, q, v, names) * max(1.0, np.abs(a1).max())
    d_b = 2.0 * np.sqrt(k) * delta / FD_STEP
    d_lhs += (h + h * h) * d_b
    d_rhs += h * delta + h * h * d_b * np.linalg.norm(s)
    d_z = solve_tol(lhs, z) + inverse * (d_rhs + d_lhs * np.linalg.norm(z))
    d_v = h * (delta + h * (roundoff_tol(n, (b_q, s + z)) + (_norm(b_q) + d_b) * (d_s + d_z)
                            + d_b * np.linalg.norm(s + z))
               + roundoff_tol(n, (b_v, z)) + (_norm(b_v) + d_b) * d_z + d_b * np.linalg.norm(z)) \
        + 4 * EPS * _norm(v_open)
    return h * d_v + 4 * EPS * _norm(q_open), d_v


def _norm(a):
    return float(np.linalg.norm(np.atleast_2d(a), 2))


@pytest.mark.parametrize("case", list(CASES))
def test_implicit_euler_rows_equal_robot_steps(case, monkeypatch):
    """implicit_euler with the prescribed joints on the loops runs compiled (unsupported() is
    None; neither prescribed.solve nor the Python projection is called) and every row equals
    robot.step (the reference engine's step) from the row before: within the open step's bound
    (implicit_holding_bound: round-off times the KKT's conditioning, amplified by the forward
    differences of step 1e-7), carried through robot.step's projection holding the prescribed
    joints where it projects (the same projection on both sides: the positions' Gauss-Newton
    onto the loops is 1-Lipschitz near them, the velocities' correction M_ff-orthogonal,
    Lipschitz with at most 1 + cond(M_ff)), plus the projections' round-off (64 EPS). Row by
    row and not the whole trajectory, as on trees and on loops without prescribed joints
    (test_rollout_implicit.py): robot.step itself moves apart by far more than round-off from
    states one ulp apart (forward differences of step 1e-7). Every row's loops closed to
    PROJECTION_TOLERANCE, the prescribed joints on their trajectories."""
    robot, prescribed, q0, v0, tau = rollout_problem(case, steps=150)
    problem = RolloutProblem(robot, q0, v0, tau, DT, "implicit_euler", 1, None, False, 100.0,
                             prescribed, T0)
    assert unsupported(problem) is None
    solves = counted(monkeypatch, prescribed_module, "solve")
    projections = counted(monkeypatch, C.Constraints, "project_state")
    result = robot.rollout(q0, v0, tau, DT, integrator="implicit_euler", prescribed=prescribed,
                           t0=T0, engine="compiled")
    assert result.status == "ok", result.message
    assert solves == [] and projections == []   # the KKT and the projections ran in numba
    on_trajectories(robot, result.Q, result.V, prescribed, T0, DT)
    Q, V = result.Q, result.V
    names = list(prescribed)
    free = robot._prescribed.plan(names)[2]
    start = robot.time
    worst = 0.0
    projected = 0
    for k in range(len(tau)):
        t = T0 + k * DT                  # (the table's row start: problem.t0 + k dt)
        q_ref, v_ref, q_open, v_open = steps_from_row(robot, Q[k], V[k], tau[k], t, prescribed)
        d_q, d_v = implicit_holding_bound(robot, Q[k], V[k], tau[k], prescribed, t, DT, q_open,
                                          v_open)
        if not (np.array_equal(q_ref, q_open) and np.array_equal(v_ref, v_open)):
            projected += 1
            mass = robot.mass_matrix(q_ref)
            d_v *= 1.0 + np.linalg.cond(mass[np.ix_(free, free)])
        d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
        d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
        error_q, error_v = np.abs(Q[k + 1] - q_ref).max(), np.abs(V[k + 1] - v_ref).max()
        assert error_q <= d_q, (k, error_q, d_q)
        assert error_v <= d_v, (k, error_v, d_v)
        worst = max(worst, error_q / d_q, error_v / d_v)
        position, velocity = robot.closure_residual(Q[k + 1], V[k + 1])
        assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE
    robot.time = start
    assert np.abs(V).max() > 0.5       # it moved
    print(f"{case} implicit_euler: worst error / bound {worst:.3g}, robot.step projected "
          f"{projected} of {len(tau)} rows")


def steps_from_row(robot, q, v, tau, t, prescribed):
    """(q, v) of robot.step's implicit_euler step from a row at time t, with its projection and
    without it (project=False): (q_ref, v_ref, q_open, v_open)."""
    robot.time = t
    q_ref, v_ref = robot.step(q, v, tau, DT, "implicit_euler", prescribed=prescribed)
    robot.time = t
    q_open, v_open = robot.step(q, v, tau, DT, "implicit_euler", prescribed=prescribed,
                                project=False)
    return q_ref, v_ref, q_open, v_open


@pytest.mark.parametrize("case", list(CASES))
def test_implicit_euler_rows_equal_the_simulator_on_the_kernels_dynamics(case, monkeypatch):
    """The integrator alone, operation for operation: robot.step's Simulator with the kernel's
    KKT dynamics in place of robot.forward_dynamics (the same bits of every evaluation on both
    sides: what is left differs by the products and the k x k solve on the tangent basis, numpy's
    BLAS / LAPACK against plain sums and the unblocked LU) equals every compiled row from the row
    before within test_rollout_loop_integrators.py's implicit_loop_bound (no forward-difference
    amplification: the same columns) plus the projections' 64 EPS (Constraints.project_state(
    fixed=) against close_loops_holding: test_projection_holding_prescribed_equals_project_state).
    A wrong sample time of the prescribed accelerations, basis or update would show here far
    above that bound (the kernel's dynamics themselves are checked against
    robot.forward_dynamics in test_kkt_dynamics_equal_robot_forward_dynamics)."""
    from test_rollout_loop_integrators import implicit_loop_bound
    robot, prescribed, q0, v0, tau = rollout_problem(case, steps=100)
    result = robot.rollout(q0, v0, tau, DT, integrator="implicit_euler", prescribed=prescribed,
                           t0=T0, engine="compiled")
    assert result.status == "ok", result.message
    Q, V = result.Q, result.V
    names = list(prescribed)
    loops, forces, loaded, table = evaluation_arrays(robot, prescribed, T0, "implicit_euler")
    workspace = LP.loop_prescribed_workspace(robot.nv, robot._constraints.n_loop_rows)
    row = {}

    def kernel_dynamics(q, v, tau, out=None, prescribed=None, **_):
        """robot.forward_dynamics(q, v, tau, prescribed=) by the kernel (prescribed None: the
        row's accelerations, for implicit_loop_bound's evaluations)."""
        accelerations = row if prescribed is None else prescribed
        for i, name in enumerate(names):
            table[0][0, 0, i, 2] = accelerations[name]
        result = np.zeros(robot.nv) if out is None else out
        assert LP.loop_prescribed_forward_dynamics(loops[:10], forces, loaded, workspace, table,
                                                   0, 0, q, v, tau, result) == 0
        return result

    monkeypatch.setattr(robot, "forward_dynamics", kernel_dynamics)
    start = robot.time
    worst = 0.0
    for k in range(len(tau)):
        t = T0 + k * DT
        row.update({name: prescribed[name](t)[2] for name in names})
        q_ref, v_ref, q_open, v_open = steps_from_row(robot, Q[k], V[k], tau[k], t, prescribed)
        d_q, d_v = implicit_loop_bound(robot, Q[k], V[k], tau[k], DT, q_open, v_open)
        d_q += 64 * EPS * max(1.0, np.abs(q_ref).max())
        d_v += 64 * EPS * max(1.0, np.abs(v_ref).max())
        error_q, error_v = np.abs(Q[k + 1] - q_ref).max(), np.abs(V[k + 1] - v_ref).max()
        assert error_q <= d_q, (k, error_q, d_q)
        assert error_v <= d_v, (k, error_v, d_v)
        worst = max(worst, error_q / d_q, error_v / d_v)
    robot.time = start
    print(f"{case} implicit_euler on the kernel's dynamics: worst error / bound {worst:.3g}")


def test_implicit_euler_batch_threads_equal_single_rollouts():
    """implicit_euler on a batch on two threads (per-thread KKT, basis and implicit workspaces)
    equals its members run alone, bit for bit."""
    robot, prescribed, _, _, tau = rollout_problem("leg_hip", steps=40)
    starts = [start_on_trajectories(robot, prescribed, T0, seed, 1.0) for seed in range(3)]
    q0s = np.array([q for q, _ in starts])
    v0s = np.array([v for _, v in starts])
    taus = np.array([tau, -tau, 0.5 * tau])
    batch = robot.rollout(q0s, v0s, taus, DT, integrator="implicit_euler", prescribed=prescribed,
                          t0=T0, batch_threads=2, engine="compiled")
    assert (batch.status == 0).all()
    for i in range(3):
        single = robot.rollout(q0s[i], v0s[i], taus[i], DT, integrator="implicit_euler",
                               prescribed=prescribed, t0=T0, engine="compiled")
        np.testing.assert_array_equal(batch.Q[i], single.Q)
        np.testing.assert_array_equal(batch.V[i], single.V)


def test_bad_prescribed_inputs_still_raise():
    """The argument checks are the engines' shared ones: the same ValueErrors, naming the joint,
    on a closed-loop robot."""
    robot = fourbar()
    q0 = robot.assemble(robot.neutral())
    v0, tau = np.zeros(robot.nv), np.zeros((5, robot.nv))
    with pytest.raises(ValueError, match="unknown movable joint 'elbow'"):
        robot.rollout(q0, v0, tau, DT, prescribed={"elbow": sine(1.0, 1.0, 0.0)})
    with pytest.raises(ValueError, match=r"prescribed\['crank_joint'\] must be a callable"):
        robot.rollout(q0, v0, tau, DT, prescribed={"crank_joint": 0.5})
    with pytest.raises(ValueError, match=r"prescribed\['crank_joint'\].*non-finite"):
        robot.rollout(q0, v0, tau, DT,
                      prescribed={"crank_joint": lambda t: (0.0, math.nan, 0.0)})
    with pytest.raises(ValueError, match=r"crank_joint.*\(q, qd, qdd\)"):
        robot.rollout(q0, v0, tau, DT, prescribed={"crank_joint": lambda t: 1.0})
