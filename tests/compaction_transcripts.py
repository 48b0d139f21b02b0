"""Small Claude Code transcripts with compactions, written by the tests (facts of the format,
../shared/real-logs/README.md): a ``compact_boundary`` system line (``parentUuid`` null,
``logicalParentUuid`` the last line before it, ``compactMetadata``) followed by the summary user
line parented on it; the compaction itself a request of ``<session>/subagents/agent-acompact-*.jsonl``
whose lines are sidechain lines parented on the session's last line; usage with its 5m/1h split.

Each scenario returns the session file; times are 2026-01-05 UTC."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 1, 5, 10, tzinfo=UTC)


def usage(input: int, read: int, w5: int = 0, w1h: int = 0, output: int = 50) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "cache_creation_input_tokens": w5 + w1h,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
        "output_tokens": output,
        "service_tier": "standard",
    }


class Transcript:
    """One session file and its subagent files, line by line."""

    def __init__(self, folder: Path, session: str = "5e551011-0000-4000-8000-000000000001") -> None:
        self.folder, self.session = folder, session
        self.lines: list[dict[str, Any]] = []
        self.agents: dict[str, list[dict[str, Any]]] = {}
        self.last: str | None = None
        self.count = 0

    def _uuid(self) -> str:
        self.count += 1
        return f"00000000-0000-4000-8000-{self.count:012d}"

    def _line(self, kind: str, seconds: float, **fields: Any) -> dict[str, Any]:
        uuid = self._uuid()
        line = {
            "parentUuid": self.last,
            "isSidechain": False,
            "userType": "external",
            "sessionId": self.session,
            "version": "2.1.39",
            "type": kind,
            "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
            "uuid": uuid,
        }
        line.update(fields)
        return line

    def user(self, seconds: float, text: str, **fields: Any) -> None:
        line = self._line("user", seconds, message={"role": "user", "content": text}, **fields)
        self.lines.append(line)
        self.last = line["uuid"]

    def assistant(self, seconds: float, model: str, counts: dict[str, Any], text: str = "Done.") -> None:
        line = self._line(
            "assistant",
            seconds,
            requestId=f"req_{self.count:04d}",
            message={
                "id": f"msg_{self.count:04d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": counts,
            },
        )
        self.lines.append(line)
        self.last = line["uuid"]

    def turn(self, seconds: float, model: str, counts: dict[str, Any]) -> None:
        """A user message at ``seconds`` (the request's send time) and the reply a second later."""
        self.user(seconds, f"step at {seconds}s")
        self.assistant(seconds + 1, model, counts)

    def compaction_call(self, agent: str, seconds: float, model: str, counts: dict[str, Any]) -> None:
        """The ``agent-acompact-*`` run: a prompt parented on the session's last line, its summary."""
        prompt = self._line(
            "user",
            seconds,
            isSidechain=True,
            agentId=agent,
            message={"role": "user", "content": "Your task is to create a detailed summary of the conversation."},
        )
        reply = self._line(
            "assistant",
            seconds + 40,
            isSidechain=True,
            agentId=agent,
            parentUuid=prompt["uuid"],
            requestId=f"req_{self.count:04d}",
            message={
                "id": f"msg_{self.count:04d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "<summary>What happened so far.</summary>"}],
                "stop_reason": "end_turn",
                "usage": counts,
            },
        )
        self.agents[f"agent-acompact-{agent}"] = [prompt, reply]

    def boundary(self, seconds: float, trigger: str, pre_tokens: int) -> None:
        """The compact_boundary line and the summary the chain continues from."""
        line = self._line(
            "system",
            seconds,
            parentUuid=None,
            logicalParentUuid=self.last,
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            compactMetadata={"trigger": trigger, "preTokens": pre_tokens},
        )
        self.lines.append(line)
        self.last = line["uuid"]
        self.user(seconds + 0.2, "This session is being continued from a previous conversation.", isCompactSummary=True)

    def write(self) -> Path:
        path = self.folder / f"{self.session}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        if self.agents:
            sub = self.folder / self.session / "subagents"
            sub.mkdir(parents=True)
            for name, lines in self.agents.items():
                (sub / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        return path


def warm_auto(folder: Path) -> Path:
    """An automatic compaction on a warm cache (Opus 4.6, one-hour writes), 20 s after the last
    request: it reads the whole conversation but one token."""
    t = Transcript(folder)
    t.turn(0, "claude-opus-4-6", usage(3, 0, w1h=20_000))
    t.turn(30, "claude-opus-4-6", usage(1, 20_003, w1h=1_000))
    t.turn(60, "claude-opus-4-6", usage(1, 21_004, w1h=2_000))
    t.compaction_call("a1b2c3", 80, "claude-opus-4-6", usage(3, 23_004, w1h=1_500))
    t.boundary(120, "auto", 23_100)
    t.turn(121, "claude-opus-4-6", usage(3, 12_000, w1h=3_000))
    return t.write()


def manual_after_idle_and_switch(folder: Path) -> Path:
    """A five-minute chain on Haiku 4.5 (a dated snapshot id), then ten minutes idle, a switch
    to Opus 4.6 and a manual compaction that reads little and writes the history again."""
    t = Transcript(folder)
    t.turn(0, "claude-haiku-4-5-20251001", usage(3, 0, w5=95_000))
    t.turn(30, "claude-haiku-4-5-20251001", usage(2, 95_003, w5=4_995))
    t.compaction_call("d4e5f6", 630, "claude-opus-4-6", usage(3, 12_000, w5=90_000))
    t.boundary(680, "manual", 100_000)
    t.turn(685, "claude-opus-4-6", usage(3, 0, w5=20_000))
    return t.write()


def call_missing_then_cold(folder: Path) -> Path:
    """Two compactions on Sonnet 4.6 (five-minute writes): the first one's call is not in the log
    (an older writer); the second runs 28.5 minutes after the last request, on a cold cache."""
    t = Transcript(folder)
    t.turn(0, "claude-sonnet-4-6", usage(3, 0, w5=50_000))
    t.boundary(60, "auto", 50_100)
    t.turn(65, "claude-sonnet-4-6", usage(3, 4_000, w5=6_000))
    t.turn(90, "claude-sonnet-4-6", usage(1, 10_003, w5=500))
    t.compaction_call("0a0b0c", 1_800, "claude-sonnet-4-6", usage(3, 4_000, w5=7_000))
    t.boundary(1_840, "manual", 10_600)
    t.turn(1_845, "claude-sonnet-4-6", usage(3, 4_000, w5=2_000))
    return t.write()


def no_compaction(folder: Path) -> Path:
    t = Transcript(folder)
    t.turn(0, "claude-sonnet-4-6", usage(3, 0, w5=8_000))
    t.turn(30, "claude-sonnet-4-6", usage(1, 8_003, w5=300))
    return t.write()
