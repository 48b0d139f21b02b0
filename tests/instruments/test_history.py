"""History: one row per (turn, section), texts stored once, prompts rebuilt, persisted in SQLite."""

from __future__ import annotations

import pandas as pd
import pytest
from sample_trinkets import Directives, Doc, Ticker

from trinkets.base import EventAwareTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import StragglerSectionWarning, SystemPromptComposer
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.history import History
from wm_kernel.instruments.history.frame import FRAME_COLUMNS
from wm_kernel.session import Session
from wm_kernel.stores.embedded import SQLiteStore
from wm_kernel.tokens import EstimateTokenizer, TokenCounter


def make_session(store=None, continuum_id="c-1", trinkets=(Directives, Ticker, Doc)):
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=list(trinkets),
        store=store,
        continuum_id=continuum_id,
    )
    s.recorder.counter = TokenCounter(EstimateTokenizer())
    return s


def drive(s, turns):
    for _ in range(turns):
        s.clock.advance(minutes=1)
        s.advance_turn()


def test_history_has_one_row_per_turn_and_section_in_output_order():
    s = make_session()
    s.compose()
    s.clock.advance(minutes=5)
    s.advance_turn()
    s.trinket("Directives").text = "Be thorough."
    s.advance_turn()
    s.collapse_segment("Planning")
    df = s.history
    assert list(df.columns) == FRAME_COLUMNS
    # pandas shows "no trinket" (the base prompt) as a missing value
    rows = [
        tuple(None if pd.isna(v) else v for v in r)
        for r in df.drop(columns=["digest", "priority", "dropped", "reply", "usage"]).itertuples(index=False)
    ]
    assert rows == [
        (0, 1, "system", "base_prompt", None, 256, 64, True, True),
        (0, 1, "system", "behavioral_directives", "Directives", 9, 3, True, True),
        (0, 1, "post_history", "domaindoc", "Doc", 16, 4, True, False),
        (0, 1, "notification", "datetime_section", "Ticker", 16, 4, True, False),
        (1, 1, "system", "base_prompt", None, 256, 64, False, True),
        (1, 1, "system", "behavioral_directives", "Directives", 9, 3, False, True),
        (1, 1, "post_history", "domaindoc", "Doc", 16, 4, False, False),
        (1, 1, "notification", "datetime_section", "Ticker", 16, 4, True, False),
        (2, 2, "system", "base_prompt", None, 256, 64, False, True),
        (2, 2, "system", "behavioral_directives", "Directives", 12, 3, True, True),
        (2, 2, "post_history", "domaindoc", "Doc", 16, 4, False, False),
        (2, 2, "notification", "datetime_section", "Ticker", 16, 4, False, False),
    ]
    # the digest names the text: equal texts, equal digests
    assert df["digest"].iloc[0] == df["digest"].iloc[4] == df["digest"].iloc[8]
    assert df["digest"].iloc[1] != df["digest"].iloc[9]


def test_a_turn_composed_twice_keeps_its_last_compose():
    s = make_session()
    s.compose()
    s.trinket("Directives").text = "Second thoughts."
    s.compose()
    assert s.recorder.turns == [0]
    assert s.prompt_at(0).section("behavioral_directives").content == "Second thoughts."
    assert s.history["section"].tolist() == ["base_prompt", "behavioral_directives", "domaindoc", "datetime_section"]


def test_prompt_at_rebuilds_exactly_what_was_composed_with_every_builtin_trinket():
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        continuum_id="c-1",
    )
    composed = {0: s.compose()}
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow </mira:hud> down.", ttl=2)
    for turn in range(1, 7):
        s.clock.advance(minutes=20)
        s.advance_turn()
        if turn == 3:
            s.collapse_segment("Planning chat")
        composed[s.turn] = s.composed
    for turn, original in composed.items():
        rebuilt = s.prompt_at(turn)
        assert rebuilt.as_dict() == original.as_dict()
        assert rebuilt.sections == original.sections
        assert rebuilt.turn == turn


def test_prompt_at_keeps_a_custom_hud_frame_and_straggler_sections():
    class Extra(EventAwareTrinket):
        variable_name = "extra_notes"

        def generate_content(self, context):
            return "unlisted"

    s = make_session(trinkets=(Directives, Ticker, Extra))
    s.working_memory.composer.namespace = "zeta"
    s.working_memory.composer.hud_title = "State\nof things"
    with pytest.warns(StragglerSectionWarning):
        original = s.compose()
    rebuilt = s.prompt_at(0)  # no warning: a rebuilt prompt lists every section it holds
    assert rebuilt.as_dict() == original.as_dict()
    assert rebuilt.section("extra_notes").straggler
    assert "<zeta:hud>" in rebuilt["notification_center"]


def test_unrecorded_turn_is_a_clear_error():
    s = make_session()
    with pytest.raises(ValueError, match=r"^turn 0 was not recorded \(nothing recorded yet\)$"):
        s.prompt_at(0)
    s.compose()
    drive(s, 2)
    with pytest.raises(ValueError, match=r"^turn 7 was not recorded \(recorded turns: 0\.\.2, 3 in all\)$"):
        s.prompt_at(7)
    with pytest.raises(TypeError, match="turn must be an int"):
        s.prompt_at("1")


def test_history_persists_and_reloads_after_a_restart(tmp_path):
    path = tmp_path / "wm.sqlite"
    first = make_session(SQLiteStore(path))
    first.compose()
    drive(first, 3)
    first.collapse_segment("Planning")
    before = first.history
    prompts = {t: first.prompt_at(t) for t in first.recorder.turns}
    first.close()
    first.store.close()

    again = make_session(SQLiteStore(path))
    pd.testing.assert_frame_equal(again.history, before)
    assert {t: again.prompt_at(t) for t in again.recorder.turns} == prompts
    # the counters resume after the last recorded turn: new turns never overwrite old ones
    assert (again.turn, again.segment_number, again.segment_turn) == (3, 2, 0)
    again.advance_turn()
    assert again.recorder.turns == [0, 1, 2, 3, 4]
    assert again.history["segment"].iloc[-1] == 2

    other = make_session(SQLiteStore(path), continuum_id="c-2")
    assert len(other.history) == 0 and other.turn == 0


