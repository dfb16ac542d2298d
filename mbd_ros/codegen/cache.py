"""On-disk cache of generated kernel modules, keyed by a hash of the model.

The key hashes everything the generated source depends on: the model arrays (geometry, inertias,
joint types, passive forces, gravity), the generator's own source files, and the numba and Python
versions. A changed URDF gives another key, hence a new module, generated and compiled once; the
module file and numba's compiled functions (``cache=True``, in ``__pycache__`` beside it) are then
reused by every later process.

Where: ``$MBD_ROS_CACHE_DIR`` if set, else the user cache directory ``$XDG_CACHE_HOME/mbd_ros``
(default ``~/.cache/mbd_ros``), never inside the installed package (it may be shared or
read-only). The directory must be private (owned by this user, not writable by its group or
others; mbd_ros creates it with mode 0700): one that is not is refused with a CacheWarning and
the next place is used, finally ``$TMPDIR/mbd_ros-<uid>`` (cache_trust.private_directory).

Trust: every module is written with an HMAC-SHA256 of its content in its first line, keyed by a
random per-user key kept in the cache directory (mode 0600, cache_trust.secret_key), and bound to
the module's name. Before a module is imported its content is checked against that signature; a
module that does not verify (a line appended, truncated, copied from another robot, written by
an older mbd_ros) is never executed: what was compiled from it is removed, and it is
regenerated (replacing it) and signed again, with a CacheWarning. The module is executed from the
verified bytes (compiled once and kept, signed too, as ``__pycache__/<name>.<python tag>.code``),
not through Python's import system, whose .pyc files nothing checks.
"""
from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import re
import sys
import tempfile
import types
from pathlib import Path

import numba
import numpy as np

from ..kernels import cache_trust
from ..kernels.numba_cache import GENERATED_MODULE_PREFIX
from .generator import GENERATOR_VERSION, generate_source

ENV_CACHE_DIR = "MBD_ROS_CACHE_DIR"
# where modules were cached before (in the package): no longer used, an installed package's
# directory may be shared or read-only; kept for code that names it
PACKAGE_CACHE_DIR = Path(__file__).resolve().parent / "_generated"
MODULE_PREFIX = GENERATED_MODULE_PREFIX
# a generated module is ~15 kB per body (talos_reduced, 38 bodies: 0.6 MB; codegen stops at 100
# bodies): anything far larger in the cache is not one of ours
MAX_MODULE_BYTES = 64 << 20

_MODULE_HEADER = re.compile(rb"# mbd_ros generated module; hmac-sha256 ([0-9a-f]{64})")
_CODE_HEADER = re.compile(rb"mbd_ros code ([0-9a-f]{64}) ([0-9a-f]{64})")


