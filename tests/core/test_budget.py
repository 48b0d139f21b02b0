"""Token budgets: the cutoff, ties, monotonicity, step bands, item drops, errors, history."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trinkets.base import DEFAULT_PRIORITY, NEVER_DROP, EventAwareTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.budget import OVER_BUDGET, BudgetError, _hud_frame, lowest_cut, step_band
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.composer.placement_build import SECTION_SEPARATOR
from wm_kernel.core.events import SystemPromptComposedEvent
from wm_kernel.core.prompt import COMPOSER
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.session import Session
from wm_kernel.tokens import TokenCounter


class CharTokenizer:
    """One token per character: sizes in tests are exact and easy to read."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


def chars() -> TokenCounter:
    return TokenCounter(CharTokenizer())


# -- the pure fit against a brute force -------------------------------------------------------


def brute_force(tokens: list[int], priorities: list[int], budget: int, fixed: int) -> frozenset[int]:
    """Try every cutoff from the lowest up; keep the first that fits."""
    droppable = [i for i, p in enumerate(priorities) if p < NEVER_DROP]
    ranks = sorted(droppable, key=lambda i: (priorities[i], -i))
    always = [i for i, p in enumerate(priorities) if p >= NEVER_DROP]
    for cut in range(len(ranks) + 1):
        kept = always + ranks[cut:]
        if fixed + sum(tokens[i] for i in kept) <= budget:
            return frozenset(kept)
    raise AssertionError("nothing fits")


sizes = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 5)), min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(sizes, st.integers(0, 400), st.integers(0, 20))
def test_the_cut_is_the_lowest_that_fits(sections: list[tuple[int, int]], budget: int, fixed: int) -> None:
    tokens = [t for t, _ in sections]
    priorities = [p for _, p in sections]
    if fixed > budget:
        with pytest.raises(BudgetError):
            lowest_cut(tokens, priorities, budget, fixed=fixed)
        return
    kept = lowest_cut(tokens, priorities, budget, fixed=fixed)
    assert kept == brute_force(tokens, priorities, budget, fixed)
    assert fixed + sum(tokens[i] for i in kept) <= budget


@settings(max_examples=200, deadline=None)
@given(sizes, st.integers(0, 300), st.integers(0, 300))
def test_a_larger_budget_never_drops_what_a_smaller_one_keeps(sections: list[tuple[int, int]], a: int, b: int) -> None:
    tokens = [t for t, _ in sections]
    priorities = [p for _, p in sections]
    small, large = sorted((a, b))
    assert lowest_cut(tokens, priorities, small) <= lowest_cut(tokens, priorities, large)


def test_ties_drop_the_later_section_first() -> None:
    # equal priorities: the section later in the prompt goes first (the start of a prompt caches)
    assert lowest_cut([10, 10, 10], [5, 5, 5], 20) == {0, 1}
    assert lowest_cut([10, 10, 10], [5, 5, 5], 10) == {0}
    assert lowest_cut([10, 10, 10], [5, 4, 5], 20) == {0, 2}


def test_step_band_is_the_ceiling_of_overflow_over_step() -> None:
    assert [step_band(o, 10) for o in (-5, 0, 1, 10, 11, 20, 21)] == [0, 0, 1, 1, 2, 2, 3]


# -- WorkingMemory with a budget ---------------------------------------------------------------


def make_trinket(section: str, priority: int, cache: bool = False) -> type[EventAwareTrinket]:
    def generate_content(self: Any, context: dict[str, Any]) -> str:
        return str(self.text)

    cls = type(
        f"T_{section}",
        (EventAwareTrinket,),
        {
            "variable_name": section,
            "cache_policy": cache,
            "default_priority": priority,
            "text": "",
            "generate_content": generate_content,
        },
    )
    return cls


LAYOUT = Layout(
    {"system": ["base_prompt", "s1", "s2", "s3"], "post_history": ["p1"], "notification": ["n1", "n2", "n3"]}
)


