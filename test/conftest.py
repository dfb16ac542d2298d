"""Shared tolerance, comparison helper and reference-model fixtures of the mbd_ros test suite.

RTOL: comparisons of results that are exact up to floating-point round-off (against
Pinocchio, closed-form values, or identities between our algorithms) on well-conditioned
quantities use one relative tolerance,

    max |actual - expected| <= RTOL * max(1, max |expected|).

Why 1e-9 suffices there: both sides are sums of products over the kinematic tree, each rounded
to 1.1e-16 relative, so they agree to ~n eps times the size of the largest terms, far below 1e-9
of the result. Forward dynamics compared with Pinocchio's ABA is a solve, bounded by ~n eps
cond(M) |qdd|, and cond(M) reaches 1e6-1e7 (PR2, flexible bodies): that bound exceeds RTOL, but
the errors met are far smaller (measured over the library half of the suite, 25 681
comparisons on AMD Zen 5: the real robots' FD against ABA used at most 2e-4 of RTOL; the largest
use of RTOL, 0.005, is the four-bar against its closed form).
An identity whose terms are far larger than its result (ID(FD(tau)) = tau, where |M qdd| ~
cond(M) |tau|) is not covered by a fixed number at all: such comparisons use the bounds below,
computed from the test's own matrices. The survey's only fixed tolerances used beyond a tenth
were the flexible chain's round trip (0.92 of its 1e-9: it failed on Zen 4) and a frequency check
tuned to 2 % (0.84): both now derived; the next, RK4 and generalized-alpha truncation errors
against stated convergence studies (0.12-0.14), are deterministic, not round-off.

roundoff_tol(n, terms...): absolute round-off bound of an identity between float64 results of
n-dof computations: ROUNDOFF_SAFETY * n * EPS * (sum of the norms of the terms that were summed,
|A| |x| for a product A x). For a backward-stable forward dynamics (the articulated-body
algorithm is a factorization of M) the computed qdd exactly solves (M + dM) qdd = tau - b - db,
|dM| <= c n u |M|; so M qdd + b - tau, evaluated again in float64 by the inverse dynamics, is
bounded by c n u (|M| |qdd| + |b| + |tau|) with c of order one.

solve_tol(M, x): absolute bound on the difference of two backward-stable solutions x of
M x = y (ours and a reference): each has forward error <= c n u cond(M) |x|, so
|x1 - x2| <= ROUNDOFF_SAFETY * 2 n EPS cond(M) |x|.

ROUNDOFF_SAFETY = 4 covers the constants c of the recursions (several roundings per spatial
6-vector step, not counted in n). Measured on the flexible chain of test_flexible.py (cond(M)
up to 1e6), 300 random states on AMD Zen 5: the round trip used at most 0.02 of roundoff_tol,
where the fixed 1e-9 it replaced failed on 80 of them (and on Zen 4 at 2.3e-9 for the test's
own seed, <= 0.03 of roundoff_tol); FD against numpy's solve used at most 1e-4 of solve_tol.

RK4_RTOL: the tolerance for quantities that are exact only up to the truncation error of a
fourth-order Runge-Kutta integration (energy balance over 1 s at dt = 1e-3: local error
O(dt^5), global O(dt^4) ~ 1e-12 times the derivatives of the motion, which reach ~1e6 for the
fast random trees).
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))   # test helper modules, any import mode

RTOL = 1e-9
RK4_RTOL = 1e-6
EPS = float(np.finfo(float).eps)   # 2.2e-16 = 2 u, float64's unit round-off u = 1.1e-16
ROUNDOFF_SAFETY = 4.0


def _norm_of(term):
    """|A|_2 |x|_2 for a product given as (A, x); |v|_2 for a vector or scalar."""
    if isinstance(term, tuple):
        matrix, vector = term
        return float(np.linalg.norm(np.atleast_2d(matrix), 2) * np.linalg.norm(vector))
    return float(np.linalg.norm(np.atleast_1d(np.asarray(term, dtype=float))))


def roundoff_tol(n, *terms, safety=ROUNDOFF_SAFETY):
    """Absolute round-off bound of an identity between float64 results of n-dof computations
    whose terms are `terms` (vectors, or (matrix, vector) pairs for products): safety * n * EPS
    * sum of their norms (module docstring). E.g. ID(FD(tau)) = tau:
    roundoff_tol(nv, (M, qdd), b, tau). Compare the max-abs error with it (max-abs <= 2-norm)."""
    return safety * n * EPS * sum(_norm_of(t) for t in terms)


def solve_tol(M, x, safety=ROUNDOFF_SAFETY):
    """Absolute bound on |x1 - x2| for two backward-stable solutions of M x = y (module
    docstring): safety * 2 n EPS cond(M) |x|_2, with M's actual 2-norm condition number."""
    M = np.atleast_2d(np.asarray(M, dtype=float))
    return safety * 2 * M.shape[0] * EPS * float(np.linalg.cond(M)) * float(np.linalg.norm(x))


