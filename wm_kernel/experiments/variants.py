"""Variants: one way to run a scenario differently (a layout, trinkets switched off, a wording).

Every way of describing a variant (a :class:`Variant`, a Layout, a dict of its fields, a built-in
layout's name, the command line's ``NAME=SPEC``) ends in :class:`Variant`, which validates it.

Examples
--------
>>> Variant(name="orig", layout="original").layout.name
'original'
>>> Variant(layout="sideways")
Traceback (most recent call last):
...
ValueError: unknown built-in layout 'sideways' (built in: default, original)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wm_kernel.core.composer.layout import Layout

if TYPE_CHECKING:
    from wm_kernel.session import Session

#: The layouts a variant (or the command line) may name.
BUILTIN_LAYOUTS: dict[str, Callable[[], Layout]] = {"default": Layout.default, "original": Layout.original}
#: The fields of a Variant, as a dict of them may give them.
VARIANT_FIELDS = ("name", "layout", "base_prompt", "disabled", "styles", "hook")


@dataclass(frozen=True)
class Variant:
    """One way to run a scenario differently.

    Parameters
    ----------
    name:
        How tables and plots label it.
    layout:
        The layout to compose with (None: the scenario's): a Layout, a mapping placement ->
        section names, or the name of a built-in layout (``default``, ``original``).
    base_prompt:
        A string replacing every base prompt of the scenario, or a function ``f(text) -> text``
        applied to each (a wording change).
    disabled:
        Trinket names switched off for the whole run (recorded ``set_enabled`` feeds are ignored).
    styles:
        The wording of some trinkets for the whole run: ``{"ReminderManager": "revised"}``, or one
        style name for every trinket that offers it (``"revised"``; the others keep "original").
        Recorded ``set_style`` feeds of those trinkets are ignored. A trinket that does not offer
        the style named for it is a ValueError when the run starts.
    hook:
        ``hook(session)``, called on the fresh Session before the first step: change a trinket's
        wording trait, the composer's ``hud_title``, anything.
    """

    name: str = ""
    layout: Layout | None = None
    base_prompt: str | Callable[[str], str] | None = None
    disabled: tuple[str, ...] = ()
    styles: str | Mapping[str, str] = dataclasses.field(default_factory=dict)
    hook: Callable[[Session], None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Variant name must be a str, got {type(self.name).__name__}")
        if isinstance(self.layout, str):
            if self.layout not in BUILTIN_LAYOUTS:
                raise ValueError(f"unknown built-in layout {self.layout!r} (built in: {', '.join(BUILTIN_LAYOUTS)})")
            object.__setattr__(self, "layout", BUILTIN_LAYOUTS[self.layout]())
        if isinstance(self.layout, Mapping):
            object.__setattr__(self, "layout", Layout(self.layout, name=self.name or "custom"))
        if self.layout is not None and not isinstance(self.layout, Layout):
            raise TypeError(f"Variant layout must be a Layout or a mapping, got {type(self.layout).__name__}")
        if self.base_prompt is not None and not (isinstance(self.base_prompt, str) or callable(self.base_prompt)):
            raise TypeError("Variant base_prompt must be a str or a function f(text) -> text")
        disabled: object = self.disabled
        if isinstance(disabled, str):
            disabled = (disabled,)
        if not isinstance(disabled, Iterable) or not all(isinstance(n, str) for n in disabled):
            raise TypeError("Variant disabled must be trinket names (strings)")
        object.__setattr__(self, "disabled", tuple(disabled))
        styles: object = self.styles
        if isinstance(styles, str):
            if not styles.strip():
                raise ValueError("Variant styles must name a style, got ''")
        elif isinstance(styles, Mapping):
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in styles.items()):
                raise TypeError("Variant styles must map trinket names to style names (strings)")
            object.__setattr__(self, "styles", dict(styles))
        else:
            raise TypeError(
                f"Variant styles must be a style name or a dict trinket -> style, got {type(styles).__name__}"
            )
        if self.hook is not None and not callable(self.hook):
            raise TypeError("Variant hook must be a function hook(session)")

    def apply_styles(self, session: Session) -> set[str]:
        """Set the styles this variant asks for on ``session``'s trinkets; the names of the
        trinkets it set (whose recorded ``set_style`` feeds a replay then ignores)."""
        styled: set[str] = set()
        if isinstance(self.styles, str):
            for trinket in session.working_memory.trinkets.values():
                if self.styles in type(trinket).styles:
                    trinket.set_style(self.styles)
                    styled.add(trinket.name)
            if not styled:
                raise ValueError(f"variant {self.name!r}: no trinket of the session offers style {self.styles!r}")
            return styled
        for name, style in self.styles.items():
            try:
                trinket = session.trinket(name)
                trinket.set_style(style)
            except ValueError as exc:
                raise ValueError(f"variant {self.name!r}: {exc}") from None
            styled.add(trinket.name)
        return styled

    def wording(self, text: str) -> str:
        """The base prompt this variant uses where the scenario has ``text``."""
        if self.base_prompt is None:
            return text
        if isinstance(self.base_prompt, str):
            return self.base_prompt
        result = self.base_prompt(text)
        if not isinstance(result, str):
            raise TypeError(
                f"variant {self.name!r}: base_prompt function returned {type(result).__name__}, expected str"
            )
        return result


def as_variant(value: Variant | Layout | Mapping[str, Any] | None, name: str = "") -> Variant:
    """A Variant from a Variant, a Layout, a dict of Variant fields, or None (no change).

    >>> as_variant(Layout.original(), "original").layout.name
    'original'
    >>> as_variant({"disabled": ["TimeManager"]}, "no-time").disabled
    ('TimeManager',)
    """
    if value is None:
        return Variant(name=name)
    if isinstance(value, Variant):
        return value if value.name or not name else dataclasses.replace(value, name=name)
    if isinstance(value, Layout):
        return Variant(name=name or value.name, layout=value)
    if isinstance(value, Mapping):
        allowed = VARIANT_FIELDS
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise ValueError(f"variant {name!r}: unknown field {unknown[0]!r} (fields: {', '.join(allowed)})")
        fields = dict(value)
        fields.setdefault("name", name)
        return Variant(**fields)
    raise TypeError(f"variant {name!r} must be a Layout, a Variant or a dict, got {type(value).__name__}")
