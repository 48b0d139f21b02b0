"""Recordings of sends: each user message with the reply and usage it got, for offline replay.

A :class:`Recording` is a list of :class:`~wm_kernel.instruments.exchange.Exchange` records, saved as
JSON Lines (a header line, then one exchange per line). ``send(..., recording=rec)`` appends each live
exchange; with no client, or with ``WM_KERNEL_OFFLINE=1`` in the environment (:func:`offline`), it
answers from the recording instead, in order, checking that the user message is the one recorded.
A scenario recorded while sending holds the same records as ``send`` steps
(:meth:`Recording.from_scenario` reads them), and replaying the scenario answers from them.

A recording holds what an exchange holds and nothing else: no request headers, so never an API key.

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

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wm_kernel.instruments.exchange import Exchange

#: The first line of a recording file.
HEADER = {"v": 1, "kind": "wm-kernel recording"}
OFFLINE_VARIABLE = "WM_KERNEL_OFFLINE"


def offline() -> bool:
    """True when ``WM_KERNEL_OFFLINE`` is set to 1/true/yes: sends answer from their recording."""
    return os.environ.get(OFFLINE_VARIABLE, "").strip().lower() in ("1", "true", "yes")


class Recording:
    """Recorded exchanges and a replay position (see the module docstring)."""

    def __init__(self, exchanges: Iterable[Exchange] = ()) -> None:
        self.exchanges: list[Exchange] = []
        for exchange in exchanges:
            self.append(exchange)
        self.position = 0

    def append(self, exchange: Exchange) -> None:
        """Add one exchange at the end."""
        if not isinstance(exchange, Exchange):
            raise TypeError(f"expected an Exchange, got {type(exchange).__name__}")
        self.exchanges.append(exchange)

    def answer(self, *, user: str, model: str) -> Exchange:
        """The next recorded exchange, which must be for ``user`` and ``model`` (ValueError saying
        what differs otherwise: a notebook changed since it was recorded)."""
        if self.position >= len(self.exchanges):
            raise ValueError(f"the recording has no more sends ({len(self.exchanges)} recorded, all answered); "
                             f"{user!r} was not recorded")
        found = self.exchanges[self.position]
        if found.user != user or found.model != model:
            raise ValueError(f"recorded send {self.position + 1} was {found.user!r} to {found.model}, not "
                             f"{user!r} to {model}; record again with a client")
        self.position += 1
        return found

    def rewind(self) -> None:
        """Answer from the first recorded send again."""
        self.position = 0

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the recording as JSON Lines (header, then one exchange per line)."""
        lines = [json.dumps(HEADER)] + [json.dumps(e.to_json(), ensure_ascii=False, sort_keys=True)
                                        for e in self.exchanges]
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recording:
        """A recording :meth:`save` wrote; ValueError naming the line for anything else."""
        name = Path(path).name
        lines = [(n, line) for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1)
                 if line.strip()]
        if not lines:
            raise ValueError(f"{name} is empty; expected a recording header")
        records: list[Any] = []
        for number, line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{name} line {number}: not JSON ({exc.msg})") from None
        if records[0] != HEADER:
            raise ValueError(f"{name} line {lines[0][0]}: expected the header {json.dumps(HEADER)}")
        exchanges = []
        for (number, _), raw in zip(lines[1:], records[1:], strict=True):
            try:
                exchanges.append(Exchange.from_json(raw))
            except ValueError as exc:
                raise ValueError(f"{name} line {number}: {exc}") from None
        return cls(exchanges)

    @classmethod
    def from_scenario(cls, scenario: Any) -> Recording:
        """The exchanges of a scenario's ``send`` steps, in order."""
        from wm_kernel.experiments.steps import SendStep

        return cls(step.exchange for step in scenario.steps if isinstance(step, SendStep))

    def __len__(self) -> int:
        return len(self.exchanges)

    def __repr__(self) -> str:
        return f"<Recording {len(self.exchanges)} sends, {self.position} answered>"
