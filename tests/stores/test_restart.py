"""A kernel restart on a SQLite file: the prompt after it is the prompt before it, and every later
turn is the turn a never-restarted session composes (guidance and search errors expire on the same
turn), per user and per conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trinkets.getcontext import GetContextTrinket
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.demo import DEMO_START, feed_sample_data
from wm_kernel.session import Session
from wm_kernel.stores.embedded import MemoryStore, SQLiteStore, StateStore

KEYS = (
    "cached_content",
    "non_cached_content",
    "conversation_prefix_items",
    "post_history_items",
    "notification_center",
)


def make_session(store: StateStore, at: str = DEMO_START, *, user_id: str = "ada", continuum_id: str = "c1") -> Session:
    """Every built-in trinket on a ManualClock at ``at``."""
    return Session(
        base_prompt="You are a thoughtful assistant helping {first_name}.{user_context}",
        profile=Profile(
            first_name="Ada",
            timezone="Europe/London",
            user_context="Ada is a mathematician who likes precise answers.",
            account_created="2026-05-30T09:00:00+00:00",
        ),
        clock=ManualClock(at),
        store=store,
        user_id=user_id,
        continuum_id=continuum_id,
    )


def five(prompt: ComposedPrompt | None) -> dict[str, Any]:
    assert prompt is not None
    return {key: prompt[key] for key in KEYS}


def gallery(s: Session) -> PeanutGalleryTrinket:
    found = s.trinket("PeanutGalleryTrinket")
    assert isinstance(found, PeanutGalleryTrinket)
    return found


def searches(s: Session) -> GetContextTrinket:
    found = s.trinket("GetContextTrinket")
    assert isinstance(found, GetContextTrinket)
    return found


def memories(s: Session) -> ProactiveMemoryTrinket:
    found = s.trinket("ProactiveMemoryTrinket")
    assert isinstance(found, ProactiveMemoryTrinket)
    return found


def section(prompt: ComposedPrompt | None, name: str) -> str:
    assert prompt is not None
    found = [r.content for r in prompt.sections if r.name == name]
    assert len(found) == 1, f"{name} is not in the prompt"
    return found[0]


def clock_of(s: Session) -> ManualClock:
    assert isinstance(s.clock, ManualClock)
    return s.clock


def step(s: Session) -> list[tuple[int, str, Any]]:
    """Three minutes pass and one turn completes; what expired, as (turn, trinket, id)."""
    clock_of(s).advance(minutes=3)
    return [(e["turn"], e["trinket"], e["id"]) for e in s.advance_turn()]


def drive_to_turn_two(s: Session) -> ComposedPrompt:
    """Feed every trinket, then two turns with more guidance and a search timeout at turn 1."""
    feed_sample_data(s)
    s.compose()
    step(s)
    gallery(s).add_guidance("concern", "Mind the <sign> convention.", ttl=1)
    searches(s).add_timeout("task-3", "referee guidelines", iteration=3, findings_count=1)
    step(s)
    return s.compose()


def restart(s: Session, path: Path, **keys: str) -> Session:
    """Close ``s`` and its store, and start a Session on the same file at the same instant."""
    at = clock_of(s).now().isoformat()
    s.close()
    s.store.close()
    return make_session(SQLiteStore(path), at, **keys)


GALLERY_AT_TURN_2 = """\
<mira:peanutgallery>
  <guidance type="concern" expires_in="0_turns">You have answered three questions without checking the units; check them.</guidance>
  <guidance type="coaching" expires_in="2_turns">Offer a worked example before the general rule.</guidance>
  <guidance type="concern" expires_in="0_turns">Mind the &lt;sign&gt; convention.</guidance>
</mira:peanutgallery>"""  # noqa: E501 - golden text, line for line

SEARCHES_AT_TURN_2 = """\
=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===

📎 Context Search: Runge-Kutta stability regions

Explicit RK methods have bounded stability regions; implicit ones can be A-stable.


• RK4 is stable on the negative real axis down to about -2.78 (source: Hairer &amp; Wanner)
• No explicit RK method is A-stable


Note: Textbook sources only

---

⚠️ Context search failed: 'Ada's calendar for December'

Error: calendar service unreachable (ConnectionError)

Try rephrasing the query or tell the user you encountered an error.

(This message will disappear in 3 turns)

---

⚠️ Context search timed out: 'referee guidelines'

The search exceeded 5 minutes (stopped at iteration 3 with 1 findings). Try rephrasing your query or tell the user the search was inconclusive.

