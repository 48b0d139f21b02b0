"""The dashboard in a real Jupyter kernel: a cell of many turns sends a handful of widget
messages, drawn once the cell returns, showing the state the cell left."""

from __future__ import annotations

import queue

import pytest

pytestmark = pytest.mark.slow  # starts a real kernel

TIMEOUT = 60
SETUP = """
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session
from wm_kernel.jupyter.dashboard.widget import Dashboard
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
s = Session(trinkets=[PeanutGalleryTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Check the units.", ttl=50)
d = Dashboard(s)
print(d.model_id)
"""


def run(client, code: str) -> list[dict]:
    """The iopub messages of one cell, and of what the kernel sends right after it."""
    got: list[dict] = []
    reply = client.execute_interactive(code, timeout=TIMEOUT, output_hook=got.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    while True:  # a draw the kernel makes once the cell has returned
        try:
            got.append(client.get_iopub_msg(timeout=1))
        except queue.Empty:
            return got


def updates(messages: list[dict]) -> list[dict]:
    return [
        m["content"] for m in messages if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"
    ]


def test_a_cell_of_many_turns_in_a_real_kernel_sends_few_messages(kernel_client) -> None:
    setup = run(kernel_client, SETUP)
    board = next(m["content"]["text"].strip() for m in setup if m["msg_type"] == "stream")

    coalesced = updates(run(kernel_client, "s.advance_turn(20)"))
    eager = updates(run(kernel_client, "d.coalesce = False\ns.advance_turn(20)"))

    # drawn once: one message, at the turn the cell reached
    assert [u["comm_id"] for u in coalesced] == [board]
    assert (coalesced[0]["data"]["state"]["turn"], coalesced[0]["data"]["state"]["latest"]) == (20, 20)
    # drawn every turn: one message a turn
    assert [u["data"]["state"]["turn"] for u in eager] == list(range(21, 41))


def test_a_cells_draw_is_sent_before_the_cell_is_done(kernel_client) -> None:
    """nbconvert (and so a saved notebook's widget state) keeps only the messages a cell sends
    before it is done: the draw a cell's turns ask for is among them."""
    setup = run(kernel_client, SETUP)
    board = next(m["content"]["text"].strip() for m in setup if m["msg_type"] == "stream")
    during: list[dict] = []
    reply = kernel_client.execute_interactive("s.advance_turn(3)", timeout=TIMEOUT, output_hook=during.append)
    assert reply["content"]["status"] == "ok"
    assert [u["data"]["state"]["turn"] for u in updates(during) if u["comm_id"] == board] == [3]
