"""The cache clock (wm_kernel.display.cache_clock): requests, TTL windows, cold spans and edits drawn
over time; its structure asserted here, its styling pinned once by the golden snapshot."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from wm_kernel.display.cache_clock import FOLD, MOST_MARKS, CacheClock, ClockEdit, ClockRequest, ColdSpan

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _clock() -> CacheClock:
    """A 5-minute chain: two requests a minute apart, 9 minutes idle (cold from 09:06), one more;
    a subagent on a model of its own; a compaction that ran at 09:10 and the plan's at 09:01."""
    return CacheClock(
        "cache clock: <demo> $5",
        [
            ClockRequest(0, at(0), 300, "main", "write", "claude-opus-4-6"),
            ClockRequest(1, at(1), 300, "main", "hit", "claude-opus-4-6"),
            ClockRequest(3, at(10), 300, "main", "partial", "claude-opus-4-6", "after <idle>"),
            ClockRequest(2, at(2), 300, "agent-a1", "write", "claude-haiku-4-5"),
            ClockRequest(4, at(3), 300, "agent-a1", "hit", "claude-sonnet-4-6"),
        ],
        [
            ClockEdit(at(10), "compaction (manual)", False, "compaction on a cold cache: $0.5"),
            ClockEdit(at(1), "compaction (manual)", True, 'compact before the cache expires: <b>"$0.01"</b>'),
        ],
        notes=["tool-result clear: never <x>"],
    )


def test_cold_spans_name_where_the_ttl_ran_out_and_a_model_switch() -> None:
    clock = _clock()
    assert clock.lanes == ["main", "agent-a1"]
    assert clock.cold_spans() == [
        ColdSpan("agent-a1", at(3), at(3), "model switch: claude-haiku-4-5 to claude-sonnet-4-6"),
        ColdSpan("main", at(6), at(10), "TTL ran out"),
    ]
    # a request inside the window of an earlier one keeps the lane warm: no span
    warm = CacheClock("t", [ClockRequest(0, at(0), 300, "m", "write"), ClockRequest(1, at(4.9), 300, "m", "hit")])
    assert warm.cold_spans() == []


def test_text_says_the_cold_spans_and_the_numbered_edits_in_time_order() -> None:
    assert str(_clock()) == (
        "cache clock: <demo> $5: 5 requests from 2026-11-30 09:00:00 to 09:10:00 UTC (main 3, agent-a1 2)\n"
        "  cold at 09:03:00 (agent-a1): model switch: claude-haiku-4-5 to claude-sonnet-4-6\n"
        "  cold 09:06:00 to 09:10:00 (main, 4 min): TTL ran out\n"
        '  1. plan 09:01:00: compact before the cache expires: <b>"$0.01"</b>\n'
        "  2. ran 09:10:00: compaction on a cold cache: $0.5\n"
        "  tool-result clear: never <x>"
    )
    assert str(CacheClock("empty", [])) == "empty: no request to draw"