def budget_wm(
    priorities: dict[str, int], texts: dict[str, str], budget: int | None, step: int | None = None
) -> WorkingMemory:
    bus = EventBus()
    wm = WorkingMemory(bus, composer=SystemPromptComposer(LAYOUT))
    wm.budget.counter = chars()
    for section, priority in priorities.items():
        trinket = make_trinket(section, priority)(bus, wm)
        trinket.text = texts[section]  # type: ignore[attr-defined]
    wm.token_budget = budget
    wm.budget_step = step
    return wm


def expected_cost(kept: list[str], texts: dict[str, str], base: str, frame: str) -> int:
    """What the budget's cost model charges for a prompt keeping ``kept`` (computed directly)."""
    cost = len(base)
    for name in kept:
        placement = LAYOUT.placement_of(name)
        joiner = {"system": SECTION_SEPARATOR, "notification": "\n\n"}.get(placement or "", "")
        cost += len(texts[name]) + len(joiner)
    if any(LAYOUT.placement_of(n) == "notification" for n in kept):
        cost += len(frame)
    return cost


names = ["s1", "s2", "s3", "p1", "n1", "n2", "n3"]
wm_cases = st.fixed_dictionaries({n: st.tuples(st.integers(0, 4), st.integers(1, 80)) for n in names})


@settings(max_examples=120, deadline=None)
@given(wm_cases, st.integers(0, 900))
def test_compose_keeps_the_lowest_cut_that_fits_by_brute_force(case: dict[str, tuple[int, int]], extra: int) -> None:
    priorities = {n: p for n, (p, _) in case.items()}
    texts = {n: n[0] * size for n, (_, size) in case.items()}
    wm = budget_wm(priorities, texts, None)
    wm.compose("Base.")
    base = wm.composer.get_entry("base_prompt")[0]
    frame = _hud_frame(wm.composer)
    budget = len(base) + extra
    wm.token_budget = budget
    prompt = wm.compose("Base.")
    order = [n for n in LAYOUT.sections() if n in texts]
    ranks = sorted(order, key=lambda n: (priorities[n], -order.index(n)))
    for cut in range(len(ranks) + 1):  # brute force: every cut from the lowest
        kept = ranks[cut:]
        if expected_cost(kept, texts, base, frame) <= budget:
            break
    assert sorted(prompt.section_names()) == sorted(["base_prompt", *kept])
    assert prompt.budget is not None
    assert prompt.budget.total == expected_cost(kept, texts, base, frame) <= budget
    assert [o.name for o in prompt.omitted if o.reason == OVER_BUDGET] == [n for n in ranks if n not in kept]
    for gone in prompt.omitted:
        assert gone.tokens == prompt.budget.tokens[gone.name]
        assert gone.priority == priorities[gone.name]


def test_no_budget_or_a_roomy_one_composes_the_same_text() -> None:
    texts = {"s1": "alpha", "n1": "beta", "p1": "gamma"}
    free = budget_wm({"s1": 1, "n1": 2, "p1": 3}, texts, None).compose("Base.")
    roomy = budget_wm({"s1": 1, "n1": 2, "p1": 3}, texts, 10_000).compose("Base.")
    assert free.as_dict() == roomy.as_dict()
    assert free.budget is not None and free.budget.total is None and free.budget.tokens == {}
    assert roomy.budget is not None and roomy.budget.dropped == ()


def test_ties_are_deterministic_whatever_the_registration_order() -> None:
    texts = {n: "x" * 30 for n in ("s1", "s2", "n1", "n2")}
    kept = []
    for order in (["s1", "s2", "n1", "n2"], ["n2", "s2", "n1", "s1"], ["s2", "n2", "s1", "n1"]):
        wm = budget_wm({n: 5 for n in order}, texts, None)
        wm.compose("Base.")
        wm.token_budget = len(wm.composer.get_entry("base_prompt")[0]) + 2 * 37
        kept.append(wm.compose("Base.").section_names())
    assert kept[0] == kept[1] == kept[2] == ["base_prompt", "s1", "s2"]


