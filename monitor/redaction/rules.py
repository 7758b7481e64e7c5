"""The secret-looking shapes clawwatch masks in text, as regexes, and their compilation.

Each rule masks one shape wherever it appears:

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
  (``DB_PASS=…``, ``"auth": "…"``), or holds the word ``pass`` after another part of it
  and before more of it, as above, that names no setting about the password either
  (``DB_PASS_PROD=…``, ``MYSQL_PASS_1=…``; ``DB_PASS_COUNT=3``, ``TEST_PASS_RATE=0.9``,
  ``DB_PASS_FILE=/run/…`` stay, and so do ``PASS_RATE=``, ``AUTH_MODE=``,
  ``COOKIE_DOMAIN=``: a short word that starts a name, and ``auth`` or ``cookie``
  anywhere, take no more), with ``=``, ``:`` or their URL-encoded ``%3D`` / ``%3A`` (env
  style ``AWS_SECRET_ACCESS_KEY=…`` too); a value never starts at a ``{`` or ``[`` (the
  names nested in it are found by their own);
* ``Authorization:`` headers of any scheme (bearer and basic credentials anywhere),
  ``Cookie:`` / ``Set-Cookie:`` values, ``--token x`` style flags, ``curl -u user:pass``,
  ``mysql -pX``, ``sshpass -p X``, ``redis-cli -a X``, ``docker login -p X``, argv lists
  (``["--token", "x"]``), URL userinfo (``scheme://user:pass@``, ``redis://:pass@``,
  ``https://token@``).

The secrets clawwatch itself knows are masked by value, not by a rule (``text``).

The rules are kept here rather than imported from detect-secrets at run time: its scanner
regexes are tuned for precision in commits (exact lengths, quotes required), it has no rule
for half of the shapes above, and importing it costs ~100 ms and pulls in ``requests``.

Speed: each rule has markers (casefolded substrings every match contains) and runs only on a
text whose casefolded form holds one (``text.redact_text``); most texts hold none and run no
regex. The rules are compiled on first use (``compiled_rules``), not at import: clawwatch
imports this at start-up.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "«redacted»"
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
_NAME_TAIL = r"(?:[_-](?!" + _QUANTITY + r")|(?=\d))[\w-]{0,40}+"
# Words that, right after ``pass``, name a setting about the password rather than the
# password itself: ``TEST_PASS_RATE=0.9``, ``DB_PASS_FILE=/run/secrets/db`` (a path, as
# docker's ``*_FILE`` secrets), ``SMTP_PASS_TYPE=plain``, ``X-Pass-Through: 1``.
_ABOUT_PASS = (r"(?:rate|ratio|percent|pct|threshold|mode|type|method|through|thru|"
               r"file(?:name)?|path|dir)s?(?![a-z])")
# ``pass`` after another part of a name (a letter or digit, then a ``_`` / ``-``), with more
# of the name after it (``DB_PASS_PROD``, ``MYSQL_PASS_1``, ``db-pass2``): the more starts
# as ``_NAME_TAIL`` does and names neither a quantity nor a setting about the password. At
# a name's start ``pass`` takes no more (``PASS_RATE``, ``pass_through``), nor do ``auth``
# and ``cookie`` anywhere (``AUTH_MODE``, ``X-Auth-User``, ``SESSION_COOKIE_NAME``): those
# name settings, and their secrets carry a secret word of their own (``AUTH_TOKEN``,
# ``COOKIE_SECRET``). The ``_`` / ``-`` is matched first, so a text is searched for it
# rather than tried at every position, and the more is taken whole (``{0,40}+``: nothing
# that may follow it is a name character), so a run of ``_PASS_PASS_…`` takes linear time.
_PASS_IN_NAME = (r"[_-](?<=[a-z0-9][_-])pass(?:[_-](?!" + _QUANTITY + "|" + _ABOUT_PASS
                 + r")|(?=\d))[\w-]{0,40}+")
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
# one of its markers, which every match contains (most texts hold none).
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
    # ``--token x`` / ``--password=x`` / ``-u user:pass`` (curl, wget --user). The look-ahead
    # (a name of at most 51 characters, then ``=`` or a space) is what every match has: it
    # turns down a dash in a long run of name characters without trying every name in it.
    (r"(?i)(--?(?=[\w-]{0,60}+[=\s])" + _FLAG_NAME + r"(?:=|\s+)\\?[\"']?)" + _QVALUE,
     r"\1" + REDACTED, _FLAG_MARKERS),
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
    # ``DB_PASS_PROD=x``, ``"mysql-pass-1": "x"``: ``pass`` inside a name.
    (r"(?i)(" + _PASS_IN_NAME + r"\\?[\"']?[ \t]*(?:[=:]|%3[da])\s*\\?[\"']?)" + _KVALUE,
     r"\1" + REDACTED, ("_pass", "-pass")),
    # ``scheme://user:pass@``, and ``redis://:pass@`` (a password without a user).
    (r"(://[^/\s:@]*:)[^@\s/]+@", r"\1" + REDACTED + "@", ("://",)),
    # ``https://TOKEN@host``: userinfo without a password is a token (git, GitHub, GitLab).
    (r"(?i)(\b(?:https?|wss?)://)[^/\s:@?#]+@", r"\1" + REDACTED + "@", ("://",)),
)
#: The compiled rules and their markers (``compiled_rules``), filled on first use.
compiled: dict[str, Any] = {}
# Substrings shared by several markers (each gate is in none of the others' markers).
_GATES = ("pass", "auth")


def compiled_rules() -> dict[str, Any]:
    """The compiled rules (``_SECRET_TEXT``), and the markers to look for: every rule's, less
    those that hold another one (``_ALL_MARKERS``). A text is scanned once for each marker; a
    marker found runs the rules with a marker that holds it (``_RULES_OF_MARKER``), in order.
    The markers that hold a gate (``_GATES``: ``pass=``, ``-pass``, ``passw`` …) are looked
    for only in a text that holds the gate (``_GATED``), so most texts are scanned once per
    gate rather than once per marker."""
    if not compiled:
        rules = [(re.compile(pattern), replacement, markers)
                 for pattern, replacement, markers in _RULE_SOURCES]
        every = {m for _, _, markers in rules for m in markers}
        kept = tuple(sorted({m for m in every if not any(o != m and o in m for o in every)},
                            key=lambda m: (len(m), m)))
        gated = {gate: tuple(m for m in kept if gate in m) for gate in _GATES}
        compiled.update(
            _SECRET_TEXT=rules, _ALL_MARKERS=kept, _GATED=gated,
            _SCAN=(*(m for m in kept if not any(gate in m for gate in _GATES)), *_GATES),
            _RULES_OF_MARKER={marker: frozenset(index for index, (_, _, ms) in enumerate(rules)
                                                if any(marker in m for m in ms))
                              for marker in kept},
            _SECRET_FLAG=re.compile(r"(?i)^(?:--?" + _FLAG_NAME + r"|-u|--user|--proxy-user)$"))
    return compiled
