"""A theme file can refuse itself, never stop the dashboard.

Every value of a theme ends up in Textual's CSS. A ``variables`` value that is not valid CSS
where Textual puts it (``'"x"'`` as a colour), a self reference (``$primary``), or text that
closes the rule it is put in (``red; } Screen {display:none} X {``) used to fail the CSS
parse and end the dashboard: at start with ``--theme``, or on the ``t`` key. Such a theme is
refused with an error (toast and status line) and the dashboard keeps running on a good
theme; a theme that gets past the file checks and still fails the CSS is refused when it
is chosen, and one set directly goes back to the last theme that worked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_ui_scenes import wait_for
from textual.command import CommandList
from textual.theme import BUILTIN_THEMES, Theme

from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.themes import check_variable, load_themes, theme_from_mapping

GOOD = "name: okay\ndark: true\nprimary: '#3366CC'\nvariables:\n" \
       "  footer-key-foreground: '#88C0D0'\n  input-selection-background: '#6F6E69 35%'\n" \
       "  block-cursor-text-style: bold reverse\n  scrollbar: ansi_bright_blue\n"
INJECTION = "red; } Screen {display:none} X {"

#: file name -> the theme file's text: each must be refused
BAD_THEMES = {
    "badvar": "name: badvar\nprimary: '#123456'\nvariables:\n"
              "  footer-key-foreground: '\"x\"'\n",
    "selfref": "name: selfref\nprimary: '#123456'\nvariables:\n  primary: '$primary'\n",
    "selfref-colour": "name: selfref-colour\nprimary: '$primary'\n",
    "ref-alpha": "name: ref-alpha\nprimary: '#123456'\nvariables:\n"
                 "  footer-key-foreground: '$primary 50%'\n",
    "inject-var": f"name: inject-var\nprimary: '#123456'\nvariables:\n  boost: '{INJECTION}'\n",
    "inject-colour": f"name: inject-colour\nprimary: '{INJECTION}'\n",
    "inject-name": "name: inject-name\nprimary: '#123456'\nvariables:\n"
                   "  'x; } Screen { display: none': red\n",
    "style-as-colour": "name: style-as-colour\nprimary: '#123456'\nvariables:\n"
                       "  block-cursor-text-style: '#ff0000'\n",
    "colour-as-style": "name: colour-as-style\nprimary: '#123456'\nvariables:\n"
                       "  footer-key-foreground: bold\n",
    "number-var": "name: number-var\nprimary: '#123456'\nvariables:\n"
                  "  footer-key-foreground: 5\n",
    "escape": "name: escape\nprimary: '#123456'\nvariables:\n"
              "  footer-background: \"\\e]0;pwn\\a\"\n",
}


@pytest.fixture
def user_themes(tmp_path, monkeypatch) -> Path:
    """An isolated config dir whose clawwatch/themes holds a good theme and every bad one."""
    monkeypatch.delenv("CLAWWATCH_THEMES", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    themes = tmp_path / "xdg" / "clawwatch" / "themes"
    themes.mkdir(parents=True)
    (themes / "okay.yaml").write_text(GOOD)
    for name, text in BAD_THEMES.items():
        (themes / f"{name}.yaml").write_text(text)
    return themes


def state_dir(tmp_path: Path) -> tuple[str, str]:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text("{}")
    log = tmp_path / "openclaw.log"
    log.write_text("")
    return str(tmp_path / "state"), str(log)


def error_toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


@pytest.mark.parametrize("name", sorted(BAD_THEMES))
def test_each_bad_theme_file_is_refused_naming_it(user_themes, name):
    themes, errors = load_themes()
    assert name not in [t.name for t in themes]
    assert "okay" in [t.name for t in themes]
    assert any(str(user_themes / f"{name}.yaml") in error for error in errors), errors


def test_textual_s_own_theme_variables_pass_the_allow_list():
    for theme in BUILTIN_THEMES.values():
        for name, value in theme.variables.items():
            check_variable(name, value)


def test_the_good_theme_s_values_are_kept():
    theme = theme_from_mapping(
        {"name": "x", "primary": " #123456 ", "variables": {
            "input-selection-background": "#6F6E69   35%", "block-cursor-text-style": "none"}},
        "x.yaml")
    assert theme.primary == "#123456"
    assert theme.variables == {"input-selection-background": "#6F6E69 35%",
                               "block-cursor-text-style": "none"}


async def test_t_cycles_through_the_themes_and_the_dashboard_keeps_running(user_themes,
                                                                           tmp_path):
    state, log = state_dir(tmp_path)
    app = build_app(DashboardOptions(state_dir=state, log=log), poll_seconds=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not set(BAD_THEMES) & set(app.theme_names)
        assert len(app.theme_errors) >= len(BAD_THEMES)
        seen = []
        for _ in range(2 * len(app.theme_names) + 2):
            await pilot.press("t")
            await pilot.pause()
            seen.append(app.theme)
            assert app.is_running and app.return_code is None
        assert {"dark", "light", "night", "okay"} <= set(seen)
    assert app.return_code in (None, 0)


async def test_starting_with_a_bad_theme_uses_the_default_with_an_error(user_themes,
                                                                        tmp_path):
    state, log = state_dir(tmp_path)
    for name in ("badvar", "selfref", "inject-var"):
        app = build_app(DashboardOptions(state_dir=state, log=log, theme=name),
                        poll_seconds=0.1)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app.theme == "dark"
            assert any(name in error for error in app.theme_errors)
            await pilot.press("t")
            await pilot.pause()
            assert app.is_running


EVIL = Theme(name="evil", primary="#123456", variables={"footer-key-foreground": '"x"'})


async def test_a_theme_whose_css_fails_is_refused_when_chosen(user_themes, tmp_path):
    """Past the file checks (registered directly): chosen by name, on `t` or at start, it is
    refused with an error toast and the dashboard stays on a good theme."""
    state, log = state_dir(tmp_path)
    app = build_app(DashboardOptions(state_dir=state, log=log), poll_seconds=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.register_theme(EVIL)
        app.theme_names.insert(app.theme_names.index(app.theme) + 1, "evil")
        await pilot.press("t")
        await pilot.pause()
        assert app.theme != "evil" and app.is_running
        assert any("evil" in toast for toast in error_toasts(app))


async def test_a_theme_set_directly_whose_css_fails_goes_back(user_themes, tmp_path):
    """Set without the check (as Textual's own theme picker does): back to the last theme
    that worked, with an error, the dashboard still running."""
    state, log = state_dir(tmp_path)
    app = build_app(DashboardOptions(state_dir=state, log=log, theme="light"),
                    poll_seconds=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.register_theme(EVIL)
        app.theme = "evil"
        deadline = time.monotonic() + 5
        while app.theme != "light" and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.theme == "light" and app.is_running
        assert any("evil" in toast for toast in error_toasts(app))
        await pilot.press("t")
        await pilot.pause()
        assert app.is_running


#: theme names that are markup: Textual's own theme picker parses every registered name as
#: markup (the dashboard offers it beside its own "Theme: NAME" commands)
MARKUP_NAMES = ("close [/x] tag", "[/bold]evil", "[@click=app.quit]quits[/]",
                "[$text-error]red[/]", "back\\[b]slash\\\\[/b]")


def test_a_theme_name_that_is_not_a_plain_identifier_is_refused():
    for name in (*MARKUP_NAMES, "two words", "x" * 65, "dark\u2800"):
        with pytest.raises(ValueError, match="is not a theme name"):
            theme_from_mapping({"name": name, "primary": "#123456"}, "t.yaml")
    for name in ("dark", "solarized-dark", "my_theme.v2", "Night2"):
        assert theme_from_mapping({"name": name, "primary": "#123456"}, "t.yaml").name == name


async def test_a_theme_named_with_markup_is_refused_and_the_theme_picker_opens(
        user_themes, tmp_path):
    """An unbalanced ``[/x]`` in a theme's name ended the dashboard with a MarkupError when
    Textual's own "Theme" picker listed it, and ``[@click=…]`` made a clickable action of it:
    such a file is refused with an error naming it, and the picker opens."""
    for index, name in enumerate(MARKUP_NAMES):
        (user_themes / f"markup{index}.yaml").write_text(
            f"name: {json.dumps(name)}\nprimary: '#123456'\n")
    state, log = state_dir(tmp_path)
    app = build_app(DashboardOptions(state_dir=state, log=log), poll_seconds=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"Theme")
        await wait_for(pilot, lambda: len(app.screen.query_one(CommandList).options) > 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.screen.query_one(CommandList).options) > 4)
        shown = [option.prompt.plain for option in app.screen.query_one(CommandList).options]
        assert app.is_running and app.return_code is None
    assert "okay" in shown and "dark" in shown, shown
    assert not set(MARKUP_NAMES) & set(app.theme_names)
    for index in range(len(MARKUP_NAMES)):
        assert any(str(user_themes / f"markup{index}.yaml") in error
                   for error in app.theme_errors), app.theme_errors
