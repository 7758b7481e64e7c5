"""Theme files (``*.yaml``) turned into Textual themes.

The built-in themes ship inside the package (``monitor/themes/``: dark, light, night;
the repository's top-level ``themes/`` points there), so a wheel or ``pipx`` install has
them. The user's own themes live in ``$XDG_CONFIG_HOME/clawwatch/themes`` (by default
``~/.config/clawwatch/themes``; ``$CLAWWATCH_THEMES`` names another directory): each
file adds a theme, or replaces the built-in theme of the same ``name``.

A file that cannot be read or has a bad value is skipped with an error
message the app shows; the built-in ``dark`` below stands in when
``dark.yaml`` itself is broken, so the dashboard always has a theme.

A theme's ``name`` is a plain identifier (``THEME_NAME``: letters, digits, ``_ . -``), as
Textual's own theme picker parses the names as markup. Every value of a theme ends up in
Textual's CSS, so each is checked against an allow-list
(``check_variable``): a colour key must parse as a colour (``Color.parse``); a ``variables``
name must be a lower-case CSS identifier (``footer-key-foreground``), and its value a colour,
optionally with an alpha percentage (``#81A1C1 35%``), or, for a ``*-style`` variable, text
style keywords (``bold reverse``, ``none``). No ``$`` references, quotes, ``;`` or braces:
a value cannot refer to itself or close the rule it is put in. The app also test-parses its
CSS with a theme before using it (``ClawwatchApp``), so a value that passes here and is still
wrong where Textual puts it refuses the theme instead of stopping the dashboard.
"""

from __future__ import annotations

import os
import re
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
#: A theme's name: Textual's own theme picker parses the names as content markup, so a
#: name is a plain identifier, like the built-in ``dark`` and Textual's ``textual-dark``.
THEME_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: A variable's name: a lower-case CSS identifier, as Textual's own variables are named.
VARIABLE_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
MAX_VARIABLE_NAME = 64
MAX_VARIABLES = 200
#: The characters a colour value may use (``#hex``, ``rgb(…)``, ``hsl(…)``, ``ansi_red``).
COLOUR_TEXT = re.compile(r"[A-Za-z0-9_#(),. ]{1,64}")
#: An alpha percentage after a colour: ``#81A1C1 35%``.
ALPHA = re.compile(r"(.+?)\s+([0-9]{1,3}(?:\.[0-9]{1,3})?)%")
#: Text-style keywords a ``*-style`` variable may combine (Textual's ``text-style`` values).
STYLE_KEYWORDS = frozenset({"none", "bold", "dim", "italic", "underline", "underline2",
                            "overline", "reverse", "strike", "blink", "not"})
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


def _is_colour(text: str) -> bool:
    if not COLOUR_TEXT.fullmatch(text):
        return False
    try:
        Color.parse(text)
    except (ColorParseError, ValueError, TypeError):
        return False
    return True


def check_colour(value: object) -> str:
    """``value`` as a colour Textual parses; raises ``ValueError`` otherwise."""
    if not isinstance(value, str) or not _is_colour(value.strip()):
        raise ValueError(f"{value!r} is not a colour")
    return value.strip()


def check_variable(name: object, value: object) -> tuple[str, str]:
    """``(name, value)`` of one theme variable when both are on the allow-list (see the
    module docstring); raises ``ValueError`` saying what is wrong."""
    if not isinstance(name, str) or len(name) > MAX_VARIABLE_NAME \
            or not VARIABLE_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a variable name (lower-case letters, digits "
                         "and '-', like footer-key-foreground)")
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{name}: {value!r} must be text")
    text = " ".join(value.split())
    if name.endswith("-style"):
        words = text.split(" ")
        if not text or len(words) > 8 or not set(words) <= STYLE_KEYWORDS:
            raise ValueError(f"{name}: {value!r} is not a text style (keywords: "
                             f"{', '.join(sorted(STYLE_KEYWORDS))})")
        return name, text
    alpha = ALPHA.fullmatch(text)
    colour = alpha.group(1) if alpha else text
    if not _is_colour(colour) or (alpha and float(alpha.group(2)) > 100):
        raise ValueError(f"{name}: {value!r} is not a colour (a colour, optionally followed "
                         "by an alpha percentage like 35%)")
    return name, text


def theme_from_mapping(data: object, origin: str) -> Theme:
    """A Textual theme from one parsed file; raises ``ValueError`` naming the bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a theme file must be a mapping of keys to values")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{origin}: name: a theme needs a name")
    if not THEME_NAME.fullmatch(name.strip()):
        raise ValueError(f"{origin}: name: {name.strip()[:64]!r} is not a theme name (up to 64 "
                         "letters, digits, '_', '.' and '-', like night or solarized-dark)")
    unknown = set(data) - {"name", "dark", "variables", *COLOUR_KEYS}
    if unknown:
        raise ValueError(f"{origin}: unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    if "primary" not in data:
        raise ValueError(f"{origin}: primary: required")
    colours: dict[str, str] = {}
    for key in COLOUR_KEYS:
        if key in data:
            try:
                colours[key] = check_colour(data[key])
            except ValueError as exc:
                raise ValueError(f"{origin}: {key}: {exc}") from None
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ValueError(f"{origin}: variables: must be a mapping")
    if len(variables) > MAX_VARIABLES:
        raise ValueError(f"{origin}: variables: more than {MAX_VARIABLES}")
    checked: dict[str, str] = {}
    for var_name, value in variables.items():
        try:
            var_name, value = check_variable(var_name, value)
        except ValueError as exc:
            raise ValueError(f"{origin}: variables: {exc}") from None
        checked[var_name] = value
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ValueError(f"{origin}: dark: must be true or false")
    return Theme(name=name.strip(), dark=dark, variables=checked, **colours)


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
