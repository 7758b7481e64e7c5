"""Find what to watch, in the order of shared/CONTRACT.md ("Finding OpenClaw").

Nothing here reads transcripts; it only resolves paths and settings, and
remembers every place it looked so a failure can name them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from monitor import untrusted_json
from monitor.log_names import DEFAULT_FAMILY, log_family, newest_log_in, rolls, todays_log
from monitor.redaction import clip_redacted, register_known_secret, register_url_secrets
from monitor.sources.regular import file_kind, read_bounded
from monitor.sources.transcript_names import nameable

#: The largest openclaw.json read: OpenClaw's holds a few kB; past this it is refused, not
#: read into memory whole (every command reads it).
MAX_OPENCLAW_CONFIG_BYTES = 16 << 20


class DiscoveryError(Exception):
    """Nothing to watch; the message names the paths tried and what to do."""


@dataclass
class Discovered:
    state_dir: str | None
    openclaw_config_path: str | None
    openclaw_config: dict
    log_path: str | None
    log_dirs: list[str]
    gateway_url: str | None
    gateway_token: str | None = field(repr=False, default=None)
    tried: list[str] = field(default_factory=list)
    log_is_rolling: bool = False
    #: Claude Code projects dirs and Codex sessions dirs to watch (issue 14).
    claude_dirs: list[str] = field(default_factory=list)
    codex_dirs: list[str] = field(default_factory=list)
    #: ``"logging.file in <openclaw.json>"`` when ``log_path`` is that setting's (or would
    #: be, but it names no file: ``log_problem`` says why).
    log_setting: str | None = None
    log_problem: str | None = None
    #: The setting was a relative path: the gateway opens it from its own working directory.
    log_relative: bool = False
    #: Why openclaw.json (``openclaw_config_path``) could not be read, when it is there.
    config_problem: str | None = None
    #: The family of the dated logs a rolling log moves to (``monitor.log_names``).
    log_family: str = DEFAULT_FAMILY

    @property
    def has_openclaw(self) -> bool:
        state_ok = bool(self.state_dir) and os.path.isdir(self.state_dir or "")
        return state_ok or (bool(self.log_path) and os.path.exists(self.log_path or ""))

    def cli_sources_text(self) -> str:
        """What besides OpenClaw is watched ("Claude Code (DIR), Codex (DIR)"), "" for none."""
        parts = []
        if self.claude_dirs:
            parts.append(f"Claude Code ({', '.join(self.claude_dirs)})")
        if self.codex_dirs:
            parts.append(f"Codex ({', '.join(self.codex_dirs)})")
        return ", ".join(parts)


def rolling_log(found: Discovered) -> dict:
    """``SourceSet``'s ``rolling_log_dirs`` and ``rolling_log_family`` for what was found:
    the dirs of a log found by its dated name, so the next day's file is read when the
    gateway moves to it (none for a log named by ``--log`` or a fixed ``logging.file``)."""
    if not found.log_is_rolling:
        return {}
    return {"rolling_log_dirs": tuple(found.log_dirs), "rolling_log_family": found.log_family}


def resolve_state_dir(explicit: str | None, profile: str | None, env, tried: list[str]
                      ) -> str | None:
    if explicit:
        tried.append(f"--state-dir {explicit}")
        return os.path.abspath(os.path.expanduser(explicit))
    if env.get("OPENCLAW_STATE_DIR"):
        tried.append(f"$OPENCLAW_STATE_DIR={env['OPENCLAW_STATE_DIR']}")
        return os.path.abspath(os.path.expanduser(env["OPENCLAW_STATE_DIR"]))
    home = env.get("OPENCLAW_HOME") or env.get("HOME") or os.path.expanduser("~")
    candidate = os.path.join(home, f".openclaw-{profile}" if profile else ".openclaw")
    tried.append(candidate)
    return candidate if os.path.isdir(candidate) else None


SOURCES = ("openclaw", "claude-code", "codex")


def parse_sources(text: str | None) -> frozenset[str]:
    """``--source openclaw,claude-code,codex`` as a set (None: every source); ValueError
    names an unknown one."""
    if text is None:
        return frozenset(SOURCES)
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(chosen - set(SOURCES))
    if unknown or not chosen:
        raise ValueError(f"unknown source {', '.join(unknown) or '(none)'}: "
                         f"choose from {','.join(SOURCES)}")
    return frozenset(chosen)


def _home(env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def claude_projects_dir(path: str) -> str:
    """A Claude config dir (holding ``projects/``) as its projects dir; a projects dir as is."""
    path = os.path.abspath(os.path.expanduser(path))
    projects = os.path.join(path, "projects")
    return projects if os.path.isdir(projects) else path


def claude_config_homes(env) -> list[str]:
    """The Claude config dirs of an environment without ``$CLAUDE_CONFIG_DIR``: ``~/.claude``
    (the only one Claude Code 2.x writes: 2.1.332 reads no ``XDG_CONFIG_HOME``) and
    ``$XDG_CONFIG_HOME/claude`` (default ``~/.config/claude``: where Claude Code 1.0.30 wrote
    when ``XDG_CONFIG_HOME`` was set, a change it took back, and where ccusage still reads)."""
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return [os.path.join(_home(env), ".claude"), os.path.join(xdg, "claude")]


def claude_dir_candidates(env) -> list[str]:
    """Where Claude Code transcripts may be, as ccusage looks: every dir of
    ``$CLAUDE_CONFIG_DIR`` (comma-separated; a config dir holding ``projects/`` or the
    projects dir itself) and only those when it is set; else the ``projects`` dir of each of
    ``claude_config_homes``. What ``watch`` and ``replay`` read is what ``stop`` searches."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured and configured.strip():
        found = [claude_projects_dir(part.strip()) for part in configured.split(",")
                 if part.strip()]
    else:
        found = [os.path.join(home, "projects") for home in claude_config_homes(env)]
    return list(dict.fromkeys(found))


