"""MIRA's stability presets: what a MIRA deployment's cache depends on that the kit's own checks
would not look at.

On the wire MIRA sends (docs/mira-wire.md) the tools and the whole system text (every section the
composer put in ``cached_content`` *or* ``non_cached_content``) are one prefix under 1-hour
breakpoints. So with ``check_stability(subject, preset="mira")``:

- every system section counts, cached or not (scope ``system``), and the tool definitions;
- ``clock_hour``: each state composed again an hour later; a system section that differs follows
  the clock (a date label, a relative time), and rewrites the 1-hour block when it moves;
- ``tool_set_order``: MIRA builds its tool list by iterating a Python ``set`` (tools/repo.py), whose
  order for strings depends on ``PYTHONHASHSEED``: two fresh processes with two seeds build the list
  from the same names (``tools=``), and a different order is a different first cached block;
- ``moving_section``: the system section the scenario's own steps rewrite at two composes or more
  while the block is warm, e.g. LocationTrinket's hourly forecast
  (:mod:`wm_kernel.testing.stability.moving`);
- each finding is priced on MIRA's wire over a day at ``turns_per_hour``
  (:func:`~wm_kernel.testing.cost.mira_instability_cost`).

An imported MIRA tap (``import_log("llm_requests.jsonl")``) is checked the same way request against
request (:func:`wm_kernel.testing.logcheck.check_log`): the logged prefix over the tools and every
system section, the tool order of requests that carry the same tools, and a note on each moved
section whose changed characters read as a time or a date.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wm_kernel.interop.mira import DIALECT as TAP_DIALECT
from wm_kernel.testing.cost import mira_instability_cost
from wm_kernel.testing.replay import TOOLS_SECTION, Compose, SectionText
from wm_kernel.testing.report import CheckResult, Finding, excerpt

if TYPE_CHECKING:
    from wm_kernel.interop.imported import ImportedSession

#: The preset's name (``check_stability(..., preset=PRESET)``), and every preset.
PRESET = "mira"
PRESETS = (PRESET,)
#: How a cost priced on MIRA's wire names it.
WIRE_TITLE = "MIRA's wire"
#: The checks the MIRA preset adds (names for ``skip=`` / ``only=``).
CHECKS: dict[str, str] = {
    "clock_hour": "the same state composed again an hour later",
    "tool_set_order": "the tool list built from a set, in processes with two PYTHONHASHSEED values",
    "moving_section": "the scenario's own steps rewriting the 1-hour block while it is warm",
}
#: The check of a tap's tool order, request against request.
LOG_TOOL_CHECK = "logged_tool_order"
LOG_TOOL_DESCRIPTION = "requests carrying the same tools carry them in the same order"

_CLOCKISH = re.compile(
    r"\d|\b(?:AM|PM|am|pm|TODAY|YESTERDAY|ACTIVE|MONDAY|TUESDAY|WEDNESDAY|THURSDAY|"
    r"FRIDAY|SATURDAY|SUNDAY|JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|ago|minutes?|"
    r"hours?|days?)\b"
)


def tool_names(tools: Iterable[Any]) -> list[str]:
    """The names of tool definitions (dicts with ``name``, or plain names); TypeError otherwise."""
    names = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, Mapping) else tool
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tool is a definition with a 'name' or a name, got {tool!r}")
        names.append(name)
    return names


def set_order(names: Sequence[str], seed: int, *, timeout: float = 30.0) -> list[str]:
    """The order a fresh Python process with ``PYTHONHASHSEED=seed`` iterates ``set(names)`` in:
    the order MIRA's tool repository lists these tools in that process."""
    code = "import json, sys; print(json.dumps(list(set(json.load(sys.stdin)))))"
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(list(names)),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    order = json.loads(done.stdout)
    assert isinstance(order, list)
    return [str(n) for n in order]


