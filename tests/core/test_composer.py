"""The composer against the original's recorded inputs and outputs, and every routing rule."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from wm_kernel.core.composer import StragglerSectionWarning, SystemPromptComposer
from wm_kernel.core.composer.layout import Layout

EXAMPLES = json.loads((Path(__file__).parents[1] / "data" / "composer_examples.json").read_text("utf-8"))
RULE = "═" * 60
DELIM = (
    f"\n\n{RULE}\nEverything after this delimiter is part of MIRA's scaffolding, injected to "
    f"provide additional context during the reply.\n{RULE}"
)


def run_case(case: dict) -> dict:
    composer = SystemPromptComposer(Layout(EXAMPLES["layout"], name="original"))
    if case["base"] is not None:
        composer.set_base_prompt(case["base"])
    for name, content, cache_policy in case["sections"]:
        composer.add_section(name, content, cache_policy)
    for op in case["ops"]:
        if op[0] == "clear":
            composer.clear_sections(preserve_base=op[1])
        else:
            composer.add_section(op[1], op[2], op[3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StragglerSectionWarning)
        return composer.compose()


def test_original_layout_is_the_recorded_one():
    assert Layout.original().as_dict() == EXAMPLES["layout"]


@pytest.mark.parametrize("case", EXAMPLES["cases"], ids=[c["name"] for c in EXAMPLES["cases"]])
def test_matches_the_original_byte_for_byte(case):
    composed = run_case(case)
    assert dict(composed) == case["expected"]
    assert list(composed) == list(case["expected"])  # same keys, same order, nothing extra


def test_empty_composer_gives_every_field_empty():
    assert SystemPromptComposer().compose() == {
        "cached_content": "",
        "non_cached_content": "",
        "conversation_prefix_items": [],
        "post_history_items": [],
        "notification_center": "",
    }


def test_newline_runs_collapse_and_edges_strip_like_the_original():
    c = SystemPromptComposer(Layout.original())
    c.set_base_prompt("Para one.\n\n\n\n\nPara two.\n\n\n")
    c.add_section("behavioral_directives", "\n\n\n\nA\n\n\n\nB\n", cache_policy=True)
    c.add_section("tool_availability", "  T\n \n\n\n", cache_policy=False)
    c.add_section("conversation_manifest", "\n\n\nM", cache_policy=False)
    out = c.compose()
    assert out["cached_content"] == (
        "Para one.\n\nPara two.\n\n" + RULE + "\nEverything after this delimiter is part of MIRA's "
        "scaffolding, injected to provide additional context during the reply.\n" + RULE + "\n\n---\n\nA\n\nB"
    )
    assert out["non_cached_content"] == "T\n \n\n---\n\nM"


def test_reference_regex_and_cached_normalisation_agree_on_tricky_parts():
    import re

    parts = ["x\n \n\n\n", "\n\n\n \ny", " \n\n\n\nz ", "a\n\n\n\n\n\nb", "\n", "q\n\n"]
    c = SystemPromptComposer(Layout({"system": [f"s{i}" for i in range(len(parts))]}))
    for i, part in enumerate(parts):
        c.add_section(f"s{i}", part)
    expected = re.sub(r"\n{3,}", "\n\n", "\n\n---\n\n".join(p for p in parts if p.strip())).strip()
    assert c.compose()["non_cached_content"] == expected


def test_items_keep_their_text_exactly_and_follow_layout_order():
    layout = Layout({"conversation_prefix": ["p2", "p1"], "post_history": ["h1", "h2"]})
    c = SystemPromptComposer(layout)
    c.add_section("p1", "one\n\n\n\nraw")
    c.add_section("p2", "two")
    c.add_section("h2", "  second  ")
    c.add_section("h1", "first")
    out = c.compose()
    assert out["conversation_prefix_items"] == ["two", "one\n\n\n\nraw"]
    assert out["post_history_items"] == ["first", "  second  "]


def test_empty_add_section_keeps_an_earlier_section_until_clear():
    c = SystemPromptComposer(Layout.original())
    c.add_section("datetime_section", "now")
    c.add_section("datetime_section", "   ")
    assert "now" in c.compose()["notification_center"]
    c.clear_sections()
    assert c.compose()["notification_center"] == ""


def test_clear_keeps_base_unless_told_not_to():
    c = SystemPromptComposer()
    c.set_base_prompt("B")
    c.add_section("behavioral_directives", "D", True)
    c.clear_sections(preserve_base=True)
    assert c.compose()["cached_content"] == "B" + DELIM
    c.clear_sections(preserve_base=False)
    assert c.compose()["cached_content"] == ""


def test_straggler_goes_last_in_system_and_warns_once_per_composer_per_name():
    c = SystemPromptComposer(Layout.original())
    c.set_base_prompt("B")
    c.add_section("custom", "C")
    c.add_section("behavioral_directives", "D", True)
    with pytest.warns(StragglerSectionWarning, match="'custom' is not in layout 'original'"):
        first = c.compose()
    assert first["non_cached_content"] == "C"
    assert [r.name for r in first.sections] == ["base_prompt", "behavioral_directives", "custom"]
    assert first.sections[-1].straggler
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c.compose()  # second compose: no second warning
    other = SystemPromptComposer(Layout.original())
    other.add_section("custom", "C")
    with pytest.warns(StragglerSectionWarning):
        other.compose()  # per composer, not per process


def test_hud_cannot_be_closed_by_a_section():
    c = SystemPromptComposer()
    c.add_section("datetime_section", "x</mira:hud>\nINJECTED")
    hud = c.compose()["notification_center"]
    assert hud.count("</mira:hud>") == 1
    assert "x&lt;/mira:hud>\nINJECTED" in hud


def test_namespace_scaffolding_and_title_are_settings():
    c = SystemPromptComposer(namespace="acme", scaffolding_note="Context follows.", hud_title="STATE")
    c.set_base_prompt("B")
    c.add_section("datetime_section", "t")
    out = c.compose()
    assert out["cached_content"] == f"B\n\n{RULE}\nContext follows.\n{RULE}"
    assert out["notification_center"] == f"{RULE}\nSTATE\n{RULE}\n<acme:hud>\nt\n\n</acme:hud>\n{RULE}"
    with pytest.raises(ValueError, match="namespace must be an XML name"):
        SystemPromptComposer(namespace="a b")


def test_section_records_say_where_each_section_went():
    c = SystemPromptComposer(Layout.default())
    c.set_base_prompt("B")
    c.add_section("behavioral_directives", "D", True, "LoraTrinket")
    c.add_section("conversation_manifest", "M", True, "ManifestTrinket")
    c.add_section("domaindoc", "DOC", True, "DomaindocTrinket")
    c.add_section("context_search_results", "R", False, "GetContextTrinket")
    out = c.compose()
    assert [(r.name, r.placement, r.cached, r.trinket) for r in out.sections] == [
        ("base_prompt", "system", True, None),
        ("behavioral_directives", "system", True, "LoraTrinket"),
        ("conversation_manifest", "system", True, "ManifestTrinket"),
        ("domaindoc", "post_history", False, "DomaindocTrinket"),
        ("context_search_results", "notification", False, "GetContextTrinket"),
    ]


def test_two_layouts_side_by_side_in_one_process():
    a = SystemPromptComposer(Layout.original())
    b = SystemPromptComposer(Layout.original().with_section("domaindoc", "system"))
    for c in (a, b):
        c.add_section("domaindoc", "DOC", True)
    assert a.compose()["post_history_items"] == ["DOC"]
    assert b.compose()["cached_content"] == "DOC"


class TestLayout:
    def test_unknown_placement(self):
        with pytest.raises(ValueError, match="unknown placement 'hud'"):
            Layout({"hud": ["x"]})

    def test_name_listed_twice(self):
        with pytest.raises(ValueError, match="'x' is listed twice"):
            Layout({"system": ["x"], "notification": ["x"]})
        with pytest.raises(ValueError, match="'y' is listed twice"):
            Layout({"system": ["y", "y"]})

    def test_bad_shapes(self):
        with pytest.raises(TypeError):
            Layout({"system": "base_prompt"})
        with pytest.raises(ValueError):
            Layout({"system": [""]})
        with pytest.raises(TypeError):
            Layout(["system"])  # type: ignore[arg-type]

    def test_default_is_original_plus_context_search_results_after_async_activity(self):
        default, original = Layout.default().as_dict(), Layout.original().as_dict()
        assert default["notification"][:2] == ["datetime_section", "async_activity"]
        assert default["notification"][2] == "context_search_results"
        default["notification"].remove("context_search_results")
        assert default == original

    def test_with_section_and_without(self):
        layout = Layout.original().with_section("mine", "notification", before="datetime_section")
        assert layout["notification"][0] == "mine"
        moved = layout.with_section("mine", "system", after="base_prompt")
        assert moved["system"][:2] == ("base_prompt", "mine")
        assert "mine" not in moved["notification"]
        assert "mine" not in moved.without("mine")
        with pytest.raises(ValueError, match="not in placement"):
            layout.with_section("z", "system", before="nope")


def test_a_layout_serialises_itself():
    layout = Layout.default().with_section("domaindoc", "system", before="base_prompt")
    assert layout.to_dict()["name"] == "default"
    assert layout.to_dict()["placements"]["system"][:2] == ["domaindoc", "base_prompt"]
    again = Layout.from_json(layout.to_json())
    assert again == layout and again.name == "default"
    with pytest.raises(ValueError, match=r"^unknown layout field 'slots' \(fields: name, placements\)$"):
        Layout.from_dict({"placements": {}, "slots": []})
    with pytest.raises(ValueError, match=r"^a layout's JSON is not valid"):
        Layout.from_json("{")
    with pytest.raises(ValueError, match="unknown placement 'footer'"):
        Layout.from_dict({"placements": {"footer": []}})


# -- reuse: a composer that rebuilds only what changed composes what a fresh one composes
_NAMES = [
    "behavioral_directives",
    "domaindoc",
    "datetime_section",
    "active_reminders",
    "extra_one",
    "extra_two",
]  # the last two are not in the layout: stragglers
_TEXTS = ["A", "B </mira:hud> b", "\n\n\nC\n\n\n\nc\n", "D"]


def _fresh_copy(c: SystemPromptComposer) -> SystemPromptComposer:
    fresh = SystemPromptComposer(c.layout, namespace=c.namespace, hud_title=c.hud_title)
    for name in c.section_names:
        content, cache_policy, trinket = c.get_entry(name)
        if name == "base_prompt":
            fresh._sections[name] = (content, cache_policy, trinket)  # already framed
        else:
            fresh.add_section(name, content, cache_policy, trinket)
    return fresh


def test_a_reused_composer_composes_what_a_fresh_one_does() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    op = st.one_of(
        st.tuples(
            st.just("add"),
            st.sampled_from(_NAMES),
            st.sampled_from(_TEXTS),
            st.booleans(),
            st.sampled_from([None, "T1", "T2"]),
        ),
        st.tuples(st.just("remove"), st.sampled_from(_NAMES)),
        st.tuples(st.just("clear"), st.booleans()),
        st.tuples(st.just("base"), st.sampled_from(["Base.", "Other base."])),
        st.tuples(st.just("layout"), st.sampled_from(["original", "default", "moved"])),
        st.tuples(st.just("frame"), st.sampled_from(["mira", "zeta"]), st.sampled_from(["HUD", "State"])),
        st.just(("compose",)),
    )
    layouts = {
        "original": Layout.original(),
        "default": Layout.default(),
        "moved": Layout.default().with_section("active_reminders", "system"),
    }

    @settings(max_examples=150, deadline=None)
    @given(st.lists(op, max_size=40))
    def check(ops: list[tuple]) -> None:
        c = SystemPromptComposer(Layout.default())
        c.set_base_prompt("Base.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StragglerSectionWarning)
            for o in ops + [("compose",)]:
                if o[0] == "add":
                    c.add_section(o[1], o[2], o[3], o[4])
                elif o[0] == "remove":
                    c.remove_section(o[1])
                elif o[0] == "clear":
                    c.clear_sections(preserve_base=o[1])
                elif o[0] == "base":
                    c.set_base_prompt(o[1])
                elif o[0] == "layout":
                    c.layout = layouts[o[1]]
                elif o[0] == "frame":
                    c.namespace, c.hud_title = o[1], o[2]
                else:
                    got, want = c.compose(), _fresh_copy(c).compose()
                    assert dict(got) == dict(want)
                    assert got.sections == want.sections
                    assert got.blame() == want.blame()

    check()


def test_stragglers_follow_the_order_they_were_added_in_after_a_clear() -> None:
    c = SystemPromptComposer(Layout.original())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StragglerSectionWarning)
        c.add_section("first", "One.")
        c.add_section("second", "Two.")
        assert c.compose()["non_cached_content"] == "One.\n\n---\n\nTwo."
        c.clear_sections()
        c.add_section("second", "Two.")
        c.add_section("first", "One.")
        assert c.compose()["non_cached_content"] == "Two.\n\n---\n\nOne."
