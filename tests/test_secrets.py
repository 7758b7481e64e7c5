"""Issue 10 item 4: no secret reaches any output.

A corpus of secrets (provider keys, env assignments, PEM blocks, ``curl -u``, argv pairs, URL
userinfo, the gateway token clawwatch discovers) is put in tool arguments and results and in
gateway-log lines, loop lines included, of a simulated OpenClaw state dir; then ``replay
--json``, ``watch --json`` (dry-run actions), the audit log, a webhook body received by a
local HTTP server, and the errors of a ``--gateway ws://user:secret@…`` that cannot connect
must not contain any of them.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from hostile_world import log_line
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_act_webhooks import Receiver

from monitor import cli, cli_watch, redaction
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, ToolStep
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.redaction import REDACTED, clipping, redact, redact_text, structured
from monitor.shown import shown_repeated

pytestmark = pytest.mark.timeout(120)

START = 1_795_960_000.0
GATEWAY_TOKEN = "gw7f3c9a1e5b2d8c4f6a0e9b7d1c3f5a2e"   # what discovery finds in openclaw.json
GATEWAY_PASSWORD = "wsPa55wordXyz"                     # in --gateway ws://user:…@host
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
# (text, secret): each text holds the secret once; none of them may come out.
CORPUS = {
    "bearer": ("curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://x",
               "abcdefghijklmnop1234"),
    "anthropic": ("ANTHROPIC=sk-ant-api03-Zq9xR2mK7vB4nL1pW8sT3yU6iO0aE5dF-g_hJ",
                  "sk-ant-api03-Zq9xR2mK7vB4nL1pW8sT3yU6iO0aE5dF-g_hJ"),
    "aws_env": ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIzK7MDENGzbPxRfiCYzz9Q0L1Q2a",
                "wJalrXUtnFEMIzK7MDENGzbPxRfiCYzz9Q0L1Q2a"),
    "aws_ini": ("aws_secret_access_key = Q9wJalrXUtnFEMIK7MDENGbPxRfiCYzzzzzzzzz",
                "Q9wJalrXUtnFEMIK7MDENGbPxRfiCYzzzzzzzzz"),
    "github_pat": ("gh auth login --with-token github_pat_11AAAAAAA0bcdefghijk"
                   "lmnop_QRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNO",
                   "github_pat_11AAAAAAA0bcdefghijklmnop_QRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789ABCDEFGHIJKLMNO"),
    "stripe": ("stripe charges list --api sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv",
               "sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv"),
    "google": ("GET https://maps.googleapis.com/x?k=AIzaSyB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV-w",
               "AIzaSyB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV-w"),
    "pem": (f"cat ~/.ssh/id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n"
            f"{PEM_BODY[::-1]}\n-----END RSA PRIVATE KEY-----\n", PEM_BODY),
    "curl_u": ("curl -sf -u admin:Hunter2Hunter2 https://api.example.com/v1",
               "Hunter2Hunter2"),
    "argv": ('spawn ["openclaw", "--token", "tok9c8b7a6f5e4d", "status"]', "tok9c8b7a6f5e4d"),
    "url": ("git push https://bob:gitPassw0rd77@github.com/x/y.git", "gitPassw0rd77"),
    "json_password": ('{"password": "correct horse battery staple"}', "horse battery staple"),
    "gateway_token": (f"connect ok client=cli auth={GATEWAY_TOKEN[:0]}{GATEWAY_TOKEN} scopes=3",
                      GATEWAY_TOKEN),
    "ws_userinfo": (f"dial ws://operator:{GATEWAY_PASSWORD}@127.0.0.1:18789 failed",
                    GATEWAY_PASSWORD),
    # issue 10 red team, finding 4: common shapes that used to survive
    "auth_token_scheme": ('curl -H "Authorization: Token tkQ7r2Lm9Xa4Zp" https://api.x/v1',
                          "tkQ7r2Lm9Xa4Zp"),
    "auth_any_scheme": ("Proxy-Authorization: Digest dgW4v8Np3Kc6Hs", "dgW4v8Np3Kc6Hs"),
    "cookie": ('curl -H "Cookie: sid=ckA5n1Vb8Qw3Er; theme=dark" https://x', "ckA5n1Vb8Qw3Er"),
    "set_cookie": ("Set-Cookie: sid=scZ2m7Tg4Yh9Ju; Path=/; HttpOnly", "scZ2m7Tg4Yh9Ju"),
    "mysql_p": ("mysql -uroot -pmyR8k3Fj6Ld1Sx -h db prod", "myR8k3Fj6Ld1Sx"),
    "sshpass": ("sshpass -p spL4b9Hn2Wq7Mc ssh root@host", "spL4b9Hn2Wq7Mc"),
    "redis_cli": ("redis-cli -h cache -a rdC3x8Kp5Nv2Gt ping", "rdC3x8Kp5Nv2Gt"),
    "docker_login": ("docker login -u me -p dkT6j1Rs4Fz9Bw registry.x", "dkT6j1Rs4Fz9Bw"),
    "docker_password": ("docker login --username me --password dpH2q7Ye5Lm8Va reg",
                        "dpH2q7Ye5Lm8Va"),
    "env_pass": ("export DB_PASS=dbN9w4Gc1Xk6Pu && ./migrate", "dbN9w4Gc1Xk6Pu"),
    "token_userinfo": ("git clone https://tuE5r0Mb7Jd2Qs@github.com/o/r.git", "tuE5r0Mb7Jd2Qs"),
    "passwort": ("Passwort=pwK1z6Wh3Tn8Ry", "pwK1z6Wh3Tn8Ry"),
    "url_encoded": ("q=login&password%3DueB4s9Lx2Cf7Dk", "ueB4s9Lx2Cf7Dk"),
    "json_pass": ('{"user": "bob", "pass": "jpV8c3Qm6Hw1Zn"}', "jpV8c3Qm6Hw1Zn"),
    "json_auth": ('{"auth": "jaG7y2Ks5Bp0Xe"}', "jaG7y2Ks5Bp0Xe"),
    "json_credentials": ('{"credentials": {"user": "u", "pass": "jcM3f8Rv1Nt6Lh"}}',
                         "jcM3f8Rv1Nt6Lh"),
    # names with more after the secret word, and a password without a user
    "env_password_prod": ("export DB_PASSWORD_PROD=ppR4t8Wm2Qz6Kc", "ppR4t8Wm2Qz6Kc"),
    "env_token_ro": ("GITHUB_TOKEN_RO=trB7n3Xd9Lf1Vs gh api /user", "trB7n3Xd9Lf1Vs"),
    "env_secret_key_base": ("SECRET_KEY_BASE=skE2h6Pq0Wj5Ya rails s", "skE2h6Pq0Wj5Ya"),
    "env_api_key_2": ("OPENAI_API_KEY_2=ak9Uv4Cs8Mb3Tn python run.py", "ak9Uv4Cs8Mb3Tn"),
    "yaml_api_key_prod": ("api-key-prod: ykG5w1Zr7Hd2Lx", "ykG5w1Zr7Hd2Lx"),
    "json_password_prod": ('{"db_password_prod": "jqF8k2Nv6Tc0Bs"}', "jqF8k2Nv6Tc0Bs"),
    "url_no_user": ("REDIS_URL=redis://:ruJ3m9Qe5Wx1Gp@cache:6379/0", "ruJ3m9Qe5Wx1Gp"),
    # the word ``pass`` after another part of a name, with more of the name after it
    "env_pass_prod": ("export DB_PASS_PROD=dpQ3v7Kx1Mz5Hs && ./migrate", "dpQ3v7Kx1Mz5Hs"),
    "env_pass_1_quoted": ("export MYSQL_PASS_1='mp Y6c2 Rf9Tw'", "mp Y6c2 Rf9Tw"),
    "env_pass2": ("REDIS_PASS2=rpJ9f4Lw6Cb1Nd redis-server", "rpJ9f4Lw6Cb1Nd"),
    "yaml_pass_prod": ("DB_PASS_PROD: ypN8s4Dg0Vk2Lc", "ypN8s4Dg0Vk2Lc"),
    "json_pass_prod": ('{"smtp-pass-main": "jsB1w6Hm3Ty8Qe"}', "jsB1w6Hm3Ty8Qe"),
    "url_encoded_pass_prod": ("q=login&db_pass_prod%3DueR5k0Zp7Gn3Xa", "ueR5k0Zp7Gn3Xa"),
}
SECRETS = [secret for _, secret in CORPUS.values()] + [PEM_BODY[::-1]]


@pytest.fixture(autouse=True)
def known_secrets():
    forget = getattr(redaction, "forget_known_secrets", lambda: None)
    forget()
    yield
    forget()


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


# ------------------------------------------------------------------ the rules themselves


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_secret_kind_is_masked(name):
    text, secret = CORPUS[name]
    if name == "gateway_token":
        redaction.register_known_secret(GATEWAY_TOKEN)
    masked = redact_text(text)
    assert secret not in masked and REDACTED in masked, masked
    record = {"type": "notice", "message": text}
    assert redaction.redact_record(record)["message"] == masked


def test_a_json_object_under_a_secret_name_keeps_its_structure():
    masked = redact_text(CORPUS["json_credentials"][0])
    assert json.loads(masked) == {"credentials": {"user": "u", "pass": REDACTED}}
    assert redact_text('"token": ["a", "b"]') == '"token": ["a", "b"]'


@pytest.mark.parametrize("text", [
    "mysql -u root -p mydb",            # -p then a space: mysql prompts, mydb is a database
    "mysql -h db -P 3306 shop",         # -P is mysql's port
    "grep -p foo | mysql shop", "ssh -p 2222 host", "cp -p a b", "docker run -p 80:80 x",
    "redis-cli -p 6380 ping", "bypass=1 compass: north", "passes: 3", "oauth2 flow",
    "Authorization failed", "https://example.com/?mail=a@b.example",
    "max_tokens: 4096, tokens=12", "key=agent:main:pp1", "ssh://git@github.com/x.git",
    # a quantity after the secret word; a file name with a secret word in it
    "TOKEN_COUNT=5", "token_budget:session", "token_budget:agent:main:2025-01-01",
    "PASSWORD_MIN_LENGTH=12", "api_key_limit: 100", "codex type=token_count",
    "token_store.py:12: def load():", "cat: secret.txt: No such file",
    "http://[::1]:8080/x", "sqlite://:memory:",
    # a short word at a name's start, ``auth`` / ``cookie`` before more of a name, and ``pass``
    # before a quantity or a setting about the password: no secret
    "PASS_RATE=0.9", "pass_through: true", "PASS_COUNT=3", "AUTH_MODE=token",
    "X-Auth-User: bob", "COOKIE_DOMAIN=example.com", "SESSION_COOKIE_NAME = 'sessionid'",
    "DB_PASS_COUNT=3", "TEST_PASS_RATE=0.9", "SMTP_PASS_TYPE=plain", "X-Pass-Through: 1",
    "DB_PASS_FILE=/run/secrets/db", "bypass_cache=1", "compass_heading: 90",
    "db_pass_1.txt:3: x", "_PASS_PROD=1",
])
def test_lookalikes_of_the_new_shapes_are_left_alone(text):
    assert redact_text(text) == text


def test_secret_named_keys_are_masked_in_arguments_and_records():
    from monitor.redaction import redact_record

    secret = "kvP4x9Wd2Mr7Ys"
    arguments = {"db_pass": secret, "dbPass": secret, "pass": secret, "passwd": secret,
                 "auth": secret, "credentials": {"user": "u", "pass": secret},
                 "bypass": "yes", "passes": 3, "command": "ls"}
    shown = redact(arguments)
    assert secret not in json.dumps(shown)
    assert (shown["bypass"], shown["passes"], shown["command"]) == ("yes", 3, "ls")
    assert shown["credentials"]["user"] == "u"
    record = {"type": "finding", "key": "agent:main:x", "session_key": "agent:main:x",
              "tool": "exec", "detector": "token_budget", "tokens": {"input": 5},
              "tokens_from": "index", "count": 3, "auth": secret,
              "arguments": arguments}
    out = redact_record(record)
    assert secret not in json.dumps(out)
    assert out["auth"] == REDACTED and out["arguments"]["pass"] == REDACTED
    assert out["arguments"]["passes"] == 3      # only text is masked: the shape is kept
    for field in ("type", "key", "session_key", "tool", "detector", "tokens", "tokens_from",
                  "count"):
        assert out[field] == record[field], field
    clean = {field: record[field] for field in ("type", "key", "session_key", "tool",
                                                "tokens", "tokens_from")}
    assert redact_record(clean) is clean


# Names whose value the text rules mask in ``{"NAME": "x"}``: keys, masked whole, too.
PASS_IN_NAMES = ["DB_PASS_PROD", "MYSQL_PASS_1", "db-pass2", "Smtp_Pass_Main"]


@pytest.mark.parametrize("name", [*PASS_IN_NAMES, "DB_PASS", "pass", "auth",
                                  "DB_PASSWORD_PROD", "GITHUB_TOKEN_RO", "PASS_RATE",
                                  "DB_PASS_COUNT", "AUTH_MODE", "bypass_cache", "passport"])
def test_a_name_masked_in_text_is_a_secret_named_key(name):
    from monitor.redaction import redact_record

    secret = "kvP4x9Wd2Mr7Ys"
    masked_in_text = secret not in redact_text(json.dumps({name: secret}))
    assert masked_in_text == (name in PASS_IN_NAMES or name in {
        "DB_PASS", "pass", "auth", "DB_PASSWORD_PROD", "GITHUB_TOKEN_RO"})
    if masked_in_text:
        assert redact({name: secret}) == {name: REDACTED}
        assert redact_record({name: secret}) == {name: REDACTED}


@pytest.mark.parametrize(("name", "secret_named"), [
    ("dbPassProd", True), ("passProd", True), ("dbPass2", True), ("DB_PASS_PROD", True),
    ("passport", False), ("Passport", False), ("PASSPORT", False), ("bypassCache", False),
    ("compass", False), ("isPassing", False), ("PASSED", False),
])
def test_pass_as_any_word_of_a_key_names_a_secret(name, secret_named):
    shown = redact({name: "kvP4x9Wd2Mr7Ys"})[name]
    assert (shown == REDACTED) == secret_named, shown


# Fragments of the shapes above, in the case variants (?i) matches, to build texts from.
SHAPE_PIECES = st.sampled_from([
    "Authorization", "authori\u017fation", "PROXY-", ": ", "=", "%3D", "%3a", "Token ",
    "Bearer ", "Cookie", "Set-", "coo\u212aie", "mysql", "MySQL", "mariadb", " -p", "-p",
    " -a ", "sshpass", "redis-cli", "docker login", "podman", " --password ", "DB_PASS",
    "pass", "PA\u017f\u017f", "Pass", "by", "auth", "AUTH", "credentials", "Passwort",
    "https://", "wss://", "://bob:", "://:", "@", "?", "{", "[", '"', "'", "\\", " ", "\n", "|",
    ";", "TOKEN", "secret", "_KEY", "PASSWORD", "_PROD", "-", "_count", "_rate", "2", ".py",
    "abcdefgh12345678", "x", "\u0131", "\u00e9",
])


def redact_ungated(text: str) -> str:
    for pattern, replacement, _ in redaction._SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


@settings(max_examples=500, deadline=None)
@given(st.lists(SHAPE_PIECES, max_size=30).map("".join))
def test_the_new_shapes_are_gated_by_markers_like_every_rule(text):
    assert redact_text(text) == redact_ungated(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(SHAPE_PIECES, max_size=40).map("".join))
def test_the_new_shapes_are_redacted_as_far_as_they_are_shown(text):
    # slack: longer than the longest minimal match of these rules (``mysql``, up to 200
    # characters of arguments, ``-p`` and one character: 210)
    limit, slack = 10, 260
    original, clipping.REDACT_SLACK = clipping.REDACT_SLACK, slack
    try:
        start = redaction.shown_start(text, limit)
    finally:
        clipping.REDACT_SLACK = original
    whole = " ".join(text.split())
    assert redact_text(start)[:limit] == redact_text(whole)[:limit]


@pytest.mark.parametrize("piece", ["token_", "_key-", "DB_PASSWORD_", "://:", "_PASS",
                                   "DB_PASS_", "a-pass1", "--x-token-", "a-pass-"])
def test_names_with_more_after_the_secret_word_are_found_in_linear_time(piece):
    # each secret word looks at most 40 name characters ahead: a scan to the text's end from
    # every one of them would take minutes here
    text = piece * (400_000 // len(piece))
    started = time.monotonic()
    redact_text(text)
    assert time.monotonic() - started < 5


def test_a_long_name_before_pass_is_found_in_linear_time():
    text = "A" * 1_000_000 + "_PASS_PROD=x"
    started = time.monotonic()
    assert redact_text(text).endswith("_PASS_PROD=" + REDACTED)
    assert time.monotonic() - started < 5


def test_argv_lists_mask_the_value_after_a_secret_flag():
    from monitor.redaction import redact_record

    argv = ["curl", "-u", "bob:pw-123456", "--token", "abcdefgh", "--header", "x", "-v"]
    assert redact(argv) == ["curl", "-u", REDACTED, "--token", REDACTED, "--header", "x",
                            "-v"]
    assert redact_record({"argv": argv})["argv"][2] == REDACTED


def test_ordinary_text_is_left_alone():
    for text in ("tool loop: sessionId=s sessionKey=agent:main:x tool=exec level=warning",
                 "max_tokens: 4096, tokens=12", "task-runner-foo-bar-baz ran", "ls -u /tmp",
                 "ssh://git@github.com/x.git", "key=agent:main:pp1"):
        assert redact_text(text) == text


def test_redact_record_keeps_the_shape_and_the_same_object_when_clean():
    from monitor.redaction import redact_record

    record = {"type": "finding", "count": 3, "tokens": {"input": 5}, "message": "ok"}
    assert redact_record(record) is record
    dirty = {**record, "message": CORPUS["bearer"][0]}
    assert redact_record(dirty)["tokens"] == {"input": 5}
    assert leaks(json.dumps(redact_record(dirty))) == []


def test_dicts_in_a_records_list_are_redacted_as_the_record_itself():
    from monitor.redaction import redact_record

    record = {"sessions": [{"session_key": "agent:main:x", "input_tokens": 5,
                            "auth": "jaG7y2Ks5Bp0Xe", "argv": ["--token", "tok9c8b7a6f5e4d"]}]}
    out = redact_record(record)["sessions"][0]
    assert (out["session_key"], out["input_tokens"]) == ("agent:main:x", 5)
    assert out["auth"] == REDACTED and out["argv"] == ["--token", REDACTED]


RECORD_KEYS = st.sampled_from(["message", "auth", "db_pass", "session_key", "tokens",
                               "tokens_from", "argv", "bypass", "x", "tools"])
RECORD_TEXTS = st.one_of(st.lists(SHAPE_PIECES, max_size=12).map("".join),
                         st.sampled_from(["--token", "-u", "index", REDACTED, "wsPa55wordXyz",
                                          *(text for text, _ in CORPUS.values())]))
RECORDS = st.recursive(
    st.one_of(RECORD_TEXTS, st.integers(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(RECORD_KEYS, inner, max_size=4),
                            # a per-tool count map: its names are text
                            st.fixed_dictionaries({"tools": st.dictionaries(
                                RECORD_TEXTS, st.integers(), max_size=3)})),
    max_leaves=12)


@settings(max_examples=500, deadline=None)
@given(RECORDS, st.booleans())
def test_a_record_looked_at_once_is_redacted_as_by_the_full_walk(record, known):
    # The fast path looks at a record's texts joined (and again at each dict in a list it
    # walks); it must never skip what the walk (every text, every key, every argv pair,
    # at every depth) would change.
    if known:
        redaction.register_known_secret(GATEWAY_PASSWORD)
    with mock.patch.object(structured, "_redacted_item", structured._redacted_record):
        walked = structured._redacted_record(record)
    assert redaction.redact_record(record) == walked


def test_the_names_of_a_per_tool_count_map_are_redacted_and_their_counts_added_up():
    from monitor.redaction import redact_record

    first, second = CORPUS["anthropic"][1], CORPUS["google"][1]
    document = {"sessions": [{"key": "agent:main:x", "tool_calls": 33,
                              "tools": {f"exec {first}": 25, f"exec {second}": 5, "read": 3}}]}
    (session,) = redact_record(document)["sessions"]
    assert session["tools"] == {f"exec {REDACTED}": 30, "read": 3}
    assert leaks(json.dumps(session)) == []
    clean = {"sessions": [{"key": "agent:main:x", "tools": {"exec": 2, "read": 1}}]}
    assert redact_record(clean) is clean


def test_argument_names_are_redacted_for_display():
    secret = CORPUS["anthropic"][1]
    assert redact({f"note {secret}": "x", "command": "ls"}) == {f"note {REDACTED}": "x",
                                                                "command": "ls"}


def test_a_value_shown_on_many_rows_is_masked_once_its_secret_is_registered():
    """The board remembers how a repeated value (an agent id, a model) is shown: a secret
    registered later (the gateway token, once connected) is masked in it all the same."""
    model = "model-through-proxy-Qm7Rt2Wx9Kp4"
    assert shown_repeated(model) == model
    assert shown_repeated(model) is shown_repeated(model)
    redaction.register_known_secret("Qm7Rt2Wx9Kp4")
    assert shown_repeated(model) == f"model-through-proxy-{REDACTED}"


def test_a_session_label_is_masked_once_its_secret_is_registered(tmp_path):
    """The board redacts a session's label again only when the label or the registered
    secrets change: a label shown before the gateway token was known is masked after."""
    from monitor.pipeline import Monitor
    from monitor.session_state import SessionState
    from monitor.snapshot_builder import SnapshotBuilder
    from monitor.sources.sourceset import SourceSet

    monitor = Monitor(SourceSet(state_dir=str(tmp_path)))
    builder = SnapshotBuilder(monitor, lambda: 1_000.0)
    state = SessionState("s1", key="agent:main:s1", label="hook Qm7Rt2Wx9Kp4 night",
                         last_ts=990.0)
    monitor.sessions["s1"] = state
    labels = []
    for step in range(4):
        state.tool_calls += 1               # the row is built again each time
        if step == 2:
            redaction.register_known_secret("Qm7Rt2Wx9Kp4")
        if step == 3:
            state.label = "renamed Qm7Rt2Wx9Kp4"
        labels.append(builder.build().rows[0].label)
    assert labels == ["hook Qm7Rt2Wx9Kp4 night"] * 2 + [f"hook {REDACTED} night",
                                                      f"renamed {REDACTED}"]
    assert labels[0] is labels[1]


def test_a_webhook_urls_secret_is_registered():
    redaction.register_url_secrets("https://ntfy.example/clawwatch-alerts-Z9y8X7w6V5")
    assert redact_text("posted to clawwatch-alerts-Z9y8X7w6V5") == f"posted to {REDACTED}"


@pytest.mark.parametrize("url", ["ws://admin:Hunter2 Secret99@127.0.0.1:9",
                                 "ws://admin:Hunter2@Secret99@127.0.0.1:9/x"])
def test_a_url_password_with_a_space_or_an_at_is_masked(url):
    """Not RFC 3986, yet the WebSocket client connects with it: the userinfo runs to the
    authority's last ``@``."""
    redaction.register_url_secrets(url)
    password = url.split("admin:", 1)[1].rsplit("@", 1)[0]
    assert password not in redact_text(f"could not connect to {url}")
    assert redaction.url_without_userinfo(url).startswith("ws://127.0.0.1:9")


