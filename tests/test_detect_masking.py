"""The gated volatile-value masking equals running every original regex over the text.

``ORIGINAL_PATTERNS`` are the builtin regexes as first written (``\\b`` and look-behinds
first, each run with ``re.sub`` over the whole text); they are the oracle. The
``Normaliser`` now skips a regex when its gate finds nothing, tries anchored regexes
only where their probe matches, and starts its regexes with a character class; none
of that may change a single character of the masked text.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.detect.normalise import (
    BUILTIN_PATTERNS,
    REMEMBERED_TEXT_BYTES,
    REMEMBERED_TEXTS,
    Normaliser,
    _shape,
    outcome_key,
    utf8,
)

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_NUM = "(?<![0-9A-Za-z_])[0-9]"
_UNIT = "(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?)"
ORIGINAL_PATTERNS = {
    "iso_timestamp": r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}"
                     r"(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?",
    "date_words": rf"\b(?:{_DAY},?\s+)?{_MONTH}\s+[0-9]{{1,2}}(?:,?\s+[0-9]{{4}})?\b",
    "day_month": rf"{_NUM}{{1,2}}\s+{_MONTH}\s+[0-9]{{4}}\b",
    "clock_time": rf"{_NUM}{{1,2}}:[0-9]{{2}}:[0-9]{{2}}(?:[.,][0-9]+)?(?:\s?[AP]M)?\b",
    "uuid": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    "hex_id": r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b",
    "epoch": r"\b1[0-9]{9}(?:[0-9]{3}|[0-9]{6}|[0-9]{9})?(?:\.[0-9]+)?\b",
    "duration": rf"{_NUM}+(?:\.[0-9]+)?\s?{_UNIT}(?:[0-9]+{_UNIT})*(?:[0-9]+\.[0-9]+{_UNIT})?\b",
    "pid": r"\b(?:pid|ppid|PID|process)\b[\s#:=]*[0-9]+",
    "temp_path": r"/(?:private/)?(?:tmp|var/tmp|var/folders/[^\s/]+/[^\s/]+/T)"
                 r"(?:/[^\s/'\"]*?(?:tmp|temp|[0-9])[^\s/'\"]*)+",
    "tmp_name": r"\btmp[a-zA-Z0-9_]{6,}\b",
}
ORIGINAL = {name: re.compile(regex, re.ASCII) for name, regex in ORIGINAL_PATTERNS.items()}
CURRENT = {name: (re.compile(regex.encode()), gate) for name, regex, gate in BUILTIN_PATTERNS}
assert list(ORIGINAL_PATTERNS) == list(CURRENT)  # same patterns, same order


def original_mask(text: str) -> str:
    for name in ORIGINAL_PATTERNS:
        text = ORIGINAL[name].sub("#", text)
    return text


# Volatile values and their near misses, glued by separators, so that matches touch,
# overlap, sit at the text's edges and are created or broken by earlier masks.
PIECES = [
    "2026-09-06T12:34:56.789Z", "2026-09-06 12:34", "1999-01-01T00:00+02:00", "12:34:56",
    "1:02:03 PM", "9:99:99", "123:45:67", "Sat Nov 29 13:05:07 UTC 2026", "Nov 29, 2026",
    "29 November 2026", "Mayday 3", "deadbeef-0123-4567-89ab-cdef01234567",
    "DEADBEEF-0123-4567-89AB-CDEF01234567", "f92ee41a0d43", "0123456789abcdef0",
    "abcdefabcdefab", "123456789012", "deadbeefcafe1", "1700000000", "1700000000123.5",
    "17000000001", "0.25s", "12 ms", "3µs", "5 minutes", "10m", "7h", "2hours", "1.5 sec",
    "5m12s", "1h2m3.5s", "1m30.5s", "2h30mins", "1.5h1.5h",
    "pid 4242", "ppid=17", "PID: 9", "process #12", "/tmp/build-1234/out",
    "/private/var/folders/ab/cd/T/tmpx1", "/var/tmp/x9", "tmpa1b2c3d4", "tmp_short", "x",
    "_", "é", "µ", "\u2028", "\U0001F600", "#", "-", ":", ".", ",", "/", "'", '"', "\\n",
    " ", "  ", "\t", "\n", "0", "1", "9", "a", "f", "g", "A", "F", "T", "Z", "s", "m",
]
separators = st.sampled_from(["", " ", "\n", "-", "_", ":", "a", "0", "/", "é", "#", '":"'])
structured = st.lists(st.tuples(st.sampled_from(PIECES), separators), max_size=14).map(
    lambda parts: "".join(a + b for a, b in parts))
small_alphabet = st.text(alphabet="0123456789abcdefABT:-./ _#\nµé", max_size=120)
texts = st.one_of(structured, small_alphabet, st.text(max_size=150),
                  structured.map(lambda text: json.dumps({"text": text, "n": [text]},
                                                         ensure_ascii=False)))
FUZZ = settings(max_examples=1200, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(text=texts)
@example(text="a deadbeef-0123-4567-89ab-cdef01234567 at 2026-09-06T12:34:56Z pid 42")
@example(text="x2026-09-06T10:00deadbeef1234 17000000001234 tmpabcdef12 12:00:00 5ms")
@example(text="/tmp/a1 /var/folders/xy/zz/T/tmp9 Mon, Jan 5, 2026 and 5 Jan 2026")
@example(text="a\ud800 12:00:00 \udfff deadbeef12345 1700000000 \ud83d2026-01-01T10:00Z")
def test_masking_equals_the_original_regexes_in_order(text):
    assert Normaliser().text(text) == original_mask(text)


@FUZZ
@given(text=texts)
def test_each_rewritten_regex_and_its_gate(text):
    """Per builtin: the rewritten regex, over the text's UTF-8 bytes, masks like the
    original over the text; its gate (and its first check) passes whenever the original
    matches; an anchored probe matches wherever an original match starts."""
    encoded = utf8(text)
    for name, original in ORIGINAL.items():
        current, gate = CURRENT[name]
        assert current.sub(b"#", encoded) == utf8(original.sub("#", text)), name
        starts = [len(utf8(text[:m.start()])) for m in original.finditer(text)]
        subject = encoded if gate.table is None else _shape(encoded, gate.table)
        if starts:
            assert gate.passes(subject), name
            if gate.first is not None:
                table, literal = gate.first
                assert literal in _shape(encoded, table), name
        if gate.anchored:
            assert all(subject.startswith(gate.probe, at) for at in starts), name
        if gate.exact:
            spans = [(len(utf8(text[:m.start()])), len(utf8(text[:m.end()])))
                     for m in original.finditer(text)]
            assert [m.span() for m in gate.probe.finditer(subject)] == spans, name


@FUZZ
@given(text=texts)
@example(text="\x1b[2m12:03:04\x1b[0m\n5ms\x1b[\x1b[1;\x7e \\n12:00:00 \x1b\\[0m")
def test_a_digest_hashes_the_masked_json_text(text):
    """``digest`` encodes with msgspec, not ``json.dumps``: for JSON's own values the text,
    so the key, is the same. The masks see its control characters raw (``raw_escapes``)
    and no terminal control sequence (``without_csi``)."""
    body = {"text": text, "details": {"n": [1, None, True], "z": text[:5]}, "error": False}
    dumped = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    masked = original_mask(without_csi(raw_escapes(dumped)))
    expected = hashlib.sha256(utf8(masked)).hexdigest()[:32]
    assert Normaliser().digest(body) == expected
    assert REMEMBERING.digest(body) == REMEMBERING.digest(body) == expected


def without_csi(text: str) -> str:
    return re.sub("\x1b\\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]", "\x1b", text)


def raw_escapes(dumped: str) -> str:
    """JSON text read escape by escape: a control character's escape becomes the character,
    an escaped backslash NUL (``\\u0000`` and the other escapes stay)."""
    def raw(match: re.Match) -> str:
        escape = match[1]
        if escape == "\\":
            return "\x00"
        if escape in "ntrbf":
            return {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}[escape]
        if escape.startswith("u00") and 0 < int(escape[1:], 16) < 0x20:
            return chr(int(escape[1:], 16))
        return match[0]
    return re.sub(r"\\(u[0-9a-f]{4}|.)", raw, dumped)


@pytest.mark.parametrize("line", [
    "12:03:0{n} tick", "pid 40{n} started", "{n}ms elapsed", "170000000{n} epoch",
    "deadbeefcafe0{n} built", "550e8400-e29b-41d4-a716-44665544000{n}", "tmpabcdef1{n} left",
    "{n} Dec 2026 was the day", "Dec {n} 2026 was the day", "/tmp/build-{n}/out"])
@pytest.mark.parametrize("before", ["\n", "\t", "\r\n", "\x1f", "\\\n"])
def test_a_volatile_value_starting_a_line_is_masked(line, before):
    """In a result's JSON text a newline is ``\\n``: a value after it must still start a
    word for the masks, or a loop printing one line per attempt reads as progress."""
    normaliser = Normaliser()
    keys = {outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                        text=f"retrying{before}{line.format(n=n)}{before}done")
            for n in (1, 2)}
    assert len(keys) == 1


def test_escaped_backslashes_and_control_characters_stay_apart():
    """What masking sees of a JSON text is as distinct as the text: a backslash, a NUL and
    the escapes' letters do not collide."""
    normaliser = Normaliser()
    texts = ["a\\nb", "a\nb", "a\\\nb", "a\x00b", "a\\b", "a\\u0000b", "a\\\\nb",
             "a\x1bb", "a\\u001bb", "a\bb", "a\\bb"]
    assert len({normaliser.digest({"text": text}) for text in texts}) == len(texts)


