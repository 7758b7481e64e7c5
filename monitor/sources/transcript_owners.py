"""Which legacy source reads which transcript file, so that each file is read once however it
is named.

A ``sessionFile`` may name a transcript by another path than the one its sessions dir is
listed by: the state dir reached through a symlink (``~/.openclaw -> /data/openclaw``, the
gateway recording real paths), ``/proc/self/root/...``, ``a/../b``, or a path into another
agent's sessions dir. Read under both names, its tool calls and tokens would count twice and
raise loops that never happened. Two checks keep it to one reading:

* ``SessionFilePlaces``: a ``sessionFile`` outside the dir's own spelling is placed by the
  identity (``st_dev``, ``st_ino``) of the dir that holds it, one ``stat`` per distinct dir
  spelling: in the sessions dir itself it is the listed file; in another source's sessions
  dir it is that source's (the agent whose dir holds a transcript reads it).
* ``TranscriptOwners.claim``: a file named under two names by a symlink or a hard link of its
  own is followed under the first name to claim its identity, in listing order (the dir's
  own names, sorted, before the index's). It uses the ``stat`` taken to start a follower.

One ``TranscriptOwners`` is shared by the legacy sources of a ``SourceSet``.
"""

from __future__ import annotations

import os

FileIdentity = tuple[int, int]


def identity_of(st: os.stat_result) -> FileIdentity:
    return (st.st_dev, st.st_ino)


class TranscriptOwners:
    """The sessions dirs of a set's legacy sources and the transcript files they follow, by
    identity."""

    def __init__(self) -> None:
        self._dirs: set[FileIdentity] = set()
        self._files: dict[FileIdentity, str] = {}

    def add_dir(self, sessions_dir: str) -> None:
        """``sessions_dir`` is listed by a source of the set."""
        try:
            self._dirs.add(identity_of(os.stat(sessions_dir)))
        except OSError:
            pass

    def lists(self, dir_identity: FileIdentity) -> bool:
        """Whether a source of the set lists the dir ``dir_identity``."""
        return dir_identity in self._dirs

    def claim(self, path: str, st: os.stat_result) -> bool:
        """Whether ``path`` (``st``: its ``stat``) is to be followed: False when the file is
        followed already under another path that still names it (a path whose file was
        deleted, and its inode number reused, holds no claim)."""
        identity = identity_of(st)
        holder = self._files.get(identity)
        if holder is not None and holder != path:
            try:
                if identity_of(os.stat(holder)) == identity:
                    return False
            except OSError:
                pass
        self._files[identity] = path
        return True


class SessionFilePlaces:
    """Where the index's ``sessionFile``s really are, by the identity of the dir holding
    each; a dir's ``stat`` is taken once per spelling."""

    def __init__(self, sessions_dir: str, own_identity: FileIdentity,
                 owners: TranscriptOwners) -> None:
        self._sessions_dir = sessions_dir
        self._own_identity = own_identity
        self._owners = owners
        self._dirs: dict[str, FileIdentity | None] = {}

    def place(self, path: str) -> tuple[str, object] | None:
        """The path to follow ``path`` by, and what tells it from every other transcript;
        None when another source's sessions dir holds it."""
        parent, name = os.path.split(path)
        if parent not in self._dirs:
            try:
                self._dirs[parent] = identity_of(os.stat(parent or "."))
            except OSError:
                self._dirs[parent] = None
        identity = self._dirs[parent]
        if identity is None or name in ("", ".", ".."):
            return path, os.path.normpath(path)
        if identity == self._own_identity:
            own = os.path.join(self._sessions_dir, name)
            return own, os.path.normpath(own)
        if self._owners.lists(identity):
            return None                     # another agent's transcript
        return path, (identity, name)
