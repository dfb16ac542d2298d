"""numba's on-disk cache of mbd_ros's kernels: read only from trusted directories, and a broken
entry is dropped and recompiled instead of failing every later load (docs/codegen.md, "What is
trusted").

What numba does by itself (numba/core/caching.py, numba 0.58-0.68): `IndexDataCacheFile` unpickles
the index (`*.nbi`) and the data (`*.nbc`, the compiled code library) with no check. A truncated
or garbage file raises (pickle.UnpicklingError, EOFError, ...) out of `Dispatcher.compile` and
`CFunc.compile`, at every later load too, and so does the save after a compilation (it re-reads
the index): the kernel can never be compiled again until someone removes the files by hand.

`install()` wraps numba's `Cache._load_overload` and `Cache._save_overload` for the functions of
mbd_ros (modules `mbd_ros.*`) and of its generated modules (`mbd_ros_generated_*`); the caches
of other packages behave as numba made them.

- A cache directory that is not trusted (`cache_directory_problem`) is neither read nor written:
  the kernel is compiled in memory, with one CacheWarning naming the directory and the reason.
- Any exception while loading an entry (unpickling, rebuilding the code library) drops that
  function's index and data files, warns, and answers a miss: numba compiles and saves it anew.
- An exception while saving drops them and retries once; if that fails too, the kernel stays
  compiled in memory, uncached, with a warning.

Only failures that raise are caught: a file whose pickles are intact but whose machine code was
altered is not detected (numba keeps no checksum); that is why only trusted directories are read.
"""
from __future__ import annotations

import glob
import inspect
import os
import stat
from pathlib import Path

from . import cache_trust

GENERATED_MODULE_PREFIX = "mbd_ros_generated_"   # codegen/cache.py's module names

_verdicts = {}   # cache directory -> its problem (str) or None, decided once per process


def ours(module_name):
    """True for the modules whose numba cache this guard handles."""
    return (module_name == "mbd_ros" or module_name.startswith("mbd_ros.")
            or module_name.startswith(GENERATED_MODULE_PREFIX))


def cache_directory_problem(cache_path, source_file):
    """Why numba's cache directory `cache_path` of a function defined in `source_file` must not
    be read, or None.

    numba's in-tree cache (`__pycache__` beside the source) is trusted when it is no more writable
    than the source's own directory (owned by this user, the source directory's owner or root; no
    group or other write permission the source directory lacks, and no group write for another
    group): whoever can write there can edit the module itself, as with Python's own .pyc files.
    Any other place (NUMBA_CACHE_DIR, numba's per-user directory) must be private
    (cache_trust.directory_problem)."""
    cache_path = os.path.abspath(cache_path)
    source_dir = os.path.dirname(os.path.abspath(source_file))
    if os.path.dirname(cache_path) != source_dir or os.path.basename(cache_path) != "__pycache__":
        problem = cache_trust.directory_problem(cache_path)
        root = os.environ.get("NUMBA_CACHE_DIR")
        if problem is None and root:
            problem = _ancestors_problem(cache_path, os.path.abspath(root))
        return problem
    st, src = os.stat(cache_path), os.stat(source_dir)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid not in (cache_trust._euid(), src.st_uid, 0):
        return (f"is owned by uid {st.st_uid}, neither this user (uid {cache_trust._euid()}) "
                f"nor the owner of {source_dir}")
    extra = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) & ~src.st_mode
    if extra or (st.st_mode & stat.S_IWGRP and st.st_gid != src.st_gid):
        return (f"is writable by users who cannot write {source_dir} (mode "
                f"{cache_trust.mode_text(st.st_mode)}, {source_dir} "
                f"{cache_trust.mode_text(src.st_mode)})")
    return None


