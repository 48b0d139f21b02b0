"""Acceptance over real logs nobody here wrote: every figure the import gives equals a count of the
raw file made here with plain ``json`` and none of the importer's code.

    PYTHONPATH=. python tools/accept_real_logs.py [FOLDER]

FOLDER defaults to ../shared/real-logs (beside the repository) or /work/shared/real-logs. Its own
count, written from the formats' facts (../shared/real-logs/README.md), not from wm_kernel:

- a Claude Code transcript (with its subagents): one request per API response, the lines of one
  response found by their ``message.id`` or ``requestId`` in any file of the session; its usage is
  its last line's;
- an envelope file: one request per line; its usage read by what it holds (Anthropic's, with
  ``iterations`` summed; OpenAI's, LiteLLM's and OpenRouter's ``prompt_tokens``; Bedrock's
  camelCase; Gemini's ``usageMetadata``);
- an OTLP file: one request per span with ``gen_ai.usage.input_tokens``;
- dollars: its own copy of prices.md's rows for the models these logs use, and OpenRouter's own
  ``usage.cost``, against the kit's ``price()`` per request.

- a Codex rollout: one request per distinct ``total_token_usage`` of its ``token_count`` events,
  billed its ``last_token_usage``, on the model of the last ``turn_context``;
- a claude-trace capture: one request per successful Messages call, its usage the response body's
  or, streamed, ``message_start``'s with ``message_delta``'s counts over it;
- an OpenHands trajectory: one request per distinct ``model_response.id``, its LiteLLM usage.

It compares the import's requests, ``billed_usage()``, the ``usage`` frame, reconcile's billed side,
the OTLP export's ``gen_ai.usage.*``, the CLI, and ``python -m wm_kernel usage``'s totals. Prints
one line per file and check; exits 1 on any mismatch, 0 when all agree (77 when the folder is
absent).
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


def _n(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _anthropic(usage: dict[str, Any]) -> Figures:
    """(input, cache read, 5m writes, 1h writes, output) of a Messages usage; with server-side
    steps, the sum over ``iterations`` (the top level leaves the compaction step out)."""
    steps = usage.get("iterations")
    if isinstance(steps, list) and steps:
        parts = [_anthropic(step) for step in steps]
        return tuple(sum(column) for column in zip(*parts, strict=True))  # type: ignore[return-value]
    written = _n(usage.get("cache_creation_input_tokens"))
    one_hour = _n((usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens"))
    return (
        _n(usage.get("input_tokens")),
        _n(usage.get("cache_read_input_tokens")),
        written - one_hour,
        one_hour,
        _n(usage.get("output_tokens")),
    )


def usage_figures(usage: dict[str, Any]) -> Figures:
    """The five figures of any usage object these logs hold, by the keys it has."""
    if "inputTokens" in usage:  # Bedrock Converse: input excludes the cache, as Anthropic's
        return (
            _n(usage.get("inputTokens")),
            _n(usage.get("cacheReadInputTokens")),
            _n(usage.get("cacheWriteInputTokens")),
            0,
            _n(usage.get("outputTokens")),
        )
    if "prompt_tokens" in usage:  # OpenAI, LiteLLM, OpenRouter: the prompt includes reads and writes
        details = usage.get("prompt_tokens_details") or {}
        cached = _n(details.get("cached_tokens")) or _n(usage.get("cache_read_input_tokens"))
        written = _n(details.get("cache_write_tokens")) or _n(usage.get("cache_creation_input_tokens"))
        return (_n(usage["prompt_tokens"]) - cached - written, cached, written, 0, _n(usage.get("completion_tokens")))
    if "promptTokenCount" in usage:  # Gemini: the prompt includes the cached content; thoughts are output
        cached = _n(usage.get("cachedContentTokenCount"))
        return (
            _n(usage["promptTokenCount"]) - cached + _n(usage.get("toolUsePromptTokenCount")),
            cached,
            0,
            0,
            _n(usage.get("candidatesTokenCount")) + _n(usage.get("thoughtsTokenCount")),
        )
    return _anthropic(usage)


#: prices.md's rows for the models of these logs (US$ per million: input, output); writes 1.25x
#: input for 5 minutes and 2x for an hour, reads 0.1x, for Claude and GPT-5.6; GPT-4o's reads 0.5x
#: and writes free (OpenAI's prompt-caching announcement)
PRICES = {
    "claude-3-5-sonnet": (3.0, 15.0, 1.25, 0.1),
    "claude-sonnet-4": (3.0, 15.0, 1.25, 0.1),
    "claude-sonnet-4-5": (3.0, 15.0, 1.25, 0.1),
    "claude-sonnet-4-6": (3.0, 15.0, 1.25, 0.1),
    "claude-opus-4-6": (5.0, 25.0, 1.25, 0.1),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.1),
    "gpt-5.6-sol": (5.0, 30.0, 1.25, 0.1),
    "gpt-4o-mini": (0.15, 0.60, 1.0, 0.5),
    "claude-3-5-haiku": (0.80, 4.00, 1.25, 0.1),
    # not in prices.md: the sources the kit's table cites (vercel.com/ai-gateway for gpt-5.3-codex,
    # cached input 0.175; Google's pricing page for gemini-2.5-flash, cached 0.03); no writes
    "gpt-5.3-codex": (1.75, 14.0, 1.0, 0.1),
    "gemini-2.5-flash": (0.30, 2.50, 1.0, 0.1),
}
ROW_OF = {
    "claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
    "anthropic/claude-sonnet-4.6": "claude-sonnet-4-6",
    "anthropic/claude-4.6-sonnet-20260217": "claude-sonnet-4-6",
    "claude-3-5-sonnet-20241022": "claude-3-5-sonnet",
    "claude-3-5-sonnet-20240620": "claude-3-5-sonnet",
    "claude-sonnet-4-20250514": "claude-sonnet-4",
    "claude-haiku-4-5-20251001": "claude-haiku-4-5",
    "gpt-4o-mini-2024-07-18": "gpt-4o-mini",
    "claude-3-5-haiku-20241022": "claude-3-5-haiku",
}


def dollars(model: str | None, figures: Figures) -> float | None:
    """The whole bill of one request at prices.md's row (None for a model without one here)."""
    row = PRICES.get(ROW_OF.get(model or "", model or ""))
    if row is None:
        return None
    price_in, price_out, write, read = row
    plain, cached, w5, w1, out = figures
    one_hour = 2.0 if write == 1.25 else write
    return (
        plain * price_in + cached * price_in * read + w5 * price_in * write + w1 * price_in * one_hour + out * price_out
    ) / 1e6


