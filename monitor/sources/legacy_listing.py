"""Which transcripts the legacy source follows: the sessions dir's listing plus the index's
``sessionFile``s elsewhere, listed again only when something may have changed, and a
follower for each new one, the most recently modified first.

A transcript renamed to an archive while followed is drained through its follower's open
descriptor (or, when the follower was suspended, found by inode) and is not followed again
under its archive name. A transcript the index names by another path (the state dir through a
symlink, another agent's dir) is followed once, by its agent's source (``transcript_owners``).

``TranscriptListing`` is a mixin of ``LegacySessionsSource``, sharing its state.
"""

from __future__ import annotations

import os
import time

from monitor.sources.base import file_units
from monitor.sources.reread import recall
from monitor.sources.tail import FileFollower
from monitor.sources.transcript_names import (
    is_archive,
    is_sidecar,
    session_file_path,
    transcript_session_id,
)
from monitor.sources.transcript_owners import FileIdentity, SessionFilePlaces

#: A dir whose mtime is this recent is listed again on the next poll: a file created within
#: the same mtime tick as the listing would not change the mtime.
LISTING_RACY_SECONDS = 1.0
#: A listing is trusted for at most this long even when the dir's mtime says nothing changed.
LISTING_MAX_AGE_SECONDS = 30.0


class TranscriptListing:
    """Lists the transcripts to follow and starts a follower for each new one."""

    def transcript_units(self) -> dict[str, tuple[int, list]]:
        """Per session id: its transcripts' bytes, and what identifies their content now
        (path, size, mtime, inode of each), from the current listing."""
        return file_units(self._transcript_paths(), transcript_session_id)

    def session_of(self, path: str) -> str:
        return transcript_session_id(path)

    def _transcript_paths(self) -> list[str]:
        """Transcripts in the dir (archives too with ``include_archives``) plus the index's
        ``sessionFile``s elsewhere. Listed again only when the dir's mtime or the index
        changed, or the last listing is old or was taken while the dir was still changing
        within the mtime's granularity."""
        try:
            st = os.stat(self.path)
        except OSError:
            self._listing_key = None
            return []
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, self._index_identity)
        now = time.monotonic()
        if key == self._listing_key and now - self._listed_at < LISTING_MAX_AGE_SECONDS:
            return self._listing
        try:
            raw_names = os.listdir(self.path)
        except OSError:
            self._listing_key = None
            return []
        still_changing = time.time_ns() - st.st_mtime_ns < LISTING_RACY_SECONDS * 1e9
        if raw_names == self._raw_names and key[3] == self._listed_index:
            # Listed again for age or a racy mtime, and nothing changed: the same listing
            # (an unchanged list object: the followers are not looked through again).
            self._listing_key = None if still_changing else key
            self._listed_at = now
            return self._listing
        self._raw_names = raw_names
        self._listed_index = key[3]
        if still_changing:
            paths = self._every_transcript(raw_names, key[:2])
        else:
            paths = recall(("listing", os.path.abspath(self.path), key, self.include_archives),
                           lambda: self._every_transcript(raw_names, key[:2]))
        if self.only_files is not None:
            paths = [p for p in paths if os.path.abspath(p) in self.only_files]
        if self.only_sessions is not None:
            paths = [p for p in paths if self.wants_session(transcript_session_id(p))]
        self._listing_key = None if still_changing else key
        self._listed_at = now
        self._listing = paths
        return paths

    def _every_transcript(self, raw_names: list[str], own_identity: FileIdentity) -> list[str]:
        """The transcripts of ``raw_names`` (the dir's listing) and the index's
        ``sessionFile``s elsewhere, each once however it is spelled (``SessionFilePlaces``:
        ``own_identity`` is the sessions dir's), less those another source's dir holds."""
        names = sorted(raw_names)
        base = os.path.normpath(self.path)
        paths = []
        seen: set = set()
        for name in names:
            if (name.endswith(".jsonl") or (self.include_archives and is_archive(name))) \
                    and not is_sidecar(name):
                paths.append(os.path.join(self.path, name))
                seen.add(os.path.join(base, name))
        listed = set(raw_names)
        places = SessionFilePlaces(self.path, own_identity, self.transcript_owners)
        for entry in self._index.values():
            full = session_file_path(self.path, entry, listed)
            if full is None or os.path.normpath(full) in seen:
                continue
            placed = places.place(full)
            if placed is not None and placed[1] not in seen:
                seen.add(placed[1])
                paths.append(placed[0])
        return paths

    def _follow_new(self, paths: list[str]) -> None:
        """Followers for paths not followed yet, most recently modified first, placed where
        the next poll starts so new (active) sessions are read before older history."""
        if paths is self._followed_listing:
            return
        self._followed_listing = paths
        new = [p for p in paths if p not in self._followers
               and p not in self._finished_archives and p not in self._aliases]
        if not new:
            return
        stats: dict[str, os.stat_result | None] = {}
        for path in new:
            try:
                stats[path] = os.stat(path)
            except OSError:
                stats[path] = None
        new = self._without_drained_archives(new, stats)
        new = self._without_aliases(new, stats)
        new.sort(key=lambda p: stats[p].st_mtime_ns if stats[p] else 0, reverse=True)
        for path in new:
            resume = self._resume.pop(path, None)
            self._followers[path] = FileFollower(
                path, resume=resume, own_archives=None if self.include_archives else is_archive)
            self._by_abspath[os.path.abspath(path)] = path
            sid = self._session_ids[path] = transcript_session_id(path)
            self._paths_of_session.setdefault(sid, []).append(path)
            size = stats[path].st_size if stats[path] else 0
            self._unstarted[path] = max(0, size - (resume.offset if resume else 0))
        self._order[self._cursor:self._cursor] = new

    def _without_aliases(self, paths: list[str], stats: dict[str, os.stat_result | None]
                         ) -> list[str]:
        """``paths`` less those naming a file followed already under another path (a
        symlink or a hard link to it): the first path in listing order claims the file."""
        kept = []
        for path in paths:
            st = stats[path]
            if st is None or self.transcript_owners.claim(path, st):
                kept.append(path)
            else:
                self._aliases.add(path)
        return kept

    def _without_drained_archives(self, paths: list[str],
                                  stats: dict[str, os.stat_result | None]) -> list[str]:
        """``paths`` less the archives that are a followed transcript renamed: its follower
        reads it to the end through the open descriptor (or finds it by inode)."""
        archives = [p for p in paths if is_archive(p) and stats[p] is not None]
        if not archives:
            return paths
        by_identity = {identity: follower for path, follower in self._followers.items()
                       if not is_archive(path) for identity in follower.identities()}
        drained = set()
        for path in archives:
            st = stats[path]
            follower = by_identity.get((st.st_dev, st.st_ino))
            if follower is not None and follower.reads(st):
                drained.add(path)
                self._finished_archives.add(path)
        return [p for p in paths if p not in drained]
