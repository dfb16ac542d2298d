"""Reading YAML model inputs (closure, force, flexible-link files) safely.

One entry point, `read_yaml(source, what)`: a file path, YAML text (str or UTF-8 bytes) or an
already-parsed dict. Only PyYAML's safe constructors are used (no Python objects), through a
SafeLoader subclass that refuses duplicate mapping keys (YAML forbids them; PyYAML silently keeps
the last). Whatever the input, the only exception is ModelError naming the source: sizes are
capped (text length, nesting depth) so that RecursionError, MemoryError and OverflowError never
escape, and long inputs are quoted only in excerpts.
"""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..errors import ModelError, excerpt, missing_file

# Caps on hostile inputs: a model file is a few kB (1000 closures: ~120 kB, ~25 000 nodes);
# these are far above any real one. PyYAML composes ~15 000 nodes/s on a loaded machine, so the
# node cap bounds the parse to seconds; the expanded cap bounds what aliases make of them.
MAX_YAML_CHARACTERS = 8_000_000
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 200_000            # nodes written in the text (scalars, lists, mappings)
MAX_YAML_EXPANDED_NODES = 1_000_000  # nodes once every alias (*name) is replaced by its anchor


class UniqueKeySafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses duplicate keys in a mapping, nesting deeper than
    MAX_YAML_DEPTH (the composer recurses once per level), more than MAX_YAML_NODES nodes and
    alias bombs: every node's size with its aliases expanded is counted as it is composed
    (from its children's, so in time linear in the text) and a document larger than
    MAX_YAML_EXPANDED_NODES (a 'billion laughs' of nested aliases), or an alias of a node that
    contains it (a recursive structure), is refused before anything is constructed."""

    def compose_node(self, parent, index):
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            mark = self.peek_event().start_mark
            if self._depth > MAX_YAML_DEPTH:
                raise ModelError(f"nesting deeper than {MAX_YAML_DEPTH} levels (line {mark.line + 1})")
            sizes = self.__dict__.setdefault("_expanded_sizes", {})   # id(node) -> size
            if self.check_event(yaml.AliasEvent):
                anchor = self.peek_event().anchor
                if anchor in self.anchors and id(self.anchors[anchor]) not in sizes:
                    raise ModelError(f"line {mark.line + 1}: alias *{excerpt(anchor, 40)} refers "
                                     "to a node that contains it (a recursive structure)")
                return super().compose_node(parent, index)
            node = super().compose_node(parent, index)
            if len(sizes) >= MAX_YAML_NODES:
                raise ModelError(f"more than {MAX_YAML_NODES} nodes (line {mark.line + 1}); a "
                                 "model file has far fewer")
            sizes[id(node)] = size = 1 + _children_size(node, sizes)
            if size > MAX_YAML_EXPANDED_NODES:
                raise ModelError(f"line {mark.line + 1}: the aliases (*name) expand to more "
                                 f"than {MAX_YAML_EXPANDED_NODES} nodes (an alias bomb?)")
            return node
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":   # '<<: *anchor' (flatten_mapping's)
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise ModelError(f"line {key_node.start_mark.line + 1}: a mapping key must be a "
                                 "plain value") from None
            if key in seen:
                raise ModelError(f"duplicate key '{excerpt(key, 60)}' (lines {seen[key]} and "
                                 f"{key_node.start_mark.line + 1})")
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


    def construct_yaml_int(self, node):
        # an integer beyond Python's str -> int digit limit (4300) raised a bare ValueError
        # without a line (shorter ones are read, and refused by their field's check)
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise ModelError(f"line {node.start_mark.line + 1}: an integer of {len(node.value)} "
                             "characters, beyond what can be read as a number; no model value "
                             "has that many digits") from None


UniqueKeySafeLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeySafeLoader.construct_yaml_int)


def _children_size(node, sizes):
    """Sum of the expanded sizes of a composed node's children (aliases count in full)."""
    if isinstance(node, yaml.SequenceNode):
        return sum(sizes[id(child)] for child in node.value)
    if isinstance(node, yaml.MappingNode):
        return sum(sizes[id(key)] + sizes[id(value)] for key, value in node.value)
    return 0


def parse_yaml_text(text, where):
    """Parse YAML text with UniqueKeySafeLoader; every failure is a ModelError naming `where`."""
    if len(text) > MAX_YAML_CHARACTERS:
        raise ModelError(f"{where}: {len(text)} characters, more than the {MAX_YAML_CHARACTERS} "
                         "a model file may have")
    text = text.lstrip("\ufeff")
    try:
        return yaml.load(text, Loader=UniqueKeySafeLoader)   # noqa: S506 - a SafeLoader subclass
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ModelError(f"{where}: malformed YAML: {excerpt(str(exc), 300)}") from None
    except (RecursionError, MemoryError, OverflowError, ValueError) as exc:
        raise ModelError(f"{where}: unreadable YAML ({type(exc).__name__}: "
                         f"{excerpt(str(exc), 100)})") from None


def read_yaml(source, what, file_noun=None):
    """(parsed data, name of the source for messages) from a file path (str or Path), YAML text
    (str or bytes, a multi-line string or one that is not an existing file) or a dict.

    what: the kind of input, e.g. 'closures', used in messages ('<closures text>');
    file_noun: how to call its file ('closure file'; default '<what> file')."""
    noun = file_noun or f"{what} file"
    if isinstance(source, dict):
        return source, f"<{what} dict>"
    if isinstance(source, Path):
        return _read_file(str(source), noun), str(source)
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ModelError(f"<{what} text>: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(source, str):
        raise ModelError(f"{what} must be a file path, YAML text or a dict, "
                         f"got {type(source).__name__}")
    if not source.strip().lstrip("\ufeff").strip():
        raise ModelError(f"<{what} text>: the {what} text is empty")
    if "\n" not in source and len(source) < 4096 and _is_file(source):
        return _read_file(source, noun), source
    data = parse_yaml_text(source, f"<{what} text>")
    if isinstance(data, str) and "\n" not in source.strip():
        # one line that is neither an existing file nor YAML structure: most likely a path
        raise ModelError(f"{noun} {missing_file(source)}: {excerpt(source)}")
    return data, f"<{what} text>"


def _is_file(path):
    try:
        return os.path.isfile(path)
    except (ValueError, OSError):
        return False


def _read_file(path, noun):
    if not _is_file(path):
        raise ModelError(f"{noun} {missing_file(path)}: {excerpt(path)}")
    try:
        size = os.path.getsize(path)
        if size > MAX_YAML_CHARACTERS * 4:
            raise ModelError(f"{path}: {size} bytes, too large for a {noun}")
        with open(path, "rb") as stream:
            raw = stream.read()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the {noun}: {exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ModelError(f"{path}: the {noun} is empty")
    return parse_yaml_text(text, path)
