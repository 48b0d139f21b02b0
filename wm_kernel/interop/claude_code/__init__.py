"""A Claude Code session transcript read into the requests the model saw.

A transcript (``~/.claude/projects/<project>/<session>.jsonl``) is JSON Lines, one object per line;
``user`` and ``assistant`` lines carry an Anthropic message, the other types (``progress``,
``file-history-snapshot``, ``queue-operation``, ``summary``, ``system``...) are ordinary lines that
carry none: they are counted (:attr:`ClaudeCodeReader.skipped`) and kept only as links of the chain.

How the lines become requests (the facts of the format, docs/interop.md):

- One streamed assistant message is written as several lines, one per content block, sharing
  ``message.id``: they are one assistant message, and one request. The input and cache counts repeat
  on every line and ``output_tokens`` grows, so the usage is the *last* line's.
- Lines are threaded by ``parentUuid``. With parallel tool calls each ``tool_result`` line is
  parented on its own ``tool_use`` line: every result given to one assistant message goes into one
  user message, the one the next request sends. Consecutive user lines are one user message, as the
  API merges them.
- A request's messages are the chain of messages before its assistant message, so a rewind's
  abandoned branch is in no later request; a ``compact_boundary`` line (``parentUuid: null``)
  starts a new chain at the summary after it (its first request is marked ``after-compaction``).
- Lines with ``parentUuid: null`` in a file whose lines named no parent before (older writers put
  it on every line), lines without ``parentUuid``, and lines whose parent was not read (a line
  skipped for a bad byte), follow the previous message line in file order. Once the file's lines
  name their parents, a message line with ``parentUuid: null`` starts a new chain.
- ``isSidechain`` lines, and the files under ``<session>/subagents/``, are other conversations
  (``LoggedRequest.conversation``) with their own caches; a subagent line whose parent is a line of
  the session it came from continues that session's messages (a compaction run, agent
  ``acompact-...``, reads the whole conversation: marked ``compaction``).
- A parent chain that loops is reported (one :class:`ImportIssue`) and read as a new chain.

Each line is cut into sections once; every request holding that line shares them (memory grows
with the transcript, not with requests times conversation length).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wm_kernel.interop.bodies import Cutter, anthropic_message
from wm_kernel.interop.claude_code.chain import Chain, ChainLines, ChainSections, Line, Message
from wm_kernel.interop.formats import CLAUDE_CODE_WIRE, ImportIssue, LogFormat, LoggedRequest, parse_time
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.split import Splitter


def _boundary(line: int, value: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a ``compact_boundary`` line recorded: its ``compactMetadata`` (``trigger``,
    ``preTokens``), its time and its line."""
    meta = value.get("compactMetadata")
    found = dict(meta) if isinstance(meta, Mapping) else {}
    found.update(timestamp=value.get("timestamp"), line=line)
    return found


