"""The views of ``%compose`` and ``%cache`` as plain functions, for hosts without IPython magics.

marimo, VS Code's interactive window without the extension, a script writing HTML: each calls a
function and shows what it returns (every object here has ``_repr_html_`` or
``_repr_mimebundle_`` and a plain ``str``). The magics call the same functions, so a view looks the
same from both; ``%request``'s view is :func:`wm_kernel.display.wire_view.request_view`.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session("You help {first_name}.", trinkets=[], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> print(str(compose_view(s, view="raw")).splitlines()[0])
You help friend.
>>> compose_view(s, sections=["nope"])
Traceback (most recent call last):
...
ValueError: unknown section 'nope' (sections: base_prompt, ...)
>>> compose_view(s, view="loud")
Traceback (most recent call last):
...
ValueError: unknown view 'loud' (views: html, raw, json, diff, blame)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.display import render

if TYPE_CHECKING:
    from wm_kernel.display.cache_view import CacheView
    from wm_kernel.session import Session

#: What :func:`compose_view` can show: the rich prompt, its exact text, its JSON (the original's
#: five keys), what changed since the previous compose, each character coloured by its section.
COMPOSE_VIEWS = ("html", "raw", "json", "diff", "blame")


def compose_view(
    session: Session,
    *,
    view: str = "html",
    sections: Sequence[str] | None = None,
    placement: str | None = None,
    last: bool = False,
) -> object:
    """Compose ``session``'s prompt (``last``: take the last one composed, composing nothing) and
    return it as ``view`` (one of :data:`COMPOSE_VIEWS`), limited to ``sections`` or to the
    sections of ``placement`` (not with ``diff`` or ``blame``, which show the whole prompt), what
    ``%compose`` shows. A wrong argument is a one-line ValueError and composes nothing."""
    if view not in COMPOSE_VIEWS:
        raise ValueError(f"unknown view {view!r} (views: {', '.join(COMPOSE_VIEWS)})")
    if isinstance(sections, str):
        sections = [sections]
    if view in ("diff", "blame") and (sections or placement):
        raise ValueError(f"the {view} view shows the whole prompt; drop sections and placement")
    if placement is not None and placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENTS)})")
    for name in sections or ():
        known = known_sections(session)
        if name not in known:
            raise ValueError(f"unknown section {name!r} (sections: {', '.join(known)})")
    if last:
        composed = session.composed
        if composed is None:
            raise ValueError("nothing composed yet: compose first (last=False)")
    else:
        composed = session.compose()
    return present(composed, view, sections=sections, placement=placement, placement_of=session.layout.placement_of)


def present(
    composed: ComposedPrompt,
    view: str,
    *,
    sections: Sequence[str] | None = None,
    placement: str | None = None,
    placement_of: Callable[[str], str | None] | None = None,
) -> object:
    """``composed`` as ``view`` (:data:`COMPOSE_VIEWS`), limited to ``sections`` or ``placement``;
    arguments already checked."""
    if view == "diff":
        from wm_kernel.instruments.diff import diff_prompts

        previous = composed.previous if composed.previous is not None else ComposedPrompt()
        return diff_prompts(previous, composed, old_label="previous", new_label="current")
    if view == "blame":
        return render.BlameView(composed)
    if view == "json":
        return render.PromptText(_json(composed, sections, placement))
    if view == "raw":
        return render.PromptText(_raw_text(composed, sections, placement))
    if sections or placement:
        return render.PromptView(composed, names=sections, placement=placement, placement_of=placement_of)
    return composed


def known_sections(session: Session) -> list[str]:
    """Every section name the session can produce: the layout's, the trinkets', the last prompt's."""
    names = ["base_prompt", *session.layout.sections()]
    names += [t.variable_name for t in session.trinkets.values()]
    if session.composed is not None:
        names += session.composed.section_names()
    return list(dict.fromkeys(names))


def _raw_text(composed: ComposedPrompt, sections: Sequence[str] | None, placement: str | None) -> str:
    # the whole text, however large: the PromptText previews it when shown
    if sections:
        return render.join_raw(
            [
                (r.name, r.content)
                for r in composed.sections
                if r.name in sections and (placement is None or r.placement == placement)
            ]
        )
    return render.join_raw(render.raw_parts(composed, placement))


def _json(composed: ComposedPrompt, sections: Sequence[str] | None, placement: str | None) -> str:
    data: Any
    if sections:
        data = [
            {
                "name": r.name,
                "placement": r.placement,
                "trinket": r.trinket,
                "cache_policy": r.cache_policy,
                "chars": r.chars,
                "content": r.content,
            }
            for r in composed.sections
            if r.name in sections
        ]
    elif placement:
        keys = {
            "system": ("cached_content", "non_cached_content"),
            "conversation_prefix": ("conversation_prefix_items",),
            "post_history": ("post_history_items",),
            "notification": ("notification_center",),
        }[placement]
        data = {key: composed[key] for key in keys}
    else:
        data = composed.as_dict()
    return json.dumps(data, ensure_ascii=False, indent=2)


def cache_view(
    session: Session,
    model: str | None = None,
    *,
    breakpoints: str | Sequence[str] = "auto",
    tools_tokens: int = 0,
    exchange: tuple[int, int] | None = None,
    wire: str | None = None,
    advice: bool = True,
) -> CacheView:
    """The recorded turns of ``session`` simulated against ``model``'s prompt-cache rules (None:
    the session's model, else the default), with advice unless ``advice`` is False: what
    ``%cache`` shows. A session that recorded nothing composes once first. A wrong argument is a
    one-line ValueError or TypeError."""
    from wm_kernel.cachesim.advice import advise
    from wm_kernel.display.cache_view import CacheView

    options: dict[str, Any] = {} if exchange is None else {"exchange": exchange}
    if session.history.empty:
        # check what can be checked before composing, so a mistake changes nothing
        from wm_kernel.cachesim.models import get_model

        if model is not None:
            get_model(model)
        session.compose()
    simulation = session.cache_simulation(
        model,
        breakpoints=breakpoints if isinstance(breakpoints, str) else list(breakpoints),
        tools_tokens=tools_tokens,
        wire=wire,
        **options,
    )
    return CacheView(simulation, advise(simulation) if advice else None)


__all__ = ["COMPOSE_VIEWS", "compose_view", "present", "cache_view", "known_sections"]
