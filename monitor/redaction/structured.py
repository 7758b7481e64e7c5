"""JSON-like values with their secrets masked: a tool's arguments for display (``redact``)
and every output record clawwatch writes (``redact_record``).

A secret-named key's value is masked whole whatever it says, save clawwatch's own fields
whose name looks secret but whose value never is; every text is masked by
``text.redact_text``; in an argv list the item after a secret flag (``--token``, ``-u``) is
masked whole. An output record keeps its shape: its keys and non-text values stay, save
the names of a name → count map, which are data.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Any

from monitor.redaction.clipping import OUTPUT_TEXT_CHARS, bounded_output, shown_start
from monitor.redaction.rules import REDACTED, compiled_rules
from monitor.redaction.text import redact_text

#: Fields of clawwatch's own documents whose name looks secret but whose value never is.
_PLAIN_FIELDS = frozenset({("tokens_from", "index"), ("tokens_from", "transcript")})
_SECRET_KEY = re.compile(r"(?i)(token|secret|passw|pwd|api[_-]?key|apikey|auth|cookie|"
                         r"credential|private[_-]?key|session[_-]?key|"
                         # ``pass`` as any word of a name: ``pass``, ``db_pass``, ``dbPass``,
                         # ``PASS_PHRASE``, ``DB_PASS_PROD``, ``dbPassProd``; not ``bypass``,
                         # ``passport``, ``PASSPORT``
                         r"(?-i:(?<![A-Za-z])PASS(?![A-Za-z])|(?<![A-Za-z])[Pp]ass(?![a-z])|"
                         r"(?<=[A-Za-z])Pass(?![a-z])))")
#: Secret-named fields of clawwatch's own records, whose value is never a secret (a record's
#: ``session_key`` is a session's name, like ``key``).
_RECORD_FIELDS = frozenset({"session_key"})
#: Fields of clawwatch's own records that map names from data to counts (a session's calls
#: per tool): the names are text to redact like any other.
_COUNTS_BY_NAME = frozenset({"tools"})


def _redact_list(items, redact_item) -> list:
    """Items of a list, each through ``redact_item``; in an argv list the item after a secret
    flag (``--token``, ``-u``) is masked whole."""
    flag = compiled_rules()["_SECRET_FLAG"]
    out = []
    secret_next = False
    for item in items:
        if secret_next and isinstance(item, str):
            out.append(REDACTED)
            secret_next = False
            continue
        secret_next = isinstance(item, str) and len(item) < 64 and bool(flag.match(item))
        out.append(redact_item(item))
    return out


def redact(value: Any, limit: int | None = None, *, nested: bool = False) -> Any:
    """A copy of ``value`` (JSON-like) with secret-named keys' values and secret-looking text,
    keys included (a tool's arguments are named by the model), masked.

    With ``limit`` (for display only, as ``format_arguments`` shows it), each text is cut
    to its ``shown_start`` first, and a dict or list to its first ``limit`` items: each
    shows at least a character and a separator, so no more can reach a view of ``limit``
    characters (a nested dict's first by key, the order its JSON shows them in)."""
    if isinstance(value, dict):
        items: Any = value.items()
        if limit is not None and len(value) > limit:
            keys = sorted(value, key=str)[:limit] if nested else islice(value, limit)
            items = [(key, value[key]) for key in keys]
        return {redact(k, limit): REDACTED if isinstance(k, str) and _SECRET_KEY.search(k)
                and not isinstance(v, (dict, list)) and (k, v) not in _PLAIN_FIELDS
                else redact(v, limit, nested=True)
                for k, v in items}
    if isinstance(value, list):
        shown = value if limit is None else value[:limit]
        return _redact_list(shown, lambda item: redact(item, limit, nested=True))
    if isinstance(value, str):
        return redact_text(value if limit is None else shown_start(value, limit))
    return value


def redact_record(record: Any) -> Any:
    """An output record (a ``watch --json`` line, the replay document, an audit entry, a
    webhook's record) with secret-looking text masked in every string value, at any depth,
    and the string value of a secret-named key (``auth``, ``db_pass``, ``apiKey``) masked
    whole, save clawwatch's own fields (``session_key``, ``tokens_from``). Keys and
    non-text values are kept (an output's shape never changes), save the names of a
    name → count map (``tools``), which are data: they are redacted, and the counts of names
    that redact alike added up. An argv list has the item after a secret flag masked.
    A text longer than ``OUTPUT_TEXT_CHARS`` is kept as its redacted start and a digest
    (``bounded_output``). Returns ``record`` itself when nothing changed.

    Most records hold nothing secret: their texts are gathered and redacted once, joined
    by newlines, and only a record whose joined texts change is walked again to mask each.
    No rule matches across a newline where it would not match at a text's start or end
    (``^`` only beside whitespace, values stop at it), so a text that would change
    changes the joined texts; a word that merely holds a marker (``work-`` for ``rk-``)
    costs one search, not a walk."""
    texts: list[str] = []
    if _gather_texts(record, texts):
        return _redacted_record(record)
    joined = "\n".join(texts)
    return _redacted_record(record) if redact_text(joined) != joined else record


def _gather_texts(value: Any, texts: list[str]) -> bool:
    """Append every string value in ``value`` (at any depth), and every name of a
    name → count map, to ``texts``; True when the record must be walked: a string is masked
    whole whatever it says (under a secret-named key, or after a secret flag in a list), or
    a list holds dicts (a replay document's sessions), each a record the walk looks at by
    itself, rather than all of them joined."""
    if isinstance(value, str):
        if len(value) > OUTPUT_TEXT_CHARS:
            return True
        texts.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if isinstance(key, str) and _is_secret_key(key) and item != REDACTED \
                        and key not in _RECORD_FIELDS and (key, item) not in _PLAIN_FIELDS:
                    return True
                if len(item) > OUTPUT_TEXT_CHARS:
                    return True
                texts.append(item)
            elif key in _COUNTS_BY_NAME and _is_counts(item):
                texts.extend(item)
            elif _gather_texts(item, texts):
                return True
    elif isinstance(value, (list, tuple)):
        flag = compiled_rules()["_SECRET_FLAG"]
        for item in value:
            if isinstance(item, str):
                if (len(item) < 64 and flag.match(item)) or len(item) > OUTPUT_TEXT_CHARS:
                    return True
                texts.append(item)
            elif isinstance(item, dict) or _gather_texts(item, texts):
                return True         # the walk looks at each dict in a list by itself
    return False


def _is_secret_key(key: str) -> bool:
    """``_SECRET_KEY.search(key)``, remembered for the few thousand names seen last."""
    known = _secret_key_memo.get(key)
    if known is None:
        if len(_secret_key_memo) >= 4096:
            _secret_key_memo.clear()
        known = _secret_key_memo[key] = _SECRET_KEY.search(key) is not None
    return known


_secret_key_memo: dict[str, bool] = {}


def _redacted_record(record: Any) -> Any:
    """``redact_record``'s walk: a copy with what may be secret masked."""
    if isinstance(record, str):
        return bounded_output(record)
    if isinstance(record, dict):
        changed = False
        out = {}
        for key, value in record.items():
            if (isinstance(value, str) and value != REDACTED and isinstance(key, str)
                    and _SECRET_KEY.search(key) and key not in _RECORD_FIELDS
                    and (key, value) not in _PLAIN_FIELDS):
                new = REDACTED
            elif key in _COUNTS_BY_NAME and _is_counts(value):
                new = _redacted_counts(value)
            else:
                new = _redacted_record(value)
            changed = changed or new is not value
            out[key] = new
        return out if changed else record
    if isinstance(record, (list, tuple)):
        new_items = _redact_list(record, _redacted_item)
        if all(a is b for a, b in zip(new_items, record, strict=True)):
            return record
        return new_items
    return record


def _is_counts(value: Any) -> bool:
    """Whether ``value`` is a name → count map."""
    return isinstance(value, dict) and all(
        isinstance(name, str) and type(count) is int for name, count in value.items())


def _redacted_counts(counts: dict[str, int]) -> dict[str, int]:
    """A name → count map with its names redacted, in name order, the counts of names that
    redact alike added up (the counts still sum to the calls made); ``counts`` itself when
    no name changes."""
    renamed = [(redact_text(name), count) for name, count in counts.items()]
    if all(shown == name for (shown, _), name in zip(renamed, counts, strict=True)):
        return counts
    out: dict[str, int] = {}
    for shown, count in sorted(renamed):
        out[shown] = out.get(shown, 0) + count
    return out



def _redacted_item(item: Any) -> Any:
    """An item of a list being walked: a dict is a record of its own, looked at once before
    it is walked (a replay document's sessions are mostly free of secrets)."""
    return redact_record(item) if isinstance(item, dict) else _redacted_record(item)
