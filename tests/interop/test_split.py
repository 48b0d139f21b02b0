"""Deterministic sectioning: the pieces of a text, and of a logged request, join back exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_kernel.interop.bodies import cut_body
from wm_kernel.interop.jsonspan import locate, string_offsets
from wm_kernel.interop.split import SplitRule, Splitter


def labels(text: str, splitter: Splitter | None = None) -> list[tuple[str, str]]:
    return [(p.label, p.text) for p in (splitter or Splitter()).split(text)]


def test_xml_regions_and_headings_make_the_pieces() -> None:
    text = (
        'You are Kit.\n\n<rules priority="high">\n<rules>nested</rules>\n</rules>\n\n'
        "# Tone\nWarm.\n## Refunds\nRarely.\n```\n# inside a fence\n```\n<open>never closed"
    )
    assert labels(text) == [
        ("", "You are Kit.\n\n"),
        ("<rules>", '<rules priority="high">\n<rules>nested</rules>\n</rules>\n\n'),
        ("# Tone", "# Tone\nWarm.\n"),
        ("## Refunds", "## Refunds\nRarely.\n```\n# inside a fence\n```\n<open>never closed"),
    ]


def test_user_rules_label_their_pieces() -> None:
    rule = SplitRule(r"^Step (?P<n>\d+):", label="step {n}")
    assert labels("Intro\nStep 1: a\nStep 2: b", Splitter([rule], headings=False)) == [
        ("", "Intro\n"),
        ("step 1", "Step 1: a\n"),
        ("step 2", "Step 2: b"),
    ]
    assert labels("a ## b", Splitter(["##"], xml=False, headings=False)) == [("", "a "), ("##", "## b")]


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("(", "split rule '(' is not a regular expression: missing ), unterminated subpattern at position 0"),
        ("x*", "split rule 'x*' matches the empty string; it must match text"),
        ("", "a split rule needs a non-empty regular expression, got ''"),
    ],
)
def test_a_bad_rule_is_one_clear_error(pattern: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        SplitRule(pattern)
    assert str(caught.value) == message


def test_an_empty_text_is_one_empty_piece() -> None:
    assert labels("") == [("", "")]


# fragments that make tags, headings and fences likely, escapes and astral characters included
_FRAGMENTS = list('ab #\n<>/`x"\\\t') + ["<r>", "</r>", "<r a='1'>", "## ", "\n# ", "```", "é", "🚚", "\ud800"]
_TEXT = st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.lists(st.sampled_from([r"^x", r"ab", r"\d+"]), max_size=2))
def test_pieces_join_back_to_the_text(text: str, rules: list[str]) -> None:
    pieces = Splitter(rules).split(text)
    assert "".join(p.text for p in pieces) == text
    assert [p.start for p in pieces] == [0] + [p.end for p in pieces[:-1]]
    assert all(p.text == text[p.start : p.end] for p in pieces)


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.booleans())
def test_string_offsets_map_decoded_characters_to_their_escapes(text: str, ascii_only: bool) -> None:
    token = json.dumps(text, ensure_ascii=ascii_only)
    offsets = string_offsets(token)
    assert len(offsets) == len(text) + 1
    for index, char in enumerate(text):
        assert json.loads('"' + token[offsets[index] : offsets[index + 1]] + '"') == char


_BLOCK = st.fixed_dictionaries(
    {"type": st.just("text"), "text": _TEXT}, optional={"cache_control": st.just({"type": "ephemeral"})}
)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.one_of(_TEXT, st.lists(_BLOCK, min_size=1, max_size=3)),
    }
)
_BODY = st.fixed_dictionaries(
    {"model": st.just("claude-sonnet-4-6"), "messages": st.lists(_MESSAGE, max_size=3)},
    optional={
        "system": st.one_of(_TEXT, st.lists(_BLOCK, max_size=3)),
        "max_tokens": st.integers(0, 9),
        "tools": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]), "input_schema": st.just({"type": "object"})}),
            max_size=2,
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(_BODY, st.sampled_from([None, 2]), st.booleans())
def test_a_random_request_joins_back_to_its_bytes(body: dict, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(body, indent=indent, ensure_ascii=ascii_only)
    sections = cut_body(text, body, "anthropic", Splitter())
    assert "".join(s.raw for s in sections) == text
    # every string the model reads is the join of its pieces' texts
    for index, message in enumerate(body["messages"]):
        if isinstance(message["content"], str):
            pieces = [s.text for s in sections if s.element == f"msg[{index}] {message['role']}"]
            assert "".join(pieces) == message["content"]
    names = [s.name for s in sections if s.kind != "framing"]
    assert len(names) == len(set(names))


def test_locate_finds_each_value() -> None:
    text = '{"a" : [1, {"b": "c\\"d"}], "e": true}'
    node = locate(text)
    assert text[node["a"].start : node["a"].end] == '[1, {"b": "c\\"d"}]'
    assert text[node["a"][1]["b"].start : node["a"][1]["b"].end] == '"c\\"d"'
    assert node.get("missing") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet='ab"\\\n\t\u00e9\U0001f600', max_size=12), min_size=1, max_size=4))
def test_locate_spans_every_string_exactly_as_json_writes_it(values: list[str]) -> None:
    # quotes, backslashes and escapes of every kind, as keys and as values: each string's span is
    # its whole token (the string regex reads a run between escapes, never past a closing quote)
    text = json.dumps({v: [v, {"k": v}] for v in values}, ensure_ascii=False)
    node = locate(text)
    for v in values:
        token = json.dumps(v, ensure_ascii=False)
        assert text[node[v][0].start : node[v][0].end] == token
        assert text[node[v][1]["k"].start : node[v][1]["k"].end] == token