def test_never_drop_sections_stay_and_too_small_a_budget_is_one_clear_error() -> None:
    bus_events: list[Any] = []
    wm = budget_wm({"s1": NEVER_DROP, "n1": 3}, {"s1": "keep me", "n1": "x" * 50}, None)
    wm.bus.subscribe(SystemPromptComposedEvent, bus_events.append)
    before = wm.compose("Base.")
    base = len(wm.composer.get_entry("base_prompt")[0])
    wm.token_budget = base + len(SECTION_SEPARATOR) + len("keep me")
    kept = wm.compose("Base.")
    assert kept.section_names() == ["base_prompt", "s1"]
    wm.token_budget = base + 3
    events = len(bus_events)
    with pytest.raises(
        BudgetError,
        match=rf"^the sections a budget never drops need {base + 14} "
        rf"tokens \(base_prompt {base}, s1 14\), over the token budget of "
        rf"{base + 3}; nothing was composed$",
    ):
        wm.compose("Base.")
    assert wm.composed is kept and len(bus_events) == events
    assert before is not kept


@pytest.mark.parametrize(
    "value, error, message",
    [
        (-1, ValueError, "WorkingMemory.token_budget must be a positive int or None, got -1"),
        (0, ValueError, "WorkingMemory.token_budget must be a positive int or None, got 0"),
        (1.5, TypeError, "WorkingMemory.token_budget must be a positive int or None, got float 1.5"),
        (True, TypeError, "WorkingMemory.token_budget must be a positive int or None, got bool True"),
        ("100", TypeError, "WorkingMemory.token_budget must be a positive int or None, got str '100'"),
    ],
)
def test_a_bad_budget_is_one_clear_error_and_changes_nothing(value: Any, error: type, message: str) -> None:
    wm = budget_wm({"s1": 1}, {"s1": "a"}, 500, step=10)
    with pytest.raises(error) as info:
        wm.token_budget = value
    assert str(info.value) == message
    assert wm.token_budget == 500 and wm.budget_step == 10
    with pytest.raises(error):
        wm.budget_step = value
    assert wm.budget_step == 10


def test_session_checks_its_budget_arguments_before_building_anything() -> None:
    bus = EventBus()
    with pytest.raises(ValueError, match="^token_budget must be a positive int or None, got -5$"):
        Session(trinkets=[], bus=bus, token_budget=-5)
    with pytest.raises(TypeError, match="^budget_step must be a positive int or None, got str"):
        Session(trinkets=[], bus=bus, token_budget=100, budget_step="5")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1.0, "high", None, True, [3]])
def test_a_non_int_priority_is_one_type_error_and_changes_nothing(value: Any) -> None:
    wm = budget_wm({"s1": 7}, {"s1": "a"}, None)
    trinket = wm.get_trinket("s1")
    seen: list[Any] = []
    trinket.observe(seen.append, "priority")
    with pytest.raises(TypeError, match=rf"^T_s1.priority must be an int, got {type(value).__name__} "):
        trinket.priority = value
    assert trinket.priority == 7 and seen == []
    trinket.priority = 9
    assert trinket.priority == 9 and len(seen) == 1


def test_builtin_priorities_follow_the_documented_table() -> None:
    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"))
    table = {t.variable_name: t.priority for t in s.trinkets.values()}
    assert table == {
        "datetime_section": 100,
        "peanutgallery_guidance": 90,
        "active_reminders": 80,
        "behavioral_directives": 70,
        "context_search_results": 60,
        "relevant_memories": 40,
        "domaindoc": 30,
        "conversation_manifest": 20,
    }
    assert DEFAULT_PRIORITY == 50


# -- items ------------------------------------------------------------------------------------


