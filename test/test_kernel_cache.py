"""The kernels' numba cache is dropped when any kernel module changes (numba itself only checks
the file of the compiled function, not the modules of the helpers it inlined)."""
from pathlib import Path

import mbd_ros.kernels as kernels


def test_changed_sources_drop_the_cached_machine_code(tmp_path):
    """The check kernels/__init__.py runs at import on its own folder (_drop_stale_cache), on a
    scratch folder keyed by the same sources: the package's real cache is never dropped here
    (other test processes running at the same time load from it)."""
    cache = tmp_path / "__pycache__"
    stamp = cache / "mbd_ros_kernels_sources.sha256"
    sources = kernels.kernel_sources()
    kernels.drop_stale_cache(tmp_path, sources)      # as at import
    assert stamp.is_file()
    marker = cache / "mbd_ros_test_marker.nbi"       # stands for a cached kernel
    marker.write_text("stale")
    key = stamp.read_text()
    kernels.drop_stale_cache(tmp_path, sources)      # same sources: the cache is kept
    assert marker.is_file()
    stamp.write_text("another source state")         # as after an edit of, e.g., spatial.py
    kernels.drop_stale_cache(tmp_path, sources)
    assert not marker.exists()
    assert stamp.read_text() == key
    real_stamp = Path(kernels.__file__).resolve().parent / "__pycache__" / stamp.name
    if real_stamp.is_file():                         # the import's check used the same key
        assert real_stamp.read_text() == key


def test_c_entries_cache_follows_the_kernel_sources(tmp_path):
    """fastcall/generic.py's cached C entries contain the kernels' machine code: the cache of a
    folder keyed by sources outside it is dropped when one of those changes."""
    kernel_source = tmp_path / "aba.py"
    kernel_source.write_text("version 1")
    entry_folder = tmp_path / "fastcall"
    (entry_folder / "__pycache__").mkdir(parents=True)
    sources = [kernel_source, entry_folder / "generic.py"]
    sources[1].write_text("entries")
    kernels.drop_stale_cache(entry_folder, sources)
    marker = entry_folder / "__pycache__" / "generic.forward_dynamics_c-1.py311.nbi"
    marker.write_text("cached entry")
    kernels.drop_stale_cache(entry_folder, sources)
    assert marker.is_file()
    kernel_source.write_text("version 2")          # a kernel edited, the entries' file not
    kernels.drop_stale_cache(entry_folder, sources)
    assert not marker.exists()


def test_the_layouts_the_kernels_compile_in_key_the_cache():
    """The column constants of mbd_ros/model/layout.py and model/flexible/layout.py are compiled into
    the kernels (and the C entries): an edit of a layout alone must drop the cached code too."""
    package = Path(kernels.__file__).resolve().parent.parent
    sources = {p.relative_to(package).as_posix() for p in kernels.kernel_sources()}
    assert {"model/layout.py", "model/flexible/layout.py", "kernels/flexible_dynamics.py",
            "kernels/aba.py"} <= sources
