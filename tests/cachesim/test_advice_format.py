"""The cache advice's percentages: a change that rounds to nothing reads "+0.0%", never "-0.0%"."""

from __future__ import annotations

from wm_kernel.cachesim.advice import signed_percent


def test_a_change_that_rounds_to_nothing_is_plus_zero() -> None:
    assert [signed_percent(x) for x in (-0.0, 0.0, -0.00004, 0.00004)] == ["+0.0%"] * 4


def test_a_change_keeps_its_sign() -> None:
    assert [signed_percent(x) for x in (-0.123, 0.5, -0.0006)] == ["-12.3%", "+50.0%", "-0.1%"]
