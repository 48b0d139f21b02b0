"""The price table as a registry: the rows by name, the names routers and clouds give them, and the
row a request is priced with (none for a model the table lacks: unpriced, never another's).

A :class:`ModelProfile` holds everything the simulator needs to know about one model: which caching
*mode* its provider uses, prices per million tokens, the minimum cacheable prefix, how many
breakpoints a request may carry, how far a breakpoint looks back, the TTLs it offers, OpenAI's
128-token steps, Gemini's storage price, and when and where the figures were read. Prices change:
:func:`register_model` adds or replaces a profile at run time (``replace=True`` to override a
built-in one), and ``simulate(..., model=profile)`` takes a profile directly without registering it.

Every profile carries where its prices were read (``source``) and when (``date_read``); a price
the project's references (``cache_rules.md``, ``provider_formats.md``) do not give says so in its
``notes``. A dated snapshot id (``claude-haiku-4-5-20251001``) is priced as its family
(:func:`family_name`); :func:`priced_as` says "priced as X: model Y unknown" for any other id.

Examples
--------
>>> MODELS["claude-sonnet-4-6"].writes["5m"]
3.75
>>> get_model("claude-haiku-4-5-20251001").name
'claude-haiku-4-5'
>>> get_model("claude-sonnet-9")
Traceback (most recent call last):
...
ValueError: unknown model 'claude-sonnet-9'; known models: claude-3-5-haiku, claude-3-5-sonnet, claude-3-7-sonnet, claude-fable-5, claude-haiku-4-5, claude-opus-4-1, claude-opus-4-5, claude-opus-4-6, claude-opus-4-7, claude-opus-4-8, claude-sonnet-4, claude-sonnet-4-5, claude-sonnet-4-6, claude-sonnet-5, gemini-2.5-flash, gemini-2.5-pro, gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini, gpt-5, gpt-5.3-codex, gpt-5.4, gpt-5.6
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date
from types import MappingProxyType

from wm_kernel.cachesim.price_table import BUILTIN
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.tokens.registry import forget_counter, register_counter

#: The model cache views price with when neither they nor the Session name one.
DEFAULT_MODEL = "claude-sonnet-4-6"


_registry: dict[str, ModelProfile] = {p.name: p for p in BUILTIN}

#: Every known model id -> its profile (a read-only live view; add profiles with register_model).
MODELS: Mapping[str, ModelProfile] = MappingProxyType(_registry)


def register_model(profile: ModelProfile, *, replace: bool = False) -> ModelProfile:
    """Add ``profile`` under its name (``replace=True`` to override an existing one, e.g. new prices).

    >>> p = register_model(MODELS["claude-sonnet-4-6"].with_prices(input=2.0, name="my-sonnet"))
    >>> MODELS["my-sonnet"].input
    2.0
    >>> unregister_model("my-sonnet")
    """
    if not isinstance(profile, ModelProfile):
        raise TypeError(f"expected a ModelProfile, got {type(profile).__name__}")
    if profile.name in _registry and not replace:
        raise ValueError(f"model {profile.name!r} is already known; pass replace=True to override it")
    if profile.tokenizer:
        register_counter(profile.name, profile.tokenizer, replace=True)
    _registry[profile.name] = profile
    _resolved.clear()
    return profile


def unregister_model(name: str) -> None:
    """Forget a profile added with :func:`register_model` (a built-in one returns to its default)."""
    builtin = {p.name: p for p in BUILTIN}
    if name in builtin:
        _registry[name] = builtin[name]
    elif _registry.pop(name, None) is None:
        raise ValueError(f"unknown model {name!r}")
    else:
        forget_counter(name)
    _resolved.clear()


#: Prefixes a vendor or router puts before a model id: OpenRouter's ``anthropic/``, Bedrock's
#: regional ``us.`` and ``anthropic.``, Gemini's ``models/``...
_PREFIX = re.compile(
    r"^(?:models/|(?:anthropic|openai|google|vertex_ai|bedrock)/|(?:us|eu|apac|au|jp|global)\.|anthropic\.)"
)
#: Suffixes of a dated snapshot or a version: ``-20251001``, ``-2024-07-18``, ``-latest``, ``-v1:0``,
#: Vertex's ``@20250929``, Claude Code's ``[1m]``
_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-v\d+(?::\d+)?|@[\w.-]+|\[[^\]]*\]|:\d+)$")
#: Claude's version-first spellings (``claude-4.6-sonnet``, as OpenRouter answers) of the
#: family-first ids of Claude 4 and later
_VERSION_FIRST = re.compile(r"^claude-(\d+)((?:-\d+)?)-(opus|sonnet|haiku|fable)$")


def _row(name: str) -> str | None:
    if name in _registry:
        return name
    for profile in _registry.values():
        if name in profile.aliases:
            return profile.name
    return None


def _spellings(name: str) -> Iterator[str]:
    """``name`` and what it becomes as each vendor's decoration is taken off, one step at a time."""
    yield name
    while True:
        shorter = _PREFIX.sub("", name)
        shorter = _SNAPSHOT.sub("", shorter)
        if shorter.startswith("claude-"):
            shorter = re.sub(r"(?<=\d)\.(?=\d)", "-", shorter)  # claude-sonnet-4.6 -> claude-sonnet-4-6
            flipped = _VERSION_FIRST.match(shorter)
            if flipped and int(flipped.group(1)) >= 4:
                shorter = f"claude-{flipped.group(3)}-{flipped.group(1)}{flipped.group(2)}"
        if shorter == name or not shorter:
            return
        name = shorter
        yield name


