"""JavaScript-exact serialisation helpers, so our hashes equal OpenClaw's.

OpenClaw hashes tool arguments and outcomes with ``sha256(stableStringify(x))``
(``packages/normalization-core/src/stable-stringify.ts``). To get the same
digests in Python the text must match byte for byte, which means copying
JavaScript's rules: keys sorted by UTF-16 code units, numbers printed by
``Number.prototype.toString`` (``1.0`` is ``1``, big integers lose precision),
``undefined``/``null`` printed bare, non-finite numbers as strings (an integer too
large for a double is ``Infinity``, as ``JSON.parse`` reads it), and
``String.prototype.trim``'s idea of whitespace.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec


class _Undefined:
    """JavaScript's ``undefined`` (a tool call stored without ``arguments``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Any = _Undefined()

_MAX_SAFE_INTEGER = 2**53
_JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: JavaScript's ``\s`` as a regex class (Python's ``\s`` also holds ``\x1c``-``\x1f`` and
#: ``\x85``, and lacks ``\ufeff``).
JS_SPACE = "[\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_dumps_str = json.JSONEncoder(ensure_ascii=False).encode
_dumps_sorted = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def js_trim(text: str) -> str:
    """``String.prototype.trim`` (Python's ``strip`` disagrees on a few characters)."""
    return text.strip(_JS_WHITESPACE)


#: Letters whose lowercase Node 24 (Unicode 17) knows and Python 3.11 (Unicode 14) does not:
#: single letters, and two blocks of capitals whose lowercase lies a fixed distance on.
_JS_ONLY_LOWERCASE = {
    0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B,
    **{code: code + 0x20 for code in range(0x10D50, 0x10D66)},
    **{code: code + 0x1B for code in range(0x16EA0, 0x16EB9)},
}


def js_lower(text: str) -> str:
    """``String.prototype.toLowerCase`` as Node 24 does it: Python's ``lower`` plus the
    letters of the newer Unicode that Python's tables lack (full mappings and the final
    sigma agree)."""
    if text.isascii():
        return text.lower()
    return text.translate(_JS_ONLY_LOWERCASE).lower()


def js_float(value: float | int) -> float:
    """The JavaScript number ``JSON.parse`` makes of ``value``: an integer too large for a
    double is ``Infinity`` (or ``-Infinity``), where Python's ``float()`` raises
    ``OverflowError``. A transcript may hold a 400-digit integer; OpenClaw still hashes it."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def js_number(value: float | int) -> str:
    """``Number.prototype.toString``; a number beyond the double range (a huge integer,
    ``inf``) is ``Infinity``/``-Infinity`` and NaN is ``NaN``, as in JavaScript."""
    if isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
        return str(value)
    number = js_float(value)
    if not math.isfinite(number):
        return "NaN" if number != number else ("Infinity" if number > 0 else "-Infinity")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    power = point - 1
    power_text = ("+" if power >= 0 else "-") + str(abs(power))
    if count == 1:
        return f"{sign}{digits}e{power_text}"
    return f"{sign}{digits[0]}.{digits[1:]}e{power_text}"


def js_string(text: str) -> str:
    """``JSON.stringify`` of a string (lone surrogates escaped as ``\\udXXX``)."""
    encoded = _dumps_str(text)
    if _LONE_SURROGATE.search(encoded):
        encoded = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return encoded


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _sorted_keys(keys: list[str]) -> list[str]:
    if all(ord(ch) < 0xD800 for key in keys for ch in key):
        return sorted(keys)
    return sorted(keys, key=_utf16_key)


def _plain_json(value: Any) -> bool:
    """True when Python's C JSON encoder writes exactly what JavaScript would: no floats,
    integers within 2**53, and keys that sort the same by code point and by UTF-16 unit."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or max(key) < "\ud800"):
                return False
            if not _plain_json(item):
                return False
        return True
    if kind is list:
        for item in value:
            if not _plain_json(item):
                return False
        return True
    return False


