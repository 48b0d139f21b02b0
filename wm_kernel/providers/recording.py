"""Recordings of sends: each user message with the reply and usage it got, for offline replay.

A :class:`Recording` is a list of :class:`~wm_kernel.instruments.exchange.Exchange` records, saved as
JSON Lines (a header line, then one exchange per line). ``send(..., recording=rec)`` appends each live
exchange; with no client, or with ``WM_KERNEL_OFFLINE=1`` in the environment (:func:`offline`), it
answers from the recording instead, in order, checking that the user message is the one recorded.
A scenario recorded while sending holds the same records as ``send`` steps
(:meth:`Recording.from_scenario` reads them), and replaying the scenario answers from them.

A recording holds what an exchange holds and nothing else: no request headers, so never an API key.

Each recorded send also keeps a digest of each section of the prompt it was sent with (name and
blake2b of placement and text, in prompt order). Replaying it against a prompt that differs is a
ValueError naming the first differing section (``on_changed_prompt="warn"`` replays anyway, with a
:class:`ChangedPromptWarning`, and the replayed exchange's ``stop_reason`` says
``"replayed against a changed prompt"``, so every view showing the exchange shows it). Recordings
of version 1 (before the digests) replay without that check, and say so once, at their first
replayed send, in one line (an :class:`UncheckedRecordingWarning`).

Saving is atomic: the file is written beside its place, flushed to disk and renamed over it, so a
process killed while saving leaves the previous file whole. Every line is ASCII JSON (escapes for
anything else), so a reply holding a lone surrogate, U+2028, U+2029 or U+0085 saves and loads back as it
was. Loading reads only a regular file, in bounded lines (:mod:`wm_kernel.utils.safe_files`).

Examples
--------
>>> rec = Recording([Exchange(turn=0, provider="openai", model="gpt-5.4", user="Hi", reply="Hello!")])
>>> rec.answer(user="Hi", model="gpt-5.4").reply
'Hello!'
>>> rec.answer(user="Again?", model="gpt-5.4")
Traceback (most recent call last):
...
ValueError: the recording has no more sends (1 recorded, all answered); 'Again?' was not recorded
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.exchange import Exchange
from wm_kernel.utils.safe_files import UnreadableFileError, lines, loads_json, open_regular
from wm_kernel.utils.safe_files import atomic_write_text as _atomic_write

#: The first line of a recording file (version 2 keeps section digests; version 1 is still read).
HEADER = {"v": 2, "kind": "wm-kernel recording"}
READABLE_VERSIONS = (1, 2)
OFFLINE_VARIABLE = "WM_KERNEL_OFFLINE"
#: What a replayed exchange's stop_reason says when it answered a prompt that changed.
CHANGED_PROMPT = "replayed against a changed prompt"

#: One section as a recording keeps it: (name, digest of its placement and text).
SectionDigest = tuple[str, str]


class ChangedPromptWarning(UserWarning):
    """A recording answered a prompt that differs from the one it was recorded with (only with
    ``on_changed_prompt="warn"``)."""


class UncheckedRecordingWarning(UserWarning):
    """A recording of version 1 (no section digests) is replayed: its replies answer whatever prompt
    is sent now, unchecked (said once per recording)."""


def offline() -> bool:
    """True when ``WM_KERNEL_OFFLINE`` is set to 1/true/yes: sends answer from their recording."""
    return os.environ.get(OFFLINE_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def section_digests(composed: ComposedPrompt) -> tuple[SectionDigest, ...]:
    """(name, digest) of each section of ``composed``, in prompt order."""
    return tuple(
        (
            r.name,
            hashlib.blake2b(f"{r.placement}\0{r.content}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest(),
        )
        for r in composed.sections
    )


def first_difference(recorded: Sequence[SectionDigest], now: Sequence[SectionDigest]) -> str | None:
    """How the prompt ``now`` first differs from ``recorded`` (None when they are the same)."""
    recorded_names = dict(recorded)
    now_names = dict(now)
    for name, digest in recorded:
        if name not in now_names:
            return f"section {name!r} was recorded but is not in this prompt"
        if now_names[name] != digest:
            return f"section {name!r} differs"
    for name, _ in now:
        if name not in recorded_names:
            return f"section {name!r} is new in this prompt"
    if [n for n, _ in recorded] != [n for n, _ in now]:
        return "the sections are in another order"
    return None


class Recording:
    """Recorded exchanges and a replay position (see the module docstring). ``on_changed_prompt``
    is ``"error"`` (the default: replaying against a changed prompt is a ValueError) or ``"warn"``."""

    def __init__(self, exchanges: Iterable[Exchange] = (), *, on_changed_prompt: str = "error") -> None:
        if on_changed_prompt not in ("error", "warn"):
            raise ValueError(f"on_changed_prompt must be 'error' or 'warn', got {on_changed_prompt!r}")
        self.on_changed_prompt = on_changed_prompt
        #: Why the replayed prompts cannot be checked (a version-1 file, see :meth:`load`), said
        #: once at the first replayed send; None when they can be.
        self.unchecked: str | None = None
        self._told_unchecked = False
        self.exchanges: list[Exchange] = []
        self.sections: list[tuple[SectionDigest, ...] | None] = []
        for exchange in exchanges:
            self.append(exchange)
        self.position = 0

    def append(self, exchange: Exchange, sections: Sequence[SectionDigest] | None = None) -> None:
        """Add one exchange at the end, with the digests of the prompt's sections it was sent with
        (:func:`section_digests`; None: not known, so not checked on replay)."""
        if not isinstance(exchange, Exchange):
            raise TypeError(f"expected an Exchange, got {type(exchange).__name__}")
        self.exchanges.append(exchange)
        self.sections.append(None if sections is None else tuple((str(n), str(d)) for n, d in sections))

    def answer(self, *, user: str, model: str, sections: Sequence[SectionDigest] | None = None) -> Exchange:
        """The next recorded exchange, which must be for ``user``, ``model`` and (when both are known)
        a prompt of the same sections (ValueError saying what differs otherwise: a notebook changed
        since it was recorded)."""
        if self.position >= len(self.exchanges):
            raise ValueError(
                f"the recording has no more sends ({len(self.exchanges)} recorded, all answered); "
                f"{user!r} was not recorded"
            )
        found = self.exchanges[self.position]
        if found.user != user or found.model != model:
            raise ValueError(
                f"recorded send {self.position + 1} was {found.user!r} to {found.model}, not "
                f"{user!r} to {model}; record again with a client"
            )
        recorded = self.sections[self.position]
        if recorded is None and sections is not None and self.unchecked is not None and not self._told_unchecked:
            self._told_unchecked = True
            warnings.warn(self.unchecked, UncheckedRecordingWarning, stacklevel=3)
        if recorded is not None and sections is not None:
            difference = first_difference(recorded, sections)
            if difference is not None:
                message = (
                    f"recorded send {self.position + 1} was sent with another prompt: {difference}; "
                    f"record again with a client (or load with on_changed_prompt='warn')"
                )
                if self.on_changed_prompt == "error":
                    raise ValueError(message)
                warnings.warn(message, ChangedPromptWarning, stacklevel=3)
                self.position += 1
                return Exchange(
                    turn=found.turn,
                    provider=found.provider,
                    model=found.model,
                    user=found.user,
                    reply=found.reply,
                    usage=found.usage,
                    request_id=found.request_id,
                    stop_reason=CHANGED_PROMPT,
                    prefix=found.prefix,
                )
        self.position += 1
        return found

    def rewind(self) -> None:
        """Answer from the first recorded send again."""
        self.position = 0

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the recording as JSON Lines (header, then one exchange per line), atomically."""

        def write(handle: TextIO) -> None:
            handle.write(json.dumps(HEADER) + "\n")
            for exchange, sections in zip(self.exchanges, self.sections, strict=True):
                record = exchange.to_json()
                if sections is not None:
                    record["sections"] = [list(s) for s in sections]
                # ASCII: a lone surrogate or a line separator is an escape, never a raw character
                handle.write(json.dumps(record, ensure_ascii=True, sort_keys=True) + "\n")

        _atomic_write(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, on_changed_prompt: str = "error") -> Recording:
        """A recording :meth:`save` wrote; ValueError naming the line for anything else."""
        name = Path(path).name
        recording = cls(on_changed_prompt=on_changed_prompt)
        header: Any = None
        with open_regular(path, name) as handle:
            for number, line in enumerate(lines(handle, name), 1):
                if not line.strip():
                    continue
                try:
                    raw = loads_json(line, f"{name} line {number}")
                except UnreadableFileError as exc:
                    raise ValueError(str(exc)) from None
                if header is None:
                    header = raw
                    if not (
                        isinstance(raw, dict)
                        and raw.get("kind") == HEADER["kind"]
                        and raw.get("v") in READABLE_VERSIONS
                        and len(raw) == 2
                    ):
                        raise ValueError(f"{name} line {number}: expected the header {json.dumps(HEADER)}")
                    if raw["v"] == 1:
                        recording.unchecked = (
                            f"{name} is a version-1 recording (no prompt digests): its replies are replayed "
                            f"without checking the prompt they answer; record it again with a client to check it"
                        )
                    continue
                sections = raw.pop("sections", None) if isinstance(raw, dict) else None
                try:
                    digests = None if sections is None else tuple((n, d) for n, d in sections)
                    if digests is not None and not all(isinstance(n, str) and isinstance(d, str) for n, d in digests):
                        raise ValueError("sections must be [name, digest] pairs of strings")
                    recording.append(Exchange.from_json(raw), digests)
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"{name} line {number}: {exc}") from None
        if header is None:
            raise ValueError(f"{name} is empty; expected a recording header")
        return recording

    @classmethod
    def from_scenario(cls, scenario: Any) -> Recording:
        """The exchanges of a scenario's ``send`` steps, in order."""
        from wm_kernel.experiments.steps import SendStep

        return cls(step.exchange for step in scenario.steps if isinstance(step, SendStep))

    def __len__(self) -> int:
        return len(self.exchanges)

    def __repr__(self) -> str:
        return f"<Recording {len(self.exchanges)} sends, {self.position} answered>"
