"""The suite loads under plain pytest without pytest-xdist (colcon test in a ROS workspace, whose
rosdep keys bring python3-pytest only): conftest's xdist scheduler hook must not be an unknown
hook there (pytest refuses a conftest with one: INTERNALERROR, no test runs)."""
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent


def test_the_suite_collects_without_xdist():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider",
         "--collect-only", "-q", str(TEST_DIR / "test_stops.py")],
        capture_output=True, text=True, timeout=120, cwd=TEST_DIR.parent)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "3 tests collected" in result.stdout, result.stdout[-2000:]
