"""Fit a model's estimate to what the provider billed: ``calibrate(model, pairs)``.

A pair is ``(text, billed input tokens)``: the text of a request (a str, or its parts as a list of
str, counted part by part and summed) and the input tokens the provider reported for it (a
response's ``usage``, or the counting endpoint). The fit is the ratio of the billed tokens to the
base encoding's tokens over all pairs (``sum(billed) / sum(base)``, the estimator that weights each
pair by its size), and the band is the spread of the relative residuals
``billed / (factor * base) - 1`` (lowest and highest). :meth:`Calibration.apply` makes later
estimates of the model use it (``counter_for(model)`` and every Session on that model);
``save``/``load`` keep it in a JSON file.

Billed counts include a request's framing (roles, the system block: a few tokens) that the text's
own count does not; pairs of whole requests fit that into the factor.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from wm_kernel.tokens.counting import Band
from wm_kernel.tokens.registry import _bpe, base_encoding, clear_calibration, set_calibration
from wm_kernel.utils.safe_files import load_json

_VERSION = 1


@dataclass(frozen=True)
class Calibration:
    """A fitted factor over ``base`` for ``model``, the residual ``band`` and how many pairs."""

    model: str
    base: str
    factor: float
    band: Band
    pairs: int

    def apply(self) -> Calibration:
        """Make later estimates of ``model`` use this factor and band; returns self."""
        set_calibration(self.model, self.factor, self.band)
        return self

    def remove(self) -> None:
        """Back to the family's estimate for ``model``."""
        clear_calibration(self.model)

    def summary(self) -> str:
        """One line: model, factor, band, pairs."""
        return f"{self.model}: {self.base} × {self.factor:.3f}, residuals {self.band.text} over {self.pairs} pairs"

    def to_json(self) -> dict[str, object]:
        return {
            "v": _VERSION,
            "model": self.model,
            "base": self.base,
            "factor": self.factor,
            "band": asdict(self.band),
            "pairs": self.pairs,
        }

    @classmethod
    def from_json(cls, data: object) -> Calibration:
        if not isinstance(data, dict) or data.get("v") != _VERSION:
            raise ValueError(f"not a calibration record of version {_VERSION}: {data!r}")
        try:
            band = data["band"]
            return cls(
                str(data["model"]),
                str(data["base"]),
                float(data["factor"]),
                Band(float(band["low"]), float(band["high"]), str(band["source"]), str(band["date"])),
                int(data["pairs"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"calibration record lacks {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this calibration to ``path`` as JSON."""
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, apply: bool = True) -> Calibration:
        """Read a calibration saved with :meth:`save` (and apply it, unless ``apply=False``)."""
        found = cls.from_json(load_json(path))  # a regular file only, bounded (a FIFO, /dev/zero: one line)
        return found.apply() if apply else found

    def __str__(self) -> str:
        return self.summary()


def calibrate(
    model: str, pairs: Iterable[tuple[str | Sequence[str], int]], *, apply: bool = True, when: str | None = None
) -> Calibration:
    """Fit ``model``'s factor from ``(text, billed input tokens)`` pairs (see the module docstring).

    ``apply`` (default True) makes later estimates use it; ``when`` dates the band (default today).

    >>> cal = calibrate("claude-sonnet-4-6", [("hello world " * 50, 125), ("a, b; c. " * 40, 305)],
    ...                 apply=False, when="2026-11-30")
    >>> cal.summary()
    'claude-sonnet-4-6: o200k_base × 1.257, residuals −2%/+1% over 2 pairs'
    """
    base_name = base_encoding(model)
    base = _bpe(base_name)
    counted: list[tuple[int, int]] = []
    for index, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"pair {index} must be (text, billed tokens), got {pair!r}")
        text, billed = pair
        if isinstance(billed, bool) or not isinstance(billed, int) or billed < 1:
            raise ValueError(f"pair {index}: billed tokens must be a positive int, got {billed!r}")
        if isinstance(text, str):
            n = base.count(text)
        elif isinstance(text, Sequence) and all(isinstance(t, str) for t in text):
            n = sum(base.count(t) for t in text)
        else:
            raise TypeError(f"pair {index}: text must be a str or a list of str, got {type(text).__name__}")
        if n < 1:
            raise ValueError(f"pair {index}: the text has no tokens")
        counted.append((n, billed))
    if not counted:
        raise ValueError("calibrate needs at least one (text, billed tokens) pair")
    factor = sum(b for _, b in counted) / sum(n for n, _ in counted)
    residuals = [b / (factor * n) - 1 for n, b in counted]
    low = min(min(residuals), 0.0)
    high = max(max(residuals), 0.0)
    band = Band(
        max(low, -0.99),
        high if math.isfinite(high) else 1.0,
        f"calibrated from {len(counted)} billed counts",
        when or date.today().isoformat(),
    )
    result = Calibration(model, base_name, factor, band, len(counted))
    return result.apply() if apply else result
