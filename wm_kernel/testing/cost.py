"""What a section whose bytes move costs: the cache simulator plays an hour of requests twice.

For a moved section, :func:`instability_cost` plays ``turns_per_hour`` requests on a model carrying
the compose where it moved, once with the section's bytes fixed and once with them new on every
request (what a deployment sees when they move between workers, or every second); the difference
is the cost of the instability. Both the stability checker (:mod:`wm_kernel.testing.stability`) and
the logged-prefix check (:mod:`wm_kernel.testing.logcheck`) price their findings with it.

:func:`mira_instability_cost` prices the same on MIRA's wire (docs/mira-wire.md), over a day: the
tools and the whole system text (cached and "non-cached" sections alike) under 1-hour breakpoints,
the conversation prefix, the history (the exchanges of the hour so far, one segment an hour) under a
1-hour breakpoint on its last message, each
post-history item under a 5-minute one, then the HUD and a new user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from wm_kernel.testing.replay import Compose, SectionText
from wm_kernel.testing.report import Cost, Finding

if TYPE_CHECKING:
    from wm_kernel.cachesim.simulation import Simulation

#: A synthetic user message per request in the cost simulation, after the cached prefix.
_USER_TOKENS = 100


def instability_cost(composes: Sequence[Compose], finding: Finding, model: str, turns_per_hour: int) -> Cost:
    """What the section of ``finding`` costs if its bytes are new on every request: an hour of
    ``turns_per_hour`` requests carrying the compose where it moved, simulated on ``model`` with the
    section fixed and with it new each time (see the module docstring)."""
    from wm_kernel.cachesim import Block, Request, simulate
    from wm_kernel.cachesim.models import get_model
    from wm_kernel.testing.tokens import count_tokens

    compose = composes[min(finding.compose, len(composes) - 1)]
    profile = get_model(model)
    head = [s for s in compose.sections if s.placement in ("tools", "system") and s.cached]
    head.sort(key=lambda s: s.placement != "tools")
    middle = [s for s in compose.sections if s.placement == "system" and not s.cached]
    tail = [s for s in compose.sections if s.placement not in ("tools", "system")]
    prefix_tokens = sum(count_tokens(s.content).count for s in head)
    t0 = datetime(2026, 1, 1)  # the simulation needs instants, not a date: a fixed one
    gap = timedelta(hours=1) / turns_per_hour

    def blocks(turn: int, unstable: bool) -> list[Block]:
        def key(name: str, text: str) -> str:
            fresh = unstable and name == finding.section
            return f"{name}:{hash(text)}" + (f"#{turn}" if fresh else "")

        out = []
        for index, s in enumerate(head):
            out.append(
                Block(
                    key(s.name, s.content),
                    count_tokens(s.content).count,
                    breakpoint="5m" if index == len(head) - 1 else None,
                    layer="tools" if s.placement == "tools" else "system",
                    label=s.name,
                )
            )
        out += [
            Block(key(s.name, s.content), count_tokens(s.content).count, layer="system", label=s.name) for s in middle
        ]
        out.append(Block(f"user-{turn}", _USER_TOKENS, label="user message"))
        out += [Block(key(s.name, s.content), count_tokens(s.content).count, label=s.name) for s in tail]
        return out

    stable = simulate([Request(t0 + gap * i, blocks(i, False)) for i in range(turns_per_hour)], profile)
    unstable = simulate([Request(t0 + gap * i, blocks(i, True)) for i in range(turns_per_hour)], profile)
    note = ""
    if not stable.cached:
        note = (
            f"the cached prefix ({prefix_tokens:,} tokens) is below {model}'s minimum of "
            f"{profile.min_tokens:,}: nothing is cached either way"
        )
    elif not finding.cached:
        note = "the section is after the cached prefix"
    return _cost(model, turns_per_hour, stable, unstable, prefix_tokens, note)


#: The stand-in for the history before the HUD in MIRA's wire cost: the last exchange, tokens.
_HISTORY_TOKENS = 300


def mira_instability_cost(
    composes: Sequence[Compose],
    finding: Finding,
    model: str,
    turns_per_hour: int,
    *,
    hours: int = 24,
    every: int = 1,
) -> Cost:
    """What the section of ``finding`` costs on MIRA's wire if its bytes are new on every request
    (or every ``every``-th): ``hours`` (a day) of ``turns_per_hour`` requests laid out as MIRA
    sends them (module docstring), simulated on ``model`` with the section fixed and with it new
    each time.

    Long because: it lays a day of requests out as MIRA sends them (tools, system, prefix, history,
    post history, HUD, user message, each with its breakpoint), then simulates it twice and words
    the note.
    """
    from wm_kernel.cachesim import Block, Request, simulate
    from wm_kernel.cachesim.models import get_model
    from wm_kernel.testing.tokens import count_tokens

    compose = composes[min(finding.compose, len(composes) - 1)]
    profile = get_model(model)
    tools = [s for s in compose.sections if s.placement == "tools"]
    system = [s for s in compose.sections if s.placement == "system"]
    prefix = [s for s in compose.sections if s.placement == "conversation_prefix"]
    post = [s for s in compose.sections if s.placement == "post_history"]
    hud = [s for s in compose.sections if s.placement == "notification"]
    prefix_tokens = sum(count_tokens(s.content).count for s in tools + system)
    sizes = {s.name: count_tokens(s.content).count for s in compose.sections}
    t0 = datetime(2026, 1, 1)
    gap = timedelta(hours=1) / turns_per_hour

    def blocks(turn: int, unstable: bool) -> list[Block]:
        def block(s: SectionText, layer: str, mark: str | None) -> Block:
            fresh = unstable and s.name == finding.section
            key = f"{s.name}:{hash(s.content)}" + (f"#{turn // every}" if fresh else "")
            return Block(key, sizes[s.name], breakpoint=mark, layer=layer, label=s.name)

        out = [block(s, "tools", "1h" if i == len(tools) - 1 else None) for i, s in enumerate(tools)]
        out += [block(s, "system", "1h" if i == len(system) - 1 else None) for i, s in enumerate(system)]
        out += [block(s, "messages", None) for s in prefix]
        # the history grows by one exchange a turn and starts again every hour (a segment an hour);
        # its last assistant message carries the mark
        start = turn - turn % turns_per_hour
        out += [Block(f"exchange-{i}", _HISTORY_TOKENS, label="history") for i in range(start, turn)]
        if turn > start:
            out[-1] = Block(out[-1].key, out[-1].tokens, breakpoint="1h", layer="messages", label="history")
        out += [block(s, "messages", "5m") for s in post]
        out += [block(s, "messages", None) for s in hud]
        out.append(Block(f"user-{turn}", _USER_TOKENS, label="user message"))
        return out

    count = turns_per_hour * hours
    stable = simulate([Request(t0 + gap * i, blocks(i, False)) for i in range(count)], profile)
    unstable = simulate([Request(t0 + gap * i, blocks(i, True)) for i in range(count)], profile)
    note = ""
    if not stable.cached:
        note = (
            f"the 1-hour prefix ({prefix_tokens:,} tokens) is below {model}'s minimum of "
            f"{profile.min_tokens:,}: nothing is cached either way"
        )
    elif finding.placement == "notification":
        note = "the HUD is after every breakpoint but the post-history ones: only what follows it is re-read"
    return _cost(model, turns_per_hour, stable, unstable, prefix_tokens, note, hours=hours, wire="MIRA's wire")


def _cost(
    model: str,
    turns_per_hour: int,
    stable: Simulation,
    unstable: Simulation,
    prefix_tokens: int,
    note: str,
    **where: Any,
) -> Cost:
    """The Cost of the two simulated hours (``where``: the hours and wire, when not the kit's)."""
    return Cost(
        model=model,
        turns_per_hour=turns_per_hour,
        stable_usd=stable.total_cost,
        unstable_usd=unstable.total_cost,
        stable_hit_rate=stable.hit_rate,
        unstable_hit_rate=unstable.hit_rate,
        prefix_tokens=prefix_tokens,
        note=note,
        **where,
    )
