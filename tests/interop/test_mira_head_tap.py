"""A tap of MIRA HEAD's traffic: the five newer trinkets' sections are cut and named as the kit's
(location_context in the cached system block; async_activity, inbox_status, forage_results and
whilethecatsaway_results in the HUD)."""

from __future__ import annotations

import warnings
from pathlib import Path

from mira_tap_files import CHAT, T0, TOOLS, Tap, load, message

from trinkets import MIRA_HEAD_TRINKETS
from wm_kernel import Layout
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.mira import to_mira
from wm_kernel.session import Session

HEAD_SECTIONS = {
    "location_context": ("system", True, "LocationTrinket"),
    "async_activity": ("notification", False, "AsyncActivityTrinket"),
    "inbox_status": ("notification", False, "EmailTrinket"),
    "forage_results": ("notification", False, "ForageTrinket"),
    "whilethecatsaway_results": ("notification", False, "WhileTheCatsAwayTrinket"),
}


def head_session() -> Session:
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
        trinkets=MIRA_HEAD_TRINKETS,
    )
    wm = s.working_memory
    s.trinket("LocationTrinket").set_location(  # type: ignore[attr-defined]
        {"location_name": "Leeds", "sunrise": "7:58 AM", "sunset": "3:44 PM",
         "forecast": [{"hour": "9 AM", "temp": "4°C", "condition": "Rain", "precip_pct": 90}]}
    )  # fmt: skip
    s.trinket("AsyncActivityTrinket").set_activity(  # type: ignore[attr-defined]
        [{"id": 1, "interface_name": "email", "summary": "Refund asked", "status": "escalated",
          "escalation_reason": "over the limit", "updated_at": "2026-11-30 08:30:00"}]
    )  # fmt: skip
    wm.publish_trinket_update("EmailTrinket", {"data": [{"uid": "INBOX:9", "from_addr": "Bea", "subject": "Rent"}]})
    wm.publish_trinket_update("ForageTrinket", {"task_id": "f1", "status": "pending", "query": "rent law"})
    wm.publish_trinket_update(
        "WhileTheCatsAwayTrinket", {"task_id": "w1", "status": "success", "topic": "leases", "result": "Read."}
    )
    return s


def test_a_tap_of_mira_head_names_the_five_sections(tmp_path: Path) -> None:
    s = head_session()
    tap = Tap(tmp_path)
    history: list[dict[str, str]] = []
    prompts: list[ComposedPrompt] = []
    for turn, user in enumerate(["[9:00am] Hi", "[9:02am] And rent?"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # GetContextTrinket straggles into MIRA's system prompt
            prompt = s.compose()
        prompts.append(prompt)
        tap.request(T0 + 120 * turn, to_mira(prompt, history, user=user, tools=TOOLS, model=CHAT))
        tap.response(T0 + 120 * turn + 5, CHAT, message(CHAT, (10, 0, 4000)))
        history += [{"role": "user", "content": user}, {"role": "assistant", "content": "[9:01am] Sure."}]
        s.advance_turn()
    log = load(tap.requests)
    assert log.errors == () and log.turns == [0, 1]
    for turn, prompt in enumerate(prompts):
        back = log.prompt_at(turn)
        assert dict(back) == dict(prompt)
        named = {r.name: (r.placement, r.cache_policy, r.trinket) for r in back.sections}
        assert {name: named.get(name) for name in HEAD_SECTIONS} == HEAD_SECTIONS
