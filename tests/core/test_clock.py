"""Clocks: ManualClock is deterministic and strict about its input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wm_kernel.core.clock import ManualClock, SystemClock, parse_instant


def test_manual_clock_moves_only_when_told():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    assert clock.now() == clock.now() == datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert clock.advance(hours=2).isoformat() == "2026-11-30T11:00:00+00:00"
    assert clock.advance(timedelta(minutes=30)).isoformat() == "2026-11-30T11:30:00+00:00"
    assert clock.set("2026-01-01T00:00:00+01:00").isoformat() == "2026-01-01T00:00:00+01:00"


def test_two_manual_clocks_give_the_same_times():
    a, b = ManualClock("2026-11-30T09:00:00+00:00"), ManualClock("2026-11-30T09:00:00+00:00")
    for step in (1, 60, 3600):
        assert a.advance(seconds=step) == b.advance(seconds=step)


def test_observers_of_current_hear_every_move():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    heard = []
    clock.observe(lambda change: heard.append((change["old"], change["new"])), "current")
    clock.advance(minutes=1)
    clock.set("2026-12-01T00:00:00+00:00")
    clock.set("2026-12-01T01:00:00+01:00")  # the same instant in another offset is a move too
    assert [(o.isoformat(), n.isoformat()) for o, n in heard] == [
        ("2026-11-30T09:00:00+00:00", "2026-11-30T09:01:00+00:00"),
        ("2026-11-30T09:01:00+00:00", "2026-12-01T00:00:00+00:00"),
        ("2026-12-01T00:00:00+00:00", "2026-12-01T01:00:00+01:00"),
    ]
    assert clock.now() is clock.current and clock.now().isoformat() == "2026-12-01T01:00:00+01:00"


def test_current_is_validated_like_every_other_instant():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    with pytest.raises(ValueError, match="current: .*has no time zone"):
        clock.current = datetime(2026, 11, 30, 10)
    assert clock.now().isoformat() == "2026-11-30T09:00:00+00:00"


def test_bad_input_leaves_the_clock_alone():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    with pytest.raises(ValueError, match="has no time zone"):
        clock.set("2026-11-30T10:00:00")
    with pytest.raises(ValueError, match="not an ISO 8601 date-time: 'tomorrow'"):
        clock.set("tomorrow")
    with pytest.raises(ValueError, match="does not go backwards"):
        clock.advance(hours=-1)
    with pytest.raises(TypeError, match="advance\\(\\)"):
        clock.advance(fortnights=1)
    with pytest.raises(TypeError):
        clock.advance(timedelta(hours=1), hours=1)
    assert clock.now().isoformat() == "2026-11-30T09:00:00+00:00"
    with pytest.raises(ValueError):
        ManualClock("2026-11-30 09:00")


def test_system_clock_is_aware_utc():
    assert SystemClock().now().tzinfo is UTC


@pytest.mark.parametrize(
    "value, error, message",
    [
        ("soon", ValueError, "^due: not an ISO 8601 date-time: 'soon'$"),
        (
            "2026-11-30T09:00:00",
            ValueError,
            r"^due: date-time 2026-11-30T09:00:00 has no time zone; add one, e\.g\. \+00:00$",
        ),
        (1_700_000_000, TypeError, "^due: expected a datetime or ISO 8601 string, got int$"),
    ],
)
def test_parse_instant_names_the_argument_it_refuses(value, error, message):
    with pytest.raises(error, match=message):
        parse_instant(value, what="due")
    assert parse_instant("2026-11-30T09:00:00+01:00", what="due") == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
