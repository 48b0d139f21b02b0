"""The counting contract: a tokenizer, the band of doubt an estimate carries, and the cached counter.

A *tokenizer* is any object with a ``name`` and ``count(text) -> int``. It may also say whether its
counts are the model's own (``exact``; one that does not say is taken at its word) and, for an
estimate, its ``band``: the relative error of a count, as a :class:`Band` with the source and date
of that figure. A :class:`TokenCounter` wraps one tokenizer, remembers the count of every distinct
text, and answers for it: ``exact``, ``band``, ``interval(n)`` and ``label`` (what a table shows
next to a token column: the name, with "≈" and the band for an estimate).

A count is always one integer (the estimate's central value); doubt is carried as the band and
applied to totals, so a sum of section counts has the interval ``interval(sum)``. A counter made
without a tokenizer counts with :func:`default_tokenizer` (kept here, below the model registry, so
the counter never needs the registry).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class Counts(Protocol):
    """Anything that counts the tokens of a text (a TokenCounter, a Tokenizer): what views and caps
    need of a counter."""

    def count(self, text: str) -> int: ...


@runtime_checkable
class Tokenizer(Protocol):
    """What a token counter needs: a display name and a count."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        ...


@dataclass(frozen=True)
class Band:
    """The relative error of an estimated count: the true count lies in
    ``[n * (1 + low), n * (1 + high)]`` for an estimate ``n``. ``source`` and ``date`` say where
    the figure comes from and when it was read or fitted.

    >>> Band(-0.1, 0.2, "example", "2026-11").text
    '−10%/+20%'
    """

    low: float
    high: float
    source: str = ""
    date: str = ""

    def __post_init__(self) -> None:
        for what, value in (("low", self.low), ("high", self.high)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"band {what} must be a finite number, got {value!r}")
        if not -1 < self.low <= 0 <= self.high:
            raise ValueError(f"a band is low in (-1, 0] and high >= 0, got low={self.low!r} high={self.high!r}")

    @property
    def text(self) -> str:
        """The band as a table shows it, e.g. ``−10%/+20%``."""
        return f"−{-self.low:.0%}/+{self.high:.0%}"

    def interval(self, n: int) -> tuple[int, int]:
        """``(low, high)`` token counts around the estimate ``n`` (rounded outwards)."""
        return (math.floor(n * (1 + self.low) + 1e-9), math.ceil(n * (1 + self.high) - 1e-9))


class EstimateTokenizer:
    """No tokenizer installed: ``ceil(len(text) / 4)``, clearly labelled as an estimate.

    >>> EstimateTokenizer().count("abcde")
    2
    """

    name = "estimate (chars/4)"
    exact = False
    band = Band(
        -0.5,
        1.0,
        "rule of thumb of about 4 characters per token for English prose; code and other languages run to more tokens",
        "2026-11",
    )

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4

    def __repr__(self) -> str:
        return "EstimateTokenizer()"


class ScaledTokenizer:
    """An estimate: a base tokenizer's count times a ``factor``, with the ``band`` of that figure.

    Used for models whose tokenizer is not public (Claude) or not on disk (Gemini without its
    SentencePiece file): ``round(base.count(text) * factor)``.

    >>> t = ScaledTokenizer(EstimateTokenizer(), 1.5, Band(-0.1, 0.1, "test", "2026-11"), family="x")
    >>> t.count("12345678"), t.name, t.exact
    (3, '≈ x (estimate (chars/4) × 1.5)', False)
    """

    exact = False

    def __init__(self, base: Tokenizer, factor: float, band: Band, *, family: str = "estimate") -> None:
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"factor must be a positive number, got {factor!r}")
        if not isinstance(band, Band):
            raise TypeError(f"band must be a Band, got {type(band).__name__}")
        self.base = base
        self.factor = float(factor)
        self.band = band
        self.family = family
        self.name = f"≈ {family} ({base.name} × {self.factor:g})"

    def count(self, text: str) -> int:
        return round(self.base.count(text) * self.factor)

    def __repr__(self) -> str:
        return f"ScaledTokenizer({self.base!r}, {self.factor:g}, family={self.family!r})"


