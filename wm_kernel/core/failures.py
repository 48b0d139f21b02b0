"""How WorkingMemory names a trinket's failure: its kind, and a segment collapse left unfinished.

Examples
--------
>>> failure_kind(ConnectionError("refused")), failure_kind(ValueError("bad"))
('infrastructure', 'logic')
"""

from __future__ import annotations

__all__ = ["failure_kind", "CollapseIncompleteError"]

# Exception type names that mark a failure of infrastructure (a store, a network, a service) rather
# than of the trinket's own logic. The original classifies by type name the same way.
_INFRA_MARKERS = (
    "Connection",
    "Timeout",
    "Operational",
    "Database",
    "Interface",
    "Redis",
    "Valkey",
    "Network",
    "Socket",
    "Unavailable",
    "BrokenPipe",
)


def failure_kind(exc: BaseException) -> str:
    """'infrastructure' or 'logic', by the exception's type name (and OSError ancestry)."""
    name = type(exc).__name__
    if isinstance(exc, OSError) or any(marker in name for marker in _INFRA_MARKERS):
        return "infrastructure"
    return "logic"


class CollapseIncompleteError(RuntimeError):
    """A segment collapse could not flush some stateful trinkets (named in ``not_flushed``, with
    the error of each); every other trinket was flushed. The ones named are left out of the
    prompt and flushed again before their next update."""

    def __init__(self, segment_id: str, not_flushed: list[tuple[str, Exception]]) -> None:
        self.segment_id = segment_id
        self.not_flushed = not_flushed
        names = "; ".join(f"{name} ({type(exc).__name__}: {exc})" for name, exc in not_flushed)
        super().__init__(
            f"segment {segment_id} collapsed, but {len(not_flushed)} trinket(s) were "
            f"not flushed: {names}; each is left out of the prompt and flushed again "
            f"before its next update"
        )
