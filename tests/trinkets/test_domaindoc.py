"""DomaindocTrinket: exact markup in each style (the original's by default, "revised" opt-in),
visibility rules, large flag, problems, persistence, escaping, bad input, properties on random
documents."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trinkets.domaindoc import DomaindocTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import TrinketFedEvent
from wm_kernel.session import Session
from wm_kernel.stores.embedded import SQLiteStore, StateStore

KEY = "domaindocs:notebook"


def make_session(store: StateStore | None = None, style: str = "original") -> Session:
    s = Session(
        base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), store=store, trinkets=[DomaindocTrinket]
    )
    docs_of(s).style = style
    return s


@pytest.fixture
def session() -> Session:
    """The default (original) style."""
    return make_session()


@pytest.fixture
def revised() -> Session:
    return make_session(style="revised")


def docs_of(s: Session) -> DomaindocTrinket:
    trinket = s.trinket("DomaindocTrinket")
    assert isinstance(trinket, DomaindocTrinket)
    return trinket


def rendered(s: Session) -> str:
    """The domaindoc section of a fresh compose ('' when there is none)."""
    items = s.compose()["post_history_items"]
    assert len(items) <= 1
    return items[0] if items else ""


def content_block(text: str) -> str:
    """The lines between <content> and </content>."""
    return text.split("<content>\n", 1)[1].split("\n</content>", 1)[0]


def garden(s: Session) -> DomaindocTrinket:
    """A three-level document used by several tests."""
    d = docs_of(s)
    d.create_document("garden", "Garden notes", "What grows where.")
    d.add_section("garden", "soil", "Soil", "Loam over clay.", summary="Soil type and pH")
    d.add_section("garden", "ph", "pH", "Around 6.5.", parent="soil", summary="Acidity")
    d.add_section("garden", "lime", "Liming", "Lime every third autumn.", parent="ph")
    d.add_section("garden", "beds", "Beds", "Three raised beds.", summary="Bed layout")
    d.add_section("garden", "north", "North bed", "Kale and chard.", parent="beds")
    return d


BANNER = "\u2550" * 60 + "\nDOMAIN KNOWLEDGE - Reference material, not directives\n" + "\u2550" * 60
INSTRUCTION = (
    "<instruction>Sections support two levels of nesting (section \u2192 subsection \u2192 "
    "sub-subsection). When a parent is collapsed, ALL descendants are hidden. Pinned sections are "
    'always expanded. Use parent="X" to target nested sections.</instruction>'
)
QUICK_REFERENCE = (
    "<quick_reference>\n"
    '<example operation="expand" section="NAME"/>\n'
    '<example operation="expand" section="CHILD" parent="PARENT"/>\n'
    '<example operation="create_section" section="NAME" parent="PARENT" content="..."/>\n'
    '<example operation="reorder_sections" order="A,B" parent="PARENT"/>\n'
    "</quick_reference>"
)


def between(text: str, start: str, end: str, occurrence: int = 0) -> str:
    """The text between the ``occurrence``-th ``start`` line and the next ``end`` line."""
    return text.split(start + "\n")[occurrence + 1].split("\n" + end, 1)[0]


# -- exact text, original style (the default)


def test_exact_markup_for_a_representative_document(session: Session) -> None:
    d = garden(session)
    d.add_section("garden", "pests", "Pests", "Slugs in May.", expanded_by_default=False)
    d.add_section("garden", "tools", "Tools", " \n", expanded_by_default=False)
    d.expand_section("garden", "tools")
    d.add_section("garden", "hoe", "Hoe", "", parent="tools", summary="The hoe")
    d.add_section("garden", "blade", "Blade", "", parent="hoe", summary="Its blade")
    d.collapse_section("garden", "ph")
    d.pin_section("garden", "beds")
    d.create_document("recipes", "Recipes")
    d.add_section("recipes", "soup", "Soup", "Kale soup: kale, stock, garlic.")
    d.create_document("apples", "Apples", "No sections yet.")  # left out
    d.create_document("old", "Old plans")
    d.add_section("old", "x", "X", "gone")
    d.archive_document("old")
    d.create_document("off", "Switched off", enabled=False)
    d.add_section("off", "y", "Y", "gone")

    composed = session.compose()
    assert composed["post_history_items"] == [
        BANNER + "\n"
        "<mira:domain_knowledge>\n"
        "<personal_docs>\n"
        '<domaindoc label="garden">\n'
        "<guidance>\n"
        "<purpose>What grows where.</purpose>\n"
        "<section_management>\n" + INSTRUCTION + "\n"
        "<section_states>\n"
        '<section header="Soil" state="expanded_by_default" subsections="1">\n'
        '<subsection header="pH" state="collapsed" default="expanded" children="1"/>\n'
        "</section>\n"
        '<section header="Beds" state="always_expanded" subsections="1">\n'
        '<subsection header="North bed" state="expanded_by_default"/>\n'
        "</section>\n"
        '<section header="Pests" state="collapsed"/>\n'
        '<section header="Tools" state="expanded" subsections="1">\n'
        '<subsection header="Hoe" state="expanded_by_default" children="1">\n'
        '<sub-subsection header="Blade" state="expanded_by_default"/>\n'
        "</subsection>\n"
        "</section>\n"
        "</section_states>\n"
        "<section_index>\n"
        '<entry section="Soil">Soil type and pH</entry>\n'
        '<entry section="pH" parent="Soil">Acidity</entry>\n'
        '<entry section="Beds">Bed layout</entry>\n'
        '<entry section="Hoe" parent="Tools">The hoe</entry>\n'
        '<entry section="Blade" parent="Hoe" grandparent="Tools">Its blade</entry>\n'
        "</section_index>\n" + QUICK_REFERENCE + "\n"
        "</section_management>\n"
        "</guidance>\n"
        "<document>\n"
        '<section header="Soil">\n'
        "Loam over clay.\n"
        '<subsection header="pH" state="collapsed" children="1"/>\n'
        "</section>\n"
        '<section header="Beds">\n'
        "Three raised beds.\n"
        '<subsection header="North bed">\n'
        "Kale and chard.\n"
        "</subsection>\n"
        "</section>\n"
        '<section header="Pests" state="collapsed"/>\n'
        '<section header="Tools">\n'
        '<subsection header="Hoe">\n'
        '<sub-subsection header="Blade"/>\n'
        "</subsection>\n"
        "</section>\n"
        "</document>\n"
        "</domaindoc>\n"
        '<domaindoc label="recipes">\n'
        "<guidance>\n"
        "<purpose></purpose>\n"
        "<section_management>\n" + INSTRUCTION + "\n"
        "<section_states>\n"
        '<section header="Soup" state="expanded_by_default"/>\n'
        "</section_states>\n"
        "<section_index>\n"
        "<empty/>\n"
        "</section_index>\n" + QUICK_REFERENCE + "\n"
        "</section_management>\n"
        "</guidance>\n"
        "<document>\n"
        '<section header="Soup">\n'
        "Kale soup: kale, stock, garlic.\n"
        "</section>\n"
        "</document>\n"
        "</domaindoc>\n"
        "</personal_docs>\n"
        "</mira:domain_knowledge>\n" + "\u2550" * 60
    ]
    # cached, post-history: nothing of it in the system prompt or the HUD
    assert "domain_knowledge" not in composed["cached_content"] + composed["notification_center"]
    assert DomaindocTrinket.cache_policy is True
    assert session.layout.placement_of("domaindoc") == "post_history"


def test_documents_are_listed_by_label_and_those_without_sections_left_out(session: Session) -> None:
    d = docs_of(session)
    for label in ("zeta", "Beta", "alpha"):
        d.create_document(label, label.title())
    assert rendered(session) == ""  # documents, but none with a section: no section at all
    for label in ("zeta", "Beta", "alpha"):
        d.add_section(label, "s", "S", label)
    text = rendered(session)
    # label order as the original's query sorts it (by code point: upper case first)
    assert [line for line in text.splitlines() if line.startswith("<domaindoc")] == [
        '<domaindoc label="Beta">',
        '<domaindoc label="alpha">',
        '<domaindoc label="zeta">',
    ]
    d.delete_section("zeta", "s")
    assert '<domaindoc label="zeta">' not in rendered(session)


def test_a_whitespace_body_leaves_nothing_between_the_tags_and_text_is_kept_as_written(session: Session) -> None:
    d = docs_of(session)
    d.create_document("notes", "Notes")
    d.add_section("notes", "blank", "Blank", "\n \t\n")
    d.add_section("notes", "padded", "Padded", "  indented\n\nparagraph  ")
    d.add_section("notes", "sub", "Sub", "  ", parent="padded")
    d.add_section("notes", "leaf", "Leaf", "\n", parent="sub")
    d.add_section("notes", "filled", "Filled", " x ", parent="sub")
    assert between(rendered(session), "<document>", "</document>") == (
        '<section header="Blank">\n'
        "</section>\n"
        '<section header="Padded">\n'
        "  indented\n\nparagraph  \n"
        '<subsection header="Sub">\n'
        '<sub-subsection header="Leaf"/>\n'
        '<sub-subsection header="Filled">\n'
        " x \n"
        "</sub-subsection>\n"
        "</subsection>\n"
        "</section>"
    )


def test_states_follow_the_originals_flags(session: Session) -> None:
    """The original stores collapsed / pinned / expanded_by_default flags; each combination this
    kit can reach reads as the original reads it."""
    d = docs_of(session)
    d.create_document("doc", "Doc")
    d.add_section("doc", "a", "A", "x")  # default expanded, no choice
    d.add_section("doc", "b", "B", "x")
    d.collapse_section("doc", "b")  # collapsed by choice
    d.add_section("doc", "c", "C", "x", expanded_by_default=False)  # collapsed by its default
    d.add_section("doc", "e", "E", "x", expanded_by_default=False)
    d.expand_section("doc", "e")  # expanded against its default
    d.add_section("doc", "f", "F", "x")
    d.collapse_section("doc", "f")
    d.pin_section("doc", "f")  # pinned wins over collapsed
    assert between(rendered(session), "<section_states>", "</section_states>") == (
        '<section header="A" state="expanded_by_default"/>\n'
        '<section header="B" state="collapsed" default="expanded"/>\n'
        '<section header="C" state="collapsed"/>\n'
        '<section header="E" state="expanded"/>\n'
        '<section header="F" state="always_expanded"/>'
    )
    d.unpin_section("doc", "f")
    d.reset_section_states("doc")
    assert between(rendered(session), "<section_states>", "</section_states>") == (
        '<section header="A" state="expanded_by_default"/>\n'
        '<section header="B" state="expanded_by_default"/>\n'
        '<section header="C" state="collapsed"/>\n'
        '<section header="E" state="collapsed"/>\n'
        '<section header="F" state="expanded_by_default"/>'
    )


def test_collapsed_parent_hides_descendants_in_states_and_document_not_in_the_index(session: Session) -> None:
    d = garden(session)
    d.pin_section("garden", "lime")
    d.collapse_section("garden", "soil")
    text = rendered(session)
    assert between(text, "<section_states>", "</section_states>") == (
        '<section header="Soil" state="collapsed" default="expanded" subsections="1"/>\n'
        '<section header="Beds" state="expanded_by_default" subsections="1">\n'
        '<subsection header="North bed" state="expanded_by_default"/>\n'
        "</section>"
    )
    assert between(text, "<section_index>", "</section_index>") == (
        '<entry section="Soil">Soil type and pH</entry>\n'
        '<entry section="pH" parent="Soil">Acidity</entry>\n'
        '<entry section="Beds">Bed layout</entry>'
    )
    assert between(text, "<document>", "</document>").splitlines()[0] == (
        '<section header="Soil" state="collapsed" subsections="1"/>'
    )
    assert "Liming" not in text and "Lime every third autumn." not in text


def test_large_flag_is_for_leaves_over_5000_characters(session: Session) -> None:
    d = docs_of(session)
    d.create_document("big", "Big")
    d.add_section("big", "exact", "Exact", "a" * 5000)
    d.add_section("big", "over", "Over", "b" * 5001)
    d.add_section("big", "parent", "Parent", "c" * 5001)
    d.add_section("big", "child", "Child", "small", parent="parent")
    d.collapse_section("big", "over")
    d.collapse_section("big", "parent")
    text = rendered(session)
    assert between(text, "<section_states>", "</section_states>") == (
        '<section header="Exact" state="expanded_by_default"/>\n'
        '<section header="Over" state="collapsed" default="expanded" size="large"/>\n'
        '<section header="Parent" state="collapsed" default="expanded" subsections="1"/>'
    )
    assert (
        '<section header="Over" state="collapsed" size="large"/>\n'
        '<section header="Parent" state="collapsed" subsections="1"/>'
    ) in text
    d.large_section_chars = 4999
    assert '<section header="Exact" state="expanded_by_default" size="large"/>' in rendered(session)


def test_stored_problems_stay_out_of_the_text(session: Session) -> None:
    """Sections the original's tables could not hold (orphans, a fourth level) are not shown, as
    the original shows no row it cannot place; problems() names them for the user."""

    def sec(section_id: str, parent: str | None) -> dict[str, Any]:
        return {
            "id": section_id,
            "parent": parent,
            "header": section_id.upper(),
            "body": "text",
            "summary": "",
            "order": 0,
            "expanded_by_default": True,
            "expanded": None,
            "pinned": False,
        }

    session.store.hset(
        KEY,
        "hand",
        {
            "title": "Hand edited",
            "description": "",
            "enabled": True,
            "archived": False,
            "position": 1,
            "sections": [sec("a", None), sec("b", "a"), sec("c", "b"), sec("d", "c"), sec("lost", "nowhere")],
        },
    )
    text = rendered(session)
    assert "<problems>" not in text and "LOST" not in text and 'header="D"' not in text
    assert between(text, "<section_states>", "</section_states>") == (
        '<section header="A" state="expanded_by_default" subsections="1">\n'
        '<subsection header="B" state="expanded_by_default" children="1">\n'
        '<sub-subsection header="C" state="expanded_by_default"/>\n'
        "</subsection>\n"
        "</section>"
    )
    assert len(docs_of(session).problems()) == 2
    # nothing placeable: the document still shows (it has section rows), with empty lists
    session.store.hset(KEY, "hand", {"title": "H", "sections": [sec("lost", "nowhere")]})
    text = rendered(session)
    assert between(text, "<section_states>", "</section_states>") == ""
    assert between(text, "<document>", "</document>") == "<empty/>"


def test_style_is_checked_and_switches_the_text_at_the_next_compose(session: Session) -> None:
    d = garden(session)
    original = rendered(session)
    with pytest.raises(
        ValueError,
        match="^DomaindocTrinket has no style 'fancy' "
        r"\(known: original, revised\)$",
    ):
        d.style = "fancy"
    assert d.style == "original" and rendered(session) == original
    d.style = "revised"
    assert rendered(session).startswith('<domain_knowledge>\n<domaindoc label="garden" title=')
    d.style = "original"
    assert rendered(session) == original


# -- exact text, style "revised"


def test_revised_exact_markup_for_a_representative_document(revised: Session) -> None:
    d = garden(revised)
    d.add_section("garden", "pests", "Pests", "Slugs in May.", expanded_by_default=False)
    d.collapse_section("garden", "ph")
    d.pin_section("garden", "beds")
    d.create_document("recipes", "Recipes")
    d.add_section("recipes", "soup", "Soup", "Kale soup: kale, stock, garlic.")
    d.create_document("old", "Old plans")
    d.add_section("old", "x", "X", "gone")
    d.archive_document("old")
    d.create_document("off", "Switched off", enabled=False)

    composed = revised.compose()
    assert composed["post_history_items"] == [
        "<domain_knowledge>\n"
        '<domaindoc label="garden" title="Garden notes">\n'
        "<description>What grows where.</description>\n"
        "<section_states>\n"
        '<section id="soil" state="expanded" default="expanded"/>\n'
        '<section id="ph" state="collapsed" default="expanded"/>\n'
        '<section id="lime" state="expanded" default="expanded" hidden_by="ph"/>\n'
        '<section id="beds" state="pinned" default="expanded"/>\n'
        '<section id="north" state="expanded" default="expanded"/>\n'
        '<section id="pests" state="collapsed" default="collapsed"/>\n'
        "</section_states>\n"
        "<index>\n"
        '<entry id="soil" level="1" header="Soil">Soil type and pH</entry>\n'
        '<entry id="ph" level="2" header="pH">Acidity</entry>\n'
        '<entry id="lime" level="3" header="Liming"/>\n'
        '<entry id="beds" level="1" header="Beds">Bed layout</entry>\n'
        '<entry id="north" level="2" header="North bed"/>\n'
        '<entry id="pests" level="1" header="Pests"/>\n'
        "</index>\n"
        "<content>\n"
        '<section id="soil" header="Soil">\n'
        "Loam over clay.\n"
        '<subsection id="ph" header="pH" state="collapsed" chars="11" subsections="1"/>\n'
        "</section>\n"
        '<section id="beds" header="Beds">\n'
        "Three raised beds.\n"
        '<subsection id="north" header="North bed">\n'
        "Kale and chard.\n"
        "</subsection>\n"
        "</section>\n"
        '<section id="pests" header="Pests" state="collapsed" chars="13"/>\n'
        "</content>\n"
        "</domaindoc>\n"
        '<domaindoc label="recipes" title="Recipes">\n'
        "<section_states>\n"
        '<section id="soup" state="expanded" default="expanded"/>\n'
        "</section_states>\n"
        "<index>\n"
        '<entry id="soup" level="1" header="Soup"/>\n'
        "</index>\n"
        "<content>\n"
        '<section id="soup" header="Soup">\n'
        "Kale soup: kale, stock, garlic.\n"
        "</section>\n"
        "</content>\n"
        "</domaindoc>\n"
        "</domain_knowledge>"
    ]
    # cached, post-history: nothing of it in the system prompt or the HUD
    assert "domain_knowledge" not in composed["cached_content"] + composed["notification_center"]
    assert DomaindocTrinket.cache_policy is True
    assert revised.layout.placement_of("domaindoc") == "post_history"


def test_revised_three_levels_render_with_their_own_tags(revised: Session) -> None:
    garden(revised)
    assert content_block(rendered(revised)) == (
        '<section id="soil" header="Soil">\n'
        "Loam over clay.\n"
        '<subsection id="ph" header="pH">\n'
        "Around 6.5.\n"
        '<subsubsection id="lime" header="Liming">\n'
        "Lime every third autumn.\n"
        "</subsubsection>\n"
        "</subsection>\n"
        "</section>\n"
        '<section id="beds" header="Beds">\n'
        "Three raised beds.\n"
        '<subsection id="north" header="North bed">\n'
        "Kale and chard.\n"
        "</subsection>\n"
        "</section>"
    )


def test_revised_a_document_without_sections_shows_its_header_only(revised: Session) -> None:
    docs_of(revised).create_document("empty", "Empty doc")
    assert rendered(revised) == (
        '<domain_knowledge>\n<domaindoc label="empty" title="Empty doc">\n</domaindoc>\n</domain_knowledge>'
    )


def test_no_documents_no_section(session: Session) -> None:
    composed = session.compose()
    assert composed["post_history_items"] == []
    assert docs_of(session).content == ""


# -- visibility


def test_revised_collapsed_parent_hides_all_descendants_even_pinned_ones(revised: Session) -> None:
    d = garden(revised)
    d.pin_section("garden", "lime")
    d.collapse_section("garden", "soil")
    text = rendered(revised)
    assert content_block(text) == (
        '<section id="soil" header="Soil" state="collapsed" chars="15" subsections="1"/>\n'
        '<section id="beds" header="Beds">\n'
        "Three raised beds.\n"
        '<subsection id="north" header="North bed">\n'
        "Kale and chard.\n"
        "</subsection>\n"
        "</section>"
    )
    # the index still lists every section; the states name the outermost collapsed ancestor
    assert '<entry id="lime" level="3" header="Liming"/>' in text
    assert '<section id="ph" state="expanded" default="expanded" hidden_by="soil"/>' in text
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="soil"/>' in text
    d.collapse_section("garden", "ph")
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="soil"/>' in rendered(revised)
    d.expand_section("garden", "soil")
    text = rendered(revised)
    assert '<subsection id="ph" header="pH" state="collapsed" chars="11" subsections="1"/>' in text
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="ph"/>' in text
    assert "Lime every third autumn." not in text


def test_revised_pinned_section_is_always_expanded_and_cannot_be_collapsed(revised: Session) -> None:
    d = garden(revised)
    d.set_section_default("garden", "beds", False)
    assert '<section id="beds" header="Beds" state="collapsed"' in rendered(revised)
    d.pin_section("garden", "beds")
    text = rendered(revised)
    assert '<section id="beds" state="pinned" default="collapsed"/>' in text
    assert "Three raised beds." in text
    before = revised.store.hgetall(KEY)
    with pytest.raises(ValueError, match="^section 'beds' of document 'garden' is pinned; unpin it before collapsing$"):
        d.collapse_section("garden", "beds")
    assert revised.store.hgetall(KEY) == before
    d.expand_section("garden", "beds")  # allowed; remembered for after unpinning
    d.unpin_section("garden", "beds")
    assert '<section id="beds" state="expanded" default="collapsed"/>' in rendered(revised)
    d.reset_section_states("garden")
    assert '<section id="beds" state="collapsed" default="collapsed"/>' in rendered(revised)


def test_revised_default_applies_until_a_choice_is_made(revised: Session) -> None:
    d = garden(revised)
    d.set_section_default("garden", "north", False)
    assert '<section id="north" state="collapsed" default="collapsed"/>' in rendered(revised)
    d.expand_section("garden", "north")
    d.set_section_default("garden", "north", False)
    assert '<section id="north" state="expanded" default="collapsed"/>' in rendered(revised)


def test_disabled_and_archived_documents_are_left_out(session: Session) -> None:
    d = garden(session)
    d.disable_document("garden")
    assert session.compose()["post_history_items"] == []
    d.archive_document("garden")
    d.enable_document("garden")
    assert session.compose()["post_history_items"] == []  # archived wins over enabled
    d.unarchive_document("garden")
    assert rendered(session).startswith(
        BANNER + '\n<mira:domain_knowledge>\n<personal_docs>\n<domaindoc label="garden">\n'
    )
    assert d.documents() == [
        {"label": "garden", "title": "Garden notes", "enabled": True, "archived": False, "sections": 5}
    ]


def test_revised_reorder_sections_among_siblings(revised: Session) -> None:
    d = garden(revised)
    d.add_section("garden", "south", "South bed", "Beans.", parent="beds")
    d.add_section("garden", "tools", "Tools", "Spade.")
    d.reorder_sections("garden", ["tools", "beds", "soil"])
    d.reorder_sections("garden", ["south", "north"], parent="beds")
    text = rendered(revised)
    assert [line for line in text.splitlines() if line.startswith("<entry")] == [
        '<entry id="tools" level="1" header="Tools"/>',
        '<entry id="beds" level="1" header="Beds">Bed layout</entry>',
        '<entry id="south" level="2" header="South bed"/>',
        '<entry id="north" level="2" header="North bed"/>',
        '<entry id="soil" level="1" header="Soil">Soil type and pH</entry>',
        '<entry id="ph" level="2" header="pH">Acidity</entry>',
        '<entry id="lime" level="3" header="Liming"/>',
    ]
    # a section added afterwards goes last among its siblings
    d.add_section("garden", "east", "East bed", "Leeks.", parent="beds")
    assert [
        line.split('"')[1]
        for line in rendered(revised).splitlines()
        if line.startswith('<entry id="') and 'level="2"' in line
    ] == ["south", "north", "east", "ph"]


def test_revised_update_and_delete_sections(revised: Session) -> None:
    d = garden(revised)
    d.update_section("garden", "north", body="Kale only.", header="North", summary="Brassicas")
    text = rendered(revised)
    assert '<entry id="north" level="2" header="North">Brassicas</entry>' in text
    assert '<subsection id="north" header="North">\nKale only.\n</subsection>' in text
    d.delete_section("garden", "soil")  # takes ph and lime with it
    assert [s["id"] for s in d.document("garden")["sections"]] == ["beds", "north"]
    d.delete_document("garden")
    assert revised.compose()["post_history_items"] == []
    assert revised.store.hgetall(KEY) == {}


def test_deleting_a_section_keeps_top_level_sections_when_a_child_has_no_id(session: Session) -> None:
    # a hand-edited child without an id once put None among the doomed ids, and every top-level
    # section (parent None) went with it
    def sec(section_id: str, parent: str | None) -> dict[str, Any]:
        return {
            "id": section_id,
            "parent": parent,
            "header": section_id.upper(),
            "body": "text",
            "summary": "",
            "order": 0,
            "expanded_by_default": True,
            "expanded": None,
            "pinned": False,
        }

    session.store.hset(
        KEY,
        "hand",
        {
            "title": "Hand edited",
            "description": "",
            "enabled": True,
            "archived": False,
            "position": 1,
            "sections": [
                sec("a", None),
                sec("a1", "a"),
                sec("b", None),
                {"parent": "a", "header": "No id", "body": "text"},
                {"id": ["odd"], "parent": "b", "header": "Odd", "body": ""},
            ],
        },
    )
    docs_of(session).delete_section("hand", "a")
    assert [(r.get("id"), r.get("parent")) for r in session.store.hget(KEY, "hand")["sections"]] == [
        ("b", None),
        (["odd"], "b"),
    ]


# -- large sections


def test_revised_large_flag_is_for_leaves_over_5000_characters(revised: Session) -> None:
    d = docs_of(revised)
    d.create_document("big", "Big")
    d.add_section("big", "exact", "Exact", "a" * 5000)
    d.add_section("big", "over", "Over", "b" * 5001)
    d.add_section("big", "parent", "Parent", "c" * 5001)
    d.add_section("big", "child", "Child", "small", parent="parent")
    states = rendered(revised).split("<section_states>\n", 1)[1].split("\n</section_states>", 1)[0]
    assert states == (
        '<section id="exact" state="expanded" default="expanded"/>\n'
        '<section id="over" state="expanded" default="expanded" size="large"/>\n'
        '<section id="parent" state="expanded" default="expanded"/>\n'
        '<section id="child" state="expanded" default="expanded"/>'
    )
    d.collapse_section("big", "over")  # still large when collapsed
    assert '<section id="over" state="collapsed" default="expanded" size="large"/>' in rendered(revised)


def test_revised_every_compose_shows_the_stored_documents_as_they_are_now(revised: Session) -> None:
    """Changes that bypass the feed methods (the store written directly, the threshold trait)
    show at the next compose like any other."""
    d = docs_of(revised)
    d.create_document("notes", "Notes")
    d.add_section("notes", "s", "S", "x" * 20)
    assert 'title="Notes"' in rendered(revised)
    record = revised.store.hget(KEY, "notes")
    record["title"] = "Renamed"
    revised.store.hset(KEY, "notes", record)
    assert 'title="Renamed"' in rendered(revised)
    assert 'size="large"' not in rendered(revised)
    d.large_section_chars = 10
    assert '<section id="s" state="expanded" default="expanded" size="large"/>' in rendered(revised)
    revised.store.hdel(KEY, "notes")
    assert rendered(revised) == ""


# -- problems in stored data


def test_revised_orphaned_too_deep_and_duplicate_sections_are_reported(revised: Session) -> None:
    def sec(section_id: str, parent: str | None, order: int = 0) -> dict[str, Any]:
        return {
            "id": section_id,
            "parent": parent,
            "header": section_id.upper(),
            "body": "text",
            "summary": "",
            "order": order,
            "expanded_by_default": True,
            "expanded": None,
            "pinned": False,
        }

    revised.store.hset(
        KEY,
        "hand",
        {
            "title": "Hand edited",
            "description": "",
            "enabled": True,
            "archived": False,
            "position": 1,
            "sections": [
                sec("a", None),
                sec("b", "a"),
                sec("c", "b"),
                sec("d", "c"),
                sec("e", "d"),
                sec("lost", "nowhere"),
                sec("under-lost", "lost"),
                sec("a", None),
                "not a section",
                sec("loop1", "loop2"),
                sec("loop2", "loop1"),
            ],
        },
    )
    text = rendered(revised)
    assert text.split("<problems>\n", 1)[1].split("\n</problems>", 1)[0] == (
        '<problem section="a">duplicate section id; this copy is not shown</problem>\n'
        '<problem section="#9">malformed section record; not shown</problem>\n'
        '<problem section="d">too deep (level 4; at most 3); not shown</problem>\n'
        "<problem section=\"e\">under section 'd', which is not shown; not shown</problem>\n"
        "<problem section=\"lost\">orphaned: parent 'nowhere' does not exist; not shown</problem>\n"
        "<problem section=\"under-lost\">under section 'lost', which is not shown; not shown</problem>\n"
        "<problem section=\"loop1\">under section 'loop2', which is not shown; not shown</problem>\n"
        "<problem section=\"loop2\">under section 'loop1', which is not shown; not shown</problem>"
    )
    assert content_block(text) == (
        '<section id="a" header="A">\ntext\n<subsection id="b" header="B">\ntext\n'
        '<subsubsection id="c" header="C">\ntext\n</subsubsection>\n</subsection>\n</section>'
    )
    d = docs_of(revised)
    assert d.problems()[:3] == [
        "hand: section 'a': duplicate section id; this copy is not shown",
        "hand: section '#9': malformed section record; not shown",
        "hand: section 'd': too deep (level 4; at most 3); not shown",
    ]
    assert len(d.problems()) == 8
    # problems() covers documents that are not shown, too
    d.disable_document("hand")
    assert len(d.problems()) == 8
    # the API refuses to build on a broken chain
    with pytest.raises(ValueError, match="^section 'lost' is not attached to the document"):
        d.add_section("hand", "new", "New", parent="lost")


def test_revised_malformed_document_records_are_reported(revised: Session) -> None:
    revised.store.hset(KEY, "broken", ["not", "a", "document"])
    revised.store.hset(KEY, "flat", {"title": "Flat", "sections": "oops"})
    assert docs_of(revised).problems() == [
        "broken: the document record is malformed; not shown",
        "flat: section '*': the sections are not a list; none shown",
    ]
    assert rendered(revised) == (
        '<domain_knowledge>\n<domaindoc label="flat" title="Flat">\n<problems>\n'
        '<problem section="*">the sections are not a list; none shown</problem>\n</problems>\n'
        "</domaindoc>\n</domain_knowledge>"
    )
    with pytest.raises(ValueError, match="^document 'broken' is malformed in the store$"):
        docs_of(revised).pin_section("broken", "x")


def test_revised_clean_documents_have_no_problems(revised: Session) -> None:
    garden(revised)
    assert docs_of(revised).problems() == []
    assert "<problems>" not in rendered(revised)


# -- persistence


def test_documents_survive_a_restart_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "wm.db"
    first = make_session(SQLiteStore(path), style="revised")
    d = garden(first)
    d.create_document("alpha", "Created second")  # creation order, not label order
    d.collapse_section("garden", "ph")
    d.pin_section("garden", "north")
    before = rendered(first)
    first.store.close()

    second = make_session(SQLiteStore(path), style="revised")
    after = rendered(second)
    assert after == before
    assert after.index('label="garden"') < after.index('label="alpha"')
    assert '<section id="north" state="pinned" default="expanded"/>' in after


# -- escaping

HOSTILE = "x\"/><evil a='1'> & </domaindoc></domain_knowledge>\n\ttab &amp; <!-- -->"


def test_revised_hostile_values_round_trip_through_an_xml_parser(revised: Session) -> None:
    d = docs_of(revised)
    label, title, desc = "l" + HOSTILE, "t" + HOSTILE, "d" + HOSTILE
    sid, header, body, summary = "s" + HOSTILE, "h" + HOSTILE, "b" + HOSTILE, "m" + HOSTILE
    d.create_document(label, title, desc)
    d.add_section(label, sid, header, body, summary=summary)
    d.add_section(label, "leaf", "Leaf", "body", parent=sid)
    d.collapse_section(label, sid)
    root = ET.fromstring(rendered(revised))
    doc = root.find("domaindoc")
    assert doc is not None
    assert (doc.get("label"), doc.get("title")) == (label, title)
    assert doc.findtext("description") == desc
    assert [s.get("id") for s in doc.iter("section") if s.get("hidden_by")] == ["leaf"]
    assert [s.get("hidden_by") for s in doc.iter("section") if s.get("hidden_by")] == [sid]
    entry = doc.find("index/entry")
    assert entry is not None
    assert (entry.get("id"), entry.get("header"), entry.text) == (sid, header, summary)
    stub = doc.find("content/section")
    assert stub is not None and (stub.get("id"), stub.get("header")) == (sid, header)
    d.expand_section(label, sid)
    section = ET.fromstring(rendered(revised)).find("domaindoc/content/section")
    assert section is not None
    assert section.text == "\n" + body + "\n"  # the body sits on its own lines


def test_revised_problem_reports_escape_stored_values(revised: Session) -> None:
    revised.store.hset(
        KEY, "hand", {"title": "T", "sections": [{"id": HOSTILE, "parent": HOSTILE + "!", "header": "h", "body": ""}]}
    )
    problem = ET.fromstring(rendered(revised)).find("domaindoc/problems/problem")
    assert problem is not None
    assert problem.get("section") == HOSTILE
    assert problem.text == f"orphaned: parent {HOSTILE + '!'!r} does not exist; not shown"


# -- bad input

BAD_CALLS: list[tuple[Callable[[DomaindocTrinket], Any], type[Exception], str]] = [
    (lambda d: d.create_document("garden", "Again"), ValueError, "^document 'garden' already exists$"),
    (lambda d: d.create_document("new", "  "), ValueError, "^document title must not be empty$"),
    (lambda d: d.create_document("", "T"), ValueError, "^document label must not be empty$"),
    (lambda d: d.create_document("new", None), TypeError, "^document title must be a str, got NoneType$"),
    (lambda d: d.create_document("new", "T", enabled="yes"), TypeError, "^enabled must be a bool"),
    (lambda d: d.add_section("nope", "s", "S"), ValueError, r"^unknown document 'nope' \(documents: 'garden'\)$"),
    (
        lambda d: d.add_section("garden", "soil", "Soil again"),
        ValueError,
        "^section 'soil' already exists in document 'garden'$",
    ),
    (
        lambda d: d.add_section("garden", "deep", "Deep", parent="lime"),
        ValueError,
        "^section 'deep' would be level 4: sections nest at most 3 levels deep$",
    ),
    (
        lambda d: d.add_section("garden", "s", "S", parent="ghost"),
        ValueError,
        "^unknown section 'ghost' in document 'garden'$",
    ),
    (lambda d: d.add_section("garden", "s", ""), ValueError, "^section header must not be empty$"),
    (lambda d: d.add_section("garden", "s", "S", 42), TypeError, "^section body must be a str"),
    (lambda d: d.expand_section("garden", "ghost"), ValueError, "^unknown section 'ghost'"),
    (lambda d: d.pin_section("nope", "soil"), ValueError, "^unknown document 'nope'"),
    (lambda d: d.set_section_default("garden", "soil", 1), TypeError, "^expanded must be a bool"),
    (lambda d: d.update_section("garden", "soil"), ValueError, "^nothing to update"),
    (lambda d: d.update_section("garden", "soil", header=""), ValueError, "^section header must not be empty$"),
    (lambda d: d.update_document("garden", title=""), ValueError, "^document title must not be empty$"),
    (
        lambda d: d.reorder_sections("garden", ["soil"]),
        ValueError,
        "^order must name each section under the top level exactly once: 'beds', 'soil'$",
    ),
    (lambda d: d.reorder_sections("garden", ["soil", "soil", "beds"]), ValueError, "^order must name"),
    (lambda d: d.reorder_sections("garden", "soil"), TypeError, "^order must be a list"),
    (lambda d: d.reorder_sections("garden", ["north"], parent="ghost"), ValueError, "^unknown section 'ghost'"),
    (lambda d: d.delete_section("garden", "ghost"), ValueError, "^unknown section 'ghost'"),
    (lambda d: d.delete_document("ghost"), ValueError, "^unknown document 'ghost'"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    session: Session, call: Callable[[DomaindocTrinket], Any], error: type[Exception], message: str
) -> None:
    d = garden(session)
    before = session.store.hgetall(KEY)
    text = rendered(session)
    with pytest.raises(error, match=message):
        call(d)
    assert session.store.hgetall(KEY) == before
    assert rendered(session) == text


def test_feed_calls_are_published_as_events(session: Session) -> None:
    heard: list[tuple[str, str]] = []
    session.bus.subscribe(TrinketFedEvent, lambda e: heard.append((e.trinket_name, e.method)))
    garden(session)
    assert heard[:2] == [("DomaindocTrinket", "create_document"), ("DomaindocTrinket", "add_section")]


# -- escaping, original style


def test_hostile_values_round_trip_through_an_xml_parser(session: Session) -> None:
    d = docs_of(session)
    label, desc = "l" + HOSTILE, "d" + HOSTILE
    header, body, summary = "h" + HOSTILE, "b" + HOSTILE, "m" + HOSTILE
    d.create_document(label, "Title", desc)
    d.add_section(label, "top", header, body, summary=summary)
    d.add_section(label, "leaf", "Leaf " + HOSTILE, "body", parent="top", summary="s")
    root = parse_original(rendered(session))
    doc = root.find("mira:domain_knowledge/personal_docs/domaindoc", NS)
    assert doc is not None and doc.get("label") == label
    assert doc.findtext("guidance/purpose") == desc
    entries = doc.findall("guidance/section_management/section_index/entry")
    assert [(e.get("section"), e.get("parent"), e.text) for e in entries] == [
        (header, None, summary),
        ("Leaf " + HOSTILE, header, "s"),
    ]
    state = doc.find("guidance/section_management/section_states/section")
    assert state is not None and state.get("header") == header
    section = doc.find("document/section")
    assert section is not None and section.get("header") == header
    assert section.text == "\n" + body + "\n"  # the body sits on its own lines
    d.collapse_section(label, "top")
    stub = parse_original(rendered(session)).find("mira:domain_knowledge/personal_docs/domaindoc/document/section", NS)
    assert stub is not None and (stub.get("header"), stub.get("state")) == (header, "collapsed")


# -- properties on random documents (both styles)

NS = {"mira": "urn:mira"}


def parse_original(text: str) -> ET.Element:
    """The original style's section as XML: the banner rules are text around the elements, and the
    ``mira:`` prefix gets a namespace so a parser accepts it."""
    return ET.fromstring(f'<r xmlns:mira="{NS["mira"]}">{text}</r>')


BENIGN = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>&\"'"), max_size=12)
# anything XML 1.0 can carry, markup characters and line breaks included
ANY_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\t\n\r"), max_size=12
) | st.sampled_from(["</document>", "\"/><x a='1'>", "&amp;", " \n "])

SECTIONS = st.lists(
    st.tuples(st.integers(0, 30), st.booleans(), st.sampled_from(["", "c", "e", "p"])), min_size=1, max_size=9
)


@st.composite
def documents(draw: st.DrawFn, text: st.SearchStrategy[str]) -> list[dict[str, Any]]:
    """A few documents, each a list of sections {id, parent, header, body, summary, default, act}
    with parents drawn among the earlier sections of at most level 2."""
    labels = draw(st.lists(text.filter(str.strip), min_size=1, max_size=3, unique=True))
    docs = []
    for label in labels:
        sections: list[dict[str, Any]] = []
        for pick, default, act in draw(SECTIONS):
            parents = [s for s in sections if s["level"] < 3]
            parent = parents[pick % (len(parents) + 1) - 1] if pick % (len(parents) + 1) else None
            sections.append(
                {
                    "id": f"s{len(sections)}",
                    "parent": parent and parent["id"],
                    "level": parent["level"] + 1 if parent else 1,
                    "header": draw(text.filter(str.strip)),
                    "body": draw(text),
                    "summary": draw(text),
                    "default": default,
                    "act": act,
                }
            )
        docs.append({"label": label, "description": draw(text), "sections": sections})
    return docs


def build(style: str, docs: list[dict[str, Any]]) -> Session:
    s = make_session(style=style)
    d = docs_of(s)
    for doc in docs:
        d.create_document(doc["label"], "Title", doc["description"])
        for sec in doc["sections"]:
            d.add_section(
                doc["label"],
                sec["id"],
                sec["header"],
                sec["body"],
                parent=sec["parent"],
                summary=sec["summary"],
                expanded_by_default=sec["default"],
            )
        for sec in doc["sections"]:
            if sec["act"] == "c":
                d.collapse_section(doc["label"], sec["id"])
            elif sec["act"] == "e":
                d.expand_section(doc["label"], sec["id"])
            elif sec["act"] == "p":
                d.pin_section(doc["label"], sec["id"])
    return s


def expected_walk(sections: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bool, list[str]]]:
    """Every section depth first (siblings in creation order) with whether a collapsed ancestor
    hides it and its ancestors' headers (nearest first): worked out here, not by the trinket."""

    def collapsed(sec: dict[str, Any]) -> bool:
        if sec["act"] == "p":
            return False
        return sec["act"] == "c" or (sec["act"] != "e" and not sec["default"])

    out: list[tuple[dict[str, Any], bool, list[str]]] = []

    def visit(parent: str | None, hidden: bool, above: list[str]) -> None:
        for sec in sections:
            if sec["parent"] == parent:
                out.append((sec, hidden, above))
                visit(sec["id"], hidden or collapsed(sec), [sec["header"], *above])

    visit(None, False, [])
    return out