# ---------------------------------------------------------- a state dir full of secrets


def secret_scenario() -> Scenario:
    """The same exec over and over (a generic_repeat loop), its command and output full of
    secrets."""
    everything = "\n".join(text for text, _ in CORPUS.values())

    def steps(env: ScenarioEnv):
        while True:
            yield ToolStep("exec", {"command": CORPUS["curl_u"][0], "env": everything,
                                    "argv": ["openclaw", "--token", "tok9c8b7a6f5e4d"]},
                           everything, details={"status": "completed", "exitCode": 1,
                                                "aggregated": everything})

    return Scenario("leaky", "leak", 13050, steps, "a session full of secrets")


def write_world(root: Path) -> tuple[Path, Path, str]:
    """(state dir, gateway log, session key)."""
    root.mkdir(parents=True, exist_ok=True)
    state, log = root / "state", root / "openclaw.log"
    clock = FakeClock(START, tick=0.25)
    sim = Simulator(state, log_path=log, clock=clock, seed=3, hostname="vm")
    key = "agent:main:leaky"
    try:
        session = sim.add_session(secret_scenario(), key=key)
        for _ in range(22):
            sim.step(session)
        session_id = session.session_id
    finally:
        sim.close()
    (state / "openclaw.json").write_text(json.dumps(
        {"gateway": {"port": 1, "auth": {"token": GATEWAY_TOKEN}},
         "logging": {"file": str(log)}}))
    everything = " ".join(" ".join(text.split()) for text, _ in CORPUS.values())
    ts = clock.now + 1
    lines = [
        # OpenClaw's own diagnostic line, its message quoting secrets
        log_line(ts, "ERROR", "diagnostic",
                 f"tool loop: sessionId={session_id} sessionKey={key} tool=exec "
                 f"level=critical action=block detector=generic_repeat count=23 "
                 f"message=\"CRITICAL: {everything}\""),
        # the gateway's token in an ordinary line
        log_line(ts, "INFO", "gateway/ws", CORPUS["gateway_token"][0]),
        # an exec failure quoting a loop line, with secrets around it
        log_line(ts, "WARN", "agents/tools",
                 f"exec failed: {everything} tool loop: sessionId={session_id} "
                 f"sessionKey={key} tool=exec level=critical action=block "
                 f"detector=generic_repeat count=24"),
    ]
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("".join(lines))
    return state, log, key


