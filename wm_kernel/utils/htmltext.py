"""HTML that no math typesetter reads as math.

JupyterLab typesets the HTML outputs and the HTML widgets it shows with MathJax: text between two
``$`` becomes italic math, so "input cost $0.007 (without caching $0.009)" loses both amounts. The
views of this project show dollar amounts, prompt text and user text, none of it math. Two guards:

- every ``$`` of an HTML text is written ``&#36;`` inside its own ``<span>`` of the classes MathJax
  (3: ``mathjax_ignore``; 2: ``tex2jax_ignore``) skips, so no typesetter finds two delimiters in one
  text (MathJax and KaTeX's auto-render look for delimiters within one text run; in SVG, where a
  ``<span>`` is not allowed, the ``$`` is the plain reference ``&#36;``);
- a whole view is wrapped in a ``<div>`` of those classes (:func:`no_math`), so MathJax skips all
  of it, delimiters of any kind (``\\(``, ``$$``) included.

>>> dollars_as_text('<b title="$1">$5 to $10</b>')
'<b title="$1"><span class="mathjax_ignore tex2jax_ignore">&#36;</span>5 to <span \
class="mathjax_ignore tex2jax_ignore">&#36;</span>10</b>'
>>> dollars_as_text('<svg><text>$5</text></svg>')
'<svg><text>&#36;5</text></svg>'
>>> no_math("<i>no dollars</i>")
'<div class="mathjax_ignore tex2jax_ignore"><i>no dollars</i></div>'
"""

from __future__ import annotations

import re

#: The classes whose content MathJax 3 (``mathjax_ignore``) and MathJax 2 (``tex2jax_ignore``) skip.
NO_MATH_CLASS = "mathjax_ignore tex2jax_ignore"
_DOLLAR = f'<span class="{NO_MATH_CLASS}">&#36;</span>'
_TAGS = re.compile(r"(<[^>]*>)")
_SVG_OPEN = re.compile(r"<svg[\s>/]", re.IGNORECASE)
_SVG_CLOSE = re.compile(r"</svg\s*>", re.IGNORECASE)


def dollars_as_text(fragment: str) -> str:
    """``fragment`` (HTML whose text is escaped) with every ``$`` of its text unreadable as a math
    delimiter; tags and attribute values are left as they are."""
    if "$" not in fragment:
        return fragment
    parts = _TAGS.split(fragment)
    svg_depth = 0
    for index, part in enumerate(parts):
        if index % 2:  # a tag
            if _SVG_OPEN.match(part) and not part.endswith("/>"):
                svg_depth += 1
            elif _SVG_CLOSE.match(part):
                svg_depth = max(svg_depth - 1, 0)
        elif "$" in part:
            parts[index] = part.replace("$", "&#36;" if svg_depth else _DOLLAR)
    return "".join(parts)


def no_math(fragment: str) -> str:
    """``fragment`` as a view no typesetter touches: its dollars as text, inside a ``<div>`` of the
    classes MathJax skips."""
    return f'<div class="{NO_MATH_CLASS}">{dollars_as_text(fragment)}</div>'