class TokenCounter:
    """Token counts cached by text content, with counters of real tokenizer work.

    The cache holds each distinct text it has counted (a history already keeps those texts, usually
    the very same string objects, so this costs little). ``clear()`` empties it, and so does
    assigning another ``tokenizer`` (the counts were the old one's). ``model`` names the model the
    counts are for (None: no model was chosen; the counts are the tokenizer's own).

    >>> counter = TokenCounter(EstimateTokenizer())
    >>> counter.count("twelve chars"), counter.count("twelve chars"), counter.calls, counter.hits
    (3, 3, 1, 1)
    >>> counter.label, counter.interval(100)
    ('≈ estimate (chars/4) −50%/+100%', (50, 200))
    """

    __slots__ = ("_tokenizer", "calls", "hits", "_counts", "model")

    def __init__(self, tokenizer: Tokenizer | None = None, *, model: str | None = None) -> None:
        self._counts: dict[str, int] = {}
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()
        #: The model these counts are for (None: none chosen).
        self.model = model
        #: How many times the tokenizer actually ran.
        self.calls = 0
        #: How many counts came from the cache.
        self.hits = 0

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer that counts; assigning another one forgets every cached count."""
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer: Tokenizer) -> None:
        if not isinstance(tokenizer, Tokenizer) or not isinstance(getattr(tokenizer, "name", None), str):
            raise TypeError(f"tokenizer must have a name (str) and count(text) -> int, got {tokenizer!r}")
        self._tokenizer = tokenizer
        self._counts.clear()

    @property
    def name(self) -> str:
        """The tokenizer's name."""
        return self.tokenizer.name

    @property
    def exact(self) -> bool:
        """Whether the counts are the model's own. A tokenizer that does not say is taken at its word
        (a user's own counter, e.g. a provider's endpoint wrapped in a function): declare
        ``exact = False`` and a ``band`` on an estimate."""
        return bool(getattr(self.tokenizer, "exact", True))

    @property
    def band(self) -> Band | None:
        """The relative error of a count: None for an exact counter; an estimate that names no band
        gets a wide one (−50%/+100%, "no band given by the tokenizer")."""
        if self.exact:
            return None
        band = getattr(self.tokenizer, "band", None)
        return band if isinstance(band, Band) else _NO_BAND

    @property
    def label(self) -> str:
        """What a table shows beside a token column: the name, and "≈" with the band for an estimate."""
        band = self.band
        if band is None:
            return self.name
        name = self.name if self.name.startswith("≈") else f"≈ {self.name}"
        return f"{name} {band.text}"

    def interval(self, n: int) -> tuple[int, int]:
        """``(n, n)`` for an exact counter, else the band around the estimate ``n``."""
        band = self.band
        return (n, n) if band is None else band.interval(n)

    def upper(self, n: int) -> int:
        """The upper bound of the count ``n`` (``n`` itself when exact)."""
        return self.interval(n)[1]

    def count(self, text: str) -> int:
        """Tokens in ``text`` (tokenized at most once per distinct text)."""
        try:
            found = self._counts.get(text)
        except TypeError:  # unhashable: not a str either
            found = None
        if found is not None:
            self.hits += 1
            return found
        if not isinstance(text, str):
            raise TypeError(f"can only count tokens of a str, got {type(text).__name__}")
        n = int(self._tokenizer.count(text))
        self.calls += 1
        self._counts[text] = n
        return n

    def __len__(self) -> int:
        return len(self._counts)

    def clear(self) -> None:
        """Forget every cached count (the call counters stay)."""
        self._counts.clear()

    def __repr__(self) -> str:
        return f"<TokenCounter {self.label!r} texts={len(self._counts)} calls={self.calls} hits={self.hits}>"


_NO_BAND = Band(-0.5, 1.0, "no band given by the tokenizer", "")

_default: Tokenizer | None = None


def default_tokenizer() -> Tokenizer:
    """The counter when no model is chosen: offline tiktoken cl100k if installed, else the
    chars/4 estimate (loaded once per process)."""
    global _default
    if _default is None:
        try:
            from wm_kernel.tokens.bpe import TiktokenTokenizer

            _default = TiktokenTokenizer()
        except (ImportError, ValueError, OSError):
            _default = EstimateTokenizer()
    return _default
