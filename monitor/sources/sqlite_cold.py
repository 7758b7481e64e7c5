"""OpenClaw's transcript cold storage, read the way OpenClaw reads it back, never written.

OpenClaw (``session-cold-storage-worker``) moves an idle session's ``transcript_events``
rows out of the agent database: it writes them, one JSON record a line, as
``{"kind":"header","version":1,"sessionId","generation"}`` then
``{"kind":"event","row":{"seq","event_json","created_at"}}`` per row (and ``identity``,
``active``, ``index``, ``fts`` records of the other tables), compresses the lines with zstd,
names the result ``<sha256 of the compressed bytes>.jsonl.zst``, records it in
``session_transcript_cold_archives`` and deletes the rows. The archive is a file in
``<session artifact dir>/cold/`` (``storage = 'file'``) or the row's ``archive_blob``
(``storage = 'sqlite'``).

Every archive is checked as ``readVerifiedSessionColdArchive`` and
``decodeSessionColdRecords`` check it before a restore: its name is ``<sha256>.jsonl.zst``,
its size is ``archive_bytes`` and its SHA-256 ``archive_sha256`` (and the name's), it
decompresses to at most ``MAX_COLD_ARCHIVE_BYTES``, its first record is the one header, of
this session and generation, and the event count, last seq and ``raw_bytes`` match the
row. A file is opened without following a symlink and without blocking (a FIFO is refused);
a frame that declares more than the limit is refused before it is decompressed, and
decompression stops at the limit whatever the frame says. An archive that fails any check
is one error naming it, reported once per version, and nothing of it is read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass

import zstandard

from monitor import untrusted_json
from monitor.sources.regular import OPEN_FLAGS, file_kind
from monitor.sources.sqlite_guard import values_up_to
from monitor.sources.sqlite_ro import BadRow, check_row

COLD_TABLE = "session_transcript_cold_archives"
#: ``MAX_COLD_ARCHIVE_BYTES`` of ``session-cold-storage-worker``: decoded archive bytes.
MAX_COLD_ARCHIVE_BYTES = 64 * 1024 * 1024
ARCHIVE_NAME = re.compile(r"[a-f0-9]{64}\.jsonl\.zst")
#: Compressed bytes handed to the decompressor at once: zstd blocks decode to at most
#: 128 KiB each, so one step never decodes far past the limit.
INFLATE_STEP = 1024
#: Largest zstd window accepted (zstd's default limit, Node's too): 128 MiB.
MAX_WINDOW_BYTES = 1 << 27
RECORD_KINDS = frozenset({"header", "event", "identity", "active", "index", "fts"})
MAX_SAFE = 2**53 - 1
COLUMNS = ("session_id", "generation", "archive_name", "archive_sha256", "event_count",
           "raw_bytes", "archive_bytes", "last_seq", "storage")
SPEC = (("session_id", "text"), ("generation", "text"), ("archive_name", "text"),
        ("archive_sha256", "text"), ("event_count", "int"), ("raw_bytes", "int"),
        ("archive_bytes", "int"), ("last_seq", "int"), ("storage", "text"))
#: ``{rowid}``: ``rowid``, or ``NULL`` for a table declared ``WITHOUT ROWID``.
LIST_SQL = (f"SELECT {{rowid}}, {', '.join(COLUMNS)}, length(archive_blob), "
            f"typeof(archive_blob) FROM {COLD_TABLE}")


class ColdArchiveError(Exception):
    """An archive that does not pass OpenClaw's checks; the message says which."""


@dataclass(frozen=True)
class ColdArchive:
    session_id: str
    generation: str
    name: str
    sha256: str
    event_count: int
    raw_bytes: int
    archive_bytes: int
    last_seq: int
    storage: str
    blob_bytes: int | None
    #: (inode, size, mtime) of the file of a ``file`` archive, None when it cannot be seen.
    file_version: tuple | None = None

    @property
    def where(self) -> str:
        name = self.name if ARCHIVE_NAME.fullmatch(self.name) else repr(self.name[:80])
        return f"cold/{name}"

    def version(self) -> tuple:
        return (self.generation, self.name, self.sha256, self.event_count, self.raw_bytes,
                self.archive_bytes, self.last_seq, self.storage, self.blob_bytes,
                self.file_version)


