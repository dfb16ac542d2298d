"""The C-level LinkCall of robot.link_jacobian / link_velocity / link_acceleration
(mbd_ros/fastcall/_fastcall.c, fastcall.add_link_call): from the second call with out= of a
(link, frame) pair the robot's method is a LinkCall that finds the pair's KernelCall in C.

Asserted: its results are the numba path's bit for bit and Pinocchio's to 1e-10 relative (ur5,
panda, talos_reduced with its floating base; every argument form); wrong inputs raise the same
ValueErrors as without it; out= allocates nothing and leaks no reference; pairs not promoted yet,
calls without out and odd argument forms take the Python method.
"""
from __future__ import annotations

import itertools
import sys
import tracemalloc
import zlib

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close, require_fastcall
from oracle import pin_model_from_xml

RTOL_PIN = 1e-10          # the tolerance against Pinocchio
FRAMES = ("world", "local", "local_world_aligned")
ROBOTS = {   # robot: (URDF under example-robot-data, floating base, links compared)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False, ["tool0", "forearm_link"]),
    "panda": ("panda_description/urdf/panda.urdf", False, ["panda_hand", "panda_link3"]),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True,
                      ["left_sole_link", "gripper_right_base_link", "base_link"]),
}
INPUTS = {"link_jacobian": 1, "link_velocity": 2, "link_acceleration": 3}


def numba_path(robot, method, inputs, link, frame):
    """The class's method without out=: numba's dispatcher, a new array."""
    return getattr(type(robot), method)(robot, *inputs, link, frame)


def load(erd_dir, key):
    rel, floating, links = ROBOTS[key]
    robot = mbd_ros.load(str(erd_dir / rel), floating_base=floating, passive_forces=False)
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    state = (robot.random_configuration(rng), rng.standard_normal(robot.nv),
             rng.standard_normal(robot.nv))
    return robot, state, links


def promote(robot, method, inputs, link, frame, out):
    """The two calls with out= after which (method, link, frame) has its KernelCall."""
    for _ in range(2):
        getattr(robot, method)(*inputs, link, frame, out=out)


def shape(robot, method):
    return (6, robot.nv) if method == "link_jacobian" else (6,)


