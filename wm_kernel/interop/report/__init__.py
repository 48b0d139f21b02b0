"""The usage report over a folder tree of agent logs (``python -m wm_kernel usage``).

``scan`` finds and reads the logs (one unit a file, a Claude Code session with its subagents) into
one row per request, through a per-file cache; ``tally`` totals them per day, model and session,
priced as the import prices them; ``render`` writes the report as text, CSV or an HTML page;
``cli`` is the command. It imports neither pandas nor anything of Jupyter. ``usage_report`` and
``UsageReport`` are imported from ``wm_kernel.interop``.
"""
