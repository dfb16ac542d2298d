"""Which on-disk caches mbd_ros trusts: private directories and signed files (docs/codegen.md,
"What is trusted").

Caches are code: a generated module is imported, numba's cache files are unpickled. So a cache
directory is used only when nobody but this user (and root) can write to it:

- `directory_problem(path)`: why `path` is not a private directory (owned by another user,
  group- or world-writable, not a directory), or None;
- `private_directory(path)`: create `path` (mode 0700) if missing and return it, or raise
  `UntrustedDirectory` (refused: the caller warns and falls back) or OSError (not writable);
- `secret_key(directory)`: a per-user random key kept in the private directory (mode 0600), and
  `signature(key, kind, name, data)`: the HMAC-SHA256 that files written there carry, checked
  before they are used (a changed, truncated or substituted file does not verify).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
import warnings
from pathlib import Path

KEY_NAME = ".mbd_ros-key"
KEY_BYTES = 32


class CacheWarning(UserWarning):
    """A cache directory or entry was refused, or a broken entry was dropped and rebuilt."""


class UntrustedDirectory(OSError):
    """A cache directory that others can write to (or that is not ours): never used."""


def _euid():
    """The effective user id (a function so that tests can stand in another user)."""
    return os.geteuid()


def mode_text(mode):
    return oct(stat.S_IMODE(mode))


def directory_problem(path):
    """Why `path` (an existing directory) must not hold code we load, or None if it is private:
    owned by this user and not writable by the group or others."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != _euid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {_euid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by its group or by others (mode {mode_text(st.st_mode)})"
    return None


def private_directory(path, no_symlink=False):
    """`path` as a private cache directory: created with mode 0700 if missing (its parents with
    the default mode), then checked. Raises UntrustedDirectory naming the reason when it exists
    but is not private (or is a symbolic link, with no_symlink: for shared places such as /tmp),
    OSError when it cannot be created or written."""
    path = Path(path)
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass   # made meanwhile by another process: checked below like any other
    if no_symlink and path.is_symlink():
        raise UntrustedDirectory(f"{path} is a symbolic link")
    problem = directory_problem(path)
    if problem:
        raise UntrustedDirectory(f"{path} {problem}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise OSError(f"{path} is not writable")
    return path


def temp_directory_path():
    """$TMPDIR/mbd_ros-<uid>: the fallback when the user cache directory cannot be used (no
    home directory, a read-only one)."""
    return Path(tempfile.gettempdir()) / f"mbd_ros-{_euid()}"


def private_temp_directory():
    """temp_directory_path() as a private directory. Another user may have created that name
    first (or a symbolic link by that name): then it is refused like any directory not ours."""
    return private_directory(temp_directory_path(), no_symlink=True)


def warn(message, stacklevel=3):
    warnings.warn(message, CacheWarning, stacklevel=stacklevel)


# ---- signed files ------------------------------------------------------------------------------

def _read_key(path):
    """The key in `path` if it is a regular file of this user, readable by no one else, of the
    right length; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:   # missing, or a symbolic link (O_NOFOLLOW)
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        key = f.read(KEY_BYTES + 1)
    if (not stat.S_ISREG(st.st_mode) or st.st_uid != _euid()
            or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or len(key) != KEY_BYTES):
        return None
    return key


def secret_key(directory):
    """The per-user key signing the files of the private `directory` (created at first use:
    32 random bytes in `directory`/.mbd_ros-key, mode 0600). A key file that is not a private
    file of this user is replaced (with a warning): every file signed with it is then rebuilt."""
    path = Path(directory) / KEY_NAME
    key = _read_key(path)
    if key is not None:
        return key
    if path.exists() or path.is_symlink():
        warn(f"{path}: not a private key file of this user (mode, owner or length); replaced, "
             "the cached modules signed with it are rebuilt")
        path.unlink(missing_ok=True)
    # written whole under another name, then linked: concurrent processes agree on one key
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".key-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass   # another process won: use its key
    finally:
        os.unlink(tmp)
    key = _read_key(path)
    if key is None:
        raise UntrustedDirectory(f"{path}: cannot create a private key file")
    return key


def signature(key, kind, name, data):
    """Hex HMAC-SHA256 of `data` (bytes) as the file `name` of `kind` (binding both: a valid file
    of another robot or of another kind does not verify in its place)."""
    message = kind.encode() + b"\0" + name.encode() + b"\0" + data
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def same_signature(a, b):
    """Constant-time comparison of two hex signatures."""
    return hmac.compare_digest(a.encode(), b.encode())
