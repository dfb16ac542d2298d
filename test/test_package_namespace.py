"""The package namespace: subpackages reachable as attributes of `mbd_ros` without an explicit
import (loaded on first access), and `import mbd_ros` itself loading none of them nor ROS."""
import subprocess
import sys

import pytest


def _run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_loads_no_subpackage_on_demand_and_no_ros():
    out = _run("import sys, mbd_ros; print(sorted(m for m in ('mbd_ros.sweep', "
               "'mbd_ros.interfaces', 'rclpy', 'dask') if m in sys.modules))")
    assert out == "[]"


@pytest.mark.parametrize("name, attribute", [("sweep", "run_sweep"), ("simulation", "Simulator"),
                                             ("simulation", "Rollout"),
                                             ("interfaces", "__path__")])
def test_subpackages_are_attributes(name, attribute):
    out = _run(f"import mbd_ros; print(hasattr(mbd_ros.{name}, {attribute!r}))")
    assert out == "True"


def test_unknown_attribute_raises_attribute_error():
    import mbd_ros
    with pytest.raises(AttributeError, match="no_such_thing"):
        mbd_ros.no_such_thing
