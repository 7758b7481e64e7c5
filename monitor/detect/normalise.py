"""Volatile-insensitive outcome keys, for the detectors that go beyond OpenClaw.

OpenClaw compares raw outcomes, so ``date; ls`` repeated thirty times looks like
thirty different results. Here every string in a result is masked for values
that change without meaning progress (timestamps, clock times, epoch numbers,
durations, pids, UUIDs and long hex ids, temp paths), volatile detail keys are
dropped, and the rest is hashed. Patterns are configurable.
"""

from __future__ import annotations

import hashlib
import json
import re
from itertools import accumulate
from operator import itemgetter
from typing import Any, NamedTuple

import msgspec

from monitor.detect.jsstable import js_trim
from monitor.detect.memo import BoundedMemo
from monitor.detect.outcomes import strip_loop_note

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_WORD = "[0-9A-Za-z_]"
# A digit with no word character before it. The digit comes first and the look-behind after
# it, so the regex starts with a character class and the regex engine skips ahead to the next
# digit instead of trying a match at every position (same for the hex and ``1``/``tmp``
# starts below, which stand for ``\b`` before a word character).
_NUM = f"[0-9](?<!{_WORD}[0-9])"
_HEX = "[0-9a-fA-F]"
# A duration's unit. A duration may go on in more units (``5m12s``, ``1h2m3.5s``), only the
# last with a fraction: a digit after a ``.`` starts a word, so were each part allowed one,
# ``1.5h1.5h…`` would be matched from every part to its end, in time quadratic in its length.
_UNIT = "(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?)"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# Masking works on the UTF-8 bytes of the text (lone surrogates passed through), where the
# builtin regexes, all ASCII, match exactly what they match in the ``re.ASCII`` text: every
# byte of a character beyond ASCII is, like the character, neither a word character nor
# whitespace. Shapes: the bytes mapped to character classes by ``bytes.translate``;
# searching a shape for a short literal runs at memory speed and tells whether (and where)
# a builtin regex can match at all. Digits are ``9``, a space stays a space and other
# whitespace is a tab, and the letters a duration's unit starts with are ``u`` (``µ`` is
# C2 B5 in UTF-8: both bytes are ``u``); every byte the ISO-timestamp regex names is kept,
# so that regex rewritten with ``9`` for ``[0-9]`` matches this shape exactly where it
# matches the text. Every hex digit, either case, is ``h``.
_DIGIT_SHAPE = bytes.maketrans(b"0123456789\t\n\x0b\x0c\rnu\xc2\xb5msh",
                               b"9999999999\t\t\t\t\tuuuuuuu")
_HEX_SHAPE = bytes.maketrans(b"0123456789abcdefABCDEF", b"h" * 22)
# ``w`` for a word character of ``re.ASCII`` (``[0-9A-Za-z_]``), a space for any other byte.
_WORD_SHAPE = bytes(ord("w") if i < 128 and (chr(i).isalnum() or chr(i) == "_") else ord(" ")
                    for i in range(256))
# The anchored loop tries the regex in Python at most ``len(text) // _LOOP_SHARE`` (+
# ``_LOOP_FLOOR``) times, then hands the text to ``pattern.sub``, which gives the same result
# from C: a text packed with candidates costs at most a few tens of nanoseconds per character.
_LOOP_SHARE = 64
_LOOP_FLOOR = 64
_WORD_BYTES = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_LONG = 1 << 16


def _shape(text: bytes, table: bytes) -> bytes:
    return text.translate(table)


def _shape_into(shapes: dict[bytes, bytes], text: bytes, table: bytes) -> bytes:
    """``_shape`` of ``text``, kept in ``shapes``."""
    shaped = shapes[table] = text.translate(table)
    return shaped


