"""The original's data in this project's shapes: its manifest cache (the string key
``manifest_segments:{user_id}``, a JSON list of segments) as the ``manifest:{user_id}`` hash the
ManifestTrinket reads (docs/valkey.md has the whole mapping)."""

from __future__ import annotations

import json

from wm_kernel.stores.valkey_errors import one_line

__all__ = ["manifest_fields"]


def manifest_fields(text: str, where: str) -> dict[str, str]:
    """The fields of the manifest hash (``segments``: the collapsed ones; ``active``: the open one)
    from the original's JSON list; ValueError naming ``where`` when it cannot be read."""
    try:
        segments = json.loads(text)
        collapsed, active = [], None
        for seg in segments:
            if not seg.get("start_time"):
                continue
            if seg.get("status") == "active":
                active = {"title": seg.get("display_title") or "", "start": seg["start_time"]}
            elif seg.get("end_time"):
                collapsed.append(
                    {"title": seg.get("display_title") or "", "start": seg["start_time"], "end": seg["end_time"]}
                )
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where} cannot be read ({one_line(exc)})") from None
    fields = {"segments": json.dumps(collapsed, ensure_ascii=False)}
    if active is not None:
        fields["active"] = json.dumps(active, ensure_ascii=False)
    return fields
