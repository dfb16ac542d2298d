"""Closed loops in the compiled rollout engine: robot.step's projection in numba
(kernels/rollout_projection.py).

References: numpy's LAPACK least squares (np.linalg.lstsq, SVD) for the minimum-norm solve,
robot.step's Python projection (Constraints.project_state) for the compiled one, the
projection's own invariants (the loops closed below ASSEMBLY_TOLERANCE, G v+ = 0, a correction
M-orthogonal to the admissible motions), and repeated robot.step for whole rollouts.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbd_ros
from loop_robots import CONFIG, ROBOTS, URDF, fourbar
from mbd_ros.kernels import rollout_projection as P
from mbd_ros.kernels.linalg import RANK_TOLERANCE
from mbd_ros.robot import constraints as C
from mbd_ros.robot.rollout_compiled import engine_of


EPS = np.finfo(float).eps
DT = 1e-3


def solve(a, b):
    """kernels' min_norm_solve on a (m, n), b (m,) -> (x, rank)."""
    m, n = a.shape
    p = max(m, n)
    t, normal = np.zeros((p, p)), np.zeros((p, p))
    scratch = np.zeros((5, p))
    perm = np.zeros(p, dtype=np.int64)
    x = np.zeros(n)
    rank = P.min_norm_solve(np.ascontiguousarray(a), m, n, np.array(b, float), x, t, normal,
                            *scratch, perm)
    return x, rank


def planar_loop_jacobian(rng, n=3):
    """A 5 x n closure Jacobian of rank 2, like a planar four-bar's closed by a 3-D revolute
    cut: two in-plane rows and three rows that are combinations of them."""
    rows = rng.standard_normal((2, n))
    mix = rng.standard_normal((3, 2))
    return np.vstack([rows, mix @ rows])


@pytest.mark.parametrize("case", ["full_rank", "rank_2_of_5", "zero_rows", "square_psd"])
def test_min_norm_solve_equals_lapack_lstsq(case):
    rng = np.random.default_rng(3)
    for _ in range(20):
        if case == "full_rank":
            a = rng.standard_normal((5, 3))
        elif case == "rank_2_of_5":
            a = planar_loop_jacobian(rng)
        elif case == "zero_rows":   # the out-of-plane rows of an exactly planar loop
            a = np.vstack([rng.standard_normal((2, 3)), np.zeros((3, 3))])
        else:                       # K = G M^-1 G^T of a redundant loop (rank 2 of 5)
            g = planar_loop_jacobian(rng)
            root = rng.standard_normal((3, 3))
            a = g @ np.linalg.inv(root @ root.T + 3 * np.eye(3)) @ g.T
        b = rng.standard_normal(a.shape[0])   # not in the range of a: a least-squares problem
        x, rank = solve(a, b)
        reference, _, lapack_rank, sigma = np.linalg.lstsq(a, b, rcond=RANK_TOLERANCE)
        assert rank == lapack_rank
        kept = sigma[sigma > RANK_TOLERANCE * sigma[0]]
        condition = kept[0] / kept[-1]
        # the normal equations of the rank-r part: round-off times cond^2, per unit of |x|
        tolerance = 32 * EPS * condition ** 2 * max(1.0, np.abs(reference).max())
        np.testing.assert_allclose(x, reference, rtol=0, atol=tolerance)


def project_compiled(robot, q, v):
    """The kernel's projection of (q, v) on a fresh thread workspace -> (q, v, converged)."""
    loops = engine_of(robot).loop_arrays()
    q, v = np.array(q, float), np.array(v, float)
    done = P.project_state(loops, loops[10], q, v, False)
    return q, v, done


@pytest.mark.parametrize("name", list(ROBOTS))
def test_compiled_projection_equals_robot_steps(name):
    robot = ROBOTS[name]()
    rng = np.random.default_rng(7)
    q_closed = robot.assemble(robot.neutral())
    assert C.ASSEMBLY_TOLERANCE == P.ASSEMBLY_TOLERANCE
    for trial in range(10):
        # the loop opened as an integration step opens it, and far more (1e-3 rad)
        q = robot.integrate(q_closed, 10.0 ** -rng.uniform(3, 9) * rng.standard_normal(robot.nv),
                            1.0)
        v = rng.standard_normal(robot.nv)
        q_ref, v_ref = robot.project_state(q, v)
        q_new, v_new, done = project_compiled(robot, q, v)
        assert done
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=64 * EPS)
        np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=64 * EPS * np.abs(v).max())
        # the projection's invariants, independently of robot.step's
        position, velocity = robot.closure_residual(q_new, v_new)
        assert position < C.ASSEMBLY_TOLERANCE
        assert velocity < 64 * EPS * np.abs(v).max()
        jacobian = robot._constraints.state(q_new, np.zeros(robot.nv))[1]
        admissible = C.null_space(jacobian)[0]         # motions with G v = 0
        assert admissible.shape[1] >= 1
        mass = robot.mass_matrix(q_new)
        # least kinetic energy: the correction is M-orthogonal to every admissible motion
        orthogonality = admissible.T @ mass @ (v_new - v)
        assert np.abs(orthogonality).max() < 64 * EPS * np.abs(mass).max() * np.abs(v).max()


