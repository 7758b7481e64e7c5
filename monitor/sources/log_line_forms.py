"""One line of the OpenClaw gateway log, in every form it is found in, into a notice.

The form is told per line:

* **tslog JSON** (the file log, ``logging.file``): ``"0"`` holds the subsystem bindings as
  a JSON string, the message is the last positional string (``"1"``, ``"2"``...) or
  ``message``, the level is ``_meta.logLevelName``.
* **the console** (what ``docker logs``, journald and pasted issues hold), written by
  ``createConsoleLineFormatter`` in OpenClaw's ``dist/subsystem-*.mjs``:
  ``<time> [<subsystem>] <message>``, where the gateway's time is
  ``2026-07-12T21:12:28.674+02:00`` (``compact`` style, not a TTY), ``21:12:28`` (``pretty``
  style, a TTY) or absent, and ``<subsystem>`` is the console form of the name (leading
  ``gateway/``, ``channels/``, ``providers/`` dropped, at most the last two segments; the
  names OpenClaw logs loop lines from, ``diagnostic``, ``agents/tools`` and
  ``agents/loop-detection``, read the same). The level is only a colour: chalk wraps the
  message in red (error, fatal), yellow (warn), grey (debug, trace) or cyan (info). ANSI
  sequences are removed (``strip_ansi``); the message colour, when there is one, gives the
  level. A console line with a time and no ``[subsystem]`` is console output OpenClaw
  captured (``console.log``): kept as text, from no subsystem. The ``json`` console style
  (``{"time", "level", "subsystem", "message", ...meta}``) is read as well.
* **journald**: ``journalctl -o json`` entries (``MESSAGE`` a string or, holding control
  characters or invalid UTF-8, a byte array; ``__REALTIME_TIMESTAMP`` µs; ``PRIORITY``;
  ``_SYSTEMD_UNIT``) and ``journalctl -o short-iso`` lines
  (``2026-07-12T21:12:28+0200 host openclaw[123]: <console line>``); the message inside is
  read as a console line.

Run, session and key ids sit inside the text as ``runId=… sessionId=… sessionKey=…``
(``unknown`` counts as absent); a line without them is joined to its run by its
``traceId`` (``gateway_log.TraceJoin``).

Whatever the form, only the pair (subsystem, message) reaches the loop-line gate
(``detect.gateway_notice.openclaw_loop_line``). A caution the JSON form does not need: a
console line is a line of text, so a message that OpenClaw logged with a newline inside
(an error quoting a tool's output) continues on lines of its own, which could take the
shape of a real line; JSON-escaped forms (the file log, the ``json`` console style) cannot
be split so. Prefer the file log where there is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from monitor import untrusted_json
from monitor.events import GatewayNotice
from monitor.sources.log_line_tslog import UNSET, decode_tslog
from monitor.sources.transcript import parse_timestamp

ID_FIELD_NAMES = frozenset({
    "runId", "sessionId", "sessionKey", "agentId", "tool", "toolCallId", "detector", "level",
    "action", "count", "pairedTool", "currentTool"})
#: OpenClaw writes ids as ``<label>: key=value key=value …`` at the start of a message;
#: only that leading run is read, up to the first word that is not ``key=value``, because
#: what follows (a tool's output, an error text) is anyone's to write.
LABEL_RE = re.compile(r"[A-Za-z][\w ./-]{0,80}: ")
_PAIR_VALUE = r'"[^"]*"|[^\s"]\S*'
PAIR_RE = re.compile(rf"(\w+)=({_PAIR_VALUE})(?:\s+|$)")
#: The whole run of ``PAIR_RE`` pairs at a position, matched at once.
PAIRS_RUN_RE = re.compile(rf"(?:\w+=(?:{_PAIR_VALUE})(?:\s+|$))+")
#: Subsystems whose messages put model-written text (a tool's name) before anything else,
#: so no id is read from their text: their lines are joined to a run through ``traceId``.
NO_TEXT_IDS = frozenset({"agents/tools", "agents/loop-detection"})
STRUCTURED_ID_KEYS = {"runId": "runId", "sessionId": "sessionId", "sessionKey": "sessionKey",
                      "agentId": "agentId"}

#: ANSI/ECMA-48 sequences: CSI (``ESC [`` … final byte, or the 8-bit ``\x9b``), OSC / DCS /
#: SOS / PM / APC strings up to their terminator, and two-byte escapes. Each alternative
#: stops at the next ESC, so a line of unterminated sequences is still scanned in linear time.
ANSI_RE = re.compile(
    r"(?:\x1b\[|\x9b)(?P<csi>[0-?]*)[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
#: chalk's foreground colours for the message, by level (``createConsoleLineFormatter``).
LEVEL_OF_COLOUR = {"31": "ERROR", "91": "ERROR", "33": "WARN", "93": "WARN",
                   "90": "DEBUG", "36": "INFO", "96": "INFO"}
_SUBSYSTEM = r"(?P<sub>[A-Za-z][\w./@:+-]{0,79})"
#: ``formatConsoleTimestamp``: ``long`` (``+HH:MM``, ``GMT`` as ``+00:00``) or ``pretty``.
_CONSOLE_TIME = (r"(?:(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(?:Z|[+-]\d{2}:\d{2}))"
                 r"|(?P<clock>\d{2}:\d{2}:\d{2}))")
CONSOLE_RE = re.compile(rf"^(?:{_CONSOLE_TIME} )?\[{_SUBSYSTEM}\] (?P<msg>.*)$", re.DOTALL)
#: Captured console output: a time, then text from no subsystem.
CONSOLE_TEXT_RE = re.compile(rf"^{_CONSOLE_TIME} (?P<msg>.*)$", re.DOTALL)
#: ``journalctl -o short-iso`` / ``short-iso-precise``.
SHORT_ISO_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})) "
    r"(?P<host>[^\s\[\]]{1,255}) (?P<ident>[^\s\[\]:]{1,255})(?:\[(?P<pid>\d{1,10})\])?: "
    r"(?P<msg>.*)$", re.DOTALL)
#: journalctl's own lines in its text output (``-- Boot … --``, ``-- No entries --``).
JOURNAL_MARKER_RE = re.compile(r"^-- .* --$")
JOURNAL_KEYS = ("__REALTIME_TIMESTAMP", "__CURSOR", "_SYSTEMD_UNIT", "PRIORITY",
                "SYSLOG_IDENTIFIER", "_PID")
LEVEL_OF_PRIORITY = {"0": "FATAL", "1": "FATAL", "2": "FATAL", "3": "ERROR", "4": "WARN",
                     "5": "INFO", "6": "INFO", "7": "DEBUG"}


#: A gateway writes a handful of distinct bindings (``{"subsystem":"gateway/ws"}``), one
#: on every line: each is decoded once (up to this many, each this short, kept).
BINDINGS_KEPT = 256
BINDINGS_KEPT_CHARS = 256
_SUBSYSTEM_OF_BINDINGS: dict[str, str | None] = {}


class MalformedLogLine(ValueError):
    pass


def _subsystem_of(bindings: Any) -> str | None:
    """The subsystem of a line's bindings (``"0"``), when they are a JSON object's text."""
    if not isinstance(bindings, str) or not bindings.startswith("{"):
        return None
    if bindings in _SUBSYSTEM_OF_BINDINGS:
        return _SUBSYSTEM_OF_BINDINGS[bindings]
    subsystem = None
    try:
        parsed = untrusted_json.loads(bindings)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("subsystem"), str):
        subsystem = parsed["subsystem"]
    if len(bindings) <= BINDINGS_KEPT_CHARS:
        if len(_SUBSYSTEM_OF_BINDINGS) >= BINDINGS_KEPT:
            _SUBSYSTEM_OF_BINDINGS.clear()
        _SUBSYSTEM_OF_BINDINGS[bindings] = subsystem
    return subsystem


def _message_of(arguments: Sequence, message_field: Any) -> tuple[str, dict | None]:
    """The last string of the positional ``arguments`` (``message_field`` when there is
    none), and the first object among them, the structured one, when one was logged."""
    structured = None
    message = None
    for value in arguments:
        if isinstance(value, str):
            message = value
        elif isinstance(value, dict) and structured is None:
            structured = value
    if message is None:
        message = message_field if isinstance(message_field, str) else ""
    return message, structured


def strip_ansi(text: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` without ANSI sequences, and the SGR parameters set on the way as
    ``(offset in the plain text, parameters)``."""
    if "\x1b" not in text and "\x9b" not in text:
        return text, []
    plain: list[str] = []
    colours: list[tuple[int, str]] = []
    length = 0
    last = 0
    for match in ANSI_RE.finditer(text):
        piece = text[last:match.start()]
        plain.append(piece)
        length += len(piece)
        if match["csi"] is not None and match.group().endswith("m"):
            colours.append((length, match["csi"]))
        last = match.end()
    plain.append(text[last:])
    return "".join(plain), colours


