"""Text as clawwatch shows or writes it: secrets masked, arguments formatted, whitespace clipped.

Everything clawwatch outputs passes through here: what the dashboard shows of a tool call or
a gateway-log line, and every output record (``watch --json`` lines, the replay document, the
audit log, webhook bodies, error messages) through ``redact_record``. Secret-named keys are
masked whatever their value; secret-looking text is masked wherever it appears:

* token shapes with a fixed prefix, curated from gitleaks' default rules
  (``config/gitleaks.toml``: anthropic/openai ``sk-…``, ``github_pat_…``/``ghp_…``, GitLab,
  Stripe ``sk_live_…``, Slack, AWS ``AKIA…``, Google ``AIza…``/``ya29.…``, Hugging Face, npm,
  PyPI, SendGrid, DigitalOcean, Shopify, Vault, Databricks, Linear, Postman, age, JWTs) and
  Yelp detect-secrets' plugins (the same shapes; its keyword plugin for assignments);
* PEM private-key blocks (to their END line, or to the end of the text);
* keyword assignments, ``NAME=value`` / ``NAME: value`` where the name holds ``token``,
  ``secret``, ``passw(or)d``, ``pwd``, ``passphrase``, ``credential``, ``_key`` / ``apikey``
  / ``accesskey`` / ``privatekey``, at its end or before more of it that starts with a
  ``_``, a ``-`` or a digit (``GITHUB_TOKEN_RO=…``, ``SECRET_KEY_BASE=…``,
  ``OPENAI_API_KEY_2=…``) and is not a quantity (``TOKEN_COUNT=5``,
  ``token_budget:session`` stay), or is the word ``pass`` / ``auth`` / ``cookie``
  (``DB_PASS=…``, ``"auth": "…"``), with ``=``, ``:`` or their URL-encoded ``%3D`` /
  ``%3A`` (env style ``AWS_SECRET_ACCESS_KEY=…`` too); a value never starts at a ``{`` or
  ``[`` (the names nested in it are found by their own);
* ``Authorization:`` headers of any scheme (bearer and basic credentials anywhere),
  ``Cookie:`` / ``Set-Cookie:`` values, ``--token x`` style flags, ``curl -u user:pass``,
  ``mysql -pX``, ``sshpass -p X``, ``redis-cli -a X``, ``docker login -p X``, argv lists
  (``["--token", "x"]``), URL userinfo (``scheme://user:pass@``, ``redis://:pass@``,
  ``https://token@``);
* every secret clawwatch itself knows (``register_known_secret``: the gateway token, the
  ``--gateway`` URL's password, webhook URLs' secrets), replaced literally.

The rules are kept here rather than imported from detect-secrets at run time: its scanner
regexes are tuned for precision in commits (exact lengths, quotes required), it has no rule
for half of the shapes above, and importing it costs ~100 ms and pulls in ``requests``.

Speed: each rule has markers (casefolded substrings every match contains) and runs only on a
text whose casefolded form holds one; most texts hold none and run no regex. Only what can be
shown is redacted for display: a long text is cut to its shown start (plus ``REDACT_SLACK``)
first.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

REDACTED = "«redacted»"
#: Fields of clawwatch's own documents whose name looks secret but whose value never is.
_PLAIN_FIELDS = frozenset({("tokens_from", "index"), ("tokens_from", "transcript")})
_SECRET_KEY = re.compile(r"(?i)(token|secret|passw|pwd|api[_-]?key|apikey|auth|cookie|"
                         r"credential|private[_-]?key|session[_-]?key|"
                         # ``pass``, ``db_pass``, ``dbPass``, ``PASS_PHRASE``; not ``bypass``
                         r"(?:(?<![a-z])(?-i:[Pp]ass|PASS)|(?<=[a-z])(?-i:Pass))(?![a-z]))")
#: Secret-named fields of clawwatch's own records, whose value is never a secret (a record's
#: ``session_key`` is a session's name, like ``key``).
_RECORD_FIELDS = frozenset({"session_key"})
#: Fields of clawwatch's own records that map names from data to counts (a session's calls
#: per tool): the names are text to redact like any other.
_COUNTS_BY_NAME = frozenset({"tools"})
# Names whose value is a secret: in assignments, flags and argv pairs.
_NAME = (r"(?:token|secret|passw(?:or)?[dt]|pwd|passphrase|credentials?|"
         r"(?:api|access|private|secret|auth|[_.-])key)")
# Words that, right after a secret word, name a number about the secret rather than the
# secret itself: ``TOKEN_COUNT=5``, ``token_budget:session``, ``PASSWORD_MIN_LENGTH=12``.
_QUANTITY = (r"(?:count|limit|budget|usage|used|total|max|min|remaining|length|len|size|"
             r"ttl|expiry|expires)s?(?![a-z])")
# More of an assignment's name after the secret word (``DB_PASSWORD_PROD``,
# ``GITHUB_TOKEN_RO``, ``SECRET_KEY_BASE``, ``OPENAI_API_KEY_2``): a ``_`` / ``-`` or a digit
# starts it, so ``tokens=12`` is no secret; no ``.``, so neither is a file name
# (``token_store.py:12:``).
_NAME_TAIL = r"(?:[_-](?!" + _QUANTITY + r")|(?=\d))[\w-]{0,40}"
# Short names, as whole words (``DB_PASS``, ``"auth"``; not ``bypass``, ``oauth``), with the
# separator close by: their markers hold it, so ``passed`` or ``author`` run no regex.
_WORDS = ("pass", "auth", "cookie")
_WORD = r"(?<![a-z0-9])(?:" + "|".join(_WORDS) + r")"
_FLAG_NAME = (r"(?:[\w-]{0,40}?(?:token|secret|passw(?:or)?d|pwd|passphrase|credentials?|"
              r"api-?key|access-key|private-key)|(?:[\w-]{0,40}?[-_])?(?:pass|auth|cookie))")
_WORD_MARKERS = tuple(word + sep for word in _WORDS
                      for sep in ("=", ":", '"', "'", "\\", " ", "\t", "%3"))
_NAME_MARKERS = ("token", "secret", "passw", "pwd", "passphrase", "credential", "apikey",
                 "accesskey", "privatekey", "secretkey", "authkey", "_key", "-key", ".key")
_FLAG_MARKERS = ("token", "secret", "passw", "pwd", "passphrase", "credential", "-key",
                 "apikey", *(sep + word for word in _WORDS for sep in "-_"))
_VALUE = r"[^\s\"'&,;\\]+"
# A value, whole when quoted (the quote is the last character of the match's prefix).
_QVALUE = r"(?:(?<=\")[^\"\\\n]+|(?<=')[^'\\\n]+|" + _VALUE + ")"
# The same, never starting with ``{`` or ``[``: ``"credentials": {"pass": "x"}`` keeps its
# structure, and the nested names are found by their own rule.
_KVALUE = r"(?:(?<=\")[^\"\\\n]+|(?<=')[^'\\\n]+|(?![{\[])" + _VALUE + ")"
# A command line up to a flag: no pipe, list or redirection between the command and it.
_ARGS = r"\b[^\n|;&<>]{0,200}?\s"
# (regex, replacement, markers): the regex runs only on a text whose casefolded form holds
# one of its markers, which every match contains (most texts hold none). Compiled on first
# use (``_rules()``; ``_SECRET_TEXT``), not at import: clawwatch imports this at start-up.
_RULE_SOURCES = (
    # PEM private keys (gitleaks private-key; detect-secrets PrivateKeyDetector).
    (r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
     r"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\Z)", REDACTED,
     ("private key",)),
    (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}", r"\1 " + REDACTED, ("bearer", "basic")),
    # ``Authorization: <any scheme> x`` (Token, Digest, AWS4-HMAC-SHA256, …) and the bare
    # ``Authorization: x``; ``Cookie:`` / ``Set-Cookie:`` header values whole.
    (r"(?i)\b((?:proxy-)?authori[sz]ation\\?[\"']?\s*[:=]\s*\\?[\"']?"
     r"(?:[A-Za-z][\w.-]{0,40}\s+(?=[^\s\"'\\]))?)" + _KVALUE, r"\1" + REDACTED,
     ("authori",)),
    (r"(?i)\b((?:set-)?cookie\\?[\"']?\s*:\s*\\?[\"']?)(?![{\[])[^\r\n\"'\\]+",
     r"\1" + REDACTED, ("cookie",)),
    # Passwords of tools that take them glued or as the next argument: ``mysql -pX`` (a
    # ``-p X`` there names a database), ``sshpass -p X``, ``redis-cli -a X``, ``docker login
    # -p X``.
    (r"((?:(?i:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump))"
     + _ARGS + r"-p|\bsshpass" + _ARGS + r"-p\s*|\bredis-cli" + _ARGS + r"-a\s*|"
     r"\b(?:docker|podman|nerdctl)\s+login" + _ARGS + r"-p\s*)\\?[\"']?)" + _QVALUE,
     r"\1" + REDACTED, ("mysql", "mariadb", "sshpass", "redis-cli", "docker", "podman",
                         "nerdctl")),
    # Prefixed token shapes (gitleaks ids in brackets).
    (r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{10,}", REDACTED,             # anthropic, openai
     ("sk-", "pk-", "rk-")),
    (r"\b[rsp]k_(?:live|test|prod)_[A-Za-z0-9]{10,}", REDACTED,  # stripe-access-token
     ("k_live_", "k_test_", "k_prod_")),
    (r"\bgh[pousr]_[A-Za-z0-9]{16,}", REDACTED,                   # github-pat/-oauth/-app
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,}", REDACTED, ("github_pat_",)),  # github-fine-grained
    (r"\bgl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}", REDACTED,
     ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-",
      "glagent-", "gloas-")),                                     # gitlab-*
    (r"\bgl(?:c|sa)_[A-Za-z0-9+/_=]{32,}", REDACTED, ("glc_", "glsa_")),  # grafana
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", REDACTED, ("xox",)),     # slack tokens
    (r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/\S+", "hooks.slack.com/" + REDACTED,
     ("hooks.slack.com/",)),                                     # slack-webhook-url
    (r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", REDACTED,  # aws-access-token
     ("a3t", "akia", "asia", "abia", "acca")),
    (r"\bAIza[0-9A-Za-z_-]{35}", REDACTED, ("aiza",)),          # gcp-api-key
    (r"\bya29\.[0-9A-Za-z_-]{20,}", REDACTED, ("ya29.",)),      # google oauth token
    (r"\bhf_[A-Za-z0-9]{30,}", REDACTED, ("hf_",)),             # huggingface
    (r"\bnpm_[A-Za-z0-9]{36}", REDACTED, ("npm_",)),            # npm-access-token
    (r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", REDACTED, ("pypi-",)),  # pypi-upload-token
    (r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", REDACTED, ("sg.",)),  # sendgrid
    (r"\bdo[opr]_v1_[a-f0-9]{64}", REDACTED, ("_v1_",)),        # digitalocean
    (r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", REDACTED, ("shp",)),  # shopify
    (r"\bhv[sb]\.[A-Za-z0-9_-]{24,}", REDACTED, ("hvs.", "hvb.")),  # hashicorp vault
    (r"\bdapi[a-f0-9]{32}(?:-\d)?", REDACTED, ("dapi",)),       # databricks
    (r"\blin_api_[A-Za-z0-9]{40}", REDACTED, ("lin_api_",)),   # linear
    (r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", REDACTED, ("pmak-",)),  # postman
    (r"AGE-SECRET-KEY-1[0-9A-Z]{58}", REDACTED, ("age-secret-key-1",)),  # age
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", REDACTED, ("eyj",)),
    # ``--token x`` / ``--password=x`` / ``-u user:pass`` (curl, wget --user).
    (r"(?i)(--?" + _FLAG_NAME + r"(?:=|\s+)\\?[\"']?)" + _QVALUE, r"\1" + REDACTED,
     _FLAG_MARKERS),
    (r"((?:^|\s)(?:-u|--user|--proxy-user)(?:=|\s*)\\?[\"']?[^\s:\"'\\]{0,64}:)" + _VALUE,
     r"\1" + REDACTED, ("-u",)),
    # argv pairs in a printed list: ``["--token", "x"]``, ``['-u', 'user:pass']``.
    (r"(?i)(\\?[\"'](?:--?" + _FLAG_NAME + r"|-u|--user)\\?[\"']\s*,\s*\\?[\"'])"
     r"[^\"'\\]+", r"\1" + REDACTED, (*_FLAG_MARKERS, "-u")),
    # NAME=value, NAME: value, "NAME": "value" (env style, YAML, JSON, query strings).
    # ``%3D`` / ``%3A``: the same, URL-encoded.
    (r"(?i)(" + _NAME + "(?:" + _NAME_TAIL + r")?\\?[\"']?\s*(?:[=:]|%3[da])\s*\\?[\"']?)"
     + _KVALUE, r"\1" + REDACTED, _NAME_MARKERS),
    (r"(?i)(" + _WORD + r"\\?[\"']?[ \t]*(?:[=:]|%3[da])\s*\\?[\"']?)" + _KVALUE,
     r"\1" + REDACTED, _WORD_MARKERS),
    # ``scheme://user:pass@``, and ``redis://:pass@`` (a password without a user).
    (r"(://[^/\s:@]*:)[^@\s/]+@", r"\1" + REDACTED + "@", ("://",)),
    # ``https://TOKEN@host``: userinfo without a password is a token (git, GitHub, GitLab).
    (r"(?i)(\b(?:https?|wss?)://)[^/\s:@?#]+@", r"\1" + REDACTED + "@", ("://",)),
)
_compiled: dict[str, Any] = {}
# Substrings shared by several markers (each gate is in none of the others' markers).
_GATES = ("pass", "auth")


def _rules() -> dict[str, Any]:
    """The compiled rules (``_SECRET_TEXT``), and the markers to look for: every rule's, less
    those that hold another one (``_ALL_MARKERS``). A text is scanned once for each marker; a
    marker found runs the rules with a marker that holds it (``_RULES_OF_MARKER``), in order.
    The markers that hold a gate (``_GATES``: ``pass=``, ``-pass``, ``passw`` …) are looked
    for only in a text that holds the gate (``_GATED``), so most texts are scanned once per
    gate rather than once per marker."""
    if not _compiled:
        rules = [(re.compile(pattern), replacement, markers)
                 for pattern, replacement, markers in _RULE_SOURCES]
        every = {m for _, _, markers in rules for m in markers}
        kept = tuple(sorted({m for m in every if not any(o != m and o in m for o in every)},
                            key=lambda m: (len(m), m)))
        gated = {gate: tuple(m for m in kept if gate in m) for gate in _GATES}
        _compiled.update(
            _SECRET_TEXT=rules, _ALL_MARKERS=kept, _GATED=gated,
            _SCAN=(*(m for m in kept if not any(gate in m for gate in _GATES)), *_GATES),
            _RULES_OF_MARKER={marker: frozenset(index for index, (_, _, ms) in enumerate(rules)
                                                if any(marker in m for m in ms))
                              for marker in kept},
            _SECRET_FLAG=re.compile(r"(?i)^(?:--?" + _FLAG_NAME + r"|-u|--user|--proxy-user)$"))
    return _compiled


def __getattr__(name: str) -> Any:
    if name in ("_SECRET_TEXT", "_ALL_MARKERS", "_RULES_OF_MARKER", "_SECRET_FLAG"):
        return _rules()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Characters redacted past what a pane shows, so a secret that starts in view is masked
# whole; the rest of a long text is never shown, so it is not redacted.
REDACT_SLACK = 2000
# Known secrets shorter than this are not replaced (they would mask ordinary words).
MIN_KNOWN_SECRET = 6
_known: tuple[str, ...] = ()
_known_lock = threading.Lock()


def register_known_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in anything clawwatch outputs from now on (the
    gateway token, a URL's password, a webhook URL's path or query secret)."""
    global _known
    if not isinstance(value, str) or len(value) < MIN_KNOWN_SECRET:
        return
    with _known_lock:
        if value not in _known:
            # Longest first, so a secret that contains another is masked whole.
            _known = tuple(sorted((*_known, value), key=len, reverse=True))


