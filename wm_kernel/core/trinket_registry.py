"""The trinkets a WorkingMemory holds: by class name and by section, one of each.

Examples
--------
>>> class Hello:
...     variable_name = "greeting"
...     name = "Hello"
...     def detach(self): pass
>>> registry = TrinketRegistry()
>>> registry.add(Hello())
[]
>>> registry.get("greeting").name
'Hello'
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Generic, TypeVar

from wm_kernel.core.prompt import OmittedSection
from wm_kernel.core.trinket_shape import Trinket

__all__ = ["TrinketRegistry"]

T = TypeVar("T", bound=Trinket)


class TrinketRegistry(Generic[T]):
    """Registered trinkets by class name, in registration order, with an index of their sections
    (a scan per registration would make n registrations quadratic)."""

    def __init__(self) -> None:
        #: Class name -> trinket, in registration order.
        self.by_name: dict[str, T] = {}
        self._sections: dict[str, str] = {}  # section -> name of the trinket registered for it
        # counts the changes of the registered trinkets and of their priorities (traits observed
        # through traitlets' ``observe``), and the trinkets whose priority cannot be observed
        self._revision = 0
        self._unwatched: set[str] = set()

    @property
    def revision(self) -> int | None:
        """A number that changes whenever a trinket is added or removed or a registered one's
        ``priority`` changes; None while a registered trinket has no ``observe`` to watch its
        priority with (a stand-in that is not a traitlets object). A budget report is keyed on it."""
        return None if self._unwatched else self._revision

    def _priority_changed(self, change: Any) -> None:
        self._revision += 1

    def add(self, trinket: T, *, replace: bool = False) -> list[T]:
        """Register ``trinket`` under its class name; returns the trinkets it replaced (detached),
        in the order found. A clash of name or section is a ValueError unless ``replace``."""
        name = type(trinket).__name__
        section = trinket.variable_name
        by_name = self.by_name
        found = (by_name.get(name), by_name.get(self._sections.get(section, "")))
        clashes = list({id(t): t for t in found if t is not None}.values())
        if clashes and not replace:
            other = clashes[0]
            what = "name" if other.name == name else f"section {section!r}"
            raise ValueError(
                f"a trinket with the same {what} is already registered ({other.name}); pass replace=True to replace it"
            )
        for old in clashes:
            self.remove(old)
        by_name[name] = trinket
        self._sections[section] = name
        self._revision += 1
        observe = getattr(trinket, "observe", None)
        if callable(observe):
            observe(self._priority_changed, names="priority")
        else:
            self._unwatched.add(name)
        return clashes

    def remove(self, trinket: T) -> None:
        """Detach a registered trinket and forget it."""
        trinket.detach()
        del self.by_name[trinket.name]
        self._sections.pop(trinket.variable_name, None)
        self._revision += 1
        if trinket.name in self._unwatched:
            self._unwatched.discard(trinket.name)
        else:
            trinket.unobserve(self._priority_changed, names="priority")  # type: ignore[attr-defined]

    def get(self, name: str) -> T:
        """The trinket of that class name (or section name); ValueError if none."""
        trinket = self.by_name.get(name)
        if trinket is None:
            for candidate in self.by_name.values():
                if candidate.variable_name == name:
                    return candidate
            known = ", ".join(self.by_name) or "none registered"
            raise ValueError(f"unknown trinket {name!r} (known: {known})")
        return trinket

    def omitted(self, held: Container[str]) -> list[OmittedSection]:
        """The sections of the trinkets not in ``held`` (the composer's), and why each is left out."""
        if all(map(held.__contains__, self._sections)):  # the usual compose: one test per section
            return []
        omitted = []
        for trinket in self.by_name.values():
            if trinket.variable_name in held:  # its update published its content: not omitted
                continue
            if trinket.error:
                omitted.append(OmittedSection(trinket.variable_name, trinket.name, "trinket failed", trinket.error))
            elif not trinket.enabled:
                omitted.append(OmittedSection(trinket.variable_name, trinket.name, "trinket disabled"))
            elif not trinket.content:
                omitted.append(OmittedSection(trinket.variable_name, trinket.name, "no content"))
        return omitted
