"""What ``%cache MODEL`` shows: the per-turn table (hits and misses coloured, with the reason),
the totals with and without caching, and the advice. Plain text for terminals, HTML for notebooks."""

from __future__ import annotations

from wm_kernel.cachesim.advice import Advice
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.utils.htmltext import no_math


class CacheView:
    """A simulation and its advice, shown together (``v = %cache MODEL`` keeps both)."""

    def __init__(self, simulation: Simulation, advice: Advice | None) -> None:
        self.simulation = simulation
        self.advice = advice

    def __str__(self) -> str:
        parts = [str(self.simulation)]
        if self.advice is not None:
            parts.append(str(self.advice))
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        parts = [self.simulation._repr_html_()]
        if self.advice is not None:
            parts.append(self.advice._repr_html_())
        return no_math(f'<div class="wm-cache-view">{"".join(parts)}</div>')
