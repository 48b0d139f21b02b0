"""The one registry of wire dialects: every view asks it, none names a provider.

A wire dialect (:class:`~wm_kernel.dialects.base.Dialect`) is one module of this package. The
registry names the built-in ones in one table (:data:`BUILT_IN`: a wire's name and the module
whose ``DIALECT`` it is) and reads them all when first asked, so what it answers does not depend
on which module was imported first. :func:`register_dialect` adds another (or, with
``replace=True``, overrides one).

Looking one up:

* :func:`get_dialect` by its name or an alias (``get_dialect("mira")``, ``get_dialect("openai.chat")``);
* :func:`dialect_for_provider` by a model profile's ``provider`` field
  (``wm_kernel.cachesim.profile.ModelProfile.provider``: ``"anthropic"``, ``"openai"``, ``"google"``):
  the model registry maps a model to its provider, this maps the provider to its default wire;
* :func:`dialect_for_sdk` by the package an SDK client comes from (``type(client).__module__``);
* :func:`usage_dialect` by the keys of a usage object (``Dialect.reads_usage``);
* :func:`body_dialect` by a logged request body (``Dialect.is_body``);
* :func:`dialect_names` / :func:`usage_providers` / :func:`body_wires`: what is registered.

Log formats (other agents' files) are ``wm_kernel.interop``'s: ``wm_kernel.interop.log_formats``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from wm_kernel.dialects.base import Dialect

#: The built-in wires, by name, and the module that defines each one's ``DIALECT``: read, in this
#: order, when the registry is first asked (then ordered by ``Dialect.rank``).
BUILT_IN: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "wm_kernel.dialects.anthropic",
        "openai": "wm_kernel.dialects.openai_chat",
        "openai-responses": "wm_kernel.dialects.openai_responses",
        "gemini": "wm_kernel.dialects.gemini",
        "bedrock": "wm_kernel.dialects.bedrock",
        "mira": "wm_kernel.dialects.mira",
    }
)

#: The kit's own wire: what a view lays a request out as when neither it nor a session names one.
DEFAULT_WIRE = "anthropic"

_dialects: dict[str, Dialect] = {}
_names: dict[str, str] = {}  # name or alias -> dialect name
_loaded = False


def _load_built_ins() -> None:
    """Read the built-in wires (once; a lookup calls it before it reads the table)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name, module in BUILT_IN.items():
        dialect = importlib.import_module(module).DIALECT
        if dialect.name != name:
            raise AssertionError(f"{module} defines the {dialect.name} wire, not {name}")
        _add(dialect, replace=False)


#: ``usage_providers()`` as last computed (every Usage built asks): None once a dialect registers
_providers: tuple[str, ...] | None = None


def register_dialect(dialect: Dialect, *, replace: bool = False) -> Dialect:
    """Register ``dialect`` under its name and aliases (``replace=True`` to override one)."""
    _load_built_ins()
    return _add(dialect, replace=replace)


def _add(dialect: Dialect, *, replace: bool) -> Dialect:
    if not isinstance(dialect, Dialect):
        raise TypeError(f"expected a Dialect, got {type(dialect).__name__}")
    if not dialect.name:
        raise ValueError("a dialect needs a name")
    if dialect.name in _dialects and not replace:
        raise ValueError(f"dialect {dialect.name!r} is already registered; pass replace=True")
    for alias in (dialect.name, *dialect.aliases):
        owner = _names.get(alias)
        if owner is not None and owner != dialect.name and not replace:
            raise ValueError(f"{alias!r} already names the {owner} dialect")
    global _providers
    _dialects[dialect.name] = dialect
    _providers = None
    ordered = sorted(_dialects.values(), key=lambda d: d.rank)  # stable: registration order within a rank
    _dialects.clear()
    _dialects.update((d.name, d) for d in ordered)
    for alias in (dialect.name, *dialect.aliases):
        _names[alias] = dialect.name
    return dialect


def dialect_names() -> tuple[str, ...]:
    """The registered dialects' names, in registration order."""
    _load_built_ins()
    return tuple(_dialects)


def dialects() -> tuple[Dialect, ...]:
    """The registered dialects, in registration order."""
    _load_built_ins()
    return tuple(_dialects.values())


def known_name(name: object) -> bool:
    """Whether ``name`` is a registered dialect's name or alias."""
    _load_built_ins()
    return isinstance(name, str) and name in _names


def get_dialect(name: str | Dialect) -> Dialect:
    """The dialect called ``name`` (or one of its aliases); a Dialect is returned as is."""
    _load_built_ins()
    if isinstance(name, Dialect):
        return name
    if not isinstance(name, str) or name not in _names:
        raise ValueError(f"unknown wire {name!r}; wires: {', '.join(_dialects)}")
    return _dialects[_names[name]]


