"""The replay cache: what ``replay`` made of each session, read again only when it changed.

One file per replay input (state dir, paths, flags) under ``$XDG_CACHE_HOME/clawwatch/replay``
(``~/.cache/clawwatch/replay``). Per session it keeps a fingerprint — the identity and size of
every transcript file it was read from (or its rows' count, highest seq and rowid and stored
bytes), its index records, the detector config, clawwatch's own code and which secrets it
knows (``replay_cache_secrets``: a long name is redacted with them) — and what the read
gave: the session's state, its runs, and what its sources counted of it (events, errors and
their samples). A later replay reads only the sessions whose fingerprint differs. A second
file keeps the last whole document, under a key of everything it depends on (every session's
fingerprint, the index, and the identity of each gateway log file): a replay of an unchanged
dir reads the index, stats its files and reads that file, and no transcript and no log.

Each file is JSON sealed with a digest of its payload and written whole (``replay_cache_files``), so
concurrent replays each leave a whole file (the last one wins). A file that cannot be read,
whose digest does not match (damaged anywhere), that cannot be parsed or checked, or an
entry of the wrong shape, is a miss: the session is read again, never answered wrongly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from monitor.detect.findings import Finding
from monitor.replay_cache_files import json_object, read_sealed, write_sealed
from monitor.replay_cache_secrets import secrets_digest
from monitor.session_state import SessionState
from monitor.sources.transcript import MAX_EPOCH_SECONDS

#: The files' format, named in their header: a file of another format is a miss.
CACHE_FORMAT = 2
#: A cache file larger than this is not read (a miss): it was not written by us.
MAX_CACHE_BYTES = 1 << 30
_PACKAGE = Path(__file__).resolve().parent


@dataclasses.dataclass
class UnitRecord:
    """What one session's read gave: its state, runs and per-source counts
    (``source_id -> [events, errors, samples]``)."""

    state: SessionState
    runs: list[tuple[str, str]]
    counts: dict[str, list]


def cache_dir(env: dict[str, str] | os._Environ = os.environ) -> Path:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clawwatch" / "replay"


def code_digest() -> str:
    """Of clawwatch's own modules: another version may read sessions differently."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def config_digest(config) -> str:
    sections = {f.name: repr(getattr(config, f.name)) for f in dataclasses.fields(config)
                if f.name not in ("source", "warnings") and not f.name.startswith("_")}
    return hashlib.sha256(json.dumps(sections, sort_keys=True).encode()).hexdigest()


def stamp(directory: Path, config) -> tuple[str, str, str] | None:
    """What every key of the cache holds: clawwatch's code, the config and the secrets
    known now (``replay_cache_secrets``); None when the cache in ``directory`` cannot key
    on the secrets, and is not to be used."""
    secrets = secrets_digest(directory)
    if secrets is None:
        return None
    return code_digest(), config_digest(config), secrets


def input_path(directory: Path, identity: Any) -> Path:
    """The cache file of one replay input (``identity``: anything JSON names it by)."""
    name = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    return directory / f"{name.hexdigest()[:32]}.json"


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def document_path(path: Path) -> Path:
    """Where the whole document of the replay input cached at ``path`` is kept."""
    return path.with_name(path.stem + ".document.json")


def load(path: Path) -> dict[str, tuple[str, UnitRecord]]:
    """``session_id -> (fingerprint, record)`` from ``path``; {} when it is missing or bad,
    and an entry of the wrong shape is left out."""
    stored = _read(path)
    entries = stored.get("units") if stored is not None else None
    if not isinstance(entries, dict):
        return {}
    kept: dict[str, tuple[str, UnitRecord]] = {}
    for sid, entry in entries.items():
        try:
            kept[sid] = (str(entry["fingerprint"]), _record_from_json(entry))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return kept


def document(path: Path, key: str) -> dict | None:
    """The whole replay document kept beside ``path`` for ``key``; None when none is, or
    another's, or one not of the document's shape."""
    stored = _read(document_path(path))
    if stored is None or stored.get("key") != key:
        return None
    value = stored.get("value")
    if not isinstance(value, dict) or value.keys() != {"sources", "sessions"}:
        return None
    sources, sessions = value["sources"], value["sessions"]
    if not (isinstance(sources, list) and isinstance(sessions, list)
            and all(_is_session(s) for s in sessions)
            and all(_is_summary(s) for s in sources)):
        return None
    return value


def _is_session(session: Any) -> bool:
    """A session of the document's shape: the fields ``SessionState.as_json`` gives, those
    the replay table prints of the types it prints, and findings of ``Finding``'s fields."""
    if not isinstance(session, dict) or session.keys() - {"known_from"} != _SESSION_KEYS:
        return False
    tokens, findings, status = session["tokens"], session["findings"], session["status"]
    return type(session["key"]) is str and (status is None or type(status) is str) \
        and type(session["tool_calls"]) is int \
        and isinstance(tokens, dict) and tokens.keys() == {"input", "output", "total"} \
        and all(type(count) is int for count in tokens.values()) \
        and isinstance(findings, list) and all(
            isinstance(f, dict) and f.keys() == _FINDING_KEYS and type(f["level"]) is str
            for f in findings)


