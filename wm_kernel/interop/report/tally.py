"""The usage report: every request's usage under some paths, totalled per day, model and session.

:func:`usage_report` reads the logs (``scan``), keeps one request per API response across files
(a transcript's response written into its session and into a subagent file, a session copied on
resume: the first file's, as ``import_log`` keeps it), prices each request as the import does (its
own model's row on the day it was sent, ``request_pricing``'s rule; a model without a row is
unpriced: its dollars are missing and it is counted in ``unpriced``) and totals them.

Each total (:class:`Tally`) holds ``requests``, ``input`` (uncached), ``cache_read``,
``cache_write_5m``, ``cache_write_1h``, ``output``, ``usd`` (priced requests only), ``unpriced``
(a count) and ``hit_rate`` (reads over all prompt tokens). Keys: ``day`` the UTC date of the send
time, ``model`` the model without its snapshot date (its price row's name when it has one),
``session`` the session id (subagents counted in their session).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from wm_kernel.cachesim.models import Priced, family_name, priced_as
from wm_kernel.interop.log_pricing import default_model
from wm_kernel.interop.report.scan import UsageCache, UsageRow, scan

#: The tables of a report, by the key each is totalled on.
GROUPS = ("day", "model", "session")
#: A snapshot date at the end of a model id (``-20250929``, ``-2024-07-18``, ``@20250929``).
_DATED = re.compile(r"[-@](?:20\d{6}|20\d\d-\d\d-\d\d)(?=$|-v\d)")
NO_DAY = "(no time)"
NO_MODEL = "(no model)"


def model_key(model: str | None) -> str:
    """A model as the report groups it: its price row's name, else the id without a snapshot date."""
    if not model:
        return NO_MODEL
    return family_name(model) or _DATED.sub("", model)


@dataclass
class Tally:
    """The totals of some requests (module docstring)."""

    requests: int = 0
    input: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0
    usd: float = 0.0
    unpriced: int = 0
    no_usage: int = 0

    def add(self, row: UsageRow, usd: float | None) -> None:
        self.requests += 1
        if not row.usage:
            self.no_usage += 1
            return
        self.input += row.input
        self.cache_read += row.cache_read
        self.cache_write_5m += row.cache_write_5m
        self.cache_write_1h += row.cache_write_1h
        self.output += row.output
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd

    @property
    def prompt(self) -> int:
        """Every prompt token: uncached, read and written."""
        return self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def hit_rate(self) -> float | None:
        """The share of prompt tokens read from the cache (None without any)."""
        return self.cache_read / self.prompt if self.prompt else None

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input": self.input,
            "cache_read": self.cache_read,
            "cache_write_5m": self.cache_write_5m,
            "cache_write_1h": self.cache_write_1h,
            "output": self.output,
            "usd": round(self.usd, 6),
            "unpriced": self.unpriced,
            "hit_rate": None if self.hit_rate is None else round(self.hit_rate, 6),
            "no_usage": self.no_usage,
        }


