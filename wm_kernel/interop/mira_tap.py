"""MIRA's traffic tap read back: requests paired with responses, chat turns cut into MIRA's sections.

MIRA appends every provider call, while its tap is on, to ``llm_requests.jsonl`` (``{"ts",
"provider", "endpoint", "model", "body"}``) and the response to ``llm_responses.jsonl`` beside it
(``{"ts", "provider", "model", "endpoint", "response"}``), one JSON object a line written with
``ensure_ascii=False``: raw U+2028 and other line separators occur inside records, so lines are
split on ``"\\n"`` only (``ts`` is ``time.time()``, seconds since the epoch). docs/mira-wire.md
has the layout.

Pairing (the tap keeps no id)
    A request whose body is byte for byte an earlier, still unanswered request's of the same
    provider and model is a retry of it (the SDK sends the same body again): the call is its last
    attempt. Responses are taken in time order; each goes to an unanswered call of its provider
    whose model it names (the API may report a dated name: ``claude-haiku-4-5`` is answered as
    ``claude-haiku-4-5-20251001``) sent at or before it (equal timestamps allowed). Among several,
    the call whose prompt size (estimated tokens) is nearest the input the response reports, the
    earliest on a tie; so a background call that starts and ends inside a chat call, with equal
    timestamps, pairs with its own request. A response that finds no call, and a call no response
    answers, is an :class:`~wm_kernel.interop.formats.ImportIssue` naming its file and line; a call
    without a response still imports, without usage.

Chat turns and background calls
    A chat turn is an Anthropic request whose system text carries MIRA's scaffolding delimiter
    (the base prompt, a blank line, a rule of 60 "═", a note, a rule) on the conversation's model
    (the most frequent such model); every other call (other models, other system prompts, generic
    OpenAI-compatible calls) is background, kept apart (``ImportedSession.background``).

Sections (a chat turn's body cut by MIRA's own markers)
    ``tool:NAME`` per tool; the system block: ``base_prompt`` (the base prompt and the scaffolding
    delimiter), then the system sections, each recognised by how the kit's trinket opens it
    (:data:`MARKERS`: ``<user_model>`` is ``behavioral_directives`` of ``LoraTrinket``...), cut at
    the composer's separators (``"\\n\\n---\\n\\n"`` inside the cached and the non-cached text, the
    one ``"\\n\\n"`` between them: what comes after it was composed as non-cached); leading
    assistant messages as ``conversation_prefix`` items; the history (``msg[i] role``, as other
    Anthropic logs); each ``toolu_dd_`` tool_use/tool_result pair as a post-history item (its
    section named by its marker, ``domaindoc``); the HUD message cut at its frame and parts
    (``<mira:hud>``). The composer's separators and frames are ``(composer)`` sections; a section
    no marker names is labelled by the splitter (``system <tool_availability>``, ``hud <...>``).
    :func:`mira_prompt` joins a turn's sections back into the :class:`ComposedPrompt` MIRA's
    composer returned, blame included.

Usage
    From the paired response: an Anthropic SDK message's ``usage``; a generic call's usage (MIRA's
    generic client reports Anthropic's keys; the short keys ``input``, ``output``,
    ``cache_creation``, ``cache_read`` are read too) in Anthropic's shape.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wm_kernel.core.hud_frame import RULE
from wm_kernel.core.placement_build import SECTION_SEPARATOR
from wm_kernel.core.prompt import BlameData, ComposedPrompt, SectionRecord
from wm_kernel.dialects.registry import LogFormat, body_dialect, get_dialect, register_log_format
from wm_kernel.interop.bodies import Cutter, Section, anthropic_message, cut_body, prompt_order, ttl_of
from wm_kernel.interop.formats import ImportIssue, LoggedRequest
from wm_kernel.interop.jsonspan import Node, locate, string_offsets
from wm_kernel.interop.split import Splitter
from wm_kernel.tokens import TokenCounter

#: The log format of MIRA's tap, and the ``dialect`` of a chat turn read from it (the wire it holds is
#: ``wm_kernel.dialects.mira``'s).
DIALECT = "mira-tap"
#: The file the responses are in, beside the requests file.
RESPONSES_NAME = "llm_responses.jsonl"
REQUEST_KEYS = frozenset({"ts", "provider", "endpoint", "model", "body"})
RESPONSE_KEYS = frozenset({"ts", "provider", "model", "response"})
#: The owner of the composer's separators and frames, and of the wire's synthetic tool calls.
COMPOSER = "(composer)"
WIRE = "(wire)"
#: The id prefix and tool name of the synthetic calls that carry post-history items.
DD_PREFIX = "toolu_dd_"
DD_TOOL = "domaindoc_tool"

#: The wire a chat turn is on (``wm_kernel.dialects.mira``): its provider is the tap's ``provider``
#: for those calls, and the shape of every usage the tap holds (MIRA's generic client reports
#: Anthropic's keys too).
MIRA_WIRE = get_dialect("mira")
USAGE_SHAPE = get_dialect(MIRA_WIRE.provider).log_format
_SCAFFOLDING = re.compile(rf"\n\n{RULE}\n[^\n]*\n{RULE}")
_HUD_HEAD = re.compile(rf"{RULE}\n([^\n]*)\n{RULE}\n<([A-Za-z_][\w.-]*):hud>\n")
#: A MIRA history message starts with the time it was written (continuum.py): ``[9:05am] ``.
_STAMP = re.compile(r"\[\d{1,2}:\d\d[ap]m\] ")


@dataclass(frozen=True)
class Marker:
    """How a section the kit's trinkets write opens: its name in the layout, its trinket, the
    pattern at its start, the element that holds it (its end; None: it runs to the next
    separator), its cache policy, elements that may follow inside it after a blank line, and
    whether separators may occur inside it (``greedy``: only a separator followed by another
    section's opening ends it)."""

    name: str
    trinket: str
    opener: re.Pattern[str]
    tag: str | None
    cache_policy: bool
    follows: tuple[str, ...] = ()
    greedy: bool = False


def _marker(
    name: str,
    trinket: str,
    tag: str | None,
    cache_policy: bool,
    *,
    opener: str | None = None,
    follows: tuple[str, ...] = (),
    greedy: bool = False,
) -> Marker:
    pattern = opener if opener is not None else rf"<{re.escape(tag or '')}[\s>]"
    return Marker(name, trinket, re.compile(pattern), tag, cache_policy, follows, greedy)


#: The sections of the kit's built-in trinkets, as each opens (kept equal to the trinkets' output by
#: tests/interop/test_mira_tap.py).
MARKERS: tuple[Marker, ...] = (
    _marker("behavioral_directives", "LoraTrinket", "user_model", True, follows=("behavioral_checkin",)),
    _marker("conversation_manifest", "ManifestTrinket", "conversation_manifest", False),
    _marker("datetime_section", "TimeManager", "current_datetime", False),
    _marker("active_reminders", "ReminderManager", "active_reminders", False),
    _marker("relevant_memories", "ProactiveMemoryTrinket", "surfaced_memories", False),
    _marker("peanutgallery_guidance", "PeanutGalleryTrinket", "mira:peanutgallery", False),
    _marker(
        "context_search_results",
        "GetContextTrinket",
        None,
        False,
        opener=re.escape("=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ==="),
        greedy=True,
    ),
    _marker("domaindoc", "DomaindocTrinket", None, True, opener=re.escape(f"{RULE}\nDOMAIN KNOWLEDGE")),
)


def marker_at(text: str, pos: int) -> Marker | None:
    """The marker whose opening is at ``text[pos:]``, or None."""
    for marker in MARKERS:
        if marker.opener.match(text, pos):
            return marker
    return None


# -- reading the two files --------------------------------------------------------------------------


@dataclass
class _Record:
    line: int
    text: str
    value: Mapping[str, Any]
    ts: float


@dataclass
class _Call:
    """One provider call: its attempts (request records), and the response paired with it."""

    attempts: list[_Record]
    tokens: int
    key: str
    response: _Record | None = None

    @property
    def last(self) -> _Record:
        return self.attempts[-1]


@dataclass(frozen=True)
class TapRead:
    """What one tap holds: the chat turns, the background calls, and the records that could not be
    read or paired."""

    turns: list[LoggedRequest]
    background: list[LoggedRequest]
    issues: list[ImportIssue]
    retries: int = 0
    calls: int = 0
    unpaired: list[ImportIssue] = field(default_factory=list)


def is_tap_request(value: Any) -> bool:
    """True for a record of ``llm_requests.jsonl`` (the tap's keys, a body object)."""
    return isinstance(value, Mapping) and REQUEST_KEYS <= set(value) and isinstance(value.get("body"), Mapping)


def responses_path(path: str | Path) -> Path:
    """The responses file beside a requests file: ``llm_responses.jsonl``, or the requests file's
    name with ``requests`` turned into ``responses`` when it has it."""
    where = Path(path)
    if "requests" in where.name:
        return where.with_name(where.name.replace("requests", "responses"))
    return where.with_name(RESPONSES_NAME)


def _records(path: Path, text: str, keys: frozenset[str], what: str, issues: list[ImportIssue]) -> list[_Record]:
    out = []
    name = str(path)
    # the tap writes raw U+2028 (ensure_ascii=False): a line ends at "\n" and nowhere else
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.append(ImportIssue(name, number, f"malformed JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(value, Mapping) or not keys <= set(value):
            issues.append(ImportIssue(name, number, f"not a MIRA tap {what} record (keys: {', '.join(sorted(keys))})"))
            continue
        ts = value["ts"]
        if isinstance(ts, bool) or not isinstance(ts, (int, float)):
            issues.append(ImportIssue(name, number, f"ts must be seconds since the epoch, got {ts!r}"))
            continue
        if what == "request" and not isinstance(value.get("body"), Mapping):
            issues.append(ImportIssue(name, number, "the request record has no body object"))
            continue
        out.append(_Record(number, line, value, float(ts)))
    return out


def _same_model(requested: Any, reported: Any) -> bool:
    """The model a response names is the requested one, or its dated name (or the other way)."""
    if not isinstance(requested, str) or not isinstance(reported, str):
        return bool(requested == reported)
    a, b = requested.lower(), reported.lower()
    return a == b or a.startswith(b + "-") or b.startswith(a + "-")


def _reported_input(response: Mapping[str, Any]) -> int | None:
    usage = _usage_of(response)
    if usage is None:
        return None
    total = 0
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total or None


def _usage_of(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """A response record's usage in Anthropic's shape (None where it has none)."""
    response = record.get("response")
    if not isinstance(response, Mapping):
        return None
    usage = response.get("usage")
    if not isinstance(usage, Mapping):
        return None
    if record.get("provider") == "generic":
        short = {
            "input": "input_tokens",
            "output": "output_tokens",
            "cache_creation": "cache_creation_input_tokens",
            "cache_read": "cache_read_input_tokens",
        }
        out = {short.get(str(k), str(k)): v for k, v in usage.items()}
        return {
            k: out.get(k, 0)
            for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        }
    return dict(usage)


def pair(
    requests: Sequence[_Record],
    responses: Sequence[_Record],
    counter: TokenCounter,
) -> tuple[list[_Call], int, list[_Record]]:
    """The calls (retries folded in), each with its response where one answers it; the number of
    retries; the responses no call took (see the module docstring). Requests and responses are
    taken in time order, a request before a response of the same instant."""
    calls: list[_Call] = []
    open_calls: list[_Call] = []
    left: list[_Record] = []
    retries = 0
    events = sorted(
        [(r.ts, 0, r.line, r) for r in requests] + [(r.ts, 1, r.line, r) for r in responses], key=lambda e: e[:3]
    )
    for _, is_response, _, record in events:
        value = record.value
        if not is_response:
            key = json.dumps([value["provider"], value["model"], value["body"]], sort_keys=True, ensure_ascii=False)
            retry = next((c for c in reversed(open_calls) if c.key == key), None)
            if retry is not None:
                retry.attempts.append(record)
                retries += 1
                continue
            call = _Call([record], counter.count(json.dumps(value["body"], ensure_ascii=False)), key)
            calls.append(call)
            open_calls.append(call)
            continue
        candidates = [
            c
            for c in open_calls
            if c.last.value["provider"] == value["provider"] and _same_model(c.last.value["model"], value.get("model"))
        ]
        if not candidates:
            left.append(record)
            continue
        reported = _reported_input(value)
        chosen = candidates[0]
        if reported is not None and len(candidates) > 1:
            chosen = min(candidates, key=lambda c: abs(c.tokens - reported))
        chosen.response = record
        open_calls.remove(chosen)
    return calls, retries, left


def read_tap(
    path: str | Path, splitter: Splitter | None = None, *, counter: TokenCounter | None = None, text: str | None = None
) -> TapRead:
    """The chat turns and background calls of the tap whose requests file is ``path`` (its
    responses file beside it; ``text``: the requests file's text, if read already), and the records
    that could not be read or paired. ValueError when the requests file cannot be read or holds no
    request."""
    where = Path(path)
    split = splitter or Splitter()
    count = counter or TokenCounter()
    issues: list[ImportIssue] = []
    if text is None:
        try:
            text = where.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{where}: cannot read the file ({exc})") from None
    requests = _records(where, text, REQUEST_KEYS, "request", issues)
    if not requests:
        first = issues[0] if issues else ImportIssue(str(where), 1, "no requests in the file")
        raise ValueError(f"{first} (nothing imported)")
    answers = responses_path(where)
    responses: list[_Record] = []
    if answers.exists():
        try:
            responses = _records(answers, answers.read_text(encoding="utf-8"), RESPONSE_KEYS, "response", issues)
        except (OSError, UnicodeDecodeError) as exc:
            issues.append(
                ImportIssue(str(answers), 0, f"cannot read the responses ({exc}); requests imported without usage")
            )
    else:
        issues.append(
            ImportIssue(str(answers), 0, "no responses file beside the requests; requests imported without usage")
        )
    calls, retries, left = pair(requests, responses, count)
    unpaired = [
        ImportIssue(
            str(answers),
            r.line,
            f"a response ({r.value.get('provider')}, {r.value.get('model')}) no request answers: not imported",
        )
        for r in left
    ]
    if answers.exists():
        unpaired += [
            ImportIssue(
                str(where),
                c.last.line,
                f"no response pairs with this request "
                f"({c.last.value['provider']}, {c.last.value['model']}); "
                "imported without usage",
            )
            for c in calls
            if c.response is None
        ]
    chat_model = _chat_model(calls)
    turns: list[LoggedRequest] = []
    background: list[LoggedRequest] = []
    for call in calls:
        try:
            request, chat = _logged(call, where, split, chat_model)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            issues.append(ImportIssue(str(where), call.last.line, str(exc)))
            continue
        (turns if chat else background).append(request)
    all_issues = sorted([*issues, *unpaired], key=lambda i: (i.path, i.line))
    return TapRead(turns, background, all_issues, retries, len(calls), unpaired)


def _system_text(body: Mapping[str, Any]) -> str | None:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list) and system and isinstance(system[0], Mapping):
        text = system[0].get("text")
        return text if isinstance(text, str) else None
    return None


def _is_mira_chat(record: _Record) -> bool:
    body = record.value["body"]
    if record.value["provider"] != MIRA_WIRE.provider or not isinstance(body.get("messages"), list):
        return False
    system = body.get("system")
    text = _system_text(body)
    return isinstance(system, list) and len(system) == 1 and text is not None and _SCAFFOLDING.search(text) is not None


def _chat_model(calls: Sequence[_Call]) -> str | None:
    models = Counter(str(c.last.value["model"]) for c in calls if _is_mira_chat(c.last))
    return models.most_common(1)[0][0] if models else None


def _sent_at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _logged(call: _Call, path: Path, splitter: Splitter, chat_model: str | None) -> tuple[LoggedRequest, bool]:
    record = call.last
    value = record.value
    body = value["body"]
    usage = _usage_of(call.response.value) if call.response is not None else None
    model = value["model"] if isinstance(value["model"], str) else None
    node = locate(record.text)["body"]
    chat = _is_mira_chat(record) and model == chat_model
    if chat:
        cut = Cutter(record.text, splitter)
        cut_mira(cut, node, body)
        sections = cut.finish()
        dialect, provider = DIALECT, MIRA_WIRE.provider
    else:
        # a background call's body is cut as the wire it reads as (generic calls: Chat Completions)
        wire = body_dialect(body) or get_dialect(MIRA_WIRE.provider)
        dialect, provider = wire.log_format, wire.provider
        sections = cut_body(record.text, body, dialect, splitter, node)
    lines = tuple(a.line for a in call.attempts)
    return LoggedRequest(
        tuple(sections),
        record.text,
        str(path),
        lines,
        dialect,
        provider,
        model,
        _sent_at(record.ts),
        usage,
        USAGE_SHAPE if usage else None,
        None,
        background=not chat,
    ), chat


# -- cutting a chat turn ----------------------------------------------------------------------------


@dataclass
class _Piece:
    """A stretch of a decoded string (its end), what it is, who wrote it, where it goes."""

    name: str
    end: int
    text: str
    trinket: str | None
    where: str | None
    cache: str | None = None


def _emit(cut: Cutter, node: Node, kind: str, element: str, pieces: Sequence[_Piece]) -> None:
    """Sections for the pieces of the string ``node`` (decoded offsets mapped to the raw token):
    the bytes before the first piece go with it, the closing quote with the last."""
    cut.framing(node.start)
    offsets = string_offsets(cut.text[node.start : node.end])
    for index, piece in enumerate(pieces):
        stop = node.end if index == len(pieces) - 1 else node.start + offsets[piece.end]
        name = piece.name
        cut.seen[name] = cut.seen.get(name, 0) + 1
        if cut.seen[name] > 1:
            name = f"{name} #{cut.seen[name]}"
        cut.sections.append(
            Section(
                name, kind, cut.text[cut.cursor : stop], piece.text, piece.trinket, piece.cache, element, piece.where
            )
        )
        cut.cursor = stop


def _closing(text: str, tag: str, pos: int) -> int | None:
    """The end of the ``</tag>`` closing the element opened before ``pos`` (same-name nesting counted)."""
    pattern = re.compile(rf"<(/?){re.escape(tag)}(?:\s[^<>]*)?>")
    depth = 1
    for match in pattern.finditer(text, pos):
        if match.group(0).endswith("/>"):
            continue
        depth += -1 if match.group(1) else 1
        if depth == 0:
            return match.end()
    return None


def _region_end(text: str, start: int, marker: Marker) -> int | None:
    """Where the element holding a marked section ends (with the elements that may follow it)."""
    if marker.tag is None:
        return None
    end = _closing(text, marker.tag, start + 1)
    if end is None:
        return None
    for tag in marker.follows:
        if re.match(rf"\n\n<{re.escape(tag)}[\s>]", text[end : end + len(tag) + 4]):
            after = _closing(text, tag, end + 3)
            if after is not None:
                end = after
    return end


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>")


def _whole_element(text: str, pos: int, stop: int, separators: tuple[str, ...]) -> bool:
    """True when an XML element opens at ``pos`` and closes right before a separator or ``stop``:
    a whole section no marker names (``<tool_availability>...</tool_availability>``)."""
    match = _OPEN_TAG.match(text, pos)
    if match is None:
        return False
    end = _closing(text, match.group(1), match.end())
    return end is not None and (end >= stop or any(text.startswith(s, end) for s in separators))


def _next_start(
    text: str, pos: int, stop: int, any_separator: bool, separators: tuple[str, ...], blank_line: bool
) -> int:
    """The first separator at or after ``pos`` that ends a section: one followed by a section's
    marked opening; (``any_separator``) any ``"\n\n---\n\n"`` of the system text; (``blank_line``)
    a blank line followed by a whole XML element."""
    at = pos
    while True:
        found = text.find("\n\n", at, stop)
        if found < 0:
            return stop
        for separator in separators:
            if text.startswith(separator, found):
                after = found + len(separator)
                if marker_at(text, after) is not None or (any_separator and separator == SECTION_SEPARATOR):
                    return found
                if blank_line and separator == "\n\n" and _whole_element(text, after, stop, separators):
                    return found
        at = found + 1


def _unknown(
    text: str, start: int, end: int, prefix: str, where: str, splitter: Splitter, counts: Counter[str]
) -> list[_Piece]:
    """A stretch no marker names, labelled by the splitter's pieces."""
    pieces = []
    for piece in splitter.split(text[start:end]):
        if piece.label:
            name = f"{prefix} {piece.label}"
        else:
            counts[prefix] += 1
            name = f"{prefix}[{counts[prefix] - 1}]"
        pieces.append(_Piece(name, start + piece.end, piece.text, None, where))
    return pieces


def _sections_of(
    text: str, start: int, stop: int, separators: tuple[str, ...], prefix: str, where: str, splitter: Splitter
) -> list[_Piece]:
    """Cut ``text[start:stop]`` into sections and the separators between them (``separators``: the
    system's two, or the HUD's blank line)."""
    pieces: list[_Piece] = []
    counts: Counter[str] = Counter()
    pos = start
    # the system text has one blank line between sections, where the cached part ends; the HUD
    # has one after every part
    blank_lines = separators == ("\n\n",) or not any(p.text == "\n\n" for p in pieces)
    while pos < stop:
        marker = marker_at(text, pos)
        end = _region_end(text, pos, marker) if marker is not None else None
        if end is None or not (end >= stop or any(text.startswith(s, end) for s in separators)):
            greedy = marker is not None and marker.greedy
            end = _next_start(
                text, end if end is not None else pos + 1, stop, not greedy, separators, blank_lines and not greedy
            )
        if marker is not None:
            pieces.append(_Piece(marker.name, end, text[pos:end], marker.trinket, where))
        else:
            pieces += _unknown(text, pos, end, prefix, where, splitter, counts)
        if end >= stop:
            break
        separator = next(s for s in separators if text.startswith(s, end))
        pieces.append(_Piece(COMPOSER, end + len(separator), separator, COMPOSER, where))
        pos = end + len(separator)
        if separators != ("\n\n",) and separator == "\n\n":
            blank_lines = False
    return pieces


def _named(pieces: list[_Piece], where: str) -> list[_Piece]:
    """The composer's pieces named by what they come before (stable from request to request, as
    the cache simulation's block keys must be): ``(composer) before datetime_section``."""
    out = []
    for index, piece in enumerate(pieces):
        if piece.trinket == COMPOSER and not piece.name.startswith(f"{COMPOSER} "):
            following = next((p.name for p in pieces[index + 1 :] if p.trinket != COMPOSER), None)
            piece = replace(piece, name=f"{COMPOSER} {where} " + (f"before {following}" if following else "end"))
        out.append(piece)
    return out


def system_pieces(text: str, splitter: Splitter) -> list[_Piece]:
    """The system text cut into ``base_prompt``, its sections and the composer's separators."""
    match = _SCAFFOLDING.search(text)
    if match is None:
        raise ValueError("the system text has no MIRA scaffolding delimiter")
    pieces = [_Piece("base_prompt", match.end(), text[: match.end()], None, "system")]
    pos = match.end()
    if pos >= len(text):
        return pieces
    separator = SECTION_SEPARATOR if text.startswith(SECTION_SEPARATOR, pos) else "\n\n"
    if not text.startswith(separator, pos):
        pieces.append(_Piece("system (after the delimiter)", len(text), text[pos:], None, "system"))
        return pieces
    pieces.append(_Piece(COMPOSER, pos + len(separator), separator, COMPOSER, "system"))
    pieces += _sections_of(
        text, pos + len(separator), len(text), (SECTION_SEPARATOR, "\n\n"), "system", "system", splitter
    )
    return _named(pieces, "system")


def hud_pieces(text: str, splitter: Splitter) -> list[_Piece] | None:
    """The HUD string cut into its frame (the composer's), its parts and the blank lines after
    them; None if it is not a HUD."""
    head = _HUD_HEAD.match(text)
    if head is None:
        return None
    tail = f"</{head.group(2)}:hud>\n{RULE}"
    if not text.endswith("\n\n" + tail):
        return None
    stop = len(text) - len(tail) - 2
    pieces = [_Piece(f"{COMPOSER} hud frame", head.end(), text[: head.end()], COMPOSER, "notification")]
    if stop > head.end():
        pieces += _sections_of(text, head.end(), stop, ("\n\n",), "hud", "notification", splitter)
    pieces.append(_Piece(f"{COMPOSER} hud frame end", len(text), text[stop:], COMPOSER, "notification"))
    return _named(pieces, "hud")


def _text_block(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, Mapping) else None
    if (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "text"
        and isinstance(content[0].get("text"), str)
    ):
        return str(content[0]["text"])
    return None


def _dd_call(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, Mapping) else None
    if (
        message.get("role") == "assistant"
        and isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "tool_use"
        and str(content[0].get("id", "")).startswith(DD_PREFIX)
    ):
        return str(content[0]["id"])
    return None


def _dd_result(message: Any, call_id: str) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    return (
        isinstance(message, Mapping)
        and message.get("role") == "user"
        and isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "tool_result"
        and content[0].get("tool_use_id") == call_id
    )


def _item(text: str, where: str, index: int, cache: str | None) -> _Piece:
    marker = marker_at(text, 0)
    if marker is not None:
        return _Piece(marker.name, len(text), text, marker.trinket, where, cache)
    return _Piece(f"{where}[{index}]", len(text), text, None, where, cache)


def cut_mira(cut: Cutter, node: Node, body: Mapping[str, Any]) -> None:
    """A MIRA chat body as sections (the module docstring), into ``cut``."""
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                name = tool.get("name", index) if isinstance(tool, Mapping) else index
                cut.group(child.items[index], f"tool:{name}", "tool", "tools", [], ttl_of(tool))
        elif key == "system" and isinstance(value, list):
            block = child.items[0]
            text_node = block["text"]
            pieces = system_pieces(str(value[0]["text"]), cut.splitter)
            pieces[-1] = replace(pieces[-1], cache=ttl_of(value[0]))
            _emit(cut, text_node, "system", "system[0]", pieces)
        elif key == "messages" and isinstance(value, list):
            _messages(cut, child, value)


def _messages(cut: Cutter, node: Node, messages: list[Any]) -> None:
    first_user = next(
        (i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"), len(messages)
    )
    index = 0
    prefix = 0
    post = 0
    while index < len(messages):
        message = messages[index]
        child = node.items[index]
        text = _text_block(message)
        call = _dd_call(message) if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if index < first_user and text is not None and message.get("role") == "assistant" and not _STAMP.match(text):
            mark = ttl_of(content[0]) if isinstance(content, list) else None
            _emit(
                cut,
                child["content"].items[0]["text"],
                "message",
                f"msg[{index}]",
                [_item(text, "conversation_prefix", prefix, mark)],
            )
            prefix += 1
        elif (
            call is not None
            and index + 1 < len(messages)
            and _dd_result(messages[index + 1], call)
            and isinstance(messages[index + 1]["content"][0].get("content"), str)
        ):
            cut.group(child, f"post_history[{post}] {DD_TOOL}", "message", WIRE, [])
            index += 1
            result = messages[index]["content"][0]
            _emit(
                cut,
                node.items[index]["content"].items[0]["content"],
                "message",
                f"msg[{index}]",
                [_item(str(result["content"]), "post_history", post, ttl_of(result))],
            )
            post += 1
        elif (
            isinstance(message, Mapping)
            and message.get("role") == "assistant"
            and isinstance(content, str)
            and (hud := hud_pieces(content, cut.splitter)) is not None
        ):
            _emit(cut, child["content"], "message", f"msg[{index}]", hud)
        else:
            anthropic_message(cut, child, message, f"msg[{index}]")
        index += 1


# -- the composed prompt of a turn ------------------------------------------------------------------


def mira_prompt(sections: Sequence[Section], turn: int | None = None) -> ComposedPrompt:
    """The :class:`ComposedPrompt` MIRA's composer returned for a chat turn, from its sections:
    the system sections before the composer's ``"\\n\\n"`` are ``cached_content``, after it
    ``non_cached_content``; the prefix, post-history and HUD as the composer's other keys; every
    character owned by a section or by ``(composer)``."""
    records: list[SectionRecord] = []
    system: dict[str, list[tuple[str, int]]] = {"cached_content": [], "non_cached_content": []}
    items: dict[str, list[tuple[str, int]]] = {"conversation_prefix": [], "post_history": []}
    hud: list[tuple[str, int]] = []
    frame: tuple[str, str] | None = None
    cached = True
    for section in prompt_order(sections):
        where = section.where
        if where is None:
            continue
        if section.trinket == COMPOSER:
            if where == "system":
                if section.text == "\n\n":
                    cached = False
                    continue
                system["cached_content" if cached else "non_cached_content"].append((section.text, -1))
            elif where == "notification":
                hud.append((section.text, -1))
                head = _HUD_HEAD.match(section.text)
                if head is not None:
                    frame = (head.group(2), head.group(1))
            continue
        marker = next((m for m in MARKERS if m.name == section.name), None)
        if where == "system":
            policy = cached
        else:
            policy = marker.cache_policy if marker is not None else False
        index = len(records)
        records.append(SectionRecord(section.name, where, section.text, policy, section.trinket))
        if where == "system":
            system["cached_content" if cached else "non_cached_content"].append((section.text, index))
        elif where == "notification":
            hud.append((section.text, index))
        else:
            items[where].append((section.text, index))
    blame: BlameData = {}
    texts: dict[str, str] = {}
    for key, parts in [*system.items(), ("notification_center", hud)]:
        texts[key] = "".join(text for text, _ in parts)
        if parts:
            blame[key] = tuple((len(text), owner) for text, owner in parts if text)
    for where, parts in items.items():
        for number, (text, owner) in enumerate(parts):
            blame[f"{where}_items[{number}]"] = ((len(text), owner),) if text else ()
    return ComposedPrompt(
        texts["cached_content"],
        texts["non_cached_content"],
        [t for t, _ in items["conversation_prefix"]],
        [t for t, _ in items["post_history"]],
        texts["notification_center"],
        sections=records,
        turn=turn,
        blame=blame,
        hud_frame=frame,
    )


def _sniff(text: str) -> bool:
    """A file whose first readable records (up to five) include one of MIRA's tap requests."""
    tried = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        tried += 1
        try:
            if is_tap_request(json.loads(line)):
                return True
        except json.JSONDecodeError:
            pass
        if tried >= 5:
            return False
    return False


def _read_file(path: str, text: str, splitter: Splitter) -> tuple[list[LoggedRequest], list[ImportIssue]]:
    """The registry's whole-file reader: the chat turns and (marked ``background``) the other calls."""
    tap = read_tap(path, splitter, text=text)
    if not tap.turns:
        raise ValueError(f"{path}: no MIRA chat turn among the {tap.calls} calls (nothing imported)")
    return [*tap.turns, *tap.background], tap.issues


register_log_format(
    LogFormat(
        DIALECT,
        read_file=_read_file,
        sniff=_sniff,
        priority=5,
        dialect=MIRA_WIRE.name,
        title="MIRA's traffic tap (llm_requests.jsonl and llm_responses.jsonl)",
    ),
    replace=True,
)

__all__ = [
    "DIALECT",
    "MARKERS",
    "Marker",
    "TapRead",
    "read_tap",
    "pair",
    "is_tap_request",
    "responses_path",
    "cut_mira",
    "mira_prompt",
    "system_pieces",
    "hud_pieces",
    "marker_at",
]
