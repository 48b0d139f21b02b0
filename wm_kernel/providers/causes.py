"""Why a billed turn differs from its simulation: a cause per row of a reconciliation.

:func:`cause` names the first of these that applies to a row (its two usages, their prompt
dollars and its :class:`~wm_kernel.providers.request_context.Context`), with a sentence saying why:

``match``            the billed tokens are the predicted ones, or the prompt's dollars agree
                     within ``MATCH_TOLERANCE`` (5%; the detail says by how much).
``ttl_priced``       the same tokens, but writes billed at the other TTL (1h where 5m was
                     modelled, or the reverse).
``new_conversation`` the first request of a conversation: what the provider's cache held from
                     before the log (an agent's system prompt cached by an earlier session) is
                     not in the simulation.
``subagent``         the same for the first request of a subagent's conversation (its own cache).
``model_switch``     the conversation's model changed since its previous request: a provider
                     caches per model.
``compaction``       the conversation was rewritten from its first message (a compacted or new
                     chain), so its cached messages could not be read.
``ttl_expired``      a pause since the conversation's previous request longer than the cache's
                     TTL (the detail gives both).
``prefix_changed``   the prefix changed since the previous request: the simulation saw a changed
                     block (the detail names the first one), or the request bodies show the tools,
                     the cached system text or the parameters changed, or (a log without the
                     system prompt) the provider read only part of what the log does not hold
                     although the rest was live: the agent changed text it does not log.
``tokenizer``        the counts differ by a steady factor (two or more turns agreeing within 2%):
                     the provider's tokenizer counts differently; the detail names the factor, and
                     :meth:`~wm_kernel.providers.reconciliation.Reconciliation.calibration`
                     hands it on.
``provider_miss``    the provider read fewer tokens than the simulation, which held the prefix
                     live and identical (byte-identical to the previous request's, where the
                     request bodies are there to show it): the provider missed. Also for OpenAI,
                     which reports no writes: fewer cached tokens than a live identical prefix.
``not_in_log``       the prefix read as modelled, but more new tokens were billed than the log's new
                     messages count: the agent sent text its log does not hold (a log without
                     request bodies only), or counts differ.
``unknown``          anything none of these explains.

Prefix evidence comes from ``Usage.prefix`` (a usage log line with its request body, see
``wm_kernel.dialects.usage.read_usage``), from the exchanges a session recorded while sending, or
from the request bodies of an imported log. :func:`steady_factor` finds the steady tokenizer factor
over all the rows, before any row's cause is told.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import timedelta
from typing import NamedTuple

from wm_kernel.dialects.usage import Usage
from wm_kernel.providers.request_context import Context

__all__ = ["CAUSES", "FACTOR_TOLERANCE", "MATCH_TOLERANCE", "cause", "steady_factor"]

CAUSES = (
    "match",
    "ttl_priced",
    "new_conversation",
    "subagent",
    "model_switch",
    "compaction",
    "ttl_expired",
    "prefix_changed",
    "tokenizer",
    "provider_miss",
    "not_in_log",
    "unknown",
)
_PARTS = {"tools": "tools changed", "system": "cached system text changed", "params": "parameters changed"}
#: Ratios within this fraction of each other are one steady tokenizer factor.
FACTOR_TOLERANCE = 0.02
#: A turn whose billed and predicted prompt dollars differ by at most this fraction is a match.
MATCH_TOLERANCE = 0.05


def steady_factor(pairs: Sequence[tuple[Usage, Usage]]) -> tuple[float | None, set[int]]:
    """The largest group (2 or more) of turns whose billed/predicted ratios agree and are not 1:
    first among turns that read and wrote as modelled; else among all turns, by their totals (a
    tokenizer that counts every prompt 1.145x is steady even where the cache split moved)."""
    for alike in (True, False):
        factor, group = _steady_group(pairs, alike)
        if factor is not None:
            return factor, group
    return None, set()


def _steady_group(pairs: Sequence[tuple[Usage, Usage]], alike: bool) -> tuple[float | None, set[int]]:
    ratios = {
        i: b.prompt_tokens / p.prompt_tokens
        for i, (p, b) in enumerate(pairs)
        if p.prompt_tokens
        and abs(b.prompt_tokens / p.prompt_tokens - 1) > FACTOR_TOLERANCE / 2
        and (
            not alike
            or (
                (b.cache_read_tokens > 0) == (p.cache_read_tokens > 0)
                and (b.cache_write_tokens > 0) == (p.cache_write_tokens > 0)
            )
        )
    }
    best: set[int] = set()
    for ratio in ratios.values():
        group = {i for i, r in ratios.items() if abs(r - ratio) <= FACTOR_TOLERANCE * ratio}
        if len(group) > len(best):
            best = group
    if len(best) < 2:
        return None, set()
    return statistics.median(ratios[i] for i in best), best


def _scaled(p: Usage, b: Usage, factor: float) -> bool:
    """Whether every part of ``b`` (uncached, read, written) is ``factor`` x ``p``'s (within 10%,
    or 64 tokens): a tokenizer scales them all, a miss moves tokens from one to another."""
    return all(
        abs(bv - factor * pv) <= max(64.0, 0.10 * factor * pv)
        for pv, bv in (
            (p.input_tokens, b.input_tokens),
            (p.cache_read_tokens, b.cache_read_tokens),
            (p.cache_write_tokens, b.cache_write_tokens),
        )
    )


def _minutes(value: timedelta) -> str:
    minutes = value.total_seconds() / 60
    return f"{minutes:.0f} min" if minutes >= 10 else f"{minutes:.1f} min"


class _Verdict(NamedTuple):
    """A row's cause (one of :data:`CAUSES`) and the sentence that explains it."""

    cause: str
    detail: str