@dataclass
class UsageReport:
    """What :func:`usage_report` found: the totals, per day, model and session, and what was not
    counted (lines no reader understood, ordinary lines skipped, background calls, duplicates)."""

    total: Tally = field(default_factory=Tally)
    groups: dict[str, dict[str, Tally]] = field(default_factory=lambda: {g: {} for g in GROUPS})
    issues: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    background: int = 0
    duplicates: int = 0
    files: int = 0
    cached: int = 0
    outside: int = 0

    def rows(self, group: str) -> list[tuple[str, Tally]]:
        """One group's totals, sorted by key (days in order, models and sessions by name)."""
        return sorted(self.groups[group].items())

    def to_json(self) -> dict[str, Any]:
        """``{"total": {...}, "by_day": [...], "by_model": [...], "by_session": [...]}`` and what
        was not counted (``not_counted``)."""
        out: dict[str, Any] = {"total": self.total.to_json()}
        for group in GROUPS:
            out[f"by_{group}"] = [{group: key, **tally.to_json()} for key, tally in self.rows(group)]
        out["not_counted"] = {
            "lines_not_understood": len(self.issues),
            "issues": list(self.issues),
            "ordinary_lines_skipped": dict(sorted(self.skipped.items())),
            "background_calls": self.background,
            "duplicate_responses": self.duplicates,
            "outside_dates": self.outside,
        }
        return out

    def last_line(self, shown: int = 3) -> str:
        """The report's last line: the lines no reader understood, counted and named (the first
        ``shown`` of them), or that every line was understood."""
        if not self.issues:
            return f"every line of the {self.files} file{'s' if self.files != 1 else ''} was understood"
        named = "; ".join(self.issues[:shown])
        more = f"; and {len(self.issues) - shown} more (--json lists them)" if len(self.issues) > shown else ""
        return f"{len(self.issues)} lines no reader understands, not counted: {named}{more}"


class _Prices:
    """Each request's dollars as the import prices it (its model's row on the day it was sent, in
    the send time's own zone, as ``request_pricing`` reads ``sent_at.date()``), the profiles looked
    up once per model and day."""

    def __init__(self) -> None:
        self.profiles: dict[tuple[str | None, str, str | None], Priced] = {}

    def usd(self, row: UsageRow) -> float | None:
        day = row.sent_at[:10] if row.sent_at is not None else None
        key = (row.model, row.provider, day)
        found = self.profiles.get(key)
        if found is None:
            at = date.fromisoformat(day) if day is not None else None
            found = self.profiles[key] = priced_as(row.model, default_model(row.provider), at=at)
        if not found.priced:
            return None
        try:
            cost = found.profile.bill(row.input, row.cache_read, dict(row.writes), row.output)
        except ValueError:
            return None  # a write at a TTL the model does not offer: not priced as another
        return cost.total_usd


def _utc_day(value: str | None) -> date | None:
    """The UTC date of an ISO-8601 send time (read without parsing when it is already in UTC)."""
    if value is None:
        return None
    if value.endswith("+00:00"):
        return date.fromisoformat(value[:10])
    try:
        return datetime.fromisoformat(value).astimezone(UTC).date()
    except ValueError:
        return None


def usage_report(
    paths: Iterable[str | Path],
    *,
    since: date | None = None,
    until: date | None = None,
    cache: UsageCache | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> UsageReport:
    """The usage of every log under ``paths`` (module docstring). ``since`` / ``until`` keep the
    requests sent on those UTC days (inclusive; a request without a time is then left out);
    ``cache`` reads unchanged units from a :class:`~wm_kernel.interop.report.scan.UsageCache`."""
    report = UsageReport()
    prices = _Prices()
    seen: set[str] = set()
    models: dict[str | None, str] = {}
    for _, read in scan(paths, cache=cache, progress=progress):
        report.files += 1
        report.cached += read.cached
        report.issues += read.issues
        report.skipped += read.skipped
        report.background += read.background
        for row in read.rows:
            if row.ids and any(i in seen for i in row.ids):
                report.duplicates += 1
                continue
            seen.update(row.ids)
            day = _utc_day(row.sent_at)
            if (since is not None or until is not None) and (
                day is None or (since is not None and day < since) or (until is not None and day > until)
            ):
                report.outside += 1
                continue
            usd = prices.usd(row) if row.usage else None
            keys: Mapping[str, str] = {
                "day": day.isoformat() if day is not None else NO_DAY,
                "model": models[row.model]
                if row.model in models
                else models.setdefault(row.model, model_key(row.model)),
                "session": row.session,
            }
            report.total.add(row, usd)
            for group, key in keys.items():
                report.groups[group].setdefault(key, Tally()).add(row, usd)
    return report


__all__ = ["GROUPS", "Tally", "UsageReport", "usage_report", "model_key"]