class Gate(NamedTuple):
    """When a builtin regex is worth running: only where ``probe`` (a regex, or literals
    of which one must occur) finds something in the text (``table`` None) or in the text's
    shape under ``table``. With ``anchored`` the probe is one literal that occurs at every
    place a match of the builtin regex starts (found by ``bytes.find``, several times faster
    than a regex search), so the builtin is tried at those places alone. With
    ``word_start`` as well, every match starts at a word start (the text's start, or after a
    character that is not ``[0-9A-Za-z_]``), so a probe match inside a word is skipped with
    the rest of that word: ``"0" * 30_000_000`` is one candidate, not thirty million.
    ``first``: a cheaper condition checked before the probe, ``(table, literal)``: the
    literal occurs in the shape under that table. With ``exact`` the probe, one capturing
    group, matches the shape exactly where the builtin regex matches the text (the shape
    keeps every distinction the regex makes), so the masks are made from its matches in C."""

    table: bytes | None
    probe: re.Pattern | tuple[bytes, ...] | bytes
    anchored: bool = False
    word_start: bool = False
    needs: tuple[bytes, ...] = ()  # bytes every probe match contains (long texts)
    first: tuple[bytes, bytes] | None = None
    exact: bool = False

    def passes(self, subject: bytes) -> bool:
        probe = self.probe
        if isinstance(probe, bytes):
            return probe in subject
        if len(subject) < _LONG:
            if isinstance(probe, tuple):
                return any(literal in subject for literal in probe)
            return probe.search(subject) is not None
        # A long text: a one-byte ``in`` is a ``memchr``, so first make sure the bytes the
        # probe needs (and a literal's first and last) occur at all.
        if not all(char in subject for char in self.needs):
            return False
        if isinstance(probe, tuple):
            return any(literal[:1] in subject and literal[-1:] in subject
                       and literal in subject for literal in probe)
        return probe.search(subject) is not None


# Both month regexes need a month name, any lowercase letters, whitespace and a digit: in
# the shape where a month's first letter is ``C``, a lowercase letter ``a``, whitespace a
# space and a digit ``9``, that is ``Caa+ +9``, a regex with a literal start that runs at a
# fraction of the cost of searching the text for twelve month names.
_MONTH_INITIALS = bytes(sorted({ord(month[0]) for month in _MONTHS}))
_MONTH_SHAPE = bytes.maketrans(
    _MONTH_INITIALS + bytes(range(ord("a"), ord("z") + 1)) + b" \t\n\x0b\x0c\r0123456789",
    b"C" * len(_MONTH_INITIALS) + b"a" * 26 + b" " * 6 + b"9" * 10)
_MONTH_GATE = Gate(_MONTH_SHAPE, re.compile(rb"Caa+ +9"))
# (name, regex, gate)
BUILTIN_PATTERNS: tuple[tuple[str, str, Gate], ...] = (
    ("iso_timestamp", r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}"
                      r"(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?",
     Gate(_DIGIT_SHAPE, re.compile(rb"(9999-99-99[T ]99:99(?::99(?:[.,]9+)?)?(?:Z|[+-]99:?99)?)"),
          needs=(b"-", b":"), first=(_DIGIT_SHAPE, b"9999-99-99"), exact=True)),
    ("date_words", rf"\b(?:{_DAY},?\s+)?{_MONTH}\s+[0-9]{{1,2}}(?:,?\s+[0-9]{{4}})?\b",
     _MONTH_GATE),
    ("day_month", rf"{_NUM}[0-9]?\s+{_MONTH}\s+[0-9]{{4}}\b", _MONTH_GATE),
    ("clock_time", rf"{_NUM}[0-9]?:[0-9]{{2}}:[0-9]{{2}}(?:[.,][0-9]++)?(?:\s?[AP]M)?\b",
     Gate(_DIGIT_SHAPE, (b"9:99:99",), needs=(b":",))),
    ("uuid", rf"{_HEX}(?<!{_WORD}{_HEX}){_HEX}{{7}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-"
             rf"{_HEX}{{12}}\b",
     Gate(_HEX_SHAPE, b"hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh", anchored=True,
          word_start=True, needs=(b"-",))),
    ("hex_id", rf"[0-9a-f](?<!{_WORD}[0-9a-f])(?:(?<=[0-9])(?=[0-9]*+[a-f])"
               r"|(?<=[a-f])(?=[a-f]*+[0-9]))[0-9a-f]{11,}+\b",
     Gate(_HEX_SHAPE, b"hhhhhhhhhhhh", anchored=True, word_start=True)),
    ("epoch", rf"1(?<!{_WORD}1)[0-9]{{9}}(?:[0-9]{{3}}|[0-9]{{6}}|[0-9]{{9}})?(?:\.[0-9]++)?\b",
     Gate(_DIGIT_SHAPE, b"9999999999", anchored=True, word_start=True)),
    ("duration", rf"{_NUM}[0-9]*+(?:\.[0-9]++)?\s?{_UNIT}(?:[0-9]++{_UNIT})*"
                 rf"(?:[0-9]++\.[0-9]++{_UNIT})?\b",
     Gate(_DIGIT_SHAPE, re.compile(rb"9[ \t]?u"))),
    ("pid", r"\b(?:pid|ppid|PID|process)\b[\s#:=]*+[0-9]+",
     Gate(None, (b"pid", b"PID", b"process"))),
    ("temp_path", r"/(?:private/)?(?:tmp|var/tmp|var/folders/[^\s/]+/[^\s/]+/T)"
                  r"(?:/[^\s/'\"]*?(?:tmp|temp|[0-9])[^\s/'\"]*)+",
     Gate(None, (b"/tmp", b"/var/"))),
    ("tmp_name", rf"tmp(?<!{_WORD}tmp)[a-zA-Z0-9_]{{6,}}\b", Gate(None, (b"tmp",))),
)


