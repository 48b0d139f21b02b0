"""What never leaves the machine in a trace: redaction by structure first, by pattern after.

:func:`scrub` takes a text (a section's decoded text, its raw JSON bytes, a usage object, a name)
and takes out:

- by structure, wherever a JSON key appears (a whole document or a fragment of one, and JSON
  inside a JSON string): the value of any ``headers`` key (``headers``, ``request_headers``,
  ``http_headers``...) whatever its shape (object, list of name/value pairs, string), exported as
  ``{"[not exported]": "headers"}``; the value of every secret-like key (:func:`is_secret_name`),
  whatever its type (a string, a number, a list of cookies, an object), as ``"[redacted]"``; and the
  ``value`` of a name/value pair whose ``name`` (or ``key``) is secret-like;
- by pattern, in any text: API-key shapes (``sk-...``, ``sk-ant-...``, ``AIza...``) wherever they
  start (after ``_`` too), an ``Authorization`` header line, ``Bearer``/``Basic``/``Token``
  credentials in any case, the password of a URL (``https://user:secret@host``), and the value of
  an assignment to a secret-like name (``OPENAI_API_KEY=...``, ``password: ...``);
- image data: a ``data:image/...;base64,`` URL or a base64 ``data`` field becomes
  ``[image: N bytes, sha256 H]``.

Examples
--------
>>> scrub('{"headers": [{"name": "x-api-key", "value": "k"}], "password": 1234}')[0]
'{"headers": {"[not exported]": "headers"}, "password": "[redacted]"}'
>>> scrub("# OPENAI_API_KEY=abc123")[0]
'# OPENAI_API_KEY=[redacted]'
>>> scrub("authorization: basic dXNlcjpwYXNz")[0]
'authorization: [redacted]'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re

_REDACTED = '"[redacted]"'
_NOT_EXPORTED = '{"[not exported]": "headers"}'
#: name parts that make a name secret wherever they stand (``client_secret``, ``set-cookie``...)
_SECRET_PARTS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "secrets",
        "cookie",
        "cookies",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "apikey",
        "bearer",
    }
)
#: two adjacent name parts that make a name secret (``x-api-key``, ``aws_access_key_id``)
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("auth", "key")})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PARTS = re.compile(r"[^a-z0-9]+")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]', re.DOTALL)
_COLON = re.compile(r"\s*:")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"[^,}\]\s]*")
_KEY_SHAPED = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,})"
)
_AUTH_LINE = re.compile(r"(?i)(\b(?:proxy-)?authorization\s*:\s*)[^\r\n\"\\]+")
_SCHEME = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*")
_BASIC = re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/:@\"'<>]*):([^\s/@\"'<>]+)@")
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_\-])([A-Za-z][A-Za-z0-9_.\-]*)(\s*(?:=|:)\s*)"
    r"((?i:(?:bearer|basic|token)\s+)?[^\s\"',;&<>\\]+)"
)
_DATA_URL = re.compile(r"data:image/[A-Za-z0-9.+\-]+;base64,([A-Za-z0-9+/=]|\\n)+")
_DATA_FIELD = re.compile(r'("data"\s*:\s*)"((?:[A-Za-z0-9+/=]|\\n){64,})"')


def _parts(name: str) -> list[str]:
    return [p for p in _PARTS.split(_CAMEL.sub("_", name).lower()) if p]


def is_secret_name(name: str) -> bool:
    """Whether a key or variable ``name`` names a secret: a part that is one
    (``password``, ``secret``, ``cookie``, ``auth``...), an API, access or private key, or a name
    ending in ``token`` (``access_token``, ``X-Auth-Token``; never ``max_tokens``).

    >>> [is_secret_name(n) for n in ("x_api_key", "apiKey", "Set-Cookie", "refresh_token", "max_tokens")]
    [True, True, True, True, False]
    """
    parts = _parts(name)
    if not parts:
        return False
    if any(p in _SECRET_PARTS for p in parts) or parts[-1] == "token":
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(parts, parts[1:], strict=False))


def is_headers_name(name: str) -> bool:
    """Whether ``name`` names a set of HTTP headers (``headers``, ``request_headers``...)."""
    parts = _parts(name)
    return bool(parts) and parts[-1] == "headers"


def _decode(token: str) -> str:
    try:
        value = json.loads(token)
    except ValueError:
        return token[1:-1]
    return value if isinstance(value, str) else token[1:-1]


def _value_end(text: str, pos: int) -> int:
    """Where the JSON value starting at ``pos`` (after spaces) ends; the end of ``text`` when the
    text is a fragment that ends inside it."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    if pos >= len(text):
        return pos
    if text[pos] == '"':
        match = _STRING.match(text, pos)
        return match.end() if match else len(text)
    if text[pos] in "{[":
        depth = 0
        for match in _TOKEN.finditer(text, pos):
            token = match.group()
            if token in "{[":
                depth += 1
            elif token in "}]":
                depth -= 1
                if depth == 0:
                    return match.end()
        return len(text)
    match = _SCALAR.match(text, pos)
    return match.end() if match else pos


