"""The closed-loop sample mechanisms (urdf/ + config/): each loads, its closure file parses, the
loops close at the documented configuration (q = neutral), and the closure Jacobian has the
documented rank and degrees of freedom, with the actuated joints a valid set of independent
coordinates. Link poses come from the library's forward kinematics (Robot.link_pose), the cut
kinematics from kernels/closure_kinematics.py, the closure Jacobian dg/dq from central
differences along robot.integrate (so it is independent of the cut Jacobians)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.model import layout as L
from mbd_ros.inputs.closures import read_closures
from mbd_ros.kernels import closure_kinematics as ck
from mbd_ros.kernels.kinematics import forward_kinematics

from conftest import assert_close

ROOT = Path(__file__).resolve().parents[1]

# name: (urdf, closures, floating_base, rows, rank of dg/dq, degrees of freedom)
SAMPLES = {
    "fourbar": ("fourbar.urdf", "fourbar_closures.yaml", False, 5, 2, 1),
    "fourbar_spherical": ("fourbar.urdf", "fourbar_spherical_cut.yaml", False, 3, 2, 1),
    "spatial_rssr": ("spatial_rssr.urdf", "spatial_rssr_closures.yaml", False, 3, 3, 1),
    "delta3": ("delta3.urdf", "delta3_closures.yaml", False, 8, 8, 3),
    "leg_fourbar": ("leg_fourbar_floating.urdf", "leg_fourbar_closures.yaml", True, 5, 2, 8),
}


class Loops:
    """A sample robot with its closures, evaluated with the cut kernel."""

    def __init__(self, name):
        urdf, closures, floating, *_ = SAMPLES[name]
        self.robot = mbd_ros.load(str(ROOT / "urdf" / urdf), floating_base=floating)
        self.closures = read_closures(str(ROOT / "config" / closures), self.robot.link_names)
        model = self.robot.model
        index = {n: i for i, n in enumerate(model.link_names)}
        self.cuts = []
        for spec in self.closures.closures:
            ends = []
            for link in (spec.parent, spec.child):
                i = index[link]
                rot = model.link_float[i, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
                pos = model.link_float[i, L.LINK_POS:L.LINK_POS + 3]
                ends.append((int(model.link_int[i, L.LINK_BODY]), (rot, pos)))
            (body_a, place_a), (body_b, place_b) = ends
            self.cuts.append((ck.cut_type_code(spec.type), ck.cut_row(spec, place_a, place_b),
                              body_a, body_b))
        self.rows = sum(ck.CUT_ROWS[code] for code, *_ in self.cuts)

    def terms(self, q, v=None):
        """(g, G v) stacked over the cuts; body poses and body-frame velocities from the tree."""
        robot = self.robot
        work = np.zeros_like(robot.tree.work)
        forward_kinematics(robot.tree.body_int, robot.tree.body_float, work, np.asarray(q, float),
                           np.zeros(robot.nv) if v is None else np.asarray(v, float))
        g, gv = [], []
        for code, row, a, b in self.cuts:
            n = ck.CUT_ROWS[code]
            res, bias = np.zeros(n), np.zeros(n)
            ja, jb = np.zeros((n, 6)), np.zeros((n, 6))
            wa, wb = work[a], work[b]
            # the kernel reads rows of the workspace in place, as the closed-loop solver will
            ck.closure_kinematics(code, row, wa[L.WORLD_ROT:L.WORLD_ROT + 9],
                                  wa[L.WORLD_POS:L.WORLD_POS + 3], wa[L.VEL:L.VEL + 6],
                                  wb[L.WORLD_ROT:L.WORLD_ROT + 9], wb[L.WORLD_POS:L.WORLD_POS + 3],
                                  wb[L.VEL:L.VEL + 6], res, ja, jb, bias)
            g.append(res)
            gv.append(ja @ wa[L.VEL:L.VEL + 6] + jb @ wb[L.VEL:L.VEL + 6])
        return np.concatenate(g), np.concatenate(gv)

    def residual(self, q):
        return self.terms(q)[0]

    def closure_jacobian(self, q, h=1e-6):
        """dg/dq (rows, nv) by central differences along q (+) e_k h."""
        robot = self.robot
        cols = []
        for k in range(robot.nv):
            e = np.zeros(robot.nv)
            e[k] = h
            cols.append((self.residual(robot.integrate(q, e, 1.0))
                         - self.residual(robot.integrate(q, -e, 1.0))) / (2 * h))
        return np.column_stack(cols)


@pytest.fixture(scope="module", params=sorted(SAMPLES))
def loops(request):
    return request.param, Loops(request.param)


def test_closes_at_neutral(loops):
    name, sample = loops
    rows = SAMPLES[name][3]
    assert sample.rows == rows
    assert_close(sample.residual(sample.robot.neutral()), np.zeros(rows),
                 f"{name}: closure residual at q = neutral")


def test_rank_and_degrees_of_freedom(loops):
    name, sample = loops
    _, _, _, rows, rank, dof = SAMPLES[name]
    robot = sample.robot
    jac = sample.closure_jacobian(robot.neutral())
    singular = np.linalg.svd(jac, compute_uv=False)
    numeric_rank = int(np.sum(singular > 1e-7 * singular.max()))
    assert numeric_rank == rank, f"{name}: singular values {singular}"
    if rank < min(jac.shape):
        assert singular[rank] < 1e-9, f"{name}: redundant rows are not exactly redundant"
    assert robot.nv - rank == dof
    # the actuated joints (plus a floating base) are valid independent coordinates: the
    # columns of the other joints have the full rank
    actuated = set(sample.closures.actuated) | {"root_joint"}
    assert set(sample.closures.actuated) <= set(robot.joint_names)
    dependent = [iv + k for jn, iv, t in zip(robot.joint_names, robot.idx_v, robot.joint_types)
                 if jn not in actuated
                 for k in range({"floating": 6, "spherical": 3, "planar": 3}.get(t, 1))]
    assert len(dependent) == rank, f"{name}: {len(dependent)} dependent joints for rank {rank}"
    assert np.linalg.matrix_rank(jac[:, dependent], tol=1e-7 * singular.max()) == rank


def test_cut_jacobians_match_the_tree(loops):
    """G_a v_a + G_b v_b with the tree's body velocities (work VEL) equals dg/dq v: the cut
    kernel and the tree kernels agree on frames (body-frame twists, world poses)."""
    name, sample = loops
    robot = sample.robot
    rng = np.random.default_rng(5)
    q = robot.integrate(robot.neutral(), 0.3 * rng.normal(size=robot.nv), 1.0)   # off the manifold
    v = rng.normal(size=robot.nv)
    _, gv = sample.terms(q, v)
    assert_close(gv, sample.closure_jacobian(q) @ v, f"{name}: G v vs dg/dq v", rtol=1e-7)


def test_fourbar_closed_form():
    """The Freudenstein relation of urdf/fourbar.urdf holds on the loop over a full crank turn
    (crank-rocker), solving the dependent angles with Newton on the cut residual."""
    sample = Loops("fourbar")
    l1, l2, l4 = 0.34, 0.10, 0.30
    k1, k2, k3 = l1 / l2, l1 / l4, 157.0 / 75.0
    q = np.zeros(3)
    for crank in np.linspace(0.0, 2 * np.pi, 37)[1:]:
        q[0] = crank
        for _ in range(30):
            g = sample.residual(q)
            jac = sample.closure_jacobian(q)[:, 1:]
            step = np.linalg.lstsq(jac, -g, rcond=None)[0]
            q[1:] += step
            if np.abs(step).max() < 1e-13:
                break
        assert_close(sample.residual(q), np.zeros(5), f"loop closed at crank {crank:.3f}")
        theta2 = 2.498091545 - q[0]
        theta4 = 2.214297436 - q[2]
        assert abs(k1 * np.cos(theta4) - k2 * np.cos(theta2) + k3 - np.cos(theta2 - theta4)) < 1e-8


def close_loop(sample, q, independent, iterations=40):
    """Newton on the dependent joints (all but `independent`, velocity indices) until g = 0."""
    robot = sample.robot
    dependent = [k for k in range(robot.nv) if k not in independent]
    for _ in range(iterations):
        jac = sample.closure_jacobian(q)[:, dependent]
        step = np.zeros(robot.nv)
        step[dependent] = np.linalg.lstsq(jac, -sample.residual(q), rcond=None)[0]
        q = robot.integrate(q, step, 1.0)
        if np.abs(step).max() < 1e-13:
            break
    return q


def test_spatial_rssr_full_crank_turn():
    """The RUSR crank turns fully: the loop closes at every crank angle (continuation from
    q = 0) and the dependent joints' 3 x 3 block stays regular (no singularity)."""
    sample = Loops("spatial_rssr")
    q = sample.robot.neutral()
    worst = np.inf
    for crank in np.linspace(0.0, 2 * np.pi, 73)[1:]:
        q[0] = crank
        q = close_loop(sample, q, [0])
        assert_close(sample.residual(q), np.zeros(3), f"loop closed at crank {crank:.3f}")
        worst = min(worst, np.linalg.svd(sample.closure_jacobian(q)[:, 1:], compute_uv=False)[-1])
    assert worst > 1e-2, f"near-singular dependent block: smallest singular value {worst}"
    assert abs(q[0] - 2 * np.pi) < 1e-12


