"""Assertions about prompts, with messages that name the section and the turn.

Each ``assert_*`` function returns None when the prompt holds what it says and raises
AssertionError with a one-paragraph message otherwise (pytest shows it as the failure; the
``%%wm_check`` magic shows it in its table). Bad arguments are TypeError/ValueError.

What they read (the *subject*): a :class:`~wm_kernel.session.Session` (every turn its History
recorded: the last compose of each turn), one :class:`~wm_kernel.core.prompt.ComposedPrompt`, or a
list of them. ``turns=(a, b)`` limits a check to turns a..b, both included; every turn of the range
must have been recorded.

>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(base_prompt="You help.", clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> _ = s.compose(); _ = s.advance_turn(2)
>>> assert_section_present(s, "datetime_section", turns=(0, 2))
>>> try:
...     assert_section_present(s, "relevant_memories", turns=(1, 2))
... except AssertionError as exc:
...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
section 'relevant_memories' is missing from turns 1, 2 (checked turns 1..2; sections at turn 1:
base_prompt, conversation_manifest, datetime_section)
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from wm_kernel.core.prompt import ComposedPrompt, SectionRecord
from wm_kernel.testing.tokens import count_tokens
from wm_kernel.utils.markup import escape_attr, escape_text

if TYPE_CHECKING:
    from wm_kernel.cachesim.simulation import Simulation
    from wm_kernel.experiments.scenario import Scenario
    from wm_kernel.session import Session
    from wm_kernel.testing.stability import StabilitySubject

_PREFIX = re.compile(r"</?([A-Za-z_][\w.-]*):[A-Za-z_]")
#: The placements :func:`assert_placement_under` measures, and the text each one is.
PLACEMENT_TEXTS = ("system", "cached", "non_cached", "conversation_prefix", "post_history", "notification")
#: What the prompt assertions read (see the module docstring).
PromptSubject: TypeAlias = "Session | ComposedPrompt | Sequence[ComposedPrompt]"


def prompts_of(subject: PromptSubject, turns: tuple[int, int] | None = None) -> list[tuple[int, ComposedPrompt]]:
    """(turn, prompt) pairs of the subject (see the module docstring), in turn order."""
    from wm_kernel.session import Session

    if isinstance(subject, Session):
        recorder = subject.recorder
        recorded = recorder.turns
        if turns is None:
            pairs = [(t, recorder.prompt_at(t)) for t in recorded]
        else:
            _check_turns(turns)
            missing = unrecorded_turns(recorded, turns)
            if missing is not None:
                raise ValueError(missing)
            pairs = [(t, recorder.prompt_at(t)) for t in recorded if turns[0] <= t <= turns[1]]
    elif isinstance(subject, ComposedPrompt):
        pairs = [(subject.turn or 0, subject)]
    elif (
        isinstance(subject, Sequence)
        and not isinstance(subject, (str, bytes))
        and all(isinstance(p, ComposedPrompt) for p in subject)
    ):
        pairs = [(p.turn if p.turn is not None else i, p) for i, p in enumerate(subject)]
    else:
        raise TypeError(f"expected a Session, a ComposedPrompt or a list of them, got {type(subject).__name__}")
    if turns is not None:
        _check_turns(turns)
        pairs = [(t, p) for t, p in pairs if turns[0] <= t <= turns[1]]
    if not pairs:
        raise ValueError("no composed prompt to check" + (f" in turns {turns[0]}..{turns[1]}" if turns else ""))
    return pairs


def unrecorded_turns(recorded: Sequence[int], turns: tuple[int, int]) -> str | None:
    """Why ``turns`` (first, last) is not a range of ``recorded`` turns ("turn 4 was not recorded
    (recorded turns: 0..3)"), or None when every turn of it was recorded."""
    # the first turn of the range not recorded, found in at most len(recorded) + 1 steps: a range
    # of a hundred million turns is never built
    known = set(recorded)
    first = turns[0]
    while first <= turns[1] and first in known:
        first += 1
    if first > turns[1]:
        return None
    span = f"{recorded[0]}..{recorded[-1]}" if recorded else "none"
    return f"turn {first} was not recorded (recorded turns: {span})"


def _check_turns(turns: object) -> None:
    if not (
        isinstance(turns, tuple)
        and len(turns) == 2
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in turns)
        and turns[0] <= turns[1]
    ):
        raise ValueError(f"turns must be (first, last) with 0 <= first <= last, got {turns!r}")


