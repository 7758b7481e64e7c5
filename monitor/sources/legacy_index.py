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

from monitor import untrusted_json
from monitor.events import SessionInfo
from monitor.sources.regular import NotRegularFile, open_regular_file, refusal
from monitor.sources.transcript import parse_timestamp, sane_count


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
            with open_regular_file(self.index_path) as handle:
                data = untrusted_json.loads(handle.read())
        except NotRegularFile as exc:
            out.append(self.error("sessions.json",
                                  f"cannot read the session index: {exc.strerror}",
                                  path=self.index_path, shared=True))
            return
        except (OSError, ValueError) as exc:
            out.append(self.error("sessions.json", f"cannot read the session index: {exc}",
                                  path=self.index_path, shared=True))
            return
        if not isinstance(data, dict):
            out.append(self.error("sessions.json", "session index is not a JSON object",
                                  path=self.index_path, shared=True))
            return
        entries = {k: v for k, v in data.items() if isinstance(v, dict)}
        # Kept: what the listing reads later (an entry has some thirty fields; 10,000
        # sessions' worth is tens of MB).
        self._index = {k: {"sessionFile": v["sessionFile"]} if "sessionFile" in v else {}
                       for k, v in entries.items()}
        for key, entry in entries.items():
            if not self.wants_session(entry.get("sessionId")):
                continue
            record = self._session_info(key, entry)
            if record is None:
                continue
            version = (record.session_id, record.status, record.updated_at, record.total_tokens)
            if self._announced.get(key) != version:
                self._announced[key] = version
                out.append(record)

    def _session_info(self, key: str, entry: dict) -> SessionInfo | None:
        sid = entry.get("sessionId")
        if not isinstance(sid, str):
            return None

        def text(name: str) -> str | None:
            value = entry.get(name)
            return value if isinstance(value, str) else None

        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id, model=text("model"),
            provider=text("modelProvider"), status=text("status"), run_id=text("lastRunId"),
            active_run_id=text("activeWriterRunId"),
            aborted_last_run=entry.get("abortedLastRun") is True,
            label=text("label") or text("displayName"),
            updated_at=parse_timestamp(entry.get("updatedAt")),
            input_tokens=sane_count(entry.get("inputTokens")),
            output_tokens=sane_count(entry.get("outputTokens")),
            total_tokens=sane_count(entry.get("totalTokens")), origin=f"{self.index_path}#{key}",
        )
