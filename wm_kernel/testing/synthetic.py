"""Claude-Code-shaped session transcripts made up here, for benchmarks, tests and notebooks.

:func:`claude_code_session` writes a transcript with the facts of the real format
(docs/interop.md): each assistant message streamed as one line per content block sharing
``message.id`` and ``requestId``, its usage repeated on every line with ``output_tokens`` growing;
parallel tool calls whose ``tool_result`` lines are each parented on their own ``tool_use`` line;
``progress``, ``file-history-snapshot`` and ``queue-operation`` lines between them; usage with the
5m/1h split under ``cache_creation`` and the cache read Claude Code gets (it caches on every
request); optionally a rewind (an abandoned branch), a ``compact_boundary`` with its summary, and a
subagent under ``<session>/subagents/``. Nothing random is left to chance: a ``seed`` makes the
same file, byte for byte.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> made = claude_code_session(folder / "s.jsonl", turns=3, seed=1)
>>> made.requests, made.lines, len(made.files)
(13, 85, 2)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

#: The prompt Claude Code sends before the first message (system prompt and tool schemas), which
#: its transcripts do not hold: the generator counts it in the usage as a real session would.
HIDDEN_PROMPT_TOKENS = 14_000
_WORDS = (
    "parser",
    "tracking",
    "number",
    "fixture",
    "test",
    "module",
    "returns",
    "value",
    "the",
    "a",
    "config",
    "reads",
    "file",
    "line",
    "error",
    "cache",
    "request",
    "session",
    "branch",
    "check",
)


@dataclass
class Made:
    """What :func:`claude_code_session` wrote: the files and the plain counts of their usage."""

    path: Path
    files: list[Path] = field(default_factory=list)
    lines: int = 0
    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0


class _Writer:
    def __init__(
        self,
        session: str,
        rng: random.Random,
        start: datetime,
        gap: timedelta,
        made: Made,
        sidechain: bool = False,
        agent: str | None = None,
    ) -> None:
        self.session, self.rng, self.at, self.gap = session, rng, start, gap
        self.made, self.sidechain, self.agent = made, sidechain, agent
        self.rows: list[str] = []
        self.count = 0
        self.context = HIDDEN_PROMPT_TOKENS  # tokens of the prompt so far (cached prefix)
        self.cached = 0
        self.cached_before = 0

    def uuid(self) -> str:
        self.count += 1
        return f"{self.session[:8]}-{self.agent or 'main'}-{self.count:06d}"

    def text(self, words: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(words))

    def tick(self, seconds: float = 1.0) -> str:
        self.at += timedelta(seconds=seconds)
        return self.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def line(self, kind: str, parent: str | None, **extra: Any) -> str:
        uuid = self.uuid()
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": "/home/dev/project",
            "sessionId": self.session,
            "version": "2.1.39",
            "gitBranch": "main",
        }
        if self.agent:
            record["agentId"] = self.agent
        record.update(type=kind, **extra, uuid=uuid, timestamp=self.tick(0.2))
        self.rows.append(json.dumps(record, ensure_ascii=False))
        return uuid

    def progress(self, parent: str, n: int) -> str:
        for _ in range(n):
            parent = self.line(
                "progress",
                parent,
                data={"type": "hook_progress", "hookEvent": "PostToolUse"},
                toolUseID=f"toolu_{self.count:06d}",
            )
        return parent

    def user(self, parent: str | None, content: Any, **extra: Any) -> str:
        tokens = len(json.dumps(content)) // 4
        self.context += tokens
        return self.line("user", parent, message={"role": "user", "content": content}, **extra)

    def assistant(self, parent: str, blocks: list[dict[str, Any]], model: str) -> tuple[str, list[str]]:
        """One streamed message: a line per block, the same id and usage, output growing."""
        self.made.requests += 1
        mid = f"msg_{self.session[:6]}{self.agent or ''}{self.made.requests:05d}"
        rid = f"req_{self.session[:6]}{self.agent or ''}{self.made.requests:05d}"
        written = max(self.context - self.cached, 0)
        one_hour = written if not self.agent else 0
        plain = self.rng.randint(1, 9)
        usage: dict[str, Any] = {
            "input_tokens": plain,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": self.cached,
            "cache_creation": {"ephemeral_5m_input_tokens": written - one_hour, "ephemeral_1h_input_tokens": one_hour},
            "output_tokens": 0,
            "service_tier": "standard",
        }
        self.cached_before = self.cached
        self.cached = self.context
        final = sum(len(json.dumps(b)) // 4 for b in blocks) + 1
        uuids = []
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            usage = {**usage, "output_tokens": final if last else self.rng.randint(1, 8)}
            parent = self.line(
                "assistant",
                parent,
                requestId=rid,
                message={
                    "model": model,
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            uuids.append(parent)
        self.made.input_tokens += plain
        self.made.cache_read_tokens += self.cached_before
        self.made.cache_write_5m_tokens += written - one_hour
        self.made.cache_write_1h_tokens += one_hour
        self.made.output_tokens += final
        self.context += final
        return parent, uuids

    def turn(self, parent: str | None, model: str, calls: int, words: int) -> str:
        """A user prompt, then the agent's tool rounds (``calls`` parallel calls in the first), then
        its answer; returns the last line."""
        parent = self.user(parent, self.text(words))
        self.line(
            "file-history-snapshot", None, messageId=parent, snapshot={"trackedFileBackups": {}}, isSnapshotUpdate=False
        )
        for round_ in range(2):
            n = calls if round_ == 0 else 1
            blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text(words // 2)}]
            blocks += [
                {
                    "type": "tool_use",
                    "id": f"toolu_{self.session[:4]}{self.count:06d}{i}",
                    "name": "Read",
                    "input": {"file_path": f"/home/dev/project/{self.rng.choice(_WORDS)}.py"},
                }
                for i in range(n)
            ]
            _, uuids = self.assistant(parent, blocks, model)
            for uuid, block in zip(uuids[1:], blocks[1:], strict=True):  # each result on its own call
                result = self.user(
                    uuid,
                    [{"tool_use_id": block["id"], "type": "tool_result", "content": self.text(words * 3)}],
                    toolUseResult={"type": "text"},
                    sourceToolAssistantUUID=uuid,
                )
                parent = self.progress(result, 2)
        last, _ = self.assistant(parent, [{"type": "text", "text": self.text(words)}], model)
        return last


def claude_code_session(
    path: str | Path,
    *,
    turns: int = 20,
    calls: int = 3,
    words: int = 40,
    seed: int = 0,
    start: datetime | None = None,
    gap: timedelta = timedelta(seconds=20),
    rewind: bool = True,
    compaction: bool = True,
    subagent: bool = True,
    model: str = "claude-opus-4-6",
    subagent_model: str = "claude-haiku-4-5-20251001",
) -> Made:
    """Write a Claude-Code-shaped session to ``path`` (module docstring) and return what it holds.

    ``turns`` user prompts, each answered through two tool rounds (``calls`` parallel calls in the
    first) and a final answer: three requests a turn. ``words`` sets the size of each text. A
    ``rewind`` abandons one branch after the first turn; ``compaction`` puts a compact boundary
    and its summary half-way; ``subagent`` writes one subagent file beside the session.

    Long because: eleven options of the shape written (turns, calls, words, rewind, compaction,
    subagent, the two models...), each a few lines of the one writer loop or of the subagent's
    file after it.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    path = Path(path)
    rng = random.Random(seed)
    session = f"{seed:08x}-0000-4000-8000-{turns:012d}"
    made = Made(path)
    writer = _Writer(session, rng, start or datetime(2026, 11, 30, 9, 0, tzinfo=UTC), gap, made)
    writer.line("queue-operation", None, operation="enqueue", content="")
    parent: str | None = None
    for number in range(turns):
        if number and compaction and number == turns // 2:
            boundary = writer.line(
                "system",
                None,
                subtype="compact_boundary",
                content="Conversation compacted",
                logicalParentUuid=parent,
                level="info",
                compactMetadata={"trigger": "auto", "preTokens": writer.context},
            )
            writer.context, writer.cached = HIDDEN_PROMPT_TOKENS, 0
            parent = writer.user(
                boundary,
                "This session is being continued from a previous conversation. " + writer.text(words * 4),
                isCompactSummary=True,
            )
        if number == 1 and rewind:
            abandoned = writer.user(parent, writer.text(words))  # the branch the user rewound
            writer.assistant(abandoned, [{"type": "text", "text": writer.text(words)}], model)
        parent = writer.turn(parent, model, calls, words)
        writer.at += gap
    rows = writer.rows
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    made.files.append(path)
    made.lines = len(rows)
    if subagent:
        agent = _Writer(session, rng, writer.at, gap, made, sidechain=True, agent="a1b2c3d")
        agent.turn(None, subagent_model, max(calls - 1, 1), words)
        folder = path.with_suffix("") / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        sub = folder / "agent-a1b2c3d.jsonl"
        sub.write_text("\n".join(agent.rows) + "\n", encoding="utf-8")
        made.files.append(sub)
        made.lines += len(agent.rows)
    return made


