"""Bounded YAML for files a user (or anyone who can write them) hands clawwatch.

``yaml.safe_load`` is safe against code execution but not against cost: a few hundred
bytes of nested anchors ("billion laughs") expand to billions of nodes for any code that
walks the result, 10,000 ``[`` overflow the recursive composer, duplicate keys silently
keep the last value, and a path naming a FIFO blocks ``open`` forever. This module reads
with hard bounds so that any input is refused in well under a second and a few MB:

* ``read_regular_file``: opens with ``O_NONBLOCK`` (a FIFO cannot block), refuses what is
  not a regular file and anything over ``MAX_BYTES``;
* ``decode_utf8``: strict UTF-8 (a BOM is allowed), naming the line of a bad byte;
* ``load_yaml``: one document, at most ``MAX_DEPTH`` levels deep, ``MAX_NODES`` nodes and
  ``MAX_SCALAR_CHARS`` characters *counting every alias as the copy it stands for*, at most
  ``MAX_ALIASES`` alias references, no recursive aliases, no duplicate keys, and every
  failure a ``yaml.YAMLError`` (a bad ``!!int``/``!!float``/timestamp included).

It uses libyaml's parser when present (fast events) under a Python composer that counts.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.error import MarkedYAMLError
from yaml.events import AliasEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from monitor.sources.regular import NotRegularFile, TooLarge, read_bounded

MAX_BYTES = 1024 * 1024            # a config or theme file is at most 1 MiB
MAX_DEPTH = 64                     # nesting of collections (config.yaml uses 4)
MAX_NODES = 20_000                 # nodes, each alias counted as the nodes it stands for
MAX_SCALAR_CHARS = 2 * MAX_BYTES   # characters of all scalars, aliases expanded
MAX_ALIASES = 100                  # alias references (*name) in one document
MERGE_TAG = "tag:yaml.org,2002:merge"


class InputRefused(ValueError):
    """A file or text refused before parsing: ``key`` is ``(file)``, ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class YamlRefused(MarkedYAMLError):
    """Well-formed YAML refused by a bound; ``key`` is the dotted path where it happened."""

    def __init__(self, key: str, problem: str, mark: Any, note: str = "") -> None:
        super().__init__(problem=problem, problem_mark=mark, note=note or None)
        self.key = key


def describe_yaml_error(exc: yaml.YAMLError) -> tuple[str, str]:
    """(key, message) for one YAML failure: a refusal names its key, a syntax error is
    ``(yaml)`` with ``invalid YAML at line L, column C: problem``."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    if isinstance(exc, YamlRefused):
        note = f" ({exc.note})" if exc.note else ""
        return exc.key or "(yaml)", f"{exc.problem}{where}{note}"
    problem = getattr(exc, "problem", None) or " ".join(
        line.strip() for line in str(exc).splitlines())
    return "(yaml)", f"invalid YAML{where}: {problem}"


# ------------------------------------------------------------------------------ reading

def read_regular_file(path: str, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``; ``InputRefused`` unless it is a regular file of at most
    ``max_bytes``. ``OSError`` (``FileNotFoundError`` included) passes through."""
    if "\0" in str(path):
        raise InputRefused("cannot read: the path contains a NUL character")
    try:
        return read_bounded(path, max_bytes)
    except NotRegularFile as exc:
        raise InputRefused(f"not a regular file ({exc.what}); only a plain file is read"
                           ) from None
    except TooLarge as exc:
        raise InputRefused(exc.strerror) from None


