"""LoraTrinket: exact markup, check-in rules and schedule, parser edge cases (changelog, malformed and
adversarial input, entities), persistence, escaping, bad input."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trinkets.lora_trinket as lora_module
from trinkets.lora_trinket import (
    CHECKIN_DEBRIEF,
    CHECKIN_INSTRUCTION,
    CHECKIN_RESPONSE_INSTRUCTION,
    LoraTrinket,
    ParsedUserModel,
    parse_user_model,
)
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.stores.embedded import SQLiteStore, StateStore
from wm_kernel.utils.markup import escape_attr, escape_text

SECTION = "behavioral_directives"

MODEL = """<mira:user_model>
  <mira:observation section="communication" confidence="high">
    Prefers blunt technical feedback.
    <mira:changelog>Confirmed in the March debrief.</mira:changelog>
  </mira:observation>
  <mira:observation section="schedule" confidence="medium">Works late on Tuesdays.</mira:observation>
  <mira:checkin>
    <mira:topic section="communication" reason="You softened two reviews this week."/>
    <mira:topic section="schedule" reason="Late replies may be stressing them."></mira:topic>
  </mira:checkin>
</mira:user_model>"""

USER_MODEL_BLOCK = (
    "<user_model>\n"
    "What you've learned about Ada through observation:\n"
    "\n"
    '<observation section="communication">Prefers blunt technical feedback.</observation>\n'
    '<observation section="schedule">Works late on Tuesdays.</observation>\n'
    "</user_model>"
)


def make_session(store: StateStore | None = None, first_name: str | None = "Ada") -> Session:
    return Session(
        base_prompt="Hi.",
        profile=Profile(first_name=first_name),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        store=store,
        trinkets=[LoraTrinket],
    )


@pytest.fixture
def session() -> Session:
    return make_session()


def lora_of(s: Session) -> LoraTrinket:
    trinket = s.trinket("LoraTrinket")
    assert isinstance(trinket, LoraTrinket)
    return trinket


def section(s: Session) -> str | None:
    """The section as it went into a fresh compose (None when absent)."""
    composed = s.compose()
    found = [r.content for r in composed.sections if r.name == SECTION]
    return found[0] if found else None


# -- exact text


def test_exact_markup_without_a_checkin(session: Session) -> None:
    lora_of(session).set_user_model(MODEL)
    composed = session.compose()
    assert composed["cached_content"].endswith("\n\n---\n\n" + USER_MODEL_BLOCK)
    assert section(session) == USER_MODEL_BLOCK
    assert LoraTrinket.cache_policy is True


def test_exact_markup_with_a_checkin_due(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model(MODEL)
    lora.set_checkin_due(True)
    assert section(session) == (
        USER_MODEL_BLOCK + "\n"
        "\n"
        "<behavioral_checkin>\n"
        "<instruction>You have unresolved behavioral check-ins. Bring these up during this "
        "conversation. Find a natural moment, but do not let the session end without raising them. "
        "The user cannot see these topics unless you voice them.</instruction>\n"
        "\n"
        "Be direct: explain what you've been noticing and ask whether your read is accurate. This is "
        "a collaborative debrief, not a preference survey. Don't ask what they want. Ask if you're "
        "reading the room right.\n"
        "\n"
        "- Regarding communication: You softened two reviews this week.\n"
        "- Regarding schedule: Late replies may be stressing them.\n"
        "\n"
        "<instruction>After the user responds to the check-in, close the feedback loop:\n"
        "1. Echo their feedback verbatim as a markdown blockquote (> prefix) \u2014 this is what the "
        "user sees.\n"
        "2. Repeat the identical content in a <mira:checkin_response> tag (invisible to user, parsed "
        "by backend). Blockquote and tag must match exactly.\n"
        "3. Ask the user to confirm wording accuracy. If they correct you, reissue both blockquote "
        "and tag with the revised version. Latest output wins.\n"
        "4. Consolidate all check-in feedback into one blockquote + tag pair, even across multiple "
        "topics.\n"
        "\n"
        "Example output after user responds:\n"
        "```\n"
        "Here's what I'm recording:\n"
        "\n"
        "> User prefers blunt technical feedback without diplomatic hedging.\n"
        "> When I soften criticism, they find it condescending rather than considerate.\n"
        "\n"
        "<mira:checkin_response>User prefers blunt technical feedback without diplomatic hedging. "
        "When I soften criticism, they find it condescending rather than considerate."
        "</mira:checkin_response>\n"
        "\n"
        "Is this wording accurate?\n"
        "```</instruction>\n"
        "</behavioral_checkin>"
    )


def test_user_without_a_first_name_is_this_user() -> None:
    s = make_session(first_name=None)
    lora_of(s).set_user_model(MODEL)
    text = section(s)
    assert text is not None
    assert text.splitlines()[1] == "What you've learned about this user through observation:"


def test_no_observations_no_section(session: Session) -> None:
    lora = lora_of(session)
    assert section(session) is None
    lora.set_user_model('<mira:checkin><mira:topic section="a" reason="b"/></mira:checkin>')
    lora.set_checkin_due(True)
    assert section(session) is None  # topics alone are not a user model
    assert lora.topics() == [{"section": "a", "reason": "b"}]


def test_due_checkin_without_topics_adds_nothing(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model('<mira:observation section="s" confidence="c">Likes tea.</mira:observation>')
    lora.set_checkin_due(True)
    assert section(session) == (
        "<user_model>\n"
        "What you've learned about Ada through observation:\n\n"
        '<observation section="s">Likes tea.</observation>\n'
        "</user_model>"
    )


def test_clearing_the_model_removes_the_section(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model(MODEL)
    assert section(session) is not None
    lora.set_user_model("")
    assert section(session) is None
    assert lora.user_model == "" and lora.observations() == []


# -- check-in schedule


def test_checkin_schedule_counts_turns_since_the_last_checkin(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model(MODEL)
    lora.schedule_checkins(3)
    session.advance_turn(2)
    assert (lora.turns_since_checkin, lora.checkin_due) == (2, False)
    assert "<behavioral_checkin>" not in (session.composed and session.composed["cached_content"])
    session.advance_turn()
    assert (lora.turns_since_checkin, lora.checkin_due) == (3, True)
    assert session.composed is not None
    assert "<behavioral_checkin>" in session.composed["cached_content"]  # auto-composed after the turn
    lora.complete_checkin()
    assert (lora.turns_since_checkin, lora.checkin_due) == (0, False)
    assert "<behavioral_checkin>" not in (section(session) or "")
    lora.schedule_checkins(None)
    session.advance_turn(5)
    assert (lora.turns_since_checkin, lora.checkin_due) == (0, False)  # no schedule, no counting
    lora.schedule_checkins(2)
    session.advance_turn()
    lora.schedule_checkins(1)  # a new schedule keeps the count
    assert (lora.turns_since_checkin, lora.checkin_due) == (1, True)


def test_manual_flag_overrides_the_schedule_until_completed(session: Session) -> None:
    lora = lora_of(session)
    lora.schedule_checkins(10)
    lora.set_checkin_due(True)
    assert lora.checkin_due is True
    lora.complete_checkin()
    assert lora.checkin_due is False
    lora.set_checkin_due(True)
    lora.set_checkin_due(False)
    assert lora.checkin_due is False


# -- parser


def test_changelog_blocks_are_stripped() -> None:
    parsed = parse_user_model(
        '<mira:observation section="a" confidence="high">Before <changelog>plain <b>x</b></changelog>'
        "middle <mira:changelog>namespaced <mira:changelog>nested</mira:changelog> still</mira:changelog>"
        "after.</mira:observation>"
        '<mira:changelog><mira:topic section="hidden" reason="in a changelog"/></mira:changelog>'
        '<mira:topic section="shown" reason="outside"/>'
    )
    assert parsed.observations == ({"section": "a", "confidence": "high", "text": "Before middle after."},)
    assert parsed.topics == ({"section": "shown", "reason": "outside"},)
    assert parsed.problems == ()


def test_unclosed_changelog_ends_at_the_next_observation_boundary() -> None:
    parsed = parse_user_model(
        '<mira:observation section="a">Kept <changelog>lost tail</mira:observation>'
        '<mira:observation section="b">Second.</mira:observation>'
    )
    assert parsed == ParsedUserModel(
        observations=(
            {"section": "a", "confidence": "", "text": "Kept"},
            {"section": "b", "confidence": "", "text": "Second."},
        ),
        topics=(),
        problems=("unclosed <changelog> at offset 35 ends at offset 55",),
    )


MALFORMED = (
    'junk < not a tag <mira:observation section="a" confidence=high>unquoted attr</mira:observation>'
    '<mira:observation section="b">never closed'
    '<mira:observation section="c" confidence="x">ok <i>inline</i> 1 < 2</mira:observation>'
    '</mira:observation><mira:observation confidence="y">no section</mira:observation>'
    '<mira:observation section="e"/><mira:observation section="f">   </mira:observation>'
    '<mira:topic section="t"/><mira:topic reason="r"/><mira:topic section="t" reason="r"'
    '<mira:observation section="g">tail without end'
)


def test_malformed_input_gives_the_same_result_every_time() -> None:
    expected = ParsedUserModel(
        observations=({"section": "c", "confidence": "x", "text": "ok inline 1 < 2"},),
        topics=(),
        problems=(
            "stray </mira:observation> at offset 76",
            "unclosed <mira:observation> at offset 95 dropped",
            "stray </mira:observation> at offset 223",
            "<mira:observation> at offset 242 has no section; dropped",
            "<mira:observation> at offset 304 has no text; dropped",
            "<mira:observation> at offset 335 has no text; dropped",
            "<mira:topic> at offset 387 needs a section and a reason; dropped",
            "<mira:topic> at offset 412 needs a section and a reason; dropped",
            "unclosed <mira:observation> at offset 470 dropped",
        ),
    )
    assert parse_user_model(MALFORMED) == expected
    assert parse_user_model(MALFORMED) == expected
    assert parse_user_model(MALFORMED[:-7]) == parse_user_model(MALFORMED[:-7])


def test_attributes_with_entities_quotes_and_any_order() -> None:
    parsed = parse_user_model(
        "<mira:observation confidence='lo&apos;w' section='a &amp; b &quot;c&quot;'>"
        "x &lt;y&gt; &#233;&#x1F600; &nbsp; &#0; &bogus</mira:observation>"
        '<mira:topic reason="line&#10;break and\ttab" section="s&#x3C;t&#62;"  />'
        '<mira:observation section="first" section="second">dup</mira:observation>'
    )
    assert parsed.observations == (
        {"section": 'a & b "c"', "confidence": "lo'w", "text": "x <y> é\U0001f600 &nbsp; &#0; &bogus"},
        {"section": "first", "confidence": "", "text": "dup"},
    )
    # literal whitespace in an attribute becomes a space, as in XML; &#10; stays a newline
    assert parsed.topics == ({"section": "s<t>", "reason": "line\nbreak and tab"},)


def test_problem_list_is_capped() -> None:
    parsed = parse_user_model("</mira:observation>" * 25)
    assert len(parsed.problems) == 21
    assert parsed.problems[-1] == "... and 5 more"


ADVERSARIAL = {
    "unclosed observations": '<mira:observation section="s" confidence="c">',
    "unclosed changelogs": "<mira:changelog>",
    "observation then changelog": '<mira:observation section="s">t<changelog>',
    "bare angle brackets": "<",
    "open attribute quotes": '<mira:topic section="',
    "entity prefixes": "&#1",
    "closed observations": '<mira:observation section="s" confidence="c">a &amp; b</mira:observation>',
}


@pytest.mark.slow
@pytest.mark.parametrize("unit", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_one_megabyte_adversarial_input_is_read_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = unit * (1_000_000 // len(unit))
    spans: list[int] = []
    original = lora_module._read_tag

    def counting(source: str, start: int, limit: int) -> Any:
        spans.append(limit - start)
        return original(source, start, limit)

    monkeypatch.setattr(lora_module, "_read_tag", counting)
    parsed = parse_user_model(text)
    # every "<" is examined once, and no tag read looks past the next "<": linear work in total
    assert len(spans) == text.count("<")
    assert sum(spans) <= len(text)
    assert parse_user_model(text) == parsed
    if unit.endswith("</mira:observation>"):
        assert len(parsed.observations) == text.count("</mira:observation>")
        assert parsed.observations[0]["text"] == "a & b"
    else:
        assert parsed.observations == ()


def test_the_trinket_reports_parse_problems(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model('<mira:observation section="a">never closed')
    assert lora.problems() == ["unclosed <mira:observation> at offset 0 dropped"]
    assert section(session) is None


# -- persistence


def test_user_model_and_checkin_state_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "wm.db"
    first = make_session(SQLiteStore(path))
    lora = lora_of(first)
    lora.set_user_model(MODEL)
    lora.schedule_checkins(3)
    first.advance_turn(2)
    first.store.close()

    second = make_session(SQLiteStore(path))
    again = lora_of(second)
    assert again.user_model == MODEL
    assert (again.turns_since_checkin, again.checkin_due) == (2, False)
    assert section(second) == USER_MODEL_BLOCK
    second.advance_turn()
    assert again.checkin_due is True
    assert "<behavioral_checkin>" in (section(second) or "")


# -- escaping

HOSTILE = "x\"/><evil a='1'> & </user_model></mira:hud>\n\ttab &amp;"


def xml_escape(value: str) -> str:
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\n", "&#10;")
        .replace("\t", "&#9;")
    )


def parse_section(content: str) -> ET.Element:
    """The section as XML. The original's closing instruction names the tag ``<mira:checkin_response>``
    in its prose (an open tag no parser accepts), so that fixed text is swapped for a marker first:
    everything else, user and model text included, must parse."""
    assert content.count(CHECKIN_RESPONSE_INSTRUCTION) <= 1
    return ET.fromstring("<r>" + content.replace(CHECKIN_RESPONSE_INSTRUCTION, "RESPONSE-INSTRUCTION") + "</r>")


def test_hostile_values_round_trip_through_an_xml_parser() -> None:
    s = make_session(first_name="<Ada & Bob>")
    lora = lora_of(s)
    section_id, text, reason = "s" + HOSTILE, "t" + HOSTILE, "r" + HOSTILE
    lora.set_user_model(
        f'<mira:observation section="{xml_escape(section_id)}" confidence="c">'
        f"{xml_escape(text)}</mira:observation>"
        f'<mira:topic section="{xml_escape(section_id)}" reason="{xml_escape(reason)}"/>'
    )
    assert lora.observations() == [{"section": section_id, "confidence": "c", "text": text}]
    assert lora.topics() == [{"section": section_id, "reason": reason}]
    lora.set_checkin_due(True)
    content = section(s)
    assert content is not None
    root = parse_section(content)
    model = root.find("user_model")
    assert model is not None
    assert model.text == "\nWhat you've learned about <Ada & Bob> through observation:\n\n"
    observation = model.find("observation")
    assert observation is not None
    assert (observation.get("section"), observation.text) == (section_id, text)
    checkin = root.find("behavioral_checkin")
    assert checkin is not None
    opening, closing = checkin.findall("instruction")
    assert opening.text == CHECKIN_INSTRUCTION
    assert opening.tail == f"\n\n{CHECKIN_DEBRIEF}\n\n- Regarding {section_id}: {reason}\n\n"
    assert closing.text == "RESPONSE-INSTRUCTION"
    composed = s.compose()
    assert composed["cached_content"].count("</user_model>") == 1


def test_raw_angle_brackets_in_observation_text_stay_text(session: Session) -> None:
    lora = lora_of(session)
    lora.set_user_model('<mira:observation section="a">if a < b && b > c</mira:observation>')
    assert lora.observations()[0]["text"] == "if a < b && b > c"
    assert '<observation section="a">if a &lt; b &amp;&amp; b &gt; c</observation>' in (section(session) or "")


# -- bad input


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda t: t.set_user_model(None), TypeError, "^user model must be a str, got NoneType$"),
        (lambda t: t.set_user_model(b"<x/>"), TypeError, "^user model must be a str, got bytes$"),
        (lambda t: t.set_checkin_due("yes"), TypeError, "^due must be a bool, got str$"),
        (lambda t: t.schedule_checkins(0), ValueError, "^every_n_turns must be at least 1, got 0$"),
        (lambda t: t.schedule_checkins(True), TypeError, "^every_n_turns must be an int or None, got bool$"),
        (lambda t: t.schedule_checkins(2.5), TypeError, "^every_n_turns must be an int or None, got float$"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    session: Session, call: Any, error: type[Exception], message: str
) -> None:
    lora = lora_of(session)
    lora.set_user_model(MODEL)
    lora.schedule_checkins(4)
    before = session.store.hgetall("lora:notebook")
    with pytest.raises(error, match=message):
        call(lora)
    assert session.store.hgetall("lora:notebook") == before
    assert section(session) == USER_MODEL_BLOCK


def test_parse_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="^user model must be a str, got int$"):
        parse_user_model(3)  # type: ignore[arg-type]


# -- properties on random user models

BENIGN = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>&\"'"), max_size=10)
    .map(str.strip)
    .filter(bool)
)
# anything XML 1.0 can carry (markup characters included), without the outer whitespace the
# parser strips
ANY_TEXT = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\t\n\r"), max_size=10)
    .map(str.strip)
    .filter(bool)
) | st.sampled_from(["</user_model>", "\"/><x a='1'>", "&amp;"])


@st.composite
def user_models(draw: st.DrawFn, text: st.SearchStrategy[str]) -> dict[str, Any]:
    return {
        "observations": draw(st.lists(st.tuples(text, text, text), min_size=1, max_size=5)),
        "topics": draw(st.lists(st.tuples(text, text), max_size=4)),
        "due": draw(st.booleans()),
        "name": draw(st.none() | text),
    }


def model_xml(model: dict[str, Any]) -> str:
    """The pipeline's XML for a drawn model, values escaped as a well-behaved writer would."""
    lines = ["<mira:user_model>"]
    lines += [
        f'<mira:observation section="{escape_attr(section)}" confidence="{escape_attr(c)}">'
        f"{escape_text(text)}</mira:observation>"
        for section, c, text in model["observations"]
    ]
    lines += (
        ["<mira:checkin>"]
        + [
            f'<mira:topic section="{escape_attr(section)}" reason="{escape_attr(reason)}"/>'
            for section, reason in model["topics"]
        ]
        + ["</mira:checkin>"]
    )
    return "\n".join(lines + ["</mira:user_model>"])


