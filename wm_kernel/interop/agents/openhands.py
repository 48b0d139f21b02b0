"""OpenHands trajectories read into the model calls they record.

A trajectory is one JSON list of events (``{"id", "timestamp", "source", "action" or
"observation", ...}``). An action the model produced keeps, in
``tool_call_metadata.model_response``, the LiteLLM ``chat.completion`` of the call that produced
it, usage included (LiteLLM's Anthropic usage: ``prompt_tokens`` = input + cache reads + cache
writes, with ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` beside it; the one
usage parser reads it as OpenAI Chat usage). Several actions of one call carry the same response:
a request is one distinct response ``id``, counted once. The other events are counted in
``skipped``. The trajectory holds no request body: a request has no sections (its size comes from
its usage).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from wm_kernel.cachesim.models import priced_as
from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest, parse_time
from wm_kernel.interop.split import Splitter

#: The log format's name and the ``dialect`` of its requests.
DIALECT = "openhands"
#: The shape of a model response's usage (LiteLLM writes OpenAI's).
USAGE_SHAPE = "openai.chat"


def is_trajectory_event(value: Any) -> bool:
    """Whether a parsed record is an event of an OpenHands trajectory."""
    return (
        isinstance(value, Mapping)
        and "source" in value
        and "timestamp" in value
        and ("action" in value or "observation" in value)
    )


def _provider(model: str | None) -> str:
    """The provider whose cache rules a call of ``model`` follows (its price row's), else OpenAI's."""
    found = priced_as(model) if model else None
    return found.profile.provider if found is not None and found.priced else "openai"


class OpenHandsReader:
    """The model calls of one trajectory (see the module docstring)."""

    def __init__(self, path: str, splitter: Splitter) -> None:
        self.path = path
        self.requests: list[LoggedRequest] = []
        self.issues: list[ImportIssue] = []
        self.skipped: Counter[str] = Counter()
        self.seen: set[str] = set()

    def feed(self, line: int, text: str, value: Any) -> None:
        if not is_trajectory_event(value):
            raise ValueError("not an OpenHands event (no source and action or observation)")
        kind = f"{'action' if 'action' in value else 'observation'} {value.get('action') or value.get('observation')}"
        meta = value.get("tool_call_metadata")
        response = meta.get("model_response") if isinstance(meta, Mapping) else None
        if not isinstance(response, Mapping):
            self.skipped[kind] += 1
            return
        rid = response.get("id")
        if isinstance(rid, str) and rid in self.seen:
            self.skipped["action of a counted response"] += 1
            return
        if isinstance(rid, str):
            self.seen.add(rid)
        usage = response.get("usage")
        if usage is not None and not isinstance(usage, Mapping):
            raise ValueError(f"model_response.usage must be an object, got {type(usage).__name__}")
        model = response.get("model") if isinstance(response.get("model"), str) else None
        created = response.get("created")
        if isinstance(created, (int, float)) and not isinstance(created, bool):
            sent_at: datetime | None = datetime.fromtimestamp(created, UTC)
        else:
            sent_at = parse_time(value.get("timestamp"), "timestamp")
        choices = response.get("choices")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
        finish = first.get("finish_reason")
        self.requests.append(
            LoggedRequest(
                (),
                "",
                self.path,
                (line,),
                DIALECT,
                _provider(model),
                model,
                sent_at,
                usage or None,
                USAGE_SHAPE if usage else None,
                response_id=rid if isinstance(rid, str) else None,
                response_model=model,
                finish_reason=finish if isinstance(finish, str) else None,
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


#: the log format ``wm_kernel.interop.readers`` lists under ``openhands``
LOG_FORMAT = LogFormat(
    DIALECT, OpenHandsReader, detect=is_trajectory_event, priority=35, title="an OpenHands trajectory"
)

__all__ = ["OpenHandsReader", "is_trajectory_event", "DIALECT", "LOG_FORMAT"]
