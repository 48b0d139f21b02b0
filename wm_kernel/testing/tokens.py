"""The one place the testing package counts tokens (an adapter over :mod:`wm_kernel.tokens`).

Assertions about size want a number that is safe to compare with a limit: the count itself where
the counter is exact for the model, the upper end of its band where it is an estimate (a model's
counter from ``counter_for(model)``, or the one given). The plain ``ceil(chars / 4)`` estimate is
held to one token per UTF-8 byte as well, the only bound that holds for every byte-level BPE.

>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter, counter_for
>>> count_tokens("héllo", counter=TokenCounter(EstimateTokenizer()))
TokenCount(count=2, upper=6, counter='estimate (chars/4)', estimate=True)
"""

from __future__ import annotations

from dataclasses import dataclass

from wm_kernel.tokens import EstimateTokenizer, TokenCounter, counter_for

_counter: TokenCounter | None = None


@dataclass(frozen=True)
class TokenCount:
    """Tokens of a text: the ``count``, the ``upper`` bound to compare with limits (equal to the
    count unless it is an ``estimate``) and the ``counter`` that counted."""

    count: int
    upper: int
    counter: str
    estimate: bool

    def describe(self) -> str:
        if self.estimate:
            return f"at most {self.upper:,} tokens (estimated {self.count:,}; {self.counter})"
        return f"{self.count:,} tokens ({self.counter})"


def default_counter() -> TokenCounter:
    """The counter the assertions use (one per process, so each distinct text is counted once)."""
    global _counter
    if _counter is None:
        _counter = TokenCounter()
    return _counter


def count_tokens(text: str, model: str | None = None, *, counter: TokenCounter | None = None) -> TokenCount:
    """Tokens of ``text`` with ``counter``, else ``model``'s counter, else the default one."""
    if counter is not None:
        chosen = counter
    elif model is not None:
        chosen = counter_for(model)
    else:
        chosen = default_counter()
    count = chosen.count(text)
    if isinstance(chosen.tokenizer, EstimateTokenizer):
        return TokenCount(count, max(count, len(text.encode("utf-8", "surrogatepass"))), chosen.name, True)
    if not chosen.exact:
        return TokenCount(count, chosen.upper(count), chosen.label, True)
    return TokenCount(count, count, chosen.name, False)