@pytest.mark.parametrize("name", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_long_rollout_projects_in_numba(name, integrator, monkeypatch):
    """300 rows: the compiled rollout never returns to Python's projection and stays equal to
    repeated robot.step (the Python projection) to round-off, the loops closed."""
    robot = ROBOTS[name]()
    rng = np.random.default_rng(9)
    q0 = robot.assemble(robot.neutral())
    # the wishbone's strut damps it hard: kicked harder so that RK4 opens the loop too
    speed, torque = (0.3, 0.5) if name == "fourbar" else (30.0, 50.0)
    v0 = robot.project_velocity(q0, speed * rng.standard_normal(robot.nv))
    tau = torque * rng.standard_normal((300, robot.nv))
    calls = []
    python_projection = C.Constraints.project_state

    def counted(self, *args, **kwargs):
        calls.append(1)
        return python_projection(self, *args, **kwargs)

    monkeypatch.setattr(C.Constraints, "project_state", counted)
    start = robot.time
    rows_q, rows_v = [q0], [v0]
    q, v = q0, v0
    for k in range(len(tau)):
        q, v = robot.step(q, v, tau[k], DT, integrator)
        rows_q.append(q)
        rows_v.append(v)
    robot.time = start
    q_ref, v_ref = np.array(rows_q), np.array(rows_v)
    projections = len(calls)
    assert projections >= 5   # robot.step projected: the rollout must too
    calls.clear()
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
    assert result.status == "ok"
    assert calls == []
    rows = len(tau) + 1
    np.testing.assert_allclose(result.Q, q_ref, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(q_ref).max()))
    np.testing.assert_allclose(result.V, v_ref, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(v_ref).max()))
    position, velocity = robot.closure_residual(result.Q[-1], result.V[-1])
    assert position < C.PROJECTION_TOLERANCE and velocity < C.PROJECTION_TOLERANCE


def test_declined_projection_falls_back_to_robot_steps_own():
    """When the kernel declines (here: disabled; in use: Gauss-Newton not converged, which
    robot.step answers by re-assembling), the row resumes after robot.step's Python projection:
    then the rollout is robot.step's bit for bit."""
    robot = fourbar()
    engine_of(robot).python_projection = True
    rng = np.random.default_rng(4)
    q0 = robot.assemble(robot.neutral())
    v0 = robot.project_velocity(q0, 0.3 * rng.standard_normal(robot.nv))
    tau = 0.5 * rng.standard_normal((60, robot.nv))
    for integrator in ("rk4", "semi_implicit_euler"):
        result = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="compiled")
        reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="reference")
        np.testing.assert_array_equal(result.Q, reference.Q)
        np.testing.assert_array_equal(result.V, reference.V)