def utf8(text: str) -> bytes:
    """The bytes masking works on (lone surrogates kept, as ``sha256_hex`` keeps them)."""
    return text.encode("utf-8", "surrogatepass")


class Normaliser:
    """Masks volatile values in strings and drops volatile keys from result details.

    Each builtin regex runs only when its gate says it can match, and an anchored one
    only at the places its probe found, so a large result costs a few translations and
    literal searches plus the regexes that actually change it. The result is exactly the
    sequential ``re.sub`` of every pattern in ``BUILTIN_PATTERNS`` order (as ``re.ASCII``
    regexes over the text), then of the extra patterns (which have no gate).
    """

    def __init__(self, use_builtin: bool = True, extra_patterns: tuple[str, ...] = (),
                 volatile_keys: tuple[str, ...] = ()) -> None:
        self.patterns: list[tuple[re.Pattern, Gate]] = []
        if use_builtin:
            self.patterns.extend((re.compile(p.encode()), gate)
                                 for _, p, gate in BUILTIN_PATTERNS)
        self.extra_patterns = [re.compile(p) for p in extra_patterns]
        self.volatile_keys = frozenset(volatile_keys)
        self._given = (use_builtin, tuple(extra_patterns), tuple(volatile_keys))
        self._remembered = BoundedMemo(REMEMBERED_TEXTS)    # JSON text -> digest, small texts

    def __reduce__(self):
        """Pickled as what it was made from: its compiled patterns and gate tables are ~2.5 kB."""
        return (Normaliser, self._given)

    def text(self, value: str) -> str:
        """``value`` with every volatile match replaced by ``#``."""
        return self.masked(utf8(value)).decode("utf-8", "surrogatepass")

    def masked(self, value: bytes) -> bytes:
        """``text`` for the UTF-8 bytes of a text."""
        shapes: dict[bytes, bytes] = {}  # of the current ``value``
        verdicts: dict[Gate, bool] = {}  # of the current ``value``
        for pattern, gate in self.patterns:
            if gate.first is not None:
                table, literal = gate.first
                shaped = shapes.get(table) or _shape_into(shapes, value, table)
                if literal not in shaped:
                    continue
            subject = value
            if gate.table is not None:
                subject = shapes.get(gate.table) or _shape_into(shapes, value, gate.table)
            if gate.exact:
                if all(char in value for char in gate.needs):
                    pieces = gate.probe.split(subject)
                    if len(pieces) > 1:
                        value = _mask_pieces(value, pieces, shapes)
                        verdicts.clear()
                continue
            if gate.anchored:
                masked = _sub_where_probed(pattern, value, gate, subject, shapes)
                if masked is not value:
                    value = masked
                    verdicts.clear()
                continue
            passes = verdicts.get(gate)
            if passes is None:
                passes = verdicts[gate] = gate.passes(subject)
            if not passes:
                continue
            masked = pattern.sub(b"#", value)
            if masked != value:
                value = masked
                shapes.clear()
                verdicts.clear()
        if self.extra_patterns:
            text = value.decode("utf-8", "surrogatepass")
            for pattern in self.extra_patterns:
                text = pattern.sub("#", text)
            value = utf8(text)
        return value

    def strip_keys(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.strip_keys(v) for k, v in value.items()
                    if k not in self.volatile_keys}
        if isinstance(value, list):
            return [self.strip_keys(v) for v in value]
        return value

    def digest(self, value: Any) -> str:
        """Hash of the masked, key-sorted JSON text of ``value``. A small text's hash is
        remembered (``REMEMBERED_TEXTS``): a looping agent gets the same result again and
        again, and masking is most of what a hash costs."""
        try:
            encoded = _encode_sorted(value)
        except (TypeError, ValueError, UnicodeEncodeError, OverflowError):
            encoded = utf8(json.dumps(value, ensure_ascii=False, sort_keys=True,
                                      separators=(",", ":"), default=str))
        if len(encoded) > REMEMBERED_TEXT_BYTES:
            return self._masked_digest(encoded)
        digest = self._remembered.get(encoded)
        if digest is None:
            digest = self._remembered.keep(encoded, self._masked_digest(encoded))
        return digest

    def _masked_digest(self, encoded: bytes) -> str:
        return hashlib.sha256(self.masked(without_csi(raw_controls(encoded)))).hexdigest()[:32]


