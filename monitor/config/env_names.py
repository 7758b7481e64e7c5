"""Which ``$CLAWWATCH_*`` variables name a setting, and what a mistyped one likely meant.

A setting's variable is ``CLAWWATCH_<SECTION>__<KEY>[__<KEY>…]``, two underscores between
parts. The prefix is shared with variables that are no setting (``$CLAWWATCH_CONFIG``,
``$CLAWWATCH_THEMES``, test tools' own), so a name without ``__`` is only warned about when
it reads as a setting: it starts with a section's name (``CLAWWATCH_ACTIONS_MODE``) or is
close to a setting's variable. A name with ``__`` but an empty part (``CLAWWATCH_DETECTION__``)
is an error, as an unknown key in the file is.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Iterator, Mapping

from monitor.config.sections import SECTIONS

PREFIX = "CLAWWATCH_"
SEPARATOR = "__"
FORM = "CLAWWATCH_<SECTION>__<KEY>, e.g. CLAWWATCH_ACTIONS__MODE"
#: clawwatch's own variables that are no setting (the config file, the themes dir, the
#: demo's gateway token, the dirs of the gateway's default log).
OTHER_VARIABLES = frozenset({"CLAWWATCH_CONFIG", "CLAWWATCH_THEMES",
                             "CLAWWATCH_DEMO_GATEWAY_TOKEN", "CLAWWATCH_LOG_DIRS"})


def setting_parts(name: str) -> list[str] | None:
    """The lower-case path a setting's variable names (``["actions", "mode"]``), or None
    when ``name`` does not have a setting's form."""
    if not name.startswith(PREFIX) or SEPARATOR not in name:
        return None
    return [part.lower() for part in name[len(PREFIX):].split(SEPARATOR)]


def _paths(cls: type, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        path = (*prefix, field.name)
        if dataclasses.is_dataclass(hints[field.name]):
            yield from _paths(hints[field.name], path)
        else:
            yield path


@functools.cache
def setting_variables() -> tuple[str, ...]:
    """Every setting's variable, ``CLAWWATCH_ACTIONS__MODE`` …"""
    return tuple(PREFIX + SEPARATOR.join(path).upper()
                 for section, cls in SECTIONS.items() for path in _paths(cls, (section,)))


def likely_meant(name: str) -> str | None:
    """The setting's variable ``name`` is closest to (read with ``__`` as ``_``), if any."""
    flat = {variable[len(PREFIX):].replace(SEPARATOR, "_"): variable
            for variable in setting_variables()}
    close = difflib.get_close_matches(name[len(PREFIX):][:200], list(flat), n=1, cutoff=0.85)
    return flat[close[0]] if close else None


def misnamed_variables(env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` for the ``$CLAWWATCH_*`` variables that name no setting, in
    ``config check``'s ``LABEL:key: message`` form."""
    errors: list[str] = []
    warnings: list[str] = []
    sections = tuple(f"{PREFIX}{section.upper()}_" for section in (*SECTIONS, "agents"))
    for name in sorted(env):
        parts = setting_parts(name)
        if parts is not None:
            if not all(parts):
                errors.append(f"${name}:(name): names no setting; a setting's variable is "
                              f"{FORM}")
            continue
        if not name.startswith(PREFIX) or name in OTHER_VARIABLES:
            continue
        meant = likely_meant(name)
        if meant or name.startswith(sections):
            hint = f"did you mean ${meant}?" if meant else f"a setting's variable is {FORM}"
            warnings.append(f"${name}:(name): names no setting and is ignored ({hint})")
    return errors, warnings
