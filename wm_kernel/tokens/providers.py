"""Exact counters that need something the user provides: Anthropic's counting endpoint (a client)
and Gemini's SentencePiece tokenizer (its model file).

``AnthropicTokenizer(model, client=None, cache=None, max_concurrency=4)``
    Counts through the official ``anthropic`` SDK's ``client.messages.count_tokens``. A text's count
    is the request's count with the text as the system prompt minus the count of the same request
    without it (asked once per model): the text's tokens plus the few its system block adds. Every
    answer is kept in a :class:`CountCache` on disk, keyed by model and the SHA-256 of the text, so
    a replay or a re-run of a notebook never asks twice. At most ``max_concurrency`` requests are
    in flight at once (``count_many`` fans out up to that many). A failure (authentication, rate
    limit, network) raises :class:`TokenCountError` with one line saying what happened; it never
    falls back to another counter.
``SentencePieceTokenizer(model_file)``
    A SentencePiece model file on disk (e.g. Gemini's ``gemma3`` tokenizer file), counted with the
    ``sentencepiece`` package. Nothing is downloaded: the user points at the file.
``CountCache(path)``
    The SQLite file of remembered counts (default ``token_counts.sqlite`` in
    :func:`cache_dir`: ``$WM_KERNEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/wm-kernel``, else
    ``~/.cache/wm-kernel``).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


class TokenCountError(RuntimeError):
    """A counting endpoint failed; the message is one line naming the model and the cause."""


class CountCacheError(ValueError):
    """The token count cache cannot be opened, read or written (a path that is a folder or under a
    file, a damaged or full disk): one line naming the file."""


#: The largest count a counting endpoint may answer (a request is far below; SQLite's INTEGER, 2**63,
#: is the hard end): a larger one is a TokenCountError, never an OverflowError from the cache.
MAX_COUNT = 10**9


def cache_dir() -> Path:
    """Where wm-kernel keeps counts between runs (see the module docstring)."""
    configured = os.environ.get("WM_KERNEL_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "wm-kernel"


class CountCache:
    """Remembered token counts on disk: (model, SHA-256 of the text) -> tokens, in SQLite."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else cache_dir() / "token_counts.sqlite"
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_dir():
                raise IsADirectoryError(f"{self.path} is a folder")
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise CountCacheError(f"the token count cache {self.path} cannot be opened ({_reason(exc)})") from None
        try:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS counts (model TEXT NOT NULL, digest TEXT NOT NULL, "
                "tokens INTEGER NOT NULL, PRIMARY KEY (model, digest))"
            )
            self._db.execute("SELECT tokens FROM counts LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            self._db.close()
            raise CountCacheError(
                f"the token count cache {self.path} is damaged ({exc}); delete it and the counts are asked again"
            ) from None

    @staticmethod
    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, model: str, digest: str) -> int | None:
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT tokens FROM counts WHERE model = ? AND digest = ?", (model, digest)
                ).fetchone()
        except sqlite3.Error as exc:
            raise CountCacheError(f"the token count cache {self.path} cannot be read ({_reason(exc)})") from None
        # a count that is no whole number of tokens, 0 or more (a damaged row), is asked again
        if row is None or isinstance(row[0], bool) or not isinstance(row[0], int) or row[0] < 0:
            return None
        return int(row[0])

    def put(self, model: str, digest: str, tokens: int) -> None:
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_COUNT:
            raise CountCacheError(f"a token count is a whole number from 0 to {MAX_COUNT:,}, got {str(tokens)[:40]}")
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO counts VALUES (?, ?, ?)", (model, digest, tokens))
        except sqlite3.Error as exc:  # a full disk, a file made read-only
            raise CountCacheError(f"the token count cache {self.path} cannot be written ({_reason(exc)})") from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM counts").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"CountCache({str(self.path)!r})"


_BASELINE = "\x00baseline"  # the cache key of the request without a system prompt
_PROBE = [{"role": "user", "content": "."}]