def expand_flags(sections: list[dict[str, Any]]) -> dict[str, bool]:
    return {
        sec["id"]: bool(sec["act"] == "p" or sec["act"] == "e" or (sec["act"] != "c" and sec["default"]))
        for sec in sections
    }


def check_original(text: str, docs: list[dict[str, Any]]) -> None:
    root = parse_original(text)
    shown = sorted((d for d in docs if d["sections"]), key=lambda d: str(d["label"]))
    elements = root.findall("mira:domain_knowledge/personal_docs/domaindoc", NS)
    assert [e.get("label") for e in elements] == [d["label"] for d in shown]
    for doc, element in zip(shown, elements, strict=True):
        walk = expected_walk(doc["sections"])
        expanded = expand_flags(doc["sections"])
        assert element.findtext("guidance/purpose") == doc["description"]
        management = element.find("guidance/section_management")
        assert management is not None
        states = [
            e.get("header")
            for e in management.find("section_states").iter()  # type: ignore[union-attr]
            if e.get("header") is not None
        ]
        assert states == [sec["header"] for sec, hidden, _ in walk if not hidden]
        entries = [
            (e.get("section"), e.get("parent"), e.get("grandparent"), e.text)
            for e in management.findall("section_index/entry")
        ]
        assert entries == [
            (sec["header"], *(above + [None, None])[:2], sec["summary"]) for sec, _, above in walk if sec["summary"]
        ]
        shown_sections = [
            e
            for e in element.find("document").iter()  # type: ignore[union-attr]
            if e.get("header") is not None
        ]
        visible = [sec for sec, hidden, _ in walk if not hidden]
        assert [e.get("header") for e in shown_sections] == [sec["header"] for sec in visible]
        for e, sec in zip(shown_sections, visible, strict=True):
            if not expanded[sec["id"]]:
                assert e.get("state") == "collapsed" and e.text is None
            elif sec["body"].strip():
                assert e.text == "\n" + sec["body"] + "\n"


