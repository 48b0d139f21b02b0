"""When the dashboard draws: at once outside a kernel, else once the running cell or callback returns.

:class:`DrawSchedule` holds the one draw a dashboard may owe: in a Jupyter kernel with the
``coalesce`` option, every change a cell or widget callback makes asks for a draw, and the draw is
made once, with the state then, when the kernel's loop next runs its callbacks or the cell ends
(whichever comes first), so a cell of 1,000 turns draws once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from IPython import get_ipython


def _kernel_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop of the Jupyter kernel running this code now (a cell, a widget callback), or
    None: outside a kernel (a script, a test), or on another thread. Both are asked, because a
    loop can be registered as running where nothing will run its callbacks soon (Playwright's
    synchronous API keeps one in the main thread), while a kernel's loop runs them as soon as
    the cell or callback returns."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    shell = get_ipython()
    return loop if getattr(shell, "kernel", None) is not None else None


class DrawSchedule:
    """The draw a dashboard owes, made now or once the running cell or callback returns.

    ``draw(settled)`` renders (``settled``: the controls too), ``report(exc)`` shows a failure of a
    deferred draw in the dashboard, and ``lock`` is the session's WorkingMemory lock, which the
    deferred draw holds as every dashboard callback does.
    """

    def __init__(self, lock: Any, draw: Callable[[bool], None], report: Callable[[Exception], None]) -> None:
        self._lock = lock
        self._draw = draw
        self._report = report
        # a draw asked for while coalescing: the loop it is scheduled on, and whether it must
        # also settle the controls
        self._loop: asyncio.AbstractEventLoop | None = None
        self._settle = False

    def request(self, *, settled: bool, coalesce: bool) -> None:
        """Draw now, or (``coalesce`` in a kernel) once the loop next runs its callbacks."""
        loop = _kernel_loop() if coalesce else None
        if loop is None:
            self._draw(settled)
            return
        # draw when the loop next runs its callbacks: after the cell or callback running now,
        # once, however many turns and feeds it made (what it draws is the state then)
        self._settle = self._settle or settled
        if self._loop is not loop:  # once per loop: a draw asked of another never blocks
            self._loop = loop
            loop.call_soon(self._deferred)

    def pending(self) -> None:
        """Make now the draw that waits for the running cell or callback to return, if any."""
        with self._lock:
            if self._loop is not None:
                self._deferred()

    def on_cell_end(self, result: object = None) -> None:
        """IPython's ``post_run_cell``: the cell's draw goes out with the cell's messages."""
        self.pending()

    def _deferred(self) -> None:
        with self._lock:
            if self._loop is None:
                return  # drawn already, as the cell ended
            self._loop = None
            settled, self._settle = self._settle, False
            try:
                self._draw(settled)
            except Exception as exc:
                self._report(exc)
