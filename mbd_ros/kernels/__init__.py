"""numba kernels (generic, over the flat Model/Data arrays).

numba's on-disk cache (cache=True) checks only the source file of the function it compiled, but
our kernels inline helpers from other modules (spatial.py, kinematics.py, ...): after an edit of
a helper's module alone, a cached entry kernel would still run the old helper's code. So the
cache of this package is keyed by all of its sources: when any kernel module changed since the
cache was written, the cached machine code of this folder is dropped at import (it is rebuilt on
first use). Where NUMBA_CACHE_DIR moves the cache elsewhere, this check does not apply; clear that
directory after editing the kernels.
"""
import hashlib
import os
from pathlib import Path

from . import numba_cache

# before any kernel module compiles (some load from the cache at import): broken cache entries
# of mbd_ros are dropped and recompiled, untrusted cache directories ignored (numba_cache.py)
numba_cache.install()

# before any kernel is called: misaligned and byte-swapped float64 arrays are refused by the
# kernels' signatures (typecode_guard.py), never read as native C arrays
from . import typecode_guard  # noqa: E402

typecode_guard.seed()


def drop_stale_cache(folder, sources):
    """Drop the numba cache files in folder/__pycache__ unless they were written from the same
    `sources` (paths; their names and bytes are hashed into a stamp file beside the cache)."""
    cache = Path(folder) / "__pycache__"
    try:
        digest = hashlib.sha256()
        for source in sorted(Path(s) for s in sources):
            digest.update(source.name.encode())
            digest.update(source.read_bytes())
        key = digest.hexdigest()
        stamp = cache / "mbd_ros_kernels_sources.sha256"
        if stamp.is_file() and stamp.read_text() == key:
            return
        for entry in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            entry.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(key)
    except OSError:
        pass   # a read-only install: its cache (if any) was built from these very sources


def kernel_sources():
    """The source files of this folder and the column layouts whose constants the kernels
    compile in (mbd_ros/model/layout.py, mbd_ros/model/flexible/layout.py): what every cached
    kernel may have inlined."""
    here = Path(__file__).resolve().parent
    return sorted(here.glob("*.py")) + [here.parent / "model" / "layout.py",
                                        here.parent / "model" / "flexible" / "layout.py"]


def _drop_stale_cache():
    drop_stale_cache(Path(__file__).resolve().parent, kernel_sources())


if not os.environ.get("NUMBA_CACHE_DIR"):
    _drop_stale_cache()
