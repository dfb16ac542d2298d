"""Start-up behaviour (bench/bench_compile.py measures the times; nothing here is timed):
- a warm process loads its kernels (and the C-level entry installed at the second call) from
  numba's cache without initialising numba's compiler (kernels/entry.load_cached,
  fastcall.c_entry): numba's lowering registries (numba.np.arraymath) and SciPy's linalg are
  never imported, and the results are the ones the compiling process computed;
- load_cached follows numba's cache invalidation: an edited kernel is recompiled;
- the tree FD / ID kernels check their output themselves (one compiled kernel per method, no
  checked/unchecked pair): aliasing and overflow statuses, also through the batch path.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from mbd_ros.kernels import aba, rnea
from mbd_ros.kernels.output_checks import STATUS_ALIASED, STATUS_NOT_FINITE

REPO = Path(__file__).resolve().parent.parent
ARM = REPO / "urdf" / "arm7.urdf"


def run_python(code, **env):
    """Run code in a fresh interpreter with the repository first on the path; its last stdout
    line, parsed as JSON."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def arm_state(robot):
    rng = np.random.default_rng(7)
    return robot.random_configuration(rng), rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)


def test_warm_process_reaches_first_forward_dynamics_without_numba_compiler_or_scipy_linalg():
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    q, v, tau = arm_state(robot)
    expected = robot.forward_dynamics(q, v, tau)   # compiled or loaded here: the cache is filled
    robot.compile_c_calls()                          # and the C entries' cache
    result = run_python(f"""
        import json, sys
        import numpy as np
        import mbd_ros
        from mbd_ros.kernels import aba
        from mbd_ros.kernels import finite
        imported = {{"compiled at import": len(aba.forward_dynamics.signatures)
                                             + len(finite.all_finite.signatures)}}
        robot = mbd_ros.load({str(ARM)!r}, passive_forces=False)
        q = np.array({q.tolist()!r}); v = np.array({v.tolist()!r}); tau = np.array({tau.tolist()!r})
        out = np.empty(robot.nv)
        robot.forward_dynamics(q, v, tau, out=out)
        stats = aba.forward_dynamics.stats
        first = dict(imported, qdd=out.tolist(), hits=sum(stats.cache_hits.values()),
                     misses=sum(stats.cache_misses.values()),
                     modules=[m for m in ("numba.np.arraymath", "scipy.linalg", "rclpy")
                              if m in sys.modules])
        # the second call installs the C-level entry (mbd_ros/fastcall), also from the cache
        second = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
        third = robot.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
        from mbd_ros import fastcall
        print(json.dumps(dict(first, c_entry=fastcall.installed(robot, "forward_dynamics"),
                              later=[second.tolist(), third.tolist()],
                              later_modules=[m for m in ("numba.np.arraymath", "scipy.linalg")
                                             if m in sys.modules])))
        """)
    assert result["compiled at import"] == 0
    assert result["hits"] == 1 and result["misses"] == 0
    assert result["modules"] == []
    np.testing.assert_array_equal(result["qdd"], expected)
    from mbd_ros import fastcall
    if fastcall.AVAILABLE:
        assert result["c_entry"] and result["later_modules"] == []
    for later in result["later"]:
        np.testing.assert_array_equal(later, expected)


KERNEL_MODULE = """
from numba import types
from mbd_ros.kernels.entry import entry_point


@entry_point(types.float64(types.Array(types.float64, 1, "C")))
def weighted_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += WEIGHT * x[i]
    return s
"""

CALL_KERNEL = """
import json, sys
import numpy as np
sys.path.insert(0, {folder!r})
import startup_kernel
value = startup_kernel.weighted_sum(np.arange(4.0))
stats = startup_kernel.weighted_sum.stats
print(json.dumps({{"value": value, "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()),
                  "compiler initialised": "numba.np.arraymath" in sys.modules}}))
"""


def test_cached_entry_points_load_without_the_compiler_and_follow_source_edits(tmp_path):
    folder = tmp_path / "module"
    folder.mkdir()
    source = folder / "startup_kernel.py"
    source.write_text(KERNEL_MODULE.replace("WEIGHT", "2.0"))
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}
    code = CALL_KERNEL.format(folder=str(folder))
    cold = run_python(code, **cache)
    assert (cold["value"], cold["hits"], cold["misses"]) == (12.0, 0, 1)
    assert cold["compiler initialised"]
    warm = run_python(code, **cache)
    assert (warm["value"], warm["hits"], warm["misses"]) == (12.0, 1, 0)
    assert not warm["compiler initialised"]
    # numba keys its cache by the source file's time stamp and size: an edit recompiles
    source.write_text(KERNEL_MODULE.replace("WEIGHT", "30.0"))
    stamp = source.stat()
    os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 2_000_000_000))
    edited = run_python(code, **cache)
    assert (edited["value"], edited["misses"]) == (180.0, 1)


@pytest.mark.parametrize("kernel", [aba.forward_dynamics, rnea.inverse_dynamics])
def test_tree_kernels_refuse_an_output_overlapping_an_input(kernel):
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    q, v, x = arm_state(robot)
    assert robot.nq == robot.nv
    work = np.zeros_like(robot.tree.work)
    for out in (q, v, x, v[:]):
        before = out.copy()
        status = kernel(robot.tree.body_int, robot.tree.body_float, work, q, v, x, out)
        assert status == STATUS_ALIASED
        np.testing.assert_array_equal(out, before)   # nothing written
    out = np.empty(robot.nv)
    assert kernel(robot.tree.body_int, robot.tree.body_float, work, q, v, x, out) == 0
    method = robot.forward_dynamics if kernel is aba.forward_dynamics else robot.inverse_dynamics
    np.testing.assert_array_equal(out, method(q, v, x))


@pytest.mark.parametrize("kernel", [aba.forward_dynamics, rnea.inverse_dynamics])
def test_tree_kernels_report_an_overflow(kernel):
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    q, _, x = arm_state(robot)
    with np.errstate(all="ignore"):
        status = kernel(robot.tree.body_int, robot.tree.body_float, np.zeros_like(robot.tree.work), q,
                        np.full(robot.nv, 1e154), x, np.empty(robot.nv))
    assert status == STATUS_NOT_FINITE


def test_batch_output_aliasing_an_input_gives_the_fresh_result():
    """README: `out=` may overlap an input; the batch then computes into private memory and
    copies, so the result is the one computed from the unmodified inputs."""
    robot = mbd_ros.load(str(ARM), passive_forces=False)
    q, v, tau = arm_state(robot)
    Q, V, T = np.tile(q, (3, 1)), np.tile(v, (3, 1)), np.tile(tau, (3, 1))
    expected = np.tile(robot.forward_dynamics(q, v, tau), (3, 1))
    result = robot.forward_dynamics_batch(Q, V, T, out=T)
    assert result is T
    np.testing.assert_allclose(T, expected, rtol=1e-14)
    np.testing.assert_allclose(robot.forward_dynamics_batch(Q, V, np.tile(tau, (3, 1))),
                               expected, rtol=1e-14)