@pytest.mark.parametrize("coloured", [
    "\x1b[2m12:03:0{n}\x1b[0m tick", "\x1b[1;32mpid 40{n}\x1b[m", "\x1b[33m{n}ms\x1b[39m",
    "\x1b[2K\x1b[1G\x1b[36mdeadbeefcafe0{n}\x1b[0m", "\x1b[38;5;208m2026-12-0{n} 10:00\x1b[0m"])
def test_a_volatile_value_in_terminal_colours_is_masked(coloured):
    """A coloured log line repeated with only its time (pid, duration, id) changed is the
    same outcome, and the colour codes do not mask a number of their own."""
    normaliser = Normaliser()
    keys = {outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                        text=f"waiting\n{coloured.format(n=n)}\nstill waiting")
            for n in (1, 2)}
    assert len(keys) == 1
    plain = outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                        text="\x1b[31m3 failed\x1b[0m")
    assert plain != outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                                text="\x1b[31m4 failed\x1b[0m")


@pytest.mark.parametrize("age", ["5m1{n}s", "1h2m{n}.5s", "{n}h30mins", "1m3{n}sec"])
def test_a_duration_in_several_units_is_masked(age):
    """``kubectl get pods`` polled while nothing changes but the pods' age (``5m12s``, as Go
    prints a duration) is one outcome repeated."""
    normaliser = Normaliser()
    keys = {outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                        text=f"NAME READY STATUS AGE\nweb-0 0/1 Pending {age.format(n=n)}")
            for n in (1, 2)}
    assert len(keys) == 1


