"""``%trinkets``, ``%wm_events``, ``%request`` and ``%wm_dashboard``: the magics that show the current Session.

Registered with the core magics by ``%load_ext wm_kernel`` (:mod:`wm_kernel.jupyter.magics.working_memory`);
none of them changes the session (``%wm_events --clear`` empties the bus log only).
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from wm_kernel.jupyter.magics.args import current_session, help_requested, parse_args, positive_int, strip_comment
from wm_kernel.jupyter.magics.tables import events_frame, trinkets_frame


@magics_class
class InspectionMagics(Magics):
    """Magics that show the current Session: its trinkets, its event log, a turn's request, the dashboard."""

    @line_magic
    @no_var_expand
    def trinkets(self, line: str = "") -> Any:
        """A DataFrame of the registered trinkets: section, placement, state, size, error."""
        if strip_comment(line).strip():
            raise UsageError(f"%trinkets takes no arguments, got {line.strip()!r}")
        return trinkets_frame(current_session())

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument("--last", default=None, metavar="N", help="Only the last N events.")
    @argument(
        "--type",
        dest="event_type",
        default=None,
        metavar="EVENT",
        help="Only events of this type (e.g. UpdateTrinketEvent).",
    )
    @argument("--failures", action="store_true", help="Only events a subscriber failed on.")
    @argument("--clear", action="store_true", help="Empty the log (after showing nothing).")
    def wm_events(self, line: str = "") -> Any:
        """The event bus log as a DataFrame, one row per published event, in causal order."""
        args = parse_args(self.wm_events, line)
        session = current_session()
        last = positive_int(args.last, "--last") if args.last is not None else None
        if args.event_type is not None:
            from wm_kernel.core.events import EVENT_TYPES

            if args.event_type not in EVENT_TYPES:
                raise UsageError(f"unknown event type {args.event_type!r} (types: {', '.join(EVENT_TYPES)})")
        if args.clear:
            if last is not None or args.event_type or args.failures:
                raise UsageError("--clear takes no other option")
            session.bus.clear_log()
            return None
        return events_frame(session, last, args.event_type, args.failures)

    @line_magic
    @no_var_expand
    def request(self, line: str = "") -> Any:
        """The whole request of a turn against the model's window (``%request --help``)."""
        from wm_kernel.jupyter.magics.request import PARSER, request_magic, request_usage

        if help_requested(line):
            print(request_usage())
            return None
        return request_magic(current_session(), parse_args(PARSER, line))

    @line_magic
    @no_var_expand
    def wm_dashboard(self, line: str = "") -> None:
        """Display the live dashboard of the current session (a widget: in a notebook only);
        ``--ipywidgets``: the deprecated ipywidgets dashboard of 0.1, for one release more."""
        words = strip_comment(line).split()
        if words not in ([], ["--ipywidgets"]):
            raise UsageError(f"%wm_dashboard takes no arguments but --ipywidgets, got {line.strip()!r}")
        if getattr(self.shell, "kernel", None) is None:
            raise UsageError(
                "%wm_dashboard needs a notebook (JupyterLab or Notebook, where widgets "
                "show); in a terminal use %compose, %trinkets, %wm_events and %cache"
            )
        from IPython.display import display

        if words:
            from wm_kernel.jupyter.dashboard.legacy import IpywidgetsDashboard

            display(IpywidgetsDashboard(current_session()))
            return
        from wm_kernel.jupyter.dashboard.widget import Dashboard

        display(Dashboard(current_session()))
