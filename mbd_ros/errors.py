"""Exceptions of the library, and the helper that keeps error messages short."""
import reprlib


class ModelError(ValueError):
    """A robot description (URDF, closure file) that cannot be turned into a model.

    The message names the file and the link, joint or field at fault. It is capped at
    MAX_MESSAGE_LENGTH characters (a safety net: inputs are quoted in excerpts anyway).
    """

    def __init__(self, message=""):
        super().__init__(excerpt(str(message), MAX_MESSAGE_LENGTH))


# Inputs may be multi-megabyte strings (a URDF on a topic); messages quote at most this much.
EXCERPT_LENGTH = 120
MAX_MESSAGE_LENGTH = 2000
_INT_DIGITS_SHOWN = 40        # larger integers are described by their size, not converted


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr (a few levels and items of a container, the start of a string)
    that also never converts a huge integer or bytes object whole: quoting a value costs
    O(what is shown), whatever the value (a YAML alias bomb shares 10^9 list items)."""

    def __init__(self, limit):
        super().__init__()
        self.maxlevel, self.maxtuple, self.maxlist, self.maxarray = 3, 6, 6, 6
        self.maxdict, self.maxset, self.maxfrozenset, self.maxdeque = 4, 6, 6, 6
        self.maxstring = self.maxother = max(limit, 12)

    def repr_int(self, x, level):
        if x.bit_length() > 3.33 * _INT_DIGITS_SHOWN:
            return f"<an integer of ~{int(x.bit_length() * 0.30103) + 1} digits>"
        return repr(x)

    def repr_bytes(self, x, level):
        return super().repr_instance(x[:self.maxstring], level) + \
            (f"... ({len(x)} bytes)" if len(x) > self.maxstring else "")

    repr_bytearray = repr_bytes


def excerpt(value, limit=EXCERPT_LENGTH):
    """repr-like short text of `value` for an error message: at most about `limit`
    characters, with the total length said when a string was cut (never echo a multi-MB input
    into a log). A str is quoted as it is; any other value by a bounded repr (a few levels and
    items of a container), in time and memory of the order of `limit`."""
    if isinstance(value, str):
        text = value
        if len(text) <= limit:
            return text
        return f"{text[:limit]}... ({len(text)} characters)"
    try:
        text = _ShortRepr(limit).repr(value)
    except Exception:   # a broken __repr__ of a foreign object
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}..."


def user_stacklevel():
    """The stacklevel of warnings.warn that points at the first caller outside mbd_ros (a
    warning raised deep inside the library names the user's line, whatever the call path)."""
    import os
    import sys
    package = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level


def missing_file(path):
    """Why `path` cannot be read as a file: "not found", or what it is instead (a directory, a
    FIFO, a device: open() on a FIFO would wait for a writer, so it is never opened)."""
    import os
    import stat
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "not found"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if not stat.S_ISREG(mode):
        return "is a device or socket, not a regular file"
    return "not readable"
