"""Shared tolerance, comparison helper and reference-model fixtures of the mbd_ros test suite.

RTOL: all comparisons of results that are exact up to floating-point round-off (against
Pinocchio, closed-form values, or identities between our algorithms) use one relative tolerance,

    max |actual - expected| <= RTOL * max(1, max |expected|).

1e-9 leaves about six digits of headroom over double-precision round-off (1e-16) amplified by the
condition numbers of the test robots' mass matrices (up to ~1e7 for PR2).

RK4_RTOL: the only other tolerance, for quantities that are exact only up to the truncation error
of a fourth-order Runge-Kutta integration (energy balance over 1 s at dt = 1e-3: local error
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


def _missing_oracle(message):
    """Skip when an oracle is not installed, but fail in CI (CI=true), where the test extra
    installs it: a silently skipped oracle would make a green CI meaningless."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


def import_oracle(module):
    """Import an oracle module at a test module's top: skip the module when it is not installed,
    but fail in CI (CI=true), where the test extra installs it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed (it is in the test extra)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message, allow_module_level=True)


def require_fastcall():
    """For the C-level call tests (mbd_ros/fastcall): skip when the optional C extension was
    not built (no C compiler at install), but fail in CI (CI=true), whose install builds it."""
    from mbd_ros import fastcall
    if fastcall.AVAILABLE:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI: the C extension mbd_ros.fastcall._fastcall was not built (the install "
                    "needs a C compiler and NumPy's headers)", pytrace=False)
    pytest.skip("mbd_ros.fastcall._fastcall is not built (no C compiler at install)")


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