def _colour_level(colours: list[tuple[int, str]], at: int) -> str | None:
    """The level chalk's colour at plain offset ``at`` stands for, if any."""
    active = None
    for offset, params in colours:
        if offset > at:
            break
        active = params.split(";")[-1] if params else "0"
    return LEVEL_OF_COLOUR.get(active or "")


def leading_fields(message: str) -> dict[str, str]:
    """The id fields of the ``key=value`` run right after a message's ``<label>: `` (the
    first of each name)."""
    label = LABEL_RE.match(message)
    if label is None:
        return {}
    run = PAIRS_RUN_RE.match(message, label.end())
    if run is None:
        return {}
    fields: dict[str, str] = {}
    for name, value in PAIR_RE.findall(message, label.end(), run.end()):
        if name in ID_FIELD_NAMES and name not in fields:
            fields[name] = value.strip('"')
    return fields


def _known(value: str | None) -> str | None:
    return None if value in (None, "", "unknown") else value


def _notice(level: str, subsystem: str | None, message: str, ts: float | None, origin: str,
            *, structured: dict | None = None, record: dict | None = None,
            trace_id: str | None = None, extra: dict[str, str] | None = None) -> GatewayNotice:
    fields = {} if subsystem in NO_TEXT_IDS else leading_fields(message)
    if structured:
        for key, name in STRUCTURED_ID_KEYS.items():
            value = structured.get(key)
            if isinstance(value, str) and name not in fields:
                fields[name] = value
        if isinstance(structured.get("event"), str):
            fields.setdefault("event", structured["event"])
    if record is not None:
        top_session = record.get("session_id")
        if isinstance(top_session, str):
            fields.setdefault("sessionKey" if top_session.startswith("agent:") else "sessionId",
                              top_session)
        if isinstance(record.get("agent_id"), str):
            fields.setdefault("agentId", record["agent_id"])
    for name, value in (extra or {}).items():
        fields.setdefault(name, value)
    return GatewayNotice(
        level=level.upper(),
        subsystem=subsystem,
        message=message,
        ts=ts,
        trace_id=trace_id,
        run_id=_known(fields.get("runId")),
        session_id=_known(fields.get("sessionId")),
        session_key=_known(fields.get("sessionKey")),
        agent_id=_known(fields.get("agentId")),
        fields=fields,
        origin=origin,
    )


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedLogLine(f"invalid UTF-8 at byte {exc.start}") from None
    if "\x00" in text:
        raise MalformedLogLine("NUL byte in line")
    return text.removesuffix("\r")


