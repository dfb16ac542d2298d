"""The C-level RK4 step (KernelCall.rk4, mbd_ros/fastcall/_fastcall.c): Simulator._rk4 takes it
when the robot's forward dynamics has its C entry. It must give the same bits as the Python
path (numba vector updates + one forward dynamics call per stage), stay fourth order, and hand
anything it cannot do (NaN, wrong buffers) back to the Python path, which raises as before."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros import fastcall
from conftest import require_fastcall
from mbd_ros.robot.integrators import SimulationDiverged, Simulator

REPO = Path(mbd_ros.__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def extension():
    require_fastcall()


def load(kind):
    if kind == "flexible":
        return mbd_ros.load(str(REPO / "urdf" / "flexible_arm.urdf"),
                            flexible=str(REPO / "config" / "flexible_arm.yaml"))
    return mbd_ros.load(str(REPO / "urdf" / "arm7.urdf"), passive_forces=False,
                        codegen=(kind == "codegen"))


def simulate(robot, c_calls, steps=200, dt=1e-3, seed=3):
    """(q, v) after `steps` RK4 steps from a random state with random held torques, with the C
    entries installed (c_calls) or dropped; and the number of FD calls made at C level."""
    if c_calls:
        robot.compile_c_calls()
    else:
        robot.drop_c_calls()
    rng = np.random.default_rng(seed)
    q0 = robot.neutral() + 0.3 * rng.normal(size=robot.nq)
    v0 = rng.normal(size=robot.nv)
    elastic_q = list(getattr(robot, "elastic_q_indices", ()))
    elastic_v = list(getattr(robot, "elastic_v_indices", ()))
    q0[elastic_q] *= 1e-3         # modal coordinates: small deflections
    v0[elastic_v] *= 1e-3
    tau = 2.0 * rng.normal(size=robot.nv)
    sim = Simulator(robot, dt, "rk4", q=q0, v=v0)
    fd = robot.__dict__.get("forward_dynamics")
    before = fd.counts()[0] if fd is not None else 0
    for _ in range(steps):
        sim.step(tau)
    after = fd.counts()[0] if fd is not None else 0
    return sim.q.copy(), sim.v.copy(), after - before


@pytest.mark.parametrize("kind", ["generic", "codegen", "flexible"])
def test_c_level_rk4_gives_the_bits_of_the_python_path(kind):
    dt = 1e-5 if kind == "flexible" else 1e-3     # RK4's stability limit of the stiff modes
    fast_q, fast_v, fast_calls = simulate(load(kind), True, dt=dt)
    slow_q, slow_v, slow_calls = simulate(load(kind), False, dt=dt)
    # 200 steps, 4 FD each; the 3 inner stages of every step at C level
    assert fast_calls >= 3 * 200 and slow_calls == 0
    assert np.array_equal(fast_q, slow_q) and np.array_equal(fast_v, slow_v)


def test_c_level_rk4_is_fourth_order():
    """Independent of the Python path: the end-point error shrinks 16x per halved step
    (Richardson, against a step 8x finer)."""
    robot = load("generic")

    def final(dt):
        q, v, calls = simulate(robot, True, steps=round(0.2 / dt), dt=dt)
        assert calls > 0
        return np.concatenate([q, v])
    reference = final(0.25e-3)
    e1 = np.linalg.norm(final(4e-3) - reference)
    e2 = np.linalg.norm(final(2e-3) - reference)
    assert 12.0 < e1 / e2 < 20.0


def test_nan_state_falls_back_and_raises_as_before():
    robot = load("generic")
    robot.compile_c_calls()
    sim = Simulator(robot, 1e-3, "rk4", q=robot.neutral())
    sim.evaluate(np.zeros(robot.nv))
    sim.qdd[2] = np.nan          # the stages' FD sees a NaN state: the C step says "not me"
    q_before = sim.q.copy()
    with pytest.raises((ValueError, SimulationDiverged)):
        sim.advance()
    assert np.array_equal(sim.q, q_before)


def test_rk4_entry_refuses_wrong_buffers():
    robot = load("generic")
    robot.compile_c_calls()
    fd = robot.__dict__["forward_dynamics"]
    n = robot.nv
    z = np.zeros(n)
    assert fd.rk4(z, z, z, z, 1e-3, np.zeros((7, n)), np.zeros(n), np.zeros(n)) is True
    assert fd.rk4(z, z, z, z, 1e-3, np.zeros((6, n)), np.zeros(n), np.zeros(n)) is False
    assert fd.rk4(z, z, z, z[:-1], 1e-3, np.zeros((7, n)), np.zeros(n), np.zeros(n)) is False
    assert fd.rk4(z, z, z, z, 1e-3, np.zeros((7, n)), np.zeros(n, dtype=np.float32),
                  np.zeros(n)) is False
    with pytest.raises(TypeError):
        fd.rk4(z, z, z, z, 1e-3, np.zeros((7, n)), np.zeros(n))


def test_closed_loop_rk4_at_c_level_gives_the_bits_of_the_python_path():
    """A closed-loop robot's forward dynamics C entry (thread-affine: its multipliers are per
    thread) also takes the whole step; same bits as the Python path."""
    from conftest import import_oracle
    from test_closed_loops import case
    pinocchio = import_oracle("pinocchio")
    results = []
    for c_calls in (True, False):
        robot, _, _, q0, _ = case("spatial_rssr", pinocchio)
        if c_calls:
            robot.compile_c_calls()
        else:
            robot.drop_c_calls()
        fd = robot.__dict__.get("forward_dynamics")
        before = fd.counts()[0] if fd is not None else 0
        sim = Simulator(robot, 1e-3, "rk4", q=q0)
        tau = np.full(robot.nv, 0.3)
        for _ in range(200):
            sim.step(tau)
        after = fd.counts()[0] if fd is not None else 0
        results.append((sim.q.copy(), sim.v.copy(), after - before))
    (fast_q, fast_v, fast_calls), (slow_q, slow_v, slow_calls) = results
    assert fast_calls >= 3 * 200 and slow_calls == 0
    assert np.array_equal(fast_q, slow_q) and np.array_equal(fast_v, slow_v)