def test_items_are_dropped_lowest_ranked_first_before_the_section() -> None:
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
    from trinkets.time_manager import TimeManager

    s = Session(
        base_prompt="Base.",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[TimeManager, PeanutGalleryTrinket],
    )
    s.working_memory.budget.counter = chars()
    pg = s.trinket("PeanutGalleryTrinket")
    pg.add_guidance("concern", "short lived", ttl=1)
    pg.add_guidance("coaching", "long lived", ttl=9)
    pg.add_guidance("concern", "critical one", ttl=1, critical=True)
    assert pg.ranked_items() == ["guidance-3", "guidance-2", "guidance-1"]
    full = s.compose()
    full_cost = full.budget.tokens["peanutgallery_guidance"] if full.budget and full.budget.tokens else None
    assert full_cost is None  # no budget: nothing counted
    s.working_memory.token_budget = 10_000
    roomy = s.compose()
    assert roomy.budget is not None
    whole = roomy.budget.total
    assert whole is not None
    # room for all but the shortest-lived standard entry
    s.working_memory.token_budget = whole - 10
    p = s.compose()
    assert p.section_names() == ["base_prompt", "datetime_section", "peanutgallery_guidance"]
    text = p.section("peanutgallery_guidance").content
    assert "critical one" in text and "long lived" in text and "short lived" not in text
    assert p.budget is not None and [(t.name, t.kept, t.total) for t in p.budget.trimmed] == [
        ("peanutgallery_guidance", 2, 3)
    ]
    assert pg.content.count("<guidance") == 3  # the trinket itself keeps every entry
    assert p.budget.total is not None and p.budget.total <= whole - 10


def test_memories_rank_by_relevance() -> None:
    from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket

    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[ProactiveMemoryTrinket])
    pm = s.trinket("ProactiveMemoryTrinket")
    pm.surface(
        [
            {"id": "a", "text": "A", "similarity_score": 0.5},
            {"id": "b", "text": "B"},
            {"id": "c", "text": "C", "similarity_score": 0.9},
            {"id": "d", "text": "D", "similarity_score": 0.0},
        ]
    )
    assert pm.ranked_items() == ["c", "a", "d", "b"]
    kept = pm.content_keeping(2)
    assert "<text>A</text>" in kept and "<text>C</text>" in kept and "<text>B</text>" not in kept
    assert kept.index("<text>A</text>") < kept.index("<text>C</text>")  # display order stays
    assert len(pm.memories) == 4


# -- step bands --------------------------------------------------------------------------------


def random_walk(step: int | None, seed: int, turns: int = 300) -> tuple[list[tuple[str, ...]], list[int]]:
    rng = random.Random(seed)
    sizes = {n: rng.randint(20, 60) for n in names}
    home = dict(sizes)
    priorities = {n: i % 4 for i, n in enumerate(names)}
    wm = budget_wm(priorities, {n: "x" * sizes[n] for n in names}, None)
    wm.compose("Base.")
    base = wm.composer.get_entry("base_prompt")[0]
    full = expected_cost(names, {n: "x" * sizes[n] for n in names}, base, _hud_frame(wm.composer))
    budget = full - 100  # the walk hovers around the cut of the two or three lowest sections
    wm.token_budget, wm.budget_step = budget, step
    kept: list[tuple[str, ...]] = []
    bands: list[int] = []
    for _ in range(turns):
        for n in names:  # a walk kept within 10 tokens of where it started, as sections that
            # fluctuate around a typical size (a clock, a list that gains and loses an item)
            sizes[n] = min(home[n] + 10, max(home[n] - 10, sizes[n] + rng.randint(-3, 3)))
            wm.get_trinket(n).text = "x" * sizes[n]  # type: ignore[attr-defined]
        p = wm.compose("Base.")
        assert p.budget is not None and p.budget.total is not None and p.budget.total <= budget
        kept.append(tuple(p.section_names()))
        bands.append(p.budget.band)
    return kept, bands


def test_with_a_step_the_kept_set_changes_far_less_often() -> None:
    def changes(kept: list[tuple[str, ...]]) -> int:
        return sum(a != b for a, b in pairwise(kept))

    exact = sum(changes(random_walk(None, seed)[0]) for seed in range(1, 8))
    stepped = sum(changes(random_walk(40, seed)[0]) for seed in range(1, 8))
    assert exact > 100  # the walks do cross the cut, often
    assert stepped * 4 <= exact


