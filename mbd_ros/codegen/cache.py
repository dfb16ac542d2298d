"""On-disk cache of generated kernel modules, keyed by a hash of the model.

The key hashes everything the generated source depends on: the model arrays (geometry, inertias,
joint types, passive forces, gravity), the generator's own source files, and the numba and Python
versions. A changed URDF gives another key, hence a new module, generated and compiled once; the
module file and numba's compiled functions (``cache=True``, in ``__pycache__`` beside it) are then
reused by every later process.

Where: ``$MBD_ROS_CACHE_DIR`` if set; else ``mbd_ros/codegen/_generated`` inside the package when
that directory is writable (a source checkout); else the user cache directory
``$XDG_CACHE_HOME/mbd_ros`` (default ``~/.cache/mbd_ros``), for a read-only install such as a ROS
workspace's install space.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

from .generator import GENERATOR_VERSION, generate_source

ENV_CACHE_DIR = "MBD_ROS_CACHE_DIR"
PACKAGE_CACHE_DIR = Path(__file__).resolve().parent / "_generated"
MODULE_PREFIX = "mbd_ros_generated_"


def user_cache_dir():
    """$XDG_CACHE_HOME/mbd_ros, or ~/.cache/mbd_ros."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mbd_ros"


def _writable_dir(path):
    """True if `path` exists or can be created and a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
        return True
    except OSError:
        return False


def cache_dir():
    """The directory generated modules are written to (see the module docstring)."""
    override = os.environ.get(ENV_CACHE_DIR)
    if override:
        path = Path(override).expanduser()
        if not _writable_dir(path):
            raise OSError(f"{ENV_CACHE_DIR}={override} is not a writable directory")
        return path
    if _writable_dir(PACKAGE_CACHE_DIR):
        return PACKAGE_CACHE_DIR
    path = user_cache_dir()
    if not _writable_dir(path):
        raise OSError(f"no writable cache directory for generated kernels: {PACKAGE_CACHE_DIR} "
                      f"and {path} are not writable; set {ENV_CACHE_DIR}")
    return path


def _generator_text():
    here = Path(__file__).resolve().parent
    return b"".join((here / name).read_bytes() for name in ("expr.py", "spatial_sym.py", "generator.py"))


_GENERATOR_HASH = None


def model_key(model):
    """Hex digest identifying the generated source of this model with this toolchain."""
    global _GENERATOR_HASH
    if _GENERATOR_HASH is None:
        _GENERATOR_HASH = hashlib.sha256(_generator_text()).hexdigest()
    h = hashlib.sha256()
    h.update(f"{GENERATOR_VERSION}|{_GENERATOR_HASH}|numba {numba.__version__}|"
             f"python {sys.version_info[:3]}|numpy {np.__version__}".encode())
    for array in (model.body_int, model.body_float, model.link_int, model.link_float,
                  model.wrench_rows):
        h.update(str(array.shape).encode())
        h.update(np.ascontiguousarray(array).tobytes())
    h.update(repr((model.nq, model.nv, model.joint_names, model.wrench_joint_names)).encode())
    return h.hexdigest()[:24]


def module_path(model, directory=None):
    directory = cache_dir() if directory is None else Path(directory)
    return directory / f"{MODULE_PREFIX}{model_key(model)}.py"


def load_module(model, directory=None):
    """The generated module of `model`: imported from the cache, generated first if absent.

    Returns (module, path, generated) where generated says whether the source was written now.
    """
    key = model_key(model)
    path = (cache_dir() if directory is None else Path(directory)) / f"{MODULE_PREFIX}{key}.py"
    name = f"{MODULE_PREFIX}{key}"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name], path, False
    generated = False
    if not path.is_file():
        source = generate_source(model, key)
        # write atomically: concurrent processes building the same robot never see half a file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gen-", suffix=".py")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        generated = True
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module, path, generated
