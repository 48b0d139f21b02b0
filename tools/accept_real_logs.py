"""Acceptance over real logs nobody here wrote: every figure the import gives equals a plain-json
count of the raw file.

    PYTHONPATH=. python tools/accept_real_logs.py [FOLDER]

FOLDER defaults to ../shared/real-logs (beside the repository) or /work/shared/real-logs. For each
Claude Code transcript (with its subagents), each envelope file and each OTLP file it counts, with
``json`` alone, the requests and per request the input, cache read, cache write (5m and 1h) and
output tokens (a transcript: the last line of each ``message.id``), and compares them with
``import_log(...)``'s ``requests[i].usage``, ``billed_usage()``, the ``usage`` frame, reconcile's
billed side and the OTLP export's ``gen_ai.usage.*``. It also checks that every request of a
transcript holds the result of every tool call it sends, and that a clean file imports without
issues. Prints one line per file and check; exits 1 on any mismatch, 0 when all agree (77 when the
folder is absent).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from wm_kernel.interop import import_log
from wm_kernel.interop.imported import ImportedSession

Figures = tuple[int, int, int, int, int]  # input, cache read, cache write 5m, 1h, output


def default_folder() -> Path | None:
    """The real-logs folder: ../shared/real-logs beside the repository, else /work/shared/real-logs."""
    here = Path(__file__).resolve().parents[1]
    for folder in (here.parent / "shared" / "real-logs", Path("/work/shared/real-logs")):
        if folder.is_dir():
            return folder
    return None


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for row in path.read_bytes().split(b"\n"):
        if row.strip():
            value = json.loads(row.decode("utf-8"))
            if isinstance(value, dict):
                out.append(value)
    return out


def _anthropic(usage: dict[str, Any]) -> Figures:
    written = usage.get("cache_creation_input_tokens") or 0
    one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
    return (
        usage.get("input_tokens") or 0,
        usage.get("cache_read_input_tokens") or 0,
        written - one_hour,
        one_hour,
        usage.get("output_tokens") or 0,
    )


def transcript_counts(path: Path) -> dict[str, Figures]:
    """Per message id, the last line's usage: the plain count of a transcript (and its subagents)."""
    files = [path] + sorted((path.with_suffix("") / "subagents").glob("*.jsonl"))
    last: dict[str, dict[str, Any]] = {}
    for one in files:
        for value in _lines(one):
            message = value.get("message")
            if value.get("type") == "assistant" and isinstance(message, dict) and "usage" in message:
                key = message.get("id") or value.get("requestId") or f"{one}:{len(last)}"
                last[key] = message["usage"]
    return {key: _anthropic(usage) for key, usage in last.items()}


def _imported(session: ImportedSession) -> list[Figures]:
    out = []
    for usage in session.billed_usage():
        assert usage is not None
        out.append(
            (
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.cache_write_5m_tokens,
                usage.cache_write_1h_tokens,
                usage.output_tokens,
            )
        )
    return out


def _raw_of(session: ImportedSession) -> list[Figures]:
    return [_anthropic(dict(r.usage)) if r.usage is not None else (0, 0, 0, 0, 0) for r in session.requests]


def _frame(session: ImportedSession) -> list[tuple[int, int, int, int]]:
    frame = session.usage
    rows = frame[["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"]]
    return [(int(a), int(b), int(c), int(d)) for a, b, c, d in rows.itertuples(index=False)]


def _as_frame(figures: Figures) -> tuple[int, int, int, int]:
    plain, read, w5, w1, out = figures
    return plain + read + w5 + w1, read, w5 + w1, out


def _reconciled(session: ImportedSession) -> list[tuple[int, int, int, int]] | None:
    """Reconcile's billed side per turn: (input, read, write, of which 1h)."""
    try:
        from wm_kernel.providers.reconcile import reconcile

        rows = reconcile(session).rows
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        print(f"    reconcile: not run ({type(exc).__name__}: {exc})")
        return None
    billed = rows[["billed_input", "billed_read", "billed_write", "billed_write_1h"]]
    return [(int(a), int(b), int(c), int(d)) for a, b, c, d in billed.itertuples(index=False)]


def _exported(session: ImportedSession) -> list[tuple[int, int, int, int]] | None:
    try:
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from wm_kernel.interop.otel import export_trace
    except ImportError:
        print("    export: opentelemetry-sdk missing, not checked")
        return None
    exporter = InMemorySpanExporter()
    export_trace(session, exporter=exporter)
    out = []
    for span in exporter.get_finished_spans():
        a: dict[str, Any] = dict(span.attributes or {})
        if "gen_ai.usage.input_tokens" in a and "wm.section.name" not in a:
            out.append(
                (
                    int(a["gen_ai.usage.input_tokens"]),
                    int(a.get("gen_ai.usage.cache_read.input_tokens", 0)),
                    int(a.get("gen_ai.usage.cache_creation.input_tokens", 0)),
                    int(a.get("gen_ai.usage.output_tokens", 0)),
                )
            )
    return out


