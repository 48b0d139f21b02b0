"""DomaindocTrinket: exact markup, visibility rules, large flag, problems, persistence, escaping,
bad input."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable

import pytest

from trinkets.domaindoc_trinket import DomaindocTrinket
from wm_kernel.clock import ManualClock
from wm_kernel.events import TrinketFedEvent
from wm_kernel.session import Session
from wm_kernel.store import SQLiteStore, StateStore

KEY = "domaindocs:notebook"


def make_session(store: StateStore | None = None) -> Session:
    return Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"),
                   store=store, trinkets=[DomaindocTrinket])


@pytest.fixture
def session() -> Session:
    return make_session()


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


# -- exact text

def test_exact_markup_for_a_representative_document(session: Session) -> None:
    d = garden(session)
    d.add_section("garden", "pests", "Pests", "Slugs in May.", expanded_by_default=False)
    d.collapse_section("garden", "ph")
    d.pin_section("garden", "beds")
    d.create_document("recipes", "Recipes")
    d.add_section("recipes", "soup", "Soup", "Kale soup: kale, stock, garlic.")
    d.create_document("old", "Old plans")
    d.add_section("old", "x", "X", "gone")
    d.archive_document("old")
    d.create_document("off", "Switched off", enabled=False)

    composed = session.compose()
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
        "</domain_knowledge>"]
    # cached, post-history: nothing of it in the system prompt or the HUD
    assert "domain_knowledge" not in composed["cached_content"] + composed["notification_center"]
    assert DomaindocTrinket.cache_policy is True
    assert session.layout.placement_of("domaindoc") == "post_history"


def test_three_levels_render_with_their_own_tags(session: Session) -> None:
    garden(session)
    assert content_block(rendered(session)) == (
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
        "</section>")


def test_a_document_without_sections_shows_its_header_only(session: Session) -> None:
    docs_of(session).create_document("empty", "Empty doc")
    assert rendered(session) == ('<domain_knowledge>\n<domaindoc label="empty" title="Empty doc">\n'
                                 "</domaindoc>\n</domain_knowledge>")


def test_no_documents_no_section(session: Session) -> None:
    composed = session.compose()
    assert composed["post_history_items"] == []
    assert docs_of(session).content == ""


# -- visibility

def test_collapsed_parent_hides_all_descendants_even_pinned_ones(session: Session) -> None:
    d = garden(session)
    d.pin_section("garden", "lime")
    d.collapse_section("garden", "soil")
    text = rendered(session)
    assert content_block(text) == (
        '<section id="soil" header="Soil" state="collapsed" chars="15" subsections="1"/>\n'
        '<section id="beds" header="Beds">\n'
        "Three raised beds.\n"
        '<subsection id="north" header="North bed">\n'
        "Kale and chard.\n"
        "</subsection>\n"
        "</section>")
    # the index still lists every section; the states name the outermost collapsed ancestor
    assert '<entry id="lime" level="3" header="Liming"/>' in text
    assert '<section id="ph" state="expanded" default="expanded" hidden_by="soil"/>' in text
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="soil"/>' in text
    d.collapse_section("garden", "ph")
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="soil"/>' in rendered(session)
    d.expand_section("garden", "soil")
    text = rendered(session)
    assert '<subsection id="ph" header="pH" state="collapsed" chars="11" subsections="1"/>' in text
    assert '<section id="lime" state="pinned" default="expanded" hidden_by="ph"/>' in text
    assert "Lime every third autumn." not in text


def test_pinned_section_is_always_expanded_and_cannot_be_collapsed(session: Session) -> None:
    d = garden(session)
    d.set_section_default("garden", "beds", False)
    assert '<section id="beds" header="Beds" state="collapsed"' in rendered(session)
    d.pin_section("garden", "beds")
    text = rendered(session)
    assert '<section id="beds" state="pinned" default="collapsed"/>' in text
    assert "Three raised beds." in text
    before = session.store.hgetall(KEY)
    with pytest.raises(ValueError, match="^section 'beds' of document 'garden' is pinned; unpin it "
                                         "before collapsing$"):
        d.collapse_section("garden", "beds")
    assert session.store.hgetall(KEY) == before
    d.expand_section("garden", "beds")  # allowed; remembered for after unpinning
    d.unpin_section("garden", "beds")
    assert '<section id="beds" state="expanded" default="collapsed"/>' in rendered(session)
    d.reset_section_states("garden")
    assert '<section id="beds" state="collapsed" default="collapsed"/>' in rendered(session)


def test_default_applies_until_a_choice_is_made(session: Session) -> None:
    d = garden(session)
    d.set_section_default("garden", "north", False)
    assert '<section id="north" state="collapsed" default="collapsed"/>' in rendered(session)
    d.expand_section("garden", "north")
    d.set_section_default("garden", "north", False)
    assert '<section id="north" state="expanded" default="collapsed"/>' in rendered(session)


def test_disabled_and_archived_documents_are_left_out(session: Session) -> None:
    d = garden(session)
    d.disable_document("garden")
    assert session.compose()["post_history_items"] == []
    d.archive_document("garden")
    d.enable_document("garden")
    assert session.compose()["post_history_items"] == []  # archived wins over enabled
    d.unarchive_document("garden")
    assert rendered(session).startswith('<domain_knowledge>\n<domaindoc label="garden"')
    assert d.documents() == [{"label": "garden", "title": "Garden notes", "enabled": True,
                              "archived": False, "sections": 5}]


def test_reorder_sections_among_siblings(session: Session) -> None:
    d = garden(session)
    d.add_section("garden", "south", "South bed", "Beans.", parent="beds")
    d.add_section("garden", "tools", "Tools", "Spade.")
    d.reorder_sections("garden", ["tools", "beds", "soil"])
    d.reorder_sections("garden", ["south", "north"], parent="beds")
    text = rendered(session)
    assert [line for line in text.splitlines() if line.startswith("<entry")] == [
        '<entry id="tools" level="1" header="Tools"/>',
        '<entry id="beds" level="1" header="Beds">Bed layout</entry>',
        '<entry id="south" level="2" header="South bed"/>',
        '<entry id="north" level="2" header="North bed"/>',
        '<entry id="soil" level="1" header="Soil">Soil type and pH</entry>',
        '<entry id="ph" level="2" header="pH">Acidity</entry>',
        '<entry id="lime" level="3" header="Liming"/>']
    # a section added afterwards goes last among its siblings
    d.add_section("garden", "east", "East bed", "Leeks.", parent="beds")
    assert [line.split('"')[1] for line in rendered(session).splitlines()
            if line.startswith('<entry id="') and 'level="2"' in line] == ["south", "north", "east", "ph"]


def test_update_and_delete_sections(session: Session) -> None:
    d = garden(session)
    d.update_section("garden", "north", body="Kale only.", header="North", summary="Brassicas")
    text = rendered(session)
    assert '<entry id="north" level="2" header="North">Brassicas</entry>' in text
    assert '<subsection id="north" header="North">\nKale only.\n</subsection>' in text
    d.delete_section("garden", "soil")  # takes ph and lime with it
    assert [s["id"] for s in d.document("garden")["sections"]] == ["beds", "north"]
    d.delete_document("garden")
    assert session.compose()["post_history_items"] == []
    assert session.store.hgetall(KEY) == {}


def test_deleting_a_section_keeps_top_level_sections_when_a_child_has_no_id(
        session: Session) -> None:
    # a hand-edited child without an id once put None among the doomed ids, and every top-level
    # section (parent None) went with it
    def sec(section_id: str, parent: str | None) -> dict[str, Any]:
        return {"id": section_id, "parent": parent, "header": section_id.upper(), "body": "text",
                "summary": "", "order": 0, "expanded_by_default": True, "expanded": None,
                "pinned": False}

    session.store.hset(KEY, "hand", {
        "title": "Hand edited", "description": "", "enabled": True, "archived": False,
        "position": 1, "sections": [sec("a", None), sec("a1", "a"), sec("b", None),
                                    {"parent": "a", "header": "No id", "body": "text"},
                                    {"id": ["odd"], "parent": "b", "header": "Odd", "body": ""}]})
    docs_of(session).delete_section("hand", "a")
    assert [(r.get("id"), r.get("parent")) for r in session.store.hget(KEY, "hand")["sections"]] == [
        ("b", None), (["odd"], "b")]


# -- large sections

def test_large_flag_is_for_leaves_over_5000_characters(session: Session) -> None:
    d = docs_of(session)
    d.create_document("big", "Big")
    d.add_section("big", "exact", "Exact", "a" * 5000)
    d.add_section("big", "over", "Over", "b" * 5001)
    d.add_section("big", "parent", "Parent", "c" * 5001)
    d.add_section("big", "child", "Child", "small", parent="parent")
    states = rendered(session).split("<section_states>\n", 1)[1].split("\n</section_states>", 1)[0]
    assert states == ('<section id="exact" state="expanded" default="expanded"/>\n'
                      '<section id="over" state="expanded" default="expanded" size="large"/>\n'
                      '<section id="parent" state="expanded" default="expanded"/>\n'
                      '<section id="child" state="expanded" default="expanded"/>')
    d.collapse_section("big", "over")  # still large when collapsed
    assert ('<section id="over" state="collapsed" default="expanded" size="large"/>'
            in rendered(session))


def test_every_compose_shows_the_stored_documents_as_they_are_now(session: Session) -> None:
    """Changes that bypass the feed methods (the store written directly, the threshold trait)
    show at the next compose like any other."""
    d = docs_of(session)
    d.create_document("notes", "Notes")
    d.add_section("notes", "s", "S", "x" * 20)
    assert 'title="Notes"' in rendered(session)
    record = session.store.hget(KEY, "notes")
    record["title"] = "Renamed"
    session.store.hset(KEY, "notes", record)
    assert 'title="Renamed"' in rendered(session)
    assert 'size="large"' not in rendered(session)
    d.large_section_chars = 10
    assert '<section id="s" state="expanded" default="expanded" size="large"/>' in rendered(session)
    session.store.hdel(KEY, "notes")
    assert rendered(session) == ""


# -- problems in stored data

def test_orphaned_too_deep_and_duplicate_sections_are_reported(session: Session) -> None:
    def sec(section_id: str, parent: str | None, order: int = 0) -> dict[str, Any]:
        return {"id": section_id, "parent": parent, "header": section_id.upper(), "body": "text",
                "summary": "", "order": order, "expanded_by_default": True, "expanded": None,
                "pinned": False}

    session.store.hset(KEY, "hand", {
        "title": "Hand edited", "description": "", "enabled": True, "archived": False,
        "position": 1, "sections": [
            sec("a", None), sec("b", "a"), sec("c", "b"), sec("d", "c"), sec("e", "d"),
            sec("lost", "nowhere"), sec("under-lost", "lost"), sec("a", None),
            "not a section", sec("loop1", "loop2"), sec("loop2", "loop1")]})
    text = rendered(session)
    assert text.split("<problems>\n", 1)[1].split("\n</problems>", 1)[0] == (
        '<problem section="a">duplicate section id; this copy is not shown</problem>\n'
        '<problem section="#9">malformed section record; not shown</problem>\n'
        '<problem section="d">too deep (level 4; at most 3); not shown</problem>\n'
        "<problem section=\"e\">under section 'd', which is not shown; not shown</problem>\n"
        "<problem section=\"lost\">orphaned: parent 'nowhere' does not exist; not shown</problem>\n"
        "<problem section=\"under-lost\">under section 'lost', which is not shown; not shown</problem>\n"
        "<problem section=\"loop1\">under section 'loop2', which is not shown; not shown</problem>\n"
        "<problem section=\"loop2\">under section 'loop1', which is not shown; not shown</problem>")
    assert content_block(text) == (
        '<section id="a" header="A">\ntext\n<subsection id="b" header="B">\ntext\n'
        '<subsubsection id="c" header="C">\ntext\n</subsubsection>\n</subsection>\n</section>')
    d = docs_of(session)
    assert d.problems()[:3] == [
        "hand: section 'a': duplicate section id; this copy is not shown",
        "hand: section '#9': malformed section record; not shown",
        "hand: section 'd': too deep (level 4; at most 3); not shown"]
    assert len(d.problems()) == 8
    # problems() covers documents that are not shown, too
    d.disable_document("hand")
    assert len(d.problems()) == 8
    # the API refuses to build on a broken chain
    with pytest.raises(ValueError, match="^section 'lost' is not attached to the document"):
        d.add_section("hand", "new", "New", parent="lost")


def test_malformed_document_records_are_reported(session: Session) -> None:
    session.store.hset(KEY, "broken", ["not", "a", "document"])
    session.store.hset(KEY, "flat", {"title": "Flat", "sections": "oops"})
    assert docs_of(session).problems() == [
        "broken: the document record is malformed; not shown",
        "flat: section '*': the sections are not a list; none shown"]
    assert rendered(session) == (
        '<domain_knowledge>\n<domaindoc label="flat" title="Flat">\n<problems>\n'
        '<problem section="*">the sections are not a list; none shown</problem>\n</problems>\n'
        "</domaindoc>\n</domain_knowledge>")
    with pytest.raises(ValueError, match="^document 'broken' is malformed in the store$"):
        docs_of(session).pin_section("broken", "x")


def test_clean_documents_have_no_problems(session: Session) -> None:
    garden(session)
    assert docs_of(session).problems() == []
    assert "<problems>" not in rendered(session)


# -- persistence

def test_documents_survive_a_restart_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "wm.db"
    first = make_session(SQLiteStore(path))
    d = garden(first)
    d.create_document("alpha", "Created second")  # creation order, not label order
    d.collapse_section("garden", "ph")
    d.pin_section("garden", "north")
    before = rendered(first)
    first.store.close()

    second = make_session(SQLiteStore(path))
    after = rendered(second)
    assert after == before
    assert after.index('label="garden"') < after.index('label="alpha"')
    assert '<section id="north" state="pinned" default="expanded"/>' in after


# -- escaping

HOSTILE = 'x"/><evil a=\'1\'> & </domaindoc></domain_knowledge>\n\ttab &amp; <!-- -->'


def test_hostile_values_round_trip_through_an_xml_parser(session: Session) -> None:
    d = docs_of(session)
    label, title, desc = "l" + HOSTILE, "t" + HOSTILE, "d" + HOSTILE
    sid, header, body, summary = "s" + HOSTILE, "h" + HOSTILE, "b" + HOSTILE, "m" + HOSTILE
    d.create_document(label, title, desc)
    d.add_section(label, sid, header, body, summary=summary)
    d.add_section(label, "leaf", "Leaf", "body", parent=sid)
    d.collapse_section(label, sid)
    root = ET.fromstring(rendered(session))
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
    section = ET.fromstring(rendered(session)).find("domaindoc/content/section")
    assert section is not None
    assert section.text == "\n" + body + "\n"  # the body sits on its own lines


def test_problem_reports_escape_stored_values(session: Session) -> None:
    session.store.hset(KEY, "hand", {"title": "T", "sections": [
        {"id": HOSTILE, "parent": HOSTILE + "!", "header": "h", "body": ""}]})
    problem = ET.fromstring(rendered(session)).find("domaindoc/problems/problem")
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
    (lambda d: d.add_section("nope", "s", "S"), ValueError,
     r"^unknown document 'nope' \(documents: 'garden'\)$"),
    (lambda d: d.add_section("garden", "soil", "Soil again"), ValueError,
     "^section 'soil' already exists in document 'garden'$"),
    (lambda d: d.add_section("garden", "deep", "Deep", parent="lime"), ValueError,
     "^section 'deep' would be level 4: sections nest at most 3 levels deep$"),
    (lambda d: d.add_section("garden", "s", "S", parent="ghost"), ValueError,
     "^unknown section 'ghost' in document 'garden'$"),
    (lambda d: d.add_section("garden", "s", ""), ValueError, "^section header must not be empty$"),
    (lambda d: d.add_section("garden", "s", "S", 42), TypeError, "^section body must be a str"),
    (lambda d: d.expand_section("garden", "ghost"), ValueError, "^unknown section 'ghost'"),
    (lambda d: d.pin_section("nope", "soil"), ValueError, "^unknown document 'nope'"),
    (lambda d: d.set_section_default("garden", "soil", 1), TypeError, "^expanded must be a bool"),
    (lambda d: d.update_section("garden", "soil"), ValueError, "^nothing to update"),
    (lambda d: d.update_section("garden", "soil", header=""), ValueError,
     "^section header must not be empty$"),
    (lambda d: d.update_document("garden", title=""), ValueError, "^document title must not be empty$"),
    (lambda d: d.reorder_sections("garden", ["soil"]), ValueError,
     "^order must name each section under the top level exactly once: 'beds', 'soil'$"),
    (lambda d: d.reorder_sections("garden", ["soil", "soil", "beds"]), ValueError, "^order must name"),
    (lambda d: d.reorder_sections("garden", "soil"), TypeError, "^order must be a list"),
    (lambda d: d.reorder_sections("garden", ["north"], parent="ghost"), ValueError,
     "^unknown section 'ghost'"),
    (lambda d: d.delete_section("garden", "ghost"), ValueError, "^unknown section 'ghost'"),
    (lambda d: d.delete_document("ghost"), ValueError, "^unknown document 'ghost'"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_input_is_a_clear_error_and_changes_nothing(
        session: Session, call: Callable[[DomaindocTrinket], Any], error: type[Exception],
        message: str) -> None:
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