def transcript_counts(path: Path) -> dict[str, Figures]:
    """Per API response, the last line's usage: the plain count of a transcript (and its subagents).
    The lines of one response share ``message.id`` and ``requestId``; either finds it, in any file."""
    files = [path] + sorted((path.with_suffix("") / "subagents").glob("*.jsonl"))
    response_of: dict[str, int] = {}
    last: dict[int, dict[str, Any]] = {}
    for one in files:
        for value in _lines(one):
            message = value.get("message")
            if value.get("type") != "assistant" or not isinstance(message, dict) or "usage" not in message:
                continue
            keys = [k for k in (message.get("id"), value.get("requestId")) if isinstance(k, str) and k]
            number = next((response_of[k] for k in keys if k in response_of), len(last))
            for key in keys:
                response_of.setdefault(key, number)
            last[number] = message["usage"]
    return {str(number): _anthropic(usage) for number, usage in last.items()}


def _imported(session: ImportedSession) -> list[Figures | None]:
    out: list[Figures | None] = []
    for usage in session.billed_usage():
        if usage is None:
            out.append(None)
            continue
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
    from wm_kernel.providers.pricing import price

    pricing = session.pricing()
    kit = [
        None if u is None or not p.priced else round(price(u, p.profile).total_usd or 0.0, 9)
        for u, p in zip(session.billed_usage(), pricing, strict=True)
    ]
    own = [
        None if f is None else (None if (d := dollars(r.model, f)) is None else round(d, 9))
        for r, f in zip(session.requests, got, strict=True)
    ]
    check.same("dollars per request (the kit's price() == prices.md by hand)", kit, own)
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
    try:
        session = import_log(path)
    except ValueError as exc:
        check.same("imports", str(exc), "imported")
        return
    check.same("no issues", [str(e) for e in session.errors], [])
    check.same("requests (one per line)", len(session), len(records))
    responses = [r.get("response") or {} for r in records]
    usages = [r.get("usage") or r.get("usageMetadata") for r in responses]
    if all(u is None for u in usages):
        check.same("no usage (bare bodies)", list(session.billed_usage()), [None] * len(records))
        return
    want = [usage_figures(u) if isinstance(u, dict) else None for u in usages]
    check.same("billed_usage()", _imported(session), want)
    from wm_kernel.providers.pricing import price

    kit_usd, own_usd, billed_usd = [], [], []
    for request, usage, figures in zip(session.requests, session.billed_usage(), want, strict=True):
        model = (request.model or "").strip() or None
        ours = dollars(model, figures) if figures is not None else None
        priced = session.pricing()[session.requests.index(request)]
        kit = price(usage, priced.profile).total_usd if usage is not None and priced.priced else None
        kit_usd.append(None if kit is None else round(kit, 9))
        own_usd.append(None if ours is None else round(ours, 9))
        if usage is not None and usage.billed_usd is not None:
            billed_usd.append((round(usage.billed_usd, 9), None if kit is None else round(kit, 9)))
    check.same("dollars per request (the kit's price() == prices.md by hand)", kit_usd, own_usd)
    if billed_usd:
        check.same(
            "OpenRouter's billed usage.cost == the kit's dollars",
            [k for _, k in billed_usd],
            [b for b, _ in billed_usd],
        )
    print(
        f"    total ${sum(x for x in kit_usd if x is not None):.6f}; unpriced {kit_usd.count(None)} of {len(kit_usd)}"
    )


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