class AnthropicTokenizer:
    """Claude's own counts from Anthropic's token-counting endpoint (see the module docstring)."""

    exact = True

    def __init__(
        self,
        model: str,
        client: Any = None,
        *,
        cache: CountCache | str | os.PathLike[str] | None = None,
        max_concurrency: int = 4,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be a positive int, got {max_concurrency!r}")
        import anthropic

        if client is None:
            client = anthropic.Anthropic()  # ANTHROPIC_API_KEY, as the SDK reads it
        elif not isinstance(client, anthropic.Anthropic):
            raise TypeError(f"client must be an anthropic.Anthropic, got {type(client).__name__}")
        self.model = model
        self.client = client
        self.cache = cache if isinstance(cache, CountCache) else CountCache(cache)
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self.name = f"anthropic count_tokens ({model})"
        #: requests actually sent to the endpoint
        self.requests = 0

    def _ask(self, system: str | None) -> int:
        import anthropic

        params: dict[str, Any] = {"model": self.model, "messages": _PROBE}
        if system is not None:
            params["system"] = system
        with self._slots:
            self.requests += 1
            try:
                answer = self.client.messages.count_tokens(**params)
            except anthropic.APIStatusError as exc:
                raise TokenCountError(
                    f"anthropic count_tokens for {self.model} failed: HTTP {exc.status_code} "
                    f"{_error_type(exc)}: {_one_line(_error_message(exc))}"
                ) from None
            except anthropic.APIConnectionError as exc:
                raise TokenCountError(
                    f"anthropic count_tokens for {self.model} failed: cannot reach the API ({_connection_reason(exc)})"
                ) from None
            except Exception as exc:  # noqa: BLE001 - a reply that is not JSON, or not the shape: one line
                raise TokenCountError(
                    f"anthropic count_tokens for {self.model} failed: the reply cannot be read "
                    f"({type(exc).__name__}: {_one_line(str(exc))[:160]})"
                ) from None
        tokens = getattr(answer, "input_tokens", None)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_COUNT:
            raise TokenCountError(
                f"anthropic count_tokens for {self.model} answered without a usable "
                f"input_tokens ({_one_line(repr(answer))[:120]})"
            )
        return tokens

    def _known(self, key: str, ask: str | None) -> int:
        found = self.cache.get(self.model, key)
        if found is None:
            found = self._ask(ask)
            self.cache.put(self.model, key, found)
        return found

    def count(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"can only count tokens of a str, got {type(text).__name__}")
        if not text:
            return 0
        digest = CountCache.digest(text)
        found = self.cache.get(self.model, digest)
        if found is not None:
            return found
        n = max(self._ask(text) - self._known(_BASELINE, None), 0)
        self.cache.put(self.model, digest, n)
        return n

    def count_many(self, texts: Iterable[str]) -> list[int]:
        """The counts of ``texts``, asking for the unknown ones ``max_concurrency`` at a time."""
        texts = list(texts)
        self._known(_BASELINE, None)
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(self.count, texts))

    def __repr__(self) -> str:
        return f"AnthropicTokenizer({self.model!r}, cache={self.cache!r})"


def _reason(exc: BaseException) -> str:
    """An OSError's or sqlite3's reason, without ``[Errno N]``."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a part of its folder's path is a file"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return _one_line(str(exc))


def _error_type(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return type(exc).__name__


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _connection_reason(exc: BaseException) -> str:
    """The SDK's message and, when that does not say it already, the network's own reason (SDK
    releases word the message differently; the cause is what the user can act on)."""
    message = _one_line(str(exc))
    cause = exc.__cause__ or exc.__context__
    detail = _one_line(str(cause)) if cause is not None else ""
    return f"{message}: {detail}" if detail and detail not in message else message


class SentencePieceTokenizer:
    """A SentencePiece model file, counted exactly (Gemini's tokenizer when pointed at its file)."""

    exact = True

    def __init__(self, model_file: str | os.PathLike[str], *, name: str | None = None) -> None:
        try:
            import sentencepiece
        except ImportError as exc:
            raise ValueError(
                "a SentencePiece model file needs the sentencepiece package (pip install 'wm-kernel[providers]')"
            ) from exc
        path = Path(model_file)
        if not path.is_file():
            raise ValueError(f"no SentencePiece model file at {str(path)!r}")
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise ValueError(f"{str(path)!r} is not a SentencePiece model file ({_one_line(str(exc))})") from None
        self.path = path
        self.name = name or f"sentencepiece {path.name}"

    def count(self, text: str) -> int:
        return len(self.processor.encode(text)) if text else 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (SentencePieceTokenizer, (str(self.path),), {"name": self.name})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer({str(self.path)!r})"
