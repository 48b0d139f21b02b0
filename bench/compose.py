"""Benchmark: the cost of composing, as ratios to a floor measured in the same run.

Run on demand: ``.venv/bin/python bench/compose.py`` (or ``make bench``). Nothing here is asserted;
machines are noisy, so read the ratios, not the microseconds.

Workload (issue 2): a ~12 KB base prompt of blank-line-separated paragraphs and 8 trinkets of fixed
~300-character content spread over the four placements. The floor builds the same ComposedPrompt by
hand from the same strings: plain joins and one dict.
"""
from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trinkets.base import EventAwareTrinket, StatefulTrinket  # noqa: E402
from wm_kernel.bus import EventBus  # noqa: E402
from wm_kernel.clock import ManualClock  # noqa: E402
from wm_kernel.composer import RULE, Layout, SystemPromptComposer  # noqa: E402
from wm_kernel.core import WorkingMemory  # noqa: E402
from wm_kernel.events import ComposeSystemPromptEvent, TurnCompletedEvent  # noqa: E402

PARAGRAPH = ("You are a careful assistant. Answer precisely, cite what you rely on, and say when you "
             "are unsure. Prefer short paragraphs and concrete examples over general advice. ")
BASE_PROMPT = "\n\n".join(f"{i}. {PARAGRAPH}" for i in range(70))  # ~12 KB
CONTENT = ("<section>" + "lorem ipsum dolor sit amet " * 11 + "</section>")  # ~300 chars

# (section, placement, cached) for the 8 trinkets of the workload
SECTIONS = [
    ("behavioral_directives", "system", True), ("tool_availability", "system", False),
    ("location_context", "system", True), ("conversation_manifest", "system", False),
    ("domaindoc", "post_history", True), ("datetime_section", "notification", False),
    ("active_reminders", "notification", False), ("relevant_memories", "notification", False),
]


def make_trinket(section: str, cached: bool) -> type[EventAwareTrinket]:
    return type(f"T_{section}", (EventAwareTrinket,), {
        "variable_name": section, "cache_policy": cached,
        "generate_content": lambda self, context: CONTENT})


def floor_compose(base: str, sections: list[tuple[str, str, bool]]) -> dict:
    """The same five fields, by hand: plain joins and one dict."""
    delimited = f"{base}\n\n{RULE}\nScaffolding.\n{RULE}"
    cached = [delimited] + [CONTENT for _, p, c in sections if p == "system" and c]
    uncached = [CONTENT for _, p, c in sections if p == "system" and not c]
    hud = [CONTENT for _, p, _ in sections if p == "notification"]
    return {
        "cached_content": "\n\n---\n\n".join(cached),
        "non_cached_content": "\n\n---\n\n".join(uncached),
        "conversation_prefix_items": [],
        "post_history_items": [CONTENT for _, p, _ in sections if p == "post_history"],
        "notification_center": "\n".join([RULE, "HUD", RULE, "<mira:hud>",
                                          "".join(f"{h}\n\n" for h in hud), "</mira:hud>", RULE]),
    }


