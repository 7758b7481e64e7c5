"""A corpus of hostile text, as a model or a fetched web page could write it into a
transcript, ``sessions.json`` or the gateway log, and the checks that none of it reached an
output raw.

Every string carries ``PAYLOAD`` so a test can tell data's bytes from the app's own escape
sequences: ``terminal_injections`` looks for the sequences data would need to act on a
terminal, which the display boundary must have turned into visible text.
"""

from __future__ import annotations

import re
import unicodedata

PAYLOAD = "HOSTILE"
ESC = "\x1b"
BEL = "\x07"
ST = ESC + "\\"

HOSTILE_STRINGS: dict[str, str] = {
    "osc0_title": f"{ESC}]0;{PAYLOAD}-title{BEL}",
    "osc2_title_st": f"{ESC}]2;{PAYLOAD}-title{ST}",
    "osc8_link": f"{ESC}]8;;https://evil.example/{PAYLOAD}{ST}click{ESC}]8;;{ST}",
    "osc52_clipboard": f"{ESC}]52;c;{PAYLOAD}cm0gLXJmIH4K{BEL}",
    "osc777_notify": f"{ESC}]777;notify;{PAYLOAD};pwned{BEL}",
    "csi_clear": f"{ESC}[2J{ESC}[H{PAYLOAD}-cleared",
    "csi_colour": f"{ESC}[31;1m{PAYLOAD}-red{ESC}[0m",
    "csi_cursor_hide": f"{ESC}[?25l{PAYLOAD}{ESC}[?1049h",
    "dcs": f"{ESC}P+q{PAYLOAD}{ST}",
    "apc": f"{ESC}_G{PAYLOAD}{ST}",
    "c1_csi": f"\x9b2J{PAYLOAD}\x9d0;{PAYLOAD}-c1\x9c",
    "bidi_override": f"\u202e{PAYLOAD}gnp.exe\u202c",
    "bidi_isolate": f"\u2066{PAYLOAD}\u2069\u2067rtl\u2069",
    "zero_width": f"PAY\u200bLO\u200dAD\ufeff{PAYLOAD}\u2060",
    "line_separator": f"{PAYLOAD}\u2028second\u2029third",
    "backspace_cr": f"safe\rrm -rf /{PAYLOAD}\x08\x08\x7f",
    "markup_close": f"[/x]{PAYLOAD}[/]",
    "markup_click": f"[@click=app.quit]{PAYLOAD}[/]",
    "markup_link": f"[link=https://evil.example]{PAYLOAD}[/link]",
    "markup_style": f"[bold red on white blink]{PAYLOAD}[/bold red on white blink]",
    "markup_escape": f"\\[b]{PAYLOAD}\\\\[/b]",
    "textual_variable": f"$accent {PAYLOAD} $foo [$text-error]x[/]",
    "lone_surrogate": f"{PAYLOAD}\ud800\udfff",
    "nul": f"{PAYLOAD}\x00after-nul",
    "long_line": PAYLOAD + "A" * 100_000 + ESC + "]0;long" + BEL,
    "unicode_key": f"café-{PAYLOAD}-日本語-🦀",
    # one variation selector per byte: a hidden message ("emoji smuggling")
    "variation_selectors": PAYLOAD + "".join(
        chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in b"rm -rf ~\x00\x0f"),
    # default-ignorable and format characters outside the bidi/zero-width blocks
    "invisible_format": (f"PAY\u034fLO\u17b4\u17b5AD\u180b\u180f{PAYLOAD}\U0001d173\U0001d17a"
                         "\U0001bca0\U0001bca3\u2065\ufff0\U000e0001\U000e01ef\U000e0fff"
                         "\u0600\u06dd\u070f\U000110bd\U00013430\u115f\u3164"),
    # presentation selectors: kept after an emoji or keycap, shown after a letter
    "emoji_presentation": (f"{PAYLOAD}\u2764\ufe0f 1\ufe0f\u20e3 \U0001f468\u200d\U0001f469 "
                           "prod\ufe0f"),
}

