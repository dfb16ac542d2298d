"""Robot descriptions reaching a node: checks and log-safe excerpts (no ROS imports).

The ``robot_description`` parameter and topic carry URDF XML only. A text that does not start
with '<' once surrounding whitespace and a byte-order mark are stripped is refused: it is never
read as a file path (a publisher on the topic could otherwise make the node read any local
file). A path is accepted only from the ``urdf_path`` parameter. Inputs can be megabytes long,
so every message that quotes one uses `excerpt`.
"""
from __future__ import annotations

BOM = "\ufeff"
EXCERPT_CHARS = 80
MESSAGE_CHARS = 600
# a robot description longer than this is refused unread (a 3000-link URDF is ~1.5 MB)
MAX_DESCRIPTION_BYTES = 32 * 2 ** 20


def excerpt(text, limit=EXCERPT_CHARS):
    """`text` (any object) as a repr cut to about `limit` characters, with its full length."""
    text = str(text)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def shorten(message, limit=MESSAGE_CHARS):
    """An error message cut to `limit` characters (the loaders may quote their input)."""
    message = str(message)
    if len(message) <= limit:
        return message
    return f"{message[:limit]} ... [{len(message) - limit} more characters]"


def urdf_xml(text, where):
    """The URDF XML in `text` (BOM and surrounding whitespace stripped); '' for an empty text.
    Raises ValueError naming `where` when the text is not XML."""
    if len(text) > MAX_DESCRIPTION_BYTES:
        raise ValueError(f"{where} has {len(text)} characters: more than {MAX_DESCRIPTION_BYTES}"
                         " (MAX_DESCRIPTION_BYTES); a robot this large is not supported")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    stripped = text.strip().lstrip(BOM).strip()
    if stripped and not stripped.startswith("<"):
        raise ValueError(f"{where} must be URDF XML (it starts with {excerpt(stripped, 40)}); "
                         "a file path is only accepted from the urdf_path parameter")
    return stripped


def check_description_parameter(value):
    """Parameter check (base.DynamicsNode.declare): None if `value` is empty or XML."""
    try:
        urdf_xml(value, "robot_description")
    except ValueError as exc:
        return str(exc).removeprefix("robot_description ")
    return None