(This message will disappear in 4 turns)"""  # noqa: E501 - golden text, line for line

MEMORIES_AT_TURN_2 = """\
<surfaced_memories>
<memory id="mem_5c1d8e2f" relevance="88">
<text>Ada is preparing a talk on Runge-Kutta stability for 12 December</text>
<created>6 days ago</created>
<temporal happens="2026-12-12"/>
</memory>
<memory id="mem_9e8f7a6b" source="global">
<text>Ada writes her notes in LaTeX</text>
<created>2 months ago</created>
</memory>
</surfaced_memories>"""


def test_the_prompt_after_a_restart_is_the_prompt_before_it(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    first = make_session(SQLiteStore(path))
    before = drive_to_turn_two(first)
    restarted = restart(first, path)
    assert (restarted.turn, restarted.segment_number, restarted.segment_turn) == (2, 1, 2)
    assert [t.current_turn for t in (gallery(restarted), searches(restarted), memories(restarted))] == [2, 2, 2]
    after = restarted.compose()
    assert five(after) == five(before)
    assert section(after, "peanutgallery_guidance") == GALLERY_AT_TURN_2
    assert section(after, "context_search_results") == SEARCHES_AT_TURN_2
    assert section(after, "relevant_memories") == MEMORIES_AT_TURN_2
    restarted.store.close()


def test_every_later_turn_matches_a_session_that_never_restarted(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    reference = make_session(MemoryStore())
    drive_to_turn_two(reference)
    first = make_session(SQLiteStore(path))
    drive_to_turn_two(first)
    restarted = restart(first, path)
    assert five(restarted.compose()) == five(reference.compose())

    expired_reference, expired_restarted = [], []
    for _ in range(6):
        expired_reference += step(reference)
        expired_restarted += step(restarted)
        assert five(restarted.composed) == five(reference.composed), f"turn {restarted.turn}"
    assert (
        expired_restarted
        == expired_reference
        == [
            (3, "PeanutGalleryTrinket", "guidance-1"),
            (3, "PeanutGalleryTrinket", "guidance-3"),
            (5, "PeanutGalleryTrinket", "guidance-2"),
            (6, "GetContextTrinket", "task-2"),
            (7, "GetContextTrinket", "task-3"),
        ]
    )
    # ids keep counting after the restart: none is reused
    assert gallery(restarted).add_guidance("coaching", "Summarise.", ttl=1) == "guidance-4"
    assert gallery(reference).add_guidance("coaching", "Summarise.", ttl=1) == "guidance-4"
    for _ in range(2):
        step(reference)
        step(restarted)
        assert five(restarted.composed) == five(reference.composed)
    restarted.store.close()


def test_a_collapse_before_the_restart_is_respected_after_it(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"

    def drive(s: Session) -> None:
        feed_sample_data(s)
        step(s)
        clock_of(s).advance(minutes=10)
        s.collapse_segment("Runge-Kutta planning")
        gallery(s).add_guidance("coaching", "Start from the new question.", ttl=1)
        searches(s).add_failed("task-9", "seminar room", "no such calendar", "LookupError")
        step(s)

    reference = make_session(MemoryStore())
    drive(reference)
    first = make_session(SQLiteStore(path))
    drive(first)
    before = first.compose()
    restarted = restart(first, path)
    assert (restarted.turn, restarted.segment_number, restarted.segment_turn) == (2, 2, 1)
    after = restarted.compose()
    assert five(after) == five(before) == five(reference.compose())
    # what the collapse flushed stays flushed; what came after it is back
    assert [g["id"] for g in gallery(restarted).get_active_guidance()] == ["guidance-3"]
    assert [r["task_id"] for r in searches(restarted).results()] == ["task-9"]
    assert memories(restarted).memories == []
    assert (
        section(after, "conversation_manifest")
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[9:05AM - 9:18AM]" status="collapsed">Runge-Kutta planning</segment>
<segment time="[9:18AM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
</conversation_manifest>"""
    )

    expired = []
    for _ in range(6):
        step(reference)
        expired += step(restarted)
        assert five(restarted.composed) == five(reference.composed), f"turn {restarted.turn}"
    assert expired == [(3, "PeanutGalleryTrinket", "guidance-3"), (7, "GetContextTrinket", "task-9")]
    restarted.store.close()


def test_two_conversations_in_one_file_keep_their_own_items(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    store = SQLiteStore(path)
    first = make_session(store, continuum_id="c1")
    feed_sample_data(first)
    second = make_session(store, continuum_id="c2")
    assert gallery(second).entries == {}
    assert searches(second).results() == [] and memories(second).memories == []
    assert gallery(second).add_guidance("concern", "Only in c2.", ttl=3) == "guidance-1"
    assert [k for k in store.keys() if k.startswith(("peanutgallery:", "getcontext:"))] == [
        "getcontext:ada:c1",
        "peanutgallery:ada:c1",
        "peanutgallery:ada:c2",
    ]
    store.close()

    store = SQLiteStore(path)
    c1, c2 = make_session(store, continuum_id="c1"), make_session(store, continuum_id="c2")
    assert [g["text"] for g in gallery(c2).get_active_guidance()] == ["Only in c2."]
    assert [g["id"] for g in gallery(c1).get_active_guidance()] == ["guidance-1", "guidance-2"]
    assert "Only in c2." not in section(c1.compose(), "peanutgallery_guidance")
    store.close()


def test_two_users_keep_their_own_items(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    store = SQLiteStore(path)
    ada = make_session(store, user_id="ada")
    feed_sample_data(ada)
    bob = make_session(store, user_id="bob")
    gallery(bob).add_guidance("coaching", "Bob likes bullet points.", ttl=2)
    store.close()

    store = SQLiteStore(path)
    ada, bob = make_session(store, user_id="ada"), make_session(store, user_id="bob")
    assert [g["text"] for g in gallery(bob).get_active_guidance()] == ["Bob likes bullet points."]
    assert searches(bob).results() == [] and memories(bob).memories == []
    assert len(gallery(ada).get_active_guidance()) == 2 and len(memories(ada).memories) == 2
    store.close()


def test_unreadable_stored_items_stop_the_session_with_the_key_named(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    first = make_session(SQLiteStore(path))
    feed_sample_data(first)
    first.store.close()
    store = SQLiteStore(path)
    # bytes that are not JSON at all, as a crash or another program could leave them
    store.connection.execute("UPDATE hashes SET value='{\"version\": 1, \"sta' WHERE key='getcontext:ada:c1'")
    with pytest.raises(ValueError) as raised:
        make_session(store)
    message = str(raised.value)
    assert message.startswith(
        "GetContextTrinket: the state stored under 'getcontext:ada:c1' cannot be read (JSONDecodeError: "
    )
    assert message.endswith("; delete it with store.delete('getcontext:ada:c1') to start empty")
    assert "\n" not in message
    store.delete("getcontext:ada:c1")
    again = make_session(store)
    assert searches(again).results() == [] and len(gallery(again).entries) == 2
    store.close()
