"""Every state-store key wm-kernel reads or writes, built in one place.

A key is a fixed prefix and one or more id parts joined by ``:`` (the original's Valkey layout:
``trinkets:{user_id}``). Ids come from users, so each part is encoded before joining: ``%`` becomes
``%25`` and ``:`` becomes ``%3A`` (and nothing else changes). Two different id tuples therefore never
give the same key: user ``acme:alice`` with continuum ``chat-1`` and user ``acme`` with continuum
``alice:chat-1`` used to share ``peanutgallery:acme:alice:chat-1``; now they are
``peanutgallery:acme%3Aalice:chat-1`` and ``peanutgallery:acme:alice%3Achat-1``. Ids without ``:``
or ``%`` (UUIDs, the original's ids) are written as they are, so the original's keys still match.

Examples
--------
>>> trinket_sections("ada")
'trinkets:ada'
>>> trinket_state("peanutgallery", "acme:alice", "chat-1")
'peanutgallery:acme%3Aalice:chat-1'
>>> trinket_state("peanutgallery", "acme", "alice:chat-1")
'peanutgallery:acme:alice%3Achat-1'
>>> decode_part(encode_part("50%:off"))
'50%:off'
"""

from __future__ import annotations

import functools

from wm_kernel.utils.checks import check_str

SEPARATOR = ":"

#: The hashes every History in a store shared before issue 34 (texts by digest, section entries by
#: id). Histories now write per-user hashes (:func:`history_texts`, :func:`history_entries`), so a
#: per-user ACL can run a session; these are only read, to open histories written before.
HISTORY_TEXTS = "history:texts"
HISTORY_ENTRIES = "history:entries"
#: Where the original keeps a user's manifest segments (a string; read by ValkeyStore, never written).
ORIGINAL_MANIFEST_PREFIX = "manifest_segments:"
MANIFEST_PREFIX = "manifest:"
#: Where MIRA keeps a user's location (a string with a 24-hour expiry; ValkeyStore reads and writes
#: it as the hash :func:`location` names) and that hash's prefix.
ORIGINAL_LOCATION_PREFIX = "location:"
LOCATION_PREFIX = "locations:"


def encode_part(part: str) -> str:
    """One id as it appears inside a key: ``%`` and ``:`` percent-encoded, the rest unchanged."""
    check_str(part, "a key part", empty_ok=True)
    return part.replace("%", "%25").replace(SEPARATOR, "%3A")


def decode_part(encoded: str) -> str:
    """The id :func:`encode_part` encoded."""
    return encoded.replace("%3A", SEPARATOR).replace("%25", "%")


@functools.lru_cache(maxsize=4096)
def _key(prefix: str, *parts: str) -> str:
    # built on every store access of a compose (about ten a turn): the few distinct keys are kept
    return SEPARATOR.join((prefix, *(encode_part(p) for p in parts)))


def trinket_sections(user_id: str) -> str:
    """WorkingMemory's hash of each section's last content (the original's ``trinkets:{user}``)."""
    return _key("trinkets", user_id)


def trinket_state(prefix: str, user_id: str, continuum_id: str) -> str:
    """A stateful trinket's items in one conversation (``StatefulTrinket.state_key``)."""
    check_str(prefix, "state prefix")
    if SEPARATOR in prefix:
        raise ValueError(f"state prefix must not contain {SEPARATOR!r}, got {prefix!r}")
    return _key(prefix, user_id, continuum_id)


def reminders(user_id: str) -> str:
    """ReminderManager's hash: one field per reminder."""
    return _key("reminders", user_id)


def reminders_meta(user_id: str) -> str:
    """ReminderManager's counter of generated ids."""
    return _key("reminders", user_id) + SEPARATOR + "meta"


def domaindocs(user_id: str) -> str:
    """DomaindocTrinket's hash: one field per document label."""
    return _key("domaindocs", user_id)