def test_delta3_platform_translates():
    """Tsai's condition holds: at other assembled configurations the platform keeps the base's
    orientation, and every motion compatible with the loops translates it."""
    sample = Loops("delta3")
    robot = sample.robot
    arms = [robot.joint_names.index(f"arm_{i}_joint") for i in (1, 2, 3)]
    for target in ([0.3, -0.2, 0.5], [-0.4, 0.1, 0.2], [0.6, 0.6, 0.6]):
        q = robot.neutral()
        for steps in np.linspace(0.0, 1.0, 6)[1:]:             # continuation from q = 0
            q[arms] = steps * np.asarray(target)
            q = close_loop(sample, q, arms)
        assert_close(sample.residual(q), np.zeros(8), f"loops closed at arms {target}")
        assert_close(robot.link_pose(q, "platform")[:3, :3], np.eye(3), "platform orientation")
        null = np.linalg.svd(sample.closure_jacobian(q))[2][-3:]     # loop-compatible motions
        for v in null:
            h = 1e-6
            plus = robot.link_pose(robot.integrate(q, h * v, 1.0), "tool")
            minus = robot.link_pose(robot.integrate(q, -h * v, 1.0), "tool")
            spin = plus[:3, :3] @ minus[:3, :3].T
            assert np.abs(spin - np.eye(3)).max() < 1e-9
            assert np.linalg.norm(plus[:3, 3] - minus[:3, 3]) > 1e-3 * h