def test_the_picture_has_a_mark_per_request_cold_span_and_edit_with_every_text_escaped() -> None:
    page = _clock()._repr_html_()
    assert page.startswith('<div class="mathjax_ignore tex2jax_ignore"><div class="wm-cache-clock-view"')
    requests = re.findall(r'<g class="wm-clock-request" data-request="(\d+)" data-status="(\w+)">', page)
    assert requests == [("0", "write"), ("1", "hit"), ("3", "partial"), ("2", "write"), ("4", "hit")]
    assert page.count('class="wm-ttl"') == 5
    assert (
        re.findall(r'<g class="wm-cold" data-reason="([^"]*)">', page)
        == [
            "model switch: claude-haiku-4-5 to claude-sonnet-4-6",
            "TTL ran out",
        ][::-1]
    )
    edits = re.findall(r'<g class="wm-clock-edit" data-kind="([^"]*)" data-planned="(\w+)">', page)
    assert edits == [("compaction (manual)", "true"), ("compaction (manual)", "false")]
    # hover texts: the request's window, the cold span's length
    assert (
        "<title>request 3 at 09:10:00: partial, claude-opus-4-6; its cache lives until 09:15:00 (5 min TTL); "
        "after &lt;idle&gt;</title>" in page
    )
    assert "<title>cold from 09:06:00 to 09:10:00 (4 min): TTL ran out</title>" in page
    # nothing a title, a note or an edit says is markup; no dollar reads as math
    assert "<demo>" not in page and "<x>" not in page and '<b>"' not in page
    assert "&lt;demo&gt;" in page and "never &lt;x&gt;" in page and "&lt;b&gt;&quot;" in page
    assert "$" not in page.replace("&#36;", "")
    hostile = CacheClock("t", [ClockRequest(0, at(0), 300, '<img src=x onerror="1">', "hit", "<m>")]).svg()
    assert "<img" not in hostile and "<m>" not in hostile and "&lt;img src=x onerror=&quot;1&quot;&gt;" in hostile
    # time runs left to right: the planned edit (09:01) left of the one that ran (09:10)
    xs = [float(x) for x in re.findall(r'<g class="wm-clock-edit"[^>]*><title>[^<]*</title><line x1="([\d.]+)"', page)]
    assert xs[0] < xs[1]


def test_a_long_idle_stretch_is_folded_and_says_how_long() -> None:
    clock = CacheClock(
        "night",
        [ClockRequest(0, at(0), 300, "m", "write"), ClockRequest(1, at(8 * 60), 300, "m", "write")],
    )
    page = clock.svg()
    assert page.count('class="wm-fold"') == 1
    assert "<title>7 h 45 min idle, every cache cold: folded</title>" in page
    assert FOLD == timedelta(minutes=30)
    # drawn at scale: the first window (5 min), a fold margin on each side (5 min each), the last
    # window (5 min): each window a quarter of the plot less the break
    widths = [float(w) for w in re.findall(r'class="wm-ttl" x="[\d.]+" y="\d+" width="([\d.]+)"', page)]
    assert widths == [155.5, 155.5]


def test_golden_snapshot_of_a_small_clock() -> None:
    clock = CacheClock(
        "golden",
        [ClockRequest(0, at(0), 300, "main", "write"), ClockRequest(1, at(7), 300, "main", "hit")],
        [ClockEdit(at(2), "segment collapse", True, "at the next cold miss")],
        now=at(1),
    )
    assert clock.svg() == GOLDEN_SVG