def forget_known_secrets() -> None:
    """Forget every registered secret (tests)."""
    global _known
    with _known_lock:
        _known = ()


def register_url_secrets(url: str | None) -> None:
    """Register the secrets a URL carries: its userinfo password, and for a webhook URL its
    path and query (which often hold the token: ntfy topics, Slack/Discord hook paths)."""
    if not isinstance(url, str):
        return
    match = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:([^/@\s]*)@)?([^/?#\s]*)([^#\s]*)", url)
    if not match:
        return
    userinfo, _, rest = match.groups()
    if userinfo:
        user, _, password = userinfo.partition(":")
        register_known_secret(password or user)
    for part in re.split(r"[/?&=]", rest or ""):
        if len(part) >= 16:
            register_known_secret(part)


def url_without_userinfo(url: str | None) -> str:
    """``url`` with any ``user:password@`` removed (for messages)."""
    if not isinstance(url, str):
        return str(url)
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@", r"\1", url)


def redact_text(text: str) -> str:
    """``text`` with bearer tokens, API keys, passwords, private keys, URL credentials and
    every registered secret masked."""
    for secret in _known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    folded = _folded(text)
    rules = _compiled or _rules()
    found = [marker for marker in rules["_SCAN"] if marker in folded]
    if not found:
        return text
    gated = rules["_GATED"]
    found = [marker for gate in found for marker in (
        [m for m in gated[gate] if m in folded] if gate in gated else (gate,))]
    of_marker = rules["_RULES_OF_MARKER"]
    run = frozenset().union(*(of_marker[marker] for marker in found))
    for index, (pattern, replacement, _) in enumerate(rules["_SECRET_TEXT"]):
        if index in run:
            text = pattern.sub(replacement, text)
    return text


def _folded(text: str) -> str:
    """``text`` casefolded, as the rules' markers are written."""
    folded = text.casefold()
    if not folded.isascii():  # the two letters ``(?i)i`` matches that casefold elsewhere
        folded = folded.replace("\u0131", "i").replace("\u0307", "")
    return folded


def _may_hold_secret(text: str) -> bool:
    """Whether ``redact_text`` could change ``text``: it holds a registered secret or a
    rule's marker. Never False for a text it would change, so a False skips it."""
    if any(secret in text for secret in _known):
        return True
    folded = _folded(text)
    return any(marker in folded for marker in (_compiled or _rules())["_SCAN"])


def shown_start(text: str, limit: int) -> str:
    """The start of ``text`` with its whitespace collapsed, ``limit + REDACT_SLACK``
    characters of it when it has that many: all of it a pane clipped to ``limit`` can show,
    and enough past that for redaction to see a secret that starts in view whole."""
    want = limit + REDACT_SLACK
    size = want
    while True:
        collapsed = " ".join(text[:size].split())
        if len(collapsed) >= want or size >= len(text):
            return collapsed
        size *= 4


def redacted_start(text: str, limit: int) -> str:
    """``text`` redacted as far as a view of ``limit`` characters can show it: its first
    ``limit + REDACT_SLACK`` characters (a secret that starts in view is masked whole), its
    whitespace kept (unlike ``shown_start``)."""
    return redact_text(text[:limit + REDACT_SLACK])


def _redact_list(items, redact_item) -> list:
    """Items of a list, each through ``redact_item``; in an argv list the item after a secret
    flag (``--token``, ``-u``) is masked whole."""
    flag = _rules()["_SECRET_FLAG"]
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


def redact(value: Any, limit: int | None = None) -> Any:
    """A copy of ``value`` (JSON-like) with secret-named keys' values and secret-looking text,
    keys included (a tool's arguments are named by the model), masked. With ``limit``, each
    text is cut to its ``shown_start`` first (for display only)."""
    if isinstance(value, dict):
        return {redact(k, limit): REDACTED if isinstance(k, str) and _SECRET_KEY.search(k)
                and not isinstance(v, (dict, list)) and (k, v) not in _PLAIN_FIELDS
                else redact(v, limit)
                for k, v in value.items()}
    if isinstance(value, list):
        return _redact_list(value, lambda item: redact(item, limit))
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
    Returns ``record`` itself when nothing changed.

    Most records hold nothing secret: their texts are gathered and looked at once, joined,
    and only a record that may hold a secret is walked again to mask it."""
    texts: list[str] = []
    if _gather_texts(record, texts) or _may_hold_secret("\x00".join(texts)):
        return _redacted_record(record)
    return record


def _gather_texts(value: Any, texts: list[str]) -> bool:
    """Append every string value in ``value`` (at any depth), and every name of a
    name → count map, to ``texts``; True when a string is masked whole whatever it says
    (under a secret-named key, or after a secret flag in a list), so the record must be
    walked."""
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if isinstance(key, str) and _is_secret_key(key) and item != REDACTED \
                        and key not in _RECORD_FIELDS and (key, item) not in _PLAIN_FIELDS:
                    return True
                texts.append(item)
            elif key in _COUNTS_BY_NAME and _is_counts(item):
                texts.extend(item)
            elif _gather_texts(item, texts):
                return True
    elif isinstance(value, (list, tuple)):
        flag = _rules()["_SECRET_FLAG"]
        for item in value:
            if isinstance(item, str):
                if len(item) < 64 and flag.match(item):
                    return True
                texts.append(item)
            elif _gather_texts(item, texts):
                return True
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
        return redact_text(record)
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


def format_arguments(arguments: Any) -> str:
    """Tool arguments as ``key=value, …`` (strings bare, the rest as JSON)."""

    def value(item: Any) -> str:
        if isinstance(item, str):
            return item
        try:
            return json.dumps(item, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return str(item)

    if isinstance(arguments, dict):
        return ", ".join(f"{k}={value(v)}" for k, v in arguments.items())
    return value(arguments)


def clip(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters (… marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_redacted(text: str, limit: int) -> str:
    """``text`` redacted, then ``clip``-ped to ``limit`` characters: cut first, a secret
    halved by the cut could keep a start too short for its rule (``ghp_`` and 8 of its
    characters) and be shown."""
    return clip(redact_text(shown_start(text, limit)), limit)


def _redacted_item(item: Any) -> Any:
    """An item of a list being walked: a dict is a record of its own, looked at once before
    it is walked (a replay document's sessions are mostly free of secrets)."""
    return redact_record(item) if isinstance(item, dict) else _redacted_record(item)


#: The longest name or label kept from an index or a transcript (a model, a session's
#: label): a pane shows far less, and every output would redact all of it, every time.
KEPT_NAME_CHARS = 1000


def bounded(text: str | None, limit: int = KEPT_NAME_CHARS) -> str | None:
    """``text``, or when it is longer than ``limit``, ``clip_redacted`` of it."""
    if text is None or len(text) <= limit:
        return text
    return clip_redacted(text, limit)