def _span(turns: tuple[int, int] | None, pairs: list[tuple[int, ComposedPrompt]]) -> str:
    first, last = turns if turns is not None else (pairs[0][0], pairs[-1][0])
    return f"{first}..{last}"


def assert_section_present(subject: PromptSubject, section: str, *, turns: tuple[int, int] | None = None) -> None:
    """Section ``section`` is in the prompt at every turn of ``turns`` (default: every turn)."""
    pairs = prompts_of(subject, turns)
    missing = [(t, p) for t, p in pairs if section not in p.section_names()]
    if missing:
        turn, prompt = missing[0]
        where = ", ".join(str(t) for t, _ in missing[:10]) + (" ..." if len(missing) > 10 else "")
        reason = next((o.reason for o in prompt.omitted if o.name == section), None)
        why = f"; at turn {turn}: {reason}" if reason else ""
        raise AssertionError(
            f"section {section!r} is missing from turn{'s' if len(missing) > 1 else ''} {where} "
            f"(checked turns {_span(turns, pairs)}{why}; sections at turn {turn}: "
            f"{', '.join(prompt.section_names()) or 'none'})"
        )


def placement_text(prompt: ComposedPrompt, placement: str) -> list[str]:
    """The texts a placement sends (one per message for the message placements)."""
    if placement == "system":
        return [prompt.system_prompt]
    if placement == "cached":
        return [prompt.cached_content]
    if placement == "non_cached":
        return [prompt.non_cached_content]
    if placement == "conversation_prefix":
        return list(prompt.conversation_prefix_items)
    if placement == "post_history":
        return list(prompt.post_history_items)
    if placement == "notification":
        return [prompt.notification_center]
    raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENT_TEXTS)})")


def _sections_of(prompt: ComposedPrompt, placement: str) -> list[SectionRecord]:
    if placement in ("cached", "non_cached"):
        return [r for r in prompt.sections if r.placement == "system" and r.cached == (placement == "cached")]
    return [r for r in prompt.sections if r.placement == placement]


