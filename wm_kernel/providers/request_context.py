"""What one compared request's cause is judged with, besides its two usages.

A :class:`Context` holds, for one row of a reconciliation, the model it was simulated on, what the
simulation says of it (its miss reason, the first changed section), the prefix digests of the request
before it and, for an imported log whose ``request_context()`` tells them, its place in its
conversation: whether it is the conversation's first request and a subagent's, the model before it,
a compaction, the pause since the previous request and the cache's TTL, and the tokens read before
the agent changed text its log does not hold. :func:`contexts` builds one per compared row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.dialects.usage import Usage

__all__ = ["Context", "contexts"]


@dataclasses.dataclass(frozen=True)
class Context:
    """What one row's cause is judged with, besides the two usages."""

    profile: ModelProfile
    miss_reason: str = "none"
    divergent: str = ""
    previous: Mapping[str, str] | None = None
    first: bool = False
    subagent: bool = False
    model_before: str | None = None
    compaction: bool = False
    pause: timedelta | None = None
    ttl: timedelta | None = None
    #: the tokens the provider read before the agent changed text its log does not hold (the
    #: log's ``request_context()``), None where it did not
    rewritten: int | None = None


def _one_hour_conversations(
    count: int,
    compared: Mapping[int, int],
    aligned: Sequence[tuple[Usage, Usage]],
    context: Sequence[Mapping[str, Any]] | None,
) -> set[str]:
    """The conversations (by the log's ``request_context()``; "" without one) of which a compared
    request wrote a one-hour cache entry: their prefixes live an hour, the others the default."""
    one_hour: set[str] = set()
    for index in range(count):
        about = context[index] if context is not None else {}
        conversation = str(about.get("conversation", ""))
        if index in compared:
            b = aligned[compared[index]][1]
            if b.cache_write_1h_tokens:
                one_hour.add(conversation)
    return one_hour


def contexts(
    simulation: Simulation,
    rows: Sequence[int],
    aligned: Sequence[tuple[Usage, Usage]],
    previous: Sequence[Mapping[str, str] | None] | None = None,
    context: Sequence[Mapping[str, Any]] | None = None,
) -> list[Context]:
    """Each compared row's :class:`Context`: ``rows`` are the simulated requests compared (in
    order), ``previous`` the prefix digests of the request before each, ``context`` the log's
    ``request_context()`` for every simulated request.
    """
    t = simulation.turns
    reasons, labels, times = t["miss_reason"].tolist(), t["divergent_label"].tolist(), t["at"].tolist()
    out = []
    last: dict[str, int] = {}
    compared = dict(zip(rows, range(len(rows)), strict=True))
    one_hour = _one_hour_conversations(len(t), compared, aligned, context)
    for index in range(len(t)):
        about = context[index] if context is not None else {}
        conversation = str(about.get("conversation", ""))
        before = last.get(conversation)
        last[conversation] = index
        if index not in compared:
            continue
        row = compared[index]
        profile = simulation.models[index]
        ttl = (
            timedelta(hours=1)
            if conversation in one_hour and "1h" in profile.ttls
            else profile.ttls[profile.default_ttl]
        )
        prefix_before = previous[row] if previous is not None else (aligned[row - 1][1].prefix if row else None)
        first_message = about.get("first_message")
        compaction = (
            before is not None
            and context is not None
            and first_message is not None
            and context[before].get("first_message") not in (None, first_message)
        )
        out.append(
            Context(
                profile,
                str(reasons[index]),
                str(labels[index] or ""),
                prefix_before,
                first=context is not None and before is None,
                subagent=bool(about.get("subagent")),
                model_before=simulation.models[before].name if before is not None else None,
                compaction=compaction,
                pause=(times[index] - times[before]) if before is not None else None,
                ttl=ttl,
                rewritten=about.get("rewritten"),
            )
        )
    return out
