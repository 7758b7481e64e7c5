"""``redact_record`` looks at a record's texts joined by newlines and walks the record only
when the joined texts change: it must mask exactly what the walk over every text masks."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.redaction import redact_record
from monitor.redaction.rules import REDACTED
from monitor.redaction.structured import _redacted_record

# Pieces of texts that start, end or half-make a match of some rule, and what stops one.
PIECES = [
    "sk-abcdefghijklmn", "work-", "rk-", "task-x", "-u", " alice:hunter2", "alice:hunter2",
    "mysql", " -p", "-psecret9", "sshpass -p", "password=", "password", "=", ":", "hunter2",
    '"', "'", "Bearer", " ", "abcdefgh1234", "AKIAABCDEFGHIJKLMNOP", "\n", "\t", "&", ",",
    "-----BEGIN RSA PRIVATE KEY-----", "MIIEabc", "-----END RSA PRIVATE KEY-----",
    "https://", "tok@host", "://user:", "pw@", "token", "DB_PASS", "--token", "--token=",
    "Authorization:", "cookie:", "Set-Cookie: a=b", "{", "[", REDACTED, "%3D", "x", "db",
    "eyJabcdefgh.abcdefghi.abcdefghij", "ghp_Zq9xR2mK7vB4nL1pW8sT3yU6", "TOKEN_COUNT=5",
]
texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=5).map("".join)
fields = st.sampled_from(["message", "command", "detail", "key", "tool"])
records = st.recursive(st.dictionaries(fields, st.one_of(texts, st.lists(texts, max_size=4)),
                                       max_size=4),
                       lambda inner: st.dictionaries(fields, st.lists(inner, max_size=3),
                                                     max_size=3), max_leaves=6)


@settings(max_examples=1500, deadline=None)
@given(records)
@example({"message": ["ok", "-u alice:hunter2"]})      # ``^`` of the second text
@example({"message": ["ok", "-----BEGIN RSA PRIVATE KEY-----MIIEabc"], "key": "work-1"})
@example({"command": ["mysql", " -psecret9"]})
def test_a_record_is_masked_as_the_walk_masks_it(record):
    assert redact_record(record) == _redacted_record(record)


def test_a_word_holding_a_marker_leaves_the_record_itself():
    record = {"key": "agent:main:work-17", "detail": "fork-bomb guard on the network-dark task"}
    assert redact_record(record) is record
    masked = redact_record({**record, "detail": "ok\n-u alice:hunter2"})
    assert "hunter2" not in str(masked) and masked["key"] == record["key"]