def cause(
    p: Usage,
    b: Usage,
    p_usd: float | None,
    b_usd: float | None,
    ctx: Context,
    in_steady: bool,
    factor: float | None,
    steady: int = 0,
) -> _Verdict:
    """The cause of one row (module docstring), the first that applies."""
    return (
        _same_counts_cause(p, b, ctx)
        or _within_tolerance_cause(p, p_usd, b_usd, ctx)
        or _steady_factor_cause(p, b, in_steady, factor, steady)
        or _conversation_cause(p, b, ctx)
        or _miss_cause(p, b, ctx)
        or _count_cause(p, b)
        or _steady_total_cause(p, b, in_steady, factor, steady)
        or _Verdict("unknown", "billed tokens differ from the simulation in no pattern known here")
    )


def _same_counts_cause(p: Usage, b: Usage, ctx: Context) -> _Verdict | None:
    """Billed exactly as simulated (a match, or the cache event it was), or only the TTL priced apart."""
    same_total = (p.input_tokens, p.cache_read_tokens, p.cache_write_tokens) == (
        b.input_tokens,
        b.cache_read_tokens,
        b.cache_write_tokens,
    )
    if not same_total:
        return None
    if p.cache_write_1h_tokens == b.cache_write_1h_tokens:
        event = _event(p, ctx)
        return (
            _Verdict("match", "") if event is None else _Verdict(event.cause, f"{event.detail}; as simulated, exactly")
        )
    if b.cache_write_1h_tokens > p.cache_write_1h_tokens:
        return _Verdict(
            "ttl_priced",
            f"{b.cache_write_1h_tokens - p.cache_write_1h_tokens:,} write tokens "
            f"billed at the 1h price where 5m was modelled",
        )
    return _Verdict(
        "ttl_priced",
        f"{p.cache_write_1h_tokens - b.cache_write_1h_tokens:,} write tokens "
        f"billed at the 5m price where 1h was modelled",
    )


def _within_tolerance_cause(p: Usage, p_usd: float | None, b_usd: float | None, ctx: Context) -> _Verdict | None:
    """Billed within :data:`MATCH_TOLERANCE` of the simulated dollars (a match, or its cache event);
    no verdict by dollars where either side is unpriced."""
    if p_usd is None or b_usd is None:
        return None
    scale = max(abs(b_usd), abs(p_usd))
    if not scale or abs(b_usd - p_usd) > MATCH_TOLERANCE * scale:
        return None
    within = f"within {MATCH_TOLERANCE:.0%} ({(b_usd - p_usd) / scale:+.1%} of the prompt's dollars)"
    event = _event(p, ctx)
    if event is not None:  # what the simulation rightly predicted the cost of
        return _Verdict(event.cause, f"{event.detail}; as simulated, {within}")
    return _Verdict("match", within)


def _steady_factor_cause(p: Usage, b: Usage, in_steady: bool, factor: float | None, steady: int) -> _Verdict | None:
    """Every count scaled by the factor a steady group of turns shares: another tokenizer."""
    if in_steady and factor is not None and _scaled(p, b, factor):
        return _Verdict("tokenizer", f"counts x{factor:.2f} (steady over {steady} turns)")
    return None


def _steady_total_cause(p: Usage, b: Usage, in_steady: bool, factor: float | None, steady: int) -> _Verdict | None:
    """What no other cause explains, where the prompt's total is the steady factor x the simulated
    one though the cache split moved: still the tokenizer (the move said)."""
    if not in_steady or factor is None:
        return None
    if p.prompt_tokens and abs(b.prompt_tokens / p.prompt_tokens - factor) <= FACTOR_TOLERANCE * factor:
        moved = b.cache_read_tokens - round(factor * p.cache_read_tokens)
        split = (
            f"; {abs(moved):,} tokens {'more' if moved > 0 else 'fewer'} read from the cache than the factor gives"
            if moved
            else ""
        )
        return _Verdict("tokenizer", f"counts x{factor:.3f} in total (steady over {steady} turns){split}")
    return None