def check_section(content: str | None, model: dict[str, Any]) -> None:
    assert content is not None
    root = parse_section(content)
    user_model = root.find("user_model")
    assert user_model is not None
    name = (model["name"] or "").strip() or "this user"
    assert user_model.text == f"\nWhat you've learned about {name} through observation:\n\n"
    assert [(o.get("section"), o.text) for o in user_model.findall("observation")] == [
        (section, text) for section, _, text in model["observations"]
    ]
    checkin = root.find("behavioral_checkin")
    if not (model["due"] and model["topics"]):
        assert checkin is None
        return
    assert checkin is not None
    opening, closing = checkin.findall("instruction")
    lines = "".join(f"- Regarding {section}: {reason}\n" for section, reason in model["topics"])
    assert (opening.text, closing.text) == (CHECKIN_INSTRUCTION, "RESPONSE-INSTRUCTION")
    assert opening.tail == f"\n\n{CHECKIN_DEBRIEF}\n\n{lines}\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=user_models(BENIGN))
def test_random_benign_models_parse_and_keep_their_order(model: dict[str, Any]) -> None:
    s = make_session(first_name=model["name"])
    lora = lora_of(s)
    lora.set_user_model(model_xml(model))
    lora.set_checkin_due(model["due"])
    check_section(section(s), model)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=user_models(ANY_TEXT))
def test_random_hostile_text_round_trips(model: dict[str, Any]) -> None:
    s = make_session(first_name=model["name"])
    lora = lora_of(s)
    lora.set_user_model(model_xml(model))
    lora.set_checkin_due(model["due"])
    assert lora.problems() == []
    check_section(section(s), model)
