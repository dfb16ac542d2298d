"""Arrays in unusual memory layouts: misaligned and byte-swapped float64 inputs and outputs.

An outside audit found that after one misaligned float64 array had reached a numba function, a
big-endian array was read as native doubles by the methods' fast paths (numba's process-wide
typecode table: kernels/typecode_guard.py): forward_dynamics off by 72, link_jacobian into a
'>f8' out off by 1e232, silently. The reference is the same call with ordinary arrays; inputs
must be converted (same result), outputs refused with a ValueError naming `out`. Run in a fresh
process, in that order (the table is filled once per process), on the fast paths (the first
calls) and on the C-level entries (after the third call)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import mbd_ros

ROOT = Path(__file__).resolve().parent.parent
ARM = str(ROOT / "urdf" / "arm7.urdf")

SCRIPT = textwrap.dedent("""
    import numpy as np, mbd_ros

    def misaligned(x):
        buffer = np.zeros(x.nbytes + 1, dtype=np.uint8)
        y = np.ndarray(x.shape, np.float64, buffer, offset=1)
        y[...] = x
        assert not y.flags.aligned and y.flags.c_contiguous
        return y

    robot = mbd_ros.load({arm!r})
    nv = robot.nv
    q, v, a = np.linspace(0.1, 0.7, nv), np.linspace(-1, 1, nv), np.linspace(2, -2, nv)
    calls = {{
        "forward_dynamics": (lambda q, out=None: robot.forward_dynamics(q, v, a, out=out), (nv,)),
        "inverse_dynamics": (lambda q, out=None: robot.inverse_dynamics(q, v, a, out=out), (nv,)),
        "mass_matrix": (lambda q, out=None: robot.mass_matrix(q, out=out), (nv, nv)),
        "link_velocity": (lambda q, out=None: robot.link_velocity(q, v, "ee_link", out=out), (6,)),
        "link_jacobian": (lambda q, out=None: robot.link_jacobian(q, "ee_link", out=out), (6, nv)),
        "center_of_mass": (lambda q, out=None: robot.center_of_mass(q, out=out), (3,)),
        "mass_matrix_inverse": (lambda q, out=None: robot.mass_matrix_inverse(q, out=out),
                                (nv, nv)),
    }}
    swapped = np.dtype(np.float64).newbyteorder()
    for rounds in range(4):   # the fast paths, then the C-level entries (from the third call)
        for name, (call, shape) in calls.items():
            reference = call(q)
            for label, x in (("misaligned q", misaligned(q)), ("swapped q", q.astype(swapped))):
                result = call(x)
                assert np.array_equal(result, reference), (rounds, name, label)
            for label, out in (("misaligned out", misaligned(np.zeros(shape))),
                               ("swapped out", np.zeros(shape, swapped))):
                try:
                    call(q, out=out)
                except ValueError as exc:
                    assert "out must be" in str(exc), (rounds, name, label, exc)
                else:
                    raise AssertionError(f"{{name}}: {{label}} accepted (round {{rounds}})")
            out = np.zeros(shape)
            assert np.array_equal(call(q, out=out), reference) and np.array_equal(out, reference)
    print("ok")
""")


def test_misaligned_and_byte_swapped_arrays_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(arm=ARM)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


@pytest.mark.parametrize("urdf", [
    # no moving body at all (nv = 0), and one moving link without mass (nv = 1)
    """<robot name="one"><link name="base"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>""",
    """<robot name="one"><link name="base"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
    <link name="flag"/><joint name="j" type="revolute"><parent link="base"/><child link="flag"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""",
])
def test_centre_of_mass_of_no_moving_mass_is_an_error_saying_so(urdf):
    """The root link of a fixed base does not move (Pinocchio's convention, as
    center_of_mass's docstring): without moving mass the centre of mass is undefined. The
    methods said "an overflow inside the dynamics (absurd velocities ...?)" (an outside audit)."""
    if "flag" in urdf:   # the massless moving link is warned about at load
        with pytest.warns(UserWarning):
            robot = mbd_ros.load(urdf)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            robot = mbd_ros.load(urdf)
    q = robot.neutral()
    for method in ("center_of_mass", "com_jacobian", "centroidal_momentum_matrix"):
        with pytest.raises(ValueError, match=f"{method}: the moving bodies of 'one' have no mass"):
            getattr(robot, method)(q)
    assert robot.link_jacobian(q, "base").shape == (6, robot.nv)