def stable_stringify(value: Any, normalize_string: Callable[[str], str] | None = None,
                     fast_unless: str | None = None) -> str:
    """OpenClaw's ``stableStringify``: deterministic JSON with recursively sorted keys.

    Common values go through the C encoder. With a ``normalize_string`` that only ever
    changes strings containing ``fast_unless``, that shortcut is kept when the text has none.
    """
    if (normalize_string is None or fast_unless) and _plain_json(value):
        text = _dumps_sorted(value)
        if not text.isascii() and _LONE_SURROGATE.search(text):
            text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        if normalize_string is None or fast_unless not in text:
            return text
    parts: list[str] = []
    _write(value, parts, normalize_string, set())
    return "".join(parts)


def _write(value: Any, out: list[str], norm: Callable[[str], str] | None, stack: set) -> None:
    if value is None:
        out.append("null")
    elif value is UNDEFINED:
        out.append("undefined")
    elif isinstance(value, str):
        out.append(js_string(norm(value) if norm else value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, float)):
        # ``stableStringify`` writes a non-finite number as a string: ``"Infinity"``. An
        # integer beyond the double range is one (``js_float``), so it hashes as OpenClaw's.
        if isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
            out.append(str(value))
        elif math.isfinite(number := js_float(value)):
            out.append(js_number(number))
        else:
            out.append(js_string(js_number(number)))
    elif isinstance(value, (list, tuple)):
        if id(value) in stack:
            out.append('"[Circular]"')
            return
        stack.add(id(value))
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, norm, stack)
        out.append("]")
        stack.discard(id(value))
    elif isinstance(value, dict):
        if id(value) in stack:
            out.append('"[Circular]"')
            return
        stack.add(id(value))
        _write_object(value, out, norm, stack)
        stack.discard(id(value))
    else:
        out.append(js_string(str(value)))


def _write_object(value: dict, out: list[str], norm: Callable[[str], str] | None,
                  stack: set) -> None:
    keys = [str(key) for key in value]
    originals = dict(zip(keys, value.values(), strict=True))
    if norm is None:
        ordered = [(key, key) for key in _sorted_keys(keys)]
    else:
        ordered = sorted(((norm(key), key) for key in keys),
                         key=lambda pair: (_utf16_key(pair[0]), _utf16_key(pair[1])))
    out.append("{")
    for index, (shown, key) in enumerate(ordered):
        if index:
            out.append(",")
        out.append(js_string(shown))
        out.append(":")
        _write(originals[key], out, norm, stack)
    out.append("}")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_encode_sorted = msgspec.json.Encoder(order="sorted").encode


def stable_digest(value: Any, normalize_string: Callable[[str], str] | None = None,
                  fast_unless: str | None = None) -> str:
    """``sha256_hex(stable_stringify(value, normalize_string, fast_unless))``.

    Common values (``_plain_json``, no lone surrogate) are encoded by msgspec, whose text is
    the C JSON encoder's and so JavaScript's, straight to the UTF-8 that is hashed; with a
    ``normalize_string`` their strings are normalised first (no key may need it)."""
    if (normalize_string is None or fast_unless) and _plain_json(value):
        try:
            encoded = _encode_sorted(value)
            if normalize_string is not None and fast_unless.encode() in encoded:
                encoded = _encode_sorted(_normalized_strings(value, normalize_string,
                                                             fast_unless))
            return hashlib.sha256(encoded).hexdigest()
        except (UnicodeEncodeError, _MarkerInKey):  # JavaScript's escapes, or key order
            pass
    return sha256_hex(stable_stringify(value, normalize_string, fast_unless))


class _MarkerInKey(Exception):
    """A key needs normalising: ``stable_stringify`` sorts by the normalised key."""


def _normalized_strings(value: Any, norm: Callable[[str], str], marker: str) -> Any:
    """``value`` with ``norm`` applied to each string in it."""
    if isinstance(value, str):
        return norm(value)
    if isinstance(value, list):
        return [_normalized_strings(item, norm, marker) for item in value]
    if isinstance(value, dict):
        if any(marker in key for key in value):
            raise _MarkerInKey
        return {key: _normalized_strings(item, norm, marker) for key, item in value.items()}
    return value