def user_cache_dir():
    """$XDG_CACHE_HOME/mbd_ros, or ~/.cache/mbd_ros."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mbd_ros"


def _private_cache(path, no_symlink=False):
    """`path` and its `__pycache__` (numba's compiled kernels) as private directories
    (cache_trust.private_directory: created 0700, or UntrustedDirectory / OSError)."""
    path = cache_trust.private_directory(path, no_symlink=no_symlink)
    cache_trust.private_directory(path / "__pycache__")
    return path


def cache_dir():
    """The private directory generated modules are written to (see the module docstring).

    $MBD_ROS_CACHE_DIR that cannot be created or written raises OSError (the robot then keeps
    the generic kernels, with a warning); one that is not private is refused with a CacheWarning
    and the default is used. The default, ~/.cache/mbd_ros, falls back to $TMPDIR/mbd_ros-<uid>
    (with a warning if refused); OSError when neither can be used."""
    override = os.environ.get(ENV_CACHE_DIR)
    if override:
        path = Path(override).expanduser()
        try:
            return _private_cache(path)
        except cache_trust.UntrustedDirectory as exc:
            cache_trust.warn(f"{ENV_CACHE_DIR}={override} refused: {exc} (make it private to "
                             "this user, e.g. chmod 700, or remove it); generated kernels are "
                             "cached in the default directory instead")
        except OSError as exc:
            raise OSError(f"{ENV_CACHE_DIR}={override} is not a writable directory "
                          f"({exc})") from exc
    tried = []
    for path, no_symlink in ((user_cache_dir(), False), (cache_trust.temp_directory_path(), True)):
        try:
            return _private_cache(path, no_symlink)
        except cache_trust.UntrustedDirectory as exc:
            cache_trust.warn(f"cache directory refused: {exc} (make it private to this user, "
                             "e.g. chmod 700, or remove it)")
            tried.append(str(exc))
        except OSError as exc:
            tried.append(str(exc))
    raise OSError("no private writable cache directory for generated kernels "
                  f"({'; '.join(tried)}); set {ENV_CACHE_DIR}")


def _generator_text():
    here = Path(__file__).resolve().parent
    return b"".join((here / name).read_bytes() for name in ("expr.py", "spatial_sym.py", "generator.py",
                                                           "derivative_generator.py"))


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
    """The generated module of `model`: executed from the cache after its signature is checked
    (module docstring), generated and signed first if absent or if it does not verify.

    Returns (module, path, generated) where generated says whether the source was written now.
    `directory` (default cache_dir()) must be private (cache_trust.UntrustedDirectory if not).
    """
    directory = cache_dir() if directory is None else _private_cache(Path(directory))
    key = model_key(model)
    name = f"{MODULE_PREFIX}{key}"
    path = directory / f"{name}.py"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name], path, False
    secret = cache_trust.secret_key(directory)
    source, mac = _verified_source(path, name, secret)
    generated = source is None
    if generated:
        body = generate_source(model, key).encode()
        mac = cache_trust.signature(secret, "module", name, body)
        source = b"# mbd_ros generated module; hmac-sha256 " + mac.encode() + b"\n" + body
        _write(path, source)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(_code(directory, name, source, mac, secret), module.__dict__)
    sys.modules[name] = module
    return module, path, generated


def _write(path, data):
    """Write `data` to `path` atomically (concurrent processes building the same robot never see
    half a file), mode 0600."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gen-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path):
    """The bytes of `path` (None if missing), at most MAX_MODULE_BYTES + 1 of them."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_MODULE_BYTES + 1)
    except FileNotFoundError:
        return None


def _verified_source(path, name, secret):
    """(content, signature) of the module file if its signature verifies; else (None, None),
    the file and everything compiled from it removed, with a CacheWarning if there was one."""
    data = _read(path)
    if data is None:
        return None, None
    header, _, body = data.partition(b"\n")
    match = _MODULE_HEADER.fullmatch(header)
    if match and len(data) <= MAX_MODULE_BYTES:
        mac = cache_trust.signature(secret, "module", name, body)
        if cache_trust.same_signature(match[1].decode(), mac):
            return data, mac
    reason = ("its content does not match its signature" if match
              else "it has no signature (written by someone else or by an older mbd_ros)")
    _remove_compiled(path, name)
    cache_trust.warn(f"generated module {path} not imported: {reason} (changed or truncated); "
                     "removed with its compiled code, regenerating it", stacklevel=4)
    return None, None


def _remove_compiled(path, name):
    """Remove what was compiled from a module found changed (numba's index and data files, the
    code cache): none of it is trusted. The module itself is replaced atomically by its
    regenerated version (removing it first could pull it from under a concurrent process that
    just regenerated it)."""
    for entry in (path.parent / "__pycache__").glob(f"{name}.*"):
        entry.unlink(missing_ok=True)


def _code_path(directory, name):
    return directory / "__pycache__" / f"{name}.{sys.implementation.cache_tag}.code"


def _code(directory, name, source, source_mac, secret):
    """The code object of the verified module `source`: from its signed code cache when that
    belongs to this very source and verifies, else compiled now and cached (a cache that
    belongs to this source but does not verify is replaced with a CacheWarning)."""
    path = _code_path(directory, name)
    data = _read(path)
    if data is not None:
        header, _, payload = data.partition(b"\n")
        match = _CODE_HEADER.fullmatch(header)
        if match and match[1].decode() == source_mac:   # else stale: the module was regenerated
            mac = cache_trust.signature(secret, "code", name, importlib.util.MAGIC_NUMBER
                                        + source_mac.encode() + payload)
            if cache_trust.same_signature(match[2].decode(), mac):
                try:
                    return marshal.loads(payload)
                except (EOFError, ValueError, TypeError):
                    pass   # a signed file that does not load: another Python build's marshal
            cache_trust.warn(f"compiled generated module {path} does not match its signature; "
                             "removed and rebuilt", stacklevel=5)
    code = compile(source, str(directory / f"{name}.py"), "exec", dont_inherit=True)
    payload = marshal.dumps(code)
    mac = cache_trust.signature(secret, "code", name, importlib.util.MAGIC_NUMBER
                                + source_mac.encode() + payload)
    _write(path, b"mbd_ros code " + source_mac.encode() + b" " + mac.encode() + b"\n" + payload)
    return code
