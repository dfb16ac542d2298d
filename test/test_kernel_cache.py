"""The kernels' numba cache is dropped when any kernel module changes (numba itself only checks
the file of the compiled function, not the modules of the helpers it inlined)."""
import importlib
import os
from pathlib import Path

import pytest

import mbd_ros.kernels as kernels


@pytest.mark.skipif(bool(os.environ.get("NUMBA_CACHE_DIR")), reason="NUMBA_CACHE_DIR moves the cache")
def test_changed_sources_drop_the_cached_machine_code(tmp_path):
    cache = Path(kernels.__file__).resolve().parent / "__pycache__"
    stamp = cache / "mbd_ros_kernels_sources.sha256"
    assert stamp.is_file()                       # written at import
    marker = cache / "mbd_ros_test_marker.nbi"   # stands for a cached kernel
    marker.write_text("stale")
    key = stamp.read_text()
    importlib.reload(kernels)                    # same sources: the cache is kept
    assert marker.is_file()
    stamp.write_text("another source state")     # as after an edit of, e.g., spatial.py
    importlib.reload(kernels)
    assert not marker.exists()
    assert stamp.read_text() == key