@pytest.mark.slow
def test_a_thousand_unchanged_turns_store_each_distinct_text_once(tmp_path):
    s = make_session(SQLiteStore(tmp_path / "wm.sqlite"))
    s.compose()
    drive(s, 1000)  # only the clock section changes: 1001 distinct times
    stats = s.recorder.stats()
    assert stats["turns"] == 1001 and stats["rows"] == 4004
    assert stats["distinct_texts"] == 3 + 1001
    reopened = SQLiteStore(tmp_path / "wm.sqlite")
    assert len(reopened.hgetall("history-texts:notebook")) == 1004
    assert len(reopened.hgetall(f"history:notebook:{s.continuum_id}")) == 1001
    # the unchanged base prompt, directives and doc texts are one object each in memory
    base_texts = {id(s.prompt_at(t).section("base_prompt").content) for t in (0, 500, 1000)}
    assert len(base_texts) == 1


def test_an_unchanged_prompt_shares_one_record_of_sections():
    s = make_session(trinkets=(Directives, Doc))
    s.compose()
    s.advance_turn(50)
    records = list(s.recorder.composes())
    assert len({id(r.entries) for r in records}) == 1
    assert s.history["changed"].sum() == 3  # only turn 0's three sections are new


def test_tokens_are_counted_once_per_distinct_text():
    s = make_session()
    s.compose()
    drive(s, 30)
    _ = s.history
    _ = s.history
    assert s.recorder.counter.calls == s.recorder.stats()["distinct_texts"] == 3 + 31


def test_recording_validates_and_a_failed_write_changes_nothing(tmp_path):
    h = History()
    with pytest.raises(TypeError, match="expected a ComposedPrompt, got dict"):
        h.record(0, 1, {"cached_content": ""})
    with pytest.raises(ValueError, match="turn must be a non-negative int, got -1"):
        h.record(-1, 1, SystemPromptComposer().compose())
    with pytest.raises(ValueError, match="^this ComposedPrompt has content but no section records"):
        h.record(0, 1, ComposedPrompt("You help."))
    with pytest.raises(TypeError, match="^segment must be an int, got str$"):
        h.record(0, "1", SystemPromptComposer().compose())
    with pytest.raises(ValueError, match="^segment turn must be at least 0, got -2$"):
        h.record(0, 1, SystemPromptComposer().compose(), segment_turn=-2)
    assert len(h) == 0

    class FailingStore(SQLiteStore):
        """Fails on the write of a turn's record, after the new text was written."""

        def hset(self, key: str, field: str, value: object) -> None:
            if key == "history:notebook:c" and field == "1":
                raise OSError("disk full")
            super().hset(key, field, value)

    store = FailingStore(tmp_path / "wm.sqlite")
    persisted = History(store, continuum_id="c")
    composer = SystemPromptComposer()
    composer.set_base_prompt("You help.")
    persisted.record(0, 1, composer.compose())
    composer.add_section("datetime_section", "<now/>")
    with pytest.raises(OSError, match="disk full"):
        persisted.record(1, 1, composer.compose())
    assert persisted.turns == [0] and persisted.stats()["distinct_texts"] == 1
    # the failed compose's new text was rolled back with the rest of its transaction
    assert len(store.hgetall("history-texts:notebook")) == 1


def test_the_tokens_column_follows_a_change_of_tokenizer():
    class OnePerText:
        name = "one per text"

        def count(self, text):
            return 1

    s = make_session()
    s.compose()
    assert s.history["tokens"].tolist() == [(r.chars + 3) // 4 for r in s.composed.sections]
    s.recorder.counter.tokenizer = OnePerText()
    assert s.history["tokens"].tolist() == [1] * len(s.composed.sections)


def test_history_is_an_observer_attached_to_a_session():
    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[Ticker], instruments=())
    s.compose()  # nothing attached yet: not recorded
    history = History.of(s)  # attached on first use, records from now on
    assert History.of(s) is history is s.recorder and history.turns == []
    s.advance_turn(2)
    assert history.turns == [1, 2]
    with pytest.raises(ValueError, match="already has a History attached"):
        History.attach(s)
    history.detach()
    s.advance_turn()
    assert history.turns == [1, 2] and History.of(s) is not history


def test_a_custom_hud_frame_travels_as_metadata_and_is_rebuilt(tmp_path):
    s = make_session(SQLiteStore(tmp_path / "wm.sqlite"))
    s.working_memory.composer.hud_title = "State of play"
    composed = s.compose()
    assert composed.hud_frame == ("mira", "State of play")
    again = History(s.store, continuum_id=s.continuum_id)
    assert again.prompt_at(0) == composed
    assert again.prompt_at(0).hud_frame == ("mira", "State of play")


def test_a_memory_store_is_not_written_a_sqlite_one_is(tmp_path):
    in_memory = make_session()
    in_memory.compose()
    assert in_memory.store.keys("history:") == []  # the History holds it all itself
    on_disk = make_session(SQLiteStore(tmp_path / "wm.sqlite"))
    on_disk.compose()
    assert on_disk.store.keys("history") == [
        "history-entries:notebook",
        "history-texts:notebook",
        "history:notebook:c-1",
    ]
    assert on_disk.store.hget("history:notebook:c-1", "0")["v"] == 1
