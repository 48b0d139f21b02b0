"""Bring your own agent: import other agents' request logs, export section-level OpenTelemetry traces.

``import_log(*paths)`` reads Anthropic Messages, OpenAI Chat Completions and Responses request
bodies (JSON Lines), Gemini ``generateContent`` envelopes, Claude Code transcripts, claude-trace
captures, Codex CLI rollouts, OpenHands trajectories, OTLP JSON traces and MIRA's traffic tap into an
:class:`~wm_kernel.interop.imported.ImportedSession` (history, diff, blame, cache simulation at the
log's send times, usage, exact replay, ``to_session()`` for the dashboard). ``export_trace(session,
exporter=...)`` emits a session, imported or composed here, as GenAI spans with one child span per
section (needs the ``otel`` extra). ``usage_report(*paths)`` totals the usage of every log under
some folders per day, model and session (``python -m wm_kernel usage``). See docs/interop.md.
"""

from __future__ import annotations

from wm_kernel.interop.billing import gen_ai_counts, logged_usage
from wm_kernel.interop.bodies import Section
from wm_kernel.interop.formats import ImportIssue, LoggedRequest
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.interop.log_files import import_log, read_file
from wm_kernel.interop.mira import read_tap
from wm_kernel.interop.otel import export_trace
from wm_kernel.interop.otlp import read_otlp
from wm_kernel.interop.readers import log_formats, register_log_format
from wm_kernel.interop.report.tally import UsageReport, usage_report
from wm_kernel.interop.split import SplitRule, Splitter

__all__ = [
    "import_log",
    "read_file",
    "ImportedSession",
    "ImportIssue",
    "LoggedRequest",
    "Section",
    "Splitter",
    "SplitRule",
    "log_formats",
    "register_log_format",
    "logged_usage",
    "gen_ai_counts",
    "export_trace",
    "read_otlp",
    "read_tap",
    "usage_report",
    "UsageReport",
]