def cold_directory(db_path: str) -> str:
    """``resolveSessionArtifactDirectory(storePath)/cold``: ``agents/<id>/sessions/cold``
    for ``agents/<id>/agent/openclaw-agent.sqlite``, else the database's own dir's."""
    store_dir = os.path.dirname(os.path.abspath(db_path))
    if os.path.basename(store_dir) == "agent":
        store_dir = os.path.join(os.path.dirname(store_dir), "sessions")
    return os.path.join(store_dir, "cold")


def has_cold_table(columns: dict[str, set[str]]) -> bool:
    return {*COLUMNS, "archive_blob"} <= columns.get(COLD_TABLE, set())


def list_archives(conn, directory: str, bad_row, rowid: str = "rowid"
                  ) -> dict[str, ColdArchive]:
    """Every row of the cold table (no blob is read), by session id. ``bad_row(rowid, raw,
    message)`` is told of a row whose values are not of their kinds (a table without a
    rowid names it by its session id's type and value). ``rowid``: ``rowid`` or ``NULL``."""
    found: dict[str, ColdArchive] = {}
    for raw in conn.execute(LIST_SQL.format(rowid=rowid)):
        try:
            row = check_row(raw[1:len(COLUMNS) + 1], SPEC)
        except BadRow as exc:
            named = raw[0] if raw[0] is not None else (type(raw[1]).__name__, raw[1])
            bad_row(named, raw, str(exc))
            continue
        blob_bytes = raw[-2] if raw[-1] == "blob" else None
        archive = ColdArchive(*row, blob_bytes=blob_bytes)
        if archive.storage == "file" and ARCHIVE_NAME.fullmatch(archive.name):
            archive = ColdArchive(*row, blob_bytes=blob_bytes,
                                  file_version=_file_version(directory, archive.name))
        found[archive.session_id] = archive
    return found


def _file_version(directory: str, name: str) -> tuple | None:
    try:
        st = os.lstat(os.path.join(directory, name))
    except OSError:
        return None
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)


def read_events(conn, directory: str, archive: ColdArchive) -> list[tuple[int, str]]:
    """The ``(seq, event_json)`` of ``archive``, in seq order, once it passes every check;
    raises ``ColdArchiveError``."""
    if not ARCHIVE_NAME.fullmatch(archive.name):
        raise ColdArchiveError("invalid archive name (not <sha256>.jsonl.zst)")
    if archive.archive_bytes > MAX_COLD_ARCHIVE_BYTES:
        raise ColdArchiveError(f"archive_bytes {archive.archive_bytes} is over the "
                               f"{MAX_COLD_ARCHIVE_BYTES} limit")
    if archive.storage == "sqlite":
        data = _read_blob(conn, archive)
    elif archive.storage == "file":
        data = _read_file(directory, archive.name, archive.archive_bytes)
    else:
        raise ColdArchiveError(f"unknown storage {archive.storage[:40]!r}")
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != archive.archive_bytes or digest != archive.sha256 \
            or archive.name != f"{digest}.jsonl.zst":
        raise ColdArchiveError(f"failed verification: {len(data)} bytes with SHA-256 "
                               f"{digest}, the row says {archive.archive_bytes} bytes, "
                               f"{archive.sha256[:64]!r}")
    return _decode(_inflate(data), archive)


def _read_blob(conn, archive: ColdArchive) -> bytes:
    if archive.blob_bytes is None:
        raise ColdArchiveError("storage is sqlite but archive_blob is not a blob")
    if archive.blob_bytes != archive.archive_bytes:
        raise ColdArchiveError(f"archive_blob holds {archive.blob_bytes} bytes, the row says "
                               f"{archive.archive_bytes}")
    with values_up_to(conn, MAX_COLD_ARCHIVE_BYTES):
        row = conn.execute(f"SELECT archive_blob FROM {COLD_TABLE} WHERE session_id = ?",
                           (archive.session_id,)).fetchone()
    if row is None or not isinstance(row[0], bytes):
        raise ColdArchiveError("archive_blob changed while it was read")
    return row[0]


