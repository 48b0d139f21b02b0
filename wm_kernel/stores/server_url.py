"""A server URL as the kit may show it: the password and secret-bearing query values hidden, in
messages, reprs and echoes of what a user typed; and the check of a Valkey URL."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

from wm_kernel.stores.valkey_errors import scrub

__all__ = ["SCHEMES", "check_url", "display_url", "redact_urls", "url_secrets"]


#: Query parameters of a URL shown as they are; every other parameter's value may be a secret
#: (the client passes any parameter, ``?password=...`` included, to the connection).
_SHOWN_PARAMETERS = frozenset(
    {
        "db",
        "protocol",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "retry_on_timeout",
        "max_connections",
        "health_check_interval",
        "ssl_cert_reqs",
        "client_name",
    }
)


def display_url(url: str) -> str:
    """The URL without its secrets, to name the server in messages and reprs: the password (and a
    user part that has no ``:``, which may be one) as ``***``, and the value of every query
    parameter but the harmless ones. A URL that cannot be read shows as ``<unreadable URL>``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0] if ":" in userinfo else ""
            netloc = f"{user}:***@{host}" if ":" in userinfo else f"***@{host}"
        query = (
            "&".join(
                pair
                if pair.split("=", 1)[0] in _SHOWN_PARAMETERS or "=" not in pair
                else pair.split("=", 1)[0] + "=***"
                for pair in parts.query.split("&")
            )
            if parts.query
            else ""
        )
        path = "/***" if "@" in parts.path else parts.path  # valkey:/:pw@host puts it there
        return urlunsplit((parts.scheme, netloc, path, query, ""))
    except ValueError:
        return "<unreadable URL>"


def redact_urls(text: str) -> str:
    """``text`` with every word that looks like a URL holding a secret (an ``@`` or a query) shown
    as :func:`display_url` shows it, for messages that echo what a user typed (``%wm_session``)."""
    return " ".join(
        display_url(word) if ("@" in word or "?" in word) and ":" in word else word for word in text.split(" ")
    )


def url_secrets(url: str) -> list[str]:
    """The texts of ``url`` that :func:`display_url` hides, longest first (to scrub them from
    messages a client library wrote, whichever way it quoted them)."""
    found = set()
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            userinfo = parts.netloc.rsplit("@", 1)[0]
            found.add(userinfo.split(":", 1)[1] if ":" in userinfo else userinfo)
        for pair in parts.query.split("&"):
            name, _, value = pair.partition("=")
            if name not in _SHOWN_PARAMETERS:
                found.add(value)
        found.add(parts.fragment)
    except ValueError:
        pass
    found |= {unquote(secret) for secret in found}
    return sorted((secret for secret in found if len(secret) >= 3), key=len, reverse=True)


#: URL schemes the store accepts (``valkeys``/``rediss``: TLS; ``unix``: a socket path).
SCHEMES = ("valkey", "valkeys", "redis", "rediss", "unix")


def check_url(url: str) -> tuple[str, list[str]]:
    """``url`` as it may be shown (:func:`display_url`) and the secrets it holds; ValueError for a
    URL the store cannot use, worded without any part that may be a password."""
    secrets = url_secrets(url)
    try:
        parts = urlsplit(url)
        scheme, shown = parts.scheme, "@" not in url or "@" in parts.netloc
    except ValueError:
        scheme, shown = "", False
    if scheme not in SCHEMES:
        # a URL whose "@" is not where a password goes (valkey:/:pw@host) is not shown at all:
        # no part of it can be trusted not to be the password
        named = f"{display_url(url)!r}" if shown else "(not shown: it may hold a password)"
        raise ValueError(
            f"not a Valkey URL: {scrub(named, secrets)} (expected valkey://host:port/db; schemes: {', '.join(SCHEMES)})"
        )
    if not shown:
        raise ValueError(
            f"not a usable Valkey URL ({scheme}://, not shown: it may hold a "
            f"password): an '@' outside the server part; write "
            f"{scheme}://[user]:password@host:port/db"
        )
    return display_url(url), secrets
