"""LocationTrinket: the user's location, sun times, UV and forecast, in the cached system prompt (MIRA HEAD).

MIRA's front end POSTs the location on page load; MIRA keeps the JSON under Valkey
``location:{user_id}`` for 24 hours (``SET ... EX 86400``) and the trinket reads it at every
compose. Here :meth:`LocationTrinket.set_location` takes that JSON object (decoded) and remembers
the WorkingMemory clock's time: the payload shows while ``clock.now() - set_at <= 24 h`` (still
there at exactly 86,400 s, gone after, as Valkey's expiry), then nothing until the next
``set_location``. ``set_location(None)`` is the key being absent.

The section ``location_context`` (cached, as in MIRA: a forecast that changes by the hour rewrites
the one-hour cached system block) is plain text, nothing escaped, byte for byte MIRA's::

    === Location Context ===
    Location: {location_name}
    Sunrise: {sunrise} / Sunset: {sunset}                       (both needed)
    ⚠️ UV INDEX: {uv} (EXTREME) — Dangerous sun exposure levels   (uv_index >= 11)
    UV Index: {uv} (Very High)                                  (any other uv_index)
    Forecast (next 2 hours):
    - {hour}: {temp}, {condition}, {precip_pct}% chance of rain
    Recent weather (since last conversation):
    - {day_label}: {high}/{low}, {condition}, {precipitation} precip   (the parts present)

No section without ``location_name``, ``forecast`` and ``sunrise``. A collapse or a turn changes
nothing (the trinket is not stateful).

Persistence: the payload and its time live in the WorkingMemory's store (hash
``locations:{user_id}``, field ``state``; :func:`wm_kernel.stores.keys.location`), so a Session on
an SQLite file still shows it after a restart, and still lets it expire 24 hours after it was set.
A :class:`~wm_kernel.stores.valkey.ValkeyStore` keeps that hash as MIRA's own string
``location:{user_id}`` (the payload, ``EX 86400``; the time it was set read from the key's
expiry), so a notebook and a MIRA deployment on one server see the same location.
Stored data this trinket cannot read is a ValueError naming the key when it is constructed.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[LocationTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.trinket("LocationTrinket").set_location({"location_name": "Brighton, UK", "sunrise": "7:41 AM",
...     "sunset": "3:58 PM", "forecast": [{"hour": "10 AM", "temp": "8°C", "condition": "Drizzle",
...     "precip_pct": 60}]})
>>> print(s.trinket("LocationTrinket").generate_content({}))
=== Location Context ===
Location: Brighton, UK
Sunrise: 7:41 AM / Sunset: 3:58 PM
Forecast (next 2 hours):
- 10 AM: 8°C, Drizzle, 60% chance of rain
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from traitlets import Dict, Instance

from trinkets.base import EventAwareTrinket, TrinketHost, arg, command, feed
from wm_kernel.stores import keys

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus

#: How long a stored location lives (MIRA's ``EX 86400``).
LOCATION_TTL = timedelta(seconds=86400)


class LocationTrinket(EventAwareTrinket):
    """The location payload MIRA's POST /location stores, published as ``location_context`` (cached).

    See the module docstring for the payload, the 24-hour expiry and the text.
    """

    variable_name = "location_context"
    cache_policy = True
    default_priority = 40
    reuse_content = True
    time_dependent = True  # the payload expires by the clock
    LOCATION_TTL: ClassVar[timedelta] = LOCATION_TTL

    payload = Dict(
        allow_none=True,
        default_value=None,
        read_only=True,
        help="The location JSON object as MIRA stores it (decoded), or None when there is none.",
    )
    set_at = Instance(datetime, allow_none=True, read_only=True, help="The clock's time when the payload was set.")

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        # read and check before registering: unreadable data must leave the WorkingMemory as it was
        key = keys.location(working_memory.user_id)
        stored = _read_stored(working_memory.store.hget(key, "state"), key)
        super().__init__(event_bus, working_memory, **kwargs)
        if stored is not None:
            with self.hold_trait_notifications():
                self.set_trait("payload", stored[0])
                self.set_trait("set_at", stored[1])

    @property
    def store_key(self) -> str:
        """The store hash holding the payload (``locations:{user_id}``)."""
        return keys.location(self.working_memory.user_id)

    @feed
    def set_location(self, payload: Mapping[str, Any] | None) -> None:
        """Store ``payload`` (the decoded JSON object of ``location:{user_id}``, or None: no key) at
        the clock's current time; it shows for 24 hours."""
        if payload is not None and not isinstance(payload, Mapping):
            raise TypeError(f"a location payload must be a mapping or None, got {type(payload).__name__}")
        now = self.working_memory.clock.now()
        data = None if payload is None else dict(payload)
        store = self.working_memory.store
        if data is None:
            store.hdel(self.store_key, "state")  # stored first: a failed write changes nothing
        else:
            store.hset(self.store_key, "state", {"payload": data, "set_at": now.isoformat()})
        with self.hold_trait_notifications():
            self.set_trait("payload", data)
            self.set_trait("set_at", None if data is None else now)

    @command(
        "set",
        arg("name", words=True, help="The location's name."),
        arg("--sunrise"),
        arg("--sunset"),
        arg("--uv", type=int, help="The UV index (MIRA stores it when it is 8 or more)."),
        arg("--forecast", action="append", default=[], metavar="'HOUR | TEMP | CONDITION | PRECIP'"),
        arg("--json", dest="raw", help="The whole payload as one JSON object (the other options ignored)."),
        help="Set the location as POST /location stores it: NAME [--sunrise S --sunset S] [--uv N] "
        "[--forecast 'HOUR | TEMP | CONDITION | PRECIP']... or --json '{...}'.",
    )
    def _set_command(
        self, name: str, sunrise: str | None, sunset: str | None, uv: int | None, forecast: list[str], raw: str | None
    ) -> None:
        if raw is not None:
            try:
                decoded = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--json: not a JSON object ({exc})") from None
            if not isinstance(decoded, dict):
                raise ValueError("--json: not a JSON object")
            self.set_location(decoded)
            return
        payload: dict[str, Any] = {"location_name": name}
        if sunrise is not None:
            payload["sunrise"] = sunrise
        if sunset is not None:
            payload["sunset"] = sunset
        if uv is not None:
            payload["uv_index"] = uv
        entries = []
        for text in forecast:
            parts = [p.strip() for p in text.split("|")]
            if len(parts) != 4:
                raise ValueError(f"--forecast: expected 'HOUR | TEMP | CONDITION | PRECIP', got {text!r}")
            precip: int | None = None if parts[3] in ("", "null", "None") else int(parts[3])
            entries.append({"hour": parts[0], "temp": parts[1], "condition": parts[2], "precip_pct": precip})
        if entries:
            payload["forecast"] = entries
        self.set_location(payload)

    @command("clear", help="Remove the location (the key is gone).")
    def _clear_command(self) -> None:
        self.set_location(None)

    def current_payload(self) -> dict[str, Any] | None:
        """The payload as the clock sees it now: None once 24 hours have passed since it was set."""
        payload, set_at = self.payload, self.set_at
        if payload is None or set_at is None:
            return None
        if self.working_memory.clock.now() - set_at > self.LOCATION_TTL:
            return None
        return payload

    def describe_items(self) -> list[dict[str, Any]]:
        payload = self.current_payload()
        if not payload:
            return []
        return [{"id": "location", "label": str(payload.get("location_name", "")), "turns_remaining": None}]

    def generate_content(self, context: dict[str, Any]) -> str:
        data = self.current_payload()
        if not data:
            return ""
        name, forecast, sunrise, sunset = (data.get(k) for k in ("location_name", "forecast", "sunrise", "sunset"))
        if not name and not forecast and not sunrise:
            return ""
        lines = ["=== Location Context ==="]
        if name:
            lines.append(f"Location: {name}")
        if sunrise and sunset:
            lines.append(f"Sunrise: {sunrise} / Sunset: {sunset}")
        uv = data.get("uv_index")
        if uv is not None:
            if uv >= 11:
                lines.append(f"⚠️ UV INDEX: {uv} (EXTREME) — Dangerous sun exposure levels")
            else:
                lines.append(f"UV Index: {uv} (Very High)")
        if forecast:
            lines.append("Forecast (next 2 hours):")
            lines.extend(
                f"- {f['hour']}: {f['temp']}, {f['condition']}, {f['precip_pct']}% chance of rain" for f in forecast
            )
        recent = data.get("recent_weather")
        if recent:
            lines.append("Recent weather (since last conversation):")
            for day in recent:
                parts = []
                if "high" in day and "low" in day:
                    parts.append(f"{day['high']}/{day['low']}")
                if "condition" in day:
                    parts.append(f"{day['condition']}")
                if "precipitation" in day:
                    parts.append(f"{day['precipitation']} precip")
                lines.append(f"- {day['day_label']}: {', '.join(parts)}")
        return "\n".join(lines)


def _read_stored(raw: object, key: str) -> tuple[dict[str, Any], datetime] | None:
    """The payload and its time as ``set_location`` stored them; ValueError naming ``key`` otherwise."""
    if raw is None:
        return None
    try:
        if not isinstance(raw, dict) or set(raw) != {"payload", "set_at"} or not isinstance(raw["payload"], dict):
            raise ValueError('expected {"payload": {...}, "set_at": "<ISO time>"}')
        set_at = datetime.fromisoformat(str(raw["set_at"]))
        if set_at.tzinfo is None:
            raise ValueError("set_at has no UTC offset")
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"LocationTrinket: the location stored under {key!r} cannot be read ({exc}); "
            f"delete it with store.delete({key!r}) to start empty"
        ) from None
    return dict(raw["payload"]), set_at