def codex_counts(path: Path) -> list[tuple[str | None, Figures]]:
    """Per request of a Codex rollout, (model, figures): one request per distinct
    ``total_token_usage`` of a ``token_count`` event, billed its ``last_token_usage`` (input
    includes the cached input, output the reasoning); the model of the last ``turn_context``."""
    out: list[tuple[str | None, Figures]] = []
    seen: set[str] = set()
    model = None
    for value in _lines(path):
        payload = value.get("payload") or {}
        if value.get("type") == "turn_context":
            model = payload.get("model") or model
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            continue
        key = json.dumps(info.get("total_token_usage"), sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        last = info["last_token_usage"]
        cached = _n(last.get("cached_input_tokens"))
        out.append((model, (_n(last.get("input_tokens")) - cached, cached, 0, 0, _n(last.get("output_tokens")))))
    return out


def _sse_usage(raw: str) -> tuple[str | None, dict[str, Any]]:
    """(model, usage) of a raw Messages stream: message_start's, with message_delta's counts over it."""
    model, usage = None, {}
    for line in raw.split("\n"):
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except json.JSONDecodeError:
            continue
        if event.get("type") == "message_start":
            model = event["message"].get("model")
            usage = dict(event["message"].get("usage") or {})
        elif event.get("type") == "message_delta":
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
    return model, usage


def trace_counts(path: Path) -> list[tuple[str | None, Figures]]:
    """Per Messages call of a claude-trace capture that succeeded, (model, figures) of its
    response: the body's usage, or the raw stream's."""
    out: list[tuple[str | None, Figures]] = []
    for value in _lines(path):
        request, response = value.get("request") or {}, value.get("response") or {}
        if "/v1/messages" not in str(request.get("url")) or response.get("status_code") not in (200, None):
            continue
        if isinstance(response.get("body"), dict):
            usage = response["body"].get("usage") or {}
        else:
            usage = _sse_usage(response.get("body_raw") or "")[1]
        out.append(((request.get("body") or {}).get("model"), _anthropic(usage)))
    return out


def openhands_counts(path: Path) -> list[tuple[str | None, Figures]]:
    """Per distinct ``tool_call_metadata.model_response.id`` of a trajectory (or per item of a
    stored-completions list), (model, figures) of its LiteLLM usage."""
    value = json.loads(path.read_text(encoding="utf-8"))
    out: list[tuple[str | None, Figures]] = []
    if isinstance(value, dict):
        return [(item.get("model"), usage_figures(item["usage"])) for item in value.get("data") or []]
    seen: set[str] = set()
    for event in value:
        response = (event.get("tool_call_metadata") or {}).get("model_response") if isinstance(event, dict) else None
        if not isinstance(response, dict) or response.get("id") in seen:
            continue
        seen.add(response.get("id"))
        out.append((response.get("model"), usage_figures(response.get("usage") or {})))
    return out


def _report_total(path: Path) -> tuple[int, ...] | None:
    """``python -m wm_kernel usage --json`` over one file: (requests, input, read, 5m, 1h, output)."""
    from wm_kernel.__main__ import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = cli(["usage", "--no-cache", "--json", str(path)])
    if status != 0:
        return None
    total = json.loads(out.getvalue())["total"]
    return tuple(total[k] for k in ("requests", "input", "cache_read", "cache_write_5m", "cache_write_1h", "output"))


def check_counted(path: Path, want: list[tuple[str | None, Figures]], check: Check) -> None:
    """A log of the issue-46 formats against its plain count: requests, figures, dollars, the
    views that show them and the two commands."""
    print(f"{path.name}")
    session = import_log(path)
    check.same("no issues", [str(e) for e in session.errors], [])
    check.same("requests (plain count)", len(session), len(want))
    got = _imported(session)
    figures = [f for _, f in want]
    check.same(
        "billed_usage() totals", [sum(c) for c in zip(*got, strict=True)], [sum(c) for c in zip(*figures, strict=True)]
    )  # type: ignore[misc]
    check.same("multiset of per-request figures", sorted(got), sorted(figures))  # type: ignore[type-var]
    check.same("usage frame", _frame(session), [_as_frame(f) for f in got])  # type: ignore[arg-type]
    reconciled = _reconciled(session)
    if reconciled is not None:
        check.same("reconcile billed side", reconciled, [(f[0], f[1], f[2] + f[3], f[3]) for f in got])  # type: ignore[index]
    from wm_kernel.providers.pricing import price

    kit = sorted(
        (round(price(u, p.profile).total_usd or 0.0, 9) if u is not None and p.priced else -1.0)
        for u, p in zip(session.billed_usage(), session.pricing(), strict=True)
    )
    own = sorted((-1.0 if (d := dollars(m, f)) is None else round(d, 9)) for m, f in want)
    check.same("dollars per request (the kit's price() == the rows by hand; -1 unpriced)", kit, own)
    from wm_kernel.__main__ import main as cli

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        status = cli(["import", str(path)])
    check.same("python -m wm_kernel import exits 0, nothing on stderr", (status, err.getvalue()), (0, ""))
    plain = (len(want), *(sum(c) for c in zip(*figures, strict=True)))
    check.same("python -m wm_kernel usage total == the plain count", _report_total(path), plain)
    print(
        f"    {len(want)} requests; input {plain[1]:,}, read {plain[2]:,}, writes {plain[3] + plain[4]:,}, "
        f"output {plain[5]:,}; ${sum(x for x in own if x >= 0):.6f}, unpriced {own.count(-1.0)}"
    )


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
    for path in sorted((folder / "codex-rollouts").glob("*.jsonl")):
        check_counted(path, codex_counts(path), check)
    for path in sorted((folder / "claude-trace").glob("*.jsonl")):
        check_counted(path, trace_counts(path), check)
    for path in sorted((folder / "openhands").glob("*.json")):
        check_counted(path, openhands_counts(path), check)
    print(f"{'all figures agree' if not check.failed else f'{check.failed} checks failed'}")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