_encode_sorted = msgspec.json.Encoder(order="sorted").encode
#: ``Normaliser.digest`` remembers the digests of up to this many texts (then starts over) of
#: up to this many bytes: at most 1 MiB per normaliser.
REMEMBERED_TEXTS = 512
REMEMBERED_TEXT_BYTES = 2048

#: The escapes JSON writes for control characters but NUL (``\\u0000`` stays: NUL stands for
#: ``\\``), and those characters: the five short ones, and the ``\\u00XX`` ones.
_SHORT_ESCAPES = ((b"\\b", b"\x08"), (b"\\t", b"\t"), (b"\\n", b"\n"), (b"\\f", b"\x0c"),
                  (b"\\r", b"\r"))
_UNICODE_ESCAPES = tuple((b"\\u%04x" % code, bytes((code,))) for code in range(1, 0x20)
                         if code not in (0x08, 0x09, 0x0A, 0x0C, 0x0D))


def raw_controls(encoded: bytes) -> bytes:
    """JSON text as masking must see it: each escaped control character written raw and
    each escaped backslash a NUL byte (JSON text holds neither raw, so two texts still
    differ wherever their JSON differs). Escaped, a newline is the letter ``n`` before the
    next line's first character, and a volatile value that starts a line (``12:03:04``,
    ``pid 42``, ``5ms``) no longer starts a word: it would not be masked, and a result
    repeated with only such a value changed would read as progress. Every other backslash
    starts an escape and none holds another, so each escape is replaced on its own (a
    ``bytes.replace`` each, in C; the rare ``\\u00XX`` ones only when one is there)."""
    if b"\\" not in encoded:
        return encoded
    text = encoded.replace(b"\\\\", b"\x00")
    for escape, char in _SHORT_ESCAPES:
        text = text.replace(escape, char)
    if b"\\u00" in text:
        for escape, char in _UNICODE_ESCAPES:
            if escape in text:
                text = text.replace(escape, char)
    return text


#: A terminal control sequence (ECMA-48 CSI: colours, cursor moves, erasing).
_CSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")


def without_csi(text: bytes) -> bytes:
    """``text`` (``raw_controls``) with each terminal control sequence cut to its ESC byte.
    Colours say nothing about progress, and a value right after one (``ESC[2m12:03:04``)
    follows a letter, so it would not start a word and not be masked: a coloured log line
    repeated with a new time would read as progress."""
    if b"\x1b[" not in text:
        return text
    return _CSI.sub(b"\x1b", text)


def _sub_where_probed(pattern: re.Pattern, text: bytes, gate: Gate,
                      subject: bytes, shapes: dict[bytes, bytes]) -> bytes:
    """``pattern.sub(b"#", text)`` for a pattern whose every match starts where the gate's
    probe matches ``subject`` (``text`` or its shape): trying the regex at those places, in
    order, finds the same leftmost matches without scanning the text in between. ``text``
    itself when nothing matched; else the shapes in ``shapes`` are made those of the result
    (spliced, not translated again).

    For a ``word_start`` gate a probe match inside a word (by the text's ``_WORD_SHAPE``,
    made on first need and kept in ``shapes``) is no candidate, and the search goes on
    after that word, so each word is looked at once. A text with more candidates than the
    Python loop's budget is handed to ``pattern.sub`` whole, which gives the same result;
    either way the work is linear in the text's length with a small constant."""
    probe: bytes = gate.probe  # type: ignore[assignment]  # anchored: a literal
    if len(subject) >= _LONG and not all(char in subject for char in gate.needs):
        return text
    word_start = gate.word_start
    tries = 0
    spans: list[tuple[int, int]] = []
    at = subject.find(probe)
    while at >= 0:
        if word_start and at and text[at - 1] in _WORD_BYTES:  # inside a word: skip it
            words = shapes.get(_WORD_SHAPE) or _shape_into(shapes, text, _WORD_SHAPE)
            after = words.find(b" ", at)
            if after < 0:
                break
            at = subject.find(probe, after + 1)
            continue
        tries += 1
        if tries > _LOOP_FLOOR and tries > _LOOP_FLOOR + len(text) // _LOOP_SHARE:
            masked = pattern.sub(b"#", text)
            shapes.clear()
            return masked
        match = pattern.match(text, at)
        if match is None:
            at = subject.find(probe, at + 1)
            continue
        spans.append((at, match.end()))
        at = subject.find(probe, match.end())
    if not spans:
        return text
    for table, shaped in shapes.items():
        shapes[table] = _splice(shaped, spans, b"#".translate(table))
    return _splice(text, spans, b"#")