def run_cli(capfd, argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``clawwatch ARGV`` (file-descriptor level: ``watch``
    writes to the ``sys.stdout`` it was imported with)."""
    emit = cli_watch.emit_records
    cli_watch.emit_records = \
        lambda records, as_json, out=None: emit(records, as_json, out or sys.stdout)
    capfd.readouterr()
    try:
        code = cli.main(argv)
    finally:
        cli_watch.emit_records = emit
    sys.stdout.flush()
    sys.stderr.flush()
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("OPENCLAW_GATEWAY_TOKEN", "OPENCLAW_GATEWAY_URL", "OPENCLAW_STATE_DIR",
                 "OPENCLAW_CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


def test_replay_json_carries_no_secret(tmp_path, clean_env, capfd):
    state, log, key = write_world(tmp_path)
    code, out, _ = run_cli(capfd, ["replay", "--json", "--state-dir", str(state),
                                   "--log", str(log)])
    assert code == 0
    document = json.loads(out)
    [session] = [s for s in document["sessions"] if s["key"] == key]
    notices = [f for f in session["findings"] if f["detector"] == "gateway_loop_notice"]
    assert notices, "OpenClaw's own diagnostic line must still become a finding"
    assert leaks(out) == []


def test_replay_json_masks_tool_names_in_the_per_tool_counts(tmp_path, clean_env, capfd):
    # two tool names holding secrets, which redact to the same name: one count of both
    names = [f"exec {CORPUS['anthropic'][1]}", f"exec {CORPUS['google'][1]}"]

    def steps(env: ScenarioEnv):
        for call in range(6):
            yield ToolStep(names[call % 2], {"command": "ls"}, "ok")

    state = tmp_path / "state"
    sim = Simulator(state, clock=FakeClock(START, tick=0.25), seed=3, hostname="vm")
    try:
        session = sim.add_session(Scenario("named", "go", 1000, steps), key="agent:main:named")
        for _ in range(6):
            sim.step(session)
    finally:
        sim.close()
    code, out, _ = run_cli(capfd, ["replay", "--json", "--no-cache", "--state-dir", str(state)])
    assert code == 0
    [session] = [s for s in json.loads(out)["sessions"] if s["key"] == "agent:main:named"]
    assert session["tools"] == {f"exec {REDACTED}": 6}
    assert leaks(out) == []


def test_watch_json_audit_log_webhooks_and_gateway_errors_carry_no_secret(tmp_path, clean_env,
                                                                          capfd):
    state, log, _ = write_world(tmp_path)
    audit = tmp_path / "audit.jsonl"
    receiver = Receiver()
    config = tmp_path / "clawwatch.yaml"
    config.write_text(
        "actions:\n  mode: dry-run\n  on_critical: stop\n"
        f"  audit_log: {json.dumps(str(audit))}\n"
        "alerts:\n  webhooks:\n"
        f"    - {{url: {json.dumps(receiver.url + '/json')}, min_level: warning}}\n"
        f"    - {{url: {json.dumps(receiver.url + '/ntfy')}, template: ntfy, "
        "min_level: warning}\n"
        f"    - {{url: {json.dumps(receiver.url + '/slack')}, template: slack, "
        "min_level: warning}\n")
    try:
        code, out, err = run_cli(capfd, [
            "watch", "--headless", "--json", "--state-dir", str(state), "--log", str(log),
            "--config", str(config), "--from-start", "--no-checkpoint", "--seconds", "2",
            "--poll", "0.2", "--gateway", f"ws://operator:{GATEWAY_PASSWORD}@127.0.0.1:1"])
    finally:
        receiver.close()
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert any(r["type"] == "finding" and r["detector"] == "gateway_loop_notice"
               for r in records)
    assert any(r["type"] == "action" for r in records), "dry-run actions are audited"
    assert leaks(out) == [] and leaks(err) == []
    written = audit.read_text()
    assert '"dry-run"' in written
    assert leaks(written) == []
    assert receiver.requests, "the webhooks were called"
    bodies = b"\n".join(body for _, _, body in receiver.requests).decode()
    headers = json.dumps([h for _, h, _ in receiver.requests])
    assert leaks(bodies) == [] and leaks(headers) == []


def test_stop_through_a_gateway_url_with_userinfo_echoes_no_password(tmp_path, clean_env,
                                                                    capfd):
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps({"gateway": {"auth": {
        "token": GATEWAY_TOKEN}}}))
    url = f"ws://operator:{GATEWAY_PASSWORD}@127.0.0.1:1"
    for extra in ([], ["--json"]):
        code, out, err = run_cli(capfd, ["stop", "agent:main:x", "--state-dir", str(state),
                                  "--gateway", url, "--timeout", "0.5", *extra])
        assert code == 1
        assert "127.0.0.1:1" in out + err, "the error still names the gateway"
        assert leaks(out + err) == []
    audit = (tmp_path / "xdg" / "clawwatch" / "audit.jsonl").read_text()
    assert '"result"' in audit and leaks(audit) == []


def _redact_every_item(value, limit):
    """``redact(value, limit)`` walking every item: what a view showed before it stopped at
    the items a view can show."""
    if isinstance(value, dict):
        return {redact(k, limit): REDACTED if structured._SECRET_KEY.search(k)
                and not isinstance(v, (dict, list)) else _redact_every_item(v, limit)
                for k, v in value.items()}
    if isinstance(value, list):
        return structured._redact_list(value, lambda item: _redact_every_item(item, limit))
    return redact(value, limit)


ARGUMENT_KEYS = st.sampled_from(["a", "b", "token", "--token", "zz", "ghp_" + "Bq7" * 12,
                                 "k", "cmd", "x_api_key"])
ARGUMENTS = st.recursive(
    st.one_of(st.integers(0, 99), st.sampled_from(["ls", "--token", "v", "sk-" + "a" * 24])),
    lambda inner: st.one_of(st.lists(inner, max_size=12),
                            st.dictionaries(ARGUMENT_KEYS, inner, max_size=9)),
    max_leaves=60)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ARGUMENT_KEYS, ARGUMENTS, max_size=9), st.integers(1, 12))
@example({"a": {"z1": 0, "z2": 0, "z3": 0, "z4": 0, "z5": 0, "z6": 0, "b": 0}}, 6)
def test_a_view_of_arguments_is_the_same_when_only_the_items_it_can_show_are_redacted(
        arguments, limit):
    shown = clipping.clip(clipping.format_arguments(redact(arguments, limit)), limit)
    every = clipping.clip(clipping.format_arguments(_redact_every_item(arguments, limit)),
                          limit)
    assert shown == every


def test_a_view_redacts_only_the_items_it_can_show():
    """The dashboard's timeline redacted all 200,000 keys of a call's arguments for a
    column of 400 characters (a minute for twenty such calls)."""
    arguments = {"nested": {f"n{i:06}": i for i in range(200_000, 0, -1)},
                 **{f"k{i}--x-token-": i for i in range(200_000)}}
    shown = redact(arguments, 400)
    assert len(shown) == 400 and list(shown)[:2] == ["nested", "k0--x-token-"]
    assert list(shown["nested"])[:2] == ["n000001", "n000002"] and len(shown["nested"]) == 400


LONG_TOKEN = "ghp_" + "Z" * 3000
LONG_PRIVATE_KEY = ("-----BEGIN RSA PRIVATE KEY-----\n" + ("MIIEpQIBAAKCAQEAx" * 4 + "\n") * 60
                    + "-----END RSA PRIVATE KEY-----")


@pytest.mark.parametrize("text, shown", [
    ("agent:main:" + LONG_TOKEN, "…#" + hashlib.blake2b(LONG_TOKEN[-2020:].encode(),
                                                        digest_size=6).hexdigest()),
    ("x " * 1500 + "agent:main:" + LONG_TOKEN + " agent:main:after", "…agent:main:after"),
    ("key " + LONG_PRIVATE_KEY + " agent:main:after", "… agent:main:after"),
    ("key " + LONG_PRIVATE_KEY + " then " + LONG_PRIVATE_KEY[:60] + "\n-----END RSA PRIVATE KEY"
     "----- z", f"… then {REDACTED} z"),
])
def test_a_tail_shows_no_piece_of_a_secret_whose_start_it_cut_off(text, shown):
    # the last 2,020 characters start inside the secret, where no rule can see what it is
    tail = clipping.redacted_tail(text, 20)
    assert tail == shown
    assert "ZZZZ" not in tail and "MIIE" not in tail
    assert clipping.redacted_tail(text + "Y", 20) != tail     # still tells two keys apart


def test_a_tail_that_starts_at_a_word_shows_it_redacted():
    text = "y" * 5000 + " " + "w" * (20 + clipping.REDACT_SLACK)
    assert clipping.redacted_tail(text, 20) == "…" + "w" * (20 + clipping.REDACT_SLACK)
    assert clipping.redacted_tail("agent:main:telegram:dm:42", 20) == "agent:main:telegram:dm:42"
    key = "z" * 3000 + " " + "q" * 1900 + " sk-" + "a" * 40
    assert clipping.redacted_tail(key, 20) == "…" + "q" * 1900 + " " + redact_text("sk-" + "a" * 40)
