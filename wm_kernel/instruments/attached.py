"""An instrument attached to one session: it observes the session's ``composed`` trait, at most one
of a kind per session, found by the session; both are held weakly, so either may go first.

:class:`~wm_kernel.instruments.history.History` and :class:`~wm_kernel.instruments.items.ItemHistory`
attach this way; each keeps its own map of the sessions it is attached to (``_attached``).
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar, Protocol, Self

__all__ = ["AttachedInstrument", "ObservesComposes"]


class ObservesComposes(Protocol):
    """A session an instrument can attach to: a ``composed`` trait to observe (traitlets')."""

    def observe(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...

    def unobserve(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...


class AttachedInstrument:
    """The bookkeeping of an instrument attached to one session (see the module docstring).

    A subclass sets ``_attached`` (its own ``weakref.WeakKeyDictionary``), defines
    ``_on_composed(change)``, and in its ``attach`` calls :meth:`_refuse_second` before building
    itself and :meth:`_observe` after.
    """

    _attached: ClassVar[weakref.WeakKeyDictionary[Any, Any]]

    def __init__(self) -> None:
        self._session: weakref.ref[Any] | None = None

    @classmethod
    def find(cls, session: object) -> Self | None:
        """The instrument of this kind attached to ``session``, or None (nothing is attached by asking)."""
        found: Self | None = cls._attached.get(session)
        return found

    @classmethod
    def _refuse_second(cls, session: object, message: str) -> None:
        if cls._attached.get(session) is not None:
            raise ValueError(message)

    def _observe(self, session: ObservesComposes) -> None:
        self._session = weakref.ref(session)
        session.observe(self._on_composed, "composed")
        type(self)._attached[session] = self

    def _on_composed(self, change: Any) -> None:
        raise NotImplementedError

    def detach(self) -> None:
        """Stop observing the session this was attached to (a no-op if none)."""
        session = self._session() if self._session is not None else None
        self._session = None
        if session is not None:
            session.unobserve(self._on_composed, "composed")
            if type(self)._attached.get(session) is self:
                del type(self)._attached[session]
