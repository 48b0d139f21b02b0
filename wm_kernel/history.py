"""Per-turn record of every composed prompt (first version; the experiments issue extends it)."""
from __future__ import annotations

from typing import Any

from wm_kernel.types import ComposedPrompt


class History:
    """Every compose of a Session, by turn."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, ComposedPrompt]] = []

    def record(self, turn: int, segment: int, composed: ComposedPrompt) -> None:
        self.entries.append((turn, segment, composed))

    def frame(self) -> Any:
        import pandas as pd

        rows = [{"turn": turn, "segment": segment, "placement": r.placement, "section": r.name,
                 "trinket": r.trinket, "chars": r.chars, "cached": r.cached}
                for turn, segment, composed in self.entries for r in composed.sections]
        return pd.DataFrame(rows, columns=["turn", "segment", "placement", "section", "trinket",
                                           "chars", "cached"])
