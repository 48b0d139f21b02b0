"""MIRA's traffic tap read back: its two files read, their calls sorted into chat turns and background.

MIRA appends every provider call, while its tap is on, to ``llm_requests.jsonl`` (``{"ts",
"provider", "endpoint", "model", "body"}``) and the response to ``llm_responses.jsonl`` beside it
(``{"ts", "provider", "model", "endpoint", "response"}``), one JSON object a line written with
``ensure_ascii=False``: raw U+2028 and other line separators occur inside records, so lines are
split on ``"\\n"`` only (``ts`` is ``time.time()``, seconds since the epoch). docs/mira-wire.md
has the layout.

Requests are paired with responses by :func:`~wm_kernel.interop.mira.pairing.pair` (the tap keeps
no id; two calls of one model sent at the same instant are told apart by what their bodies and
responses hold); a response that finds no call, one that could answer several calls nothing tells
apart, and a call no response answers, is an
:class:`~wm_kernel.interop.formats.ImportIssue` naming its file and line; a call without a response
still imports, without usage.

Chat turns and background calls
    A chat turn is an Anthropic request whose system text carries MIRA's scaffolding delimiter
    (the base prompt, a blank line, a rule of 60 "═", a note, a rule) on the conversation's model
    (the most frequent such model); every other call (other models, other system prompts, generic
    OpenAI-compatible calls) is background, kept apart (``ImportedSession.background``). A chat
    turn is cut into MIRA's sections by :func:`~wm_kernel.interop.mira.sections.cut_mira`; a
    background call as the wire its body reads as.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from wm_kernel.dialects.registry import body_dialect, get_dialect
from wm_kernel.interop.bodies import Cutter, cut_body
from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest, epoch_time
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.mira.markers import SCAFFOLDING
from wm_kernel.interop.mira.pairing import Ambiguous, Call, Record, pair, usage_of
from wm_kernel.interop.mira.sections import cut_mira
from wm_kernel.interop.split import Splitter
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.fastjson import loads_exact
from wm_kernel.utils.safe_files import BOM, BadJSONError, parse_json, read_text

#: The log format of MIRA's tap, and the ``dialect`` of a chat turn read from it (the wire it holds is
#: ``wm_kernel.dialects.mira``'s).
DIALECT = "mira-tap"
#: The file the responses are in, beside the requests file.
RESPONSES_NAME = "llm_responses.jsonl"
REQUEST_KEYS = frozenset({"ts", "provider", "endpoint", "model", "body"})
RESPONSE_KEYS = frozenset({"ts", "provider", "model", "response"})

#: The wire a chat turn is on (``wm_kernel.dialects.mira``): its provider is the tap's ``provider``
#: for those calls, and the shape of every usage the tap holds (MIRA's generic client reports
#: Anthropic's keys too).
MIRA_WIRE = get_dialect("mira")
USAGE_SHAPE = get_dialect(MIRA_WIRE.provider).log_format


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


def _records(path: Path, text: str, keys: frozenset[str], what: str, issues: list[ImportIssue]) -> list[Record]:
    out = []
    name = str(path)
    # the tap writes raw U+2028 (ensure_ascii=False): a line ends at "\n" and nowhere else
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line.removeprefix(BOM) if number == 1 else line)
        except BadJSONError as exc:
            issues.append(ImportIssue(name, number, str(exc)))
            continue
        if not isinstance(value, Mapping) or not keys <= set(value):
            issues.append(ImportIssue(name, number, f"not a MIRA tap {what} record (keys: {', '.join(sorted(keys))})"))
            continue
        ts = value["ts"]
        try:
            epoch_time(ts, "ts")
        except ValueError as exc:
            issues.append(ImportIssue(name, number, str(exc)))
            continue
        if what == "request" and not isinstance(value.get("body"), Mapping):
            issues.append(ImportIssue(name, number, "the request record has no body object"))
            continue
        out.append(Record(number, line, value, float(ts)))
    return out


def _responses(answers: Path, issues: list[ImportIssue]) -> list[Record]:
    """The records of the responses file ``answers``; none, with an issue saying the requests are
    imported without usage, when it is missing or cannot be read."""
    if not answers.exists():
        issues.append(
            ImportIssue(str(answers), 0, "no responses file beside the requests; requests imported without usage")
        )
        return []
    try:
        # a regular file only (a FIFO named llm_responses.jsonl would wait for a writer forever)
        return _records(answers, read_text(answers, errors="replace"), RESPONSE_KEYS, "response", issues)
    except (OSError, ValueError) as exc:
        why = str(exc).removeprefix(f"{answers}: ") if isinstance(exc, ValueError) else exc.strerror or str(exc)
        issues.append(
            ImportIssue(str(answers), 0, f"cannot read the responses ({why}); requests imported without usage")
        )
        return []


def _unpaired(
    where: Path, answers: Path, calls: Sequence[Call], left: Sequence[Record], ambiguous: Sequence[Ambiguous]
) -> list[ImportIssue]:
    """What pairing left over, an issue each: a response no request answers, a response that could
    answer several requests, and (where there is a responses file) a request no response answers."""
    unpaired = [
        ImportIssue(
            str(answers),
            r.line,
            f"a response ({r.value.get('provider')}, {r.value.get('model')}) no request answers: not imported",
        )
        for r in left
    ]
    unpaired += [
        ImportIssue(
            str(answers),
            a.response.line,
            f"a response ({a.response.value.get('provider')}, {a.response.value.get('model')}) that could answer "
            f"the requests on lines {', '.join(str(c.last.line) for c in a.calls)} of {where.name} (sent at the same "
            "instant; neither their sizes nor the history of a later request tells which): not paired",
        )
        for a in ambiguous
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
    return unpaired


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
            text = read_text(where, errors="replace")  # a regular file only: a FIFO or a device is one line
        except OSError as exc:
            raise ValueError(f"{where}: cannot read the file ({exc})") from None
    requests = _records(where, text, REQUEST_KEYS, "request", issues)
    if not requests:
        first = issues[0] if issues else ImportIssue(str(where), 1, "no requests in the file")
        raise ValueError(f"{first} (nothing imported)")
    answers = responses_path(where)
    responses = _responses(answers, issues)
    calls, retries, left, ambiguous = pair(requests, responses, count)
    unpaired = _unpaired(where, answers, calls, left, ambiguous)
    chat_model = _chat_model(calls)
    turns: list[LoggedRequest] = []
    background: list[LoggedRequest] = []
    for call in calls:
        try:
            request, chat = _logged(call, where, split, chat_model)
        except (ValueError, KeyError, TypeError, IndexError, OverflowError) as exc:
            issues.append(ImportIssue(str(where), call.last.line, str(exc)))
            continue
        except RecursionError:
            issues.append(ImportIssue(str(where), call.last.line, "JSON nested too deeply to read; not imported"))
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


def _is_mira_chat(record: Record) -> bool:
    body = record.value["body"]
    if record.value["provider"] != MIRA_WIRE.provider or not isinstance(body.get("messages"), list):
        return False
    system = body.get("system")
    text = _system_text(body)
    return isinstance(system, list) and len(system) == 1 and text is not None and SCAFFOLDING.search(text) is not None


def _chat_model(calls: Sequence[Call]) -> str | None:
    models = Counter(str(c.last.value["model"]) for c in calls if _is_mira_chat(c.last))
    return models.most_common(1)[0][0] if models else None


def _sent_at(ts: float) -> datetime:
    return epoch_time(ts, "ts")


def _logged(call: Call, path: Path, splitter: Splitter, chat_model: str | None) -> tuple[LoggedRequest, bool]:
    record = call.last
    value = record.value
    body = value["body"]
    usage = usage_of(call.response.value) if call.response is not None else None
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


def _sniff(text: str) -> bool:
    """A file whose first readable records (up to five) include one of MIRA's tap requests."""
    tried = 0
    start = 0
    while start <= len(text):  # line by line, as far as needed (every file read is sniffed)
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line, start = text[start:end], end + 1
        if not line.strip():
            continue
        tried += 1
        record = line.removeprefix(BOM)
        try:
            if is_tap_request(loads_exact(record.encode("utf-8", "surrogatepass"), record, fallback=parse_json)):
                return True
        except BadJSONError:
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


#: the log format ``wm_kernel.interop.readers`` lists under ``mira-tap``
LOG_FORMAT = LogFormat(
    DIALECT,
    read_file=_read_file,
    sniff=_sniff,
    priority=5,
    dialect=MIRA_WIRE.name,
    title="MIRA's traffic tap (llm_requests.jsonl and llm_responses.jsonl)",
)

__all__ = [
    "DIALECT",
    "LOG_FORMAT",
    "TapRead",
    "read_tap",
    "is_tap_request",
    "responses_path",
]