def test_durations_in_several_units_mask_in_linear_time():
    normaliser = Normaliser()
    for unit in ("1.5h", "1h", "1.5h1h1h", "1.5secs"):
        started = time.perf_counter()
        normaliser.text(unit * 250_000 + "x")
        assert time.perf_counter() - started < 2.0, unit


REMEMBERING = Normaliser()      # one for every example: its remembered digests must be right


def test_remembered_digests_are_those_made_afresh_and_bounded():
    normaliser = Normaliser()
    bodies = [{"text": f"run {i % 700} done 2026-12-04T10:{i % 60:02d}:00Z", "error": False}
              for i in range(1500)]
    bodies += [{"text": "x" * 5000, "error": False}] * 2
    for body in bodies:
        assert normaliser.digest(body) == Normaliser().digest(body)
        assert len(normaliser._remembered) <= REMEMBERED_TEXTS
    assert 0 < len(normaliser._remembered)
    assert all(len(text) <= REMEMBERED_TEXT_BYTES for text in normaliser._remembered)


def test_volatile_values_are_still_masked():
    normaliser = Normaliser()
    first = "took 12ms at 2026-09-06T12:34:56Z id deadbeef-0123-4567-89ab-cdef01234567"
    second = "took 40ms at 2026-09-07T01:02:03Z id 0badcafe-3210-7654-ba98-fedcba987654"
    assert normaliser.text(first) == normaliser.text(second) == "took # at # id #"
    assert normaliser.text("build f92ee41a0d43 done") == "build # done"
    assert normaliser.text("plain words stay") == "plain words stay"


def test_extra_patterns_still_apply_after_the_builtins():
    normaliser = Normaliser(extra_patterns=(r"job-[a-z]+",))
    assert normaliser.text("job-alpha finished in 3s") == "# finished in #"


def test_outcome_keys_ignore_volatile_values_in_large_results():
    normaliser = Normaliser()
    lines = [f"line {n}: ok f{n:011x}a at 2026-09-06T12:{n % 60:02d}:00Z" for n in range(4000)]
    body = "\n".join(lines)
    later = body.replace("2026-09-06", "2026-09-07")
    key = outcome_key(normaliser, "exec", "h", is_error=False, details=None, text=body)
    assert key == outcome_key(normaliser, "exec", "h", is_error=False, details=None, text=later)
    changed = body.replace("line 2000:", "line 2000 FAILED:")
    assert key != outcome_key(normaliser, "exec", "h", is_error=False, details=None,
                              text=changed)
