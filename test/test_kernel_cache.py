"""The kernels' numba cache is dropped when any kernel module changes (numba itself only checks
the file of the compiled function, not the modules of the helpers it inlined)."""
from pathlib import Path

import mbd_ros.kernels as kernels


def test_changed_sources_drop_the_cached_machine_code():
    cache = Path(kernels.__file__).resolve().parent / "__pycache__"
    stamp = cache / "mbd_ros_kernels_sources.sha256"
    kernels._drop_stale_cache()                  # as at import (skipped there with NUMBA_CACHE_DIR)
    assert stamp.is_file()
    marker = cache / "mbd_ros_test_marker.nbi"   # stands for a cached kernel
    marker.write_text("stale")
    key = stamp.read_text()
    kernels._drop_stale_cache()                  # same sources: the cache is kept
    assert marker.is_file()
    stamp.write_text("another source state")     # as after an edit of, e.g., spatial.py
    kernels._drop_stale_cache()
    assert not marker.exists()
    assert stamp.read_text() == key