def parse_log_line(data: bytes, origin: str = "") -> GatewayNotice:
    """Parse one log line of any form (see the module's doc); raises ``MalformedLogLine``
    with the reason."""
    text = _decode(data)
    if JOURNAL_MARKER_RE.match(text):
        return GatewayNotice(level="", subsystem=None, message=text, ts=None, origin=origin)
    if not text.startswith("{"):
        notice = parse_console_line(text, origin) or _parse_short_iso(text, origin)
        if notice is not None:
            return notice
    else:
        line = decode_tslog(text)
        if line is not None:
            meta = line.meta
            notice = _tslog_notice(line.positional(), line.message, meta.logLevelName, meta.date,
                                   line.time, line.traceId,
                                   {"session_id": line.session_id, "agent_id": line.agent_id},
                                   origin)
            if notice is not None:
                return notice
    try:
        record = untrusted_json.loads(text)
    except ValueError as exc:
        reason = f"invalid JSON: {exc}"
        if not text.startswith(("{", "[", '"')):
            reason += " (nor an OpenClaw console, journal or tslog line)"
        raise MalformedLogLine(reason) from None
    if not isinstance(record, dict):
        raise MalformedLogLine("line is not a JSON object")
    if "_meta" not in record and "MESSAGE" in record and any(k in record for k in JOURNAL_KEYS):
        return _parse_journal_entry(record, origin)
    if "_meta" not in record and "0" not in record and isinstance(record.get("message"), str) \
            and isinstance(record.get("level"), str):
        return _parse_json_console(record, origin)
    return _parse_tslog(record, origin)


def _parse_tslog(record: dict, origin: str) -> GatewayNotice:
    meta = record.get("_meta") if isinstance(record.get("_meta"), dict) else {}
    positional = []
    while (key := str(len(positional))) in record:
        positional.append(record[key])
    notice = _tslog_notice(positional, record.get("message", UNSET), meta.get("logLevelName"),
                           meta.get("date"), record.get("time"), record.get("traceId"), record,
                           origin)
    if notice is None:
        raise MalformedLogLine("not a tslog record (no message)")
    return notice


def _tslog_notice(positional: Sequence, message_field: Any, level: Any, date: Any, time: Any,
                  trace_id: Any, record: dict, origin: str) -> GatewayNotice | None:
    """The notice of a tslog line from what it holds (``positional``: the values of ``"0"``,
    ``"1"``... up to the first key it lacks; ``UNSET`` for a ``message`` it lacks), or None
    when it holds no message at all."""
    subsystem = _subsystem_of(positional[0] if positional else None)
    message, structured = _message_of(positional[1 if subsystem is not None else 0:],
                                      message_field)
    if not message and structured is None and not positional and message_field is UNSET:
        return None
    return _notice(level if isinstance(level, str) else "INFO", subsystem, message,
                   parse_timestamp(time) or parse_timestamp(date), origin,
                   structured=structured, record=record,
                   trace_id=trace_id if isinstance(trace_id, str) else None)


