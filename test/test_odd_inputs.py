"""Inputs of odd types at every public method of every kind of robot: either the right result or a
ValueError naming the argument, never a silently different result, another exception or a crash.

- complex arrays (numpy silently dropped the imaginary part), boolean and string arrays (numpy
  took True as 1.0 and parsed "0.3") are refused, naming the argument;
- integer and float32 arrays, Fortran-ordered, strided and read-only arrays give the float64
  result (references: the same library's result on the float64 array; integer inputs are
  compared with the float64 array of the same integers);
- a 0-d array where a vector belongs is a ValueError (with the C-level entries installed it
  crashed the interpreter: the C check read dimension 0 of a 0-d array);
- link_pose(q, [name]) names the link argument (it raised TypeError: unhashable list);
- out= of another dtype, Fortran order, read-only or the wrong shape is refused naming out (the
  flexible closed-loop robot wrote into it: a complex, integer or list out was accepted);
- step: tau of the wrong shape (broadcast before), complex f_ext, multipliers, callback results and
  prescribed accelerations are refused naming them, and so is an integer out= of the prescribed
  forward dynamics (it was truncated).
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from conftest import assert_close
from test_out_overlap import KINDS, _cases, _load, _state

ROBOTS = {}
SAME = 1e-12   # the same arithmetic on the same numbers (float64 copies of the inputs)


def robot_of(kind):
    if kind not in ROBOTS:
        ROBOTS[kind] = _load(kind)
    return ROBOTS[kind]


def _calls(robot):
    """{name: (callable of keyword arrays, {argument: float64 array})} for every public method
    that takes arrays (out= forms in test_out_overlap)."""
    q, v, tau = _state(robot)
    qdd = robot.forward_dynamics(q, v, tau)
    link = robot.link_names[-1]
    calls = {
        "forward_dynamics": (robot.forward_dynamics, dict(q=q, v=v, tau=tau)),
        "inverse_dynamics": (robot.inverse_dynamics, dict(q=q, v=v, qdd=qdd)),
        "mass_matrix": (robot.mass_matrix, dict(q=q)),
        "bias_forces": (robot.bias_forces, dict(q=q, v=v)),
        "gravity_forces": (robot.gravity_forces, dict(q=q)),
        "damping_forces": (robot.damping_forces, dict(v=v)),
        "joint_wrenches": (robot.joint_wrenches, dict(q=q, v=v, qdd=qdd)),
        "integrate": (lambda q, v: robot.integrate(q, v, 0.01), dict(q=q, v=v)),
        "link_pose": (lambda q: robot.link_pose(q, link), dict(q=q)),
        "kinetic_energy": (robot.kinetic_energy, dict(q=q, v=v)),
        "potential_energy": (robot.potential_energy, dict(q=q)),
        "forward_dynamics_batch": (robot.forward_dynamics_batch,
                                   dict(q=np.tile(q, (2, 1)), v=np.tile(v, (2, 1)),
                                        tau=np.tile(tau, (2, 1)))),
        "step": (lambda q, v, tau: np.concatenate(robot.step(q, v, tau, 1e-4)),
                 dict(q=q, v=v, tau=tau)),
        "force_element_values": (lambda q, v: robot.force_element_values(q, v).force,
                                 dict(q=q, v=v)),
        "closure_wrenches": (robot.closure_wrenches, dict(q=q, v=v, tau=tau)),
    }
    if robot.closure_names:
        calls["project_velocity"] = (robot.project_velocity, dict(q=q, v=v))
        calls["loop_state"] = (lambda q, v: np.concatenate([x.ravel() for x in robot.loop_state(q, v)]),
                               dict(q=q, v=v))
        calls["assemble"] = (robot.assemble, dict(q=q))
    if len(robot.elastic_names):
        calls["elastic_energy"] = (robot.elastic_energy, dict(q=q))
    return calls


def _refused(robot, call, args, argument, bad, match):
    inputs = {k: (bad if k == argument else a.copy()) for k, a in args.items()}
    with pytest.raises(ValueError, match=match):
        call(**inputs)


def _same(call, args, argument, other, reference_value):
    inputs = {k: (other if k == argument else a.copy()) for k, a in args.items()}
    return assert_close(np.asarray(call(**inputs), dtype=float), reference_value,
                        f"{argument} as {type(other).__name__} {getattr(other, 'dtype', '')}",
                        rtol=SAME)


@pytest.mark.parametrize("kind", KINDS)
def test_odd_array_types_are_refused_or_give_the_float64_result(kind):
    robot = robot_of(kind)
    robot.compile_c_calls()            # the C-level entries take the hot path's arguments first
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no ComplexWarning, no LoopResidualWarning
        for name, (call, args) in _calls(robot).items():
            expected = np.asarray(call(**{k: a.copy() for k, a in args.items()}), dtype=float)
            for argument, value in args.items():
                what = rf"^{argument}\b|state \d+: {argument}\b"
                for bad in (value + 1e-3j, value.astype(complex), list(value.astype(complex)),
                            value != 0.0, value.astype(str), np.array(value.ravel()[0])):
                    _refused(robot, call, args, argument, bad, what)
                # same numbers, other layouts and dtypes: the float64 result
                readonly = value.copy()
                readonly.setflags(write=False)
                for same in (readonly, np.asfortranarray(value), np.repeat(value, 2, axis=-1)[..., ::2],
                             value.astype(object), value.tolist()):
                    _same(call, args, argument, same, expected)
                # other number types: the result of the float64 array of the same numbers
                others = [value.astype(np.float32)]
                if argument != "q":   # integers (q: off the loops, not unit quaternions)
                    others.append(np.round(value).astype(np.int64))
                for other in others:
                    try:
                        reference = np.asarray(call(**{k: (other.astype(float) if k == argument
                                                           else a.copy()) for k, a in args.items()}),
                                               dtype=float)
                    except ValueError as exc:   # e.g. integers off a closed loop's constraints:
                        _refused(robot, call, args, argument, other, re.escape(str(exc)))
                        continue                # the same refusal
                    _same(call, args, argument, other, reference)


def test_a_link_that_is_not_a_name_is_a_value_error():
    robot = robot_of("tree")
    q = robot.neutral()
    for link in ([robot.link_names[-1]], None, 3, {"a": 1}):
        with pytest.raises(ValueError, match="link"):
            robot.link_pose(q, link)
    with pytest.raises(ValueError, match="link"):
        robot.forward_dynamics(q, np.zeros(robot.nv), np.zeros(robot.nv), f_ext={("x",): np.zeros(6)})


def test_a_random_configuration_seed_that_is_no_seed_is_a_value_error():
    robot = robot_of("tree")
    for rng in ("x", 1.5, [object()]):
        with pytest.raises(ValueError, match="rng must be None, an integer seed"):
            robot.random_configuration(rng)
    np.testing.assert_array_equal(robot.random_configuration(3), robot.random_configuration(3))


@pytest.mark.parametrize("kind", KINDS)
def test_out_of_another_dtype_order_or_shape_is_refused(kind):
    robot = robot_of(kind)
    for c_calls in (False, True):
        if c_calls:
            robot.compile_c_calls()
        for label, name, inputs, kwargs, shape in _cases(robot):
            readonly = np.zeros(shape)
            readonly.setflags(write=False)
            bad_outs = [np.zeros(shape, dtype=t) for t in (np.int64, np.float32, np.complex128, bool)]
            bad_outs += [readonly, np.zeros(tuple(n + 1 for n in shape)), np.array(0.0),
                         [0.0] * int(np.prod(shape)), np.zeros(shape[:-1] + (2 * shape[-1],))[..., ::2]]
            if len(shape) == 2:
                bad_outs.append(np.asfortranarray(np.zeros(shape)))
            for out in bad_outs:
                with pytest.raises(ValueError, match="out"):
                    getattr(robot, name)(**{k: a.copy() for k, a in inputs.items()}, **kwargs, out=out)


def test_simulation_and_load_inputs_are_validated():
    """step's tau of another shape, and complex f_ext, multipliers, callback results and
    prescribed accelerations are refused naming them."""
    robot = robot_of("tree")
    q, v, tau = _state(robot)
    for bad in (np.array(0.5), tau[None], np.zeros(robot.nv + 1), [[x] for x in tau]):
        with pytest.raises(ValueError, match="tau"):
            robot.step(q, v, bad, 1e-3)
    with pytest.raises(ValueError, match="f_ext"):
        robot.forward_dynamics(q, v, tau, f_ext={robot.link_names[-1]: np.ones(6) * 1j})
    with pytest.raises(ValueError, match="f_ext"):
        robot.joint_wrenches(q, v, tau, f_ext=np.ones((len(robot.link_names), 6), dtype=complex))
    with pytest.raises(ValueError, match="prescribed"):
        robot.forward_dynamics(q, v, tau, prescribed={robot.joint_names[0]: 1j})
    for out in (np.zeros(robot.nv, dtype=np.int64), np.zeros(robot.nv + 1)):   # was truncated
        with pytest.raises(ValueError, match="out"):
            robot.forward_dynamics(q, v, tau, prescribed={robot.joint_names[0]: 0.5}, out=out)
    loop = robot_of("closed_loop")
    ql, vl, taul = _state(loop)
    loop.forward_dynamics(ql, vl, taul)
    with pytest.raises(ValueError, match="multipliers"):
        loop.closure_wrenches(ql, vl, taul, multipliers=loop.multipliers() + 0j)
    flexible_loop = robot_of("flexible_closed_loop")
    qf, vf, tauf = _state(flexible_loop)
    flexible_loop.forward_dynamics(qf, vf, tauf)
    with pytest.raises(ValueError, match="multipliers"):
        flexible_loop.closure_wrenches(qf, vf, tauf, multipliers=flexible_loop.multipliers() + 1j)
    import mbd_ros
    robot = mbd_ros.load(str(mbd_ros.__path__[0] + "/../urdf/arm7.urdf"))
    robot.add_force(lambda t, q, v: np.zeros(robot.nv) + 1j)
    with pytest.raises(ValueError, match="force callback"):
        robot.forward_dynamics(q, v, tau)