@pytest.mark.parametrize("key", list(ROBOTS))
def test_link_calls_match_numba_bit_for_bit_and_pinocchio(key, erd_dir, pin):
    require_fastcall()
    from mbd_ros.fastcall import LinkCall
    robot, (q, v, a), links = load(erd_dir, key)
    rel, floating, _ = ROBOTS[key]
    model, _ = pin_model_from_xml(pin, (erd_dir / rel).read_text(), floating)
    data = model.createData()
    qperm = np.zeros(robot.nq, dtype=int)
    vperm = np.zeros(robot.nv, dtype=int)
    for name, iq, iv in zip(robot.joint_names, robot.idx_q, robot.idx_v):
        joint = model.joints[model.getJointId(name)]
        qperm[iq:iq + joint.nq] = np.arange(joint.idx_q, joint.idx_q + joint.nq)
        vperm[iv:iv + joint.nv] = np.arange(joint.idx_v, joint.idx_v + joint.nv)
    qp, vp, ap = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    qp[qperm], vp[vperm], ap[vperm] = q, v, a
    pin.forwardKinematics(model, data, qp, vp, ap)
    references = {"world": pin.WORLD, "local": pin.LOCAL,
                  "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    for method, n in INPUTS.items():
        inputs = (q, v, a)[:n]
        for link in links:
            fid = model.getFrameId(link, pin.FrameType.BODY)
            for frame in FRAMES:
                out = np.empty(shape(robot, method))
                promote(robot, method, inputs, link, frame, out)
                call = robot.__dict__[method]
                assert isinstance(call, LinkCall), method
                pair_call = robot._frame_kinematics.link_calls[method, link, frame]
                expected = numba_path(robot, method, inputs, link, frame)
                rf = references[frame]
                reference = {
                    "link_jacobian": lambda: pin.computeFrameJacobian(model, data, qp, fid,
                                                                      rf)[:, vperm],
                    "link_velocity": lambda: pin.getFrameVelocity(model, data, fid, rf).vector,
                    "link_acceleration": lambda: pin.getFrameClassicalAcceleration(
                        model, data, fid, rf).vector}[method]()
                assert_close(expected, reference, f"{key} {method} {link} {frame} vs Pinocchio",
                             RTOL_PIN)
                # every argument form the LinkCall takes at C level
                forms = [lambda o: call(*inputs, link, frame, out=o),
                         lambda o: call(*inputs, link, frame, o),
                         lambda o: call(*inputs, link, frame=frame, out=o),
                         lambda o: call(*inputs, link, out=o, frame=frame)]
                if frame == "local_world_aligned":     # the default
                    forms.append(lambda o: call(*inputs, link, out=o))
                for k, form in enumerate(forms):
                    fast_before = pair_call.counts()[0]
                    out[...] = np.nan
                    assert form(out) is out
                    assert pair_call.counts()[0] == fast_before + 1, \
                        f"{key} {method} {link} {frame} form {k}: not the C path"
                    np.testing.assert_array_equal(out, expected,
                                                  err_msg=f"{key} {method} {link} {frame} {k}")


def test_link_calls_refuse_bad_input_with_the_documented_errors(erd_dir):
    require_fastcall()
    robot, (q, v, a), _ = load(erd_dir, "talos_reduced")
    link = "left_sole_link"
    for method, n in INPUTS.items():
        inputs = (q, v, a)[:n]
        out = np.empty(shape(robot, method))
        promote(robot, method, inputs, link, "local", out)
        call = getattr(robot, method)
        assert type(call).__name__ == "LinkCall"
        fallbacks = call.counts()[1]
        bad_q = q.copy()
        bad_q[3:7] = [1.0, 1.0, 0.0, 0.0]                   # not a unit quaternion
        with pytest.raises(ValueError, match="unit norm"):
            call(bad_q, *inputs[1:], link, "local", out=out)
        nan_q = q.copy()
        nan_q[10] = np.nan
        with pytest.raises(ValueError, match="q contains NaN"):
            call(nan_q, *inputs[1:], link, "local", out=out)
        with pytest.raises(ValueError, match=r"q must have shape \(39,\)"):
            call(q[:-1], *inputs[1:], link, "local", out=out)
        if n > 1:
            with pytest.raises(ValueError, match=r"v must have shape"):
                call(q, v[:-1], *inputs[2:], link, "local", out=out)
        if n > 2:
            with pytest.raises(ValueError, match="qdd contains NaN"):
                call(q, v, np.full(robot.nv, np.inf), link, "local", out=out)
        with pytest.raises(ValueError, match="unknown link 'left_sole_lnk'.*left_sole_link"):
            call(*inputs, "left_sole_lnk", "local", out=out)
        with pytest.raises(ValueError, match="frame must be one of"):
            call(*inputs, link, "LOCAL", out=out)
        with pytest.raises(ValueError, match="link must be a link name"):
            call(*inputs, 3, "local", out=out)
        strided = np.empty(out.shape[:-1] + (2 * out.shape[-1],))[..., ::2]
        for wrong in (np.empty((2, 2)), np.empty(out.shape, dtype=np.float32), strided):
            # other shape, dtype, not C-contiguous
            with pytest.raises(ValueError, match="out must be"):
                call(*inputs, link, "local", out=wrong)
        with pytest.raises(TypeError):
            call(*inputs, link, "local", out=out, bogus=1)
        assert call.counts()[1] > fallbacks     # all of these went to the Python method
        # out overlapping q: computed privately, the same values
        if method == "link_jacobian":
            buffer = np.zeros(6 * robot.nv)
            buffer[:robot.nq] = q
            overlapping = buffer.reshape(6, robot.nv)
            expected = numba_path(robot, method, inputs, link, "local")
            assert call(buffer[:robot.nq], link, "local", out=overlapping) is overlapping
            np.testing.assert_array_equal(overlapping, expected)


def test_pairs_not_promoted_and_calls_without_out_take_the_python_method(erd_dir):
    require_fastcall()
    robot, (q, v, a), _ = load(erd_dir, "ur5")
    out = np.empty((6, robot.nv))
    promote(robot, "link_jacobian", (q,), "tool0", "world", out)
    call = robot.link_jacobian
    fast, slow = call.counts()
    # another pair: the Python method (twice, which promotes it), then the C path
    expected = numba_path(robot, "link_jacobian", (q,), "forearm_link", "local")
    for k in range(3):
        out[...] = np.nan
        assert call(q, "forearm_link", "local", out=out) is out
        np.testing.assert_array_equal(out, expected)
    assert call.counts() == (fast + 1, slow + 2)
    # without out: a new array each call, from the Python method
    first = call(q, "tool0", "world")
    assert first is not call(q, "tool0", "world")
    np.testing.assert_array_equal(first, numba_path(robot, "link_jacobian", (q,), "tool0",
                                                    "world"))
    # a list q: converted by the Python method
    assert_close(call(list(q), "tool0", "world", out=out), first, "list q", 0.0)


def test_link_calls_with_out_allocate_nothing_and_keep_references(erd_dir):
    """1000 calls with out= through the LinkCall (its counters show the C path): tracemalloc's
    peak does not move (a result array allocated per call, even freed at once, raises it by
    its ~0.1-0.4 kB), and no reference is gained or lost."""
    require_fastcall()
    robot, (q, v, a), _ = load(erd_dir, "panda")
    link = "panda_hand"
    repeat = itertools.repeat
    for method, n in INPUTS.items():
        inputs = (q, v, a)[:n]
        out = np.empty(shape(robot, method))
        promote(robot, method, inputs, link, "local_world_aligned", out)
        call = getattr(robot, method)
        refs = [sys.getrefcount(x) for x in (out, link, *inputs)]
        fast = call.counts()[0]
        calls = repeat(None, 1000)               # made before tracing: it is an object too
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            if n == 1:
                for _ in calls:
                    call(q, link, out=out)
            elif n == 2:
                for _ in calls:
                    call(q, v, link, out=out)
            else:
                for _ in calls:
                    call(q, v, a, link, out=out)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert call.counts()[0] == fast + 1000, f"{method}: not the C path"
        assert peak < 48, f"{method}: {peak} bytes allocated at once during calls with out="
        assert [sys.getrefcount(x) for x in (out, link, *inputs)] == refs, method
