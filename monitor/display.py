"""The display boundary: text that came from data, made safe to write to a terminal.

Transcripts, the gateway log, ``sessions.json`` and the gateway's answers hold text that
models and fetched web pages wrote. Before any of it is printed or drawn, ``printable``
makes every character that a terminal would act on visible instead: C0 and C1 controls
and DEL become their Unicode control pictures (ESC shows as ``␛``, so ``ESC]0;x BEL``
reads ``␛]0;x␇`` and retitles nothing), and characters that reorder or hide text (bidi
embeddings, overrides and isolates, zero-width characters, line and paragraph separators,
lone surrogates) become ``<U+XXXX>``. The result holds no character a terminal
interprets, so any escape sequence in data arrives as inert text.

Markup is the UI's half of the boundary: the dashboard renders data as ``rich.text.Text``
and never as a markup string.
"""

from __future__ import annotations

_VISIBLE_NAME = {0x7F: "\u2421"}                        # DEL -> ␡
_VISIBLE_NAME.update({code: chr(0x2400 + code) for code in range(0x20)})  # ␀ … ␟, ESC -> ␛

_HIDDEN_OR_REORDERING = (
    *range(0x80, 0xA0),                                 # C1 controls (CSI 0x9B, OSC 0x9D …)
    0x00AD,                                             # soft hyphen
    0x061C,                                             # Arabic letter mark
    0x115F, 0x1160, 0x3164, 0xFFA0,                     # Hangul fillers (blank "letters")
    0x180E,                                             # Mongolian vowel separator
    *range(0x200B, 0x2010),                             # zero-width space/joiners, LRM, RLM
    0x2028, 0x2029,                                     # line and paragraph separators
    *range(0x202A, 0x202F),                             # bidi embeddings and overrides
    *range(0x2060, 0x2070),                             # word joiner, invisible operators, isolates
    0xFEFF,                                             # zero-width no-break space (BOM)
    *range(0xFFF9, 0xFFFC),                             # interlinear annotation controls
    *range(0xD800, 0xE000),                             # lone surrogates (from JSON "\\ud800")
    *range(0xE0000, 0xE0080),                           # tag characters
)

_SINGLE_LINE = {code: name for code, name in _VISIBLE_NAME.items()}
_SINGLE_LINE.update({code: f"<U+{code:04X}>" for code in _HIDDEN_OR_REORDERING})
_MULTI_LINE = dict(_SINGLE_LINE)
del _MULTI_LINE[0x0A], _MULTI_LINE[0x09]


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` (``str()`` of anything else) with every control, bidi and invisible
    character shown visibly. With ``keep_newlines``, ``\\n`` and ``\\t`` are kept as they
    are (a multi-line view); otherwise they are shown as ``␊`` and ``␉`` too."""
    if not isinstance(text, str):
        text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return text.translate(_MULTI_LINE if keep_newlines else _SINGLE_LINE)


def is_printable(text: str, *, keep_newlines: bool = False) -> bool:
    """True when ``printable`` would leave ``text`` as it is."""
    return printable(text, keep_newlines=keep_newlines) == text


def _json_escape(code: int) -> str:
    if code > 0xFFFF:           # a JSON \u escape names UTF-16 units: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


_JSON_ESCAPES = {code: _json_escape(code) for code in (0x7F, *_HIDDEN_OR_REORDERING)}


def json_safe(document: str) -> str:
    """A JSON text (``json.dumps(..., ensure_ascii=False)``) with DEL, the C1 controls and
    every bidi, invisible and lone-surrogate character written as a ``\\uXXXX`` escape.

    JSON escapes the C0 controls itself, but leaves these raw, so ``cat`` of the output
    would hand them to the terminal (and a lone surrogate cannot even be encoded as
    UTF-8). Outside strings a JSON text is ASCII, so the escapes land inside strings and
    decode to the very same value; every other character (accents, CJK, emoji) stays
    readable."""
    if document.isascii() and "\x7f" not in document:
        return document
    return document.translate(_JSON_ESCAPES)


def json_dumps(value: object, **options) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` made safe by ``json_safe``."""
    import json

    return json_safe(json.dumps(value, ensure_ascii=False, **options))
