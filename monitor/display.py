"""The display boundary: text that came from data, made safe to write to a terminal.

Transcripts, the gateway log, ``sessions.json`` and the gateway's answers hold text that
models and fetched web pages wrote. Before any of it is printed or drawn, ``printable``
makes every character that a terminal would act on visible instead: C0 and C1 controls
and DEL become their Unicode control pictures (ESC shows as ``␛``, so ``ESC]0;x BEL``
reads ``␛]0;x␇`` and retitles nothing), and characters that reorder or hide text (bidi
embeddings, overrides and isolates, zero-width characters, line and paragraph separators,
lone surrogates, variation selectors, tag characters: every format (Cf) and
default-ignorable code point) become ``<U+XXXX>``, and so do the non-ASCII characters
that draw as blank space (no-break, em, ideographic spaces, the braille blank), which
would make two different session keys read alike. The result holds no character a terminal
interprets, so any escape sequence in data arrives as inert text.

Markup is the UI's half of the boundary: the dashboard renders data as ``rich.text.Text``
and never as a markup string.
"""

from __future__ import annotations

_VISIBLE_NAME = {0x7F: "\u2421"}                        # DEL -> ␡
_VISIBLE_NAME.update({code: chr(0x2400 + code) for code in range(0x20)})  # ␀ … ␟, ESC -> ␛

# Every code point a terminal would act on or draw as nothing, as inclusive ranges: the
# general categories Cc (the C1 controls; C0 and DEL are above), Cf (format: bidi controls,
# zero-width characters, Arabic/Syriac/Egyptian format marks, shorthand format controls,
# musical format controls, tags), Cs (lone surrogates, from JSON "\\ud800"), Zl and Zp
# (line and paragraph separators), plus every Default_Ignorable_Code_Point (the soft hyphen,
# the combining grapheme joiner U+034F, Hangul fillers, Khmer U+17B4/5, Mongolian variation
# selectors U+180B-180F, variation selectors U+FE00-FE0F and U+E0100-E01EF, U+FFF0-FFF8,
# the whole tag block U+E0000-E0FFF). A literal, so that import stays cheap; generated with
#
#   cats = {"Cc", "Cf", "Cs", "Zl", "Zp"}
#   {c for c in range(0x80, 0x110000) if unicodedata.category(chr(c)) in cats}
#   | Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1)
#
# on Python 3.11 (unicodedata 14.0.0), merged into ranges, with U+13439-1343F (Egyptian
# hieroglyph format controls, Cf since Unicode 15.0) added by hand.
# tests/test_display_invisible.py checks the running unicodedata against it.
_HIDDEN_RANGES = (
    (0x0080, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605),
    (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xD800, 0xDFFF), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
# Characters that draw as blank space but are not the ASCII space: the no-break, en/em,
# thin, hair, narrow and ideographic spaces (Zs), and the braille blank U+2800 (a symbol).
# A session key that ends in one reads like its neighbour without it, so ``printable``
# shows them as ``<U+XXXX>`` too (the Hangul fillers, also blank, are default-ignorable and
# above). ``json_safe`` leaves them: a JSON consumer reads them, no terminal acts on them.
_BLANK_RANGES = (
    (0x00A0, 0x00A0), (0x1680, 0x1680), (0x2000, 0x200A), (0x202F, 0x202F),
    (0x205F, 0x205F), (0x2800, 0x2800), (0x3000, 0x3000),
)
# Emoji presentation selectors (VS15 text, VS16 emoji) are kept right after a character
# that can take one (a symbol or emoji, or a keycap's #, * or digit): "❤️" and
# "1️⃣" stay readable. Anywhere else (after a letter, after another selector)
# they are shown like every other invisible character, so a run of selectors cannot smuggle
# a hidden message and two keys that differ only by selectors never print alike.
_PRESENTATION = (0xFE0E, 0xFE0F)
_LONE_PRESENTATION = None  # compiled on first use


def _hidden_codes():
    for first, last in _HIDDEN_RANGES:
        for code in range(first, last + 1):
            if code not in _PRESENTATION:
                yield code


_tables: dict[str, dict[int, str]] = {}


def _table(name: str) -> dict[int, str]:
    """The translate tables, built on first use (clawwatch imports this at start-up, and
    most text is ASCII)."""
    global _LONE_PRESENTATION
    if not _tables:
        import re

        single = {code: name for code, name in _VISIBLE_NAME.items()}
        single.update({code: f"<U+{code:04X}>" for code in _hidden_codes()})
        single.update({code: f"<U+{code:04X}>" for first, last in _BLANK_RANGES
                       for code in range(first, last + 1)})
        multi = dict(single)
        del multi[0x0A], multi[0x09]
        _tables.update(single=single, multi=multi, json={
            code: _json_escape(code) for code in (0x7F, *_hidden_codes())})
        _LONE_PRESENTATION = re.compile(
            "(?<![#*0-9\u00a9\u00ae\u203c-\u3299\U0001F000-\U0001FAFF])[\ufe0e\ufe0f]")
    return _tables[name]


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` (``str()`` of anything else) with every control, bidi and invisible
    character shown visibly. With ``keep_newlines``, ``\\n`` and ``\\t`` are kept as they
    are (a multi-line view); otherwise they are shown as ``␊`` and ``␉`` too."""
    if not isinstance(text, str):
        text = str(text)
    if text.isascii() and text.isprintable():
        return text
    text = text.translate(_table("multi" if keep_newlines else "single"))
    if "\ufe0e" in text or "\ufe0f" in text:
        text = _LONE_PRESENTATION.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
    return text


def _json_escape(code: int) -> str:
    if code > 0xFFFF:           # a JSON \u escape names UTF-16 units: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


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
    document = document.translate(_table("json"))
    if "\ufe0e" in document or "\ufe0f" in document:
        document = _LONE_PRESENTATION.sub(lambda m: _json_escape(ord(m.group())), document)
    return document


def json_dumps(value: object, **options) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` made safe by ``json_safe``."""
    import json

    return json_safe(json.dumps(value, ensure_ascii=False, **options))
