"""How the data types of the lower layers show in IPython: views the display layer registers.

A ComposedPrompt (the core) and a trinket's text (the trinkets) show richly in a notebook, but
their layers sit below the display layer and may not import it. They ask here instead:
``wm_kernel.display.render`` registers its views when it loads, and the package's ``__init__`` (the
top layer, which runs before any of its modules) names the loader that imports it, so the first
object shown loads the display layer. A plain ``import wm_kernel.core`` loads nothing more.
"""
from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any, Protocol

__all__ = ["register", "set_loader", "composed_mimebundle", "text"]

MimeBundle = dict[str, Any]


class PrettyPrinter(Protocol):
    """What a ``_repr_pretty_`` method is handed and uses: IPython's pretty printer, which takes
    the text to show."""

    def text(self, obj: str) -> None: ...


_composed: Callable[..., MimeBundle] | None = None
_text: Callable[[str], str] | None = None
_loader: Callable[[], object] | None = None


def register(*, composed_prompt: Callable[..., MimeBundle], text: Callable[[str], str]) -> None:
    """The display layer's views: the mime bundle of a ComposedPrompt (called with the prompt,
    ``include`` and ``exclude``) and the str subclass a plain text shows as."""
    global _composed, _text
    _composed, _text = composed_prompt, text


def set_loader(loader: Callable[[], object]) -> None:
    """What imports the display layer on first use (it registers its views when it loads)."""
    global _loader
    _loader = loader


def _load() -> None:
    if _composed is None and _loader is not None:
        _loader()


def composed_mimebundle(prompt: object, include: Container[str] | None = None,
                        exclude: Container[str] | None = None) -> MimeBundle:
    """The mime bundle IPython shows for a ComposedPrompt; its ``repr`` until a view is registered."""
    _load()
    if _composed is None:
        return {"text/plain": repr(prompt)}
    return _composed(prompt, include=include, exclude=exclude)


def text(value: str) -> str:
    """``value`` as a str that shows as itself (a ``<pre>`` block in a notebook), once registered."""
    _load()
    return value if _text is None else _text(value)
