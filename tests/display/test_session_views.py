"""The magic-free ways in (issue 49 item 2): ``wm_kernel.dashboard(session)`` and the views of
``%compose``, ``%cache`` and ``%request`` as plain functions, the same views the magics show."""

from __future__ import annotations

from typing import Any

import pytest

import wm_kernel
from wm_kernel.session import Session


def shown(view: Any) -> tuple[str, str]:
    """What a host shows of a view: its plain text and its HTML."""
    bundle = view._repr_mimebundle_() if hasattr(view, "_repr_mimebundle_") else None
    if isinstance(bundle, tuple):
        bundle = bundle[0]
    page = bundle["text/html"] if bundle else view._repr_html_()
    return str(view), page


@pytest.mark.parametrize(
    ("magic", "options"),
    [
        ("", {}),
        ("--raw", {"view": "raw"}),
        ("--json", {"view": "json"}),
        ("--blame", {"view": "blame"}),
        ("--diff", {"view": "diff"}),
        ("--section datetime_section", {"sections": ["datetime_section"]}),
        ("--placement notification --raw", {"placement": "notification", "view": "raw"}),
    ],
)
def test_compose_view_shows_what_compose_shows(ip: Any, session: Session, magic: str, options: dict) -> None:
    session.compose()
    by_magic = ip.run_line_magic("compose", magic)
    by_function = wm_kernel.compose_view(session, **options)
    assert type(by_function) is type(by_magic)
    assert shown(by_function) == shown(by_magic)


def test_cache_and_request_views_show_what_the_magics_show(ip: Any, session: Session) -> None:
    session.compose()
    session.advance_turn(2)
    assert shown(wm_kernel.cache_view(session)) == shown(ip.run_line_magic("cache", ""))
    assert shown(wm_kernel.cache_view(session, "gpt-4o", advice=False)) == shown(
        ip.run_line_magic("cache", "gpt-4o --no-advice")
    )
    assert shown(wm_kernel.request_view(session, 1)) == shown(ip.run_line_magic("request", "1"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"view": "loud"}, "unknown view 'loud' (views: html, raw, json, diff, blame)"),
        ({"view": "diff", "sections": ["datetime_section"]}, "the diff view shows the whole prompt;"),
        ({"placement": "attic"}, "unknown placement 'attic' (placements: system, conversation_prefix,"),
        ({"sections": ["nope"]}, "unknown section 'nope' (sections: base_prompt,"),
        ({"last": True}, "nothing composed yet: compose first (last=False)"),
    ],
)
def test_a_wrong_argument_is_one_line_and_composes_nothing(session: Session, options: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        wm_kernel.compose_view(session, **options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert session.composed is None


def test_cache_view_refuses_an_unknown_model_before_it_composes(session: Session) -> None:
    with pytest.raises(ValueError, match="gpt-17"):
        wm_kernel.cache_view(session, "gpt-17")
    assert session.composed is None


def test_dashboard_is_the_live_widget_of_a_session(session: Session) -> None:
    board = wm_kernel.dashboard(session, log_rows=3)
    assert isinstance(board, wm_kernel.Dashboard)
    assert board.session is session and board.log_rows == 3
    data, _ = board._repr_mimebundle_()
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(data)
    board.close()
