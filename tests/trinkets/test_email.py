"""EmailTrinket (MIRA HEAD): the exact inbox text, snapshot replacement, turns and collapse,
attribute escaping of decoded headers, persistence."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from trinkets import EmailTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.stores.embedded import MemoryStore

INSTRUCTION = (
    "<instruction>You have unread emails. Mention them to the user when the conversation permits — they "
    "cannot see this data unless you surface it. If they don't act, these will continue appearing.</instruction>"
)


def make(store: MemoryStore | None = None) -> tuple[WorkingMemory, EmailTrinket]:
    wm = WorkingMemory(
        EventBus(), clock=ManualClock("2026-11-30T09:00:00+00:00"), profile=Profile(), continuum_id="c1", store=store
    )
    return wm, EmailTrinket(wm.bus, wm)


@pytest.fixture
def pair() -> tuple[WorkingMemory, EmailTrinket]:
    return make()


def poll(wm: WorkingMemory, **context: Any) -> None:
    wm.publish_trinket_update("EmailTrinket", context)


def email(n: int, sender: str = "Ada Lovelace <ada@example.org>", subject: str = "Tides") -> dict[str, str]:
    return {"uid": f"INBOX:{n}", "from_addr": sender, "subject": subject, "date": "Mon, 30 Nov 2026 08:10:00 +0000"}


def test_exact_text(pair: tuple[WorkingMemory, EmailTrinket]) -> None:
    wm, inbox = pair
    poll(wm, data=[email(12), email(13, "bob@example.org", 'Re: "budget" & <plans>')])
    assert inbox.generate_content({}) == (
        "<inbox_status>\n"
        f"{INSTRUCTION}\n"
        '<unread count="2">\n'
        '<email uid="INBOX:12" from="Ada Lovelace &lt;ada@example.org&gt;" subject="Tides" '
        'date="Mon, 30 Nov 2026 08:10:00 +0000"/>\n'
        '<email uid="INBOX:13" from="bob@example.org" subject="Re: &quot;budget&quot; &amp; &lt;plans&gt;" '
        'date="Mon, 30 Nov 2026 08:10:00 +0000"/>\n'
        "</unread>\n"
        "</inbox_status>"
    )


def test_a_missing_key_is_empty(pair: tuple[WorkingMemory, EmailTrinket]) -> None:
    wm, inbox = pair
    poll(wm, data=[{"uid": "INBOX:1"}])
    assert inbox.generate_content({}).splitlines()[3] == '<email uid="INBOX:1" from="" subject="" date=""/>'


def test_data_replaces_the_snapshot_and_no_data_changes_nothing(pair: tuple[WorkingMemory, EmailTrinket]) -> None:
    wm, inbox = pair
    poll(wm, data=[email(1), email(2)])
    poll(wm, data=[email(3)])
    assert [e["uid"] for e in inbox.unread] == ["INBOX:3"]
    poll(wm)
    poll(wm, data=None)
    assert [e["uid"] for e in inbox.unread] == ["INBOX:3"]
    assert '<unread count="1">' in inbox.content
    poll(wm, data=[])
    assert inbox.generate_content({}) == "" and inbox.content == ""


def test_turns_change_nothing_and_a_collapse_empties_it(pair: tuple[WorkingMemory, EmailTrinket]) -> None:
    wm, inbox = pair
    poll(wm, data=[email(1)])
    before = inbox.generate_content({})
    for n in (1, 2, 50):
        wm.bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=n, segment_turn_number=n))
    assert inbox.generate_content({}) == before
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s", summary="x"))
    assert inbox.generate_content({}) == "" and inbox.unread == []


def test_folded_and_hostile_headers_round_trip(pair: tuple[WorkingMemory, EmailTrinket]) -> None:
    wm, inbox = pair
    hostile = 'Quarterly\r\n\treport "final" <b>it\'s</b> & more \u2028 \U0001f600'
    poll(wm, data=[email(1, hostile, hostile)])
    text = inbox.generate_content({})
    assert "&apos;" in text and "&#10;" in text and "&#9;" in text
    node = ET.fromstring(text).find("unread/email")
    assert node is not None
    assert node.get("from") == hostile and node.get("subject") == hostile


def test_the_snapshot_is_kept_by_the_store() -> None:
    store = MemoryStore()
    wm, inbox = make(store)
    poll(wm, data=[email(1), email(2)])
    _, again = make(store)
    assert again.generate_content({}) == inbox.generate_content({})
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s", summary="x"))
    _, third = make(store)
    assert third.generate_content({}) == ""
