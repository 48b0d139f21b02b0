"""The colours and fonts of every HTML view, in one place.

Colours are JupyterLab theme variables with a light fallback for other frontends, mixed so that
text keeps a contrast of at least 4.5:1 (WCAG AA) in the light and the dark theme alike:

- a colour for text is the theme's colour taken a third of the way towards the theme's own text
  colour (``--jp-content-font-color0``: black in a light theme, white in a dark one), so it darkens
  where the page is light and lightens where it is dark (the themes' plain warning orange or
  success green read at 3:1 on white);
- a background behind white text (a badge) is the theme's colour darkened in both themes;
- a tint behind the page's own text colour is the theme's colour mostly transparent, so it lies
  over whatever the page is.

tests/browser/test_contrast.py measures every view in both themes.
"""

from __future__ import annotations


def text_colour(variable: str, fallback: str) -> str:
    """A CSS colour for text from the theme colour ``variable``, readable on the page in light and
    dark themes (see the module docstring)."""
    return f"color-mix(in srgb, var({variable}, {fallback}) 65%, var(--jp-content-font-color0, #000))"


def badge_colour(variable: str, fallback: str) -> str:
    """A CSS background for white text from the theme colour ``variable`` (darkened in every theme)."""
    return f"color-mix(in srgb, var({variable}, {fallback}) 70%, #000)"


def tint(variable: str, fallback: str, percent: int = 20) -> str:
    """A CSS background from the theme colour ``variable``, translucent, for the page's text."""
    return f"color-mix(in srgb, var({variable}, {fallback}) {percent}%, transparent)"


ERROR = text_colour("--jp-error-color1", "#d32f2f")
WARN = text_colour("--jp-warn-color1", "#f57c00")
SUCCESS = text_colour("--jp-success-color1", "#388e3c")
INFO = text_colour("--jp-info-color1", "#0097a7")
#: Secondary text: the theme's secondary text colour (4.6:1 on white, 5.8:1 on the dark page).
MUTED = "var(--jp-ui-font-color2, #616161)"
BORDER = "var(--jp-border-color2, #e0e0e0)"
#: Backgrounds of badges (white text on them).
ERROR_BADGE = badge_colour("--jp-error-color1", "#d32f2f")
MUTED_BADGE = badge_colour("--jp-layout-color4", "#757575")
#: Prompt text is monospace, so indentation and the 60-character rules line up.
CODE_FONT = "font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px)"

#: A block of prompt text: wrapped at spaces, long tokens broken only when they must be.
PROMPT_PRE = f"white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;{CODE_FONT};line-height:1.35;"
#: A hunk of a diff: flush with its summary line, wrapped at spaces (JupyterLab breaks a <pre> anywhere).
DIFF_PRE = f"margin:0;white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;{CODE_FONT}"

#: Table cells that wrap between words and never inside one (a cause, a model id, a number).
WORD_WRAP = "overflow-wrap:normal;word-break:normal"

#: A table's own scroller: a table wider than where it is shown (an output, a dashboard tab, an
#: HTML page) scrolls sideways instead of being cut.
SCROLL_X = "overflow-x:auto;max-width:100%"


def scrolling(table: str) -> str:
    """``table`` (HTML) in a ``<div class="wm-scroll">`` that scrolls it sideways when it is wider
    than the space it is shown in.

    >>> scrolling("<table></table>")
    '<div class="wm-scroll" style="overflow-x:auto;max-width:100%"><table></table></div>'
    """
    return f'<div class="wm-scroll" style="{SCROLL_X}">{table}</div>'