# Raw sequences that act on a terminal when data reaches it unchanged. The display boundary
# shows ESC as ␛ and the 8-bit controls as <U+009B>, so none of these may appear in output
# next to the payload.
_INJECTION = re.compile(
    # OSC / DCS / APC / PM / SOS carrying data
    rb"\x1b[\]P_^X][^\x07\x1b]*" + PAYLOAD.encode()
    + rb"|\x1b\[2J\x1b\[H" + PAYLOAD.encode()              # clear screen + home from data
    + rb"|\xc2[\x80-\x9f]"                                 # C1 controls, UTF-8 encoded
    + rb"|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]"        # line/para separators, bidi controls
    + rb"|\xe2\x80[\x8b-\x8f]|\xe2\x81[\xa0-\xa4]|\xef\xbb\xbf"  # zero-width, BOM
    + rb"|\xed[\xa0-\xbf][\x80-\xbf]"                       # lone surrogates (surrogatepass)
    + rb"|\x1b\]52;c;" + PAYLOAD.encode()
    # CSI from data: anchored on the payload, since the app writes CSI of its own (it
    # enters the alternate screen with ESC[?1049h and colours with ESC[…m itself)
    + rb"|\x1b\[\?25l" + PAYLOAD.encode() + rb"\x1b\[\?1049h"
    + rb"|\x1b\[31;1m" + PAYLOAD.encode()
    + rb"|" + PAYLOAD.encode() + rb"\x00|\x08\x08\x7f|\rrm -rf"   # NUL, BS, DEL, CR from data
)


# Default_Ignorable_Code_Point ranges (Unicode 15.1 DerivedCoreProperties.txt) that are not
# of a category ``_invisible`` already catches.
_DEFAULT_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
                      (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
                      (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF))


def _invisible(text: str) -> list[str]:
    """Every format, default-ignorable, separator or surrogate character of ``text`` (by
    Unicode data, independently of ``monitor.display``), except a presentation selector
    (U+FE0E/FE0F) right after an emoji, a symbol or a keycap base, which belongs to it."""
    found = []
    for index, char in enumerate(text):
        code = ord(char)
        if code < 0xA0 or char.isascii():
            continue
        if code in (0xFE0E, 0xFE0F) and index and (
                text[index - 1] in "#*0123456789"
                or unicodedata.category(text[index - 1]) == "So"):
            continue
        if (unicodedata.category(char) in ("Cf", "Cs", "Zl", "Zp")
                or any(first <= code <= last for first, last in _DEFAULT_IGNORABLE)):
            found.append(char)
    return found


def terminal_injections(output: bytes | str) -> list[bytes]:
    """The sequences in ``output`` that came from data and would act on a terminal, and
    every invisible (format or default-ignorable) character it holds."""
    if isinstance(output, str):
        output = output.encode("utf-8", "surrogatepass")
    try:
        text = output.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:   # a pty read cut a character: lone surrogates are found above
        text = output.decode("utf-8", "replace")
    hidden = [char.encode("utf-8", "surrogatepass") for char in _invisible(text)]
    return _INJECTION.findall(output) + hidden


def raw_controls(text: str, *, allow: str = "\n\t") -> list[str]:
    """Every character of ``text`` a terminal interprets or draws as nothing (controls, C1,
    bidi, zero-width, variation selectors, every format and default-ignorable character),
    for plain-text outputs that should hold none of them at all."""
    found = [char for char in _invisible(text) if char not in allow]
    for char in text:
        code = ord(char)
        if char in allow:
            continue
        if (code < 0x20 or 0x7F <= code < 0xA0 or 0x200B <= code <= 0x200F
                or 0x2028 <= code <= 0x202E or 0x2060 <= code <= 0x206F or code == 0xFEFF
                or 0xD800 <= code < 0xE000):
            found.append(char)
    return found