def _missing_results(session: ImportedSession) -> int:
    """Requests that send a tool call without its result (the last message's calls excepted)."""
    bad = 0
    for request in session.requests:
        calls: list[str] = []
        results: set[str] = set()
        for section in request.sections:
            if section.kind != "message" or not section.text.startswith("{"):
                continue
            try:
                block = json.loads(section.text)
            except json.JSONDecodeError:
                continue
            if block.get("type") == "tool_use":
                calls.append(block.get("id"))
            elif block.get("type") == "tool_result":
                results.add(block.get("tool_use_id"))
        if any(c not in results for c in calls):
            bad += 1
    return bad


class Check:
    def __init__(self) -> None:
        self.failed = 0

    def same(self, what: str, got: Any, want: Any) -> None:
        if got == want:
            print(f"    ok   {what}")
        else:
            self.failed += 1
            first = (
                next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), None)
                if isinstance(got, list) and isinstance(want, list)
                else None
            )
            print(
                f"    FAIL {what}: got {len(got) if isinstance(got, list) else got} "
                f"want {len(want) if isinstance(want, list) else want}"
                + (f"; first difference at {first}: {got[first]} != {want[first]}" if first is not None else "")
            )


def check_transcript(path: Path, check: Check) -> None:
    print(f"{path.name}")
    want = transcript_counts(path)
    session = import_log(path)
    check.same("no issues", [str(e) for e in session.errors], [])
    check.same("requests (message ids)", len(session), len(want))
    got = _imported(session)
    check.same(
        "billed_usage() per message id, totals",
        [sum(c) for c in zip(*got, strict=True)],
        [sum(c) for c in zip(*want.values(), strict=True)],
    )
    check.same("billed_usage() == requests[i].usage", got, _raw_of(session))
    check.same("multiset of per-request figures", sorted(got), sorted(want.values()))
    check.same("usage frame", _frame(session), [_as_frame(f) for f in got])
    exported = _exported(session)
    if exported is not None:
        check.same("export gen_ai.usage.*", exported, [_as_frame(f) for f in got])
    reconciled = _reconciled(session)
    if reconciled is not None:
        check.same("reconcile billed side", reconciled, [(f[0], f[1], f[2] + f[3], f[3]) for f in got])
    check.same("requests missing a tool result", _missing_results(session), 0)
    from wm_kernel.__main__ import main as cli

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        status = cli(["import", str(path)])
    check.same("python -m wm_kernel import exits 0, nothing on stderr", (status, err.getvalue()), (0, ""))
    print(
        f"    skipped {sum(session.skipped.values())} ordinary lines: "
        + ", ".join(f"{k} {v}" for k, v in session.skipped.items())
    )


def check_envelopes(path: Path, check: Check) -> None:
    print(f"{path.name}")
    records = _lines(path)
    session = import_log(path)
    check.same("no issues", [str(e) for e in session.errors], [])
    check.same("requests", len(session), len(records))
    usages = [r.get("response", {}).get("usage") for r in records]
    if all(u is None for u in usages):
        check.same("no usage (bare bodies)", [u for u in session.billed_usage()], [None] * len(records))
        return
    want = []
    for usage in usages:
        if "prompt_tokens" in usage:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            written = (usage.get("prompt_tokens_details") or {}).get("cache_write_tokens") or 0
            want.append((usage["prompt_tokens"] - cached - written, cached, written, 0, usage["completion_tokens"]))
        else:
            want.append(_anthropic(usage))
    check.same("billed_usage()", _imported(session), want)


def check_otlp(path: Path, check: Check) -> None:
    print(f"{path.name}")
    document = json.loads(path.read_text(encoding="utf-8"))
    want = []
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                a = {kv["key"]: kv["value"] for kv in span["attributes"]}
                if "gen_ai.usage.input_tokens" not in a:
                    continue
                n = {k: int(v.get("intValue", 0)) for k, v in a.items() if k.startswith("gen_ai.usage.")}
                written = n.get(
                    "gen_ai.usage.cache_write.input_tokens", n.get("gen_ai.usage.cache_creation.input_tokens", 0)
                )
                read = n.get("gen_ai.usage.cache_read.input_tokens", 0)
                want.append(
                    (
                        n["gen_ai.usage.input_tokens"] - read - written,
                        read,
                        written,
                        0,
                        n.get("gen_ai.usage.output_tokens", 0),
                    )
                )
    session = import_log(path)
    check.same("no issues", [str(e) for e in session.errors], [])
    check.same("billed_usage() (writes as writes)", _imported(session), want)


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else default_folder()
    if folder is None or not folder.is_dir():
        print(f"real logs not found ({folder or '../shared/real-logs'}): acceptance skipped")
        return 77
    check = Check()
    for path in sorted((folder / "claude-code").glob("*.jsonl")):
        check_transcript(path, check)
    for path in sorted((folder / "envelopes").glob("*.jsonl")):
        check_envelopes(path, check)
    for path in sorted((folder / "otlp").glob("*.json")):
        check_otlp(path, check)
    print(f"{'all figures agree' if not check.failed else f'{check.failed} checks failed'}")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