def per_call_us(fn, *, repeat: int = 7, min_time: float = 0.2) -> float:
    """Median µs per call over ``repeat`` timed batches, each at least ``min_time`` seconds."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start >= min_time / 4:
            break
        n *= 2
    samples = []
    gc.collect()
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def build(sections: list[tuple[str, str, bool]]) -> tuple[EventBus, WorkingMemory]:
    table: dict[str, list[str]] = {"system": ["base_prompt"], "conversation_prefix": [],
                                   "post_history": [], "notification": ["peanutgallery_guidance"]}
    for name, placement, _ in sections:
        table[placement].append(name)
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock("2026-11-30T09:00:00+00:00"), layout=Layout(table))
    for name, _, cached in sections:
        make_trinket(name, cached)(bus, wm)
    return bus, wm


def many_sections(n: int) -> list[tuple[str, str, bool]]:
    placements = ["system", "post_history", "notification", "conversation_prefix"]
    return [(f"section_{i}", placements[i % 4], i % 2 == 0) for i in range(n)]


class Expiring(StatefulTrinket):
    """One item added every turn with a TTL of 3 turns, so an item expires every turn."""

    variable_name = "peanutgallery_guidance"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.items: dict[int, int] = {}

    def generate_content(self, context):
        return "\n".join(f"item {k} expires at {v}" for k, v in self.items.items())

    def _expire_items(self):
        gone = [k for k, v in self.items.items() if self.current_turn > v]
        for k in gone:
            del self.items[k]
        self.items[self.current_turn] = self.current_turn + 3
        return bool(gone)

    def _clear_all_state(self):
        self.items.clear()


def main() -> None:
    floor = per_call_us(lambda: floor_compose(BASE_PROMPT, SECTIONS))

    bus, wm = build(SECTIONS)
    event = ComposeSystemPromptEvent.create(continuum_id="bench", base_prompt=BASE_PROMPT)
    bus.publish(event)
    assert len(wm.composed["cached_content"]) > 12_000
    cycle = per_call_us(lambda: bus.publish(
        ComposeSystemPromptEvent.create(continuum_id="bench", base_prompt=BASE_PROMPT)))

    composer = SystemPromptComposer(Layout({"system": ["base_prompt"] + [s for s, p, _ in SECTIONS if p == "system"],
                                            "post_history": ["domaindoc"],
                                            "notification": [s for s, p, _ in SECTIONS if p == "notification"]}))
    composer.set_base_prompt(BASE_PROMPT)
    for name, _, cached in SECTIONS:
        composer.add_section(name, CONTENT, cached)
    compose_only = per_call_us(composer.compose)

    # 1,000 turns with a stateful trinket expiring items: a turn event plus a full compose each
    bus_t, wm_t = build(SECTIONS)
    Expiring(bus_t, wm_t)
    clock = wm_t.clock
    start = time.perf_counter()
    for turn in range(1, 1001):
        bus_t.publish(TurnCompletedEvent.create(continuum_id="bench", clock=clock, turn_number=turn,
                                                segment_turn_number=turn))
        bus_t.publish(ComposeSystemPromptEvent.create(continuum_id="bench", clock=clock,
                                                      base_prompt=BASE_PROMPT))
    per_turn = (time.perf_counter() - start) / 1000 * 1e6

    print(f"floor (hand-built ComposedPrompt)      {floor:9.2f} µs")
    print(f"full event-driven compose cycle        {cycle:9.2f} µs   {cycle / floor:6.1f}x floor"
          f"   (goal < 50x; the original ~500x)")
    print(f"compose() alone                        {compose_only:9.2f} µs   {compose_only / floor:6.1f}x floor"
          f"   (goal < 5x; the original ~100x)")
    print(f"per turn, 1,000 turns, items expiring  {per_turn:9.2f} µs   {per_turn / floor:6.1f}x floor")
    print("scaling (full cycle):")
    base_cycle = None
    for n in (8, 50, 200):
        sections = many_sections(n)
        bus_n, _ = build(sections)
        floor_n = per_call_us(lambda: floor_compose(BASE_PROMPT, sections), repeat=5)
        cycle_n = per_call_us(lambda: bus_n.publish(
            ComposeSystemPromptEvent.create(continuum_id="bench", base_prompt=BASE_PROMPT)), repeat=5)
        per_trinket = cycle_n / n
        base_cycle = base_cycle or per_trinket
        print(f"  {n:4d} trinkets: {cycle_n:9.1f} µs/cycle  {per_trinket:6.2f} µs/trinket "
              f"({per_trinket / base_cycle:4.2f}x the 8-trinket cost per trinket)  "
              f"{cycle_n / floor_n:6.1f}x its floor")


if __name__ == "__main__":
    main()
