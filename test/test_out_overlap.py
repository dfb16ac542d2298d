"""out= overlapping an input, for every method that takes out= on every kind of robot (tree,
floating base, generated kernels, closed loops, flexible links, flexible closed loops) and the
batch forms: the README promises that overlap is safe, so each result must equal the one computed
into a fresh array from untouched inputs (before the fix, mass_matrix(q, out=...) with out over q
was off by up to 1.6, the closed-loop forward dynamics refused a view of q, the batch forms refused
any overlap). Each input is laid in one buffer with out: out exactly on it, and shifted by one
entry either way, and over its last entry only. Checked through numba's dispatcher first, then
again with the C-level entries installed (compile_c_calls), which take the hot path.

Reference: the same library's result with fresh inputs and a fresh out (the operation under test is
the handling of memory only), compared at 1e-12 of the result's scale: the same arithmetic on the
same numbers, only the buffer differs (bit-identical in practice)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close

ROOT = Path(__file__).resolve().parents[1]
SAME = 1e-12   # see the module docstring


def _load(kind):
    urdf, config = ROOT / "urdf", ROOT / "config"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if kind == "tree":
            return mbd_ros.load(str(urdf / "arm7.urdf"))
        if kind == "floating":
            return mbd_ros.load(str(urdf / "branching.urdf"), floating_base=True)
        if kind == "codegen":
            return mbd_ros.load(str(urdf / "branching.urdf"), floating_base=True, codegen=True)
        if kind == "closed_loop":
            return mbd_ros.load(str(urdf / "fourbar.urdf"),
                                closures=str(config / "fourbar_closures.yaml"))
        if kind == "closed_loop_floating":
            return mbd_ros.load(str(urdf / "leg_fourbar_floating.urdf"), floating_base=True,
                                closures=str(config / "leg_fourbar_closures.yaml"))
        if kind == "codegen_closed_loop":
            return mbd_ros.load(str(urdf / "fourbar.urdf"), codegen=True,
                                closures=str(config / "fourbar_closures.yaml"))
        if kind == "flexible":   # with joint damping and friction (bias_forces subtracts them)
            text = (urdf / "flexible_arm.urdf").read_text().replace(
                '<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><dynamics damping="0.7" friction="0.05"/>')
            return mbd_ros.load(text, flexible=str(config / "flexible_arm.yaml"))
        if kind == "flexible_closed_loop":
            path = str(config / "flexible_fourbar.yaml")
            return mbd_ros.load(str(urdf / "flexible_fourbar.urdf"), flexible=path, closures=path)
    raise AssertionError(kind)


KINDS = ["tree", "floating", "codegen", "closed_loop", "closed_loop_floating",
         "codegen_closed_loop", "flexible", "flexible_closed_loop"]


def _state(robot):
    """A valid state: on the loops for closed-loop robots, elastic coordinates deflected."""
    rng = np.random.default_rng(5)
    q = robot.random_configuration(rng)
    if len(robot.elastic_q_indices):
        q[robot.elastic_q_indices] = 1e-3 * rng.standard_normal(len(robot.elastic_q_indices))
    v = 0.3 * rng.standard_normal(robot.nv)
    tau = rng.standard_normal(robot.nv)
    if robot.closure_names:   # on the loops, bent: the elastic coordinates move too
        q = robot.assemble(q, elastic=True) if len(robot.elastic_names) else robot.assemble(q)
        v = robot.project_velocity(q, v)
    return q, v, tau


def _cases(robot):
    """(label, method name, inputs {name: array}, keyword arguments, out shape)."""
    q, v, tau = _state(robot)
    qdd = robot.forward_dynamics(q, v, tau)   # loop-consistent for the closed-loop robots
    f_ext = np.zeros((len(robot.link_names), 6))
    welded = robot.flexible.link_shapes if len(robot.elastic_names) else {}   # f_ext refused there
    link = max(i for i in range(len(robot.link_names)) if i not in welded)
    f_ext[link] = [1.0, -2.0, 0.5, 0.1, 0.2, -0.3]
    nv, nq, n = robot.nv, robot.nq, 5
    wrench_rows = (len(robot.wrench_joint_names), 6)
    cases = [
        ("fd", "forward_dynamics", dict(q=q, v=v, tau=tau), {}, (nv,)),
        ("id", "inverse_dynamics", dict(q=q, v=v, qdd=qdd), {}, (nv,)),
        ("mass", "mass_matrix", dict(q=q), {}, (nv, nv)),
        ("bias", "bias_forces", dict(q=q, v=v), {}, (nv,)),
        ("gravity", "gravity_forces", dict(q=q), {}, (nv,)),
        ("wrenches", "joint_wrenches", dict(q=q, v=v, qdd=qdd), {}, wrench_rows),
        ("integrate", "integrate", dict(q=q, v=v), {"dt": 0.01}, (nq,)),
        ("fd_batch", "forward_dynamics_batch",
         dict(q=np.tile(q, (n, 1)), v=np.tile(v, (n, 1)), tau=np.tile(tau, (n, 1))), {}, (n, nv)),
        ("id_batch", "inverse_dynamics_batch",
         dict(q=np.tile(q, (n, 1)), v=np.tile(v, (n, 1)), qdd=np.tile(qdd, (n, 1))), {}, (n, nv)),
    ]
    if not robot.closure_names or not len(robot.elastic_names):   # f_ext (flexible loops: on
        cases += [                                                  # a link welded to a flexible
            ("fd_fext", "forward_dynamics", dict(q=q, v=v, tau=tau, f_ext=f_ext), {}, (nv,)),
            ("wrenches_fext", "joint_wrenches", dict(q=q, v=v, qdd=qdd, f_ext=f_ext), {},
             wrench_rows)]
        if not robot.closure_names:   # closed-loop ID with f_ext needs a qdd consistent with it
            cases.append(("id_fext", "inverse_dynamics", dict(q=q, v=v, qdd=qdd, f_ext=f_ext),
                          {}, (nv,)))
    if robot.closure_names and not len(robot.elastic_names):
        cases += [(f"fd_{m}", "forward_dynamics", dict(q=q, v=v, tau=tau), {"method": m}, (nv,))
                  for m in ("minimal", "descriptor")]
    return cases


def _layouts(array, out_shape):
    """(input copy, out) pairs whose memory overlaps: out exactly on the input (same size), out
    shifted by -1 and +1 entries, and out over the input's last entry only."""
    size, out_size = array.size, int(np.prod(out_shape))
    shifts = sorted({-1, 1, size - 1} | ({0} if size == out_size else set()))
    for shift in shifts:
        buffer = np.zeros(size + out_size + 4)
        start = 2
        buffer[start:start + size] = array.ravel()
        inp = buffer[start:start + size].reshape(array.shape)
        out = buffer[start + shift:start + shift + out_size].reshape(out_shape)
        assert np.shares_memory(inp, out)
        yield shift, inp, out


def _check_overlaps(robot, kind):
    for label, name, inputs, kwargs, out_shape in _cases(robot):
        expected = getattr(robot, name)(**{k: a.copy() for k, a in inputs.items()}, **kwargs)
        for target in inputs:
            for shift, inp, out in _layouts(inputs[target], out_shape):
                args = {k: (inp if k == target else a.copy()) for k, a in inputs.items()}
                result = getattr(robot, name)(**args, **kwargs, out=out)
                where = f"{kind} {label}: out over {target} (shift {shift})"
                assert result is out, where
                assert_close(result, expected, where, rtol=SAME)


@pytest.mark.parametrize("kind", KINDS)
def test_out_overlapping_an_input_gives_the_fresh_result(kind):
    robot = _load(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no LoopResidualWarning: the inputs stay on the loops
        _check_overlaps(robot, kind)
        robot.compile_c_calls()            # the hot path: C-level entries (where the robot has them)
        _check_overlaps(robot, kind + " (C entries)")
