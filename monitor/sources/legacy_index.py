"""The legacy era's session index, ``agents/<id>/sessions/sessions.json``, as records.

The gateway rewrites ``sessions.json`` atomically, so it is read again whenever its inode,
size, mtime or type changes, and a session's record is given again only when its id,
status, update time or token total changed. Only a regular file is read: anything else
named ``sessions.json`` is reported and never opened.

``SessionIndexReader`` is a mixin of ``LegacySessionsSource``, sharing its state.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import msgspec

from monitor import untrusted_json
from monitor.events import SessionInfo
from monitor.sources.regular import NotRegularFile, open_regular_file, refusal
from monitor.sources.reread import recall
from monitor.sources.transcript import parse_timestamp, sane_count
from monitor.sources.transcript import text_or_none as _text

#: The largest ``sessions.json`` read. OpenClaw's holds a few kB per session (its skills
#: snapshot the most), so this is room for tens of thousands; past it the file is refused,
#: not read into memory whole.
MAX_INDEX_BYTES = 256 << 20


class IndexEntry(msgspec.Struct):
    """What the monitor reads of a ``sessions.json`` entry (an entry has some thirty fields;
    the others are skipped undecoded)."""

    sessionId: Any = None
    sessionFile: Any = msgspec.UNSET
    model: Any = None
    modelProvider: Any = None
    status: Any = None
    lastRunId: Any = None
    activeWriterRunId: Any = None
    abortedLastRun: Any = None
    label: Any = None
    displayName: Any = None
    updatedAt: Any = None
    inputTokens: Any = None
    outputTokens: Any = None
    totalTokens: Any = None


_ENTRY_FIELDS = IndexEntry.__struct_fields__
#: The types of a decoded value that ``untrusted_json`` may clip (msgspec gives exactly these).
_CONTAINER_TYPES = frozenset((list, dict))
_decode_top = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_entry = msgspec.json.Decoder(IndexEntry).decode


def index_entries(data: bytes) -> dict[str, IndexEntry] | str:
    """The object entries of a ``sessions.json`` (an entry that is not an object is left
    out), or the message of why it cannot be read. Each entry is decoded on its own into an
    ``IndexEntry``, so 10,000 sessions do not become 300,000 Python values at once; a file
    msgspec refuses is decoded whole as before (``untrusted_json``), so neither the values
    nor the messages differ."""
    entries = _entry_by_entry(data)
    if entries is not None:
        return entries
    try:
        whole = untrusted_json.loads(data)
    except ValueError as exc:
        return f"cannot read the session index: {exc}"
    if not isinstance(whole, dict):
        return "session index is not a JSON object"
    return {key: _from_dict(value) for key, value in whole.items() if isinstance(value, dict)}


def _entry_by_entry(data: bytes) -> dict[str, IndexEntry] | None:
    """``index_entries`` of a file whose every entry decodes on its own, else None."""
    try:
        raws = _decode_top(data)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    entries = {}
    for key, raw in raws.items():
        try:
            entry = decode_index_entry(raw)
        except ValueError:
            return None
        if entry is not None:
            entries[key] = entry
    return entries


def decode_index_entry(raw: msgspec.Raw | bytes | str) -> IndexEntry | None:
    """One index entry (a value of ``sessions.json``, a ``session_nodes.entry_json``) as
    ``untrusted_json`` reads it; None when it is no JSON object. Raises ValueError when it
    is no JSON at all."""
    try:
        entry = _decode_entry(raw)
        if _CONTAINER_TYPES.isdisjoint(map(type, msgspec.structs.astuple(entry))):
            return entry
    except (msgspec.MsgspecError, ValueError, RecursionError):
        pass
    # refused, or a container that ``untrusted_json`` clips where deep
    value = untrusted_json.loads(bytes(raw) if isinstance(raw, msgspec.Raw) else raw)
    return _from_dict(value) if isinstance(value, dict) else None


def _from_dict(entry: dict) -> IndexEntry:
    return IndexEntry(**{name: entry[name] for name in _ENTRY_FIELDS if name in entry})


class SessionIndexReader:
    """Reads ``sessions.json`` into ``_index`` and gives its changed records."""

    @property
    def index_path(self) -> str:
        return os.path.join(self.path, "sessions.json")

    # ------------------------------------------------------------------- index

    def read_index(self) -> list:
        """The index's session records (and errors) not given yet, without reading any
        transcript."""
        out: list = []
        self._read_index(out)
        return out

    def _read_index(self, out: list) -> None:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            return
        except OSError as exc:
            st = None
            identity: tuple = ("error", str(exc))
        else:
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
        if identity == self._index_identity:
            return
        self._index_identity = identity
        if st is not None and not stat.S_ISREG(st.st_mode):
            out.append(self.error("sessions.json", "cannot read the session index: "
                                  + refusal(self.index_path, st.st_mode), path=self.index_path,
                                  shared=True))
            return
        try:
            entries = recall(("sessions.json", os.path.abspath(self.index_path), identity),
                             self._read_entries)
        except NotRegularFile as exc:
            entries = f"cannot read the session index: {exc.strerror}"
        except OSError as exc:
            entries = f"cannot read the session index: {exc}"
        if isinstance(entries, str):
            out.append(self.error("sessions.json", entries, path=self.index_path, shared=True))
            return
        # Kept: what the listing reads later.
        self._index = {k: {} if v.sessionFile is msgspec.UNSET else {"sessionFile": v.sessionFile}
                       for k, v in entries.items()}
        origin = self.index_path + "#"
        for key, entry in entries.items():
            if not self.wants_session(entry.sessionId):
                continue
            record = self._session_info(key, entry, origin)
            if record is None:
                continue
            version = (record.session_id, record.status, record.updated_at, record.total_tokens)
            if self._announced.get(key) != version:
                self._announced[key] = version
                out.append(record)

    def _read_entries(self) -> dict[str, IndexEntry] | str:
        with open_regular_file(self.index_path) as handle:
            too_large = os.fstat(handle.fileno()).st_size > MAX_INDEX_BYTES
            data = b"" if too_large else handle.read(MAX_INDEX_BYTES + 1)
        if too_large or len(data) > MAX_INDEX_BYTES:
            return (f"cannot read the session index: larger than {MAX_INDEX_BYTES >> 20} MiB "
                    "(the transcripts beside it are still read)")
        return index_entries(data)

    def _session_info(self, key: str, entry: IndexEntry, origin: str) -> SessionInfo | None:
        """The record of ``entry``; ``origin``: the index's path and ``#``."""
        sid = entry.sessionId
        if not isinstance(sid, str):
            return None
        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id, model=_text(entry.model),
            provider=_text(entry.modelProvider), status=_text(entry.status),
            run_id=_text(entry.lastRunId), active_run_id=_text(entry.activeWriterRunId),
            aborted_last_run=entry.abortedLastRun is True,
            label=_text(entry.label) or _text(entry.displayName),
            updated_at=parse_timestamp(entry.updatedAt),
            input_tokens=sane_count(entry.inputTokens),
            output_tokens=sane_count(entry.outputTokens),
            total_tokens=sane_count(entry.totalTokens), origin=origin + key,
        )