def test_leg_knee_crank_turns_fully():
    """The leg's knee four-bar is a crank-rocker: with the hip still, knee_motor turns a full
    turn, the loop closes all along with a regular dependent block, and the knee swings
    between about -1.11 and +1.18 rad (urdf/leg_fourbar_floating.urdf)."""
    sample = Loops("leg_fourbar")
    robot = sample.robot
    iv = {name: int(i) for name, i in zip(robot.joint_names, robot.idx_v)}
    iq = {name: int(i) for name, i in zip(robot.joint_names, robot.idx_q)}
    independent = list(range(6)) + [iv["hip"], iv["knee_motor"]]
    dependent = [iv["knee"], iv["rod_hinge"]]
    q = robot.neutral()
    knees, worst = [], np.inf
    for motor in np.linspace(0.0, 2 * np.pi, 73)[1:]:
        q[iq["knee_motor"]] = motor
        q = close_loop(sample, q, independent)
        assert_close(sample.residual(q), np.zeros(5), f"loop closed at knee_motor {motor:.3f}")
        knees.append(q[iq["knee"]])
        worst = min(worst, np.linalg.svd(sample.closure_jacobian(q)[:, dependent],
                                         compute_uv=False)[-1])
    assert worst > 1e-2
    assert -1.12 < min(knees) < -1.10 and 1.17 < max(knees) < 1.19
    assert abs(q[iq["knee"]]) < 1e-9               # back to the start after a full turn