GOLDEN_SVG = (
    '<svg class="wm-cache-clock" xmlns="http://www.w3.org/2000/svg" width="802" height="68" '
    'style="font-size:11px;font-family:var(--jp-ui-font-family,sans-serif)">'
    '<line x1="150.0" y1="30" x2="150.0" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="150.0" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:00</text>'
    '<line x1="256.7" y1="30" x2="256.7" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="256.7" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:02</text>'
    '<line x1="363.3" y1="30" x2="363.3" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="363.3" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:04</text>'
    '<line x1="470.0" y1="30" x2="470.0" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="470.0" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:06</text>'
    '<line x1="576.7" y1="30" x2="576.7" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="576.7" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:08</text>'
    '<line x1="683.3" y1="30" x2="683.3" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="683.3" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:10</text>'
    '<line x1="790.0" y1="30" x2="790.0" y2="68" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<text x="790.0" y="11" text-anchor="middle" style="fill:var(--jp-ui-font-color2, '
    '#616161)">09:12</text>'
    '<text x="4" y="48" style="fill:var(--jp-content-font-color1,#000)">'
    "<title>main</title>main</text>"
    '<line x1="150" y1="58" x2="790" y2="58" style="stroke:var(--jp-border-color2, '
    '#e0e0e0);stroke-width:0.5"/>'
    '<g class="wm-cold" data-reason="TTL ran out">'
    "<title>cold from 09:05:00 to 09:07:00 (2 min): TTL ran out</title>"
    '<rect x="416.7" y="45" width="106.7" height="4" style="fill:color-mix(in srgb, '
    'var(--jp-error-color1, #d32f2f) 65%, var(--jp-content-font-color0, #000))"/>'
    "</g>"
    '<g class="wm-clock-request" data-request="0" data-status="write">'
    "<title>request 0 at 09:00:00: write; its cache lives until 09:05:00 (5 min TTL)</title>"
    '<rect class="wm-ttl" x="150.0" y="43" width="266.7" height="8" style="fill:color-mix(in srgb, '
    'var(--jp-info-color1, #0097a7) 65%, var(--jp-content-font-color0, #000));opacity:0.18"/>'
    '<circle cx="150.0" cy="47" r="3.5" style="fill:color-mix(in srgb, var(--jp-info-color1, #0097a7) '
    '65%, var(--jp-content-font-color0, #000))"/>'
    "</g>"
    '<g class="wm-clock-request" data-request="1" data-status="hit">'
    "<title>request 1 at 09:07:00: hit; its cache lives until 09:12:00 (5 min TTL)</title>"
    '<rect class="wm-ttl" x="523.3" y="43" width="266.7" height="8" style="fill:color-mix(in srgb, '
    'var(--jp-info-color1, #0097a7) 65%, var(--jp-content-font-color0, #000));opacity:0.18"/>'
    '<circle cx="523.3" cy="47" r="3.5" style="fill:color-mix(in srgb, var(--jp-success-color1, #388e3c) '
    '65%, var(--jp-content-font-color0, #000))"/>'
    "</g>"
    '<g class="wm-clock-edit" data-kind="segment collapse" data-planned="true">'
    "<title>1. plan at 09:02:00: at the next cold miss</title>"
    '<line x1="256.7" y1="20" x2="256.7" y2="68" style="stroke:color-mix(in srgb, var(--jp-info-color1, '
    '#0097a7) 65%, var(--jp-content-font-color0, #000));stroke-width:2;stroke-dasharray:4 3"/>'
    '<text x="259.7" y="18" style="fill:color-mix(in srgb, var(--jp-info-color1, #0097a7) 65%, '
    'var(--jp-content-font-color0, #000));font-weight:bold">1</text>'
    "</g>"
    '<g class="wm-clock-now">'
    "<title>now: 09:01:00</title>"
    '<line x1="203.3" y1="30" x2="203.3" y2="68" '
    'style="stroke:var(--jp-content-font-color1,#000);stroke-width:1;stroke-dasharray:1 2"/>'
    '<text x="200.3" y="30" text-anchor="end" style="fill:var(--jp-content-font-color1,#000)">now</text>'
    "</g>"
    "</svg>"
)


def test_a_lane_of_many_requests_draws_those_too_close_to_tell_apart_as_one_mark() -> None:
    many = [
        ClockRequest(i, T0 + timedelta(seconds=20 * i), 300, "main", "miss" if i == 7 else "hit")
        for i in range(MOST_MARKS + 40)
    ]
    page = CacheClock("busy", many).svg()
    single = re.findall(r'data-request="(\d+)"', page)
    groups = re.findall(r'data-requests="(\d+)-(\d+)" data-status="(\w+)"', page)
    # every request is in exactly one mark, in order, and far fewer marks are drawn
    covered = [int(i) for i in single] + [i for a, b, _ in groups for i in range(int(a), int(b) + 1)]
    assert sorted(covered) == list(range(MOST_MARKS + 40)) and len(single) + len(groups) < MOST_MARKS
    # a mark shows the worst of its requests, and says what they were on hover
    (worst,) = [g for g in groups if int(g[0]) <= 7 <= int(g[1])]
    assert worst[2] == "miss"
    assert re.search(
        rf"<title>requests {worst[0]} to {worst[1]} \(\d+\) from 09:0\d:\d\d to 09:0\d:\d\d: \d+ hit, 1 miss;", page
    )
    # at most MOST_MARKS requests: one mark each
    assert len(re.findall(r'data-request="', CacheClock("t", many[:MOST_MARKS]).svg())) == MOST_MARKS
