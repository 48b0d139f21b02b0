"""The usage report over a folder tree of agent logs (``python -m wm_kernel usage``).

``scan`` finds and reads the logs (one unit a file, a Claude Code session with its subagents) into
one row per request, through a per-file cache; ``tally`` totals them per day, model and session,
priced as the import prices them; ``render`` writes the report as text, CSV or an HTML page;
``cli`` is the command. It imports neither pandas nor anything of Jupyter.
"""

from __future__ import annotations

from wm_kernel.interop.report.scan import UsageCache, default_cache_dir
from wm_kernel.interop.report.tally import Tally, UsageReport, usage_report

__all__ = ["usage_report", "UsageReport", "Tally", "UsageCache", "default_cache_dir"]
