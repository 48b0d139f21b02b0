"""LoraTrinket: what the assistant has learned about the user, from a user-model XML.

A feedback-synthesis pipeline writes a user model as XML-like text: observations
``<mira:observation section=".." confidence="..">text</mira:observation>`` (each may carry a
``<changelog>`` or ``<mira:changelog>`` block about what changed, which is stripped) and check-in
topics ``<mira:topic section=".." reason=".."/>``. This trinket keeps that text in the session's
state store (key ``lora:{user_id}``, so it survives a restart on an SQLite file), parses it, and
renders the section ``behavioral_directives`` (cached, in the system prompt).

Output, as the original's: ``<user_model>``, a line naming the user (``first_name`` of the profile
stripped, else "this user"), a blank line, one ``<observation section="..">text</observation>`` line
per observation in the order of the XML (not grouped: the model's own order is kept, and confidence
is parsed but not shown), ``</user_model>``. When a check-in is due and there are topics, a
``<behavioral_checkin>`` block follows after a blank line, in the original's words: an
``<instruction>`` to raise the topics (:data:`CHECKIN_INSTRUCTION`), the debrief paragraph
(:data:`CHECKIN_DEBRIEF`), one ``- Regarding section: reason`` line per topic, and an
``<instruction>`` on how to answer (:data:`CHECKIN_RESPONSE_INSTRUCTION`: echo the feedback as a
blockquote and in a ``<mira:checkin_response>`` tag the backend reads). No observations: no section.

A check-in is due when :meth:`LoraTrinket.set_checkin_due` said so, or when a schedule
(:meth:`LoraTrinket.schedule_checkins`) has seen that many completed turns since the last
check-in; :meth:`LoraTrinket.complete_checkin` starts the count again. (The original reads the flag
from its feedback tracker; the schedule is this kit's way to set it.)

Parsing (:func:`parse_user_model`) is a single forward scan, linear in the input, never a
backtracking regex over the whole text, and it is a pure function: malformed input gives the same
result every time. Recovery rules: a ``<`` that does not start a well-formed tag is text; an
observation not closed before the next one starts (or before the end) is dropped; a changelog block
without its closing tag ends at the next observation boundary; observations without a section or
text and topics without a section or reason are dropped. Each drop is listed in ``problems``.
Entities (the five named ones and numeric ones) are decoded; the output escapes again.

Where this differs from the original (each a row in ``docs/deviations.md``): the original reads
observations and topics with fixed-order regular expressions (``section`` then ``confidence``;
``section`` then ``reason``, double quotes) and interpolates their text unescaped; this parser
accepts any attribute order, single quotes and a missing confidence, decodes entities, drops markup
inside an observation's text (keeping its words), and the output escapes user and model text. For
a well-formed user model without markup characters in its values, the text is the original's.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.core.profile import Profile
>>> from wm_kernel.session import Session
>>> s = Session(profile=Profile(first_name="Ada"), clock=ManualClock("2026-11-30T09:00:00+00:00"),
...             trinkets=[LoraTrinket])
>>> lora = s.trinket("LoraTrinket")
>>> lora.set_user_model('''<mira:user_model>
... <mira:observation section="feedback" confidence="high">Wants blunt reviews &amp; no hedging.
... <mira:changelog>Stronger since March.</mira:changelog></mira:observation>
... <mira:observation section="pace" confidence="medium">Reads replies on a phone.</mira:observation>
... <mira:checkin><mira:topic section="pace" reason="Replies got longer lately."/></mira:checkin>
... </mira:user_model>''')
>>> lora.observations()[0]
{'section': 'feedback', 'confidence': 'high', 'text': 'Wants blunt reviews & no hedging.'}
>>> lora.set_checkin_due(True)
>>> print(s.compose()["cached_content"].split("---\\n\\n", 1)[1])  # doctest: +ELLIPSIS
<user_model>
What you've learned about Ada through observation:
<BLANKLINE>
<observation section="feedback">Wants blunt reviews &amp; no hedging.</observation>
<observation section="pace">Reads replies on a phone.</observation>
</user_model>
<BLANKLINE>
<behavioral_checkin>
<instruction>You have unresolved behavioral check-ins. Bring these up during this conversation. Find a natural moment, but do not let the session end without raising them. The user cannot see these topics unless you voice them.</instruction>
<BLANKLINE>
Be direct: explain what you've been noticing and ask whether your read is accurate. This is a collaborative debrief, not a preference survey. Don't ask what they want. Ask if you're reading the room right.
<BLANKLINE>
- Regarding pace: Replies got longer lately.
<BLANKLINE>
<instruction>After the user responds to the check-in, close the feedback loop:
1. Echo their feedback verbatim as a markdown blockquote (> prefix) — this is what the user sees.
...
```</instruction>
</behavioral_checkin>
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from traitlets import Unicode

from trinkets.base import EventAwareTrinket, TrinketHost, feed
from wm_kernel.core.events import TurnCompletedEvent
from wm_kernel.stores import keys
from wm_kernel.utils.checks import check_bool, check_int, check_str
from wm_kernel.utils.markup import escape_attr, escape_text

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus


class Observation(TypedDict):
    section: str
    confidence: str
    text: str


class CheckinTopic(TypedDict):
    section: str
    reason: str


OBSERVATION_TAG = "mira:observation"
TOPIC_TAG = "mira:topic"
CHANGELOG_TAGS = frozenset({"changelog", "mira:changelog"})
#: At most this many problems are listed one by one; the rest are counted.
MAX_PROBLEMS = 20

#: The check-in block's opening instruction (the original's words).
CHECKIN_INSTRUCTION = (
    "You have unresolved behavioral check-ins. Bring these up during this conversation. Find a "
    "natural moment, but do not let the session end without raising them. The user cannot see these "
    "topics unless you voice them."
)
#: The paragraph between the opening instruction and the topics (the original's words).
CHECKIN_DEBRIEF = (
    "Be direct: explain what you've been noticing and ask whether your read is accurate. This is a "
    "collaborative debrief, not a preference survey. Don't ask what they want. Ask if you're reading "
    "the room right."
)
#: The closing instruction: how to answer a check-in, so the backend can read the answer back from
#: ``<mira:checkin_response>`` (the original's words; its markup is part of the instruction).
CHECKIN_RESPONSE_INSTRUCTION = """After the user responds to the check-in, close the feedback loop:
1. Echo their feedback verbatim as a markdown blockquote (> prefix) \u2014 this is what the user sees.
2. Repeat the identical content in a <mira:checkin_response> tag (invisible to user, parsed by \
backend). Blockquote and tag must match exactly.
3. Ask the user to confirm wording accuracy. If they correct you, reissue both blockquote and tag \
with the revised version. Latest output wins.
4. Consolidate all check-in feedback into one blockquote + tag pair, even across multiple topics.