def assert_close(actual, expected, what, rtol=RTOL):
    """Assert max|actual - expected| <= rtol * max(1, max|expected|), with a message that names
    the quantity, the worst entry and both values there."""
    a = np.asarray(actual, dtype=float)
    b = np.asarray(expected, dtype=float)
    assert a.shape == b.shape, f"{what}: shape {a.shape}, expected {b.shape}"
    if a.size == 0:
        return
    assert np.all(np.isfinite(a)), f"{what}: non-finite values in the result:\n{a}"
    err = np.abs(a - b)
    scale = max(1.0, float(np.max(np.abs(b))))
    worst = np.unravel_index(int(np.argmax(err)), err.shape) if a.ndim else ()
    tol = rtol * scale
    assert err[worst] <= tol, (
        f"{what}: max |error| {err[worst]:.3e} > {tol:.1e} (rtol {rtol:g} x scale {scale:.3g}) "
        f"at index {tuple(int(i) for i in worst)}: got {a[worst]!r}, expected {b[worst]!r}"
        + (f"\n got:      {np.array2string(a.ravel()[:12], precision=6)}"
           f"\n expected: {np.array2string(b.ravel()[:12], precision=6)}" if a.size > 1 else ""))


# ---- example-robot-data ---------------------------------------------------------------------------

def example_robot_data_dir():
    """The robots directory of example-robot-data (cmeel wheel), searched in the site-packages
    directories rather than derived from sys.prefix. None if not installed."""
    dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + list(sys.path)
    for d in dirs:
        p = Path(d) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if p.is_dir():
            return p
    return None


def _in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _missing_oracle(message):
    """Skip when an oracle is not installed, but fail in CI (CI=true), where the test extra
    installs it: a silently skipped oracle would make a green CI meaningless. Called inside a
    test or fixture, it skips or fails that test only."""
    if _in_ci():
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


class MissingOracle:
    """Stands for an oracle module that is not installed: any attribute skips (fails in CI) the
    test that asks for it, so the module's other tests still run. Private and dunder names
    raise AttributeError, as for a module without them (pytest and inspect probe those)."""

    def __init__(self, module, message):
        self._module = module
        self._message = message

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        _missing_oracle(self._message)

    def __repr__(self):
        return f"<missing oracle {self._module!r}>"