#: Each convention's name for the cache write count (``wm_kernel.interop.otlp`` reads them all).
WRITE_ATTRIBUTES = {
    "gen_ai": "gen_ai.usage.cache_creation.input_tokens",
    "anthropic-sdk": "gen_ai.usage.cache_write.input_tokens",
    "openinference": "llm.token_count.prompt_details.cache_write",
}


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def otlp_trace(
    path: str | Path,
    *,
    spans: int = 100,
    words: int = 40,
    window: int = 6,
    seed: int = 0,
    convention: str = "gen_ai",
    per_line: bool = False,
) -> Made:
    """Write an OTLP/HTTP JSON trace of ``spans`` chat spans in one ``convention`` (``gen_ai``: the
    GenAI registry and OpenLLMetry; ``anthropic-sdk``: the SDK's own tracing; ``openinference``),
    each span carrying its last ``window`` messages; one document, or (``per_line``) one per span
    as the collector's file exporter writes. Returns the plain counts of its usage."""
    if convention not in WRITE_ATTRIBUTES:
        raise ValueError(f"unknown convention {convention!r}; conventions: {', '.join(WRITE_ATTRIBUTES)}")
    path = Path(path)
    rng = random.Random(seed)
    made = Made(path, [path])
    history: list[dict[str, Any]] = []
    documents = []
    cached = 0
    for index in range(spans):
        text = " ".join(rng.choice(_WORDS) for _ in range(words))
        history.append(
            {"role": "user" if index % 2 == 0 else "assistant", "parts": [{"type": "text", "content": text}]}
        )
        shown = history[-window:]
        prompt = HIDDEN_PROMPT_TOKENS // 10 + sum(len(m["parts"][0]["content"]) // 4 for m in shown)
        read = cached if len(history) <= window else 0  # a slid window is a new prefix
        written = prompt - read - 3
        output = rng.randint(5, 60)
        cached = prompt
        made.requests += 1
        made.input_tokens += 3
        made.cache_read_tokens += read
        made.cache_write_5m_tokens += written
        made.output_tokens += output
        attributes = _span_attributes(convention, shown, prompt=prompt, read=read, written=written, output=output)
        documents.append(_span(seed, index, attributes))
    made.lines = _write_trace(path, documents, convention, per_line)
    return made


