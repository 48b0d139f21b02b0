"""What a Session shows of the turns it recorded, through the History attached to it.

:class:`RecordedViews` is mixed into :class:`~wm_kernel.session.Session`: the History that records
it (``recorder``), that History's table (``history``), the prompt of a turn (``prompt_at``), the
recorded turns played against a model's cache rules (``cache_simulation``, ``cache_advice``) and
the diff of two turns, of this session or of two (``diff``), and its context edits priced against
its cache clock (``plan``). It reads what it needs of the session
as :class:`ViewedSession`, so it imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from wm_kernel.cachesim.models import DEFAULT_MODEL
from wm_kernel.cachesim.requests import RecordedSession
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.history import RecordableSession

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.cachesim.advice import Advice
    from wm_kernel.cachesim.simulation import Simulation
    from wm_kernel.instruments.diff import PromptDiff
    from wm_kernel.instruments.history import History

__all__ = ["RecordedViews", "ViewedSession"]


class ViewedSession(RecordableSession, RecordedSession, Protocol):
    """What the views read of the session they are mixed into (a Session has it all): what a
    History records and the cache simulator reads, the session's model, and a turn's prompt."""

    @property
    def model(self) -> str | None: ...

    def prompt_at(self, turn: int) -> ComposedPrompt: ...


class RecordedViews:
    """The views of a session's recorded turns (see the module docstring)."""

    @property
    def recorder(self: ViewedSession) -> History:
        """The History attached to this session (attached now if none is: it records from now)."""
        from wm_kernel.instruments.history import History

        return History.of(self)

    @property
    def history(self: ViewedSession) -> pd.DataFrame:
        """pandas DataFrame, one row per (turn, section) of every compose (``recorder.frame()``)."""
        return self.recorder.frame()

    def prompt_at(self: ViewedSession, turn: int) -> ComposedPrompt:
        """The prompt composed at ``turn`` (its last compose), from the history."""
        return self.recorder.prompt_at(turn)

    def cache_simulation(self: ViewedSession, model: str | None = None, **options: Any) -> Simulation:
        """The recorded turns played against ``model``'s prompt-cache rules (default: the session's
        model, else claude-sonnet-4-6) on the session's ``wire`` unless ``wire=`` names another
        (``wm_kernel.cachesim.requests.simulate_session``: wire, breakpoints, history,
        tools_tokens, ...). A model named here counts with its own counter. Its full views name
        what its figures leave out of the last turn's request, which ``%request`` counts (the
        separators and HUD frame: ``wm_kernel.cachesim.requests.say_uncounted``)."""
        from wm_kernel.cachesim.requests import model_counter, say_uncounted, simulate_session

        replayed = getattr(self, "replayed", None)
        plain = {"breakpoints": "auto", "tools_tokens": 0, "wire": None, "counter": self.recorder.counter}
        if replayed is not None and all(
            value is None or value == plain.get(name, object()) for name, value in options.items()
        ):
            # an imported log's session has one bill: the log's own simulation (its models, its
            # inferred system prompt and tools, its agent's caching, its send times), as every view
            bill: Simulation = replayed.bill(None if model in (None, self.model) else model)
            return bill
        if model is not None and options.get("counter") is None:  # a model named: its own counter
            options["counter"] = model_counter(self, model)
        simulation = simulate_session(self, model=model or self.model or DEFAULT_MODEL, **options)
        return say_uncounted(simulation, self, options.get("history"))

    def cache_advice(self: ViewedSession, model: str | None = None, **options: Any) -> Advice:
        """Cheaper cache layouts for the recorded turns, each with its simulated cost
        (``wm_kernel.cachesim.requests.session_advice``; a model named counts with its own counter,
        as ``cache_simulation``)."""
        from wm_kernel.cachesim.requests import model_counter, session_advice

        if model is not None and options.get("counter") is None:
            options["counter"] = model_counter(self, model)
        return session_advice(self, model or self.model or DEFAULT_MODEL, **options)

    def plan(
        self: ViewedSession,
        model: str | None = None,
        *,
        summary_tokens: int = 0,
        tool_sections: Sequence[str] = ("context_search_results",),
        turn: int | None = None,
        **options: Any,
    ) -> pd.DataFrame:
        """A segment collapse and a tool-result clear priced now against at the session's next
        cold miss, after its last recorded turn (``wm_kernel.cachesim.session_plan``, docs/planner.md):
        the collapse drops the conversation and clears the stateful trinkets' sections, adding
        ``summary_tokens``; the clear empties ``tool_sections``. ``turn``: plan right after that
        recorded turn's request instead (at its send time; the last turn's is planned at the
        session's clock). ``model`` and ``options`` as :meth:`cache_simulation`. ValueError when
        nothing is recorded yet, or at that turn."""
        from trinkets.stateful import StatefulTrinket
        from wm_kernel.cachesim.session_plan import plan_edits

        simulation = RecordedViews.cache_simulation(self, model, **options)
        if not simulation.requests:
            raise ValueError("nothing recorded yet: compose first")
        trinkets = getattr(self, "trinkets", {})
        cleared = [t.variable_name for t in trinkets.values() if isinstance(t, StatefulTrinket)]
        clock = getattr(self, "clock", None)
        index = len(simulation.requests) - 1
        now = clock.now() if clock is not None else simulation.requests[-1].at
        if turn is not None:
            if isinstance(turn, bool) or not isinstance(turn, int):
                raise ValueError(f"turn must be an int, got {turn!r}")
            turns = list(simulation.turns["turn"]) if "turn" in simulation.turns else list(range(index + 1))
            upto = [i for i, t in enumerate(turns) if t <= turn]
            if not upto:
                raise ValueError(f"nothing recorded at or before turn {turn} (the first recorded is {turns[0]})")
            if upto[-1] < index:
                index = upto[-1]
                now = simulation.requests[index].at
        return plan_edits(
            simulation.requests[index],
            simulation.profile,
            now=now,
            cleared=cleared,
            tool_sections=tool_sections,
            summary_tokens=summary_tokens,
        )

    def diff(
        self: ViewedSession, turn_a: int, turn_b: int | None = None, *, other: ViewedSession | None = None
    ) -> PromptDiff:
        """A PromptDiff from turn ``turn_a`` to ``turn_b`` (default: the latest recorded turn), or to
        ``other``'s prompt at ``turn_b`` (default ``turn_a``) when another Session is given."""
        from wm_kernel.instruments.diff import diff_prompts

        # a Session is the one class these views are mixed into
        if other is not None and not isinstance(other, RecordedViews):
            raise TypeError(f"other must be a Session, got {type(other).__name__}")
        target = other if other is not None else self
        if turn_b is None:
            if other is not None:
                turn_b = turn_a
            else:
                last = self.recorder.last_position()
                if last is None:
                    raise ValueError("nothing recorded yet: compose first")
                turn_b = last[0]
        old = self.prompt_at(turn_a)
        new = target.prompt_at(turn_b)
        if other is None:
            return diff_prompts(old, new, old_label=f"turn {turn_a}", new_label=f"turn {turn_b}")
        return diff_prompts(
            old, new, old_label=f"{self.continuum_id} turn {turn_a}", new_label=f"{other.continuum_id} turn {turn_b}"
        )
