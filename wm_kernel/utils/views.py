"""How the data types of the lower layers show in IPython: views the display layer registers.

A ComposedPrompt (the core) and a trinket's text (the trinkets) show richly in a notebook, but
their layers sit below the display layer and may not import it. They ask here instead:
the package's ``__init__`` (the top layer, which runs before any of its modules) names the loader
that imports ``wm_kernel.display.render`` and calls its ``register_views()``, so the first object
shown loads the display layer. A plain ``import wm_kernel.core`` loads nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any, Protocol

__all__ = ["register", "set_loader", "composed_mimebundle", "text", "VIEW_SETUP", "RICH_VIEWS", "OTHER_VIEWS"]

MimeBundle = dict[str, Any]


class PrettyPrinter(Protocol):
    """What a ``_repr_pretty_`` method is handed and uses: IPython's pretty printer, which takes
    the text to show."""

    def text(self, obj: str) -> None: ...


_composed: Callable[..., MimeBundle] | None = None
_text: Callable[[str], str] | None = None
_loader: Callable[[], object] | None = None


def register(*, composed_prompt: Callable[..., MimeBundle], text: Callable[[str], str]) -> None:
    """The display layer's views: the mime bundle of a ComposedPrompt (called with the prompt,
    ``include`` and ``exclude``) and the str subclass a plain text shows as."""
    global _composed, _text
    _composed, _text = composed_prompt, text


def set_loader(loader: Callable[[], object]) -> None:
    """What loads the display layer and registers its views, on first use."""
    global _loader
    _loader = loader


def _load() -> None:
    if _composed is None and _loader is not None:
        _loader()


def composed_mimebundle(
    prompt: object, include: Container[str] | None = None, exclude: Container[str] | None = None
) -> MimeBundle:
    """The mime bundle IPython shows for a ComposedPrompt; its ``repr`` until a view is registered."""
    _load()
    if _composed is None:
        return {"text/plain": repr(prompt)}
    return _composed(prompt, include=include, exclude=exclude)


def text(value: str) -> str:
    """``value`` as a str that shows as itself (a ``<pre>`` block in a notebook), once registered."""
    _load()
    return value if _text is None else _text(value)


# -- the registry of rich views -----------------------------------------------------------------

#: Every rich view of the kit: each class (``module:QualName``) that defines ``_repr_html_`` or
#: ``_repr_mimebundle_``, and a notebook cell that shows one, as a user meets it. The cells run in
#: order after a session is set up with fed trinkets and a turn (``{ROOT}`` stands for the
#: repository's folder); tests/display/test_view_registry.py fails when a class of the kit has a
#: rich view and no entry here, and tests/browser/test_contrast.py measures every entry in
#: JupyterLab's light and dark themes. A new view gets its entry here, and is measured.
#: The cells that set up the session the view cells show: a ManualClock (so the session keeps its
#: own recording), fed trinkets (dollar amounts in user text among them), a turn.
VIEW_SETUP: tuple[str, ...] = (
    "%load_ext wm_kernel\n"
    "%wm_session --clock 2026-11-30T09:00:00+00:00 --first-name Ada --timezone Europe/London --layout original",
    "%trinket peanutgallery add concern 'Quote prices as $5 to $10.' --ttl 3\n"
    "%trinket reminder add 'Call Bob' --due +2h\n"
    "%trinket proactivememory surface 'Ada takes her tea at $4 a cup' --score 0.9\n"
    "%turn 1",
)

RICH_VIEWS: dict[str, str] = {
    "wm_kernel.core.prompt:ComposedPrompt": "import wm_kernel\np = %compose\np",
    "wm_kernel.display.render:PromptView": "%compose --placement system",
    "wm_kernel.display.render:PromptText": "%compose --raw",
    "wm_kernel.instruments.diff:PromptDiff": (
        "%trinket peanutgallery add coaching 'Ask before you assume.'\n%compose --diff"
    ),
    "wm_kernel.display.render:BlameView": "%compose --blame",
    "wm_kernel.display.render:TurnReport": "%turn 2",
    "wm_kernel.display.tables:Table": "%trinkets",
    "wm_kernel.display.budget_bars:BudgetBars": (
        "from wm_kernel.display.budget_bars import budget_bars\nbudget_bars(wm_kernel.current_session().composed)"
    ),
    "wm_kernel.display.cache_view:CacheView": "%cache",
    "wm_kernel.cachesim.simulation:Simulation": "wm_kernel.current_session().cache_simulation()",
    "wm_kernel.cachesim.advice:Advice": "wm_kernel.current_session().cache_advice()",
    "wm_kernel.cachesim.report:CacheReport": (
        "from wm_kernel.cachesim.report import cache_report\ncache_report(wm_kernel.current_session())"
    ),
    "wm_kernel.display.wire_view:WireView": "%request --per-hour 20",
    "wm_kernel.display.plan_view:PlanView": "%plan --summary 200",
    "wm_kernel.display.cache_clock:CacheClock": (
        "from wm_kernel.display.plan_view import session_clock\nsession_clock(wm_kernel.current_session())"
    ),
    "wm_kernel.jupyter.magics.check:CheckTable": (
        "%%wm_check\nsection_present peanutgallery_guidance\n"
        "placement_under notification 5\nhit_rate claude-sonnet-4-6 90%"
    ),
    "wm_kernel.testing.report:StabilityReport": "%wm_check stability --only recompose --only clock_jitter",
    # notebook 10's recorded replies without their prompt digests: they answer this session's prompt
    "wm_kernel.providers.send:Reply": (
        "from wm_kernel.jupyter.magics.ask import set_ask_client\n"
        "from wm_kernel.providers.recording import Recording\n"
        "sends = Recording.load('{ROOT}/notebooks/recordings/10_sends.jsonl').exchanges\n"
        "set_ask_client(None, recording=Recording(sends))\n"
        "%ask --model claude-sonnet-4-6 Hi, my floor lamp arrived with a cracked shade."
    ),
    "wm_kernel.display.exchanges:ExchangesView": (
        "from wm_kernel.display.exchanges import exchanges_view\nexchanges_view(wm_kernel.current_session())"
    ),
    "wm_kernel.jupyter.dashboard.widget:Dashboard": "wm_kernel.dashboard(wm_kernel.current_session())",
    "wm_kernel.providers.reconciliation:Reconciliation": (
        "from wm_kernel.providers.reconcile import reconcile\nreconcile(wm_kernel.current_session())"
    ),
}

#: Views that are not a class of the kit's own, measured too: what ``%wm_import`` shows and the
#: tables of the imported log (pandas frames in JupyterLab's table style), last, since the import
#: makes the log the current session.
OTHER_VIEWS: dict[str, str] = {
    "imported log": "log = %wm_import {ROOT}/notebooks/logs/parcelly_support.jsonl\nlog.history",
    "imported log summary": "log.summary()",
    "imported log stability": "%wm_check stability",
    "imported log reconciliation": "from wm_kernel.providers.reconcile import reconcile\nreconcile(log)",
}
