"""The dashboard as static HTML: what a host that renders no widget shows (the ``text/html`` of
the widget's mimebundle), and the one line a saved view says."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from wm_kernel.utils.htmltext import dollars_as_text

#: The line a dashboard shown where no kernel runs says (the saved view's line, and the text/html
#: fallback's).
OFFLINE_LINE = "a saved view: run the notebook's cells to bring this dashboard to life"


def snapshot_html(
    banner: str,
    tabs: Sequence[Mapping[str, Any]],
    open_tab: tuple[str, str] | None,
    sections: Mapping[str, Sequence[str]],
    panels: Mapping[str, Mapping[str, Any]],
    texts: Mapping[str, str],
) -> str:
    """The banner, :data:`OFFLINE_LINE`, the open drawn tab (``(key, html)``, or None) and every
    section's panel grouped by placement, from what the front end holds."""
    titles = {tab["key"]: tab["title"] for tab in tabs}
    parts = [
        '<div class="wm-dashboard-snapshot" style="font-family:var(--jp-ui-font-family, sans-serif)">',
        banner,
        f'<div style="font-size:12px"><i>{html.escape(OFFLINE_LINE)}</i></div>',
    ]
    if open_tab is not None:
        key, shown = open_tab
        parts.append(f"<details open><summary><b>{html.escape(titles[key])}</b></summary>{shown}")
        parts.append("</details>")
    for key, names in sections.items():
        if not names:
            continue
        parts.append(f"<details><summary><b>{html.escape(titles.get(key, key))}</b></summary>")
        for section in names:
            panel = panels[section]
            parts.append(
                f'<div style="margin:4px 0 8px"><b>{html.escape(panel["title"])}</b>'
                f"{panel['status']}{texts.get(section, '')}</div>"
            )
        parts.append("</details>")
    parts.append("</div>")
    return dollars_as_text("".join(parts))


__all__ = ["OFFLINE_LINE", "snapshot_html"]
