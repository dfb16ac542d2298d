"""Kernel entry points compile on first use (mbd_ros.kernels.entry), with exactly the one explicit
signature an eager `@njit(signature)` would have: importing the package compiles nothing, a call
with other argument types raises TypeError (the Robot's fast path relies on it), and a call from
another jitted function works."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit, types

from mbd_ros.kernels.entry import entry_point

REPO = Path(__file__).resolve().parent.parent
SIGNATURE = types.float64(types.Array(types.float64, 1, "C"), types.int64)


def _make_kernel():
    @entry_point(SIGNATURE)
    def scaled_sum(x, k):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s * k
    return scaled_sum


def test_nothing_is_compiled_before_the_first_call():
    kernel = _make_kernel()
    assert kernel.signatures == []
    assert kernel(np.arange(4.0), 2) == 12.0          # sum 6 * 2, independent of numba
    assert len(kernel.signatures) == 1 and tuple(kernel.signatures[0]) == tuple(SIGNATURE.args)


def test_other_argument_types_raise_type_error_and_compile_nothing():
    kernel = _make_kernel()
    with pytest.raises(TypeError):
        kernel([1.0, 2.0], 1)                            # a list, before any compilation
    assert kernel(np.ones(3), 1) == 3.0
    for bad in (([1.0, 2.0], 1), (np.ones(3, dtype=np.float32), 1), (np.ones((2, 2)), 1),
                (np.ones(6)[::2], 1)):
        with pytest.raises(TypeError):
            kernel(*bad)
    assert len(kernel.signatures) == 1


def test_a_call_from_another_jitted_function_compiles_the_signature():
    kernel = _make_kernel()

    @njit
    def caller(x):
        return kernel(x, 3) + 1.0

    assert caller(np.ones(2)) == 7.0
    assert len(kernel.signatures) == 1
    with pytest.raises(TypeError):
        kernel(np.ones(2, dtype=np.int64), 1)


def test_import_mbd_ros_compiles_no_kernel():
    """In a fresh interpreter: after importing the package (and the kernel modules), no entry
    point has a compiled (or cache-loaded) variant."""
    code = ("import mbd_ros, mbd_ros.robot, mbd_ros.robot.constraints, mbd_ros.robot.loop_kinematics\n"
            "from mbd_ros.kernels import aba, rnea, crba, kinematics, configuration, wrenches, closed_loop\n"
            "ks = [aba.forward_dynamics, rnea.inverse_dynamics, crba.mass_matrix, kinematics.check_state,\n"
            "      kinematics.forward_kinematics, configuration.integrate, configuration.mechanical_energy,\n"
            "      wrenches.joint_wrenches, wrenches.load_link_wrenches, closed_loop.closed_loop_forward_dynamics]\n"
            "print(sum(len(k.signatures) for k in ks))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=REPO, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "0"