def _ancestors_problem(cache_path, root):
    """Why the directories from `root` (NUMBA_CACHE_DIR) down to `cache_path`'s parent let
    others replace it, or None: whoever may write one of them can rename our private
    subdirectory away and put theirs (or a symbolic link) there, so each must be private too,
    except a sticky shared directory such as /tmp owned by root or us (others may not rename
    our entries there)."""
    parent = os.path.dirname(cache_path)
    if not (parent == root or parent.startswith(root.rstrip(os.sep) + os.sep)):
        return None   # numba's own per-user directory: not under NUMBA_CACHE_DIR
    while True:
        st = os.stat(parent)
        shared = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and not (st.st_mode & stat.S_ISVTX and st.st_uid in (0, cache_trust._euid())):
            return (f"is inside {parent}, which is writable by its group or by others (mode "
                    f"{cache_trust.mode_text(st.st_mode)}): NUMBA_CACHE_DIR must be private")
        if parent == root or parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


def _source_file(cache):
    locator = getattr(getattr(cache, "_impl", None), "locator", None)
    return getattr(locator, "_py_file", None) or inspect.getfile(cache._py_func)


def _trusted(cache):
    """Whether `cache`'s directory may be read and written (decided once per directory; a
    refusal warns once)."""
    folder = cache._cache_path
    if folder in _verdicts:
        return _verdicts[folder] is None
    try:
        problem = cache_directory_problem(folder, _source_file(cache))
    except FileNotFoundError:
        return True   # nothing cached there yet; decided when it exists
    except OSError as exc:
        problem = f"cannot be checked ({exc})"
    _verdicts[folder] = problem
    if problem:
        cache_trust.warn(f"numba cache directory {folder} {problem}: mbd_ros kernels are not "
                         "loaded from it nor saved to it, they are compiled in memory (make it "
                         "private, e.g. chmod go-w, or remove it)")
    return problem is None


def drop_entries(cache):
    """Remove the index and data files of `cache`'s function; returns the names removed."""
    folder = Path(cache._cache_path)
    base = cache._impl.filename_base
    removed = []
    for path in [folder / f"{base}.nbi", *folder.glob(glob.escape(base) + ".*.nbc")]:
        try:
            path.unlink()
            removed.append(path.name)
        except OSError:
            pass
    return removed


def _what(cache):
    return f"{getattr(cache._py_func, '__module__', '?')}.{cache._py_func.__qualname__}"


def _guarded_load(original):
    def _load_overload(self, sig, target_context):
        if not ours(getattr(self._py_func, "__module__", None) or ""):
            return original(self, sig, target_context)
        if not _trusted(self):
            return None
        try:
            return original(self, sig, target_context)
        except Exception as exc:   # noqa: BLE001 -- any unreadable entry is a miss
            removed = drop_entries(self)
            cache_trust.warn(f"numba cache of {_what(self)} in {self._cache_path} is unreadable "
                             f"({type(exc).__name__}: {exc}); removed {', '.join(removed) or '-'}, "
                             "recompiling", stacklevel=2)
            return None
    return _load_overload


def _guarded_save(original):
    def _save_overload(self, sig, data):
        if not ours(getattr(self._py_func, "__module__", None) or ""):
            return original(self, sig, data)
        if not _trusted(self):
            return None
        try:
            return original(self, sig, data)
        except Exception as first:   # noqa: BLE001 -- e.g. a broken index read before writing
            drop_entries(self)
            try:
                return original(self, sig, data)
            except Exception as exc:   # noqa: BLE001
                cache_trust.warn(f"numba cache of {_what(self)} in {self._cache_path} cannot be "
                                 f"written ({type(first).__name__}: {first}; then "
                                 f"{type(exc).__name__}: {exc}); compiled in memory only",
                                 stacklevel=2)
                return None
    return _save_overload


def install():
    """Wrap numba's cache loading and saving (module docstring); idempotent. Returns False when
    numba's Cache class is not the expected one (then nothing changed)."""
    try:
        from numba.core.caching import Cache
    except ImportError:
        return False
    if getattr(Cache, "_mbd_ros_guarded", False):
        return True
    load, save = getattr(Cache, "_load_overload", None), getattr(Cache, "_save_overload", None)
    if load is None or save is None:
        return False
    Cache._load_overload = _guarded_load(load)
    Cache._save_overload = _guarded_save(save)
    Cache._mbd_ros_guarded = True
    return True
