"""First-run honesty of `mbd-ros hil-demo` (and `mbd-ros demo`): the startup message comes from
what numba's on-disk cache holds, not a fixed "from cache", and the kernels compiled during the
start are counted from the cache entries written meanwhile. (No ROS needed: hil_demo imports
rclpy only when it runs.)"""
from __future__ import annotations

import hashlib
import os

import pytest

from mbd_ros.nodes import hil_demo, processes


@pytest.fixture
def empty_caches(tmp_path, monkeypatch):
    """A package tree and user cache without any compiled kernel (a fresh clone)."""
    package_root = tmp_path / "src"
    (package_root / hil_demo.PACKAGE / "kernels" / "__pycache__").mkdir(parents=True)
    (package_root / hil_demo.PACKAGE / "codegen").mkdir()    # writable: a source checkout
    monkeypatch.setattr(processes, "PACKAGE_ROOT", package_root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home_cache"))
    for variable in ("MBD_ROS_CACHE_DIR", "NUMBA_CACHE_DIR"):
        monkeypatch.delenv(variable, raising=False)
    return package_root / hil_demo.PACKAGE


def test_a_fresh_clone_is_told_that_the_kernels_compile(empty_caches, tmp_path):
    # other checkouts' kernels in the user caches (~/.cache/mbd_ros, ~/.cache/numba) are not
    # this checkout's: a writable package keeps its own (this once said "from the cache")
    other = tmp_path / "home_cache" / hil_demo.PACKAGE / "__pycache__"
    other.mkdir(parents=True)
    (other / "mbd_ros_generated_other.fd-3.py311.1.nbc").write_bytes(b"another robot")
    entries = hil_demo.numba_cache_entries()
    assert entries == {}
    message = hil_demo.startup_message(entries)
    low, high = hil_demo.FIRST_RUN_SECONDS
    assert "compile" in message and f"{low}-{high} s" in message
    assert "from the on-disk cache" not in message


def test_cached_kernels_are_announced_and_new_ones_counted(empty_caches, tmp_path):
    cached = empty_caches / "kernels" / "__pycache__" / "aba.aba-10.py311.1.nbc"
    cached.write_bytes(b"machine code")
    before = hil_demo.numba_cache_entries()
    assert list(before) == [cached]
    assert "from the on-disk cache" in hil_demo.startup_message(before)
    assert hil_demo.compiled_since(before) == 0
    assert hil_demo.kernels_note(0) == "numba kernels from the cache"
    # two kernels compiled meanwhile: one new entry of the generated kernels, and the cached
    # one rewritten (recompiled after a stale drop)
    generated = empty_caches / "codegen" / "_generated" / "__pycache__"
    generated.mkdir(parents=True)
    (generated / "mbd_ros_generated_x.fd-3.py311.1.nbc").write_bytes(b"more")
    os.utime(cached, ns=(before[cached] + 10**9, before[cached] + 10**9))
    assert hil_demo.compiled_since(before) == 2
    assert hil_demo.kernels_note(2) == "2 numba kernels compiled and cached"


def test_a_read_only_install_counts_its_user_cache_entries(empty_caches, tmp_path, monkeypatch):
    """A read-only install (a ROS workspace's install space): numba keeps the kernels in its
    user-wide cache, one folder per source folder named <folder>_<sha1 of its path>, and the
    generated kernels go to ~/.cache/mbd_ros."""
    (empty_caches / "kernels" / "aba.py").write_text("# kernels")
    monkeypatch.setattr(hil_demo.os, "access", lambda path, mode: False)
    numba_cache = tmp_path / "home_cache" / "numba"
    folder = (empty_caches / "kernels").resolve()
    mine = numba_cache / f"kernels_{hashlib.sha1(str(folder).encode()).hexdigest()}"
    mine.mkdir(parents=True)
    (mine / "aba.aba-10.py311.1.nbc").write_bytes(b"x")
    other = numba_cache / f"kernels_{hashlib.sha1(b'/elsewhere/kernels').hexdigest()}"
    other.mkdir(parents=True)
    (other / "aba.aba-10.py311.1.nbc").write_bytes(b"x")
    generated = tmp_path / "home_cache" / hil_demo.PACKAGE / "__pycache__"
    generated.mkdir(parents=True)
    (generated / "mbd_ros_generated_x.fd-3.py311.1.nbc").write_bytes(b"x")
    assert sorted(p.parent for p in hil_demo.numba_cache_entries()) == sorted([mine, generated])