def _span_attributes(
    convention: str, shown: list[dict[str, Any]], *, prompt: int, read: int, written: int, output: int
) -> list[dict[str, Any]]:
    """The attributes of one chat span in ``convention``: the model, its usage and the messages
    ``shown``."""
    if convention == "openinference":
        attributes = [
            _attribute("openinference.span.kind", "LLM"),
            _attribute("llm.provider", "anthropic"),
            _attribute("llm.model_name", "claude-sonnet-4-5-20250929"),
            _attribute("llm.token_count.prompt", prompt),
            _attribute("llm.token_count.prompt_details.cache_read", read),
            _attribute("llm.token_count.prompt_details.cache_write", written),
            _attribute("llm.token_count.completion", output),
        ]
        for i, message in enumerate(shown):
            attributes += [
                _attribute(f"llm.input_messages.{i}.message.role", message["role"]),
                _attribute(f"llm.input_messages.{i}.message.content", message["parts"][0]["content"]),
            ]
        return attributes
    return [
        _attribute("gen_ai.operation.name", "chat"),
        _attribute("gen_ai.provider.name", "anthropic"),
        _attribute("gen_ai.request.model", "claude-sonnet-4-5-20250929"),
        _attribute("gen_ai.usage.input_tokens", prompt),
        _attribute("gen_ai.usage.cache_read.input_tokens", read),
        _attribute(WRITE_ATTRIBUTES[convention], written),
        _attribute("gen_ai.usage.output_tokens", output),
        _attribute("gen_ai.input.messages", json.dumps(shown, ensure_ascii=False)),
    ]