def _blocks(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    return len(content) if isinstance(content, list) else 1


def _has_result(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for block in content:  # (a parsed block is a dict: the exact type check spares the ABC check)
        if (type(block) is dict or isinstance(block, Mapping)) and block.get("type") == "tool_result":
            return True
    return False


class ClaudeCodeReader:
    """A Claude Code session transcript (module docstring). ``context`` is the reader of the session
    a subagent file belongs to: a parent line found there continues that session's messages."""

    def __init__(
        self,
        path: str,
        splitter: Splitter,
        context: ClaudeCodeReader | None = None,
        subagent: bool = False,
        *,
        usage_only: bool = False,
    ) -> None:
        self.path = path
        #: read for the usage alone (the usage report): the lines are threaded as ever, but neither
        #: cut into sections nor kept (its requests have no sections)
        self.usage_only = usage_only
        #: whether ``feed`` needs each line's text (the file reader decodes it only then)
        self.keeps_text = not usage_only
        self.splitter = splitter
        self.context = context
        self.subagent = subagent
        self.skipped: Counter[str] = Counter()
        self.issues: list[ImportIssue] = []
        # uuid -> (message, index of the line in it) the line leads to; (None, -1) starts a chain
        self.links: dict[str, tuple[Message | None, int]] = {}
        self.raw_parent: dict[str, str] = {}
        self.unresolved: list[tuple[int, str, str]] = []  # (line, uuid, parent not seen yet)
        self.boundaries: dict[str, Mapping[str, Any]] = {}  # compact_boundary uuid -> what it recorded
        self.last_boundary: Mapping[str, Any] | None = None
        self.by_key: dict[str, Message] = {}
        self.order: list[Message] = []  # assistant messages, first line order
        self.previous: tuple[Message, int] | None = None  # the last message line, file order
        self.previous_side: tuple[Message, int] | None = None
        self.stem = Path(path).stem
        self.linked = False  # a line named its parent: a null parent starts a new chain

    # -- reading
    def feed(self, line: int, text: str, value: Any) -> None:
        """Read one transcript line (``value`` parsed from ``text``, on line ``line``) into the
        message it belongs to.

        Long because: one transcript line: a branch for the lines that are not messages, then a
        message line's link, boundary, sections and (for an assistant line) each field it carries.
        """
        # (a parsed line is a dict: the exact type check spares the ABC check on every line)
        if (type(value) is not dict and not isinstance(value, Mapping)) or not isinstance(value.get("type"), str):
            raise ValueError("not a Claude Code transcript line: no 'type'")
        kind = value["type"]
        uuid, parent = value.get("uuid"), value.get("parentUuid")
        if isinstance(uuid, str) and isinstance(parent, str):
            self.raw_parent[uuid] = parent
        message = value.get("message")
        if kind not in ("user", "assistant"):
            self.skipped[kind] += 1
            if isinstance(uuid, str) and uuid not in self.links:
                if kind == "system" and value.get("subtype") == "compact_boundary":
                    self.boundaries[uuid] = self.last_boundary = _boundary(line, value)
                    self.links[uuid] = (None, -1)
                else:
                    self.links[uuid] = self._parent_of(line, uuid, parent, value)
            return
        if not isinstance(message, Mapping):
            raise ValueError(f"a {kind} line without a 'message' object")
        if isinstance(uuid, str) and uuid in self.links:
            self.skipped["duplicate"] += 1  # a line written again (a resumed session)
            return
        at = parse_time(value.get("timestamp"), "timestamp")
        sidechain = bool(value.get("isSidechain"))
        after, pos = self._parent_of(line, uuid if isinstance(uuid, str) else None, parent, value)
        summary = isinstance(parent, str) and parent in self.boundaries or bool(value.get("isCompactSummary"))
        target, first = self._message_for(kind, message, value, after, pos, sidechain, summary)
        if summary and after is None and target.boundary is None:
            # the boundary the summary is parented on, else (an isCompactSummary line) the last one read
            target.boundary = self.boundaries.get(parent) if isinstance(parent, str) else None
            target.boundary = target.boundary or self.last_boundary
        if self.usage_only:
            entry = Line(line, "", (), at, _blocks(message))
        else:
            node = locate(text)
            cut = Cutter(text, self.splitter)
            anthropic_message(cut, node["message"], message, f"msg[{target.depth}]", first)
            entry = Line(line, text, tuple(cut.finish()), at, _blocks(message))
        target.add(entry)
        if kind == "assistant":
            usage = message.get("usage")
            if isinstance(usage, Mapping):
                target.usage = usage  # the last line of a message has its final counts
            model = message.get("model")
            if isinstance(model, str):
                target.model = model
            rid = value.get("requestId")
            if isinstance(rid, str):
                target.request_id = rid
            for attribute, found in (
                ("message_id", message.get("id")),
                ("stop_reason", message.get("stop_reason")),
                ("session_id", value.get("sessionId")),
            ):
                if isinstance(found, str) and found:
                    setattr(target, attribute, found)
        here = (target, len(target.lines) - 1)
        if isinstance(uuid, str):
            self.links[uuid] = here
        if sidechain:
            self.previous_side = here
        else:
            self.previous = here

    def _parent_of(
        self, line: int, uuid: str | None, parent: Any, value: Mapping[str, Any]
    ) -> tuple[Message | None, int]:
        """Where a line continues from: its parent's message and line; else (no ``parentUuid``, or
        one naming a line not read: skipped, or later in the file) the previous message line in
        file order; nothing (a new chain) at the start."""
        if isinstance(parent, str):
            self.linked = True
            found = self.links.get(parent)
            if found is None and self.context is not None:
                found = self.context.links.get(parent)
            if found is not None:
                return found
            if uuid is not None:
                self.unresolved.append((line, uuid, parent))
        elif value.get("type") not in ("user", "assistant"):
            return None, -1
        elif "parentUuid" in value and self.linked:
            return None, -1  # a writer that links its lines starts a new chain here

        previous = self.previous_side if value.get("isSidechain") and not self.subagent else self.previous
        return previous if previous is not None else (None, -1)

    def _message_for(
        self,
        kind: str,
        message: Mapping[str, Any],
        value: Mapping[str, Any],
        after: Message | None,
        pos: int,
        sidechain: bool,
        summary: bool,
    ) -> tuple[Message, int]:
        """The message a line belongs to (found, or new) and the index of its first block there."""
        if kind == "assistant":
            # one API response is one request: its lines share the message id and the request id,
            # whatever lines sit between them (a parallel call's result); either id finds it
            keys = [k for k in (message.get("id"), value.get("requestId")) if isinstance(k, str) and k]
            found = next((self.by_key[k] for k in keys if k in self.by_key), None)
            if found is not None:
                for key in keys:
                    self.by_key.setdefault(key, found)
                return found, found.blocks
            target = self._new("assistant", after, pos, sidechain, summary)
            for key in keys:
                self.by_key[key] = target
            self.order.append(target)
            target.chain = self._chain(after, pos)
            return target, 0
        if after is not None and after.role == "user":
            if after.owner is self and pos == len(after.lines) - 1:
                return after, after.blocks
            return self._fork(after, pos), after.blocks if pos == len(after.lines) - 1 else sum(
                line.blocks for line in after.lines[: pos + 1]
            )
        if after is not None and after.role == "assistant" and _has_result(message) and after.owner is self:
            if after.results is None:
                after.results = self._new("user", after, pos, sidechain, summary)
            return after.results, after.results.blocks
        return self._new("user", after, pos, sidechain, summary), 0

    def _fork(self, base: Message, pos: int) -> Message:
        """A user message continuing ``base`` up to its line ``pos`` (a branch from the middle of
        a merged message, or from another file's message): the same place, its own lines."""
        fork = Message(
            "user",
            base.depth,
            base.parent,
            self,
            self._conversation(base, False),
            self._marks(base.marks),
            base.sidechain,
        )
        fork.summary = base.summary
        for line in base.lines[: pos + 1]:
            fork.add(line)
        return fork

    def _new(self, role: str, after: Message | None, pos: int, sidechain: bool, summary: bool) -> Message:
        if after is None:
            conversation = self._root_conversation(sidechain)
            marks = self._marks(("sidechain",) if sidechain and not self.subagent else ())
            made = Message(role, 0, None, self, conversation, marks, sidechain)
            made.summary = summary
            return made
        made = Message(
            role,
            after.depth + 1,
            after,
            self,
            self._conversation(after, sidechain),
            self._marks(after.marks if after.owner is self else ()),
            sidechain or after.sidechain,
        )
        made.summary = after.summary
        return made

    def _conversation(self, after: Message, sidechain: bool) -> str:
        if after.owner is self:
            return after.conversation
        return self._root_conversation(sidechain)

    def _root_conversation(self, sidechain: bool) -> str:
        if self.subagent:
            return f"{self.context.stem if self.context else 'session'}/{self.stem}"
        if sidechain:
            return f"{self.stem}/sidechain-{len(self.order)}"
        return self.stem

    def _marks(self, marks: tuple[str, ...]) -> tuple[str, ...]:
        if self.subagent:
            own = ("compaction",) if self.stem.startswith("agent-acompact") else ("subagent",)
            return own + tuple(m for m in marks if m not in own)
        return marks

    @staticmethod
    def _chain(after: Message | None, pos: int) -> Chain | None:
        """The chain a request sends: ``after`` up to its line ``pos``, after the chain before it,
        shared (each message keeps its whole-message chain, made once while it does not grow)."""
        if after is None:
            return None
        pending: list[Message] = []
        node = after.parent
        base: Chain | None = None
        while node is not None:  # parents are made before children: no loop possible
            if node.full is not None and node.full.count == len(node.lines):
                base = node.full
                break
            pending.append(node)
            node = node.parent
        for made in reversed(pending):
            base = made.full = Chain(made, len(made.lines), base)
        return Chain(after, pos + 1, base)

    # -- the requests
    def finish(self) -> list[LoggedRequest]:
        self._report_loops()
        requests = []
        summaries_seen: set[int] = set()
        for message in self.order:
            chain = message.chain
            if chain is None:
                self.issues.append(
                    ImportIssue(
                        self.path,
                        message.lines[0].number,
                        "an assistant message with no message before it in the chain",
                    )
                )
                continue
            last = chain.node.lines[: chain.count]
            sent_at = next((line.at for line in reversed(last) if line.at is not None), message.lines[0].at)
            marks = message.marks
            root = chain.root.node
            boundary = None
            if root.summary and id(root.lines[0]) not in summaries_seen:  # forks share the summary line
                summaries_seen.add(id(root.lines[0]))
                marks = (*marks, "after-compaction")
                # the boundary goes with the session's own first request, not with a subagent's fork
                boundary = root.boundary if root.owner is self else None
            requests.append(
                LoggedRequest(
                    ChainSections(chain),
                    None,
                    self.path,
                    ChainLines(chain, self),
                    "claude-code",
                    CLAUDE_CODE_WIRE.provider,
                    message.model,
                    sent_at,
                    message.usage,
                    CLAUDE_CODE_WIRE.log_format if message.usage is not None else None,
                    message.request_id,
                    conversation=message.conversation,
                    marks=marks,
                    response_id=message.message_id,
                    response_model=message.model,
                    finish_reason=message.stop_reason,
                    conversation_id=message.session_id,
                    response=tuple(itertools.chain.from_iterable(line.sections for line in message.lines)),
                    compaction=boundary,
                )
            )
        return requests

    def release(self) -> None:
        """Drop the links that make a read transcript a web of cycles (a message and its chains, a
        message and the one holding its results, the reader and its messages), so that reference
        counting frees it as soon as its requests are dropped, rather than the cycle collector
        walking it later. For a caller done with the requests (the usage report, once it has a
        unit's rows): their sections and lines are not read after this."""
        seen: set[int] = set()
        for message in self.order:
            node: Message | None = message
            while node is not None and id(node) not in seen:
                seen.add(id(node))
                node.full = node.chain = node.results = None
                node = node.parent
        self.order.clear()
        self.links.clear()
        self.by_key.clear()
        self.previous = self.previous_side = None

    def _report_loops(self) -> None:
        for line, uuid, parent in self.unresolved:
            seen = {uuid}
            walk = [uuid, parent]
            current = parent
            while current in self.raw_parent and current not in seen:
                seen.add(current)
                current = self.raw_parent[current]
                walk.append(current)
            if current == uuid:
                self.issues.append(
                    ImportIssue(
                        self.path,
                        line,
                        "its parentUuid chain loops back to it ("
                        + " -> ".join(walk[:6])
                        + (" ..." if len(walk) > 6 else "")
                        + "): read as the start of a new chain",
                    )
                )


#: The line types of a transcript (new ones appear per release; the reader counts any type it does
#: not read as an ordinary line).
CLAUDE_CODE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "summary",
        "system",
        "progress",
        "file-history-snapshot",
        "attachment",
        "queue-operation",
        "custom-title",
        "ai-title",
    }
)
_KEYS = ("sessionId", "uuid", "leafUuid", "messageId", "parentUuid", "operation")


def is_transcript_line(value: Any) -> bool:
    """Whether a parsed record is a line of a Claude Code transcript."""
    return isinstance(value, Mapping) and value.get("type") in CLAUDE_CODE_TYPES and any(key in value for key in _KEYS)


#: the log format ``wm_kernel.interop.readers`` lists under ``claude-code``
LOG_FORMAT = LogFormat(
    "claude-code", ClaudeCodeReader, detect=is_transcript_line, priority=10, title="a Claude Code transcript"
)

__all__ = ["ClaudeCodeReader", "CLAUDE_CODE_TYPES", "is_transcript_line", "LOG_FORMAT"]
