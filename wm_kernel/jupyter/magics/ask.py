"""``%ask "..."``: send the current session's prompt and a user message to a model, in a notebook.

Set the client once, then ask::

    from wm_kernel.jupyter.magics.ask import set_ask_client
    set_ask_client(anthropic.Anthropic(), model="claude-sonnet-4-6")      # or recording=Recording.load(...)
    %ask "Where is my order?"
    %ask --model claude-opus-4-8 --max-tokens 200 --no-stream Why?

The message is everything after the options, stored verbatim (one pair of surrounding quotes is
removed). The reply streams into the cell as it comes, then the cell's value is the
:class:`~wm_kernel.providers.send.Reply`. Failures (authentication, rate limit, network, no client)
are one-line UsageErrors, and nothing is recorded.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from wm_kernel.providers.recording import Recording, offline
from wm_kernel.providers.send import Reply, SendError, send
from wm_kernel.session import current_session


@dataclass
class _AskSettings:
    client: Any = None
    model: str | None = None
    recording: Recording | None = None


_settings = _AskSettings()


def set_ask_client(client: Any, *, model: str | None = None, recording: Recording | None = None) -> None:
    """The client (None: answer from ``recording``), default model and recording ``%ask`` uses."""
    if recording is not None and not isinstance(recording, Recording):
        raise TypeError(f"recording must be a Recording, got {type(recording).__name__}")
    _settings.client, _settings.model, _settings.recording = client, model, recording


def parse_ask(line: str) -> tuple[dict[str, Any], str]:
    """(options, message) of a ``%ask`` line; UsageError for a bad option or no message."""
    options: dict[str, Any] = {"model": None, "max_tokens": 1024, "stream": True}
    rest = line.strip()
    while rest.startswith("--"):
        option, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if option == "--no-stream":
            options["stream"] = False
            continue
        if option not in ("--model", "--max-tokens"):
            raise UsageError(f"%ask: unknown option {option}; use --model NAME, --max-tokens N, --no-stream")
        value, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if not value:
            raise UsageError(f"%ask: {option} needs a value")
        if option == "--model":
            options["model"] = value
        elif not value.isdigit() or int(value) < 1:
            raise UsageError(f"%ask: --max-tokens must be a positive integer, got {value!r}")
        else:
            options["max_tokens"] = int(value)
    if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "\"'":
        rest = rest[1:-1]
    if not rest.strip():
        raise UsageError('%ask: say what to send: %ask "your message"')
    return options, rest


@magics_class
class AskMagics(Magics):
    """The ``%ask`` magic (see the module docstring)."""

    @line_magic
    @no_var_expand
    def ask(self, line: str) -> Reply:
        """%ask [--model NAME] [--max-tokens N] [--no-stream] message"""
        options, message = parse_ask(line)
        model = options["model"] or _settings.model
        if model is None:
            raise UsageError("%ask: no model; pass --model NAME or set_ask_client(client, model=...)")
        if _settings.client is None and _settings.recording is None:
            raise UsageError("%ask: no client; call set_ask_client(client, model=...) first")
        shown: list[str] = []
        handle: Any = None

        def on_text(chunk: str) -> None:
            nonlocal handle
            from IPython.display import HTML, display

            shown.append(chunk)
            view = HTML(f'<pre style="white-space:pre-wrap">{html.escape("".join(shown))}</pre>')
            if handle is None:
                handle = display(view, display_id=True)
            else:
                handle.update(view)

        try:
            reply = send(current_session(), None if offline() else _settings.client, model=model, user=message,
                         max_tokens=options["max_tokens"], stream=options["stream"], on_text=on_text,
                         recording=_settings.recording)
        except (SendError, ValueError, TypeError) as exc:
            raise UsageError(f"%ask: {exc}") from None
        if handle is not None:  # the streamed text gives way to the cell's value, the whole reply
            from IPython.display import HTML

            handle.update(HTML(""))
        return reply


def load_ask_magics(shell: Any) -> None:
    """Register ``%ask`` on ``shell`` (once)."""
    if AskMagics.__name__ not in shell.magics_manager.registry:
        shell.register_magics(AskMagics(shell=shell))


def unload_ask_magics(shell: Any) -> None:
    """Remove what :func:`load_ask_magics` added to ``shell``."""
    manager = shell.magics_manager
    magics = manager.registry.pop(AskMagics.__name__, None)
    if magics is None:
        return
    if getattr(manager.magics["line"].get("ask"), "__self__", None) is magics:
        del manager.magics["line"]["ask"]
    shell.configurables[:] = [c for c in shell.configurables if c is not magics]
