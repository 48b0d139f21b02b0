"""Scenarios (record, save, load, replay), variants and compare."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from trinkets.base import EventAwareTrinket, feed
from wm_kernel.core.clock import ManualClock, SystemClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.events import SegmentCollapsedEvent, TrinketFedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt_dict import COMPOSED_KEYS
from wm_kernel.experiments import Scenario, ScenarioError, Variant, as_variant, decode_value, encode_value, record
from wm_kernel.experiments.steps import TurnStep
from wm_kernel.instruments.history import History
from wm_kernel.session import Session

START = "2026-11-30T09:00:00+00:00"
USER_MODEL = (
    '<mira:user_model><mira:observation section="style" confidence="high">'
    "Likes short answers.</mira:observation></mira:user_model>"
)


def collect(session: Session) -> list[tuple[int, dict[str, Any]]]:
    """Observe ``composed``, keeping (turn, five keys) of every compose."""
    seen: list[tuple[int, dict[str, Any]]] = []
    session.observe(lambda change: seen.append((session.turn, change["new"].as_dict())), "composed")
    return seen


def drive(session: Session) -> None:
    """A notebook-like session touching every built-in trinket, the clock, profile and base prompt."""
    clock = session.clock
    assert isinstance(clock, ManualClock)
    session.compose()
    session.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down & <listen>.", ttl=1)
    session.trinket("ReminderManager").add_reminder(
        "Call the bank", datetime(2026, 11, 30, 11, 0, tzinfo=UTC), details="Loan papers"
    )
    session.trinket("GetContextTrinket").add_pending("t1", "tax rules", search_scope=("docs", "web"))
    session.trinket("LoraTrinket").set_user_model(USER_MODEL)
    session.trinket("ProactiveMemoryTrinket").surface(
        [
            {
                "id": "3f2a9c1b-77d0",
                "text": "Ada drinks tea",
                "similarity_score": 0.9,
                "created_at": "2026-11-27T09:00:00+00:00",
            }
        ]
    )
    docs = session.trinket("DomaindocTrinket")
    docs.create_document("handbook", "Team handbook")
    docs.add_section("handbook", "intro", "Intro", "Welcome aboard.")
    session.advance_turn()
    clock.advance(minutes=20)
    session.trinket("GetContextTrinket").add_success(
        "t1", "tax rules", "Rates changed in 2026.", key_findings=[{"point": "New rate", "source": "gov"}]
    )
    session.advance_turn(2)
    session.trinket("TimeManager").enabled = False  # a trait switch, not a feed call
    session.base_prompt = "You are terse with {first_name}."
    session.profile = session.profile.replace(first_name="Bea")
    session.compose()
    clock.advance(hours=2)
    session.collapse_segment("Tax talk\nWe went through rates.", tools_used=["search"])
    session.trinket("TimeManager").set_enabled(True)
    session.auto_compose = False
    session.advance_turn()
    clock.set("2026-12-01T08:00:00+01:00")
    session.compose()


def new_session(**kwargs: Any) -> Session:
    return Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock(START),
        continuum_id="support-1",
        **kwargs,
    )


# -- record and replay


def test_replaying_a_recorded_session_composes_the_identical_prompts(tmp_path: Path) -> None:
    live = new_session()
    recorded = collect(live)
    recorder = record(live)
    drive(live)
    recorder.stop()
    path = tmp_path / "scenario.jsonl"
    recorder.save(path)

    # every compose of the replay, five keys each, equals the live session's
    again: list[tuple[int, dict[str, Any]]] = []
    replay = Scenario.load(path).run(
        instruments=[
            History.attach,
            lambda session: session.observe(
                lambda change: again.append((change["new"].turn, change["new"].as_dict())), "composed"
            ),
        ]
    )
    assert replay.turn == live.turn == 4
    assert len(again) == len(recorded) == 7
    assert [t for t, _ in again] == [t for t, _ in recorded] == [0, 1, 2, 3, 3, 3, 4]
    for (_, got), (_, want) in zip(again, recorded, strict=True):
        assert set(got) == set(COMPOSED_KEYS)
        assert got == want
    # the prompts really exercised the trinkets
    last = recorded[-1][1]
    assert "Bea" in last["cached_content"] and "Likes short answers." in last["cached_content"]
    assert "TODAY IS TUESDAY, DECEMBER 01, 2026 AT 7:00 AM GMT." in last["notification_center"]


def test_recorded_file_reads_as_the_documented_steps(tmp_path: Path) -> None:
    live = new_session()
    with record(live) as recorder:
        drive(live)
    lines = recorder.scenario.dumps().splitlines()
    header = json.loads(lines[0])
    assert header == {
        "format": "wm-kernel-scenario",
        "version": 1,
        "base_prompt": "You help {first_name}.",
        "profile": {"first_name": "Ada", "timezone": "Europe/London"},
        "clock": START,
        "user_id": "notebook",
        "trinkets": [
            "TimeManager",
            "LoraTrinket",
            "ManifestTrinket",
            "ReminderManager",
            "ProactiveMemoryTrinket",
            "GetContextTrinket",
            "PeanutGalleryTrinket",
            "DomaindocTrinket",
        ],
        "continuum_id": "support-1",
        "auto_compose": True,
        "layout": None,
    }
    steps = [json.loads(line) for line in lines[1:]]
    assert [s["step"] for s in steps] == [
        "compose",
        "feed",
        "feed",
        "feed",
        "feed",
        "feed",
        "feed",
        "feed",
        "turn",
        "clock",
        "feed",
        "turn",
        "feed",
        "base_prompt",
        "profile",
        "compose",
        "clock",
        "collapse",
        "feed",
        "auto_compose",
        "turn",
        "clock",
        "compose",
    ]
    assert steps[2] == {
        "step": "feed",
        "trinket": "ReminderManager",
        "method": "add_reminder",
        "args": ["Call the bank", {"$datetime": "2026-11-30T11:00:00+00:00"}],
        "kwargs": {"details": "Loan papers"},
    }
    assert steps[3]["kwargs"] == {"search_scope": {"$tuple": ["docs", "web"]}}
    assert steps[9] == {"step": "clock", "advance": 1200}
    assert steps[11] == {"step": "turn", "n": 2}  # advance_turn(2): one step
    assert steps[12] == {
        "step": "feed",
        "trinket": "TimeManager",
        "method": "set_enabled",
        "args": [False],
        "kwargs": {},
    }
    assert steps[14] == {"step": "profile", "fields": {"first_name": "Bea"}}
    assert steps[17] == {"step": "collapse", "summary": "Tax talk\nWe went through rates.", "tools_used": ["search"]}
    assert steps[21] == {"step": "clock", "set": "2026-12-01T08:00:00+01:00"}
    assert not recorder.active


def hooks(session: Session) -> tuple[int, ...]:
    """How many observers and subscriptions a recorder could have left behind."""
    clock = session.clock
    assert isinstance(clock, ManualClock)
    observers = [
        len(owner._trait_notifiers.get(name, {}).get("change", []))
        for owner, name in (
            (session, "turn"),
            (session, "composed"),
            (session, "base_prompt"),
            (session, "auto_compose"),
            (clock, "current"),
        )
    ]
    return (
        *observers,
        len(session.bus.subscribers(TrinketFedEvent)),
        len(session.bus.subscribers(SegmentCollapsedEvent)),
    )


def test_stop_removes_every_hook() -> None:
    live = new_session()
    hooks_before = hooks(live)
    recorder = record(live)
    assert hooks(live) != hooks_before
    live.advance_turn()
    scenario = recorder.stop()
    assert hooks(live) == hooks_before
    live.advance_turn()
    live.base_prompt = "changed"
    live.trinket("TimeManager").enabled = False
    live.clock.advance(minutes=1)  # type: ignore[attr-defined]
    assert scenario.steps == [TurnStep(1)]
    assert recorder.stop() is scenario  # a second stop is a no-op


def test_record_refuses_what_it_cannot_replay() -> None:
    with pytest.raises(ValueError, match="needs a Session with a ManualClock"):
        record(Session(clock=SystemClock(), trinkets=[]))
    started = new_session()
    started.advance_turn()
    with pytest.raises(ValueError, match="start recording before the first turn"):
        record(started)


class Box(EventAwareTrinket):
    """A test trinket whose feed takes an unrecordable value."""

    variable_name = "box"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.items: list[str] = []

    @feed
    def put(self, item: Any) -> None:
        self.items.append(str(item))

    def generate_content(self, context: dict[str, Any]) -> str:
        return "\n".join(self.items)


BOX_LAYOUT = Layout.default().with_section("box", "system")


def test_an_unrecordable_feed_fails_the_save_not_the_call(tmp_path: Path) -> None:
    live = new_session(trinkets=[Box], layout=BOX_LAYOUT)
    recorder = record(live)
    live.advance_turn()
    live.trinket("Box").put(item={"tags": ["a", {1, 2}]})  # the live call works
    live.trinket("Box").put("ok")
    assert live.trinket("Box").items == ["{'tags': ['a', {1, 2}]}", "ok"]
    with pytest.raises(
        ScenarioError,
        match=r"^the recording is incomplete: step 2 \(feed Box\.put\): "
        r"argument 'item' at \['tags'\]\[1\]: cannot record a "
        r"value of type set \(",
    ):
        recorder.save(tmp_path / "s.jsonl")
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "cut \ud83d",
            "argument 1: cannot record a string holding the lone surrogate U+D83D at index 4 "
            "(UTF-8 cannot write it; was the text cut mid-character?)",
        ),
        (float("nan"), "argument 1: cannot record the non-finite number nan"),
        (
            {"\udcff": 1},
            "argument 1: cannot record a key holding the lone surrogate U+DCFF at index 0 "
            "(UTF-8 cannot write it; was the text cut mid-character?)",
        ),
    ],
)
def test_an_unrecordable_argument_is_named_with_its_step(tmp_path: Path, value: Any, message: str) -> None:
    live = new_session(trinkets=[Box], layout=BOX_LAYOUT)
    recorder = record(live)
    live.trinket("Box").put("fine")
    live.trinket("Box").put(value)
    with pytest.raises(ScenarioError) as info:
        recorder.save(tmp_path / "s.jsonl")
    assert str(info.value) == f"the recording is incomplete: step 2 (feed Box.put): {message}"
    assert os.listdir(tmp_path) == []


def test_a_value_that_contains_itself_is_refused_not_a_recursion_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(TypeError, match=r"^step 1 \(feed Box\.put\): argument 1 at \[0\]\[0\]"):
        Scenario(clock=START, trinkets=["Box"]).feed("Box", "put", loop)


def test_saving_a_step_utf8_cannot_write_names_it_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("the previous recording\n", encoding="utf-8")
    scenario = Scenario(clock=START, trinkets=["TimeManager"]).compose().set_base_prompt("Cut \ud83d")
    with pytest.raises(ScenarioError) as info:
        scenario.save(path)
    assert str(info.value) == (
        f"cannot save {path}: step 2 (base_prompt): field 'text': a string "
        f"holds the lone surrogate U+D83D (UTF-8 cannot write it)"
    )
    assert path.read_text(encoding="utf-8") == "the previous recording\n"
    assert os.listdir(tmp_path) == ["s.jsonl"]  # no temporary file left behind


def test_a_trinket_registered_after_recording_started_is_recorded_and_replays(tmp_path: Path) -> None:
    live = new_session(trinkets=[], layout=BOX_LAYOUT)
    recorder = record(live)
    live.compose()
    live.add_trinket(Box)
    live.trinket("Box").put("apples")
    live.advance_turn()
    recorder.save(tmp_path / "s.jsonl")
    lines = (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines[1:]] == [
        {"step": "compose"},
        {"step": "add_trinket", "trinket": "Box"},
        {"step": "feed", "trinket": "Box", "method": "put", "args": ["apples"], "kwargs": {}},
        {"step": "turn", "n": 1},
    ]
    loaded = Scenario.load(tmp_path / "s.jsonl")
    assert loaded.trinkets == () and loaded.all_trinkets == ("Box",)
    replayed = loaded.run(factories={"Box": Box})
    assert replayed.trinket("Box").items == ["apples"]
    assert "apples" in live.composed.system_prompt
    assert replayed.composed.system_prompt == live.composed.system_prompt
    with pytest.raises(
        ScenarioError,
        match=r"line 3: add_trinket Box failed: ValueError: trinket 'Box' is not "
        r"built in; pass factories=\{'Box': <class or factory>\} to run\(\)",
    ):
        loaded.run()
    with pytest.raises(ScenarioError, match=r"^step 2: field 'trinket': 'Box' is registered already$"):
        Scenario(clock=START, trinkets=[]).add_trinket("Box").add_trinket("Box")


def test_custom_trinkets_replay_with_factories() -> None:
    live = new_session(trinkets=[Box], layout=BOX_LAYOUT)
    recorder = record(live)
    live.trinket("Box").put("apples")
    live.advance_turn()
    scenario = recorder.stop()
    assert scenario.layout == {"name": "default", "placements": BOX_LAYOUT.as_dict()}
    with pytest.raises(
        ScenarioError,
        match=r"trinket 'Box' is not built in; pass "
        r"factories=\{'Box': <class or factory>\} to run\(\)",
    ):
        scenario.run()
    replay = scenario.run(factories={"Box": Box})
    assert replay.composed is not None
    assert replay.composed.as_dict() == live.composed.as_dict()  # type: ignore[union-attr]
    assert replay.composed.section("box").content == "apples"


# -- building, saving and loading


def build() -> Scenario:
    return (
        Scenario(
            base_prompt="You help {first_name}.",
            profile={"first_name": "Ada"},
            clock=START,
            trinkets=["TimeManager", "PeanutGalleryTrinket"],
        )
        .compose()
        .feed("PeanutGalleryTrinket", "add_guidance", "coaching", "Ask first.", ttl=2)
        .advance(minutes=5)
        .advance_turn(3)
        .collapse_segment("Done", tools_used=["search"])
        .set_clock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
        .set_base_prompt("Hi {first_name}")
        .set_profile(first_name="Bea")
        .set_auto_compose(False)
        .compose()
    )


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    scenario = build()
    path = tmp_path / "s.jsonl"
    scenario.save(path)
    loaded = Scenario.load(path)
    assert loaded == scenario
    assert loaded.turns == 3 and len(loaded) == 10
    assert path.read_text(encoding="utf-8") == scenario.dumps()
    assert path.read_text(encoding="utf-8").splitlines()[1:] == [
        '{"step": "compose"}',
        '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", '
        '"args": ["coaching", "Ask first."], "kwargs": {"ttl": 2}}',
        '{"step": "clock", "advance": 300}',
        '{"step": "turn", "n": 3}',
        '{"step": "collapse", "summary": "Done", "tools_used": ["search"]}',
        '{"step": "clock", "set": "2026-12-01T09:00:00+00:00"}',
        '{"step": "base_prompt", "text": "Hi {first_name}"}',
        '{"step": "profile", "fields": {"first_name": "Bea"}}',
        '{"step": "auto_compose", "value": false}',
        '{"step": "compose"}',
    ]
    a, b = scenario.run(), loaded.run()
    assert a.composed.as_dict() == b.composed.as_dict()  # type: ignore[union-attr]
    assert b.composed["cached_content"].startswith("Hi Bea\n\n")  # type: ignore[index]


def test_the_count_of_turns_is_one_definition_shown_alike_by_repr_and_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wm_kernel.__main__ import main

    scenario = (
        Scenario(clock="2026-11-30T09:00:00+00:00", trinkets=["TimeManager"])
        .compose()
        .advance_turn(2)
        .collapse_segment("Done")
        .advance_turn()
    )
    assert scenario.turns == 3
    assert repr(scenario) == "<Scenario 4 steps (compose=1, turn=2, collapse=1), 3 turns>"
    path = tmp_path / "s.jsonl"
    scenario.save(path)
    assert main(["replay", str(path), "--estimate-tokens"]) == 0
    # turn 0 is composed before the first exchange: one prompt more than there are turns
    assert (
        capsys.readouterr().out.splitlines()[-2].startswith("3 turns, 4 prompts (turns 0-3), 0 read from the cache, ")
    )


# -- large files are streamed


def write_turns(path: Path, count: int) -> None:
    """A header and ``count`` steps: a feed, a clock move and a turn, over and over."""
    steps = [
        '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", '
        '"args": ["concern", "Slow down."], "kwargs": {"ttl": 1}}',
        '{"step": "clock", "advance": 60}',
        '{"step": "turn", "n": 2}',
    ]
    path.write_text(HEADER + "\n" + "".join(steps[i % 3] + "\n" for i in range(count)), encoding="utf-8")


@pytest.mark.slow  # a 9,000-step file loaded twice, once under tracemalloc
def test_loading_keeps_no_steps_in_memory(tmp_path: Path) -> None:
    import tracemalloc

    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_turns(small, 3)
    write_turns(big, 9_000)
    Scenario.load(small)  # imports and caches warmed up outside the count
    tracemalloc.start()
    try:
        loaded = Scenario.load(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the steps as objects take several times the file (0.8 MB); streamed, the peak is a few lines' worth
    assert peak < big.stat().st_size // 5
    assert (len(loaded), loaded.turns) == (9_000, 6_000)
    assert repr(loaded) == "<Scenario 9000 steps (feed=3000, clock=3000, turn=3000), 6000 turns>"
    assert loaded.steps[-1] == TurnStep(2) and loaded.steps[2] == TurnStep(2)


def test_a_loaded_scenario_replays_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_turns(path, 300)
    session = Scenario.load(path).run(instruments=())
    assert (session.turn, session.clock.now().isoformat()) == (200, "2026-11-30T10:40:00+00:00")


def test_a_loaded_scenario_names_file_lines_when_a_step_fails(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_turns(path, 6)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            '\n{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", "args": ["guidance-99"]}\n'
        )
    with pytest.raises(
        ScenarioError,
        match=rf"^{path} line 9: feed PeanutGalleryTrinket\.remove "
        rf"failed: ValueError: no guidance with id 'guidance-99'",
    ):
        Scenario.load(path).run()


def test_a_file_changed_after_loading_is_refused_not_half_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_turns(path, 6)
    loaded = Scenario.load(path)
    write_turns(path, 7)
    with pytest.raises(
        ScenarioError,
        match=rf"^{path}: the file changed \(or went away\) since it "
        rf"was loaded; load it again$",
    ):
        loaded.run()
    path.unlink()
    with pytest.raises(ScenarioError, match="the file changed"):
        list(loaded.steps)


def test_building_on_a_loaded_scenario_reads_its_steps_first(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    build().save(path)
    loaded = Scenario.load(path).advance_turn(2)
    assert loaded.steps == [*build().steps, TurnStep(2)]
    assert loaded.turns == 5
    path.unlink()  # the steps are in memory now
    assert loaded.dumps() == build().advance_turn(2).dumps()
    path.write_text(HEADER + "\n" + '{"step": "turn", "n": 0}\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match=rf"^{path} line 2: field 'n'"):
        Scenario.load(path).compose()  # the file's own errors still name it


def test_saving_a_loaded_scenario_over_its_own_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    build().save(path)
    before = path.read_text(encoding="utf-8")
    Scenario.load(path).save(path)  # reads the old file while writing
    assert path.read_text(encoding="utf-8") == before


def test_save_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("old contents\n", encoding="utf-8")
    scenario = build()
    import wm_kernel.experiments.scenario as experiments

    calls = {"n": 0}
    real = experiments.json_line

    def failing(obj: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("disk full")
        return real(obj)

    monkeypatch.setattr(experiments, "json_line", failing)
    with pytest.raises(OSError, match="disk full"):
        scenario.save(path)
    assert calls["n"] == 4  # it failed mid-file
    assert path.read_text(encoding="utf-8") == "old contents\n"
    assert sorted(os.listdir(tmp_path)) == ["s.jsonl"]  # no temporary file left behind


def test_save_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("x", encoding="utf-8")
    path.chmod(0o640)
    build().save(path)
    assert path.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "t.jsonl"
    build().save(fresh)
    assert fresh.stat().st_mode & 0o777 == 0o644


HEADER = (
    '{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", '
    '"trinkets": ["PeanutGalleryTrinket"]}'
)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "scenario.jsonl: empty file (expected a header line)"),
        (
            ['{"format": "wm-kernel-scenario", "version": 2, "clock": "2026-11-30T09:00:00+00:00"}'],
            "scenario.jsonl line 1: field 'version' must be 1 (this wm-kernel reads version 1; got 2)",
        ),
        (
            ['{"version": 1, "clock": "2026-11-30T09:00:00+00:00"}'],
            "scenario.jsonl line 1: field 'format' must be 'wm-kernel-scenario': is this a scenario file?",
        ),
        (
            ['{"format": "wm-kernel-scenario", "version": 1}'],
            "scenario.jsonl line 1: field 'clock' is missing (the replay's start time, ISO 8601 with offset)",
        ),
        (
            ['{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00"}'],
            "scenario.jsonl line 1: field 'clock': date-time 2026-11-30T09:00:00 has no time zone; add one, "
            "e.g. +00:00",
        ),
        (
            [
                '{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", '
                '"profile": {"timezone": "Mars/Olympus"}}'
            ],
            "scenario.jsonl line 1: field 'profile': unknown time zone 'Mars/Olympus' (use an IANA name such "
            "as 'Europe/London' or 'UTC')",
        ),
        (
            [
                '{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", '
                '"profile": {"name": "Ada"}}'
            ],
            "scenario.jsonl line 1: field 'profile' has unknown Profile field 'name' (fields: first_name, "
            "timezone, user_context, account_created, model_id, model_name)",
        ),
        (
            ['{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", "colour": "red"}'],
            "scenario.jsonl line 1: unknown field 'colour' for the header (fields: format, version, "
            "base_prompt, profile, clock, user_id, trinkets, continuum_id, auto_compose, layout)",
        ),
        (
            [
                '{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", '
                '"layout": {"placements": {"footer": ["x"]}}}'
            ],
            "scenario.jsonl line 1: field 'layout': unknown placement 'footer' (placements: system, "
            "conversation_prefix, post_history, notification)",
        ),
        (
            [HEADER, "", '{"step": "turn", "n": 1}', '{"step": "turn"}', '{"step": "turn", "n": 0}'],
            "scenario.jsonl line 5: field 'n' must be a positive integer",
        ),
        ([HEADER, '{"step": "turn", "n": true}'], "scenario.jsonl line 2: field 'n' must be a positive integer"),
        (
            [HEADER, '{"step": "turns", "n": 2}'],
            "scenario.jsonl line 2: field 'step' must be one of base_prompt, profile, feed, turn, collapse, "
            "clock, compose, auto_compose, send, add_trinket (got 'turns')",
        ),
        ([HEADER, '{"n": 2}'], "scenario.jsonl line 2: field 'step' is missing"),
        (
            [HEADER, '{"step": "turn", "count": 2}'],
            "scenario.jsonl line 2: unknown field 'count' for a 'turn' step (fields: step, n)",
        ),
        (
            [HEADER, '{"step": "turn", "n": 2'],
            "scenario.jsonl line 2: not valid JSON (Expecting ',' delimiter at column 24)",
        ),
        ([HEADER, "[1, 2]"], "scenario.jsonl line 2: a step must be a JSON object, got list"),
        (
            [HEADER, '{"step": "feed", "trinket": "TimeManager", "method": "set_enabled"}'],
            "scenario.jsonl line 2: field 'trinket': 'TimeManager' is not one of the scenario's trinkets "
            "(PeanutGalleryTrinket)",
        ),
        (
            [HEADER, '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidence"}'],
            "scenario.jsonl line 2: field 'method': 'add_guidence' is not a feed method of "
            "PeanutGalleryTrinket (feed methods: add_guidance, remove, set_enabled, set_style)",
        ),
        (
            [HEADER, '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", "args": "g1"}'],
            "scenario.jsonl line 2: field 'args' must be a list",
        ),
        (
            [
                HEADER,
                '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
                '"args": [{"$datetime": "soon"}]}',
            ],
            "scenario.jsonl line 2: field 'args': $datetime 'soon' is not an ISO 8601 date-time",
        ),
        (
            [HEADER, '{"step": "clock"}'],
            "scenario.jsonl line 2: a 'clock' step needs exactly one of the fields 'advance' or 'set'",
        ),
        (
            [HEADER, '{"step": "turn", "n": ' + "[" * 100_000 + "]" * 100_000 + "}"],
            "scenario.jsonl line 2: JSON nested too deeply to read (values may nest at most 100 levels deep)",
        ),
        (
            [HEADER[:-1] + ', "profile": {"first_name": ' + "[" * 100_000 + "]" * 100_000 + "}}"],
            "scenario.jsonl line 1: JSON nested too deeply to read (values may nest at most 100 levels deep)",
        ),
        (
            [
                HEADER,
                '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
                '"args": [' + "[" * 100 + "]" * 100 + "]}",
            ],
            "scenario.jsonl line 2: field 'args': values may nest at most 100 levels deep",
        ),
        (
            [
                HEADER,
                '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
                '"kwargs": {"id": [' + '{"$tuple": [' * 120 + "]}" * 120 + "]}}",
            ],
            "scenario.jsonl line 2: field 'kwargs': values may nest at most 100 levels deep",
        ),
        (
            [HEADER, '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", "args": [NaN]}'],
            "scenario.jsonl line 2: field 'args': the non-finite number nan is not a JSON value",
        ),
        (
            [
                HEADER,
                '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", "args": ["cut \\ud83d"]}',
            ],
            "scenario.jsonl line 2: field 'args': a string holds the lone surrogate U+D83D (UTF-8 cannot write it)",
        ),
        (
            [
                HEADER,
                '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
                '"args": [{"$timedelta": 1e300}]}',
            ],
            "scenario.jsonl line 2: field 'args': $timedelta 1e+300 is out of range (at most 86400000000000 seconds)",
        ),
        (
            [HEADER, '{"step": "clock", "advance": 1e300}'],
            "scenario.jsonl line 2: field 'advance' is more than a clock can move (at most 315537897600 "
            "seconds, about 10,000 years)",
        ),
        (
            [HEADER, '{"step": "clock", "advance": 1' + "0" * 400 + "}"],
            "scenario.jsonl line 2: field 'advance' is more than a clock can move (at most 315537897600 "
            "seconds, about 10,000 years)",
        ),
        (
            [HEADER, '{"step": "clock", "advance": -5}'],
            "scenario.jsonl line 2: field 'advance' must be a number of seconds >= 0",
        ),
        (
            [HEADER, '{"step": "clock", "set": "tomorrow"}'],
            "scenario.jsonl line 2: field 'set': not an ISO 8601 date-time: 'tomorrow'",
        ),
        (
            [HEADER, '{"step": "collapse", "tools_used": "search"}'],
            "scenario.jsonl line 2: field 'tools_used' must be a list of strings",
        ),
        ([HEADER, '{"step": "base_prompt"}'], "scenario.jsonl line 2: field 'text' must be a string"),
        (
            [HEADER, '{"step": "profile", "fields": {"timezone": "Nowhere"}}'],
            "scenario.jsonl line 2: field 'fields': unknown time zone 'Nowhere' (use an IANA name such as "
            "'Europe/London' or 'UTC')",
        ),
        (
            [HEADER, '{"step": "auto_compose", "value": "yes"}'],
            "scenario.jsonl line 2: field 'value' must be true or false",
        ),
    ],
)
def test_bad_files_name_the_line_and_field(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "scenario.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.load(path)
    assert str(info.value) == message.replace("scenario.jsonl", str(path), 1)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_failing_step_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "scenario.jsonl"
    path.write_text(
        HEADER + "\n" + '{"step": "turn"}\n'
        '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", '
        '"args": ["worry", "Hm."]}\n',
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError, match=(r"line 3: feed PeanutGalleryTrinket\.add_guidance failed: ValueError: ")):
        Scenario.load(path).run()


def test_an_integer_too_long_to_read_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "scenario.jsonl"
    path.write_text(HEADER + "\n" + '{"step": "turn", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=rf"^{path} line 2: not valid JSON \(Exceeds the limit"):
        Scenario.load(path)


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            ['{"step": "clock", "advance": 300000000000}'],
            "line 2: 'clock' step failed: ValueError: advancing the clock 300000000000 seconds from "
            "2026-11-30T09:00:00+00:00 passes the year 9999",
        ),
        (
            [
                '{"step": "clock", "set": "9999-12-31T23:00:00+00:00"}',
                '{"step": "turn"}',
                '{"step": "clock", "advance": 7200}',
            ],
            "line 4: 'clock' step failed: ValueError: advancing the clock 7200 seconds from "
            "9999-12-31T23:00:00+00:00 passes the year 9999",
        ),
    ],
)
def test_a_clock_advance_past_the_year_9999_names_its_step(tmp_path: Path, steps: list[str], message: str) -> None:
    path = tmp_path / "scenario.jsonl"
    path.write_text("".join(line + "\n" for line in [HEADER, *steps]), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.load(path).run()
    assert str(info.value) == f"{path} {message}"


def test_values_nest_as_deep_when_recorded_as_when_loaded() -> None:
    def nest(levels: int) -> Any:
        value: Any = "core"
        for _ in range(levels):
            value = [value]
        return value

    scenario = Scenario(clock=START, trinkets=["Box"]).feed("Box", "put", nest(99))
    assert Scenario.loads(scenario.dumps()) == scenario
    with pytest.raises(
        TypeError,
        match=r"^step 2 \(feed Box\.put\): argument 1 at \[0\]\[0\]\[0\]\[0\]\.\.\.\[0\]\[0\]"
        r"\[0\]\[0\] \(99 levels in\): "
        r"cannot record a value nested more than 100 levels deep",
    ):
        scenario.feed("Box", "put", nest(100))
    with pytest.raises(ScenarioError, match=r"^step 2: field 'args': values may nest at most 100 "):
        scenario._append({"step": "feed", "trinket": "Box", "method": "put", "args": [nest(100)]})


def test_steps_built_in_python_are_validated_with_their_number() -> None:
    scenario = Scenario(clock=START, trinkets=["TimeManager"]).advance_turn()
    with pytest.raises(ScenarioError, match=r"^step 2: field 'n' must be a positive integer$"):
        scenario.advance_turn(0)
    assert len(scenario) == 1  # nothing half-added
    with pytest.raises(
        TypeError,
        match=r"^step 2 \(feed TimeManager\.set_enabled\): argument 1: "
        r"cannot record a value of type object",
    ):
        scenario.feed("TimeManager", "set_enabled", object())


def test_value_codec_round_trips() -> None:
    value = {
        "when": datetime(2026, 11, 30, 9, tzinfo=UTC),
        "pair": ("a", 1),
        "gap": timedelta(minutes=90),
        "nested": [{"$odd": 1}],
        "plain": {"a": [1.5, None]},
    }
    encoded = encode_value(value)
    assert json.loads(json.dumps(encoded)) == encoded
    assert encoded["nested"] == [{"$dict": {"$odd": 1}}]
    assert decode_value(encoded) == value


# -- variants


def test_variants_change_layout_wording_and_switches() -> None:
    scenario = build()
    base = scenario.run()
    moved = scenario.run(Layout.default().with_section("peanutgallery_guidance", "system"))
    assert base.composed is not None and moved.composed is not None
    quiet = scenario.run({"disabled": ["PeanutGalleryTrinket"], "base_prompt": str.upper})
    assert quiet.composed is not None
    assert quiet.composed["cached_content"].startswith("HI {FIRST_NAME}")  # wording runs first
    hooked = scenario.run(Variant(name="hud", hook=lambda s: setattr(s.working_memory.composer, "hud_title", "STATE")))
    assert hooked.composed is not None
    assert hooked.composed["notification_center"].splitlines()[1] == "STATE"
    with pytest.raises(ValueError, match=r"variant 'x': unknown trinket 'Nope'"):
        scenario.run(Variant(name="x", disabled=("Nope",)))
    with pytest.raises(ValueError, match=r"variant 'v': unknown field 'layuot'"):
        as_variant({"layuot": {}}, "v")


def test_a_variant_writes_trinkets_in_another_style_and_wins_over_recorded_switches() -> None:
    from trinkets.reminders import ReminderManager

    scenario = (
        Scenario(clock=START, trinkets=["ManifestTrinket", "ReminderManager"])
        .feed("ReminderManager", "add_reminder", "Call Bob", "2026-11-30T11:00:00+00:00")
        .feed("ManifestTrinket", "set_style", "original")
        .collapse_segment("Morning")
        .compose()
    )
    original = scenario.run().composed
    revised = scenario.run({"styles": "revised"}).composed
    only_reminders = scenario.run({"styles": {"ReminderManager": "revised"}}).composed
    assert original is not None and revised is not None and only_reminders is not None

    def text(prompt: Any, section: str) -> str:
        return prompt.section(section).content

    # one name: every trinket that offers it; the recorded set_style("original") is ignored
    for section in ("active_reminders", "conversation_manifest"):
        assert text(revised, section) != text(original, section)
    assert text(only_reminders, "active_reminders") == text(revised, "active_reminders")
    assert text(only_reminders, "conversation_manifest") == text(original, "conversation_manifest")
    assert "revised" in ReminderManager.styles
    with pytest.raises(
        ValueError,
        match=r"^variant 'x': ReminderManager has no style 'plain' "
        r"\(known: original, revised\)$",
    ):
        scenario.run(Variant(name="x", styles={"ReminderManager": "plain"}))
    with pytest.raises(
        ValueError,
        match=r"^variant 'y': no trinket of the session offers style "
        r"'terse'$",
    ):
        scenario.run(Variant(name="y", styles="terse"))
    with pytest.raises(TypeError, match=r"^Variant styles must be a style name or a dict"):
        Variant(styles=["revised"])  # type: ignore[arg-type]


# -- compare


def test_compare_is_keyed_by_variant_and_turn() -> None:
    from wm_kernel.experiments import COMPARE_COLUMNS, compare, plot_compare
    from wm_kernel.tokens import EstimateTokenizer, TokenCounter

    scenario = build()
    counter = TokenCounter(EstimateTokenizer())
    frame = compare(
        scenario,
        {
            "as recorded": None,
            "guidance in system": Layout.default().with_section("peanutgallery_guidance", "system"),
            "no guidance": {"disabled": ["PeanutGalleryTrinket"]},
            "shouty": Variant(base_prompt=str.upper),
        },
        counter=counter,
    )
    assert list(frame.index.names) == ["variant", "turn"]
    assert frame.index.is_unique and frame.shape == (16, len(COMPARE_COLUMNS))
    assert frame.index.get_level_values("variant").unique().tolist() == [
        "as recorded",
        "guidance in system",
        "no guidance",
        "shouty",
    ]
    assert frame.xs("as recorded").index.tolist() == [0, 1, 2, 3]
    assert (
        list(frame.columns)
        == COMPARE_COLUMNS
        == [
            "segment",
            "sections",
            "chars_cached",
            "chars_non_cached",
            "chars_conversation_prefix",
            "chars_post_history",
            "chars_notification",
            "chars_total",
            "tokens_cached",
            "tokens_non_cached",
            "tokens_conversation_prefix",
            "tokens_post_history",
            "tokens_notification",
            "tokens_total",
            "cache_status",
            "cache_hit",
            "cache_write_tokens",
            "cache_read_tokens",
            "uncached_tokens",
            "cache_broke_by",
            "cost",
            "digest_cached",
            "digest_non_cached",
            "digest_conversation_prefix",
            "digest_post_history",
            "digest_notification",
        ]
    )
    assert frame.attrs["tokenizer"] == "≈ estimate (chars/4) −50%/+100%"
    assert frame.attrs["model"] == "claude-sonnet-4-6"
    # the guidance (turns 1 and 2) moves from the notification centre to the uncached system part
    moved = frame.xs("guidance in system")
    assert moved["chars_non_cached"].tolist()[1:3] == [113, 113]
    assert (moved["digest_non_cached"] != "").tolist() == [False, True, True, False]
    assert frame.xs("as recorded")["chars_non_cached"].tolist() == [0, 0, 0, 0]
    # differences are one groupby away: which turns' notification centres differ between variants
    differs = frame.groupby(level="turn")["digest_notification"].nunique()
    assert differs.tolist() == [1, 2, 2, 1]
    assert frame.groupby(level="variant")["tokens_total"].sum().to_dict() == {
        "as recorded": 401,
        "guidance in system": 401,
        "no guidance": 343,
        "shouty": 412,
    }
    assert frame.xs("shouty")["digest_cached"].tolist() != frame.xs("as recorded")["digest_cached"].tolist()
    # tokens are the sums of each section's count, the same counts as the history's
    again = scenario.run()
    again.recorder.counter = TokenCounter(EstimateTokenizer())
    history = again.history
    assert frame.xs("as recorded")["tokens_total"].tolist() == (history.groupby("turn")["tokens"].sum().tolist())
    # one shared counter: a text common to several variants is tokenized once
    distinct = set()
    for name in ("as recorded", "guidance in system", "no guidance", "shouty"):
        session = scenario.run(
            None
            if name == "as recorded"
            else {
                "guidance in system": {"layout": Layout.default().with_section("peanutgallery_guidance", "system")},
                "no guidance": {"disabled": ["PeanutGalleryTrinket"]},
                "shouty": {"base_prompt": str.upper},
            }[name]
        )
        distinct |= set(session.recorder.texts().values())
    assert counter.calls == len(distinct)
    fig = plot_compare(frame)
    assert [ax.get_ylabel() for ax in fig.axes] == ["chars_total", "tokens_total"]
    assert [line.get_label() for line in fig.axes[0].get_lines()] == [
        "as recorded",
        "guidance in system",
        "no guidance",
        "shouty",
    ]
    with pytest.raises(ValueError, match=r"unknown metric 'bytes'"):
        plot_compare(frame, "bytes")


def test_compare_rejects_bad_variants() -> None:
    from wm_kernel.experiments import compare

    with pytest.raises(ValueError, match="variants must be a non-empty mapping"):
        compare(build(), {})
    with pytest.raises(TypeError, match=r"variant 'x' must be a Layout, a Variant or a dict, got int"):
        compare(build(), {"x": 3})


def test_each_kind_of_step_is_one_class_that_reads_and_writes_itself() -> None:
    from wm_kernel.experiments.steps import STEP_TYPES, parse_step

    samples = [
        {"step": "base_prompt", "text": "Hi {first_name}."},
        {"step": "profile", "fields": {"first_name": "Bea"}},
        {
            "step": "feed",
            "trinket": "PeanutGalleryTrinket",
            "method": "add_guidance",
            "args": ["concern", "Slow down."],
            "kwargs": {"ttl": 1},
        },
        {"step": "turn", "n": 3},
        {"step": "collapse", "summary": "Done", "tools_used": ["search"]},
        {"step": "clock", "advance": 90},
        {"step": "clock", "set": "2026-12-01T08:00:00+01:00"},
        {"step": "compose"},
        {"step": "auto_compose", "value": False},
        {
            "step": "send",
            "exchange": {
                "v": 1,
                "turn": 2,
                "provider": "anthropic",
                "model": "claude-sonnet-4-6",
                "user": "Hi",
                "reply": "Hello.",
                "usage": {"input_tokens": 9, "output_tokens": 2},
                "request_id": "req_1",
                "stop_reason": "end_turn",
                "prefix": {},
            },
        },
        {"step": "add_trinket", "trinket": "Box"},
    ]
    assert sorted({s["step"] for s in samples}) == sorted(STEP_TYPES)
    for raw in samples:
        step = parse_step(raw, "here", ["PeanutGalleryTrinket"])
        assert type(step) is STEP_TYPES[raw["step"]] and step.kind == raw["step"]
        assert step.to_json() == raw
        assert parse_step(step.to_json(), "again", ["PeanutGalleryTrinket"]) == step
    with pytest.raises(
        ScenarioError,
        match=r"^here: unknown field 'm' for a 'turn' step \(fields: "
        r"step, n\)$",
    ):
        parse_step({"step": "turn", "m": 1}, "here", [])


def test_every_session_records_what_it_is_fed_from_birth_within_a_bound() -> None:
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.experiments.recorder import ScenarioRecorder, session_recording

    live = Session(clock=ManualClock(START), trinkets=[])
    live.compose()
    live.advance_turn(2)
    recorded = session_recording(live).scenario
    assert [step.to_json() for step in recorded.steps] == [{"step": "compose"}, {"step": "turn", "n": 2}]
    assert recorded.run().composed.system_prompt == live.composed.system_prompt
    bounded = Session(clock=ManualClock(START), trinkets=[], instruments=())
    recorder = ScenarioRecorder(bounded, max_steps=2)
    for _ in range(3):
        bounded.compose()
    assert len(recorder.scenario) == 2 and not recorder.active
    assert recorder.errors == ["the recording stopped at its bound of 2 steps"]
    with pytest.raises(
        ValueError,
        match=r"^this session has no recording to replay: it was built with "
        r"instruments=\.\.\. that leave the recording out",
    ):
        session_recording(bounded)