def location(user_id: str) -> str:
    """LocationTrinket's hash: field ``state``, the payload and when it was set. (MIRA keeps the
    payload as the string ``location:{user_id}`` with a 24-hour expiry; the memory and SQLite
    stores keep this hash, ValkeyStore keeps it as MIRA's string: :func:`original_location`.)"""
    return _key("locations", user_id)


def original_location(location_key: str) -> str:
    """MIRA's ``location:{user_id}`` for the key :func:`location` gave (the user part as encoded).

    >>> original_location(location("ada"))
    'location:ada'
    """
    if not location_key.startswith(LOCATION_PREFIX):
        raise ValueError(f"not a location key: {location_key!r}")
    return ORIGINAL_LOCATION_PREFIX + location_key[len(LOCATION_PREFIX) :]


def location_from_original(original_key: str) -> str:
    """The hash :func:`location` names for MIRA's ``location:{user_id}``."""
    if not original_key.startswith(ORIGINAL_LOCATION_PREFIX):
        raise ValueError(f"not an original location key: {original_key!r}")
    return LOCATION_PREFIX + original_key[len(ORIGINAL_LOCATION_PREFIX) :]


def sidebar_activity(user_id: str) -> str:
    """AsyncActivityTrinket's hash: field ``rows``, the sidebar_activity table as last set (MIRA
    keeps the table in the user's SQLite database)."""
    return _key("sidebar_activity", user_id)


def lora(user_id: str) -> str:
    """LoraTrinket's hash: fields ``user_model`` and ``checkin``."""
    return _key("lora", user_id)


def manifest(user_id: str) -> str:
    """ManifestTrinket's hash of segments."""
    return _key("manifest", user_id)


def session(user_id: str, continuum_id: str) -> str:
    """A Session's own record of a conversation (the current segment's start)."""
    return _key("session", user_id, continuum_id)


def original_manifest_segments(manifest_key: str) -> str:
    """The original's ``manifest_segments:{user_id}`` for the key :func:`manifest` gave (the user
    part stays as encoded, so both name the same user)."""
    if not manifest_key.startswith(MANIFEST_PREFIX):
        raise ValueError(f"not a manifest key: {manifest_key!r}")
    return ORIGINAL_MANIFEST_PREFIX + manifest_key[len(MANIFEST_PREFIX) :]


def manifest_from_original(original_key: str) -> str:
    """The manifest hash :func:`manifest` names for the original's ``manifest_segments:{user}``."""
    if not original_key.startswith(ORIGINAL_MANIFEST_PREFIX):
        raise ValueError(f"not an original manifest key: {original_key!r}")
    return MANIFEST_PREFIX + original_key[len(ORIGINAL_MANIFEST_PREFIX) :]


def write_marker(key: str, write_id: str) -> str:
    """The short-lived string a ValkeyStore write sets beside what it writes to ``key``, so that
    after a dropped connection it can tell whether the write landed (``{key}:wm-write:{id}``: it
    starts with the written key, so a per-user ACL that allows the key allows it; no key this
    module builds ends this way, as every id part is encoded)."""
    check_str(write_id, "write id")
    return SEPARATOR.join((key, "wm-write", encode_part(write_id)))


def history_texts(user_id: str) -> str:
    """A user's History texts, by digest (content-addressed within the user)."""
    return _key("history-texts", user_id)


def history_entries(user_id: str) -> str:
    """A user's History section entries, by id."""
    return _key("history-entries", user_id)


def history_exchanges(user_id: str, continuum_id: str) -> str:
    """A conversation's exchanges with a model, one field per turn (``history-exchanges:{user}:
    {continuum}``, ids encoded: user ``a:b`` / conversation ``c`` and user ``a`` / conversation
    ``b:c`` never share it)."""
    return _key("history-exchanges", user_id, continuum_id)


def history(user_id: str, continuum_id: str) -> str:
    """A History's recorded turns of one conversation, one field per turn. No id pair gives
    :data:`HISTORY_TEXTS` or :data:`HISTORY_ENTRIES` (those have one part, this has two)."""
    return _key("history", user_id, continuum_id)
