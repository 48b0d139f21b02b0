"""The original's data in this project's shapes: its manifest cache (the string key
``manifest_segments:{user_id}``, a JSON list of segments) as the ``manifest:{user_id}`` hash the
ManifestTrinket reads, and MIRA's location (the string ``location:{user_id}``, the JSON object
POST /location stores, ``EX 86400``) as the ``locations:{user_id}`` hash the LocationTrinket reads
and writes (docs/valkey.md has the whole mapping)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from wm_kernel.stores.valkey_errors import one_line

__all__ = [
    "LOCATION_FIELD",
    "LOCATION_SECONDS",
    "NO_EXPIRY_SET_AT",
    "location_fields",
    "location_value",
    "manifest_fields",
]

#: MIRA's expiry of ``location:{user_id}`` (``SET ... EX 86400``): a write starts it afresh.
LOCATION_SECONDS = 86400
#: The one field of the location hash (the payload and when it was set).
LOCATION_FIELD = "state"
#: When a location key without an expiry (set by hand) reads as set: never too old to show, as
#: MIRA shows it for as long as the key is there.
NO_EXPIRY_SET_AT = "9999-12-31T00:00:00+00:00"


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


def location_fields(text: str | None, expires_at: int, where: str) -> dict[str, str]:
    """The location hash's fields from MIRA's string: ``state`` = ``{"payload": <its JSON object>,
    "set_at": <its expiry less 24 hours>}`` (``expires_at``: the key's EXPIRETIME, Unix seconds, or
    negative for a key without an expiry); ``{}`` when the key is absent. ValueError naming
    ``where`` for a value that is not a JSON object.

    >>> location_fields('{"location_name": "Oslo"}', 1796115600, "location:ada")
    {'state': '{"payload": {"location_name": "Oslo"}, "set_at": "2026-11-30T09:00:00+00:00"}'}
    """
    if text is None:
        return {}
    try:
        payload = json.loads(text)
        if not isinstance(payload, dict):
            raise ValueError(f"a JSON object was expected, not {type(payload).__name__}")
    except ValueError as exc:
        raise ValueError(f"{where} cannot be read ({one_line(exc)})") from None
    if expires_at < 0:
        set_at = NO_EXPIRY_SET_AT
    else:
        set_at = datetime.fromtimestamp(expires_at - LOCATION_SECONDS, UTC).isoformat()
    return {LOCATION_FIELD: json.dumps({"payload": payload, "set_at": set_at}, ensure_ascii=False)}


def location_value(field: str, text: str, where: str) -> str:
    """MIRA's string for a write of the location hash's ``field`` (JSON ``text``): the payload's
    JSON text. ValueError naming ``where`` for any other field or shape (nothing is written)."""
    if field != LOCATION_FIELD:
        raise ValueError(
            f"{where} is kept as MIRA's string (the payload, 24-hour expiry): "
            f"only its field {LOCATION_FIELD!r} can be written, not {field!r}"
        )
    value = json.loads(text)
    if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
        raise ValueError(f'{where} is kept as MIRA\'s string: expected {{"payload": {{...}}, "set_at": ...}}')
    return json.dumps(value["payload"], ensure_ascii=False)