def with_tools(composes: Sequence[Compose], tools: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[Compose]:
    """``composes`` with the tool definitions first, in ``order`` (as one ``(tools)`` section)."""
    by_name = {t["name"]: t for t in tools}
    text = json.dumps([by_name[n] for n in order], ensure_ascii=False, default=repr)
    section = SectionText(TOOLS_SECTION, "tools", True, None, text)
    return [Compose(c.turn, c.at, (section, *(s for s in c.sections if s.name != TOOLS_SECTION))) for c in composes]


def tool_set_order(
    composes: Sequence[Compose],
    tools: Sequence[Mapping[str, Any]] | None,
    seeds: tuple[int, int],
    model: str,
    turns_per_hour: int,
) -> CheckResult:
    """The ``tool_set_order`` check (module docstring)."""
    description = CHECKS["tool_set_order"]
    if not tools:
        return CheckResult(
            "tool_set_order", description, "not applicable", "no tools given (check_stability(..., tools=[...]))"
        )
    names = tool_names(tools)
    try:
        first, second = (set_order(names, seed) for seed in seeds)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return CheckResult("tool_set_order", description, "error", f"a fresh process failed: {exc}")
    if first == second:
        return CheckResult(
            "tool_set_order",
            description,
            "pass",
            f"{len(names)} tools, the same order under PYTHONHASHSEED={seeds[0]} and {seeds[1]}",
            composes=len(composes),
        )
    base = with_tools(composes, tools, first)
    text_a = base[0].sections[0].content if base else json.dumps(first)
    text_b = with_tools(composes[:1], tools, second)[0].sections[0].content if composes else json.dumps(second)
    offset = len(os.path.commonprefix([text_a, text_b]))
    finding = Finding(
        check="tool_set_order",
        section=TOOLS_SECTION,
        trinket=None,
        placement="tools",
        cached=True,
        turn=base[0].turn if base else 0,
        compose=0,
        offset=offset,
        expected=excerpt(", ".join(first), 0),
        actual=excerpt(", ".join(second), 0),
        labels=(f"PYTHONHASHSEED={seeds[0]}", f"PYTHONHASHSEED={seeds[1]}"),
    )
    finding = finding.with_counts(len(composes), len(composes))
    if base:
        finding = finding.with_cost(mira_instability_cost(base, finding, model, turns_per_hour))
    return CheckResult(
        "tool_set_order",
        description,
        "fail",
        "the tool list's order depends on the process",
        [finding],
        composes=len(composes),
    )


def follows_clock(old: str | None, new: str | None) -> bool:
    """True when the characters that differ between ``old`` and ``new`` read as a time or a date."""
    if old is None or new is None:
        return False
    start = len(os.path.commonprefix([old, new]))
    end = len(os.path.commonprefix([old[start:][::-1], new[start:][::-1]]))
    changed = old[max(0, start - 12) : len(old) - end + 12] + " " + new[max(0, start - 12) : len(new) - end + 12]
    return _CLOCKISH.search(changed) is not None


def log_composes(log: ImportedSession) -> list[Compose]:
    """Each chat turn of a MIRA tap as a Compose on MIRA's wire: its tools (``tool:NAME``,
    placement ``tools``) and every system section marked cached (all are under the 1-hour
    breakpoint), then the other sections as composed."""
    from datetime import UTC, datetime

    out = []
    for turn in log.turns:
        request = log.request(turn)
        tools = tuple(SectionText(s.name, "tools", True, "tools", s.text) for s in request.sections if s.kind == "tool")
        prompt = log.prompt_at(turn)
        sections = tuple(
            SectionText(r.name, r.placement, r.placement == "system" or r.cached, r.trinket, r.content)
            for r in prompt.sections
        )
        at = request.sent_at or datetime(2026, 1, 1, tzinfo=UTC)
        out.append(Compose(turn, at, tools + sections))
    return out


def log_tool_order(composes: Sequence[Compose], model: str, turns_per_hour: int) -> CheckResult:
    """Requests whose tools are the same set as an earlier request's but in another order: one
    finding at the first such request, priced on MIRA's wire over a day."""
    first, moved, compared = _reordered_tools(composes)
    if not compared:
        return CheckResult(
            LOG_TOOL_CHECK, LOG_TOOL_DESCRIPTION, "not applicable", "no two requests carry the same set of tools"
        )
    if first is None:
        return CheckResult(
            LOG_TOOL_CHECK,
            LOG_TOOL_DESCRIPTION,
            "pass",
            f"{compared} requests repeat an earlier tool set, in its order",
            composes=len(composes),
        )
    # priced as the whole tool list moving: one tools block, new on every request when unstable
    priced = _tools_as_one_block(composes)
    finding = first.with_counts(moved, compared).with_cost(mira_instability_cost(priced, first, model, turns_per_hour))
    return CheckResult(
        LOG_TOOL_CHECK,
        LOG_TOOL_DESCRIPTION,
        "fail",
        f"the same tools in another order in {moved} of {compared} requests (a set's order differs between processes)",
        [finding],
        composes=len(composes),
    )


def _reordered_tools(composes: Sequence[Compose]) -> tuple[Finding | None, int, int]:
    """The first request whose tools are an earlier request's set in another order (a
    :class:`Finding` at the first name that differs; None when none is), how many are, and how
    many requests repeat an earlier set at all (the ones compared)."""
    seen: dict[frozenset[str], tuple[int, list[str]]] = {}
    moved = 0
    first: Finding | None = None
    compared = 0
    for index, compose in enumerate(composes):
        names = [s.name for s in compose.sections if s.placement == "tools"]
        if not names:
            continue
        key = frozenset(names)
        if key in seen:
            compared += 1
            before_turn, before = seen[key]
            if before != names:
                moved += 1
                if first is None:
                    offset = next(i for i, (a, b) in enumerate(zip(before, names, strict=False)) if a != b)
                    first = Finding(
                        check=LOG_TOOL_CHECK,
                        section=TOOLS_SECTION,
                        trinket="tools",
                        placement="tools",
                        cached=True,
                        turn=compose.turn,
                        compose=index,
                        offset=offset,
                        expected=excerpt(", ".join(before), 0),
                        actual=excerpt(", ".join(names), 0),
                        labels=(f"turn {before_turn}", f"turn {compose.turn}"),
                    )
        seen[key] = (compose.turn, names)
    return first, moved, compared


def _tools_as_one_block(composes: Sequence[Compose]) -> list[Compose]:
    """``composes`` with each one's tools joined into one cached section, :data:`TOOLS_SECTION`,
    at the head (the rest kept in order): a tool list that moves is priced as one block."""
    return [
        Compose(
            c.turn,
            c.at,
            (
                SectionText(
                    TOOLS_SECTION,
                    "tools",
                    True,
                    "tools",
                    "".join(s.content for s in c.sections if s.placement == "tools"),
                ),
                *(s for s in c.sections if s.placement != "tools"),
            ),
        )
        for c in composes
    ]


def is_tap(log: ImportedSession) -> bool:
    """Whether every turn of an imported log is a chat turn of MIRA's tap."""
    return all(r.dialect == TAP_DIALECT for r in log.requests)


__all__ = [
    "PRESET",
    "PRESETS",
    "WIRE_TITLE",
    "CHECKS",
    "is_tap",
    "tool_names",
    "set_order",
    "tool_set_order",
    "follows_clock",
    "log_composes",
    "log_tool_order",
    "with_tools",
]
