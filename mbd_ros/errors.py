"""Exceptions of the library, and the helper that keeps error messages short."""


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


def excerpt(value, limit=EXCERPT_LENGTH):
    """repr-like short text of `value` for an error message: at most `limit` characters, with
    the total length said when it was cut (never echo a multi-MB input into a log)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


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