def _mask_pieces(text: bytes, pieces: list[bytes], shapes: dict[bytes, bytes]) -> bytes:
    """``text`` with a ``#`` for every match, given ``pieces``: a shape of ``text`` split
    by a regex with one capturing group (unmatched, matched, …, unmatched). The shapes in
    ``shapes`` become those of the result. Slicing and joining stay in C: a text can hold
    millions of timestamps."""
    ends = list(accumulate(map(len, pieces)))
    kept = list(map(slice, [0, *ends[1::2]], ends[::2]))
    for table, shaped in shapes.items():
        shapes[table] = b"#".translate(table).join(itemgetter(*kept)(shaped))
    return b"#".join(itemgetter(*kept)(text))


def _splice(text: bytes, spans: list[tuple[int, int]], mark: bytes) -> bytes:
    """``text`` with each of ``spans`` (in order, not overlapping) replaced by ``mark``."""
    view = memoryview(text)
    parts: list[bytes | memoryview] = []
    done = 0
    for start, end in spans:
        parts += (view[done:start], mark)
        done = end
    parts.append(view[done:])
    return b"".join(parts)


def is_failure(tool: str, is_error: bool, details: Any, text: str) -> bool:
    """A failure whose message says what failed (so it repeats only when nothing changed);
    ``text`` as the result holds it."""
    if is_error:
        return True
    if tool != "exec" or not isinstance(details, dict):
        return False
    code = details.get("exitCode")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return False
    aggregated = details.get("aggregated")
    output = js_trim(aggregated if isinstance(aggregated, str) else strip_loop_note(text))
    return bool(output) and output != f"(Command exited with code {code})"


def outcome_prefix(tool: str, args_hash: str, *, is_error: bool, details: Any, text: str
                   ) -> str:
    """An outcome key without its digest: ``fail:<tool>`` for a failure (the same failure
    from a rotated command is still the same dead end), ``ok:<arguments' hash>`` for a
    success. Two keys can be equal only when their prefixes are."""
    if is_failure(tool, is_error, details, text):
        return f"fail:{tool}"
    return f"ok:{args_hash}"


def outcome_digest(normaliser: Normaliser, tool: str, *, is_error: bool, details: Any,
                   text: str) -> str:
    """The digest of an outcome key: of the result masked (``Normaliser``)."""
    text = js_trim(strip_loop_note(text))
    if tool == "exec" and isinstance(details, dict) and isinstance(details.get("status"), str):
        aggregated = details.get("aggregated")
        body: Any = {
            "status": details.get("status"),
            "exitCode": details.get("exitCode"),
            "timedOut": details.get("timedOut") is True,
            "output": js_trim(aggregated) if isinstance(aggregated, str) and aggregated.strip()
            else text,
        }
    else:
        body = {"details": normaliser.strip_keys(details) if isinstance(details, dict) else None,
                "text": text, "error": is_error}
    return normaliser.digest(body)


def outcome_key(normaliser: Normaliser, tool: str, args_hash: str, *, is_error: bool,
                details: Any, text: str) -> str:
    """The key ``session_no_progress`` compares: ``outcome_prefix``, then
    ``outcome_digest``."""
    prefix = outcome_prefix(tool, args_hash, is_error=is_error, details=details, text=text)
    return prefixed_key(prefix, normaliser, tool, is_error, details, text)


def prefixed_key(prefix: str, normaliser: Normaliser, tool: str, is_error: bool, details: Any,
                 text: str) -> str:
    """``outcome_key`` of a result whose ``outcome_prefix`` is ``prefix``."""
    digest = outcome_digest(normaliser, tool, is_error=is_error, details=details, text=text)
    return f"{prefix}:{digest}"