def test_open_loops_at_a_stage_do_not_stop_the_compiled_rollout():
    """Where robot.forward_dynamics warns that the loops are open (beyond
    LOOP_RESIDUAL_WARNING) and goes on, robot.step goes on with its result, and so does the
    compiled rollout (it stopped "diverged", naming a state where nothing failed: an outside
    audit): an unassembled q0 (crank 0.01 rad off, warned once for q0), and RK4's middle stages
    of a four-bar spun up to ~570 rad/s by a constant crank torque (the stages open the loop by
    millimetres; the projection closes every row). Both equal the reference engine (robot.step
    repeated) to round-off."""
    robot = fourbar()
    crank = robot.joint_names.index("crank_joint")
    q_open = robot.assemble(robot.neutral())
    q_open[crank] += 0.01
    assert robot.closure_residual(q_open)[0] > C.LOOP_RESIDUAL_WARNING
    spin = np.zeros((100, robot.nv))
    spin[:, crank] = 5.0
    cases = [(q_open, np.zeros((10, robot.nv))), (robot.assemble(robot.neutral()), spin)]
    for q0, tau in cases:
        with pytest.warns(C.LoopResidualWarning):
            reference = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="rk4",
                                      engine="reference")
        if q0 is q_open:
            with pytest.warns(C.LoopResidualWarning, match="rollout: q0"):
                result = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="rk4",
                                       engine="compiled")
        else:
            result = robot.rollout(q0, np.zeros(robot.nv), tau, DT, integrator="rk4",
                                   engine="compiled")
        assert reference.status == "ok" and result.status == "ok", result.message
        rows = len(tau) + 1
        scale = max(1.0, np.abs(reference.V).max())
        np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=64 * EPS * rows * scale)
        np.testing.assert_allclose(result.V, reference.V, rtol=0, atol=64 * EPS * rows * scale)
    assert np.abs(reference.V).max() > 300.0   # fast enough that the stages opened the loop


def limited_fourbar(tmp_path, upper, codegen=False):
    """The four-bar with its crank a revolute joint limited to [-upper, upper] rad (codegen:
    on a generated tree)."""
    text = (URDF / "fourbar.urdf").read_text()
    old = '<joint name="crank_joint" type="continuous">'
    assert old in text and '<limit effort="5" velocity="20"/>' in text
    text = text.replace(old, '<joint name="crank_joint" type="revolute">').replace(
        '<limit effort="5" velocity="20"/>',
        f'<limit effort="5" velocity="20" lower="{-upper}" upper="{upper}"/>')
    path = tmp_path / "fourbar_limited.urdf"
    path.write_text(text)
    return mbd_ros.load(str(path), closures=str(CONFIG / "fourbar_closures.yaml"),
                        codegen=codegen)


@pytest.mark.parametrize("codegen", [False, True], ids=["rigid", "generated"])
@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_closed_loop_stops_run_compiled_and_equal_the_reference(tmp_path, integrator, codegen,
                                                                monkeypatch):
    """limits=True on a closed loop: the Plant's stops (JointLimits.enforce) after each
    robot.step, in the compiled loop; against the reference engine (repeated robot.step and
    the stops in Python) to the projection's round-off, the crank held at its stop. Also on a
    generated tree (codegen=True): its generated M and the recursive CRBA the compiled stops
    use differ by round-off, inside the same bound."""
    upper = 0.05
    robot = limited_fourbar(tmp_path, upper, codegen)
    assert robot.tree.kind == ("generated" if codegen else "rigid")
    crank = int(robot.idx_v[robot.joint_names.index("crank_joint")])
    q0 = robot.assemble(robot.neutral())
    v0 = np.zeros(robot.nv)
    steps = 300
    free = None
    for sign in (1.0, -1.0):   # the direction that drives the crank out of [-upper, upper]
        tau = np.zeros((steps, robot.nv))
        tau[:, crank] = sign * 0.05
        free = robot.rollout(q0, v0, tau, DT, integrator=integrator, engine="reference")
        if np.abs(free.Q[:, crank]).max() > 2 * upper:
            break
    assert np.abs(free.Q[:, crank]).max() > 2 * upper   # without stops it leaves the range
    calls = []
    python_projection = C.Constraints.project_state

    def counted(self, *args, **kwargs):
        calls.append(1)
        return python_projection(self, *args, **kwargs)

    reference = robot.rollout(q0, v0, tau, DT, integrator=integrator, limits=True,
                              engine="reference")
    monkeypatch.setattr(C.Constraints, "project_state", counted)
    result = robot.rollout(q0, v0, tau, DT, integrator=integrator, limits=True,
                           engine="compiled")
    assert result.status == reference.status == "ok"
    assert calls == []   # projected in numba
    rows = steps + 1
    np.testing.assert_allclose(result.Q, reference.Q, rtol=0, atol=64 * EPS * rows)
    np.testing.assert_allclose(result.V, reference.V, rtol=0,
                               atol=64 * EPS * rows * max(1.0, np.abs(reference.V).max()))
    # the stop held: the stops come last in each row, so every row ends within the limit (to
    # round-off of the placement), and the crank rests on it for most of the run
    crank_q = np.abs(result.Q[:, crank])
    assert crank_q.max() <= upper + 8 * EPS
    assert np.count_nonzero(crank_q > upper - 1e-9) > steps // 3
