"""OpenClaw's masks of the volatile values in a terminal exec failure's output (times,
attempt counts, durations, pids), so that the same failure repeated has the same identity.

Each mask has a gate: a cheap test that holds whenever the regex can match (a ``memchr``, a
search of the lowercased text, a literal search of a shape), so an output without what a
regex needs skips it; three of the regexes scan at 10-25 ns a character when run.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from monitor.detect.jsstable import JS_SPACE

_WS = JS_SPACE
# JavaScript's word characters under the ``iu`` flags the masks have: ASCII letters, digits
# and ``_``, and the two characters whose case folding is one of them, ``ſ`` (to ``s``) and
# the Kelvin sign (to ``k``). ``\b`` next to a word character is a look-around on this set,
# and ``s`` in a unit is ``[sſ]``: under ``i`` JavaScript matches ``ſ`` for ``s``.
_JS_WORD = "[0-9A-Za-z_\u017f\u212a]"
_START = f"(?<!{_JS_WORD})"
_END = f"(?!{_JS_WORD})"
_S = "[s\u017f]"
# The duration's number is possessive (what follows it, ``.``, whitespace or a unit, is
# never a digit, so giving digits back never helps): one long run of digits is read once,
# not once per digit.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
                       r"(?:z|[+-]\d{2}:\d{2})?", re.ASCII | re.IGNORECASE)
_CLOCK_TIME = re.compile(r"\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?", re.ASCII)
_ATTEMPT = re.compile(rf"{_START}(?:attempt|retry){_END}(?:{_WS}|[#:=])*\d+",
                      re.ASCII | re.IGNORECASE)
_DURATION = re.compile(rf"{_START}\d++(?:\.\d++)?{_WS}?(?:n{_S}|u{_S}|m{_S}|{_S}econd{_S}?|"
                       rf"minute{_S}?|hour{_S}?|{_S}){_END}", re.ASCII | re.IGNORECASE)
_PID = re.compile(rf"{_START}(?:pid|ppid){_END}(?:{_WS}|[#:=])*\d+", re.ASCII | re.IGNORECASE)
# An ASCII text's shape for ``_DURATION``: digits ``9``, whitespace a space, the first
# letters of the units (either case) ``u``. A match ends in a digit followed by a unit,
# directly or after one whitespace character, so ``9 ?u`` occurs in the shape.
_UNIT_SHAPE = bytes.maketrans(b"0123456789\t\n\x0b\x0c\rnNuUmMsShH",
                              b"9999999999     uuuuuuuuuu")
_UNIT_PROBE = re.compile(rb"9 ?u")
#: Units ``_may_hold_duration`` looks at one by one (each a ``memchr``) before it hands the
#: rest of the shape to ``_UNIT_PROBE``: a regex with a literal start still tries every
#: position of a run of digits.
_UNIT_TRIES = 64


def _may_hold_duration(text: str) -> bool:
    if not text.isascii():  # whitespace beyond ASCII: let the regex decide
        return True
    shaped = text.encode("ascii").translate(_UNIT_SHAPE)
    at = shaped.find(b"u")
    for _ in range(_UNIT_TRIES):
        if at < 0:
            return False
        if shaped[at - 1:at] == b"9" or shaped[max(0, at - 2):at] == b"9 ":
            return True
        at = shaped.find(b"u", at + 1)
    return _UNIT_PROBE.search(shaped, at) is not None


def _holds(words: tuple[str, ...]):
    """A gate: the lowercased text holds one of ``words`` (each first looked for by its last
    letter alone, a ``memchr``: a search for a word crawls through a long run of digits)."""
    def may_match(text: str) -> bool:
        lower = text.lower()
        return any(word[-1] in lower and word in lower for word in words)
    return may_match


_VOLATILE_EXEC_FAILURE: tuple[tuple[re.Pattern, Callable[[str], bool]], ...] = (
    (_ISO_TIME, lambda text: "-" in text and ":" in text),
    (_CLOCK_TIME, lambda text: ":" in text),
    (_ATTEMPT, _holds(("attempt", "retry"))),
    (_DURATION, _may_hold_duration),
    (_PID, _holds(("pid",))),
)


def mask_exec_output(output: str) -> str:
    """``output`` with OpenClaw's volatile values of an exec failure masked, in order."""
    for pattern, may_match in _VOLATILE_EXEC_FAILURE:
        if may_match(output):
            output = pattern.sub("#", output)
    return output