def _is_summary(source: Any) -> bool:
    return isinstance(source, dict) and all(type(source.get(k)) is str for k in ("kind", "path")) \
        and all(type(source.get(k)) is int for k in ("events", "errors"))


def _read(path: Path) -> dict | None:
    """A cache file's payload, parsed; None when ``read_sealed`` gives none (missing, not
    a regular file, too large, of another format, damaged) or it is not a JSON object."""
    payload = read_sealed(path, CACHE_FORMAT, MAX_CACHE_BYTES)
    return None if payload is None else json_object(payload)


def units_json(units: dict[str, tuple[str, UnitRecord]]) -> str:
    """``units`` encoded as ``save`` writes them, one session at a time (the text is far
    smaller than the objects it is made of): taken before the log is read, which adds its
    findings to the same sessions."""
    return "{" + ",".join(
        _compact({sid: {"fingerprint": print_, **_record_to_json(record)}})[1:-1]
        for sid, (print_, record) in units.items()) + "}"


def save(path: Path, units: str) -> None:
    """Write ``units`` (``units_json``) to ``path``."""
    write_sealed(path, CACHE_FORMAT, [b'{"units":', units.encode(), b"}"])


def save_document(path: Path, key: str, value: dict) -> None:
    """Keep ``value``, the whole document, beside ``path`` under ``key``."""
    try:
        encoded = _compact({"key": key, "value": value})
    except (ValueError, TypeError):
        return
    write_sealed(document_path(path), CACHE_FORMAT, [encoded.encode()])


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# ------------------------------------------------------------------- encoding

def _record_to_json(record: UnitRecord) -> dict:
    state = {}
    for f in dataclasses.fields(SessionState):
        value = getattr(record.state, f.name)
        if f.name == "findings":
            value = [dataclasses.asdict(finding) for finding in value]
        elif f.name == "tools":
            value = dict(value)
        state[f.name] = value
    return {"state": state, "runs": record.runs, "counts": record.counts}


def _record_from_json(entry: dict) -> UnitRecord:
    raw = entry["state"]
    if raw.keys() != _STATE_FIELDS.keys():
        raise ValueError("fields differ")
    values = {name: check(raw[name]) for name, check in _STATE_FIELDS.items() if check}
    values["tools"] = Counter({_text(k): _count(v) for k, v in raw["tools"].items()})
    values["findings"] = [_finding(finding) for finding in raw["findings"]]
    if raw["index_tokens"] is not None:
        values["index_tokens"] = tuple(_count(v) for v in raw["index_tokens"])
        if len(values["index_tokens"]) != 3:
            raise ValueError("index_tokens")
    else:
        values["index_tokens"] = None
    state = SessionState(**values)
    runs = [(_text(run), _text(sid)) for run, sid in entry["runs"]]
    counts = {_text(source): [_count(events), _count(errors), [
        {"path": _text(s["path"]), "where": _text(s["where"]), "message": _text(s["message"])}
        for s in samples]] for source, (events, errors, samples) in entry["counts"].items()}
    return UnitRecord(state, runs, counts)


def _finding(raw: dict) -> Finding:
    if raw.keys() != _FINDING_FIELDS.keys():
        raise ValueError("fields differ")
    return Finding(**{name: check(raw[name]) for name, check in _FINDING_FIELDS.items()})


def _checker(annotation: Any):
    """What checks a value of a field annotated ``annotation``: it returns the value when
    it has that type, else raises ValueError: ``int`` a count, ``float`` a number a time
    can be (costs too), ``str``, ``bool``; maybe None."""
    annotation = str(annotation)
    kind = annotation.removesuffix(" | None")
    check = {"int": _count, "float": _time_or_cost, "bool": _flag, "str": _text,
             "Level": _text}.get(kind, partial(_unknown, annotation))
    if kind == annotation:
        return check
    return lambda value: None if value is None else check(value)


def _fields(cls, special: tuple[str, ...] = ()) -> dict:
    """``name -> checker`` of a dataclass's fields (None for the ``special`` ones)."""
    return {f.name: None if f.name in special else _checker(f.type)
            for f in dataclasses.fields(cls)}


def _time_or_cost(value: Any) -> float:
    if type(value) not in (int, float) or not 0 <= value <= MAX_EPOCH_SECONDS:
        raise ValueError("not a time or cost")  # NaN fails too
    return float(value)


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise ValueError("not a bool")
    return value


def _unknown(annotation: str, value: Any) -> Any:
    raise ValueError(f"not a {annotation}")


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("not text")
    return value


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError("not a count")
    return value


_STATE_FIELDS = _fields(SessionState, ("tools", "findings", "index_tokens"))
_FINDING_FIELDS = _fields(Finding)
#: The fields of a document's session (``known_from`` only when it is known) and finding.
_SESSION_KEYS = frozenset(SessionState("").as_json())
_FINDING_KEYS = frozenset(Finding("", "", "", "warning", 0, None, 0, "").as_json())