def assert_placement_under(
    subject: PromptSubject,
    placement: str,
    tokens: int,
    *,
    turns: tuple[int, int] | None = None,
    model: str | None = None,
) -> None:
    """The text of ``placement`` (one of :data:`PLACEMENT_TEXTS`) stays under ``tokens`` at every
    turn; where counts are estimates, their upper bound must (see :mod:`wm_kernel.testing.tokens`)."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ValueError(f"tokens must be a positive int, got {tokens!r}")
    if placement not in PLACEMENT_TEXTS:
        raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENT_TEXTS)})")
    for turn, prompt in prompts_of(subject, turns):
        counts = [count_tokens(text, model) for text in placement_text(prompt, placement)]
        upper = sum(c.upper for c in counts)
        if upper >= tokens:
            sizes = sorted(
                ((count_tokens(r.content, model).upper, r.name) for r in _sections_of(prompt, placement)), reverse=True
            )
            largest = ", ".join(f"{name} {n:,}" for n, name in sizes[:3]) or "none"
            counter = counts[0].counter if counts else "no text"
            bound = "at most " if any(c.estimate for c in counts) else ""
            raise AssertionError(
                f"placement {placement!r} at turn {turn} is {bound}{upper:,} tokens ({counter}), not under "
                f"{tokens:,}; largest sections: {largest}"
            )


def assert_cached_prefix_stable(subject: PromptSubject, *, turns: tuple[int, int] | None = None) -> None:
    """The cached part of the system prompt is the same, byte for byte, at every turn of ``turns``."""
    pairs = prompts_of(subject, turns)
    for (turn_a, a), (turn_b, b) in zip(pairs, pairs[1:], strict=False):
        old, new = a.cached_content, b.cached_content
        if old == new:
            continue
        offset = len(os.path.commonprefix([old, new]))
        owner = b if offset < len(new) else a
        try:
            span = owner.blame_at("cached_content", min(offset, len(owner.cached_content) - 1))
            section = f"section {span.section!r}" + (f" ({span.trinket})" if span.trinket else "")
        except ValueError:
            section = "the cached content"
        from wm_kernel.testing.report import excerpt

        raise AssertionError(
            f"the cached prefix moved between turn {turn_a} and turn {turn_b}, in {section}, at character "
            f"{offset}: {excerpt(old, offset)} -> {excerpt(new, offset)}"
        )


def assert_hit_rate(subject: Session | Scenario | Simulation, model: str, at_least: float, **options: Any) -> None:
    """The simulated prompt-cache hit rate of ``subject`` on ``model`` is at least ``at_least``
    (0..1). ``subject``: a Session (its recorded turns), a Scenario (replayed first) or a
    :class:`~wm_kernel.cachesim.simulation.Simulation`; ``options`` go to
    :func:`~wm_kernel.cachesim.requests.simulate_session`."""
    from wm_kernel.cachesim.requests import simulate_session
    from wm_kernel.cachesim.simulation import Simulation
    from wm_kernel.experiments.scenario import Scenario

    if isinstance(at_least, bool) or not isinstance(at_least, (int, float)) or not 0 <= at_least <= 1:
        raise ValueError(f"at_least must be a rate between 0 and 1, got {at_least!r}")
    if isinstance(subject, Simulation):
        simulation = subject
    else:
        session = subject.run() if isinstance(subject, Scenario) else subject
        simulation = simulate_session(session, model=model, **options)
    rate = simulation.hit_rate
    if rate < at_least:
        turns = simulation.turns
        misses = turns[turns["miss_reason"] != "none"]
        shown = []
        for row in misses.head(3).to_dict("records"):
            label = f" at {row['divergent_label']}" if row["divergent_label"] else ""
            shown.append(f"turn {row.get('turn', row['request'])}: {row['miss_reason']}{label}")
        raise AssertionError(
            f"hit rate on {simulation.profile.name} is {rate:.1%}, below {at_least:.1%} "
            f"({len(misses)} of {len(turns)} requests missed: {'; '.join(shown) or 'none'})"
        )


def _texts_of(element: ET.Element) -> Iterable[str]:
    for node in element.iter():
        yield from node.attrib.values()
        if node.text:
            yield node.text
        if node.tail:
            yield node.tail


def assert_no_markup_escape(
    subject: PromptSubject, untrusted: Iterable[str], *, turns: tuple[int, int] | None = None
) -> None:
    """No ``untrusted`` text (user or model input fed to trinkets) escapes the markup it was put in:
    wherever it shows, its section parses as XML and gives the text back whole, as element text or
    an attribute value; it never shows raw with its markup characters."""
    texts = [untrusted] if isinstance(untrusted, str) else list(untrusted)
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise ValueError("untrusted must be one or more non-empty strings")
    for turn, prompt in prompts_of(subject, turns):
        for record in prompt.sections:
            content = record.content
            for text in texts:
                forms = {text, escape_text(text), escape_attr(text)}
                if not any(form in content for form in forms):
                    continue
                where = f"section {record.name!r}" + (f" ({record.trinket})" if record.trinket else "")
                risky = any(c in text for c in "<>&\"'")
                if risky and text in content:
                    raise AssertionError(
                        f"untrusted text {text!r} shows unescaped in {where} at turn "
                        f"{turn}, character {content.index(text)}"
                    )
                # sections use namespace prefixes (<mira:hud>) without declaring them
                prefixes = sorted(set(_PREFIX.findall(content)) - {"xml", "xmlns"})
                declared = "".join(f' xmlns:{p}="urn:wm-check:{p}"' for p in prefixes)
                try:
                    root = ET.fromstring(f"<wm-check{declared}>{content}</wm-check>")
                except ET.ParseError as exc:
                    raise AssertionError(
                        f"{where} at turn {turn} holds untrusted text {text!r} but is not well-formed markup ({exc})"
                    ) from None
                if not any(text in part for part in _texts_of(root)):
                    raise AssertionError(
                        f"untrusted text {text!r} does not come back whole from the "
                        f"markup of {where} at turn {turn}: it escaped its element"
                    )


def assert_stable(subject: StabilitySubject, **options: Any) -> None:
    """:func:`~wm_kernel.testing.stability.check_stability` passes; the report is the message."""
    from wm_kernel.testing.stability import check_stability

    report = check_stability(subject, **options)
    if not report.passed:
        raise AssertionError(str(report))