def decode_utf8(data: bytes) -> str:
    """Strict UTF-8 (a leading BOM dropped); ``InputRefused`` naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputRefused(f"not valid UTF-8: byte 0x{data[exc.start]:02x} at line {line} "
                           f"(offset {exc.start})") from None


# ------------------------------------------------------------------------------ loading

class _CountingComposer(Composer):
    """Composes nodes while counting depth, nodes and scalar characters (aliases expanded),
    alias references; refuses recursive aliases and duplicate keys."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0
        self._chars = 0
        self._aliases = 0
        self._sizes: dict[str, tuple[int, int]] = {}    # anchor -> (nodes, chars) expanded
        self._path: list[tuple[bool, str]] = []          # (is index, text)

    def _key(self, extra: tuple[bool, str] | None = None) -> str:
        parts = self._path + ([extra] if extra else [])
        text = "".join(f"[{t}]" if index else f".{t}" for index, t in parts)
        return text[1:] if text.startswith(".") else (text or "(yaml)")

    def _refuse(self, problem: str, mark: Any, extra: tuple[bool, str] | None = None,
                note: str = "") -> YamlRefused:
        return YamlRefused(self._key(extra), problem, mark, note)

    def _grow(self, nodes: int, chars: int, mark: Any) -> None:
        self._nodes += nodes
        self._chars += chars
        if self._nodes > MAX_NODES:
            raise self._refuse(f"more than {MAX_NODES} YAML nodes", mark,
                               note="an alias counts as the nodes it repeats")
        if self._chars > MAX_SCALAR_CHARS:
            raise self._refuse(f"more than {MAX_SCALAR_CHARS} characters of values", mark,
                               note="an alias counts as the text it repeats")

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        segment = _segment(parent, index)
        if segment:
            self._path.append(segment)
        try:
            if self.check_event(AliasEvent):
                event = self.peek_event()
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    raise self._refuse(f"more than {MAX_ALIASES} alias references "
                                       f"(*{_short(event.anchor)})", event.start_mark)
                size = self._sizes.get(event.anchor)
                if size is None and event.anchor in self.anchors:
                    raise self._refuse(f"alias *{_short(event.anchor)} is inside the node it "
                                       "names (a recursive structure)", event.start_mark)
                if size is not None:
                    self._grow(*size, event.start_mark)
                return super().compose_node(parent, index)
            event = self.peek_event()
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise self._refuse(f"nested more than {MAX_DEPTH} levels deep",
                                   event.start_mark)
            nodes, chars = self._nodes, self._chars
            self._grow(1, len(event.value) if isinstance(event, ScalarEvent) else 0,
                       event.start_mark)
            node = super().compose_node(parent, index)
            self._depth -= 1
            if event.anchor is not None:
                self._sizes[event.anchor] = (self._nodes - nodes, self._chars - chars)
            if isinstance(node, MappingNode):
                self._check_duplicate_keys(node)
            return node
        finally:
            if segment:
                self._path.pop()

    def _check_duplicate_keys(self, node: MappingNode) -> None:
        seen: dict[tuple[str, str], Node] = {}
        for key_node, _value in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == MERGE_TAG:
                continue
            ident = (key_node.tag, key_node.value)
            first = seen.get(ident)
            if first is not None:
                raise self._refuse("duplicate key", key_node.start_mark,
                                   (False, _short(key_node.value)),
                                   note=f"first at line {first.start_mark.line + 1}")
            seen[ident] = key_node


def _segment(parent: Node | None, index: Any) -> tuple[bool, str] | None:
    if isinstance(parent, SequenceNode):
        return True, str(index)
    if isinstance(parent, MappingNode) and isinstance(index, Node):
        return False, _short(index.value) if isinstance(index, ScalarNode) else "(complex key)"
    return None


def _short(text: Any, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


class _CheckedConstructor(SafeConstructor):
    """``SafeConstructor`` whose value errors (``!!int "x"``, ``2001-13-45``, an int of
    5,000 digits, ``!!timestamp ''``) are ``ConstructorError``s with a line, not bare
    ``ValueError``s or ``AttributeError``s."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception as exc:
            # PyYAML's constructors only turn text into values, so any error in one is a
            # bad value in the file (`!!timestamp ''` raises AttributeError, for one)
            raise ConstructorError(None, None, f"cannot read {node.tag!r} value: "
                                   f"{_short(exc, 200)}", node.start_mark) from None


try:
    from yaml.cyaml import CParser
except ImportError:   # pragma: no cover - PyYAML built without libyaml
    CParser = None

if CParser is not None:
    class _Loader(_CountingComposer, CParser, _CheckedConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _CheckedConstructor.__init__(self)
            Resolver.__init__(self)
            _CountingComposer.__init__(self)
else:   # pragma: no cover - libyaml is normally there; same bounds, slower
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(Reader, Scanner, Parser, _CountingComposer,  # type: ignore[no-redef]
                  _CheckedConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _CountingComposer.__init__(self)
            _CheckedConstructor.__init__(self)
            Resolver.__init__(self)


def load_yaml(text: str) -> Any:
    """One YAML document within the bounds above; ``yaml.YAMLError`` for anything else
    (``YamlRefused`` when a bound or a duplicate key refused it)."""
    if len(text) > MAX_BYTES:
        raise YamlRefused("(yaml)", f"too long ({len(text)} characters; at most {MAX_BYTES})",
                          None)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise YamlRefused("(yaml)", f"not valid UTF-8 (character {exc.start})", None) from None
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem):   # libyaml's own bound, met first
            raise YamlRefused("(yaml)", f"nested more than {MAX_DEPTH} levels deep",
                              exc.problem_mark) from None
        raise
    except yaml.YAMLError:
        raise
    except Exception as exc:     # a PyYAML quirk not caught per node above
        raise ConstructorError(None, None, f"cannot read the document: {_short(exc, 200)}",
                               None) from None
    finally:
        loader.dispose()


def load_yaml_file(path: str) -> Any:
    """``load_yaml`` of a regular file of at most ``MAX_BYTES`` of UTF-8: raises
    ``OSError``, ``InputRefused`` or ``yaml.YAMLError``."""
    return load_yaml(decode_utf8(read_regular_file(path)))
