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
    and its summary half-way; ``subagent`` writes one subagent file beside the session."""
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


__all__ = ["HIDDEN_PROMPT_TOKENS", "WRITE_ATTRIBUTES", "Made", "claude_code_session", "otlp_trace"]
