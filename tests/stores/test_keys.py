"""Store keys (issue 15 item 7, issue 12 item 6): one module builds them, and no two different ids
share a key, whatever separators the ids hold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from trinkets.reminders import ReminderManager
from wm_kernel.core.clock import ManualClock
from wm_kernel.instruments.history import History
from wm_kernel.instruments.history_records import HistoryConflictError
from wm_kernel.session import Session
from wm_kernel.stores import keys
from wm_kernel.stores.embedded import MemoryStore, SQLiteStore, StateStore

ids = st.text(alphabet=st.sampled_from(":%3Aa%25b-"), max_size=8)


@given(ids, ids, ids, ids)
def test_different_ids_never_share_a_key(user_a: str, conv_a: str, user_b: str, conv_b: str) -> None:
    same = (user_a, conv_a) == (user_b, conv_b)
    assert (keys.trinket_state("p", user_a, conv_a) == keys.trinket_state("p", user_b, conv_b)) == same
    assert (keys.session(user_a, conv_a) == keys.session(user_b, conv_b)) == same
    assert (keys.history(user_a, conv_a) == keys.history(user_b, conv_b)) == same
    assert keys.history(user_a, conv_a) not in (keys.HISTORY_TEXTS, keys.HISTORY_ENTRIES)
    assert (keys.reminders(user_a) == keys.reminders(user_b)) == (user_a == user_b)
    assert keys.reminders_meta(user_a) != keys.reminders(user_b)


@given(st.text())
def test_a_key_part_decodes_to_the_id(part: str) -> None:
    assert keys.decode_part(keys.encode_part(part)) == part


def test_ids_without_separators_give_the_originals_keys() -> None:
    assert keys.trinket_sections("3f2a-uuid") == "trinkets:3f2a-uuid"
    assert keys.trinket_state("peanutgallery", "ada", "c1") == "peanutgallery:ada:c1"
    assert keys.history("ada", "c1") == "history:ada:c1"  # files written before still open


def session(store: StateStore, user_id: str, continuum_id: str) -> Session:
    return Session(
        base_prompt="Hi.",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        store=store,
        user_id=user_id,
        continuum_id=continuum_id,
        trinkets=[PeanutGalleryTrinket, ReminderManager],
    )


def test_separator_bearing_ids_cannot_read_or_write_each_others_items() -> None:
    store = MemoryStore()
    alice = session(store, "acme:alice", "chat-1")
    acme = session(store, "acme", "alice:chat-1")
    alice.trinket("PeanutGalleryTrinket").add_guidance("concern", "Alice's guidance.")
    alice.trinket("ReminderManager").add_reminder("Alice's reminder", "2026-11-30T10:00:00+00:00")
    assert session(store, "acme", "alice:chat-1").trinket("PeanutGalleryTrinket").entries == {}
    acme.trinket("PeanutGalleryTrinket").add_guidance("concern", "Acme's guidance.")
    again = session(store, "acme:alice", "chat-1")
    assert [e.text for e in again.trinket("PeanutGalleryTrinket").entries.values()] == ["Alice's guidance."]
    assert acme.trinket("ReminderManager").reminders() == []
    assert sorted(store.keys("peanutgallery:")) == [
        "peanutgallery:acme%3Aalice:chat-1",
        "peanutgallery:acme:alice%3Achat-1",
    ]


def test_a_state_prefix_with_the_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="state prefix must not contain ':', got 'a:b'"):
        keys.trinket_state("a:b", "ada", "c1")


# the real server starts a process: its case is slow (pytest -m "not slow" starts none)
@pytest.fixture(params=["memory", "sqlite", pytest.param("valkey", marks=pytest.mark.slow)])
def any_store(request: pytest.FixtureRequest, tmp_path) -> StateStore:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "wm.sqlite")
    from wm_kernel.stores.valkey import ValkeyStore

    server = request.getfixturevalue("valkey_server")
    return ValkeyStore(server.url, prefix=f"keys-{request.node.name}:")


def test_separator_bearing_ids_never_share_a_history_in_any_store(any_store: StateStore) -> None:
    for key in any_store.keys():
        any_store.delete(key)
    alice = session(any_store, "acme:alice", "chat-1")
    alice.trinket("PeanutGalleryTrinket").add_guidance("concern", "Alice's secret guidance.")
    alice.compose()
    acme = session(any_store, "acme", "alice:chat-1")
    try:
        acme.compose()  # its own turn 0, with no conflict with hers
    except HistoryConflictError as exc:
        pytest.fail(f"two conversations share one history: {exc}")
    for user_id, continuum_id, guidance in (("acme:alice", "chat-1", True), ("acme", "alice:chat-1", False)):
        reread = History(any_store, user_id=user_id, continuum_id=continuum_id)
        if isinstance(any_store, MemoryStore):
            reread = History.of(alice if guidance else acme)  # a memory store keeps no history
        text = reread.prompt_at(0)["notification_center"]
        assert ("Alice's secret guidance." in text) == guidance
    if not isinstance(any_store, MemoryStore):
        assert sorted(any_store.keys("history:acme")) == ["history:acme%3Aalice:chat-1", "history:acme:alice%3Achat-1"]
    any_store.close()