def test_the_cut_never_moves_while_the_overflow_stays_in_one_band_and_still_fits() -> None:
    wm = budget_wm({"s1": 3, "s2": 2, "s3": 1}, {"s1": "a" * 80, "s2": "b" * 50, "s3": "c" * 10}, None)
    wm.compose("Base.")
    base = len(wm.composer.get_entry("base_prompt")[0])
    # costs 87, 57, 17 (text + separator); over by 30: band 2 of step 20, so free at least 40
    wm.token_budget, wm.budget_step = base + 131, 20
    first = wm.compose("Base.")
    assert first.section_names() == ["base_prompt", "s1"]
    assert first.budget is not None and first.budget.band == 2 and not first.budget.held
    # still over by 30, but now dropping s3 alone would do: the cut holds, s2 stays out
    wm.get_trinket("s1").text = "a" * 50  # type: ignore[attr-defined]
    wm.get_trinket("s3").text = "c" * 40  # type: ignore[attr-defined]
    second = wm.compose("Base.")
    assert second.budget is not None and second.budget.band == 2 and second.budget.held
    assert second.section_names() == ["base_prompt", "s1"]
    # without a step the exact fit brings s2 back
    wm.budget_step = None
    assert wm.compose("Base.").section_names() == ["base_prompt", "s1", "s2"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 60))
def test_step_holds_the_cut_within_a_band_whenever_it_still_fits(seed: int, step: int) -> None:
    rng = random.Random(seed)
    sizes = {n: rng.randint(10, 60) for n in names}
    wm = budget_wm({n: rng.randint(0, 3) for n in names}, {n: "x" * sizes[n] for n in names}, None)
    wm.compose("Base.")
    base = wm.composer.get_entry("base_prompt")[0]
    frame = _hud_frame(wm.composer)
    budget = len(base) + 200
    wm.token_budget, wm.budget_step = budget, step
    previous = None
    for _ in range(25):
        for n in names:
            sizes[n] = max(1, sizes[n] + rng.randint(-4, 4))
            wm.get_trinket(n).text = "x" * sizes[n]  # type: ignore[attr-defined]
        texts = {n: "x" * sizes[n] for n in names}
        p = wm.compose("Base.")
        report = p.budget
        assert report is not None and report.total is not None and report.total <= budget
        if previous is not None and previous.band == report.band > 0:
            old_kept = [n for n in names if n not in previous.dropped_names]
            if expected_cost(old_kept, texts, base, frame) <= budget:
                assert report.held and report.dropped_names == previous.dropped_names
        previous = report


# -- history ----------------------------------------------------------------------------------


def test_history_has_priority_and_dropped_columns_and_reloads_them(tmp_path: Any) -> None:
    from wm_kernel.stores.embedded import SQLiteStore

    path = tmp_path / "wm.sqlite"
    texts = {"s1": "a" * 40, "n1": "b" * 40}

    def session() -> Session:
        s = Session(
            base_prompt="Base.",
            store=SQLiteStore(path),
            continuum_id="c",
            clock=ManualClock("2026-11-30T09:00:00+00:00"),
            trinkets=[make_trinket("s1", 3), make_trinket("n1", 1)],
            layout=LAYOUT,
        )
        s.recorder.counter = chars()
        s.working_memory.budget.counter = s.recorder.counter
        for n, text in texts.items():
            s.trinket(n).text = text  # type: ignore[attr-defined]
        return s

    s = session()
    s.compose()
    base = len(s.working_memory.composer.get_entry("base_prompt")[0])
    s.working_memory.token_budget = base + 40 + len(SECTION_SEPARATOR)
    s.advance_turn()
    frame = s.history
    rows = frame[["turn", "section", "priority", "dropped", "tokens"]].astype(object).values.tolist()
    assert rows == [
        [0, "base_prompt", NEVER_DROP, False, base],
        [0, "s1", 3, False, 40],
        [0, "n1", 1, False, 40],
        [1, "base_prompt", NEVER_DROP, False, base],
        [1, "s1", 3, False, 40],
        [1, "n1", 1, True, 42],
    ]
    assert frame[frame["dropped"]]["placement"].isna().all()
    reloaded = session().history
    assert reloaded.equals(frame)