class _Frame:
    """One JSON object being scanned: whether its ``name``/``key`` names a secret, and where its
    ``value`` lies (a name/value pair may give either first)."""

    __slots__ = ("secret", "value")

    def __init__(self) -> None:
        self.secret = False
        self.value: tuple[int, int] | None = None


def _by_structure(text: str, found: list[str]) -> str:
    """``text`` with headers and the values under secret-like keys replaced (a tolerant scan: a
    fragment of JSON, as a section's raw bytes are, is scanned as far as it goes)."""
    if '"' not in text:
        return text
    cuts: list[tuple[int, int, str, str]] = []
    frames: list[_Frame | None] = []
    pos = 0
    while True:
        match = _TOKEN.search(text, pos)
        if match is None:
            break
        token, pos = match.group(), match.end()
        if token == "{":
            frames.append(_Frame())
            continue
        if token == "[":
            frames.append(None)
            continue
        if token in "}]":
            if frames:
                frames.pop()
            continue
        colon = _COLON.match(text, pos)
        if colon is None:  # a string value: JSON inside a JSON string is scanned too
            if "\\" in token and ":" in token:
                inner = _decode(token)
                cleaned, taken = scrub(inner)
                if cleaned != inner:
                    cuts.append((match.start(), pos, json.dumps(cleaned, ensure_ascii=False), taken[0]))
                    found.extend(taken)
            continue
        key = _decode(token)
        start = colon.end()
        end = _value_end(text, start)
        start += len(text[start:end]) - len(text[start:end].lstrip())
        frame = frames[-1] if frames else None
        if is_headers_name(key):
            cuts.append((start, end, _NOT_EXPORTED, "headers"))
            pos = end
        elif is_secret_name(key):
            cuts.append((start, end, _REDACTED, "secret"))
            pos = end
        elif frame is not None and key.lower() in ("name", "key", "header"):
            if text[start:end].startswith('"') and is_secret_name(_decode(text[start:end])):
                frame.secret = True
                if frame.value is not None:
                    cuts.append((*frame.value, _REDACTED, "secret"))
        elif frame is not None and key.lower() == "value":
            frame.value = (start, end)
            if frame.secret:
                cuts.append((*frame.value, _REDACTED, "secret"))
                pos = end
    return _cut(text, cuts, found) if cuts else text


def _cut(text: str, cuts: list[tuple[int, int, str, str]], found: list[str]) -> str:
    """``text`` with each cut ``(start, end, replacement, what)`` made, in order of position, and
    what each cut took added to ``found``; a cut inside one already made is left out."""
    out: list[str] = []
    last = 0
    for start, end, replacement, what in sorted(cuts):
        if start < last:  # inside a value already replaced
            continue
        out.append(text[last:start])
        out.append(replacement)
        last = end
        found.append(what)
    out.append(text[last:])
    return "".join(out)


def _basic(match: re.Match[str]) -> str:
    credential = match.group(1)
    looks_encoded = any(c.isdigit() or c in "+/=" for c in credential) or re.search(r"[a-z][A-Z]", credential)
    return match.group(0).replace(credential, "[redacted]") if looks_encoded else match.group(0)


def _assignment(match: re.Match[str]) -> str:
    name, between, value = match.groups()
    if not is_secret_name(name) or value.startswith("[redacted]"):
        return match.group(0)
    return f"{name}{between}[redacted]"


def _by_pattern(text: str) -> str:
    out = _AUTH_LINE.sub(lambda m: m.group(1) + "[redacted]", text)
    out = _KEY_SHAPED.sub("[redacted]", out)
    out = _SCHEME.sub(lambda m: m.group(1) + " [redacted]", out)
    out = _BASIC.sub(_basic, out)
    out = _URL_PASSWORD.sub(
        lambda m: m.group(1) + ("[redacted]" if not m.group(2) else m.group(2) + ":[redacted]") + "@", out
    )
    return _ASSIGNMENT.sub(_assignment, out)


def _image(encoded: str) -> str:
    data = encoded.replace("\\n", "")
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4), validate=False)
    except (binascii.Error, ValueError):
        raw = data.encode("ascii", "replace")
    return f"[image: {len(raw):,} bytes, sha256 {hashlib.sha256(raw).hexdigest()}]"


def scrub(text: str) -> tuple[str, list[str]]:
    """``text`` with headers, secrets and image data taken out (module docstring), and what was
    taken out (``headers``, ``secret``, ``image``; each once, in that order)."""
    found: list[str] = []
    out = _by_structure(text, found)
    step = _by_pattern(out)
    if step != out:
        found.append("secret")
    out = step
    step = _DATA_URL.sub(lambda m: _image(m.group(0).split(",", 1)[1]), out)
    step = _DATA_FIELD.sub(lambda m: m.group(1) + '"' + _image(m.group(2)) + '"', step)
    if step != out:
        found.append("image")
    return step, [kind for kind in ("headers", "secret", "image") if kind in found]


def scrub_name(name: str) -> str:
    """A name (a span's, a section's, a model's) with any secret in it taken out."""
    return scrub(name)[0]


__all__ = ["scrub", "scrub_name", "is_secret_name", "is_headers_name"]
