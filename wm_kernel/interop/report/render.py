"""The usage report written out: text tables for a terminal, CSV, and one HTML page with a chart.

The HTML page is self-contained (no script, no external file): the tables, and per day a bar of
the dollars and a line of the cache hit rate drawn as inline SVG. Every text it shows is escaped.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence

from wm_kernel.interop.report.tally import GROUPS, Tally, UsageReport

#: The columns of every table, as ``--json`` names them.
COLUMNS = (
    "requests",
    "input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
    "usd",
    "unpriced",
    "hit_rate",
)


def _cells(tally: Tally) -> list[str]:
    rate = tally.hit_rate
    return [
        f"{tally.requests:,}",
        f"{tally.input:,}",
        f"{tally.cache_read:,}",
        f"{tally.cache_write_5m:,}",
        f"{tally.cache_write_1h:,}",
        f"{tally.output:,}",
        f"{tally.usd:,.2f}",
        f"{tally.unpriced:,}",
        "-" if rate is None else f"{rate:.1%}",
    ]


def _table(title: str, rows: Sequence[tuple[str, Tally]]) -> str:
    head = [title, *COLUMNS]
    body = [[key, *_cells(tally)] for key, tally in rows]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    lines = []
    for line in [head, *body]:
        first = line[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        lines.append("  ".join([first, *rest]).rstrip())
    return "\n".join(lines)


def text_report(report: UsageReport, groups: Sequence[str] = GROUPS) -> str:
    """The report as text: one table per group asked for, the total, and the last line."""
    parts = [_table(group, report.rows(group)) for group in groups]
    parts.append(_table("total", [("total", report.total)]))
    notes = []
    if report.skipped:
        notes.append(f"{sum(report.skipped.values()):,} ordinary lines carry no request (read and skipped)")
    if report.duplicates:
        notes.append(f"{report.duplicates:,} responses written twice counted once")
    if report.background:
        notes.append(f"{report.background:,} background calls of a traffic tap not counted (as import_log)")
    if report.outside:
        notes.append(f"{report.outside:,} requests outside --since/--until")
    if report.total.no_usage:
        notes.append(f"{report.total.no_usage:,} requests the log holds no usage for (counted, no tokens)")
    if report.total.unpriced:
        notes.append(f"{report.total.unpriced:,} requests of models without a price (no dollars: not 0)")
    return "\n\n".join(parts) + "\n" + "".join(f"{note}\n" for note in notes) + report.last_line()


def csv_report(report: UsageReport, groups: Sequence[str] = GROUPS) -> str:
    """The report as CSV: one row per entry, ``group`` and ``key`` first (the total's group is ``total``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["group", "key", *COLUMNS])
    for group in groups:
        for key, tally in report.rows(group):
            writer.writerow([group, key, *_values(tally)])
    writer.writerow(["total", "", *_values(report.total)])
    return out.getvalue()


def _values(tally: Tally) -> list[object]:
    data = tally.to_json()
    return ["" if data[c] is None else data[c] for c in COLUMNS]


def _chart(rows: Sequence[tuple[str, Tally]], width: int = 720, height: int = 220) -> str:
    """Per day, a bar of the dollars (left scale) and a line of the hit rate (0 to 100%, right)."""
    days = [(key, tally) for key, tally in rows if key[:1].isdigit()]
    if not days:
        return "<p>No request has a send time: no chart by day.</p>"
    top = max(t.usd for _, t in days) or 1.0
    pad, inner_w, inner_h = 40, width - 80, height - 50
    step = inner_w / len(days)
    shapes = []
    points = []
    for index, (key, tally) in enumerate(days):
        x = pad + index * step
        bar = inner_h * tally.usd / top
        label = html.escape(f"{key}: ${tally.usd:,.2f}, {tally.requests} requests")
        shapes.append(
            f'<rect x="{x + step * 0.15:.1f}" y="{10 + inner_h - bar:.1f}" width="{step * 0.7:.1f}" '
            f'height="{bar:.1f}" fill="#4c78a8"><title>{label}</title></rect>'
        )
        if tally.hit_rate is not None:
            points.append(f"{x + step / 2:.1f},{10 + inner_h * (1 - tally.hit_rate):.1f}")
    first, last = html.escape(days[0][0]), html.escape(days[-1][0])
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="dollars and cache hit rate per day">'
        f'<line x1="{pad}" y1="{10 + inner_h}" x2="{pad + inner_w}" y2="{10 + inner_h}" stroke="#888"/>'
        + "".join(shapes)
        + (f'<polyline points="{" ".join(points)}" fill="none" stroke="#f58518" stroke-width="2"/>' if points else "")
        + f'<text x="{pad}" y="{height - 8}" font-size="11">{first}</text>'
        f'<text x="{pad + inner_w}" y="{height - 8}" font-size="11" text-anchor="end">{last}</text>'
        f'<text x="4" y="14" font-size="11">${top:,.2f}</text>'
        f'<text x="{width - 4}" y="14" font-size="11" text-anchor="end" fill="#f58518">100% hit</text>'
        "</svg>"
    )


def _html_table(title: str, rows: Sequence[tuple[str, Tally]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in (title, *COLUMNS))
    body = "".join(
        "<tr><td>" + html.escape(key) + "</td>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(t)) + "</tr>"
        for key, t in rows
    )
    return f"<h2>by {html.escape(title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_report(report: UsageReport, groups: Sequence[str] = GROUPS) -> str:
    """The report as one HTML page: the chart of dollars and hit rate per day, then the tables."""
    total = report.total
    rate = "-" if total.hit_rate is None else f"{total.hit_rate:.1%}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>wm-kernel usage</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "</style></head><body><h1>Usage</h1>"
        f"<p>{total.requests:,} requests, ${total.usd:,.2f} ({total.unpriced:,} unpriced), "
        f"{rate} of prompt tokens read from the cache.</p>"
        "<h2>dollars (bars) and cache hit rate (line) per day</h2>"
        + _chart(report.rows("day"))
        + "".join(_html_table(group, report.rows(group)) for group in groups)
        + f"<p>{html.escape(report.last_line())}</p></body></html>\n"
    )


__all__ = ["COLUMNS", "text_report", "csv_report", "html_report"]