Example output after user responds:
```
Here's what I'm recording:

> User prefers blunt technical feedback without diplomatic hedging.
> When I soften criticism, they find it condescending rather than considerate.

<mira:checkin_response>User prefers blunt technical feedback without diplomatic hedging. When I \
soften criticism, they find it condescending rather than considerate.</mira:checkin_response>

Is this wording accurate?
```"""

# Every pattern below is anchored at a known position and bounded by the next "<" (endpos), and none
# nests quantifiers, so each match costs time linear in the stretch it reads.
_TAG_OPEN = re.compile(r"<(/?)([A-Za-z_:][-\w.:]*)")
_ATTRIBUTE = re.compile(r"\s+([A-Za-z_:][-\w.:]*)\s*=\s*(?:\"([^\"<]*)\"|'([^'<]*)')")
_TAG_CLOSE = re.compile(r"\s*(/?)>")
_ENTITY = re.compile(r"&(?:#([0-9]{1,8})|#[xX]([0-9A-Fa-f]{1,8})|(lt|gt|amp|quot|apos));")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_ATTR_WHITESPACE = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


def _decode_entity(match: re.Match[str]) -> str:
    if match.group(3):
        return _NAMED[match.group(3)]
    code = int(match.group(1)) if match.group(1) else int(match.group(2), 16)
    if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return match.group(0)  # not a character: keep the reference as written
    return chr(code)


def unescape(text: str) -> str:
    """Decode the XML entities (``&lt;`` ``&gt;`` ``&amp;`` ``&quot;`` ``&apos;`` and numeric ones);
    anything else, including HTML-only names such as ``&nbsp;``, stays as written.

    >>> unescape("a &lt;b&gt; &amp;amp; &#233;&#x21; &nbsp;")
    'a <b> &amp; é! &nbsp;'
    """
    return _ENTITY.sub(_decode_entity, text) if "&" in text else text


@dataclass(frozen=True)
class _Tag:
    closing: bool
    name: str
    attributes: dict[str, str]
    self_closing: bool
    start: int
    end: int


def _read_tag(text: str, start: int, limit: int) -> _Tag | None:
    """The well-formed tag at ``start`` (which holds "<"), read no further than ``limit``."""
    opened = _TAG_OPEN.match(text, start, limit)
    if opened is None:
        return None
    closing, name = opened.group(1) == "/", opened.group(2)
    position = opened.end()
    attributes: dict[str, str] = {}
    if not closing:
        while True:
            attribute = _ATTRIBUTE.match(text, position, limit)
            if attribute is None:
                break
            raw = attribute.group(2) if attribute.group(2) is not None else attribute.group(3)
            # XML turns literal whitespace in a value into spaces; a repeated name keeps the first
            attributes.setdefault(attribute.group(1), unescape(raw.translate(_ATTR_WHITESPACE)))
            position = attribute.end()
    ended = _TAG_CLOSE.match(text, position, limit)
    if ended is None or (closing and ended.group(1)):
        return None
    return _Tag(closing, name, attributes, bool(ended.group(1)), start, ended.end())


def _scan(text: str) -> Iterator[str | _Tag]:
    """Text runs and tags, in order. A "<" that does not open a well-formed tag is text."""
    position = text_start = 0
    end = len(text)
    while position < end:
        start = text.find("<", position)
        if start < 0:
            break
        limit = text.find("<", start + 1)
        if limit < 0:
            limit = end
        tag = _read_tag(text, start, limit)
        if tag is None:
            position = limit
            continue
        if text_start < start:
            yield text[text_start:start]
        yield tag
        position = text_start = tag.end
    if text_start < end:
        yield text[text_start:]


@dataclass(frozen=True)
class ParsedUserModel:
    """What :func:`parse_user_model` found: observations, check-in topics, and what it dropped."""

    observations: tuple[Observation, ...] = ()
    topics: tuple[CheckinTopic, ...] = ()
    problems: tuple[str, ...] = field(default=())


class _Problems:
    def __init__(self) -> None:
        self.listed: list[str] = []
        self.more = 0

    def add(self, message: str) -> None:
        if len(self.listed) < MAX_PROBLEMS:
            self.listed.append(message)
        else:
            self.more += 1

    def result(self) -> tuple[str, ...]:
        if self.more:
            return (*self.listed, f"... and {self.more} more")
        return tuple(self.listed)


def parse_user_model(text: str) -> ParsedUserModel:
    """Parse a user-model XML into observations and check-in topics (see the module docstring).

    Long because: one tolerant scan of the tags, with a branch per tag kind (changelog, observation,
    topic, text) and a problem message for each way a tag can be malformed; the doctest shows the
    contract.

    >>> parsed = parse_user_model('<mira:observation section="a" confidence="low">x <b>y</b>'
    ...                           '<changelog>old</changelog></mira:observation>'
    ...                           '<mira:observation section="b">unclosed')
    >>> parsed.observations
    ({'section': 'a', 'confidence': 'low', 'text': 'x y'},)
    >>> parsed.problems
    ('unclosed <mira:observation> at offset 102 dropped',)
    """
    if not isinstance(text, str):
        raise TypeError(f"user model must be a str, got {type(text).__name__}")
    observations: list[Observation] = []
    topics: list[CheckinTopic] = []
    problems = _Problems()
    current: _Tag | None = None  # the open observation
    parts: list[str] = []
    changelog: _Tag | None = None  # the open changelog block being skipped
    changelog_depth = 0

    def finish(tag: _Tag) -> None:
        section = tag.attributes.get("section", "").strip()
        body = "".join(parts).strip()
        if not section:
            problems.add(f"<mira:observation> at offset {tag.start} has no section; dropped")
        elif not body:
            problems.add(f"<mira:observation> at offset {tag.start} has no text; dropped")
        else:
            observations.append(
                {"section": section, "confidence": tag.attributes.get("confidence", "").strip(), "text": body}
            )

    for item in _scan(text):
        if changelog is not None:
            if isinstance(item, _Tag) and item.name in CHANGELOG_TAGS and not item.self_closing:
                changelog_depth += -1 if item.closing else 1
                if changelog_depth == 0:
                    changelog = None
                continue
            if not (isinstance(item, _Tag) and item.name == OBSERVATION_TAG):
                continue
            problems.add(f"unclosed <{changelog.name}> at offset {changelog.start} ends at offset {item.start}")
            changelog, changelog_depth = None, 0
        if isinstance(item, str):
            if current is not None:
                parts.append(unescape(item))
            continue
        if item.name in CHANGELOG_TAGS:
            if not item.closing and not item.self_closing:
                changelog, changelog_depth = item, 1
        elif item.name == OBSERVATION_TAG:
            if item.closing:
                if current is None:
                    problems.add(f"stray </mira:observation> at offset {item.start}")
                else:
                    finish(current)
                    current = None
                continue
            if current is not None:
                problems.add(f"unclosed <mira:observation> at offset {current.start} dropped")
            current, parts = (None if item.self_closing else item), []
            if item.self_closing:
                problems.add(f"<mira:observation> at offset {item.start} has no text; dropped")
        elif item.name == TOPIC_TAG and not item.closing:
            section = item.attributes.get("section", "").strip()
            reason = item.attributes.get("reason", "").strip()
            if section and reason:
                topics.append({"section": section, "reason": reason})
            else:
                problems.add(f"<mira:topic> at offset {item.start} needs a section and a reason; dropped")
    if changelog is not None:
        problems.add(f"unclosed <{changelog.name}> at offset {changelog.start} runs to the end")
    if current is not None:
        problems.add(f"unclosed <mira:observation> at offset {current.start} dropped")
    return ParsedUserModel(tuple(observations), tuple(topics), problems.result())


class LoraTrinket(EventAwareTrinket):
    """The user model (observations and check-in topics) as the ``behavioral_directives`` section.

    Feed it with :meth:`set_user_model` (the pipeline's XML text); steer check-ins with
    :meth:`set_checkin_due`, :meth:`schedule_checkins` and :meth:`complete_checkin`. Read back with
    :meth:`observations`, :meth:`topics`, :meth:`problems` and :attr:`checkin_due`.
    """

    variable_name = "behavioral_directives"
    default_priority = 70  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile
    cache_policy = True

    fallback_name = Unicode("this user", help="How the user is named when the profile has no first name.")

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        super().__init__(event_bus, working_memory, **kwargs)
        self._parsed: tuple[str, ParsedUserModel] = ("", ParsedUserModel())
        event_bus.subscribe(TurnCompletedEvent, self._handle_turn_completed)

    def detach(self) -> None:
        self.event_bus.unsubscribe(TurnCompletedEvent, self._handle_turn_completed)

    # -- storage
    @property
    def store_key(self) -> str:
        """The state-store key of this user's model (fields ``user_model`` and ``checkin``)."""
        return keys.lora(self.working_memory.user_id)

    def _checkin(self) -> dict[str, Any]:
        stored = self.working_memory.store.hget(self.store_key, "checkin")
        state = {"due": False, "every_n_turns": None, "turns_since": 0}
        if isinstance(stored, dict):
            state.update(stored)
        return state

    def _save_checkin(self, **changes: Any) -> None:
        store = self.working_memory.store
        with store.transaction():
            store.hset(self.store_key, "checkin", {**self._checkin(), **changes})
        self._inputs_changed()  # also from a turn, which is no feed call

    @property
    def user_model(self) -> str:
        """The stored user-model text ('' when none)."""
        value = self.working_memory.store.hget(self.store_key, "user_model")
        return value if isinstance(value, str) else ""

    def _parse(self) -> ParsedUserModel:
        text = self.user_model
        if self._parsed[0] != text:
            self._parsed = (text, parse_user_model(text))
        return self._parsed[1]

    # -- feeding
    @feed
    def set_user_model(self, xml_text: str) -> None:
        """Replace the user model with the pipeline's XML text ('' forgets it). Malformed text is
        accepted: what cannot be read is dropped and listed by :meth:`problems`."""
        check_str(xml_text, "user model", empty_ok=True)
        if xml_text:
            self.working_memory.store.hset(self.store_key, "user_model", xml_text)
        else:
            self.working_memory.store.hdel(self.store_key, "user_model")

    @feed
    def set_checkin_due(self, due: bool) -> None:
        """Say that a check-in is (or is no longer) due, whatever the schedule."""
        check_bool(due, "due")
        self._save_checkin(due=due)

    @feed
    def schedule_checkins(self, every_n_turns: int | None) -> None:
        """Make a check-in due once ``every_n_turns`` turns have completed since the last one
        (None: no schedule; only :meth:`set_checkin_due` makes one due). Turns are counted while a
        schedule is set; changing the schedule keeps the count."""
        if every_n_turns is not None:
            check_int(every_n_turns, "every_n_turns", minimum=1, expected="an int or None")
        self._save_checkin(every_n_turns=every_n_turns)

    @feed
    def complete_checkin(self) -> None:
        """The check-in happened: nothing is due, and the schedule counts from zero again."""
        self._save_checkin(due=False, turns_since=0)

    def _handle_turn_completed(self, event: TurnCompletedEvent) -> None:
        with self.lock:
            state = self._checkin()
            if state.get("every_n_turns") is not None:  # nothing to count for without a schedule
                self._save_checkin(turns_since=int(state.get("turns_since") or 0) + 1)

    # -- reading
    @property
    def checkin_due(self) -> bool:
        """True when check-in guidance would be shown (if there are topics)."""
        state = self._checkin()
        if state.get("due") is True:
            return True
        every = state.get("every_n_turns")
        return isinstance(every, int) and every >= 1 and int(state.get("turns_since") or 0) >= every

    @property
    def turns_since_checkin(self) -> int:
        """Turns completed since the last :meth:`complete_checkin` (kept in the store)."""
        return int(self._checkin().get("turns_since") or 0)

    def observations(self) -> list[Observation]:
        """The parsed observations: dicts {section, confidence, text}, entities decoded."""
        return [o.copy() for o in self._parse().observations]

    def topics(self) -> list[CheckinTopic]:
        """The parsed check-in topics: dicts {section, reason}, entities decoded."""
        return [t.copy() for t in self._parse().topics]

    def problems(self) -> list[str]:
        """What the parser dropped from the stored user model, and where."""
        return list(self._parse().problems)

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        parsed = self._parse()
        if not parsed.observations:
            return ""
        name = (self.working_memory.profile.first_name or "").strip() or self.fallback_name
        lines = ["<user_model>", f"What you've learned about {escape_text(name)} through observation:", ""]
        lines.extend(
            f'<observation section="{escape_attr(o["section"])}">{escape_text(o["text"])}</observation>'
            for o in parsed.observations
        )
        lines.append("</user_model>")
        if parsed.topics and self.checkin_due:
            lines += [
                "",
                "<behavioral_checkin>",
                f"<instruction>{CHECKIN_INSTRUCTION}</instruction>",
                "",
                CHECKIN_DEBRIEF,
                "",
            ]
            lines.extend(f"- Regarding {escape_text(t['section'])}: {escape_text(t['reason'])}" for t in parsed.topics)
            lines += ["", f"<instruction>{CHECKIN_RESPONSE_INSTRUCTION}</instruction>", "</behavioral_checkin>"]
        return "\n".join(lines)
