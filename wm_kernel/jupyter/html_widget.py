"""The HTML widget of the dashboard: an ``ipywidgets.HTML`` whose text no typesetter reads as math.

JupyterLab typesets an HTML widget's value with MathJax like any HTML output, so a cost line
holding two dollar amounts would turn into italic math. Every value set is passed through
:func:`wm_kernel.utils.htmltext.dollars_as_text` (a value without ``$`` is kept as it is, at no
cost).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from traitlets import validate

from wm_kernel.utils.htmltext import dollars_as_text


class TextHTML(widgets.HTML):
    """``ipywidgets.HTML`` whose ``$`` signs show as dollar signs, never as math delimiters."""

    @validate("value")
    def _dollars_as_text(self, proposal: Any) -> str:
        return dollars_as_text(str(proposal["value"]))
