"""The colours and fonts of every HTML view, in one place.

Colours are JupyterLab theme variables with a light fallback for other frontends, so a view reads
the same in the light and the dark theme.
"""
from __future__ import annotations

ERROR = "var(--jp-error-color1, #c62828)"
WARN = "var(--jp-warn-color1, #e65100)"
SUCCESS = "var(--jp-success-color1, #2e7d32)"
INFO = "var(--jp-info-color1, #0277bd)"
MUTED = "var(--jp-ui-font-color2, #616161)"
BORDER = "var(--jp-border-color2, #e0e0e0)"
#: Prompt text is monospace, so indentation and the 60-character rules line up.
CODE_FONT = "font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px)"

#: A block of prompt text: wrapped at spaces, long tokens broken only when they must be.
PROMPT_PRE = ("white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;"
              f"{CODE_FONT};line-height:1.35;")
#: A hunk of a diff: flush with its summary line, wrapped.
DIFF_PRE = f"margin:0;white-space:pre-wrap;{CODE_FONT}"
