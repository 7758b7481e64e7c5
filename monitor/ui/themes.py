"""Theme files (``*.yaml``) turned into Textual themes.

The built-in themes ship inside the package (``monitor/themes/``: dark, light, night;
the repository's top-level ``themes/`` points there), so a wheel or ``pipx`` install has
them. The user's own themes live in ``$XDG_CONFIG_HOME/clawwatch/themes`` (by default
``~/.config/clawwatch/themes``; ``$CLAWWATCH_THEMES`` names another directory): each
file adds a theme, or replaces the built-in theme of the same ``name``.

A file that cannot be read or has a bad colour is skipped with an error
message the app shows; the built-in ``dark`` below stands in when
``dark.yaml`` itself is broken, so the dashboard always has a theme.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from textual.color import Color, ColorParseError
from textual.theme import Theme

from monitor.safe_yaml import InputRefused, describe_yaml_error, load_yaml_file

DEFAULT_THEME = "dark"
THEMES_ENV = "CLAWWATCH_THEMES"
BUILTIN_THEMES = Path(__file__).resolve().parents[1] / "themes"
REPO_THEMES = BUILTIN_THEMES  # the old name: the repository's themes/ points here
COLOUR_KEYS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
               "boost", "success", "warning", "error")
FALLBACK = Theme(
    name=DEFAULT_THEME, dark=True, primary="#3B82C4", secondary="#5E6AD2", accent="#E0A030",
    foreground="#D8DEE6", background="#0F1216", surface="#161B21", panel="#1E252D",
    success="#4CB870", warning="#F0B429", error="#E5484D")


def user_themes_dir(env=None) -> Path:
    """``$CLAWWATCH_THEMES``, else ``$XDG_CONFIG_HOME/clawwatch/themes`` (by default
    ``~/.config/clawwatch/themes``)."""
    env = os.environ if env is None else env
    if env.get(THEMES_ENV):
        return Path(env[THEMES_ENV]).expanduser()
    config_home = env.get("XDG_CONFIG_HOME") or ""
    base = Path(config_home) if os.path.isabs(config_home) else Path.home() / ".config"
    return base / "clawwatch" / "themes"


def themes_dir() -> Path:
    """Where the user's themes are read from (see ``user_themes_dir``)."""
    return user_themes_dir()


def theme_from_mapping(data: object, origin: str) -> Theme:
    """A Textual theme from one parsed file; raises ``ValueError`` naming the bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a theme file must be a mapping of keys to values")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{origin}: name: a theme needs a name")
    unknown = set(data) - {"name", "dark", "variables", *COLOUR_KEYS}
    if unknown:
        raise ValueError(f"{origin}: unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    if "primary" not in data:
        raise ValueError(f"{origin}: primary: required")
    colours: dict[str, str] = {}
    for key in COLOUR_KEYS:
        if key in data:
            value = data[key]
            try:
                Color.parse(str(value))
            except ColorParseError:
                raise ValueError(f"{origin}: {key}: {value!r} is not a colour") from None
            colours[key] = str(value)
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ValueError(f"{origin}: variables: must be a mapping")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ValueError(f"{origin}: dark: must be true or false")
    return Theme(name=name.strip(), dark=dark,
                 variables={str(k): str(v) for k, v in variables.items()}, **colours)


def load_themes(directory: Path | None = None, env=None) -> tuple[list[Theme], list[str]]:
    """Every readable theme and one error per bad file: those in ``directory`` alone when
    it is given, else the built-in ones with the user's (``user_themes_dir``) over them —
    a user theme replaces the built-in one of the same name; a missing user directory is
    no error."""
    if directory is not None:
        themes, errors = _read_dir(directory)
    else:
        themes, errors = _read_dir(BUILTIN_THEMES)
        user = user_themes_dir(env)
        if user.exists():
            extra, user_errors = _read_dir(user)
            errors += user_errors
            mine = {t.name: t for t in extra}
            builtin = {t.name for t in themes}
            themes = [mine.get(t.name, t) for t in themes] + \
                [t for t in mine.values() if t.name not in builtin]
    if not any(t.name == DEFAULT_THEME for t in themes):
        themes.insert(0, FALLBACK)
    return themes, errors


def _read_dir(directory: Path) -> tuple[list[Theme], list[str]]:
    """The themes in one directory (sorted by file name) and one error per bad file."""
    themes: list[Theme] = []
    errors: list[str] = []
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
    except OSError as exc:
        return [], [f"themes: cannot read {directory}: {exc.strerror or exc}"]
    for path in paths:
        try:
            # bounded like the config: a regular file of at most 1 MiB of UTF-8, no alias
            # bombs, no deep nesting, no duplicate keys (monitor.safe_yaml)
            data = load_yaml_file(str(path))
            themes.append(theme_from_mapping(data, str(path)))
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc}")
        except InputRefused as exc:
            errors.append(f"{path}: cannot read: {exc.message}")
        except yaml.YAMLError as exc:
            key, message = describe_yaml_error(exc)
            errors.append(f"{path}: {message}" if key == "(yaml)" else f"{path}: {key}: {message}")
        except ValueError as exc:
            errors.append(str(exc))
    return themes, errors
