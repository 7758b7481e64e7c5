"""The linear untrusted-content marker canonicalisation equals the original regex's.

``ORIGINAL_MARKER`` and ``original_canonical_markers`` are the first version of the
marker handling in ``monitor.detect.outcome_digests``, kept here as the oracle: a
tempered token tested a look-ahead at every character of the page, and the
quote check ran a look-behind regex over the whole block. The rewrite must find
the same matches (spans and groups) and produce the same text on any input.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.detect.outcome_digests import _MARKER, _canonical_markers, digest_outcome

ORIGINAL_MARKER = re.compile(
    r'(<<<EXTERNAL_UNTRUSTED_CONTENT id=(\\*)")([a-f0-9]{16})(\2">>>(?:(?!<<<(?:END_)?'
    r'EXTERNAL_UNTRUSTED_CONTENT)[\s\S])*<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\2")\3(\2">>>)'
)
ORIGINAL_UNESCAPED_QUOTE = re.compile(r'(?<!\\)\\*"')


def original_canonical_markers(text: str) -> str:
    if "<<<EXTERNAL_UNTRUSTED_CONTENT" not in text:
        return text

    def replace(match: re.Match) -> str:
        start, escapes, _id, middle, end = match.groups()
        width = len(escapes)
        if (width & (width + 1)) != 0 or any(
            len(quote) % (width + 1) != 0 for quote in ORIGINAL_UNESCAPED_QUOTE.findall(middle)
        ):
            return match.group(0)
        return start + "0" * 16 + middle + "0" * 16 + end

    return ORIGINAL_MARKER.sub(replace, text)


ID_A, ID_B = "0123456789abcdef", "fedcba9876543210"
# Pieces that, concatenated at random, build near-misses of every part of the pattern.
PIECES = [
    "<<<EXTERNAL_UNTRUSTED_CONTENT id=", "<<<END_EXTERNAL_UNTRUSTED_CONTENT id=",
    "<<<EXTERNAL_UNTRUSTED_CONTENT", "<<<END_EXTERNAL_UNTRUSTED_CONTENT", "EXTERNAL_UNTRUSTED",
    "END_", "<", "<<", "<<<", ">", ">>>", '">>>', '"', "\\", "\\\\", '\\"', '\\\\\\"', ID_A,
    ID_B, ID_A[:15], "a", "Z", " ", "\n", "é", "\u2028", "x" * 40,
]


def block(escapes: str, start_id: str, body: str, end_id: str) -> str:
    return (f'<<<EXTERNAL_UNTRUSTED_CONTENT id={escapes}"{start_id}{escapes}">>>{body}'
            f'<<<END_EXTERNAL_UNTRUSTED_CONTENT id={escapes}"{end_id}{escapes}">>>')


structured = st.builds(
    block,
    escapes=st.sampled_from(["", "\\", "\\\\", "\\\\\\", "\\" * 7]),
    start_id=st.sampled_from([ID_A, ID_B]),
    body=st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    end_id=st.sampled_from([ID_A, ID_B]),
)
texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.lists(st.one_of(structured, st.sampled_from(PIECES), st.text(max_size=8)),
             max_size=8).map("".join),
)


def assert_same(text: str) -> None:
    new = [(m.span(), m.groups()) for m in _MARKER.finditer(text)]
    old = [(m.span(), m.groups()) for m in ORIGINAL_MARKER.finditer(text)]
    assert new == old
    assert _canonical_markers(text) == original_canonical_markers(text)


@settings(max_examples=1500, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(text=texts)
@example(text=block("", ID_A, "body", ID_A))
@example(text=block("\\", ID_A, 'say \\"hi\\" and "bare"', ID_A))
@example(text=block("\\", ID_A, 'say \\"hi\\" and \\\\\\"deep\\\\\\"', ID_A))
@example(text=block("\\\\", ID_A, "x", ID_A))
@example(text="<<<<" + block("", ID_A, "<<<<<END_EXTERNAL", ID_A) + block("", ID_B, "", ID_B))
@example(text=block("", ID_A, block("", ID_B, "", ID_B), ID_A))
def test_linear_marker_rewrite_equals_the_original_regex(text):
    assert_same(text)


def test_canonicalisation_still_happens_and_only_on_matching_ids():
    assert _canonical_markers(block("", ID_A, "page", ID_A)) == block("", "0" * 16, "page",
                                                                      "0" * 16)
    mismatched = block("", ID_A, "page", ID_B)
    assert _canonical_markers(mismatched) == mismatched
    escaped_ok = block("\\", ID_A, 'a \\"quoted\\" word', ID_A)
    assert _canonical_markers(escaped_ok) == block("\\", "0" * 16, 'a \\"quoted\\" word',
                                                   "0" * 16)
    escaped_bare_quote = block("\\", ID_A, 'a "bare" quote', ID_A)
    assert _canonical_markers(escaped_bare_quote) == escaped_bare_quote


def web_page(size: int, marker_id: str) -> str:
    words = ["the", "<a", "href=x>", "link</a>", "fetch", "é", "2026-09-06", "<<", "\n"]
    body = " ".join(words[i % len(words)] for i in range(size // 4))[:size]
    return (f'<<<EXTERNAL_UNTRUSTED_CONTENT id="{marker_id}">>>\nSource: Web Fetch\n---\n'
            f'{body}\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="{marker_id}">>>')


def test_large_pages_are_canonicalised_the_same():
    page = web_page(80_000, ID_A)
    assert_same(page)
    assert_same(page.replace("<<<END_", "<<<FIN_"))
    assert digest_outcome({"text": page}) == digest_outcome({"text": web_page(80_000, ID_B)})