def family_name(model: str) -> str | None:
    """The price table's row ``model`` stands for: itself, an alias, or the row of a dated snapshot
    or a vendor's spelling (``claude-haiku-4-5-20251001``, OpenRouter's ``anthropic/claude-sonnet-4.6``
    and ``anthropic/claude-4.6-sonnet-20260217``, Bedrock's ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
    Vertex's ``claude-sonnet-4-5@20250929``, ``models/gemini-2.5-pro``); None when no row fits.

    >>> family_name("claude-haiku-4-5-20251001"), family_name("gpt-4o-mini-2024-07-18"), family_name("gpt-9")
    ('claude-haiku-4-5', 'gpt-4o-mini', None)
    >>> family_name("anthropic/claude-4.6-sonnet-20260217"), family_name("us.anthropic.claude-3-5-haiku-20241022-v1:0")
    ('claude-sonnet-4-6', 'claude-3-5-haiku')
    """
    if not isinstance(model, str) or not model.strip():
        return None
    if model in _resolved:  # a log names one model over and over: its spellings are undone once
        return _resolved[model]
    found = next((row for row in map(_row, _spellings(model.strip())) if row is not None), None)
    if len(_resolved) < 4096:
        _resolved[model] = found
    return found


#: Model names already resolved to their row (or None), cleared whenever the registry changes.
_resolved: dict[str, str | None] = {}


def get_model(model: str | ModelProfile) -> ModelProfile:
    """The profile of ``model`` (a row of the price table, or a spelling of one, see
    :func:`family_name`; or a profile used as is); ValueError for a model the table lacks."""
    if isinstance(model, ModelProfile):
        return model
    if not isinstance(model, str):
        raise TypeError(f"model must be a model id or a ModelProfile, got {type(model).__name__}")
    found = family_name(model)
    if found is None:
        raise ValueError(f"unknown model {model!r}; known models: {', '.join(sorted(_registry))}")
    return _registry[found]


def how_to_price(model: str) -> str:
    """The one line that says how to give ``model`` a price."""
    return (
        f"register_model(MODELS['claude-sonnet-4-6'].with_prices(name={model!r}, input=..., "
        "read=..., writes={...}, output=...)) from wm_kernel.cachesim"
    )


@dataclass(frozen=True)
class Priced:
    """The profile a request of ``model`` is priced with, and why.

    ``profile`` is the model's row when the price table has it (``note`` ""). Otherwise it holds
    the cache rules the request is simulated with (its provider's) but no prices
    (``profile.priced`` False: its dollars are missing), and ``note`` says so in one line, naming
    the model and how to add its price."""

    requested: str | None
    profile: ModelProfile
    note: str = ""

    @property
    def substituted(self) -> bool:
        return bool(self.note)

    @property
    def priced(self) -> bool:
        return self.profile.priced


def priced_as(
    model: str | ModelProfile | None, rules: str | ModelProfile = DEFAULT_MODEL, *, at: date | None = None
) -> Priced:
    """The profile ``model`` is priced with: its row of the price table; else none (unpriced, never
    another model's prices), with ``rules``' cache rules for the simulator. ``at``, a request's
    day, past a row's ``valid_until`` is unpriced too.

    >>> priced_as("claude-opus-4-6").profile.name
    'claude-opus-4-6'
    >>> p = priced_as("claude-3-sonnet-20240229")
    >>> p.priced, p.profile.name, p.note.split(";")[0]
    (False, 'claude-3-sonnet-20240229', 'unpriced: claude-3-sonnet-20240229 is not in the price table')
    >>> priced_as(None).note.split(";")[0]
    'unpriced: the log names no model'
    """
    if isinstance(model, ModelProfile):
        return Priced(model.name, model, "" if model.priced else f"unpriced: {model.name} has no prices")
    found = family_name(model) if isinstance(model, str) else None
    if found is not None:
        row = _registry[found]
        if at is not None and row.valid_until and at.isoformat() > row.valid_until:
            note = f"unpriced: {row.name}'s price held until {row.valid_until} ({row.notes})"
            return Priced(model, replace(row, name=str(model), priced=False), note)
        return Priced(model, row)
    rules_row = get_model(rules)
    named = isinstance(model, str) and bool(model.strip())
    if named:
        assert isinstance(model, str)
        note = f"unpriced: {model} is not in the price table; add its price with {how_to_price(model)}"
        name = model
    else:
        note = "unpriced: the log names no model; pass model= to price it"
        name = "unknown model"
    return Priced(model if named else None, replace(rules_row, name=name, priced=False), note)
