"""Which files of a sessions dir (``agents/<id>/sessions/``) are transcripts, and whose.

A transcript is ``<session id>.jsonl`` (``<id>-topic-<n>.jsonl`` for a topic of it); its
archives (``*.jsonl.reset.*``, ``*.jsonl.deleted.*``) are history, never live sessions.
Sidecars beside the transcripts are not transcripts and are never read as ones (nor
their archives, nor when a ``sessionFile`` names one): ``<id>.trajectory.jsonl`` and
``<id>.trajectory-path.json`` (OpenClaw 2026.6's runtime trace, whose records are
``session.started``, ``model.completed``, ...) and the compaction checkpoints
``<id>.checkpoint.<uuid>.jsonl`` (a copy of the transcript before a compaction), as
OpenClaw's own ``isPrimarySessionTranscriptFileName`` rules. Every transcript read, listed
in the index or not, an archive too, is its agent's (``agent_id``; ``SourceSet.agent_of``):
it sits in ``agents/<id>/sessions/``.

A ``sessionFile`` recorded on another machine (a Docker ``/home/node/.openclaw/...`` path,
a Windows ``C:\\Users\\...`` one) that does not exist here is looked for by its file name
in the sessions dir (``session_file_path``).
"""

from __future__ import annotations

import os
import re

ARCHIVE_MARKERS = (".jsonl.reset.", ".jsonl.deleted.")
#: Sidecars OpenClaw writes beside a transcript (``<id>.jsonl``): runtime trajectory trace
#: and its pointer file.
SIDECAR_SUFFIXES = (".trajectory.jsonl", ".trajectory-path.json")
#: A compaction checkpoint: the transcript as it was before a compaction.
CHECKPOINT_NAME = re.compile(
    r"^.+\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r"\.jsonl$", re.IGNORECASE)


def is_sidecar(name: str) -> bool:
    """Whether a file name (or path) is a sidecar or a compaction checkpoint, or an
    archive of one (``<id>.trajectory.jsonl.reset.<ts>``): never a transcript."""
    base = os.path.basename(name)
    if base.endswith(".jsonl") and base.count(".") == 1:
        return False                        # <id>.jsonl: each of the others has a dot more
    return sidecar_base(base)


def sidecar_base(base: str) -> bool:
    """``is_sidecar`` of a base name, every name looked through."""
    for marker in ARCHIVE_MARKERS:
        at = base.find(marker)
        if at >= 0:
            base = base[:at + len(".jsonl")]
            break
    return base.endswith(SIDECAR_SUFFIXES) or CHECKPOINT_NAME.match(base) is not None


def session_id_from_filename(name: str) -> str:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    topic = stem.find("-topic-")
    return stem[:topic] if topic > 0 else stem


def transcript_session_id(path: str) -> str:
    """The session a transcript (or an archive of one) belongs to, by its file name."""
    return session_id_from_filename(os.path.basename(path).split(".jsonl")[0] + ".jsonl")



def nameable(path: str) -> bool:
    """Whether ``path`` can name a file here: no NUL, and each character one the file
    system's encoding takes (a lone surrogate, which JSON's ``"\\ud800"`` gives, is none;
    the ``\\udc80``-``\\udcff`` that stand for bytes that are not UTF-8 are)."""
    if "\x00" in path:
        return False
    try:
        os.fsencode(path)
    except UnicodeError:
        return False
    return True


def is_archive(path: str) -> bool:
    """``*.jsonl.reset.*`` / ``*.jsonl.deleted.*``: a transcript's history, not a live one."""
    return any(marker in path for marker in ARCHIVE_MARKERS)



def session_file_path(sessions_dir: str, entry: dict,
                      names: set[str] | None = None) -> str | None:
    """The transcript an index entry's ``sessionFile`` names (relative to the sessions dir),
    or None when it names none (or names a sidecar).

    A path recorded on another machine (``/home/node/.openclaw/agents/main/sessions/<id>.jsonl``
    in a Docker container, ``C:\\Users\\me\\.openclaw\\...\\<id>.jsonl`` on Windows) that
    does not exist here is the file of the same name in ``sessions_dir`` (when there is one,
    or the recorded dir is not on this machine; ``names``: the dir's listing, if the caller
    has it): only a plain ``*.jsonl`` name (the last part after either separator, never
    ``..``), so it stays inside the sessions dir."""
    session_file = entry.get("sessionFile")
    if not isinstance(session_file, str) or not session_file or not nameable(session_file):
        return None
    name = session_file.replace("\\", "/").rsplit("/", 1)[-1]
    if is_sidecar(name):
        return None
    if os.path.isabs(session_file) and name not in ("", ".", "..") \
            and session_file == os.path.join(sessions_dir, name):
        return session_file                 # in the sessions dir, as OpenClaw writes it
    return placed_session_file(sessions_dir, session_file, name, names)


def placed_session_file(sessions_dir: str, session_file: str, name: str,
                        names: set[str] | None) -> str:
    """``session_file_path`` of a ``sessionFile`` that is no sidecar, every case looked
    through; ``name``: its last part."""
    recorded = os.path.join(sessions_dir, session_file)
    foreign = "\\" in session_file and os.sep != "\\"
    if not foreign and os.path.dirname(os.path.normpath(recorded)) == \
            os.path.normpath(sessions_dir):
        return recorded                     # in the sessions dir: no need to look
    if not foreign and os.path.lexists(recorded):
        return recorded
    if name in ("", ".", "..") or name.startswith("..") or not name.endswith(".jsonl"):
        return recorded
    local = os.path.join(sessions_dir, name)
    if os.path.dirname(os.path.abspath(local)) != os.path.abspath(sessions_dir):
        return recorded
    found = name in names if names is not None else os.path.lexists(local)
    if found or foreign or not os.path.isdir(os.path.dirname(recorded)):
        return local            # the recorded dir is not on this machine: the name is here
    return recorded             # a dir here that may yet hold the file