def dialect_for_provider(provider: str) -> Dialect:
    """The default wire of a model-profile provider (``ModelProfile.provider``)."""
    _load_built_ins()
    for dialect in _dialects.values():
        if provider in dialect.default_for:
            return dialect
    raise ValueError(f"no wire is registered for {provider!r} models; wires: {', '.join(_dialects)}")


def check_serves(dialect: Dialect, provider: str, model: str) -> None:
    """ValueError unless ``dialect`` can send to a model of ``provider``."""
    if provider not in dialect.serves:
        raise ValueError(
            f"{model} is a {provider} model; the {dialect.name} wire sends to "
            f"{' or '.join(dialect.serves) or 'no'} models"
        )


def choose_wire(wire: str | Dialect | None, session_wire: str | None, provider: str, model: str) -> Dialect:
    """The wire a view of ``model`` (whose profile names ``provider``) assumes: ``wire`` when given
    (ValueError when it cannot send to that model), else the session's wire when it can, else the
    provider's default."""
    if wire is not None:
        dialect = get_dialect(wire)
        check_serves(dialect, provider, model)
        return dialect
    if session_wire is not None and provider in get_dialect(session_wire).serves:
        return get_dialect(session_wire)
    return dialect_for_provider(provider)


def wire_for_layout(layout: str) -> str | None:
    """The wire a session laid out by the ``Layout`` called ``layout`` uses by default (MIRA's for
    ``Layout.original()``), or None (the model's provider's own)."""
    _load_built_ins()
    for dialect in _dialects.values():
        if dialect.layout and dialect.layout == layout:
            return dialect.name
    return None


def dialect_for_sdk(package: str) -> Dialect:
    """The default wire of an SDK client's package (``type(client).__module__``'s first part)."""
    _load_built_ins()
    for dialect in _dialects.values():
        if dialect.sdk == package and dialect.default_for:
            return dialect
    raise TypeError(f"client must be an {' or '.join(sdk_clients())} client, got a {package} object")


def sdk_clients() -> tuple[str, ...]:
    """The SDK client classes the registered wires send with (``anthropic.Anthropic``...)."""
    _load_built_ins()
    return tuple(dict.fromkeys(d.client for d in _dialects.values() if d.client and d.default_for))


def usage_providers() -> tuple[str, ...]:
    """The provider names a Usage or an exchange may carry (the registered dialects' ``provider``)."""
    global _providers
    _load_built_ins()
    if _providers is None:
        _providers = tuple(dict.fromkeys(d.provider for d in _dialects.values() if d.provider))
    return _providers


def usage_dialect(usage: Mapping[str, Any]) -> Dialect | None:
    """The dialect whose usage shape ``usage`` holds most of (``Dialect.usage_score``), or None.

    A bare ``{"input_tokens", "output_tokens"}`` is as much Anthropic's as OpenAI Responses' (they
    read it alike: nothing cached, nothing written); the first registered reads it."""
    _load_built_ins()
    best: Dialect | None = None
    score = 0
    for dialect in _dialects.values():
        found = dialect.usage_score(usage)
        if found > score:
            best, score = dialect, found
    return best


def usage_titles() -> str:
    """The wires whose usage can be read, for an error that lists them."""
    _load_built_ins()
    titles = [d.usage_title or d.name for d in _dialects.values() if d.usage_anchor]
    return ", ".join(dict.fromkeys(titles))


def usage_dialect_named(provider: str) -> Dialect:
    """The dialect reading usage billed by ``provider`` (a ``Usage.provider`` name or a dialect name)."""
    _load_built_ins()
    dialect = get_dialect(provider)
    if dialect.usage_anchor:
        return dialect
    for other in _dialects.values():
        if other.provider == dialect.provider and other.usage_anchor:
            return other
    raise ValueError(f"the {dialect.name} wire has no usage reader")


def body_wires() -> tuple[str, ...]:
    """The names of the wires that build request bodies (``Dialect.builds_body``)."""
    _load_built_ins()
    return tuple(d.name for d in _dialects.values() if d.builds_body)


def body_dialect(body: Mapping[str, Any]) -> Dialect | None:
    """The dialect a logged request body reads as: strong evidence first, then weak, each in
    ``log_priority`` order; None when no dialect with a log format claims it."""
    _load_built_ins()
    candidates = sorted((d for d in _dialects.values() if d.log_format), key=lambda d: d.log_priority)
    for dialect in candidates:
        if dialect.is_body(body):
            return dialect
    for dialect in candidates:
        if dialect.may_be_body(body):
            return dialect
    return None


__all__ = [
    "BUILT_IN",
    "DEFAULT_WIRE",
    "register_dialect",
    "dialect_names",
    "dialects",
    "known_name",
    "get_dialect",
    "dialect_for_provider",
    "check_serves",
    "choose_wire",
    "wire_for_layout",
    "dialect_for_sdk",
    "sdk_clients",
    "usage_providers",
    "usage_dialect",
    "usage_titles",
    "usage_dialect_named",
    "body_wires",
    "body_dialect",
]
