"""Progress of long replays: a one-line bar on a terminal, an ipywidgets bar in a notebook.

Both count turns. A serial replay advances them one turn at a time (the bar is attached to each
replayed Session as an instrument); a replay in an executor's worker advances them by a whole
scenario when its result comes back, since a worker's Session cannot be observed from here.

The notebook bar is created only when running under a Jupyter kernel, and ipywidgets is imported
only then: the experiments never import it otherwise.

Examples
--------
>>> import io
>>> stream = io.StringIO()
>>> bar = TerminalProgress(4, stream, width=8)
>>> bar.advance(1); bar.advance(3); bar.close()
>>> stream.getvalue()
'\\rreplay [##......]  25% 1/4 turns\\rreplay [########] 100% 4/4 turns\\n'
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from wm_kernel.session import Session


class Progress(Protocol):
    """What a sweep reports to: turns done, then the end."""

    def advance(self, turns: int) -> None:
        """``turns`` more turns are done."""
        ...

    def close(self) -> None:
        """The run is over (finished or failed)."""
        ...


class TurnCounter:
    """The base of the bars: a total, a count, and, called with a Session, the instrument that
    counts its turns (a serial replay reports every turn as it happens)."""

    def __init__(self, total: int, label: str) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0

    def __call__(self, session: Session) -> None:
        session.observe(self._on_turn, "turn")

    def _on_turn(self, change: Any) -> None:
        self.advance(1)

    def advance(self, turns: int) -> None:
        self.done += turns
        self._draw()

    def _draw(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class TerminalProgress(TurnCounter):
    """A one-line bar on a stream (a terminal's stderr), redrawn only when the whole percent
    changes, so a 10,000-turn replay writes at most about a hundred updates."""

    def __init__(self, total: int, stream: TextIO, width: int = 30, label: str = "replay") -> None:
        super().__init__(total, label)
        self.stream = stream
        self.width = width
        self._shown = -1

    def _draw(self) -> None:
        percent = min(100, self.done * 100 // self.total)
        if percent == self._shown:
            return
        self._shown = percent
        filled = self.width * percent // 100
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% {self.done}/{self.total} turns"
        )
        self.stream.flush()

    def close(self) -> None:
        if self._shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


class WidgetProgress(TurnCounter):
    """An ipywidgets ``IntProgress`` with a label, displayed in the notebook when created."""

    def __init__(self, total: int, label: str = "replay") -> None:
        super().__init__(total, label)
        import ipywidgets
        from IPython.display import display

        self.bar = ipywidgets.IntProgress(value=0, min=0, max=self.total, description=label)
        self.text = ipywidgets.Label(f"0/{self.total} turns")
        self.box = ipywidgets.HBox([self.bar, self.text])
        display(self.box)  # type: ignore[no-untyped-call]

    def _draw(self) -> None:
        # one message per update for both parts: the bar and its label move together
        with self.bar.hold_sync(), self.text.hold_sync():
            self.bar.value = min(self.done, self.total)
            self.text.value = f"{self.done}/{self.total} turns"

    def close(self) -> None:
        self.bar.bar_style = "success" if self.done >= self.total else "warning"


def in_kernel() -> bool:
    """True when running under a Jupyter kernel (where a widget can be displayed)."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def auto_progress(
    total: int, stream: TextIO | None = None, label: str = "replay"
) -> TerminalProgress | WidgetProgress | None:
    """The bar that fits where this runs: a widget under a kernel, a terminal bar when ``stream``
    (default stderr) is a terminal, else None (logs and pipes get no carriage returns)."""
    if in_kernel():
        return WidgetProgress(total, label)
    stream = stream if stream is not None else sys.stderr
    if stream.isatty():
        return TerminalProgress(total, stream, label=label)
    return None
