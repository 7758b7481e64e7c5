"""The dashboard's themes: loading them, refusing one whose CSS fails, switching.

A mixin of ``ClawwatchApp`` (kept apart to keep each module readable). A theme
whose values pass ``themes.check_variable`` can still break the app's CSS where
Textual puts them; such a theme is refused with an error toast (and a status note
at start), never allowed to stop the dashboard. The current theme's variables
become the app's ``palette`` reactive, which the panes are rendered with.
"""

from __future__ import annotations

from textual.css.errors import StylesheetError

from monitor.display import printable
from monitor.ui.style import Palette
from monitor.ui.themes import DEFAULT_THEME, load_themes


class ThemeHandling:
    """Needs ``requested_theme``, ``themes_directory``, ``theme_names``, ``theme_errors``,
    ``status_notes`` and ``palette`` from the app."""

    def _load_themes(self) -> None:
        themes, errors = load_themes(self.themes_directory)
        for theme in themes:
            self.register_theme(theme)
        self.theme_names = [t.name for t in themes]
        wanted = self.requested_theme
        if wanted not in self.available_themes:
            errors.append(f"theme {wanted!r} not found (have: {', '.join(self.theme_names)});"
                          f" using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME
        elif wanted not in self.theme_names:
            self.theme_names.append(wanted)
        problem = self._theme_problem(wanted)
        if problem is not None and wanted != DEFAULT_THEME:
            errors.append(f"{problem}; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME
        self.theme_errors = errors
        self.status_notes = tuple(errors)
        for error in errors:
            self.notify(error, title="theme", severity="error", timeout=15)
        self.theme = wanted

    def _theme_problem(self, name: str) -> str | None:
        """Why the app's CSS does not parse with theme ``name`` (None: it does). Tried on a
        copy of the stylesheet, so a theme whose values pass ``themes.check_variable`` but
        are still wrong where Textual puts them is refused before it is used."""
        theme = self.get_theme(name)
        if theme is None:
            return f"theme {name!r} not found"
        try:
            variables = {**self.get_theme_variable_defaults(),
                         **theme.to_color_system().generate(), **theme.variables}
            stylesheet = self.stylesheet.copy()
            stylesheet.set_variables(variables)
            stylesheet.reparse()
        except Exception as exc:  # any failure refuses the theme, never the dashboard
            return f"theme {name!r} refused: the CSS does not parse with it ({type(exc).__name__})"
        return None

    def use_theme(self, name: str) -> bool:
        """Switch to theme ``name`` unless its CSS fails (an error toast then)."""
        problem = self._theme_problem(name)
        if problem is not None:
            self.notify(problem, title="theme", severity="error", timeout=15, markup=False)
            return False
        self.theme = name
        return True

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's, but a theme whose CSS fails all the same goes back to the last theme
        that worked, with an error, instead of stopping the dashboard."""
        try:
            super().refresh_css(animate)
        except StylesheetError:
            bad = self.theme
            good = getattr(self, "_good_theme", None)
            if good is None or good == bad:
                good = DEFAULT_THEME if bad != DEFAULT_THEME else "textual-dark"
            if bad == good:
                raise
            self.notify(f"theme {bad!r} refused: the CSS does not parse with it; "
                        f"back to {good!r}", title="theme", severity="error", timeout=15,
                        markup=False)
            self.theme = good
        else:
            self._good_theme = self.theme

    def _theme_changed(self, _theme) -> None:
        self.palette = Palette(self.get_css_variables())

    def action_next_theme(self) -> None:
        names = self.theme_names or [DEFAULT_THEME]
        current = self.theme if self.theme in names else names[-1]
        start = names.index(current)
        for step in range(1, len(names) + 1):     # a theme that is refused is skipped
            if self.use_theme(names[(start + step) % len(names)]):
                break
        self.notify(printable(f"theme: {self.theme}"), timeout=2, markup=False)