def claude_dirs(env, tried: list[str]) -> list[str]:
    """Those of ``claude_dir_candidates`` that exist; each tried is named in ``tried``."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    candidates = claude_dir_candidates(env)
    if configured and configured.strip():
        tried.append(f"$CLAUDE_CONFIG_DIR={configured}")
    else:
        tried.extend(candidates)
    return [candidate for candidate in candidates if os.path.isdir(candidate)]


def codex_sessions_dir(path: str) -> str:
    """A Codex home (``$CODEX_HOME``, holding ``sessions/``) as its sessions dir; a sessions
    dir as is."""
    path = os.path.abspath(os.path.expanduser(path))
    sessions = os.path.join(path, "sessions")
    return sessions if os.path.isdir(sessions) else path


def codex_dirs(env, tried: list[str]) -> list[str]:
    """``$CODEX_HOME/sessions`` (default ``~/.codex/sessions``) if it exists."""
    home = env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")
    candidate = os.path.join(os.path.abspath(os.path.expanduser(home)), "sessions")
    tried.append(candidate)
    return [candidate] if os.path.isdir(candidate) else []


def read_openclaw_config(state_dir: str | None, env, tried: list[str]
                         ) -> tuple[str | None, dict, str | None]:
    """``(path, settings, why they could not be read)`` of openclaw.json
    (``$OPENCLAW_CONFIG_PATH``, else in the state dir): only a regular file of at most
    ``MAX_OPENCLAW_CONFIG_BYTES`` (never a FIFO, nor a sparse gigabyte held in memory) that
    holds a JSON5 object (OpenClaw's format: comments, trailing commas) is used; one that is
    not there is no problem."""
    path = env.get("OPENCLAW_CONFIG_PATH") or (
        os.path.join(state_dir, "openclaw.json") if state_dir else None)
    if not path:
        return None, {}, None
    tried.append(path)
    try:
        data = untrusted_json.loads_json5(read_bounded(path, MAX_OPENCLAW_CONFIG_BYTES))
    except FileNotFoundError:
        return path, {}, None
    except OSError as exc:
        return path, {}, exc.strerror or str(exc)
    except UnicodeError:
        return path, {}, "not UTF-8"
    except ValueError:
        return path, {}, "not JSON5 (damaged)"
    if not isinstance(data, dict):
        return path, {}, "not a JSON object"
    return path, data, None


def openclaw_home(env) -> str:
    """The home OpenClaw expands a leading ``~`` with: ``$OPENCLAW_HOME`` (itself ``~``-
    expanded), else ``$HOME``; a value that is blank, ``undefined`` or ``null`` is unset."""
    def setting(name: str) -> str | None:
        value = (env.get(name) or "").strip()
        return value if value not in ("", "undefined", "null") else None

    os_home = setting("HOME") or os.path.expanduser("~")
    explicit = setting("OPENCLAW_HOME")
    if explicit is None:
        return os_home
    return _expand_home_prefix(explicit, os_home)


def _expand_home_prefix(path: str, home: str) -> str:
    """``path`` with a leading ``~`` or ``~/`` replaced by ``home``; ``~user`` is left as is,
    as OpenClaw leaves it."""
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


def configured_log_path(value: str, env) -> tuple[str | None, str | None]:
    """``logging.file`` as the gateway resolves it, as ``(path, None)``, or ``(None, why it
    names no file)``. OpenClaw expands a leading ``~`` with its home (``openclaw_home``) and
    opens a relative path from the gateway's working directory, which clawwatch cannot know:
    it takes its own. An empty value, a NUL or a lone surrogate names no file."""
    if not value:
        return None, "is empty: it names no file"
    if not nameable(value):
        return None, (f"{shown_setting(value)} holds a NUL or a lone surrogate: no file can "
                      "have this name")
    return os.path.abspath(_expand_home_prefix(value, openclaw_home(env))), None


def shown_setting(value: str) -> str:
    """A setting's text as a message may quote it: secrets masked, at most 200 characters."""
    return repr(clip_redacted(value, 200))


def discovery_notes(found: Discovered, *, live: bool) -> list[str]:
    """What to say of what OpenClaw keeps that cannot be read: its agents dir
    (``agents_dir_problem``), openclaw.json, the log ``logging.file`` names
    (``configured_log_note``)."""
    agents_problem = agents_dir_problem(found.state_dir)
    agents_note = agents_problem and (f"clawwatch: error: {agents_problem}; the sessions "
                                      "OpenClaw keeps under it are not read")
    config_note = None if not found.config_problem else (
        f"clawwatch: warning: {found.openclaw_config_path} not read: {found.config_problem}; "
        "its settings (logging.file, gateway.port, gateway.auth.token) are not used")
    return [line for line in (agents_note, config_note, configured_log_note(found, live=live))
            if line]


def agents_dir_problem(state_dir: str | None) -> str | None:
    """Why ``<state dir>/agents``, where OpenClaw keeps every agent's sessions, cannot be
    listed (a file, a FIFO, a dir without permission), or None: it can, or it is not there
    (an install with no agent yet). Only ``stat`` and ``scandir``: a FIFO is never opened."""
    if not state_dir or not os.path.isdir(state_dir):
        return None
    agents = os.path.join(state_dir, "agents")
    try:
        mode = os.stat(agents).st_mode
        if not stat.S_ISDIR(mode):
            return f"{agents}: not a directory ({file_kind(mode)})"
        with os.scandir(agents):
            return None
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{agents}: cannot list it: {exc.strerror or exc}"


def configured_log_note(found: Discovered, *, live: bool) -> str | None:
    """What to say of a gateway log ``logging.file`` names that cannot be read: one that
    names no file at all is an error; one that is not there is said too, as a live command
    waits for it (the gateway may not have written yet) and ``replay`` goes without it.
    None when there is nothing to say."""
    if found.log_setting is None:
        return None
    if found.log_problem:
        return (f"clawwatch: error: {found.log_setting} {found.log_problem}; no gateway log "
                "is read (fix the setting, or give --log FILE)")
    if found.log_path is None or os.path.exists(found.log_path):
        return None
    where = (" (a relative logging.file is opened from the gateway's working directory; "
             "clawwatch looked from its own)") if found.log_relative else ""
    named = f"clawwatch: {found.log_setting} names {clip_redacted(found.log_path, 400)}"
    if live:
        return (f"{named}, which is not there yet{where}; it is read once it appears (or "
                "give --log FILE)")
    return f"{named}, which is not there{where}; no gateway log is read (give --log FILE)"


def no_openclaw_note(found: Discovered, verb: str = "watching") -> str | None:
    """"clawwatch: no OpenClaw found; watching Claude Code (DIR)" when only Claude Code or
    Codex is there to watch, else None."""
    if found.has_openclaw or not (found.claude_dirs or found.codex_dirs):
        return None
    return f"clawwatch: no OpenClaw found; {verb} {found.cli_sources_text()}"


def default_log_dirs(env) -> list[str]:
    """Where the gateway writes its log when ``logging.file`` is not set: ``/tmp/openclaw``,
    else ``$TMPDIR/openclaw-<uid>``; ``$CLAWWATCH_LOG_DIRS`` (dirs joined by ``os.pathsep``)
    replaces both (a gateway whose ``/tmp`` is mounted elsewhere, or a test that must not
    see this machine's gateway)."""
    override = env.get("CLAWWATCH_LOG_DIRS")
    if override is not None:
        return [d for d in override.split(os.pathsep) if d]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    tmp = env.get("TMPDIR") or "/tmp"
    return ["/tmp/openclaw", os.path.join(tmp, f"openclaw-{uid}")]


def gateway_port(gateway_config: dict, config_path: str | None, tried: list[str]
                 ) -> int | None:
    """``gateway.port`` of openclaw.json when it is a port (1 to 65535); one that is not is
    noted in ``tried``, so "no gateway URL" names it."""
    port = gateway_config.get("port")
    if port is None:
        return None
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536:
        return port
    tried.append(f"gateway.port {str(port)[:40]!r} in {config_path}: not a port from 1 to "
                 "65535")
    return None


def discover(*, state_dir: str | None = None, profile: str | None = None,
             log: str | None = None, gateway: str | None = None, env=None,
             claude_dir: list[str] | tuple[str, ...] = (),
             codex_dir: list[str] | tuple[str, ...] = (),
             sources: frozenset[str] | None = None) -> Discovered:
    """What to watch. ``claude_dir``/``codex_dir`` (``--claude-dir``/``--codex-dir``) replace
    the discovered dirs of that tool; ``sources`` (``--source``) keeps only those tools."""
    env = os.environ if env is None else env
    tried: list[str] = []
    sources = frozenset(SOURCES) if sources is None else sources
    claude: list[str] = []
    codex: list[str] = []
    if "claude-code" in sources:
        if claude_dir:
            tried.extend(f"--claude-dir {d}" for d in claude_dir)
            claude = list(dict.fromkeys(claude_projects_dir(d) for d in claude_dir))
        else:
            claude = claude_dirs(env, tried)
    if "codex" in sources:
        if codex_dir:
            tried.extend(f"--codex-dir {d}" for d in codex_dir)
            codex = list(dict.fromkeys(codex_sessions_dir(d) for d in codex_dir))
        else:
            codex = codex_dirs(env, tried)
    if "openclaw" not in sources:
        return Discovered(None, None, {}, None, [], None, None, tried, False, claude, codex)
    resolved_state = resolve_state_dir(state_dir, profile, env, tried)
    config_path, config, config_problem = read_openclaw_config(resolved_state, env, tried)
    gateway_config = config.get("gateway") if isinstance(config.get("gateway"), dict) else {}
    logging_config = config.get("logging") if isinstance(config.get("logging"), dict) else {}
    log_dirs = default_log_dirs(env)
    family = log_family(profile or env.get("OPENCLAW_PROFILE"))
    log_setting = log_problem = None
    log_relative = configured_rolls = False
    configured_log = logging_config.get("file")
    if log:
        log_path: str | None = os.path.abspath(os.path.expanduser(log))
        tried.append(f"--log {log}")
    elif isinstance(configured_log, str):
        log_setting = f"logging.file in {config_path}"
        log_path, log_problem = configured_log_path(configured_log, env)
        log_relative = not os.path.isabs(_expand_home_prefix(configured_log, "/"))
        tried.append(f"logging.file {log_path or shown_setting(configured_log)}")
        if log_path is not None and rolls(log_path):   # the gateway writes each day's file
            configured_rolls, family = True, DEFAULT_FAMILY
            log_dirs = [os.path.dirname(log_path)]
            log_path = newest_log_in(log_dirs) or todays_log(log_dirs[0])
    else:
        log_path = newest_log_in(log_dirs, family)
        tried.extend(os.path.join(d, f"{family}-YYYY-MM-DD.log") for d in log_dirs)
    port = gateway_port(gateway_config, config_path, tried)
    url = gateway or env.get("OPENCLAW_GATEWAY_URL") or (
        f"ws://127.0.0.1:{port}" if port is not None else None)
    auth = gateway_config.get("auth") if isinstance(gateway_config.get("auth"), dict) else {}
    token = env.get("OPENCLAW_GATEWAY_TOKEN") or (
        auth.get("token") if isinstance(auth.get("token"), str) else None)
    rolling = not log and (configured_rolls or not isinstance(configured_log, str))
    register_known_secret(token)  # masked in everything clawwatch outputs
    register_url_secrets(url)
    return Discovered(resolved_state, config_path, config, log_path, log_dirs, url, token, tried,
                      rolling, claude, codex, log_setting=log_setting,
                      log_problem=log_problem, log_relative=log_relative,
                      config_problem=config_problem, log_family=family)


def require_something(found: Discovered) -> None:
    """Raise ``DiscoveryError`` when neither a state dir nor a log exists, nor a Claude Code
    or Codex dir (those alone are watched: ``no_openclaw_note`` says so)."""
    if found.has_openclaw:
        return
    if found.claude_dirs or found.codex_dirs:
        return
    lines = ["clawwatch: no OpenClaw found to watch (nor Claude Code or Codex).", "Looked in:"]
    lines += [f"  - {place}" for place in found.tried]
    lines += [
        "Point clawwatch at it with --state-dir DIR (or $OPENCLAW_STATE_DIR), --profile NAME,",
        "and --log FILE for the gateway log; --claude-dir DIR / --codex-dir DIR for Claude Code",
        "and Codex CLI transcripts; or try it without any of them: clawwatch demo",
    ]
    raise DiscoveryError("\n".join(lines))
