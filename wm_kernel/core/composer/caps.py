"""Section caps: a most size for one section, in tokens or characters, hard or soft.

A memory block whose limit nobody enforces grows until it fills the window or the bill. A
:class:`Cap` on a section (``WorkingMemory.set_cap(name, limit, unit=, mode=)``, or
``%trinket NAME cap 800``) is applied on every compose, before the token budget:

* ``hard``: the composed section never exceeds the cap. A trinket that ranks its items
  (``ranked_items()``, as the token budget uses) shows as many of its best items as fit; any other
  section (or one whose single best item is still too big) is cut, and ends with a visible
  :data:`CUT_MARKER` line saying so. If not even the marker fits, the section is left out.
* ``soft``: the section is shown whole, followed by an :data:`OVER_MARKER` line saying by how
  much it is over, so a reader of the prompt (or the model) sees it.

Neither changes what a trinket stores: the cap shapes what is composed. Each compose's
:class:`CapResult` list is in ``ComposedPrompt.budget.caps``.

Examples
--------
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> c = SystemPromptComposer(); c.set_base_prompt("Hi.")
>>> c.add_section("datetime_section", "x" * 100)
>>> [r.action for r in apply_caps(c, [], {"datetime_section": Cap(40, "chars")}, None)]
['cut']
>>> text = c.get_entry("datetime_section")[0]; len(text) <= 40, text.endswith("cap of 40 chars]")
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.tokens.counting import Counts

UNITS = ("tokens", "chars")
MODES = ("hard", "soft")
CUT_MARKER = "\n[… cut to fit a cap of {limit} {unit}]"
OVER_MARKER = "\n[over its cap: {size} of {limit} {unit}]"


class RanksItems(Protocol):
    """What a cap needs of a trinket: its section's name and its ranked items."""

    variable_name: ClassVar[str]

    def ranked_items(self) -> list[str]: ...

    def content_keeping(self, keep: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Cap:
    """At most ``limit`` ``unit`` (tokens or chars); ``hard`` cuts, ``soft`` marks."""

    limit: int
    unit: str = "tokens"
    mode: str = "hard"

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"a cap's limit must be a positive int, got {self.limit!r}")
        if self.unit not in UNITS:
            raise ValueError(f"a cap's unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.mode not in MODES:
            raise ValueError(f"a cap's mode must be one of {', '.join(MODES)}, got {self.mode!r}")

    def __str__(self) -> str:
        return f"{self.mode} cap of {self.limit:,} {self.unit}"


@dataclass(frozen=True, slots=True)
class CapResult:
    """What a cap did to one section in one compose: ``size`` before, ``shown`` after (in the cap's
    unit), and ``action``: ``within``, ``kept N of M items``, ``cut``, ``marked`` or ``left out``."""

    section: str
    cap: Cap
    size: int
    shown: int
    action: str

    @property
    def share(self) -> float:
        """How full the section is: its size over the limit (above 1 when over)."""
        return self.size / self.cap.limit


def _measure(cap: Cap, counter: Counts | None) -> Callable[[str], int]:
    if cap.unit == "chars":
        return len
    if counter is None:
        raise ValueError("a cap in tokens needs a token counter")
    return counter.count


def _cut(text: str, cap: Cap, size: Callable[[str], int]) -> str | None:
    """The longest prefix of ``text`` that fits with the cut marker (or a bare ellipsis)."""
    for marker in (CUT_MARKER.format(limit=cap.limit, unit=cap.unit), "…"):
        if size(marker) > cap.limit:
            continue
        lo, hi = 0, len(text)
        while lo < hi:  # the longest prefix that fits, by bisection on its length
            mid = (lo + hi + 1) // 2
            if size(text[:mid].rstrip() + marker) <= cap.limit:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo].rstrip() + marker
    return None


def _keep_items(trinket: RanksItems, cap: Cap, size: Callable[[str], int]) -> tuple[str, int, int] | None:
    """(text, kept, of) with the most of ``trinket``'s best items that fit, or None."""
    try:
        items = len(trinket.ranked_items())
    except Exception:  # a trinket that cannot rank now is cut like any text
        return None
    found = None
    lo, hi = 1, items - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        try:
            text = trinket.content_keeping(mid)
        except Exception:
            return None
        if isinstance(text, str) and text.strip() and size(text) <= cap.limit:
            found, lo = (text, mid, items), mid + 1
        else:
            hi = mid - 1
    return found


def with_cap(
    caps: Mapping[str, Cap], section: str, limit: int | None, unit: str, mode: str
) -> tuple[dict[str, Cap], Cap | None]:
    """``caps`` with ``section`` capped at ``limit`` (a new :class:`Cap`, returned too) or, with
    ``limit=None``, without its cap (ValueError if it had none)."""
    changed = dict(caps)
    if limit is None:
        if changed.pop(section, None) is None:
            raise ValueError(f"section {section!r} has no cap to remove")
        return changed, None
    cap = changed[section] = Cap(limit, unit, mode)
    return changed, cap


def apply_caps(
    composer: SystemPromptComposer, trinkets: Iterable[RanksItems], caps: Mapping[str, Cap], counter: Counts | None
) -> list[CapResult]:
    """Apply ``caps`` (section name -> Cap) to ``composer``'s held sections (see the module
    docstring); the base prompt is never capped."""
    results = []
    by_section = {t.variable_name: t for t in trinkets}
    held = set(composer.section_names)
    for name, cap in caps.items():
        if name not in held or name == "base_prompt":
            continue
        text, cache_policy, trinket_name = composer.get_entry(name)
        size = _measure(cap, counter)
        before = size(text)
        if before <= cap.limit:
            results.append(CapResult(name, cap, before, before, "within"))
            continue
        if cap.mode == "soft":
            marked = text + OVER_MARKER.format(size=f"{before:,}", limit=f"{cap.limit:,}", unit=cap.unit)
            composer.add_section(name, marked, cache_policy, trinket_name)
            results.append(CapResult(name, cap, before, size(marked), "marked"))
            continue
        kept = _keep_items(by_section[name], cap, size) if name in by_section else None
        if kept is not None:
            shown, n, of = kept
            action = f"kept {n} of {of} items"
        else:
            cut = _cut(text, cap, size)
            if cut is None:
                composer.remove_section(name)
                results.append(CapResult(name, cap, before, 0, "left out"))
                continue
            shown, action = cut, "cut"
        composer.add_section(name, shown, cache_policy, trinket_name)
        results.append(CapResult(name, cap, before, size(shown), action))
    return results
