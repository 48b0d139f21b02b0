"""The get_context search results as :class:`~trinkets.getcontext.GetContextTrinket` keeps them.

A :class:`SearchResult` per task: the fields each status accepts (:data:`FIELDS`), their checking
and normalising (:func:`validate`), the record stored for a result (:func:`record`) and the reading
of stored records back (:func:`parse_entries`). The trinket's module docstring lists the fields by
status.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wm_kernel.utils.checks import check_unicode

STATUSES: tuple[str, ...] = ("pending", "success", "timeout", "failed")
#: Fields each status accepts (required ones first).
FIELDS: dict[str, tuple[str, ...]] = {
    "pending": ("query", "search_scope", "search_mode"),
    "success": ("summary",),
    "timeout": ("query", "iteration", "findings_count"),
    "failed": ("query", "error", "error_type"),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "pending": ("query",),
    "success": ("summary",),
    "timeout": ("query", "iteration", "findings_count"),
    "failed": ("query", "error", "error_type"),
}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The latest report on one search task, received while ``current_turn`` was ``received_turn``."""

    task_id: str
    status: str
    received_turn: int
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def expires(self) -> bool:
        return self.status in ("timeout", "failed")


# -- validation: each returns a normalised copy or raises a one-line ValueError


def _text(value: object, what: str, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str; got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValueError(f"{what} must be a non-empty str")
    return check_unicode(value, what)


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int; got {value!r}")
    return value


def _summary(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(
            f"summary must be a dict with query, summary, key_findings, limitations; got {type(value).__name__}"
        )
    unknown = sorted(set(value) - {"query", "summary", "key_findings", "limitations"})
    if unknown:
        raise ValueError(f"unexpected summary key(s): {', '.join(map(str, unknown))}")
    findings_in = value.get("key_findings")
    if findings_in is None:
        findings_in = []
    if isinstance(findings_in, (str, Mapping)) or not isinstance(findings_in, (list, tuple)):
        raise ValueError("summary key_findings must be a list of {point, source?} dicts")
    findings = []
    for i, finding in enumerate(findings_in):
        if not isinstance(finding, Mapping) or "point" not in finding:
            raise ValueError(f"summary key_findings[{i}] must be a dict with a 'point'")
        unknown = sorted(set(finding) - {"point", "source"})
        if unknown:
            raise ValueError(f"unexpected key(s) in key_findings[{i}]: {', '.join(map(str, unknown))}")
        point = _text(finding["point"], f"key_findings[{i}] point")
        source = finding.get("source")
        if source is not None:
            source = _text(source, f"key_findings[{i}] source", empty_ok=True) or None
        findings.append({"point": point, "source": source} if source else {"point": point})
    limitations = value.get("limitations")
    if limitations is not None:
        limitations = _text(limitations, "summary limitations", empty_ok=True) or None
    if "query" not in value:
        raise ValueError("summary needs a 'query'")
    return {
        "query": _text(value["query"], "summary query"),
        "summary": _text(value.get("summary", ""), "summary text", empty_ok=True),
        "key_findings": findings,
        "limitations": limitations,
    }


def validate(status: object, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a ``status`` result, checked and normalised (a new dict); ValueError otherwise."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
    assert isinstance(status, str)
    unknown = sorted(set(fields) - set(FIELDS[status]))
    if unknown:
        raise ValueError(
            f"unexpected field(s) for a {status} result: {', '.join(unknown)} (accepted: {', '.join(FIELDS[status])})"
        )
    missing = [name for name in _REQUIRED[status] if name not in fields]
    if missing:
        raise ValueError(f"a {status} result needs {', '.join(missing)}")
    if status == "success":
        return {"summary": _summary(fields["summary"])}
    data: dict[str, Any] = {"query": _text(fields["query"], "query")}
    if status == "pending":
        scope = fields.get("search_scope") or []
        if isinstance(scope, str) or not isinstance(scope, (list, tuple)):
            raise ValueError(f"search_scope must be a list of source names; got {scope!r}")
        data["search_scope"] = [_text(s, "each search_scope entry") for s in scope]
        data["search_mode"] = _text(fields.get("search_mode", "standard"), "search_mode")
    elif status == "timeout":
        data["iteration"] = _count(fields["iteration"], "iteration")
        data["findings_count"] = _count(fields["findings_count"], "findings_count")
    else:
        data["error"] = _text(fields["error"], "error")
        data["error_type"] = _text(fields["error_type"], "error_type")
    return data


def record(r: SearchResult) -> dict[str, Any]:
    """A result as stored (what :func:`parse_entries` reads back)."""
    return {"task_id": r.task_id, "status": r.status, "received_turn": r.received_turn, "data": copy.deepcopy(r.data)}


def parse_entries(data: dict[str, Any]) -> dict[str, SearchResult]:
    """Stored state (``{"entries": [record, ...]}``) read back, task_id -> SearchResult in the stored
    order; ValueError naming the first entry this cannot read."""
    if set(data) != {"entries"} or not isinstance(data["entries"], list):
        raise ValueError("expected {'entries': [...]}")
    results: dict[str, SearchResult] = {}
    for i, item in enumerate(data["entries"]):
        fields = ("task_id", "status", "received_turn", "data")
        if not isinstance(item, dict) or set(item) != set(fields):
            raise ValueError(f"entries[{i}] must be a dict with exactly {', '.join(fields)}")
        task_id = item["task_id"]
        if not isinstance(task_id, str) or not task_id.strip() or task_id in results:
            raise ValueError(f"entries[{i}].task_id {task_id!r} is empty, not a str or repeated")
        turn = item["received_turn"]
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ValueError(f"entries[{i}].received_turn must be a non-negative int; got {turn!r}")
        if not isinstance(item["data"], dict):
            raise ValueError(f"entries[{i}].data must be a dict")
        try:
            checked = validate(item["status"], item["data"])
        except ValueError as exc:
            raise ValueError(f"entries[{i}]: {exc}") from None
        results[task_id] = SearchResult(task_id, item["status"], turn, checked)
    return results