def import_oracle(module):
    """The oracle module, imported at a test module's top; if it is not installed, a
    MissingOracle whose first use skips that test (fails it in CI, where the test extra installs
    it). Never a module-level skip: besides hiding the module's other tests, one raised while
    launch_testing's plugin imports the module ended the whole run (see
    pytest_pycollect_makemodule below)."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        return MissingOracle(module, f"{module} is not installed (it is in the test extra)")


def require_fastcall():
    """For the C-level call tests (mbd_ros/fastcall): skip when the optional C extension was
    not built (no C compiler at install), but fail in CI (CI=true), whose install builds it.
    The reason names an install that has it while the tested tree does not: `colcon test` runs
    pytest on the source tree, which a plain `colcon build` leaves without it."""
    from mbd_ros import fastcall
    if fastcall.AVAILABLE:
        return
    tested = Path(fastcall.__file__).resolve().parent
    elsewhere = _built_fastcall_dirs(exclude=tested)
    if elsewhere:
        _missing_oracle(f"the C extension mbd_ros.fastcall._fastcall is built in {elsewhere[0]} "
                        f"but not in the tested tree {tested} (colcon test runs the source "
                        "tree: build with `colcon build --symlink-install`)")
    _missing_oracle("the C extension mbd_ros.fastcall._fastcall is not built (the install needs "
                    "a C compiler and NumPy's headers)")


def _built_fastcall_dirs(exclude):
    """mbd_ros/fastcall directories on sys.path, other than `exclude`, holding the built C
    extension (e.g. colcon's install space)."""
    from importlib.machinery import EXTENSION_SUFFIXES
    found = []
    for entry in sys.path:
        directory = Path(entry or ".").resolve() / "mbd_ros" / "fastcall"
        if directory != exclude and directory not in found and any(
                (directory / f"_fastcall{suffix}").is_file() for suffix in EXTENSION_SUFFIXES):
            found.append(directory)
    return found


@pytest.fixture(scope="session")
def erd_dir():
    p = example_robot_data_dir()
    if p is None:
        _missing_oracle("example-robot-data is not installed (pip install example-robot-data; "
                    "it is in the test extra)")
    return p


@pytest.fixture(scope="session")
def pin():
    try:
        import pinocchio
    except ImportError:
        _missing_oracle("Pinocchio (pip install pin) is the reference oracle; it is in the test extra")
    return pinocchio


@pytest.fixture(scope="session")
def mbd():
    return pytest.importorskip("mbd_ros")


# ---- collection under launch_testing (every ROS 2 workspace: colcon test) -----------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_pycollect_makemodule(module_path, parent):
    """launch_testing's pytest plugin imports each test module from this hook (to find
    generate_test_description) and lets anything but a SyntaxError escape: a module-level skip
    (pytest.importorskip of an optional package) or an ImportError then ended the collection of
    the whole session, and `colcon test` ran 0 tests and reported success. Contain it to its
    module: pytest's own Module imports it again and reports that module's skip or error."""
    outcome = yield
    try:
        outcome.get_result()
    except (Exception, pytest.skip.Exception, pytest.fail.Exception):
        outcome.force_result(pytest.Module.from_parent(parent, path=module_path))


# ---- two workers (`make test`: pytest -n 2 --dist loadscope --no-loadscope-reorder) -------------

PROCESS_GROUP = "ros_processes"


def _runs_node_processes(path, known={}):
    """True for a test module that starts ROS node processes (it imports test/ros_harness.py)."""
    if path not in known:
        known[path] = "ros_harness" in Path(path).read_text(encoding="utf-8")
    return known[path]


def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker: the tests that start ROS node processes first (the order the
    scheduler below hands out work). Without xdist (plain pytest, colcon test) nothing
    changes."""
    if hasattr(config, "workerinput"):
        processes = [_runs_node_processes(str(item.path)) for item in items]
        items[:] = [item for item, p in zip(items, processes) if p] + \
            [item for item, p in zip(items, processes) if not p]


@pytest.hookimpl(optionalhook=True)   # xdist's hook: plain pytest (colcon test) has no spec
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler by scope, with two kinds of scope: every test that starts ROS
    node processes is in one, run one after another on one worker and first (they are a third
    to a half of the suite's time, mostly waiting on processes: never two at a time); every
    other module is a scope of its own (its module fixtures and numba compiles happen on one
    worker), handed to whichever worker is free. (xdist's loadgroup markers cannot do it with
    pytest 9: their node-id suffix no longer reaches the scheduler.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ProcessScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return PROCESS_GROUP if _runs_node_processes(str(config.rootpath / path)) else path

    return ProcessScopeScheduling(config, log)
