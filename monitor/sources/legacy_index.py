"""The legacy era's session index, ``agents/<id>/sessions/sessions.json``, as records.

The gateway rewrites ``sessions.json`` atomically, so it is read again whenever its inode,
size, mtime or type changes, and a session's record is given again only when its id,
status, update time or token total changed. Only a regular file is read: anything else
named ``sessions.json`` is reported and never opened.

A large index is read in steps: a live source decodes at most ``INDEX_DECODE_STEP_ENTRIES``
of its entries a poll and then looks at ``index_step_entries`` a poll (``behind`` says there is
more), so decoding, folding and writing 700,000 sessions never holds a stop for seconds.

``SessionIndexReader`` is a mixin of ``LegacySessionsSource``, sharing its state.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from itertools import islice
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
#: Index entries one poll looks at most. Folding and writing a session's record takes some
#: 20 µs, so a step of them stays well within the 2 s a stop may take (700,000 sessions at
#: once took 20 s), and an index of up to this many sessions is still shown whole at once.
INDEX_STEP_ENTRIES = 20_000
#: ... and once the source is ``stopping``: it then reads what a restart could not find, and
#: leaves the rest of the index to the restart, which reads it again.
INDEX_STOPPING_STEP_ENTRIES = 2_000
#: Index entries one poll decodes at most (some 1.5 µs each): a step of about 0.15 s.
INDEX_DECODE_STEP_ENTRIES = 100_000


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
    result = IndexDecoding(data).advance(None)
    assert result is not None
    return result


def _decoded_whole(data: bytes) -> dict[str, IndexEntry] | str:
    """``index_entries`` of a file that msgspec refuses, as ``untrusted_json`` reads it."""
    try:
        whole = untrusted_json.loads(data)
    except ValueError as exc:
        return f"cannot read the session index: {exc}"
    if not isinstance(whole, dict):
        return "session index is not a JSON object"
    return {key: _from_dict(value) for key, value in whole.items() if isinstance(value, dict)}


class IndexDecoding:
    """``index_entries`` of ``data`` a step at a time: a live source decodes at most
    ``INDEX_DECODE_STEP_ENTRIES`` entries a poll, so 700,000 of them (a second or more) do
    not hold a stop signal."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data
        self._entries: dict[str, IndexEntry] = {}
        self._raws: Iterator[tuple[str, msgspec.Raw]] = iter(())
        self._left = 0
        #: ``index_entries(data)`` once every entry was decoded; None until then.
        self.result: dict[str, IndexEntry] | str | None = None
        try:
            raws = _decode_top(data)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            self._finish(_decoded_whole(data))
        else:
            self._raws = iter(raws.items())
            self._left = len(raws)
            if not raws:
                self._finish(self._entries)

    def advance(self, limit: int | None) -> dict[str, IndexEntry] | str | None:
        """Decode at most ``limit`` more entries (None: all); ``result`` (None: more left)."""
        if self.result is not None:
            return self.result
        raws = self._raws if limit is None else islice(self._raws, limit)
        entries = self._entries
        for key, raw in raws:
            self._left -= 1
            try:
                entry = decode_index_entry(raw)
            except ValueError:
                assert self._data is not None
                self._finish(_decoded_whole(self._data))
                return self.result
            if entry is not None:
                entries[key] = entry
        if not self._left:
            self._finish(entries)
        return self.result

    def _finish(self, result: dict[str, IndexEntry] | str) -> None:
        self.result = result
        self._data = None
        self._raws = iter(())


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
        transcript: all of them, however many."""
        out: list = []
        self._read_index(out, limit=None)
        return out

    @property
    def index_behind(self) -> bool:
        """The index read last is still being decoded, or entries of it are still to be
        looked at (``_read_index``)."""
        return self._index_decoding is not None or self._index_unseen is not None

    @property
    def index_step_entries(self) -> int:
        """The index entries one poll looks at most."""
        return INDEX_STOPPING_STEP_ENTRIES if self.stopping else INDEX_STEP_ENTRIES

    def _read_index(self, out: list, limit: int | None) -> int:
        """Read the index again if it changed, then give the records of at most ``limit``
        of its entries not looked at yet (None: all); the number looked at. With a
        ``limit``, at most ``INDEX_DECODE_STEP_ENTRIES`` entries are decoded a call."""
        self._reread_index(out, None if limit is None else INDEX_DECODE_STEP_ENTRIES)
        return self._give_index_records(out, limit)

    def _reread_index(self, out: list, decode_limit: int | None) -> None:
        """When the index changed, decode it (at most ``decode_limit`` entries a call, None:
        all at once); once decoded, keep what the listing reads of it and look at its
        entries anew (``_index_unseen``)."""
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            return
        except OSError as exc:
            st = None
            identity: tuple = ("error", str(exc))
        else:
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
        decoding = self._index_decoding
        if decoding is None or decoding[0] != identity:
            if identity == self._index_identity:
                self._index_decoding = None
                return
            if st is not None and not stat.S_ISREG(st.st_mode):
                self._index_decoded(identity, "cannot read the session index: "
                                    + refusal(self.index_path, st.st_mode), out)
                return
            try:
                decoding = (identity, recall(
                    ("sessions.json", os.path.abspath(self.index_path), identity),
                    self._read_entries if decode_limit is None else self._start_decoding))
            except NotRegularFile as exc:
                self._index_decoded(identity, f"cannot read the session index: "
                                              f"{exc.strerror}", out)
                return
            except OSError as exc:
                self._index_decoded(identity, f"cannot read the session index: {exc}", out)
                return
            self._index_decoding = decoding
        entries = decoding[1]
        if isinstance(entries, IndexDecoding):
            entries = entries.advance(decode_limit)
            if entries is None:
                return
        self._index_decoded(identity, entries, out)

    def _index_decoded(self, identity: tuple, entries: dict[str, IndexEntry] | str,
                       out: list) -> None:
        """The index of ``identity`` was read: its ``entries``, or why it cannot be."""
        self._index_identity = identity
        self._index_decoding = None
        self._index_unseen = None
        if isinstance(entries, str):
            out.append(self.error("sessions.json", entries, path=self.index_path, shared=True))
            return
        # Kept: what the listing reads later.
        self._index = {k: {} if v.sessionFile is msgspec.UNSET else {"sessionFile": v.sessionFile}
                       for k, v in entries.items()}
        self._index_unseen = iter(entries.items()) if entries else None

    def _give_index_records(self, out: list, limit: int | None) -> int:
        """The records of the next ``limit`` entries (None: all) not looked at yet, of those
        whose id, status, update time or token total changed since given."""
        unseen: Iterator[tuple[str, IndexEntry]] | None = self._index_unseen
        if unseen is None or limit == 0:
            return 0
        origin = self.index_path + "#"
        seen = 0
        for key, entry in unseen if limit is None else islice(unseen, limit):
            seen += 1
            if not self.wants_session(entry.sessionId):
                continue
            record = self._session_info(key, entry, origin)
            if record is None:
                continue
            version = (record.session_id, record.status, record.updated_at, record.total_tokens)
            if self._announced.get(key) != version:
                self._announced[key] = version
                out.append(record)
        if limit is None or seen < limit:
            self._index_unseen = None
        return seen

    def _read_entries(self) -> dict[str, IndexEntry] | str:
        data = self._read_index_file()
        return data if isinstance(data, str) else index_entries(data)

    def _start_decoding(self) -> IndexDecoding | str:
        data = self._read_index_file()
        return data if isinstance(data, str) else IndexDecoding(data)

    def _read_index_file(self) -> bytes | str:
        """The index's bytes, or why they are not read."""
        with open_regular_file(self.index_path) as handle:
            too_large = os.fstat(handle.fileno()).st_size > MAX_INDEX_BYTES
            data = b"" if too_large else handle.read(MAX_INDEX_BYTES + 1)
        if too_large or len(data) > MAX_INDEX_BYTES:
            return (f"cannot read the session index: larger than {MAX_INDEX_BYTES >> 20} MiB "
                    "(the transcripts beside it are still read)")
        return data

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