#: When the first made-up span starts (nanoseconds since the epoch); one span every 20 seconds.
_TRACE_START = 1_796_036_400_000_000_000


def _span(seed: int, index: int, attributes: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``index``-th chat span of the trace of ``seed``: 1.5 seconds long, 20 seconds after the last."""
    return {
        "traceId": f"{seed:016x}{index:016x}",
        "spanId": f"{index + 1:016x}",
        "name": "chat",
        "kind": 3,
        "startTimeUnixNano": str(_TRACE_START + index * 20_000_000_000),
        "endTimeUnixNano": str(_TRACE_START + index * 20_000_000_000 + 1_500_000_000),
        "status": {"code": 0},
        "attributes": attributes,
    }


def _write_trace(path: Path, spans: list[dict[str, Any]], convention: str, per_line: bool) -> int:
    """Write ``spans`` to ``path`` as one OTLP document, or one per line (``per_line``); the
    number of lines written."""
    scope = {"scope": {"name": f"synthetic.{convention}"}}
    if per_line:
        rows = [
            json.dumps(
                {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{**scope, "spans": [span]}]}]}
            )
            for span in spans
        ]
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        return len(rows)
    document = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{**scope, "spans": spans}]}]}
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return 1


# -- a session with its compactions: the cache clock's example (notebook 15) ------------------------

#: The session id of :func:`compacted_session`.
COMPACTED_SESSION = "c10c4000-0000-4000-8000-000000000047"


class _Chain:
    """The lines of one Claude Code conversation (the session file or a subagent's), written in
    send order: a request is a user line at its send time and the reply a second later."""

    def __init__(self, start: datetime, agent: str | None = None, parent: str | None = None) -> None:
        self.start, self.agent, self.last = start, agent, parent
        self.lines: list[dict[str, Any]] = []
        self.requests = 0

    def line(self, kind: str, seconds: float, **fields: Any) -> dict[str, Any]:
        uuid = f"{(self.agent or 'main')[:12]}-{len(self.lines) + 1:04d}"
        line: dict[str, Any] = {
            "parentUuid": self.last,
            "isSidechain": self.agent is not None,
            "userType": "external",
            "cwd": "/home/dev/spotter",
            "sessionId": COMPACTED_SESSION,
            "version": "2.1.39",
            "gitBranch": "main",
        }
        if self.agent is not None:
            line["agentId"] = self.agent
        line.update(type=kind, **fields)
        line["uuid"] = uuid
        line["timestamp"] = (self.start + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
        line["timestamp"] = line["timestamp"].replace("+00:00", "Z")
        self.lines.append(line)
        self.last = uuid
        return line

    def request(
        self, seconds: float, model: str, text: str, *, read: int, write: int, one_hour: bool = True, **user: Any
    ) -> None:
        """A user message at ``seconds`` and the reply a second later, its usage: 3 plain tokens,
        ``read`` from the cache, ``write`` written (at one hour, or five minutes)."""
        self.line("user", seconds, message={"role": "user", "content": text}, **user)
        self.requests += 1
        tag = f"{(self.agent or 'main')[:12]}{self.requests:03d}"
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if one_hour else write,
                "ephemeral_1h_input_tokens": write if one_hour else 0,
            },
            "output_tokens": 180,
            "service_tier": "standard",
        }
        message = {
            "model": model,
            "id": f"msg_{tag}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": f"Done: {text.lower()}"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        self.line("assistant", seconds + 1, requestId=f"req_{tag}", message=message)

    def boundary(self, seconds: float, trigger: str, pre_tokens: int) -> None:
        """A ``compact_boundary`` (a new chain, its logical parent the last line) and the summary."""
        logical, self.last = self.last, None
        self.line(
            "system",
            seconds,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=logical,
            level="info",
            compactMetadata={"trigger": trigger, "preTokens": pre_tokens},
        )
        summary = "This session is being continued from a previous conversation that ran out of context."
        self.line("user", seconds + 0.2, message={"role": "user", "content": summary}, isCompactSummary=True)


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def compacted_session(folder: str | Path) -> Path:
    """Write a Claude Code session with two compactions, and its subagents, under ``folder``;
    return the session file (``<folder>/<COMPACTED_SESSION>.jsonl``, its ``subagents/`` beside).

    It reproduces the figures of the shared real session (Claude Code 2.1.39, Opus 4.6 with
    one-hour writes, docs/planner.md): a 21,460-token system prompt and tools, an automatic
    compaction at the 167,000-token threshold (``preTokens`` 167,094) 25.737 s after the last
    request, on a warm cache (it reads 166,758, one token short of that request's 166,759, writes
    2,487 at one hour: $0.108264), the next request reading the 21,460 again; and, as issue 47
    tells of another real session, a manual compaction after a 13-minute idle and a switch to
    Sonnet 4.6, which reads nothing from the cache and writes the whole history again ($0.77).
    An Explore subagent on Haiku 4.5 runs on a cache of its own. Every figure is fixed: the same
    files, byte for byte, at every call.

    Long because: a script of fixed figures: each request of the main chain, the Explore subagent
    and both compactions written in turn, with the numbers the docstring promises.
    """
    folder = Path(folder)
    start = datetime(2026, 2, 11, 9, 30, tzinfo=UTC)
    opus, sonnet, haiku = "claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5-20251001"
    main = _Chain(start)
    hidden = 21_460
    total = hidden + 1_200 + 3
    main.request(0, opus, "Read the spotter test fixtures and list the transcript parsers.", read=0, write=total - 3)
    growth = [9_000, 14_000, 11_500, 16_000, 12_500, 13_000, 15_500, 10_500, 14_000, 12_096, 16_000]
    gaps = [45, 70, 52, 90, 38, 420, 61, 55, 83, 47, 66]
    at = 0.0
    explore: _Chain | None = None
    for step, (grown, gap) in enumerate(zip(growth, gaps, strict=True)):
        at += gap
        main.request(at, opus, f"Step {step + 1}: refactor the next parser.", read=total, write=grown - 3)
        total += grown
        if step == 3:  # an Explore subagent, on its own model and cache
            explore = _Chain(start + timedelta(seconds=at + 5), agent="a5e1f00", parent=main.last)
            explore.request(0, haiku, "Find every caller of parse_line().", read=0, write=9_800, one_hour=False)
            explore.request(12, haiku, "Read the three callers.", read=9_803, write=6_400, one_hour=False)
            explore.request(30, haiku, "Summarise what they expect.", read=16_206, write=2_100, one_hour=False)
    assert total == 166_759  # the request before the automatic compaction
    # the automatic compaction: a run of its own that forks the cached conversation
    call_at = at + 25.737
    auto = _Chain(start + timedelta(seconds=call_at), agent="acompact-7a1b2c", parent=main.last)
    auto.request(
        0, opus, "Your task is to create a detailed summary of the conversation so far.", read=166_758, write=2_487
    )
    main.boundary(call_at + 48, "auto", 167_094)
    at = call_at + 49
    main.request(at, opus, "Carry on with the parsers.", read=hidden, write=4_300)
    total = hidden + 4_300 + 3
    for grown, gap in zip(
        [13_000, 17_500, 11_000, 15_500, 12_000, 14_500, 18_067], [58, 44, 96, 71, 39, 64, 80], strict=True
    ):
        at += gap
        main.request(at, opus, "Next parser.", read=total, write=grown - 3)
        total += grown
    # 13 minutes idle, then /model sonnet and /compact: the summary reads nothing of Opus's cache
    call_at = at + 13 * 60
    manual = _Chain(start + timedelta(seconds=call_at), agent="acompact-9d8e7f", parent=main.last)
    manual.request(
        0, sonnet, "Your task is to create a detailed summary of the conversation so far.", read=0, write=total + 497
    )
    main.boundary(call_at + 52, "manual", total + 380)
    at = call_at + 53
    main.request(at, sonnet, "Now write the tests for the parsers.", read=0, write=hidden + 4_050)
    main.request(at + 50, sonnet, "Run them.", read=hidden + 4_053, write=2_200)
    path = folder / f"{COMPACTED_SESSION}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    _write(path, main.lines)
    agents = folder / COMPACTED_SESSION / "subagents"
    agents.mkdir(parents=True, exist_ok=True)
    for chain in (explore, auto, manual):
        assert chain is not None and chain.agent is not None
        _write(agents / f"agent-{chain.agent}.jsonl", chain.lines)
    return path


__all__ = [
    "HIDDEN_PROMPT_TOKENS",
    "WRITE_ATTRIBUTES",
    "Made",
    "claude_code_session",
    "otlp_trace",
    "COMPACTED_SESSION",
    "compacted_session",
]
