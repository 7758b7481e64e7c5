"""Theme files (``themes/*.yaml``) turned into Textual themes.

A file that cannot be read or has a bad colour is skipped with an error
message the app shows; the built-in ``dark`` below stands in when
``themes/dark.yaml`` itself is broken, so the dashboard always has a theme.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from textual.color import Color, ColorParseError
from textual.theme import Theme

DEFAULT_THEME = "dark"
THEMES_ENV = "CLAWWATCH_THEMES"
REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"
COLOUR_KEYS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
               "boost", "success", "warning", "error")
FALLBACK = Theme(
    name=DEFAULT_THEME, dark=True, primary="#3B82C4", secondary="#5E6AD2", accent="#E0A030",
    foreground="#D8DEE6", background="#0F1216", surface="#161B21", panel="#1E252D",
    success="#4CB870", warning="#F0B429", error="#E5484D")


def themes_dir() -> Path:
    """``$CLAWWATCH_THEMES``, else the repository's ``themes/``."""
    override = os.environ.get(THEMES_ENV)
    return Path(override) if override else REPO_THEMES


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


def load_themes(directory: Path | None = None) -> tuple[list[Theme], list[str]]:
    """Every readable theme in ``directory`` (sorted by file name) and one error per bad file."""
    directory = directory or themes_dir()
    themes: list[Theme] = []
    errors: list[str] = []
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
    except OSError as exc:
        return [FALLBACK], [f"themes: cannot read {directory}: {exc.strerror or exc}"]
    for path in paths:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            themes.append(theme_from_mapping(data, str(path)))
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{path}: cannot read: {exc}")
        except yaml.YAMLError as exc:
            errors.append(f"{path}: not valid YAML: {str(exc).splitlines()[0]}")
        except ValueError as exc:
            errors.append(str(exc))
    if not any(t.name == DEFAULT_THEME for t in themes):
        themes.insert(0, FALLBACK)
    return themes, errors