def _read_file(directory: str, name: str, expected: int) -> bytes:
    """The archive file, at most ``expected`` + 1 bytes: never through a symlink (the file or
    the ``cold`` dir), never a FIFO or a device."""
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise ColdArchiveError(f"missing or unreadable: {directory}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ColdArchiveError(f"{directory} is {file_kind(st.st_mode)}, not a directory "
                               "(symlinks are not followed)")
    path = os.path.join(directory, name)
    try:
        fd = os.open(path, os.O_RDONLY | OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ColdArchiveError(f"{path} is a symlink; not followed") from None
        raise ColdArchiveError(f"missing or unreadable: {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ColdArchiveError(f"{path} is {file_kind(st.st_mode)}, not a regular file")
        if st.st_size != expected:
            raise ColdArchiveError(f"{path} holds {st.st_size} bytes, the row says {expected}")
        chunks, left = [], expected + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise ColdArchiveError(f"unreadable: {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _inflate(data: bytes) -> bytes:
    """Every zstd frame of ``data`` decompressed, at most ``MAX_COLD_ARCHIVE_BYTES`` (Node's
    ``zstdDecompressSync(bytes, {maxOutputLength})``); a truncated frame is an error."""
    pieces: list[bytes] = []
    total = pos = 0
    view = memoryview(data)
    decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW_BYTES)
    while True:
        try:
            declared = zstandard.frame_content_size(bytes(view[pos:pos + 18]))
        except zstandard.ZstdError as exc:
            raise ColdArchiveError(f"not zstd at byte {pos}: {exc}") from None
        if declared > MAX_COLD_ARCHIVE_BYTES - total:
            raise ColdArchiveError(f"the zstd frame declares {declared} bytes, over the "
                                   f"{MAX_COLD_ARCHIVE_BYTES} limit")
        frame = decompressor.decompressobj()
        start = pos
        try:
            while not frame.eof and pos < len(data):
                piece = frame.decompress(bytes(view[pos:pos + INFLATE_STEP]))
                pos = min(pos + INFLATE_STEP, len(data))
                total += len(piece)
                if total > MAX_COLD_ARCHIVE_BYTES:
                    raise ColdArchiveError(f"decompresses past the {MAX_COLD_ARCHIVE_BYTES} "
                                           "byte limit")
                pieces.append(piece)
        except zstandard.ZstdError as exc:
            raise ColdArchiveError(f"cannot decompress: {exc}") from None
        if not frame.eof:
            raise ColdArchiveError(f"truncated zstd frame (from byte {start})")
        pos -= len(frame.unused_data)
        if pos <= start:
            raise ColdArchiveError("empty zstd frame")
        if pos >= len(data):
            break
    return b"".join(pieces)


def _js_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_SAFE


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _decode(data: bytes, archive: ColdArchive) -> list[tuple[int, str]]:
    """``decodeSessionColdRecords``: the records, checked against the row."""
    text = data.decode("utf-8", "replace").rstrip()
    events: list[tuple[int, str]] = []
    raw_bytes = 0
    for number, line in enumerate(text.split("\n"), 1):
        try:
            record = untrusted_json.loads(line)
        except ValueError as exc:
            raise ColdArchiveError(f"line {number}: invalid JSON: {exc}") from None
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind not in RECORD_KINDS:
            raise ColdArchiveError(f"line {number}: not a cold archive record")
        if number == 1:
            if kind != "header" or record.get("version") != 1 \
                    or not _js_int(record.get("version")):
                raise ColdArchiveError("the first record is not a version 1 header")
            if record.get("sessionId") != archive.session_id:
                raise ColdArchiveError(f"the header names session "
                                       f"{str(record.get('sessionId'))[:80]!r}, not "
                                       f"{archive.session_id[:80]!r}")
            if record.get("generation") != archive.generation:
                raise ColdArchiveError("the header's generation is not the row's")
            continue
        row = record.get("row")
        if kind == "header" or not isinstance(row, dict):
            raise ColdArchiveError(f"line {number}: a second header or a record without row")
        if kind != "event":
            continue
        seq, event_json = row.get("seq"), row.get("event_json")
        if not (_js_int(seq) and isinstance(event_json, str) and _js_int(row.get("created_at"))):
            raise ColdArchiveError(f"line {number}: event record without integer seq, "
                                   "text event_json and integer created_at")
        if events and seq <= events[-1][0]:
            raise ColdArchiveError(f"line {number}: seq {seq} is not after {events[-1][0]}")
        events.append((seq, event_json))
        raw_bytes += _utf8_length(event_json)
    if len(events) != archive.event_count or not events or events[-1][0] != archive.last_seq \
            or raw_bytes + len(events) - 1 != archive.raw_bytes:
        raise ColdArchiveError(f"metadata does not match its contents ({len(events)} events, "
                               f"last seq {events[-1][0] if events else None}; the row says "
                               f"{archive.event_count}, {archive.last_seq})")
    return events


class ColdReader:
    """The cold archives of one database, each read once per version, for a source.

    ``source`` gives ``seq_cursor``, ``wants_session``, ``error``, ``_bad_row`` and
    ``_emit_row``: an archive's events with a seq past the session's cursor are emitted and
    the cursor moved, so a session read row by row before it was archived (or restored
    after) is never read twice."""

    def __init__(self, source) -> None:
        self.source = source
        self.directory = cold_directory(source.path)
        #: session id -> version of its archive already read (or reported)
        self.settled: dict[str, tuple] = {}
        #: session id -> archive to read (found by the last scan)
        self.due: dict[str, ColdArchive] = {}

    def scan(self, conn, out: list) -> None:
        """Find the archives not read yet at their version (a table scan, no blob)."""
        self.due.clear()
        archives = list_archives(conn, self.directory, lambda rowid, raw, message:
                                 self.source._bad_row(out, COLD_TABLE, rowid, raw, message),
                                 self.source._rowid.get(COLD_TABLE, "rowid"))
        for sid, archive in archives.items():
            if not self.source.wants_session(sid):
                continue
            if self.settled.get(sid) != archive.version():
                self.due[sid] = archive
        for sid in [s for s in self.settled if s not in archives]:
            del self.settled[sid]       # restored or gone: its cursor stays

    def read(self, conn, out: list, budget_bytes: int) -> int:
        """Read due archives (at least one) until ``budget_bytes`` of events are spent;
        returns the bytes spent. Archives left stay due."""
        spent = 0
        for sid in list(self.due):
            if spent and (spent >= budget_bytes or self.source.out_of_time()):
                break
            archive = self.due.pop(sid)
            current = conn.execute(f"SELECT archive_sha256 FROM {COLD_TABLE} WHERE session_id = ?",
                                   (sid,)).fetchone()
            if current is None or current[0] != archive.sha256:
                continue        # restored or replaced since the scan: the next scan sees it
            self.settled[sid] = archive.version()
            try:
                events = read_events(conn, self.directory, archive)
            except ColdArchiveError as exc:
                out.append(self.source.error(archive.where, f"cold archive of session "
                                             f"{sid[:80]!r} not read: {exc}"))
                spent += 1
                continue
            except MemoryError:
                out.append(self.source.error(archive.where, "cold archive not read: "
                                                            "out of memory"))
                continue
            cursor = self.source.seq_cursor.get(sid, -1)
            for seq, event_json in events:
                if seq <= cursor:
                    continue
                try:
                    spent += self.source._emit_row(sid, seq, event_json, None, None, out)
                except Exception as exc:  # one event must not stop the archive
                    out.append(self.source.row_skipped(sid, seq, exc))
                self.source.seq_cursor[sid] = seq
            spent += 1
        return spent

    def backlog(self) -> int:
        return sum(max(0, min(a.raw_bytes, MAX_COLD_ARCHIVE_BYTES)) for a in self.due.values())

    def units(self, conn) -> dict[str, tuple[int, list]]:
        """``transcript_units`` of the cold sessions: their raw bytes, and the archive's
        identity (name, digest, storage, file version) for the replay cache."""
        units: dict[str, tuple[int, list]] = {}
        for sid, archive in list_archives(conn, self.directory, lambda *_: None,
                                          self.source._rowid.get(COLD_TABLE, "rowid")).items():
            units[sid] = (max(0, min(archive.raw_bytes, MAX_COLD_ARCHIVE_BYTES)),
                          ["cold", *archive.version()])
        return units

