"""The IPython extension and its magics, driven through a real InteractiveShell."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from argparse_words import invalid_choice

pytest.importorskip("IPython")

from IPython.core.error import UsageError  # noqa: E402

import wm_kernel  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.prompt import ComposedPrompt  # noqa: E402
from wm_kernel.display import render  # noqa: E402
from wm_kernel.jupyter.magics.working_memory import MAGIC_NAMES, WorkingMemoryMagics  # noqa: E402
from wm_kernel.session import Session, current_session, set_current_session  # noqa: E402

BASE = (
    "You help Ada.\n\n" + "═" * 60 + "\nEverything after this delimiter is part of MIRA's "
    "scaffolding, injected to provide additional context during the reply.\n" + "═" * 60
)
DATETIME = "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:00 AM GMT.</current_datetime>"


def completions(ip: Any, line: str) -> list[str]:
    word = line.split(" ")[-1]
    with warnings.catch_warnings():  # IPython's own shim around its older completer API
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return list(ip.complete(word, line, len(line))[1])


def hooks_for(ip: Any, key: str) -> list[Any]:
    chain = ip.strdispatchers["complete_command"].strs.get(key)
    return [f for _, f in chain.chain] if chain is not None else []


def state(session: Session) -> str:
    """Everything a magic could change, as one comparable text."""
    store = session.store
    snapshot = {
        "current": id(current_session()),
        "turn": session.turn,
        "segment": session.segment_number,
        "base_prompt": session.base_prompt,
        "composed": id(session.composed),
        "log": len(session.bus.log),
        "store": {key: store.hgetall(key) for key in store.keys()},
        "trinkets": {
            name: [t.content, t.enabled, t.error, getattr(t, "current_turn", None)]
            for name, t in session.trinkets.items()
        },
        "guidance": [repr(e) for e in session.trinket("PeanutGalleryTrinket").entries.values()],
        "memories": session.trinket("ProactiveMemoryTrinket").memories,
        "searches": repr(session.trinket("GetContextTrinket").entries),
    }
    return json.dumps(snapshot, default=str, sort_keys=True)


# -- the extension


def test_load_registers_every_magic_once_and_unload_removes_all_it_added(session):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    before_line = set(ip.magics_manager.magics["line"])
    before_cell = set(ip.magics_manager.magics["cell"])
    before_configurables = list(ip.configurables)
    ip.extension_manager.load_extension("wm_kernel")
    wm_kernel.load_ipython_extension(ip)  # a second load, bypassing IPython's own guard
    try:
        for name in MAGIC_NAMES["line"]:
            assert ip.find_line_magic(name) is not None, name
        assert ip.find_cell_magic("compose") is not None
        assert [c for c in ip.configurables if isinstance(c, WorkingMemoryMagics)].__len__() == 1
        assert len(hooks_for(ip, "%trinket")) == 1
        assert current_session() is session  # reused, not replaced
    finally:
        ip.extension_manager.unload_extension("wm_kernel")
    assert set(ip.magics_manager.magics["line"]) == before_line
    assert set(ip.magics_manager.magics["cell"]) == before_cell
    assert ip.configurables == before_configurables
    assert "WorkingMemoryMagics" not in ip.magics_manager.registry
    assert hooks_for(ip, "%trinket") == [] and hooks_for(ip, "%compose") == []
    assert completions(ip, "%trinket Pea") == []
    assert current_session() is session  # code in cells may still drive it


def test_load_creates_a_session_when_there_is_none():
    from IPython.core.interactiveshell import InteractiveShell

    set_current_session(None)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("wm_kernel")
    try:
        created = wm_kernel.session._current  # type: ignore[attr-defined]
        assert isinstance(created, Session) and current_session() is created
    finally:
        ip.extension_manager.unload_extension("wm_kernel")
        set_current_session(None)


def test_config_sets_the_default_view_and_unload_restores_it(ip, session):
    try:
        ip.run_line_magic("config", 'WorkingMemoryMagics.default_view = "text"')
        composed = ip.run_line_magic("compose", "")
        assert set(composed._repr_mimebundle_()) == {"text/plain"}
        ip.run_line_magic("config", 'WorkingMemoryMagics.default_view = "fancy"')  # refused, reported
        assert render.options.view == "text"
        ip.extension_manager.unload_extension("wm_kernel")
        assert render.options.view == "html"
        # the shell keeps the refused value: loading again says what is wrong, in one line
        with pytest.raises(UsageError, match="default_view"):
            wm_kernel.load_ipython_extension(ip)
        assert ip.find_line_magic("compose") is None
    finally:
        ip.config.pop("WorkingMemoryMagics", None)  # the shell is shared by the other tests
        ip.extension_manager.loaded.discard("wm_kernel")
        ip.extension_manager.load_extension("wm_kernel")  # the fixture unloads again
    assert render.options.view == "html"


# -- %compose


def test_compose_returns_the_composed_prompt_of_the_current_session(ip, session):
    p = ip.run_line_magic("compose", "")
    assert isinstance(p, ComposedPrompt) and p is session.composed
    assert p["cached_content"] == BASE
    assert p.section_names() == ["base_prompt", "conversation_manifest", "datetime_section"]
    ip.run_cell("q = %compose")
    assert ip.user_ns["q"] is session.composed and ip.user_ns["q"] is not p
    # what the shell shows: the text view in a terminal, plus HTML in a notebook
    shown, _ = ip.display_formatter.format(p)
    assert set(shown) == {"text/plain", "text/html"}
    assert shown["text/plain"].splitlines()[:3] == [
        "ComposedPrompt · turn 0 · 3 sections · 513 chars",
        "=== system · cached ===",
        "--- base_prompt · 256 chars ---",
    ]


def test_compose_raw_is_the_exact_text_the_model_receives(ip, session):
    raw = ip.run_line_magic("compose", "--raw")
    p = session.composed
    assert raw == "\n\n".join(
        [
            f"### system · cached\n{BASE}",
            f"### system · not cached\n{p['non_cached_content']}",
            f"### notification centre\n{p['notification_center']}",
        ]
    )
    assert ip.run_line_magic("compose", "--raw --section base_prompt") == BASE
    assert ip.run_line_magic("compose", "--raw -p notification") == session.composed["notification_center"]


def test_compose_section_and_placement_narrow_the_view(ip, session):
    view = ip.run_line_magic("compose", "--section datetime_section")
    assert repr(view) == "\n".join(
        [
            "ComposedPrompt · turn 0 · 1 section · 87 chars",
            "=== notification centre ===",
            "--- datetime_section · TimeManager · 87 chars ---",
            DATETIME,
        ]
    )
    # a known section with no content is shown as left out, not refused
    view = ip.run_line_magic("compose", "--placement notification")
    assert [r.name for r in view.sections] == ["datetime_section"]
    assert "- peanutgallery_guidance (PeanutGalleryTrinket): no content" in repr(view)


def test_compose_json_has_the_original_five_keys(ip, session):
    data = json.loads(ip.run_line_magic("compose", "--json"))
    assert data == session.composed.as_dict()
    assert json.loads(ip.run_line_magic("compose", "--json --placement post_history")) == {"post_history_items": []}
    assert json.loads(ip.run_line_magic("compose", "--json -s datetime_section")) == [
        {
            "name": "datetime_section",
            "placement": "notification",
            "trinket": "TimeManager",
            "cache_policy": False,
            "chars": 87,
            "content": DATETIME,
        }
    ]


def test_compose_diff_shows_what_a_feed_changed(ip, session):
    ip.run_line_magic("compose", "")
    ip.run_line_magic("trinket", 'peanutgallery add concern "Slow down." --ttl 2')
    diff = ip.run_line_magic("compose", "--diff")
    assert diff.changed_sections == ["peanutgallery_guidance"]
    assert str(diff).splitlines()[0] == "previous -> current: 0 changed, 1 added, 0 removed, 3 unchanged"


def test_compose_last_shows_without_composing(ip, session):
    with pytest.raises(UsageError, match="nothing composed yet"):
        ip.run_line_magic("compose", "--last")
    p = ip.run_line_magic("compose", "")
    assert ip.run_line_magic("compose", "--last") is p


def test_cell_compose_uses_the_cell_as_the_base_prompt(ip, session):
    p = ip.run_cell_magic("compose", "", "You coach {first_name} at chess.\n")
    assert p["cached_content"].splitlines()[0] == "You coach Ada at chess."
    assert session.base_prompt == "You coach {first_name} at chess."


# -- turns, segments, tables


def test_turn_advances_and_reports_what_expired(ip, session):
    ip.run_line_magic("trinket", 'peanutgallery add concern "Slow down." --ttl 1')
    ip.run_line_magic("trinket", 'peanutgallery add coaching "Ask first." --ttl 3')
    report = ip.run_line_magic("turn", "2")
    assert session.turn == 2
    assert repr(report) == ("Completed turns 1-2; 1 item expired:\n  turn 2: PeanutGalleryTrinket concern: Slow down.")
    assert repr(ip.run_line_magic("turn", "")) == "Completed turn 3; nothing expired."
    assert session.turn == 3 and session.composed.turn == 3


def test_collapse_ends_the_segment_and_flushes_stateful_trinkets(ip, session, capsys):
    ip.run_line_magic("trinket", 'peanutgallery add concern "Slow down."')
    ip.run_line_magic("trinket", 'peanutgallery add coaching "Be kind." --ttl 5')
    ip.run_line_magic("turn", "")
    capsys.readouterr()
    ip.run_line_magic("collapse", '"Planning chat" --tools search,calendar')
    assert session.segment_number == 2 and session.segment_turn == 0
    assert session.trinket("PeanutGalleryTrinket").entries == {}
    event = [r.event for r in session.bus.log if r.event_type == "SegmentCollapsedEvent"][-1]
    assert (event.summary, event.tools_used) == ("Planning chat", ("search", "calendar"))
    # it says what it did, in one line
    assert capsys.readouterr().out == (
        "segment 1 collapsed ('Planning chat', 1 turn): cleared 2 items (PeanutGalleryTrinket 2); "
        "segment 2 starts at turn 1\n"
    )
    ip.run_line_magic("collapse", "")
    assert capsys.readouterr().out == "segment 2 collapsed (0 turns): no items to clear; segment 3 starts at turn 1\n"


def test_trinkets_table_describes_every_trinket(ip, session):
    ip.run_line_magic("compose", "")
    frame = ip.run_line_magic("trinkets", "")
    assert frame.index.name == "name"
    assert list(frame.columns) == [
        "section",
        "placement",
        "enabled",
        "stateful",
        "current turn",
        "size",
        "tokens (tiktoken cl100k_base)",
        "last updated",
        "error",
    ]
    assert list(frame.index) == list(session.trinkets)
    row = frame.loc["TimeManager"]
    assert (row["section"], row["placement"], row["size"], row["last updated"]) == (
        "datetime_section",
        "notification",
        87,
        "2026-11-30T09:00:00+00:00",
    )
    # the session's counter, counting the section as the history does
    history = session.history
    assert row["tokens (tiktoken cl100k_base)"] == history[history["section"] == "datetime_section"]["tokens"].iloc[-1]
    assert frame.loc["PeanutGalleryTrinket", "current turn"] == 0


def test_wm_events_lists_one_compose_cycle_in_causal_order(ip, session):
    ip.run_line_magic("wm_events", "--clear")
    ip.run_line_magic("compose", "")
    frame = ip.run_line_magic("wm_events", "")
    assert frame.index.name == "seq"
    assert list(frame.columns) == ["depth", "event", "occurred_at", "detail", "failures"]
    assert list(frame.index) == list(range(frame.index[0], frame.index[0] + len(frame)))
    events = list(zip(frame["depth"], frame["event"], frame["detail"], strict=True))
    assert events[0] == (0, "ComposeSystemPromptEvent", "base_prompt=22 chars")
    assert events[1:4] == [
        (1, "UpdateTrinketEvent", "target_trinket=TimeManager"),
        (2, "TrinketContentEvent", "trinket_name=TimeManager, variable_name=datetime_section, content=87 chars"),
        (1, "UpdateTrinketEvent", "target_trinket=LoraTrinket"),
    ]
    assert events[-1] == (
        1,
        "SystemPromptComposedEvent",
        "cached_content=256 chars, non_cached_content=170 chars, notification_center=349 chars",
    )
    assert [e for _, e, _ in events].count("UpdateTrinketEvent") == len(session.trinkets)
    assert set(frame["occurred_at"]) == {"2026-11-30T09:00:00+00:00"}
    assert set(frame["failures"]) == {""}
    assert len(ip.run_line_magic("wm_events", "--last 2")) == 2
    assert list(ip.run_line_magic("wm_events", "--type SystemPromptComposedEvent")["event"]) == [
        "SystemPromptComposedEvent"
    ]


def test_wm_events_shows_the_context_of_a_lifecycle_refresh(ip, session):
    ip.run_line_magic("trinket", 'peanutgallery add concern "Check the date." --ttl 0')
    ip.run_line_magic("wm_events", "--clear")
    ip.run_line_magic("turn", "")
    frame = ip.run_line_magic("wm_events", "")
    assert list(zip(frame["event"], frame["detail"], strict=True))[:2] == [
        ("TurnCompletedEvent", "turn_number=1, segment_turn_number=1"),
        ("UpdateTrinketEvent", "target_trinket=PeanutGalleryTrinket, context={'action': 'lifecycle_refresh'}"),
    ]


def test_wm_session_starts_a_deterministic_session(ip, session):
    ip.run_line_magic(
        "wm_session",
        "--clock 2026-07-04T14:30:00+00:00 --first-name Bo "
        "--timezone America/New_York --trinkets TimeManager "
        '--base-prompt "Hello {first_name}."',
    )
    fresh = current_session()
    assert fresh is not session and isinstance(fresh.clock, ManualClock)
    p = ip.run_line_magic("compose", "--raw")
    assert p == (
        "### system · cached\nHello Bo.\n\n" + "═" * 60 + "\nEverything after this delimiter "
        "is part of MIRA's scaffolding, injected to provide additional context during the "
        "reply.\n" + "═" * 60 + "\n\n### notification centre\n" + "═" * 60 + "\nHUD - Runtime "
        "state, authoritative for current context\n" + "═" * 60 + "\n<mira:hud>\n"
        "<current_datetime>TODAY IS SATURDAY, JULY 04, 2026 AT 10:30 AM EDT."
        "</current_datetime>\n\n</mira:hud>\n" + "═" * 60
    )


# -- %trinket


def test_trinket_feeds_every_built_in_trinket(ip, session):
    run = ip.run_line_magic
    assert run("trinket", 'peanutgallery add coaching "Ask <first>." --ttl 3') == "guidance-1"
    assert run("trinket", 'reminder add "Call Bob" --due +2h --details "about tea"') == "rem_1"
    assert run("trinket", 'ProactiveMemoryTrinket surface "Ada likes tea" --score 0.9') == 1
    run(
        "trinket", 'getcontext add t1 success --query "tea" --summary "Brew at 80C" --finding "green tea 80C | tea.pdf"'
    )
    docs = session.trinket("DomaindocTrinket")
    docs.create_document("garden", "Garden")
    docs.add_section("garden", "soil", "Soil", "Loam.")
    run("trinket", "domaindoc collapse garden soil")
    p = run("compose", "")
    assert p.section_names() == [
        "base_prompt",
        "conversation_manifest",
        "domaindoc",
        "datetime_section",
        "context_search_results",
        "active_reminders",
        "relevant_memories",
        "peanutgallery_guidance",
    ]
    assert session.trinket("PeanutGalleryTrinket").content == "\n".join(
        [
            "<mira:peanutgallery>",
            '  <guidance type="coaching" expires_in="3_turns">Ask &lt;first&gt;.</guidance>',
            "</mira:peanutgallery>",
        ]
    )
    assert (
        '<reminder id="rem_1" title="Call Bob" due="in 2 hours" time="11:00">' in p.section("active_reminders").content
    )
    assert '<memory id="mem_00000001" relevance="90">' in p.section("relevant_memories").content
    assert "• green tea 80C (source: tea.pdf)" in p.section("context_search_results").content
    collapsed = p.section("domaindoc").content
    run("trinket", "domaindoc expand garden soil")
    assert run("compose", "--diff").changed_sections == ["domaindoc"]
    assert session.composed.section("domaindoc").content != collapsed
    run("trinket", "ReminderManager complete rem_1")
    run("trinket", "proactivememory clear")
    assert "active_reminders" not in run("compose", "").section_names()


def test_trinket_enable_disable_and_show(ip, session):
    ip.run_line_magic("trinket", "TimeManager disable")
    p = ip.run_line_magic("compose", "")
    assert "datetime_section" not in p.section_names()
    assert [(o.name, o.reason) for o in p.omitted if o.name == "datetime_section"] == [
        ("datetime_section", "trinket disabled")
    ]
    ip.run_line_magic("trinket", "datetime_section enable")
    ip.run_line_magic("compose", "")
    assert ip.run_line_magic("trinket", "time show") == DATETIME
    listing = ip.run_line_magic("trinket", "peanutgallery")
    assert listing.splitlines()[0] == "%trinket PeanutGalleryTrinket enable: Switch the trinket on."
    assert "%trinket PeanutGalleryTrinket add: Add guidance" in listing


def test_completion_of_trinket_and_section_names(ip, session):
    assert completions(ip, "%trinket Pea") == ["PeanutGalleryTrinket"]
    assert completions(ip, "%trinket PeanutGalleryTrinket a") == ["add"]
    assert completions(ip, "%compose --section peanut") == ["peanutgallery_guidance"]
    assert completions(ip, "%compose --placement post") == ["post_history"]
    docs = session.trinket("DomaindocTrinket")
    docs.create_document("garden", "Garden")
    docs.add_section("garden", "soil", "Soil", "Loam.")
    assert completions(ip, "%trinket domaindoc expand gar") == ["garden"]
    assert completions(ip, "%trinket domaindoc expand garden so") == ["soil"]


def test_every_trinket_has_a_style_command_with_its_own_styles(ip, session):
    reminders = session.trinket("ReminderManager")
    ip.run_line_magic("trinket", 'reminder add "Call Bob" --due +2h')
    ip.run_line_magic("compose", "")
    original = reminders.content
    assert ip.run_line_magic("trinket", "reminder style revised") is None
    assert reminders.style == "revised"
    ip.run_line_magic("compose", "")
    assert reminders.content != original
    ip.run_line_magic("trinket", "reminder style original")
    ip.run_line_magic("compose", "")
    assert reminders.content == original
    assert completions(ip, "%trinket reminder style ") == ["original", "revised"]
    assert completions(ip, "%trinket peanutgallery style ") == ["original"]
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("trinket", "peanutgallery style revised")
    assert str(caught.value) == invalid_choice("style", "revised", ["original"])


def test_completion_offers_choices_and_options_of_the_command(ip, session):
    assert completions(ip, "%trinket peanutgallery add co") == ["concern", "coaching"]
    assert completions(ip, "%trinket peanutgallery add concern Slow --") == ["--ttl", "--critical"]
    assert completions(ip, "%trinket getcontext add t1 ") == ["pending", "success", "timeout", "failed"]


def test_a_user_defined_trinket_gets_the_commands_it_declares(ip, session):
    from trinkets.base import EventAwareTrinket, arg, command, feed, non_negative_int

    class Kettle(EventAwareTrinket):
        variable_name = "kettle"
        styles = ("original", "terse")
        temperature = 20

        @command(
            "heat",
            arg("degrees", type=non_negative_int, help="Target temperature."),
            arg("--tea", choices=("green", "black"), default="black", help="What for."),
            help="Heat the water: DEGREES [--tea green|black].",
        )
        @feed
        def heat(self, degrees: int, tea: str) -> str:
            if degrees > 100:
                raise ValueError(f"water boils at 100, got {degrees}")
            self.temperature = degrees
            return f"{tea} at {degrees}"

        def generate_content(self, context: dict[str, Any]) -> str:
            return f"kettle at {self.temperature}"

    session.add_trinket(Kettle)
    assert ip.run_line_magic("trinket", "kettle heat 80 --tea green") == "green at 80"
    assert ip.run_line_magic("trinket", "kettle").splitlines() == [
        "%trinket Kettle enable: Switch the trinket on.",
        "%trinket Kettle disable: Switch the trinket off: it contributes no section.",
        "%trinket Kettle show: The trinket's current content, exactly.",
        "%trinket Kettle cap: Cap the section's size: hard (cut to fit) or soft (marked when over).",
        "%trinket Kettle refresh: Ask the trinket to regenerate now (an UpdateTrinketEvent).",
        "%trinket Kettle style: Write the section in another wording (its styles: 'original' is the original's).",
        "%trinket Kettle heat: Heat the water: DEGREES [--tea green|black].",
    ]
    assert completions(ip, "%trinket Kettle heat 90 --tea ") == ["green", "black"]
    assert completions(ip, "%trinket Kettle style ") == ["original", "terse"]
    fed = [r.event for r in session.bus.log if r.event_type == "TrinketFedEvent"]
    assert (fed[-1].trinket_name, fed[-1].method, fed[-1].kwargs) == ("Kettle", "heat", {"degrees": 80, "tea": "green"})
    for line, message in [
        ("kettle heat 80 --tea oolong", invalid_choice("--tea", "oolong", ["green", "black"])),
        ("kettle heat hot", "argument degrees: must be a non-negative integer, got 'hot'"),
        ("kettle heat 120", "water boils at 100, got 120"),
        ("kettle heat", "the following arguments are required: degrees"),
        ("kettle heat 80 90", "unrecognized arguments: 90"),
    ]:
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic("trinket", line)
        assert (type(caught.value), str(caught.value)) == (UsageError, message)
    assert session.trinket("Kettle").temperature == 80


# -- user mistakes: a UsageError, and nothing changed

MISTAKES = [
    ("compose", "--bogus"),  # unknown option
    ("compose", '--section "base_prompt'),  # unbalanced quote
    ("compose", "--section nope"),  # unknown section
    ("compose", '--section ""'),  # empty required argument
    ("compose", "--placement attic"),
    ("compose", "--raw --json"),
    ("compose", "--diff --section base_prompt"),
    ("turn", "0"),
    ("turn", "-1"),
    ("turn", "two"),
    ("turn", "1 2"),
    ("collapse", '"Planning chat'),
    ("collapse", "--bogus"),
    ("trinkets", "extra"),
    ("wm_events", "--last 0"),
    ("wm_events", "--type NopeEvent"),
    ("wm_events", "--clear --last 2"),
    ("wm_session", "--timezone Mars/Olympus"),
    ("wm_session", "--clock yesterday"),
    ("wm_session", "--clock 2026-11-30T09:00:00"),  # no offset
    ("wm_session", "--trinkets Nope"),
    ("trinket", ""),
    ("trinket", "nope enable"),  # unknown trinket
    ("trinket", "peanutgallery fly"),
    ("trinket", 'peanutgallery add concern "x" --ttl -1'),  # TTL not a non-negative int
    ("trinket", 'peanutgallery add concern "x" --ttl 1.5'),
    ("trinket", 'peanutgallery add concern "x" --ttl abc'),
    ("trinket", 'peanutgallery add concern "x" --ttl ""'),
    ("trinket", "peanutgallery add concern"),  # empty text
    ("trinket", 'peanutgallery add concern ""'),
    ("trinket", 'peanutgallery add concern "oops'),  # unbalanced quote
    ("trinket", "peanutgallery add alarm x"),
    ("trinket", "peanutgallery remove guidance-9"),
    ("trinket", 'reminder add "Call Bob" --due tomorrow'),
    ("trinket", "reminder add --due +2h"),
    ("trinket", 'reminder add "Call Bob"'),  # --due is required
    ("trinket", 'reminder add "Call Bob" --due +99999999w'),  # past the year 9999
    ("trinket", 'reminder add "Call Bob" --due +99999999999999d'),  # more than timedelta holds
    ("trinket", 'reminder add "Call Bob" --due +' + "9" * 5000 + "m"),  # past int()'s digit limit
    ("trinket", "reminder complete rem_9"),
    ("trinket", 'proactivememory surface "x" --score high'),
    ("trinket", 'proactivememory surface "x" --score 1.5'),
    ("trinket", "proactivememory surface"),
    ("trinket", "getcontext add t1 bogus --query q"),
    ("trinket", "getcontext add t1 failed --query q"),  # --error missing
    ("trinket", "getcontext add t1 timeout --query q --iteration -2"),
    ("trinket", "domaindoc expand garden nope"),
    ("trinket", "domaindoc collapse nowhere soil"),
    ("trinket", "TimeManager enable now"),
    ("trinket", "reminder style bogus"),
    ("trinket", "time style"),
    ("trinket", "getcontext add t1 pending"),  # --query is required
]


@pytest.mark.parametrize(("magic", "line"), MISTAKES)
def test_user_mistakes_are_usage_errors_that_change_nothing(ip, session, magic, line):
    session.trinket("DomaindocTrinket").create_document("garden", "Garden")
    session.trinket("DomaindocTrinket").add_section("garden", "soil", "Soil", "Loam.")
    ip.run_line_magic("trinket", 'peanutgallery add concern "Keep it short."')
    ip.run_line_magic("compose", "")
    before = state(session)
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic(magic, line)
    assert type(caught.value) is UsageError
    assert "\n" not in str(caught.value).strip()
    assert state(session) == before


def test_a_due_offset_past_the_year_9999_names_the_option(ip, session):
    with pytest.raises(
        UsageError,
        match=r"^--due: 2026-11-30T09:00:00\+00:00 plus 699999993 days "
        r"passes the year 9999$",
    ):
        ip.run_line_magic("trinket", 'reminder add "Call Bob" --due +99999999w')
    with pytest.raises(UsageError, match=r"argument --due: \+9999999999w is too far ahead"):
        ip.run_line_magic("trinket", 'reminder add "Call Bob" --due +9999999999w')
    assert session.trinket("ReminderManager").reminders() == []


@pytest.mark.parametrize("cell", ["", "\n\n", "   \n"])
def test_cell_compose_with_an_empty_body_is_a_usage_error(ip, session, cell):
    ip.run_line_magic("compose", "")
    before = state(session)
    with pytest.raises(UsageError, match="the cell body"):
        ip.run_cell_magic("compose", "", cell)
    assert state(session) == before


def test_a_trailing_comment_is_not_an_argument(ip, session):
    """As in IPython: ``# ...`` after the arguments is a comment; a ``#`` in quotes or inside a
    word is text."""
    run = ip.run_line_magic
    assert run("trinket", "peanutgallery add concern 'Rule #1: be brief.' --ttl 2  # two turns") == "guidance-1"
    assert run("trinket", 'peanutgallery add concern "C#-free" #one') == "guidance-2"
    run("turn", "1   # one turn")
    assert session.turn == 1
    run("compose", "--section peanutgallery_guidance # just the guidance")
    p = run("compose", "  # the whole prompt")
    assert "Rule #1: be brief." in p.section("peanutgallery_guidance").content
    assert "C#-free" in p.section("peanutgallery_guidance").content
    run("trinkets", "# every trinket")
    with pytest.raises(UsageError, match="1#2"):  # inside a word, '#' is not a comment
        run("turn", "1#2")
    assert session.turn == 1


def test_tables_read_as_tables_in_notebooks_and_terminals(ip, session):
    """%trinkets and %wm_events stay DataFrames but show text left-aligned, numbers right-aligned,
    times short, missing values empty and long details whole."""
    ip.run_line_magic("compose", "")
    trinkets = ip.run_line_magic("trinkets", "")
    assert trinkets.loc["TimeManager", "placement"] == "notification"  # still a DataFrame
    lines = repr(trinkets).splitlines()
    assert lines[0].split() == [
        "name",
        "section",
        "placement",
        "enabled",
        "stateful",
        "current",
        "turn",
        "size",
        "tokens",
        "(tiktoken",
        "cl100k_base)",
        "last",
        "updated",
        "error",
    ]
    time_row = next(line for line in lines if line.startswith("TimeManager "))
    assert "<NA>" not in repr(trinkets) and "None" not in repr(trinkets)
    assert "2026-11-30 09:00:00 UTC" in time_row and "T09" not in time_row
    assert lines[0].index("section") == time_row.index("datetime_section")  # text left-aligned
    page = trinkets._repr_html_()
    assert "<NA>" not in page and "&lt;NA&gt;" not in page
    assert (
        '<td style="padding:2px 8px;vertical-align:top;border-bottom:1px solid '
        "var(--jp-border-color2,#ddd);text-align:left;white-space:pre-wrap;"
        'overflow-wrap:break-word">datetime_section</td>' in page
    )
    events = ip.run_line_magic("wm_events", "--last 1")
    detail = events["detail"].iloc[0]
    assert len(detail) > 50 and detail in repr(events) and "..." not in repr(events)
    assert f">{detail}</td>" in events._repr_html_()  # whole, wrapped


def test_an_unknown_section_lists_what_the_session_produces_first(ip):
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --trinkets TimeManager")
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("compose", "--section nosuch")
    message = str(caught.value)
    assert message.startswith(
        "unknown section 'nosuch' (this session produces: base_prompt, "
        "datetime_section; in the layout, provided by no trinket here: "
    )
    assert "peanutgallery_guidance" in message.split("; ")[1]


def test_the_default_session_says_once_whom_it_greets_and_which_clock(ip, capsys):
    ip.run_line_magic("wm_session", "")
    ip.run_line_magic("compose", "")
    ip.run_line_magic("compose", "")
    assert capsys.readouterr().out == (
        'current session: nobody named (greets "friend"), time zone UTC, wall clock, 8 trinkets, '
        "default layout, state in memory\n"
        'note: this session\'s prompt greets "friend" and reads the wall clock; choose with '
        "%wm_session --first-name Ada --clock 2026-11-30T09:00:00+00:00\n"
    )
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00")
    ip.run_line_magic("compose", "")
    assert capsys.readouterr().out.split("\n", 1)[1] == (
        'note: this session\'s prompt greets "friend"; choose with '
        "%wm_session --first-name Ada --clock 2026-11-30T09:00:00+00:00\n"
    )
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --first-name Ada")
    ip.run_line_magic("compose", "")
    assert capsys.readouterr().out.startswith("current session: Ada,")
    ip.run_line_magic("compose", "")
    assert capsys.readouterr().out == ""


# -- what the user types is what is stored: IPython's $name / {expr} expansion is off

VERBATIM = [
    "Quote prices as $5 to $10.",
    "You help {first_name}.",
    'Run {__import__("os").getcwd()} and {1+1}',
    "Literal braces {{ and }} stay doubled",
    r"C:\temp\new and a \n that is two characters",
    "$first_name and ${first_name} and $$",
]


@pytest.mark.parametrize("text", VERBATIM)
def test_every_text_a_magic_takes_is_stored_as_typed(ip, session, text):
    """Through IPython's real input transformation (``run_cell``, not ``run_line_magic``, which
    skips it): no ``$name``, ``{expr}`` or ``{{`` is expanded, no backslash is eaten."""
    ip.user_ns["first_name"] = "Bob"
    ip.run_cell(f"%trinket peanutgallery add concern '{text}' --ttl 2").raise_error()
    ip.run_cell(f"%trinket reminder add '{text}' --due +2h").raise_error()
    ip.run_cell(f"%trinket proactivememory surface '{text}' --score 0.9").raise_error()
    ip.run_cell(f"%trinket getcontext add t1 success --query '{text}' --summary '{text}'").raise_error()
    assert [g.text for g in session.trinket("PeanutGalleryTrinket").entries.values()] == [text]
    assert [r["title"] for r in session.trinket("ReminderManager").reminders()] == [text]
    assert [m["text"] for m in session.trinket("ProactiveMemoryTrinket").memories] == [text]
    ip.run_cell(f"%collapse --tools '{text}' '{text}'").raise_error()
    ip.run_cell(
        f"%wm_session --clock 2026-11-30T09:00:00+00:00 --first-name Ada "
        f"--user-context '{text}' --base-prompt '{text} {{user_context}}'"
    ).raise_error()
    fresh = current_session()
    assert fresh is not session
    assert fresh.base_prompt == f"{text} {{user_context}}"
    assert fresh.profile.user_context == text


def test_the_dollar_amounts_of_the_issue_are_kept(ip, session):
    ip.run_cell('%trinket peanutgallery add concern "Quote prices as $5 to $10"').raise_error()
    assert [g.text for g in session.trinket("PeanutGalleryTrinket").entries.values()] == ["Quote prices as $5 to $10"]


def test_a_braced_expression_in_a_magic_is_never_run(ip, session):
    ip.run_cell("ran = []")
    ip.run_cell("%trinket peanutgallery add concern 'x {ran.append(1)}'").raise_error()
    ip.run_cell("%compose --section '{ran.append(2)}'")  # an unknown section: a usage error
    ip.run_cell("%turn {ran.append(3) or 1}")  # not a number: a usage error
    assert ip.user_ns["ran"] == []
    assert session.turn == 0


def test_the_base_prompt_template_fills_from_the_profile_not_the_notebook(ip, session):
    ip.user_ns["first_name"] = "Bob"
    ip.run_cell(
        '%wm_session --clock 2026-11-30T09:00:00+00:00 --first-name Ada --base-prompt "You help {first_name}."'
    ).raise_error()
    p = ip.run_cell("%compose").result
    assert p["cached_content"].startswith("You help Ada.\n")


def test_every_magic_the_extension_registers_is_marked_not_to_expand(ip):
    from IPython.core.magic import MAGIC_NO_VAR_EXPAND_ATTR

    ip.extension_manager.unload_extension("wm_kernel")
    before = {kind: dict(table) for kind, table in ip.magics_manager.magics.items()}
    ip.extension_manager.load_extension("wm_kernel")  # the fixture unloads it again
    added = {
        (kind, name): magic
        for kind, table in ip.magics_manager.magics.items()
        for name, magic in table.items()
        if before[kind].get(name) is not magic
    }
    assert set(added) >= {("line", "trinket"), ("line", "wm_session"), ("cell", "compose")}
    assert [key for key, magic in added.items() if not getattr(magic, MAGIC_NO_VAR_EXPAND_ATTR, False)] == []


# -- the first hour: what a new user meets


def test_wm_session_says_in_one_line_which_session_is_now_current(ip, session, capsys):
    ip.run_line_magic(
        "wm_session",
        "--clock 2026-11-30T09:00:00+00:00 --first-name Ada "
        "--timezone Europe/London --trinkets TimeManager,ReminderManager",
    )
    assert capsys.readouterr().out == (
        "current session: Ada, time zone Europe/London, clock fixed at 2026-11-30T09:00:00+00:00, "
        "2 trinkets, default layout, state in memory\n"
    )
    ip.run_line_magic("wm_session", "--trinkets TimeManager --layout original")
    assert capsys.readouterr().out == (
        'current session: nobody named (greets "friend"), time zone UTC, wall clock, 1 trinket, '
        "original layout, state in memory\n"
    )


def test_cache_right_after_a_new_session_composes_first(ip, session, capsys):
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --first-name Ada")
    view = ip.run_line_magic("cache", "")
    fresh = current_session()
    assert fresh.composed is not None and fresh.turn == 0
    assert list(view.simulation.turns["turn"]) == [0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("nosuch-model", "unknown model 'nosuch-model'; known models: "),
        ("--breakpoints nowhere", "unknown breakpoint 'nowhere'; use a section (base_prompt, "),
    ],
)
def test_cache_refuses_a_bad_argument_before_it_composes(ip, session, line, message):
    before = state(session)
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("cache", line)
    assert str(caught.value).startswith(message)
    assert state(session) == before and session.composed is None


def test_wm_dashboard_outside_a_notebook_says_it_needs_one(ip, session):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("wm_dashboard", "")
    assert str(caught.value) == (
        "%wm_dashboard needs a notebook (JupyterLab or Notebook, where widgets show); in a "
        "terminal use %compose, %trinkets, %wm_events and %cache"
    )


def test_wm_dashboard_takes_only_the_ipywidgets_flag(ip, session):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("wm_dashboard", "--old")
    assert str(caught.value) == "%wm_dashboard takes no arguments but --ipywidgets, got '--old'"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('peanutgallery add concern ""', "argument text: must not be empty"),
        ("peanutgallery add concern '   '", "argument text: must not be empty"),
        ("peanutgallery add concern --ttl 2", "argument text: must not be empty"),
        ('reminder add "" --due +2h', "argument title: must not be empty"),
        ("proactivememory surface ''", "argument text: must not be empty"),
    ],
)
def test_empty_text_is_refused_as_other_bad_arguments_are(ip, session, line, message):
    before = state(session)
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("trinket", line)
    assert str(caught.value) == message
    assert state(session) == before


def test_request_help_shows_every_option(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    doc = ip.find_line_magic("request").__doc__
    # argparse wraps the usage to the terminal's width (COLUMNS): its words, not its lines, are compared
    assert doc.split("\n\n")[0].split() == [
        "usage:",
        "%request",
        "[--model",
        "MODEL]",
        "[--wire",
        "DIALECT]",
        "[--tools",
        "FILE]",
        "[--per-hour",
        "N]",
        "[--user",
        "TEXT]",
        "[turn]",
    ]
    for text in ("--wire DIALECT, -w DIALECT",):
        assert text in doc
    for text in (
        "--model MODEL, -m MODEL",
        "--tools FILE",
        "--per-hour N",
        "--user TEXT",
        "examples:",
        "%request 3 --model gpt-5.4",
    ):
        assert text in doc
    assert ip.run_line_magic("request", "--help") is None
    assert capsys.readouterr().out.strip() == doc.strip()