def check_revised(text: str, docs: list[dict[str, Any]]) -> None:
    root = ET.fromstring(text)
    elements = root.findall("domaindoc")
    assert [e.get("label") for e in elements] == [d["label"] for d in docs]  # creation order
    for doc, element in zip(docs, elements, strict=True):
        walk = expected_walk(doc["sections"])
        assert [e.get("id") for e in element.findall("section_states/section")] == [sec["id"] for sec, _, _ in walk]
        assert [(e.get("header"), e.text or "") for e in element.findall("index/entry")] == [
            (sec["header"], sec["summary"]) for sec, _, _ in walk
        ]
        content = [
            e.get("header")
            for e in element.find("content").iter()  # type: ignore[union-attr]
            if e.get("header") is not None
        ]
        assert content == [sec["header"] for sec, hidden, _ in walk if not hidden]


@pytest.mark.parametrize("style, check", [("original", check_original), ("revised", check_revised)])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents(BENIGN))
def test_random_benign_documents_parse_and_keep_their_order(
    style: str, check: Callable[[str, list[dict[str, Any]]], None], docs: list[dict[str, Any]]
) -> None:
    check(rendered(build(style, docs)), docs)


@pytest.mark.parametrize("style, check", [("original", check_original), ("revised", check_revised)])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents(ANY_TEXT))
def test_random_hostile_text_round_trips(
    style: str, check: Callable[[str, list[dict[str, Any]]], None], docs: list[dict[str, Any]]
) -> None:
    check(rendered(build(style, docs)), docs)
