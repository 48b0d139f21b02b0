"""``%ask "..."``: send the current session's prompt and a user message to a model, in a notebook.

Two ways to have something answer, and ``%ask`` says both whenever it has neither:

- a client, set once: ``set_ask_client(anthropic.Anthropic())`` (the ``providers`` extra);
- a recording, replayed offline: ``%ask --recording FILE "..."`` (a file ``Recording.save`` wrote,
  or ``set_ask_client(None, recording=Recording.load(FILE))``).

Then ask::

    %ask "Where is my order?"
    %ask --model claude-opus-4-8 --max-tokens 200 --no-stream Why?

The model is ``--model``, else the one given to ``set_ask_client``, else the session's own
(``%wm_session --model NAME``), else, answering from a recording, the recorded one. The message is
everything after the options, stored verbatim (one pair of surrounding quotes is removed). The reply
streams into the cell as it comes, then the cell's value is the
:class:`~wm_kernel.providers.send.Reply`. Failures (authentication, rate limit, network, nothing to
send with) are one-line UsageErrors, and nothing is recorded.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from wm_kernel.providers.recording import ChangedPromptWarning, Recording, UncheckedRecordingWarning, offline
from wm_kernel.providers.send import Reply, SendError, send
from wm_kernel.session import current_session
from wm_kernel.utils.style import PROMPT_PRE

if TYPE_CHECKING:
    from wm_kernel.session import Session

#: What every "cannot send" message ends with: the two ways to have an answer.
WAYS_ON = (
    "set a client (set_ask_client(anthropic.Anthropic())) or replay a recording "
    "(%ask --recording FILE, or set_ask_client(None, recording=Recording.load(FILE)))"
)


@dataclass
class _AskSettings:
    client: Any = None
    model: str | None = None
    recording: Recording | None = None
    #: Recordings read by ``--recording FILE``, by resolved path: the next ``%ask`` with the same
    #: file answers from the next recorded send.
    files: dict[Path, Recording] = field(default_factory=dict)


_settings = _AskSettings()


def set_ask_client(client: Any, *, model: str | None = None, recording: Recording | None = None) -> None:
    """The client (None: answer from ``recording``), default model and recording ``%ask`` uses.

    ``set_ask_client(None)`` forgets them all, and the recordings ``--recording`` read."""
    if recording is not None and not isinstance(recording, Recording):
        raise TypeError(f"recording must be a Recording, got {type(recording).__name__}")
    _settings.client, _settings.model, _settings.recording = client, model, recording
    _settings.files.clear()


#: The options that take a value, as ``%ask`` reads its line (the rest of it is the message).
_VALUED = ("--model", "--max-tokens", "--recording")
_FLAGS = ("--no-stream",)


def parse_ask(line: str) -> tuple[dict[str, Any], str]:
    """(options, message) of a ``%ask`` line; UsageError for a bad option or no message.

    The options are read by the magic's argument declaration (so ``%ask?`` shows them); the
    message is the rest of the line as typed, spaces and braces kept."""
    rest = line.strip()
    words: list[str] = []
    while rest.startswith("--"):
        option, rest = _next_word(rest)
        name = option.partition("=")[0]
        if name not in (*_VALUED, *_FLAGS):
            raise UsageError(
                f"%ask: unknown option {option}; use --model NAME, --max-tokens N, --no-stream, --recording FILE"
            )
        words.append(option)
        if name in _VALUED and "=" not in option:
            value, rest = _next_word(rest)
            if not value or value.startswith("--"):
                raise UsageError(f"%ask: {option} needs a value")
            words.append(value)
    try:
        args = parse_argstring(AskMagics.ask, " ".join(_quoted(w) for w in words))
    except UsageError as exc:
        raise UsageError(f"%ask: {exc}") from None
    max_tokens = args.max_tokens
    if not max_tokens.isdigit() or int(max_tokens) < 1:
        raise UsageError(f"%ask: --max-tokens must be a positive integer, got {max_tokens!r}")
    if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "\"'":
        rest = rest[1:-1]
    if not rest.strip():
        raise UsageError('%ask: say what to send: %ask "your message"')
    options = {"model": args.model, "max_tokens": int(max_tokens), "stream": not args.no_stream}
    if args.recording is not None:
        options["recording"] = _unquoted(args.recording)
    return options, rest


def _next_word(text: str) -> tuple[str, str]:
    """The first word of ``text`` (a quoted one whole, quotes kept) and the rest, stripped."""
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[: end + 1], text[end + 1 :].lstrip()
    word, _, rest = text.partition(" ")
    return word, rest.lstrip()


def _quoted(word: str) -> str:
    """``word`` as one shell word for parse_argstring (a path may hold spaces or quotes)."""
    import shlex

    return shlex.quote(_unquoted(word))


def _unquoted(word: str) -> str:
    if len(word) > 1 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def _recording_file(path: str) -> Recording:
    resolved = Path(path).expanduser().resolve()
    found = _settings.files.get(resolved)
    if found is None:
        try:
            found = Recording.load(resolved)
        except OSError as exc:
            raise UsageError(f"%ask: --recording: cannot read {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            from wm_kernel.interop.log_files import log_format_of

            log_format = log_format_of(resolved)
            if log_format is not None:  # another agent's log: it is imported, not replayed
                raise UsageError(
                    f"%ask: --recording: {path} is a request log ({log_format}), not a recording of sends; "
                    f"import it with %wm_import {path}"
                ) from None
            raise UsageError(f"%ask: --recording: {exc}") from None
        _settings.files[resolved] = found
    return found


@magics_class
class AskMagics(Magics):
    """The ``%ask`` magic (see the module docstring)."""

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument("message", nargs="*", help="What to send, verbatim (quotes around it are removed).")
    @argument(
        "--model",
        metavar="NAME",
        help="The model (default: set_ask_client's, else the session's, else the recording's).",
    )
    @argument("--max-tokens", metavar="N", default="1024", help="The reply's token limit (default 1024).")
    @argument("--no-stream", action="store_true", help="Show the reply once it is complete.")
    @argument(
        "--recording",
        metavar="FILE",
        help="Answer from this recording, offline (a file Recording.save wrote): each %%ask with "
        "the same FILE answers the next recorded send.",
    )
    def ask(self, line: str) -> Reply | None:
        """Send the current session's prompt and a message to a model, and record the reply.

        Nothing to send with? Set a client (``set_ask_client(anthropic.Anthropic())``) or replay a
        recording (``%ask --recording FILE "..."``, or
        ``set_ask_client(None, recording=Recording.load(FILE))``).
        """
        if line.split()[:1] in (["--help"], ["-h"]):  # only as the first word: a message may say "-h"
            print(self.ask.__doc__)
            return None
        options, message = parse_ask(line)
        recording = _recording_file(options["recording"]) if "recording" in options else _settings.recording
        client = None if "recording" in options else _settings.client
        session = current_session()
        if client is None and recording is None:
            raise UsageError(f"%ask: nothing to send with: {WAYS_ON}")
        if offline() and recording is None:
            raise UsageError(f"%ask: WM_KERNEL_OFFLINE is set and there is no recording to answer from: {WAYS_ON}")
        model = _ask_model(options["model"] or _settings.model or session.model, client, recording)
        return _streamed(session, client, model, message, options, recording)


def _ask_model(named: str | None, client: Any, recording: Recording | None) -> str:
    """The model ``%ask`` sends to: the one named (``--model``, ``set_ask_client``'s, the
    session's), else, answering from ``recording`` offline, the model of its next exchange."""
    model = named
    if (
        model is None
        and recording is not None
        and (client is None or offline())
        and recording.position < len(recording)
    ):
        model = recording.exchanges[recording.position].model
    if model is None:
        raise UsageError("%ask: no model: pass --model NAME, or start the session with one (%wm_session --model NAME)")
    return model


def _streamed(
    session: Session, client: Any, model: str, message: str, options: dict[str, Any], recording: Recording | None
) -> Reply:
    """The reply of one send, its text shown in the cell as it streams in (then cleared: the cell's
    value is the whole reply); what a recording says of its own replay is one printed line, and a
    failed send a one-line UsageError."""
    shown: list[str] = []
    handle: Any = None

    def on_text(chunk: str) -> None:
        nonlocal handle
        from IPython.display import HTML, display

        shown.append(chunk)
        view = HTML(f'<pre style="{PROMPT_PRE}">{html.escape("".join(shown))}</pre>')
        if handle is None:
            handle = display(view, display_id=True)
        else:
            handle.update(view)

    try:
        # what a recording says of its own replay (unchecked, or a changed prompt) is one line
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UncheckedRecordingWarning)
            warnings.simplefilter("always", ChangedPromptWarning)
            reply = send(
                session,
                None if offline() else client,
                model=model,
                user=message,
                max_tokens=options["max_tokens"],
                stream=options["stream"],
                on_text=on_text,
                recording=recording,
            )
    except (SendError, ValueError, TypeError) as exc:
        raise UsageError(f"%ask: {exc}") from None
    finally:
        for warning in caught:
            if issubclass(warning.category, (UncheckedRecordingWarning, ChangedPromptWarning)):
                print(f"%ask: {warning.message}")
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
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