def _conversation_cause(p: Usage, b: Usage, ctx: Context) -> _Verdict | None:
    """A conversation's first request, a switch of model, or a rewritten (compacted) conversation."""
    if ctx.first:
        kind = "subagent" if ctx.subagent else "new_conversation"
        what = "a subagent's conversation" if ctx.subagent else "the conversation"
        if b.cache_read_tokens > p.cache_read_tokens:
            return _Verdict(
                kind,
                f"first request of {what}: the provider's cache held "
                f"{b.cache_read_tokens:,} tokens from before the log",
            )
        return _Verdict(kind, f"first request of {what}: nothing of it was cached before")
    if ctx.model_before is not None and ctx.model_before != p.model:
        return _Verdict("model_switch", f"{ctx.model_before} -> {p.model}: a provider caches per model")
    if ctx.compaction:
        return _Verdict(
            "compaction", "the conversation was rewritten from its first message (compacted or a new chain)"
        )
    return None


def _miss_cause(p: Usage, b: Usage, ctx: Context) -> _Verdict | None:
    """Less read than simulated: an expired entry, a changed prefix, or the provider's own miss."""
    billed_less = b.cache_read_tokens < p.cache_read_tokens * (1 - MATCH_TOLERANCE)
    if billed_less and ctx.pause is not None and ctx.ttl is not None and ctx.pause >= ctx.ttl:
        return _Verdict(
            "ttl_expired",
            f"a pause of {_minutes(ctx.pause)} since the previous request, over the {_minutes(ctx.ttl)} TTL",
        )
    if ctx.miss_reason == "ttl_expired":
        return _Verdict("ttl_expired", "the cached entry had expired (simulation)")
    if (rewrite := _rewrite_verdict(ctx)) is not None:
        return rewrite
    changed = [_PARTS[k] for k in _PARTS if b.prefix and ctx.previous and b.prefix.get(k) != ctx.previous.get(k)]
    if billed_less and changed:
        first = (
            f"; first changed section: {ctx.divergent}"
            if ctx.divergent and "params" not in [k for k in _PARTS if _PARTS[k] in changed]
            else ""
        )
        return _Verdict("prefix_changed", ", ".join(changed) + " since the previous request" + first)
    if billed_less and b.cache_read_tokens + b.cache_write_tokens <= p.cache_read_tokens + p.cache_write_tokens * 2:
        if b.prefix and ctx.previous:
            return _Verdict(
                "provider_miss",
                f"prefix byte-identical to the previous request and live "
                f"({p.cache_read_tokens:,} tokens modelled as read); billed "
                + ("a write" if b.cache_write_tokens > p.cache_write_tokens else f"a read of {b.cache_read_tokens:,}"),
            )
        return _Verdict(
            "provider_miss",
            f"the simulation holds the prefix live and identical "
            f"({p.cache_read_tokens:,} tokens modelled as read); billed a read "
            f"of {b.cache_read_tokens:,}",
        )
    return None


def _count_cause(p: Usage, b: Usage) -> _Verdict | None:
    """The cached prefix read as modelled, but the new messages counted apart from what was billed."""
    read_as_modelled = abs(b.cache_read_tokens - p.cache_read_tokens) <= MATCH_TOLERANCE * max(p.cache_read_tokens, 1)
    if not (read_as_modelled and p.cache_read_tokens):
        return None
    if b.prefix == {} and b.cache_write_tokens > p.cache_write_tokens:
        return _Verdict(
            "not_in_log",
            f"the cached prefix read as modelled; "
            f"{b.cache_write_tokens - p.cache_write_tokens:,} more new tokens billed "
            f"than the log's new messages count (text the agent sent that its log "
            f"does not hold, or their count)",
        )
    if b.cache_write_tokens < p.cache_write_tokens:
        return _Verdict(
            "tokenizer",
            f"the cached prefix read as modelled; the new messages count "
            f"{p.cache_write_tokens - b.cache_write_tokens:,} tokens more here than billed",
        )
    return None


def _rewrite_verdict(ctx: Context) -> _Verdict | None:
    """The agent changed text its log does not hold (read off the usage), so the prefix changed."""
    if ctx.rewritten is None:
        return None
    return _Verdict(
        "prefix_changed",
        f"the provider read only the first {ctx.rewritten:,} tokens although the rest was live: "
        f"the agent changed what follows them, in the part its log does not hold (modelled from "
        f"the usage; a log without it cannot tell this from the provider's own miss)",
    )


def _event(p: Usage, ctx: Context) -> _Verdict | None:
    """A cache event of this row that decides its cost even when the simulation predicted it."""
    if (rewrite := _rewrite_verdict(ctx)) is not None:
        return rewrite
    if ctx.first and ctx.subagent:
        return _Verdict("subagent", "first request of a subagent's conversation (its own cache)")
    if ctx.model_before is not None and ctx.model_before != p.model:
        return _Verdict("model_switch", f"{ctx.model_before} -> {p.model}: a provider caches per model")
    if ctx.compaction:
        return _Verdict(
            "compaction", "the conversation was rewritten from its first message (compacted or a new chain)"
        )
    if ctx.pause is not None and ctx.ttl is not None and ctx.pause >= ctx.ttl and ctx.miss_reason == "ttl_expired":
        return _Verdict(
            "ttl_expired",
            f"a pause of {_minutes(ctx.pause)} since the previous request, over the {_minutes(ctx.ttl)} TTL",
        )
    return None
