"""Red team finding 6: no invisible character reaches the terminal or a JSON line raw.

Variation selectors (one hidden byte each: "emoji smuggling"), the combining grapheme
joiner, Khmer and Mongolian invisibles, musical and shorthand format controls, and every
other format (Cf) or default-ignorable code point are shown as ``<U+XXXX>`` by
``printable`` and escaped by ``json_safe``; the check is derived from the running Python's
Unicode data, independently of the literal table in ``monitor/display.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

import pytest

from monitor.display import json_dumps, json_safe, printable

# Default_Ignorable_Code_Point (Unicode 15.1 DerivedCoreProperties.txt)
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
                     (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
                     (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
                     (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


def invisible_code_points() -> list[int]:
    codes = {code for code in range(0x80, 0x110000)
             if unicodedata.category(chr(code)) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
    for first, last in DEFAULT_IGNORABLE:
        codes.update(range(first, last + 1))
    return sorted(codes)


INVISIBLE = invisible_code_points()
REPORTED = [0xFE00, 0xFE0F, 0xE0100, 0xE01EF, 0x034F, 0x17B4, 0x17B5, 0x180B, 0x180F,
            0x1D173, 0x1D17A, 0x1BCA0, 0x1BCA3]


def test_the_reported_characters_are_invisible_ones():
    assert set(REPORTED) <= set(INVISIBLE)


@pytest.mark.parametrize("keep_newlines", [False, True])
def test_every_format_and_default_ignorable_character_is_shown(keep_newlines):
    # after a letter, so that no presentation selector belongs to an emoji
    text = "".join("a" + chr(code) for code in INVISIBLE)
    shown = printable(text, keep_newlines=keep_newlines)
    raw = sorted({f"U+{ord(c):04X}" for c in shown if ord(c) in set(INVISIBLE)})
    assert raw == []
    for code in REPORTED:
        assert f"<U+{code:04X}>" in shown


def test_every_format_and_default_ignorable_character_is_escaped_in_json():
    value = {"label": "".join("a" + chr(code) for code in INVISIBLE)}
    line = json_dumps(value)
    assert not any(ord(c) in set(INVISIBLE) for c in line)
    assert json.loads(line) == value
    assert json_safe('"x\U000e0101"') == '"x\\udb40\\udd01"'


def test_a_smuggled_message_and_keys_that_differ_only_by_invisibles_show_apart():
    hidden = "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16)
                     for b in b"kill all")
    assert printable("deploy" + hidden).count("<U+") == len(b"kill all")
    plain, marked = "agent:main:prod", "agent:main:prod\u034f\U0001d173\U0001bca0\u180b\u17b4"
    assert printable(plain) != printable(marked)
    assert json_dumps(plain) != json_dumps(marked)


@pytest.mark.parametrize("text", [
    "café naïve Ångström", "日本語のテキスト", "한국어", "🦀 🎉", "\u2764\ufe0f", "\u263a\ufe0e",
    "1\ufe0f\u20e3", "#\ufe0f\u20e3", "\U0001f44d\U0001f3fd", "\U0001f1eb\U0001f1f7",
    "e\u0301", "\u0928\u092e\u0938\u094d\u0924\u0947", "\u0645\u0631\u062d\u0628\u0627",
])
def test_ordinary_text_and_emoji_stay_readable(text):
    assert printable(text) == text
    assert json_dumps(text) == json.dumps(text, ensure_ascii=False)


def test_a_presentation_selector_away_from_an_emoji_is_shown():
    assert printable("prod\ufe0f") == "prod<U+FE0F>"
    assert printable("\u2764\ufe0f\ufe0f") == "\u2764\ufe0f<U+FE0F>"
    # an emoji ZWJ sequence shows its joiner (a zero-width character), as before
    assert printable("\U0001f468\u200d\U0001f469") == "\U0001f468<U+200D>\U0001f469"


def test_ascii_takes_the_fast_path_and_import_builds_no_table():
    text = "plain ascii, as most of it is"
    assert printable(text) is text and json_safe(text) is text
    code = ("import monitor.display as d; assert not d._tables; d.printable('x'); "
            "assert not d._tables; d.printable('\\u00e9'); assert d._tables")
    subprocess.run([sys.executable, "-c", code], check=True)


BLANKS = (0x00A0, 0x1680, 0x2000, 0x2005, 0x200A, 0x202F, 0x205F, 0x2800, 0x3000,
          0x3164, 0xFFA0, 0x115F, 0x1160)


def test_characters_that_draw_as_blank_space_are_shown():
    """A key ending in an ideographic space or a braille blank reads like the key without."""
    for code in BLANKS:
        assert printable(f"agent:main:main{chr(code)}") == f"agent:main:main<U+{code:04X}>"
    assert json.loads(json_safe('"a\u00a0b\u3000"')) == "a\u00a0b\u3000"
