"""What a section whose bytes move costs: the cache simulator plays an hour of requests twice.

For a moved section, :func:`instability_cost` plays ``turns_per_hour`` requests on a model carrying
the compose where it moved, once with the section's bytes fixed and once with them new on every
request (what a deployment sees when they move between workers, or every second); the difference
is the cost of the instability. Both the stability checker (:mod:`wm_kernel.testing.stability`) and
the logged-prefix check (:mod:`wm_kernel.testing.logcheck`) price their findings with it.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from wm_kernel.testing.replay import Compose
from wm_kernel.testing.report import Cost, Finding

#: A synthetic user message per request in the cost simulation, after the cached prefix.
_USER_TOKENS = 100


def instability_cost(composes: Sequence[Compose], finding: Finding, model: str,
                     turns_per_hour: int) -> Cost:
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
            out.append(Block(key(s.name, s.content), count_tokens(s.content).count,
                             breakpoint="5m" if index == len(head) - 1 else None,
                             layer="tools" if s.placement == "tools" else "system", label=s.name))
        out += [Block(key(s.name, s.content), count_tokens(s.content).count, layer="system", label=s.name)
                for s in middle]
        out.append(Block(f"user-{turn}", _USER_TOKENS, label="user message"))
        out += [Block(key(s.name, s.content), count_tokens(s.content).count, label=s.name) for s in tail]
        return out

    stable = simulate([Request(t0 + gap * i, blocks(i, False))
                       for i in range(turns_per_hour)], profile)
    unstable = simulate([Request(t0 + gap * i, blocks(i, True)) for i in range(turns_per_hour)], profile)
    note = ""
    if not stable.cached:
        note = (f"the cached prefix ({prefix_tokens:,} tokens) is below {model}'s minimum of "
                f"{profile.min_tokens:,}: nothing is cached either way")
    elif not finding.cached:
        note = "the section is after the cached prefix"
    return Cost(model=model, turns_per_hour=turns_per_hour, stable_usd=stable.total_cost,
                unstable_usd=unstable.total_cost, stable_hit_rate=stable.hit_rate,
                unstable_hit_rate=unstable.hit_rate, prefix_tokens=prefix_tokens, note=note)