# -- blame ------------------------------------------------------------------------------------

texty = st.lists(st.sampled_from(list("ab \n\t<>/:-═") + ["</mira:hud>"]), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["s1", "s2", "s3", "p1", "n1", "n2", "n3", "extra"]),
        st.tuples(texty, st.booleans()),
        max_size=8,
    ),
    texty,
)
def test_blame_covers_every_character_once_and_finds_each_section(
    sections: dict[str, tuple[str, bool]], base: str
) -> None:
    import warnings

    from wm_kernel.core.composer.placement_build import _NEWLINE_RUNS
    from wm_kernel.utils.markup import neutralize_closing_tag

    c = SystemPromptComposer(LAYOUT)
    c.set_base_prompt(base)
    for name, (text, cache) in sections.items():
        c.add_section(name, text, cache, f"Tr_{name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = c.compose()
    records = {r.name: r for r in p.sections}
    seen: dict[str, int] = {}
    for key in p.blame_keys():
        text = p[key] if "[" not in key else p[key.split("[")[0]][int(key[:-1].split("[")[1])]
        spans = p.blame(key)
        assert spans[0].start == 0 and spans[-1].end == len(text)
        for a, b in pairwise(spans):
            assert a.end == b.start and a.end > a.start
        for span in spans:
            if span.section == COMPOSER:
                assert span.trinket is None
                continue
            record = records[span.section]
            assert span.trinket == record.trinket
            seen[span.section] = seen.get(span.section, 0) + 1
            shown = text[span.start : span.end]
            if record.placement == "system":
                normalized = _NEWLINE_RUNS.sub("\n\n", record.content).strip("\n")
                assert shown.strip() == normalized.strip() and shown in normalized
            elif record.placement == "notification":
                assert shown == neutralize_closing_tag(record.content, "mira:hud")
            else:
                assert shown == record.content
        for offset in {0, len(text) // 2, len(text) - 1}:
            span = p.blame_at(key, offset)
            assert span.start <= offset < span.end
    assert seen == {name: 1 for name in records}


def test_blame_at_rejects_bad_keys_and_offsets() -> None:
    c = SystemPromptComposer()
    c.set_base_prompt("Hi.")
    p = c.compose()
    assert p.blame_at("cached_content", 0).section == "base_prompt"
    with pytest.raises(ValueError, match=r"^offset 500 is outside cached_content \(0\.\.\d+\)$"):
        p.blame_at("cached_content", 500)
    with pytest.raises(
        ValueError,
        match=r"^no text under 'notification_center' in this prompt "
        r"\(keys with text: cached_content\)$",
    ):
        p.blame_at("notification_center", 0)
    with pytest.raises(TypeError, match="^offset must be an int, got str$"):
        p.blame_at("cached_content", "0")  # type: ignore[arg-type]


def test_diff_names_the_section_owning_the_first_differing_character() -> None:
    s = Session(base_prompt="Base.", clock=ManualClock("2026-11-30T09:00:00+00:00"))
    s.compose()
    s.clock.advance(minutes=30)
    s.advance_turn()
    d = s.diff(0, 1)
    assert d.first_change is not None
    assert (d.first_change.key, d.first_change.section) == ("notification_center", "datetime_section")
    assert d.first_change.new is not None and d.first_change.new.trinket == "TimeManager"
    assert str(d.first_change).startswith("first change: notification_center at ")
    assert s.diff(1, 1).first_change is None


# -- %compose --blame and the picture --------------------------------------------------------


def test_compose_blame_colours_each_section_with_a_legend(ip: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    view = ip.run_line_magic("compose", "--blame")
    bundle = view._repr_mimebundle_()
    p = session.composed
    first = p.sections[0]
    lines = bundle["text/plain"].splitlines()
    assert lines[:2] == [f"blame · {len(p.sections)} sections", "=== cached_content ==="]
    span = p.blame("cached_content")[0]
    assert lines[2] == f"[0:{span.end}] base_prompt · {span.end} chars"
    html_view = bundle["text/html"]
    for record in p.sections:  # one legend entry per section, and its text coloured
        assert f">{record.name}" in html_view
    assert f'title="{first.name}"' in html_view
    with pytest.raises(UsageError, match="^use one of --raw, --diff, --json, --blame"):
        ip.run_line_magic("compose", "--blame --raw")
    with pytest.raises(UsageError, match="^--blame shows the whole prompt"):
        ip.run_line_magic("compose", "--blame -s base_prompt")


def test_compose_lists_sections_dropped_over_budget(ip: Any, session: Session) -> None:
    session.working_memory.budget.counter = chars()
    session.compose()
    base = len(session.working_memory.composer.get_entry("base_prompt")[0])
    session.working_memory.token_budget = base + 5
    text = ip.run_line_magic("compose", "")._repr_mimebundle_()["text/plain"]
    p = session.composed
    assert p.section_names() == ["base_prompt"]
    gone = [o for o in p.omitted if o.reason == OVER_BUDGET]
    assert gone and all(
        f"- {o.name} ({o.trinket}): over budget ({o.tokens} tokens, priority {o.priority})" in text for o in gone
    )
    assert text.splitlines()[-1].startswith(
        f"=== budget: {base} / {base + 5} tokens, sections with joiners and HUD frame (chars) · "
    )


def test_budget_bars_grey_the_dropped_sections_under_the_budget_line() -> None:
    from wm_kernel.display.budget_bars import budget_bars

    wm = budget_wm({"s1": 3, "n1": 1}, {"s1": "a" * 40, "n1": "b" * 40}, None)
    wm.compose("Base.")
    base = len(wm.composer.get_entry("base_prompt")[0])
    wm.token_budget = base + 47
    bars = budget_bars(wm.compose("Base."))
    assert [(r.placement, [(s.name, s.tokens, s.dropped) for s in r.segments]) for r in bars.rows] == [
        ("system", [("base_prompt", base, False), ("s1", 47, False)]),
        ("notification", [("n1", 42, True)]),
        ("total", [("base_prompt", base, False), ("s1", 47, False), ("n1", 42, True)]),
    ]
    svg = bars.svg
    assert svg.count("<rect ") == 6 + 1  # six segments and the hatch pattern's tile
    assert "<title>n1 · T_n1 · 42 tokens · priority 1 · dropped: over budget</title>" in svg
    assert f"budget {base + 47}</text>" in svg


def test_an_estimated_count_is_cut_on_its_upper_bound_and_says_so():
    from sample_trinkets import Directives, Ticker

    from wm_kernel.tokens import Band, ScaledTokenizer

    estimate = TokenCounter(ScaledTokenizer(CharTokenizer(), 1.0, Band(-0.1, 0.2, "test", "2026-12"), family="est"))
    exact, rough = (
        Session(
            base_prompt="b" * 100,
            trinkets=[Directives, Ticker],
            token_counter=counter,
            clock=ManualClock("2026-11-30T09:00:00+00:00"),
        )
        for counter in (chars(), estimate)
    )
    for s in (exact, rough):
        s.trinket("Directives").text = "d" * 600
    exact.working_memory.token_budget = 1
    with pytest.raises(BudgetError):
        exact.compose()
    exact.working_memory.token_budget = 10**6
    full = exact.compose().budget.full
    for s in (exact, rough):
        s.working_memory.token_budget = budget = full + 10
    e, r = exact.compose().budget, rough.compose().budget
    assert e.total <= budget and not e.dropped and e.upper is None
    # counted the same, but 1.2 x the count must fit too
    assert r.total * 1.2 <= budget and r.upper <= budget and r.dropped_names == ["datetime_section"]
    assert r.summary().startswith(
        f"≈ {r.total} tokens, up to {r.upper} / {budget}, sections with joiners and "
        f"HUD frame (≈ est (chars × 1) −10%/+20%; cut on the upper bound) · "
    )
