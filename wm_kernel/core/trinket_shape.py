"""What the core asks of a trinket, and the priorities a token budget ranks sections by.

WorkingMemory and the budget drive trinkets, but the trinket contract (``trinkets/base.py``) is a
layer above the core and builds on it. So the core names the part of a trinket it uses as a
Protocol; ``EventAwareTrinket`` has all of it, and a test can hand in a small stand-in.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar, Protocol

__all__ = ["Trinket", "DEFAULT_PRIORITY", "NEVER_DROP", "BUDGET_KEEP"]

#: The priority of a trinket that sets no ``default_priority`` (see docs/budgets.md).
DEFAULT_PRIORITY = 50
#: A priority at or above this is never dropped by a token budget (the base prompt is never dropped).
NEVER_DROP = 1_000_000
#: The update-context key ``content_keeping`` passes: the ids of the items to show.
BUDGET_KEEP = "budget_keep"


class Trinket(Protocol):
    """A content provider for one prompt section, as WorkingMemory and the budget see it.

    Its class name (``name``) addresses it; ``variable_name`` is the section it publishes. Its
    section text ('' for none), last failure ('' for none), on/off switch, the time its content
    last changed and its budget priority are traits; WorkingMemory sets the first three and the
    time when the trinket fails. The methods are the steps of its life WorkingMemory drives: an
    update (the trinket finishes a flush that failed before first), the end of a segment,
    detaching; and what a budget asks:
    the ids of its items, best first, and its section showing only the first ``keep`` of them.
    """

    variable_name: ClassVar[str]
    content: str
    error: str
    enabled: bool
    last_updated: datetime | None
    priority: int

    @property
    def name(self) -> str: ...

    def hold_trait_notifications(self) -> AbstractContextManager[Any]: ...

    def run_update(self, continuum_id: str, user_id: str, context: Mapping[str, Any]) -> None:
        """The UpdateTrinketEvent WorkingMemory is delivering to it (by its fields: the event
        is built only if asked for, see ``EventBus.current_event``): regenerate the section and
        publish it as a TrinketContentEvent of ``continuum_id`` and ``user_id`` (the
        WorkingMemory's)."""

    def end_segment(self) -> None: ...

    def detach(self) -> None: ...

    def ranked_items(self) -> list[str]: ...

    def content_keeping(self, keep: int) -> str: ...