def _parse_json_console(record: dict, origin: str, ts: float | None = None) -> GatewayNotice:
    """The ``json`` console style: ``{...meta, time, level, subsystem?, message}`` (OpenClaw
    spreads the meta first, so it cannot stand in for these four)."""
    subsystem = record.get("subsystem") if isinstance(record.get("subsystem"), str) else None
    message, _ = strip_ansi(record["message"])
    return _notice(record["level"], subsystem or None, message,
                   parse_timestamp(record.get("time")) or ts, origin)


def parse_console_line(text: str, origin: str = "", *, ts: float | None = None,
                       level: str | None = None, captured: bool = False
                       ) -> GatewayNotice | None:
    """A console line (``[subsystem] message`` after an optional time), or None. ``ts`` and
    ``level`` are what the line's wrapper (a journal entry) says, used where the line says
    nothing. With ``captured``, any other text is kept as a line from no subsystem."""
    plain, colours = strip_ansi(text)
    match = CONSOLE_RE.match(plain)
    if match is None:
        match = CONSOLE_TEXT_RE.match(plain)
        if match is None and not captured:
            return None
        message = match["msg"] if match else plain
        start = match.start("msg") if match else 0
        subsystem = None
    else:
        message, start, subsystem = match["msg"], match.start("msg"), match["sub"]
    own_ts = parse_timestamp(match["ts"]) if match is not None and match["ts"] else None
    level = _colour_level(colours, start) or level or "INFO"
    return _notice(level, subsystem, message, own_ts or ts, origin)


def _parse_short_iso(text: str, origin: str) -> GatewayNotice | None:
    match = SHORT_ISO_RE.match(text)
    if match is None or CONSOLE_TEXT_RE.match(text):
        # ``…T21:12:28.674+02:00 x y[1]: …`` is the console's own time, not journalctl's
        return None
    return _inner_line(match["msg"], origin, parse_timestamp(match["ts"]), None)


def _inner_line(message: str, origin: str, ts: float | None, level: str | None
                ) -> GatewayNotice:
    """What a journal entry holds: a console line, a ``json`` console line, or other text
    the unit wrote (a line from no subsystem)."""
    if message.startswith("{"):
        try:
            record = untrusted_json.loads(message)
        except ValueError:
            record = None
        if isinstance(record, dict) and "_meta" not in record \
                and isinstance(record.get("message"), str) and isinstance(record.get("level"), str):
            return _parse_json_console(record, origin, ts)
    notice = parse_console_line(message, origin, ts=ts, level=level, captured=True)
    assert notice is not None
    return notice


def _journal_text(value) -> str:
    """A journal field as journalctl's JSON gives it: a string, a byte array (control
    characters or invalid UTF-8 inside), or a list of either (a field given twice)."""
    if isinstance(value, list) and value and not all(isinstance(v, int) for v in value):
        value = value[0]
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                       and 0 <= v <= 255 for v in value):
        return bytes(value).decode("utf-8", errors="replace")
    if value is None:
        raise MalformedLogLine("journal entry without its MESSAGE (journalctl leaves out "
                               "fields larger than its data threshold)")
    raise MalformedLogLine("journal MESSAGE is neither text nor bytes")


def _parse_journal_entry(record: dict, origin: str) -> GatewayNotice:
    message = _journal_text(record.get("MESSAGE"))
    if "\x00" in message:
        raise MalformedLogLine("NUL byte in the journal MESSAGE")
    ts = None
    realtime = record.get("__REALTIME_TIMESTAMP")
    if isinstance(realtime, str) and realtime.isdigit() and len(realtime) <= 20:
        ts = parse_timestamp(int(realtime) / 1_000_000)
    priority = record.get("PRIORITY")
    level = LEVEL_OF_PRIORITY.get(priority) if isinstance(priority, str) else None
    # journald gives stdout and stderr the same priority unless told otherwise: only a
    # warning or worse says anything about the line
    level = level if level in ("FATAL", "ERROR", "WARN") else None
    return _inner_line(message.removesuffix("\n"), origin, ts, level)


def console_continuation(data: bytes, origin: str = "") -> GatewayNotice | None:
    """A line of console output that has no form of its own (the rest of a message OpenClaw
    logged with newlines inside, a stack trace): text from no subsystem, with no ids, or
    None when it is not even text."""
    try:
        text = _decode(data)
    except MalformedLogLine:
        return None
    if text.startswith("{"):
        return None
    plain, _ = strip_ansi(text)
    return GatewayNotice(level="", subsystem=None, message=plain, ts=None, origin=origin)
