"""Benchmark: the cost of composing, as ratios to a floor measured in the same run.

Run on demand: ``.venv/bin/python bench/compose.py [REPEAT]`` (or ``make bench``). Nothing here is
asserted; machines are noisy, so read the ratios, not the microseconds. The cases (the floor
included) run interleaved, once each per repetition, timed in CPU time (``bench/_timing.py``);
every figure is a median with the min-max range, and every ratio is taken within one repetition.

Workload (issue 2): a ~12 KB base prompt of blank-line-separated paragraphs and 8 trinkets of fixed
~300-character content spread over the four placements. The floor builds the same ComposedPrompt by
hand from the same strings: plain joins and one dict. The fixed trinkets say their content depends
on nothing outside them (``reuse_content = True``), as the built-in ones do.

Cases: the full event-driven cycle (18 events: a compose request, 8 updates, 8 contents, the
composed prompt); ``compose()`` alone, with nothing changed and with one section changed; a turn
whose stateful trinket has an item expire (the TurnCompletedEvent with its lifecycle refresh), and
the same turn followed by its compose. Scaling: the cycle with 8, 50 and 200 trinkets, and the
marginal cost of one more trinket (the 200-trinket cycle over the 50-trinket one, per trinket).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trinkets.base import EventAwareTrinket, StatefulTrinket  # noqa: E402
from wm_kernel.core.bus import EventBus  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.composer import SystemPromptComposer  # noqa: E402
from wm_kernel.core.composer.hud_frame import RULE  # noqa: E402
from wm_kernel.core.composer.layout import Layout  # noqa: E402
from wm_kernel.core.events import ComposeSystemPromptEvent, TurnCompletedEvent  # noqa: E402
from wm_kernel.core.working_memory import WorkingMemory  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleave, ratios, spread  # noqa: E402

PARAGRAPH = (
    "You are a careful assistant. Answer precisely, cite what you rely on, and say when you "
    "are unsure. Prefer short paragraphs and concrete examples over general advice. "
)
BASE_PROMPT = "\n\n".join(f"{i}. {PARAGRAPH}" for i in range(70))  # ~12 KB
CONTENT = "<section>" + "lorem ipsum dolor sit amet " * 11 + "</section>"  # ~300 chars

# (section, placement, cached) for the 8 trinkets of the workload
SECTIONS = [
    ("behavioral_directives", "system", True),
    ("tool_availability", "system", False),
    ("location_context", "system", True),
    ("conversation_manifest", "system", False),
    ("domaindoc", "post_history", True),
    ("datetime_section", "notification", False),
    ("active_reminders", "notification", False),
    ("relevant_memories", "notification", False),
]


def make_trinket(section: str, cached: bool) -> type[EventAwareTrinket]:
    return type(
        f"T_{section}",
        (EventAwareTrinket,),
        {
            "variable_name": section,
            "cache_policy": cached,
            "reuse_content": True,
            "generate_content": lambda self, context: CONTENT,
        },
    )


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
        "notification_center": "\n".join(
            [RULE, "HUD", RULE, "<mira:hud>", "".join(f"{h}\n\n" for h in hud), "</mira:hud>", RULE]
        ),
    }


def build(sections: list[tuple[str, str, bool]]) -> tuple[EventBus, WorkingMemory]:
    table: dict[str, list[str]] = {
        "system": ["base_prompt"],
        "conversation_prefix": [],
        "post_history": [],
        "notification": ["peanutgallery_guidance"],
    }
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
    """One item added every turn with a TTL of 3 turns, so an item expires every turn. Its text
    depends on its items and turn only, so it reuses its content as the built-in ones do."""

    variable_name = "peanutgallery_guidance"
    reuse_content = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.items: dict[int, int] = {}

    def generate_content(self, context):
        return "\n".join(f"item {k} expires at {v}" for k, v in self.items.items())

    def _expire_items(self):
        turn = self.current_turn  # read once, as the built-in trinkets do
        gone = [k for k, v in self.items.items() if turn > v]
        for k in gone:
            del self.items[k]
        self.items[turn] = turn + 3
        return bool(gone)

    def _clear_all_state(self):
        self.items.clear()


def compose_event() -> ComposeSystemPromptEvent:
    return ComposeSystemPromptEvent.create(continuum_id="bench", base_prompt=BASE_PROMPT)


class Turns:
    """A bus with the 8 trinkets and an expiring stateful one; each call completes one turn."""

    def __init__(self) -> None:
        self.bus, self.wm = build(SECTIONS)
        Expiring(self.bus, self.wm)
        self.turn = 0
        self.bus.publish(compose_event())

    def turn_event(self) -> None:
        self.turn += 1
        self.bus.publish(
            TurnCompletedEvent.create(
                continuum_id="bench", clock=self.wm.clock, turn_number=self.turn, segment_turn_number=self.turn
            )
        )

    def turn_and_compose(self) -> None:
        self.turn_event()
        self.bus.publish(
            ComposeSystemPromptEvent.create(continuum_id="bench", clock=self.wm.clock, base_prompt=BASE_PROMPT)
        )


def main(repeat: int = 15) -> None:
    bus, wm = build(SECTIONS)
    bus.publish(compose_event())
    assert len(wm.composed["cached_content"]) > 12_000

    composer = SystemPromptComposer(
        Layout(
            {
                "system": ["base_prompt"] + [s for s, p, _ in SECTIONS if p == "system"],
                "post_history": ["domaindoc"],
                "notification": [s for s, p, _ in SECTIONS if p == "notification"],
            }
        )
    )
    composer.set_base_prompt(BASE_PROMPT)
    for name, _, cached in SECTIONS:
        composer.add_section(name, CONTENT, cached)
    composer.compose()
    texts = [CONTENT, CONTENT.replace("lorem", "Lorem")]
    flip = [0]

    def compose_changed() -> None:
        flip[0] ^= 1
        composer.add_section("active_reminders", texts[flip[0]], False)
        composer.compose()

    turns, turns_c = Turns(), Turns()
    samples = interleave(
        {
            "floor": lambda: floor_compose(BASE_PROMPT, SECTIONS),
            "cycle": lambda: bus.publish(compose_event()),
            "compose": composer.compose,
            "compose_changed": compose_changed,
            "ttl_turn": turns.turn_event,
            "ttl_turn_compose": turns_c.turn_and_compose,
        },
        repeat=repeat,
    )
    floor = samples["floor"]
    rows = [
        ("floor (hand-built ComposedPrompt)", "floor", None),
        ("full event-driven compose cycle", "cycle", "goal <= 10x"),
        ("compose() alone, nothing changed", "compose", "goal <= 2x, stretch 1x"),
        ("compose() alone, one section changed", "compose_changed", "goal <= 1.5x"),
        ("a turn with a TTL refresh (turn event)", "ttl_turn", "goal <= 5x"),
        ("the same turn and its compose", "ttl_turn_compose", None),
    ]
    print(
        f"{repeat} interleaved repetitions; CPU µs per call and ratio to the floor of the same "
        f"repetition: median (min-max)"
    )
    for label, key, goal in rows:
        line = f"{label:<40} {spread(samples[key], ' µs', 2):>28}"
        if key != "floor":
            line += f"   {spread(ratios(samples[key], floor), 'x'):>22}"
        if goal:
            line += f"   ({goal})"
        print(line)

    print("scaling (full cycle, nothing changed), interleaved:")
    sizes = (8, 50, 200)
    cases: dict[str, Any] = {}
    for n in sizes:
        sections = many_sections(n)
        bus_n, _ = build(sections)
        bus_n.publish(compose_event())
        cases[f"floor{n}"] = lambda sections=sections: floor_compose(BASE_PROMPT, sections)
        cases[f"cycle{n}"] = lambda bus_n=bus_n: bus_n.publish(compose_event())
    got = interleave(cases, repeat=max(5, repeat // 2))
    base_per_trinket = statistics.median(got["cycle8"]) / 8
    for n in sizes:
        cycle = got[f"cycle{n}"]
        per_trinket = statistics.median(cycle) / n
        print(
            f"  {n:4d} trinkets: {spread(cycle, ' µs/cycle'):>30}  "
            f"{per_trinket:6.2f} µs/trinket ({per_trinket / base_per_trinket:4.2f}x the "
            f"8-trinket cost per trinket)  {spread(ratios(cycle, got[f'floor{n}']), 'x')} "
            f"its floor"
        )
    # what one more trinket costs: the cycle of 200 over that of 50, per trinket added
    marginal = [(big - small) / 150 for big, small in zip(got["cycle200"], got["cycle50"], strict=True)]
    print(f"marginal cost of a trinket (200 against 50 trinkets): {spread(marginal, ' µs', 2)}   (goal <= 4 µs)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
